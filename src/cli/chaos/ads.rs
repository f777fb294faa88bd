//! Paid placements in a chaos run: the first business's sealed ads in one
//! funded campaign whose money runs out mid-load, and pools and renders
//! from the AI keys over every region in turn, each as its client saw it.
//! No campaign may spend past its budget, whatever the faults: that is
//! judged from what the clients were answered and from home's ledger.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};
use svc_core::ads::Micros;
use svc_core::ids::RecordType;
use svc_core::keys::SigningKey;

use super::load::Target;
use super::setup::{AiKey, ORIGIN, Onboarded, RP_ID};
use svc_client::admin::Admin;
use svc_client::sealing::Passkey;
use svc_client::{ClientError, Signer, Unsigned};
use svc_clock::{Clock, SystemClock};

/// A render costs one dollar (1,000.00 per thousand).
const NET_PRICE_CPM: &str = "1000.00";
const RENDER_COST: Micros = Micros(1_000_000);

/// The campaign a run spends.
#[derive(Debug, Clone)]
pub struct Campaign {
    pub campaign_id: String,
    pub budget: Micros,
}

impl Campaign {
    /// How many renders the budget pays for.
    pub fn renders(&self) -> u64 {
        self.budget.0 / RENDER_COST.0
    }
}

/// Seals two ads of `business` with its passkey and puts them in a `cpm`
/// campaign funded for `renders` renders.
pub async fn campaign(
    admin: &Admin,
    business: &Onboarded,
    passkey: &SigningKey,
    renders: u32,
) -> Result<Campaign, ClientError> {
    let config = admin.call("GET", "/admin/config", None).await?;
    let rp_id = config["passkey_rp_id"].as_str().unwrap_or(RP_ID);
    let origin = config["passkey_origin"].as_str().unwrap_or(ORIGIN);
    let authenticator = Passkey { key: passkey, rp_id, origin };
    let mut items = Vec::new();
    for (own_id, headline) in [("chaos-lamps", "Lamps that stay on"), ("chaos-desks", "Desks for long nights")] {
        let mut ad = svc_core::records::examples::example(RecordType::Ads);
        ad["ad_id"] = json!(own_id);
        ad["headline"] = json!(headline);
        if let Some(fields) = ad.as_object_mut() {
            fields.remove("image_square_url");
            fields.remove("image_landscape_url");
        }
        let bytes = ad.to_string().into_bytes();
        let seal = authenticator.seal_record(&business.context, "ads", &bytes, SystemClock.now(), None)?;
        let body = json!({"record_type": "ads", "record_base64": svc_core::b64::std_encode(&bytes), "seal": seal});
        let saved =
            admin.call("POST", &format!("/admin/businesses/{}/records", business.business_uuid), Some(body)).await?;
        items.push(saved["record_id"].as_str().unwrap_or_default().to_owned());
    }
    let budget = Micros(RENDER_COST.0 * u64::from(renders));
    let terms = json!({"name": "chaos", "placement": "ad", "budget": budget.to_decimal(), "net_price": NET_PRICE_CPM,
        "basis": "cpm", "keywords": ["lamp"], "countries": ["FR"], "formats": ["compact", "card"],
        "repeats": {"allowed": false, "max_per_conversation": 1}});
    let path = format!("/admin/businesses/{}/campaigns", business.business_uuid);
    let made = admin.call("POST", &path, Some(json!({"terms": terms, "items": items}))).await?;
    let campaign_id = made["campaign_id"].as_str().unwrap_or_default().to_owned();
    let funds = json!({"amount": budget.to_decimal()});
    admin.call("POST", &format!("/admin/campaigns/{campaign_id}/funds"), Some(funds)).await?;
    Ok(Campaign { campaign_id, budget })
}

/// One pool, and the render of its first ad, as the client saw them.
#[derive(Debug, Clone, Serialize)]
pub struct AdSeen {
    /// Milliseconds since the load started.
    pub at_ms: u64,
    pub region: String,
    /// `0` when no answer came.
    pub pool_status: u16,
    pub ads: usize,
    /// `None` when there was nothing to render.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub render_status: Option<u16>,
    /// What a render answered: accepted, or why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub render: Option<Value>,
}

impl AdSeen {
    pub fn accepted(&self) -> bool {
        self.render.as_ref().is_some_and(|r| r["accepted"] == true)
    }
}

/// Pools and renders at `rate` a second for `duration`, over `keys` and
/// `targets` in turn; each render goes to the region that pooled.
pub async fn run(keys: &[AiKey], targets: &[Target], rate: u32, duration: Duration, authority: &str) -> Vec<AdSeen> {
    if rate == 0 {
        return Vec::new();
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let interval = Duration::from_secs_f64(1.0 / f64::from(rate));
    let mut tasks = tokio::task::JoinSet::new();
    let mut n: usize = 0;
    while started.elapsed() < duration {
        tokio::time::sleep_until((started + interval * n as u32).into()).await;
        let key = keys[n % keys.len()].clone();
        let target = targets[(n / keys.len()) % targets.len()].clone();
        let (seen, authority) = (seen.clone(), authority.to_owned());
        tasks.spawn(async move {
            let entry = one(&key, &target, n, &authority, started).await;
            seen.lock().unwrap_or_else(|p| p.into_inner()).push(entry);
        });
        n += 1;
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    let mut all = std::mem::take(&mut *seen.lock().unwrap_or_else(|p| p.into_inner()));
    all.sort_by_key(|s| s.at_ms);
    all
}

/// A signed ad call with its Idempotency-Key: the status (0 for none) and body.
async fn call(key: &AiKey, target: &Target, authority: &str, path: &str, body: &Value, idem: &str) -> (u16, Value) {
    let signer = Signer::new(key.key.clone(), authority, svc_client::retrieval::TAG_RETRIEVAL);
    let mut unsigned = Unsigned::new("POST", path, body.to_string().into_bytes()).header("idempotency-key", idem);
    if let Some(grant) = &key.grant {
        unsigned = unsigned.header(svc_core::sandbox::GRANT_HEADER, grant);
    }
    let Ok(request) = signer.sign_now(unsigned, SystemClock.now().as_secs()) else { return (0, Value::Null) };
    match tokio::time::timeout(Duration::from_secs(10), target.transport.send(request)).await {
        Ok(Ok(answer)) => (answer.status, answer.json()),
        _ => (0, Value::Null),
    }
}

async fn one(key: &AiKey, target: &Target, n: usize, authority: &str, started: Instant) -> AdSeen {
    let at_ms = started.elapsed().as_millis() as u64;
    let session = format!("chaos-{n}");
    let pool = json!({"country": "FR", "keywords": ["lamp"], "formats": ["card"], "sort_by": "net_price:desc",
        "size": 2, "session_ref": session});
    let (pool_status, pooled) = call(key, target, authority, "/v1/ads/pool", &pool, &format!("pool-{n}")).await;
    let ads = pooled["ads"].as_array().cloned().unwrap_or_default();
    let mut seen =
        AdSeen { at_ms, region: target.region.clone(), pool_status, ads: ads.len(), render_status: None, render: None };
    if let Some(first) = ads.first() {
        let render = json!({"render_token": first["render_token"], "format": "card", "session_ref": session});
        let (status, answer) = call(key, target, authority, "/v1/ads/render", &render, &format!("render-{n}")).await;
        seen.render_status = Some(status);
        seen.render = (status == 200).then_some(answer);
    }
    seen
}
