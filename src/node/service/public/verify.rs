//! Verify (publishing 4.2, `POST /v1/verify`): anyone sends a record with its seal
//! (and, if they have them, its row, sidecar and AI policy bits) and gets a
//! statement signed by the statement key. A check that fails is a `200`
//! with `valid: false` and a reason; only a request that cannot be judged
//! (a bare id or hash, a malformed body) is a problem.

use serde::Deserialize;
use serde_json::{Map, Value, json};
use svc_core::ai_policy::AiPolicyBits;
use svc_core::dsse::{Envelope, payload_type};
use svc_core::keys::VerifyingKey;
use svc_core::keyset::Purpose;
use svc_core::problem::Code;
use svc_core::publish::outcome::MAX_RECORD_CHARS;
use svc_core::seal::{Issuance, ServedSeal};
use svc_core::time::UnixMs;
use svc_core::verify::{self, KeyEvents, Register, RegisteredKey, Submitted};

use crate::region::parts::{HasClock, HasConfig, HasJwkKeys, HasKeySet, HasKeys, HasLimits, HasLog, HasRegistry};
use crate::service::{Error, Result};

fn invalid(detail: impl Into<String>) -> Error {
    Error::detail(Code::RequestInvalid, detail)
}

/// The request body. Member names for the AI policy record and its seal
/// (P-NS-11): `ai_policy_record_base64` and `ai_policy_seal`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VerifyRequest {
    record_base64: Option<String>,
    seal: Option<Value>,
    row: Option<Map<String, Value>>,
    sidecar: Option<Value>,
    ai_policy_bits: Option<AiPolicyBits>,
    ai_policy_record_base64: Option<String>,
    ai_policy_seal: Option<Value>,
    ad_item: Option<Value>,
    key_events: Option<String>,
    // Named only to refuse them clearly: a lookup needs the record itself.
    record_id: Option<Value>,
    hash: Option<Value>,
    adl_origin: Option<Value>,
}

/// What is judged, from the request's own members or from an ad item.
struct Parts {
    record_base64: String,
    seal: Value,
    row: Option<Map<String, Value>>,
    sidecar: Option<Value>,
    /// Bits a row carried, with the AI policy record and seal to check them by.
    bits: Option<(AiPolicyBits, String, Value)>,
    item: Option<Map<String, Value>>,
}

impl Parts {
    fn of_request(req: VerifyRequest) -> Result<Parts> {
        let record_base64 = req.record_base64.ok_or_else(|| invalid("record_base64 is required (or ad_item)"))?;
        let bits = match (req.ai_policy_bits, req.ai_policy_record_base64, req.ai_policy_seal) {
            (Some(bits), Some(policy), Some(policy_seal)) => Some((bits, policy, policy_seal)),
            (Some(_), _, _) => {
                return Err(invalid("to check ai_policy_bits, send ai_policy_record_base64 and ai_policy_seal too"));
            }
            _ => None,
        };
        Ok(Parts {
            record_base64,
            seal: req.seal.ok_or_else(|| invalid("seal is required"))?,
            row: req.row,
            sidecar: req.sidecar,
            bits,
            item: None,
        })
    }

    /// An ad item carries its record, seal, row, bits and AI policy: it is
    /// sent alone (P4.2.23).
    fn of_ad_item(item: Value, req: &VerifyRequest) -> Result<Parts> {
        let alone = req.record_base64.is_none()
            && req.seal.is_none()
            && req.row.is_none()
            && req.sidecar.is_none()
            && req.ai_policy_bits.is_none()
            && req.ai_policy_record_base64.is_none()
            && req.ai_policy_seal.is_none();
        if !alone {
            return Err(invalid("an ad_item carries its own record, seal, row and AI policy: send it alone"));
        }
        let Value::Object(item) = item else { return Err(invalid("ad_item is an ad item object")) };
        let text = |name: &str| {
            item.get(name).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| invalid(format!("ad_item.{name}")))
        };
        let row = match item.get("row") {
            Some(Value::Object(row)) => row.clone(),
            _ => return Err(invalid("ad_item.row is the signed row the pool served")),
        };
        let policy = item.get("ai_policy").cloned().unwrap_or_default();
        let bits = match (row.get("ai_policy_bits"), policy["record_base64"].as_str()) {
            (Some(bits), Some(record)) => {
                let bits = serde_json::from_value(bits.clone()).map_err(|_| invalid("ad_item.row.ai_policy_bits"))?;
                Some((bits, record.to_owned(), policy["seal"].clone()))
            }
            _ => None,
        };
        Ok(Parts {
            record_base64: text("record_base64")?,
            seal: item.get("adl_origin_seal").cloned().ok_or_else(|| invalid("ad_item.adl_origin_seal"))?,
            row: Some(row),
            sidecar: None,
            bits,
            item: Some(item),
        })
    }
}

/// What the node knows, as the judgement asks for it.
pub struct Lookups<'a, R> {
    pub state: &'a R,
    pub now: UnixMs,
}

impl<R: HasConfig + HasRegistry + HasJwkKeys + HasLog + HasKeySet> Register for Lookups<'_, R> {
    fn business_key(&self, key_id: &str) -> Option<RegisteredKey> {
        let key = self.state.registry().business_key(key_id).ok()??;
        Some(RegisteredKey {
            public: self.state.jwk_keys().get(&key.jwk)?,
            validity: key.validity(),
            business_uuid: key.business_uuid,
            purpose: key.purpose.as_str().into(),
            webauthn: key.kind == svc_store::model::KeyKind::Passkey,
        })
    }

    fn certificates(&self, business_uuid: &str) -> Vec<Issuance> {
        let history = self.state.registry().certificates(business_uuid).unwrap_or_default();
        history.iter().map(|c| c.as_core()).collect()
    }

    fn ai_policy_version_at(&self, business_uuid: &str, at: UnixMs) -> u64 {
        self.state.registry().ai_policy_at(business_uuid, at).ok().flatten().map_or(0, |p| p.version)
    }

    fn mandate_covers(&self, key_id: &str, at: UnixMs, record_type: &str, countries: &[String]) -> bool {
        let mandates = self.state.registry().mandates_of_key(key_id).unwrap_or_default();
        mandates.iter().any(|m| m.covers(at, record_type, countries))
    }

    fn key_added_logged(&self, key_id: &str, key: &RegisteredKey) -> bool {
        let leaf = svc_core::tlog::key_added_leaf(&key.business_uuid, key_id, &key.purpose, key.validity.valid_from);
        let sequenced = self.state.log().find(&svc_core::merkle::leaf_hash(&leaf)).ok().flatten();
        let size = self.state.log().latest().ok().flatten().map_or(0, |c| c.size);
        sequenced.is_some_and(|index| index < size)
    }

    fn service_key(&self, purpose: Purpose, kid: &str, at: UnixMs) -> Option<VerifyingKey> {
        self.state.key_set().key(purpose, kid, at, self.now)
    }

    fn passkey_binding(&self) -> (&str, &str) {
        (&self.state.config().passkey_rp_id, &self.state.config().passkey_origin)
    }
}

fn decode_base64(text: &str, member: &str) -> Result<Vec<u8>> {
    if text.len() > MAX_RECORD_CHARS {
        return Err(Error::detail(Code::RecordTooLarge, format!("{member} is over {MAX_RECORD_CHARS} characters")));
    }
    svc_core::b64::std_decode(text).ok_or_else(|| invalid(format!("{member} is not standard base64")))
}

/// Spends one of the client address's verifications (IPv6 by /64), or
/// `429` with the wait: `POST /v1/verify` and the verify page share it.
pub fn within_rate(
    state: &impl HasLimits,
    client: Option<std::net::IpAddr>,
    now: svc_core::time::UnixMs,
) -> Result<()> {
    if let Some(client) = client
        && let Err(wait_ms) = state.limits().verify_rate.take(&svc_core::limits::address_share(client), now, 1)
    {
        return Err(Error::retry_after(
            Code::RateLimited,
            wait_ms,
            "verifications from this address are over their rate",
        ));
    }
    Ok(())
}

/// Judges what was sent, and signs the statement of the judgement. The
/// work is unauthenticated, so each client address (IPv6 by /64) gets its
/// own rate (`verify_per_second`): generous for a checker, not for a flood.
pub async fn judge<R>(state: &R, client: Option<std::net::IpAddr>, bytes: &[u8]) -> Result<Value>
where
    R: HasConfig + HasRegistry + HasKeys + HasClock + HasJwkKeys + HasLimits + HasKeySet + HasLog,
{
    let now = state.clock().now();
    within_rate(state, client, now)?;
    let mut req: VerifyRequest = serde_json::from_slice(bytes).map_err(|e| invalid(format!("body: {e}")))?;
    if req.record_id.is_some() || req.hash.is_some() || req.adl_origin.is_some() {
        return Err(invalid("a bare id or hash is never accepted: send the record's bytes (record_base64)"));
    }
    let key_events = match req.key_events.as_deref() {
        None | Some("warn") => KeyEvents::Warn,
        Some("require") => KeyEvents::Require,
        Some(other) => return Err(invalid(format!("key_events is warn or require, not {other}"))),
    };
    let parts = match req.ad_item.take() {
        Some(item) => Parts::of_ad_item(item, &req)?,
        None => Parts::of_request(req)?,
    };
    let record = decode_base64(&parts.record_base64, "record_base64")?;
    let seal: ServedSeal = serde_json::from_value(parts.seal)
        .map_err(|_| invalid("seal is a seal envelope, or {batch_seal, leaf_index, inclusion_proof}"))?;
    let sidecar =
        parts.sidecar.map(|s| Envelope::from_value(&s)).transpose().map_err(|r| invalid(format!("sidecar: {r}")))?;
    let lookups = Lookups { state, now };
    let submitted = Submitted { record: &record, seal: &seal, sidecar: sidecar.as_ref(), key_events };
    let verdict = verify::judge_seal(&submitted, &lookups);
    let projection = parts.row.as_ref().map(|row| verify::judge_row(row, verdict.record.as_ref(), &lookups));
    let bits = match parts.bits {
        Some((bits, policy, policy_seal)) => {
            let policy = decode_base64(&policy, "ai_policy_record_base64")?;
            let policy_seal =
                Envelope::from_value(&policy_seal).map_err(|r| invalid(format!("ai_policy_seal: {r}")))?;
            Some(verify::judge_bits(&bits, &policy, &policy_seal, verdict.business_uuid.as_deref(), &lookups))
        }
        None => None,
    };
    let ad_item = parts.item.as_ref().map(|item| verify::ad_item::judge(item, &record, parts.row.as_ref()));
    let log_inclusion = log_inclusion(state, &seal).await?;
    let mut warnings = verdict.warnings.clone();
    if log_inclusion["included"] == false {
        warnings.push("not_in_log".into());
    }
    let mut answer = json!({
        "seal": verdict.to_value(),
        "log_inclusion": log_inclusion,
        "projection": projection,
        "ai_policy_bits": bits,
        "ad_item": ad_item,
        "warnings": warnings,
        "checked_at": now.to_rfc3339_millis(),
    });
    let signed = svc_core::canonical::to_signed_bytes(&answer).map_err(Error::internal)?;
    let statement = state.keys().statement_key().sign_short_lived(&payload_type("verify-statement.v1"), &signed);
    answer["statement"] = json!(statement);
    Ok(answer)
}

/// The seal's leaf proven against the newest checkpoint, or why not.
async fn log_inclusion(state: &impl HasLog, seal: &ServedSeal) -> Result<Value> {
    let leaf = svc_core::tlog::seal_leaf(seal.envelope());
    let hash = svc_core::merkle::leaf_hash(&leaf);
    let name = svc_core::merkle::root_form(&hash);
    let Some(checkpoint) = state.log().latest()? else {
        return Ok(json!({"included": false, "reason": "log_not_available", "leaf_hash": name}));
    };
    let Some((index, path)) = state.log().prove(&hash, &checkpoint).await? else {
        return Ok(
            json!({"included": false, "reason": "not_in_log", "leaf_hash": name, "checkpoint": checkpoint.note}),
        );
    };
    let mut value = super::log::inclusion_value(index, &path, &checkpoint);
    value["included"] = json!(true);
    value["leaf_hash"] = json!(name);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::limits::Limits;

    /// A region of one part: the verification rate's limits.
    struct OnlyLimits(Arc<Limits>);

    impl HasLimits for OnlyLimits {
        fn limits(&self) -> &Arc<Limits> {
            &self.0
        }
    }

    /// A use case names the parts it reads, so it runs on those alone: no
    /// store, actor or key is needed to judge a client's rate.
    #[test]
    fn a_use_case_runs_on_the_parts_it_names_alone() {
        let part = OnlyLimits(Arc::new(Limits::new(crate::config::RetrievalLimits::default(), 1)));
        let client = Some("192.0.2.7".parse().unwrap());
        let now = UnixMs(1_795_341_600_000);
        assert!(within_rate(&part, client, now).is_ok());
        let over = within_rate(&part, client, now).unwrap_err();
        assert_eq!(over.code(), Code::RateLimited);
        assert!(within_rate(&part, Some("198.51.100.1".parse().unwrap()), now).is_ok(), "another address");
    }
}
