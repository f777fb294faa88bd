//! `svc client`: an AI company's command line. Each command signs one
//! request with a key file, prints the answer's body, and checks what can be
//! checked offline (receipts, row signatures, record hashes and proofs)
//! against the service's key set, verified under pinned root anchors.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::{Value, json};
use svc_core::Reason;
use svc_core::ads::tokens::{CLICK_V1, ClickToken};
use svc_core::dsse::Envelope;
use svc_core::keyset::KeySet;
use svc_core::offline;

use super::CliError;
use super::output::{self, Output, Shape};
use svc_client::keyfile;
use svc_client::retrieval::RetrievalClient;
use svc_client::transport::Answer;

#[derive(Debug, Args)]
pub struct ClientArgs {
    /// Where the region listens (`http://` or `https://`).
    #[arg(long, env = "SVC_BASE_URL", default_value = "http://127.0.0.1:8080")]
    pub base_url: String,
    /// A CA certificate (PEM) to believe over `https://` beside the
    /// system's roots: a deployment's own (`svc up --tls` prints its path).
    #[arg(long, env = "SVC_CA")]
    pub ca: Option<PathBuf>,
    /// The public host requests are signed for (`@authority`).
    #[arg(long, default_value = "api.svc.localhost")]
    pub authority: String,
    /// The retrieval key file (`svc keygen`), Ed25519 or ES256.
    #[arg(long)]
    pub key: PathBuf,
    /// Sandbox only: the key's grant, needed until the sandbox has seen the key.
    #[arg(long, env = "SVC_SANDBOX_KEY")]
    pub grant: Option<String>,
    /// A saved key set (`svc client keys --out`); fetched from the region when absent.
    #[arg(long)]
    pub keys: Option<PathBuf>,
    /// Print each answer's exact JSON (also when stdout is not a terminal);
    /// at a terminal, without it, a summary: rows, ads or receipts as a table.
    #[arg(long, global = true)]
    pub json: bool,
    /// Pinned root anchors (`svc client keys --anchors-out`); without them the
    /// key set's own root is trusted on first use, and the output says so.
    #[arg(long)]
    pub anchors: Option<PathBuf>,
    #[command(subcommand)]
    pub command: ClientCommand,
}

#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// A business's publishing run: a CSV or NDJSON file of products, with
    /// its integration key (`--key`): judged locally, sealed in batches,
    /// resumed after an interruption, and reported row by row.
    #[command(after_help = "Example:\n  svc client --key integration.json publish examples/products.csv --dry-run")]
    Publish(super::publish::PublishArgs),
    /// A signed search; the receipt and every row are checked.
    #[command(
        after_help = "Example:\n  svc client --key ai.json search --country FR --q lamp --filter '[{\"on_sale\": true}]'"
    )]
    Search {
        #[arg(long, default_value = "products")]
        collection: String,
        #[arg(long, default_value = "*")]
        q: String,
        #[arg(long)]
        country: String,
        #[arg(long, default_value = "_text_match:desc")]
        sort: String,
        #[arg(long)]
        limit: Option<u64>,
        /// More filter clauses, as a JSON array (`[{"on_sale": true}]`).
        #[arg(long)]
        filter: Option<String>,
    },
    /// Fetches one record; the receipt, the record's hash, the sidecar and
    /// the batch proof are checked.
    #[command(
        after_help = "Example:\n  svc client --key ai.json fetch svc_mvdc4jcndwqhvikjmsgbngpkoq --save kept.json"
    )]
    Fetch {
        record_id: String,
        /// Also keeps the answer's exact bytes, for `verify --answer` later.
        #[arg(long)]
        save: Option<PathBuf>,
    },
    /// Fetches one record (or reads an answer `fetch --save` kept) and
    /// checks it all offline under the pinned anchors: what `fetch` checks,
    /// the business's seal signature (by its signed key statement), and the
    /// seal and the receipt in the log. A receipt is in the log once its
    /// minute is folded and the next hour sequenced: verify a kept answer.
    #[command(
        after_help = "Example:\n  svc client --key ai.json --keys keys.json --anchors anchors.json verify --answer kept.json"
    )]
    Verify {
        #[arg(required_unless_present = "answer")]
        record_id: Option<String>,
        #[arg(long, conflicts_with = "record_id")]
        answer: Option<PathBuf>,
    },
    /// An ad pool (retrieval 4.1). Checked offline: the receipt names every
    /// ad by its row, every row signature holds, every item shows only its
    /// sealed texts and images, and every render token was signed by the
    /// serving region for this key.
    #[command(
        after_help = "Example:\n  svc client --key ai.json pool --country FR --keyword lamp --session-ref c1 --save pool.json"
    )]
    Pool {
        #[arg(long)]
        country: String,
        #[arg(long)]
        subdivision: Option<String>,
        /// A keyword the ads' campaigns must name (repeat for more).
        #[arg(long = "keyword", required = true)]
        keywords: Vec<String>,
        /// `compact` or `card` (repeat for both).
        #[arg(long = "format", default_values = ["compact", "card"])]
        formats: Vec<String>,
        /// Up to three of `net_price`, `published_at`, `keyword_matches`, `random`.
        #[arg(long, default_value = "net_price:desc")]
        sort: String,
        #[arg(long)]
        size: Option<u64>,
        #[arg(long)]
        max_per_campaign: Option<u64>,
        /// The end user's conversation, as the company names it.
        #[arg(long)]
        session_ref: String,
        /// Keeps the answer, for `render --pool`.
        #[arg(long)]
        save: Option<PathBuf>,
    },
    /// Confirms a render (retrieval 4.2): an ad of a saved pool, or a
    /// sponsored row of a saved search. The click token is checked offline.
    #[command(
        after_help = "Example:\n  svc client --key ai.json render --pool pool.json --format card --session-ref c1 --save render.json"
    )]
    Render {
        /// A pool answer `pool --save` kept.
        #[arg(long, conflicts_with = "search", required_unless_present = "search")]
        pool: Option<PathBuf>,
        /// The ad to confirm (the pool's first when absent).
        #[arg(long, requires = "pool")]
        ad: Option<String>,
        /// A search answer kept as it came, and the sponsored row's record id.
        #[arg(long, requires = "record")]
        search: Option<PathBuf>,
        #[arg(long)]
        record: Option<String>,
        #[arg(long)]
        format: String,
        #[arg(long)]
        session_ref: String,
        /// Sent again with the same key, the first answer comes back.
        #[arg(long)]
        idempotency_key: Option<String>,
        /// Keeps the answer, for `click --render`.
        #[arg(long)]
        save: Option<PathBuf>,
    },
    /// Confirms a click with the click token of a saved render answer.
    #[command(after_help = "Example:\n  svc client --key ai.json click --render render.json --session-ref c1")]
    Click {
        #[arg(long)]
        render: PathBuf,
        #[arg(long)]
        session_ref: String,
        #[arg(long)]
        idempotency_key: Option<String>,
    },
    /// The group's receipts, oldest first.
    #[command(after_help = "Example:\n  svc client --key ai.json receipts --from 2026-11-01T00:00:00Z")]
    Receipts {
        #[arg(long)]
        from: Option<String>,
        #[arg(long)]
        to: Option<String>,
        #[arg(long)]
        cursor: Option<String>,
    },
    /// The company's billed requests per day.
    #[command(after_help = "Example:\n  svc client --key ai.json usage")]
    Usage {
        #[arg(long)]
        from: Option<String>,
        #[arg(long)]
        to: Option<String>,
    },
    /// The Terms in force, or one version.
    #[command(after_help = "Example:\n  svc client --key ai.json terms")]
    Terms {
        #[arg(long)]
        version: Option<u64>,
    },
    /// Fetches the key directory (AI companies' retrieval keys) and checks
    /// its statement offline under the pinned anchors.
    #[command(
        after_help = "Example:\n  svc client --key ai.json --keys keys.json --anchors anchors.json key-directory"
    )]
    KeyDirectory {
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Fetches the verification index and every document it pins, and
    /// checks each against its pinned hash (RFC 8785, here).
    #[command(after_help = "Example:\n  svc client --key ai.json verification-index")]
    VerificationIndex,
    /// Fetches the key set; saves it and its root anchors when asked.
    #[command(after_help = "Example:\n  svc client --key ai.json keys --out keys.json --anchors-out anchors.json")]
    Keys {
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long)]
        anchors_out: Option<PathBuf>,
    },
}

/// Runs a client command: the body goes to stdout, checks to stderr. Fails
/// (exit 1) on a refusal or a failed check.
pub fn run(args: ClientArgs) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("svc client: {e}");
            return 1;
        }
    };
    if let ClientCommand::Publish(publish) = &args.command {
        let run = async {
            let key = keyfile::read(&args.key)?;
            let trust = svc_client::trust::Trust::with_ca(args.ca.as_deref())?;
            super::publish::run(&args.base_url, &args.authority, (key, args.grant.clone()), &trust, publish).await
        };
        return match runtime.block_on(run) {
            Ok(status) => status,
            Err(e) => {
                eprintln!("svc client publish: {}", output::error_text(&e));
                1
            }
        };
    }
    match runtime.block_on(execute(args)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("svc client: {}", output::error_text(&e));
            1
        }
    }
}

/// Writes an answer's exact bytes where asked.
fn keep(path: Option<&PathBuf>, answer: &Answer) -> Result<(), CliError> {
    match path {
        Some(path) => std::fs::write(path, &answer.bytes).map_err(|source| CliError::Io { path: path.clone(), source }),
        None => Ok(()),
    }
}

fn read_json(path: &PathBuf) -> Result<Value, CliError> {
    let bytes = std::fs::read(path).map_err(|source| CliError::Io { path: path.clone(), source })?;
    serde_json::from_slice(&bytes).map_err(|source| CliError::Json { what: "a kept answer", source })
}

/// A render or click confirmation, under the given Idempotency-Key or a
/// fresh one; the answer is printed.
async fn confirm(
    output: Output,
    client: &RetrievalClient,
    path: &str,
    body: &Value,
    key: Option<&str>,
) -> Result<Answer, CliError> {
    let fresh = format!("svc-client-{}", hex::encode(svc_clock::random::<8>()));
    let key = key.unwrap_or(&fresh);
    let answer = client.call_with("POST", path, serde_json::to_vec(body)?, &[("idempotency-key", key)]).await?;
    print_body(output, Shape::Other, &answer)?;
    Ok(answer)
}

/// Prints an answer: its JSON, or at a terminal its summary (`output`); a
/// refusal at a terminal is its problem in words, on stderr.
fn print_body(output: Output, shape: Shape, answer: &Answer) -> Result<(), CliError> {
    let parsed = serde_json::from_slice::<Value>(&answer.bytes);
    match (output, &parsed) {
        (Output::Human, Ok(problem)) if answer.status >= 400 => {
            eprintln!("{}", output::problem(problem, answer.status))
        }
        (Output::Human, Ok(v)) => super::print_out(&output::human(shape, v)),
        (Output::Json, Ok(v)) => super::print_out(&serde_json::to_string_pretty(v)?),
        (_, Err(_)) => super::print_out(&String::from_utf8_lossy(&answer.bytes)),
    }
    if answer.status >= 400 {
        return Err(CliError::Answered { what: "the region", status: answer.status });
    }
    Ok(())
}

async fn execute(args: ClientArgs) -> Result<(), CliError> {
    let output = Output::choose(args.json);
    let key = keyfile::read(&args.key)?;
    let trust = svc_client::trust::Trust::with_ca(args.ca.as_deref())?;
    let client = RetrievalClient::new(&args.base_url, &args.authority, key, args.grant.clone())?.trusting(&trust)?;
    match &args.command {
        ClientCommand::Publish(_) => return Err(CliError::Usage("publish runs on its own".into())),
        ClientCommand::Search { collection, q, country, sort, limit, filter } => {
            let mut clauses = vec![json!({"country": country})];
            if let Some(more) = filter {
                let more: Vec<Value> =
                    serde_json::from_str(more).map_err(|source| CliError::Json { what: "--filter", source })?;
                clauses.extend(more);
            }
            let mut body = json!({"collection": collection, "q": q, "filter": {"all": clauses}, "sort_by": sort});
            if let Some(limit) = limit {
                body["limit"] = json!(limit);
            }
            let bytes = serde_json::to_vec(&body)?;
            let answer = client.call("POST", "/v1/search", bytes).await?;
            print_body(output, Shape::Search, &answer)?;
            let body = answer.json();
            let checked = checked(&args, &client, |keys| offline::check_search(&body, keys, &client.key_id())).await?;
            eprintln!(
                "checked offline: receipt format {} from region {} names all {} rows; every row signature holds",
                checked.receipt.format, checked.receipt.receipt.region, checked.rows
            );
        }
        ClientCommand::Fetch { record_id, save } => {
            let answer =
                client.call("GET", &format!("/v1/records/{}", svc_client::percent(record_id)), Vec::new()).await?;
            print_body(output, Shape::Fetch, &answer)?;
            keep(save.as_ref(), &answer)?;
            let checked =
                checked(&args, &client, |keys| offline::check_fetch(&answer.bytes, keys, &client.key_id())).await?;
            eprintln!(
                "checked offline: receipt format {} from region {}; record bytes match the receipt and the sidecar{}; \
                 `svc client verify` also checks the business's seal and the log",
                checked.receipt.format,
                checked.receipt.receipt.region,
                if checked.inclusion { "; batch inclusion proof holds" } else { "" }
            );
        }
        ClientCommand::Verify { record_id, answer } => {
            let answer = match (record_id, answer) {
                (_, Some(path)) => Answer {
                    status: 200,
                    headers: Default::default(),
                    bytes: std::fs::read(path).map_err(|source| CliError::Io { path: path.clone(), source })?,
                },
                (Some(id), None) => {
                    client.call("GET", &format!("/v1/records/{}", svc_client::percent(id)), Vec::new()).await?
                }
                (None, None) => return Err(CliError::Usage("give a record id or --answer".into())),
            };
            print_body(output, Shape::Fetch, &answer)?;
            let keys = key_set(&args, &client).await?;
            let lines = match verify_fetched(&client, &answer, &keys).await {
                Err(CliError::Offline(Reason::KeyUnknown)) if args.keys.is_some() => {
                    verify_fetched(&client, &answer, &refreshed(&args, &client).await?).await?
                }
                other => other?,
            };
            for line in lines {
                eprintln!("{line}");
            }
        }
        ClientCommand::Pool {
            country,
            subdivision,
            keywords,
            formats,
            sort,
            size,
            max_per_campaign,
            session_ref,
            save,
        } => {
            let mut body = json!({"country": country, "keywords": keywords, "formats": formats, "sort_by": sort,
                "session_ref": session_ref});
            for (name, value) in [("subdivision", json!(subdivision)), ("size", json!(size))] {
                if !value.is_null() {
                    body[name] = value;
                }
            }
            if let Some(most) = max_per_campaign {
                body["max_per_campaign"] = json!(most);
            }
            let answer = client.call("POST", "/v1/ads/pool", serde_json::to_vec(&body)?).await?;
            print_body(output, Shape::Pool, &answer)?;
            keep(save.as_ref(), &answer)?;
            let body = answer.json();
            let ads = checked(&args, &client, |keys| offline::check_pool(&body, keys, &client.key_id())).await?;
            eprintln!(
                "checked offline: the receipt names all {ads} ads; every row signature holds; every item shows \
                 its sealed texts and images; every render token is the region's, issued to this key"
            );
        }
        ClientCommand::Render { pool, ad, search, record, format, session_ref, idempotency_key, save } => {
            let mut body = json!({"format": format, "session_ref": session_ref});
            if let Some(path) = pool {
                let kept = read_json(path)?;
                let items = kept["ads"].as_array().cloned().unwrap_or_default();
                let item = match ad {
                    Some(id) => items.into_iter().find(|i| i["ad_id"] == id.as_str()),
                    None => items.into_iter().next(),
                };
                let item = item.ok_or(CliError::Missing("that ad in the pool"))?;
                body["render_token"] = item["render_token"].clone();
            } else if let (Some(path), Some(record)) = (search, record) {
                let kept = read_json(path)?;
                body["retrieval_id"] = kept["retrieval_id"].clone();
                body["receipt"] = kept["receipt"].clone();
                body["record_id"] = json!(record);
            }
            let answer = confirm(output, &client, "/v1/ads/render", &body, idempotency_key.as_deref()).await?;
            keep(save.as_ref(), &answer)?;
            let keys = key_set(&args, &client).await?;
            let token = Envelope::from_value(&answer.json()["click_token"]).map_err(CliError::Offline)?;
            let click: ClickToken =
                offline::check_token(&token, CLICK_V1, &keys, &client.key_id()).map_err(CliError::Offline)?;
            eprintln!(
                "checked offline: the click token for {} is region {}'s, issued to this key",
                click.item_id, click.region
            );
        }
        ClientCommand::Click { render, session_ref, idempotency_key } => {
            let kept = read_json(render)?;
            let body = json!({"click_token": kept["click_token"], "session_ref": session_ref});
            confirm(output, &client, "/v1/ads/click", &body, idempotency_key.as_deref()).await?;
        }
        ClientCommand::Receipts { from, to, cursor } => {
            let q = svc_client::query(&[("from", from.clone()), ("to", to.clone()), ("cursor", cursor.clone())]);
            print_body(output, Shape::Receipts, &client.call("GET", &format!("/v1/receipts{q}"), Vec::new()).await?)?;
        }
        ClientCommand::Usage { from, to } => {
            let q = svc_client::query(&[("from", from.clone()), ("to", to.clone())]);
            print_body(output, Shape::Usage, &client.call("GET", &format!("/v1/usage{q}"), Vec::new()).await?)?;
        }
        ClientCommand::Terms { version } => {
            let path = version.map_or_else(|| "/v1/terms".to_owned(), |v| format!("/v1/terms/{v}"));
            print_body(output, Shape::Other, &client.call("GET", &path, Vec::new()).await?)?;
        }
        ClientCommand::KeyDirectory { out } => {
            let answer = client.public_get(svc_node::key_set::directory::PATH).await?;
            print_body(output, Shape::Other, &answer)?;
            keep(out.as_ref(), &answer)?;
            let keys = key_set(&args, &client).await?;
            let companies = offline::key_directory(&answer.json(), &keys).map_err(CliError::Offline)?;
            let listed: usize = companies.iter().map(|c| c.keys.len()).sum();
            eprintln!(
                "checked offline: the key directory lists {} companies and {listed} keys, each id its key's \
                 thumbprint, signed by the statement key (P-256 and ML-DSA-65)",
                companies.len()
            );
        }
        ClientCommand::VerificationIndex => {
            let answer = client.public_get(svc_core::index::INDEX_PATH).await?;
            print_body(output, Shape::Other, &answer)?;
            let index = answer.json();
            let known =
                svc_core::index::PAYLOAD_TYPES.iter().map(|t| svc_core::dsse::payload_type(t)).collect::<Vec<_>>();
            let types = index["payload_types"].as_array().cloned().unwrap_or_default();
            let unknown = types.iter().filter(|t| !known.iter().any(|k| t["payload_type"] == k.as_str())).count();
            let specifications = &index["specifications"];
            let pinned = specifications["projections"]
                .as_array()
                .into_iter()
                .flatten()
                .chain([&specifications["ai_policy_key"]])
                .chain(index["vocabularies"].as_array().into_iter().flatten());
            let mut checked = 0;
            for entry in pinned {
                let (Some(url), Some(sha256)) = (entry["url"].as_str(), entry["sha256"].as_str()) else {
                    return Err(CliError::Missing("an index entry without its url or sha256"));
                };
                let document = client.public_get(url).await?;
                if document.status != 200 || !svc_core::index::pinned_by(&document.json(), sha256) {
                    return Err(CliError::NotPinned { url: url.to_owned(), sha256: sha256.to_owned() });
                }
                checked += 1;
            }
            eprintln!(
                "checked: {checked} pinned documents each hash to their entry; {} payload types, {unknown} unknown \
                 to this build",
                types.len()
            );
        }
        ClientCommand::Keys { out, anchors_out } => {
            let answer = client.key_set().await?;
            if answer.status != 200 {
                return Err(CliError::Answered { what: "the key set", status: answer.status });
            }
            let document = answer.json();
            let keys = verified(&args, &document)?;
            if let Some(out) = out {
                std::fs::write(out, &answer.bytes).map_err(|source| CliError::Io { path: out.clone(), source })?;
            }
            if let Some(path) = anchors_out {
                let anchors = keys.anchors().ok_or(CliError::Missing("the key set names no root"))?;
                let pinned = svc_client::anchors::document(&anchors);
                std::fs::write(path, serde_json::to_vec_pretty(&pinned)?)
                    .map_err(|source| CliError::Io { path: path.clone(), source })?;
            }
            super::print_out(&serde_json::to_string_pretty(&document["keys"])?);
        }
    }
    Ok(())
}

/// Runs an offline check against the key set; when the saved one names
/// no key that signed (a region rotated its receipt key since it was
/// saved), fetches the region's, verified under the pinned anchors, saves
/// it in its place and checks again.
async fn checked<T>(
    args: &ClientArgs,
    client: &RetrievalClient,
    check: impl Fn(&KeySet) -> Result<T, Reason>,
) -> Result<T, CliError> {
    match check(&key_set(args, client).await?) {
        Err(Reason::KeyUnknown) if args.keys.is_some() => check(&refreshed(args, client).await?),
        other => other,
    }
    .map_err(CliError::Offline)
}

/// The region's key set, verified as the saved one was, written over the
/// saved file.
async fn refreshed(args: &ClientArgs, client: &RetrievalClient) -> Result<KeySet, CliError> {
    let answer = client.key_set().await?;
    if answer.status != 200 {
        return Err(CliError::Answered { what: "the key set", status: answer.status });
    }
    let keys = verified(args, &answer.json())?;
    if let Some(path) = &args.keys {
        std::fs::write(path, &answer.bytes).map_err(|source| CliError::Io { path: path.clone(), source })?;
        eprintln!(
            "note: {} named no key that signed this answer; saved the region's key set, checked as before",
            path.display()
        );
    }
    Ok(keys)
}

/// The key set to check against: the saved one, or the region's.
async fn key_set(args: &ClientArgs, client: &RetrievalClient) -> Result<KeySet, CliError> {
    let document: Value = match &args.keys {
        Some(path) => {
            let bytes = std::fs::read(path).map_err(|source| CliError::Io { path: path.clone(), source })?;
            serde_json::from_slice(&bytes).map_err(|source| CliError::JsonFile { path: path.clone(), source })?
        }
        None => client.key_set().await?.json(),
    };
    verified(args, &document)
}

/// Every offline check of a fetched record, each as a line; the first that
/// fails ends it with its reason.
async fn verify_fetched(
    client: &RetrievalClient,
    answer: &Answer,
    keys: &svc_core::keyset::KeySet,
) -> Result<Vec<String>, CliError> {
    let checked = offline::check_fetch(&answer.bytes, keys, &client.key_id()).map_err(CliError::Offline)?;
    let mut lines = vec![format!(
        "receipt: format {} from region {}, names this record's bytes; sidecar holds{}",
        checked.receipt.format,
        checked.receipt.receipt.region,
        if checked.inclusion { "; batch inclusion proof holds" } else { "" }
    )];
    let body = answer.json();
    let uuid = body["business_uuid"].as_str().ok_or(CliError::Missing("the answer names no business"))?;
    let statement = client.public_get(&format!("/v1/certificates/{uuid}/keys")).await?;
    if statement.status != 200 {
        return Err(CliError::Answered { what: "the business's key statement", status: statement.status });
    }
    use svc_clock::Clock;
    let fetched_at = svc_clock::SystemClock.now();
    let business = offline::business_keys(&statement.json(), keys, fetched_at).map_err(CliError::Offline)?;
    let seal: svc_core::seal::ServedSeal =
        serde_json::from_value(body["seal"].clone()).map_err(|source| CliError::Json { what: "seal", source })?;
    let record = offline::fetched_record(&answer.bytes).map_err(CliError::Offline)?;
    let signer = offline::check_seal_signature(&seal, &business, uuid, &record).map_err(CliError::Offline)?;
    lines.push(match signer {
        offline::SealSigner::Integration => {
            "seal: signed by the business's integration key, as its signed key statement lists it".into()
        }
        offline::SealSigner::Passkey(party) => format!(
            "seal: signed by a person's passkey of the business, as its signed key statement lists it, \
             for the portal {} (relying party {})",
            party.origin, party.id
        ),
        offline::SealSigner::Plain { key_id, sealed_at } => {
            let custody = client.public_get(&format!("/v1/certificates/{uuid}/key-custody")).await?;
            if custody.status != 200 {
                return Err(CliError::Answered { what: "the business's key custody", status: custody.status });
            }
            let statements = offline::key_custody(&custody.json(), keys, uuid).map_err(CliError::Offline)?;
            let held = match offline::custody_at(&statements, &key_id, sealed_at) {
                Some(svc_core::custody::Custody::Hosted) => "the service holds it for the business (hosted signing)",
                Some(svc_core::custody::Custody::OwnKey) => "the business holds it",
                None => "no custody statement covers it",
            };
            format!("seal: signed by the business's sealing key, as its signed key statement lists it; {held}, as the signed custody statement in force then says")
        }
    });
    let origin = client.log_origin();
    let leaf = svc_core::tlog::seal_leaf(seal.envelope());
    let proof = client.public_get(&format!("/v1/log/proof?leaf_hash={}", svc_core::tlog::leaf_name(&leaf))).await?;
    lines.push(match proof.status {
        200 => {
            let checkpoint =
                offline::check_leaf_proof(&leaf, &proof.json(), keys, &origin).map_err(CliError::Offline)?;
            format!("log: the seal is in the checkpoint of tree size {}", checkpoint.size)
        }
        404 => "log: the seal is not in the log yet (leaves are sequenced hourly)".into(),
        status => return Err(CliError::Answered { what: "the log proof", status }),
    });
    let receipt = svc_core::canonical::to_signed_bytes(&body["receipt"])?;
    let proof = client.public_get(&format!("/v1/log/proof?receipt={}", svc_core::tlog::leaf_name(&receipt))).await?;
    lines.push(match proof.status {
        200 => match offline::check_receipt_proof(&receipt, &proof.json(), keys, &origin).map_err(CliError::Offline)? {
            Some(checkpoint) => {
                format!("log: the receipt is in its minute, in the checkpoint of size {}", checkpoint.size)
            }
            None => "log: the receipt is in its folded minute; the minute waits for the next sequencing".into(),
        },
        404 => "log: the receipt's minute is not folded yet (about 10 s after the minute ends)".into(),
        status => return Err(CliError::Answered { what: "the receipt proof", status }),
    });
    Ok(lines)
}

/// Verifies a key set under the pinned anchors, or under its own root (trust
/// on first use) when none are pinned.
fn verified(args: &ClientArgs, document: &Value) -> Result<KeySet, CliError> {
    let anchors = match &args.anchors {
        Some(path) => svc_client::anchors::read(path)?,
        None => {
            let unverified = svc_core::keyset::KeySet {
                issued_at: svc_core::time::UnixMs(0),
                keys: document["keys"]
                    .as_array()
                    .ok_or(CliError::Missing("the key set has no keys"))?
                    .iter()
                    .filter_map(|k| svc_core::keyset::KeyEntry::from_value(k).ok())
                    .collect(),
            };
            eprintln!("note: no --anchors pinned; trusting the key set's own root (first use)");
            unverified.anchors().ok_or(CliError::Missing("the key set names no root"))?
        }
    };
    svc_core::keyset::verify(document, &anchors).map_err(CliError::KeySet)
}
