//! Rolling budgets with time passed in: the catalogue read-back limit
//! (publishing 8), and a retrieval key's request rate and per-minute
//! query-cost budget (retrieval 8, whose numbers the operator chooses).

use std::collections::VecDeque;

use crate::search::{Condition, SearchQuery};
use crate::time::{MINUTE, SECOND, UnixMs};

/// How much a key may spend in any rolling span. Spending is kept in
/// buckets of a hundredth of the span, so a busy key holds at most about a
/// hundred entries; a bucket leaves the window when its first spend does.
#[derive(Debug, Clone)]
pub struct RollingBudget {
    span_ms: i64,
    limit: u64,
    used: u64,
    spent: VecDeque<(UnixMs, u64)>,
}

impl RollingBudget {
    pub fn new(span_ms: i64, limit: u64) -> RollingBudget {
        RollingBudget { span_ms: span_ms.max(1), limit, used: 0, spent: VecDeque::new() }
    }

    pub fn per_second(limit: u64) -> RollingBudget {
        RollingBudget::new(SECOND, limit)
    }

    pub fn per_minute(limit: u64) -> RollingBudget {
        RollingBudget::new(MINUTE, limit)
    }

    fn prune(&mut self, now: UnixMs) {
        while let Some((at, n)) = self.spent.front().copied() {
            if now.0 - at.0 < self.span_ms {
                break;
            }
            self.used -= n;
            self.spent.pop_front();
        }
    }

    /// Whether more may be spent now; otherwise the milliseconds until
    /// enough of the window has left it to bring the total under the limit.
    pub fn judge(&mut self, now: UnixMs) -> Result<(), u64> {
        self.prune(now);
        if self.used < self.limit {
            return Ok(());
        }
        let mut left = self.used;
        for (at, n) in &self.spent {
            left -= n;
            if left < self.limit {
                return Err((at.0 + self.span_ms - now.0).max(1) as u64);
            }
        }
        // A limit of 0: nothing is ever allowed; try again after a span.
        Err(self.span_ms as u64)
    }

    pub fn spend(&mut self, now: UnixMs, amount: u64) {
        if amount == 0 {
            return;
        }
        let bucket = (self.span_ms / 100).max(1);
        match self.spent.back_mut() {
            Some((at, n)) if now.0 - at.0 < bucket => *n += amount,
            _ => self.spent.push_back((now, amount)),
        }
        self.used += amount;
    }

    /// What is spent in the window ending now.
    pub fn used(&mut self, now: UnixMs) -> u64 {
        self.prune(now);
        self.used
    }
}

/// The query cost of a search that returned rows: one for the search, one
/// per filter clause and sort key, one for a text query, and four more for a
/// `near` clause (a geo scan checks every candidate's points). A zero-row
/// search costs nothing (retrieval 8: "free and bound only by the ordinary
/// rate limit").
pub fn search_cost(query: &SearchQuery, rows: usize) -> u64 {
    if rows == 0 {
        return 0;
    }
    let near = query.clauses.iter().flat_map(|c| &c.conditions).filter(|c| matches!(c, Condition::Near { .. })).count();
    // The country clause is held apart from the others, and counts too.
    let clauses = query.clauses.len() as u64 + 1;
    1 + clauses + query.sort.len() as u64 + u64::from(query.text.is_some()) + 4 * near as u64
}

/// The query cost of a fetch that returned a record.
pub const FETCH_COST: u64 = 1;

/// The share a client address is counted under: an IPv4 address alone,
/// an IPv6 address by its /64 (what one subscriber is given, so stepping
/// through one's own prefix finds no fresh share).
pub fn address_share(ip: std::net::IpAddr) -> String {
    match ip {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: R7.13
    #[test]
    fn a_rate_refuses_at_the_limit_until_the_oldest_request_leaves() {
        let mut rate = RollingBudget::per_second(3);
        let t = UnixMs(1_000_000);
        for i in 0..3 {
            assert!(rate.judge(t.plus(i * 100)).is_ok());
            rate.spend(t.plus(i * 100), 1);
        }
        assert_eq!(rate.judge(t.plus(250)), Err(750), "the first request leaves at t+1000");
        assert!(rate.judge(t.plus(1_000)).is_ok());
        assert_eq!(rate.used(t.plus(1_000)), 2);
    }

    // rule: R7.13
    #[test]
    fn the_wait_is_until_enough_has_left_not_just_the_oldest() {
        let mut budget = RollingBudget::per_minute(10);
        let t = UnixMs(5_000_000);
        budget.spend(t, 2);
        budget.spend(t.plus(10_000), 9);
        // 11 spent: the first 2 leaving still leaves 9 < 10, so the wait ends at t+60s.
        assert_eq!(budget.judge(t.plus(20_000)), Err(40_000));
        let mut budget = RollingBudget::per_minute(10);
        budget.spend(t, 2);
        budget.spend(t.plus(10_000), 12);
        // 14 spent: only when the 12 leave (t+70s) is the total under 10.
        assert_eq!(budget.judge(t.plus(20_000)), Err(50_000));
    }

    #[test]
    fn a_zero_limit_never_admits() {
        let mut none = RollingBudget::per_second(0);
        assert_eq!(none.judge(UnixMs(1)), Err(1_000));
    }

    #[test]
    fn spends_in_one_bucket_are_merged() {
        let mut budget = RollingBudget::per_minute(1_000_000);
        let t = UnixMs(0);
        for i in 0..10_000 {
            budget.spend(t.plus(i * 6), 1);
        }
        assert!(budget.spent.len() <= 101, "{} buckets", budget.spent.len());
        assert_eq!(budget.used(t.plus(59_999)), 10_000);
    }

    // rule: R8.24
    #[test]
    fn zero_rows_cost_nothing_and_clauses_add_up() {
        let body = br#"{"collection":"business_files","q":"jazz","filter":{"all":[{"country":"FR"},{"location_geo":{"near":{"lat":48.8,"lng":2.3,"radius_km":5}}}]},"sort_by":"_text_match:desc,published_at:desc"}"#;
        let query = crate::search::judge(body, None).expect("a valid search");
        assert_eq!(search_cost(&query, 0), 0);
        // 1 + 2 clauses + 2 sort keys + text + near (4).
        assert_eq!(search_cost(&query, 3), 10);
    }

    #[test]
    fn an_ipv6_address_shares_its_64_and_an_ipv4_one_is_its_own() {
        let share = |text: &str| address_share(text.parse().unwrap());
        assert_eq!(share("2001:db8:1:2:aaaa::1"), share("2001:db8:1:2:ffff:1:2:3"));
        assert_ne!(share("2001:db8:1:2::1"), share("2001:db8:1:3::1"));
        assert_eq!(share("2001:db8:1:2::1"), "2001:db8:1:2::/64");
        assert_eq!(share("192.0.2.7"), "192.0.2.7");
        assert_eq!(share("::ffff:192.0.2.7"), "192.0.2.7", "a mapped IPv4 address is that address");
        assert_ne!(share("192.0.2.7"), share("192.0.2.8"));
    }
}
