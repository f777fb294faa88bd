//! The price-shock hold (P3.31–P3.35, P8.14).
//!
//! A push that would move too much of a catalogue at once is stored but not
//! published, answered `held: true`, and waits for an owner or admin. It
//! guards against a broken feed or a stolen key repricing everything.
//!
//! A listing is one price of one product in one country: the key is the
//! product's `record_id` and the country. For a catalogue of 20 or more live
//! listings, a push is held when it would:
//! * change more than a fifth of the listings (`prices_changed`);
//! * change any listing by more than half of its old price
//!   (`price_change_over_half`); a change of currency counts as a change, and
//!   as more than half, since the amounts cannot be compared;
//! * remove more than a fifth of the listings (`listings_removed`): a product
//!   the push updates that is no longer priced in a country it was live in
//!   loses that listing (withdraw and delete are not pushes).
//!
//! New listings never count. Arithmetic is on integers only: amounts are in
//! ten-thousandths (the money form's four decimals), compared in `i128`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Below this many live listings no push is held.
pub const MIN_CATALOGUE: usize = 20;
/// Held reason: more than a fifth of prices changed.
pub const PRICES_CHANGED: &str = "prices_changed";
/// Held reason: a price changed by more than half.
pub const PRICE_CHANGE_OVER_HALF: &str = "price_change_over_half";
/// Held reason: more than a fifth of listings removed.
pub const LISTINGS_REMOVED: &str = "listings_removed";
/// Amounts are integers at this scale (four decimal places).
pub const AMOUNT_SCALE: i64 = 10_000;

/// One listing's price.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Price {
    pub currency: String,
    /// The amount in ten-thousandths of the currency unit.
    pub amount_minor: i64,
}

/// Live listings: (product record id, country) → price.
pub type Catalogue = BTreeMap<(String, String), Price>;

/// A push's effect: for each product record it publishes, its new prices by
/// country. Only records that would be published belong here (rejected ones
/// change nothing).
pub type PushPrices = BTreeMap<String, BTreeMap<String, Price>>;

/// What a push would do to the live catalogue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Live listings before the push.
    pub listings: usize,
    /// Live listings whose price or currency would change.
    pub changed: usize,
    /// Of those, listings that would change by more than half.
    pub over_half: usize,
    /// Live listings the push would remove.
    pub removed: usize,
    /// Listings the push would add (never held).
    pub added: usize,
}

/// Whether `new` differs from `old` by more than half of `old`.
fn over_half(old: &Price, new: &Price) -> bool {
    if old.currency != new.currency {
        return true;
    }
    let (old, new) = (i128::from(old.amount_minor), i128::from(new.amount_minor));
    (new - old).abs() * 2 > old.abs()
}

/// Counts what a push would change, remove and add.
pub fn tally(catalogue: &Catalogue, push: &PushPrices) -> Tally {
    let mut t = Tally { listings: catalogue.len(), ..Tally::default() };
    for (record_id, prices) in push {
        for (country, new) in prices {
            match catalogue.get(&(record_id.clone(), country.clone())) {
                Some(old) if old != new => {
                    t.changed += 1;
                    t.over_half += usize::from(over_half(old, new));
                }
                Some(_) => {}
                None => t.added += 1,
            }
        }
        // Every live listing of this product the new record no longer names.
        let live = catalogue.range((record_id.clone(), String::new())..).take_while(|((id, _), _)| id == record_id);
        t.removed += live.filter(|((_, country), _)| !prices.contains_key(country)).count();
    }
    t
}

impl Tally {
    /// The held reasons, in a fixed order; empty when the push may publish.
    pub fn reasons(&self) -> Vec<&'static str> {
        if self.listings < MIN_CATALOGUE {
            return Vec::new();
        }
        // "More than a fifth" without division: x * 5 > n.
        let fifth = |x: usize| x.saturating_mul(5) > self.listings;
        let mut reasons = Vec::new();
        if fifth(self.changed) {
            reasons.push(PRICES_CHANGED);
        }
        if self.over_half > 0 {
            reasons.push(PRICE_CHANGE_OVER_HALF);
        }
        if fifth(self.removed) {
            reasons.push(LISTINGS_REMOVED);
        }
        reasons
    }
}

/// The held reasons of a push, or `None` when it publishes.
pub fn judge(catalogue: &Catalogue, push: &PushPrices) -> Option<Vec<&'static str>> {
    let reasons = tally(catalogue, push).reasons();
    if reasons.is_empty() { None } else { Some(reasons) }
}

/// Parses the money form `^(0|[1-9][0-9]{0,11})(\.[0-9]{1,4})?$` into
/// ten-thousandths: `"12.5"` is `125_000`.
pub fn parse_amount(decimal: &str) -> Option<i64> {
    // At most 12 integer digits: far below i64::MAX / 10^4.
    crate::records::money_units(decimal).and_then(|units| i64::try_from(units).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn eur(amount: &str) -> Price {
        Price { currency: "EUR".into(), amount_minor: parse_amount(amount).unwrap() }
    }

    /// `n` products, each live in FR at 100.00 EUR.
    fn catalogue(n: usize) -> Catalogue {
        (0..n).map(|i| ((format!("svc_{i:02}"), "FR".to_string()), eur("100"))).collect()
    }

    /// A push repricing products `0..k` to `amount` in FR.
    fn reprice(k: usize, amount: &str) -> PushPrices {
        (0..k).map(|i| (format!("svc_{i:02}"), BTreeMap::from([("FR".to_string(), eur(amount))]))).collect()
    }

    // rule: P3.31, P8.14
    #[test]
    fn nineteen_listings_are_never_held() {
        let c = catalogue(19);
        assert_eq!(judge(&c, &reprice(19, "1000")), None);
        let removal: PushPrices = (0..19).map(|i| (format!("svc_{i:02}"), BTreeMap::new())).collect();
        assert_eq!(judge(&c, &removal), None);
        assert_eq!(tally(&c, &removal).removed, 19);
    }

    // rule: P3.32, P8.14
    #[test]
    fn more_than_a_fifth_changed_is_held() {
        let c = catalogue(20);
        assert_eq!(judge(&c, &reprice(4, "101")), None);
        assert_eq!(judge(&c, &reprice(5, "101")), Some(vec![PRICES_CHANGED]));
        // An unchanged price in the push is not a change.
        assert_eq!(judge(&c, &reprice(20, "100")), None);
    }

    // rule: P3.33, P8.14
    #[test]
    fn more_than_half_is_held_exactly() {
        let c = catalogue(20);
        assert_eq!(judge(&c, &reprice(1, "150")), None);
        assert_eq!(judge(&c, &reprice(1, "150.01")), Some(vec![PRICE_CHANGE_OVER_HALF]));
        assert_eq!(judge(&c, &reprice(1, "50")), None);
        assert_eq!(judge(&c, &reprice(1, "49.9999")), Some(vec![PRICE_CHANGE_OVER_HALF]));
        assert_eq!(judge(&c, &reprice(1, "0")), Some(vec![PRICE_CHANGE_OVER_HALF]));
        // The finest step: 100.0000 → 150.0001.
        assert_eq!(judge(&c, &reprice(1, "150.0001")), Some(vec![PRICE_CHANGE_OVER_HALF]));
        let mut free = catalogue(20);
        free.insert(("svc_00".into(), "FR".into()), eur("0"));
        assert_eq!(judge(&free, &reprice(1, "0.0001")), Some(vec![PRICE_CHANGE_OVER_HALF]));
    }

    // rule: P3.33
    #[test]
    fn a_currency_change_is_a_change_over_half() {
        let c = catalogue(20);
        let usd = BTreeMap::from([("FR".to_string(), Price { currency: "USD".into(), amount_minor: 1_000_000 })]);
        let push = PushPrices::from([("svc_00".to_string(), usd)]);
        assert_eq!(judge(&c, &push), Some(vec![PRICE_CHANGE_OVER_HALF]));
        assert_eq!(tally(&c, &push).changed, 1);
    }

    // rule: P3.34, P8.14
    #[test]
    fn more_than_a_fifth_removed_is_held() {
        let c = catalogue(20);
        let drop = |k: usize| -> PushPrices { (0..k).map(|i| (format!("svc_{i:02}"), BTreeMap::new())).collect() };
        assert_eq!(judge(&c, &drop(4)), None);
        assert_eq!(judge(&c, &drop(5)), Some(vec![LISTINGS_REMOVED]));
        // Moving a product to another country removes the old listing and
        // adds a new one; only the removal counts.
        let moved: PushPrices =
            (0..5).map(|i| (format!("svc_{i:02}"), BTreeMap::from([("DE".to_string(), eur("100"))]))).collect();
        let t = tally(&c, &moved);
        assert_eq!((t.removed, t.added, t.changed), (5, 5, 0));
        assert_eq!(judge(&c, &moved), Some(vec![LISTINGS_REMOVED]));
    }

    // rule: P3.31, P3.32, P3.34
    #[test]
    fn listings_not_products_are_counted() {
        // 10 products in two countries each: 20 listings.
        let mut c = Catalogue::new();
        for i in 0..10 {
            for country in ["FR", "DE"] {
                c.insert((format!("svc_{i:02}"), country.to_string()), eur("100"));
            }
        }
        // Two products dropping DE and repricing FR: 2 removed, 2 changed.
        let push: PushPrices =
            (0..2).map(|i| (format!("svc_{i:02}"), BTreeMap::from([("FR".to_string(), eur("120"))]))).collect();
        assert_eq!(judge(&c, &push), None);
        // Three such products: 3 removed (15 < 20) and 3 changed: not held.
        let push3: PushPrices =
            (0..3).map(|i| (format!("svc_{i:02}"), BTreeMap::from([("FR".to_string(), eur("120"))]))).collect();
        assert_eq!(judge(&c, &push3), None);
        // Five products losing both listings: 10 removed.
        let gone: PushPrices = (0..5).map(|i| (format!("svc_{i:02}"), BTreeMap::new())).collect();
        assert_eq!(judge(&c, &gone), Some(vec![LISTINGS_REMOVED]));
        // Other products' listings are untouched by a push that omits them.
        assert_eq!(tally(&c, &PushPrices::new()), Tally { listings: 20, ..Tally::default() });
    }

    // rule: P3.32, P3.33, P3.34, P3.35
    #[test]
    fn every_reason_is_reported() {
        let c = catalogue(20);
        let mut push = reprice(5, "300");
        for i in 5..10 {
            push.insert(format!("svc_{i:02}"), BTreeMap::new());
        }
        assert_eq!(judge(&c, &push), Some(vec![PRICES_CHANGED, PRICE_CHANGE_OVER_HALF, LISTINGS_REMOVED]));
    }

    // rule: P2.5.21
    #[test]
    fn amounts_parse_exactly() {
        assert_eq!(parse_amount("0"), Some(0));
        assert_eq!(parse_amount("12.5"), Some(125_000));
        assert_eq!(parse_amount("12.0001"), Some(120_001));
        assert_eq!(parse_amount("0.99"), Some(9_900));
        assert_eq!(parse_amount("999999999999.9999"), Some(9_999_999_999_999_999));
        for bad in ["", "01", "1.", ".5", "1.23456", "-1", "+1", "1e3", "1,5", " 1", "1000000000000", "0x10", "١"] {
            assert_eq!(parse_amount(bad), None, "{bad:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn parse_amount_never_panics(text in ".{0,24}") {
            let _ = parse_amount(&text);
        }

        #[test]
        fn parse_amount_agrees_with_the_decimal(int in 0u64..1_000_000_000_000, frac in 0u64..10_000) {
            let text = format!("{int}.{frac:04}");
            prop_assert_eq!(parse_amount(&text), Some(int as i64 * 10_000 + frac as i64));
        }

        #[test]
        fn judge_never_panics_on_extreme_amounts(
            old in proptest::collection::vec(any::<i64>(), 0..30),
            new in proptest::collection::vec(any::<i64>(), 0..30),
        ) {
            let c: Catalogue = old.iter().enumerate()
                .map(|(i, a)| ((format!("p{i}"), "FR".to_string()), Price { currency: "EUR".into(), amount_minor: *a }))
                .collect();
            let push: PushPrices = new.iter().enumerate()
                .map(|(i, a)| (format!("p{i}"), BTreeMap::from([("FR".to_string(), Price { currency: "EUR".into(), amount_minor: *a })])))
                .collect();
            let _ = judge(&c, &push);
        }
    }
}
