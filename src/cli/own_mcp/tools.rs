//! The self-hosted server's tools (retrieval 4.4). Each calls one route
//! with one signed request and answers its body byte for byte as the first
//! block. A second block says what was checked offline under the pinned
//! anchors: the receipt, every row, the record's bytes and sidecar. A
//! failed check makes the result an error, its body still first.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use svc_core::keyset::{KeySet, RootAnchors};

use super::caller::{CallError, Called, Caller};
use super::config::OwnConfig;
use svc_client::{percent, query};

/// What every tool shares: the caller, the anchors, the key set they verify.
pub struct Own {
    pub config: OwnConfig,
    pub caller: Caller,
    pub anchors: RootAnchors,
    keys: tokio::sync::RwLock<Option<Arc<KeySet>>>,
}

impl Own {
    pub fn new(config: OwnConfig, caller: Caller, anchors: RootAnchors) -> Own {
        Own { config, caller, anchors, keys: tokio::sync::RwLock::new(None) }
    }

    /// The key set verified under the anchors: the one held, or, when
    /// `fresh` (a key it does not name, after a rotation), fetched again.
    async fn key_set(&self, fresh: bool) -> Result<Arc<KeySet>, CheckFailed> {
        if !fresh && let Some(keys) = self.keys.read().await.clone() {
            return Ok(keys);
        }
        let called = self.caller.public("/.well-known/keys").await.map_err(CheckFailed::KeySetUnreached)?;
        if called.answer.status != 200 {
            return Err(CheckFailed::KeySetStatus(called.answer.status));
        }
        let document: Value = serde_json::from_slice(&called.answer.bytes).map_err(CheckFailed::KeySetNotJson)?;
        let keys = Arc::new(svc_core::keyset::verify(&document, &self.anchors).map_err(CheckFailed::KeySetUnverified)?);
        *self.keys.write().await = Some(keys.clone());
        Ok(keys)
    }

    /// Runs `check` against the key set, fetching it again once if the
    /// answer names a key it does not hold.
    async fn checked<T>(&self, check: impl Fn(&KeySet) -> Result<T, svc_core::Reason>) -> Result<T, CheckFailed> {
        let keys = self.key_set(false).await?;
        match check(&keys) {
            Err(svc_core::Reason::KeyUnknown) => check(&*self.key_set(true).await?).map_err(CheckFailed::Answer),
            other => other.map_err(CheckFailed::Answer),
        }
    }
}

/// Why an answer's offline check did not hold: the key set could not be
/// had under the anchors, or the answer itself does not check.
#[derive(Debug, thiserror::Error)]
pub enum CheckFailed {
    #[error("the key set could not be fetched: {0}")]
    KeySetUnreached(CallError),
    #[error("the key set answered {0}")]
    KeySetStatus(u16),
    #[error("the key set is not JSON: {0}")]
    KeySetNotJson(serde_json::Error),
    #[error("the key set does not verify under the pinned anchors: {0}")]
    KeySetUnverified(svc_core::Reason),
    #[error("{0}")]
    Answer(svc_core::Reason),
}

/// The tools over one [`Own`].
#[derive(Clone)]
pub struct OwnTools {
    own: Arc<Own>,
    /// Built once per process: its input schemas are generated, not written.
    tool_router: Arc<ToolRouter<OwnTools>>,
}

/// A search request (retrieval 2.2). Without a `country` clause, the
/// configured `country` is added.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Text query, at most 512 characters; `*` for everything the filter admits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub q: Option<String>,
    /// Text fields `q` is matched against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query_by: Option<Vec<String>>,
    /// `{"all": [clause, ...]}`: exactly one clause names `country`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<Value>,
    /// `field:asc` or `field:desc`, up to three, comma-separated. Required.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sort_by: Option<String>,
    /// 1 to 50.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_query_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_keywords: Option<Vec<String>>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchArgs {
    /// The record's id, as a row names it.
    pub record_id: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReceiptsArgs {
    /// From this time (RFC 3339).
    pub from: Option<String>,
    /// Until this time (RFC 3339).
    pub to: Option<String>,
    pub key_id: Option<String>,
    pub ai_company_uuid: Option<String>,
    /// The previous page's `next_cursor`.
    pub cursor: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageArgs {
    pub from: Option<String>,
    pub to: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TermsArgs {
    /// One version; the Terms in force without it.
    pub version: Option<u64>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// A row's `ai_policy_bits`, decoded here without a request.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AiPolicyArgs {
    pub ai_policy_bits: BitsArg,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BitsArg {
    pub ai_policy_version: u64,
    pub ai_policy_schema: u64,
    #[serde(rename = "use")]
    pub use_mask: u64,
    pub action: u64,
    pub blocked: u64,
}

/// A pool request (retrieval 4.1), sent as given.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct PoolArgs {
    #[serde(flatten)]
    pub request: serde_json::Map<String, Value>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReportKind {
    /// `POST /v1/ads/render`.
    AdRender,
    /// `POST /v1/ads/click`.
    AdClick,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportArgs {
    pub kind: ReportKind,
    /// The `Idempotency-Key` header: the same key for a retry of the same report.
    pub idempotency_key: String,
    /// The confirmation (retrieval 4.2) or `{click_token, session_ref}`.
    pub body: serde_json::Map<String, Value>,
}

fn problem_text(code: &str, detail: &str) -> CallToolResult {
    let body = json!({"type": format!("urn:svc:problem:{code}"), "title": "The self-hosted server could not answer", "code": code, "detail": detail});
    CallToolResult::error(vec![ContentBlock::text(body.to_string())])
}

fn failed(error: CallError) -> CallToolResult {
    let code = match error {
        CallError::Unreachable { .. } | CallError::TimedOut(_) | CallError::Broken(_) => "unavailable",
        CallError::Sign(_) => "request_invalid",
    };
    problem_text(code, &error.to_string())
}

/// The answer's body as the first block; a second block for the check.
fn with_check(called: &Called, check: Option<Result<Value, CheckFailed>>) -> CallToolResult {
    let body = ContentBlock::text(String::from_utf8_lossy(&called.answer.bytes).into_owned());
    let served = (200..300).contains(&called.answer.status);
    match check {
        _ if !served => CallToolResult::error(vec![body]),
        None => CallToolResult::success(vec![body]),
        Some(Ok(summary)) => CallToolResult::success(vec![
            body,
            ContentBlock::text(json!({"offline_check": "ok", "details": summary}).to_string()),
        ]),
        Some(Err(reason)) => CallToolResult::error(vec![
            body,
            ContentBlock::text(json!({"offline_check": "failed", "reason": reason.to_string()}).to_string()),
        ]),
    }
}

#[tool_router]
impl OwnTools {
    pub fn new(own: Arc<Own>) -> Self {
        static ROUTER: std::sync::OnceLock<Arc<ToolRouter<OwnTools>>> = std::sync::OnceLock::new();
        OwnTools { own, tool_router: ROUTER.get_or_init(|| Arc::new(Self::tool_router())).clone() }
    }

    async fn search(&self, address: &str, args: SearchArgs) -> Result<CallToolResult, ErrorData> {
        let mut body = serde_json::to_value(&args).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        if let Some(country) = &self.own.config.country {
            add_country(&mut body, country);
        }
        let bytes = body.to_string().into_bytes();
        let called = match self.own.caller.call("POST", address, &bytes).await {
            Ok(called) => called,
            Err(e) => return Ok(failed(e)),
        };
        let key_id = self.own.caller.key_id();
        let check = match called.answer.status {
            200 => {
                let body: Value = serde_json::from_slice(&called.answer.bytes).unwrap_or(Value::Null);
                Some(self.own.checked(|keys| svc_core::offline::check_search(&body, keys, &key_id)).await.map(|c| {
                    json!({"receipt_format": c.receipt.format, "region": c.receipt.receipt.region, "rows": c.rows, "attempts": called.attempts})
                }))
            }
            _ => None,
        };
        Ok(with_check(&called, check))
    }

    #[tool(
        description = "Search products (POST /v1/products/search), signed with your key and billed as the API is; every row and the receipt are checked offline."
    )]
    async fn search_products(&self, Parameters(args): Parameters<SearchArgs>) -> Result<CallToolResult, ErrorData> {
        self.search("/v1/products/search", args).await
    }

    #[tool(description = "Search business files (POST /v1/business-files/search); rows and receipt checked offline.")]
    async fn search_business_files(
        &self,
        Parameters(args): Parameters<SearchArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.search("/v1/business-files/search", args).await
    }

    #[tool(description = "Search events (POST /v1/events/search); rows and receipt checked offline.")]
    async fn search_events(&self, Parameters(args): Parameters<SearchArgs>) -> Result<CallToolResult, ErrorData> {
        self.search("/v1/events/search", args).await
    }

    #[tool(description = "Search jobs (POST /v1/jobs/search); rows and receipt checked offline.")]
    async fn search_jobs(&self, Parameters(args): Parameters<SearchArgs>) -> Result<CallToolResult, ErrorData> {
        self.search("/v1/jobs/search", args).await
    }

    #[tool(description = "Search news updates (POST /v1/updates/search); rows and receipt checked offline.")]
    async fn search_updates(&self, Parameters(args): Parameters<SearchArgs>) -> Result<CallToolResult, ErrorData> {
        self.search("/v1/updates/search", args).await
    }

    #[tool(
        description = "Fetch one record (GET /v1/records/{id}): its exact bytes, seal, sidecar and receipt, each checked offline."
    )]
    async fn fetch(&self, Parameters(args): Parameters<FetchArgs>) -> Result<CallToolResult, ErrorData> {
        let path = format!("/v1/records/{}", percent(&args.record_id));
        let called = match self.own.caller.call("GET", &path, b"").await {
            Ok(called) => called,
            Err(e) => return Ok(failed(e)),
        };
        if called.answer.status != 200 {
            return Ok(with_check(&called, None));
        }
        let key_id = self.own.caller.key_id();
        let bytes = called.answer.bytes.clone();
        let mut check = self.own.checked(|keys| svc_core::offline::check_fetch(&bytes, keys, &key_id)).await.map(|c| {
            json!({"receipt_format": c.receipt.format, "region": c.receipt.receipt.region, "batch_inclusion": c.inclusion, "attempts": called.attempts})
        });
        if let Ok(summary) = &mut check {
            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            if let Some(line) = body["provenance"]["source_line"].as_str() {
                summary["source_line"] = json!(self.source_line(line));
            }
            if self.own.config.verify_online {
                summary["verify_online"] = self.verify_online(&bytes).await;
            }
        }
        Ok(with_check(&called, Some(check)))
    }

    #[tool(description = "Verify a record, seal, row, sidecar or AI policy bits with the service (POST /v1/verify).")]
    async fn verify(
        &self,
        Parameters(args): Parameters<svc_http::mcp::public::VerifyArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let body = serde_json::to_vec(&args).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(self.plain("POST", "/v1/verify", &body).await)
    }

    #[tool(
        description = "Your receipts (GET /v1/receipts), oldest first, 100 a page; each receipt's signature is checked offline."
    )]
    async fn receipts(&self, Parameters(args): Parameters<ReceiptsArgs>) -> Result<CallToolResult, ErrorData> {
        let q = query(&[
            ("from", args.from),
            ("to", args.to),
            ("key_id", args.key_id),
            ("ai_company_uuid", args.ai_company_uuid),
            ("cursor", args.cursor),
        ]);
        let called = match self.own.caller.call("GET", &format!("/v1/receipts{q}"), b"").await {
            Ok(called) => called,
            Err(e) => return Ok(failed(e)),
        };
        let check = match called.answer.status {
            200 => {
                let body: Value = serde_json::from_slice(&called.answer.bytes).unwrap_or(Value::Null);
                Some(
                    self.own
                        .checked(|keys| svc_core::offline::check_receipts(&body, keys))
                        .await
                        .map(|n| json!({"receipts": n})),
                )
            }
            _ => None,
        };
        Ok(with_check(&called, check))
    }

    #[tool(
        description = "Decode a row's ai_policy_bits locally (no request): which uses and actions the business allows, and which contexts are blocked."
    )]
    async fn ai_policy(&self, Parameters(args): Parameters<AiPolicyArgs>) -> Result<CallToolResult, ErrorData> {
        let b = args.ai_policy_bits;
        let bits = svc_core::ai_policy::AiPolicyBits {
            ai_policy_version: b.ai_policy_version,
            ai_policy_schema: b.ai_policy_schema,
            use_mask: b.use_mask,
            action: b.action,
            blocked: b.blocked,
        };
        Ok(match bits.decode() {
            Ok(decoded) => CallToolResult::success(vec![ContentBlock::text(json!(decoded).to_string())]),
            Err(e) => problem_text("request_invalid", &e.to_string()),
        })
    }

    #[tool(description = "The Terms in force (GET /v1/terms), or one version (GET /v1/terms/{version}).")]
    async fn terms(&self, Parameters(args): Parameters<TermsArgs>) -> Result<CallToolResult, ErrorData> {
        let path = args.version.map_or_else(|| "/v1/terms".to_owned(), |v| format!("/v1/terms/{v}"));
        Ok(self.plain("GET", &path, b"").await)
    }

    #[tool(description = "What each AI policy bit means (GET /v1/ai-policy-key).")]
    async fn ai_policy_key(&self, Parameters(_): Parameters<NoArgs>) -> Result<CallToolResult, ErrorData> {
        Ok(self.plain("GET", "/v1/ai-policy-key", b"").await)
    }

    #[tool(description = "Your usage (GET /v1/usage).")]
    async fn usage(&self, Parameters(args): Parameters<UsageArgs>) -> Result<CallToolResult, ErrorData> {
        let q = query(&[("from", args.from), ("to", args.to)]);
        Ok(self.plain("GET", &format!("/v1/usage{q}"), b"").await)
    }

    #[tool(description = "Ask for an ad pool (POST /v1/ads/pool) with a pool request (retrieval 4.1).")]
    async fn ads_pool(&self, Parameters(args): Parameters<PoolArgs>) -> Result<CallToolResult, ErrorData> {
        let body = Value::Object(args.request).to_string().into_bytes();
        Ok(self.plain("POST", "/v1/ads/pool", &body).await)
    }

    #[tool(
        description = "Report an ad: ad_render (POST /v1/ads/render) or ad_click (POST /v1/ads/click), with an Idempotency-Key."
    )]
    async fn report(&self, Parameters(args): Parameters<ReportArgs>) -> Result<CallToolResult, ErrorData> {
        let path = match args.kind {
            ReportKind::AdRender => "/v1/ads/render",
            ReportKind::AdClick => "/v1/ads/click",
        };
        if args.idempotency_key.is_empty() || args.idempotency_key.len() > 255 {
            return Ok(problem_text("request_invalid", "idempotency_key is 1 to 255 characters"));
        }
        let body = Value::Object(args.body).to_string().into_bytes();
        Ok(match self.own.caller.call_with("POST", path, &body, &[("idempotency-key", &args.idempotency_key)]).await {
            Ok(called) => with_check(&called, None),
            Err(e) => failed(e),
        })
    }
}

impl OwnTools {
    /// A call whose answer needs no offline check.
    async fn plain(&self, method: &str, path: &str, body: &[u8]) -> CallToolResult {
        match self.own.caller.call(method, path, body).await {
            Ok(called) => with_check(&called, None),
            Err(e) => failed(e),
        }
    }

    /// The source line to cite, its `verify=` link on `source_line_base` when set.
    fn source_line(&self, line: &str) -> String {
        let Some(base) = &self.own.config.source_line_base else { return line.to_owned() };
        let Some((head, url)) = line.rsplit_once(" verify=") else { return line.to_owned() };
        let path = url.split_once("://").map_or(url, |(_, rest)| rest.find('/').map_or("", |i| &rest[i..]));
        format!("{head} verify={}{path}", base.trim_end_matches('/'))
    }

    /// The service's own judgement of a fetched record (`verify_online`).
    async fn verify_online(&self, fetched: &[u8]) -> Value {
        #[derive(Deserialize)]
        struct Raw<'a> {
            #[serde(borrow)]
            record: &'a serde_json::value::RawValue,
            seal: Value,
            sidecar: Value,
        }
        let Ok(raw) = serde_json::from_slice::<Raw<'_>>(fetched) else {
            return json!({"error": "the fetch answer is not a record"});
        };
        let body = json!({"record_base64": svc_core::b64::std_encode(raw.record.get().as_bytes()), "seal": raw.seal, "sidecar": raw.sidecar});
        match self.own.caller.call("POST", "/v1/verify", body.to_string().as_bytes()).await {
            Ok(called) => serde_json::from_slice(&called.answer.bytes).unwrap_or(Value::Null),
            Err(e) => json!({"error": e.to_string()}),
        }
    }
}

/// Adds `{"country": country}` to a search whose filter names no country.
pub fn add_country(body: &mut Value, country: &str) {
    let clause = json!({"country": country});
    match body.get_mut("filter") {
        None | Some(Value::Null) => body["filter"] = json!({"all": [clause]}),
        Some(filter) => {
            if let Some(all) = filter.get_mut("all").and_then(Value::as_array_mut)
                && !all.iter().any(|c| c.get("country").is_some())
            {
                all.push(clause);
            }
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for OwnTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("svc-own", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "svc's retrieval API under your own key: each tool call is one signed request, billed and receipted as the API is. \
                 The first block of a result is the API's answer byte for byte; the second says what was checked offline.",
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configured_country_is_added_only_where_none_is_named() {
        let mut none = json!({"q": "lamp"});
        add_country(&mut none, "FR");
        assert_eq!(none["filter"], json!({"all": [{"country": "FR"}]}));
        let mut other = json!({"filter": {"all": [{"brand": "Lumen"}]}});
        add_country(&mut other, "FR");
        assert_eq!(other["filter"]["all"][1], json!({"country": "FR"}));
        let mut named = json!({"filter": {"all": [{"country": "DE"}]}});
        add_country(&mut named, "FR");
        assert_eq!(named["filter"]["all"].as_array().unwrap().len(), 1);
    }
}
