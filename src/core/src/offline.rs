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

#[derive(Deserialize)]
struct FetchedRaw<'a> {
    #[serde(borrow)]
    record: &'a RawValue,
    seal: Value,
    sidecar: Value,
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
    if sidecar.origin != origin {
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
