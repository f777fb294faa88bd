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

// `svc chaos --target`: a scenario run against a deployment the runner did
// not start, here a home and eu that this test runs as an operator would,
// each killed, started, paused and resumed only by the commands its file
// gives (shell scripts over pid files, as systemd or docker compose would
// be). eu is killed and started again, home paused and resumed, mid-load;
// every invariant holds, each fault ran its command (eu's process is a new
// one), and the nodes are still running when the runner is done.
#[tokio::test(flavor = "multi_thread")]
async fn a_scenario_runs_against_an_operator_s_deployment_through_its_commands() {
    let dir = tempfile::tempdir().unwrap();
    let at = || svc_node::config::port_to_keep("127.0.0.1".parse().unwrap()).unwrap();
    let (home_public, home_admin, home_internal, eu_public, eu_admin) = (at(), at(), at(), at(), at());
    let token = "target-admin-token-of-thirty-two-chars";
    let eu_token = "eu-target-replication-token-of-32-chars";
    let common = |region: &str, role: &str, public: std::net::SocketAddr, admin: std::net::SocketAddr| {
        format!(
            "region = \"{region}\"\nrole = \"{role}\"\nenvironment = \"sandbox\"\nallow_plain_http = true\n\
             data_dir = \"{}\"\nlisten = \"{public}\"\nadmin_listen = \"{admin}\"\n\
             public_authority = \"api.svc.localhost\"\nverify_base_url = \"http://verify.svc.localhost\"\n\
             admin_token = \"{token}\"\npasskey_rp_id = \"portal.svc.localhost\"\n\
             passkey_origin = \"https://portal.svc.localhost\"\n",
            dir.path().join(region).display()
        )
    };
    let home = common("home", "home", home_public, home_admin)
        + &format!(
            "internal_listen = \"{home_internal}\"\nlog_sequence_every_ms = 5000\n\n\
             [[replication.regions]]\nname = \"eu\"\ntoken = \"{eu_token}\"\n"
        );
    let eu = common("eu", "read", eu_public, eu_admin)
        + &format!(
            "\n[replication]\nhome_url = \"http://{home_public}\"\ninternal_url = \"http://{home_internal}\"\n\
             token = \"{eu_token}\"\n"
        );
    std::fs::write(dir.path().join("home.toml"), home).unwrap();
    std::fs::write(dir.path().join("eu.toml"), eu).unwrap();
    // What the operator's service manager would do, by pid file.
    let d = dir.path().display();
    let svc = env!("CARGO_BIN_EXE_svc");
    let start = format!(
        "SVC_LOG=warn nohup {svc} node --config {d}/{{node}}.toml > {d}/{{node}}.out 2>> {d}/{{node}}.log & \
         echo $! > {d}/{{node}}.pid"
    );
    let signal = |sig: &str| format!("kill -{sig} $(cat {d}/{{node}}.pid)");
    let node = |name: &str, public: std::net::SocketAddr, admin: std::net::SocketAddr| {
        format!(
            "[[nodes]]\nname = \"{name}\"\npublic_url = \"http://{public}\"\nadmin_url = \"http://{admin}\"\n\n\
             [nodes.commands]\nkill = \"{}\"\nstart = \"{start}\"\npause = \"{}\"\nresume = \"{}\"\n\n",
            signal("KILL"),
            signal("STOP"),
            signal("CONT")
        )
    };
    let target = dir.path().join("deployment.toml");
    let file = format!(
        "authority = \"api.svc.localhost\"\nadmin_token_env = \"TARGET_ADMIN_TOKEN\"\n\n{}{}",
        node("home", home_public, home_admin),
        node("eu", eu_public, eu_admin)
    );
    std::fs::write(&target, file).unwrap();
    // Whatever happens below, the nodes this test started end with it.
    struct Stopped(std::path::PathBuf);
    impl Drop for Stopped {
        fn drop(&mut self) {
            for name in ["home", "eu"] {
                if let Ok(pid) = std::fs::read_to_string(self.0.join(format!("{name}.pid"))) {
                    let _ = std::process::Command::new("kill").args(["-KILL", pid.trim()]).status();
                }
            }
        }
    }
    let _stopped = Stopped(dir.path().to_owned());
    for name in ["home", "eu"] {
        let status = std::process::Command::new("sh").arg("-c").arg(start.replace("{node}", name)).status().unwrap();
        assert!(status.success());
    }
    let eu_pid = || std::fs::read_to_string(dir.path().join("eu.pid")).unwrap().trim().to_owned();
    let first_eu = eu_pid();

    let scenario = dir.path().join("target.toml");
    let text = "name = \"target\"\ndescription = \"eu killed and home paused by the operator's commands\"\n\
                duration_s = 14\nexpect = \"pass\"\n\n[deployment]\nregions = [\"eu\"]\n\n\
                [load]\nai_keys = 1\nsearches_per_second = 10\nfetches_per_second = 2\npushes_per_second = 1\n\n\
                [[fault]]\nat_s = 3\nkind = \"kill\"\ntarget = \"eu\"\nfor_s = 3\n\n\
                [[fault]]\nat_s = 8\nkind = \"stop\"\ntarget = \"home\"\nfor_s = 2\n";
    std::fs::write(&scenario, text).unwrap();
    let run = tokio::process::Command::new(svc)
        .arg("chaos")
        .arg(&scenario)
        .arg("--target")
        .arg(&target)
        .arg("--out")
        .arg(dir.path().join("runs"))
        .env("TARGET_ADMIN_TOKEN", token)
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    let report_path = String::from_utf8_lossy(&run.stdout).trim().to_owned();
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    let faults = report["report"]["faults"].as_array().unwrap();
    assert_eq!(faults.len(), 2, "{faults:?}");
    assert!(faults.iter().all(|f| f["error"].is_null()), "every command ran: {faults:?}");
    assert_ne!(eu_pid(), first_eu, "eu was killed and started again by the file's commands");
    for pid in [eu_pid(), std::fs::read_to_string(dir.path().join("home.pid")).unwrap().trim().to_owned()] {
        assert!(std::path::Path::new(&format!("/proc/{pid}")).exists(), "the runner left {pid} running");
    }

    // A scenario the deployment cannot play is refused before anything runs.
    let unfit = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/chaos/scenarios/smoke.toml")).unwrap();
    std::fs::write(dir.path().join("unfit.toml"), unfit).unwrap();
    let refused = tokio::process::Command::new(svc)
        .arg("chaos")
        .arg(dir.path().join("unfit.toml"))
        .arg("--target")
        .arg(&target)
        .arg("--out")
        .arg(dir.path().join("refused"))
        .env("TARGET_ADMIN_TOKEN", token)
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains("regions are [\"ap\", \"eu\"]; the deployment's are [\"eu\"]"), "{said}");
}

// The shipped compose example's target file names the compose file's
// services at the ports it publishes, acts on each through docker compose,
// and fits the scenarios a lone home with eu and ap plays; a scenario
// that cuts the network is refused, since the file gives no partition.
// (No Docker engine runs where the tests run: the file is checked against
// the compose file, not run.)
#[test]
fn the_compose_example_s_target_file_names_its_services_and_fits_its_scenarios() {
    use svc::chaos::scenario::Scenario;
    use svc::chaos::target::TargetFile;
    let root = env!("CARGO_MANIFEST_DIR");
    let target = TargetFile::read(std::path::Path::new(&format!("{root}/deploy/compose-chaos.toml"))).unwrap();
    let compose = std::fs::read_to_string(format!("{root}/deploy/compose.yaml")).unwrap();
    let mut names: Vec<&str> = target.nodes.iter().map(|n| n.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["ap", "eu", "home"]);
    for node in &target.nodes {
        assert!(compose.contains(&format!("\n  {}:\n", node.name)), "{} is a service", node.name);
        for url in [&node.public_url, &node.admin_url] {
            let port = url.rsplit(':').next().unwrap();
            assert!(compose.contains(&format!("{port}:{port}\"")), "compose publishes {url}");
        }
        let commands = &node.commands;
        for command in [&commands.kill, &commands.start, &commands.pause, &commands.resume] {
            let command = command.as_deref().unwrap();
            assert!(command.starts_with("docker compose -f deploy/compose.yaml ") && command.ends_with(" {node}"));
        }
    }
    let scenario = |name: &str| {
        let path = format!("{root}/chaos/scenarios/{name}.toml");
        Scenario::parse(&path, &std::fs::read_to_string(&path).unwrap()).unwrap()
    };
    for fits in ["home-kill", "region-stall", "stall-then-kill", "rolling-restarts"] {
        scenario(fits).fits(&target).unwrap_or_else(|e| panic!("{fits}: {e}"));
    }
    let cut = scenario("partition-region-from-home").fits(&target).unwrap_err().to_string();
    assert!(cut.contains("needs `partition`"), "{cut}");
    let group = scenario("home-leader-kill").fits(&target).unwrap_err().to_string();
    assert!(group.contains("home has 3 node(s); the deployment's 1"), "{group}");
}
