//! The verify page (publishing 4.2, `GET /v1/verify/{record_id}?origin=…`):
//! what a source line points to. It needs the record's hash as well as its id, and
//! an unknown id and a hash that does not match answer the same 404, so the
//! page is no oracle for which ids exist.

use serde::Deserialize;
use serde_json::{Value, json};
use svc_core::assurance::DomainAssurance;
use svc_core::dsse::payload_type;
use svc_core::problem::Code;
use svc_core::seal::ServedSeal;
use svc_core::source_line::SourceLine;
use svc_core::time::UnixMs;

use crate::region::parts::{
    HasClock, HasConfig, HasJwkKeys, HasKeySet, HasKeys, HasLimits, HasLog, HasRegistry, HasStore, HasVerifyPages,
};
use crate::service::{Error, Result};
use svc_store::model::{RecordHead, RecordState, RecordVersion};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    pub origin: Option<String>,
    pub cert: Option<String>,
    pub served_at: Option<String>,
    /// `html` or `json`: read by the surface, which renders the page.
    pub format: Option<String>,
}

/// The generation of `record_id` whose bytes hashed to `origin`.
fn generation_of(state: &impl HasRegistry, head: &RecordHead, origin: &str) -> Result<Option<RecordVersion>> {
    for generation in (1..=head.generation).rev() {
        let Some(version) = state.registry().record_version(&head.record_id, generation)? else { continue };
        // A held version was never published: it has no row.
        if version.row.is_empty() {
            continue;
        }
        let row: Value = serde_json::from_slice(&version.row).map_err(Error::internal)?;
        if row.get("adl_origin").and_then(Value::as_str) == Some(origin) {
            return Ok(Some(version));
        }
    }
    Ok(None)
}

/// The verify page for a caller at `client`, held to the per-address rate
/// of `POST /v1/verify`, and made at most once a minute per id and query
/// while nothing is written.
pub fn page_for<R>(state: &R, client: Option<std::net::IpAddr>, record_id: &str, q: PageQuery) -> Result<Option<Value>>
where
    R: HasConfig
        + HasStore
        + HasRegistry
        + HasKeys
        + HasClock
        + HasJwkKeys
        + HasLimits
        + HasVerifyPages
        + HasKeySet
        + HasLog,
{
    let now = state.clock().now();
    super::verify::within_rate(state, client, now)?;
    let made = (now.0.div_euclid(svc_core::time::MINUTE), crate::replication::last_seq(state.store())?);
    let asked = [&q.origin, &q.cert, &q.served_at, &q.format].map(|m| m.as_deref().unwrap_or("-")).join("\n");
    let key = (record_id.to_owned(), asked);
    if let Some(document) = state.verify_pages().get(&key, made) {
        return Ok(document);
    }
    let document = page(state, record_id, q)?;
    state.verify_pages().put(key, made, document.clone());
    Ok(document)
}

/// The signed verify page of one version of a record, found by its id and
/// hash. `None` is the one 404: an unknown id, or a hash not its.
pub fn page<R>(state: &R, record_id: &str, q: PageQuery) -> Result<Option<Value>>
where
    R: HasConfig + HasRegistry + HasKeys + HasClock + HasJwkKeys + HasKeySet + HasLog,
{
    let origin = q.origin.ok_or_else(|| Error::detail(Code::RequestInvalid, "origin (sha256:…) is required"))?;
    if svc_core::digest::parse_sha256_form(&origin).is_none() {
        return Err(Error::detail(Code::RequestInvalid, "origin must be sha256: and 64 lower-case hex digits"));
    }
    let served_at = match q.served_at.as_deref() {
        Some(text) => Some(
            UnixMs::parse_rfc3339(text)
                .ok_or_else(|| Error::detail(Code::RequestInvalid, "served_at must be RFC 3339"))?,
        ),
        None => None,
    };
    let now = state.clock().now();
    let Some(head) = state.registry().record_head(record_id)? else { return Ok(None) };
    let Some(version) = generation_of(state, &head, &origin)? else { return Ok(None) };
    let Some(business) = state.registry().business(&head.business_uuid)? else { return Ok(None) };

    // When this version stopped being served: the next published one's
    // publication (a held one was never served), or the record's end.
    let mut next_published = None;
    for generation in version.generation + 1..=head.generation {
        if let Some(next) = state.registry().record_version(record_id, generation)?.filter(|v| !v.row.is_empty()) {
            next_published = Some(next.published_at);
            break;
        }
    }
    let ended_at = match next_published {
        Some(at) => Some(at),
        None if head.state != RecordState::Live => Some(head.last_updated),
        None => None,
    };
    let status = match (head.state, ended_at) {
        (RecordState::Deleted, _) => "deleted",
        (RecordState::Withdrawn, _) => "withdrawn",
        (_, Some(_)) => "superseded",
        _ => "current",
    };
    let seal: ServedSeal = serde_json::from_slice(&version.seal).map_err(Error::internal)?;
    let sidecar = svc_core::dsse::Envelope::parse(&version.sidecar)
        .ok()
        .and_then(|e| e.payload_bytes().ok())
        .and_then(|p| serde_json::from_slice::<Value>(&p).ok())
        .unwrap_or(Value::Null);
    let sealed_under = sidecar.get("cert_id").cloned().unwrap_or(Value::Null);
    let sealed_at = seal.sealer().map(|(_, sealed_at)| sealed_at);
    // The seal judged again now, over the stored bytes (gone once deleted).
    let valid = !version.bytes.is_empty() && {
        let lookups = super::verify::Lookups { state, now };
        let submitted = svc_core::verify::Submitted {
            record: &version.bytes,
            seal: &seal,
            sidecar: None,
            key_events: svc_core::verify::KeyEvents::Warn,
        };
        svc_core::verify::judge_seal(&submitted, &lookups).valid()
    };
    let certificate = super::certificates::certificate_document(state, &head.business_uuid, now)?.map(|(_, c)| c);
    let verify_base = state.config().verify_base_url.trim_end_matches('/');
    // A source line names the certificate by its envelope's digest, as
    // served at `served_at` (now when not given); the sealed `cert_id` is
    // accepted too.
    let cert_digest = state.registry().certificate_digest(&head.business_uuid, now)?;
    let cert_then = state.registry().certificate_digest(&head.business_uuid, served_at.unwrap_or(now))?;
    let checks = json!({
        "cert": match &q.cert {
            None => "not_given",
            Some(c) if *c == cert_then || Some(c.as_str()) == sealed_under.as_str() => "matches",
            Some(_) => "differs",
        },
        "served_at": match served_at {
            None => "not_given",
            Some(at) if at >= version.published_at && ended_at.is_none_or(|end| at < end) => "within",
            Some(_) => "outside",
        },
    });
    let mut document = json!({
        "v": 1,
        "record_id": head.record_id,
        "adl_origin": origin,
        "record_type": head.record_type,
        "valid": valid,
        "status": status,
        "business": {
            "business_uuid": business.uuid,
            "name": business.legal_name,
            "certificate_url": format!("{verify_base}/v1/certificates/{}", business.uuid),
            "certificate": certificate.map(|c| json!({
                "cert_id": c["cert_id"],
                "status": c["status"],
                "status_effective_from": c["status_effective_from"],
                "statement": c["statement"],
            })),
        },
        "version": {
            "generation": version.generation,
            "sealed_at": sealed_at,
            "published_at": version.published_at.to_rfc3339_secs(),
            "ended_at": ended_at.map(UnixMs::to_rfc3339_secs),
            "sealed_under_cert_id": sealed_under,
        },
        "checks": checks,
        "source_line": SourceLine::new(&head.record_id, &origin, &cert_digest, now, verify_base).render(),
        "full_check": format!("{verify_base}/v1/verify"),
        "checked_at": now.to_rfc3339_millis(),
    });
    if head.record_type == svc_core::ids::RecordType::BusinessFiles && status == "current" {
        let suspended = state.registry().endpoints_suspension(&business.uuid)?.is_some();
        // Each domain the file lists, as domain assurance last found it.
        let kept = state.registry().domains(&business.uuid)?;
        let domains: Vec<Value> = svc_core::records::endpoint_domains(&version.bytes)
            .into_iter()
            .map(|domain| {
                let found = kept.get(&domain).cloned().unwrap_or_else(|| DomainAssurance::unchecked(&domain));
                json!({
                    "domain": domain,
                    "state": found.state.as_str(),
                    "last_confirmed_at": found.last_confirmed_at.map(UnixMs::to_rfc3339_secs),
                    "expires_on": found.expires_on.map(svc_core::analytics::date_of),
                })
            })
            .collect();
        document["endpoints"] = json!({"status": if suspended { "suspended" } else { "live" }, "domains": domains});
    }
    let signed = svc_core::canonical::to_signed_bytes(&document).map_err(Error::internal)?;
    document["statement"] = json!(state.keys().statement_key().sign(&payload_type("verify-page.v1"), &signed));
    Ok(Some(document))
}
