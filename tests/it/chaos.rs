//! `svc chaos` as an SRE runs it: a scenario that does not hold is refused
//! with its line and reason before anything starts, and an interrupted run
//! leaves no process behind. (The smoke scenario itself runs in CI as
//! `bash chaos/smoke`.)

use std::time::Duration;

use serde_json::json;

use crate::common::Home;

/// The processes whose command line names `needle`.
fn processes_naming(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(needle) {
                found.push(text);
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_scenario_is_refused_with_its_line_and_nothing_starts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/chaos/scenarios/smoke.toml")).unwrap();
    std::fs::write(&path, text.replace("target = \"eu\"", "target = \"mars\"")).unwrap();
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"))
        .arg("chaos")
        .arg(&path)
        .arg("--out")
        .arg(dir.path().join("runs"))
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad.toml:") && stderr.contains("\"mars\" is not home or a region"), "{stderr}");
    assert!(!dir.path().join("runs").exists(), "nothing was started");
}

/// The network namespaces chaos runs made that still exist.
fn chaos_namespaces() -> Vec<String> {
    let output = std::process::Command::new("ip").args(["netns", "list"]).output();
    let listed = output.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    listed
        .lines()
        .filter(|l| l.starts_with("svc-chaos-"))
        .map(|l| l.split(' ').next().unwrap_or(l).to_owned())
        .collect()
}

/// The mount points under `dir`.
fn mounts_under(dir: &std::path::Path) -> Vec<String> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let dir = dir.display().to_string();
    mounts.lines().filter_map(|l| l.split(' ').nth(1)).filter(|m| m.starts_with(&dir)).map(str::to_owned).collect()
}

// A run with a partition and a full disk, so where the machine allows it
// the nodes run in network namespaces and eu's data on a tmpfs of its own:
// those are undone too.
#[tokio::test(flavor = "multi_thread")]
async fn an_interrupted_run_leaves_no_process_namespace_or_mount_behind() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs");
    let scenario = dir.path().join("cut.toml");
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/chaos/scenarios/smoke.toml")).unwrap();
    let faults = "\n[[fault]]\nat_s = 10\nkind = \"partition\"\ntarget = \"eu\"\nfor_s = 2\n\n\
                  [[fault]]\nat_s = 14\nkind = \"disk-full\"\ntarget = \"eu\"\nfor_s = 2\n";
    std::fs::write(&scenario, text + faults).unwrap();
    let mut runner = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"))
        .arg("chaos")
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let needle = out.display().to_string();
    // Wait until its deployment runs: home and both regions.
    let mut running = 0;
    for _ in 0..600 {
        running = processes_naming(&needle).iter().filter(|p| p.contains(" node --config ")).count();
        if running == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(running, 3, "the deployment started");
    let made = chaos_namespaces();
    let mounted = mounts_under(&out);
    let status =
        std::process::Command::new("kill").arg("-TERM").arg(runner.id().unwrap().to_string()).status().unwrap();
    assert!(status.success());
    let exited = tokio::time::timeout(Duration::from_secs(30), runner.wait()).await.unwrap().unwrap();
    assert_eq!(exited.code(), Some(2));
    let mut stderr = String::new();
    tokio::io::AsyncReadExt::read_to_string(runner.stderr.as_mut().unwrap(), &mut stderr).await.unwrap();
    assert!(stderr.contains("interrupted"), "{stderr}");
    // Killed processes are reaped by the runner before it exits.
    let left = processes_naming(&needle);
    assert!(left.is_empty(), "left behind: {left:?}");
    let namespaces = chaos_namespaces();
    assert!(made.iter().all(|n| !namespaces.contains(n)), "namespaces left behind: {namespaces:?}");
    let am_root =
        std::fs::read_to_string("/proc/self/status").is_ok_and(|s| s.lines().any(|l| l == "Uid:\t0\t0\t0\t0"));
    if am_root {
        assert_eq!((made.len(), mounted.len()), (3, 1), "as root: a namespace per node, a tmpfs for eu");
    }
    assert_eq!(mounts_under(&out), Vec::<String>::new(), "mounts left behind (had {mounted:?})");
}

// The report page renders in headless Chromium with nothing loaded: the
// timeline (one line per kind of answer, a band per fault), each region's
// lag (a gap where it did not answer) and every invariant; the test keeps a screenshot beside the page.
#[test]
fn the_report_page_renders_its_timeline_and_invariants_in_chromium() {
    use svc::chaos::load::{Ask, Seen};
    use svc::chaos::scenario::{FaultKind, Verdict};
    use svc::chaos::{Applied, Report, invariants::Checked};
    let seen: Vec<Seen> = (0..300u64)
        .map(|i| Seen {
            at_ms: i * 50,
            ask: if i % 4 == 0 { Ask::Fetch("svc_x".into()) } else { Ask::Search },
            region: ["home", "eu", "ap"][(i % 3) as usize].into(),
            key_id: "k".into(),
            nonce: format!("n{i}"),
            status: if (80..140).contains(&i) && i % 3 == 1 { 0 } else { 200 },
            rows: 5,
            receipt: None,
            latency_ms: 3.0,
            replayed_at: None,
            replay_status: None,
        })
        .collect();
    let report = Report {
        scenario: "smoke".into(),
        seed: 1,
        expect: Verdict::Pass,
        verdict: Verdict::Fail,
        faults: vec![
            Applied {
                kind: FaultKind::Kill,
                target: "eu".into(),
                detail: None,
                started_ms: 4_000,
                healed_ms: 7_000,
                error: None,
            },
            Applied {
                kind: FaultKind::Crash,
                target: "home".into(),
                detail: Some("at chunk-written".into()),
                started_ms: 9_000,
                healed_ms: 11_000,
                error: None,
            },
        ],
        network: serde_json::json!({"kind": "loopback"}),
        load: serde_json::json!({"requests": 300}),
        invariants: vec![
            Checked { name: "replication converges after heal", held: true, evidence: serde_json::json!({"eu": 5}) },
            Checked {
                name: "every receipt received is provable in the log",
                held: false,
                evidence: serde_json::json!({"unproven": 2}),
            },
        ],
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    // eu's log falls behind while it is down, then catches up.
    let regions = ["home".to_owned(), "eu".to_owned(), "ap".to_owned()];
    let lag: Vec<Vec<Option<u64>>> = regions
        .iter()
        .map(|r| {
            (0..15u64)
                .map(|s| if r == "eu" { (!(4..7).contains(&s)).then_some(if s < 9 { s } else { 0 }) } else { Some(0) })
                .collect()
        })
        .collect();
    std::fs::write(&page, svc::chaos::page::render(&report, &seen, (&regions, &lag), 15)).unwrap();
    let url = format!("file://{}", page.display());
    let flags =
        ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"];
    let dom = std::process::Command::new("chromium")
        .args(flags)
        .args(["--dump-dom", &url])
        .output()
        .expect("headless Chromium");
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.contains("<h1>Chaos run: smoke</h1>"), "{dom}");
    assert_eq!(
        dom.matches("<polyline").count(),
        3 + 4,
        "served, refused, no answer; home, ap and eu broken by its gap"
    );
    assert!(dom.contains("aria-label=\"replication lag\""), "{dom}");
    assert!(dom.contains("kill eu"), "the fault's band is labelled");
    assert!(dom.contains("crash home (at chunk-written) from 9.0 s"), "a fault's detail is listed: {dom}");
    assert!(dom.contains("FAILED") && dom.contains("every receipt received is provable"), "{dom}");
    assert!(!dom.contains("<script"));
    let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("chaos-report.png");
    let taken = std::process::Command::new("chromium")
        .args(flags)
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1000,900")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        taken.status.success() && std::fs::metadata(&shot).map(|m| m.len() > 10_000).unwrap_or(false),
        "a screenshot was taken"
    );
}

// The crash points and the skewed clock a chaos run drives exist only on a
// node configured for fault injection; elsewhere their routes are absent.
#[tokio::test(flavor = "multi_thread")]
async fn fault_injection_answers_only_where_it_is_configured() {
    let home = Home::start().await;
    let crash = home.admin("POST", "/admin/faults/crash", json!({"at": "chunk-written"})).await;
    assert_eq!(crash.status, 404, "{}", crash.body);
    let clock = home.admin("POST", "/admin/faults/clock", json!({"skew_ms": 1000})).await;
    assert_eq!(clock.status, 404);

    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |c| c.fault_injection = true).await;
    let disarmed = home.admin("POST", "/admin/faults/crash", json!({"at": null})).await;
    assert_eq!((disarmed.status, disarmed.body["armed"].clone()), (200, serde_json::Value::Null));
    let unknown = home.admin("POST", "/admin/faults/crash", json!({"at": "halfway"})).await;
    assert_eq!((unknown.status, unknown.body["code"].clone()), (400, json!("request_invalid")), "{}", unknown.body);
    let too_far = home.admin("POST", "/admin/faults/clock", json!({"skew_ms": 90_000_000})).await;
    assert_eq!((too_far.status, too_far.body["code"].clone()), (400, json!("request_invalid")));
    let back = home.admin("POST", "/admin/faults/clock", json!({"skew_ms": 0})).await;
    assert_eq!((back.status, back.body["skew_ms"].clone()), (200, json!(0)));
}
