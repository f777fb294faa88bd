//! The parts of a region, each a trait a use case names when it takes that
//! part: a use case's signature says what of the region it reads, and the
//! compiler holds it to that. `Region` has every part; a unit test may pass
//! a value with only the parts its use case names.

use std::sync::Arc;

use ractor::ActorRef;
use svc_clock::SharedClock;
use svc_core::problem::Code;
use svc_store::Store;

use super::{HomeActors, Region, RegionPositions, Replica, ServeTimes};
use crate::actors::mailbox::Mailbox;
use crate::actors::nonce_store::NonceMsg;
use crate::blocklist::Blocklist;
use crate::config::NodeConfig;
use crate::error::Error;
use crate::registry::Registry;
use crate::service_keys::ServiceKeys;

/// One trait per part, named `Has` and the part, whose one method reads
/// it; `Region` has each, and so does a reference to what has it.
macro_rules! parts {
    ($($(#[$doc:meta])* $has:ident: $field:ident -> $ty:ty;)*) => {
        $(
            $(#[$doc])*
            pub trait $has: Send + Sync {
                fn $field(&self) -> &$ty;
            }

            impl $has for Region {
                fn $field(&self) -> &$ty {
                    &self.$field
                }
            }

            impl<P: $has> $has for &P {
                fn $field(&self) -> &$ty {
                    (**self).$field()
                }
            }
        )*
    };
}

/// The parts a value other than `Region` holds as fields of the same names
/// (`OwnCopy`): each `Has` trait read from its field.
macro_rules! held_parts {
    ($holder:ty: $($has:ident: $field:ident -> $ty:ty;)*) => {
        $(
            impl $crate::region::parts::$has for $holder {
                fn $field(&self) -> &$ty {
                    &self.$field
                }
            }
        )*
    };
}
pub(crate) use held_parts;

parts! {
    HasSupervisor: supervisor -> ActorRef<super::supervisor::SupervisorMsg>;
    HasFailures: failures -> super::failures::Failures;
    HasRoster: roster -> super::roster::Roster;
    HasConfig: config -> Arc<NodeConfig>;
    HasStore: store -> Store;
    HasRegistry: registry -> Registry;
    HasKeys: keys -> Arc<ServiceKeys>;
    HasClock: clock -> SharedClock;
    HasReplica: replica -> Option<Replica>;
    HasNonces: nonces -> Mailbox<NonceMsg>;
    HasJwkKeys: jwk_keys -> Arc<crate::memo::JwkKeys>;
    HasSignedStatements: signed_statements -> Arc<crate::memo::SignedStatements>;
    HasBlocklist: blocklist -> Option<Arc<Blocklist>>;
    HasAsTable: as_table -> Option<Arc<crate::as_table::AsTable>>;
    HasUploads: uploads -> std::path::PathBuf;
    HasIndex: index -> Arc<svc_search::SearchIndex>;
    HasIndexer: indexer -> Mailbox<crate::actors::indexer::IndexerMsg>;
    HasIndexShards: index_shards -> Vec<Mailbox<crate::actors::index_shard::IndexShardMsg>>;
    HasLimits: limits -> Arc<crate::limits::Limits>;
    HasCeremonies: ceremonies -> Arc<crate::region::open_ceremonies::OpenCeremonies>;
    HasLinkReplays: link_replays -> Arc<std::sync::Mutex<svc_core::link::Replays>>;
    HasVerifyPages: verify_pages -> Arc<crate::page_cache::PageCache>;
    HasServeTimes: serve_times -> Arc<ServeTimes>;
    HasSponsorships: sponsorships -> Arc<super::sponsorships::Sponsorships>;
    HasRegionPositions: region_positions -> Arc<RegionPositions>;
    HasBilling: billing -> Mailbox<crate::actors::billing::BillingMsg>;
    HasReceipts: receipts -> Mailbox<crate::actors::receipt_log::ReceiptLogMsg>;
    HasAds: ads -> Mailbox<crate::actors::ad_reservations::AdMsg>;
    HasReceiptFolder: receipt_folder -> Mailbox<crate::actors::receipt_folder::ReceiptFolderMsg>;
    HasAnalytics: analytics -> Mailbox<crate::actors::analytics::AnalyticsMsg>;
    HasRetention: retention -> Mailbox<crate::actors::retention::RetentionMsg>;
    HasKeySet: key_set -> crate::region::key_view::KeyView;
    HasLog: log -> crate::transparency::LogView;
    HasMetrics: metrics -> crate::metrics::Metrics;
    HasTraces: traces -> Arc<crate::trace::Recent>;
    HasPeers: peers -> Arc<std::collections::HashMap<String, svc_client::transport::Transport>>;
    HasAdVersions: ad_versions -> Arc<super::ad_cache::AdVersions>;
    HasLeaseAsks: lease_asks -> Arc<super::ad_cache::LeaseAsks>;
    HasImages: images -> Arc<crate::image_fetch::ImageFetcher>;
}

/// The home region's writers: present at home alone.
pub trait HasHome: Send + Sync {
    fn home_actors(&self) -> &Option<HomeActors>;

    /// The home region's writers, or 503 at a read region (whose write
    /// routes are forwarded to home before they get here).
    fn home(&self) -> Result<&HomeActors, Error> {
        self.home_actors()
            .as_ref()
            .ok_or_else(|| Error::retry_after(Code::Unavailable, 1_000, "writes are taken by the home region"))
    }
}

impl HasHome for Region {
    fn home_actors(&self) -> &Option<HomeActors> {
        &self.home
    }
}

impl<P: HasHome> HasHome for &P {
    fn home_actors(&self) -> &Option<HomeActors> {
        (**self).home_actors()
    }
}

/// What running a push inline needs.
pub fn push_runner(
    region: &(impl HasStore + HasHome + HasClock + HasBlocklist + HasUploads),
) -> Result<crate::actors::push_worker::PushRunner, Error> {
    Ok(crate::actors::push_worker::PushRunner {
        store: region.store().clone(),
        publisher: region.home()?.publisher.clone(),
        clock: region.clock().clone(),
        blocklist: region.blocklist().clone(),
        uploads: region.uploads().clone(),
    })
}
