//! Chaos runs (`svc chaos run FILE`): a scenario's deployment started as
//! real `svc node` processes, its load run while its faults strike on
//! schedule, then every invariant checked from outside, and a report.

pub mod ads;
pub mod deploy;
pub mod disk;
pub mod invariants;
pub mod load;
pub mod network;
pub mod page;
pub mod push;
pub mod scenario;
pub mod setup;
pub mod target;
pub mod watch;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use self::deploy::{DeployError, Deployment};
use self::invariants::Checked;
use self::load::{Seen, Target};
use self::scenario::{FaultKind, Scenario, ScenarioError, Verdict};
use svc_client::ClientError;
use svc_client::admin::Admin;
use svc_client::transport::Transport;

/// Why a run could not be made (as opposed to an invariant that failed).
#[derive(Debug, thiserror::Error)]
pub enum ChaosError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error(transparent)]
    Deploy(#[from] DeployError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("the corpus never reached {region} (last answer: {last})")]
    NotReplicated { region: String, last: String },
    #[error("the products were not published: {0}")]
    NotPublished(String),
    #[error("the scenario does not fit the target deployment: {0}")]
    Unfit(#[from] target::Unfit),
    #[error(transparent)]
    Target(#[from] target::TargetError),
}

/// A fault as it was applied.
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    pub kind: FaultKind,
    pub target: String,
    /// The step of a crash, the skew of a clock, the peer of a partition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub started_ms: u64,
    pub healed_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a run found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub scenario: String,
    pub seed: u64,
    pub expect: Verdict,
    pub verdict: Verdict,
    pub faults: Vec<Applied>,
    /// What the nodes talked over: `namespaces` or `loopback`, and why
    /// loopback when namespaces were asked for.
    pub network: Value,
    pub load: Value,
    pub invariants: Vec<Checked>,
}

impl Report {
    /// Whether the run ended as the scenario expects.
    pub fn as_expected(&self) -> bool {
        self.verdict == self.expect
    }
}

/// Products published before the load starts: the first business's, and
/// each other business's.
const PRODUCTS: usize = 50;
const OTHER_PRODUCTS: usize = 10;

/// Runs `scenario` with the `svc` at `binary`, keeping the deployment's
/// configurations, logs and the report under `out`. The nodes' data
/// directories are kept too when the verdict is not the expected one, or
/// when `keep_data` says so.
pub async fn run(scenario: &Scenario, binary: &Path, out: &Path, keep_data: bool) -> Result<Report, ChaosError> {
    let deployment = Deployment::start(binary, &out.join("deployment"), &scenario.plan()).await?;
    run_on(deployment, scenario, out, keep_data).await
}

/// Runs `scenario` against an operator's own deployment (`target`): the
/// same load, faults (by the file's commands) and invariants; nothing of
/// it is started or deleted.
pub async fn run_against(scenario: &Scenario, target: &target::TargetFile, out: &Path) -> Result<Report, ChaosError> {
    scenario.fits(target)?;
    let deployment = Deployment::attach(target, &out.join("deployment")).await?;
    run_on(deployment, scenario, out, true).await
}

async fn run_on(
    mut deployment: Deployment,
    scenario: &Scenario,
    out: &Path,
    keep_data: bool,
) -> Result<Report, ChaosError> {
    let authority = deployment.authority.clone();
    let authority = authority.as_str();
    let home = deployment.home();
    let admin = Admin::new(&home.admin_url, deployment.admin_token.clone())?.trusting(&deployment.trust)?;
    let public = Transport::trusting(&home.public_url, &deployment.trust)?;

    // A business and its products, then the AI companies.
    let key = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[31; 32])
        .map_err(|_| ClientError::NoKeyDrawn(svc_core::keys::Alg::Ed25519))?;
    let passkey = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Es256, &[32; 32])
        .map_err(|_| ClientError::NoKeyDrawn(svc_core::keys::Alg::Es256))?;
    let business = setup::onboard(&admin, &key, &passkey).await?;
    setup::introduce(&public, &key, &business, authority).await?;
    // Its ads' campaign, written before the products, so a region that
    // serves the products holds the campaign too.
    let ads_rate = *scenario.load.ads_per_second.get_ref();
    let campaign = match ads_rate {
        0 => None,
        _ => Some(ads::campaign(&admin, &business, &passkey, scenario.ad_budget_renders()).await?),
    };
    // The other businesses push too, each with its own keys and brand.
    let mut others = Vec::new();
    for i in 1..*scenario.load.businesses.get_ref() as usize {
        let draw = |alg, seed: u8| {
            svc_core::keys::SigningKey::from_seed(alg, &[seed; 32]).map_err(|_| ClientError::NoKeyDrawn(alg))
        };
        let key = draw(svc_core::keys::Alg::Ed25519, 40 + i as u8)?;
        let passkey = draw(svc_core::keys::Alg::Es256, 50 + i as u8)?;
        let onboarded = setup::onboard_as(&admin, setup::BUSINESSES[i], &key, &passkey).await?;
        setup::introduce(&public, &key, &onboarded, authority).await?;
        let records: Vec<Vec<u8>> = (0..OTHER_PRODUCTS).map(|sku| setup::product_of(&onboarded.brand, sku)).collect();
        let published = setup::publish(&public, &key, &onboarded.context, &records, 1, authority).await?;
        if published.status != 200 {
            return Err(ChaosError::NotPublished(String::from_utf8_lossy(&published.bytes).into_owned()));
        }
        others.push((key, onboarded));
    }
    let records: Vec<Vec<u8>> = (0..PRODUCTS).map(setup::product).collect();
    let published = setup::publish(&public, &key, &business.context, &records, 1, authority).await?;
    if published.status != 200 {
        return Err(ChaosError::NotPublished(format!(
            "{} {}",
            published.status,
            String::from_utf8_lossy(&published.bytes)
        )));
    }
    let mut keys = Vec::new();
    for i in 0..*scenario.load.ai_keys.get_ref() {
        keys.push(setup::ai_company(&admin, &format!("Chaos AI {i}"), 100 + i as u8, None).await?);
    }
    let targets: Vec<Target> = deployment
        .serving()
        .into_iter()
        .map(|n| {
            Ok(Target { region: n.name.clone(), transport: Transport::trusting(&n.public_url, &deployment.trust)? })
        })
        .collect::<Result<_, ClientError>>()?;
    // A key of its own waits for the corpus at each region, so the load's
    // keys are billed for the load alone.
    let probe = setup::ai_company(&admin, "Chaos probe", 99, None).await?;
    for target in &targets {
        replicated(target, &probe, authority).await?;
    }

    // The load (AI companies, the business, a checkpoint watcher), and the
    // faults on their schedule beside it.
    let started = Instant::now();
    let duration = Duration::from_secs(scenario.duration());
    let rates = load::Rates {
        searches: *scenario.load.searches_per_second.get_ref(),
        fetches: *scenario.load.fetches_per_second.get_ref(),
        replays: scenario.load.replays_per_second,
    };
    let fetchable: Vec<String> =
        (0..PRODUCTS).map(|sku| svc_core::ids::product_id(&business.business_uuid, &format!("SKU-{sku}"))).collect();
    let load = load::run(&keys, &targets, rates, &fetchable, duration, authority);
    let ad_load = ads::run(&keys, &targets, ads_rate, duration, authority);
    let pusher = push::Business { home: &public, key: &key, onboarded: &business, authority };
    // Batch 1 published the products; the load's batches follow.
    let seqs = std::sync::atomic::AtomicU64::new(2);
    let rate = *scenario.load.pushes_per_second.get_ref();
    let other_pushers: Vec<push::Business> =
        others.iter().map(|(key, onboarded)| push::Business { home: &public, key, onboarded, authority }).collect();
    let other_seqs: Vec<std::sync::atomic::AtomicU64> =
        other_pushers.iter().map(|_| std::sync::atomic::AtomicU64::new(2)).collect();
    let pushes = async {
        let first = push::run(&pusher, rate, duration, PRODUCTS, &seqs);
        let rest = futures::future::join_all(
            other_pushers
                .iter()
                .zip(&other_seqs)
                .map(|(pusher, seqs)| push::run(pusher, rate, duration, OTHER_PRODUCTS, seqs)),
        );
        let (mut all, rest) = tokio::join!(first, rest);
        all.extend(rest.into_iter().flatten());
        all
    };
    let bulk: Vec<(u64, u32)> = scenario.load.bulk.iter().map(|b| (*b.at_s.get_ref(), *b.records.get_ref())).collect();
    let imports = push::imports(&pusher, &bulk, &seqs, duration + Duration::from_secs(120));
    let watcher = watch::run(&targets, duration);
    let block_at = scenario.load.block_at_s.as_ref().map(|at| Duration::from_secs(*at.get_ref()));
    let blocking = block(&admin, &business.business_uuid, &keys[0], block_at);
    let withdraw_at = scenario.load.withdraw_certificate_at_s.as_ref().map(|at| Duration::from_secs(*at.get_ref()));
    let urls: Vec<(String, String)> =
        deployment.serving().iter().map(|n| (n.name.clone(), n.public_url.clone())).collect();
    // The last business loses its certificate (the first when alone), so
    // the first's block is still judged on records that are otherwise served.
    let losing = others.last().map_or(&business, |(_, onboarded)| onboarded);
    let losing_products: Vec<String> = (0..if others.is_empty() { PRODUCTS } else { OTHER_PRODUCTS })
        .map(|sku| svc_core::ids::product_id(&losing.business_uuid, &format!("SKU-{sku}")))
        .collect();
    let withdrawing = withdraw_certificate(&admin, losing, (&urls, &probe, authority), &losing_products, withdraw_at);
    let faults = strike(&mut deployment, scenario, started);
    let ((seen, ad_seen), mut pushed, (imported, bulk), observed, applied, blocked, withdrawn) =
        tokio::join!(async { tokio::join!(load, ad_load) }, pushes, imports, watcher, faults, blocking, withdrawing);
    pushed.extend(imported);
    let healed = Instant::now();

    let mut invariants = vec![
        invariants::converged(&deployment, healed, Duration::from_secs(120)).await,
        invariants::bills_match(&deployment, &keys, &seen, Duration::from_secs(60)).await,
        invariants::receipts_provable(&deployment, &admin, &seen, Duration::from_secs(150)).await,
        invariants::replays_refused(&seen, &applied),
        invariants::checkpoints_consistent(&deployment, &observed).await,
    ];
    if let Some(campaign) = &campaign {
        invariants.push(invariants::ads_within_budget(&admin, campaign, &ad_seen).await);
    }
    // A business whose certificate was withdrawn is served nowhere: its
    // pushes are judged by that invariant instead.
    let unserved = withdrawn.as_ref().filter(|w| w["error"].is_null()).map(|_| losing.brand.as_str());
    let judged: Vec<push::Pushed> = pushed.iter().filter(|p| Some(p.business.as_str()) != unserved).cloned().collect();
    if !judged.is_empty() {
        invariants.extend(invariants::pushes_hold(&deployment, &probe, &judged, Duration::from_secs(120)).await);
    }
    if let Some(withdrawn) = &withdrawn {
        let pushed_since = pushed.iter().filter(|p| p.business == losing.brand && p.acknowledged());
        let sample: Vec<String> = losing_products[..losing_products.len().min(10)]
            .iter()
            .cloned()
            .chain(pushed_since.take(10).map(|p| p.record_id.clone()))
            .collect();
        // Publishing section 3, P3.9: nothing is served until verified again.
        let named = ("no region serves a business whose certificate is withdrawn", "withdrawal");
        let act = (withdrawn, losing.business_uuid.as_str());
        invariants.push(invariants::business_absent(named, &deployment, &probe, act, &sample, MINUTE).await);
    }
    if let Some(blocked) = &blocked {
        let sample = &fetchable[..fetchable.len().min(10)];
        let named = ("no region serves a blocked record", "block");
        let act = (blocked, business.business_uuid.as_str());
        invariants.push(invariants::business_absent(named, &deployment, &keys[0], act, sample, MINUTE).await);
    }
    let verdict = if invariants.iter().all(|c| c.held) { Verdict::Pass } else { Verdict::Fail };
    let report = Report {
        scenario: scenario.name.clone(),
        seed: scenario.seed,
        expect: scenario.expect,
        verdict,
        network: json!({"kind": deployment.network.kind(), "note": deployment.network_note}),
        load: figures(&seen, &pushed, &bulk, &ad_seen, [blocked.as_ref(), withdrawn.as_ref()], &applied),
        faults: applied,
        invariants,
    };
    let path = out.join("report.json");
    let text = serde_json::to_vec_pretty(&json!({"report": report, "seen": seen, "ads": ad_seen, "pushed": pushed,
            "checkpoints": observed}))
    .unwrap_or_default();
    std::fs::write(&path, text).map_err(|source| ChaosError::Io { path: path.clone(), source })?;
    let page = out.join("report.html");
    let regions: Vec<String> = deployment.serving().iter().map(|n| n.name.clone()).collect();
    let lag = watch::lag(&observed, &regions, scenario.duration() as usize);
    std::fs::write(&page, page::render(&report, &seen, (&regions, &lag), scenario.duration()))
        .map_err(|source| ChaosError::Io { path: page.clone(), source })?;
    deployment.close_doors().await;
    if keep_data || !report.as_expected() {
        drop(deployment);
    } else {
        deployment.remove_data()?;
    }
    Ok(report)
}

/// Waits until `target` serves the corpus (a search with rows).
async fn replicated(target: &Target, key: &setup::AiKey, authority: &str) -> Result<(), ChaosError> {
    let mut last = String::new();
    for _ in 0..600 {
        let seen = load::run(
            std::slice::from_ref(key),
            std::slice::from_ref(target),
            load::Rates { searches: 10, fetches: 0, replays: 0 },
            &[],
            Duration::from_millis(100),
            authority,
        )
        .await;
        if seen.iter().any(|s| s.status == 200 && s.rows > 0) {
            return Ok(());
        }
        if let Some(s) = seen.last() {
            last = format!("{} with {} rows", s.status, s.rows);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(ChaosError::NotReplicated { region: target.region.clone(), last })
}

/// At `at` after the load starts, the business blocks `key`'s group (over
/// the admin API, as its portal would); what it was answered, and when.
async fn block(admin: &Admin, business_uuid: &str, key: &setup::AiKey, at: Option<Duration>) -> Option<Value> {
    let body = json!({"business_uuid": business_uuid, "ai_group_id": key.group_id});
    let (at_ms, error) = admin_at(admin, at?, "/admin/blocks", body).await;
    Some(json!({"at_ms": at_ms, "group_id": key.group_id, "error": error}))
}

/// Waits `at`, then makes one admin call: when it was answered (ms from
/// now, as the load counts) and the error, if it was refused.
async fn admin_at(admin: &Admin, at: Duration, path: &str, body: Value) -> (u64, Option<String>) {
    let started = Instant::now();
    tokio::time::sleep(at).await;
    let answered = admin.call("POST", path, Some(body)).await;
    (started.elapsed().as_millis() as u64, answered.err().map(|e| e.to_string()))
}

/// At `at` after the load starts, the operator withdraws `business`'s
/// certificate; then each region is asked every 100 ms (a fetch of its
/// first product) until it answers `404`, to measure how long each took to
/// obey. What was answered, when, and each region's time.
async fn withdraw_certificate(
    admin: &Admin,
    business: &setup::Onboarded,
    (regions, probe, authority): (&[(String, String)], &setup::AiKey, &str),
    fetchable: &[String],
    at: Option<Duration>,
) -> Option<Value> {
    let path = format!("/admin/businesses/{}/certificate-status", business.business_uuid);
    let body = json!({"status": "withdrawn", "reason": "approval_reversed"});
    let (at_ms, error) = admin_at(admin, at?, &path, body).await;
    let changed = Instant::now();
    if let Some(error) = error {
        return Some(json!({"at_ms": at_ms, "error": error}));
    }
    let record = format!("/v1/records/{}", fetchable.first()?);
    let obeyed = regions.iter().map(|(region, url)| {
        let (record, client) = (&record, probe.client(url, authority).ok());
        async move {
            while changed.elapsed() < Duration::from_secs(30) {
                if let Some(client) = &client
                    && let Ok(answer) = client.call("GET", record, Vec::new()).await
                    && answer.status == 404
                {
                    return (region.clone(), Some(changed.elapsed().as_millis() as u64));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (region.clone(), None)
        }
    });
    let obeyed: std::collections::BTreeMap<String, Option<u64>> =
        futures::future::join_all(obeyed).await.into_iter().collect();
    let last = obeyed.values().copied().collect::<Option<Vec<u64>>>().and_then(|v| v.into_iter().max());
    Some(json!({"at_ms": at_ms, "error": null, "obeyed_ms": obeyed, "last_region_obeyed_ms": last}))
}

/// How long a region may take to stop serving a business after a block or
/// a certificate withdrawal, once the faults have healed.
const MINUTE: Duration = Duration::from_secs(60);

/// How long an armed crash point may wait for the write path to pass it.
const CRASH_WITHIN: Duration = Duration::from_secs(20);

/// Applies each fault at its time and heals it `for_s` later, in order.
async fn strike(deployment: &mut Deployment, scenario: &Scenario, started: Instant) -> Vec<Applied> {
    let mut faults: Vec<_> = scenario.faults.iter().collect();
    faults.sort_by_key(|f| *f.at_s.get_ref());
    let mut applied = Vec::new();
    for fault in faults {
        tokio::time::sleep_until((started + Duration::from_secs(*fault.at_s.get_ref())).into()).await;
        // `home` in a group: the member that leads as the fault starts.
        let target = deployment.resolve(fault.target.get_ref()).await;
        let mut note = match fault.target.get_ref().as_str() {
            "home" if target != "home" => Some(format!("{target} led home's group")),
            "home-follower" => Some(format!("{target} followed in home's group")),
            _ => None,
        };
        let started_ms = started.elapsed().as_millis() as u64;
        let struck = match (fault.kind(), &fault.step, &fault.skew_s) {
            (FaultKind::Kill, ..) => deployment.kill(&target),
            (FaultKind::Stop, ..) => deployment.stop(&target),
            (FaultKind::Crash, Some(step), _) => deployment.crash_at(&target, *step.get_ref(), CRASH_WITHIN).await,
            (FaultKind::Clock, _, Some(skew)) => deployment.skew_clock(&target, skew.get_ref() * 1000).await,
            (FaultKind::Partition, ..) => deployment.partition(&target, fault.peer(), true).map(|n| note = n),
            (FaultKind::DiskFull, ..) => deployment
                .fill_disk(&target)
                .map(|bytes| note = Some(format!("{} MiB written to fill it", bytes >> 20))),
            (kind, ..) => {
                Err(DeployError::Fault { node: target.clone(), detail: format!("{} is not built", kind.name()) })
            }
        };
        tokio::time::sleep(Duration::from_secs(*fault.for_s.get_ref())).await;
        let healed = match fault.kind() {
            FaultKind::Kill | FaultKind::Crash => deployment.restart(&target).await,
            FaultKind::Stop => deployment.resume(&target),
            FaultKind::Clock => deployment.skew_clock(&target, 0).await,
            FaultKind::Partition => deployment.partition(&target, fault.peer(), false).map(|_| ()),
            FaultKind::DiskFull => deployment.free_disk(&target),
        };
        let error = struck.err().or(healed.err()).map(|e| e.to_string());
        applied.push(Applied {
            kind: fault.kind(),
            target,
            detail: match (fault.detail(), note) {
                (Some(detail), Some(note)) => Some(format!("{detail}; {note}")),
                (detail, note) => detail.or(note),
            },
            started_ms,
            healed_ms: started.elapsed().as_millis() as u64,
            error,
        });
    }
    applied
}

/// Requests, answers by status, and latency percentiles of what clients
/// saw; pushes by action and status.
fn figures(
    seen: &[Seen],
    pushed: &[push::Pushed],
    bulk: &[push::Imported],
    ad_seen: &[ads::AdSeen],
    [blocked, withdrawn]: [Option<&Value>; 2],
    faults: &[Applied],
) -> Value {
    let mut renders = std::collections::BTreeMap::new();
    for s in ad_seen.iter().filter(|s| s.render_status.is_some()) {
        let outcome = match &s.render {
            Some(r) if r["accepted"] == true => "accepted".to_owned(),
            Some(r) => r["reason"].as_str().unwrap_or("not accepted").to_owned(),
            None => format!("status {}", s.render_status.unwrap_or_default()),
        };
        *renders.entry(outcome).or_insert(0u64) += 1;
    }
    let pooled = ad_seen.iter().filter(|s| s.pool_status == 200).count();
    let mut pushes = std::collections::BTreeMap::new();
    for p in pushed.iter().filter(|p| p.sku < push::BULK_SKUS) {
        *pushes.entry(format!("{:?} {}", p.action, p.status).to_lowercase()).or_insert(0u64) += 1;
    }
    let mut by_status = std::collections::BTreeMap::new();
    for s in seen {
        *by_status.entry(s.status.to_string()).or_insert(0u64) += 1;
    }
    let mut latencies: Vec<f64> = seen.iter().filter(|s| s.status != 0).map(|s| s.latency_ms).collect();
    latencies.sort_by(|a, b| a.total_cmp(b));
    let pct =
        |p: f64| latencies.get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1))).copied();
    let fetches = seen.iter().filter(|s| matches!(s.ask, load::Ask::Fetch(_))).count();
    json!({"requests": seen.len(), "fetches": fetches, "by_status": by_status, "p50_ms": pct(0.5),
           "p99_ms": pct(0.99), "pushes": pushes, "bulk_imports": bulk,
           "ads": {"pools": ad_seen.len(), "pooled": pooled, "renders": renders},
           "block": blocked, "certificate_withdrawn": withdrawn, "failovers": failovers(pushed, faults)})
}

/// For each fault on a member of home's group: how long after it the
/// first write was acknowledged, and how many writes were refused or went
/// unanswered meanwhile (the time to fail over, as a business saw it).
fn failovers(pushed: &[push::Pushed], faults: &[Applied]) -> Vec<Value> {
    let pushes: Vec<&push::Pushed> = pushed.iter().filter(|p| p.sku < push::BULK_SKUS).collect();
    faults
        .iter()
        .filter(|f| {
            f.target.starts_with("home-") && matches!(f.kind, FaultKind::Kill | FaultKind::Stop | FaultKind::Partition)
        })
        .map(|fault| {
            let after = pushes.iter().filter(|p| p.at_ms >= fault.started_ms);
            let first = after.clone().filter(|p| p.acknowledged()).map(|p| p.answered_ms).min();
            let refused =
                after.filter(|p| !p.acknowledged() && first.is_none_or(|first| p.answered_ms <= first)).count();
            json!({"kind": fault.kind, "target": fault.target, "detail": fault.detail,
                   "first_acknowledged_write_ms": first.map(|ms| ms - fault.started_ms), "writes_refused": refused})
        })
        .collect()
}
