//! Reading a request body under a limit, without reading past it.

use axum::Json;
use axum::body::Body;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, header};
use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use svc_core::problem::{Code, declared_length_over_limit};
use svc_core::time::UnixMs;

use svc_node::region::Region;
use svc_node::service::Error;

pub const KIB: usize = 1024;
pub const MIB: usize = 1024 * KIB;

/// Limits by route: 16 KiB by default, 64 KiB on ads routes, 32 MiB to publish.
pub const DEFAULT_LIMIT: usize = 16 * KIB;
pub const PUBLISH_LIMIT: usize = 32 * MIB;
pub const VERIFY_LIMIT: usize = 512 * KIB;

/// The body length a request declares, refused when over `limit`.
pub fn declared_length(headers: &HeaderMap, limit: usize, now: UnixMs) -> Result<Option<u64>, Error> {
    let Some(declared) = headers.get(header::CONTENT_LENGTH) else { return Ok(None) };
    match declared.to_str().ok().and_then(|v| v.trim().parse::<u64>().ok()) {
        Some(n) if n > limit as u64 => Err(Error::detail(
            declared_length_over_limit(now),
            format!("declared body of {n} bytes is over the {limit}-byte limit"),
        )),
        Some(n) => Ok(Some(n)),
        None => Err(Error::detail(Code::RequestInvalid, "Content-Length is not a number")),
    }
}

/// Reads the whole body if it fits in `limit`. A declared `Content-Length`
/// over the limit is refused before a byte is read; a chunked body is read
/// only up to the limit and refused as soon as it passes it.
pub async fn read_limited(headers: &HeaderMap, body: Body, limit: usize, now: UnixMs) -> Result<Bytes, Error> {
    declared_length(headers, limit, now)?;
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            Err(Error::detail(Code::RecordTooLarge, format!("body is over the {limit}-byte limit")))
        }
        // Cut off, or sent slower than the listener waits for.
        Err(_) => Err(Error::detail(Code::RequestInvalid, "the body could not be read whole, or came too slowly")),
    }
}

/// A JSON body (the operator's, the portal script's); one that does not read (not JSON, a member
/// missing, unknown or of the wrong type) is a `400 request_invalid`
/// problem saying why, like every other bad input.
pub struct JsonBody<T>(pub T);

impl<T: serde::de::DeserializeOwned> FromRequest<Region> for JsonBody<T> {
    type Rejection = Error;

    async fn from_request(req: Request, state: &Region) -> Result<Self, Error> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(value)) => Ok(JsonBody(value)),
            Err(rejection) => Err(Error::detail(Code::RequestInvalid, rejection.body_text())),
        }
    }
}
