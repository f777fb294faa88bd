//! `svc client` against a running sandbox region over TCP: signed calls with
//! a key file and the sandbox grant, and the offline checks of receipts,
//! rows and fetched records against the key set under pinned anchors.

use std::process::Command;

use serde_json::{Value, json};

use crate::live::Live;
use svc_client::retrieval::RetrievalClient;
use svc_core::Reason;
use svc_core::keyset::{self, Purpose};
use svc_core::offline::{check_fetch, check_search};
use svc_http::sandbox::seed::admin;

async fn region() -> Live {
    Live::start(7, 40, 42).await
}

trait Runs {
    async fn svc_client(&self, args: &[&str]) -> (i32, String, String);
    async fn rows(&self, client: &RetrievalClient) -> Value;
}

impl Runs for Live {
    /// Runs `svc client … <args>`; answers (exit code, stdout, stderr).
    async fn svc_client(&self, args: &[&str]) -> (i32, String, String) {
        let mut command = Command::new(env!("CARGO_BIN_EXE_svc"));
        command.args([
            "client",
            "--base-url",
            &self.base_url(),
            "--key",
            self.key_file.to_str().unwrap(),
            "--grant",
            &self.grant,
        ]);
        command.args(args);
        let output = tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// Searches until the index has the corpus.
    async fn rows(&self, client: &RetrievalClient) -> Value {
        let body = json!({"collection": "products", "filter": {"all": [{"country": self.country}]}, "sort_by": "published_at:desc", "limit": 5});
        for _ in 0..200 {
            let answer = client.call("POST", "/v1/search", serde_json::to_vec(&body).unwrap()).await.unwrap();
            assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
            if !answer.json()["rows"].as_array().unwrap().is_empty() {
                return answer.json();
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("the index never served the corpus");
    }
}

// rule: R2.6.14, R2.7.3, R5.40
#[tokio::test(flavor = "multi_thread")]
async fn answers_check_offline_and_tampering_is_caught() {
    let region = region().await;
    let client =
        RetrievalClient::new(&region.base_url(), "api.svc.localhost", region.key.clone(), Some(region.grant.clone()))
            .unwrap();
    let found = region.rows(&client).await;
    let document = client.key_set().await.unwrap().json();
    let keys = &region.node.state.keys;
    let anchors = keyset::RootAnchors {
        classical: keys.root.classical.verifying_key(),
        post_quantum: keys.root.post_quantum.verifying_key(),
    };
    let set = keyset::verify(&document, &anchors).unwrap();
    let me = client.key_id();

    let checked = check_search(&found, &set, &me).expect("a genuine answer checks");
    assert_eq!(checked.rows, found["rows"].as_array().unwrap().len());
    assert_eq!(check_search(&found, &set, "someone-else").unwrap_err(), Reason::ReceiptCallerMismatch);
    let mut edited = found.clone();
    edited["rows"][0]["brand"] = json!("Not the brand");
    assert_eq!(check_search(&edited, &set, &me).unwrap_err(), Reason::RowSignatureInvalid);
    let mut dropped = found.clone();
    dropped["rows"].as_array_mut().unwrap().pop();
    assert_eq!(check_search(&dropped, &set, &me).unwrap_err(), Reason::ReceiptRowMismatch);

    let id = found["rows"][0]["record_id"].as_str().unwrap();
    let fetched = client.call("GET", &format!("/v1/records/{id}"), Vec::new()).await.unwrap();
    assert_eq!(fetched.status, 200);
    let checked = check_fetch(&fetched.bytes, &set, &me).expect("a genuine fetch checks");
    assert!(checked.inclusion, "a batch record's proof was checked");
    // One byte of the record changed: the receipt no longer names it.
    let text = String::from_utf8(fetched.bytes.clone()).unwrap();
    let brand = fetched.json()["record"]["brand"].as_str().unwrap().to_owned();
    let forged = text.replacen(&format!("\"brand\":\"{brand}\""), "\"brand\":\"Forged\"", 1);
    assert_ne!(forged, text);
    assert_eq!(check_fetch(forged.as_bytes(), &set, &me).unwrap_err(), Reason::ReceiptRowMismatch);
    // A receipt key the set does not hold is unknown.
    let mut other = set.clone();
    other.keys.retain(|k| k.purpose != Purpose::Receipt);
    assert_eq!(check_fetch(&fetched.bytes, &other, &me).unwrap_err(), Reason::KeyUnknown);
    region.node.stop().await;
}

// rule: R5.40, R4.10, R4.12, P4.2.54, P4.2.56, P2.6.19, P2.6.40, P-NS-7, P-NS-8, P4.2.16
#[tokio::test(flavor = "multi_thread")]
async fn the_command_line_signs_prints_and_checks() {
    let region = region().await;
    let client =
        RetrievalClient::new(&region.base_url(), "api.svc.localhost", region.key.clone(), Some(region.grant.clone()))
            .unwrap();
    let found = region.rows(&client).await;
    let keys_file = region.dir.path().join("keys.json");
    let anchors_file = region.dir.path().join("anchors.json");
    let (code, stdout, stderr) = region
        .svc_client(&["keys", "--out", keys_file.to_str().unwrap(), "--anchors-out", anchors_file.to_str().unwrap()])
        .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("\"purpose\": \"receipt\""));
    let pinned = ["--keys", keys_file.to_str().unwrap(), "--anchors", anchors_file.to_str().unwrap()];

    let mut search = pinned.to_vec();
    search.extend(["search", "--country", &region.country, "--sort", "published_at:desc", "--limit", "3"]);
    // A search that ran out of its time budget (a loaded test machine while
    // the index still takes the corpus) answers `partial`; ask again.
    let (mut code, mut stdout, mut stderr) = region.svc_client(&search).await;
    for _ in 0..20 {
        if code != 0 || serde_json::from_str::<Value>(&stdout).map_or(true, |b| b["partial"] != true) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        (code, stdout, stderr) = region.svc_client(&search).await;
    }
    assert_eq!(code, 0, "{stderr}");
    let body: Value = serde_json::from_str(&stdout).unwrap();
    assert_ne!(body["partial"], true, "{body}");
    assert_eq!(body["rows"].as_array().unwrap().len(), 3);
    assert!(stderr.contains("names all 3 rows; every row signature holds"), "{stderr}");

    let id = found["rows"][0]["record_id"].as_str().unwrap();
    let mut fetch = pinned.to_vec();
    fetch.extend(["fetch", id]);
    let (code, stdout, stderr) = region.svc_client(&fetch).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap()["record_id"], id);
    assert!(stderr.contains("batch inclusion proof holds"), "{stderr}");

    // Verify: the business's seal by its signed key statement, and the log.
    let mut verify = pinned.to_vec();
    verify.extend(["verify", id]);
    let (code, _, stderr) = region.svc_client(&verify).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("seal: signed by the business's integration key"), "{stderr}");
    admin(&region.node.state, "POST", "/admin/log/sequence", json!({})).await.unwrap();
    let (code, _, stderr) = region.svc_client(&verify).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("log: the seal is in the checkpoint of tree size"), "{stderr}");
    // A kept answer verifies later, byte for byte as it was served.
    let kept = region.dir.path().join("kept.json");
    let mut save = pinned.to_vec();
    save.extend(["fetch", id, "--save", kept.to_str().unwrap()]);
    assert_eq!(region.svc_client(&save).await.0, 0);
    let mut later = pinned.to_vec();
    later.extend(["verify", "--answer", kept.to_str().unwrap()]);
    let (code, _, stderr) = region.svc_client(&later).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("the receipt's minute is not folded yet"), "{stderr}");

    let (code, stdout, _) = region.svc_client(&["receipts"]).await;
    assert_eq!(code, 0);
    assert!(!serde_json::from_str::<Value>(&stdout).unwrap()["receipts"].as_array().unwrap().is_empty());
    let (code, stdout, _) = region.svc_client(&["usage"]).await;
    assert_eq!(code, 0);
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap()["invoiced"], false);
    // The key directory, with a company opted in, checks offline.
    let companies =
        admin(&region.node.state, "POST", "/admin/companies", json!({"name": "Listed AI", "verified": true}))
            .await
            .unwrap();
    let uuid = companies["ai_company_uuid"].as_str().unwrap();
    admin(&region.node.state, "POST", &format!("/admin/companies/{uuid}/directory"), json!({"listed": true}))
        .await
        .unwrap();
    let mut directory = pinned.to_vec();
    directory.push("key-directory");
    let (code, stdout, stderr) = region.svc_client(&directory).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap()["companies"][0]["ai_company_uuid"], uuid);
    assert!(stderr.contains("the key directory lists 1 companies and 0 keys"), "{stderr}");

    // The verification index: every pinned document hashes to its entry.
    let (code, _, stderr) = region.svc_client(&["verification-index"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("pinned documents each hash to their entry") && stderr.contains("0 unknown"), "{stderr}");

    let (code, stdout, _) = region.svc_client(&["terms"]).await;
    assert_eq!(code, 1, "no Terms in force: a 404");
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap()["code"], "not_found");

    // Anchors of another root: the key set does not verify, nothing is trusted.
    let stranger = svc_core::dsse::DualKey::from_seeds(&[5; 32], &[6; 32]).unwrap();
    let wrong = json!({"classical": stranger.classical.verifying_key().to_jwk(), "post_quantum": stranger.post_quantum.verifying_key().to_jwk()});
    std::fs::write(&anchors_file, serde_json::to_vec(&wrong).unwrap()).unwrap();
    let (code, _, stderr) = region.svc_client(&search).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("the key set does not verify"), "{stderr}");
    region.node.stop().await;
}

/// `svc … | head`: output to a reader that went away ends quietly, not
/// with a panic.
#[test]
fn output_to_a_reader_that_went_away_ends_quietly() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let run = Command::new(env!("CARGO_BIN_EXE_svc")).arg("formats").stdout(writer).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success() && !stderr.contains("panicked"), "{:?}: {stderr}", run.status);
}

/// Runs `svc client … <args>` on a terminal (`script` gives it a pty);
/// answers what the terminal showed.
async fn on_a_terminal(region: &Live, args: &[&str]) -> String {
    let mut line = vec![
        "client".into(),
        "--base-url".into(),
        region.base_url(),
        "--key".into(),
        region.key_file.to_str().unwrap().into(),
        "--grant".into(),
        region.grant.clone(),
    ];
    line.extend(args.iter().map(|a| a.to_string()));
    svc_on_a_terminal(line).await
}

/// Runs `svc <line>` with a terminal as its stdout; answers what it showed.
async fn svc_on_a_terminal(line: Vec<String>) -> String {
    let quoted: Vec<String> =
        std::iter::once(env!("CARGO_BIN_EXE_svc").to_owned()).chain(line).map(|a| format!("'{a}'")).collect();
    let command = quoted.join(" ");
    let output = tokio::task::spawn_blocking(move || {
        Command::new("script").args(["-qec", &command, "/dev/null"]).env("SVC_LOG", "warn").output().unwrap()
    })
    .await
    .unwrap();
    String::from_utf8_lossy(&output.stdout).replace('\r', "")
}

// At a terminal a search is a table and a refusal is its problem in words;
// `--json`, after the subcommand too, or a pipe, is the exact JSON.
#[tokio::test(flavor = "multi_thread")]
async fn a_person_reads_tables_and_a_program_reads_json() {
    let region = region().await;
    let client =
        RetrievalClient::new(&region.base_url(), "api.svc.localhost", region.key.clone(), Some(region.grant.clone()))
            .unwrap();
    region.rows(&client).await;
    let search = ["search", "--country", &region.country, "--sort", "published_at:desc", "--limit", "3"];
    let shown = on_a_terminal(&region, &search).await;
    println!("{shown}");
    let header = shown.lines().find(|l| l.starts_with('#')).unwrap_or_else(|| panic!("a table: {shown}"));
    assert!(header.contains("record_id") && header.contains("name"), "{shown}");
    assert!(shown.contains("products rows in") && !shown.contains("\"rows\""), "{shown}");
    let json = on_a_terminal(&region, &[&search[..], &["--json"]].concat()).await;
    // The terminal shows stdout's JSON, then the checks stderr wrote.
    let start = json.find('{').unwrap_or_else(|| panic!("JSON: {json}"));
    let end = json.find("\n}\n").unwrap_or_else(|| panic!("JSON: {json}")) + 2;
    let body: Value = serde_json::from_str(&json[start..end]).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(body["rows"].as_array().unwrap().len(), 3);
    let (_, piped, _) = region.svc_client(&search).await;
    assert!(serde_json::from_str::<Value>(&piped).is_ok(), "piped, the exact JSON: {piped}");
    // A refusal: a record that is not there.
    let refused = on_a_terminal(&region, &["fetch", "svc_aaaaaaaaaaaaaaaaaaaaaaaaaa"]).await;
    println!("{refused}");
    assert!(refused.contains("refused: not_found (404)") && refused.contains("what to do:"), "{refused}");

    // Usage: a table by day with a bar of what was billed, and the totals.
    let usage = on_a_terminal(&region, &["usage"]).await;
    println!("{usage}");
    assert!(usage.contains("(sandbox, counted, never invoiced)") && usage.contains("█"), "{usage}");
    assert!(usage.lines().any(|l| l.starts_with("total: ") && l.contains(" searches, ")), "{usage}");
    // The operator's view of the actors.
    let admin = vec![
        "admin".to_owned(),
        "--url".into(),
        format!("http://{}", region.node.admin_addr),
        "--token".into(),
        region.node.state.config.admin_token.clone(),
        "observe".into(),
    ];
    let observed = svc_on_a_terminal(admin.clone()).await;
    println!("{observed}");
    let header = observed.lines().find(|l| l.starts_with("actor ")).unwrap_or_else(|| panic!("a table: {observed}"));
    assert!(header.contains("holds") && header.contains("restarts"), "{observed}");
    assert!(observed.lines().any(|l| l.starts_with("indexer ") && l.contains("applied_seq")), "{observed}");
    assert!(observed.contains(", 0 failed"), "{observed}");
    let json = svc_on_a_terminal([&admin[..], &["--json".to_owned()]].concat()).await;
    assert!(json.trim_start().starts_with('{') && json.contains("\"supervisor\""), "{json}");
}

/// A product of the corpus's first business under another id and name.
fn another_product(spec: &svc_http::sandbox::corpus::BusinessSpec, own_id: &str) -> Vec<u8> {
    let mut product: Value = serde_json::from_slice(&spec.products[0]).unwrap();
    product["business_product_id"] = json!(own_id);
    product["product_name"] = json!(format!("Lampe {own_id}"));
    serde_json::to_vec(&product).unwrap()
}

// rule: P4.2.38, P2.6.38, P2.6.39
#[tokio::test(flavor = "multi_thread")]
async fn verify_checks_passkey_and_hosted_seals_offline() {
    use svc_client::sealing::{SealContext, seal_v2_payload};
    use svc_core::publish::webauthn::seal_with_passkey;
    let region = region().await;
    let state = &region.node.state;
    let corpus = svc_http::sandbox::corpus::generate(7, svc_http::sandbox::corpus::Sizes::products_only(2, 40));
    let spec = &corpus.businesses[0];
    let seeded = svc_http::sandbox::seed::ensure_seeded(state, &corpus, &|_| {}).await.unwrap();
    let (uuid, cert_id) = seeded.businesses[0].clone();
    let (_, passkey) = svc_http::sandbox::seed::keys_of(spec).unwrap();
    let (rp_id, origin) = (state.config.passkey_rp_id.clone(), state.config.passkey_origin.clone());
    // The corpus's first business sealed an AI policy: version 1 is in force.
    let context = SealContext { cert_id, ai_policy_version: u64::from(spec.ai_policy.is_some()) };
    let kid = passkey.verifying_key().thumbprint();
    let seal_at = |site: &str, record: &[u8], count: u32| {
        let payload =
            seal_v2_payload(&kid, &context, "products", record, svc_clock::Clock::now(&svc_clock::SystemClock), None)
                .unwrap();
        seal_with_passkey(&passkey, &rp_id, site, &svc_core::dsse::payload_type("seal.v2"), &payload, count).unwrap()
    };
    let save = |record: Vec<u8>, seal: svc_core::dsse::Envelope| {
        let body =
            json!({"record_type": "products", "record_base64": svc_core::b64::std_encode(&record), "seal": seal});
        let path = format!("/admin/businesses/{uuid}/records");
        async move { admin(state, "POST", &path, body).await.unwrap()["record_id"].as_str().unwrap().to_owned() }
    };
    let pinned = ["--anchors", region.anchors_file.to_str().unwrap()];
    let verify = |id: String| {
        let mut args = pinned.to_vec();
        args.extend(["verify", &id]);
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let region = &region;
        async move { region.svc_client(&args.iter().map(String::as_str).collect::<Vec<_>>()).await }
    };

    // Path B: a person's passkey, its assertion bound to the seal and to the portal.
    let by_passkey = another_product(spec, "pb-1");
    let id = save(by_passkey.clone(), seal_at(&origin, &by_passkey, 100)).await;
    let (code, _, stderr) = verify(id.clone()).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains(&format!("seal: signed by a person's passkey of the business, as its signed key statement lists it, for the portal {origin} (relying party {rp_id})")), "{stderr}");

    // The attacker's seals in a kept answer: the same passkey's assertion
    // made on another site, and a genuine seal of another record.
    let kept = region.dir.path().join("kept.json");
    let mut save_args = pinned.to_vec();
    let kept_path = kept.to_str().unwrap();
    save_args.extend(["fetch", &id, "--save", kept_path]);
    assert_eq!(region.svc_client(&save_args).await.0, 0);
    let answer: Value = serde_json::from_slice(&std::fs::read(&kept).unwrap()).unwrap();
    for (seal, reason) in [
        (seal_at("https://portal.attacker.example", &by_passkey, 101), "signature_invalid"),
        (seal_at(&origin, &another_product(spec, "pb-2"), 102), "hash_mismatch"),
    ] {
        let mut forged = answer.clone();
        forged["seal"] = serde_json::to_value(&seal).unwrap();
        let file = region.dir.path().join("forged.json");
        std::fs::write(&file, serde_json::to_vec(&forged).unwrap()).unwrap();
        let mut args = pinned.to_vec();
        args.extend(["verify", "--answer", file.to_str().unwrap()]);
        let (code, _, stderr) = region.svc_client(&args).await;
        assert_ne!(code, 0, "{reason}: {stderr}");
        assert!(stderr.contains(reason), "{reason}: {stderr}");
    }

    // Hosted signing: the owner's passkey turns it on, the service's key
    // seals, and the custody statement says who held that key.
    let request = svc_core::custody::CustodyRequest::new(
        &uuid,
        svc_core::custody::Custody::Hosted,
        svc_clock::Clock::now(&svc_clock::SystemClock),
    )
    .to_bytes();
    let consent = seal_with_passkey(
        &passkey,
        &rp_id,
        &origin,
        &svc_core::dsse::payload_type(svc_core::custody::CUSTODY_REQUEST_V1),
        &request,
        103,
    )
    .unwrap();
    assert!(svc_node::service::portal::hosted::switch(state, &uuid, &consent).await.unwrap(), "hosted signing is on");
    let by_service = another_product(spec, "hosted-1");
    let payload =
        seal_v2_payload("", &context, "products", &by_service, svc_clock::Clock::now(&svc_clock::SystemClock), None)
            .unwrap();
    let seal =
        svc_node::service::portal::hosted::sign(state, &uuid, &svc_core::dsse::payload_type("seal.v2"), &payload)
            .unwrap();
    let id = save(by_service, seal).await;
    let (code, _, stderr) = verify(id).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("seal: signed by the business's sealing key, as its signed key statement lists it; the service holds it for the business (hosted signing), as the signed custody statement in force then says"), "{stderr}");
    region.node.stop().await;
}
