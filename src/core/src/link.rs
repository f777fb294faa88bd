//! How a read region and home authenticate what they say to each other on
//! a link without TLS, with the region's own token as an HMAC-SHA256 key
//! that never crosses the wire.
//!
//! A request names its region and the time it was made, and carries a MAC
//! over those, its method, target and body digest; home answers only one
//! made within [`WINDOW_MS`] of its clock whose MAC is the region's. The
//! answer carries a MAC over the request's time and target, its status,
//! home's log head and its body digest, so a region applies only what home
//! said to that request: a frame or a lease from anyone else is refused.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::digest::sha256_hex;

pub const REGION_HEADER: &str = "x-svc-region";
pub const AT_HEADER: &str = "x-svc-link-at";
pub const MAC_HEADER: &str = "x-svc-link-mac";
/// How far a request's time may be from home's clock, either way.
pub const WINDOW_MS: i64 = 60_000;

fn keyed(token: &str, lines: &[&str]) -> Hmac<Sha256> {
    // HMAC takes a key of any length.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(token.as_bytes()).expect("any key length");
    mac.update(lines.join("\n").as_bytes());
    mac
}

/// The keyed MAC of a request, before it is finished or compared.
fn request(token: &str, (region, method, target): (&str, &str, &str), at_ms: i64, body: &[u8]) -> Hmac<Sha256> {
    let (at, body) = (at_ms.to_string(), sha256_hex(body));
    keyed(token, &["svc-link-request", region, method, target, &at, &body])
}

/// The keyed MAC of an answer, before it is finished or compared.
fn answer(token: &str, (at_ms, target): (i64, &str), status: u16, head: Option<&str>, body: &[u8]) -> Hmac<Sha256> {
    let (at, status, body) = (at_ms.to_string(), status.to_string(), sha256_hex(body));
    keyed(token, &["svc-link-answer", &at, target, &status, head.unwrap_or(""), &body])
}

/// Whether `presented` (hex) is `mac`, compared in constant time.
fn matches(mac: Hmac<Sha256>, presented: &str) -> bool {
    hex::decode(presented).is_ok_and(|presented| mac.verify_slice(&presented).is_ok())
}

/// A request's MAC, as hex.
pub fn request_mac(token: &str, region: &str, method: &str, target: &str, at_ms: i64, body: &[u8]) -> String {
    hex::encode(request(token, (region, method, target), at_ms, body).finalize().into_bytes())
}

/// Whether `presented` (hex) is the request's MAC under `token`.
pub fn request_mac_matches(token: &str, presented: &str, parts: (&str, &str, &str), at_ms: i64, body: &[u8]) -> bool {
    matches(request(token, parts, at_ms, body), presented)
}

/// The answer to a request made at `at_ms` for `target`: its MAC, as hex.
/// `head` is home's log head when the answer carries one.
pub fn answer_mac(token: &str, at_ms: i64, target: &str, status: u16, head: Option<&str>, body: &[u8]) -> String {
    hex::encode(answer(token, (at_ms, target), status, head, body).finalize().into_bytes())
}

/// Whether `presented` (hex) is the answer's MAC.
pub fn answer_mac_matches(
    token: &str,
    presented: &str,
    request: (i64, &str),
    status: u16,
    head: Option<&str>,
    body: &[u8],
) -> bool {
    matches(answer(token, request, status, head, body), presented)
}

/// Whether a request made at `at_ms` is within the window of `now_ms`.
pub fn fresh(at_ms: i64, now_ms: i64) -> bool {
    at_ms.abs_diff(now_ms) <= WINDOW_MS as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "eu-replication-token-of-thirty-two-chars";

    #[test]
    fn a_request_mac_binds_every_part_and_the_token() {
        let mac = request_mac(TOKEN, "eu", "POST", "/internal/v1/report", 1_000, b"body");
        let parts = ("eu", "POST", "/internal/v1/report");
        assert!(request_mac_matches(TOKEN, &mac, parts, 1_000, b"body"));
        assert!(!request_mac_matches("another-token-of-thirty-two-characters", &mac, parts, 1_000, b"body"));
        assert!(!request_mac_matches(TOKEN, &mac, ("ap", "POST", "/internal/v1/report"), 1_000, b"body"));
        assert!(!request_mac_matches(TOKEN, &mac, ("eu", "POST", "/internal/v1/lease"), 1_000, b"body"));
        assert!(!request_mac_matches(TOKEN, &mac, parts, 1_001, b"body"));
        assert!(!request_mac_matches(TOKEN, &mac, parts, 1_000, b"bodY"));
        assert!(!request_mac_matches(TOKEN, "not hex", parts, 1_000, b"body"));
        assert!(!request_mac_matches(TOKEN, &mac[..10], parts, 1_000, b"body"));
    }

    #[test]
    fn an_answer_mac_binds_the_request_status_head_and_body() {
        let target = "/internal/v1/log?after=3";
        let mac = answer_mac(TOKEN, 7, target, 200, Some("9"), b"frames");
        assert!(answer_mac_matches(TOKEN, &mac, (7, target), 200, Some("9"), b"frames"));
        assert!(!answer_mac_matches(TOKEN, &mac, (8, target), 200, Some("9"), b"frames"), "another request's");
        assert!(!answer_mac_matches(TOKEN, &mac, (7, "/internal/v1/log?after=4"), 200, Some("9"), b"frames"));
        assert!(!answer_mac_matches(TOKEN, &mac, (7, target), 200, Some("10"), b"frames"));
        assert!(!answer_mac_matches(TOKEN, &mac, (7, target), 200, Some("9"), b"frameZ"));
        assert!(!answer_mac_matches(TOKEN, &mac, (7, target), 503, Some("9"), b"frames"));
    }

    #[test]
    fn a_request_is_fresh_within_a_minute_either_way() {
        assert!(fresh(0, 60_000) && fresh(60_000, 0));
        assert!(!fresh(0, 60_001) && !fresh(i64::MIN, i64::MAX));
    }
}
