//! The business portal in a real browser: headless Chromium with a virtual
//! authenticator, against `svc node` processes (home and a read region).
//! The first owner accepts the operator's invitation with a new passkey,
//! signs out and in again, seals and publishes an event, a job and an AI
//! policy; an AI company's signed search finds the records at the read
//! region and `POST /v1/verify` accepts their passkey seals. Screenshots of
//! each page are kept under the test target's tmp directory
//! (`portal-pages/`).

use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};
use svc::cli::admin::Admin;
use svc::client::retrieval::RetrievalClient;
use svc::client::transport::Transport;

use crate::browser::Browser;
use crate::process::{self, AUTHORITY, TOKEN};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

const EVENT: &[(&str, &str)] = &[
    ("language", "fr"),
    ("event_id", "soiree-2026"),
    ("countries", "FR"),
    ("title", "Soirée de lancement des lampes"),
    ("start_at", "2026-12-10T18:00:00Z"),
    ("end_at", "2026-12-10T21:00:00Z"),
    ("event_type", "exhibition"),
    ("attendance_mode", "in_person"),
    ("city", "Lyon"),
    ("geo", r#"{"lat": 45.76, "lng": 4.84}"#),
];

const JOB: &[(&str, &str)] = &[
    ("language", "fr"),
    ("job_id", "J-12"),
    ("countries", "FR"),
    ("title", "Monteur de lampes"),
    ("description", "Nous cherchons un monteur.\nAtelier à Lyon."),
    ("employment_type", "full_time"),
    ("salary_disclosed", "false"),
    ("work_arrangement", "on_site"),
    ("city", "Lyon"),
];

/// Sets each form field by name, then submits the editor.
async fn submit_editor(browser: &Browser, fields: &[(&str, &str)]) {
    let values: serde_json::Map<String, Value> = fields.iter().map(|(k, v)| ((*k).into(), json!(v))).collect();
    browser
        .script(
            "for (const [name, value] of Object.entries(arguments[0])) {
               document.querySelector(`[name=\"${name}\"]`).value = value;
             }",
            json!([values]),
        )
        .await;
    browser.click("form.editor button[type=submit]").await;
}

/// Seals what the review page shows and waits for the page after it.
async fn seal(browser: &Browser, shot: &str, after: &str) {
    browser.wait_for("the review page", |_, page| page.contains("Seal and publish")).await;
    browser.shot(&format!("{shot}-review")).await;
    browser.click("#seal-button").await;
    browser.wait_for(after, |url, _| url.contains(after)).await;
    browser.shot(&format!("{shot}-saved")).await;
}

/// An AI company's search of `collection` in France at the read region,
/// until it finds a row.
async fn found_at(region: &str, key: &svc_core::keys::SigningKey, collection: &str, sort: &str) -> Value {
    let client = RetrievalClient::new(region, AUTHORITY, key.clone(), None).unwrap();
    let body = json!({"collection": collection, "filter": {"all": [{"country": "FR"}]}, "sort_by": sort, "limit": 5});
    for _ in 0..400 {
        let answer = client.call("POST", "/v1/search", serde_json::to_vec(&body).unwrap()).await.unwrap();
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
        if let Some(row) = answer.json()["rows"].as_array().and_then(|r| r.first()).cloned() {
            return row;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the read region never served the {collection} record");
}

/// The record a row names, fetched at the read region, checked by the
/// public `POST /v1/verify` there: a passkey seal over the exact bytes.
async fn verified_at(region: &str, key: &svc_core::keys::SigningKey, row: &Value) -> Value {
    let client = RetrievalClient::new(region, AUTHORITY, key.clone(), None).unwrap();
    let path = format!("/v1/records/{}", row["record_id"].as_str().unwrap());
    let fetched = client.call("GET", &path, Vec::new()).await.unwrap();
    assert_eq!(fetched.status, 200, "{}", String::from_utf8_lossy(&fetched.bytes));
    #[derive(serde::Deserialize)]
    struct Raw<'a> {
        #[serde(borrow)]
        record: &'a serde_json::value::RawValue,
    }
    let raw: Raw<'_> = serde_json::from_slice(&fetched.bytes).unwrap();
    let body = fetched.json();
    let seal = &body["seal"];
    let signature = &seal["signatures"][0];
    assert!(signature["authenticatorData"].is_string() && signature["clientDataJSON"].is_string(), "{seal}");
    let check = json!({"record_base64": svc_core::b64::std_encode(raw.record.get().as_bytes()), "seal": seal,
        "row": row, "sidecar": body["sidecar"]});
    let request = Request::post("/v1/verify")
        .header("host", AUTHORITY)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(&check).unwrap()))
        .unwrap();
    let answer = Transport::new(region).unwrap().send(request).await.unwrap();
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
    answer.json()
}

// rule: P1.1, P1.3, P2.1.1, P2.1.2, P2.4.1
#[tokio::test(flavor = "multi_thread")]
async fn a_person_publishes_an_event_a_job_and_an_ai_policy_from_the_portal() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let home = process::start_portal_home(dir.path(), port);
    let eu = process::start_portal_region(dir.path(), "eu", &home, port);
    let admin = Admin::new(&home.admin_url, TOKEN.into()).unwrap();
    let created = admin
        .call(
            "POST",
            "/admin/businesses",
            Some(json!({"legal_name": "Lumio", "country": "FR", "brands": ["Lumio"], "owner_email": "Ana@Lumio.example"})),
        )
        .await
        .unwrap();
    let invitation = created["owner_invitation"]["url"].as_str().unwrap().to_owned();
    assert_eq!(created["owner_invitation"]["email"], "ana@lumio.example");
    assert!(invitation.starts_with(&format!("http://localhost:{port}/portal/invitations/")), "{invitation}");
    let ai_key = process::ai_company(&admin, "Far AI", 61, None).await;
    let site = format!("http://localhost:{port}");
    let browser = Browser::start("portal-pages").await;

    // The first owner accepts the invitation with a new passkey.
    browser.open(&invitation).await;
    browser.wait_for("the invitation page", |_, page| page.contains("Join Lumio")).await;
    browser.shot("01-invitation").await;
    browser.fill("#name", "Ana Martin").await;
    browser.click("#register-button").await;
    browser.wait_for("the records page", |url, _| url.ends_with("/portal/")).await;
    browser.shot("02-records").await;
    let session = browser.cookie("svc_portal").await.expect("a session cookie");
    assert_eq!((session["httpOnly"].as_bool(), session["sameSite"].as_str()), (Some(true), Some("Strict")));
    assert_eq!(session["path"], "/portal");

    // Out, and in again with the same passkey.
    browser.click("header form button").await;
    browser.wait_for("the sign-in page", |url, _| url.ends_with("/portal/sign-in")).await;
    browser.open(&format!("{site}/portal/")).await;
    browser.wait_for("sign-in again", |url, _| url.ends_with("/portal/sign-in")).await;
    browser.fill("#email", "ana@lumio.example").await;
    browser.shot("03-sign-in").await;
    browser.click("#sign-in-button").await;
    browser.wait_for("signed in", |url, _| url.ends_with("/portal/")).await;

    // An event with its title left out is refused with the API's reason,
    // next to the member; nothing is sealed.
    browser.open(&format!("{site}/portal/records/new/events")).await;
    let untitled: Vec<(&str, &str)> = EVENT.iter().copied().filter(|(k, _)| *k != "title").collect();
    submit_editor(&browser, &untitled).await;
    browser.wait_for("the reasons", |_, page| page.contains("field_missing")).await;
    let page = browser.source().await;
    assert!(page.contains("<code>/title</code>"), "{page}");
    browser.shot("04-event-refused").await;

    // The event, then a job, sealed by the passkey and published.
    browser.open(&format!("{site}/portal/records/new/events")).await;
    browser.shot("05-event-editor").await;
    submit_editor(&browser, EVENT).await;
    seal(&browser, "06-event", "/portal/records/").await;
    let page = browser.source().await;
    assert!(page.contains("soiree-2026") && page.contains("live"), "{page}");

    browser.open(&format!("{site}/portal/records/new/jobs")).await;
    submit_editor(&browser, JOB).await;
    seal(&browser, "07-job", "/portal/records/").await;

    // The AI policy: the flags chosen become version 1.
    browser.open(&format!("{site}/portal/ai-policy")).await;
    browser.wait_for("the AI policy page", |_, page| page.contains("Version in force: <strong>0</strong>")).await;
    for flag in ["use.cite_as_source", "action.answer", "blocked.politics_elections"] {
        browser.click(&format!("input[name=\"{flag}\"]")).await;
    }
    browser.shot("08-ai-policy").await;
    browser.click("form.policy button[type=submit]").await;
    seal(&browser, "09-ai-policy", "/portal/ai-policy").await;
    browser.wait_for("version 1", |_, page| page.contains("Version in force: <strong>1</strong>")).await;

    browser.open(&format!("{site}/portal/")).await;
    browser.wait_for("both records listed", |_, page| page.contains("soiree-2026") && page.contains("J-12")).await;
    browser.shot("10-records").await;

    // An AI company finds both at the read region; their passkey seals verify there.
    let event = found_at(&eu.public_url, &ai_key, "events", "start_at:asc").await;
    let job = found_at(&eu.public_url, &ai_key, "jobs", "published_at:desc").await;
    for row in [&event, &job] {
        let verdict = verified_at(&eu.public_url, &ai_key, row).await;
        let seal = &verdict["seal"];
        assert_eq!((seal["valid"].as_bool(), seal["path"].as_str()), (Some(true), Some("B")), "{verdict}");
        assert_eq!(seal["checks"]["signature"], "ok", "the passkey's signature over the exact bytes: {verdict}");
        assert_eq!(verdict["projection"]["rerun"], "matches", "{verdict}");
    }
}
