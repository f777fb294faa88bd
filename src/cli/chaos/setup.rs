//! What a run puts in a fresh deployment, over the admin API and the
//! business API as their users would: a business with its keys and a
//! passkey-sealed mandate, its products, and AI companies with keys.

use serde_json::json;
use svc_core::keys::{Alg, SigningKey};

use svc_client::admin::Admin;
use svc_client::retrieval::RetrievalClient;
use svc_client::sealing::{self, Passkey, SealContext};
use svc_client::transport::{Answer, Transport};
use svc_client::{ClientError, Signer, Unsigned};
use svc_clock::{Clock, SystemClock};

pub const RP_ID: &str = "portal.svc.localhost";
pub const ORIGIN: &str = "https://portal.svc.localhost";

/// An AI company's retrieval key, with the sandbox grant its first request needs.
#[derive(Clone)]
pub struct AiKey {
    pub key: SigningKey,
    pub grant: Option<String>,
    pub company_uuid: String,
    /// The group the key belongs to, which a business may block.
    pub group_id: String,
    /// Whom its clients believe: what the admin that registered it does.
    pub trust: svc_client::trust::Trust,
}

impl AiKey {
    /// Its client of the region at `base_url`: each call signed afresh, the
    /// grant sent along.
    pub fn client(&self, base_url: &str, authority: &str) -> Result<RetrievalClient, ClientError> {
        RetrievalClient::new(base_url, authority, self.key.clone(), self.grant.clone())?.trusting(&self.trust)
    }
}

/// A verified AI company that accepted the Terms, with one group and one
/// Ed25519 retrieval key drawn from `seed`; a prepay allowance when given.
pub async fn ai_company(admin: &Admin, name: &str, seed: u8, prepay: Option<i64>) -> Result<AiKey, ClientError> {
    let body = json!({"name": name, "verified": true, "terms_accepted": 1});
    let company = admin.call("POST", "/admin/companies", Some(body)).await?;
    let uuid = company["ai_company_uuid"].as_str().unwrap_or_default().to_owned();
    if let Some(remaining) = prepay {
        let allowance = json!({"ai_company_uuid": uuid, "prepay": true, "remaining": remaining});
        admin.call("POST", "/admin/allowances", Some(allowance)).await?;
    }
    let group = admin.call("POST", &format!("/admin/companies/{uuid}/groups"), Some(json!({"name": "bots"}))).await?;
    let key = SigningKey::from_seed(Alg::Ed25519, &[seed; 32]).map_err(|_| ClientError::NoKeyDrawn(Alg::Ed25519))?;
    let group_id = group["ai_group_id"].as_str().unwrap_or_default().to_owned();
    let path = format!("/admin/groups/{group_id}/retrieval-keys");
    let registered = admin.call("POST", &path, Some(json!({"jwk": key.verifying_key().to_jwk()}))).await?;
    let grant = registered["sandbox_key_grant"].as_str().map(str::to_owned);
    Ok(AiKey { key, grant, company_uuid: uuid, group_id, trust: admin.trust().clone() })
}

/// A French product of the business `Lumio`.
pub fn product(sku: usize) -> Vec<u8> {
    product_of(BUSINESSES[0], sku)
}

/// The businesses a run may onboard, in order: each its own brand.
pub const BUSINESSES: [&str; 4] = ["Lumio", "Brava", "Corda", "Dalia"];

/// A French product of the business (and brand) `brand`.
pub fn product_of(brand: &str, sku: usize) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schema": "service/products/1",
        "language": "fr",
        "business_product_id": format!("SKU-{sku}"),
        "product_name": format!("Lampe {sku}"),
        "countries": ["FR"],
        "brand": brand,
        "prices": [{"country": "FR", "currency": "EUR", "amount": "12.50"}],
        "on_sale": false,
        "availability": "in_stock",
        "product_url": format!("https://{}.example/p/{sku}", brand.to_lowercase()),
    }))
    .unwrap_or_default()
}

/// A business onboarded for a run.
pub struct Onboarded {
    pub business_uuid: String,
    /// Its legal name and only brand.
    pub brand: String,
    /// The seal context of its batches.
    pub context: SealContext,
    /// In a sandbox, the grant its integration key's first request carries.
    pub grant: Option<String>,
}

/// Onboards `Lumio` (FR) as its operator and its people would: the
/// business, its integration key and owner passkey, and a products mandate
/// sealed by the passkey.
pub async fn onboard(admin: &Admin, key: &SigningKey, passkey: &SigningKey) -> Result<Onboarded, ClientError> {
    onboard_as(admin, BUSINESSES[0], key, passkey).await
}

/// Onboards the business `brand` (FR), as [`onboard`] does `Lumio`.
pub async fn onboard_as(
    admin: &Admin,
    brand: &str,
    key: &SigningKey,
    passkey: &SigningKey,
) -> Result<Onboarded, ClientError> {
    let body = json!({"legal_name": brand, "country": "FR", "brands": [brand]});
    let created = admin.call("POST", "/admin/businesses", Some(body)).await?;
    let uuid = created["business_uuid"].as_str().unwrap_or_default().to_owned();
    let keys = format!("/admin/businesses/{uuid}/keys");
    let registered =
        admin.call("POST", &keys, Some(json!({"jwk": key.verifying_key().to_jwk(), "purpose": "integration"}))).await?;
    let grant = registered["sandbox_key_grant"].as_str().map(str::to_owned);
    let body = json!({"jwk": passkey.verifying_key().to_jwk(), "purpose": "sealing", "role": "owner"});
    admin.call("POST", &keys, Some(body)).await?;
    let now = SystemClock.now();
    let mandate = sealing::mandate_payload(
        "m-1",
        &uuid,
        &key.verifying_key().thumbprint(),
        &["products".into()],
        &["FR".into()],
        1_000_000,
        1 << 32,
        now.minus(60_000),
        now.plus(30 * svc_core::time::DAY),
    );
    // The passkey answers for the node's own relying party.
    let config = admin.call("GET", "/admin/config", None).await?;
    let rp_id = config["passkey_rp_id"].as_str().unwrap_or(RP_ID);
    let origin = config["passkey_origin"].as_str().unwrap_or(ORIGIN);
    let authenticator = Passkey { key: passkey, rp_id, origin };
    let envelope = authenticator.seal_mandate(&mandate)?;
    admin.call("POST", "/admin/mandates", Some(json!({"envelope": envelope}))).await?;
    let context =
        SealContext { cert_id: created["cert_id"].as_str().unwrap_or_default().to_owned(), ai_policy_version: 0 };
    Ok(Onboarded { business_uuid: uuid, brand: brand.to_owned(), context, grant })
}

/// A sandbox takes a key's requests once one carried its grant: the
/// integration key's first request, a read of its seal context. Nothing to
/// do in production.
pub async fn introduce(
    public: &Transport,
    key: &SigningKey,
    onboarded: &Onboarded,
    authority: &str,
) -> Result<(), ClientError> {
    let Some(grant) = &onboarded.grant else { return Ok(()) };
    let signer = Signer::new(key.clone(), authority, "svc-business-read");
    let unsigned = Unsigned::new("GET", "/v1/seal-context", Vec::new()).header(svc_core::sandbox::GRANT_HEADER, grant);
    let answer = public.send(signer.sign_now(unsigned, SystemClock.now().as_secs())?).await?;
    match answer.status {
        200 => Ok(()),
        status => Err(ClientError::Status {
            status,
            path: "/v1/seal-context".into(),
            body: String::from_utf8_lossy(&answer.bytes).into_owned(),
        }),
    }
}

/// Publishes `records` in one sealed push at `public` (`seq` numbers the batch).
pub async fn publish(
    public: &Transport,
    key: &SigningKey,
    context: &SealContext,
    records: &[Vec<u8>],
    seq: u64,
    authority: &str,
) -> Result<Answer, ClientError> {
    let seal = sealing::batch_seal(key, context, "products", records, seq, SystemClock.now())?;
    let signer = Signer::new(key.clone(), authority, "svc-push");
    let request = signer.sign_now(
        Unsigned::new("POST", "/v1/publish/products", sealing::publish_body(&seal, records))
            .header("idempotency-key", &format!("chaos-{seq}")),
        SystemClock.now().as_secs(),
    )?;
    public.send(request).await
}

/// Withdraws `record_id` with a sealed withdraw document, as the business's
/// system would.
pub async fn withdraw(
    public: &Transport,
    key: &SigningKey,
    context: &SealContext,
    record_id: &str,
    authority: &str,
) -> Result<Answer, ClientError> {
    let now = SystemClock.now();
    let document =
        serde_json::to_vec(&json!({"record_id": record_id, "action": "withdraw", "at": now.to_rfc3339_secs()}))
            .unwrap_or_default();
    let seal = sealing::key_seal(key, context, "products", &document, now)?;
    let body = serde_json::to_vec(&json!({"document_base64": svc_core::b64::std_encode(&document), "seal": seal}))
        .unwrap_or_default();
    let signer = Signer::new(key.clone(), authority, "svc-push");
    let request = signer.sign_now(Unsigned::new("POST", "/v1/publish/products/withdraw", body), now.as_secs())?;
    public.send(request).await
}

/// Imports `records` as a bulk file at `public`, as a business's system
/// would: an upload address (signed), the NDJSON file POSTed to it, then
/// the import with its batch seal, numbered by the next of `seqs` taken
/// just before it is sent (other pushes draw from the same numbers). The
/// import's answer: `202` when home queued it. An earlier step that fails
/// answers for it.
pub async fn bulk_import(
    public: &Transport,
    key: &SigningKey,
    context: &SealContext,
    records: &[Vec<u8>],
    seqs: &std::sync::atomic::AtomicU64,
    authority: &str,
) -> Result<Answer, ClientError> {
    let signer = Signer::new(key.clone(), authority, "svc-push");
    let body = serde_json::to_vec(&json!({"record_type": "products"})).unwrap_or_default();
    let request = signer.sign_now(
        Unsigned::new("POST", "/v1/bulk-uploads", body)
            .header("idempotency-key", &hex::encode(svc_clock::random::<8>())),
        SystemClock.now().as_secs(),
    )?;
    let upload = public.send(request).await?;
    let described = upload.json();
    let (Some(path), Some(upload_id)) =
        (described["url"].as_str().and_then(svc_client::bulk::upload_path), described["upload_id"].as_str())
    else {
        return Ok(upload);
    };
    let file = svc_client::bulk::form(&described["fields"], &svc_client::bulk::ndjson(records));
    let request = axum::http::Request::post(path)
        .header("content-type", svc_client::bulk::content_type())
        .body(axum::body::Body::from(file))?;
    let stored = public.send(request).await?;
    if stored.status != 201 {
        return Ok(stored);
    }
    let seq = seqs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let seal = sealing::batch_seal(key, context, "products", records, seq, SystemClock.now())?;
    let body = serde_json::to_vec(&json!({"upload_id": upload_id, "batch_seal": seal})).unwrap_or_default();
    let request = signer.sign_now(Unsigned::new("POST", "/v1/bulk-imports", body), SystemClock.now().as_secs())?;
    public.send(request).await
}

/// A signed read of the business API at `path` (a push's status, say).
pub async fn business_read(
    public: &Transport,
    key: &SigningKey,
    path: &str,
    authority: &str,
) -> Result<Answer, ClientError> {
    let signer = Signer::new(key.clone(), authority, "svc-business-read");
    public.send(signer.sign_now(Unsigned::new("GET", path, Vec::new()), SystemClock.now().as_secs())?).await
}
