//! A region's side of campaign money (R4.1.19, R4.1.20): the leases it
//! holds from home's ledger and the reserves pools take from them. A pool
//! reserves one event's cost per campaign for ten minutes, at most three
//! outstanding per key and campaign; a confirmed render spends its reserve;
//! an unconfirmed one lapses. A reserve is taken only from a lease that
//! outlives it, so a confirmation within the window always finds its money.

use std::collections::HashMap;

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

/// The leases and reserves of one region.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Book {
    pub leases: HashMap<String, Held>,
    pub reserves: Vec<Reserve>,
    pub next_reserve: u64,
}

impl Book {
    /// Drops reserves that lapsed unconfirmed.
    pub fn lapse(&mut self, now: UnixMs) {
        self.reserves.retain(|r| r.expires_at > now);
    }

    fn reserved(&self, campaign_id: &str) -> u64 {
        self.reserves.iter().filter(|r| r.campaign_id == campaign_id).map(|r| r.cost.0).sum()
    }

    /// Reserves `cost` of `campaign_id` for a pool of `key_id`.
    pub fn reserve(&mut self, campaign_id: &str, key_id: &str, cost: Micros, now: UnixMs) -> Result<u64, Short> {
        self.lapse(now);
        let held_by_key = self.reserves.iter().filter(|r| r.campaign_id == campaign_id && r.key_id == key_id).count();
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
        self.reserves.push(Reserve {
            reserve_id,
            campaign_id: campaign_id.to_owned(),
            key_id: key_id.to_owned(),
            cost,
            expires_at,
        });
        Ok(reserve_id)
    }

    /// Spends a reserve for a confirmed render: `None` when it lapsed.
    pub fn spend(&mut self, reserve_id: u64, now: UnixMs) -> Option<(String, Micros)> {
        self.lapse(now);
        let at = self.reserves.iter().position(|r| r.reserve_id == reserve_id)?;
        let reserve = self.reserves.remove(at);
        let lease = self.leases.get_mut(&reserve.campaign_id)?;
        // Never past the lease, even one that replaced a larger one.
        lease.spend(reserve.cost, now).then_some((reserve.campaign_id, reserve.cost))
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
                    && !self.reserves.iter().any(|r| &r.campaign_id == *campaign_id);
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
        assert_eq!(book.spend(first, T.plus(1)), Some(("c".into(), Micros(5))));
        assert_eq!(book.spend(first, T.plus(1)), None, "once");
        assert_eq!(book.leases["c"].used, Micros(5));
        book.lapse(T.plus(RESERVE_MS));
        assert!(book.reserves.is_empty());
        assert!(book.reserve("c", "k", Micros(15), T.plus(RESERVE_MS)).is_ok(), "15 of 20 unused");
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
