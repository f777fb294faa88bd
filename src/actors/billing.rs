//! The billing actor: the one place allowances are judged and billed
//! requests are counted. A request reserves a unit of a prepay allowance
//! before it is served (so a spent allowance is refused, never overdrawn),
//! then settles: a billable answer records its usage event, anything else
//! gives the unit back. Each (key id, nonce) is counted once.

use std::collections::HashMap;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use svc_core::time::UnixMs;

use crate::store::model::{Allowance, DayUsage, UsageEvent, UsageKind};
use crate::store::{Store, cf, key};

/// A unit held for a request while it is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    pub company_uuid: String,
    prepay: bool,
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
    /// `Ok(None)` from `Reserve` means the allowance is spent.
    Reserve {
        company_uuid: String,
        reply: RpcReplyPort<Result<Option<Reservation>, String>>,
    },
    Settle {
        reservation: Reservation,
        event: Option<UsageEvent>,
        reply: RpcReplyPort<Result<Settled, String>>,
    },
    /// Gives back a unit whose request ended without a bill.
    Release {
        reservation: Reservation,
    },
    SetAllowance {
        allowance: Allowance,
        reply: RpcReplyPort<Result<(), String>>,
    },
    Usage {
        company_uuid: String,
        from_day: String,
        to_day: String,
        reply: RpcReplyPort<Result<UsageReport, String>>,
    },
}

pub struct Billing;

pub struct BillingState {
    store: Store,
    /// Units reserved by requests being served, per prepay company.
    reserved: HashMap<String, i64>,
}

fn usage_key(key_id: &str, nonce: &str) -> Vec<u8> {
    key(&[key_id.as_bytes(), nonce.as_bytes()])
}

fn day_key(company_uuid: &str, day: &str) -> Vec<u8> {
    key(&[company_uuid.as_bytes(), day.as_bytes()])
}

/// The UTC day of a moment, `YYYY-MM-DD`.
pub fn day_of(at: UnixMs) -> String {
    at.to_rfc3339_secs()[..10].to_owned()
}

impl BillingState {
    fn allowance(&self, company_uuid: &str) -> Result<Option<Allowance>, String> {
        self.store.get::<Allowance>(cf::ALLOWANCES, company_uuid.as_bytes()).map_err(|e| e.to_string())
    }

    fn reserve(&mut self, company_uuid: String) -> Result<Option<Reservation>, String> {
        let prepay = match self.allowance(&company_uuid)? {
            Some(a) if a.prepay => {
                let held = self.reserved.entry(company_uuid.clone()).or_default();
                if a.remaining - *held <= 0 {
                    return Ok(None);
                }
                *held += 1;
                true
            }
            _ => false,
        };
        Ok(Some(Reservation { company_uuid, prepay }))
    }

    fn release(&mut self, reservation: &Reservation) {
        if reservation.prepay
            && let Some(held) = self.reserved.get_mut(&reservation.company_uuid)
        {
            *held -= 1;
            if *held <= 0 {
                self.reserved.remove(&reservation.company_uuid);
            }
        }
    }

    fn settle(&mut self, reservation: Reservation, event: Option<UsageEvent>) -> Result<Settled, String> {
        self.release(&reservation);
        let Some(event) = event else { return Ok(Settled::Released) };
        let k = usage_key(&event.key_id, &event.nonce);
        if self.store.contains(cf::USAGE, &k).map_err(|e| e.to_string())? {
            return Ok(Settled::AlreadyBilled);
        }
        let day = day_key(&event.company_uuid, &day_of(event.at));
        let mut counts: DayUsage = self.store.get(cf::USAGE_DAYS, &day).map_err(|e| e.to_string())?.unwrap_or_default();
        match event.kind {
            UsageKind::Search => counts.searches += 1,
            UsageKind::Fetch => counts.fetches += 1,
        }
        let mut batch = self.store.batch();
        batch.put(cf::USAGE, &k, &event);
        batch.put(cf::USAGE_DAYS, &day, &counts);
        if reservation.prepay
            && let Some(mut allowance) = self.allowance(&event.company_uuid)?
        {
            allowance.remaining -= 1;
            batch.put(cf::ALLOWANCES, event.company_uuid.as_bytes(), &allowance);
        }
        // Not synced: a crash of the process keeps it (the WAL is written);
        // the request is answered only after this returns.
        batch.commit_unsynced().map_err(|e| e.to_string())?;
        Ok(Settled::Billed)
    }

    fn usage(&self, company_uuid: &str, from_day: &str, to_day: &str) -> Result<UsageReport, String> {
        let prefix = key(&[company_uuid.as_bytes(), b""]);
        let from = day_key(company_uuid, from_day);
        let rows = self.store.scan::<DayUsage>(cf::USAGE_DAYS, &prefix, Some(&from), 400).map_err(|e| e.to_string())?;
        let days = rows
            .into_iter()
            .map(|(k, counts)| (String::from_utf8_lossy(&k[prefix.len()..]).into_owned(), counts))
            .take_while(|(day, _)| day.as_str() <= to_day)
            .collect();
        Ok(UsageReport { days, allowance: self.allowance(company_uuid)? })
    }
}

impl Actor for Billing {
    type Msg = BillingMsg;
    type State = BillingState;
    type Arguments = Store;

    async fn pre_start(&self, _me: ActorRef<BillingMsg>, store: Store) -> Result<BillingState, ActorProcessingErr> {
        Ok(BillingState { store, reserved: HashMap::new() })
    }

    async fn handle(
        &self,
        _me: ActorRef<BillingMsg>,
        msg: BillingMsg,
        state: &mut BillingState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            BillingMsg::Reserve { company_uuid, reply } => {
                let _ = reply.send(state.reserve(company_uuid));
            }
            BillingMsg::Settle { reservation, event, reply } => {
                let _ = reply.send(state.settle(reservation, event));
            }
            BillingMsg::Release { reservation } => state.release(&reservation),
            BillingMsg::SetAllowance { allowance, reply } => {
                let mut batch = state.store.batch();
                batch.put(cf::ALLOWANCES, allowance.company_uuid.as_bytes(), &allowance);
                let _ = reply.send(batch.commit().map_err(|e| e.to_string()));
            }
            BillingMsg::Usage { company_uuid, from_day, to_day, reply } => {
                let _ = reply.send(state.usage(&company_uuid, &from_day, &to_day));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> (BillingState, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        (BillingState { store, reserved: HashMap::new() }, dir)
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

    // rule: R1.26
    #[test]
    fn a_key_and_nonce_is_counted_once() {
        let (mut billing, _dir) = state();
        let at = UnixMs(1_795_000_000_000);
        let first = billing.reserve("c".into()).unwrap().unwrap();
        assert_eq!(billing.settle(first, Some(event("n1", at))).unwrap(), Settled::Billed);
        let again = billing.reserve("c".into()).unwrap().unwrap();
        assert_eq!(billing.settle(again, Some(event("n1", at.plus(5)))).unwrap(), Settled::AlreadyBilled);
        let report = billing.usage("c", "2000-01-01", "2999-12-31").unwrap();
        assert_eq!(report.days, vec![(day_of(at), DayUsage { searches: 1, fetches: 0 })]);
    }

    // rule: R1.27
    #[test]
    fn a_prepay_allowance_is_never_overdrawn_by_requests_in_flight() {
        let (mut billing, _dir) = state();
        billing
            .store
            .put(cf::ALLOWANCES, b"c", &Allowance { company_uuid: "c".into(), prepay: true, remaining: 2 })
            .unwrap();
        let a = billing.reserve("c".into()).unwrap().expect("first unit");
        let b = billing.reserve("c".into()).unwrap().expect("second unit");
        assert_eq!(billing.reserve("c".into()).unwrap(), None, "two units, both held");
        assert_eq!(billing.settle(a, None).unwrap(), Settled::Released);
        let c = billing.reserve("c".into()).unwrap().expect("the released unit is free again");
        let at = UnixMs(1_795_000_000_000);
        billing.settle(b, Some(event("n1", at))).unwrap();
        billing.settle(c, Some(event("n2", at))).unwrap();
        assert_eq!(billing.reserve("c".into()).unwrap(), None, "spent");
        assert_eq!(billing.allowance("c").unwrap().unwrap().remaining, 0);
    }
}
