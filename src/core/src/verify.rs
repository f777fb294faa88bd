//! `POST /v1/verify` judged (publishing 4.2): a record's seal against the
//! business's key register, certificate, AI policy and scope as they stood at
//! `sealed_at`, plus the row and the AI policy bits served with it. Pure:
//! what the service knows comes in through [`Register`].
//!
//! The checks run in the order of the response's `checks` member; the first
//! that fails gives the seal its one `reason`, and the checks after it are
//! `not_checked`.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::Reason;
use crate::ai_policy::{self, AiPolicyBits};
use crate::digest::sha256_prefixed;
use crate::dsse::Envelope;
use crate::ids::RecordType;
use crate::keys::VerifyingKey;
use crate::keyset::Purpose;
use crate::projection::{self, ProjectionContext};
use crate::records::{self, ValidRecord, ValidationContext};
use crate::seal::{self, Issuance, KeyValidity, RecordSeal, ServedSeal};
use crate::time::UnixMs;

/// A business key as the register holds it.
#[derive(Debug, Clone)]
pub struct RegisteredKey {
    pub business_uuid: String,
    pub public: VerifyingKey,
    /// `integration` or `sealing` (a passkey, or a key the service holds
    /// for the business: hosted signing).
    pub purpose: String,
    /// Whether the key signs through WebAuthn (a passkey): its signature
    /// carries `authenticatorData` and `clientDataJSON`.
    pub webauthn: bool,
    pub validity: KeyValidity,
}

/// What the service knows, asked for by the judgement.
pub trait Register {
    fn business_key(&self, key_id: &str) -> Option<RegisteredKey>;
    /// Every issuance of a business's certificate.
    fn certificates(&self, business_uuid: &str) -> Vec<Issuance>;
    /// The AI policy version in force at `at` (0 before one was sealed).
    fn ai_policy_version_at(&self, business_uuid: &str, at: UnixMs) -> u64;
    /// Whether a mandate of `key_id` live at `at` covers the record type
    /// and every one of the record's countries.
    fn mandate_covers(&self, key_id: &str, at: UnixMs, record_type: &str, countries: &[String]) -> bool;
    /// Whether the key's `key_added` leaf is in the log.
    fn key_added_logged(&self, key_id: &str, key: &RegisteredKey) -> bool;
    /// A service key of `purpose` with id `kid`, valid at `at`.
    fn service_key(&self, purpose: Purpose, kid: &str, at: UnixMs) -> Option<VerifyingKey>;
    /// The relying party and origin passkey seals are bound to.
    fn passkey_binding(&self) -> (&str, &str);
}

/// A check's outcome, as the response names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    Ok,
    NotApplicable,
    NotChecked,
    Missing,
    Failed,
}

/// The checks of a seal, in the order they run.
pub const CHECKS: [&str; 9] =
    ["signature", "hash", "inclusion", "schema", "key_validity", "certificate", "ai_policy", "scope", "key_event"];

/// How a missing `key_added` event is treated (`key_events`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyEvents {
    Warn,
    Require,
}

/// What was sent to be checked, decoded.
pub struct Submitted<'a> {
    pub record: &'a [u8],
    pub seal: &'a ServedSeal,
    pub sidecar: Option<&'a Envelope>,
    pub key_events: KeyEvents,
}

/// The judgement of a seal.
#[derive(Debug, Clone)]
pub struct SealVerdict {
    pub path: &'static str,
    pub format: u64,
    pub key_id: Option<String>,
    pub cert_id: Option<String>,
    pub business_uuid: Option<String>,
    pub sealed_at: Option<String>,
    pub record_type: Option<String>,
    pub ai_policy_version: Option<u64>,
    pub checks: Vec<(&'static str, Check)>,
    pub reason: Option<Reason>,
    pub warnings: Vec<String>,
    /// The record, when it passed its schema (for the projection re-run).
    pub record: Option<ValidRecord>,
}

impl SealVerdict {
    pub fn valid(&self) -> bool {
        self.reason.is_none()
    }

    pub fn to_value(&self) -> Value {
        let checks: Map<String, Value> =
            self.checks.iter().map(|(name, check)| ((*name).to_owned(), json!(check))).collect();
        let mut value = json!({
            "valid": self.valid(),
            "path": self.path,
            "key_id": self.key_id,
            "cert_id": self.cert_id,
            "business_uuid": self.business_uuid,
            "sealed_at": self.sealed_at,
            "record_type": self.record_type,
            "ai_policy_version": self.ai_policy_version,
            "format": self.format,
            "checks": checks,
        });
        if let Some(reason) = self.reason {
            value["reason"] = json!(reason);
        }
        value
    }

    fn set(&mut self, name: &'static str, check: Check) {
        if let Some(entry) = self.checks.iter_mut().find(|(n, _)| *n == name) {
            entry.1 = check;
        }
    }

    /// Records a failed check: the seal's reason, and the rest unchecked.
    fn fail(&mut self, name: &'static str, reason: Reason) {
        self.set(name, Check::Failed);
        self.reason = Some(reason);
    }
}

/// The fields a seal of either kind names.
struct Named {
    key_id: String,
    /// A record seal's `hash` (a batch seal has a root instead).
    hash: Option<String>,
    cert_id: String,
    sealed_at: String,
    record_type: String,
    ai_policy_version: Option<u64>,
    format: u64,
}

/// Judges a seal. Never fails: a seal that does not hold is a verdict with
/// a reason.
pub fn judge_seal(submitted: &Submitted<'_>, register: &impl Register) -> SealVerdict {
    let batch = matches!(submitted.seal, ServedSeal::Batch(_));
    let mut verdict = SealVerdict {
        path: if batch { "A" } else { "B" },
        format: 2,
        key_id: None,
        cert_id: None,
        business_uuid: None,
        sealed_at: None,
        record_type: None,
        ai_policy_version: None,
        checks: CHECKS.iter().map(|name| (*name, Check::NotChecked)).collect(),
        reason: None,
        warnings: Vec::new(),
        record: None,
    };
    if let Err((check, reason)) = run(submitted, register, &mut verdict) {
        verdict.fail(check, reason);
    }
    verdict
}

/// A failed check: its name and why.
type Failed = (&'static str, Reason);

fn run(submitted: &Submitted<'_>, register: &impl Register, verdict: &mut SealVerdict) -> Result<(), Failed> {
    // Read the seal (its form decides nothing about its truth yet).
    let envelope = submitted.seal.envelope();
    let (named, batch) = match submitted.seal {
        ServedSeal::Batch(membership) => match seal::read_batch_seal(&membership.batch_seal) {
            Ok(s) => (
                Named {
                    key_id: s.key_id.clone(),
                    hash: None,
                    cert_id: s.cert_id.clone(),
                    sealed_at: s.sealed_at.clone(),
                    record_type: s.record_type.clone(),
                    ai_policy_version: Some(s.ai_policy_version),
                    format: s.v,
                },
                Some((membership, s)),
            ),
            Err(reason) => return Err(("signature", reason)),
        },
        ServedSeal::Record(envelope) => match seal::read_record_seal(envelope) {
            Ok(s) => (
                Named {
                    key_id: s.key_id().to_owned(),
                    hash: Some(s.hash().to_owned()),
                    cert_id: s.cert_id().to_owned(),
                    sealed_at: s.sealed_at().to_owned(),
                    record_type: s.record_type().to_owned(),
                    ai_policy_version: s.ai_policy_version(),
                    format: s.format(),
                },
                None,
            ),
            Err(reason) => return Err(("signature", reason)),
        },
    };
    verdict.key_id = Some(named.key_id.clone());
    verdict.cert_id = Some(named.cert_id.clone());
    verdict.sealed_at = Some(named.sealed_at.clone());
    verdict.record_type = Some(named.record_type.clone());
    verdict.ai_policy_version = named.ai_policy_version;
    verdict.format = named.format;
    let Some(sealed_at) = UnixMs::parse_rfc3339(&named.sealed_at) else {
        return Err(("signature", Reason::PayloadMalformed));
    };

    // signature: by a key of the register, with the key's own algorithm.
    let Some(key) = register.business_key(&named.key_id) else {
        return Err(("signature", Reason::KeyUnknown));
    };
    verdict.business_uuid = Some(key.business_uuid.clone());
    let sealing = key.purpose == "sealing";
    if sealing == batch.is_some() {
        // A batch seal is an integration key's; a record seal here a
        // sealing key's (a passkey, or a hosted key: both Path B).
        return Err(("signature", Reason::KeyMismatch));
    }
    let signed = if key.webauthn {
        let (rp_id, origin) = register.passkey_binding();
        envelope
            .open()
            .and_then(|opened| {
                let signature =
                    envelope.signatures.iter().find(|s| s.keyid == named.key_id).ok_or(Reason::KeyMismatch)?;
                crate::publish::webauthn::verify_assertion(
                    signature,
                    &envelope.payload_type,
                    &opened.payload,
                    &key.public,
                    rp_id,
                    origin,
                )
            })
            .map(|_| ())
    } else {
        envelope.verify(&envelope.payload_type, &key.public).map(|_| ())
    };
    if let Err(reason) = signed {
        return Err(("signature", reason));
    }
    verdict.set("signature", Check::Ok);

    // hash (a record's own seal) or inclusion (a batch seal's tree).
    match &batch {
        Some((membership, batch_seal)) => {
            verdict.set("hash", Check::NotApplicable);
            if let Err(reason) = membership.check_inclusion(batch_seal, submitted.record) {
                return Err(("inclusion", reason));
            }
            verdict.set("inclusion", Check::Ok);
        }
        None => {
            if seal::check_hash(named.hash.as_deref().unwrap_or_default(), submitted.record).is_err() {
                return Err(("hash", Reason::HashMismatch));
            }
            verdict.set("hash", Check::Ok);
            verdict.set("inclusion", Check::NotApplicable);
        }
    }

    // schema: the record is one of the type the seal names, and valid.
    let record = match schema(submitted.record, &named.record_type) {
        Ok(record) => record,
        Err(reason) => return Err(("schema", reason)),
    };
    verdict.set("schema", Check::Ok);

    if let Err(reason) = key.validity.judge(sealed_at) {
        return Err(("key_validity", reason));
    }
    verdict.set("key_validity", Check::Ok);

    let history = register.certificates(&key.business_uuid);
    if let Err(reason) = seal::judge_certificate(&history, &named.cert_id, sealed_at) {
        return Err(("certificate", reason));
    }
    verdict.set("certificate", Check::Ok);

    match named.ai_policy_version {
        // Format 1 named the Terms, not the AI policy: nothing to compare.
        None => verdict.set("ai_policy", Check::NotApplicable),
        Some(version) if version == register.ai_policy_version_at(&key.business_uuid, sealed_at) => {
            verdict.set("ai_policy", Check::Ok)
        }
        Some(_) => return Err(("ai_policy", Reason::AiPolicyVersionMismatch)),
    }

    if let Err(reason) = scope(submitted, register, &named, &key, &record, sealed_at) {
        return Err(("scope", reason));
    }
    verdict.set("scope", Check::Ok);

    if register.key_added_logged(&named.key_id, &key) {
        verdict.set("key_event", Check::Ok);
    } else if submitted.key_events == KeyEvents::Require {
        return Err(("key_event", Reason::KeyEventMissing));
    } else {
        verdict.set("key_event", Check::Missing);
        verdict.warnings.push(Reason::KeyEventMissing.as_str().to_owned());
    }
    verdict.record = Some(record);
    Ok(())
}

/// The record parsed as the type its seal names: another schema is
/// `record_type_mismatch`, an unknown one `version_unknown`, anything
/// invalid `payload_malformed`.
fn schema(bytes: &[u8], sealed_type: &str) -> Result<ValidRecord, Reason> {
    let expected = RecordType::from_name(sealed_type).ok_or(Reason::RecordTypeMismatch)?;
    let value: Value = serde_json::from_slice(bytes).map_err(|_| Reason::PayloadMalformed)?;
    let named = value.get("schema").and_then(Value::as_str).ok_or(Reason::PayloadMalformed)?;
    let actual = records::schema_type(named).ok_or(Reason::VersionUnknown)?;
    if actual != expected {
        return Err(Reason::RecordTypeMismatch);
    }
    // Structure only: scope and link checks belong to publishing.
    records::validate(bytes, expected, &ValidationContext::new(Vec::new(), Vec::new(), None))
        .map_err(|_| Reason::PayloadMalformed)
}

/// Scope: Path A by the key's mandate at `sealed_at`; Path B by the
/// person's grant, as the sidecar resolved it at acceptance when one is
/// given. A sidecar given on either path must be the service's and name
/// this record.
fn scope(
    submitted: &Submitted<'_>,
    register: &impl Register,
    named: &Named,
    key: &RegisteredKey,
    record: &ValidRecord,
    sealed_at: UnixMs,
) -> Result<(), Reason> {
    let sidecar = match submitted.sidecar {
        Some(envelope) => {
            let kid = envelope.signatures.first().map(|s| s.keyid.as_str()).ok_or(Reason::EnvelopeMalformed)?;
            // The service signed it when it accepted the record: its key is
            // judged then (read before the signature, checked by it after).
            let unverified: Value =
                serde_json::from_slice(&envelope.payload_bytes()?).map_err(|_| Reason::PayloadMalformed)?;
            let accepted_at = unverified
                .get("accepted_at")
                .and_then(Value::as_str)
                .and_then(UnixMs::parse_rfc3339)
                .ok_or(Reason::PayloadMalformed)?;
            let sidecar_key = register.service_key(Purpose::Sidecar, kid, accepted_at).ok_or(Reason::KeyUnknown)?;
            let sidecar = crate::sidecar::verify(envelope, &sidecar_key)?;
            if sidecar.origin() != sha256_prefixed(submitted.record) {
                return Err(Reason::HashMismatch);
            }
            Some(sidecar)
        }
        None => None,
    };
    let covered = match (key.purpose.as_str(), &sidecar) {
        ("sealing", Some(sidecar)) => {
            sidecar.scope().basis == "grant"
                && sidecar.key_id() == named.key_id
                && sidecar.scope().record_types.contains(&named.record_type)
        }
        // A passkey of the business is the person's own grant.
        ("sealing", None) => true,
        _ => register.mandate_covers(&named.key_id, sealed_at, &named.record_type, record.countries()),
    };
    if covered { Ok(()) } else { Err(Reason::OutOfScope) }
}

/// The `projection` member: the row's signature, and whether re-running
/// the projection of the record gives that row.
pub fn judge_row(row: &Map<String, Value>, record: Option<&ValidRecord>, register: &impl Register) -> Value {
    let at = row.get("published_at").and_then(Value::as_i64).map_or(UnixMs(0), UnixMs::from_secs);
    // `published_at` is in whole seconds; the row was signed within that
    // second, so a key valid at its end signed it (a rotation mid-second).
    let signed_by = at.plus(999);
    let signature = projection::verify_row(row, |kid| register.service_key(Purpose::Projection, kid, signed_by));
    let rerun = match (record, &signature) {
        (Some(record), Ok(())) => {
            let text = |name: &str| row.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
            let ctx = ProjectionContext {
                record_id: text("record_id"),
                business_uuid: text("business_uuid"),
                business_name: text("business_name"),
                published_at: at,
                ad: projection::AdParts::of_row(row),
            };
            let same_record = ctx.record_id == record.record_id(&ctx.business_uuid);
            if same_record && projection::rerun_matches(record, &ctx, row) { "matches" } else { "differs" }
        }
        _ => "not_checked",
    };
    let mut value = json!({
        "row_signature": if signature.is_ok() { Check::Ok } else { Check::Failed },
        "rerun": rerun,
        "projection_version": row.get("adl_proj"),
    });
    if let Err(reason) = signature {
        value["reason"] = json!(reason);
    } else if rerun == "differs" {
        value["reason"] = json!(Reason::HashMismatch);
    }
    value
}

/// The `ai_policy_bits` member: whether the bits a row carried are those
/// derived from the business's sealed AI policy record (or those with
/// `purchase` withheld while its endpoints are suspended), and which
/// contexts they block. The policy record's seal must verify and name it.
pub fn judge_bits(
    bits: &AiPolicyBits,
    policy_record: &[u8],
    policy_seal: &Envelope,
    business_uuid: Option<&str>,
    register: &impl Register,
) -> Value {
    let verdict = (|| -> Result<(AiPolicyBits, bool), Reason> {
        let sealed = match seal::read_record_seal(policy_seal)? {
            RecordSeal::V2(s) => s,
            RecordSeal::V1(_) => return Err(Reason::VersionUnknown),
        };
        let key = register.business_key(&sealed.key_id).ok_or(Reason::KeyUnknown)?;
        if business_uuid.is_some_and(|b| b != key.business_uuid) {
            return Err(Reason::KeyMismatch);
        }
        let opened = policy_seal.open()?;
        let signature = policy_seal.signatures.iter().find(|s| s.keyid == sealed.key_id).ok_or(Reason::KeyMismatch)?;
        let (rp_id, origin) = register.passkey_binding();
        crate::publish::webauthn::verify_assertion(
            signature,
            &policy_seal.payload_type,
            &opened.payload,
            &key.public,
            rp_id,
            origin,
        )?;
        seal::check_hash(&sealed.hash, policy_record)?;
        if sealed.record_type != RecordType::AiPolicy.name() {
            return Err(Reason::RecordTypeMismatch);
        }
        let version = sealed.next_ai_policy_version.ok_or(Reason::PayloadMalformed)?;
        let derived = ai_policy::parse_record(policy_record).map_err(|_| Reason::PayloadMalformed)?.bits(version);
        if *bits == derived {
            Ok((derived, false))
        } else if *bits == derived.with_purchase_withheld() {
            Ok((derived, true))
        } else {
            Err(Reason::AiPolicyBitsMismatch)
        }
    })();
    match verdict {
        Ok((derived, withheld)) => json!({
            "matches": true,
            "ai_policy_version": derived.ai_policy_version,
            "purchase_withheld": withheld,
            "blocked": bits.decode().map(|d| d.blocked).unwrap_or_default(),
        }),
        Err(reason) => json!({"matches": false, "reason": reason}),
    }
}

pub mod ad_item;

#[cfg(test)]
mod tests;
