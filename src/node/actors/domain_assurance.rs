//! Domain assurance (`svc_core::assurance`), at home: on a schedule it looks
//! up each domain a live business file lists, keeps what it found
//! (replicated, so every region's verify page shows it), and suspends a
//! business's endpoints when assurance is lost, lifting only the
//! suspensions it made (an operator's own stay until the operator lifts
//! them).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use hickory_resolver::Resolver;
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::RData;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use svc_core::assurance::{self, DomainAssurance, DomainState, Lookup};
use svc_core::ids::RecordType;
use svc_core::time::UnixMs;

use crate::actors::error::ActorError;
use crate::actors::mailbox::Mailbox;
use crate::actors::publisher::PublisherMsg;
use crate::registry::Registry;
use crate::replication::Change;
use svc_clock::SharedClock;
use svc_store::model::{EndpointsSuspension, RecordState};
use svc_store::{Store, cf, keys};

/// The reason on a suspension this actor made, and so may lift.
pub const LOST: &str = "domain_assurance_lost";
/// Lookups in flight at once.
const AT_ONCE: usize = 16;

pub enum DomainAssuranceMsg {
    Tick,
    /// A pass now; answers what it found.
    CheckNow(RpcReplyPort<Result<Pass, ActorError>>),
    Observe(RpcReplyPort<Pass>),
}

/// What a pass found, by domain state, and the endpoints it left suspended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pass {
    pub businesses: u64,
    pub confirmed: u64,
    pub refused: u64,
    pub expired: u64,
    pub unchecked: u64,
    pub suspended: u64,
}

#[derive(Clone)]
pub struct DomainAssuranceArgs {
    pub store: Store,
    pub clock: SharedClock,
    pub publisher: Mailbox<PublisherMsg>,
    pub resolver: Arc<Resolver<TokioRuntimeProvider>>,
}

pub struct DomainAssuranceState {
    args: DomainAssuranceArgs,
    registry: Registry,
    last: Pass,
}

#[derive(Clone)]
pub struct DomainAssuranceActor;

/// The domains the business's live business files list.
fn listed_domains(registry: &Registry, business_uuid: &str) -> Result<BTreeSet<String>, ActorError> {
    let mut domains = BTreeSet::new();
    let kind = RecordType::BusinessFiles.name();
    for id in registry.all_catalogue_ids(business_uuid, kind)? {
        let Some(head) = registry.record_head(&id)?.filter(|h| h.state == RecordState::Live) else { continue };
        let Some(version) = registry.record_version(&id, head.live_generation)? else { continue };
        domains.extend(svc_core::records::endpoint_domains(&version.bytes));
    }
    Ok(domains)
}

async fn look_up(resolver: &Resolver<TokioRuntimeProvider>, domain: &str) -> Lookup {
    match resolver.txt_lookup(assurance::query_name(domain)).await {
        // A TXT record's character-strings are one value, joined.
        Ok(found) => Lookup::Txt(
            found
                .answers()
                .iter()
                .filter_map(|record| match &record.data {
                    RData::TXT(txt) => Some(txt.txt_data.iter().map(|part| String::from_utf8_lossy(part)).collect()),
                    _ => None,
                })
                .collect(),
        ),
        Err(e) if e.is_nx_domain() || e.is_no_records_found() => Lookup::NoRecord,
        Err(e) => {
            tracing::info!(domain, error = %e, "domain assurance lookup unanswered");
            Lookup::Unanswered
        }
    }
}

impl DomainAssuranceState {
    async fn pass(&mut self) -> Result<Pass, ActorError> {
        let now = self.args.clock.now();
        let mut pass = Pass::default();
        for business in self.registry.businesses()? {
            let domains = listed_domains(&self.registry, &business.uuid)?;
            let kept = self.registry.domains(&business.uuid)?;
            if domains.is_empty() && kept.is_empty() {
                continue;
            }
            pass.businesses += 1;
            let mut judged = Vec::with_capacity(domains.len());
            let domains: Vec<String> = domains.into_iter().collect();
            for batch in domains.chunks(AT_ONCE) {
                let lookups = futures::future::join_all(batch.iter().map(|d| look_up(&self.args.resolver, d))).await;
                for (domain, lookup) in batch.iter().zip(lookups) {
                    judged.push(assurance::judge(kept.get(domain), domain, &lookup, &business.uuid, now));
                }
            }
            for d in &judged {
                match d.state {
                    DomainState::Confirmed => pass.confirmed += 1,
                    DomainState::Refused => pass.refused += 1,
                    DomainState::Expired => pass.expired += 1,
                    DomainState::Unchecked => pass.unchecked += 1,
                }
            }
            let live = assurance::endpoints_live(&judged);
            pass.suspended += u64::from(!live);
            // One business's write refused (changed meanwhile) leaves the rest.
            if let Err(e) = self.keep(&business.uuid, &kept, &judged, live, now).await {
                tracing::info!(business = %business.uuid, error = %e, "domain assurance judged again next pass");
            }
        }
        self.last = pass.clone();
        Ok(pass)
    }

    /// Writes what changed: each domain's state, and the suspension.
    async fn keep(
        &self,
        business_uuid: &str,
        kept: &BTreeMap<String, DomainAssurance>,
        judged: &[DomainAssurance],
        live: bool,
        now: UnixMs,
    ) -> Result<(), ActorError> {
        let mut change = Change::new();
        for d in judged.iter().filter(|d| kept.get(&d.domain) != Some(*d)) {
            change.put(cf::DOMAINS, &keys::domain(business_uuid, &d.domain), d);
        }
        for gone in kept.keys().filter(|k| !judged.iter().any(|d| d.domain == **k)) {
            change.delete(cf::DOMAINS, &keys::domain(business_uuid, gone));
        }
        let suspension = self.registry.endpoints_suspension(business_uuid)?;
        // Judged on what was read: an operator's change meanwhile fails
        // this write, and the next pass judges again.
        match &suspension {
            Some(s) => change.require_unchanged(cf::ENDPOINTS, business_uuid.as_bytes(), s),
            None => change.require_absent(cf::ENDPOINTS, business_uuid.as_bytes()),
        };
        match (&suspension, live) {
            (None, false) => {
                let lost = judged.iter().filter(|d| !assurance::endpoints_live(std::slice::from_ref(*d)));
                let names: Vec<&str> = lost.map(|d| d.domain.as_str()).collect();
                let suspension = EndpointsSuspension {
                    business_uuid: business_uuid.to_owned(),
                    since: now,
                    reason: format!("{LOST}: {}", names.join(", ")),
                };
                change.put(cf::ENDPOINTS, business_uuid.as_bytes(), &suspension);
            }
            (Some(s), true) if s.reason.starts_with(LOST) => {
                change.delete(cf::ENDPOINTS, business_uuid.as_bytes());
            }
            _ => {}
        }
        if change.replicated_len() == 0 {
            return Ok(());
        }
        self.args.publisher.call(|reply| PublisherMsg::Apply { change, now, reply }).await??;
        Ok(())
    }
}

impl Actor for DomainAssuranceActor {
    type Msg = DomainAssuranceMsg;
    type State = DomainAssuranceState;
    type Arguments = DomainAssuranceArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<DomainAssuranceMsg>,
        args: DomainAssuranceArgs,
    ) -> Result<DomainAssuranceState, ActorProcessingErr> {
        let registry = Registry::new(args.store.clone());
        Ok(DomainAssuranceState { args, registry, last: Pass::default() })
    }

    async fn handle(
        &self,
        _me: ActorRef<DomainAssuranceMsg>,
        msg: DomainAssuranceMsg,
        state: &mut DomainAssuranceState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            DomainAssuranceMsg::Tick => {
                if let Err(e) = state.pass().await {
                    tracing::warn!(error = %e, "domain assurance pass failed; tried again at the next");
                }
            }
            DomainAssuranceMsg::CheckNow(reply) => {
                let _ = reply.send(state.pass().await);
            }
            DomainAssuranceMsg::Observe(reply) => {
                let _ = reply.send(state.last.clone());
            }
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for DomainAssuranceMsg {
    type Seen = Pass;

    fn observe(reply: ractor::RpcReplyPort<Pass>) -> Self {
        DomainAssuranceMsg::Observe(reply)
    }

    fn describe(seen: Pass) -> serde_json::Value {
        serde_json::json!({"businesses": seen.businesses, "confirmed": seen.confirmed, "refused": seen.refused,
            "expired": seen.expired, "unchecked": seen.unchecked, "suspended": seen.suspended})
    }
}
