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
use svc_client::admin::Admin;
use svc_client::retrieval::RetrievalClient;
use svc_client::transport::Transport;

use crate::browser::Browser;
use crate::process::{self, AUTHORITY, TOKEN};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// An event as a person gives it: typed, picked from lists, a second
/// country added with its button, a time in its zone.
const EVENT: &[(&str, &str)] = &[
    ("/language", "fr"),
    ("/event_id", "soiree-2026"),
    ("/countries/0", "FR"),
    ("/countries/1", "BE"),
    ("/title", "Soirée de lancement des lampes"),
    ("/start_at", "2026-12-10T19:00"),
    ("/start_at#zone", "Europe/Paris"),
    ("/end_at", "2026-12-10T22:00"),
    ("/end_at#zone", "Europe/Paris"),
    ("/event_type", "exhibition"),
    ("/attendance_mode", "in_person"),
    ("/city", "Lyon"),
    ("/geo/lat", "45.76"),
    ("/geo/lng", "4.84"),
];

/// The event's top-level members, with `schema`: a line each in its bytes.
const EVENT_MEMBERS: u64 = 11;

const JOB: &[(&str, &str)] = &[
    ("/language", "fr"),
    ("/job_id", "J-12"),
    ("/countries/0", "FR"),
    ("/title", "Monteur de lampes"),
    ("/description", "Nous cherchons un monteur.\nAtelier à Lyon."),
    ("/employment_type", "full_time"),
    ("/salary_disclosed", "false"),
    ("/work_arrangement", "on_site"),
    ("/city", "Lyon"),
];

/// A product priced in two countries: the second country and its price
/// row are each asked for with *Add another*.
const PRODUCT: &[(&str, &str)] = &[
    ("/language", "fr"),
    ("/business_product_id", "SKU-1042"),
    ("/product_name", "Lampe Aurore"),
    ("/countries/0", "FR"),
    ("/countries/1", "BE"),
    ("/prices/0/country", "FR"),
    ("/prices/0/currency", "EUR"),
    ("/prices/0/amount", "39.90"),
    ("/prices/1/country", "BE"),
    ("/prices/1/currency", "EUR"),
    ("/prices/1/amount", "41.50"),
    ("/on_sale", "false"),
    ("/availability", "in_stock"),
    ("/product_url", "https://lumio.example/aurore"),
    ("/tags/0", "lampe"),
    ("/tags/1", "laiton"),
];

/// The business's own file: a location with its map position, ticked
/// delivery options and payment methods.
const BUSINESS_FILE: &[(&str, &str)] = &[
    ("/language", "fr"),
    ("/business_file_id", "lumio"),
    ("/countries/0", "FR"),
    ("/description", "Luminaires dessinés et montés à Lyon."),
    ("/brands_owned/0/name", "Lumio"),
    ("/delivery/options", "shipping"),
    ("/delivery/options", "pickup"),
    ("/payment/methods", "card"),
    ("/locations/0/name", "Atelier Lumio"),
    ("/locations/0/address", "12 rue des Lampes"),
    ("/locations/0/city", "Lyon"),
    ("/locations/0/country", "FR"),
    ("/locations/0/geo/lat", "45.76"),
    ("/locations/0/geo/lng", "4.84"),
    ("/year_established", "2019"),
];

const UPDATE: &[(&str, &str)] = &[
    ("/language", "fr"),
    ("/update_id", "u-portal"),
    ("/countries/0", "FR"),
    ("/headline", "Horaires de fêtes"),
    ("/body", "Fermeture à 16 h le 24 décembre."),
    ("/update_type", "announcement"),
    ("/relevant_until", "2026-12-26T00:00"),
    ("/relevant_until#zone", "UTC"),
];

/// Wraps the page's `fetch` so the seal's answer is kept in the tab's
/// session storage (`keep`), or sent with its client data naming another
/// site (`another-origin`), as a phishing page's would.
async fn intercept(browser: &Browser, mode: &str) {
    let script = "const mode = arguments[0];
        const original = window.fetch.bind(window);
        const b64 = (t) => t.replace(/-/g, '+').replace(/_/g, '/');
        const url64 = (t) => t.replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
        window.fetch = (url, init) => {
          if (String(url).includes('/portal/seal/')) {
            if (mode === 'another-origin') {
              const answer = JSON.parse(init.body);
              const text = b64(answer.client_data_json);
              const client = JSON.parse(atob(text + '==='.slice((text.length + 3) % 4)));
              client.origin = 'https://evil.example';
              answer.client_data_json = url64(btoa(JSON.stringify(client)));
              init = {...init, body: JSON.stringify(answer)};
            }
            sessionStorage.setItem('sealed', JSON.stringify({url: String(url), body: init.body,
              csrf: init.headers['x-csrf-token']}));
          }
          return original(url, init);
        };";
    browser.script(script, json!([mode])).await;
}

const AD: &[(&str, &str)] = &[
    ("/language", "fr"),
    ("/ad_id", "winter-lamps"),
    ("/countries/0", "FR"),
    ("/headline", "Lampes Lumio"),
    ("/description", "Une lumière chaude pour les longues soirées."),
    ("/cta_text", "Voir les lampes"),
    ("/destination_url", "https://shop.example.com/lampes"),
];

/// An owner invites a developer, who signs up in another browser and may
/// not save records; made admin, they may; removed, their session ends at
/// once and their passkey is revoked.
async fn people_flows(owner: &Browser, site: &str, home: &process::Process, uuid: &str) {
    owner.open(&format!("{site}/portal/people")).await;
    owner.fill("#invite-email", "dev at lumio").await;
    owner.script("document.getElementById('invite-role').value = 'admin'", json!([])).await;
    owner.click("form.invite button").await;
    owner.wait_for("the refusal", |_, page| page.contains("id=\"refusal\"")).await;
    let kept = owner
        .script(
            "return [document.getElementById('invite-email').value, document.getElementById('invite-role').value]",
            json!([]),
        )
        .await;
    assert_eq!(kept, json!(["dev at lumio", "admin"]), "the refused invitation keeps what was typed");
    owner.fill("#invite-email", "dev@lumio.example").await;
    owner.script("document.getElementById('invite-role').value = 'developer'", json!([])).await;
    owner.click("form.invite button").await;
    owner.wait_for("the invitation link", |_, page| page.contains("invitation-link")).await;
    owner.shot("12-people-invited").await;
    let link = owner.script("return document.getElementById('invitation-link').textContent", json!([])).await;
    assert!(owner.source().await.contains("<td>dev@lumio.example</td>"), "the waiting invitation is listed");
    // A second invitation, cancelled from the page: no longer listed.
    owner.fill("#invite-email", "temp@lumio.example").await;
    owner.click("form.invite button").await;
    owner.wait_for("the second invitation", |_, page| page.contains("<td>temp@lumio.example</td>")).await;
    owner.click("#invitations tbody tr:nth-child(2) form.cancel button").await;
    owner.wait_for("the cancellation", |_, page| !page.contains("temp@lumio.example")).await;
    assert!(owner.source().await.contains("<td>dev@lumio.example</td>"), "the other invitation stays");

    let developer = Browser::start("portal-pages-developer").await;
    developer.open(link.as_str().unwrap()).await;
    developer.wait_for("the invitation page", |_, page| page.contains("as <strong>developer</strong>")).await;
    developer.fill("#name", "Dev Person").await;
    developer.click("#register-button").await;
    developer.wait_for("the records page", |url, _| url.ends_with("/portal/")).await;
    assert!(!developer.source().await.contains("New event"), "a developer is offered no saves");
    developer.open(&format!("{site}/portal/records/new/events")).await;
    developer.wait_for("the refusal", |_, page| page.contains("needs the role owner or admin")).await;
    developer.shot("01-developer-refused").await;
    // A developer manages integration keys but cannot seal a mandate.
    developer.open(&format!("{site}/portal/keys")).await;
    developer.wait_for("the keys page", |_, page| page.contains("Register an integration key")).await;
    assert!(!developer.source().await.contains("Seal a mandate for this key"));
    let key_id = developer.script("return document.querySelector('section.key h2 code').textContent", json!([])).await;
    developer
        .script(
            "const form = document.createElement('form');
             form.method = 'post';
             form.action = `/portal/keys/${arguments[0]}/mandates`;
             const fields = [['csrf', document.querySelector('input[name=csrf]').value], ['record_type', 'products'],
               ['countries', 'FR'], ['records_per_hour', '1'], ['bytes_per_day', '1'], ['days', '1']];
             for (const [name, value] of fields) {
               const input = document.createElement('input');
               input.name = name;
               input.value = value;
               form.appendChild(input);
             }
             document.body.appendChild(form);
             form.submit();",
            json!([key_id]),
        )
        .await;
    developer
        .wait_for("the mandate refusal", |_, page| page.contains("sealing a mandate needs the role owner or admin"))
        .await;

    owner.open(&format!("{site}/portal/people")).await;
    owner.script("document.querySelector('form[action$=\"/role\"] select').value = 'admin'", json!([])).await;
    owner.click("form[action$=\"/role\"] button").await;
    owner.wait_for("the new role", |_, page| page.contains("<td>admin</td>")).await;
    developer.open(&format!("{site}/portal/records/new/events")).await;
    developer.wait_for("the editor", |_, page| page.contains("Save event")).await;

    owner.click("form[action$=\"/remove\"] button").await;
    owner.wait_for("the removal", |_, page| page.contains("class=\"removed\"")).await;
    owner.shot("13-people-removed").await;
    developer.open(&format!("{site}/portal/records/new/events")).await;
    developer.wait_for("the session's end", |url, _| url.ends_with("/portal/sign-in")).await;

    // The removed person's passkey is revoked in the business's public keys.
    assert_eq!(owner.script("return document.cookie", json!([])).await, "", "the session cookie is HttpOnly");
    let request =
        Request::get(format!("/v1/certificates/{uuid}/keys")).header("host", AUTHORITY).body(Body::empty()).unwrap();
    let answer = Transport::new(&home.public_url).unwrap().send(request).await.unwrap();
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
    let keys: Vec<Value> =
        answer.json()["keys"].as_array().unwrap().iter().filter(|k| k["purpose"] == "sealing").cloned().collect();
    let revoked = keys.iter().filter(|k| !k["revocation_effective_from"].is_null()).count();
    assert_eq!((keys.len(), revoked), (2, 1), "{keys:?}");
}

/// An owner turns hosted signing on with their passkey: the service's key
/// gets a `hosted` custody statement (public, and a `key_custody` leaf in
/// the log); an update is then confirmed without a passkey, signed by the
/// service, found and verified at the read region as Path B. Turned off,
/// the key is revoked and a review page no longer offers the service.
async fn hosted_flows(
    browser: &Browser,
    site: &str,
    home: &process::Process,
    eu: &process::Process,
    admin: &Admin,
    ai_key: &svc_core::keys::SigningKey,
    uuid: &str,
) {
    browser.open(&format!("{site}/portal/signing")).await;
    browser.wait_for("the signing page", |_, page| page.contains("Hosted signing is <strong>off</strong>")).await;
    browser.shot("17-signing-off").await;
    browser.click("#switch button").await;
    seal_to(browser, "turn on hosted signing", "18-hosted-on", "/portal/signing").await;
    browser.wait_for("hosted signing on", |_, page| page.contains("Hosted signing is <strong>on</strong>")).await;
    confirmed(browser, "Hosted signing turned on").await;
    browser.shot("18-signing-on").await;
    let public = |path: String| async move {
        let request = Request::get(path).header("host", AUTHORITY).body(Body::empty()).unwrap();
        let answer = Transport::new(&home.public_url).unwrap().send(request).await.unwrap();
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
        answer.json()
    };
    let custody = public(format!("/v1/certificates/{uuid}/key-custody")).await;
    let statement = custody["statements"][0].clone();
    assert_eq!(statement["custody"], "hosted", "the newest statement: {custody}");
    let hosted_key = statement["key_id"].as_str().unwrap().to_owned();
    assert!(browser.source().await.contains(&hosted_key), "the page names the service's key");
    let keys = public(format!("/v1/certificates/{uuid}/keys")).await;
    let listed = keys["keys"].as_array().unwrap().iter().find(|k| k["key_id"] == hosted_key.as_str()).cloned();
    assert_eq!(listed.map(|k| (k["purpose"].clone(), k["kind"].clone())), Some((json!("sealing"), json!("ed25519"))));
    let sequenced = admin.call("POST", "/admin/log/sequence", None).await.unwrap();
    assert!(sequenced.is_object(), "{sequenced}");
    let effective_from = svc_core::time::UnixMs::parse_rfc3339(statement["effective_from"].as_str().unwrap()).unwrap();
    let leaf = svc_core::tlog::key_custody_leaf(
        uuid,
        &hosted_key,
        "hosted",
        effective_from,
        statement["statement_id"].as_str().unwrap(),
    );
    let proof = public(format!("/v1/log/proof?leaf_hash={}", svc_core::tlog::leaf_name(&leaf))).await;
    assert_eq!(proof["kind"], "key_custody", "the switch is in the log: {proof}");

    // An update confirmed by the person and signed by the service.
    let update: Vec<(&str, &str)> =
        UPDATE.iter().map(|&(k, v)| if k == "/update_id" { (k, "u-hosted") } else { (k, v) }).collect();
    browser.open(&format!("{site}/portal/records/new/updates")).await;
    submit_editor(browser, &update).await;
    browser.wait_for("the review page", |_, page| page.contains("signed by the service")).await;
    browser.shot("19-hosted-review").await;
    browser.click("#confirm-button").await;
    // The review sat at /portal/records/new/updates: wait for the record's own page.
    browser.wait_for("the saved update", |url, _| url.contains("/portal/records/") && !url.contains("/new/")).await;
    browser.wait_for("the update's page", |_, page| page.contains("u-hosted")).await;
    browser.shot("20-hosted-saved").await;
    let row = found_at(&eu.public_url, ai_key, "updates", "published_at:desc").await;
    let (verdict, seal) = verified_at(&eu.public_url, ai_key, &row).await;
    assert!(seal["signatures"][0]["authenticatorData"].is_null(), "the service's plain signature: {seal}");
    let judged = &verdict["seal"];
    assert_eq!((judged["valid"].as_bool(), judged["path"].as_str()), (Some(true), Some("B")), "{verdict}");
    assert_eq!(judged["key_id"], hosted_key.as_str(), "{verdict}");

    // Off again: the key is revoked, and saves need a passkey once more.
    browser.open(&format!("{site}/portal/signing")).await;
    browser.click("#switch button").await;
    seal_to(browser, "turn off hosted signing", "21-hosted-off", "/portal/signing").await;
    browser.wait_for("hosted signing off", |_, page| page.contains("Hosted signing is <strong>off</strong>")).await;
    confirmed(browser, "Hosted signing turned off").await;
    browser.shot("21-signing-off-again").await;
    let keys = public(format!("/v1/certificates/{uuid}/keys")).await;
    let revoked = keys["keys"].as_array().unwrap().iter().find(|k| k["key_id"] == hosted_key.as_str()).cloned();
    assert!(revoked.is_some_and(|k| k["revocation_effective_from"].is_string()), "{keys}");
    browser.open(&format!("{site}/portal/records/new/updates")).await;
    submit_editor(browser, &update).await;
    browser.wait_for("the review page", |_, page| page.contains("Seal and publish")).await;
    assert!(!browser.source().await.contains("confirm-button"), "the service no longer signs");
}

/// Fills the campaign form (running in France on the keyword `lamp` unless
/// `fields` say otherwise) and ticks the record it places.
async fn fill_campaign(browser: &Browser, fields: &[(&str, &str)], item: &str) {
    let mut values = serde_json::Map::new();
    for (name, value) in [("keywords", "lamp"), ("countries", "FR")].iter().chain(fields) {
        values.insert((*name).into(), json!(value));
    }
    browser
        .script(
            "const form = document.querySelector('form.campaign');
             for (const [name, value] of Object.entries(arguments[0])) {
               form.querySelector(`[name=\"${name}\"]`).value = value;
             }
             form.querySelector(`input[name=item][value=\"${arguments[1]}\"]`).checked = true;",
            json!([values, item]),
        )
        .await;
}

/// An owner starts a sponsorship campaign with their passkey; once the
/// operator funds it, the read region marks its product `sponsored` in a
/// search; paused in the portal, the mark goes.
async fn campaign_flows(
    browser: &Browser,
    site: &str,
    home: &process::Process,
    eu: &process::Process,
    ai_key: &svc_core::keys::SigningKey,
) {
    browser.open(&format!("{site}/portal/campaigns")).await;
    browser.wait_for("the campaigns page", |_, page| page.contains("Start a campaign")).await;
    let item = browser.script("return document.querySelector('input[name=item]').value", json!([])).await;
    let item = item.as_str().unwrap().to_owned();
    // The form offers only what a sponsorship places (products), by name.
    let offered = browser
        .script(
            "return [...document.querySelectorAll('input[name=item]')].map((i) => i.parentElement.textContent.trim())",
            json!([]),
        )
        .await;
    let offered: Vec<String> = serde_json::from_value(offered).unwrap();
    assert!(offered.contains(&"Lampe Aurore (SKU-1042)".to_owned()), "{offered:?}");
    assert!(offered.iter().all(|o| o.contains("SKU-")), "{offered:?}");
    // Refused (no budget), the form comes back as it was typed.
    let terms = [("name", "Winter lamps"), ("budget", ""), ("net_price", "4.00")];
    fill_campaign(browser, &terms, &item).await;
    browser.click("form.campaign button[type=submit]").await;
    browser.wait_for("the refusal", |_, page| page.contains("id=\"refusal\"")).await;
    let kept = browser.script("return [document.getElementById('c-name').value, document.querySelector(`input[name=item][value=\"${arguments[0]}\"]`).checked]", json!([item])).await;
    assert_eq!(kept, json!(["Winter lamps", true]));
    browser.shot("22-campaign-refused").await;
    let terms = [("name", "Winter lamps"), ("budget", "50"), ("net_price", "4.00"), ("keywords", "lamp, lighting")];
    fill_campaign(browser, &terms, &item).await;
    browser.shot("22-campaign-form").await;
    browser.click("form.campaign button[type=submit]").await;
    seal_to(browser, "start", "23-campaign", "/portal/campaigns").await;
    // Active, but funded with nothing: it says so, and places nothing yet.
    browser
        .wait_for("the campaign", |_, page| page.contains("Winter lamps") && page.contains(">waiting for funding<"))
        .await;
    confirmed(browser, "Campaign created: Winter lamps is waiting for funding").await;
    let campaign = browser.script("return document.querySelector('#campaigns code').textContent", json!([])).await;
    // The operator funds it with `svc admin campaign fund`.
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_svc"))
        .args(["admin", "--url", &home.admin_url, "--token", TOKEN, "campaign", "fund"])
        .args([campaign.as_str().unwrap(), "--amount", "20"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let funded: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(funded["funded"], "20.00");
    assert!(funded["items"].as_array().unwrap().contains(&json!(item)));
    let client = RetrievalClient::new(&eu.public_url, AUTHORITY, ai_key.clone(), None).unwrap();
    let body = json!({"collection": "products", "filter": {"all": [{"country": "FR"}]}, "sort_by": "price_amount:asc"});
    let marked = |rows: &Value| -> Vec<String> {
        rows.as_array()
            .unwrap()
            .iter()
            .filter(|r| r["sponsored"] == true)
            .map(|r| r["record_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut seen = Vec::new();
    for _ in 0..400 {
        let answer = client.call("POST", "/v1/search", serde_json::to_vec(&body).unwrap()).await.unwrap();
        seen = marked(&answer.json()["rows"]);
        if !seen.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(seen, std::slice::from_ref(&item), "the funded campaign's product, marked at the read region");
    // The read region's `sponsored` filter answers from the same campaigns.
    let filtered = |sponsored: bool| {
        let mut body = body.clone();
        body["filter"]["all"].as_array_mut().unwrap().push(json!({"sponsored": sponsored}));
        serde_json::to_vec(&body).unwrap()
    };
    let only = client.call("POST", "/v1/search", filtered(true)).await.unwrap().json();
    assert_eq!(marked(&only["rows"]), std::slice::from_ref(&item));
    assert_eq!(only["rows"].as_array().unwrap().len(), 1, "only the paid row: {only}");
    browser.open(&format!("{site}/portal/campaigns")).await;
    browser.click("form.campaign-state button[value=paused]").await;
    browser.wait_for("the pause", |_, page| page.contains(">paused</td>")).await;
    assert!(browser.source().await.contains("spent 0.00, left 20.00"), "the lesser of budget and funds is left");
    browser.shot("24-campaign-paused").await;
    for _ in 0..400 {
        let answer = client.call("POST", "/v1/search", serde_json::to_vec(&body).unwrap()).await.unwrap();
        seen = marked(&answer.json()["rows"]);
        if seen.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(seen.is_empty(), "a paused campaign places nothing");
    let only = client.call("POST", "/v1/search", filtered(true)).await.unwrap().json();
    assert_eq!(only["rows"], json!([]), "paused, nothing is sponsored: {only}");

    // An ad is a record sealed like the others, and an ad campaign places it.
    browser.open(&format!("{site}/portal/records/new/ads")).await;
    submit_editor(browser, AD).await;
    seal(browser, "25-ad", "/portal/records/ad_").await;
    browser.wait_for("the ad", |_, page| page.contains("winter-lamps") && page.contains("<code>live</code>")).await;
    let url = browser.url().await;
    let ad_id = url.rsplit('/').next().unwrap().split('?').next().unwrap().to_owned();
    assert!(ad_id.starts_with("ad_"), "{ad_id}");
    browser.open(&format!("{site}/portal/campaigns?placement=ad")).await;
    let terms = [("name", "Lamp ads"), ("budget", "10"), ("net_price", "0.50"), ("basis", "cpc")];
    fill_campaign(browser, &terms, &ad_id).await;
    browser.click("form.campaign button[type=submit]").await;
    seal_to(browser, "start", "26-ad-campaign", "/portal/campaigns").await;
    browser.wait_for("the ad campaign", |_, page| page.contains("Lamp ads") && page.contains("1 ads")).await;
}

/// Sets each form field by name, then submits the editor.
/// Fills the editor as a person would, never with JSON: text typed into
/// each input, a picker's option clicked, a row the form lacks asked for
/// with its list's *Add another* button. A date and time is set through
/// the picker's value (its keys depend on the browser's locale).
async fn submit_editor(browser: &Browser, fields: &[(&str, &str)]) {
    for (name, value) in fields {
        let css = format!("form.editor [name=\"{name}\"]");
        let probe = "const e = document.querySelector(arguments[0]); return e ? `${e.tagName}:${e.type}` : null;";
        let mut kind = browser.script(probe, json!([css])).await;
        if kind.is_null() {
            // The list is the pointer up to its last row number.
            let tokens: Vec<&str> = name.split('/').collect();
            let row = tokens.iter().rposition(|t| t.parse::<usize>().is_ok()).expect("a row of a list");
            let list = tokens[..row].join("/");
            browser.click(&format!("button[name=_add][value=\"{list}\"]")).await;
            for _ in 0..200 {
                kind = browser.script(probe, json!([css])).await;
                if !kind.is_null() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        }
        match kind.as_str() {
            Some("SELECT:select-one") => browser.click(&format!("{css} option[value=\"{value}\"]")).await,
            Some("INPUT:datetime-local") => {
                browser.script("document.querySelector(arguments[0]).value = arguments[1]", json!([css, value])).await;
            }
            Some("INPUT:checkbox") => browser.click(&format!("{css}[value=\"{value}\"]")).await,
            Some(_) => browser.fill(&css, value).await,
            None => panic!("the editor has no input {name}"),
        }
    }
    browser.click("#review").await;
}

/// Seals what the review page shows and waits for the page after it.
async fn seal(browser: &Browser, shot: &str, after: &str) {
    seal_to(browser, "publish", shot, after).await;
}

/// The page a finished action led to says `what` in its confirmation.
async fn confirmed(browser: &Browser, what: &str) {
    let text = browser.script("return document.getElementById('confirmation')?.textContent ?? ''", json!([])).await;
    let text = text.as_str().unwrap_or_default().to_owned();
    assert!(text.contains(what), "the confirmation says {what:?}: {text:?}");
}

async fn seal_to(browser: &Browser, verb: &str, shot: &str, after: &str) {
    let heading = format!("Seal and {verb}");
    browser.wait_for("the review page", |_, page| page.contains(&heading)).await;
    browser.shot(&format!("{shot}-review")).await;
    browser.click("#seal-button").await;
    // The review page may sit at the address it leads to (the signing
    // page posts to itself): wait until it is gone too.
    browser.wait_for(after, |url, page| url.contains(after) && !page.contains(&heading)).await;
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

/// The account export, downloaded with the browser's session: its files.
async fn export(browser: &Browser, home: &process::Process) -> std::collections::BTreeMap<String, Vec<u8>> {
    let cookie = browser.cookie("svc_portal").await.unwrap()["value"].as_str().unwrap().to_owned();
    let request =
        Request::get("/portal/export").header("cookie", format!("svc_portal={cookie}")).body(Body::empty()).unwrap();
    let answer = Transport::new(&home.public_url).unwrap().send(request).await.unwrap();
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
    assert_eq!(answer.headers["content-type"], "application/x-tar");
    assert!(answer.headers["content-disposition"].to_str().unwrap().starts_with("attachment; filename=\"svc-export-"));
    let mut files = std::collections::BTreeMap::new();
    for entry in tar::Archive::new(&answer.bytes[..]).entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().display().to_string();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut bytes).unwrap();
        files.insert(path, bytes);
    }
    files
}

/// Waits until the read region serves no record of `collection` in France.
async fn gone_at(region: &str, key: &svc_core::keys::SigningKey, collection: &str, sort: &str) {
    let client = RetrievalClient::new(region, AUTHORITY, key.clone(), None).unwrap();
    let body = json!({"collection": collection, "filter": {"all": [{"country": "FR"}]}, "sort_by": sort, "limit": 5});
    for _ in 0..400 {
        let answer = client.call("POST", "/v1/search", serde_json::to_vec(&body).unwrap()).await.unwrap();
        if answer.json()["rows"].as_array().is_some_and(|rows| rows.is_empty()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the read region still serves the {collection} record");
}

/// The record a row names, fetched at the read region, checked by the
/// public `POST /v1/verify` there: a passkey seal over the exact bytes.
async fn verified_at(region: &str, key: &svc_core::keys::SigningKey, row: &Value) -> (Value, Value) {
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
    let check = json!({"record_base64": svc_core::b64::std_encode(raw.record.get().as_bytes()), "seal": seal,
        "row": row, "sidecar": body["sidecar"]});
    let request = Request::post("/v1/verify")
        .header("host", AUTHORITY)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(&check).unwrap()))
        .unwrap();
    let answer = Transport::new(region).unwrap().send(request).await.unwrap();
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.bytes));
    (answer.json(), seal.clone())
}

// rule: P1.1, P1.3, P1.5, P1.8, P1.9, P2.1.1, P2.1.2, P2.4.1, P2.6.24, P2.6.28
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
    let untitled: Vec<(&str, &str)> = EVENT.iter().copied().filter(|(k, _)| *k != "/title").collect();
    submit_editor(&browser, &untitled).await;
    browser.wait_for("the reasons", |_, page| page.contains("field_missing")).await;
    let page = browser.source().await;
    assert!(page.contains("<code>/title</code>"), "{page}");
    browser.shot("04-event-refused").await;

    // The event, then a job, sealed by the passkey and published.
    browser.open(&format!("{site}/portal/records/new/events")).await;
    browser.shot("05-event-editor").await;
    // Keyboard only: every control of the editor takes the focus in turn.
    assert!(browser.tab_walk("the event editor").await > 20);
    submit_editor(&browser, EVENT).await;
    browser.wait_for("the review page", |_, page| page.contains("Seal and publish")).await;
    // The review page sums the record up above its bytes, which are cut
    // between members only; back to the editor, nothing typed is lost.
    let review = browser.source().await;
    assert!(review.contains("id=\"summary\"") && review.contains("<dd>Lyon</dd>"), "{review}");
    assert!(review.contains("the event Soirée de lancement des lampes"), "{review}");
    let pieces = browser.script("return document.querySelectorAll('#bytes .piece').length", json!([])).await;
    assert_eq!(pieces.as_u64(), Some(EVENT_MEMBERS), "a piece a member, with schema");
    browser.click("#back-to-edit button").await;
    browser.wait_for("the editor again", |_, page| page.contains("Review and seal")).await;
    let title = browser.script("return document.getElementById('f-title').value", json!([])).await;
    assert_eq!(title, "Soirée de lancement des lampes");
    // Enter in a field reviews the record (not the first row button).
    browser.press_enter("#f-title").await;
    browser.wait_for("the review page", |_, page| page.contains("Seal and publish")).await;
    intercept(&browser, "keep").await;
    seal(&browser, "06-event", "/portal/records/").await;
    let kept = browser.script("return JSON.parse(sessionStorage.getItem('sealed'))", json!([])).await;
    let page = browser.source().await;
    assert!(page.contains("soiree-2026") && page.contains("live"), "{page}");
    // The record's page names it, says what was published and links its
    // public verify page; its content is shown member by member.
    confirmed(&browser, "Published Soirée de lancement des lampes (version 1)").await;
    assert!(page.contains("id=\"verify\"") && page.contains("id=\"edit\""), "{page}");
    assert!(page.contains("<dt>Town or city</dt><dd>Lyon</dd>"), "{page}");

    // A browser asking for French gets the editor's words, pickers and
    // buttons in French.
    let french = browser
        .script(
            "return fetch('/portal/records/new/products', {headers: {'accept-language': 'fr-FR,fr;q=0.9,en;q=0.5'}})
               .then((r) => r.text());",
            json!([]),
        )
        .await;
    let french = french.as_str().unwrap_or_default();
    for words in ["lang=\"fr\"", "Nom du produit", ">Allemagne</option>", ">Français</option>", "Relire et sceller"] {
        assert!(french.contains(words), "{words}: {french}");
    }

    browser.open(&format!("{site}/portal/records/new/jobs")).await;
    submit_editor(&browser, JOB).await;
    seal(&browser, "07-job", "/portal/records/").await;

    // A product and the business file, each filled input by input. A
    // price written wrongly is refused beside its own input, in words, and
    // nothing typed is lost.
    browser.open(&format!("{site}/portal/records/new/products")).await;
    let wrong: Vec<(&str, &str)> =
        PRODUCT.iter().map(|&(k, v)| if k == "/prices/1/amount" { (k, "41.5.0") } else { (k, v) }).collect();
    submit_editor(&browser, &wrong).await;
    browser.wait_for("the price's reason", |_, page| page.contains("id=\"f-prices-1-amount-error\"")).await;
    let typed = browser
        .script(
            "return ['f-prices-0-amount', 'f-prices-1-amount', 'f-product_name'].map((id) => \
             document.getElementById(id).value)",
            json!([]),
        )
        .await;
    assert_eq!(typed, json!(["39.90", "41.5.0", "Lampe Aurore"]));
    let reason =
        browser.script("return document.getElementById('f-prices-1-amount-error').textContent", json!([])).await;
    assert!(reason.as_str().unwrap().contains("such as 39.90"), "{reason}");
    browser.shot("07a-product-refused").await;
    browser.fill("#f-prices-1-amount", "41.50").await;
    browser.click("#review").await;
    browser.wait_for("the product's review", |_, page| page.contains("Seal and publish")).await;
    let review = browser.source().await;
    assert!(review.contains("39.90") && review.contains("41.50") && review.contains("Belgi"), "{review}");
    seal(&browser, "07b-product", "/portal/records/").await;
    confirmed(&browser, "Published Lampe Aurore (version 1)").await;
    // An edit's review says what changes from the live version.
    let product = browser.url().await.split('?').next().unwrap().to_owned();
    browser.open(&format!("{product}/edit")).await;
    browser.fill("#f-prices-0-amount", "38.00").await;
    browser.click("#review").await;
    browser.wait_for("the edit's review", |_, page| page.contains("id=\"changes\"")).await;
    let changes = browser.script("return document.getElementById('changes').textContent", json!([])).await;
    let changes = changes.as_str().unwrap();
    assert!(changes.contains("39.90") && changes.contains("38.00") && !changes.contains("Product name"), "{changes}");
    browser.shot("07b-product-edit-review").await;
    browser.open(&format!("{site}/portal/records/new/business_files")).await;
    submit_editor(&browser, BUSINESS_FILE).await;
    seal(&browser, "07c-business-file", "/portal/records/").await;
    let page = browser.source().await;
    assert!(page.contains("Shipping") || page.contains("shipping"), "{page}");

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
    confirmed(&browser, "AI policy version 1 sealed").await;

    // An integration key and a mandate sealed with the passkey: the
    // business's system then publishes a product under it.
    let key = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[71; 32]).unwrap();
    browser.open(&format!("{site}/portal/keys")).await;
    // A refused form is shown again with its reason and what was typed.
    browser.fill("#jwk", "{\"kty\": \"not a key\"}").await;
    browser.click("form.add-key button").await;
    browser.wait_for("the refusal", |_, page| page.contains("id=\"refusal\"")).await;
    assert_eq!(
        browser.script("return document.getElementById('jwk').value", json!([])).await,
        "{\"kty\": \"not a key\"}"
    );
    browser.fill("form.add-key textarea", &serde_json::to_string(&key.verifying_key().to_jwk()).unwrap()).await;
    browser.click("form.add-key button").await;
    browser.wait_for("the registered key", |_, page| page.contains("Registered integration key")).await;
    browser
        .script(
            "const form = document.querySelector('form.mandate');
             form.closest('details').open = true;
             form.querySelector('[name=countries]').value = 'FR, XX';",
            json!([]),
        )
        .await;
    browser.click("form.mandate button[type=submit]").await;
    browser.wait_for("the mandate's refusal", |_, page| page.contains("id=\"refusal\"")).await;
    let typed = browser.script("const f = document.querySelector('form.mandate'); return [f.closest('details').open, f.querySelector('[name=countries]').value]", json!([])).await;
    assert_eq!(typed, json!([true, "FR, XX"]));
    browser.shot("09a-mandate-refused").await;
    browser
        .script(
            "const form = document.querySelector('form.mandate');
             form.closest('details').open = true;
             form.querySelector('[name=countries]').value = 'FR';",
            json!([]),
        )
        .await;
    browser.click("form.mandate button[type=submit]").await;
    // The review says what the mandate grants; back from it, the form is
    // as it was typed.
    browser.wait_for("the mandate's review", |_, page| page.contains("Seal and authorise")).await;
    assert!(browser.source().await.contains("<dt>Scope</dt>"), "the mandate is said member by member");
    browser.click("#back-to-edit button").await;
    browser.wait_for("the keys page again", |_, page| page.contains("Seal a mandate for this key")).await;
    let typed = browser
        .script(
            "const f = document.querySelector('form.mandate'); \
             return [f.closest('details').open, f.querySelector('[name=countries]').value]",
            json!([]),
        )
        .await;
    assert_eq!(typed, json!([true, "FR"]));
    assert!(!browser.source().await.contains("id=\"refusal\""), "nothing was refused");
    browser.click("form.mandate button[type=submit]").await;
    seal_to(&browser, "authorise", "09b-mandate", "/portal/keys").await;
    browser.wait_for("the mandate", |_, page| page.contains("mdt_") && page.contains("<td>products</td>")).await;
    // Sizes in units; each moment in the browser's own time zone, its UTC
    // form kept as the title.
    assert!(browser.source().await.contains("10000 records an hour, 1 GiB a day"));
    let local = browser
        .script("const t = document.querySelector('time[datetime]'); return [t.dataset.local, t.title]", json!([]))
        .await;
    assert_eq!(local[0], "1", "{local}");
    assert!(local[1].as_str().unwrap().ends_with(" UTC"), "{local}");
    confirmed(&browser, "Mandate sealed until").await;
    let context = svc_client::sealing::SealContext {
        cert_id: created["cert_id"].as_str().unwrap().to_owned(),
        ai_policy_version: 1,
    };
    let public = Transport::new(&home.public_url).unwrap();
    let product = svc::chaos::setup::product_of("Lumio", 1);
    let pushed = svc::chaos::setup::publish(&public, &key, &context, &[product], 1, AUTHORITY).await.unwrap();
    assert_eq!(pushed.status, 200, "{}", String::from_utf8_lossy(&pushed.bytes));
    assert_eq!(pushed.json()["results"][0]["outcome"], "accepted", "{}", String::from_utf8_lossy(&pushed.bytes));

    // Twenty listings, then a push that changes every price by more than
    // half: held for an owner or admin, who publishes it from the portal.
    let listings: Vec<Vec<u8>> = (1..=20).map(|sku| svc::chaos::setup::product_of("Lumio", sku)).collect();
    let pushed = svc::chaos::setup::publish(&public, &key, &context, &listings, 2, AUTHORITY).await.unwrap();
    assert_eq!(pushed.status, 200, "{}", String::from_utf8_lossy(&pushed.bytes));
    let repriced: Vec<Vec<u8>> = listings
        .iter()
        .map(|bytes| String::from_utf8(bytes.clone()).unwrap().replace("\"12.50\"", "\"30.00\"").into_bytes())
        .collect();
    let held = svc::chaos::setup::publish(&public, &key, &context, &repriced, 3, AUTHORITY).await.unwrap();
    assert_eq!(held.json()["held"], true, "{}", String::from_utf8_lossy(&held.bytes));
    browser.open(&format!("{site}/portal/pushes")).await;
    browser.wait_for("the held push", |_, page| page.contains("form method=\"post\"") && page.contains("held")).await;
    browser.shot("09c-pushes-held").await;
    // Each push that finished or was held while the person was away is a
    // notice on every page, until dismissed.
    let notices = browser.script("return document.getElementById('notices').textContent", json!([])).await;
    let notices = notices.as_str().unwrap();
    assert!(notices.contains("products push of 20 records held"), "{notices}");
    assert!(notices.contains("products push of 1 records complete: 1 accepted"), "{notices}");
    browser.click("#notices button").await;
    browser.wait_for("the notices dismissed", |_, page| !page.contains("id=\"notices\"")).await;
    browser.click("form.release button[value=publish]").await;
    seal_to(&browser, "release", "09d-release", "/portal/pushes").await;
    browser
        .wait_for("the push published", |_, page| {
            // The seal page has no release form either: wait for the pushes page.
            !page.contains("value=\"publish\"")
                && (page.contains("<td>complete</td>") || page.contains("<td>complete "))
        })
        .await;
    let page = browser.source().await;
    assert!(page.contains("<td>complete</td>") || page.contains("<td>complete "), "{page}");
    // The released push finished after the dismissal: a notice again. Its
    // page shows its status and every record's attempt.
    let notices = browser.script("return document.getElementById('notices').textContent", json!([])).await;
    assert!(notices.as_str().unwrap().contains("products push of 20 records complete: 0 accepted, 20 updated"));
    let held_id = held.json()["batch_id"].as_str().unwrap().to_owned();
    browser.click(&format!("#notices a[href=\"/portal/pushes/{held_id}\"]")).await;
    browser.wait_for("the push's page", |_, page| page.contains("id=\"attempts\"")).await;
    browser.shot("09e-push-attempts").await;
    let rows =
        browser.script("return [...document.querySelectorAll('#attempts tbody tr.updated')].length", json!([])).await;
    assert_eq!(rows, 20, "every record's attempt, each updated");

    // The event's answer again, to its own used ceremony and to a new save;
    // then a save whose answer names another site. Each is refused with a
    // clear message and stores nothing.
    let (url, body, csrf) =
        (kept["url"].as_str().unwrap(), kept["body"].as_str().unwrap(), kept["csrf"].as_str().unwrap());
    let (status, again) = browser.post_from_page(url, body, csrf).await;
    assert_eq!((status, again["code"].as_str()), (422, Some("passkey_refused")), "{again}");
    assert!(again["detail"].as_str().unwrap().contains("already used"), "{again}");
    browser.open(&format!("{site}/portal/records/new/updates")).await;
    submit_editor(&browser, UPDATE).await;
    browser.wait_for("the review page", |_, page| page.contains("Seal and publish")).await;
    let other = browser.script("return document.getElementById('seal').dataset.finish", json!([])).await;
    let (status, replayed) = browser.post_from_page(other.as_str().unwrap(), body, csrf).await;
    assert_eq!((status, replayed["code"].as_str()), (422, Some("passkey_refused")), "{replayed}");
    assert!(replayed["detail"].as_str().unwrap().contains("another save"), "{replayed}");
    browser.open(&format!("{site}/portal/records/new/updates")).await;
    submit_editor(&browser, UPDATE).await;
    browser.wait_for("the review page", |_, page| page.contains("Seal and publish")).await;
    intercept(&browser, "another-origin").await;
    browser.click("#seal-button").await;
    browser.wait_for("the refusal", |_, page| page.contains("another site (https://evil.example)")).await;
    browser.shot("10-refused-other-origin").await;
    let (status, _) = browser.post_from_page(other.as_str().unwrap(), body, "not-the-token").await;
    assert_eq!(status, 403, "a state change without the session's CSRF token is refused");

    browser.open(&format!("{site}/portal/")).await;
    browser.wait_for("both records listed", |_, page| page.contains("soiree-2026") && page.contains("J-12")).await;
    assert!(!browser.source().await.contains("u-portal"), "no refused save was stored");
    browser.shot("11-records").await;

    // A form post without the token, with the session cookie: refused.
    let cookie = browser.cookie("svc_portal").await.unwrap()["value"].as_str().unwrap().to_owned();
    let forged = Request::post("/portal/people/invite")
        .header("cookie", format!("svc_portal={cookie}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from("email=mallory%40evil.example&role=owner"))
        .unwrap();
    let answer = Transport::new(&home.public_url).unwrap().send(forged).await.unwrap();
    assert_eq!(answer.status, 403);
    assert!(String::from_utf8_lossy(&answer.bytes).contains("csrf_invalid"));

    people_flows(&browser, &site, &home, created["business_uuid"].as_str().unwrap()).await;

    // An AI company finds both at the read region; their passkey seals verify there.
    let event = found_at(&eu.public_url, &ai_key, "events", "start_at:asc").await;
    let job = found_at(&eu.public_url, &ai_key, "jobs", "published_at:desc").await;
    for row in [&event, &job] {
        let (verdict, sealed) = verified_at(&eu.public_url, &ai_key, row).await;
        let signature = &sealed["signatures"][0];
        assert!(signature["authenticatorData"].is_string() && signature["clientDataJSON"].is_string(), "{sealed}");
        let seal = &verdict["seal"];
        assert_eq!((seal["valid"].as_bool(), seal["path"].as_str()), (Some(true), Some("B")), "{verdict}");
        assert_eq!(seal["checks"]["signature"], "ok", "the passkey's signature over the exact bytes: {verdict}");
        assert_eq!(verdict["projection"]["rerun"], "matches", "{verdict}");
    }

    // Withdraw the job and delete the event, each with a sealed document:
    // both leave serving at the read region.
    for (row, verb, state, collection, sort) in [
        (&job, "withdraw", "withdrawn", "jobs", "published_at:desc"),
        (&event, "delete", "deleted", "events", "start_at:asc"),
    ] {
        let record_id = row["record_id"].as_str().unwrap();
        browser.open(&format!("{site}/portal/")).await;
        browser.wait_for("the records page", |_, page| page.contains(record_id)).await;
        browser.click(&format!("form[action=\"/portal/records/{record_id}/end\"] button[value={verb}]")).await;
        seal_to(&browser, verb, &format!("14-{verb}"), &format!("/portal/records/{record_id}")).await;
        browser.wait_for("the record's new state", |_, page| page.contains(&format!("<code>{state}</code>"))).await;
        let said = if verb == "delete" { "Deleted " } else { "Withdrawn " };
        confirmed(&browser, said).await;
        gone_at(&eu.public_url, &ai_key, collection, sort).await;
    }

    // Analytics as charts: thirty days of bars (the searches above count once
    // their hour completes), and the asking groups.
    browser.open(&format!("{site}/portal/analytics")).await;
    browser.wait_for("the analytics page", |_, page| page.contains("class=\"chart daily\"")).await;
    assert_eq!(browser.source().await.matches("<g class=\"day\">").count(), 30);
    assert!(browser.source().await.contains("0 renders and 0 clicks confirmed, 0.00 USD spent"), "the ads' line");
    browser.shot("15-analytics").await;

    // The account export: every version's exact sealed bytes beside its
    // seal; the deleted event's bytes are purged, its seal kept.
    let files = export(&browser, &home).await;
    let names: Vec<&String> = files.keys().collect();
    assert!(files.contains_key("manifest.json"), "{names:?}");
    let manifest: Value = serde_json::from_slice(&files["manifest.json"]).unwrap();
    let (job_id, event_id) = (job["record_id"].as_str().unwrap(), event["record_id"].as_str().unwrap());
    let job_bytes = files.get(&format!("records/{job_id}/1.json")).unwrap_or_else(|| panic!("{job_id}: {names:?}"));
    let job_seal = svc_core::dsse::Envelope::parse(&files[&format!("records/{job_id}/1.seal.json")]).unwrap();
    let payload: Value = serde_json::from_slice(&job_seal.payload_bytes().unwrap()).unwrap();
    assert_eq!(payload["hash"], svc_core::digest::sha256_prefixed(job_bytes), "the seal is over the exact bytes");
    assert!(!files.contains_key(&format!("records/{event_id}/1.json")), "a deleted record's bytes are not exported");
    assert!(files.contains_key(&format!("records/{event_id}/1.seal.json")));
    let listed =
        |id: &str| manifest["records"].as_array().unwrap().iter().find(|r| r["record_id"] == id).cloned().unwrap();
    assert_eq!(listed(event_id)["versions"][0]["purged"], true, "{manifest}");
    assert_eq!(listed(job_id)["state"], "withdrawn", "{manifest}");
    assert!(files.contains_key("ai_policy/1.json") && files.contains_key("ai_policy/1.seal.json"));
    let count = manifest["records"].as_array().unwrap().len();
    assert_eq!(count, 24, "an event, a job, the business file and twenty-one products: {manifest}");

    // The withdrawn job is still listed, to delete; deleted, it is not.
    browser.open(&format!("{site}/portal/")).await;
    browser.wait_for("the withdrawn job", |_, page| page.contains("<td>withdrawn</td>")).await;
    let end = format!("form[action=\"/portal/records/{job_id}/end\"]");
    let buttons = browser
        .script("return [...document.querySelectorAll(arguments[0] + ' button')].map(b => b.value)", json!([end]))
        .await;
    assert_eq!(buttons, json!(["delete"]), "a withdrawn record may only be deleted");
    browser.click(&format!("{end} button[value=delete]")).await;
    seal_to(&browser, "delete", "16-delete-withdrawn", &format!("/portal/records/{job_id}")).await;
    browser.wait_for("the job deleted", |_, page| page.contains("<code>deleted</code>")).await;
    browser.open(&format!("{site}/portal/")).await;
    browser.wait_for("the records page", |_, page| page.contains("Records")).await;
    assert!(!browser.source().await.contains(job_id), "a deleted record is not listed");

    hosted_flows(&browser, &site, &home, &eu, &admin, &ai_key, created["business_uuid"].as_str().unwrap()).await;
    campaign_flows(&browser, &site, &home, &eu, &ai_key).await;
}
