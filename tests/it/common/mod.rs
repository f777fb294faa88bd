//! An in-process home region for integration tests: the real store, actors
//! and routers, a manual clock, and helpers to sign requests and seal batches
//! as a business would.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, Response};
use http_body_util::BodyExt;
use serde_json::{Value, json};
pub use svc_clock::Clock;
use svc_clock::ManualClock;
use svc_core::dsse::{Envelope, payload_type};
use svc_core::keys::{Alg, SigningKey};
use svc_core::merkle::{BatchTree, root_form};
use svc_core::seal::BatchSealV2;
use svc_core::time::UnixMs;
use svc_http::api::admin_router;
use svc_http::surfaces::public_router;
use svc_node::config::NodeConfig;
use svc_node::region::Region;
use svc_store::model::Environment;
use tower::ServiceExt;

pub mod images;
#[path = "../../../benches/common/passkey.rs"]
pub mod passkey;
pub mod person;
pub mod sources;

pub const AUTHORITY: &str = "api.svc.localhost";
/// 2026-11-22T10:00:00Z
pub const START: UnixMs = UnixMs(1_795_341_600_000);

pub struct Home {
    pub state: Region,
    pub clock: ManualClock,
    pub dir: tempfile::TempDir,
}

pub struct Business {
    pub uuid: String,
    pub cert_id: String,
    pub key: SigningKey,
    pub key_id: String,
    pub passkey: SigningKey,
    pub seq: std::sync::atomic::AtomicU64,
}

pub struct Answer {
    pub status: u16,
    pub headers: axum::http::HeaderMap,
    pub body: Value,
    pub bytes: Vec<u8>,
}

async fn answer(response: Response<Body>) -> Answer {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes().to_vec();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Answer { status, headers, body, bytes }
}

/// A production home's config over `dir`, on loopback ports the system picks.
fn test_config(dir: &tempfile::TempDir, configure: impl FnOnce(&mut NodeConfig)) -> NodeConfig {
    let loopback = "127.0.0.1:0".parse().unwrap();
    let mut config = NodeConfig::local_home(dir.path().to_path_buf(), loopback, loopback);
    config.environment = Environment::Production;
    config.admin_token = "operator-token-of-thirty-two-characters".into();
    // A search stops at its budget with the rows it has (250 ms by
    // default); a whole suite on two cores can spend that before the index
    // is asked, and a test that counts rows would see none. The budget's
    // own test sets it.
    config.search_budget_ms = 10_000;
    configure(&mut config);
    config
}

impl Home {
    pub async fn start() -> Home {
        let dir = tempfile::tempdir().unwrap();
        Self::start_in(dir).await
    }

    pub async fn start_in(dir: tempfile::TempDir) -> Home {
        Self::start_with(dir, Environment::Production).await
    }

    /// A sandbox home region.
    pub async fn start_sandbox() -> Home {
        Self::start_with(tempfile::tempdir().unwrap(), Environment::Sandbox).await
    }

    pub async fn start_with(dir: tempfile::TempDir, environment: Environment) -> Home {
        Self::start_with_config(dir, |config| config.environment = environment).await
    }

    /// A production home region whose config `configure` adjusts before the
    /// node starts (for example to set `url_blocklist`).
    pub async fn start_with_config(dir: tempfile::TempDir, configure: impl FnOnce(&mut NodeConfig)) -> Home {
        let clock = ManualClock::at(START);
        let config = test_config(&dir, configure);
        let state = svc_node::region::start(config, Arc::new(clock.clone())).await.unwrap();
        Home { state, clock, dir }
    }

    /// A production home served on loopback sockets, for what only a
    /// listener does: timeouts, connection caps, the TCP peer.
    pub async fn listening(configure: impl FnOnce(&mut NodeConfig)) -> (Home, svc_http::node::Node) {
        let (dir, clock) = (tempfile::tempdir().unwrap(), ManualClock::at(START));
        let config = test_config(&dir, configure);
        let node = svc_http::node::Node::start(config, Arc::new(clock.clone())).await.unwrap();
        (Home { state: node.state.clone(), clock, dir }, node)
    }

    /// A production home on loopback sockets whose node keeps the machine's
    /// time, for clients that sign by it (the helpers seal at the start).
    pub async fn listening_on_system_clock(configure: impl FnOnce(&mut NodeConfig)) -> (Home, svc_http::node::Node) {
        let dir = tempfile::tempdir().unwrap();
        let now = svc_clock::SystemClock.now();
        let config = test_config(&dir, configure);
        let node = svc_http::node::Node::start(config, Arc::new(svc_clock::SystemClock)).await.unwrap();
        (Home { state: node.state.clone(), clock: ManualClock::at(now), dir }, node)
    }

    pub async fn admin(&self, method: &str, path: &str, body: Value) -> Answer {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", "Bearer operator-token-of-thirty-two-characters")
            .header("content-type", "application/json")
            .body(Body::from(serde_json::to_vec(&body).unwrap()))
            .unwrap();
        answer(admin_router(self.state.clone()).oneshot(request).await.unwrap()).await
    }

    /// A request as a client at `from` would send it, signed by `key`.
    pub async fn signed(
        &self,
        key: &SigningKey,
        method: &str,
        path_and_query: &str,
        body: &[u8],
        tag: &str,
        extra: &[(&str, &str)],
    ) -> Answer {
        let request = self.signed_request(key, method, path_and_query, body, tag, extra);
        self.send(request).await
    }

    pub fn signed_request(
        &self,
        key: &SigningKey,
        method: &str,
        path_and_query: &str,
        body: &[u8],
        tag: &str,
        extra: &[(&str, &str)],
    ) -> Request<Body> {
        let (path, query) = match path_and_query.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (path_and_query, None),
        };
        let now = self.clock.now().as_secs();
        // One counter for the whole test process: a home restarted over the
        // same store must not send a nonce it already claimed.
        static NONCES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NONCES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let nonce = svc_core::http_sig::nonce_from_bytes(&svc_core::digest::sha256(format!("nonce-{n}").as_bytes()));
        let signed =
            svc_core::http_sig::sign(method, AUTHORITY, path, query, body, key, now, now + 60, &nonce, tag).unwrap();
        let mut builder = Request::builder().method(method).uri(path_and_query).header("host", AUTHORITY);
        for (name, value) in signed.pairs() {
            builder = builder.header(name, value);
        }
        for (name, value) in extra {
            builder = builder.header(*name, *value);
        }
        let mut request = builder.body(Body::from(body.to_vec())).unwrap();
        request.extensions_mut().insert(ConnectInfo::<SocketAddr>("127.0.0.1:50000".parse().unwrap()));
        request
    }

    pub async fn send(&self, request: Request<Body>) -> Answer {
        answer(public_router(self.state.clone()).oneshot(request).await.unwrap()).await
    }

    /// An unsigned `GET` of a public route.
    pub async fn get(&self, path: &str) -> Answer {
        let mut request = Request::get(path).header("host", AUTHORITY).body(Body::empty()).unwrap();
        request.extensions_mut().insert(ConnectInfo::<SocketAddr>("127.0.0.1:50000".parse().unwrap()));
        self.send(request).await
    }

    /// A verified business with an Ed25519 integration key, an owner's
    /// passkey, and a mandate sealed by it.
    pub async fn business(&self, name: &str, mandate_scope: Value) -> Business {
        let created = self
            .admin("POST", "/admin/businesses", json!({"legal_name": name, "country": "FR", "brands": [name]}))
            .await;
        assert_eq!(created.status, 201, "{:?}", created.body);
        let uuid = created.body["business_uuid"].as_str().unwrap().to_owned();
        let seed = svc_core::digest::sha256(name.as_bytes());
        let key = SigningKey::from_seed(Alg::Ed25519, &seed).unwrap();
        let passkey =
            SigningKey::from_seed(Alg::Es256, &svc_core::digest::sha256(format!("passkey {name}").as_bytes())).unwrap();
        let reg = self
            .admin(
                "POST",
                &format!("/admin/businesses/{uuid}/keys"),
                json!({"jwk": key.verifying_key().to_jwk(), "purpose": "integration"}),
            )
            .await;
        assert_eq!(reg.status, 201, "{:?}", reg.body);
        let reg = self
            .admin(
                "POST",
                &format!("/admin/businesses/{uuid}/keys"),
                json!({"jwk": passkey.verifying_key().to_jwk(), "purpose": "sealing", "role": "owner"}),
            )
            .await;
        assert_eq!(reg.status, 201, "{:?}", reg.body);
        let business = Business {
            uuid,
            cert_id: created.body["cert_id"].as_str().unwrap().to_owned(),
            key_id: key.verifying_key().thumbprint(),
            key,
            passkey,
            seq: std::sync::atomic::AtomicU64::new(1),
        };
        self.mandate(&business, mandate_scope, "m-1").await;
        business
    }

    /// Sends a withdraw or delete document for `record_id`, sealed
    /// (`seal.v2`) by the business's integration key now; answers the
    /// answer and the seal.
    pub async fn end_record(&self, business: &Business, record_id: &str, action: &str) -> (Answer, Envelope) {
        let now = self.clock.now();
        let doc = serde_json::to_vec(&json!({"record_id": record_id, "action": action, "at": now.to_rfc3339_secs()}))
            .unwrap();
        let seal = svc_core::seal::SealV2 {
            v: 2,
            key_id: business.key_id.clone(),
            cert_id: business.cert_id.clone(),
            hash: svc_core::digest::sha256_prefixed(&doc),
            sealed_at: now.to_rfc3339_millis(),
            record_type: "products".into(),
            ai_policy_version: 0,
            next_ai_policy_version: None,
        };
        let env = Envelope::sign(
            &payload_type("seal.v2"),
            &svc_core::canonical::to_signed_bytes(&seal).unwrap(),
            &[&business.key],
        );
        let body =
            serde_json::to_vec(&json!({"document_base64": svc_core::b64::std_encode(&doc), "seal": env})).unwrap();
        let path = format!("/v1/publish/products/{action}");
        (self.signed(&business.key, "POST", &path, &body, "svc-push", &[]).await, env)
    }

    pub async fn mandate(&self, business: &Business, scope: Value, mandate_id: &str) -> Answer {
        let answer = self.seal_mandate(business, scope, mandate_id).await;
        assert_eq!(answer.status, 201, "{:?}", answer.body);
        answer
    }

    /// A mandate sealed by the business's passkey, sent to the operator's
    /// route; answers whatever it answered.
    pub async fn seal_mandate(&self, business: &Business, scope: Value, mandate_id: &str) -> Answer {
        let now = self.clock.now();
        let payload = json!({
            "v": 1,
            "mandate_id": mandate_id,
            "business_uuid": business.uuid,
            "key_id": business.key_id,
            "scope": scope,
            "valid_from": now.minus(60_000).to_rfc3339_secs(),
            "valid_until": now.plus(30 * svc_core::time::DAY).to_rfc3339_secs(),
        });
        let bytes = svc_core::canonical::to_signed_bytes(&payload).unwrap();
        let config = &self.state.config;
        let envelope = svc_core::publish::webauthn::seal_with_passkey(
            &business.passkey,
            &config.passkey_rp_id,
            &config.passkey_origin,
            &payload_type("mandate.v1"),
            &bytes,
            1,
        )
        .unwrap();
        self.admin("POST", "/admin/mandates", json!({"envelope": envelope})).await
    }

    /// A batch seal over `records`, made now.
    pub fn batch_seal(
        &self,
        business: &Business,
        records: &[Vec<u8>],
        seq: u64,
        ai_policy_version: u64,
        sealed_at: UnixMs,
    ) -> Envelope {
        let tree = BatchTree::from_records(records);
        let payload = BatchSealV2 {
            v: 2,
            key_id: business.key_id.clone(),
            cert_id: business.cert_id.clone(),
            root: root_form(&tree.root()),
            tree_size: records.len() as u64,
            seq,
            sealed_at: sealed_at.to_rfc3339_millis(),
            record_type: "products".into(),
            ai_policy_version,
        };
        let bytes = svc_core::canonical::to_signed_bytes(&payload).unwrap();
        Envelope::sign(&payload_type("batch-seal.v2"), &bytes, &[&business.key])
    }

    pub fn publish_body(&self, seal: &Envelope, records: &[Vec<u8>]) -> Vec<u8> {
        let records: Vec<String> = records.iter().map(|r| svc_core::b64::std_encode(r)).collect();
        serde_json::to_vec(&json!({"batch_seal": seal, "records": records})).unwrap()
    }

    /// Seals and publishes `records` under the business's next `seq`.
    pub async fn publish(&self, business: &Business, records: &[Vec<u8>], idem: &str) -> Answer {
        let seq = business.seq.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let seal = self.batch_seal(business, records, seq, 0, self.clock.now());
        let body = self.publish_body(&seal, records);
        self.signed(&business.key, "POST", "/v1/publish/products", &body, "svc-push", &[("idempotency-key", idem)])
            .await
    }
}

pub fn products_scope(records_per_hour: u64) -> Value {
    json!({
        "record_types": ["products"],
        "countries": ["FR", "DE"],
        "directions": ["publish"],
        "caps": {"records_per_hour": records_per_hour, "bytes_per_day": 100_000_000u64},
        "source_ip_allow_list": null,
    })
}

/// A valid product record of `brand`, with a price in FR.
pub fn product(brand: &str, sku: &str, price: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schema": "service/products/1",
        "language": "fr",
        "business_product_id": sku,
        "product_name": format!("Lampe {sku}"),
        "countries": ["FR"],
        "brand": brand,
        "prices": [{"country": "FR", "currency": "EUR", "amount": price}],
        "on_sale": false,
        "availability": "in_stock",
        "product_url": format!("https://shop.example.com/p/{sku}"),
    }))
    .unwrap()
}

/// An AI company's retrieval key, registered by the operator.
pub struct Caller {
    pub key: SigningKey,
    pub key_id: String,
    pub group_id: String,
    pub company_uuid: String,
}

impl Home {
    /// A verified AI company that accepted the Terms, one group, one Ed25519 retrieval key.
    pub async fn caller(&self, name: &str) -> Caller {
        let company = json!({"name": name, "verified": true, "terms_accepted": 1});
        let key =
            SigningKey::from_seed(Alg::Ed25519, &svc_core::digest::sha256(format!("retrieval {name}").as_bytes()))
                .unwrap();
        self.caller_with(company, key).await.0
    }

    /// An AI company as `company` describes it, one group, and `key`
    /// registered in it; also the registration's answer (sandbox grant).
    pub async fn caller_with(&self, company: Value, key: SigningKey) -> (Caller, Answer) {
        let company = self.admin("POST", "/admin/companies", company).await;
        assert_eq!(company.status, 201, "{:?}", company.body);
        let company_uuid = company.body["ai_company_uuid"].as_str().unwrap().to_owned();
        let group =
            self.admin("POST", &format!("/admin/companies/{company_uuid}/groups"), json!({"name": "assistants"})).await;
        let group_id = group.body["ai_group_id"].as_str().unwrap().to_owned();
        let reg = self
            .admin(
                "POST",
                &format!("/admin/groups/{group_id}/retrieval-keys"),
                json!({"jwk": key.verifying_key().to_jwk()}),
            )
            .await;
        assert_eq!(reg.status, 201, "{:?}", reg.body);
        (Caller { key_id: key.verifying_key().thumbprint(), key, group_id, company_uuid }, reg)
    }

    /// Waits until the index has applied every replication log entry.
    pub async fn wait_indexed(&self) {
        for _ in 0..500 {
            let last = self
                .state
                .home
                .as_ref()
                .unwrap()
                .publisher
                .call(svc_node::actors::publisher::PublisherMsg::Observe)
                .await
                .unwrap()
                .last_seq;
            let applied =
                self.state.indexer.call(svc_node::actors::indexer::IndexerMsg::Observe).await.unwrap().applied_seq;
            if applied >= last {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the index never caught up");
    }

    /// A signed search as an AI company sends it.
    pub async fn search(&self, caller: &Caller, path: &str, body: Value) -> Answer {
        self.signed(&caller.key, "POST", path, &serde_json::to_vec(&body).unwrap(), "svc-retrieval", &[]).await
    }
}

impl Home {
    /// A record the business's owner seals with a passkey and saves (Path B).
    pub async fn save_sealed(&self, business: &Business, record_type: &str, record: &[u8]) -> Answer {
        let config = &self.state.config;
        let passkey = svc_client::sealing::Passkey {
            key: &business.passkey,
            rp_id: &config.passkey_rp_id,
            origin: &config.passkey_origin,
        };
        let context = svc_client::sealing::SealContext { cert_id: business.cert_id.clone(), ai_policy_version: 0 };
        let seal = passkey.seal_record(&context, record_type, record, self.clock.now(), None).unwrap();
        let body =
            json!({"record_type": record_type, "record_base64": svc_core::b64::std_encode(record), "seal": seal});
        self.admin("POST", &format!("/admin/businesses/{}/records", business.uuid), body).await
    }
}

impl Home {
    /// Accepts `records` as a push straight through the publisher (seq 1),
    /// for tests that drive a push's steps themselves.
    pub async fn accept_push(&self, business: &Business, records: Vec<Vec<u8>>, push_id: &str) {
        let seal = self.batch_seal(business, &records, 1, 0, self.clock.now());
        let push = svc_node::publish::NewPush {
            business_uuid: business.uuid.clone(),
            key_id: business.key_id.clone(),
            record_type: svc_core::ids::RecordType::Products,
            seq: 1,
            source: svc_core::publish::outcome::Source::Api,
            received_at: self.clock.now(),
            batch_seal_json: seal.to_json(),
            batch_seal: svc_core::seal::read_batch_seal(&seal).unwrap(),
            mandate: self.state.registry.live_mandate(&business.key_id, "products", self.clock.now()).unwrap().unwrap(),
            records: svc_node::publish::PushRecords::Inline(records),
            sealed_at_fresh: true,
            idempotency: None,
            body_bytes: 1_000,
        };
        let id = push_id.to_owned();
        let created = self
            .state
            .home
            .as_ref()
            .unwrap()
            .publisher
            .call(|r| svc_node::actors::publisher::PublisherMsg::CreatePush(Box::new(push), id, r))
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(created, svc_node::publish::Created::New(push_id.to_owned()));
    }
}

/// A request on home's internal routes as region `region` sends it: its
/// name, the time and the MAC keyed by its token (`svc_core::link`).
/// A read region's own token on home's internal routes, in tests.
pub fn region_token(region: &str) -> String {
    format!("{region}-replication-token-for-tests-32-characters")
}

/// Polls `check` every 25 ms for up to 30 s; panics naming `what` if it
/// never holds.
pub async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..1_200 {
        if check().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("{what} never happened");
}

pub fn link_request(method: &str, path: &str, region: &str, token: &str, body: Vec<u8>) -> Request<Body> {
    let at = svc_clock::Clock::now(&svc_clock::SystemClock).0;
    link_request_at(method, path, region, token, body, at, &hex::encode(svc_clock::random::<16>()))
}

/// A link request made at `at` under the request id `id`.
pub fn link_request_at(
    method: &str,
    path: &str,
    region: &str,
    token: &str,
    body: Vec<u8>,
    at: i64,
    id: &str,
) -> Request<Body> {
    let body_sha256 = svc_core::link::body_digest(&body);
    let head = svc_core::link::RequestHead { region, method, target: path, at_ms: at, id, body_sha256: &body_sha256 };
    let mac = svc_core::link::request_mac(token, &head);
    Request::builder()
        .method(method)
        .uri(path)
        .header(svc_core::link::REGION_HEADER, region)
        .header(svc_core::link::AT_HEADER, at)
        .header(svc_core::link::ID_HEADER, id)
        .header(svc_core::link::BODY_HEADER, body_sha256)
        .header(svc_core::link::MAC_HEADER, mac)
        .header("content-type", "application/vnd.svc.postcard")
        .body(Body::from(body))
        .unwrap()
}

/// A folder copied, but for the folders named in `skip` (at any depth).
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path, skip: &[&str]) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (path, target) = (entry.path(), to.join(entry.file_name()));
        if !entry.file_type().unwrap().is_dir() {
            std::fs::copy(path, target).unwrap();
        } else if !skip.iter().any(|name| entry.file_name() == *name) {
            copy_tree(&path, &target, skip);
        }
    }
}
