//! The account export (publishing 4.1: "the only full-record path is the
//! account export in the business portal"): every stored version of every
//! record of the business, and every AI policy version, as the exact bytes
//! that were sealed beside their seal envelopes, in one tar archive with a
//! manifest. Written to any `Write`, one version at a time, so an archive
//! of any size streams without being held in memory.

use std::io::Write;

use serde_json::{Value, json};
use svc_core::problem::Code;

use super::{SEALERS, Signed};
use crate::region::parts::{HasClock, HasLimits, HasRegistry, HasStore};
use crate::service::{Error, Result};
use svc_store::cf;
use svc_store::model::RecordHead;

/// Record heads read at a time.
const PAGE: usize = 1_000;

/// Who may take the export.
pub fn allowed(signed: &Signed) -> Result<()> {
    signed.require(SEALERS, "the account export")
}

/// Starts the account's export: one at a time per account (each reads the
/// whole catalogue), held until the guard drops; another meanwhile is `429`.
pub fn begin(state: &impl HasLimits, signed: &Signed) -> Result<crate::limits::InFlightGuard> {
    allowed(signed)?;
    state.limits().exports.enter(&signed.account_uuid).ok_or_else(|| {
        Error::retry_after(
            Code::RateLimited,
            10_000,
            "an export of this account is under way; ask again when it is done",
        )
    })
}

/// The archive's file name.
pub fn file_name(state: &impl HasClock, signed: &Signed) -> String {
    let day = state.clock().now().to_rfc3339_secs();
    format!("svc-export-{}-{}.tar", signed.account_uuid, &day[..10])
}

fn io(e: std::io::Error) -> Error {
    Error::internal(format!("writing the export: {e}"))
}

fn append(builder: &mut tar::Builder<impl Write>, path: &str, bytes: &[u8], mtime: i64) -> Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes.len() as u64);
    header.set_mode(0o644);
    header.set_mtime((mtime.max(0) / 1000) as u64);
    header.set_entry_type(tar::EntryType::Regular);
    builder.append_data(&mut header, path, bytes).map_err(io)
}

/// Writes the business's archive to `out` (blocking: call it off the async
/// workers). Versions whose bytes were purged by a delete are listed in the
/// manifest as purged, with their seal.
pub fn write_archive<R>(state: &R, signed: &Signed, out: impl Write) -> Result<()>
where
    R: HasStore + HasRegistry + HasClock,
{
    allowed(signed)?;
    let uuid = &signed.account_uuid;
    let business = state.registry().business(uuid)?.ok_or_else(|| Error::new(Code::NotFound))?;
    let mut builder = tar::Builder::new(out);
    let mut records = Vec::new();
    let mut from: Option<Vec<u8>> = None;
    loop {
        // Every record head, a page at a time: the catalogue lists only live
        // records, and the export holds withdrawn and deleted ones too.
        let page: Vec<(Vec<u8>, RecordHead)> = state.store().scan(cf::RECORDS, &[], from.as_deref(), PAGE)?;
        let Some((last, _)) = page.last() else { break };
        from = Some([last.as_slice(), &[0]].concat());
        let full = page.len() == PAGE;
        for (_, head) in page.into_iter().filter(|(_, h)| h.business_uuid == *uuid) {
            let record_id = &head.record_id;
            let mut versions = Vec::new();
            for generation in 1..=head.generation {
                let Some(version) = state.registry().record_version(record_id, generation)? else { continue };
                let base = format!("records/{record_id}/{generation}");
                let mtime = version.published_at.0;
                append(&mut builder, &format!("{base}.seal.json"), &version.seal, mtime)?;
                if version.bytes.is_empty() {
                    versions
                        .push(json!({"generation": generation, "purged": true, "seal": format!("{base}.seal.json")}));
                } else {
                    append(&mut builder, &format!("{base}.json"), &version.bytes, mtime)?;
                    versions.push(
                        json!({"generation": generation, "sha256": svc_core::digest::sha256_prefixed(&version.bytes),
                        "record": format!("{base}.json"), "seal": format!("{base}.seal.json")}),
                    );
                }
            }
            records.push(json!({"record_id": record_id, "type": head.record_type.name(), "id": head.own_id,
                "state": format!("{:?}", head.state).to_lowercase(), "versions": versions}));
        }
        if !full {
            break;
        }
    }
    let mut policies: Vec<Value> = Vec::new();
    for policy in state.registry().ai_policies(uuid)? {
        let base = format!("ai_policy/{}", policy.version);
        append(&mut builder, &format!("{base}.json"), &policy.bytes, policy.live_from.0)?;
        append(&mut builder, &format!("{base}.seal.json"), &policy.seal, policy.live_from.0)?;
        policies.push(json!({"version": policy.version, "record_id": policy.record_id,
            "live_from": policy.live_from.to_rfc3339_secs(), "sha256": svc_core::digest::sha256_prefixed(&policy.bytes),
            "record": format!("{base}.json"), "seal": format!("{base}.seal.json")}));
    }
    let now = state.clock().now();
    let manifest = json!({"business_uuid": uuid, "legal_name": business.legal_name,
        "exported_at": now.to_rfc3339_secs(), "records": records, "ai_policies": policies});
    let bytes = serde_json::to_vec_pretty(&manifest).map_err(Error::internal)?;
    append(&mut builder, "manifest.json", &bytes, now.0)?;
    builder.into_inner().and_then(|mut out| out.flush()).map_err(io)
}
