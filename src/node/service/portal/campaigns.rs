//! A business's campaigns in the portal: an owner or admin starts one by
//! sealing a `campaign.v1` with their passkey (its terms as entered and the
//! records it places), and pauses, resumes or ends it. The operator funds
//! it; until then it places nothing.

use svc_core::ads::Micros;
use svc_core::ads::campaign::{CAMPAIGN_V1, CampaignDocument, CampaignTerms};
use svc_core::dsse::{self, Envelope};

use super::{SEALERS, Signed};
use crate::region::parts::{HasClock, HasConfig, HasHome, HasRegistry, HasStore};
use crate::service::ads::campaigns;
use crate::service::business_keys::passkey_document;
use crate::service::{Error, Result};
use svc_store::model::*;

/// The business's campaigns, newest first, each with what it spent and
/// has left (home's ledger).
pub fn list(state: &(impl HasStore + HasClock), signed: &Signed) -> Result<Vec<(Campaign, Micros, Micros)>> {
    let mut out = Vec::new();
    for campaign in campaigns::of_business(state, &signed.account_uuid)? {
        let (spent, _, left) = crate::service::ads::ledger::standing(state, &campaign)?;
        out.push((campaign, spent, left));
    }
    Ok(out)
}

/// The `campaign.v1` a person is about to seal, once its terms and records
/// pass every check a campaign's creation makes.
pub fn document(
    state: &(impl HasRegistry + HasClock),
    signed: &Signed,
    terms: CampaignTerms,
    items: Vec<String>,
) -> Result<(Vec<u8>, String)> {
    signed.require(SEALERS, "starting a campaign")?;
    let placement = campaigns::checked(&terms)?.placement;
    let items = campaigns::check_items(state, &signed.account_uuid, placement, &items)?;
    let document = CampaignDocument {
        v: 1,
        business_uuid: signed.account_uuid.clone(),
        terms,
        items,
        requested_at: state.clock().now().to_rfc3339_secs(),
    };
    Ok((document.to_bytes(), dsse::payload_type(CAMPAIGN_V1)))
}

/// Starts the campaign an owner's or admin's passkey sealed.
pub async fn start<R>(state: &R, business_uuid: &str, envelope: &Envelope) -> Result<Campaign>
where
    R: HasConfig + HasStore + HasRegistry + HasClock + HasHome,
{
    let payload = passkey_document(state, business_uuid, envelope, CAMPAIGN_V1, SEALERS, |bytes| {
        CampaignDocument::parse(bytes).map(|(_, at)| at)
    })?;
    let (document, _) = CampaignDocument::parse(&payload).ok_or_else(|| Error::internal("campaign document"))?;
    if document.business_uuid != business_uuid {
        return Err(Error::detail(svc_core::problem::Code::SealInvalid, "campaign.v1 refused: another business"));
    }
    campaigns::create(state, business_uuid, &document.terms, &document.items, envelope.to_json()).await
}

/// Pauses, resumes or ends one of the business's campaigns.
pub async fn set_state<R>(state: &R, signed: &Signed, campaign_id: &str, to: CampaignState) -> Result<Campaign>
where
    R: HasStore + HasClock + HasHome,
{
    signed.require(SEALERS, "changing a campaign")?;
    campaigns::set_state(state, &signed.account_uuid, campaign_id, to).await
}
