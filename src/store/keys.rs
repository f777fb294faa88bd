//! The functions that build (and read back) the tables' keys. Each table's
//! layout is declared with the table (`svc_store::cf`, and the crates above
//! for the tables of their own types) and listed in `src/store/TABLES.md`.
//!
//! Parts are joined by a 0x00 byte ([`key`]); numbers are 8 bytes
//! big-endian ([`be`]) so keys sort by them; a number that follows a 0x00
//! separator is written right after it, with no separator between two
//! numbers. `a ‖ b` is `key(&[a, b])`; `be(n)` is a number.

use svc_core::time::UnixMs;

/// Parts joined by 0x00.
pub fn key(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 1).sum());
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push(0);
        }
        out.extend_from_slice(part);
    }
    out
}

/// A number as 8 bytes big-endian, so keys sort by it.
pub fn be(n: u64) -> [u8; 8] {
    n.to_be_bytes()
}

/// The number a key written with `be` holds (`None` for any other length).
pub fn from_be(key: &[u8]) -> Option<u64> {
    key.try_into().ok().map(u64::from_be_bytes)
}

/// Every key that begins with these parts, each followed by its 0x00:
/// `prefix(&[uuid])` is a business's range in any family keyed by uuid first.
pub fn prefix(parts: &[&str]) -> Vec<u8> {
    let mut k = key(&parts.iter().map(|p| p.as_bytes()).collect::<Vec<_>>());
    k.push(0);
    k
}

/// An invitation's key in its account's index (`account_invitations`).
pub fn account_invitation(account_uuid: &str, token_digest: &[u8]) -> Vec<u8> {
    let mut key = prefix(&[account_uuid]);
    key.extend_from_slice(token_digest);
    key
}

/// Fixed names in `meta`.
pub mod meta {
    /// The store's own: each column family's schema version.
    pub const SCHEMA: &[u8] = b"schema";
    /// The store's own: how far a column family's values were given their
    /// version byte, while that runs.
    pub const MIGRATING: &[u8] = b"migrating";
    /// The sandbox seeder's state.
    pub const SANDBOX_SEED: &[u8] = b"sandbox_seed";
    /// The sandbox corpus's campaigns, in the order the corpus lists them.
    pub const SANDBOX_CAMPAIGNS: &[u8] = b"sandbox_campaigns";
    /// The sandbox corpus's own AI company (no caller created it).
    pub const SANDBOX_COMPANY: &[u8] = b"sandbox_company";
    /// The sandbox corpus's own businesses (no caller created them).
    pub const SANDBOX_BUSINESSES: &[u8] = b"sandbox_businesses";
    /// Home, sandbox: the UTC day each business last used the service,
    /// `business_used` ‖ business uuid ([`super::business_used`]).
    pub const BUSINESS_USED: &[u8] = b"business_used";
    /// A sandbox home: when its corpus was last republished (or, before
    /// the first, when the schedule began).
    pub const SANDBOX_REPUBLISHED_AT: &[u8] = b"sandbox_republished_at";
    /// The time of the last write that probed the disk (`/readyz`).
    pub const WRITE_PROBE: &[u8] = b"write_probe";
    /// Home: the last lease id granted.
    pub const LEASE_SEQ: &[u8] = b"lease_seq";
    /// A region: the last sequence of home's nonce feed it holds.
    pub const NONCE_FEED_CURSOR: &[u8] = b"nonce_feed_cursor";
    /// The last replication sequence every index shard committed.
    pub const INDEX_APPLIED_SEQ: &[u8] = b"index_applied_seq";
    /// The last receipt sequence analytics folded.
    pub const ANALYTICS_APPLIED_SEQ: &[u8] = b"analytics_applied_seq";
    /// The last receipt sequence the receipt folder folded.
    pub const RECEIPT_FOLDED_SEQ: &[u8] = b"receipt_folded_seq";
    /// A region: its receipt key rotations.
    pub const RECEIPT_KEY_ROTATIONS: &[u8] = b"receipt_key_rotations";
    /// The service keys' seeds.
    pub const SERVICE_KEY_SEEDS: &[u8] = b"service_key_seeds";
    /// Home: rotations of the service's non-root keys (replicated).
    pub const SERVICE_KEY_ROTATIONS: &[u8] = b"service_key_rotations";
    /// The seeds, wrapped under the operator's key-encryption key; then
    /// `SERVICE_KEY_SEEDS` is gone.
    pub const SERVICE_KEY_SEEDS_WRAPPED: &[u8] = b"service_key_seeds_wrapped";
    /// The rotations, wrapped likewise.
    pub const SERVICE_KEY_ROTATIONS_WRAPPED: &[u8] = b"service_key_rotations_wrapped";
    /// When the service keys were first drawn.
    pub const SERVICE_KEYS_CREATED_AT: &[u8] = b"service_keys_created_at";
    /// A read region: the last receipt sequence home has taken.
    pub const RECEIPTS_SHIPPED_SEQ: &[u8] = b"receipts_shipped_seq";
    /// `meta`: expired callers whose receipts this node has forgotten, each
    /// as `expired_forgotten ‖ company uuid` ([`super::expired_forgotten`]).
    pub const EXPIRED_FORGOTTEN: &[u8] = b"expired_forgotten";
    /// The log sequence of the last delete whose bytes this node purged.
    pub const PURGED_THROUGH: &[u8] = b"purged_through";
    /// A read region: why it stopped applying home's log.
    pub const LOG_FORK: &[u8] = b"log_fork";
    /// A member of home's group: its Raft vote, committed, purged and
    /// applied log ids, and its current snapshot's meta.
    pub const RAFT_VOTE: &[u8] = b"raft_vote";
    pub const RAFT_COMMITTED: &[u8] = b"raft_committed";
    pub const RAFT_PURGED: &[u8] = b"raft_purged";
    pub const RAFT_APPLIED: &[u8] = b"raft_applied";
    pub const RAFT_SNAPSHOT: &[u8] = b"raft_snapshot";
}

/// `meta`: a column family's schema version, `schema ‖ <cf>`.
pub fn schema(cf: &str) -> Vec<u8> {
    key(&[meta::SCHEMA, cf.as_bytes()])
}

/// `meta`: the last key of `cf` given its version byte, `migrating ‖ <cf>`.
pub fn migrating(cf: &str) -> Vec<u8> {
    key(&[meta::MIGRATING, cf.as_bytes()])
}

/// Fixed names in `key_set`.
pub mod key_set {
    pub const ENTRIES: &[u8] = b"entries";
    pub const DOCUMENT: &[u8] = b"document";
    /// The signed key directory (`key_set::directory`).
    pub const DIRECTORY: &[u8] = b"key_directory";
}

/// `certificates`: uuid ‖ be(issued_at ms) ‖ cert id.
pub fn certificate(business_uuid: &str, issued_at: UnixMs, cert_id: &str) -> Vec<u8> {
    key(&[business_uuid.as_bytes(), &be(issued_at.0 as u64), cert_id.as_bytes()])
}

/// `mandates`: key id ‖ mandate id.
pub fn mandate(key_id: &str, mandate_id: &str) -> Vec<u8> {
    key(&[key_id.as_bytes(), mandate_id.as_bytes()])
}

/// `key_index`: `b` ‖ business uuid ‖ key id, holding the key's family.
pub fn business_key(business_uuid: &str, key_id: &str) -> Vec<u8> {
    key(&[b"b", business_uuid.as_bytes(), key_id.as_bytes()])
}

/// `key_index`: `t` ‖ a sandbox key's bearer digest, holding its key id.
pub fn sandbox_bearer(bearer_sha256: &str) -> Vec<u8> {
    key(&[b"t", bearer_sha256.as_bytes()])
}

/// `custody`: uuid ‖ be(issued_at ms) ‖ statement id.
pub fn custody(business_uuid: &str, issued_at: UnixMs, statement_id: &str) -> Vec<u8> {
    key(&[business_uuid.as_bytes(), &be(issued_at.0 as u64), statement_id.as_bytes()])
}

/// `ai_policies`: uuid ‖ be(version).
pub fn ai_policy(business_uuid: &str, version: u64) -> Vec<u8> {
    key(&[business_uuid.as_bytes(), &be(version)])
}

/// `blocks`: business uuid ‖ group id.
pub fn block(business_uuid: &str, group_id: &str) -> Vec<u8> {
    key(&[business_uuid.as_bytes(), group_id.as_bytes()])
}

/// `catalogue`: business uuid ‖ record type ‖ record id.
pub fn catalogue(business_uuid: &str, record_type: &str, record_id: &str) -> Vec<u8> {
    key(&[business_uuid.as_bytes(), record_type.as_bytes(), record_id.as_bytes()])
}

/// `versions`: record id ‖ be(generation).
pub fn version(record_id: &str, generation: u64) -> Vec<u8> {
    key(&[record_id.as_bytes(), &be(generation)])
}

/// `pushes`: the push id.
pub fn push(push_id: &str) -> Vec<u8> {
    push_id.as_bytes().to_vec()
}

/// `push_results`: where a push's leaves begin, `push id ‖` (a leaf's key is
/// this prefix and 8 bytes more).
pub fn push_leaves(push_id: &str) -> Vec<u8> {
    key(&[push_id.as_bytes()])
}

/// `push_results`: push id ‖ be(leaf index).
pub fn push_leaf(push_id: &str, leaf: u64) -> Vec<u8> {
    key(&[push_id.as_bytes(), &be(leaf)])
}

/// `push_results`: `~leaf_hashes ‖ push id`. Kept outside every push's key
/// range (`~` sorts after `bat_`), so scans of a push's leaves never meet it.
pub fn push_leaf_hashes(push_id: &str) -> Vec<u8> {
    key(&[b"~leaf_hashes", push_id.as_bytes()])
}

/// `meta`: an expired caller whose receipts this node has forgotten.
/// `meta`: the day a sandbox business last used the service (home).
pub fn business_used(business_uuid: &str) -> Vec<u8> {
    key(&[meta::BUSINESS_USED, business_uuid.as_bytes()])
}

pub fn expired_forgotten(company_uuid: &str) -> Vec<u8> {
    key(&[meta::EXPIRED_FORGOTTEN, company_uuid.as_bytes()])
}

/// `domains`: business uuid ‖ domain.
pub fn domain(business_uuid: &str, domain: &str) -> Vec<u8> {
    key(&[business_uuid.as_bytes(), domain.as_bytes()])
}

/// `freshness`: business uuid ‖ record type name.
pub fn freshness(business_uuid: &str, record_type: &str) -> Vec<u8> {
    key(&[business_uuid.as_bytes(), record_type.as_bytes()])
}

/// `region_receipts`: region ‖ be(seq).
pub fn region_receipt(region: &str, seq: u64) -> Vec<u8> {
    key(&[region.as_bytes(), &be(seq)])
}

/// `meta`: the last receipt sequence of `region` home has taken.
pub fn region_receipts_through(region: &str) -> Vec<u8> {
    key(&[b"region_receipts_through", region.as_bytes()])
}

/// Reads a `receipts_by_group` key after its group's prefix: the served
/// millisecond, the sequence, and the region for a read region's receipt
/// kept at home (none: this node's own).
pub fn parse_receipt_by_group(tail: &[u8]) -> Option<(i64, u64, Option<String>)> {
    let ms = i64::from_be_bytes(tail.get(..8)?.try_into().ok()?);
    let seq = from_be(tail.get(8..16)?)?;
    let region = match tail.get(16..) {
        None | Some([]) => None,
        Some([0, name @ ..]) => Some(String::from_utf8(name.to_vec()).ok()?),
        Some(_) => return None,
    };
    Some((ms, seq, region))
}

/// `receipts_by_group` at home, for a read region's receipt: the group's
/// key of [`receipt_by_group`] followed by ‖ region, so it sorts among the
/// group's receipts by when it was served.
pub fn region_receipt_by_group(group_id: &str, served_ms: i64, seq: u64, region: &str) -> Vec<u8> {
    let mut k = receipt_by_group(group_id, served_ms, seq);
    k.push(0);
    k.extend_from_slice(region.as_bytes());
    k
}

/// `purges`: be(seq of the delete's log entry) ‖ record id, so a node
/// reads the purges it has not done yet in the order they were asked.
pub fn person(business_uuid: &str, person_id: &str) -> Vec<u8> {
    key(&[business_uuid.as_bytes(), person_id.as_bytes()])
}

pub fn purge(seq: u64, record_id: &str) -> Vec<u8> {
    key(&[&be(seq), record_id.as_bytes()])
}

/// `seqs`: key id ‖ be(seq) (the key id alone holds the last `seq`).
pub fn seq(key_id: &str, seq: u64) -> Vec<u8> {
    key(&[key_id.as_bytes(), &be(seq)])
}

/// `idempotency`: key id ‖ `Idempotency-Key`.
pub fn idempotency(key_id: &str, idem: &str) -> Vec<u8> {
    key(&[key_id.as_bytes(), idem.as_bytes()])
}

/// `attempts`: business uuid ‖ be(received_at ms) ‖ push id.
pub fn attempt(business_uuid: &str, received_at: UnixMs, push_id: &str) -> Vec<u8> {
    key(&[business_uuid.as_bytes(), &be(received_at.0 as u64), push_id.as_bytes()])
}

/// `usage`: key id ‖ nonce (one billed request).
pub fn usage(key_id: &str, nonce: &str) -> Vec<u8> {
    key(&[key_id.as_bytes(), nonce.as_bytes()])
}

/// `usage_days`: company uuid ‖ `YYYY-MM-DD`.
pub fn usage_day(company_uuid: &str, day: &str) -> Vec<u8> {
    key(&[company_uuid.as_bytes(), day.as_bytes()])
}

/// `receipts_by_group`: group id ‖ be(served ms) be(seq), so a group's
/// receipts list oldest first, and receipts of one millisecond in served
/// order. Its prefix is `prefix(&[group_id])`.
pub fn receipt_by_group(group_id: &str, served_ms: i64, seq: u64) -> Vec<u8> {
    let mut k = key(&[group_id.as_bytes(), b""]);
    k.extend_from_slice(&be(served_ms.max(0) as u64));
    k.extend_from_slice(&be(seq));
    k
}

/// `analytics`: business uuid ‖ be(hour ms) ‖ country (empty for a fetch) ‖
/// group id. Its prefix is `prefix(&[business_uuid])`.
pub fn analytics(business_uuid: &str, hour_ms: i64, country: &str, group_id: &str) -> Vec<u8> {
    let mut k = key(&[business_uuid.as_bytes(), b""]);
    k.extend_from_slice(&be(hour_ms.max(0) as u64));
    k.push(0);
    k.extend_from_slice(&key(&[country.as_bytes(), group_id.as_bytes()]));
    k
}

/// `meta`: the last of a read region's ad events home counted.
pub fn region_ad_events_applied(region: &str) -> Vec<u8> {
    key(&[b"ad_events_applied", region.as_bytes()])
}

/// Reads an analytics key back: (hour ms, country, group id), after the
/// business prefix.
pub fn parse_analytics(rest: &[u8]) -> Option<(i64, String, String)> {
    let hour = i64::from_be_bytes(rest.get(..8)?.try_into().ok()?);
    let mut parts = rest.get(9..)?.splitn(2, |b| *b == 0);
    let country = String::from_utf8(parts.next()?.to_vec()).ok()?;
    let group = String::from_utf8(parts.next()?.to_vec()).ok()?;
    Some((hour, country, group))
}

/// `nonces`: be(expires, Unix s) key id ‖ nonce. The expiry comes first, so
/// a purge deletes every expired claim with one range tombstone.
pub fn nonce(expires: i64, key_id: &str, nonce: &str) -> Vec<u8> {
    [&nonce_expiry(expires)[..], &key(&[key_id.as_bytes(), nonce.as_bytes()])].concat()
}

/// `nonces`: where the claims expiring at `secs` begin (an expiry before
/// 1970 sorts with 0).
pub fn nonce_expiry(secs: i64) -> [u8; 8] {
    be(secs.max(0) as u64)
}

/// `nonces`: the claim a stored key names: expiry, key id and nonce.
pub fn parse_nonce(k: &[u8]) -> Option<(i64, String, String)> {
    let expires = i64::try_from(from_be(k.get(..8)?)?).ok()?;
    let mut parts = k[8..].splitn(2, |b| *b == 0);
    let (key_id, nonce) = (parts.next()?, parts.next()?);
    Some((expires, String::from_utf8(key_id.to_vec()).ok()?, String::from_utf8(nonce.to_vec()).ok()?))
}

/// `receipt_roots`: region ‖ be(first seq). A region's roots begin at
/// `prefix(&[region])`.
pub fn receipt_root(region: &str, first_seq: u64) -> Vec<u8> {
    let mut k = key(&[region.as_bytes(), b""]);
    k.extend_from_slice(&be(first_seq));
    k
}

/// `tlog_cosignatures`: be(tree size) ‖ witness name. A checkpoint's
/// cosignatures begin at `be(size)`.
pub fn cosignature(size: u64, witness: &str) -> Vec<u8> {
    let mut k = be(size).to_vec();
    k.extend_from_slice(witness.as_bytes());
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_the_bytes_they_always_were() {
        assert_eq!(key(&[b"a", b"b"]), b"a\0b");
        assert_eq!(prefix(&["b1"]), key(&[b"b1", b""]));
        assert_eq!(version("r", 2), [&b"r\0"[..], &2u64.to_be_bytes()].concat());
        assert_eq!(receipt_by_group("g", 5, 7), [&b"g\0"[..], &be(5), &be(7)].concat());
        assert_eq!(receipt_root("eu", 3), [&b"eu\0"[..], &be(3)].concat());
        assert_eq!(nonce(9, "k", "n"), [&be(9)[..], b"k\0n"].concat());
        assert_eq!(parse_nonce(&nonce(9, "k", "n")), Some((9, "k".into(), "n".into())));
        assert_eq!(push_leaf_hashes("p"), b"~leaf_hashes\0p");
        assert_eq!(schema("records"), b"schema\0records");
    }

    #[test]
    fn analytics_keys_read_back_and_sort_by_hour_within_a_business() {
        let a = analytics("b1", 3_600_000, "FR", "g1");
        let b = analytics("b1", 7_200_000, "", "g2");
        assert!(a < b);
        let prefix = prefix(&["b1"]);
        assert_eq!(parse_analytics(&a[prefix.len()..]), Some((3_600_000, "FR".into(), "g1".into())));
        assert_eq!(parse_analytics(&b[prefix.len()..]), Some((7_200_000, String::new(), "g2".into())));
    }
}
