//! Offline checks of what a region answered, against a verified key set:
//! the receipt (signed by the region's receipt key, issued to the presenting
//! key, naming every row), each row's projection signature, and for a fetch
//! the record's bytes against the receipt, the sidecar and the batch proof.
//! Nothing here asks the service anything.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::Reason;
use crate::digest::sha256_prefixed;
use crate::dsse::Envelope;
use crate::keyset::{KeySet, Purpose};
use crate::receipt::{self, ReceiptCheck, VerifiedReceipt};
use crate::seal::ServedSeal;
use crate::time::UnixMs;

/// What an offline check established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub receipt: VerifiedReceipt,
    /// Rows whose projection signature verified (search).
    pub rows: usize,
    /// Whether the batch inclusion proof was checked (fetch of a batch record).
    pub inclusion: bool,
}

fn receipt_of(
    body: &Value,
    keys: &KeySet,
    presenter: &str,
    rows: Option<&[Map<String, Value>]>,
) -> Result<VerifiedReceipt, Reason> {
    let envelope = Envelope::from_value(body.get("receipt").ok_or(Reason::EnvelopeMalformed)?)?;
    let check = ReceiptCheck {
        receipt_key: |kid: &str, region: &str, at: UnixMs| keys.receipt_key(kid, region, at),
        presenter: Some(presenter),
        rows,
    };
    receipt::verify(&envelope, &check)
}

/// A pool answer (retrieval 4.1): its receipt names exactly its ads by
/// their rows, every row is signed by a projection key of the set, every
/// item shows only what was sealed (P4.2.23), and every render token was
/// signed by the serving region and issued to the presenting key for that
/// ad of that pool. Answers how many ads it checked.
pub fn check_pool(body: &Value, keys: &KeySet, presenter: &str) -> Result<usize, Reason> {
    let items = body.get("ads").and_then(Value::as_array).ok_or(Reason::PayloadMalformed)?;
    let mut rows = Vec::with_capacity(items.len());
    for item in items {
        rows.push(item.get("row").and_then(Value::as_object).cloned().ok_or(Reason::PayloadMalformed)?);
    }
    let verified = receipt_of(body, keys, presenter, Some(&rows))?;
    if verified.receipt.rows.len() != rows.len() {
        return Err(Reason::ReceiptRowMismatch);
    }
    let served_at = UnixMs::parse_rfc3339(&verified.receipt.served_at).ok_or(Reason::PayloadMalformed)?;
    for (item, row) in items.iter().zip(&rows) {
        crate::projection::verify_row(row, |kid| keys.key(Purpose::Projection, kid, served_at))?;
        let item = item.as_object().ok_or(Reason::PayloadMalformed)?;
        let record = item
            .get("record_base64")
            .and_then(Value::as_str)
            .and_then(crate::b64::std_decode)
            .ok_or(Reason::PayloadMalformed)?;
        if crate::verify::ad_item::judge(item, &record, Some(row))["shown_is_sealed"] != "ok" {
            return Err(Reason::HashMismatch);
        }
        let token = Envelope::from_value(item.get("render_token").ok_or(Reason::EnvelopeMalformed)?)?;
        let token: crate::ads::tokens::RenderToken =
            check_token(&token, crate::ads::tokens::RENDER_V1, keys, presenter)?;
        let id = item.get("ad_id").and_then(Value::as_str);
        if Some(token.ad_id.as_str()) != id || token.retrieval_id != verified.receipt.retrieval_id {
            return Err(Reason::ReceiptRowMismatch);
        }
    }
    Ok(items.len())
}

/// A render or click token (`render.v1`, `click.v1`): signed by the
/// receipt key of the region it names, valid when it was issued, and
/// issued to the presenting key.
pub fn check_token<T: for<'de> Deserialize<'de>>(
    envelope: &Envelope,
    name: &str,
    keys: &KeySet,
    presenter: &str,
) -> Result<T, Reason> {
    let claimed: Value = serde_json::from_slice(&envelope.open()?.payload).map_err(|_| Reason::PayloadMalformed)?;
    let text = |member: &str| claimed.get(member).and_then(Value::as_str);
    let region = text("region").ok_or(Reason::PayloadMalformed)?;
    let at =
        text("issued_at").or(text("rendered_at")).and_then(UnixMs::parse_rfc3339).ok_or(Reason::PayloadMalformed)?;
    let kid = &envelope.signatures.first().ok_or(Reason::EnvelopeMalformed)?.keyid;
    let key = keys.receipt_key(kid, region, at).ok_or(Reason::KeyUnknown)?;
    let token = crate::ads::tokens::open::<T>(envelope, name, &key)?;
    if text("key_id") != Some(presenter) {
        return Err(Reason::ReceiptCallerMismatch);
    }
    Ok(token)
}

/// A search answer: its receipt names exactly its rows, and every row is
/// signed by a projection key of the set.
pub fn check_search(body: &Value, keys: &KeySet, presenter: &str) -> Result<Checked, Reason> {
    let rows: Vec<Map<String, Value>> = body
        .get("rows")
        .and_then(Value::as_array)
        .ok_or(Reason::PayloadMalformed)?
        .iter()
        .map(|r| r.as_object().cloned().ok_or(Reason::PayloadMalformed))
        .collect::<Result<_, _>>()?;
    let verified = receipt_of(body, keys, presenter, Some(&rows))?;
    if verified.receipt.rows.len() != rows.len() {
        return Err(Reason::ReceiptRowMismatch);
    }
    let served_at = UnixMs::parse_rfc3339(&verified.receipt.served_at).ok_or(Reason::PayloadMalformed)?;
    for row in &rows {
        crate::projection::verify_row(row, |kid| keys.key(Purpose::Projection, kid, served_at))?;
    }
    Ok(Checked { receipt: verified, rows: rows.len(), inclusion: false })
}

/// A receipts list (`GET /v1/receipts`): each receipt signed by its
/// region's receipt key valid when it was served. The list holds the
/// receipts of every key of the caller's group, so the presenter is not
/// checked here. Answers how many were checked.
pub fn check_receipts(body: &Value, keys: &KeySet) -> Result<usize, Reason> {
    let list = body.get("receipts").and_then(Value::as_array).ok_or(Reason::PayloadMalformed)?;
    for entry in list {
        let envelope = Envelope::from_value(entry.get("receipt").ok_or(Reason::EnvelopeMalformed)?)?;
        let check = ReceiptCheck {
            receipt_key: |kid: &str, region: &str, at: UnixMs| keys.receipt_key(kid, region, at),
            presenter: None,
            rows: None,
        };
        receipt::verify(&envelope, &check)?;
    }
    Ok(list.len())
}

#[derive(Deserialize)]
struct FetchedRaw<'a> {
    #[serde(borrow)]
    record: &'a RawValue,
    seal: Value,
    sidecar: Value,
}

/// The exact bytes of a fetch answer's `record`, as the service sealed them.
pub fn fetched_record(answer: &[u8]) -> Result<Vec<u8>, Reason> {
    let raw: FetchedRaw<'_> = serde_json::from_slice(answer).map_err(|_| Reason::PayloadMalformed)?;
    Ok(raw.record.get().as_bytes().to_vec())
}

/// A fetch answer, from its bytes as received: the receipt's one row names
/// the SHA-256 of the exact `record` bytes, the sidecar (signed by a sidecar
/// key) names the same origin, and a batch record's inclusion proof leads to
/// its batch seal's root. The business's own signature on the seal needs its
/// key register and is not checked here.
pub fn check_fetch(answer: &[u8], keys: &KeySet, presenter: &str) -> Result<Checked, Reason> {
    let raw: FetchedRaw<'_> = serde_json::from_slice(answer).map_err(|_| Reason::PayloadMalformed)?;
    let body: Value = serde_json::from_slice(answer).map_err(|_| Reason::PayloadMalformed)?;
    let record = raw.record.get().as_bytes();
    let origin = sha256_prefixed(record);
    let verified = receipt_of(&body, keys, presenter, None)?;
    let [row] = verified.receipt.rows.as_slice() else { return Err(Reason::ReceiptRowMismatch) };
    if row.sha256.as_deref() != Some(origin.as_str())
        || Some(row.id.as_str()) != body.get("record_id").and_then(Value::as_str)
    {
        return Err(Reason::ReceiptRowMismatch);
    }
    let sidecar = Envelope::from_value(&raw.sidecar)?;
    let key_id = sidecar.signatures.first().map(|s| s.keyid.clone()).ok_or(Reason::EnvelopeMalformed)?;
    let served_at = UnixMs::parse_rfc3339(&verified.receipt.served_at).ok_or(Reason::PayloadMalformed)?;
    let key = keys.key(Purpose::Sidecar, &key_id, served_at).ok_or(Reason::KeyUnknown)?;
    let sidecar = crate::sidecar::verify(&sidecar, &key)?;
    if sidecar.origin() != origin {
        return Err(Reason::HashMismatch);
    }
    let seal: ServedSeal = serde_json::from_value(raw.seal).map_err(|_| Reason::PayloadMalformed)?;
    let inclusion = match &seal {
        ServedSeal::Batch(membership) => {
            let batch = crate::seal::read_batch_seal(&membership.batch_seal)?;
            membership.check_inclusion(&batch, record)?;
            true
        }
        ServedSeal::Record(_) => false,
    };
    Ok(Checked { receipt: verified, rows: 0, inclusion })
}

/// A business's keys as the service stated them: the `business-keys.v1`
/// statement, verified under the key set's statement key (P-256 and
/// ML-DSA-65, both required). Only the signed payload is read.
#[derive(Debug, Clone)]
pub struct BusinessKeys {
    pub uuid: String,
    pub keys: Vec<StatedKey>,
}

/// One key of the statement.
#[derive(Debug, Clone)]
pub struct StatedKey {
    pub key_id: String,
    pub key: crate::keys::VerifyingKey,
    /// `integration`, or `sealing` (a passkey, or a plain key the service
    /// holds for the business under hosted signing).
    pub purpose: String,
    /// `passkey`, `ed25519`, ….
    pub kind: String,
    /// A passkey's relying party: the portal it was made for.
    pub relying_party: Option<RelyingParty>,
    pub validity: crate::seal::KeyValidity,
}

/// The WebAuthn relying party a passkey signs for: its id (the `rpIdHash`
/// of every assertion) and the portal's origin (in each `clientDataJSON`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RelyingParty {
    pub id: String,
    pub origin: String,
}

/// Reads the statement, judging the statement key that signed it at `at`
/// (when it was fetched: it is signed fresh on each request).
pub fn business_keys(document: &Value, keys: &KeySet, at: UnixMs) -> Result<BusinessKeys, Reason> {
    let payload = stated(document.get("signed"), "business-keys.v1", Purpose::Statement, keys, at)?;
    let uuid = payload.get("uuid").and_then(Value::as_str).ok_or(Reason::PayloadMalformed)?.to_owned();
    let listed = payload.get("keys").and_then(Value::as_array).ok_or(Reason::PayloadMalformed)?;
    let mut out = Vec::with_capacity(listed.len());
    for key in listed {
        let jwk: crate::keys::Jwk = serde_json::from_value(key.get("jwk").cloned().unwrap_or(Value::Null))
            .map_err(|_| Reason::PayloadMalformed)?;
        let public = crate::keys::VerifyingKey::from_jwk(&jwk).map_err(|_| Reason::PayloadMalformed)?;
        let kid = key.get("key_id").and_then(Value::as_str).ok_or(Reason::PayloadMalformed)?;
        if public.thumbprint() != kid {
            return Err(Reason::KeyMismatch);
        }
        let time = |name: &str| key.get(name).and_then(Value::as_str).and_then(UnixMs::parse_rfc3339);
        let validity = crate::seal::KeyValidity {
            valid_from: time("valid_from").ok_or(Reason::PayloadMalformed)?,
            valid_until: time("valid_until"),
            revocation_effective_from: time("revocation_effective_from"),
            compromised_at: None,
        };
        let text = |name: &str| key.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
        let relying_party = match key.get("relying_party") {
            None | Some(Value::Null) => None,
            Some(party) => Some(serde_json::from_value(party.clone()).map_err(|_| Reason::PayloadMalformed)?),
        };
        out.push(StatedKey {
            key_id: kid.to_owned(),
            key: public,
            purpose: text("purpose"),
            kind: text("kind"),
            relying_party,
            validity,
        });
    }
    Ok(BusinessKeys { uuid, keys: out })
}

/// The payload of a statement envelope of `kind`, verified under the key
/// set's key of `purpose` valid at `at` (P-256 and ML-DSA-65, both
/// required), of version 1. Only this payload is read, never what sits
/// beside it.
fn stated(envelope: Option<&Value>, kind: &str, purpose: Purpose, keys: &KeySet, at: UnixMs) -> Result<Value, Reason> {
    let envelope = Envelope::from_value(envelope.ok_or(Reason::EnvelopeMalformed)?)?;
    let statement_key = |alg: crate::keys::Alg| {
        envelope
            .signatures
            .iter()
            .filter_map(|s| keys.key(purpose, &s.keyid, at))
            .find(|k| k.alg() == alg)
            .ok_or(Reason::TrustChainBroken)
    };
    let classical = statement_key(crate::keys::Alg::Es256)?;
    let post_quantum = statement_key(crate::keys::Alg::MlDsa65).map_err(|_| Reason::PostQuantumRequired)?;
    let payload = envelope.verify_dual(&crate::dsse::payload_type(kind), &classical, &post_quantum)?;
    let payload: Value = serde_json::from_slice(&payload).map_err(|_| Reason::PayloadMalformed)?;
    if payload.get("v").and_then(Value::as_u64) != Some(1) {
        return Err(Reason::VersionUnknown);
    }
    Ok(payload)
}

/// A statement signed when it was issued, judged as of then: the key of
/// `purpose` valid at the `issued_at` its payload names (read before the
/// signatures, trusted only once they hold).
fn stated_when_issued(envelope: Option<&Value>, kind: &str, purpose: Purpose, keys: &KeySet) -> Result<Value, Reason> {
    let parsed = Envelope::from_value(envelope.ok_or(Reason::EnvelopeMalformed)?)?;
    let unverified: Value = serde_json::from_slice(&parsed.payload_bytes()?).map_err(|_| Reason::PayloadMalformed)?;
    let issued_at = unverified.get("issued_at").and_then(Value::as_str).and_then(UnixMs::parse_rfc3339);
    stated(envelope, kind, purpose, keys, issued_at.ok_or(Reason::PayloadMalformed)?)
}

/// One AI company of the key directory, as the statement lists it.
#[derive(Debug, Clone)]
pub struct DirectoryCompany {
    pub ai_company_uuid: String,
    pub name: String,
    /// Each key, its id checked against its public key.
    pub keys: Vec<(String, crate::keys::VerifyingKey)>,
}

/// The key directory (`key-directory.v1`), read from its statement alone,
/// verified under the statement key valid when it was issued; each key's
/// id is its public key's thumbprint.
pub fn key_directory(document: &Value, keys: &KeySet) -> Result<Vec<DirectoryCompany>, Reason> {
    let payload = stated_when_issued(document.get("statement"), "key-directory.v1", Purpose::Statement, keys)?;
    let companies = payload.get("companies").and_then(Value::as_array).ok_or(Reason::PayloadMalformed)?;
    let text =
        |v: &Value, name: &str| v.get(name).and_then(Value::as_str).map(str::to_owned).ok_or(Reason::PayloadMalformed);
    let mut out = Vec::with_capacity(companies.len());
    for company in companies {
        let listed = company.get("keys").and_then(Value::as_array).ok_or(Reason::PayloadMalformed)?;
        let mut company_keys = Vec::with_capacity(listed.len());
        for key in listed {
            let jwk: crate::keys::Jwk = serde_json::from_value(key.get("public_key").cloned().unwrap_or(Value::Null))
                .map_err(|_| Reason::PayloadMalformed)?;
            let public = crate::keys::VerifyingKey::from_jwk(&jwk).map_err(|_| Reason::PayloadMalformed)?;
            let key_id = text(key, "key_id")?;
            if public.thumbprint() != key_id {
                return Err(Reason::KeyMismatch);
            }
            company_keys.push((key_id, public));
        }
        out.push(DirectoryCompany {
            ai_company_uuid: text(company, "ai_company_uuid")?,
            name: text(company, "name")?,
            keys: company_keys,
        });
    }
    Ok(out)
}

/// Who signed a record's seal, as the business's signed key statement
/// lists the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SealSigner {
    /// An integration key: Path A's batch seal.
    Integration,
    /// A person's passkey (Path B), its assertion bound to this portal.
    Passkey(RelyingParty),
    /// A plain sealing key: the key the service holds for the business
    /// under hosted signing. Whose hands held it is the custody statement's
    /// to say ([`key_custody`]).
    Plain { key_id: String, sealed_at: UnixMs },
}

/// A record's seal, signed by the key it names from the statement of
/// `business_uuid`'s keys, that key valid at `sealed_at`, and (a record's
/// own seal) naming the record's bytes. A batch seal is an integration
/// key's; a record seal a sealing key's: a passkey's WebAuthn assertion,
/// bound by its challenge to the seal and by its relying party to the
/// portal the statement names, or a plain signature.
pub fn check_seal_signature(
    seal: &ServedSeal,
    business: &BusinessKeys,
    business_uuid: &str,
    record: &[u8],
) -> Result<SealSigner, Reason> {
    if business.uuid != business_uuid {
        return Err(Reason::KeyMismatch);
    }
    let envelope = match seal {
        ServedSeal::Batch(membership) => {
            let batch = crate::seal::read_batch_seal(&membership.batch_seal)?;
            let stated = business.keys.iter().find(|k| k.key_id == batch.key_id).ok_or(Reason::KeyUnknown)?;
            if stated.purpose != "integration" {
                return Err(Reason::KeyMismatch);
            }
            crate::seal::verify_batch_seal(&membership.batch_seal, &stated.key)?;
            let sealed_at = UnixMs::parse_rfc3339(&batch.sealed_at).ok_or(Reason::PayloadMalformed)?;
            stated.validity.judge(sealed_at)?;
            return Ok(SealSigner::Integration);
        }
        ServedSeal::Record(envelope) => envelope,
    };
    let named = crate::seal::read_record_seal(envelope)?;
    let stated = business.keys.iter().find(|k| k.key_id == named.key_id()).ok_or(Reason::KeyUnknown)?;
    if stated.purpose != "sealing" {
        return Err(Reason::KeyMismatch);
    }
    let sealed_at = UnixMs::parse_rfc3339(named.sealed_at()).ok_or(Reason::PayloadMalformed)?;
    let opened = envelope.open()?;
    let signer = match &stated.relying_party {
        Some(party) if stated.kind == "passkey" => {
            let signature = envelope.signatures.iter().find(|s| s.keyid == stated.key_id).ok_or(Reason::KeyMismatch)?;
            crate::publish::webauthn::verify_assertion(
                signature,
                &envelope.payload_type,
                &opened.payload,
                &stated.key,
                &party.id,
                &party.origin,
            )?;
            SealSigner::Passkey(party.clone())
        }
        // A passkey the statement names no relying party for cannot be judged.
        None if stated.kind == "passkey" => return Err(Reason::PayloadMalformed),
        _ => {
            envelope.verify(&envelope.payload_type, &stated.key)?;
            SealSigner::Plain { key_id: stated.key_id.clone(), sealed_at }
        }
    };
    crate::seal::check_hash(named.hash(), record)?;
    stated.validity.judge(sealed_at)?;
    Ok(signer)
}

/// One key-custody statement, read from its signed payload alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatedCustody {
    pub key_id: String,
    pub custody: crate::custody::Custody,
    pub effective_from: UnixMs,
    pub issued_at: UnixMs,
}

/// A business's key-custody statements (`key-custody.v1`), each verified
/// under the key set's issuance key valid when it was issued (P-256 and
/// ML-DSA-65, both required) and naming `business_uuid`.
pub fn key_custody(document: &Value, keys: &KeySet, business_uuid: &str) -> Result<Vec<StatedCustody>, Reason> {
    let listed = document.get("statements").and_then(Value::as_array).ok_or(Reason::PayloadMalformed)?;
    let mut out = Vec::with_capacity(listed.len());
    for entry in listed {
        let payload = stated_when_issued(entry.get("statement"), "key-custody.v1", Purpose::Issuance, keys)?;
        let statement: crate::custody::CustodyStatement =
            serde_json::from_value(payload).map_err(|_| Reason::PayloadMalformed)?;
        if statement.business_uuid != business_uuid {
            return Err(Reason::KeyMismatch);
        }
        let time = |text: &str| UnixMs::parse_rfc3339(text).ok_or(Reason::PayloadMalformed);
        out.push(StatedCustody {
            effective_from: time(&statement.effective_from)?,
            issued_at: time(&statement.issued_at)?,
            key_id: statement.key_id,
            custody: statement.custody,
        });
    }
    Ok(out)
}

/// The custody of `key_id` in force at `at`, if any statement covers it.
pub fn custody_at(statements: &[StatedCustody], key_id: &str, at: UnixMs) -> Option<crate::custody::Custody> {
    let of_key: Vec<&StatedCustody> = statements.iter().filter(|s| s.key_id == key_id).collect();
    let pairs: Vec<(UnixMs, UnixMs)> = of_key.iter().map(|s| (s.effective_from, s.issued_at)).collect();
    crate::custody::in_force(&pairs, at).map(|i| of_key[i].custody)
}

/// A checkpoint note opened under the key set's log-checkpoint key for
/// `origin`.
pub fn checkpoint_of(note: &str, keys: &KeySet, origin: &str) -> Result<crate::tlog::Checkpoint, Reason> {
    keys.keys
        .iter()
        .filter(|e| e.purpose == Purpose::LogCheckpoint)
        .filter_map(|e| crate::keys::VerifyingKey::from_jwk(&e.jwk).ok())
        .find_map(|key| crate::tlog::Checkpoint::open(note, origin, &key).ok())
        .ok_or(Reason::CheckpointInvalid)
}

/// A `GET /v1/log/proof?from=M&to=N` answer proves `older` a prefix of
/// `newer`: both checkpoints already opened, and the answer's sizes theirs.
pub fn check_consistency_proof(
    older: &crate::tlog::Checkpoint,
    newer: &crate::tlog::Checkpoint,
    answer: &Value,
) -> Result<(), Reason> {
    let sizes = (answer.get("from").and_then(Value::as_u64), answer.get("to").and_then(Value::as_u64));
    if sizes != (Some(older.size), Some(newer.size)) {
        return Err(Reason::ConsistencyInvalid);
    }
    let path = crate::tlog::parse_path(answer.get("consistency_path").unwrap_or(&Value::Null))?;
    older.check_consistency(newer, &path)
}

/// A `GET /v1/log/proof?leaf_hash=` answer: the checkpoint under the key
/// set, and `leaf` on its path to the checkpoint's root.
pub fn check_leaf_proof(
    leaf: &[u8],
    answer: &Value,
    keys: &KeySet,
    origin: &str,
) -> Result<crate::tlog::Checkpoint, Reason> {
    let note = answer.get("checkpoint").and_then(Value::as_str).ok_or(Reason::PayloadMalformed)?;
    let checkpoint = checkpoint_of(note, keys, origin)?;
    let index = answer.get("leaf_index").and_then(Value::as_u64).ok_or(Reason::PayloadMalformed)?;
    let path = crate::tlog::parse_path(answer.get("inclusion_path").unwrap_or(&Value::Null))?;
    checkpoint.check_inclusion(&crate::merkle::leaf_hash(leaf), index, &path)?;
    Ok(checkpoint)
}

/// A `GET /v1/log/proof?receipt=` answer: `None` while the minute waits to
/// be sequenced; else the checkpoint the receipt is proven into, in two levels.
pub fn check_receipt_proof(
    receipt: &[u8],
    answer: &Value,
    keys: &KeySet,
    origin: &str,
) -> Result<Option<crate::tlog::Checkpoint>, Reason> {
    let log = answer.get("log").filter(|log| !log.is_null());
    let proof = crate::tlog::ReceiptProof {
        index: answer.get("index").and_then(Value::as_u64).ok_or(Reason::PayloadMalformed)?,
        path: crate::tlog::parse_path(answer.get("path").unwrap_or(&Value::Null))?,
        minute: crate::tlog::ReceiptMinute::parse(
            answer.get("minute_leaf").and_then(Value::as_str).ok_or(Reason::PayloadMalformed)?.as_bytes(),
        )?,
        leaf_index: log.and_then(|log| log.get("leaf_index")).and_then(Value::as_u64).unwrap_or_default(),
        log_path: log
            .map(|log| crate::tlog::parse_path(log.get("inclusion_path").unwrap_or(&Value::Null)))
            .transpose()?
            .unwrap_or_default(),
    };
    let Some(log) = log else {
        // Not sequenced yet: the first level alone.
        proof.check_in_minute(receipt)?;
        return Ok(None);
    };
    let note = log.get("checkpoint").and_then(Value::as_str).ok_or(Reason::PayloadMalformed)?;
    let checkpoint = checkpoint_of(note, keys, origin)?;
    proof.check(receipt, &checkpoint)?;
    Ok(Some(checkpoint))
}

#[cfg(test)]
mod consistency_tests {
    use serde_json::json;

    use super::check_consistency_proof;
    use crate::Reason;
    use crate::tlog::{Checkpoint, Tree, path_value};

    fn checkpoint(tree: &Tree, size: u64) -> Checkpoint {
        Checkpoint { origin: "svc.example/log".into(), size, root: tree.root(size).unwrap() }
    }

    // rule: P-NS-9
    #[test]
    fn a_consistency_answer_proves_only_the_pair_it_names() {
        let mut tree = Tree::default();
        for i in 0..13u8 {
            tree.push(crate::merkle::leaf_hash(&[i]));
        }
        let (older, newer) = (checkpoint(&tree, 5), checkpoint(&tree, 13));
        let path = path_value(&tree.consistency(5, 13).unwrap());
        let answer = json!({"from": 5, "to": 13, "consistency_path": path});
        assert_eq!(check_consistency_proof(&older, &newer, &answer), Ok(()));
        // Another pair of sizes, a forked root, a cut path: each refused.
        let other = json!({"from": 4, "to": 13, "consistency_path": path});
        assert_eq!(check_consistency_proof(&older, &newer, &other), Err(Reason::ConsistencyInvalid));
        let mut forked = newer.clone();
        forked.root[0] ^= 1;
        assert_eq!(check_consistency_proof(&older, &forked, &answer), Err(Reason::ConsistencyInvalid));
        let mut cut = answer.clone();
        cut["consistency_path"].as_array_mut().unwrap().pop();
        assert!(check_consistency_proof(&older, &newer, &cut).is_err());
    }
}
