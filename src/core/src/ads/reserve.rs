//! A region's side of campaign money (R4.1.19, R4.1.20): the leases it
//! holds from home's ledger and the reserves pools take from them. A pool
//! reserves one event's cost per campaign for ten minutes, at most three
//! outstanding per key and campaign; a confirmed render spends its reserve;
//! an unconfirmed one lapses. A reserve is taken only from a lease that
//! outlives it, so a confirmation within the window always finds its money.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::ledger::{Held, SETTLE_MARGIN_MS};
use super::{MAX_RESERVES, Micros, RESERVE_MS};
use crate::time::UnixMs;

/// One pool's hold on a campaign's money.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reserve {
    pub reserve_id: u64,
    pub campaign_id: String,
    pub key_id: String,
    pub cost: Micros,
    pub expires_at: UnixMs,
}

/// Why a campaign cannot be reserved now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Short {
    /// The key holds three reserves on the campaign already: it is left
    /// out of this pool.
    TooMany,
    /// The region holds too little of the campaign's money: ask home for
    /// a lease of at least this much.
    NeedLease(Micros),
}

/// What one campaign's reserves hold at a region.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Holds {
    money: u64,
    /// Outstanding reserves per key.
    by_key: HashMap<String, usize>,
}

/// The leases and reserves of one region. Reserves live in memory only:
/// one lost with the process lapses unspent, and a render of its pool
/// spends straight from the lease. Every step costs the same however many
/// reserves are outstanding: they are kept in issue order (each lasts
/// [`RESERVE_MS`], so the first issued lapse first) with running totals per
/// campaign and key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Book {
    pub leases: HashMap<String, Held>,
    reserves: BTreeMap<u64, Reserve>,
    holds: HashMap<String, Holds>,
    next_reserve: u64,
}

impl Book {
    /// A book of the leases kept, whose reserve ids start at `first_id`
    /// (above any a process before it issued: ids name reserves in tokens).
    pub fn with_leases(leases: HashMap<String, Held>, first_id: u64) -> Book {
        Book { leases, next_reserve: first_id, ..Book::default() }
    }

    /// The outstanding reserves, oldest first.
    pub fn reserves(&self) -> impl Iterator<Item = &Reserve> {
        self.reserves.values()
    }

    /// The reserve `reserve_id`, if outstanding.
    pub fn reserve_of(&self, reserve_id: u64) -> Option<&Reserve> {
        self.reserves.get(&reserve_id)
    }

    fn remove(&mut self, reserve_id: u64) -> Option<Reserve> {
        let reserve = self.reserves.remove(&reserve_id)?;
        if let Some(holds) = self.holds.get_mut(&reserve.campaign_id) {
            holds.money -= reserve.cost.0;
            if let Some(n) = holds.by_key.get_mut(&reserve.key_id) {
                *n -= 1;
                if *n == 0 {
                    holds.by_key.remove(&reserve.key_id);
                }
            }
            if holds.by_key.is_empty() {
                self.holds.remove(&reserve.campaign_id);
            }
        }
        Some(reserve)
    }

    fn insert(&mut self, reserve: Reserve) {
        let holds = self.holds.entry(reserve.campaign_id.clone()).or_default();
        holds.money += reserve.cost.0;
        *holds.by_key.entry(reserve.key_id.clone()).or_default() += 1;
        self.reserves.insert(reserve.reserve_id, reserve);
    }

    /// Drops reserves that lapsed unconfirmed.
    pub fn lapse(&mut self, now: UnixMs) {
        while let Some((&id, first)) = self.reserves.first_key_value()
            && first.expires_at <= now
        {
            self.remove(id);
        }
    }

    fn reserved(&self, campaign_id: &str) -> u64 {
        self.holds.get(campaign_id).map_or(0, |h| h.money)
    }

    /// Reserves `cost` of `campaign_id` for a pool of `key_id`.
    pub fn reserve(&mut self, campaign_id: &str, key_id: &str, cost: Micros, now: UnixMs) -> Result<u64, Short> {
        self.lapse(now);
        let held_by_key = self.holds.get(campaign_id).and_then(|h| h.by_key.get(key_id)).copied().unwrap_or_default();
        if held_by_key >= MAX_RESERVES {
            return Err(Short::TooMany);
        }
        let expires_at = now.plus(RESERVE_MS);
        let free = match self.leases.get(campaign_id) {
            // A lease that ends before the reserve would is of no use to it.
            Some(lease) if lease.expires_at.0 - SETTLE_MARGIN_MS > expires_at.0 => {
                lease.amount.0.saturating_sub(lease.used.0).saturating_sub(self.reserved(campaign_id))
            }
            _ => 0,
        };
        if free < cost.0 {
            return Err(Short::NeedLease(cost));
        }
        let reserve_id = self.next_reserve;
        self.next_reserve += 1;
        let (campaign_id, key_id) = (campaign_id.to_owned(), key_id.to_owned());
        self.insert(Reserve { reserve_id, campaign_id, key_id, cost, expires_at });
        Ok(reserve_id)
    }

    /// Spends a reserve of `campaign_id` for a confirmed render: `None`
    /// when it lapsed (or is another campaign's).
    pub fn spend(&mut self, reserve_id: u64, campaign_id: &str, now: UnixMs) -> Option<Micros> {
        let reserve = self.reserves.get(&reserve_id)?;
        if reserve.campaign_id != campaign_id || reserve.expires_at <= now {
            return None;
        }
        let reserve = self.remove(reserve_id)?;
        let lease = self.leases.get_mut(campaign_id)?;
        // Never past the lease, even one that replaced a larger one.
        lease.spend(reserve.cost, now).then_some(reserve.cost)
    }

    /// Puts back what a confirmation changed, when its write failed: the
    /// campaign's lease as it was, and the reserve it spent.
    pub fn restore(&mut self, campaign_id: &str, lease: Option<Held>, reserve: Option<Reserve>) {
        match lease {
            Some(lease) => self.leases.insert(campaign_id.to_owned(), lease),
            None => self.leases.remove(campaign_id),
        };
        if let Some(reserve) = reserve
            && !self.reserves.contains_key(&reserve.reserve_id)
        {
            self.insert(reserve);
        }
    }

    /// Spends `cost` of a campaign straight from its lease, beside what
    /// reserves hold: a sponsored row's render or a click, which no pool
    /// reserved.
    pub fn spend_now(&mut self, campaign_id: &str, cost: Micros, now: UnixMs) -> Result<(), Short> {
        self.lapse(now);
        let reserved = self.reserved(campaign_id);
        let Some(lease) = self.leases.get_mut(campaign_id) else { return Err(Short::NeedLease(cost)) };
        let free = lease.amount.0.saturating_sub(lease.used.0).saturating_sub(reserved);
        if free >= cost.0 && lease.spend(cost, now) { Ok(()) } else { Err(Short::NeedLease(cost)) }
    }

    /// Takes out the leases done with: past their time to spend, or too
    /// short-lived to back a new reserve with none outstanding on them.
    /// Each goes home with what it used.
    pub fn due(&mut self, now: UnixMs) -> Vec<(String, Held)> {
        self.lapse(now);
        let done: Vec<String> = self
            .leases
            .iter()
            .filter(|(campaign_id, lease)| {
                let spent_out = now.0 >= lease.expires_at.0 - SETTLE_MARGIN_MS;
                let idle = now.plus(RESERVE_MS).0 >= lease.expires_at.0 - SETTLE_MARGIN_MS
                    && !self.holds.contains_key(*campaign_id);
                spent_out || idle
            })
            .map(|(campaign_id, _)| campaign_id.clone())
            .collect();
        done.into_iter().filter_map(|c| self.leases.remove(&c).map(|lease| (c, lease))).collect()
    }

    /// Takes a new lease of a campaign; the one it replaces is handed back
    /// to be settled with what it used. Outstanding reserves are counted
    /// against the campaign, so the new lease holds their money from now on.
    pub fn take_lease(&mut self, campaign_id: &str, lease: Held) -> Option<Held> {
        self.leases.insert(campaign_id.to_owned(), lease)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: UnixMs = UnixMs(1_795_341_600_000);

    fn lease(amount: u64, until: UnixMs) -> Held {
        Held { lease_id: 1, amount: Micros(amount), used: Micros(0), expires_at: until }
    }

    // rule: R4.1.19, R4.1.20
    #[test]
    fn reserves_come_from_a_lease_that_outlives_them_three_per_key() {
        let mut book = Book::default();
        assert_eq!(book.reserve("c", "k", Micros(5), T), Err(Short::NeedLease(Micros(5))), "no lease yet");
        book.take_lease("c", lease(20, T.plus(RESERVE_MS)));
        assert_eq!(book.reserve("c", "k", Micros(5), T), Err(Short::NeedLease(Micros(5))), "ends too soon");
        book.take_lease("c", lease(20, T.plus(3 * RESERVE_MS)));
        let first = book.reserve("c", "k", Micros(5), T).unwrap();
        book.reserve("c", "k", Micros(5), T).unwrap();
        book.reserve("c", "k", Micros(5), T).unwrap();
        assert_eq!(book.reserve("c", "k", Micros(5), T), Err(Short::TooMany));
        assert_eq!(book.reserve("c", "other", Micros(6), T), Err(Short::NeedLease(Micros(6))), "5 left");
        book.reserve("c", "other", Micros(5), T).unwrap();
        // A confirmed render spends its reserve; a lapsed one frees its money.
        let other = book.reserves().last().unwrap().reserve_id;
        assert_eq!(book.spend(other, "d", T.plus(1)), None, "another campaign's reserve");
        assert_eq!(book.spend(first, "c", T.plus(1)), Some(Micros(5)));
        assert_eq!(book.spend(first, "c", T.plus(1)), None, "once");
        assert_eq!(book.leases["c"].used, Micros(5));
        book.lapse(T.plus(RESERVE_MS));
        assert_eq!(book.reserves().count(), 0);
        // 15 of 20 unused, and the key's lapsed reserves no longer count.
        for _ in 0..3 {
            assert!(book.reserve("c", "k", Micros(5), T.plus(RESERVE_MS)).is_ok());
        }
        assert_eq!(book.reserve("c", "k", Micros(1), T.plus(RESERVE_MS)), Err(Short::TooMany));
    }

    // rule: R4.1.19
    #[test]
    fn a_direct_spend_leaves_reserves_their_money_and_done_leases_go_home() {
        let mut book = Book::default();
        book.take_lease("c", lease(20, T.plus(3 * RESERVE_MS)));
        book.reserve("c", "k", Micros(15), T).unwrap();
        assert_eq!(book.spend_now("c", Micros(6), T), Err(Short::NeedLease(Micros(6))), "15 of 20 reserved");
        assert_eq!(book.spend_now("c", Micros(5), T), Ok(()));
        assert_eq!(book.spend_now("other", Micros(1), T), Err(Short::NeedLease(Micros(1))));
        assert!(book.due(T.plus(RESERVE_MS)).is_empty(), "still backs reserves for a while");
        // Once too short-lived for a new reserve, it waits for its last one.
        book.reserve("c", "k", Micros(1), T.plus(RESERVE_MS)).unwrap();
        assert!(book.due(T.plus(2 * RESERVE_MS - SETTLE_MARGIN_MS)).is_empty(), "a reserve is outstanding");
        let done = book.due(T.plus(2 * RESERVE_MS));
        assert_eq!(done.len(), 1);
        assert_eq!((done[0].0.as_str(), done[0].1.used), ("c", Micros(5)));
        assert!(book.leases.is_empty());
    }
}
