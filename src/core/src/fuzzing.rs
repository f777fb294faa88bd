//! The parsers that take untrusted bytes, each behind one entry point that
//! turns arbitrary bytes into that parser's input. The coverage-guided
//! targets in `fuzz/` and the property tests CI runs on stable call the
//! same entry points, so both explore the same surface. Each answers
//! whether the input was accepted; none may panic, on any input.

use crate::dsse::Envelope;
use crate::http_sig::{self, Policy, Request};
use crate::ids::RecordType;
use crate::keys::{Alg, SigningKey, VerifyingKey};
use crate::records::ValidationContext;
use serde_json::json;

/// The host the signature harness signs for.
pub const AUTHORITY: &str = "svc.example";
/// The time the signature harness judges at (Unix seconds).
pub const NOW: i64 = 1_795_000_000;

/// The one retrieval key the signature harness knows.
pub fn signature_key() -> SigningKey {
    SigningKey::from_seed(Alg::Ed25519, &[7; 32]).expect("a 32-byte Ed25519 seed")
}

/// Splits `data` at its first three newlines: `Signature-Input`,
/// `Signature`, `Content-Digest` (empty means absent), then the body.
fn signature_parts(data: &[u8]) -> Option<(&str, &str, &str, &[u8])> {
    let mut parts = data.splitn(4, |b| *b == b'\n');
    let input = std::str::from_utf8(parts.next()?).ok()?;
    let signature = std::str::from_utf8(parts.next()?).ok()?;
    let digest = std::str::from_utf8(parts.next().unwrap_or_default()).ok()?;
    Some((input, signature, digest, parts.next().unwrap_or_default()))
}

/// `Signature-Input` and `Signature` (RFC 9421, section 5 of retrieval):
/// all seven steps of a signed `POST /v1/products/search`.
pub fn http_signature(data: &[u8]) -> bool {
    let Some((input, signature, digest, body)) = signature_parts(data) else { return false };
    let mut headers = vec![("signature-input", input), ("signature", signature)];
    if !digest.is_empty() {
        headers.push(("content-digest", digest));
    }
    let request = Request {
        method: "POST",
        authority: AUTHORITY,
        path: "/v1/products/search",
        query: None,
        headers: &headers,
        body,
    };
    let policy = Policy { authority: AUTHORITY, tag: "svc-retrieval", now_secs: NOW };
    let key: VerifyingKey = signature_key().verifying_key();
    let head = http_sig::judge_head(&request, &policy, !body.is_empty(), |_| Some(key.clone()));
    let whole = http_sig::verify(&request, &policy, |_| Some(key.clone()), |_, _, _| true);
    // Whatever the head refuses, the whole verification refuses too.
    assert!(head.is_ok() || whole.is_err(), "judge_head refused what verify accepts");
    whole.is_ok()
}

/// The search request body of any collection, or of the one the first byte
/// names (the typed routes).
pub fn search_request(data: &[u8]) -> bool {
    let Some((first, body)) = data.split_first() else { return false };
    let typed = RecordType::COLLECTIONS.get(usize::from(*first)).copied();
    crate::search::judge(body, typed).is_ok()
}

/// A record of the type the first byte names, validated as a push would.
pub fn record(data: &[u8]) -> bool {
    let Some((first, bytes)) = data.split_first() else { return false };
    let kind = RecordType::ALL[usize::from(*first) % RecordType::ALL.len()];
    let ctx = ValidationContext::new(vec!["Lumio".into()], vec!["Other".into()], None);
    crate::records::validate(bytes, kind, &ctx).is_ok()
}

/// A DSSE envelope: parsed, opened, and its payload's version read.
pub fn dsse_envelope(data: &[u8]) -> bool {
    let Ok(envelope) = Envelope::parse(data) else { return false };
    let opened = envelope.open().is_ok();
    let payload = envelope.payload_bytes().ok();
    opened && payload.is_some_and(|p| crate::dsse::payload_version(&p, &[1, 2]).is_ok())
}

/// A bulk file: NDJSON, one base64 record a line.
pub fn bulk_ndjson(data: &[u8]) -> bool {
    crate::publish::bulk::read_records(data).is_ok()
}

/// Replication frames as a read region takes them from home. What is
/// handed out is in order from the first sequence number, and a stream
/// that decodes whole encodes back to the same bytes.
pub fn replication_frames(data: &[u8]) -> bool {
    let (frames, stopped) = crate::frames::decode(data, 0);
    for (i, (seq, _)) in frames.iter().enumerate() {
        assert_eq!(*seq, i as u64 + 1, "frames are handed out in order");
    }
    if stopped.is_none() {
        let mut again = Vec::new();
        for (seq, payload) in &frames {
            crate::frames::encode(*seq, payload, &mut again);
        }
        assert_eq!(again, data, "a whole stream encodes back to its bytes");
    }
    stopped.is_none() && !frames.is_empty()
}

/// An entry point: bytes in, whether they were accepted.
pub type Target = fn(&[u8]) -> bool;

/// Every entry point, by the name of its target in `fuzz/`.
pub const TARGETS: [(&str, Target); 6] = [
    ("http_signature", http_signature),
    ("search_request", search_request),
    ("record", record),
    ("dsse_envelope", dsse_envelope),
    ("bulk_ndjson", bulk_ndjson),
    ("replication_frames", replication_frames),
];

/// Valid inputs of each target, by target name: a signed request, each
/// collection's example record and a search of it, a seal envelope, a bulk
/// file and a frame stream. The seed corpus of `fuzz/` (written by the
/// integration test `tests/it/fuzzing.rs`).
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let key = signature_key();
    let body = br#"{"filter":{"all":[{"country":"FR"}]},"sort_by":"published_at:desc","limit":5}"#;
    let nonce = http_sig::nonce_from_bytes(&[9; 32]);
    let signed = http_sig::sign(
        "POST",
        AUTHORITY,
        "/v1/products/search",
        None,
        body,
        &key,
        NOW - 10,
        NOW + 50,
        &nonce,
        "svc-retrieval",
    )
    .expect("signs");
    let mut request =
        format!("{}\n{}\n{}\n", signed.signature_input, signed.signature, signed.content_digest.unwrap_or_default())
            .into_bytes();
    request.extend_from_slice(body);
    let mut out = vec![("http_signature", request)];
    for (i, kind) in RecordType::COLLECTIONS.iter().enumerate() {
        let fixture = crate::records::examples::example(*kind);
        let index = RecordType::ALL.iter().position(|k| k == kind).expect("a collection is a type");
        let mut bytes = vec![index as u8];
        bytes.extend(serde_json::to_vec(&fixture).expect("json"));
        out.push(("record", bytes));
        let sort = if *kind == RecordType::Products { "published_at:desc" } else { "_text_match:desc" };
        let mut search = vec![i as u8];
        search.extend(
            json!({"q": "lampe", "filter": {"all": [{"country": "FR"}]}, "sort_by": sort}).to_string().into_bytes(),
        );
        out.push(("search_request", search));
    }
    let envelope = Envelope::sign(&crate::dsse::payload_type("seal.v2"), br#"{"v":2}"#, &[&key]);
    out.push(("dsse_envelope", envelope.to_json()));
    let lines: Vec<String> = RecordType::COLLECTIONS
        .iter()
        .map(|k| crate::b64::std_encode(&serde_json::to_vec(&crate::records::examples::example(*k)).expect("json")))
        .collect();
    out.push(("bulk_ndjson", format!("{}\n", lines.join("\n")).into_bytes()));
    let mut frames = Vec::new();
    for seq in 1..=3u64 {
        crate::frames::encode(seq, format!("entry {seq}").as_bytes(), &mut frames);
    }
    out.push(("replication_frames", frames));
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The seeds, made once for all the cases (each signs a request).
    fn seeded() -> &'static [(&'static str, Vec<u8>)] {
        static SEEDS: std::sync::OnceLock<Vec<(&'static str, Vec<u8>)>> = std::sync::OnceLock::new();
        SEEDS.get_or_init(seeds)
    }

    fn target(name: &str) -> Target {
        TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f).expect("a target")
    }

    #[test]
    fn every_seed_is_accepted_by_its_target() {
        let seeds = seeded();
        for (name, _) in TARGETS {
            assert!(seeds.iter().any(|(n, _)| *n == name), "{name} has seeds");
        }
        for (name, bytes) in seeds {
            assert!(target(name)(bytes), "{name} accepts its seed {}", String::from_utf8_lossy(bytes));
        }
    }

    /// `bytes` with one byte changed, or cut there, or one inserted.
    fn mutation(bytes: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
        (any::<usize>(), any::<u8>(), 0..3u8).prop_map(move |(at, byte, how)| {
            let mut bytes = bytes.clone();
            let at = at % bytes.len().max(1);
            match how {
                0 if !bytes.is_empty() => bytes[at] = byte,
                1 => bytes.truncate(at),
                _ => bytes.insert(at.min(bytes.len()), byte),
            }
            bytes
        })
    }

    /// A seed of any target, mutated.
    fn mutated() -> impl Strategy<Value = (usize, Vec<u8>)> {
        (0..seeded().len()).prop_flat_map(|i| (Just(i), mutation(seeded()[i].1.clone())))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn no_target_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            for (_, run) in TARGETS {
                let _ = run(&bytes);
            }
        }

        #[test]
        fn no_target_panics_on_a_mutated_seed((i, bytes) in mutated()) {
            let _ = target(seeded()[i].0)(&bytes);
        }

        /// A signature over other bytes than those sent never verifies.
        #[test]
        fn a_changed_signed_request_is_refused(bytes in mutation(seeded()[0].1.clone())) {
            let seed = &seeded()[0];
            prop_assert_eq!(seed.0, "http_signature");
            prop_assert!(bytes == seed.1 || !http_signature(&bytes) || reads_the_same(&seed.1, &bytes));
        }
    }

    /// The failure CI found: the signature's last base64 character before
    /// `==` carries four pad bits, and changing only them leaves the same
    /// signature bytes, which RFC 8941 section 4.2.7 says to accept.
    #[test]
    fn changed_pad_bits_leave_the_same_request() {
        let seed = &seeded()[0].1;
        let at = seed.windows(4).position(|w| w == b"==:\n").expect("the signature ends in ==") - 1;
        let mut bytes = seed.clone();
        assert_eq!(seed[at], b'Q', "the seed's signature is deterministic");
        bytes[at] = b'R';
        assert!(http_signature(&bytes));
        assert!(reads_the_same(seed, &bytes));
        bytes[at] = b'=';
        assert!(!http_signature(&bytes));
        assert!(!reads_the_same(seed, &bytes));
    }

    /// Two harness inputs read the same when each header, without the
    /// whitespace HTTP strips around a field value (RFC 9110 section 5.5),
    /// parses to the same structured-field dictionary and the bodies are
    /// equal. RFC 8941
    /// skips optional whitespace, reads an integer's leading zeros as
    /// nothing and tells parsers not to fail on non-zero base64 pad bits,
    /// so a mutation may change the bytes and leave the same request.
    fn reads_the_same(a: &[u8], b: &[u8]) -> bool {
        let parsed = |x: &[u8]| {
            let (input, signature, digest, body) = signature_parts(x)?;
            let dict = |h: &str| sfv::Parser::new(h.trim_matches([' ', '\t'])).parse::<sfv::Dictionary>().ok();
            Some((dict(input)?, dict(signature)?, dict(digest), body.to_vec()))
        };
        matches!((parsed(a), parsed(b)), (Some(x), Some(y)) if x == y)
    }
}
