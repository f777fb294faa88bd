//! A business developer's publishing run (`svc client publish`), the parts
//! that need no network: the input read as records (CSV with a header row
//! naming each product member, or NDJSON, one record's exact bytes a line),
//! each record judged locally by the same rules the service applies, the
//! good ones planned into batches within the spec's limits, and the run's
//! state kept in a file so an interrupted run resends exactly what it sent
//! (the same seals under the same Idempotency-Keys).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use svc_core::dsse::Envelope;
use svc_core::ids::RecordType;
use svc_core::publish::outcome::{BULK_MAX_BYTES, BULK_MAX_RECORDS, MAX_BODY, MAX_RECORD_CHARS, MAX_RECORDS};
use svc_core::records::{ValidationContext, validate};

use super::ClientError;

/// The largest input read, checked before reading: a bulk file's limit.
pub const MAX_INPUT_BYTES: u64 = svc_core::publish::outcome::BULK_MAX_BYTES;
/// The most records one run publishes (larger catalogues go as bulk files).
pub const MAX_INPUT_RECORDS: usize = svc_core::publish::outcome::BULK_MAX_RECORDS;
/// Room kept in a request body for the seal and the JSON around the records.
const BODY_MARGIN: usize = 64 * 1024;

/// How the input is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
pub enum Format {
    Csv,
    Ndjson,
}

impl Format {
    /// From the file's extension: `.csv` is CSV, anything else NDJSON.
    pub fn of(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("csv") => Format::Csv,
            _ => Format::Ndjson,
        }
    }
}

/// Why a row was not sent, or what the service said of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reason {
    pub code: String,
    pub pointer: String,
    pub detail: String,
}

/// One row of the input: where it is, its own id if it has one, and its
/// record's bytes or why it has none.
#[derive(Debug, Clone)]
pub struct Row {
    /// 1-based line of the file the row starts on.
    pub line: u64,
    pub business_product_id: Option<String>,
    pub judged: Result<Vec<u8>, Vec<Reason>>,
}

fn reason(code: &str, pointer: &str, detail: impl Into<String>) -> Reason {
    Reason { code: code.to_owned(), pointer: pointer.to_owned(), detail: detail.into() }
}

/// Reads the input file, refusing one over [`MAX_INPUT_BYTES`] before reading it.
pub fn read_input(path: &Path) -> Result<Vec<u8>, ClientError> {
    let io = |source| ClientError::Io { path: path.to_owned(), source };
    let size = std::fs::metadata(path).map_err(io)?.len();
    if size > MAX_INPUT_BYTES {
        let detail = format!("the input is over {MAX_INPUT_BYTES} bytes: publish it as bulk files");
        return Err(ClientError::Publishing { path: path.to_owned(), detail });
    }
    std::fs::read(path).map_err(io)
}

/// Why an input is not read as rows at all (a row that does not read is
/// a refused row, not this).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("the header row does not read: {0}")]
    Header(csv::Error),
    #[error("the header row names every column")]
    UnnamedColumn,
    #[error("the input holds {0} records; one run publishes at most {MAX_INPUT_RECORDS}")]
    TooMany(usize),
    #[error("a row does not encode as JSON: {0}")]
    Encode(serde_json::Error),
}

/// The input's rows, each judged as the service would judge it (the
/// business's other-brand scope and URL checks are the service's alone).
pub fn rows(input: &[u8], format: Format, record_type: RecordType) -> Result<Vec<Row>, InputError> {
    let raw = match format {
        Format::Csv => csv_rows(input)?,
        Format::Ndjson => ndjson_rows(input),
    };
    if raw.len() > MAX_INPUT_RECORDS {
        return Err(InputError::TooMany(raw.len()));
    }
    let context = ValidationContext::new(Vec::new(), Vec::new(), None);
    Ok(raw
        .into_iter()
        .map(|(line, bytes)| {
            let business_product_id = bytes.as_deref().ok().and_then(own_id);
            let judged = bytes.and_then(|bytes| judge(&bytes, record_type, &context).map(|()| bytes));
            Row { line, business_product_id, judged }
        })
        .collect())
}

fn own_id(bytes: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(bytes).ok()?;
    value.get("business_product_id").and_then(Value::as_str).map(str::to_owned)
}

fn judge(bytes: &[u8], record_type: RecordType, context: &ValidationContext) -> Result<(), Vec<Reason>> {
    if bytes.len().div_ceil(3) * 4 > MAX_RECORD_CHARS {
        return Err(vec![reason(
            "record_too_large",
            "",
            format!("over {MAX_RECORD_CHARS} base64 characters: the service would refuse its whole batch"),
        )]);
    }
    validate(bytes, record_type, context).map(|_| ()).map_err(|errors| {
        errors
            .into_iter()
            .map(|e| Reason { code: e.code.as_str().to_owned(), pointer: e.pointer, detail: e.detail })
            .collect()
    })
}

/// NDJSON: each line that is not blank is one record's exact bytes.
/// A row as read: its line, and its record's bytes or why it has none.
type Read = (u64, Result<Vec<u8>, Vec<Reason>>);

fn ndjson_rows(input: &[u8]) -> Vec<Read> {
    input
        .split(|b| *b == b'\n')
        .enumerate()
        .map(|(i, line)| (i as u64 + 1, line.strip_suffix(b"\r").unwrap_or(line)))
        .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
        .map(|(line, bytes)| (line, Ok(bytes.to_vec())))
        .collect()
}

/// Members a CSV cell holds as a list, split on `|`.
const LIST_MEMBERS: &[&str] = &["countries", "tags"];

/// CSV: a header row of member names, then one record a row. Lists are
/// `|`-separated (`FR|DE`); `prices` is `country:currency:amount` items
/// (`FR:EUR:19.90|DE:EUR:21.00`); `on_sale` is `true` or `false`; an empty
/// cell leaves its member out; `schema` is the products schema unless a
/// column names another.
fn csv_rows(input: &[u8]) -> Result<Vec<Read>, InputError> {
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(input);
    let header: Vec<String> =
        reader.headers().map_err(InputError::Header)?.iter().map(|h| h.trim().to_owned()).collect();
    if header.iter().any(String::is_empty) {
        return Err(InputError::UnnamedColumn);
    }
    let mut rows = Vec::new();
    for record in reader.byte_records() {
        let (line, cells) = match record {
            Ok(r) => (r.position().map_or(0, |p| p.line()), r),
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                rows.push((line, Err(vec![reason("row_unreadable", "", e.to_string())])));
                continue;
            }
        };
        if cells.len() != header.len() {
            let detail = format!("the row has {} cells; the header names {}", cells.len(), header.len());
            rows.push((line, Err(vec![reason("row_unreadable", "", detail)])));
            continue;
        }
        let mut record = Map::new();
        record.insert("schema".into(), json!("service/products/1"));
        let mut broken = Vec::new();
        for (name, cell) in header.iter().zip(cells.iter()) {
            let Ok(cell) = std::str::from_utf8(cell) else {
                broken.push(reason("row_unreadable", &format!("/{name}"), "the cell is not UTF-8"));
                continue;
            };
            let cell = cell.trim();
            if cell.is_empty() {
                continue;
            }
            let value = match name.as_str() {
                list if LIST_MEMBERS.contains(&list) => json!(cell.split('|').map(str::trim).collect::<Vec<_>>()),
                "prices" => match prices(cell) {
                    Some(prices) => prices,
                    None => {
                        let detail = "prices are country:currency:amount items, separated by |";
                        broken.push(reason("row_unreadable", "/prices", detail));
                        continue;
                    }
                },
                "on_sale" => match cell {
                    "true" => json!(true),
                    "false" => json!(false),
                    other => json!(other),
                },
                _ => json!(cell),
            };
            record.insert(name.clone(), value);
        }
        let bytes = serde_json::to_vec(&Value::Object(record)).map_err(InputError::Encode)?;
        rows.push((line, if broken.is_empty() { Ok(bytes) } else { Err(broken) }));
    }
    Ok(rows)
}

fn prices(cell: &str) -> Option<Value> {
    let items: Option<Vec<Value>> = cell
        .split('|')
        .map(|item| {
            let mut parts = item.trim().splitn(3, ':');
            let (country, currency, amount) = (parts.next()?, parts.next()?, parts.next()?);
            Some(json!({"country": country, "currency": currency, "amount": amount}))
        })
        .collect();
    items.map(Value::Array)
}

/// How a batch travels: in a publish request's body, or as a bulk file
/// (an upload, then an import), each with its own limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carrier {
    /// At most 10,000 records in a body within 32 MiB.
    Body,
    /// At most 100,000 records in a file within 256 MiB.
    BulkFile,
}

impl Carrier {
    fn limits(self) -> (usize, usize) {
        match self {
            Carrier::Body => (MAX_RECORDS, MAX_BODY - BODY_MARGIN),
            Carrier::BulkFile => (BULK_MAX_RECORDS, BULK_MAX_BYTES as usize),
        }
    }
}

/// The good rows cut into batches: at most `per_batch` records (itself
/// within the carrier's count) and the carrier's bytes each. Answers row
/// indices.
pub fn plan(rows: &[Row], per_batch: usize, carrier: Carrier) -> Vec<Vec<usize>> {
    let (max_records, max_bytes) = carrier.limits();
    let per_batch = per_batch.clamp(1, max_records);
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut body = 0;
    for (i, row) in rows.iter().enumerate() {
        let Ok(bytes) = &row.judged else { continue };
        // Base64 of the record, and its quotes and comma or its newline.
        let size = bytes.len().div_ceil(3) * 4 + 3;
        let full = batches.last().is_none_or(|b| b.len() >= per_batch || body + size > max_bytes);
        if full {
            batches.push(Vec::new());
            body = 0;
        }
        body += size;
        if let Some(batch) = batches.last_mut() {
            batch.push(i);
        }
    }
    batches
}

/// A batch as the run keeps it: its rows, the Idempotency-Key and seal it
/// is sent under once sealed, and the service's outcomes once answered.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Batch {
    pub rows: Vec<usize>,
    /// A bulk file's upload, once the file is stored (`--bulk`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub seal: Option<Envelope>,
    /// Per leaf: `(outcome, reasons)` as the service gave them.
    pub outcomes: Option<Vec<(String, Vec<Reason>)>>,
}

/// The run's state file: which input (by digest) it is of, and each batch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct State {
    pub input_sha256: String,
    pub record_type: String,
    pub key_id: String,
    pub batches: Vec<Batch>,
}

impl State {
    /// Where the state of a run over `input` is kept by default.
    pub fn path_for(input: &Path) -> PathBuf {
        let mut name = input.file_name().unwrap_or_default().to_os_string();
        name.push(".publish-state.json");
        input.with_file_name(name)
    }

    /// The kept state, if any; one of another input or key is refused.
    pub fn load(path: &Path, input_sha256: &str, key_id: &str) -> Result<Option<State>, ClientError> {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(ClientError::Io { path: path.to_owned(), source }),
        };
        let state: State = serde_json::from_slice(&bytes)
            .map_err(|e| ClientError::Publishing { path: path.into(), detail: format!("not a run's state: {e}") })?;
        if state.input_sha256 != input_sha256 || state.key_id != key_id {
            let detail = "this state is of another input or key: remove it to start over".to_owned();
            return Err(ClientError::Publishing { path: path.to_owned(), detail });
        }
        Ok(Some(state))
    }

    /// Writes the state whole (a new file, then renamed over the old), so
    /// an interrupted write leaves the previous state.
    pub fn save(&self, path: &Path) -> Result<(), ClientError> {
        let io = |source| ClientError::Io { path: path.to_owned(), source };
        let mut next = path.as_os_str().to_os_string();
        next.push(".next");
        let next = PathBuf::from(next);
        let bytes = serde_json::to_vec_pretty(self)?;
        {
            use std::io::Write;
            let mut file = std::fs::File::create(&next).map_err(io)?;
            file.write_all(&bytes).map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        std::fs::rename(&next, path).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        "business_product_id,language,product_name,countries,brand,prices,on_sale,availability,product_url\n";

    fn row(sku: &str, price: &str) -> String {
        format!(
            "{sku},fr,Lampe {sku},FR|DE,Lumen,FR:EUR:{price}|DE:EUR:21.00,false,in_stock,https://shop.example.com/{sku}\n"
        )
    }

    #[test]
    fn a_csv_row_becomes_the_record_the_service_validates() {
        let input = format!("{HEADER}{}", row("l-1", "19.90"));
        let rows = rows(input.as_bytes(), Format::Csv, RecordType::Products).unwrap();
        let bytes = rows[0].judged.clone().expect("a valid product");
        let record: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(record["countries"], json!(["FR", "DE"]));
        assert_eq!(record["prices"][0], json!({"country": "FR", "currency": "EUR", "amount": "19.90"}));
        assert_eq!(record["on_sale"], json!(false));
        assert_eq!(rows[0].line, 2);
        assert_eq!(rows[0].business_product_id.as_deref(), Some("l-1"));
    }

    #[test]
    fn broken_rows_carry_their_line_and_the_services_own_reasons() {
        let input = format!(
            "{HEADER}{}l-2,fr,only three cells\n{}{}",
            row("l-1", "19.90"),
            row("l-3", "x"),
            row("l-4", "5.00").replace("FR:EUR:5.00", "FR-EUR")
        );
        let rows = rows(input.as_bytes(), Format::Csv, RecordType::Products).unwrap();
        assert_eq!(rows.len(), 4);
        assert!(rows[0].judged.is_ok());
        let reasons = |i: usize| rows[i].judged.clone().unwrap_err();
        assert_eq!((rows[1].line, reasons(1)[0].code.as_str()), (3, "row_unreadable"));
        assert_eq!(rows[2].line, 4);
        assert!(reasons(2).iter().any(|r| r.pointer == "/prices/0/amount"), "{:?}", reasons(2));
        assert_eq!(reasons(3)[0].pointer, "/prices");
        // The same bytes the service would refuse, with the same reason.
        let ndjson = b"{\"schema\":\"service/products/1\"}\nnot json\n\n";
        let rows = super::rows(ndjson, Format::Ndjson, RecordType::Products).unwrap();
        assert_eq!(rows.len(), 2, "blank lines are skipped");
        let context = ValidationContext::new(Vec::new(), Vec::new(), None);
        let service = validate(b"not json", RecordType::Products, &context).unwrap_err();
        assert_eq!(rows[1].judged.clone().unwrap_err()[0].code, service[0].code.as_str());
        assert_eq!(rows[1].line, 2);
    }

    #[test]
    fn batches_keep_within_the_count_and_body_limits() {
        let good = |n: usize| Row { line: 1, business_product_id: None, judged: Ok(vec![b'x'; n]) };
        let bad = Row { line: 1, business_product_id: None, judged: Err(vec![]) };
        let rows = vec![good(10), bad.clone(), good(10), good(10), good(10), bad];
        assert_eq!(plan(&rows, 2, Carrier::Body), vec![vec![0, 2], vec![3, 4]]);
        assert_eq!(plan(&rows, 0, Carrier::Body), vec![vec![0], vec![2], vec![3], vec![4]]);
        // 150 KB records: the body limit cuts before the count does.
        let big: Vec<Row> = (0..400).map(|_| good(150_000)).collect();
        let batches = plan(&big, 10_000, Carrier::Body);
        assert!(batches.len() > 1);
        assert!(
            batches.iter().all(|b| b.len() * (200_000 + 3) <= MAX_BODY),
            "{:?}",
            batches.iter().map(Vec::len).collect::<Vec<_>>()
        );
        assert_eq!(batches.iter().map(Vec::len).sum::<usize>(), 400);
        // A bulk file takes ten times the records of a body, and 256 MiB.
        let many: Vec<Row> = (0..25_000).map(|_| good(10)).collect();
        assert_eq!(plan(&many, usize::MAX, Carrier::Body).len(), 3);
        assert_eq!(plan(&many, usize::MAX, Carrier::BulkFile).len(), 1);
        let batches = plan(&big, usize::MAX, Carrier::BulkFile);
        assert!(batches.iter().all(|b| b.len() * (200_000 + 3) <= BULK_MAX_BYTES as usize));
        assert!(batches.iter().any(|b| b.len() * (200_000 + 3) > MAX_BODY), "past a body's limit");
    }
}
