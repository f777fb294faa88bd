//! The billing actor: the one place allowances are judged and billed
//! requests are counted. A request reserves a unit of a prepay allowance
//! before it is served (so a spent allowance is refused, never overdrawn),
//! then settles: a billable answer records its usage event, anything else
//! gives the unit back. Each (key id, nonce) is counted once.
//!
//! Home holds the allowances and the counts. A read region serves a prepay
//! company only from a lease of units home set aside for it, and reports
//! each billed request (with its lease) through its outbox; home counts each
//! (key id, nonce) once whichever regions served it, and a returned lease
//! gives back the units home did not bill.

use std::collections::HashMap;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use svc_core::time::UnixMs;

use crate::actors::error::ActorError;
use crate::actors::gather::{Gather, answer_each};
use crate::replication::exchange::{LeaseAsk, LeaseGrant, Outgoing, Report, ReportTaken, Sequence};
use svc_store::model::{Allowance, BillingPlan, DayUsage, GrantedLease, HeldLease, UsageEvent, UsageKind};
use svc_store::{Batch, Store, be, cf, keys};

/// Where home keeps its last lease id.
const LEASE_SEQ: &[u8] = keys::meta::LEASE_SEQ;

/// A unit held for a request while it is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    pub company_uuid: String,
    prepay: bool,
    /// The region's lease the unit came from; 0 at home.
    lease_id: u64,
}

/// What a reservation found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reserved {
    /// A unit is held. `renew`: a region's lease is running low or out of
    /// time, and a fresh one should be asked for now.
    Unit { reservation: Reservation, renew: bool },
    /// The prepay allowance is spent (402).
    Exhausted,
    /// A read region holds no lease in force for the company: ask home.
    NeedLease,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// Counted now.
    Billed,
    /// This (key id, nonce) was counted before.
    AlreadyBilled,
    /// Nothing billable was served; the unit went back.
    Released,
}

/// A company's usage over a range of UTC days.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageReport {
    /// (YYYY-MM-DD, counts), days with usage only, oldest first.
    pub days: Vec<(String, DayUsage)>,
    pub allowance: Option<Allowance>,
}

pub enum BillingMsg {
    Reserve {
        company_uuid: String,
        now: UnixMs,
        reply: RpcReplyPort<Result<Reserved, ActorError>>,
    },
    Settle {
        reservation: Reservation,
        event: Option<UsageEvent>,
        reply: RpcReplyPort<Result<Settled, ActorError>>,
    },
    /// Settles the answers gathered meanwhile, in one write, and answers them.
    Flush,
    /// Gives back a unit whose request ended without a bill.
    Release {
        reservation: Reservation,
    },
    Observe(RpcReplyPort<BillingSnapshot>),
    SetAllowance {
        allowance: Allowance,
        reply: RpcReplyPort<Result<(), ActorError>>,
    },
    Usage {
        company_uuid: String,
        from_day: String,
        to_day: String,
        reply: RpcReplyPort<Result<UsageReport, ActorError>>,
    },
    /// Home: sets units aside for a region.
    Grant {
        ask: LeaseAsk,
        now: UnixMs,
        reply: RpcReplyPort<Result<LeaseGrant, ActorError>>,
    },
    /// Home: a region's usage events and lease returns, in order.
    Take {
        report: Report,
        reply: RpcReplyPort<Result<ReportTaken, ActorError>>,
    },
    /// Home: takes back the unbilled units of leases long expired.
    Reclaim {
        now: UnixMs,
    },
    /// A read region: serve the company from this lease now.
    Hold {
        grant: LeaseGrant,
        now: UnixMs,
        reply: RpcReplyPort<Result<(), ActorError>>,
    },
}

/// Home or a read region.
#[derive(Clone)]
pub enum BillingRole {
    /// Leases last `lease_ms`.
    Home { lease_ms: i64 },
    /// Usage and lease returns go to the outbox.
    Region { outbox: Sequence },
}

/// What billing holds in memory: units reserved by requests in flight,
/// and a read region's leases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BillingSnapshot {
    pub reserved_units: i64,
    pub leases: usize,
}

pub struct BillingArgs {
    pub store: Store,
    pub role: BillingRole,
    /// Most settlements one write holds (`Config::answers_per_write`).
    pub per_write: usize,
}

#[derive(Clone)]
pub struct Billing;

pub struct BillingState {
    store: Store,
    role: BillingRole,
    /// Units reserved by requests being served, per (company, lease id).
    reserved: HashMap<(String, u64), i64>,
    /// A read region's leases, by company (also stored).
    leases: HashMap<String, HeldLease>,
    /// Settlements waiting for the next write.
    settlings: Gather<Settling>,
}

/// An answer's settlement waiting for the next write, and whom to answer.
type Settling = (Reservation, Option<UsageEvent>, RpcReplyPort<Result<Settled, ActorError>>);

/// The UTC day of a moment, `YYYY-MM-DD`.
pub fn day_of(at: UnixMs) -> String {
    at.to_rfc3339_secs()[..10].to_owned()
}

/// Billing writes gathered for one batch: each value read once, changed in
/// memory, written at the end, so many events in one batch add up.
struct Tally<'a> {
    store: &'a Store,
    days: HashMap<Vec<u8>, DayUsage>,
    allowances: HashMap<String, Option<Allowance>>,
    leases: HashMap<u64, Option<GrantedLease>>,
    counted: std::collections::HashSet<Vec<u8>>,
}

impl<'a> Tally<'a> {
    fn new(store: &'a Store) -> Self {
        Tally {
            store,
            days: HashMap::new(),
            allowances: HashMap::new(),
            leases: HashMap::new(),
            counted: Default::default(),
        }
    }

    fn allowance(&mut self, company_uuid: &str) -> Result<&mut Option<Allowance>, ActorError> {
        if !self.allowances.contains_key(company_uuid) {
            let found =
                self.store.get::<Allowance>(cf::ALLOWANCES, company_uuid.as_bytes()).map_err(ActorError::from)?;
            self.allowances.insert(company_uuid.to_owned(), found);
        }
        Ok(self.allowances.get_mut(company_uuid).expect("just inserted"))
    }

    fn lease(&mut self, lease_id: u64) -> Result<&mut Option<GrantedLease>, ActorError> {
        if let std::collections::hash_map::Entry::Vacant(slot) = self.leases.entry(lease_id) {
            slot.insert(self.store.get::<GrantedLease>(cf::LEASES_GRANTED, &be(lease_id)).map_err(ActorError::from)?);
        }
        Ok(self.leases.get_mut(&lease_id).expect("just inserted"))
    }

    /// Counts a usage event unless its (key id, nonce) was counted before;
    /// answers whether it was counted now.
    fn count(&mut self, batch: &mut Batch<'_>, event: &UsageEvent) -> Result<bool, ActorError> {
        let k = keys::usage(&event.key_id, &event.nonce);
        if self.counted.contains(&k) || self.store.contains(cf::USAGE, &k).map_err(ActorError::from)? {
            return Ok(false);
        }
        let day = keys::usage_day(&event.company_uuid, &day_of(event.at));
        if !self.days.contains_key(&day) {
            let found = self.store.get(cf::USAGE_DAYS, &day).map_err(ActorError::from)?.unwrap_or_default();
            self.days.insert(day.clone(), found);
        }
        if event.kind == UsageKind::Fetch && crate::sabotage::on(crate::sabotage::Sabotage::UnbilledFetches) {
            return Ok(false);
        }
        let counts = self.days.get_mut(&day).expect("just inserted");
        match event.kind {
            UsageKind::Search => counts.searches += 1,
            UsageKind::Fetch => counts.fetches += 1,
            UsageKind::Pool => {}
        }
        batch.put(cf::USAGE, &k, event);
        self.counted.insert(k);
        Ok(true)
    }

    /// Spends one unit of a prepay allowance: from the lease it was served
    /// under while home still holds it, else from the allowance itself.
    /// A lease counts only for the region it was granted to and the
    /// company it was granted for; any other unit comes off the allowance.
    fn charge(&mut self, region: &str, company_uuid: &str, lease_id: u64) -> Result<(), ActorError> {
        if lease_id != 0
            && let Some(lease) =
                self.lease(lease_id)?.as_mut().filter(|l| l.region == region && l.company_uuid == company_uuid)
        {
            lease.billed += 1;
            return Ok(());
        }
        if let Some(allowance) = self.allowance(company_uuid)?.as_mut().filter(|a| a.prepay) {
            allowance.remaining -= 1;
        }
        Ok(())
    }

    fn write(self, batch: &mut Batch<'_>) {
        for (day, counts) in &self.days {
            batch.put(cf::USAGE_DAYS, day, counts);
        }
        for allowance in self.allowances.values().flatten() {
            batch.put(cf::ALLOWANCES, allowance.company_uuid.as_bytes(), allowance);
        }
        for (id, lease) in &self.leases {
            match lease {
                Some(lease) => batch.put(cf::LEASES_GRANTED, &be(*id), lease),
                None => batch.delete(cf::LEASES_GRANTED, &be(*id)),
            }
        }
    }
}

impl BillingState {
    fn allowance(&self, company_uuid: &str) -> Result<Option<Allowance>, ActorError> {
        self.store.get::<Allowance>(cf::ALLOWANCES, company_uuid.as_bytes()).map_err(ActorError::from)
    }

    fn held(&self, company_uuid: &str, lease_id: u64) -> i64 {
        self.reserved.get(&(company_uuid.to_owned(), lease_id)).copied().unwrap_or(0)
    }

    fn hold_unit(&mut self, company_uuid: &str, lease_id: u64) {
        *self.reserved.entry((company_uuid.to_owned(), lease_id)).or_default() += 1;
    }

    fn reserve(&mut self, company_uuid: String, now: UnixMs) -> Result<Reserved, ActorError> {
        if let BillingRole::Region { .. } = self.role {
            return self.reserve_from_lease(company_uuid, now);
        }
        let prepay = match self.allowance(&company_uuid)? {
            Some(a) if a.prepay => {
                if a.remaining - self.held(&company_uuid, 0) <= 0 {
                    return Ok(Reserved::Exhausted);
                }
                self.hold_unit(&company_uuid, 0);
                true
            }
            _ => false,
        };
        Ok(Reserved::Unit { reservation: Reservation { company_uuid, prepay, lease_id: 0 }, renew: false })
    }

    /// A read region: a prepaid company is served from a lease in force;
    /// a company the replicated plans do not mark prepaid is served with
    /// none, so home's absence does not stop it (its usage goes home in the
    /// outbox, to be billed when home is back).
    fn reserve_from_lease(&mut self, company_uuid: String, now: UnixMs) -> Result<Reserved, ActorError> {
        let Some(lease) = self.leases.get(&company_uuid).filter(|l| l.expires_at > now).cloned() else {
            let plan: Option<BillingPlan> =
                self.store.get(cf::BILLING_PLANS, company_uuid.as_bytes()).map_err(ActorError::from)?;
            if plan.is_some_and(|p| p.prepay) {
                return Ok(Reserved::NeedLease);
            }
            let reservation = Reservation { company_uuid, prepay: false, lease_id: 0 };
            return Ok(Reserved::Unit { reservation, renew: false });
        };
        // Past four fifths of its time, a lease is renewed ahead.
        let late = (now.0 - lease.granted_at.0) * 5 > (lease.expires_at.0 - lease.granted_at.0) * 4;
        if !lease.prepay {
            let reservation = Reservation { company_uuid, prepay: false, lease_id: 0 };
            return Ok(Reserved::Unit { reservation, renew: late });
        }
        let free = lease.left - self.held(&company_uuid, lease.lease_id);
        if free <= 0 {
            return Ok(if lease.granted == 0 { Reserved::Exhausted } else { Reserved::NeedLease });
        }
        self.hold_unit(&company_uuid, lease.lease_id);
        let renew = late || (free - 1) * 5 <= lease.granted;
        let reservation = Reservation { company_uuid, prepay: true, lease_id: lease.lease_id };
        Ok(Reserved::Unit { reservation, renew })
    }

    fn release(&mut self, reservation: &Reservation) {
        if !reservation.prepay {
            return;
        }
        let k = (reservation.company_uuid.clone(), reservation.lease_id);
        if let Some(held) = self.reserved.get_mut(&k) {
            *held -= 1;
            if *held <= 0 {
                self.reserved.remove(&k);
            }
        }
    }

    /// Settles the answers gathered, their usage in one write, and answers
    /// each. Their units stay reserved until now, so an allowance read
    /// meanwhile still counts them spent.
    fn settle(&mut self, gathered: Vec<Settling>) {
        let (settlings, replies): (Vec<_>, Vec<_>) =
            gathered.into_iter().map(|(reservation, event, reply)| ((reservation, event), reply)).unzip();
        let settled = self.settle_all(settlings);
        answer_each(replies, settled);
    }

    fn settle_all(&mut self, settlings: Vec<(Reservation, Option<UsageEvent>)>) -> Result<Vec<Settled>, ActorError> {
        // A handle of its own: the batch borrows it while units are released.
        let store = self.store.clone();
        let mut batch = store.batch();
        let mut tally = Tally::new(&store);
        let mut settled = Vec::with_capacity(settlings.len());
        // Every unit goes back first: a settlement that fails below fails
        // them all, and none may stay held.
        for (reservation, _) in &settlings {
            self.release(reservation);
        }
        for (reservation, event) in settlings {
            let Some(event) = event else {
                settled.push(Settled::Released);
                continue;
            };
            if !tally.count(&mut batch, &event)? {
                settled.push(Settled::AlreadyBilled);
                continue;
            }
            match &self.role {
                BillingRole::Home { .. } if reservation.prepay => {
                    tally.charge(&event.region, &event.company_uuid, 0)?
                }
                BillingRole::Home { .. } => {}
                BillingRole::Region { outbox } => {
                    let lease_id = reservation.prepay.then_some(reservation.lease_id);
                    outbox.append(&mut batch, &Outgoing::Usage { event: event.clone(), lease_id });
                    if let Some(lease) =
                        self.leases.get_mut(&event.company_uuid).filter(|l| Some(l.lease_id) == lease_id)
                    {
                        lease.left -= 1;
                        batch.put(cf::LEASES_HELD, event.company_uuid.as_bytes(), &*lease);
                    }
                }
            }
            settled.push(Settled::Billed);
        }
        if let BillingRole::Home { .. } = self.role {
            tally.write(&mut batch);
        }
        if batch.is_empty() {
            return Ok(settled);
        }
        // Not synced: a crash of the process keeps it (the WAL is written);
        // the requests are answered only after this returns.
        batch.commit_unsynced().map_err(ActorError::from)?;
        Ok(settled)
    }

    fn usage(&self, company_uuid: &str, from_day: &str, to_day: &str) -> Result<UsageReport, ActorError> {
        let prefix = keys::prefix(&[company_uuid]);
        let from = keys::usage_day(company_uuid, from_day);
        let rows = self.store.scan::<DayUsage>(cf::USAGE_DAYS, &prefix, Some(&from), 400).map_err(ActorError::from)?;
        let days = rows
            .into_iter()
            .map(|(k, counts)| (String::from_utf8_lossy(&k[prefix.len()..]).into_owned(), counts))
            .take_while(|(day, _)| day.as_str() <= to_day)
            .collect();
        // Units leased to regions and not billed yet are still the company's.
        let mut allowance = self.allowance(company_uuid)?;
        if let Some(allowance) = allowance.as_mut().filter(|a| a.prepay) {
            let leases = self.store.scan_all::<GrantedLease>(cf::LEASES_GRANTED, &[]);
            for (_, lease) in leases.map_err(ActorError::from)? {
                if lease.company_uuid == company_uuid {
                    allowance.remaining += lease.granted - lease.billed;
                }
            }
        }
        Ok(UsageReport { days, allowance })
    }

    /// Home: sets aside up to `ask.units` of what a prepay allowance has
    /// free (not held by requests at home) for the asking region.
    fn grant(&mut self, ask: LeaseAsk, now: UnixMs) -> Result<LeaseGrant, ActorError> {
        let BillingRole::Home { lease_ms } = self.role else {
            return Err(ActorError::Refused("leases are granted by home"));
        };
        let expires_at = now.plus(lease_ms);
        let no_lease =
            LeaseGrant { lease_id: 0, company_uuid: ask.company_uuid.clone(), prepay: false, units: 0, expires_at };
        let Some(mut allowance) = self.allowance(&ask.company_uuid)?.filter(|a| a.prepay) else { return Ok(no_lease) };
        let free = (allowance.remaining - self.held(&ask.company_uuid, 0)).max(0);
        let units = ask.units.clamp(0, free);
        let last: u64 = self.store.get(cf::meta::LEASE_SEQ, LEASE_SEQ).map_err(ActorError::from)?.unwrap_or(0);
        let lease_id = last + 1;
        allowance.remaining -= units;
        let lease = GrantedLease {
            company_uuid: ask.company_uuid.clone(),
            region: ask.region,
            granted: units,
            billed: 0,
            expires_at,
        };
        let mut batch = self.store.batch();
        batch.put(cf::meta::LEASE_SEQ, LEASE_SEQ, &lease_id);
        batch.put(cf::ALLOWANCES, allowance.company_uuid.as_bytes(), &allowance);
        batch.put(cf::LEASES_GRANTED, &be(lease_id), &lease);
        batch.commit().map_err(ActorError::from)?;
        Ok(LeaseGrant { lease_id, prepay: true, units, ..no_lease })
    }

    /// Home: a lease expired more than a lease's length ago goes back to its
    /// allowance, less what was billed from it. The region stopped serving
    /// from it at expiry; a usage report arriving later still bills the
    /// allowance (`Tally::charge`), so nothing is lost either way.
    fn reclaim(&mut self, now: UnixMs) -> Result<usize, ActorError> {
        let BillingRole::Home { lease_ms } = self.role else { return Ok(0) };
        let leases = self.store.scan_all::<GrantedLease>(cf::LEASES_GRANTED, &[]);
        let mut batch = self.store.batch();
        let mut tally = Tally::new(&self.store);
        let mut reclaimed = 0;
        for (key, lease) in leases.map_err(ActorError::from)? {
            if now < lease.expires_at.plus(lease_ms) {
                continue;
            }
            if let Some(allowance) = tally.allowance(&lease.company_uuid)?.as_mut() {
                allowance.remaining += lease.granted - lease.billed;
            }
            batch.delete(cf::LEASES_GRANTED, &key);
            reclaimed += 1;
        }
        if reclaimed > 0 {
            tally.write(&mut batch);
            batch.commit().map_err(ActorError::from)?;
        }
        Ok(reclaimed)
    }

    /// Home: a region's usage events and lease returns, in one write.
    fn take(&mut self, report: Report) -> Result<ReportTaken, ActorError> {
        let mut taken = ReportTaken::default();
        let mut batch = self.store.batch();
        let mut tally = Tally::new(&self.store);
        for entry in &report.entries {
            match entry {
                Outgoing::Claim(_)
                | Outgoing::ReceiptKey { .. }
                | Outgoing::Introduced { .. }
                | Outgoing::ReceiptRoot(_)
                | Outgoing::AdSettle { .. }
                | Outgoing::AdEvent(_)
                | Outgoing::AdFact(_) => {}
                Outgoing::Usage { event, lease_id } => {
                    if !tally.count(&mut batch, event)? {
                        taken.already_billed += 1;
                        continue;
                    }
                    taken.billed += 1;
                    if let Some(lease_id) = lease_id {
                        tally.charge(&report.region, &event.company_uuid, *lease_id)?;
                    }
                }
                Outgoing::Return { lease_id } => {
                    // Only the region a lease was granted to can give it back.
                    let slot = tally.lease(*lease_id)?;
                    if slot.as_ref().is_some_and(|l| l.region == report.region)
                        && let Some(lease) = slot.take()
                        && let Some(allowance) = tally.allowance(&lease.company_uuid)?.as_mut()
                    {
                        allowance.remaining += lease.granted - lease.billed;
                    }
                }
            }
        }
        tally.write(&mut batch);
        // Synced: the region deletes its outbox once this is answered.
        batch.commit().map_err(ActorError::from)?;
        Ok(taken)
    }

    /// A read region: serve the company from `grant` now; a lease it
    /// replaces goes back to home (after the usage already in the outbox).
    fn hold(&mut self, grant: LeaseGrant, now: UnixMs) -> Result<(), ActorError> {
        let BillingRole::Region { outbox } = &self.role else {
            return Err(ActorError::Refused("leases are held by read regions"));
        };
        let mut batch = self.store.batch();
        if let Some(old) = self.leases.get(&grant.company_uuid)
            && old.lease_id != 0
            && old.lease_id != grant.lease_id
        {
            outbox.append(&mut batch, &Outgoing::Return { lease_id: old.lease_id });
        }
        let lease = HeldLease {
            lease_id: grant.lease_id,
            prepay: grant.prepay,
            granted: grant.units,
            left: grant.units,
            granted_at: now,
            expires_at: grant.expires_at,
        };
        batch.put(cf::LEASES_HELD, grant.company_uuid.as_bytes(), &lease);
        batch.commit().map_err(ActorError::from)?;
        self.leases.insert(grant.company_uuid, lease);
        Ok(())
    }
}

impl Actor for Billing {
    type Msg = BillingMsg;
    type State = BillingState;
    type Arguments = BillingArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<BillingMsg>,
        args: BillingArgs,
    ) -> Result<BillingState, ActorProcessingErr> {
        let leases = args
            .store
            .scan_all::<HeldLease>(cf::LEASES_HELD, &[])?
            .into_iter()
            .map(|(k, lease)| (String::from_utf8_lossy(&k).into_owned(), lease))
            .collect();
        Ok(BillingState {
            store: args.store,
            role: args.role,
            reserved: HashMap::new(),
            leases,
            settlings: Gather::new(args.per_write),
        })
    }

    async fn handle(
        &self,
        me: ActorRef<BillingMsg>,
        msg: BillingMsg,
        state: &mut BillingState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            BillingMsg::Reserve { company_uuid, now, reply } => {
                let _ = reply.send(state.reserve(company_uuid, now));
            }
            BillingMsg::Settle { reservation, event, reply } => {
                let gathered = state.settlings.gather((reservation, event, reply), &me, BillingMsg::Flush);
                state.settle(gathered);
            }
            BillingMsg::Flush => {
                let gathered = state.settlings.flushed();
                state.settle(gathered);
            }
            BillingMsg::Release { reservation } => state.release(&reservation),
            BillingMsg::Observe(reply) => {
                let reserved_units = state.reserved.values().sum();
                let _ = reply.send(BillingSnapshot { reserved_units, leases: state.leases.len() });
            }
            BillingMsg::SetAllowance { allowance, reply } => {
                let mut batch = state.store.batch();
                batch.put(cf::ALLOWANCES, allowance.company_uuid.as_bytes(), &allowance);
                let _ = reply.send(batch.commit().map_err(ActorError::from));
            }
            BillingMsg::Usage { company_uuid, from_day, to_day, reply } => {
                let _ = reply.send(state.usage(&company_uuid, &from_day, &to_day));
            }
            BillingMsg::Grant { ask, now, reply } => {
                let _ = reply.send(state.grant(ask, now));
            }
            BillingMsg::Take { report, reply } => {
                let _ = reply.send(state.take(report));
            }
            BillingMsg::Reclaim { now } => {
                if let Err(e) = state.reclaim(now) {
                    tracing::warn!(error = %e, "reclaiming expired leases failed");
                }
            }
            BillingMsg::Hold { grant, now, reply } => {
                let _ = reply.send(state.hold(grant, now));
            }
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for BillingMsg {
    type Seen = BillingSnapshot;

    fn observe(reply: ractor::RpcReplyPort<BillingSnapshot>) -> Self {
        BillingMsg::Observe(reply)
    }

    fn describe(seen: BillingSnapshot) -> serde_json::Value {
        serde_json::json!({"reserved_units": seen.reserved_units, "leases": seen.leases})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replication::exchange;

    fn state(role: &str) -> (BillingState, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let role = match role {
            "home" => BillingRole::Home { lease_ms: 60_000 },
            _ => BillingRole::Region { outbox: exchange::outbox(&store).unwrap() },
        };
        let settlings = Gather::new(1);
        (BillingState { store, role, reserved: HashMap::new(), leases: HashMap::new(), settlings }, dir)
    }

    impl BillingState {
        fn settle_one(&mut self, reservation: Reservation, event: Option<UsageEvent>) -> Result<Settled, ActorError> {
            Ok(self.settle_all(vec![(reservation, event)])?.remove(0))
        }
    }

    fn event(nonce: &str, at: UnixMs) -> UsageEvent {
        UsageEvent {
            company_uuid: "c".into(),
            group_id: "g".into(),
            key_id: "k".into(),
            nonce: nonce.into(),
            kind: UsageKind::Search,
            retrieval_id: "r_x".into(),
            region: "home".into(),
            at,
        }
    }

    fn unit(reserved: Result<Reserved, ActorError>) -> Reservation {
        match reserved.unwrap() {
            Reserved::Unit { reservation, .. } => reservation,
            other => panic!("a unit, not {other:?}"),
        }
    }

    fn prepay(billing: &BillingState, remaining: i64) {
        let allowance = Allowance { company_uuid: "c".into(), prepay: true, remaining };
        billing.store.put(cf::ALLOWANCES, b"c", &allowance).unwrap();
    }

    /// The replicated plan of `c` as a region holds it: prepaid.
    fn prepaid_plan(regions: &[&BillingState]) {
        for region in regions {
            let plan = BillingPlan { company_uuid: "c".into(), prepay: true };
            region.store.put(cf::BILLING_PLANS, b"c", &plan).unwrap();
        }
    }

    /// Ships a region's outbox to home, as the uplink of region `name` does.
    fn ship(region: &BillingState, name: &str, home: &mut BillingState) -> ReportTaken {
        let pending = exchange::pending(&region.store, 100).unwrap();
        let mut batch = region.store.batch();
        for (k, _) in &pending {
            batch.delete(crate::replication::exchange::OUTBOX, k);
        }
        batch.commit().unwrap();
        let entries = pending.into_iter().map(|(_, e)| e).collect();
        home.take(Report { region: name.into(), entries }).unwrap()
    }

    const AT: UnixMs = UnixMs(1_795_000_000_000);

    // rule: R1.26
    #[test]
    fn a_key_and_nonce_is_counted_once() {
        let (mut billing, _dir) = state("home");
        let first = unit(billing.reserve("c".into(), AT));
        assert_eq!(billing.settle_one(first, Some(event("n1", AT))).unwrap(), Settled::Billed);
        let again = unit(billing.reserve("c".into(), AT));
        assert_eq!(billing.settle_one(again, Some(event("n1", AT.plus(5)))).unwrap(), Settled::AlreadyBilled);
        let report = billing.usage("c", "2000-01-01", "2999-12-31").unwrap();
        assert_eq!(report.days, vec![(day_of(AT), DayUsage { searches: 1, fetches: 0 })]);
    }

    // rule: R1.26, R1.27
    #[test]
    fn answers_settled_in_one_write_add_up_and_a_repeat_among_them_is_billed_once() {
        let (mut billing, _dir) = state("home");
        prepay(&billing, 5);
        let units: Vec<Reservation> = (0..4).map(|_| unit(billing.reserve("c".into(), AT))).collect();
        let mut units = units.into_iter();
        let mut next = || units.next().unwrap();
        let writes = billing.store.writes();
        let settled = billing
            .settle_all(vec![
                (next(), Some(event("n1", AT))),
                (next(), Some(event("n2", AT))),
                (next(), Some(event("n1", AT.plus(5)))),
                (next(), None),
            ])
            .unwrap();
        assert_eq!(settled, [Settled::Billed, Settled::Billed, Settled::AlreadyBilled, Settled::Released]);
        assert_eq!(billing.store.writes(), writes + 1, "one write for the four");
        let report = billing.usage("c", "2000-01-01", "2999-12-31").unwrap();
        assert_eq!(report.days, vec![(day_of(AT), DayUsage { searches: 2, fetches: 0 })]);
        assert_eq!(billing.allowance("c").unwrap().unwrap().remaining, 3, "two units spent");
        assert_eq!(billing.reserved.values().sum::<i64>(), 0, "every unit released");
    }

    // rule: R1.27
    #[test]
    fn a_prepay_allowance_is_never_overdrawn_by_requests_in_flight() {
        let (mut billing, _dir) = state("home");
        prepay(&billing, 2);
        let a = unit(billing.reserve("c".into(), AT));
        let b = unit(billing.reserve("c".into(), AT));
        assert_eq!(billing.reserve("c".into(), AT).unwrap(), Reserved::Exhausted, "two units, both held");
        assert_eq!(billing.settle_one(a, None).unwrap(), Settled::Released);
        let c = unit(billing.reserve("c".into(), AT));
        billing.settle_one(b, Some(event("n1", AT))).unwrap();
        billing.settle_one(c, Some(event("n2", AT))).unwrap();
        assert_eq!(billing.reserve("c".into(), AT).unwrap(), Reserved::Exhausted, "spent");
        assert_eq!(billing.allowance("c").unwrap().unwrap().remaining, 0);
    }

    // rule: R1.26, R1.27
    #[test]
    fn regions_serve_from_leases_and_home_bills_each_pair_once() {
        let (mut home, _h) = state("home");
        let (mut eu, _e) = state("region");
        let (mut ap, _a) = state("region");
        prepay(&home, 10);
        prepaid_plan(&[&eu, &ap]);
        assert_eq!(eu.reserve("c".into(), AT).unwrap(), Reserved::NeedLease, "no lease yet");

        let ask = |region: &str| LeaseAsk { region: region.into(), company_uuid: "c".into(), units: 4 };
        let grant = home.grant(ask("eu"), AT).unwrap();
        assert_eq!((grant.prepay, grant.units), (true, 4));
        assert_eq!(home.allowance("c").unwrap().unwrap().remaining, 6, "set aside at home");
        eu.hold(grant, AT).unwrap();
        ap.hold(home.grant(ask("ap"), AT).unwrap(), AT).unwrap();
        assert_eq!(home.allowance("c").unwrap().unwrap().remaining, 2);

        // eu bills n1 and n2 and releases one unit; ap serves a replay of n1.
        for nonce in ["n1", "n2"] {
            let r = unit(eu.reserve("c".into(), AT));
            assert_eq!(eu.settle_one(r, Some(event(nonce, AT))).unwrap(), Settled::Billed);
        }
        let r = unit(eu.reserve("c".into(), AT));
        eu.settle_one(r, None).unwrap();
        let r = unit(ap.reserve("c".into(), AT));
        assert_eq!(ap.settle_one(r, Some(event("n1", AT))).unwrap(), Settled::Billed, "ap had not learned n1");

        assert_eq!(ship(&eu, "eu", &mut home), ReportTaken { billed: 2, already_billed: 0 });
        assert_eq!(ship(&ap, "ap", &mut home), ReportTaken { billed: 0, already_billed: 1 }, "n1 is billed once");
        assert_eq!(ship(&eu, "eu", &mut home), ReportTaken::default(), "a shipped outbox is empty");
        let report = home.usage("c", "2000-01-01", "2999-12-31").unwrap();
        assert_eq!(report.days, vec![(day_of(AT), DayUsage { searches: 2, fetches: 0 })]);

        // New leases replace the old ones, which go back with what was not billed.
        eu.hold(home.grant(ask("eu"), AT.plus(1)).unwrap(), AT.plus(1)).unwrap();
        ap.hold(home.grant(ask("ap"), AT.plus(1)).unwrap(), AT.plus(1)).unwrap();
        ship(&eu, "eu", &mut home);
        ship(&ap, "ap", &mut home);
        let leased: i64 = [&eu, &ap].iter().map(|r| r.leases["c"].granted).sum();
        assert_eq!(
            home.allowance("c").unwrap().unwrap().remaining + leased,
            10 - 2,
            "the allowance spent is exactly what was billed"
        );
    }

    // rule: R1.27, R1.28
    #[test]
    fn a_region_without_a_lease_in_force_asks_and_a_spent_allowance_grants_nothing() {
        let (mut home, _h) = state("home");
        let (mut eu, _e) = state("region");
        prepay(&home, 1);
        prepaid_plan(&[&eu]);
        let ask = LeaseAsk { region: "eu".into(), company_uuid: "c".into(), units: 5 };
        eu.hold(home.grant(ask.clone(), AT).unwrap(), AT).unwrap();
        let r = unit(eu.reserve("c".into(), AT));
        eu.settle_one(r, Some(event("n1", AT))).unwrap();
        assert_eq!(eu.reserve("c".into(), AT).unwrap(), Reserved::NeedLease, "the one unit is spent");
        eu.hold(home.grant(ask.clone(), AT).unwrap(), AT).unwrap();
        assert_eq!(eu.reserve("c".into(), AT).unwrap(), Reserved::Exhausted, "home had nothing left to grant");
        assert_eq!(
            eu.reserve("c".into(), AT.plus(60_000)).unwrap(),
            Reserved::NeedLease,
            "an expired lease is never served from"
        );
        // A company without a prepay allowance is served and reported,
        // with a lease or none (home away).
        assert!(matches!(eu.reserve("d".into(), AT).unwrap(), Reserved::Unit { .. }), "no lease, not prepaid");
        let postpaid = LeaseAsk { company_uuid: "d".into(), ..ask };
        eu.hold(home.grant(postpaid, AT).unwrap(), AT).unwrap();
        assert!(matches!(eu.reserve("d".into(), AT).unwrap(), Reserved::Unit { .. }));
    }

    // rule: R1.27
    #[test]
    fn a_lease_long_expired_goes_back_to_its_allowance_and_late_usage_still_bills() {
        let (mut home, _h) = state("home");
        let (mut eu, _e) = state("region");
        prepay(&home, 10);
        let ask = LeaseAsk { region: "eu".into(), company_uuid: "c".into(), units: 4 };
        eu.hold(home.grant(ask, AT).unwrap(), AT).unwrap();
        let r = unit(eu.reserve("c".into(), AT));
        eu.settle_one(r, Some(event("n1", AT))).unwrap();
        assert_eq!(home.allowance("c").unwrap().unwrap().remaining, 6, "4 set aside");
        // Expired, but within the grace for late reports: kept.
        assert_eq!(home.reclaim(AT.plus(60_000)).unwrap(), 0);
        // Long expired, its report never came: all 4 go back...
        assert_eq!(home.reclaim(AT.plus(120_000)).unwrap(), 1);
        assert_eq!(home.allowance("c").unwrap().unwrap().remaining, 10);
        // ...and the report, when it comes, bills the allowance itself.
        assert_eq!(ship(&eu, "eu", &mut home), ReportTaken { billed: 1, already_billed: 0 });
        assert_eq!(home.allowance("c").unwrap().unwrap().remaining, 9, "spent exactly what was billed");
    }

    // A region speaks for its own leases only: another region's lease is
    // neither given back nor billed on by its report.
    #[test]
    fn a_region_cannot_return_or_bill_on_another_regions_lease() {
        let (mut home, _h) = state("home");
        prepay(&home, 10);
        let ask = LeaseAsk { region: "ap".into(), company_uuid: "c".into(), units: 4 };
        let lease = home.grant(ask, AT).unwrap();
        assert_eq!(home.allowance("c").unwrap().unwrap().remaining, 6);
        let usage = Outgoing::Usage {
            event: UsageEvent { region: "eu".into(), ..event("n1", AT) },
            lease_id: Some(lease.lease_id),
        };
        let entries = vec![Outgoing::Return { lease_id: lease.lease_id }, usage];
        home.take(Report { region: "eu".into(), entries }).unwrap();
        assert_eq!(home.allowance("c").unwrap().unwrap().remaining, 5, "billed on the allowance, the lease kept");
        let kept: GrantedLease = home.store.get(cf::LEASES_GRANTED, &be(lease.lease_id)).unwrap().unwrap();
        assert_eq!((kept.region.as_str(), kept.billed), ("ap", 0));
    }
}
