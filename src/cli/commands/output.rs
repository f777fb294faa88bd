//! What a command prints on stdout: the answer's exact JSON when asked
//! (`--json`) or when stdout is not a terminal (a program reads it), and at
//! a terminal a summary a person reads: a table of rows, ads or receipts.
//! A refusal is the problem's code, detail and what to do, in words.

use std::io::IsTerminal;

use serde_json::Value;

/// How answers are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Json,
    Human,
}

impl Output {
    /// JSON when asked or piped; words at a terminal.
    pub fn choose(json: bool) -> Output {
        if json || !std::io::stdout().is_terminal() { Output::Json } else { Output::Human }
    }
}

/// What an answer is, for its summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Search,
    Fetch,
    Pool,
    Receipts,
    /// `GET /v1/usage`: each day's requests, with a bar of what was billed.
    Usage,
    /// `svc admin observe`: each actor, what it holds and how it fares.
    Observe,
    /// Anything else: its JSON, indented.
    Other,
}

/// A text cut to `width` characters, with an ellipsis when cut.
fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let kept: String = text.chars().take(width.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// Rows of cells as aligned columns under a header.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        padded.join("  ").trim_end().to_owned()
    };
    let mut out = vec![line(header.iter().map(|h| h.to_string()).collect())];
    out.extend(rows.iter().map(|r| line(r.clone())));
    out.join("\n")
}

fn text(value: &Value, member: &str) -> String {
    value.get(member).and_then(Value::as_str).unwrap_or("").to_owned()
}

/// The name a row goes by in its collection.
fn name_of(row: &Value) -> String {
    ["product_name", "title", "headline", "business_name", "brand"]
        .iter()
        .map(|m| text(row, m))
        .find(|t| !t.is_empty())
        .unwrap_or_default()
}

/// A product row's price in the searched country.
fn price_of(row: &Value, country: &str) -> String {
    match (row.get(format!("price_{country}")), row.get(format!("price_currency_{country}"))) {
        (Some(amount), Some(Value::String(currency))) => format!("{amount} {currency}"),
        _ => String::new(),
    }
}

/// The summary of an answer of `shape`.
pub fn human(shape: Shape, answer: &Value) -> String {
    match shape {
        Shape::Search => {
            let country = text(answer, "country");
            let rows = answer["rows"].as_array().cloned().unwrap_or_default();
            let cells: Vec<Vec<String>> = rows
                .iter()
                .enumerate()
                .map(|(i, row)| {
                    vec![
                        (i + 1).to_string(),
                        text(row, "record_id"),
                        cut(&name_of(row), 40),
                        price_of(row, &country),
                        if row["sponsored"] == true { "sponsored".into() } else { String::new() },
                    ]
                })
                .collect();
            format!(
                "{} {} rows in {country} (retrieval {})\n{}",
                rows.len(),
                text(answer, "collection"),
                text(answer, "retrieval_id"),
                table(&["#", "record_id", "name", "price", ""], &cells)
            )
        }
        Shape::Fetch => {
            let record = &answer["record"];
            format!(
                "{} {} of business {}\n  {}\n  published {}",
                text(answer, "type"),
                text(answer, "record_id"),
                text(answer, "business_uuid"),
                name_of(record),
                text(answer, "published_at")
            )
        }
        Shape::Pool => {
            let ads = answer["ads"].as_array().cloned().unwrap_or_default();
            let cells: Vec<Vec<String>> = ads
                .iter()
                .map(|ad| {
                    let price = &ad["net_price"];
                    vec![
                        text(ad, "ad_id"),
                        cut(&text(&ad["creative"], "headline"), 36),
                        format!("{} {} {}", text(price, "amount"), text(price, "currency"), text(price, "basis")),
                        text(&ad["creative"], "display_domain"),
                    ]
                })
                .collect();
            format!(
                "{} ads (retrieval {})\n{}",
                ads.len(),
                text(answer, "retrieval_id"),
                table(&["ad_id", "headline", "net price", "shown as"], &cells)
            )
        }
        Shape::Receipts => {
            let receipts = answer["receipts"].as_array().cloned().unwrap_or_default();
            let cells: Vec<Vec<String>> =
                receipts.iter().map(|r| vec![text(r, "retrieval_id"), text(r, "served_at"), text(r, "kind")]).collect();
            let more = match text(answer, "next_cursor") {
                cursor if cursor.is_empty() => String::new(),
                cursor => format!("\nmore: --cursor {cursor}"),
            };
            format!("{} receipts\n{}{more}", receipts.len(), table(&["retrieval_id", "served_at", "kind"], &cells))
        }
        Shape::Usage => usage(answer),
        Shape::Observe => observe(answer),
        Shape::Other => serde_json::to_string_pretty(answer).unwrap_or_default(),
    }
}

/// A number member as text (`0` when absent).
fn count(value: &Value, member: &str) -> u64 {
    value.get(member).and_then(Value::as_u64).unwrap_or(0)
}

/// Usage by day: a table whose last column is a bar of the requests billed
/// that day, scaled to the busiest day, then the totals and the allowance.
fn usage(answer: &Value) -> String {
    const BAR: usize = 30;
    let days = answer["days"].as_array().cloned().unwrap_or_default();
    let busiest = days.iter().map(|d| count(d, "billed")).max().unwrap_or(0).max(1);
    let cells: Vec<Vec<String>> = days
        .iter()
        .map(|d| {
            let billed = count(d, "billed");
            // At least one block for a day with any use, so it never looks empty.
            let blocks = ((billed as usize * BAR).div_ceil(busiest as usize)).min(BAR);
            vec![
                text(d, "date"),
                count(d, "searches").to_string(),
                count(d, "fetches").to_string(),
                billed.to_string(),
                "█".repeat(blocks),
            ]
        })
        .collect();
    let totals = &answer["totals"];
    let billing = match (text(answer, "environment").as_str(), answer["invoiced"] == true) {
        (environment, true) => format!("{environment}, invoiced"),
        (environment, false) => format!("{environment}, counted, never invoiced"),
    };
    let allowance = match &answer["allowance"] {
        Value::Object(a) if a.get("prepay") == Some(&Value::Bool(true)) => {
            format!("prepaid: {} requests left", a.get("remaining").and_then(Value::as_u64).unwrap_or(0))
        }
        _ => "billed after use".into(),
    };
    format!(
        "usage {} to {} ({billing})
{}
total: {} searches, {} fetches, {} billed; {allowance}",
        text(answer, "from"),
        text(answer, "to"),
        table(&["date", "searches", "fetches", "billed", ""], &cells),
        count(totals, "searches"),
        count(totals, "fetches"),
        count(totals, "billed"),
    )
}

/// Each actor: what it holds as `name value` pairs, its restarts, and why
/// it failed if it is not back; an actor that did not answer says so.
fn observe(answer: &Value) -> String {
    let supervised = answer["supervisor"].as_array().cloned().unwrap_or_default();
    let of = |name: &str| supervised.iter().find(|c| c["name"] == name);
    let mut names: Vec<String> = answer["actors"].as_object().map(|a| a.keys().cloned().collect()).unwrap_or_default();
    names.extend(supervised.iter().map(|c| text(c, "name")).filter(|n| answer["actors"].get(n).is_none()));
    let cells: Vec<Vec<String>> = names
        .iter()
        .map(|name| {
            let holds = match answer["actors"].get(name) {
                Some(Value::Object(held)) => held
                    .iter()
                    .map(|(k, v)| format!("{k} {}", v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
                    .collect::<Vec<_>>()
                    .join(", "),
                Some(Value::Null) => "did not answer within 2 s".into(),
                _ => String::new(),
            };
            let child = of(name);
            let restarts = child.map(|c| count(c, "restarts").to_string()).unwrap_or_default();
            let state = match child.map(|c| &c["failed"]) {
                Some(Value::String(why)) => format!("FAILED: {why}"),
                Some(_) => "running".into(),
                None => String::new(),
            };
            vec![name.clone(), cut(&holds, 70), restarts, state]
        })
        .collect();
    let failed = supervised.iter().filter(|c| c["failed"].is_string()).count();
    format!(
        "{} actors, {} supervised, {failed} failed\n{}",
        names.len(),
        supervised.len(),
        table(&["actor", "holds", "restarts", "state"], &cells)
    )
}

/// What to do about a refusal, by its problem code.
fn what_to_do(code: &str) -> &'static str {
    match code {
        "key_unknown" => {
            "register the key (svc admin retrieval-key register), and in the sandbox give its grant (--grant or SVC_SANDBOX_KEY) until the sandbox has seen it"
        }
        "signature_invalid" | "signature_missing" => {
            "sign with the key file the key was registered from, for the authority the service names (--authority)"
        }
        "rate_limited" => "wait for the time the answer names (Retry-After), then send again",
        "request_invalid" => "change the member the detail names",
        "not_found" => "check the id: it names nothing this key may read",
        "unavailable" => "the service is busy or a region is away: send again after the time it names",
        "allowance_exhausted" => "the company's prepaid allowance is spent: the operator sets another",
        _ => "read the detail; docs/REFERENCE.md lists every code",
    }
}

/// A problem answer (RFC 9457) in words: its code and status, its detail,
/// and what to do.
pub fn problem(answer: &Value, status: u16) -> String {
    let code = text(answer, "code");
    let detail =
        [text(answer, "detail"), text(answer, "title")].into_iter().find(|t| !t.is_empty()).unwrap_or_default();
    format!("refused: {code} ({status}): {detail}\nwhat to do: {}", what_to_do(&code))
}

/// An error as a person reads it: a refusal the service answered is its
/// problem in words, anything else as it reads.
pub fn error_text(error: &super::CliError) -> String {
    if let super::CliError::Client(svc_client::ClientError::Status { status, path, body }) = error
        && let Ok(answer) = serde_json::from_str::<Value>(body)
        && answer.get("code").is_some_and(Value::is_string)
    {
        return format!("{path} {}", problem(&answer, *status));
    }
    error.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_read_as_tables_and_problems_as_words() {
        let search = json!({"collection": "products", "country": "FR", "retrieval_id": "r_1", "rows": [
            {"record_id": "svc_a", "product_name": "Lumio Oak Lamp", "price_FR": 19.9, "price_currency_FR": "EUR"},
            {"record_id": "svc_b", "product_name": "Lumio Linen Lamp", "sponsored": true}]});
        let shown = human(Shape::Search, &search);
        assert_eq!(shown.lines().next(), Some("2 products rows in FR (retrieval r_1)"));
        assert!(shown.contains("1  svc_a      Lumio Oak Lamp    19.9 EUR"), "{shown}");
        assert!(shown.lines().last().unwrap().ends_with("sponsored"), "{shown}");
        let refused = problem(&json!({"code": "key_unknown", "title": "Key is not known"}), 401);
        assert!(refused.starts_with("refused: key_unknown (401): Key is not known\nwhat to do: register"), "{refused}");
        assert_eq!(cut("abcdef", 4), "abc…");
        let receipts = json!({"receipts": [{"retrieval_id": "r_1", "served_at": "2026-11-29T10:00:00.000Z",
            "kind": "search"}], "next_cursor": "c2"});
        let shown = human(Shape::Receipts, &receipts);
        assert!(shown.contains("r_1           2026-11-29T10:00:00.000Z  search"), "{shown}");
        assert!(shown.ends_with("more: --cursor c2"), "{shown}");
        let body = r#"{"type":"urn:svc:problem:unavailable","status":503,"code":"unavailable","detail":"busy"}"#;
        let error = crate::commands::CliError::Client(svc_client::ClientError::Status {
            status: 503,
            path: "/admin/sandbox/republish".into(),
            body: body.into(),
        });
        assert_eq!(
            error_text(&error),
            "/admin/sandbox/republish refused: unavailable (503): busy\nwhat to do: the service is busy or a region \
             is away: send again after the time it names"
        );
        let usage = json!({"environment": "sandbox", "invoiced": false, "from": "2026-11-28", "to": "2026-11-29",
            "days": [{"date": "2026-11-28", "searches": 1, "fetches": 0, "billed": 1},
                     {"date": "2026-11-29", "searches": 20, "fetches": 10, "billed": 30}],
            "totals": {"searches": 21, "fetches": 10, "billed": 31}, "allowance": {"prepay": true, "remaining": 69}});
        let shown = human(Shape::Usage, &usage);
        assert_eq!(shown.lines().next(), Some("usage 2026-11-28 to 2026-11-29 (sandbox, counted, never invoiced)"));
        // The busiest day fills the bar; a day with one request still shows one block.
        assert!(shown.contains(&format!("2026-11-29  20        10       30      {}", "█".repeat(30))), "{shown}");
        assert!(shown.contains("2026-11-28  1         0        1       █\n"), "{shown}");
        assert!(shown.ends_with("total: 21 searches, 10 fetches, 31 billed; prepaid: 69 requests left"), "{shown}");
        let observed = json!({"actors": {"indexer": {"applied_seq": 12}, "billing": null},
            "supervisor": [{"name": "indexer", "restarts": 1, "failed": null},
                           {"name": "push_worker", "restarts": 5, "failed": "disk full"}]});
        let shown = human(Shape::Observe, &observed);
        assert!(shown.starts_with("3 actors, 2 supervised, 1 failed\n"), "{shown}");
        assert!(shown.contains("indexer      applied_seq 12             1         running"), "{shown}");
        assert!(shown.contains("billing      did not answer within 2 s"), "{shown}");
        assert!(shown.contains("push_worker                             5         FAILED: disk full"), "{shown}");
        let other = crate::commands::CliError::Missing("no certificate");
        assert_eq!(error_text(&other), "no certificate");
    }
}
