//! Freshness expectations and the staleness rule (retrieval 2.4).

use serde::{Deserialize, Serialize};

use crate::time::{DAY, HOUR, UnixMs};

/// How fresh a business expects its records of a type to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "cadence", rename_all = "snake_case", deny_unknown_fields)]
pub enum FreshnessExpectation {
    Hourly,
    Daily,
    Weekly,
    Monthly,
    Quarterly,
    Yearly,
    /// At least one hour: an interval of zero would make every record stale.
    Interval {
        interval_hours: std::num::NonZeroU32,
    },
}

impl FreshnessExpectation {
    /// The window after `published_at` in which a record is fresh. Hourly,
    /// daily and weekly are 1 hour, 24 hours and 7 days; the spec fixes
    /// monthly at 31 days, quarterly at 92 and yearly at 366.
    pub fn window_ms(self) -> i64 {
        match self {
            FreshnessExpectation::Hourly => HOUR,
            FreshnessExpectation::Daily => DAY,
            FreshnessExpectation::Weekly => 7 * DAY,
            FreshnessExpectation::Monthly => 31 * DAY,
            FreshnessExpectation::Quarterly => 92 * DAY,
            FreshnessExpectation::Yearly => 366 * DAY,
            FreshnessExpectation::Interval { interval_hours } => i64::from(interval_hours.get()) * HOUR,
        }
    }
}

impl FreshnessExpectation {
    /// A declaration as a business sends it: exactly `cadence`, and
    /// `interval_hours` with `interval` only (serde's tagged form lets
    /// other members through unseen).
    pub fn parse(bytes: &[u8]) -> Result<FreshnessExpectation, String> {
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let members = value.as_object().ok_or("a declaration is a JSON object")?;
        let interval = members.get("cadence").and_then(|c| c.as_str()) == Some("interval");
        if let Some(name) = members.keys().find(|k| !(*k == "cadence" || interval && *k == "interval_hours")) {
            return Err(format!("unknown member {name}"));
        }
        serde_json::from_value(value).map_err(|e| e.to_string())
    }
}

/// Stale when now minus `published_at` exceeds the window; with no
/// expectation a record is never stale.
pub fn is_stale(published_at: UnixMs, now: UnixMs, expectation: Option<FreshnessExpectation>) -> bool {
    expectation.is_some_and(|e| now.0 - published_at.0 > e.window_ms())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn six() -> std::num::NonZeroU32 {
        std::num::NonZeroU32::new(6).unwrap()
    }

    // rule: R2.4.19, R2.4.20
    #[test]
    fn wire_forms() {
        assert_eq!(serde_json::to_value(FreshnessExpectation::Monthly).unwrap(), json!({"cadence": "monthly"}));
        assert_eq!(
            serde_json::to_value(FreshnessExpectation::Interval { interval_hours: six() }).unwrap(),
            json!({"cadence": "interval", "interval_hours": 6})
        );
        assert!(serde_json::from_value::<FreshnessExpectation>(json!({"cadence": "fortnightly"})).is_err());
        assert!(serde_json::from_value::<FreshnessExpectation>(json!({"cadence": "interval"})).is_err());
        let zero = json!({"cadence": "interval", "interval_hours": 0});
        assert!(serde_json::from_value::<FreshnessExpectation>(zero).is_err());
    }

    // rule: R2.4.19
    #[test]
    fn a_declaration_holds_exactly_its_members() {
        let parse = |v: serde_json::Value| FreshnessExpectation::parse(&serde_json::to_vec(&v).unwrap());
        assert_eq!(parse(json!({"cadence": "daily"})), Ok(FreshnessExpectation::Daily));
        assert_eq!(
            parse(json!({"cadence": "interval", "interval_hours": 6})),
            Ok(FreshnessExpectation::Interval { interval_hours: six() })
        );
        for bad in [
            json!({"cadence": "daily", "extra": 1}),
            json!({"cadence": "daily", "interval_hours": 6}),
            json!({"cadence": "interval", "interval_hours": 0}),
            json!({"cadence": "fortnightly"}),
            json!(["daily"]),
        ] {
            assert!(parse(bad.clone()).is_err(), "{bad}");
        }
    }

    // rule: R2.4.21, R2.4.22
    #[test]
    fn stale_exactly_past_the_window() {
        let p = UnixMs(1_000_000_000_000);
        let monthly = Some(FreshnessExpectation::Monthly);
        assert!(!is_stale(p, p.plus(31 * DAY), monthly));
        assert!(is_stale(p, p.plus(31 * DAY + 1), monthly));
        assert!(is_stale(p, p.plus(92 * DAY + 1), Some(FreshnessExpectation::Quarterly)));
        assert!(!is_stale(p, p.plus(366 * DAY), Some(FreshnessExpectation::Yearly)));
        assert!(is_stale(p, p.plus(6 * HOUR + 1), Some(FreshnessExpectation::Interval { interval_hours: six() })));
        assert!(!is_stale(p, p.plus(10_000 * DAY), None));
        for (cadence, window) in [
            (FreshnessExpectation::Hourly, HOUR),
            (FreshnessExpectation::Daily, DAY),
            (FreshnessExpectation::Weekly, 7 * DAY),
        ] {
            assert!(!is_stale(p, p.plus(window), Some(cadence)), "{cadence:?}");
            assert!(is_stale(p, p.plus(window + 1), Some(cadence)), "{cadence:?}");
        }
    }
}
