//! A portal save against the route it wraps, side by side in one run, on a
//! sandbox home node in-process over real TCP:
//!
//! - the portal: a signed-in owner posts the update editor's form (the
//!   record is built, judged and a seal ceremony begun; the review page is
//!   rendered), then answers the page's passkey request (`POST
//!   /portal/seal/{ceremony}`: the ceremony is taken, the passkey's
//!   signature judged, the record published);
//! - the raw route: the same record, sealed by the same passkey, saved in
//!   one request (`POST /admin/businesses/{uuid}/records`, the scripted
//!   Path B save).
//!
//! The passkey is a software authenticator's; its person is registered and
//! signed in through the portal's own use cases. Each pair runs in turns
//! (raw, portal, raw, portal, …) for `--rounds`, each turn `--seconds` long
//! from `--connections` keep-alive connections, and the medians of the turns
//! are printed with their ratios. Every save is a new update.
//!
//! `cargo bench --bench portal -- --connections 8 --seconds 5 --rounds 3`

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};
use svc_client::transport::{Answer, Transport};
use svc_clock::{Clock, SystemClock};
use svc_core::ids::RecordType;
use svc_core::keys::{Alg, SigningKey};
use svc_core::seal::SealV2;
use svc_http::node::Node;
use svc_http::sandbox::corpus::{Sizes, generate};
use svc_http::sandbox::seed::{admin, ensure_seeded};
use svc_node::config::NodeConfig;
use svc_node::service::portal::{people, sessions};
use svc_store::model::PasskeyRole;

// Linked for its allocator: the bench allocates with mimalloc, as `svc node` does.
use svc as _;

#[path = "common/passkey.rs"]
mod passkey;
#[path = "common/turns.rs"]
mod turns;
use turns::{Turn, arg, print_pair, turn};

/// What every save needs to know: where to send it and who seals it.
struct Bench {
    portal: String,
    admin: String,
    admin_token: String,
    business_uuid: String,
    cookie: String,
    csrf: String,
    key: SigningKey,
    key_id: String,
    cert_id: String,
    ai_policy_version: u64,
    rp_id: String,
    origin: String,
    country: String,
    relevant_until: String,
    saves: AtomicU64,
}

impl Bench {
    /// The update editor's fields for a new update, each save its own.
    fn fields(&self) -> Vec<(String, String)> {
        let n = self.saves.fetch_add(1, Ordering::Relaxed);
        [
            ("language", "en"),
            ("update_id", &format!("bench-{n}")),
            ("countries", &self.country),
            ("headline", "Opening hours over the holidays"),
            ("body", "We close at 4 pm on 24 December."),
            ("update_type", "announcement"),
            ("relevant_until", &self.relevant_until),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    /// The scripted save: the record sealed here, one request.
    async fn raw_save(&self, transport: &Transport) {
        let bytes = svc_core::records::editor::record_from_form(RecordType::Updates, &self.fields()).unwrap();
        let seal = SealV2 {
            v: 2,
            key_id: self.key_id.clone(),
            cert_id: self.cert_id.clone(),
            hash: svc_core::digest::sha256_prefixed(&bytes),
            sealed_at: SystemClock.now().to_rfc3339_millis(),
            record_type: "updates".into(),
            ai_policy_version: self.ai_policy_version,
            next_ai_policy_version: None,
        };
        let payload = svc_core::canonical::to_signed_bytes(&seal).unwrap();
        let payload_type = svc_core::dsse::payload_type(svc_core::seal::SEAL_V2);
        let envelope = svc_core::publish::webauthn::seal_with_passkey(
            &self.key,
            &self.rp_id,
            &self.origin,
            &payload_type,
            &payload,
            1,
        )
        .unwrap();
        let body =
            json!({"record_type": "updates", "record_base64": svc_core::b64::std_encode(&bytes), "seal": envelope});
        let request = Request::post(format!("/admin/businesses/{}/records", self.business_uuid))
            .header("authorization", format!("Bearer {}", self.admin_token))
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
        expect(transport.send(request).await.unwrap(), 201, "the scripted save");
    }

    /// The portal's save: the editor's form, then the passkey's answer.
    async fn portal_save(&self, transport: &Transport) {
        let mut form = vec![("csrf".to_owned(), self.csrf.clone())];
        form.extend(self.fields());
        let request = Request::post("/portal/records/new/updates")
            .header("cookie", format!("{}={}", svc_http::portal::session::COOKIE, self.cookie))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(serde_urlencoded::to_string(&form).unwrap()))
            .unwrap();
        let page = expect(transport.send(request).await.unwrap(), 200, "the review page");
        let page = String::from_utf8(page.bytes).unwrap();
        let finish = attribute(&page, "data-finish");
        let options: Value = serde_json::from_str(&attribute(&page, "data-options")).unwrap();
        let challenge = options["publicKey"]["challenge"].as_str().unwrap();
        let signed = svc_core::publish::webauthn::answer(&self.key, &self.rp_id, &self.origin, challenge, 1).unwrap();
        let std_to_url = |text: &str| svc_core::b64::url_encode(&svc_core::b64::std_decode(text).unwrap());
        let body = json!({
            "authenticator_data": std_to_url(signed.authenticator_data.as_deref().unwrap()),
            "client_data_json": std_to_url(signed.client_data_json.as_deref().unwrap()),
            "signature": std_to_url(&signed.sig),
        });
        let request = Request::post(finish)
            .header("cookie", format!("{}={}", svc_http::portal::session::COOKIE, self.cookie))
            .header("x-csrf-token", &self.csrf)
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
        let done = expect(transport.send(request).await.unwrap(), 200, "the seal");
        assert!(
            done.json()["next"].as_str().is_some_and(|n| n.starts_with("/portal/records/upd_")),
            "{:?}",
            done.json()
        );
    }
}

/// The two ways a save is made.
#[derive(Clone, Copy)]
enum Way {
    Scripted,
    Portal,
}

/// One turn of saves made `way`, each connection with its own transport.
async fn saves(bench: &Arc<Bench>, way: Way, connections: usize, run: Duration) -> Turn {
    turn(connections, run, || {
        let base = match way {
            Way::Scripted => &bench.admin,
            Way::Portal => &bench.portal,
        };
        let (bench, transport) = (bench.clone(), Transport::new(base).unwrap());
        move || {
            let (bench, transport) = (bench.clone(), transport.clone());
            async move {
                match way {
                    Way::Scripted => bench.raw_save(&transport).await,
                    Way::Portal => bench.portal_save(&transport).await,
                }
            }
        }
    })
    .await
}

fn expect(answer: Answer, status: u16, what: &str) -> Answer {
    assert_eq!(answer.status, status, "{what}: {}", String::from_utf8_lossy(&answer.bytes));
    answer
}

/// An attribute's value on the review page, its HTML escapes undone.
fn attribute(page: &str, name: &str) -> String {
    let start = page.find(&format!("{name}=\"")).unwrap_or_else(|| panic!("{name} on the page")) + name.len() + 2;
    let value = &page[start..start + page[start..].find('"').unwrap()];
    [("&quot;", "\""), ("&#34;", "\""), ("&#39;", "'"), ("&lt;", "<"), ("&gt;", ">"), ("&#38;", "&"), ("&amp;", "&")]
        .iter()
        .fold(value.to_owned(), |text, (escaped, plain)| text.replace(escaped, plain))
}

/// A business of the sandbox corpus with one owner, registered with a
/// software passkey and signed in.
async fn bench(node: &Node) -> Bench {
    let state = &node.state;
    let corpus = generate(7, Sizes::products_only(1, 20));
    let country = corpus.businesses[0].country.clone();
    let seeded = ensure_seeded(state, &corpus, &|_| {}).await.unwrap();
    let business_uuid = seeded.businesses[0].0.clone();
    let shown = admin(state, "GET", &format!("/admin/businesses/{business_uuid}"), Value::Null).await.unwrap();
    let invited = people::invite(state, None, &business_uuid, "owner@bench.example", PasskeyRole::Owner).await.unwrap();
    let (ceremony, options) = people::begin_registration(state, &invited.token, "Bench Owner").await.unwrap();
    let key = SigningKey::from_seed(Alg::Es256, &[5; 32]).unwrap();
    let (rp_id, origin) = (state.config.passkey_rp_id.clone(), state.config.passkey_origin.clone());
    let credential = passkey::register(&key, &options, &rp_id, &origin, b"bench passkey");
    let credential = serde_json::from_value(credential).unwrap();
    let session = people::finish_registration(state, &ceremony, &credential).await.unwrap();
    let signed = sessions::resolve(state, &session.cookie).await.unwrap();
    Bench {
        portal: format!("http://{}", node.addr),
        admin: format!("http://{}", node.admin_addr),
        admin_token: state.config.admin_token.clone(),
        business_uuid,
        cookie: session.cookie,
        csrf: session.csrf,
        key,
        key_id: signed.key_id,
        cert_id: shown["cert_id"].as_str().unwrap().to_owned(),
        ai_policy_version: shown["ai_policy_version"].as_u64().unwrap(),
        rp_id,
        origin,
        country,
        relevant_until: SystemClock.now().plus(30 * svc_core::time::DAY).to_rfc3339_secs(),
        saves: AtomicU64::new(0),
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing
    // and expects a quick run, so the bench runs only when asked.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let connections = arg("--connections", 8) as usize;
    let seconds = arg("--seconds", 5);
    let rounds = arg("--rounds", 3) as usize;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let config = NodeConfig::local_home(
            dir.path().join("home"),
            "127.0.0.1:0".parse().unwrap(),
            "127.0.0.1:0".parse().unwrap(),
        );
        let node = Node::start(config, Arc::new(SystemClock)).await.unwrap();
        let bench = Arc::new(bench(&node).await);
        let run = Duration::from_secs(seconds);
        let (mut raw, mut portal) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            raw.push(saves(&bench, Way::Scripted, connections, run).await);
            portal.push(saves(&bench, Way::Portal, connections, run).await);
        }
        let saved = bench.saves.load(Ordering::Relaxed);
        let title = format!(
            "a saved update, {connections} connections, median of {rounds} turns of {seconds} s ({saved} updates saved)"
        );
        print_pair(&title, ("POST /admin/businesses/{uuid}/records", &raw), ("portal editor + seal", &portal));
        node.stop().await;
    });
}
