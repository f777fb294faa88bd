//! An advertiser's image server: HTTPS under a self-signed certificate for
//! `localhost`, so the node's ad-image fetcher is tested over real TLS.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use svc_core::ads::images::png_header;
use svc_node::config::NodeConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub struct ImageServer {
    pub port: u16,
    roots: PathBuf,
    /// Requests it answered.
    pub hits: Arc<AtomicUsize>,
    /// Each request's head as it came.
    pub heads: Arc<std::sync::Mutex<Vec<String>>>,
    _dir: tempfile::TempDir,
}

impl ImageServer {
    /// Serves `/square.png` (600×600), `/wide.png` (1200×628) and
    /// `/huge.png` (declares more than the fetcher reads).
    pub async fn start() -> ImageServer {
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let roots = dir.path().join("roots.pem");
        std::fs::write(&roots, certified.cert.pem()).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![certified.cert.der().clone()], key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let files: Arc<HashMap<&str, Vec<u8>>> =
            Arc::new(HashMap::from([("/square.png", png_header(600, 600)), ("/wide.png", png_header(1200, 628))]));
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        let heads: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
        let kept = heads.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, files, hits, kept) = (acceptor.clone(), files.clone(), counted.clone(), kept.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tls.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    hits.fetch_add(1, Ordering::SeqCst);
                    let line = String::from_utf8_lossy(&head);
                    kept.lock().unwrap().push(line.to_string());
                    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    let answer = match (path.as_str(), files.get(path.as_str())) {
                        (_, Some(body)) => {
                            let mut a = format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                                body.len()
                            )
                            .into_bytes();
                            a.extend_from_slice(body);
                            a
                        }
                        ("/huge.png", None) => {
                            b"HTTP/1.1 200 OK\r\ncontent-length: 99999999\r\nconnection: close\r\n\r\n".to_vec()
                        }
                        _ => b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec(),
                    };
                    let _ = tls.write_all(&answer).await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        ImageServer { port, roots, hits, heads, _dir: dir }
    }

    /// `https://localhost:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.port)
    }

    /// Lets a node fetch from this server: its root trusted, loopback allowed.
    pub fn trust(&self, config: &mut NodeConfig) {
        config.ad_images.extra_roots_pem = Some(self.roots.clone());
        config.ad_images.allow_private_addresses = true;
    }
}
