//! A campaign's money across regions (R4.1.19, issue 28): home keeps one
//! ledger per campaign and leases slices of what is left to the regions,
//! as allowance leases do; a region spends only from a lease it holds, and
//! reports what it used. A lease a region never settles is counted as used
//! in full when it expires, so a region lost with unreported spending can
//! never let the campaign pass its budget. Pure: time is passed in.

use serde::{Deserialize, Serialize};

use super::Micros;
use crate::time::UnixMs;

/// A slice of a campaign's money a region holds until `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    pub lease_id: u64,
    pub region: String,
    pub amount: Micros,
    /// What the region reported it used, so far.
    pub used: Micros,
    pub expires_at: UnixMs,
}

/// Home's account of one campaign.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Ledger {
    /// What the campaign may spend: the lesser of its budget and funds.
    pub spendable: Micros,
    /// Used and settled (or expired) money.
    pub spent: Micros,
    pub leases: Vec<Lease>,
    /// The next lease's id.
    pub next_lease: u64,
}

/// Why a report is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LedgerError {
    /// No such lease (settled, expired, or never granted).
    UnknownLease,
    /// The region reported less than it had reported before, or more than
    /// the lease holds.
    BadReport,
}

/// What a region asks of a campaign's money.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    pub region: &'a str,
    pub want: Micros,
    /// One event's cost: a lease is whole events.
    pub event: Micros,
    /// How many regions the deployment has, home among them.
    pub regions: usize,
}

/// A lease is at least this share of what is left (1/16).
pub const GRANT_SHARE: u64 = 16;

impl Ledger {
    pub fn new(spendable: Micros) -> Ledger {
        Ledger { spendable, ..Ledger::default() }
    }

    /// Money neither spent nor leased (a live lease holds all of its
    /// amount, used or not, until it is settled or expires).
    pub fn available(&self) -> Micros {
        let leased: u64 = self.leases.iter().map(|l| l.amount.0).sum();
        self.spendable.saturating_sub(self.spent).saturating_sub(Micros(leased))
    }

    /// Leases `region` what it wants of what is left, or a sixteenth of it
    /// when that is more (a busy campaign's region asks again seldom, and
    /// most stays for the others), until `expires_at`. A region's first
    /// lease, of a deployment of `regions`, is at most a `regions`th of what
    /// is left (but one event), so each region finds some of a small budget
    /// before one holds it all. Always whole events of `event` (one event's
    /// cost), so no lease holds a cent it cannot spend; nothing when not one
    /// event is left.
    pub fn grant(&mut self, ask: Ask<'_>, expires_at: UnixMs) -> Option<Lease> {
        let (available, event) = (self.available().0, ask.event.0.max(1));
        let mut amount = ask.want.0.max(available / GRANT_SHARE).min(available);
        let first = !self.leases.iter().any(|l| l.region == ask.region);
        if first && ask.regions > 1 {
            amount = amount.min((available / ask.regions as u64).max(event));
        }
        let region = ask.region;
        let amount = Micros(amount / event * event);
        if amount.0 == 0 {
            return None;
        }
        let lease = Lease { lease_id: self.next_lease, region: region.to_owned(), amount, used: Micros(0), expires_at };
        self.next_lease += 1;
        self.leases.push(lease.clone());
        Some(lease)
    }

    /// The region's running total of what it used of a lease.
    pub fn report(&mut self, lease_id: u64, used: Micros) -> Result<(), LedgerError> {
        let lease = self.leases.iter_mut().find(|l| l.lease_id == lease_id).ok_or(LedgerError::UnknownLease)?;
        if used < lease.used || used > lease.amount {
            return Err(LedgerError::BadReport);
        }
        lease.used = used;
        Ok(())
    }

    /// The region hands a lease back with its final use: that much is
    /// spent, the rest is free again.
    pub fn settle(&mut self, lease_id: u64, used: Micros) -> Result<(), LedgerError> {
        self.report(lease_id, used)?;
        if let Some(at) = self.leases.iter().position(|l| l.lease_id == lease_id) {
            let lease = self.leases.remove(at);
            self.spent = Micros(self.spent.0.saturating_add(lease.used.0));
        }
        Ok(())
    }

    /// Ends the leases past their time that no region settled, counting
    /// each as used in full: what a lost region spent is never unaccounted.
    pub fn expire(&mut self, now: UnixMs) {
        let (ended, live): (Vec<Lease>, Vec<Lease>) = self.leases.drain(..).partition(|l| l.expires_at <= now);
        self.leases = live;
        for lease in ended {
            self.spent = Micros(self.spent.0.saturating_add(lease.amount.0));
        }
    }
}

/// A region's side of a lease: what it may still spend from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    pub lease_id: u64,
    pub amount: Micros,
    pub used: Micros,
    pub expires_at: UnixMs,
}

/// A region stops spending from a lease this long before it expires, so its
/// final report reaches home first.
pub const SETTLE_MARGIN_MS: i64 = 5_000;

impl Held {
    pub fn of(lease: &Lease) -> Held {
        Held { lease_id: lease.lease_id, amount: lease.amount, used: lease.used, expires_at: lease.expires_at }
    }

    /// Spends `cost` if the lease still holds it and has time left.
    pub fn spend(&mut self, cost: Micros, now: UnixMs) -> bool {
        let fits = self.used.0.checked_add(cost.0).is_some_and(|total| total <= self.amount.0);
        if fits && now.0 < self.expires_at.0 - SETTLE_MARGIN_MS {
            self.used = Micros(self.used.0 + cost.0);
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    const T: UnixMs = UnixMs(1_795_341_600_000);

    // rule: R4.1.19
    #[test]
    fn leases_come_from_what_is_left_and_settle_back() {
        let mut ledger = Ledger::new(Micros(100));
        let until = T.plus(60_000);
        let ask = |region, want, event| Ask { region, want: Micros(want), event: Micros(event), regions: 1 };
        let a = ledger.grant(ask("eu", 60, 1), until).unwrap();
        let b = ledger.grant(ask("ap", 60, 1), until).unwrap();
        assert_eq!((a.amount, b.amount), (Micros(60), Micros(40)), "the second gets what is left");
        assert!(ledger.grant(ask("home", 1, 1), until).is_none());
        assert_eq!(ledger.report(a.lease_id, Micros(10)), Ok(()));
        assert_eq!(ledger.report(a.lease_id, Micros(5)), Err(LedgerError::BadReport), "running totals only grow");
        assert_eq!(ledger.report(a.lease_id, Micros(61)), Err(LedgerError::BadReport));
        ledger.settle(a.lease_id, Micros(20)).unwrap();
        assert_eq!((ledger.spent, ledger.available()), (Micros(20), Micros(40)));
        assert_eq!(ledger.settle(a.lease_id, Micros(20)), Err(LedgerError::UnknownLease));
        // A lease never settled counts in full once it expires.
        ledger.expire(T.plus(60_000));
        assert_eq!((ledger.spent, ledger.available()), (Micros(60), Micros(40)));
        let mut held = Held::of(&ledger.grant(ask("eu", 10, 1), until).unwrap());
        assert!(held.spend(Micros(10), T));
        assert!(!held.spend(Micros(1), T), "beyond the lease");
        let mut late = Held::of(&ledger.grant(ask("ap", 10, 1), until).unwrap());
        assert!(!late.spend(Micros(1), T.plus(60_000 - SETTLE_MARGIN_MS)), "too near its end");
        // A busy campaign's lease is a sixteenth of what is left, when that is more.
        let mut big = Ledger::new(Micros(1_600));
        assert_eq!(big.grant(ask("eu", 1, 1), T).unwrap().amount, Micros(100));
        assert_eq!(big.grant(ask("ap", 200, 1), T).unwrap().amount, Micros(200));
        // Whole events: of 1,300 left, 1,299 asked in events of 100 is 1,200.
        assert_eq!(big.grant(ask("home", 1_299, 100), T).unwrap().amount, Micros(1_200));
        assert!(big.grant(ask("home", 100, 200), T).is_none(), "100 left is not one event of 200");
    }

    // rule: R4.1.19
    #[test]
    fn each_region_finds_some_of_a_small_budget_before_one_holds_it_all() {
        // A dollar at 0.20 an event in three regions; each asks for twenty events.
        let ask = |region| Ask { region, want: Micros(4_000_000), event: Micros(200_000), regions: 3 };
        let mut ledger = Ledger::new(Micros(1_000_000));
        let eu = ledger.grant(ask("eu"), T).unwrap();
        let home = ledger.grant(ask("home"), T).unwrap();
        let ap = ledger.grant(ask("ap"), T).unwrap();
        let amounts = [eu.amount, home.amount, ap.amount].map(|m| m.0);
        assert_eq!(amounts, [200_000, 200_000, 200_000], "a third of what is left, in whole events, or one event");
        // A region that holds a lease may take the rest.
        assert_eq!(ledger.grant(ask("eu"), T).unwrap().amount, Micros(400_000));
        assert!(ledger.grant(ask("ap"), T).is_none());
    }

    /// Regions grant, spend, report, settle, crash and lose what they had
    /// not reported, while funds grow, in a random order: what the regions
    /// spent never passes what the campaign may spend, and home never counts
    /// less than was spent.
    // rule: R4.1.19
    #[test]
    fn no_interleaving_of_regions_overspends_or_undercounts() {
        for seed in 0..300 {
            let mut rng = Rng::new(seed);
            let mut ledger = Ledger::new(Micros(1 + rng.below(500)));
            let regions = ["home", "eu", "ap"];
            let mut held: Vec<Vec<Held>> = vec![Vec::new(); 3];
            let mut actually_spent = 0u64;
            let mut now = T;
            for _ in 0..200 {
                now = now.plus(rng.below(4_000) as i64);
                let r = rng.below(3) as usize;
                match rng.below(7) {
                    0 | 1 => {
                        let (want, event) = (Micros(1 + rng.below(80)), Micros(1 + rng.below(10)));
                        let ask = Ask { region: regions[r], want, event, regions: 3 };
                        if let Some(lease) = ledger.grant(ask, now.plus(20_000)) {
                            held[r].push(Held::of(&lease));
                        }
                    }
                    2 | 3 => {
                        let cost = Micros(1 + rng.below(10));
                        if let Some(h) = held[r].iter_mut().find(|h| h.used.0 + cost.0 <= h.amount.0)
                            && h.spend(cost, now)
                        {
                            actually_spent += cost.0;
                        }
                    }
                    4 => {
                        for h in &held[r] {
                            let _ = ledger.report(h.lease_id, h.used);
                        }
                    }
                    5 => {
                        for h in held[r].drain(..) {
                            let _ = ledger.settle(h.lease_id, h.used);
                        }
                    }
                    _ => {
                        if rng.chance(30) {
                            held[r].clear(); // the region is lost with whatever it had not reported
                        } else {
                            ledger.spendable = Micros(ledger.spendable.0 + rng.below(50));
                        }
                    }
                }
                ledger.expire(now);
                held.iter_mut().for_each(|hs| hs.retain(|h| h.expires_at > now));
                let outstanding: u64 = ledger.leases.iter().map(|l| l.amount.0 - l.used.0).sum();
                let reported: u64 = ledger.leases.iter().map(|l| l.used.0).sum();
                assert!(actually_spent <= ledger.spendable.0, "seed {seed}: overspent");
                assert!(ledger.spent.0 + reported + outstanding <= ledger.spendable.0, "seed {seed}: over-leased");
                assert!(actually_spent <= ledger.spent.0 + reported + outstanding, "seed {seed}: undercounted");
            }
        }
    }
}
