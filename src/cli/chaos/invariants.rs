//! The invariants a run is judged by, checked from outside: through the
//! public and admin APIs and what the clients recorded. Each answers
//! whether it held and the evidence.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};
use svc_core::keyset::KeySet;

use super::deploy::Deployment;
use super::load::Seen;
use super::push::{Action, Pushed};
use super::setup::AiKey;
use super::watch::Observed;
use svc_client::admin::Admin;
use svc_client::retrieval::RetrievalClient;
use svc_client::transport::Transport;

/// One invariant's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    pub name: &'static str,
    pub held: bool,
    pub evidence: Value,
}

async fn get(deployment: &Deployment, base: &str, path: &str) -> Option<(u16, Value)> {
    let transport = Transport::trusting(base, &deployment.trust).ok()?;
    let request =
        axum::http::Request::get(path).header("host", &deployment.authority).body(axum::body::Body::empty()).ok()?;
    let answer = tokio::time::timeout(Duration::from_secs(10), transport.send(request)).await.ok()?.ok()?;
    Some((answer.status, answer.json()))
}

/// No campaign spends past its budget: the renders clients saw accepted,
/// at a render's cost each, and what home's ledger counts spent and still
/// leased, are each at most the budget. A run whose load rendered nothing
/// shows nothing, and does not hold.
pub async fn ads_within_budget(admin: &Admin, campaign: &super::ads::Campaign, seen: &[super::ads::AdSeen]) -> Checked {
    let accepted = seen.iter().filter(|s| s.accepted()).count() as u64;
    let ledger = admin.call("GET", &format!("/admin/campaigns/{}", campaign.campaign_id), None).await;
    let money = |name: &str| {
        ledger.as_ref().ok().and_then(|c| c[name].as_str()).and_then(svc_core::ads::Micros::parse).map(|m| m.0)
    };
    let counted = money("spent").zip(money("leased")).map(|(spent, leased)| spent + leased);
    let held = accepted > 0 && accepted <= campaign.renders() && counted.is_some_and(|c| c <= campaign.budget.0);
    let evidence = json!({
        "budget_renders": campaign.renders(),
        "accepted_renders": accepted,
        "home_spent": ledger.as_ref().ok().map(|c| &c["spent"]),
        "home_leased": ledger.as_ref().ok().map(|c| &c["leased"]),
        "error": ledger.as_ref().err().map(ToString::to_string),
    });
    Checked { name: "no campaign spends past its budget", held, evidence }
}

/// Every region ready again after the faults healed; how long it took.
pub async fn converged(deployment: &Deployment, healed: Instant, within: Duration) -> Checked {
    let mut times = serde_json::Map::new();
    let mut held = true;
    for node in deployment.serving() {
        match super::deploy::wait_caught_up(node, within).await {
            Ok(()) => {
                times.insert(node.name.clone(), json!(healed.elapsed().as_millis() as u64));
            }
            Err(e) => {
                held = false;
                times.insert(node.name.clone(), json!(e.to_string()));
            }
        }
    }
    Checked { name: "replication converges after heal", held, evidence: json!({"indexed_ms_after_heal": times}) }
}

/// What each company was billed equals the distinct `(keyid, nonce)`
/// pairs its clients got a billable answer for (a search with rows). A
/// request whose answer never came may or may not have been served; it
/// widens the bound, never narrows it.
pub async fn bills_match(deployment: &Deployment, keys: &[AiKey], seen: &[Seen], within: Duration) -> Checked {
    let home = deployment.home();
    let mut evidence = Vec::new();
    let mut held = true;
    for key in keys {
        let key_id = key.key.verifying_key().thumbprint();
        let mine: Vec<&Seen> = seen.iter().filter(|s| s.key_id == key_id).collect();
        let answered: HashSet<&str> =
            mine.iter().filter(|s| s.status == 200 && s.rows > 0).map(|s| s.nonce.as_str()).collect();
        let unanswered = mine.iter().filter(|s| s.status == 0).count() as u64;
        let expected = answered.len() as u64;
        // Usage reaches home from each region's outbox: wait for it to settle.
        let started = Instant::now();
        let mut billed = None;
        while started.elapsed() < within {
            billed = usage(&home.public_url, key, &deployment.authority).await;
            if billed.is_some_and(|b| b >= expected) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let fine = billed.is_some_and(|b| b >= expected && b <= expected + unanswered);
        held &= fine;
        evidence
            .push(json!({"key_id": key_id, "answered_billable": expected, "unanswered": unanswered, "billed": billed}));
    }
    Checked { name: "bills equal the distinct billable (keyid, nonce) pairs answered", held, evidence: json!(evidence) }
}

/// The company's billed total from `/v1/usage`, asked with its own key.
async fn usage(home: &str, key: &AiKey, authority: &str) -> Option<u64> {
    let answer = key.client(home, authority).ok()?.call("GET", "/v1/usage", Vec::new()).await.ok()?;
    answer.json()["totals"]["billed"].as_u64()
}

/// The key set home serves, verified under its own root (the run made the
/// deployment, so it trusts what it started).
async fn key_set(deployment: &Deployment, home: &str) -> Option<KeySet> {
    let (_, document) = get(deployment, home, "/.well-known/keys").await?;
    let unverified = KeySet {
        issued_at: svc_core::time::UnixMs(0),
        keys: document["keys"]
            .as_array()?
            .iter()
            .filter_map(|k| svc_core::keyset::KeyEntry::from_value(k).ok())
            .collect(),
    };
    svc_core::keyset::verify(&document, &unverified.anchors()?).ok()
}

/// Every receipt a client received is provable in the transparency log:
/// in its folded minute at the region that served it, and that minute in a
/// checkpoint home signed. Waits for the last minute to fold, then asks
/// home to sequence.
pub async fn receipts_provable(deployment: &Deployment, admin: &Admin, seen: &[Seen], within: Duration) -> Checked {
    let home = &deployment.home().public_url;
    let receipts: Vec<(&str, Vec<u8>)> = seen
        .iter()
        .filter_map(|s| Some((s.region.as_str(), svc_core::canonical::to_signed_bytes(s.receipt.as_ref()?).ok()?)))
        .collect();
    let Some(keys) = key_set(deployment, home).await else {
        return Checked {
            name: "every receipt received is provable in the log",
            held: false,
            evidence: json!("no key set"),
        };
    };
    let urls: HashMap<&str, &str> =
        deployment.serving().into_iter().map(|n| (n.name.as_str(), n.public_url.as_str())).collect();
    let origin = format!("{}/log", deployment.authority);
    let started = Instant::now();
    let mut unproven: Vec<String> = Vec::new();
    let mut last_status = HashMap::new();
    while started.elapsed() < within {
        let _ = admin.call("POST", "/admin/log/sequence", Some(json!({}))).await;
        unproven.clear();
        for (region, receipt) in &receipts {
            let name = svc_core::tlog::leaf_name(receipt);
            let base = urls.get(region).copied().unwrap_or(home);
            let proven = match get(deployment, base, &format!("/v1/log/proof?receipt={name}")).await {
                Some((200, proof)) => {
                    matches!(svc_core::offline::check_receipt_proof(receipt, &proof, &keys, &origin), Ok(Some(_)))
                }
                Some((status, _)) => {
                    last_status.insert(name.clone(), status);
                    false
                }
                None => false,
            };
            if !proven {
                unproven.push(name);
            }
        }
        if unproven.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    let held = unproven.is_empty();
    let sample: Vec<&String> = unproven.iter().take(5).collect();
    Checked {
        name: "every receipt received is provable in the log",
        held,
        evidence: json!({"receipts": receipts.len(), "unproven": unproven.len(), "first_unproven": sample,
                         "waited_ms": started.elapsed().as_millis() as u64}),
    }
}

/// A served request sent again with its nonce to another region is
/// refused there (`401 nonce_reused`), before or after a failover. A replay
/// that got no answer proves nothing either way and is only counted. Nor
/// does one whose serving region a fault struck within a second of serving
/// it: its claim may have died with it before going home, which is the
/// design's limit (chaos/README.md, Findings); those are counted apart.
pub fn replays_refused(seen: &[Seen], faults: &[super::Applied]) -> Checked {
    let mut by_status: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    let mut served = Vec::new();
    let mut before_a_fault = 0;
    for s in seen {
        let Some(status) = s.replay_status else { continue };
        *by_status.entry(status.to_string()).or_default() += 1;
        if status == 0 || status == 401 {
            continue;
        }
        let struck = faults.iter().any(|f| f.target == s.region && (s.at_ms..=s.at_ms + 1_000).contains(&f.started_ms));
        if struck {
            before_a_fault += 1;
        } else {
            served.push(json!({"nonce": s.nonce, "served_at": s.region, "replayed_at": s.replayed_at, "status": status, "at_ms": s.at_ms}));
        }
    }
    let first: Vec<&Value> = served.iter().take(5).collect();
    Checked {
        name: "a nonce replayed at another region is refused",
        held: served.is_empty(),
        evidence: json!({"replays_by_status": by_status, "not_refused": served.len(), "first_not_refused": first,
            "served_where_a_fault_struck_the_serving_region_within_1s": before_a_fault}),
    }
}

/// A record fetched by `client`: the status (`0` for no answer, or no
/// client), and the `record` member's exact bytes when served.
async fn fetch(client: Option<&RetrievalClient>, record_id: &str) -> (u16, Option<Vec<u8>>) {
    #[derive(serde::Deserialize)]
    struct Fetched<'a> {
        #[serde(borrow)]
        record: &'a serde_json::value::RawValue,
    }
    let Some(client) = client else { return (0, None) };
    let path = format!("/v1/records/{record_id}");
    // Checking a bulk import fetches thousands of records: past the key's
    // rate a client waits as `Retry-After` says, and asks again.
    for _ in 0..20 {
        match tokio::time::timeout(Duration::from_secs(10), client.call("GET", &path, Vec::new())).await {
            Ok(Ok(answer)) if answer.status == 429 => {
                let wait = answer.headers.get("retry-after").and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
                tokio::time::sleep(Duration::from_secs(wait.unwrap_or(1).clamp(1, 5))).await;
            }
            Ok(Ok(answer)) => {
                let record =
                    serde_json::from_slice::<Fetched>(&answer.bytes).ok().map(|f| f.record.get().as_bytes().to_vec());
                return (answer.status, record);
            }
            _ => return (0, None),
        }
    }
    (429, None)
}

/// What records should be once healed, by what the business was told.
struct Fates<'a> {
    /// Served with exactly these bytes.
    kept: Vec<(&'a Pushed, Vec<u8>)>,
    /// Absent.
    withdrawn: Vec<&'a Pushed>,
    /// Withdrawals that got no answer: either is right, so not judged.
    unjudged: usize,
}

fn fates(pushed: &[Pushed]) -> Fates<'_> {
    let attempted: HashSet<&str> =
        pushed.iter().filter(|p| p.action == Action::Withdraw).map(|p| p.record_id.as_str()).collect();
    let withdrawn: Vec<&Pushed> = pushed.iter().filter(|p| p.action == Action::Withdraw && p.acknowledged()).collect();
    let gone: HashSet<&str> = withdrawn.iter().map(|p| p.record_id.as_str()).collect();
    let kept: Vec<(&Pushed, Vec<u8>)> = pushed
        .iter()
        .filter(|p| p.action == Action::Publish && p.acknowledged() && !attempted.contains(p.record_id.as_str()))
        .map(|p| (p, super::setup::product_of(&p.business, p.sku)))
        .collect();
    let unjudged = attempted.len() - gone.len();
    Fates { kept, withdrawn, unjudged }
}

/// Once healed, every acknowledged publish is served at every region with
/// the bytes the business sealed, and every acknowledged withdrawal is
/// absent (`404`) at every region. Asked with `probe`'s key, until both
/// hold or `within` passes. Answers the two invariants.
pub async fn pushes_hold(deployment: &Deployment, probe: &AiKey, pushed: &[Pushed], within: Duration) -> [Checked; 2] {
    let Fates { kept, withdrawn, unjudged } = fates(pushed);
    let started = Instant::now();
    let (mut lost, mut served) = (Vec::new(), Vec::new());
    loop {
        lost.clear();
        served.clear();
        // Each region is asked at once; a region's own fetches go one by one.
        let checks = deployment.serving().into_iter().map(|node| {
            let (kept, withdrawn) = (&kept, &withdrawn);
            async move {
                let client = probe.client(&node.public_url, &deployment.authority).ok();
                let (mut lost, mut served) = (Vec::new(), Vec::new());
                for (p, bytes) in kept {
                    let (status, record) = fetch(client.as_ref(), &p.record_id).await;
                    if status != 200 || record.as_deref() != Some(bytes.as_slice()) {
                        lost.push(json!({"region": node.name, "record_id": p.record_id, "pushed_at_ms": p.at_ms,
                                         "status": status, "bytes_differ": status == 200}));
                    }
                }
                for p in withdrawn {
                    let (status, _) = fetch(client.as_ref(), &p.record_id).await;
                    if status != 404 {
                        served.push(json!({"region": node.name, "record_id": p.record_id,
                                           "withdrawn_at_ms": p.at_ms, "status": status}));
                    }
                }
                (lost, served)
            }
        });
        for (l, s) in futures::future::join_all(checks).await {
            lost.extend(l);
            served.extend(s);
        }
        if (lost.is_empty() && served.is_empty()) || started.elapsed() >= within {
            break;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let waited_ms = started.elapsed().as_millis() as u64;
    let regions = deployment.serving().len();
    [
        Checked {
            name: "no acknowledged push is lost",
            held: lost.is_empty(),
            evidence: json!({"acknowledged": kept.len(), "regions": regions, "missing": lost.len(),
                             "first_missing": lost.iter().take(5).collect::<Vec<_>>(), "waited_ms": waited_ms}),
        },
        Checked {
            name: "no region serves a withdrawn record",
            held: served.is_empty(),
            evidence: json!({"withdrawn": withdrawn.len(), "unanswered_withdrawals": unjudged, "regions": regions,
                             "served": served.len(), "first_served": served.iter().take(5).collect::<Vec<_>>()}),
        },
    ]
}

/// Every checkpoint a client saw opens under the log's key; two of one
/// size have one root; and home proves each size consistent with the next
/// larger one seen (consistency is transitive, so every pair is covered).
pub async fn checkpoints_consistent(deployment: &Deployment, observed: &[Observed]) -> Checked {
    let name = "checkpoints are consistent";
    let home = &deployment.home().public_url;
    let Some(keys) = key_set(deployment, home).await else {
        return Checked { name, held: false, evidence: json!("no key set") };
    };
    let origin = format!("{}/log", deployment.authority);
    let mut problems = Vec::new();
    let mut by_size: std::collections::BTreeMap<u64, svc_core::tlog::Checkpoint> = std::collections::BTreeMap::new();
    let notes: HashSet<&str> = observed.iter().filter_map(|o| o.checkpoint.as_deref()).collect();
    for note in &notes {
        match svc_core::offline::checkpoint_of(note, &keys, &origin) {
            Ok(checkpoint) => match by_size.get(&checkpoint.size) {
                Some(seen) if seen.root != checkpoint.root => {
                    problems.push(json!({"size": checkpoint.size, "problem": "two roots"}));
                }
                _ => {
                    by_size.insert(checkpoint.size, checkpoint);
                }
            },
            Err(reason) => problems.push(json!({"note": note, "problem": format!("{reason:?}")})),
        }
    }
    let checkpoints: Vec<&svc_core::tlog::Checkpoint> = by_size.values().filter(|c| c.size > 0).collect();
    for pair in checkpoints.windows(2) {
        let (older, newer) = (pair[0], pair[1]);
        let proven = match get(deployment, home, &format!("/v1/log/proof?from={}&to={}", older.size, newer.size)).await
        {
            Some((200, answer)) => {
                svc_core::offline::check_consistency_proof(older, newer, &answer).map_err(|r| format!("{r:?}"))
            }
            Some((status, _)) => Err(format!("home answered {status}")),
            None => Err("no answer".into()),
        };
        if let Err(problem) = proven {
            problems.push(json!({"from": older.size, "to": newer.size, "problem": problem}));
        }
    }
    Checked {
        name,
        held: problems.is_empty(),
        evidence: json!({"checkpoints": notes.len(), "sizes": by_size.keys().collect::<Vec<_>>(),
                         "problems": problems.iter().take(5).collect::<Vec<_>>()}),
    }
}

/// After an operator's or business's act that ends serving (a block of
/// `key`'s group, a withdrawn certificate), and once it was acknowledged:
/// every region answers `key`'s fetches of the business's records `404`
/// and its searches with no row of the business, once converged; checked
/// again until `within`. `act` is named `label` in the evidence.
pub async fn business_absent(
    (name, label): (&'static str, &str),
    deployment: &Deployment,
    key: &AiKey,
    (act, business_uuid): (&serde_json::Value, &str),
    sample: &[String],
    within: Duration,
) -> Checked {
    if !act["error"].is_null() {
        return Checked { name, held: false, evidence: json!({label: act, "problem": "refused"}) };
    }
    let (held, evidence) = absent_everywhere(deployment, key, business_uuid, sample, within).await;
    Checked { name, held, evidence: json!({label: act, "check": evidence}) }
}

/// Whether every region answers `key`'s fetches of `sample` `404` and its
/// searches with no row of `business_uuid`, asked again each second until
/// it holds or `within` passes; with the evidence.
async fn absent_everywhere(
    deployment: &Deployment,
    key: &AiKey,
    business_uuid: &str,
    sample: &[String],
    within: Duration,
) -> (bool, serde_json::Value) {
    let started = Instant::now();
    let mut served = Vec::new();
    loop {
        served.clear();
        for node in deployment.serving() {
            let client = key.client(&node.public_url, &deployment.authority).ok();
            for record_id in sample {
                let (status, _) = fetch(client.as_ref(), record_id).await;
                if status != 404 {
                    served.push(json!({"region": node.name, "record_id": record_id, "status": status}));
                }
            }
            let (method, path, body) = super::load::request(&super::load::Ask::Search);
            let answer = match &client {
                Some(client) => client.call(method, &path, body).await.ok(),
                None => None,
            };
            let of_business = |rows: &serde_json::Value| {
                rows.as_array().map_or(0, |rows| rows.iter().filter(|r| r["business_uuid"] == business_uuid).count())
            };
            let rows = answer.as_ref().map(|a| (a.status, of_business(&a.json()["rows"])));
            if rows != Some((200, 0)) {
                served.push(json!({"region": node.name, "search": rows}));
            }
        }
        if served.is_empty() || started.elapsed() >= within {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let evidence = json!({"records_checked": sample.len(), "regions": deployment.serving().len(), "served": served.len(),
                          "first_served": served.iter().take(5).collect::<Vec<_>>(),
                          "waited_ms": started.elapsed().as_millis() as u64});
    (served.is_empty(), evidence)
}
