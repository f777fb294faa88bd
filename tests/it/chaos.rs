//! `svc chaos` as an SRE runs it: a scenario that does not hold is refused
//! with its line and reason before anything starts, and an interrupted run
//! leaves no process behind. (The smoke scenario itself runs in CI as
//! `bash chaos/smoke`.)

use std::time::Duration;

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

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupted_run_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs");
    let mut runner = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"))
        .arg("chaos")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/chaos/scenarios/smoke.toml"))
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
}
