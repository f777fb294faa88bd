//! The signing client: what a business system or an AI company runs on its
//! side. The CLI, the sandbox seeder, the load generator and the tests all
//! sign and seal through here, so there is one implementation of the
//! caller's half of the protocol.

pub mod admin;
pub mod anchors;
pub mod bulk;
pub mod error;
pub mod keyfile;
pub mod publish;
pub mod retrieval;
pub mod sealing;
pub mod transport;
pub mod trust;

use axum::body::Body;
use axum::http::Request;
use svc_core::keys::SigningKey;

pub use error::{ClientError, KeyFileError};

/// How long a signature stays valid: well inside the 300-second ceiling,
/// with room for a slow network.
pub const SIGNATURE_LIFETIME_SECS: i64 = 60;

/// A request to sign: method, path with its query, body and extra headers.
#[derive(Clone)]
pub struct Unsigned<'a> {
    pub method: &'a str,
    pub path_and_query: &'a str,
    pub body: Vec<u8>,
    pub headers: Vec<(String, String)>,
}

impl<'a> Unsigned<'a> {
    pub fn new(method: &'a str, path_and_query: &'a str, body: Vec<u8>) -> Self {
        Unsigned { method, path_and_query, body, headers: Vec::new() }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// Signs requests for one key, tag and public authority.
pub struct Signer {
    pub key: SigningKey,
    pub authority: String,
    pub tag: String,
}

impl Signer {
    pub fn new(key: SigningKey, authority: &str, tag: &str) -> Self {
        Signer { key, authority: authority.to_owned(), tag: tag.to_owned() }
    }

    /// The RFC 9421 signed request, created at `now_secs` with `nonce`.
    pub fn sign(&self, request: Unsigned<'_>, now_secs: i64, nonce: &str) -> Result<Request<Body>, ClientError> {
        let (path, query) = match request.path_and_query.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (request.path_and_query, None),
        };
        let signed = svc_core::http_sig::sign(
            request.method,
            &self.authority,
            path,
            query,
            &request.body,
            &self.key,
            now_secs,
            now_secs + SIGNATURE_LIFETIME_SECS,
            nonce,
            &self.tag,
        )?;
        let mut builder = Request::builder()
            .method(request.method)
            .uri(request.path_and_query)
            .header("host", self.authority.as_str());
        if !request.body.is_empty() {
            builder = builder.header("content-type", "application/json");
        }
        for (name, value) in signed.pairs() {
            builder = builder.header(name, value);
        }
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        Ok(builder.body(Body::from(request.body))?)
    }

    /// Signs with a fresh random nonce (32 bytes, base64url, as the spec asks).
    pub fn sign_now(&self, request: Unsigned<'_>, now_secs: i64) -> Result<Request<Body>, ClientError> {
        let nonce = svc_core::http_sig::nonce_from_bytes(&svc_clock::random::<32>());
        self.sign(request, now_secs, &nonce)
    }
}

/// A query string (`?a=1&b=2`) of the pairs that have a value; empty when none has.
pub fn query(pairs: &[(&str, Option<String>)]) -> String {
    let parts: Vec<String> =
        pairs.iter().filter_map(|(name, value)| value.as_ref().map(|v| format!("{name}={}", percent(v)))).collect();
    if parts.is_empty() { String::new() } else { format!("?{}", parts.join("&")) }
}

/// Percent-encodes a path segment or query value (RFC 3986 unreserved characters pass).
pub fn percent(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
