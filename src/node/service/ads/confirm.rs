//! `POST /v1/ads/render` and `POST /v1/ads/click` (retrieval 3, 4.2): a
//! confirmation is judged at the region that served the pool or search,
//! against its own record of the token, by the ad-reservations actor; the
//! same Idempotency-Key and body answer the first answer again.

use serde::Deserialize;
use serde_json::{Value, json};
use svc_core::ads::campaign::Repeats;
use svc_core::ads::tokens::{self, CLICK_V1, ClickToken, RENDER_V1, RenderToken};
use svc_core::ads::{Basis, Format, Micros, Placement, event_charge};
use svc_core::dsse::Envelope;
use svc_core::keyset::Purpose;
use svc_core::problem::Code;
use svc_core::receipt::{ReceiptCheck, verify as verify_receipt};
use svc_core::time::UnixMs;

use super::reservations::{conversation_secret, lease_more, take_rate};
use crate::actors::ad_reservations::{AdMsg, Confirmation, Confirmed};
use crate::region::ServeTimes;
use crate::region::parts::{
    HasAds, HasClock, HasConfig, HasHome, HasKeySet, HasLeaseAsks, HasRegistry, HasReplica, HasSponsorships, HasStore,
};
use crate::service::retrieval::{Caller, receipt_signer};
use crate::service::{Error, Result};
use svc_clock::random;
use svc_store::be;
use svc_store::cf;
use svc_store::model::Campaign;

/// What confirming a render or a click reads: the region's ad reservations
/// and leases, the key its tokens are signed with, and home's writers.
pub trait Confirms: HasAds + HasClock + HasConfig + HasHome + HasKeySet + HasLeaseAsks + HasReplica + HasStore {}

impl<R> Confirms for R where
    R: HasAds + HasClock + HasConfig + HasHome + HasKeySet + HasLeaseAsks + HasReplica + HasStore
{
}

/// The longest Idempotency-Key kept.
pub const MAX_IDEMPOTENCY_KEY: usize = 255;

/// A render confirmation as sent: the ad form or the sponsored form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RenderBody {
    render_token: Option<Value>,
    retrieval_id: Option<String>,
    record_id: Option<String>,
    receipt: Option<Value>,
    format: Option<String>,
    session_ref: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClickBody {
    click_token: Value,
    session_ref: Option<String>,
}

fn invalid(detail: impl Into<String>) -> Error {
    Error::detail(Code::RequestInvalid, detail)
}

fn token_invalid(detail: impl Into<String>) -> Error {
    Error::detail(Code::TokenInvalid, detail)
}

/// The region a confirmation belongs to, as its token or receipt names it,
/// read before anything is verified: only to route it there. `None` when
/// the body names none (it is judged here, and refused).
pub fn serving_region(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let envelope = ["render_token", "click_token", "receipt"].iter().find_map(|m| value.get(*m))?;
    let payload = Envelope::from_value(envelope).ok()?.payload_bytes().ok()?;
    let payload: Value = serde_json::from_slice(&payload).ok()?;
    payload.get("region")?.as_str().map(str::to_owned)
}

/// The Idempotency-Key a confirmation must carry.
pub fn idempotency_key(header: Option<&str>) -> Result<String> {
    match header {
        Some(key) if !key.is_empty() && key.len() <= MAX_IDEMPOTENCY_KEY && key.is_ascii() => Ok(key.to_owned()),
        Some(_) => Err(invalid(format!("Idempotency-Key is 1 to {MAX_IDEMPOTENCY_KEY} ASCII characters"))),
        None => Err(invalid("a confirmation carries an Idempotency-Key header")),
    }
}

/// Opens a token this service signed with a receipt key of its key set.
fn open_token<T: for<'de> Deserialize<'de>>(
    state: &impl HasKeySet,
    value: &Value,
    name: &str,
    now: UnixMs,
) -> Result<T> {
    let envelope = Envelope::from_value(value).map_err(|_| token_invalid("the token is not a DSSE envelope"))?;
    let kid = tokens::signer(&envelope).ok_or_else(|| token_invalid("the token is not signed"))?;
    let key = state
        .key_set()
        .key(Purpose::Receipt, kid, now, now)
        .ok_or_else(|| token_invalid("the token is not signed by a key of this service"))?;
    tokens::open(&envelope, name, &key).map_err(|reason| token_invalid(format!("the token: {}", reason.as_str())))
}

/// The digest of the conversation a `session_ref` names (it is kept only
/// as this HMAC).
fn conversation_of(state: &impl HasStore, value: Option<String>) -> Result<String> {
    let session = value
        .filter(|s| !s.is_empty() && s.len() <= svc_core::ads::pool::MAX_SESSION_REF)
        .ok_or_else(|| invalid("session_ref is required (1 to 256 characters)"))?;
    Ok(svc_core::ads::conversation(&conversation_secret(state)?, &session))
}

fn here(state: &impl HasConfig, region: &str) -> Result<()> {
    if region == state.config().region {
        Ok(())
    } else {
        Err(Error::retry_after(
            Code::Unavailable,
            1_000,
            format!("this confirmation belongs to region {region}, which cannot be reached from here"),
        ))
    }
}

fn campaign(state: &impl HasStore, campaign_id: &str) -> Result<Option<Campaign>> {
    Ok(state.store().get::<Campaign>(cf::CAMPAIGNS, campaign_id.as_bytes())?)
}

fn token_key(at: UnixMs, id: &str) -> Vec<u8> {
    let mut key = be(at.0.max(0) as u64).to_vec();
    key.extend_from_slice(id.as_bytes());
    key
}

/// What a confirmation is about, read and checked.
struct Subject {
    item_id: String,
    rendered: String,
    campaign_id: String,
    placement: Placement,
    basis: Basis,
    repeats: Repeats,
    cost: Micros,
    reserve_id: Option<u64>,
    since: UnixMs,
    token_key: Vec<u8>,
    label: Option<&'static str>,
    /// Whose ad or row it is, and where it was served: the business's analytics.
    business_uuid: String,
    country: Option<String>,
}

pub async fn render<R>(state: &R, caller: &Caller, idempotency_key: String) -> Result<Vec<u8>>
where
    R: Confirms + HasRegistry + HasSponsorships,
{
    let now = caller.now;
    let body: RenderBody =
        serde_json::from_slice(&caller.body).map_err(|e| invalid(format!("the confirmation: {e}")))?;
    let sponsored_form = body.retrieval_id.is_some() || body.record_id.is_some() || body.receipt.is_some();
    let format = body.format.as_deref().and_then(Format::parse).ok_or_else(|| invalid("format is compact or card"))?;
    let conversation = conversation_of(state, body.session_ref)?;
    let subject = match (body.render_token, sponsored_form) {
        (Some(_), true) => return Err(invalid("send either a render_token or a search row, not both")),
        (Some(token), false) => {
            let token: RenderToken = open_token(state, &token, RENDER_V1, now)?;
            if token.company_uuid != caller.key.company_uuid {
                return Err(token_invalid("the render token was issued to another company"));
            }
            here(state, &token.region)?;
            if !token.formats.contains(&format) {
                return Err(invalid("format is not one the ad offers"));
            }
            let since = UnixMs::parse_rfc3339(&token.issued_at).ok_or_else(|| token_invalid("issued_at"))?;
            let Some(campaign) = campaign(state, &token.campaign_id)? else {
                return Err(token_invalid("the token's campaign is unknown"));
            };
            let terms = campaign.terms;
            Subject {
                item_id: token.ad_id,
                rendered: token.token_id.clone(),
                campaign_id: token.campaign_id,
                placement: Placement::Ad,
                basis: terms.basis,
                repeats: terms.repeats,
                cost: event_charge(terms.net_price, terms.basis, take_rate(state)?),
                reserve_id: Some(token.reserve_id),
                since,
                token_key: token_key(since, &token.token_id),
                label: None,
                business_uuid: campaign.business_uuid,
                country: token.country,
            }
        }
        (None, true) => sponsored(state, caller, body.retrieval_id, body.record_id, body.receipt, format)?,
        (None, false) => {
            return Err(invalid("send a render_token, or a search row's retrieval_id, record_id and receipt"));
        }
    };
    let click = ClickToken {
        v: 1,
        token_id: format!("ct_{}", hex::encode(random::<12>())),
        rendered: subject.rendered.clone(),
        region: state.config().region.clone(),
        company_uuid: caller.key.company_uuid.clone(),
        key_id: caller.key.key_id.clone(),
        item_id: subject.item_id.clone(),
        campaign_id: subject.campaign_id.clone(),
        placement: subject.placement,
        basis: subject.basis,
        rendered_at: now.to_rfc3339_millis(),
        conversation: conversation.clone(),
        country: subject.country.clone(),
    };
    let signer = receipt_signer(state, now)?;
    let click_token = tokens::sign(CLICK_V1, &click, &signer.key);
    let accepted = match subject.label {
        Some(label) => json!({"accepted": true, "label": label, "click_token": click_token}),
        None => json!({"accepted": true, "click_token": click_token}),
    };
    let accepted = serde_json::to_vec(&accepted).map_err(Error::internal)?;
    confirm(state, caller, idempotency_key, conversation, subject, false, accepted).await
}

/// The sponsored form: a row a search at this region marked `sponsored`,
/// with the receipt exactly as received (R4.2.3, R4.2.9, R4.2.10).
fn sponsored<R>(
    state: &R,
    caller: &Caller,
    retrieval_id: Option<String>,
    record_id: Option<String>,
    receipt: Option<Value>,
    format: Format,
) -> Result<Subject>
where
    R: HasConfig + HasStore + HasRegistry + HasSponsorships + HasKeySet,
{
    let now = caller.now;
    let (Some(retrieval_id), Some(record_id), Some(receipt)) = (retrieval_id, record_id, receipt) else {
        return Err(invalid("the sponsored form is retrieval_id, record_id, receipt, format and session_ref"));
    };
    let envelope = Envelope::from_value(&receipt).map_err(|_| token_invalid("the receipt is not a DSSE envelope"))?;
    let check = ReceiptCheck {
        receipt_key: |kid: &str, _region: &str, at: UnixMs| state.key_set().key(Purpose::Receipt, kid, at, now),
        presenter: Some(caller.key.key_id.as_str()),
        rows: None,
    };
    let verified = verify_receipt(&envelope, &check)
        .map_err(|reason| token_invalid(format!("the receipt: {}", reason.as_str())))?;
    if verified.format < 2 {
        return Err(token_invalid("the receipt is of format 1, which names no caller key"));
    }
    let receipt = verified.receipt;
    here(state, &receipt.region)?;
    if receipt.retrieval_id != retrieval_id {
        return Err(invalid("retrieval_id is not the receipt's"));
    }
    let row = receipt.rows.iter().find(|r| r.id == record_id);
    if row.and_then(|r| r.sponsored) != Some(true) {
        return Err(invalid("the receipt shows no sponsored row of this record"));
    }
    let country = receipt.country.clone().unwrap_or_default();
    let since = UnixMs::parse_rfc3339(&receipt.served_at).ok_or_else(|| token_invalid("served_at"))?;
    // The campaign placing the row now, or failing that any that listed it.
    let placed = state.sponsorships().at(state, ServeTimes::seq(state.store()))?;
    let campaigns = placed.rows.get(&record_id).cloned().unwrap_or_default();
    let campaign = campaigns
        .iter()
        .find(|c| c.places(&record_id, &country))
        .or_else(|| campaigns.first())
        .ok_or_else(|| invalid("no campaign places this record"))?;
    if !campaign.terms.formats.contains(&format) {
        return Err(invalid("format is not one the row's campaign offers"));
    }
    let kind = state.registry().record_head(&record_id)?.map(|h| h.record_type);
    let label = kind.and_then(svc_core::ads::label);
    let terms = &campaign.terms;
    Ok(Subject {
        item_id: record_id.clone(),
        rendered: retrieval_id.clone(),
        campaign_id: campaign.campaign_id.clone(),
        placement: terms.placement,
        basis: terms.basis,
        repeats: terms.repeats,
        cost: event_charge(terms.net_price, terms.basis, take_rate(state)?),
        reserve_id: None,
        since,
        token_key: token_key(since, &format!("{retrieval_id}\0{record_id}")),
        label: Some(label.unwrap_or("Sponsored")),
        business_uuid: campaign.business_uuid.clone(),
        country: receipt.country,
    })
}

pub async fn click<R>(state: &R, caller: &Caller, idempotency_key: String) -> Result<Vec<u8>>
where
    R: Confirms,
{
    let now = caller.now;
    let body: ClickBody = serde_json::from_slice(&caller.body).map_err(|e| invalid(format!("the click: {e}")))?;
    let conversation = conversation_of(state, body.session_ref)?;
    let token: ClickToken = open_token(state, &body.click_token, CLICK_V1, now)?;
    if token.company_uuid != caller.key.company_uuid {
        return Err(token_invalid("the click token was issued to another company"));
    }
    here(state, &token.region)?;
    // A click belongs to the conversation its render was confirmed in: a
    // fresh session_ref per click would make each one look like a new
    // person's and bill it again.
    if conversation != token.conversation {
        return Err(invalid("session_ref is not the conversation the render was confirmed in"));
    }
    let since = UnixMs::parse_rfc3339(&token.rendered_at).ok_or_else(|| token_invalid("rendered_at"))?;
    let placed = campaign(state, &token.campaign_id)?;
    let net_price = placed.as_ref().map(|c| c.terms.net_price).unwrap_or_default();
    let business_uuid = placed.map(|c| c.business_uuid).unwrap_or_default();
    let subject = Subject {
        item_id: token.item_id.clone(),
        rendered: token.rendered.clone(),
        campaign_id: token.campaign_id.clone(),
        placement: token.placement,
        basis: token.basis,
        repeats: Repeats { allowed: false, max_per_conversation: 1 },
        cost: event_charge(net_price, Basis::Cpc, take_rate(state)?),
        reserve_id: None,
        since,
        token_key: token_key(since, &token.token_id),
        label: None,
        business_uuid,
        country: token.country.clone(),
    };
    confirm(state, caller, idempotency_key, conversation, subject, true, br#"{"accepted":true}"#.to_vec()).await
}

/// Has the actor judge and record a confirmation, leasing more of the
/// campaign's money from home once when the region holds too little.
async fn confirm<R>(
    state: &R,
    caller: &Caller,
    idempotency_key: String,
    conversation: String,
    subject: Subject,
    click: bool,
    accepted_answer: Vec<u8>,
) -> Result<Vec<u8>>
where
    R: HasConfig + HasStore + HasClock + HasHome + HasReplica + HasAds + HasLeaseAsks,
{
    let mut ask = Confirmation {
        click,
        token_key: subject.token_key,
        idempotency_key,
        request: svc_core::digest::sha256(&caller.body),
        since: subject.since,
        now: caller.now,
        key_id: caller.key.key_id.clone(),
        campaign_id: subject.campaign_id.clone(),
        placement: subject.placement,
        basis: subject.basis,
        repeats: subject.repeats,
        cost: subject.cost,
        reserve_id: subject.reserve_id,
        conversation,
        billed_clicks_per_hour: state.config().ads.billed_clicks_per_hour,
        item_id: subject.item_id.clone(),
        accepted_answer,
        home_is_out: false,
        business_uuid: subject.business_uuid.clone(),
        group_id: caller.key.group_id.clone(),
        country: subject.country.clone(),
    };
    loop {
        let asked = Box::new(ask.clone());
        match state.ads().call(|reply| AdMsg::Confirm { ask: asked, reply }).await?? {
            Confirmed::Answer(answer) => return Ok(answer),
            Confirmed::KeyReused => return Err(invalid("this Idempotency-Key came with another body")),
            Confirmed::NeedLease(_) if ask.home_is_out => {
                return Err(Error::internal("the actor asked for a lease after home had none"));
            }
            Confirmed::NeedLease(cost) => {
                ask.home_is_out = !lease_more(state, &subject.campaign_id, cost).await?;
            }
        }
    }
}
