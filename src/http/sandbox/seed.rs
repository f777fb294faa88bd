//! Seeds (and republishes) the sandbox corpus through the same pipeline a
//! real business uses: the admin API for the registry and passkey seals, and
//! signed business API requests for product batches. Nothing is written
//! around the checks.

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use svc_core::keys::{Alg, SigningKey};
use svc_core::time::{DAY, UnixMs};
use tower::ServiceExt;

use super::corpus::{BusinessSpec, Corpus};
use crate::api::admin_router;
use crate::surfaces::public_router;
use svc_client::sealing::{self, Passkey, SealContext};
use svc_client::{ClientError, Signer, Unsigned};
use svc_node::region::Region;
use svc_store::{StoreError, cf};

/// What stops seeding: a call the node refused, or a part that failed.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Key(#[from] svc_core::keys::KeyError),
    /// A request that does not build.
    #[error("{0}")]
    Request(#[from] axum::http::Error),
    /// An answer's body that did not read.
    #[error("{0}")]
    Body(#[from] axum::Error),
    /// An admin call the node refused.
    #[error("{method} {path}: {status} {answer}")]
    Admin { method: String, path: String, status: u16, answer: Value },
    /// An answer, or the store, without what seeding needs.
    #[error("{0}")]
    Missing(&'static str),
    #[error("sandbox {record_type} record rejected: {answer}")]
    RecordRejected { record_type: &'static str, answer: Value },
    #[error("sandbox push {push_id} rejected {products} products")]
    PushRejected { push_id: String, products: u64 },
    #[error("no batch id: {0}")]
    NoBatchId(Value),
    #[error("sandbox publish refused: {status} {answer}")]
    PublishRefused { status: u16, answer: Value },
}

/// What the seeder remembers, so a restart does not seed twice and a
/// republish finds the businesses it made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedState {
    pub seed: u64,
    pub sizes: super::corpus::Sizes,
    pub businesses: Vec<(String, String)>,
    pub sandbox_company: String,
    pub research_group: String,
    pub assistants_group: String,
}

const SEED_STATE_KEY: &[u8] = svc_store::keys::meta::SANDBOX_SEED;
/// The seeder's state, in `meta`.
pub const SEED_STATE: svc_store::Table<SeedState> =
    svc_store::Table::exact(svc_store::cf::meta::FAMILY, "meta.sandbox_seed", SEED_STATE_KEY);

/// Progress of a seeding run, for whoever is watching.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub stage: &'static str,
    pub done: usize,
    pub total: usize,
}

/// Sends one request through a router in-process; answers status and JSON.
pub async fn call(router: axum::Router, request: Request<Body>) -> Result<(u16, Value), SeedError> {
    // A router answers every request: its error type has no values.
    let response = router.oneshot(request).await.unwrap_or_else(|never| match never {});
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await?.to_bytes();
    Ok((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
}

/// One admin API call through the node's own admin router.
pub async fn admin(state: &Region, method: &str, path: &str, body: Value) -> Result<Value, SeedError> {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {}", state.config.admin_token))
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(&body).unwrap_or_default()))?;
    match call(admin_router(state.clone()), request).await? {
        (200..=299, value) => Ok(value),
        (status, answer) => Err(SeedError::Admin { method: method.to_owned(), path: path.to_owned(), status, answer }),
    }
}

/// An AI company named `name` with one group and one Ed25519 retrieval key
/// drawn from `seed`, registered through the admin API: the key and, in
/// the sandbox, its grant.
pub async fn ai_caller(state: &Region, name: &str, seed: u8) -> Result<(SigningKey, Option<String>), SeedError> {
    let company = admin(state, "POST", "/admin/companies", json!({"name": name})).await?;
    let uuid = company["ai_company_uuid"].as_str().ok_or(SeedError::Missing("no company uuid"))?;
    let group = admin(state, "POST", &format!("/admin/companies/{uuid}/groups"), json!({"name": "bots"})).await?;
    let key = SigningKey::from_seed(Alg::Ed25519, &[seed; 32])?;
    let group_id = group["ai_group_id"].as_str().ok_or(SeedError::Missing("no group id"))?;
    let path = format!("/admin/groups/{group_id}/retrieval-keys");
    let registered = admin(state, "POST", &path, json!({"jwk": key.verifying_key().to_jwk()})).await?;
    Ok((key, registered["sandbox_key_grant"].as_str().map(str::to_owned)))
}

/// The business's integration key and owner's passkey, from its seeds.
pub fn keys_of(spec: &BusinessSpec) -> Result<(SigningKey, SigningKey), SeedError> {
    let integration = SigningKey::from_seed(Alg::Ed25519, &spec.integration_seed)?;
    let passkey = SigningKey::from_seed(Alg::Es256, &spec.passkey_seed)?;
    Ok((integration, passkey))
}

/// Seeds the corpus unless this store already holds it.
pub async fn ensure_seeded(
    state: &Region,
    corpus: &Corpus,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<SeedState, SeedError> {
    let own_company = svc_store::keys::meta::SANDBOX_COMPANY;
    if let Some(seeded) = state.store.get::<SeedState>(SEED_STATE, SEED_STATE_KEY)? {
        name_own_company(state)?;
        return Ok(seeded);
    }
    let company = admin(state, "POST", "/admin/companies", json!({"name": "Sandbox AI", "verified": true})).await?;
    let company_uuid = company["ai_company_uuid"].as_str().unwrap_or_default().to_owned();
    // Named apart at once: sandbox callers' data expires, this company's not.
    state.store.put(cf::meta::SANDBOX_COMPANY, own_company, &company_uuid)?;
    let group = |name: &'static str| {
        let path = format!("/admin/companies/{company_uuid}/groups");
        async move { admin(state, "POST", &path, json!({"name": name})).await }
    };
    let assistants = group("assistants").await?["ai_group_id"].as_str().unwrap_or_default().to_owned();
    let research = group("research").await?["ai_group_id"].as_str().unwrap_or_default().to_owned();

    let mut businesses = Vec::new();
    for (i, spec) in corpus.businesses.iter().enumerate() {
        progress(Progress { stage: "businesses", done: i, total: corpus.businesses.len() });
        businesses.push(register_business(state, spec, &research).await?);
    }
    let seeded = SeedState {
        seed: corpus.seed,
        sizes: corpus.sizes,
        businesses,
        sandbox_company: company_uuid,
        research_group: research,
        assistants_group: assistants,
    };
    publish_all(state, corpus, &seeded, progress).await?;
    let campaigns = start_campaigns(state, corpus, &seeded.businesses).await?;
    state.store.put(cf::meta::SANDBOX_CAMPAIGNS, svc_store::keys::meta::SANDBOX_CAMPAIGNS, &campaigns)?;
    name_own_businesses(state, &seeded)?;
    state.store.put(SEED_STATE, SEED_STATE_KEY, &seeded)?;
    Ok(seeded)
}

/// Makes and funds the corpus's campaigns through the admin API, as a
/// business's form and then the operator would; answers their ids.
async fn start_campaigns(
    state: &Region,
    corpus: &Corpus,
    businesses: &[(String, String)],
) -> Result<Vec<String>, SeedError> {
    let mut made = Vec::new();
    for (spec, (uuid, _)) in corpus.businesses.iter().zip(businesses) {
        for campaign in &spec.campaigns {
            let items: Vec<String> =
                campaign.items.iter().map(|(kind, own_id)| svc_core::ids::record_id(*kind, uuid, own_id)).collect();
            let body = json!({"terms": campaign.terms, "items": items});
            let answer = admin(state, "POST", &format!("/admin/businesses/{uuid}/campaigns"), body).await?;
            let id = answer["campaign_id"].as_str().ok_or(SeedError::Missing("no campaign id"))?.to_owned();
            admin(state, "POST", &format!("/admin/campaigns/{id}/funds"), json!({"amount": campaign.funds})).await?;
            made.push(id);
        }
    }
    Ok(made)
}

/// The corpus's campaigns (none in a store seeded before it had any).
pub fn campaigns(state: &Region) -> Result<Vec<String>, SeedError> {
    Ok(state.store.get(cf::meta::SANDBOX_CAMPAIGNS, svc_store::keys::meta::SANDBOX_CAMPAIGNS)?.unwrap_or_default())
}

/// Names the corpus's own company apart in a store seeded by a build that
/// did not (sandbox callers' data expires, this company's does not).
pub fn name_own_company(state: &Region) -> Result<(), SeedError> {
    let own_company = svc_store::keys::meta::SANDBOX_COMPANY;
    if let Some(seeded) = state.store.get::<SeedState>(SEED_STATE, SEED_STATE_KEY)? {
        if !state.store.contains(cf::meta::SANDBOX_COMPANY, own_company)? {
            state.store.put(cf::meta::SANDBOX_COMPANY, own_company, &seeded.sandbox_company)?;
        }
        if !state.store.contains(cf::meta::SANDBOX_BUSINESSES, svc_store::keys::meta::SANDBOX_BUSINESSES)? {
            name_own_businesses(state, &seeded)?;
        }
    }
    Ok(())
}

/// Names the corpus's businesses apart: a caller's business expires 90
/// days after its last use (R1.42), the corpus's never.
fn name_own_businesses(state: &Region, seeded: &SeedState) -> Result<(), SeedError> {
    let uuids: Vec<String> = seeded.businesses.iter().map(|(uuid, _)| uuid.clone()).collect();
    Ok(state.store.put(cf::meta::SANDBOX_BUSINESSES, svc_store::keys::meta::SANDBOX_BUSINESSES, &uuids)?)
}

/// Whether this node holds a seeded sandbox corpus.
pub fn is_seeded(state: &Region) -> Result<bool, SeedError> {
    Ok(state.store.contains(SEED_STATE, SEED_STATE_KEY)?)
}

/// Starts a republish that goes on whatever happens to the caller, and
/// answers its report when it ends within `wait` (`None`: still running).
/// A whole corpus takes longer than an admin request may.
pub async fn republish_waiting(state: &Region, wait: std::time::Duration) -> Result<Option<Value>, SeedError> {
    if !is_seeded(state)? {
        return Err(SeedError::Missing("this node holds no sandbox corpus"));
    }
    let running = state.clone();
    let task = tokio::spawn(async move {
        let report = republish(&running, &|_| {}).await;
        if let Err(e) = &report {
            tracing::warn!(error = %e, "sandbox republish failed");
        }
        report
    });
    match tokio::time::timeout(wait, task).await {
        Ok(Ok(report)) => report.map(Some),
        Ok(Err(_)) => Err(SeedError::Missing("the republish stopped before it ended")),
        Err(_) => Ok(None),
    }
}

/// Publishes every record of the corpus again: new versions, same ids and bytes.
pub async fn republish(state: &Region, progress: &(dyn Fn(Progress) + Sync)) -> Result<Value, SeedError> {
    let seeded = state
        .store
        .get::<SeedState>(SEED_STATE, SEED_STATE_KEY)?
        .ok_or(SeedError::Missing("this node holds no sandbox corpus"))?;
    let corpus = super::corpus::generate(seeded.seed, seeded.sizes);
    let published = publish_all(state, &corpus, &seeded, progress).await?;
    Ok(json!({"seed": seeded.seed, "records": published}))
}

/// Creates the business, its keys, its mandate, its AI policy and, when it
/// blocks one, its block of the `research` group.
pub async fn register_business(
    state: &Region,
    spec: &BusinessSpec,
    research: &str,
) -> Result<(String, String), SeedError> {
    let created = admin(
        state,
        "POST",
        "/admin/businesses",
        json!({"legal_name": spec.legal_name, "country": spec.country, "brands": [spec.brand]}),
    )
    .await?;
    let uuid = created["business_uuid"].as_str().unwrap_or_default().to_owned();
    let cert_id = created["cert_id"].as_str().unwrap_or_default().to_owned();
    let (integration, passkey) = keys_of(spec)?;
    let keys_path = format!("/admin/businesses/{uuid}/keys");
    admin(state, "POST", &keys_path, json!({"jwk": integration.verifying_key().to_jwk(), "purpose": "integration"}))
        .await?;
    admin(
        state,
        "POST",
        &keys_path,
        json!({"jwk": passkey.verifying_key().to_jwk(), "purpose": "sealing", "role": "owner"}),
    )
    .await?;
    let now = state.clock.now();
    let config = &state.config;
    let authenticator = Passkey { key: &passkey, rp_id: &config.passkey_rp_id, origin: &config.passkey_origin };
    let mandate = sealing::mandate_payload(
        "sandbox",
        &uuid,
        &integration.verifying_key().thumbprint(),
        &["products".to_owned()],
        &spec.countries,
        1_000_000,
        1 << 34,
        now.minus(60_000),
        now.plus(92 * DAY - 120_000),
    );
    admin(state, "POST", "/admin/mandates", json!({"envelope": authenticator.seal_mandate(&mandate)?})).await?;
    if let Some(policy) = &spec.ai_policy {
        let context = SealContext { cert_id: cert_id.clone(), ai_policy_version: 0 };
        let seal = authenticator.seal_record(&context, "ai_policy", policy, now, Some(1))?;
        let body = json!({"record_base64": svc_core::b64::std_encode(policy), "seal": seal});
        admin(state, "POST", &format!("/admin/businesses/{uuid}/ai-policy"), body).await?;
    }
    if spec.blocks_research {
        admin(state, "POST", "/admin/blocks", json!({"business_uuid": uuid, "ai_group_id": research})).await?;
    }
    Ok((uuid, cert_id))
}

/// Products per seeding request: well inside both of a batch's limits
/// (`MAX_RECORDS`, and 32 MiB at the corpus's record sizes).
const SEED_BATCH: usize = 5_000;

/// Publishes every business's records: products in signed batches of
/// `SEED_BATCH` (processed in the background), the other types as
/// passkey-sealed saves. Waits until every push has settled.
async fn publish_all(
    state: &Region,
    corpus: &Corpus,
    seeded: &SeedState,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<usize, SeedError> {
    let total = corpus.record_count();
    let mut done = 0;
    let mut pushes = Vec::new();
    for (spec, (uuid, _)) in corpus.businesses.iter().zip(&seeded.businesses) {
        let (integration, passkey) = keys_of(spec)?;
        let shown = admin(state, "GET", &format!("/admin/businesses/{uuid}"), Value::Null).await?;
        let context = SealContext {
            cert_id: shown["cert_id"].as_str().ok_or(SeedError::Missing("no certificate in force"))?.to_owned(),
            ai_policy_version: shown["ai_policy_version"].as_u64().unwrap_or(0),
        };
        let now = state.clock.now();
        // A request carries at most the spec's batch of records (and 32 MiB):
        // a large corpus goes in several, each under its own `seq`.
        for (i, chunk) in spec.products.chunks(SEED_BATCH).enumerate() {
            let sealed_at = UnixMs(now.0 + i as i64);
            pushes.push(publish_products(state, &integration, &context, chunk, sealed_at).await?);
        }
        let config = &state.config;
        let authenticator = Passkey { key: &passkey, rp_id: &config.passkey_rp_id, origin: &config.passkey_origin };
        let others = std::iter::once(("business_files", &spec.business_file))
            .chain(spec.events.iter().map(|r| ("events", r)))
            .chain(spec.jobs.iter().map(|r| ("jobs", r)))
            .chain(spec.updates.iter().map(|r| ("updates", r)))
            .chain(spec.ads.iter().map(|r| ("ads", r)));
        for (record_type, record) in others {
            let seal = authenticator.seal_record(&context, record_type, record, now, None)?;
            let body = json!({"record_type": record_type, "record_base64": svc_core::b64::std_encode(record),
                "seal": seal});
            let saved = admin(state, "POST", &format!("/admin/businesses/{uuid}/records"), body).await?;
            if saved["outcome"] == "rejected" {
                return Err(SeedError::RecordRejected { record_type, answer: saved });
            }
            done += 1;
        }
        progress(Progress { stage: "records", done, total });
    }
    wait_settled(state, &pushes, done, total, progress).await
}

/// Waits until every push has settled, reporting as records settle.
pub async fn wait_settled(
    state: &Region,
    pushes: &[String],
    done: usize,
    total: usize,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<usize, SeedError> {
    loop {
        let mut settled = 0;
        let mut pending = false;
        for push_id in pushes {
            let push: Option<svc_store::model::PushRecord> = state.store.get(cf::PUSHES, push_id.as_bytes())?;
            let push = push.ok_or(SeedError::Missing("a sandbox push vanished"))?;
            settled += (push.counts[0] + push.counts[1] + push.counts[2] + push.counts[3]) as usize;
            pending |= push.completed_at.is_none();
            if push.counts[2] > 0 {
                return Err(SeedError::PushRejected { push_id: push_id.clone(), products: push.counts[2] });
            }
        }
        progress(Progress { stage: "records", done: done + settled, total });
        if !pending {
            return Ok(done + settled);
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// One signed product batch; answers its push id.
pub async fn publish_products(
    state: &Region,
    key: &SigningKey,
    context: &SealContext,
    records: &[Vec<u8>],
    now: UnixMs,
) -> Result<String, SeedError> {
    let request = publish_request(state, key, context, records, now)?;
    send_publish(state, request).await
}

/// A business system's signed publish request for `records`: sealed as one
/// batch under a fresh, strictly increasing `seq` (the millisecond of sealing).
pub fn publish_request(
    state: &Region,
    key: &SigningKey,
    context: &SealContext,
    records: &[Vec<u8>],
    now: UnixMs,
) -> Result<Request<Body>, SeedError> {
    let seq = now.0 as u64;
    let seal = sealing::batch_seal(key, context, "products", records, seq, now)?;
    let body = sealing::publish_body(&seal, records);
    let signer = Signer::new(key.clone(), &state.config.public_authority, "svc-push");
    let idempotency = format!("sandbox-{seq}-{}", key.verifying_key().thumbprint());
    let request = signer.sign_now(
        Unsigned::new("POST", "/v1/publish/products", body)
            .header("idempotency-key", &idempotency)
            // Introduces the key on its first sandbox request; production ignores it.
            .header(svc_core::sandbox::GRANT_HEADER, &svc_core::sandbox::grant_for(&key.verifying_key().thumbprint())),
        now.as_secs(),
    )?;
    Ok(request)
}

/// Sends a publish request through the node's router; answers the batch id.
pub async fn send_publish(state: &Region, request: Request<Body>) -> Result<String, SeedError> {
    let (status, answer) = call(public_router(state.clone()), request).await?;
    match status {
        200 | 202 => match answer["batch_id"].as_str() {
            Some(batch_id) => Ok(batch_id.to_owned()),
            None => Err(SeedError::NoBatchId(answer)),
        },
        _ => Err(SeedError::PublishRefused { status, answer }),
    }
}
