//! Ads and paid placements, the pure rules (retrieval 1 rule 10, 2.8, 3,
//! 4.1 to 4.3, 8): the windows and caps, formats, prices in micro-dollars,
//! labels, a campaign's terms, the pool request and the order of its ads,
//! the render and click tokens, and the confirmation table. No clock, no
//! store: the service passes in what it knows and applies what comes back.

pub mod campaign;
pub mod confirm;
pub mod images;
pub mod ledger;
pub mod pace;
pub mod pool;
pub mod reserve;
pub mod tokens;

use serde::{Deserialize, Serialize};

use crate::ids::RecordType;
use crate::time::{HOUR, MINUTE};

/// A render is confirmed within this long of its pool, or of the search
/// that served a sponsored row (R3.3, R3.8).
pub const RENDER_WINDOW_MS: i64 = 10 * MINUTE;
/// A click token is good this long after its render was confirmed (R3.9).
pub const CLICK_VALID_MS: i64 = 24 * HOUR;
/// An item rendered in a conversation is out of its pools this long (R3.11).
pub const EXCLUSION_MS: i64 = 60 * MINUTE;
/// A repeat click on the same item in a conversation within this long is
/// recorded, not billed (R3.14).
pub const REPEAT_CLICK_MS: i64 = 15 * MINUTE;
/// How long a `session_ref`'s HMAC is kept (R4.1.15).
pub const SESSION_KEPT_MS: i64 = 24 * HOUR;
/// A pool's reservation of a campaign's budget lasts this long (R4.1.19).
pub const RESERVE_MS: i64 = 10 * MINUTE;
/// Outstanding reserves one key holds on one campaign (R4.1.20).
pub const MAX_RESERVES: usize = 3;
/// Pools a key asks for in an hour before it must confirm renders (R4.1.21).
pub const FREE_POOLS_PER_HOUR: u64 = 600;
/// Past that, pools allowed per render the key confirmed (R4.1.21).
pub const POOLS_PER_RENDER: u64 = 20;
/// The largest pool (R4.1.12).
pub const MAX_POOL_SIZE: usize = 20;
/// Keywords in a pool request (R4.1.4).
pub const MAX_KEYWORDS: usize = 10;
/// The largest body an ads route reads (retrieval 8).
pub const MAX_BODY: usize = 64 * 1024;

/// How an ad is shown: `compact` (1:1 image) or `card` (1.91:1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    Compact,
    Card,
}

impl Format {
    pub const ALL: [Format; 2] = [Format::Compact, Format::Card];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Compact => "compact",
            Format::Card => "card",
        }
    }

    pub fn parse(text: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.as_str() == text)
    }
}

/// What a campaign pays for: a thousand renders, or a click (R2.8.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    Cpm,
    Cpc,
}

impl Basis {
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::Cpm => "cpm",
            Basis::Cpc => "cpc",
        }
    }

    pub fn parse(text: &str) -> Option<Basis> {
        match text {
            "cpm" => Some(Basis::Cpm),
            "cpc" => Some(Basis::Cpc),
            _ => None,
        }
    }
}

/// What a campaign places: an ad in pools, a sponsored product row, or a
/// promoted event, job or update row in searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    Ad,
    Sponsorship,
    Promotion,
}

impl Placement {
    pub fn as_str(self) -> &'static str {
        match self {
            Placement::Ad => "ad",
            Placement::Sponsorship => "sponsorship",
            Placement::Promotion => "promotion",
        }
    }

    pub fn parse(text: &str) -> Option<Placement> {
        [Placement::Ad, Placement::Sponsorship, Placement::Promotion].into_iter().find(|p| p.as_str() == text)
    }

    /// The placement a paid record of `kind` is: ads in pools, products
    /// sponsored, events, jobs and updates promoted; business files none.
    pub fn of(kind: RecordType) -> Option<Placement> {
        match kind {
            RecordType::Ads => Some(Placement::Ad),
            RecordType::Products => Some(Placement::Sponsorship),
            RecordType::Events | RecordType::Jobs | RecordType::Updates => Some(Placement::Promotion),
            RecordType::BusinessFiles | RecordType::AiPolicy => None,
        }
    }

    /// Promotions are recorded and never billed (R3.9).
    pub fn billed(self) -> bool {
        self != Placement::Promotion
    }
}

/// The label a paid item of `kind` is shown with, every time (R4.3).
pub fn label(kind: RecordType) -> Option<&'static str> {
    Some(match kind {
        RecordType::Ads => "Ad",
        RecordType::Products => "Sponsored",
        RecordType::Events => "Promoted event",
        RecordType::Jobs => "Promoted vacancy",
        RecordType::Updates => "Promoted update",
        RecordType::BusinessFiles | RecordType::AiPolicy => return None,
    })
}

/// US dollars in millionths: what prices and budgets are counted in, so
/// no sum is ever rounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Micros(pub u64);

impl Micros {
    /// The largest amount a price or budget may name: a billion dollars.
    pub const MAX: Micros = Micros(1_000_000_000 * 1_000_000);

    /// Reads a decimal string of dollars with at most six decimals
    /// (`"12.5"`, `"0.000250"`): no sign, no exponent, at most [`Micros::MAX`].
    pub fn parse(text: &str) -> Option<Micros> {
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(whole) || (text.contains('.') && !digits(fraction)) || fraction.len() > 6 || whole.len() > 10 {
            return None;
        }
        let whole: u64 = whole.parse().ok()?;
        let fraction: u64 = format!("{fraction:0<6}").parse().ok()?;
        let micros = whole.checked_mul(1_000_000)?.checked_add(fraction)?;
        (micros <= Micros::MAX.0).then_some(Micros(micros))
    }

    /// The decimal string of dollars, at least two decimals, no more than
    /// it needs (`"12.50"`, `"0.000250"` reads `"0.00025"`).
    pub fn to_decimal(self) -> String {
        let (whole, fraction) = (self.0 / 1_000_000, self.0 % 1_000_000);
        let mut fraction = format!("{fraction:06}");
        while fraction.len() > 2 && fraction.ends_with('0') {
            fraction.pop();
        }
        format!("{whole}.{fraction}")
    }

    pub fn saturating_sub(self, other: Micros) -> Micros {
        Micros(self.0.saturating_sub(other.0))
    }
}

/// The most the service may take of what a business pays (basis points): 90 %.
pub const MAX_TAKE_BPS: u32 = 9_000;

/// What a business pays for an event whose net price is `net`, at the
/// service's take rate of `take_bps` basis points of what is paid: rounded
/// up, so the service never takes less than its rate. Gross prices and the
/// rate stay inside the service (R2.8.7): items show the net price.
pub fn gross(net: Micros, take_bps: u32) -> Micros {
    let keep = 10_000 - u128::from(take_bps.min(MAX_TAKE_BPS));
    let gross = (u128::from(net.0) * 10_000).div_ceil(keep);
    Micros(u64::try_from(gross).unwrap_or(u64::MAX))
}

/// What one billable event charges a campaign's budget: its net cost
/// grossed up by the take rate.
pub fn event_charge(net_price: Micros, basis: Basis, take_bps: u32) -> Micros {
    gross(event_cost(net_price, basis), take_bps)
}

/// What one billable event costs a campaign: a render of a `cpm` campaign
/// is a thousandth of its price (rounded up, so a thousand renders never
/// cost less than the price), a click of a `cpc` campaign its price.
pub fn event_cost(price: Micros, basis: Basis) -> Micros {
    match basis {
        Basis::Cpm => Micros(price.0.div_ceil(1_000)),
        Basis::Cpc => price,
    }
}

/// An ad's `display_domain`: its destination's own host (R4.3.3).
pub fn display_domain(destination_url: &str) -> Option<String> {
    url::Url::parse(destination_url).ok()?.host_str().map(str::to_owned)
}

/// What the service keeps of a `session_ref`: HMAC-SHA-256 under the
/// region's secret, hex (R4.1.14). The reference itself is never stored,
/// never shown to a business (R4.1.16).
pub fn conversation(secret: &[u8], session_ref: &str) -> String {
    use hmac::{Hmac, KeyInit, Mac};
    let mut mac = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(secret).expect("any key length");
    mac.update(session_ref.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// Whether an item last rendered in a conversation at `rendered_at` is left
/// out of that conversation's pools at `now` (R3.11).
pub fn excluded(rendered_at: Option<crate::time::UnixMs>, now: crate::time::UnixMs) -> bool {
    rendered_at.is_some_and(|at| now.0 - at.0 < EXCLUSION_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: R3.11, R4.1.14
    #[test]
    fn a_conversation_is_kept_as_a_keyed_digest_and_excludes_an_item_for_an_hour() {
        let digest = conversation(b"region secret", "conv-8f2");
        assert_eq!(digest.len(), 64);
        assert!(!digest.contains("conv"));
        assert_eq!(digest, conversation(b"region secret", "conv-8f2"));
        assert_ne!(digest, conversation(b"another secret", "conv-8f2"));
        let t = crate::time::UnixMs(1_795_341_600_000);
        assert!(excluded(Some(t), t.plus(EXCLUSION_MS - 1)));
        assert!(!excluded(Some(t), t.plus(EXCLUSION_MS)));
        assert!(!excluded(None, t));
    }

    // rule: R2.8.6
    #[test]
    fn dollars_read_and_print_in_micros_and_a_render_costs_a_thousandth() {
        assert_eq!(Micros::parse("12.5"), Some(Micros(12_500_000)));
        assert_eq!(Micros::parse("0.000250").map(Micros::to_decimal).as_deref(), Some("0.00025"));
        assert_eq!(Micros(3_000_000).to_decimal(), "3.00");
        for bad in ["", ".5", "5.", "-1", "1e3", "1.0000001", "12345678901", " 1"] {
            assert_eq!(Micros::parse(bad), None, "{bad:?}");
        }
        assert_eq!(event_cost(Micros(5_000_000), Basis::Cpm), Micros(5_000));
        assert_eq!(event_cost(Micros(1_001), Basis::Cpm), Micros(2), "rounded up");
        assert_eq!(event_cost(Micros(400_000), Basis::Cpc), Micros(400_000));
    }

    // rule: R2.8.7
    #[test]
    fn a_campaign_is_charged_the_net_cost_grossed_up_by_the_take_rate() {
        // A 20 % take: a 0.20 net render charges 0.25, of which 0.05 is the service's.
        assert_eq!(event_charge(Micros(200_000_000), Basis::Cpm, 2_000), Micros(250_000));
        assert_eq!(gross(Micros(200_000), 0), Micros(200_000), "no take, no mark-up");
        assert_eq!(gross(Micros(1), 3_000), Micros(2), "rounded up: never less than the rate");
        assert_eq!(gross(Micros(100), 20_000), Micros(1_000), "at most 90 %");
    }

    // rule: R4.3.1, R4.3.2, R4.3.3, R4.3.4, R4.3.5, R2.8.2
    #[test]
    fn each_paid_item_has_its_label() {
        assert_eq!(label(RecordType::Ads), Some("Ad"));
        assert_eq!(label(RecordType::Products), Some("Sponsored"));
        assert_eq!(label(RecordType::Events), Some("Promoted event"));
        assert_eq!(label(RecordType::Jobs), Some("Promoted vacancy"));
        assert_eq!(label(RecordType::Updates), Some("Promoted update"));
        assert_eq!(label(RecordType::BusinessFiles), None);
        assert!(!Placement::Promotion.billed() && Placement::Sponsorship.billed() && Placement::Ad.billed());
    }
}
