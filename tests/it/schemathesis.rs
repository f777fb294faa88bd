//! Schemathesis (PyPI) against a running node from its own OpenAPI
//! description (issue 30, item 1): the unauthenticated operations as they
//! come, the signed ones through a hook that signs each request as the
//! operation's security scheme names (`tests/schemathesis/svc_hooks.py`).
//! A bounded number of examples per operation; no 5xx, no answer outside
//! the description, and every refusal an RFC 9457 problem with a `code`.
//! `.ci/setup` installs schemathesis into `~/.cache/svc-st`.

use crate::common;

use common::*;

fn venv() -> std::path::PathBuf {
    match std::env::var_os("SVC_ST_VENV") {
        Some(dir) => dir.into(),
        None => std::path::Path::new(&std::env::var("HOME").unwrap()).join(".cache/svc-st"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_no_server_error_and_no_answer_outside_the_description() {
    let (home, node) = Home::listening_on_system_clock(|_| {}).await;
    let business = home.business("Lumen", products_scope(100_000)).await;
    // Sealed now, after the key's registration.
    home.clock.set(svc_clock::SystemClock.now());
    let published =
        home.publish(&business, &[product("Lumen", "l-1", "19.90"), product("Lumen", "l-2", "9.90")], "p-1").await;
    assert_eq!(published.status, 200, "{:?}", published.body);
    home.caller("Fuzz AI").await;
    let seed = |text: &str| svc_core::b64::url_encode(&svc_core::digest::sha256(text.as_bytes()));
    let base = format!("http://{}", node.addr);
    let hooks = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemathesis");
    let run = || {
        tokio::process::Command::new(venv().join("bin/schemathesis"))
            .arg("run")
            .arg(format!("{base}/openapi.json"))
            .args(["--url", &base])
            .args(["--max-examples", "8", "--workers", "2", "--seed", "30"])
            .args([
                "--checks",
                "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,\
                 refusals_are_problems_with_a_code",
            ])
            .args(["--suppress-health-check", "all", "--no-color"])
            .env("SCHEMATHESIS_HOOKS", "svc_hooks")
            .env("PYTHONPATH", &hooks)
            .env("SVC_ST_AUTHORITY", AUTHORITY)
            .env("SVC_ST_RETRIEVAL_SEED", seed("retrieval Fuzz AI"))
            .env("SVC_ST_BUSINESS_SEED", seed("Lumen"))
            .output()
    };
    let mut output = run().await.expect("schemathesis is installed (bash .ci/setup)");
    // CPython 3.11's parser can fail inside hypothesis while it names a
    // filter ("AST constructor recursion depth mismatch"): an interpreter
    // fault, not a finding, and not every run's (its workers race), so the
    // run is made again, up to three more times. CI met it twice running.
    for _ in 0..3 {
        if !String::from_utf8_lossy(&output.stdout).contains("AST constructor recursion depth mismatch") {
            break;
        }
        output = run().await.unwrap();
    }
    let report = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{report}");
    eprintln!("{report}");
    // The hook's signatures were accepted: signed operations were served,
    // not only refused.
    let metrics = home.state.metrics.render();
    assert!(!metrics.contains("code=\"401\""), "a signed request refused:\n{metrics}");
    for route in ["/v1/receipts", "/v1/usage", "/v1/seal-context", "/v1/catalogue"] {
        let served = format!("svc_http_requests_total{{route=\"{route}\",method=\"GET\",code=\"200\"}}");
        assert!(metrics.contains(&served), "{served} in\n{metrics}");
    }
    assert!(report.contains("No issues found") || report.contains("passed"), "{report}");
    node.stop().await;
}
