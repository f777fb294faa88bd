//! Ad images as end users see them (R2.8.5): through links the serving
//! region signs for 15 minutes, to bytes the service fetched when the ad
//! was saved. The advertiser's own server never sees an end user.

use serde_json::{Map, Value};
use svc_core::ads::images::{self, LinkRefusal, Slot};
use svc_core::problem::Code;
use svc_core::time::UnixMs;

use super::reservations::conversation_secret;
use crate::region::parts::{HasClock, HasConfig, HasStore};
use crate::service::{Error, Result};
use svc_store::cf;
use svc_store::model::AdImage;

/// The region's key for image links, derived from its conversation secret
/// so that neither reveals the other.
fn link_secret(state: &impl HasStore) -> Result<Vec<u8>> {
    let mut input = b"svc ad image links\n".to_vec();
    input.extend(conversation_secret(state)?);
    Ok(svc_core::digest::sha256(&input).to_vec())
}

/// The creative's image links for a row's `adl_creative`: a link signed
/// now for each image the ad has, `null` for a slot it leaves empty.
pub fn links(
    state: &(impl HasConfig + HasStore),
    creative: Option<&Map<String, Value>>,
    now: UnixMs,
) -> Result<Vec<(Slot, Value)>> {
    let secret = link_secret(state)?;
    let base = state.config().public_base();
    Ok(Slot::ALL
        .iter()
        .map(|&slot| {
            let hash = creative.and_then(|c| c.get(slot.creative_member())).and_then(Value::as_str);
            let link = hash
                .and_then(|h| h.strip_prefix("sha256:"))
                .map(|hex| Value::String(format!("{base}{}", images::link_path(&secret, hex, now))));
            (slot, link.unwrap_or(Value::Null))
        })
        .collect())
}

/// The image a link names, once its signature and time are checked.
pub fn image(state: &(impl HasStore + HasClock), sha256_hex: &str, expires: i64, sig: &str) -> Result<AdImage> {
    let now = state.clock().now();
    images::check_link(&link_secret(state)?, sha256_hex, expires, sig, now).map_err(|refusal| match refusal {
        LinkRefusal::Invalid => Error::detail(Code::SignatureInvalid, "this image link was not signed here"),
        LinkRefusal::Expired => {
            Error::detail(Code::SignatureExpired, "this image link is past its 15 minutes: ask a new pool")
        }
    })?;
    state.store().get::<AdImage>(cf::AD_IMAGES, sha256_hex.as_bytes())?.ok_or_else(|| Error::new(Code::NotFound))
}
