//! `POST /v1/ads/pool` (retrieval 4.1, 2.8): the ads of funded campaigns
//! whose keywords the pool names exactly, running in its country, in the
//! caller's order; each campaign in the pool reserves one event's cost at
//! this region, and each ad comes with a render token this region signed.
//! A receipt names every ad; a pool is never billed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use svc_core::ads::pool::{self, Candidate, Pool};
use svc_core::ads::reserve::Short;
use svc_core::ads::tokens::{self, RENDER_V1, RenderToken};
use svc_core::ads::{Format, Micros, event_charge};
use svc_core::ids::RecordType;
use svc_core::problem::{Code, Problem};
use svc_core::receipt::{Receipt, ReceiptRow};
use svc_core::search::serve::{receipt_row, serve_row};
use svc_core::time::UnixMs;

use super::confirm::Confirms;
use super::images;
use super::reservations::{conversation_secret, lease_more};
use crate::actors::ad_reservations::{AdMsg, conversation_key};
use crate::region::ServeTimes;
use crate::region::parts::{
    HasAdVersions, HasAds, HasClock, HasConfig, HasHome, HasLeaseAsks, HasRegistry, HasReplica, HasServeTimes,
    HasSponsorships, HasStore,
};
use crate::service::raw_json::RawObject;
use crate::service::retrieval::Bills;
use crate::service::retrieval::{Answer, Caller, Held, Served, deliver, receipt_signer};
use crate::service::{Error, Result};
use svc_clock::random;
use svc_store::cf;
use svc_store::model::{AdConversation, Campaign, RecordVersion, UsageKind};

/// Ads one pool considers at most (every campaign's items together).
pub const MAX_CANDIDATES: usize = 10_000;

/// An ad the pool may hold, with what its item needs.
struct Found {
    candidate: Candidate,
    campaign: Arc<Campaign>,
    version: Arc<RecordVersion>,
    business_uuid: String,
    formats: Vec<Format>,
}

pub async fn pool<R>(state: &R, caller: &Caller) -> Result<Answer>
where
    R: Bills + Confirms + HasRegistry + HasServeTimes + HasSponsorships + HasAdVersions,
{
    let now = caller.now;
    let asked = pool::parse(&caller.body).map_err(|(code, detail)| Error::from(Problem::new(code).detail(detail)))?;
    let digest = svc_core::ads::conversation(&conversation_secret(state)?, &asked.session_ref);
    // One replicated sequence for the whole answer: candidates and items.
    let seq = ServeTimes::seq(state.store());
    let found = candidates(state, &asked, seq)?;
    let retrieval_id = svc_core::ids::retrieval_id(&random());
    let admission = Admission {
        state,
        group_id: &caller.key.group_id,
        digest: &digest,
        now,
        blocked: HashMap::new(),
        judged: HashMap::new(),
    };
    let chosen = reserve(state, caller, &asked, &retrieval_id, found, admission).await?;

    let signer = receipt_signer(state, now)?;
    let mut items = Vec::with_capacity(chosen.len());
    let mut rows = Vec::with_capacity(chosen.len());
    // Each business's AI policy member, built once a pool.
    let mut policies = HashMap::new();
    for (found, reserve_id) in &chosen {
        let token = RenderToken {
            v: 1,
            token_id: format!("rt_{}", hex::encode(random::<12>())),
            retrieval_id: retrieval_id.clone(),
            region: state.config().region.clone(),
            company_uuid: caller.key.company_uuid.clone(),
            key_id: caller.key.key_id.clone(),
            ad_id: found.candidate.ad_id.clone(),
            campaign_id: found.campaign.campaign_id.clone(),
            business_uuid: found.business_uuid.clone(),
            formats: found.formats.clone(),
            basis: found.campaign.terms.basis,
            reserve_id: *reserve_id,
            issued_at: now.to_rfc3339_millis(),
            country: Some(asked.country.clone()),
        };
        let envelope = tokens::sign(RENDER_V1, &token, &signer.key);
        let (item, row) = item(state, found, &envelope, seq, &mut policies, now)?;
        items.push(item);
        rows.push(row);
    }
    let receipt = Receipt {
        retrieval_id: retrieval_id.clone(),
        served_at: now.to_rfc3339_millis(),
        region: state.config().region.clone(),
        request_hash: caller.request_hash(),
        country: Some(asked.country.clone()),
        rows,
        key_id: String::new(),
        caller_key_id: Some(caller.key.key_id.clone()),
        sandbox: state.config().environment.is_sandbox(),
    };
    let served = Served { kind: UsageKind::Pool, billable: false, cost: 1, country: None, businesses: Vec::new() };
    let envelope = deliver(state, caller, Held::unbilled(state), receipt, served, now).await?;
    let mut body = RawObject::new();
    body.value("retrieval_id", &retrieval_id)?;
    body.raw("receipt", &envelope);
    body.value("ads", &items)?;
    Ok(Answer { retrieval_id, body: body.close() })
}

/// Every ad the pool may consider: of an active, funded ad campaign running
/// in the pool's country with a keyword it names and a format it asks for,
/// and live. Whether each may be shown to this caller is judged later, in
/// the pool's order, only as far as the pool reaches ([`Admission`]).
fn candidates<R>(state: &R, asked: &Pool, seq: u64) -> Result<Vec<Found>>
where
    R: HasStore + HasRegistry + HasSponsorships + HasAdVersions,
{
    let placed = state.sponsorships().at(state, seq)?;
    let mut found = Vec::new();
    for campaign in &placed.ads {
        let terms = &campaign.terms;
        let matches = terms.keyword_matches(&asked.keywords);
        let formats: Vec<Format> = asked.formats.iter().copied().filter(|f| terms.formats.contains(f)).collect();
        let runs = campaign.state == svc_store::model::CampaignState::Active
            && campaign.spendable().0 > 0
            && terms.runs_in(&asked.country, asked.subdivision.as_deref());
        if !runs || matches == 0 || formats.is_empty() {
            continue;
        }
        for ad_id in &campaign.items {
            if found.len() >= MAX_CANDIDATES {
                return Ok(found);
            }
            let Some((generation, business_uuid)) = state.ad_versions().live(state.registry(), seq, ad_id)? else {
                continue;
            };
            let Some(version) = state.ad_versions().get(state.registry(), ad_id, generation)? else { continue };
            found.push(Found {
                candidate: Candidate {
                    ad_id: ad_id.clone(),
                    campaign_id: campaign.campaign_id.clone(),
                    net_price: terms.net_price,
                    published_at: version.published_at.0,
                    keyword_matches: matches,
                },
                campaign: campaign.clone(),
                version,
                business_uuid,
                formats: formats.clone(),
            });
        }
    }
    Ok(found)
}

/// Whether an ad may be shown to this caller in this conversation: its
/// business serves and does not block the caller's group, and the
/// conversation did not render it in the last hour. Each business's block
/// is read once a pool.
struct Admission<'a, R> {
    state: &'a R,
    group_id: &'a str,
    digest: &'a str,
    now: UnixMs,
    blocked: HashMap<String, bool>,
    judged: HashMap<String, bool>,
}

impl<R: HasStore + HasRegistry> Admission<'_, R> {
    fn admits(&mut self, found: &Found) -> Result<bool> {
        if let Some(admitted) = self.judged.get(&found.candidate.ad_id) {
            return Ok(*admitted);
        }
        let business = &found.business_uuid;
        let blocked = match self.blocked.get(business) {
            Some(b) => *b,
            None => {
                let b = self.state.registry().blocks(business, self.group_id)?;
                self.blocked.insert(business.clone(), b);
                b
            }
        };
        let key = conversation_key(self.digest, &found.candidate.ad_id);
        let admitted = !blocked
            && self.state.registry().serves(business, &found.version, self.now)?
            && !svc_core::ads::excluded(
                self.state.store().get::<AdConversation>(cf::AD_CONVERSATIONS, &key)?.and_then(|c| c.rendered_at),
                self.now,
            );
        self.judged.insert(found.candidate.ad_id.clone(), admitted);
        Ok(admitted)
    }
}

/// The pool in order, each of its ads admitted and each of its campaigns
/// holding a reserve: an ad not admitted, or of a campaign this region
/// cannot reserve (the key holds three already, or its money is out),
/// leaves, and the next ads take its places. Answers each chosen ad with
/// its campaign's reserve.
async fn reserve<R>(
    state: &R,
    caller: &Caller,
    asked: &Pool,
    retrieval_id: &str,
    mut found: Vec<Found>,
    mut admission: Admission<'_, impl HasStore + HasRegistry>,
) -> Result<Vec<(Found, u64)>>
where
    R: HasConfig + HasStore + HasClock + HasHome + HasReplica + HasAds + HasLeaseAsks,
{
    let now = admission.now;
    // One event's charge per campaign: a render's for cpm, a click's for cpc.
    let take_bps = super::reservations::take_rate(state)?;
    let costs: HashMap<String, Micros> = found
        .iter()
        .map(|f| {
            let terms = &f.campaign.terms;
            (f.campaign.campaign_id.clone(), event_charge(terms.net_price, terms.basis, take_bps))
        })
        .collect();
    let mut reserves: HashMap<String, u64> = HashMap::new();
    let mut out: HashSet<String> = HashSet::new();
    let mut paced = false;
    loop {
        let ordered = pool::order(asked, retrieval_id, found.iter().map(|f| f.candidate.clone()).collect());
        // Judged in order, only as far as the pool reaches.
        let mut refused: HashSet<String> = HashSet::new();
        for candidate in &ordered {
            let judged = found.iter().find(|f| f.candidate.ad_id == candidate.ad_id);
            if let Some(f) = judged
                && !admission.admits(f)?
            {
                refused.insert(candidate.ad_id.clone());
            }
        }
        if !refused.is_empty() {
            found.retain(|f| !refused.contains(&f.candidate.ad_id));
            continue;
        }
        let mut asks: Vec<(String, Micros)> = Vec::new();
        for candidate in &ordered {
            let id = &candidate.campaign_id;
            if !reserves.contains_key(id) && !asks.iter().any(|(c, _)| c == id) {
                asks.push((id.clone(), costs[id]));
            }
        }
        if asks.is_empty() && paced {
            let mut by_id: HashMap<String, Found> = found.into_iter().map(|f| (f.candidate.ad_id.clone(), f)).collect();
            return Ok(ordered
                .iter()
                .filter_map(|c| by_id.remove(&c.ad_id).map(|f| (f, reserves[&c.campaign_id])))
                .collect());
        }
        let answers = take(state, caller, &asks, !paced, now).await?;
        paced = true;
        for ((campaign_id, cost), answer) in asks.into_iter().zip(answers) {
            let reserved = match answer {
                Ok(id) => Some(id),
                Err(Short::TooMany) => None,
                // Once more after home leased the region more of it.
                Err(Short::NeedLease(_)) if lease_more(state, &campaign_id, cost).await? => {
                    take(state, caller, &[(campaign_id.clone(), cost)], false, now).await?.pop().and_then(|r| r.ok())
                }
                Err(Short::NeedLease(_)) => None,
            };
            match reserved {
                Some(id) => {
                    reserves.insert(campaign_id, id);
                }
                None => {
                    out.insert(campaign_id);
                }
            }
        }
        found.retain(|f| !out.contains(&f.candidate.campaign_id));
    }
}

/// Asks the actor for reserves; the first ask of a pool also paces the key.
async fn take(
    state: &impl HasAds,
    caller: &Caller,
    asks: &[(String, Micros)],
    pace: bool,
    now: UnixMs,
) -> Result<Vec<std::result::Result<u64, Short>>> {
    let (key_id, asks) = (caller.key.key_id.clone(), asks.to_vec());
    let taken = state.ads().call(|reply| AdMsg::Pool { key_id, asks, pace, now, reply }).await??;
    taken.map_err(|wait_ms| {
        Error::retry_after(
            Code::RateLimited,
            wait_ms.max(1) as u64,
            "past 600 pools an hour, a key may ask 20 pools per render it confirms",
        )
    })
}

/// An ad item (retrieval 2.8), and the receipt's entry for it.
fn item<R>(
    state: &R,
    found: &Found,
    render_token: &svc_core::dsse::Envelope,
    seq: u64,
    policies: &mut HashMap<String, Value>,
    now: UnixMs,
) -> Result<(Value, ReceiptRow)>
where
    R: HasConfig + HasStore + HasRegistry + HasServeTimes,
{
    let record: Value = serde_json::from_slice(&found.version.bytes).map_err(Error::internal)?;
    let text = |name: &str| record.get(name).cloned().unwrap_or(Value::Null);
    let destination = record.get("destination_url").and_then(Value::as_str).unwrap_or_default();
    let seal: Value = serde_json::from_slice(&found.version.seal).map_err(Error::internal)?;
    let signed: Map<String, Value> = serde_json::from_slice(&found.version.row).map_err(Error::internal)?;
    let at = state.serve_times().of(state.registry(), seq, &found.business_uuid, RecordType::Ads, now)?;
    let policy = match policies.get(&found.business_uuid) {
        Some(policy) => policy.clone(),
        None => {
            let policy = match state.registry().ai_policy_at(&found.business_uuid, now)? {
                Some(p) => {
                    let seal: Value = serde_json::from_slice(&p.seal).map_err(Error::internal)?;
                    json!({"version": p.version, "record_base64": svc_core::b64::std_encode(&p.bytes), "seal": seal})
                }
                None => json!({"version": 0, "record_base64": null, "seal": null}),
            };
            policies.insert(found.business_uuid.clone(), policy.clone());
            policy
        }
    };
    let terms = &found.campaign.terms;
    let mut creative = json!({
        "headline": text("headline"),
        "description": text("description"),
        "cta": text("cta_text"),
        "destination_url": destination,
        "display_domain": svc_core::ads::display_domain(destination),
    });
    for (slot, link) in images::links(state, signed.get("adl_creative").and_then(Value::as_object), now)? {
        creative[slot.url_member()] = link;
    }
    let item = json!({
        "ad_id": found.candidate.ad_id,
        "campaign_id": found.campaign.campaign_id,
        "business_uuid": found.business_uuid,
        "label": svc_core::ads::label(RecordType::Ads),
        "formats": found.formats,
        "creative": creative,
        "net_price": {"amount": terms.net_price.to_decimal(), "currency": "USD", "basis": terms.basis},
        "adl_origin_seal": seal,
        "record_base64": svc_core::b64::std_encode(&found.version.bytes),
        "row": serve_row(&signed, &at),
        "ai_policy": policy,
        "render_token": render_token,
    });
    Ok((item, receipt_row(&signed, &at)))
}
