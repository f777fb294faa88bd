//! The AI-company portal in headless Chromium against a `svc node`: the
//! first owner joins with a passkey; a production retrieval key is refused
//! until the company accepts the Terms in force (recorded with its version
//! and hash), then registered; the key's signed search and fetch appear as
//! receipts, usage and bills; the receipts download holds the signed
//! receipts; the key is revoked; roles are an AI company's.

use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};
use svc_client::admin::Admin;
use svc_client::retrieval::RetrievalClient;
use svc_client::transport::Transport;
use svc_core::keys::{Alg, SigningKey};

use crate::browser::Browser;
use crate::process::{self, AUTHORITY, TOKEN};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The download, with the browser's session: its lines.
async fn download(browser: &Browser, home: &process::Process, query: &str) -> Vec<Value> {
    let cookie = browser.cookie("svc_portal").await.unwrap()["value"].as_str().unwrap().to_owned();
    let request = Request::get(format!("/portal/company/receipts/download?{query}"))
        .header("cookie", format!("svc_portal={cookie}"))
        .body(Body::empty())
        .unwrap();
    let answer = Transport::new(&home.public_url).unwrap().send(request).await.unwrap();
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
    assert_eq!(answer.headers["content-type"], "application/jsonl");
    String::from_utf8(answer.bytes.to_vec()).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

// rule: R5.50, R4.18, R4.19
#[tokio::test(flavor = "multi_thread")]
async fn an_ai_company_registers_a_key_after_accepting_the_terms_and_reads_its_receipts_and_bills() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let home = process::start_portal_home(dir.path(), port);
    let admin = Admin::new(&home.admin_url, TOKEN.into()).unwrap();
    let terms = json!({"version": 1, "effective_from": "2026-01-01T00:00:00Z", "text": "Use a record once."});
    let published = admin.call("POST", "/admin/terms", Some(terms)).await.unwrap();
    let sha256 = published["sha256"].as_str().expect("the Terms' hash").to_owned();
    // A business with one product, for the company to find.
    let integration = SigningKey::from_seed(Alg::Ed25519, &[81; 32]).unwrap();
    let passkey = SigningKey::from_seed(Alg::Es256, &[82; 32]).unwrap();
    let context = process::onboard(&admin, &integration, &passkey).await;
    let public = Transport::new(&home.public_url).unwrap();
    let pushed = svc::chaos::setup::publish(&public, &integration, &context, &[process::product(1)], 1, AUTHORITY)
        .await
        .unwrap();
    assert_eq!(pushed.status, 200, "{}", String::from_utf8_lossy(&pushed.bytes));

    let created = admin
        .call(
            "POST",
            "/admin/companies",
            Some(json!({"name": "Far AI", "verified": true, "owner_email": "ines@far.example"})),
        )
        .await
        .unwrap();
    let invitation = created["owner_invitation"]["url"].as_str().unwrap().to_owned();
    let site = format!("http://localhost:{port}");
    let browser = Browser::start("company-portal-pages").await;

    // The first owner joins; the portal is the AI company's.
    browser.open(&invitation).await;
    browser.wait_for("the invitation page", |_, page| page.contains("Join Far AI")).await;
    // An AI company's passkey signs in; it seals nothing, and the page says so.
    let said = browser.script("return document.getElementById('passkey-use').textContent", json!([])).await;
    assert!(said.as_str().unwrap().contains("it seals nothing"), "{said}");
    browser.fill("#name", "Inès Roy").await;
    browser.click("#register-button").await;
    browser.wait_for("the usage page", |_, page| page.contains("<h1>Usage</h1>")).await;
    let page = browser.source().await;
    assert!(page.contains("AI-company portal") && page.contains("Production keys are refused now"), "{page}");
    browser.shot("01-usage-before").await;
    // A business's page is not the company's.
    browser.open(&format!("{site}/portal/keys")).await;
    browser.wait_for("the refusal", |_, page| page.contains("this page is a business")).await;

    // A group, and a production key refused until the Terms are accepted.
    let key = SigningKey::from_seed(Alg::Ed25519, &[83; 32]).unwrap();
    browser.open(&format!("{site}/portal/company/keys")).await;
    browser.fill("#group-name", "assistants").await;
    browser.click("form.add-group button").await;
    browser.wait_for("the group", |_, page| page.contains("Made the group assistants")).await;
    let jwk = serde_json::to_string(&key.verifying_key().to_jwk()).unwrap();
    browser.script("document.querySelector('form.add-key').closest('details').open = true", json!([])).await;
    browser.fill("form.add-key textarea", &jwk).await;
    browser.click("form.add-key button").await;
    browser.wait_for("the refusal", |_, page| page.contains("needs the Terms in force accepted")).await;
    browser.shot("02-key-refused").await;

    browser.open(&format!("{site}/portal/company/terms")).await;
    browser.wait_for("the Terms", |_, page| page.contains("Use a record once.")).await;
    browser.shot("03-terms").await;
    browser.click("#accept button").await;
    browser.wait_for("the acceptance", |_, page| page.contains("accepted Terms version 1")).await;
    let state = browser.script("return document.getElementById('terms-state').textContent", json!([])).await;
    assert!(state.as_str().unwrap().contains(&format!("version 1\n({sha256})")), "recorded with its hash: {state}");
    // Accepted: the version reads so, and there is nothing left to accept.
    let page = browser.source().await;
    assert!(page.contains("id=\"accepted\"") && !page.contains("id=\"accept\""), "{page}");
    browser.shot("03b-terms-accepted").await;

    browser.open(&format!("{site}/portal/company/keys")).await;
    browser.script("document.querySelector('form.add-key').closest('details').open = true", json!([])).await;
    browser.fill("form.add-key textarea", &jwk).await;
    browser.click("form.add-key button").await;
    browser.wait_for("the key", |_, page| page.contains("Registered retrieval key")).await;
    browser.shot("04-key-registered").await;
    let key_id = key.verifying_key().thumbprint();
    assert!(browser.source().await.contains(&format!("<code>{key_id}</code>")));
    // Listed in the public key directory by an owner.
    browser.click("form.directory button").await;
    browser.wait_for("the listing", |_, page| page.contains("Your live keys are listed")).await;
    let directory = public
        .send(Request::get("/v1/key-directory").header("host", AUTHORITY).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let directory: Value = serde_json::from_slice(&directory.bytes).unwrap();
    let listed = directory["companies"].as_array().unwrap().iter().find(|c| c["name"] == "Far AI").cloned();
    assert_eq!(listed.map(|c| c["keys"][0]["key_id"].clone()), Some(json!(key_id)), "{directory}");

    // The key searches and fetches: billed, and receipted.
    let client = RetrievalClient::new(&home.public_url, AUTHORITY, key.clone(), None).unwrap();
    let body =
        json!({"collection": "products", "filter": {"all": [{"country": "FR"}]}, "sort_by": "published_at:desc"});
    let mut found = None;
    for _ in 0..200 {
        let answer = client.call("POST", "/v1/search", serde_json::to_vec(&body).unwrap()).await.unwrap();
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
        if let Some(row) = answer.json()["rows"].as_array().and_then(|r| r.first()).cloned() {
            found = Some((row, answer.json()["retrieval_id"].clone()));
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let (row, retrieval_id) = found.expect("the product is found");
    let fetched = client.call("GET", &format!("/v1/records/{}", row["record_id"].as_str().unwrap()), Vec::new()).await;
    assert_eq!(fetched.unwrap().status, 200);

    browser.open(&format!("{site}/portal/company/receipts")).await;
    browser.wait_for("the receipts", |_, page| page.contains("id=\"receipts\"")).await;
    browser.shot("05-receipts").await;
    let kinds = browser
        .script(
            "return [...document.querySelectorAll('#receipts tbody tr td:nth-child(2)')].map(t => t.textContent)",
            json!([]),
        )
        .await;
    assert!(kinds.as_array().unwrap().len() >= 2 && kinds.as_array().unwrap().contains(&json!("fetch")), "{kinds}");
    let query = browser
        .script("return document.getElementById('download').getAttribute('href').split('?')[1]", json!([]))
        .await;
    let lines = download(&browser, &home, query.as_str().unwrap()).await;
    let search = lines.iter().find(|l| l["retrieval_id"] == retrieval_id).expect("the search's receipt is downloaded");
    // A day picked is the whole day; a filter refused is said on the page,
    // which keeps the rest of it.
    browser.open(&format!("{site}/portal/company/receipts?from=2020-01-01&to=2099-12-31")).await;
    browser.wait_for("the filtered receipts", |_, page| page.contains("id=\"receipts\"")).await;
    browser.open(&format!("{site}/portal/company/receipts?from=2026-13-45")).await;
    browser.wait_for("the refusal", |_, page| page.contains("id=\"refusal\"") && page.contains("id=\"group\"")).await;
    assert_eq!((search["kind"].as_str(), search["caller_key_id"].as_str()), (Some("search"), Some(key_id.as_str())));
    let envelope = svc_core::dsse::Envelope::from_value(&search["receipt"]).expect("a signed receipt envelope");
    assert!(envelope.payload_type.ends_with("receipt.v3+json"), "{}", envelope.payload_type);

    // Usage and bills: a chart of 30 days, twelve months, the billed count.
    browser.open(&format!("{site}/portal/")).await;
    browser.wait_for("the usage", |_, page| page.contains("2 billed requests")).await;
    assert_eq!(browser.source().await.matches("<g class=\"day\">").count(), 30 + 12);
    let months = browser.script("return document.querySelectorAll('#bills tbody tr').length", json!([])).await;
    assert_eq!(months, 12);
    assert!(!browser.source().await.contains("Production keys are refused now"));
    browser.shot("06-usage").await;

    // Revoked in the portal, the key is refused.
    browser.open(&format!("{site}/portal/company/keys")).await;
    browser.click("form.revoke button").await;
    browser.wait_for("the revocation", |_, page| page.contains("revoked <time")).await;
    let refused = client.call("POST", "/v1/search", serde_json::to_vec(&body).unwrap()).await.unwrap();
    assert_eq!(refused.status, 401);
    assert_eq!(refused.json()["code"], "key_unknown");

    // An AI company's roles.
    browser.open(&format!("{site}/portal/people")).await;
    browser.wait_for("the people page", |_, page| page.contains("integration managers")).await;
    let roles = browser
        .script("return [...document.querySelectorAll('#invite-role option')].map(o => o.value)", json!([]))
        .await;
    assert_eq!(roles, json!(["owner", "admin", "integration_manager"]));
    let chosen = browser.script("return document.getElementById('invite-role').value", json!([])).await;
    assert_eq!(chosen, "integration_manager", "an invitation offers the least privileged role first");
    browser.shot("07-people").await;
}
