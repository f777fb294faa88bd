//! The public HTML pages (publishing 4.2): self-contained documents with
//! inline style only, no script and nothing loaded from anywhere, so a
//! browser shows them as they were sent and a checker can save them whole.

use serde_json::Value;

use svc_node::service::public::certificates::Certified;

/// Escapes text for HTML element content and quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;\
color:#1b1b1b;line-height:1.5}h1{font-size:1.5rem;margin-bottom:.25rem}.status{display:inline-block;\
padding:.1rem .6rem;border-radius:1rem;font-weight:600}.active,.current,.valid{background:#dff3e4;color:#14532d}\
.withdrawn,.revoked,.invalid{background:#fde2e1;color:#7f1d1d}.suspended,.closed,.ended{background:#fdf1d6;\
color:#713f12}table{border-collapse:collapse;width:100%;font-size:.9rem}td,th{text-align:left;padding:.3rem;\
border-bottom:1px solid #ddd;vertical-align:top}code{font-size:.8rem;word-break:break-all}\
.statement{font-size:1.1rem;border-left:4px solid #999;padding-left:.75rem}footer{margin-top:2rem;\
font-size:.85rem;color:#555}";

/// A whole page around `body`.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{}</title><style>{STYLE}</style></head><body>{body}</body></html>\n",
        escape(title)
    )
}

fn text(value: &Value, name: &str) -> String {
    escape(value.get(name).and_then(Value::as_str).unwrap_or(""))
}

fn status_badge(status: &str) -> String {
    format!("<span class=\"status {0}\">{0}</span>", escape(status))
}

/// The certificate page: who was verified, the statement and status in
/// force, and every earlier issuance.
pub fn certificate(subject: &Certified, document: &Value) -> String {
    let country = subject.country.as_deref().map(|c| format!("Country: {} · ", escape(c))).unwrap_or_default();
    let mut body = format!(
        "<h1>{}</h1><p>{}Certificate status: {}</p>\
<p class=\"statement\">{}</p><table>\
<tr><th>Status in force since</th><td>{}</td></tr>\
<tr><th>Issued</th><td>{}</td></tr>\
<tr><th>Certificate id</th><td><code>{}</code></td></tr>",
        escape(&subject.name),
        country,
        status_badge(document.get("status").and_then(Value::as_str).unwrap_or("")),
        text(document, "statement"),
        text(document, "status_effective_from"),
        text(document, "issued_at"),
        text(document, "cert_id"),
    );
    if let Some(reason) = document.get("status_reason").and_then(Value::as_str) {
        body.push_str(&format!("<tr><th>Reason</th><td>{}</td></tr>", escape(reason)));
    }
    body.push_str("</table>");
    let history = document.get("history").and_then(Value::as_array).cloned().unwrap_or_default();
    if !history.is_empty() {
        body.push_str(
            "<h2>History</h2><table><tr><th>Issued</th><th>Status</th><th>In force from</th><th>Certificate id</th></tr>",
        );
        for issuance in &history {
            body.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
                text(issuance, "issued_at"),
                status_badge(issuance.get("status").and_then(Value::as_str).unwrap_or("")),
                text(issuance, "status_effective_from"),
                text(issuance, "cert_id"),
            ));
        }
        body.push_str("</table>");
    }
    body.push_str(
        "<footer>This page shows a certificate the service signed. The signed certificate is at this \
address with <code>?format=json</code>; it verifies under the issuance key in <code>/.well-known/keys</code>. \
A certificate says who published, not that what they publish is true.</footer>",
    );
    page(&format!("Certificate: {}", subject.name), &body)
}

/// The verify page: what was sealed, by whom, under which certificate, and
/// whether it is the version served now.
pub fn verify(document: &Value) -> String {
    let business = &document["business"];
    let certificate = &business["certificate"];
    let version = &document["version"];
    let status = document.get("status").and_then(Value::as_str).unwrap_or("");
    let valid = if document["valid"] == true { "valid" } else { "invalid" };
    let mut body = format!(
        "<h1>Record {}</h1><p>{} · seal {}</p>\
<p class=\"statement\">Published by {}. {}</p><table>\
<tr><th>Record type</th><td>{}</td></tr>\
<tr><th>Content hash</th><td><code>{}</code></td></tr>\
<tr><th>Version</th><td>{} (sealed {}, published {}{})</td></tr>\
<tr><th>Certificate</th><td>{} <code>{}</code></td></tr>\
<tr><th>Sealed under</th><td><code>{}</code></td></tr>",
        text(document, "record_id"),
        status_badge(status),
        status_badge(valid),
        text(business, "name"),
        text(certificate, "statement"),
        text(document, "record_type"),
        text(document, "adl_origin"),
        version["generation"],
        text(version, "sealed_at"),
        text(version, "published_at"),
        version.get("ended_at").and_then(Value::as_str).map(|e| format!(", ended {}", escape(e))).unwrap_or_default(),
        status_badge(certificate.get("status").and_then(Value::as_str).unwrap_or("")),
        text(certificate, "cert_id"),
        text(version, "sealed_under_cert_id"),
    );
    if let Some(endpoints) = document.get("endpoints") {
        body.push_str(&format!(
            "<tr><th>Endpoints</th><td>{}</td></tr>",
            status_badge(endpoints["status"].as_str().unwrap_or(""))
        ));
    }
    body.push_str(&format!(
        "</table><p>Source line: <code>{}</code></p><footer>Checked {}. For every check (signature, \
inclusion, key, certificate, AI policy, scope, log), send the record and its seal to <code>POST {}</code>. \
The JSON form of this page (<code>?format=json</code>) carries a signed <code>verify-page.v1</code> statement.</footer>",
        text(document, "source_line"),
        text(document, "checked_at"),
        text(document, "full_check"),
    ));
    page(&format!("Record {}", document["record_id"].as_str().unwrap_or("")), &body)
}

/// The page a browser gets for an unknown certificate or record.
pub fn not_found() -> String {
    page("Not found", "<h1>Not found</h1><p>There is nothing to show at this address.</p>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_from_a_business_is_escaped() {
        assert_eq!(
            escape("<script>\"x\" & 'y'</script>"),
            "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;"
        );
        let business = Certified { subject: "business", name: "<b>Acme</b>".into(), country: Some("FR".into()) };
        let html = certificate(&business, &serde_json::json!({"status": "active", "statement": "<i>x</i>"}));
        assert!(html.contains("&lt;b&gt;Acme&lt;/b&gt;") && !html.contains("<b>Acme"));
        assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("href=\"http"));
    }
}
