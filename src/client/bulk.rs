//! The caller's side of bulk files: the NDJSON file (one record's base64 a
//! line, line i = leaf i) and the multipart/form-data body POSTed to an
//! upload address, every field of the upload description first, then `file`.

use serde_json::Value;

pub const BOUNDARY: &str = "svc-bulk-upload-boundary-7d1f";

/// The NDJSON bulk file of `records`.
pub fn ndjson(records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(records.iter().map(|r| r.len() * 4 / 3 + 8).sum());
    for record in records {
        out.extend_from_slice(svc_core::b64::std_encode(record).as_bytes());
        out.push(b'\n');
    }
    out
}

/// The form body for `fields` (the upload description's `fields` object)
/// and `file`, with [`BOUNDARY`].
pub fn form(fields: &Value, file: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(file.len() + 2048);
    if let Some(fields) = fields.as_object() {
        for (name, value) in fields {
            let value = value.as_str().unwrap_or_default();
            body.extend_from_slice(
                format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
                    .as_bytes(),
            );
        }
    }
    body.extend_from_slice(
        format!(
            "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"records.ndjson\"\r\n\
             Content-Type: application/x-ndjson\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(file);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// The `Content-Type` of [`form`]'s body.
pub fn content_type() -> String {
    format!("multipart/form-data; boundary={BOUNDARY}")
}

/// The path (and query) of an upload address.
pub fn upload_path(url: &str) -> Option<&str> {
    url.find("/v1/uploads/").map(|i| &url[i..])
}
