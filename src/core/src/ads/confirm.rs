//! The confirmation table (retrieval 3) as judgements: what a render or a
//! click confirmation comes to, given what the region holds of the token,
//! and whether it is billed. The region records every confirmation, billed
//! or not.

use serde::{Deserialize, Serialize};

use super::campaign::Repeats;
use super::{Basis, CLICK_VALID_MS, Placement, RENDER_WINDOW_MS, REPEAT_CLICK_MS};
use crate::time::UnixMs;

/// Why a confirmation is not accepted (R4.2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotAccepted {
    WindowExpired,
    BudgetExhausted,
    TokenReused,
}

impl NotAccepted {
    pub fn as_str(self) -> &'static str {
        match self {
            NotAccepted::WindowExpired => "window_expired",
            NotAccepted::BudgetExhausted => "budget_exhausted",
            NotAccepted::TokenReused => "token_reused",
        }
    }
}

/// An earlier confirmation of the same token, as the region recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Earlier {
    pub idempotency_key: String,
    /// SHA-256 of the confirmation's body.
    pub request: [u8; 32],
    pub accepted: bool,
}

/// What a confirmation comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// The same Idempotency-Key and body again: the first answer (R3.7).
    Replay,
    /// The same Idempotency-Key with another body: refused
    /// (`request_invalid`), nothing recorded.
    KeyReused,
    Accepted,
    NotAccepted(NotAccepted),
}

/// What the region knows when a confirmation arrives.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub now: UnixMs,
    /// A render: when the pool (or the sponsored row's search) was served.
    /// A click: when its render was accepted.
    pub since: UnixMs,
    pub idempotency_key: &'a str,
    pub request: [u8; 32],
    /// Earlier confirmations of this token.
    pub earlier: &'a [Earlier],
    /// Whether the campaign can pay for the event (a reserve held for it,
    /// or budget left); a click of a campaign that does not bill clicks
    /// needs none.
    pub funded: bool,
}

fn replayed(facts: &Facts<'_>) -> Option<Judgement> {
    let same = facts.earlier.iter().find(|e| e.idempotency_key == facts.idempotency_key)?;
    Some(if same.request == facts.request { Judgement::Replay } else { Judgement::KeyReused })
}

/// A render confirmation (R3.3 to R3.8): the first answer again for its
/// Idempotency-Key; `token_reused` once the token was accepted under another
/// key; then the ten-minute window; then the money.
pub fn judge_render(facts: &Facts<'_>) -> Judgement {
    if let Some(again) = replayed(facts) {
        return again;
    }
    if facts.earlier.iter().any(|e| e.accepted) {
        return Judgement::NotAccepted(NotAccepted::TokenReused);
    }
    if facts.now.0 - facts.since.0 > RENDER_WINDOW_MS {
        return Judgement::NotAccepted(NotAccepted::WindowExpired);
    }
    if !facts.funded {
        return Judgement::NotAccepted(NotAccepted::BudgetExhausted);
    }
    Judgement::Accepted
}

/// A click confirmation (R3.9, R3.10): the first answer again for its
/// Idempotency-Key; then the 24-hour window from the render. Clicks are not
/// single-use: a repeat is recorded and billed as [`click_billed`] says.
pub fn judge_click(facts: &Facts<'_>) -> Judgement {
    if let Some(again) = replayed(facts) {
        return again;
    }
    if facts.now.0 - facts.since.0 > CLICK_VALID_MS {
        return Judgement::NotAccepted(NotAccepted::WindowExpired);
    }
    Judgement::Accepted
}

/// Whether an accepted render is charged: renders are billed on `cpm`
/// campaigns of ads and sponsorships only; in one conversation only the
/// first, unless the advertiser allows repeats, then up to its maximum
/// (R3.12, R3.13). `before` counts this conversation's earlier accepted
/// renders of the item.
pub fn render_billed(placement: Placement, basis: Basis, repeats: Repeats, before: u32) -> bool {
    placement.billed() && basis == Basis::Cpm && before < renders_charged(repeats)
}

/// How many renders of an item one conversation is charged: one, or the
/// advertiser's maximum when it allows repeats (R3.12, R3.13).
pub fn renders_charged(repeats: Repeats) -> u32 {
    if repeats.allowed { repeats.max_per_conversation } else { 1 }
}

/// Home, learning another region's charged render of an item after `before`
/// renders of it in that conversation it already counted (any region's):
/// whether the charge is one too many, made where the others were not yet
/// known. Whichever of two such charges home learns second is the one.
pub fn render_charged_twice(repeats: Repeats, before: u32) -> bool {
    before >= renders_charged(repeats)
}

/// Home, learning another region's charged click at `at`: whether a click
/// of the same item in the same conversation within 15 minutes either side
/// was counted already, so this one should not have been billed (R3.14).
pub fn click_charged_twice(last_click: Option<UnixMs>, at: UnixMs) -> bool {
    last_click.is_some_and(|last| (at.0 - last.0).abs() < REPEAT_CLICK_MS)
}

/// What decides whether an accepted click is charged.
#[derive(Debug, Clone, Copy)]
pub struct Click {
    pub placement: Placement,
    pub basis: Basis,
    /// The conversation's last click on the item, from any render.
    pub last_click: Option<UnixMs>,
    pub now: UnixMs,
    /// A click on this same token was charged already.
    pub token_billed: bool,
    /// Clicks the key had charged to the campaign this hour, and the most
    /// it may.
    pub billed_this_hour: u32,
    pub hourly_cap: u32,
}

/// Whether an accepted click is charged: on `cpc` campaigns of ads and
/// sponsorships only, and not a repeat of the same item in the same
/// conversation within 15 minutes of the last click (R3.9, R3.14). Beyond
/// the spec, the business pays only for what really happened once: one
/// render's click token is charged at most once, and a key's charged clicks
/// on one campaign are capped per hour.
pub fn click_billed(click: Click) -> bool {
    let repeat = click.last_click.is_some_and(|at| click.now.0 - at.0 < REPEAT_CLICK_MS);
    click.placement.billed()
        && click.basis == Basis::Cpc
        && !repeat
        && !click.token_billed
        && click.billed_this_hour < click.hourly_cap
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MINUTE;

    const T: UnixMs = UnixMs(1_795_341_600_000);

    fn facts<'a>(now: UnixMs, earlier: &'a [Earlier], funded: bool) -> Facts<'a> {
        Facts { now, since: T, idempotency_key: "k2", request: [2; 32], earlier, funded }
    }

    // rule: R3.3, R3.4, R3.5, R3.6, R3.7, R4.2.5, R4.2.6
    #[test]
    fn every_row_of_the_render_table() {
        let none: &[Earlier] = &[];
        assert_eq!(judge_render(&facts(T.plus(10 * MINUTE), none, true)), Judgement::Accepted, "the window's edge");
        let late = judge_render(&facts(T.plus(10 * MINUTE + 1), none, true));
        assert_eq!(late, Judgement::NotAccepted(NotAccepted::WindowExpired));
        let poor = judge_render(&facts(T.plus(MINUTE), none, false));
        assert_eq!(poor, Judgement::NotAccepted(NotAccepted::BudgetExhausted));
        let first = [Earlier { idempotency_key: "k1".into(), request: [1; 32], accepted: true }];
        let reused = judge_render(&facts(T.plus(MINUTE), &first, true));
        assert_eq!(reused, Judgement::NotAccepted(NotAccepted::TokenReused));
        let same = [Earlier { idempotency_key: "k2".into(), request: [2; 32], accepted: true }];
        assert_eq!(
            judge_render(&facts(T.plus(20 * MINUTE), &same, false)),
            Judgement::Replay,
            "whatever changed since"
        );
        let other_body = [Earlier { idempotency_key: "k2".into(), request: [9; 32], accepted: true }];
        assert_eq!(judge_render(&facts(T.plus(MINUTE), &other_body, true)), Judgement::KeyReused);
        // A token refused before (late) is not reused: it is judged again.
        let refused = [Earlier { idempotency_key: "k1".into(), request: [1; 32], accepted: false }];
        assert_eq!(judge_render(&facts(T.plus(MINUTE), &refused, true)), Judgement::Accepted);
    }

    // rule: R3.9, R3.10, R3.14
    #[test]
    fn clicks_last_a_day_and_bill_only_cpc_first_clicks() {
        let none: &[Earlier] = &[];
        let day = 24 * 60 * MINUTE;
        assert_eq!(judge_click(&facts(T.plus(day), none, true)), Judgement::Accepted);
        let late = judge_click(&facts(T.plus(day + 1), none, true));
        assert_eq!(late, Judgement::NotAccepted(NotAccepted::WindowExpired));
        let click = Click {
            placement: Placement::Ad,
            basis: Basis::Cpc,
            last_click: None,
            now: T,
            token_billed: false,
            billed_this_hour: 0,
            hourly_cap: 10,
        };
        assert!(click_billed(click));
        assert!(!click_billed(Click { basis: Basis::Cpm, ..click }), "a cpm campaign's click is recorded only");
        assert!(!click_billed(Click { placement: Placement::Promotion, ..click }), "promotions are never billed");
        let repeat = Click { last_click: Some(T.minus(15 * MINUTE - 1)), ..click };
        assert!(!click_billed(repeat), "a repeat click");
        assert!(click_billed(Click { last_click: Some(T.minus(15 * MINUTE)), ..click }));
    }

    #[test]
    fn a_click_token_is_charged_once_and_a_keys_clicks_are_capped_per_hour() {
        let click = Click {
            placement: Placement::Ad,
            basis: Basis::Cpc,
            last_click: None,
            now: T,
            token_billed: false,
            billed_this_hour: 9,
            hourly_cap: 10,
        };
        assert!(click_billed(click));
        assert!(!click_billed(Click { token_billed: true, ..click }), "the token was charged once");
        assert!(!click_billed(Click { billed_this_hour: 10, ..click }), "the key's hour is full");
    }

    // rule: R3.12, R3.13
    #[test]
    fn a_conversation_is_charged_once_unless_the_advertiser_allows_repeats() {
        let once = Repeats { allowed: false, max_per_conversation: 1 };
        let thrice = Repeats { allowed: true, max_per_conversation: 3 };
        assert!(render_billed(Placement::Ad, Basis::Cpm, once, 0));
        assert!(!render_billed(Placement::Ad, Basis::Cpm, once, 1));
        assert!(render_billed(Placement::Sponsorship, Basis::Cpm, thrice, 2));
        assert!(!render_billed(Placement::Sponsorship, Basis::Cpm, thrice, 3));
        assert!(!render_billed(Placement::Ad, Basis::Cpc, once, 0), "a cpc campaign pays per click");
        assert!(!render_billed(Placement::Promotion, Basis::Cpm, once, 0));
    }

    // rule: R3.12, R3.13, R3.14
    #[test]
    fn home_finds_a_charge_two_regions_made_for_one_conversation() {
        let once = Repeats { allowed: false, max_per_conversation: 1 };
        let thrice = Repeats { allowed: true, max_per_conversation: 3 };
        assert!(!render_charged_twice(once, 0));
        assert!(render_charged_twice(once, 1));
        assert!(!render_charged_twice(thrice, 2));
        assert!(render_charged_twice(thrice, 3));
        let t = UnixMs(1_795_341_600_000);
        assert!(!click_charged_twice(None, t));
        assert!(click_charged_twice(Some(t.plus(5 * MINUTE)), t), "the other click was later: either side counts");
        assert!(click_charged_twice(Some(t), t.plus(15 * MINUTE - 1)));
        assert!(!click_charged_twice(Some(t), t.plus(15 * MINUTE)));
    }
}
