//! Serving a router on a TCP listener within [`ListenerLimits`]: a cap on
//! open connections, a deadline for each HTTP/1 request head and for any
//! connection's first request, a close after a silent spell, a bound on
//! the wait between body pieces, and (through [`super::admission`]) caps
//! and deadlines per request; over TLS when given an acceptor, whose
//! handshake must end within the head deadline too. Every listener of a
//! node and the front door is served here.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::time::{Instant, Sleep};
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use super::admission::Admission;
use crate::tls::PeerRegions;
use svc_node::config::ListenerLimits;

/// How long a stopping listener lets its open requests finish.
const DRAIN: Duration = Duration::from_secs(30);

/// Serves `router` on `listener` until `shutdown` turns true, then drains.
/// Binds a listening socket with `SO_REUSEADDR`, so a node started again
/// right after a crash takes its port back while the old connections sit
/// in `TIME_WAIT`.
pub fn bind(address: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if address.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(1024)
}

pub fn serve(
    listener: TcpListener,
    router: Router,
    limits: ListenerLimits,
    tls: Option<TlsAcceptor>,
    mut shutdown: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    let router =
        router.layer(axum::middleware::from_fn_with_state(Arc::new(Admission::new(&limits)), super::admission::admit));
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(ms(limits.header_read_timeout_ms));
    builder.http2().timer(TokioTimer::new()).max_concurrent_streams(limits.max_streams_per_connection);
    let builder = Arc::new(builder);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    tokio::spawn(async move {
        let graceful = GracefulShutdown::new();
        loop {
            // A slot first: past the cap, connections wait in the backlog
            // rather than each costing a task and buffers here.
            let slot = tokio::select! {
                slot = slots.clone().acquire_owned() => slot,
                _ = shutdown.wait_for(|stop| *stop) => break,
            };
            let Ok(slot) = slot else { break };
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                _ = shutdown.wait_for(|stop| *stop) => break,
            };
            let (stream, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors, or a connection reset before it
                    // was taken: pause rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let body_wait = ms(limits.body_read_timeout_ms);
            let asked = Arc::new(AtomicBool::new(false));
            let first = asked.clone();
            let router = router.clone();
            let service = move |regions: Option<PeerRegions>| {
                router.map_request(move |request: axum::http::Request<Incoming>| {
                    first.store(true, Ordering::Relaxed);
                    let mut request = request.map(|body| Body::new(PacedBody::new(body, body_wait)));
                    request.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
                    if let Some(regions) = &regions {
                        request.extensions_mut().insert(regions.clone());
                    }
                    request
                })
            };
            let io = Idle::new(stream, ms(limits.idle_timeout_ms));
            let head_deadline = ms(limits.header_read_timeout_ms);
            let (builder, watcher, tls) = (builder.clone(), graceful.watcher(), tls.clone());
            tokio::spawn(async move {
                match tls {
                    None => drive(io, &builder, service(None), watcher, asked, head_deadline).await,
                    // The handshake counts against the head deadline: a peer
                    // that starts one and stalls gives its slot back.
                    Some(tls) => match tokio::time::timeout(head_deadline, tls.accept(io)).await {
                        Ok(Ok(io)) => {
                            let service = service(PeerRegions::of(io.get_ref().1));
                            drive(io, &builder, service, watcher, asked, head_deadline).await
                        }
                        Ok(Err(e)) => tracing::debug!(error = %e, %peer, "TLS handshake refused"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake not done within the head deadline"),
                    },
                }
                drop(slot);
            });
        }
        drop(listener);
        if tokio::time::timeout(DRAIN, graceful.shutdown()).await.is_err() {
            tracing::warn!("requests still open after the drain period were cut");
        }
    })
}

/// Serves one connection, plain or over TLS, until it ends or drains.
async fn drive<I, S>(
    io: I,
    builder: &auto::Builder<TokioExecutor>,
    service: S,
    watcher: Watcher,
    asked: Arc<AtomicBool>,
    head_deadline: Duration,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: tower::Service<
            axum::http::Request<Incoming>,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let connection = builder.serve_connection(TokioIo::new(io), TowerToHyperService::new(service)).into_owned();
    let connection = watcher.watch(connection);
    // Whatever the protocol, the first request's head must be whole within
    // the head deadline: an HTTP/2 peer dribbling its preface or first
    // HEADERS frame is cut as an HTTP/1 one is (hyper's own deadline covers
    // HTTP/1 only).
    tokio::pin!(connection);
    tokio::select! {
        _ = &mut connection => {}
        _ = tokio::time::sleep(head_deadline) => {
            if asked.load(Ordering::Relaxed) {
                let _ = connection.await;
            }
        }
    }
}

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// A socket that fails with `TimedOut` once nothing was read or written
/// for `idle`: a peer that says nothing, or stops saying anything, gives
/// its slot back. hyper polls a waiting connection's read side, so the
/// deadline is seen without a task of its own. Traffic only notes the time;
/// the timer is moved when it fires early, not on every read and write.
struct Idle {
    io: TcpStream,
    idle: Duration,
    last: Instant,
    deadline: Pin<Box<Sleep>>,
}

impl Idle {
    fn new(io: TcpStream, idle: Duration) -> Idle {
        Idle { io, idle, last: Instant::now(), deadline: Box::pin(tokio::time::sleep(idle)) }
    }

    fn moved(&mut self) {
        self.last = Instant::now();
    }

    fn wrote(&mut self, cx: &mut Context<'_>, polled: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        match polled {
            Poll::Ready(Ok(n)) if n > 0 => {
                self.moved();
                Poll::Ready(Ok(n))
            }
            Poll::Pending => self.expired(cx).map_ok(|()| 0),
            done => done,
        }
    }

    /// On a pending read or write: an error once `idle` passed since the
    /// last traffic. A deadline that fires after traffic moves to `idle`
    /// past it and is polled again.
    fn expired(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            if self.deadline.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            let due = self.last + self.idle;
            if due <= Instant::now() {
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "connection idle")));
            }
            self.deadline.as_mut().reset(due);
        }
    }
}

impl AsyncRead for Idle {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Ready(done) => {
                if buf.filled().len() > before {
                    self.moved();
                }
                Poll::Ready(done)
            }
            Poll::Pending => self.expired(cx),
        }
    }
}

impl AsyncWrite for Idle {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.wrote(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A request body that fails once `wait` passes with no new piece: a
/// client that stops sending gives its request slot back. Its length and
/// end are the body's own, so a handler (or a proxy passing it on) still
/// sees a declared `Content-Length`.
struct PacedBody {
    body: Incoming,
    wait: Duration,
    deadline: Option<Pin<Box<Sleep>>>,
    armed: bool,
}

impl PacedBody {
    fn new(body: Incoming, wait: Duration) -> PacedBody {
        PacedBody { body, wait, deadline: None, armed: false }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("no piece of the body came within {0:?}")]
struct BodyStalled(Duration);

impl http_body::Body for PacedBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.body).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.armed = false;
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                let next = Instant::now() + this.wait;
                let deadline = this.deadline.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(next)));
                if !this.armed {
                    deadline.as_mut().reset(next);
                    this.armed = true;
                }
                match deadline.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(BodyStalled(this.wait).into()))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
