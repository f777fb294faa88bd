//! `service/ads/1`: an ad a business seals (the spec names the type and its
//! creative, R2.8.4, but not its members: this is svc's form). A campaign
//! decides where and when it runs; the ad is only what is shown.

use serde_json::{Map, Value};

use super::form::{Checker, Field, Form, NAME, Text, opt, req};
use super::scope::Scope;

/// An ad's `description`: one short paragraph, one line.
pub const MAX_AD_DESCRIPTION: usize = 300;
/// An ad's `cta_text`: a button's words.
pub const MAX_CTA: usize = 30;

pub(super) const FIELDS: &[Field] = &[
    req("schema", Form::Schema),
    req("language", Form::Language),
    req("ad_id", Form::OwnId),
    req("countries", Form::Countries),
    req("headline", Form::Text(NAME)),
    req("description", Form::Text(Text { max: MAX_AD_DESCRIPTION, multiline: false, scope: Scope::Full })),
    req("cta_text", Form::Text(Text { max: MAX_CTA, multiline: false, scope: Scope::Full })),
    // Used exactly as entered: the service is never in the redirect path (R4.3.8).
    req("destination_url", Form::HttpsUrl),
    // Fetched by the service, never by an end user's browser (R4.1.22).
    opt("image_square_url", Form::HttpsUrl),
    opt("image_landscape_url", Form::HttpsUrl),
];

/// No rule spans two members: the display domain is the destination's own
/// host (R4.3.7), derived, never entered.
pub(super) fn cross(_checker: &mut Checker<'_>, _map: &Map<String, Value>) {}
