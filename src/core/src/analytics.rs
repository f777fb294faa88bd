//! Business analytics (publishing 2.5): what AI groups asked of a business,
//! by day, country and group name, up to the end of the last complete hour.
//! Never by person, never impressions or shares of showings.

use std::collections::BTreeMap;

use crate::time::{DAY, HOUR, UnixMs};

/// The window of who-is-asking.
pub const WHO_IS_ASKING_DAYS: i64 = 30;
/// The longest daily range asked at once.
pub const MAX_DAILY_DAYS: i64 = 92;

/// The hour an instant falls in.
pub fn hour_of(at: UnixMs) -> UnixMs {
    UnixMs(at.0.div_euclid(HOUR) * HOUR)
}

/// `as_at`: the end of the last complete hour. Counts of the hour under
/// way are not shown until it ends.
pub fn as_at(now: UnixMs) -> UnixMs {
    hour_of(now)
}

/// The UTC day an instant falls in, as `YYYY-MM-DD`.
pub fn date_of(at: UnixMs) -> String {
    UnixMs(at.0.div_euclid(DAY) * DAY).to_rfc3339_secs()[..10].to_owned()
}

/// Counts of one hour, country and group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub searches: u64,
    pub fetches: u64,
    /// Renders of the business's ads and paid rows the group confirmed.
    pub ad_renders: u64,
    pub ad_clicks: u64,
    /// What those renders and clicks were charged, in micro-dollars.
    pub spend: u64,
}

impl std::ops::AddAssign for Counts {
    fn add_assign(&mut self, other: Counts) {
        self.searches += other.searches;
        self.fetches += other.fetches;
        self.ad_renders += other.ad_renders;
        self.ad_clicks += other.ad_clicks;
        self.spend += other.spend;
    }
}

/// Hourly counts `(hour, country, group, counts)` summed per day, country
/// and group, for the hours in `[from, until)`. Ordered by date, country,
/// then group.
pub fn daily<'a>(
    hours: impl IntoIterator<Item = (UnixMs, Option<&'a str>, &'a str, Counts)>,
    from: UnixMs,
    until: UnixMs,
) -> BTreeMap<(String, Option<String>, String), Counts> {
    let mut days: BTreeMap<(String, Option<String>, String), Counts> = BTreeMap::new();
    for (hour, country, group, counts) in hours {
        if hour < from || hour >= until {
            continue;
        }
        *days.entry((date_of(hour), country.map(str::to_owned), group.to_owned())).or_default() += counts;
    }
    days
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: P2.5.32
    #[test]
    fn as_at_is_the_end_of_the_last_complete_hour() {
        let t = UnixMs::parse_rfc3339("2026-11-22T10:59:59Z").unwrap();
        assert_eq!(as_at(t).to_rfc3339_secs(), "2026-11-22T10:00:00Z");
        assert_eq!(
            as_at(UnixMs::parse_rfc3339("2026-11-22T11:00:00Z").unwrap()).to_rfc3339_secs(),
            "2026-11-22T11:00:00Z"
        );
    }

    // rule: P2.5.33, P2.5.36
    #[test]
    fn hours_sum_into_days_by_country_and_group_within_the_range() {
        let h = |s: &str| UnixMs::parse_rfc3339(s).unwrap();
        let one = Counts { searches: 1, ..Counts::default() };
        let fetch = Counts { fetches: 1, ..Counts::default() };
        let hours = vec![
            (h("2026-11-21T23:00:00Z"), Some("FR"), "g1", one),
            (h("2026-11-22T00:00:00Z"), Some("FR"), "g1", one),
            (h("2026-11-22T09:00:00Z"), Some("FR"), "g1", one),
            (h("2026-11-22T09:00:00Z"), None, "g1", fetch),
            (h("2026-11-22T09:00:00Z"), Some("DE"), "g2", one),
            (h("2026-11-22T10:00:00Z"), Some("FR"), "g1", one),
        ];
        let days = daily(hours, h("2026-11-22T00:00:00Z"), h("2026-11-22T10:00:00Z"));
        let keys: Vec<_> = days.keys().cloned().collect();
        assert_eq!(
            keys,
            vec![
                ("2026-11-22".to_owned(), None, "g1".to_owned()),
                ("2026-11-22".to_owned(), Some("DE".to_owned()), "g2".to_owned()),
                ("2026-11-22".to_owned(), Some("FR".to_owned()), "g1".to_owned()),
            ]
        );
        assert_eq!(
            days[&("2026-11-22".to_owned(), Some("FR".to_owned()), "g1".to_owned())].searches,
            2,
            "the day before and the hour under way are out"
        );
    }
}
