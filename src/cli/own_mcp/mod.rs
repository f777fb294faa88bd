//! `svc mcp`: the billable MCP server an AI company runs itself with its
//! own retrieval key (retrieval 4.4). The service never hosts it. Each tool
//! call is one RFC 9421-signed request with the API's receipts, billing,
//! blocking and limits; answers are checked offline under pinned anchors.
//! Transports: stdio (default), or Streamable HTTP behind a bearer token.
//!
//! The private key is read once from its file or variable and kept only
//! inside the signer: it is never in the configuration, never logged and
//! never in a tool's answer.

pub mod caller;
pub mod config;
pub mod tools;

use std::path::Path;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use svc_core::keys::SigningKey;

use self::caller::Caller;
use self::config::{ConfigError, OwnConfig, TransportType};
use self::tools::{Own, OwnTools};
use svc_client::ClientError;

/// Sessions an HTTP server keeps at once (each holds a task and its queues).
const SESSIONS: usize = 256;

/// Why the server did not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum OwnError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("the environment variable {0} (key.env) is not set")]
    KeyEnv(String),
    #[error("{0}")]
    Serve(String),
}

/// The private key, from its file or its variable (a key file's JSON).
fn key(config: &OwnConfig) -> Result<SigningKey, OwnError> {
    if let Some(file) = &config.key.file {
        return Ok(svc_client::keyfile::read(file)?);
    }
    let var = config.key.env.clone().unwrap_or_default();
    let text = std::env::var(&var).map_err(|_| OwnError::KeyEnv(var.clone()))?;
    forget_variable(&var);
    Ok(svc_client::keyfile::parse(text.as_bytes(), Path::new(&format!("${var}")))?)
}

/// Removes a secret's variable from the process's environment once read,
/// so no child process and no later read of the environment finds it.
pub(crate) fn forget_variable(var: &str) {
    // SAFETY: read once at start-up, before the server's threads begin
    // reading the environment (the runtime's own threads do not).
    unsafe { std::env::remove_var(var) }
}

/// Everything the tools share, from a checked configuration.
pub fn own(config: OwnConfig, trust: &svc_client::trust::Trust) -> Result<Arc<Own>, OwnError> {
    let anchors = svc_client::anchors::read(&config.anchors_file)?;
    let caller = Caller::new(
        &config.api_base_url,
        &config.authority(),
        key(&config)?,
        config.sandbox_key_grant.clone(),
        config.timeout_ms,
        config.retry,
        trust,
    )?;
    Ok(Arc::new(Own::new(config, caller, anchors)))
}

/// Runs the server from its configuration file until its client leaves
/// (stdio) or a signal stops it (HTTP).
pub async fn run(
    path: &Path,
    ca: Option<&Path>,
    stopped: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), OwnError> {
    let config = OwnConfig::read(path)?;
    let transport = config.transport.clone();
    let bearer = config.bearer_token()?;
    let trust = svc_client::trust::Trust::with_ca(ca)?;
    let own = own(config, &trust)?;
    tracing::info!(key_id = %own.caller.key_id(), transport = ?transport.kind, "svc mcp: serving");
    match transport.kind {
        TransportType::Stdio => {
            let running =
                OwnTools::new(own).serve(rmcp::transport::stdio()).await.map_err(|e| OwnError::Serve(e.to_string()))?;
            tokio::select! {
                ended = running.waiting() => { ended.map_err(|e| OwnError::Serve(e.to_string()))?; }
                _ = stopped => {}
            }
            Ok(())
        }
        TransportType::Http => {
            let (stop, shutdown) = tokio::sync::watch::channel(false);
            let (bound, served) = serve_http(own, &transport, bearer, shutdown).await?;
            println!("{}", serde_json::json!({"mcp_listen": bound.to_string(), "path": transport.path}));
            stopped.await;
            let _ = stop.send(true);
            let _ = served.await;
            Ok(())
        }
    }
}

/// Serves the tools over Streamable HTTP at `transport`'s address and path
/// (port 0 picks one), behind `bearer` when set, until `shutdown`.
pub async fn serve_http(
    own: Arc<Own>,
    transport: &config::Transport,
    bearer: Option<String>,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> Result<(std::net::SocketAddr, tokio::task::JoinHandle<()>), OwnError> {
    let address = format!("{}:{}", transport.host, transport.port);
    let listener =
        tokio::net::TcpListener::bind(&address).await.map_err(|e| OwnError::Serve(format!("{address}: {e}")))?;
    let bound = listener.local_addr().map_err(|e| OwnError::Serve(e.to_string()))?;
    // On loopback, only loopback Host names (rmcp's default), against DNS
    // rebinding; elsewhere the bearer token is the guard, and clients reach
    // the server by names it cannot know.
    let mut config = StreamableHttpServerConfig::default();
    if !transport.is_loopback() {
        config = config.disable_allowed_hosts();
    }
    // One company's own server: its clients share it, so no share per address.
    let idle = std::time::Duration::from_secs(30 * 60);
    let limits = svc_http::mcp::sessions::SessionLimits { cap: SESSIONS, per_address: SESSIONS, idle, untouched: idle };
    let sessions = svc_http::mcp::sessions::RegionSessions::new("own", limits);
    let service = StreamableHttpService::new(move || Ok(OwnTools::new(own.clone())), sessions, config);
    let token = bearer.map(Arc::new);
    let guard = axum::middleware::from_fn(move |request: Request, next: axum::middleware::Next| {
        let token = token.clone();
        async move { bearer_gate(token.as_deref().map(String::as_str), request, next).await }
    });
    let router = axum::Router::new().route_service(&transport.path, service).layer(guard);
    let served =
        svc_http::api::listener::serve(listener, router, svc_node::config::ListenerLimits::default(), None, shutdown);
    Ok((bound, served))
}

/// Every HTTP request carries the bearer token, compared in constant time.
async fn bearer_gate(token: Option<&str>, request: Request, next: axum::middleware::Next) -> Response {
    if let Some(token) = token {
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let matches = presented.is_some_and(|p| {
            p.len() == token.len() && p.bytes().zip(token.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
        });
        if !matches {
            let mut refused =
                svc_http::mcp::status_problem(StatusCode::UNAUTHORIZED, "this MCP server needs its bearer token");
            refused.headers_mut().insert(header::WWW_AUTHENTICATE, axum::http::HeaderValue::from_static("Bearer"));
            return refused;
        }
    }
    next.run(request).await.into_response()
}
