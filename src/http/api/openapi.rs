//! The public API described in OpenAPI 3.1 (`GET /openapi.json`, at every
//! region): every public, retrieval and business route, from the table
//! below. `tests/it/openapi.rs` keeps the table and the routers equal (a
//! route missing here, or described and not served, fails it), and
//! schemathesis fuzzes the description against a running node in CI.
//! Any answer the table does not name is an RFC 9457 problem with a `code`
//! (the `default` response). The portals' pages, the MCP endpoint, the
//! operator's and the regions' own routes are not part of this API.

use serde_json::{Map, Value, json};

/// Who may call an operation: anyone, or a request signed (RFC 9421, the
/// profile in the reference) with this tag.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    Anyone,
    /// `svc-retrieval`: an AI company's retrieval key.
    Retrieval,
    /// `svc-push`: a business's integration key, writing.
    Push,
    /// `svc-business-read`: a business's integration key, reading.
    BusinessRead,
}

impl Caller {
    fn scheme(self) -> Option<&'static str> {
        match self {
            Caller::Anyone => None,
            Caller::Retrieval => Some("svc-retrieval"),
            Caller::Push => Some("svc-push"),
            Caller::BusinessRead => Some("svc-business-read"),
        }
    }
}

/// What a request carries.
#[derive(Clone, Copy)]
pub enum Body {
    None,
    /// A JSON object with these members required.
    Json(&'static [&'static str]),
    /// A bulk file as `multipart/form-data`.
    Multipart,
}

/// One operation as the table describes it.
pub struct Operation {
    pub method: &'static str,
    pub path: &'static str,
    pub tag: &'static str,
    pub caller: Caller,
    pub summary: &'static str,
    pub query: &'static [&'static str],
    pub body: Body,
    /// Each success: its status and content types.
    pub ok: &'static [(u16, &'static [&'static str])],
}

const JSON: &[&str] = &["application/json"];
const JSON_OR_HTML: &[&str] = &["application/json", "text/html; charset=utf-8"];

const fn op(
    method: &'static str,
    path: &'static str,
    tag: &'static str,
    caller: Caller,
    summary: &'static str,
) -> Operation {
    Operation { method, path, tag, caller, summary, query: &[], body: Body::None, ok: &[(200, JSON)] }
}

/// Every operation of the public API.
pub const OPERATIONS: &[Operation] = &[
    // Retrieval (signed `svc-retrieval`).
    Operation {
        body: Body::Json(&["collection"]),
        ..op("post", "/v1/search", "retrieval", Caller::Retrieval, "Search one collection")
    },
    Operation {
        body: Body::Json(&[]),
        ..op("post", "/v1/products/search", "retrieval", Caller::Retrieval, "Search products")
    },
    Operation {
        body: Body::Json(&[]),
        ..op("post", "/v1/business-files/search", "retrieval", Caller::Retrieval, "Search business files")
    },
    Operation {
        body: Body::Json(&[]),
        ..op("post", "/v1/events/search", "retrieval", Caller::Retrieval, "Search events")
    },
    Operation { body: Body::Json(&[]), ..op("post", "/v1/jobs/search", "retrieval", Caller::Retrieval, "Search jobs") },
    Operation {
        body: Body::Json(&[]),
        ..op("post", "/v1/updates/search", "retrieval", Caller::Retrieval, "Search news updates")
    },
    op("get", "/v1/records/{record_id}", "retrieval", Caller::Retrieval, "Fetch one record"),
    op("get", "/v1/terms", "retrieval", Caller::Retrieval, "The Terms in force"),
    op("get", "/v1/terms/{version}", "retrieval", Caller::Retrieval, "One version of the Terms"),
    Operation {
        query: &["from", "to"],
        ..op("get", "/v1/usage", "retrieval", Caller::Retrieval, "The caller's usage")
    },
    Operation {
        query: &["from", "to", "key_id", "ai_company_uuid", "cursor"],
        ..op("get", "/v1/receipts", "retrieval", Caller::Retrieval, "The caller's receipts")
    },
    // Ads (signed `svc-retrieval`), and their images (a signed link).
    Operation { body: Body::Json(&[]), ..op("post", "/v1/ads/pool", "ads", Caller::Retrieval, "A pool of paid items") },
    Operation {
        body: Body::Json(&[]),
        ..op("post", "/v1/ads/render", "ads", Caller::Retrieval, "Confirm an item was shown")
    },
    Operation {
        body: Body::Json(&[]),
        ..op("post", "/v1/ads/click", "ads", Caller::Retrieval, "Confirm an item was clicked")
    },
    Operation {
        query: &["expires", "sig"],
        ok: &[(200, &["image/png", "image/jpeg", "image/webp", "image/gif"])],
        ..op("get", "/v1/ads/images/{sha256}", "ads", Caller::Anyone, "An ad image by its signed link")
    },
    // Business API (signed `svc-push` to write, `svc-business-read` to read).
    Operation {
        body: Body::Json(&["batch_seal", "records"]),
        ok: &[(200, JSON), (202, JSON)],
        ..op("post", "/v1/publish/{kind}", "business", Caller::Push, "Publish a sealed batch")
    },
    Operation {
        body: Body::Json(&["document_base64", "seal"]),
        ..op("post", "/v1/publish/{kind}/withdraw", "business", Caller::Push, "Withdraw a record")
    },
    Operation {
        body: Body::Json(&["document_base64", "seal"]),
        ..op("post", "/v1/publish/{kind}/delete", "business", Caller::Push, "Delete a record")
    },
    op("delete", "/v1/records/{record_id}", "business", Caller::Push, "Refused: a delete needs a sealed document"),
    Operation {
        query: &["cursor", "type"],
        ..op("get", "/v1/catalogue", "business", Caller::BusinessRead, "The business's catalogue")
    },
    op("get", "/v1/catalogue/{id}", "business", Caller::BusinessRead, "One record of the catalogue"),
    op("delete", "/v1/catalogue/{id}", "business", Caller::Push, "Refused: a delete needs a sealed document"),
    Operation {
        query: &["from", "to", "status", "cursor"],
        ..op("get", "/v1/push-attempts", "business", Caller::BusinessRead, "Every record a push tried")
    },
    Operation {
        query: &["outcome", "cursor"],
        ..op("get", "/v1/pushes/{push_id}", "business", Caller::BusinessRead, "A push's status and results")
    },
    op("get", "/v1/seal-context", "business", Caller::BusinessRead, "What a seal names now"),
    Operation {
        query: &["from", "to"],
        ..op("get", "/v1/analytics/daily", "business", Caller::BusinessRead, "Daily counts")
    },
    Operation {
        query: &["country"],
        ..op("get", "/v1/analytics/who-is-asking", "business", Caller::BusinessRead, "Who is asking")
    },
    op("get", "/v1/freshness-expectations", "business", Caller::BusinessRead, "Declared freshness"),
    Operation {
        body: Body::Json(&[]),
        ..op("put", "/v1/freshness-expectations/{record_type}", "business", Caller::Push, "Declare freshness")
    },
    op("delete", "/v1/freshness-expectations/{record_type}", "business", Caller::Push, "Clear a declaration"),
    Operation {
        body: Body::Json(&["record_type"]),
        ..op("post", "/v1/bulk-uploads", "business", Caller::Push, "An upload address for a bulk file")
    },
    Operation {
        body: Body::Json(&["upload_id", "batch_seal"]),
        ok: &[(200, JSON), (202, JSON)],
        ..op("post", "/v1/bulk-imports", "business", Caller::Push, "Import an uploaded bulk file")
    },
    Operation {
        body: Body::Multipart,
        ok: &[(201, JSON)],
        ..op("post", "/v1/uploads/{upload_id}", "business", Caller::Anyone, "Upload a bulk file (signed policy)")
    },
    // Public verification (no signature).
    op("get", "/.well-known/keys", "public", Caller::Anyone, "The key set"),
    Operation {
        ok: &[(200, &["application/http-message-signatures-directory+json"])],
        ..op(
            "get",
            "/.well-known/http-message-signatures-directory",
            "public",
            Caller::Anyone,
            "The service's Web Bot Auth keys",
        )
    },
    Operation {
        query: &["tree_size", "format"],
        ok: &[(200, &["application/json", "text/plain; charset=utf-8"])],
        ..op("get", "/v1/log/checkpoint", "log", Caller::Anyone, "A signed checkpoint")
    },
    Operation {
        query: &["leaf_hash", "receipt", "from", "to", "tree_size"],
        ..op("get", "/v1/log/proof", "log", Caller::Anyone, "An inclusion, receipt or consistency proof")
    },
    Operation {
        ok: &[(200, &["text/plain; charset=utf-8"])],
        ..op("get", "/log/checkpoint", "log", Caller::Anyone, "The newest checkpoint, cosigned (C2SP tlog-tiles)")
    },
    Operation {
        ok: &[(200, &["application/octet-stream"])],
        ..op("get", "/log/tile/{path}", "log", Caller::Anyone, "A tile or entry bundle (C2SP tlog-tiles)")
    },
    Operation {
        query: &["format"],
        ok: &[(200, JSON_OR_HTML)],
        ..op("get", "/v1/certificates/{uuid}", "public", Caller::Anyone, "A business's certificate")
    },
    op("get", "/v1/certificates/{uuid}/keys", "public", Caller::Anyone, "A business's keys, signed"),
    op("get", "/v1/certificates/{uuid}/key-custody", "public", Caller::Anyone, "A business's key custody"),
    op("get", "/v1/projections/{kind}/{version}", "public", Caller::Anyone, "A projection specification"),
    op("get", "/v1/ai-policy-key", "public", Caller::Anyone, "The AI policy key"),
    op("get", "/v1/verification-index", "public", Caller::Anyone, "The verification index"),
    op("get", "/v1/key-directory", "public", Caller::Anyone, "The key directory"),
    op("get", "/v1/vocabularies", "public", Caller::Anyone, "The vocabularies"),
    op("get", "/v1/vocabularies/{name}", "public", Caller::Anyone, "One vocabulary"),
    Operation {
        body: Body::Json(&[]),
        ..op("post", "/v1/verify", "public", Caller::Anyone, "Verify a record, row or policy")
    },
    Operation {
        query: &["origin", "cert", "served_at", "format"],
        ok: &[(200, JSON_OR_HTML)],
        ..op("get", "/v1/verify/{record_id}", "public", Caller::Anyone, "A record's verify page")
    },
    op("get", "/openapi.json", "public", Caller::Anyone, "This description"),
    // Health.
    op("get", "/healthz", "health", Caller::Anyone, "Alive"),
    Operation { ok: &[(200, JSON), (503, JSON)], ..op("get", "/readyz", "health", Caller::Anyone, "Ready to serve") },
];

fn problem_schema() -> Value {
    json!({
        "type": "object",
        "description": "An RFC 9457 problem; `code` names it (the reference lists every code and its status).",
        "required": ["type", "title", "status", "code"],
        "properties": {
            "type": {"type": "string"},
            "title": {"type": "string"},
            "status": {"type": "integer", "minimum": 400, "maximum": 599},
            "code": {"type": "string", "pattern": "^[a-z_]+$"},
            "detail": {"type": "string"},
            "retry_after_ms": {"type": "integer"},
            "retry_after_seconds": {"type": "integer"},
        },
    })
}

fn content(types: &[&str]) -> Value {
    let mut map = Map::new();
    for kind in types {
        let schema = match *kind {
            "application/json" | "application/http-message-signatures-directory+json" => json!({"type": "object"}),
            _ => json!({"type": "string"}),
        };
        map.insert((*kind).to_owned(), json!({ "schema": schema }));
    }
    Value::Object(map)
}

fn parameters(operation: &Operation) -> Vec<Value> {
    let mut out = Vec::new();
    for segment in operation.path.split('/') {
        if let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            out.push(
                json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "minLength": 1}}),
            );
        }
    }
    for name in operation.query {
        out.push(json!({"name": name, "in": "query", "required": false, "schema": {"type": "string"}}));
    }
    out
}

fn operation_value(operation: &Operation) -> Value {
    let mut responses = Map::new();
    for (status, types) in operation.ok {
        let description = if *status == 503 { "Not ready" } else { "Success" };
        responses.insert(status.to_string(), json!({"description": description, "content": content(types)}));
    }
    responses.insert(
        "default".into(),
        json!({"description": "A refusal or failure: an RFC 9457 problem",
               "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}),
    );
    let mut value = json!({
        "operationId": format!("{} {}", operation.method, operation.path),
        "summary": operation.summary,
        "tags": [operation.tag],
        "parameters": parameters(operation),
        "responses": responses,
    });
    match operation.caller.scheme() {
        Some(scheme) => value["security"] = json!([{ scheme: [] }]),
        None => value["security"] = json!([]),
    }
    match operation.body {
        Body::None => {}
        Body::Json(required) => {
            value["requestBody"] = json!({"required": true, "content": {"application/json": {"schema":
                {"type": "object", "required": required}}}});
        }
        Body::Multipart => {
            value["requestBody"] = json!({"required": true, "content": {"multipart/form-data": {"schema":
                {"type": "object", "required": ["file"], "properties": {"file": {"type": "string", "format": "binary"}}}}}});
        }
    }
    value
}

fn signature_scheme(tag: &str, who: &str) -> Value {
    json!({
        "type": "apiKey",
        "in": "header",
        "name": "Signature",
        "description": format!(
            "RFC 9421 HTTP message signature labelled sig1 with tag=\"{tag}\" by {who}, over @method, @authority, \
             @path, @query (when present) and content-digest (when there is a body), with created, expires, \
             nonce and keyid; Signature-Input and Content-Digest go with it."
        ),
    })
}

/// The OpenAPI 3.1 document.
pub fn document(public_authority: &str) -> Value {
    let mut paths = Map::new();
    for operation in OPERATIONS {
        let item = paths.entry(operation.path.to_owned()).or_insert_with(|| json!({}));
        item[operation.method] = operation_value(operation);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "svc",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Sealed records of verified businesses: signed search and fetch with receipts, \
                            publishing, public verification and the transparency log.",
        },
        "servers": [{"url": format!("https://{public_authority}")}],
        "paths": paths,
        "components": {
            "schemas": {"Problem": problem_schema()},
            "securitySchemes": {
                "svc-retrieval": signature_scheme("svc-retrieval", "an AI company's retrieval key"),
                "svc-push": signature_scheme("svc-push", "a business's integration key"),
                "svc-business-read": signature_scheme("svc-business-read", "a business's integration key"),
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_is_described_once_with_a_problem_for_anything_else() {
        let doc = document("api.svc.example");
        let mut seen = std::collections::HashSet::new();
        for operation in OPERATIONS {
            assert!(seen.insert((operation.method, operation.path)), "{} {} twice", operation.method, operation.path);
            let described = &doc["paths"][operation.path][operation.method];
            assert_eq!(
                described["responses"]["default"]["content"]["application/problem+json"]["schema"]["$ref"],
                "#/components/schemas/Problem"
            );
            let path_params = operation.path.matches('{').count();
            let described_params =
                described["parameters"].as_array().unwrap().iter().filter(|p| p["in"] == "path").count();
            assert_eq!(path_params, described_params, "{}", operation.path);
        }
        assert_eq!(doc["openapi"], "3.1.0");
    }
}
