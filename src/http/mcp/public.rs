//! The hosted public MCP server (retrieval 4.4): `POST /v1/mcp/public` on
//! every region's public port. No credential, nothing billable, no search or
//! fetch. Each tool calls the use case behind the matching public route and
//! answers its body byte for byte: the JSON document as the first text
//! block, or the RFC 9457 problem inside a tool error.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::Extension;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Implementation, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use svc_core::problem::Code;

use super::sessions::RegionSessions;
use super::{answer, body_answer, problem_answer};
use svc_node::region::Region;
use svc_node::service::public::{certificates, log};
use svc_node::service::{Error, ops};

/// The path, on every region's public port.
pub const PATH: &str = crate::api::admission::MCP_PUBLIC_PATH;
/// A message at most this large: a verify body (512 KiB) in its JSON-RPC wrapping.
pub const MAX_MESSAGE: usize = 520 * 1024;

/// The public server's router: the Streamable HTTP service behind a guard
/// that answers what the spec fixes before rmcp sees the request.
pub fn routes(state: &Region) -> Router<Region> {
    let mcp = &state.config.mcp;
    let limits = super::sessions::SessionLimits {
        cap: mcp.public_sessions,
        per_address: mcp.sessions_per_address,
        idle: Duration::from_millis(mcp.session_idle_ms),
        untouched: Duration::from_millis(mcp.untouched_session_idle_ms),
    };
    let sessions = RegionSessions::new(&state.config.region, limits);
    let tools = state.clone();
    let config = StreamableHttpServerConfig::default()
        // Anyone may call it from anywhere: there is no ambient credential
        // for a rebinding attack to borrow.
        .disable_allowed_hosts()
        .with_max_request_body_bytes(MAX_MESSAGE)
        .with_sse_keep_alive(Some(Duration::from_secs(15)));
    let service = StreamableHttpService::new(move || Ok(PublicTools::new(tools.clone())), sessions.clone(), config);
    let trusted = Arc::new(state.config.trusted_proxies.clone());
    let guard = axum::middleware::from_fn(move |request: Request, next: axum::middleware::Next| {
        let (sessions, trusted) = (sessions.clone(), trusted.clone());
        async move { guard(&sessions, &trusted, request, next).await }
    });
    Router::new().route_service(PATH, service).layer(guard)
}

/// `GET` is 405 (R4.4.9); a message over the limit is refused before it is
/// read; a session id presented from another address than the one that
/// opened it is 404. (A new session past a cap makes room: `sessions`.)
async fn guard(
    sessions: &Arc<RegionSessions>,
    trusted: &[svc_core::net::Cidr],
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    if request.method() != Method::POST && request.method() != Method::DELETE {
        let mut response = super::status_problem(
            StatusCode::METHOD_NOT_ALLOWED,
            "the public MCP server takes POST, and DELETE to end a session",
        );
        response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
        return response;
    }
    let declared = request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if declared.is_some_and(|length| length > MAX_MESSAGE) {
        return Error::detail(Code::RecordTooLarge, format!("an MCP message is at most {MAX_MESSAGE} bytes"))
            .into_response();
    }
    let request = if request.method() == Method::POST {
        match whole_message(request).await {
            Ok(request) => request,
            Err(refused) => return refused,
        }
    } else {
        request
    };
    let client = crate::forwarded::client_ip(request.extensions(), request.headers(), trusted)
        .map(|ip| ip.to_string())
        .unwrap_or_default();
    let presented = request.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok());
    if presented.is_some_and(|id| !sessions.bound_to(id, &client)) {
        return Error::detail(Code::NotFound, "no such session here: it ended, or another address opened it")
            .into_response();
    }
    super::sessions::on_behalf_of(client, next.run(request)).await
}

pub const SESSION_HEADER: &str = "mcp-session-id";

/// Reads a message whole, within the limit however it is sent, and refuses
/// one that is not JSON with JSON-RPC's parse error.
async fn whole_message(request: Request) -> Result<Request, Response> {
    let (parts, body) = request.into_parts();
    let bytes = match http_body_util::Limited::new(body, MAX_MESSAGE).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return Err(Error::detail(Code::RecordTooLarge, format!("an MCP message is at most {MAX_MESSAGE} bytes"))
                .into_response());
        }
        Err(e) => {
            return Err(
                Error::detail(Code::RequestInvalid, format!("the message could not be read: {e}")).into_response()
            );
        }
    };
    if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
        let error = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("Parse error: {e}")}});
        let mut response = (StatusCode::BAD_REQUEST, error.to_string()).into_response();
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        return Err(response);
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// The tools, over one region.
#[derive(Clone)]
pub struct PublicTools {
    state: Region,
    /// Built once per process: its input schemas are generated, not written.
    tool_router: Arc<ToolRouter<PublicTools>>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CertificateArgs {
    /// The business's UUID.
    pub business_uuid: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KeysArgs {
    /// A business's UUID: its keys (`/v1/certificates/{uuid}/keys`). Without
    /// it, the service's key set (`/.well-known/keys`).
    pub business_uuid: Option<String>,
    /// With `business_uuid`: its key-custody statements instead
    /// (`/v1/certificates/{uuid}/key-custody`).
    #[serde(default)]
    pub custody: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectionArgs {
    /// The record type (`products`, `business_files`, `events`, `jobs`, `updates`).
    pub record_type: String,
    /// The version: `1`, or in full (`products/1`).
    pub version: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointArgs {
    /// The checkpoint signed at this tree size; the newest without it.
    pub tree_size: Option<u64>,
}

/// Exactly one of: `leaf_hash` (optionally at `tree_size`), `receipt`, or
/// `from` (optionally `to`).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProofArgs {
    /// A leaf's hash, `sha256:` and 64 hex digits: its inclusion proof.
    pub leaf_hash: Option<String>,
    /// A receipt's leaf hash: its two levels (in its minute, the minute in the log).
    pub receipt: Option<String>,
    /// The consistency proof from this tree size...
    pub from: Option<u64>,
    /// ...to this one (the newest without it).
    pub to: Option<u64>,
    pub tree_size: Option<u64>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VocabularyArgs {
    /// One vocabulary by name; without it, the list of them all.
    pub name: Option<String>,
}

/// The members of `POST /v1/verify` (publishing 4.2).
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyArgs {
    /// The record's exact bytes, standard base64, at most 204,800 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_base64: Option<String>,
    /// The record seal, as served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seal: Option<Value>,
    /// An index row as served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row: Option<serde_json::Map<String, Value>>,
    /// A sidecar envelope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sidecar: Option<Value>,
    /// The `ai_policy_bits` a row carried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ai_policy_bits: Option<Value>,
    /// The sealed AI policy record's bytes, standard base64, to check bits against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ai_policy_record_base64: Option<String>,
    /// That AI policy record's seal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ai_policy_seal: Option<Value>,
    /// An ad exactly as the ad pool served it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ad_item: Option<Value>,
    /// `warn` (default) or `require`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_events: Option<String>,
}

#[tool_router]
impl PublicTools {
    pub fn new(state: Region) -> Self {
        static ROUTER: std::sync::OnceLock<Arc<ToolRouter<PublicTools>>> = std::sync::OnceLock::new();
        PublicTools { state, tool_router: ROUTER.get_or_init(|| Arc::new(Self::tool_router())).clone() }
    }

    #[tool(
        description = "Judge a record, its seal, a row, a sidecar or AI policy bits, as POST /v1/verify does; answers the signed verify statement."
    )]
    async fn verify(
        &self,
        Parameters(args): Parameters<VerifyArgs>,
        Extension(parts): Extension<axum::http::request::Parts>,
    ) -> Result<CallToolResult, ErrorData> {
        let body = serde_json::to_vec(&args).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        if self.state.home.is_none() {
            return Ok(self.ask_home(Method::POST, "/v1/verify", body, &parts).await);
        }
        let client = crate::forwarded::client_ip(&parts.extensions, &parts.headers, &self.state.config.trusted_proxies);
        Ok(answer(svc_node::service::public::verify::judge(&self.state, client, &body).await.map(|v| v.to_string())))
    }

    #[tool(description = "A business's certificate, as GET /v1/certificates/{uuid} answers in JSON.")]
    async fn certificate(&self, Parameters(args): Parameters<CertificateArgs>) -> Result<CallToolResult, ErrorData> {
        let found = certificates::certificate_document(&self.state, &args.business_uuid, self.state.clock.now());
        Ok(answer(found.and_then(|d| d.map(|(_, doc)| doc.to_string()).ok_or_else(|| Error::new(Code::NotFound)))))
    }

    #[tool(
        description = "The service's key set (GET /.well-known/keys), or with business_uuid that business's keys (GET /v1/certificates/{uuid}/keys), or with custody its key-custody statements."
    )]
    async fn keys(
        &self,
        Parameters(args): Parameters<KeysArgs>,
        Extension(parts): Extension<axum::http::request::Parts>,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(uuid) = args.business_uuid else {
            if args.custody {
                return Ok(problem_answer(Error::detail(Code::RequestInvalid, "custody needs business_uuid")));
            }
            return Ok(answer(
                svc_node::service::public::key_set(&self.state).map(|d| String::from_utf8_lossy(&d.bytes).into_owned()),
            ));
        };
        if args.custody {
            return Ok(answer(certificates::key_custody(&self.state, &uuid).map(|v| v.to_string())));
        }
        if self.state.home.is_none() {
            let path = format!("/v1/certificates/{}/keys", svc_client::percent(&uuid));
            return Ok(self.ask_home(Method::GET, &path, Vec::new(), &parts).await);
        }
        Ok(answer(certificates::business_keys(&self.state, &uuid).map(|v| v.to_string())))
    }

    #[tool(description = "A projection specification, as GET /v1/projections/{type}/{version} answers.")]
    async fn projection(&self, Parameters(args): Parameters<ProjectionArgs>) -> Result<CallToolResult, ErrorData> {
        Ok(answer(certificates::projection(&args.record_type, &args.version).map(|v| v.to_string())))
    }

    #[tool(
        description = "The verification index (GET /v1/verification-index): every payload type, hash-pinned specification and vocabulary, each with version, URL and hash."
    )]
    async fn spec(&self, Parameters(_): Parameters<NoArgs>) -> Result<CallToolResult, ErrorData> {
        Ok(answer(Ok(svc_node::service::public::verification_index().to_string())))
    }

    #[tool(
        description = "The transparency log's checkpoint in JSON (GET /v1/log/checkpoint), the newest or the one at tree_size."
    )]
    async fn log_checkpoint(&self, Parameters(args): Parameters<CheckpointArgs>) -> Result<CallToolResult, ErrorData> {
        let signed = log::signed_checkpoint(&self.state, args.tree_size);
        Ok(answer(signed.map(|s| log::checkpoint_value(&self.state, &s).to_string())))
    }

    #[tool(
        description = "A proof from the transparency log (GET /v1/log/proof): a leaf's inclusion, a receipt's two levels, or the consistency between two tree sizes."
    )]
    async fn log_proof(&self, Parameters(args): Parameters<ProofArgs>) -> Result<CallToolResult, ErrorData> {
        let query = log::ProofQuery {
            leaf_hash: args.leaf_hash,
            receipt: args.receipt,
            from: args.from,
            to: args.to,
            tree_size: args.tree_size,
        };
        Ok(answer(log::proof(&self.state, query).await.map(|(v, _)| v.to_string())))
    }

    #[tool(
        description = "The controlled vocabularies of record fields (GET /v1/vocabularies), or one by name (GET /v1/vocabularies/{name})."
    )]
    async fn vocabularies(&self, Parameters(args): Parameters<VocabularyArgs>) -> Result<CallToolResult, ErrorData> {
        Ok(answer(svc_node::service::public::vocabularies(args.name.as_deref()).map(|v| v.to_string())))
    }
}

impl PublicTools {
    /// What only home answers (the statement key signs it), asked of home
    /// as the region's public route would forward it.
    async fn ask_home(
        &self,
        method: Method,
        path: &str,
        body: Vec<u8>,
        parts: &axum::http::request::Parts,
    ) -> CallToolResult {
        let mut request = axum::http::Request::builder().method(method).uri(path);
        if let Some(host) = parts.headers.get(header::HOST) {
            request = request.header(header::HOST, host);
        }
        if !body.is_empty() {
            request = request.header(header::CONTENT_TYPE, "application/json");
        }
        let Ok(mut request) = request.body(Body::from(body)) else {
            return problem_answer(Error::detail(Code::RequestInvalid, "the request could not be built"));
        };
        for forwarded in parts.headers.get_all(crate::forwarded::FORWARDED_FOR) {
            request.headers_mut().append(crate::forwarded::FORWARDED_FOR, forwarded.clone());
        }
        crate::forwarded::forward_for(request.headers_mut(), crate::forwarded::peer(&parts.extensions));
        match ops::forward_to_home(&self.state, request).await {
            Ok(response) => body_answer(response).await,
            Err(e) => problem_answer(e),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for PublicTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("svc-public", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "svc's public verification tools: no credential, nothing billable, no search or fetch. \
                 Each answer is the matching public HTTP route's body; a refusal is its RFC 9457 problem.",
            )
    }
}
