//! A region's running parts: its store, keys and actors, held by one
//! `Region`. A use case takes only the parts it reads, each a trait of
//! `parts` that `Region` has. `start` brings them up in order; `stop_actors`
//! lets go of them stage by stage (`roster`).

pub mod ad_cache;
pub mod failures;
pub mod key_view;
pub mod open_ceremonies;
pub mod own_copy;
pub mod parts;
mod positions;
pub mod roster;
mod serve_times;
pub mod sponsorships;
mod start;
pub mod supervisor;

use std::sync::Arc;

use ractor::ActorRef;

use crate::actors::mailbox::Mailbox;

pub use positions::RegionPositions;
pub use serve_times::ServeTimes;
pub use start::{StandbyIndex, StartError, open_store, start, start_over};

use crate::actors::nonce_store::NonceMsg;
use crate::actors::publisher::PublisherMsg;
use crate::actors::push_worker::PushWorkerMsg;
use crate::blocklist::Blocklist;
use crate::config::NodeConfig;
use crate::registry::Registry;
use crate::service_keys::ServiceKeys;
use svc_clock::SharedClock;
use svc_store::Store;

/// Every part of the region, for the surfaces; a use case names the parts
/// it takes (`parts`). Cheap to clone.
#[derive(Clone)]
pub struct Region {
    /// The parent of every actor below, and the failures it could not mend.
    pub supervisor: ActorRef<supervisor::SupervisorMsg>,
    pub failures: failures::Failures,
    /// Every actor of the region, listed once: observed, counted,
    /// watched and stopped from this list.
    pub roster: roster::Roster,
    /// The watchdog over the roster, stopped with the actors.
    pub watchdog: Arc<tokio::task::AbortHandle>,
    pub config: Arc<NodeConfig>,
    pub store: Store,
    pub registry: Registry,
    pub keys: Arc<ServiceKeys>,
    pub clock: SharedClock,
    /// The writers only the home region runs; `None` at a read region.
    pub home: Option<HomeActors>,
    /// A read region's link to home; `None` at home.
    pub replica: Option<Replica>,
    pub nonces: Mailbox<NonceMsg>,
    /// Verifying keys parsed from their JWKs, for the signed routes.
    pub jwk_keys: Arc<crate::memo::JwkKeys>,
    pub signed_statements: Arc<crate::memo::SignedStatements>,
    pub blocklist: Option<Arc<Blocklist>>,
    /// The operator's IP-to-AS table, when one is configured.
    pub as_table: Option<Arc<crate::as_table::AsTable>>,
    /// Where bulk files are kept.
    pub uploads: std::path::PathBuf,
    /// The search index's readers, shared by every search.
    pub index: Arc<svc_search::SearchIndex>,
    pub indexer: Mailbox<crate::actors::indexer::IndexerMsg>,
    pub index_shards: Vec<Mailbox<crate::actors::index_shard::IndexShardMsg>>,
    /// Per-key budgets: catalogue read-back, request rate, query cost.
    pub limits: Arc<crate::limits::Limits>,
    /// Home: the portal's passkey requests open now, for their cap.
    pub ceremonies: Arc<crate::region::open_ceremonies::OpenCeremonies>,
    /// Home: the link request ids seen within their window, so each is
    /// answered once.
    pub link_replays: Arc<std::sync::Mutex<svc_core::link::Replays>>,
    /// Verify pages made this minute (`GET /v1/verify/{record_id}`).
    pub verify_pages: Arc<crate::page_cache::PageCache>,
    /// Each business's serve-time members, between answers.
    pub serve_times: Arc<ServeTimes>,
    /// The records campaigns place as paid rows.
    pub sponsorships: Arc<sponsorships::Sponsorships>,
    /// Home: how far each read region serves.
    pub region_positions: Arc<RegionPositions>,
    pub billing: Mailbox<crate::actors::billing::BillingMsg>,
    pub receipts: Mailbox<crate::actors::receipt_log::ReceiptLogMsg>,
    /// Campaign leases, pools' reserves, and ad confirmations.
    pub ads: Mailbox<crate::actors::ad_reservations::AdMsg>,
    pub receipt_folder: Mailbox<crate::actors::receipt_folder::ReceiptFolderMsg>,
    pub analytics: Mailbox<crate::actors::analytics::AnalyticsMsg>,
    /// Purges deleted records' bytes; at home, expires bulk files.
    pub retention: Mailbox<crate::actors::retention::RetentionMsg>,
    /// The key set home signed, and this region's receipt key in it.
    pub key_set: crate::region::key_view::KeyView,
    /// The transparency log as replicated here.
    pub log: crate::transparency::LogView,
    pub metrics: crate::metrics::Metrics,
    /// The public requests this node served last, by trace.
    pub traces: Arc<crate::trace::Recent>,
    /// The other regions' public ports, for the ad confirmations they own.
    pub peers: Arc<std::collections::HashMap<String, svc_client::transport::Transport>>,
    /// Live ad versions, kept between pools.
    pub ad_versions: Arc<ad_cache::AdVersions>,
    /// Lease asks to home in flight, one per campaign.
    pub lease_asks: Arc<ad_cache::LeaseAsks>,
    /// Fetches the images an ad names when it is saved (home).
    pub images: Arc<crate::image_fetch::ImageFetcher>,
}

/// The actors that write: the home region's alone.
#[derive(Clone)]
pub struct HomeActors {
    pub publisher: Mailbox<PublisherMsg>,
    pub push_worker: Mailbox<PushWorkerMsg>,
    pub transparency_log: Mailbox<crate::actors::transparency_log::TransparencyLogMsg>,
    /// Present when `domain_assurance` is configured.
    pub domain_assurance: Option<Mailbox<crate::actors::domain_assurance::DomainAssuranceMsg>>,
    /// Present when witnesses are configured.
    pub witnesses: Option<Mailbox<crate::actors::witnesses::WitnessesMsg>>,
}

/// A read region's replication: its puller, its progress, and home.
#[derive(Clone)]
pub struct Replica {
    pub replicator: Mailbox<crate::actors::replicator::ReplicatorMsg>,
    pub uplink: Mailbox<crate::actors::uplink::UplinkMsg>,
    pub claim_uplink: Mailbox<crate::actors::claim_uplink::ClaimUplinkMsg>,
    pub nonce_feed: Mailbox<crate::actors::nonce_feed::NonceFeedMsg>,
    pub ad_feed: Mailbox<crate::actors::ad_feed::AdFeedMsg>,
    pub status: Arc<crate::actors::replicator::ReplicationStatus>,
    pub link: Arc<crate::replication::link::HomeLink>,
    /// What the region reports home, written with what it reports.
    pub outbox: crate::replication::exchange::Sequence,
    /// Sandbox keys this region asked home to mark introduced.
    pub introductions: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
}

impl Region {
    /// Stops every actor, stage by stage (`roster::Stage`), and waits until
    /// each has let go of its state (the store, the index writers), so the
    /// node's directories can be opened again.
    pub async fn stop_actors(&self) {
        let wait = std::time::Duration::from_secs(10);
        // Nothing stopping now is frozen or a failure.
        self.watchdog.abort();
        let _ = ractor::call!(self.supervisor, supervisor::SupervisorMsg::Stopping);
        self.roster.stop(wait).await;
        let _ = self.supervisor.stop_and_wait(None, Some(wait)).await;
    }

    /// Stops the actor named for good, without counting it a failure, and
    /// answers once it has stopped; false when no actor has that name.
    pub async fn retire(&self, name: &str) -> bool {
        let name = name.to_owned();
        match ractor::call!(self.supervisor, |reply| supervisor::SupervisorMsg::Retire { name, reply }) {
            Ok(Some(cell)) => {
                let _ = cell.stop_and_wait(None, Some(std::time::Duration::from_secs(10))).await;
                true
            }
            _ => false,
        }
    }
}
