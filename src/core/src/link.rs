//! How a read region and home authenticate what they say to each other on
//! a link, with the region's own token as an HMAC-SHA256 key that never
//! crosses the wire.
//!
//! A request names its region, the time it was made, an id the region
//! chose, and the SHA-256 of the body it declares; it carries a MAC over
//! those, its method and target. Home judges all of it from the head alone,
//! before it reads a byte of the body, then checks the body against the
//! declared digest while it reads. Home answers only a request made within
//! [`WINDOW_MS`] of its clock whose MAC is the region's, and each id once
//! ([`Replays`]): a captured request sent again changes nothing. The answer
//! carries a MAC over the request's time and target, its status, home's log
//! head and its body digest, so a region applies only what home said to
//! that request: a frame or a lease from anyone else is refused.

use std::collections::{BTreeSet, HashMap};

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::digest::sha256_hex;

pub const REGION_HEADER: &str = "x-svc-region";
pub const AT_HEADER: &str = "x-svc-link-at";
pub const MAC_HEADER: &str = "x-svc-link-mac";
/// The request's id, chosen by the region, used once.
pub const ID_HEADER: &str = "x-svc-link-id";
/// The SHA-256 (hex) of the body the request declares.
pub const BODY_HEADER: &str = "x-svc-link-body";
/// How far a request's time may be from home's clock, either way.
pub const WINDOW_MS: i64 = 60_000;
/// An id is 16 to 64 characters of `[0-9A-Za-z_-]`.
const ID_LENGTHS: std::ops::RangeInclusive<usize> = 16..=64;
/// The ids home keeps per region: more than a region sends in two windows
/// at any rate it has reason to.
pub const MAX_IDS_PER_REGION: usize = 200_000;

/// What a request's MAC binds, all of it read from its head.
#[derive(Debug, Clone, Copy)]
pub struct RequestHead<'a> {
    pub region: &'a str,
    pub method: &'a str,
    /// The path and query.
    pub target: &'a str,
    pub at_ms: i64,
    pub id: &'a str,
    /// The SHA-256 of the body, hex, as declared.
    pub body_sha256: &'a str,
}

fn keyed(token: &str, lines: &[&str]) -> Hmac<Sha256> {
    // HMAC takes a key of any length.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(token.as_bytes()).expect("any key length");
    mac.update(lines.join("\n").as_bytes());
    mac
}

/// The keyed MAC of a request, before it is finished or compared.
fn request(token: &str, head: &RequestHead<'_>) -> Hmac<Sha256> {
    let at = head.at_ms.to_string();
    keyed(token, &["svc-link-request/2", head.region, head.method, head.target, &at, head.id, head.body_sha256])
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

/// The digest a request declares for `body`.
pub fn body_digest(body: &[u8]) -> String {
    sha256_hex(body)
}

/// A request's MAC, as hex.
pub fn request_mac(token: &str, head: &RequestHead<'_>) -> String {
    hex::encode(request(token, head).finalize().into_bytes())
}

/// Whether `presented` (hex) is the request's MAC under `token`.
pub fn request_mac_matches(token: &str, presented: &str, head: &RequestHead<'_>) -> bool {
    matches(request(token, head), presented)
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

/// The key home wraps the conversation secret under for one region, and
/// the region unwraps it with: drawn from that region's token, which never
/// crosses the wire, so neither does the secret in clear.
pub fn conversation_key(token: &str) -> [u8; 32] {
    keyed(token, &["svc-link-conversation-secret/1"]).finalize().into_bytes().into()
}

/// Whether a request made at `at_ms` is within the window of `now_ms`.
pub fn fresh(at_ms: i64, now_ms: i64) -> bool {
    at_ms.abs_diff(now_ms) <= WINDOW_MS as u64
}

/// Whether `id` is a request id a region may choose.
pub fn valid_id(id: &str) -> bool {
    ID_LENGTHS.contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Why a request id is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// Seen before within its window: the request was answered once.
    Seen,
    /// Made before home started: home no longer holds the ids seen then.
    BeforeStart,
    /// The region sent more ids in two windows than home keeps.
    TooMany,
}

/// The request ids home has seen, per region, each kept until its request's
/// time is outside the window (after that, freshness refuses it anyway).
/// Ids are held in memory: a request made before home started is refused,
/// so a restart opens no gap for a replay. Pure: time is passed in.
#[derive(Debug)]
pub struct Replays {
    started_at: i64,
    regions: HashMap<String, RegionIds>,
}

#[derive(Debug, Default)]
struct RegionIds {
    ids: HashMap<String, i64>,
    /// (when the id may be forgotten, id), to forget in order.
    by_expiry: BTreeSet<(i64, String)>,
}

impl Replays {
    pub fn new(started_at_ms: i64) -> Replays {
        Replays { started_at: started_at_ms, regions: HashMap::new() }
    }

    /// Takes `id` of a fresh request made at `at_ms`: `Ok` the first time.
    pub fn first_use(&mut self, region: &str, id: &str, at_ms: i64, now_ms: i64) -> Result<(), Replay> {
        if at_ms < self.started_at {
            return Err(Replay::BeforeStart);
        }
        let held = self.regions.entry(region.to_owned()).or_default();
        while let Some((until, _)) = held.by_expiry.first()
            && *until < now_ms
        {
            let (_, old) = held.by_expiry.pop_first().expect("looked at first");
            held.ids.remove(&old);
        }
        if held.ids.contains_key(id) {
            return Err(Replay::Seen);
        }
        if held.ids.len() >= MAX_IDS_PER_REGION {
            return Err(Replay::TooMany);
        }
        let until = at_ms.saturating_add(WINDOW_MS);
        held.ids.insert(id.to_owned(), until);
        held.by_expiry.insert((until, id.to_owned()));
        Ok(())
    }

    /// Ids held now, every region's.
    pub fn len(&self) -> usize {
        self.regions.values().map(|r| r.ids.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "eu-replication-token-of-thirty-two-chars";
    const ID: &str = "0123456789abcdef0123";

    fn head<'a>(target: &'a str, body_sha256: &'a str) -> RequestHead<'a> {
        RequestHead { region: "eu", method: "POST", target, at_ms: 1_000, id: ID, body_sha256 }
    }

    #[test]
    fn a_request_mac_binds_every_part_of_the_head_and_the_token() {
        let digest = body_digest(b"body");
        let mac = request_mac(TOKEN, &head("/internal/v1/report", &digest));
        let good = head("/internal/v1/report", &digest);
        assert!(request_mac_matches(TOKEN, &mac, &good));
        assert!(!request_mac_matches("another-token-of-thirty-two-characters", &mac, &good));
        assert!(!request_mac_matches(TOKEN, &mac, &RequestHead { region: "ap", ..good }));
        assert!(!request_mac_matches(TOKEN, &mac, &RequestHead { method: "GET", ..good }));
        assert!(!request_mac_matches(TOKEN, &mac, &head("/internal/v1/lease", &digest)));
        assert!(!request_mac_matches(TOKEN, &mac, &RequestHead { at_ms: 1_001, ..good }));
        assert!(!request_mac_matches(TOKEN, &mac, &RequestHead { id: "0123456789abcdef0124", ..good }));
        assert!(!request_mac_matches(TOKEN, &mac, &head("/internal/v1/report", &body_digest(b"bodY"))));
        assert!(!request_mac_matches(TOKEN, "not hex", &good));
        assert!(!request_mac_matches(TOKEN, &mac[..10], &good));
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

    #[test]
    fn an_id_is_sixteen_to_sixty_four_url_safe_characters() {
        assert!(valid_id(ID) && valid_id(&"a".repeat(64)) && valid_id("AZaz09-_AZaz09-_"));
        assert!(!valid_id("short") && !valid_id(&"a".repeat(65)) && !valid_id("0123456789abcdef 12"));
    }

    #[test]
    fn each_id_is_taken_once_while_its_request_is_fresh_and_none_from_before_the_start() {
        let mut replays = Replays::new(1_000);
        assert_eq!(replays.first_use("eu", ID, 1_000, 1_000), Ok(()));
        assert_eq!(replays.first_use("eu", ID, 1_000, 30_000), Err(Replay::Seen));
        assert_eq!(replays.first_use("ap", ID, 1_000, 30_000), Ok(()), "each region's own ids");
        assert_eq!(replays.first_use("eu", "another-id-of-16-chars", 999, 1_000), Err(Replay::BeforeStart));
        // Kept until the request's time leaves the window, then forgotten.
        assert_eq!(replays.first_use("eu", ID, 1_000, 1_000 + WINDOW_MS), Err(Replay::Seen));
        assert_eq!(replays.first_use("eu", "a-later-request-0001", 70_000, 1_001 + WINDOW_MS), Ok(()));
        assert_eq!(replays.len(), 2, "eu's first id was forgotten, ap's and eu's later one are held");
    }
}
