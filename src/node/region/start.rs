//! Bringing a region up: its store and keys, then each actor in the order
//! the others need them, each under the region's supervisor with a `Spec`
//! that starts it again from the store if it fails.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use ractor::Actor;
use tokio::sync::Notify;

use crate::actors::ad_feed::{AdFeed, AdFeedArgs};
use crate::actors::ad_reservations::{AdArgs, AdMsg, AdReservations, AdRole};
use crate::actors::analytics::{Analytics, AnalyticsArgs, AnalyticsMsg};
use crate::actors::billing::{Billing, BillingArgs, BillingMsg, BillingRole};
use crate::actors::claim_uplink::{ClaimUplink, ClaimUplinkArgs};
use crate::actors::domain_assurance::{DomainAssuranceActor, DomainAssuranceArgs, DomainAssuranceMsg};
use crate::actors::index_shard::IndexShard;
use crate::actors::indexer::{Indexer, IndexerArgs, IndexerMsg};
use crate::actors::mailbox::Mailbox;
use crate::actors::nonce_feed::{NonceFeed, NonceFeedArgs};
use crate::actors::nonce_store::{NonceArgs, NonceMsg, NonceRole, NonceStore};
use crate::actors::publisher::{Publisher, PublisherArgs, PublisherMsg};
use crate::actors::push_worker::{PushWorker, PushWorkerArgs};
use crate::actors::receipt_folder::{ReceiptFolder, ReceiptFolderArgs, ReceiptFolderMsg};
use crate::actors::receipt_log::{ReceiptLog, ReceiptLogArgs};
use crate::actors::replicator::{ReplicationStatus, Replicator, ReplicatorArgs, ReplicatorMsg};
use crate::actors::retention::{AtHome, Retention, RetentionArgs, RetentionMsg};
use crate::actors::transparency_log::{TransparencyLog, TransparencyLogArgs, TransparencyLogMsg};
use crate::actors::uplink::{Uplink, UplinkArgs, UplinkMsg};
use crate::actors::witnesses::{Witness, Witnesses, WitnessesArgs, WitnessesMsg};
use crate::blocklist::Blocklist;
use crate::config::{NodeConfig, Role};
use crate::limits::Limits;
use crate::outbound::Outbound;
use crate::region::key_view::{Certifier, KeyView};
use crate::registry::Registry;
use crate::replication::exchange;
use crate::replication::link::HomeLink;
use crate::service_keys::ServiceKeys;
use crate::transparency::LogView;
use svc_clock::SharedClock;
use svc_store::Store;

use super::failures::Failures;
use super::roster::{Roster, Stage};
use super::supervisor::{Spec, Supervised, Supervisor, supervise};
use super::{HomeActors, Region, Replica};

/// Why a region did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{}: {source}", path.display())]
    Io { path: std::path::PathBuf, source: std::io::Error },
    #[error("{addr}: {source}")]
    Listen { addr: std::net::SocketAddr, source: std::io::Error },
    #[error("the store at {} does not open: {source}", path.display())]
    Store { path: std::path::PathBuf, source: svc_store::StoreError },
    #[error(transparent)]
    Stored(#[from] svc_store::StoreError),
    /// The configuration does not describe a region that can start.
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Blocklist(#[from] crate::blocklist::BlocklistError),
    #[error(transparent)]
    AsTable(#[from] crate::as_table::AsTableError),
    #[error(transparent)]
    Index(#[from] svc_search::SearchError),
    #[error(transparent)]
    HomeUrl(#[from] svc_client::ClientError),
    #[error(transparent)]
    Spawn(#[from] super::supervisor::SpawnError),
    #[error("the supervisor did not start: {0}")]
    Supervisor(#[from] ractor::SpawnErr),
    #[error(transparent)]
    Actor(#[from] crate::actors::error::ActorError),
    #[error(transparent)]
    Mailbox(#[from] crate::actors::mailbox::MailboxError),
    #[error(transparent)]
    KeySet(#[from] crate::region::key_view::KeySetError),
    #[error(transparent)]
    Keys(#[from] crate::service_keys::KeysError),
    /// A token too weak to guard what it guards.
    #[error(transparent)]
    Secrets(#[from] crate::config::ConfigError),
}

/// Starts the actors of a node over its store, without listening.
pub async fn start(config: NodeConfig, clock: SharedClock) -> Result<Region, StartError> {
    let store = open_store(&config)?;
    start_over(config, clock, store).await
}

/// Opens (creating it the first time) the node's store, `data_dir/db`.
pub fn open_store(config: &NodeConfig) -> Result<Store, StartError> {
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|source| StartError::Io { path: config.data_dir.clone(), source })?;
    let db = config.data_dir.join("db");
    let memory = svc_store::MemoryBudget { total_bytes: config.store_memory_mib.max(8) << 20 };
    Store::open_migrating(&db, memory, crate::replication::legacy_log_entry)
        .map_err(|source| StartError::Store { path: db, source })
}

/// Starts the actors of a node over its store, opened already (a member
/// of home's group opens it before it leads), without listening.
pub async fn start_over(config: NodeConfig, clock: SharedClock, store: Store) -> Result<Region, StartError> {
    config.check_secrets()?;
    config.check_link_tls()?;
    if svc_core::sandbox::time_of_day(&config.sandbox_republish_at).is_none() {
        return Err(StartError::Config(format!(
            "sandbox_republish_at is {:?}; it is a UTC time of day, HH:MM",
            config.sandbox_republish_at
        )));
    }
    let regions = config.replication.as_ref().map_or(0, |r| r.regions.len());
    if config.role == Role::Home && regions > 0 && config.internal_listen.is_none() {
        return Err(StartError::Config("home names read regions but has no internal_listen for them".into()));
    }
    let io = |path: &std::path::Path| {
        let path = path.to_owned();
        move |source| StartError::Io { path, source }
    };
    let db = config.data_dir.join("db");
    let keys = Arc::new(ServiceKeys::load_or_create(&store, config.key_encryption_key.as_ref())?);
    if config.role == Role::Home
        && let Some(kek) = &config.key_encryption_key
    {
        let wrapped = crate::hosted_seeds::wrap_clear_seeds(&store, kek)?;
        if wrapped > 0 {
            tracing::info!(seeds = wrapped, "hosted seeds wrapped under the key-encryption key");
        }
    }
    let indexed = Registry::index_keys(&store).map_err(|source| StartError::Store { path: db.clone(), source })?;
    if indexed > 0 {
        tracing::info!(keys = indexed, "business keys indexed by business and bearer digest");
    }
    let uploads = config.data_dir.join("uploads");
    std::fs::create_dir_all(&uploads).map_err(io(&uploads))?;
    let blocklist = match &config.url_blocklist {
        Some(b) => Some(Arc::new(Blocklist::new(b)?)),
        None => None,
    };
    let as_table = match &config.ip_to_as_file {
        Some(path) => Some(Arc::new(crate::as_table::AsTable::load(path)?)),
        None => None,
    };
    let failures = Failures::default();
    let (supervisor, _) = Actor::spawn(None, Supervisor, failures.clone()).await?;
    let sup = Supervised { actor: supervisor.clone(), roster: Roster::default() };
    let outbox = match config.role {
        Role::Home => None,
        Role::Read => Some(exchange::outbox(&store)?),
    };
    // The nonce store wakes a region's claim uplink with each claim it writes.
    let claims_wake = Arc::new(Notify::new());
    let (nonce_role, billing_role) = match &outbox {
        None => {
            let lease_ms = config.replication.as_ref().map_or(60_000, |r| r.lease_ms) as i64;
            let feed = exchange::nonce_feed(&store)?;
            (NonceRole::Home { feed }, BillingRole::Home { lease_ms })
        }
        Some(outbox) => (
            NonceRole::Region { claims_out: exchange::claims_out(&store)?, wake: claims_wake.clone() },
            BillingRole::Region { outbox: outbox.clone() },
        ),
    };
    let s = store.clone();
    let per_write = config.answers_per_write;
    // Every second: a busy region expires a few thousand claims a second,
    // and forgetting a minute of them at once held every claim behind it.
    let purge_clock = clock.clone();
    let nonces = supervise(
        &sup,
        Spec::new("nonce_store", Stage::Ledgers, NonceStore, move || {
            Ok(NonceArgs { store: s.clone(), role: nonce_role.clone(), per_write })
        })
        .tick(Duration::from_secs(1), move || NonceMsg::Purge { now: purge_clock.now() }),
    )
    .await?;
    let s = store.clone();
    let mut billing_spec = Spec::new("billing", Stage::Ledgers, Billing, move || {
        Ok(BillingArgs { store: s.clone(), role: billing_role.clone(), per_write })
    });
    if outbox.is_none() {
        let reclaim_clock = clock.clone();
        billing_spec =
            billing_spec.tick(Duration::from_secs(10), move || BillingMsg::Reclaim { now: reclaim_clock.now() });
    }
    let billing = supervise(&sup, billing_spec).await?;
    let s = store.clone();
    let receipts = supervise(
        &sup,
        Spec::new("receipt_log", Stage::Receipts, ReceiptLog, move || {
            Ok(ReceiptLogArgs { store: s.clone(), per_write })
        }),
    )
    .await?;
    let folder_args = {
        let (store, region, clock, outbox) = (store.clone(), config.region.clone(), clock.clone(), outbox.clone());
        move || {
            Ok(ReceiptFolderArgs {
                store: store.clone(),
                region: region.clone(),
                clock: clock.clone(),
                outbox: outbox.clone(),
            })
        }
    };
    let receipt_folder = supervise(
        &sup,
        Spec::new("receipt_folder", Stage::Folder, ReceiptFolder, folder_args)
            .tick(Duration::from_secs(1), || ReceiptFolderMsg::Tick),
    )
    .await?;
    let analytics_args = AnalyticsArgs { store: store.clone(), home: config.role == Role::Home };
    // Often, so each tick's share of the receipts is small: it runs on a
    // worker that also serves searches.
    let analytics = supervise(
        &sup,
        Spec::new("analytics", Stage::Receipts, Analytics, move || Ok(analytics_args.clone()))
            .tick(Duration::from_millis(100), || AnalyticsMsg::Tick),
    )
    .await?;
    let log = LogView::open(store.clone(), crate::transparency::origin(&config.public_authority))?;
    let metrics = crate::metrics::Metrics::default();
    let home = match config.role {
        Role::Home => {
            let ends = HomeEnds { log: &log, blocklist: &blocklist, uploads: &uploads, metrics: &metrics };
            Some(start_home(&sup, &config, &store, &keys, &clock, ends).await?)
        }
        Role::Read => None,
    };
    if config.ads.take_rate_bps > svc_core::ads::MAX_TAKE_BPS {
        return Err(StartError::Config(format!("ads.take_rate_bps is 0 to {}", svc_core::ads::MAX_TAKE_BPS)));
    }
    let ad_role = match (&home, &outbox) {
        (Some(home), _) => AdRole::Home {
            region: config.region.clone(),
            publisher: home.publisher.clone(),
            feed: exchange::ad_feed(&store)?,
            take_bps: config.ads.take_rate_bps,
        },
        (None, Some(outbox)) => AdRole::Region { region: config.region.clone(), outbox: outbox.clone() },
        (None, None) => return Err(StartError::Config("a read region without an outbox".into())),
    };
    let ad_args = AdArgs { store: store.clone(), role: ad_role };
    let ad_clock = clock.clone();
    let ads = supervise(
        &sup,
        Spec::new("ad_reservations", Stage::Ads, AdReservations, move || Ok(ad_args.clone()))
            .tick(Duration::from_secs(1), move || AdMsg::Tick { now: ad_clock.now() }),
    )
    .await?;
    let replica = match config.role {
        Role::Home => None,
        Role::Read => {
            let ends = LocalEnds { nonces: &nonces, ads: &ads, claims_wake };
            Some(start_replica(&sup, &config, &store, &clock, ends, outbox.clone()).await?)
        }
    };
    let mut peers = std::collections::HashMap::new();
    let trust = config.trust()?;
    for peer in &config.peers {
        let transport = svc_client::transport::Transport::http2(&peer.url, &trust)
            .map_err(|e| StartError::Config(format!("peer {}: {e}", peer.name)))?;
        peers.insert(peer.name.clone(), transport);
    }
    let Indexing { index, indexer, shards: index_shards } = start_indexing(&sup, &config, &store, &clock).await?;
    let retention_args = RetentionArgs {
        store: store.clone(),
        clock: clock.clone(),
        shards: index_shards.clone(),
        home: home.as_ref().map(|h| AtHome {
            publisher: h.publisher.clone(),
            uploads: uploads.clone(),
            environment: config.environment,
        }),
    };
    let retention = supervise(
        &sup,
        Spec::new("retention", Stage::Retention, Retention, move || Ok(retention_args.clone()))
            .tick(Duration::from_millis(config.retention_every_ms.max(1)), || RetentionMsg::Tick)
            .period(LONG_WORK),
    )
    .await?;
    let limits = Arc::new(Limits::new(config.retrieval_limits, config.verify_per_second));
    let certifier = match (&home, outbox) {
        (Some(home), _) => {
            let valid_from = ServiceKeys::created_at(&store, clock.now())?;
            let now = clock.now();
            home.publisher.call(|reply| PublisherMsg::FoundKeySet { valid_from, now, reply }).await??;
            home.publisher.call(|reply| PublisherMsg::RenewKeyDirectory { now, reply }).await??;
            Certifier::Publisher(home.publisher.clone())
        }
        (None, Some(outbox)) => Certifier::Outbox(outbox),
        (None, None) => return Err(StartError::Config("a read region without an outbox".into())),
    };
    let key_set = KeyView::open(store.clone(), &config.region, &keys, certifier)?;
    // Home certifies its receipt key now; a region's request waits in its
    // outbox until home takes it.
    key_set.ask_certification(clock.now()).await?;
    let sandbox = config.environment.is_sandbox();
    let images = crate::image_fetch::ImageFetcher::new(&config.ad_images, bot(&config, &keys, &clock), sandbox)
        .map_err(|e| StartError::Config(format!("ad_images: {e}")))?;
    let started_at = clock.now();
    let watchdog = super::roster::watch(sup.roster.clone(), failures.clone(), WATCH_EVERY);
    Ok(Region {
        supervisor,
        roster: sup.roster,
        watchdog: Arc::new(watchdog.abort_handle()),
        failures,
        config: Arc::new(config),
        registry: Registry::new(store.clone()),
        store,
        keys,
        clock,
        home,
        replica,
        nonces,
        blocklist,
        as_table,
        uploads,
        index: Arc::new(index),
        indexer,
        index_shards,
        limits,
        ceremonies: Arc::default(),
        verify_pages: Arc::default(),
        link_replays: Arc::new(std::sync::Mutex::new(svc_core::link::Replays::new(started_at.0))),
        serve_times: Arc::default(),
        sponsorships: Arc::default(),
        region_positions: Arc::default(),
        jwk_keys: Arc::default(),
        signed_statements: Arc::default(),
        billing,
        receipts,
        ads,
        receipt_folder,
        analytics,
        retention,
        key_set,
        log,
        metrics,
        traces: Arc::default(),
        peers: Arc::new(peers),
        images: Arc::new(images),
        lease_asks: Arc::default(),
        ad_versions: Arc::default(),
    })
}

/// A node's search index and the actors that keep it: a writer per shard,
/// and the indexer that applies the store's log to them.
struct Indexing {
    index: svc_search::SearchIndex,
    indexer: Mailbox<IndexerMsg>,
    shards: Vec<Mailbox<crate::actors::index_shard::IndexShardMsg>>,
}

/// Opens the index under `data_dir/index` and starts its actors under
/// `sup`; the indexer goes on from where the store says it got.
async fn start_indexing(
    sup: &Supervised,
    config: &NodeConfig,
    store: &Store,
    clock: &SharedClock,
) -> Result<Indexing, StartError> {
    let index_dir = config.data_dir.join("index");
    if svc_search::prepare_layout(&index_dir, config.shards_per_collection)? {
        crate::actors::indexer::forget_applied(store)?;
    }
    let (index, openers) =
        svc_search::open_all(&index_dir, config.shards_per_collection, config.index_rows_memory_mib << 20)?;
    let mut by_shard = std::collections::HashMap::new();
    let mut shards = Vec::new();
    for (collection, n, opener) in openers {
        let name = format!("index_shard/{}/{n}", collection.name());
        // A failed shard is reopened from its directory, like any actor.
        let writer = move || {
            opener.writer().map_err(|e| super::supervisor::SpawnError(format!("opening the index writer: {e}")))
        };
        let shard = supervise(sup, Spec::new(name, Stage::IndexShards, IndexShard, writer).period(LONG_WORK)).await?;
        shards.push(shard.clone());
        by_shard.insert((collection, n), shard);
    }
    let indexer_args = {
        let (store, per_collection, clock) = (store.clone(), config.shards_per_collection.max(1), clock.clone());
        move || {
            let (store, shards, clock) = (store.clone(), by_shard.clone(), clock.clone());
            Ok(IndexerArgs { store, clock, shards, shards_per_collection: per_collection })
        }
    };
    let indexer = supervise(
        sup,
        Spec::new("indexer", Stage::Indexer, Indexer, indexer_args)
            .period(LONG_WORK)
            // Woken by each write to the log (`indexer::ring_on_log_writes`);
            // the tick only backs that up, and applies a certificate status
            // that takes effect later.
            .tick(Duration::from_millis(100), || IndexerMsg::Tick),
    )
    .await?;
    Ok(Indexing { index, indexer, shards })
}

/// The search index of a member of home's group that does not lead, kept
/// by its own indexer from the log the member applies, under a supervisor
/// of its own: once elected, the member's region finds it current rather
/// than indexing everything since it last led.
pub struct StandbyIndex {
    supervisor: ractor::ActorRef<super::supervisor::SupervisorMsg>,
    roster: Roster,
}

impl StandbyIndex {
    pub async fn start(config: &NodeConfig, store: &Store, clock: &SharedClock) -> Result<StandbyIndex, StartError> {
        let (supervisor, _) = Actor::spawn(None, Supervisor, Failures::default()).await?;
        let sup = Supervised { actor: supervisor.clone(), roster: Roster::default() };
        match start_indexing(&sup, config, store, clock).await {
            Ok(_) => Ok(StandbyIndex { supervisor, roster: sup.roster }),
            Err(e) => {
                supervisor.stop(None);
                Err(e)
            }
        }
    }

    /// Stops the indexer, then the shards' writers, and waits until they
    /// let go of the index (the region opens it next).
    pub async fn stop(self) {
        let wait = std::time::Duration::from_secs(10);
        let _ = ractor::call!(self.supervisor, super::supervisor::SupervisorMsg::Stopping);
        self.roster.stop(wait).await;
        let _ = self.supervisor.stop_and_wait(None, Some(wait)).await;
    }
}

/// The writers only home runs: the publisher, the push worker and the
/// transparency log's sequencer.
async fn start_home(
    sup: &Supervised,
    config: &NodeConfig,
    store: &Store,
    keys: &Arc<ServiceKeys>,
    clock: &SharedClock,
    ends: HomeEnds<'_>,
) -> Result<HomeActors, StartError> {
    let HomeEnds { log, blocklist, uploads, metrics } = ends;
    let directory = crate::key_set::directory::Scope {
        environment: config.environment,
        verify_base: config.verify_base_url.clone(),
    };
    let publisher_args = PublisherArgs { store: store.clone(), keys: keys.clone(), directory };
    let publisher = supervise(
        sup,
        Spec::new("publisher", Stage::Publisher, Publisher, move || Ok(publisher_args.clone())).period(LONG_WORK),
    )
    .await?;
    let worker_args = PushWorkerArgs {
        store: store.clone(),
        publisher: publisher.clone(),
        clock: clock.clone(),
        blocklist: blocklist.clone(),
        uploads: uploads.to_owned(),
    };
    let push_worker = supervise(
        sup,
        Spec::new("push_worker", Stage::Pushes, PushWorker, move || Ok(worker_args.clone())).period(LONG_WORK),
    )
    .await?;
    let log_args = TransparencyLogArgs {
        last_run: None,
        log: log.clone(),
        publisher: publisher.clone(),
        keys: keys.clone(),
        clock: clock.clone(),
        every_ms: config.log_sequence_every_ms.max(1) as i64,
    };
    let transparency_log = supervise(
        sup,
        Spec::new("transparency_log", Stage::LogWriters, TransparencyLog, move || Ok(log_args.clone()))
            .tick(Duration::from_secs(1), || TransparencyLogMsg::Tick)
            .period(LONG_WORK),
    )
    .await?;
    let domain_assurance = match &config.domain_assurance {
        Some(settings) => {
            let resolver = Arc::new(crate::blocklist::resolver(settings.resolver, settings.timeout_ms, false)?);
            let args = DomainAssuranceArgs {
                store: store.clone(),
                clock: clock.clone(),
                publisher: publisher.clone(),
                resolver,
            };
            let spec = Spec::new("domain_assurance", Stage::LogWriters, DomainAssuranceActor, move || Ok(args.clone()))
                .tick(Duration::from_millis(settings.every_ms.max(1)), || DomainAssuranceMsg::Tick)
                .period(LONG_WORK);
            Some(supervise(sup, spec).await?)
        }
        None => None,
    };
    let witnesses = match config.log_witnesses.witness.as_slice() {
        [] => None,
        configured => {
            if configured.len() > crate::transparency::MAX_WITNESSES {
                return Err(StartError::Config(format!(
                    "log_witnesses: at most {} witnesses",
                    crate::transparency::MAX_WITNESSES
                )));
            }
            let witnesses: Vec<Witness> = configured
                .iter()
                .map(Witness::from_config)
                .collect::<Result<_, _>>()
                .map_err(|e| StartError::Config(format!("log_witnesses: {e}")))?;
            let client = Outbound::new(config.log_witnesses.extra_roots_pem.as_deref(), Some(bot(config, keys, clock)))
                .map_err(|e| StartError::Config(format!("log_witnesses: {e}")))?;
            let args = WitnessesArgs {
                log: log.clone(),
                publisher: publisher.clone(),
                clock: clock.clone(),
                witnesses: Arc::new(witnesses),
                client: Arc::new(client),
                metrics: metrics.clone(),
            };
            let spec = Spec::new("witnesses", Stage::LogWriters, Witnesses, move || Ok(args.clone()))
                .tick(Duration::from_millis(config.log_witnesses.every_ms.max(1)), || WitnessesMsg::Tick)
                .period(LONG_WORK);
            Some(supervise(sup, spec).await?)
        }
    };
    Ok(HomeActors { publisher, push_worker, transparency_log, domain_assurance, witnesses })
}

/// Who home's outbound requests say they are (Web Bot Auth): the key its
/// directory lists, at the deployment's public origin.
fn bot(config: &NodeConfig, keys: &ServiceKeys, clock: &SharedClock) -> crate::outbound::Bot {
    crate::outbound::Bot {
        key: keys.web_bot_auth.clone(),
        agent: format!("https://{}", config.public_authority),
        clock: clock.clone(),
    }
}

/// What home's writers share with the rest of the region.
struct HomeEnds<'a> {
    log: &'a LogView,
    blocklist: &'a Option<Arc<Blocklist>>,
    uploads: &'a std::path::Path,
    metrics: &'a crate::metrics::Metrics,
}

/// What a read region's link to home delivers to, and what wakes it.
struct LocalEnds<'a> {
    nonces: &'a Mailbox<NonceMsg>,
    ads: &'a Mailbox<AdMsg>,
    /// Woken by the nonce store with each claim it writes.
    claims_wake: Arc<Notify>,
}

/// A read region's link to home over HTTP/2: the replicator pulling the
/// log, the nonce and ad feeds, the claim uplink, and the uplink shipping
/// the outbox.
async fn start_replica(
    sup: &Supervised,
    config: &NodeConfig,
    store: &Store,
    clock: &SharedClock,
    LocalEnds { nonces, ads, claims_wake }: LocalEnds<'_>,
    outbox: Option<exchange::Sequence>,
) -> Result<Replica, StartError> {
    let outbox = outbox.ok_or(StartError::Config("a read region without an outbox".into()))?;
    let settings = config.replication.as_ref().ok_or(StartError::Config("a read region needs [replication]".into()))?;
    if settings.ready_max_lag_ms <= crate::actors::replicator::LONG_POLL_MS {
        return Err(StartError::Config(format!(
            "replication.ready_max_lag_ms must exceed {} ms, the pull's long poll",
            crate::actors::replicator::LONG_POLL_MS
        )));
    }
    let needs = |what: &str| StartError::Config(format!("a read region needs replication.{what}"));
    let home_url = settings.home_url.as_deref().ok_or_else(|| needs("home_url"))?;
    let internal_url = settings.internal_url.as_deref().ok_or_else(|| needs("internal_url"))?;
    let trust = config.trust()?;
    // With TLS, home's internal listener answers only a certificate the
    // deployment's CA issued this region, and must show home's own.
    let link_trust = match config.tls.as_ref().and_then(|tls| Some((tls, tls.ca.as_deref()?))) {
        Some((tls, ca)) => svc_client::trust::Trust::link(ca, &settings.home_region, (&tls.cert, &tls.key))?,
        None => trust.clone(),
    };
    let members = std::iter::once((home_url, internal_url))
        .chain(settings.home_members.iter().map(|m| (m.home_url.as_str(), m.internal_url.as_str())))
        .collect();
    let urls = crate::replication::link::HomeUrls { members, trust: &trust, link_trust: &link_trust };
    let link = Arc::new(HomeLink::new(
        urls,
        settings.token.clone(),
        config.region.clone(),
        settings.lease_units,
        clock.clone(),
    )?);
    let status = Arc::new(ReplicationStatus::default());
    let args =
        ReplicatorArgs { store: store.clone(), link: link.clone(), clock: clock.clone(), status: status.clone() };
    let replicator = supervise(
        sup,
        Spec::new("replicator", Stage::Pullers, Replicator, move || Ok(args.clone())).seen(replicated(&status)),
    )
    .await?;
    let feed_args = NonceFeedArgs { link: link.clone(), nonces: nonces.clone(), status: status.clone() };
    let nonce_feed = supervise(
        sup,
        Spec::new("nonce_feed", Stage::Pullers, NonceFeed, move || Ok(feed_args.clone()))
            .seen(nonce_feed_seen(&status)),
    )
    .await?;
    let ad_feed_args = AdFeedArgs { link: link.clone(), ads: ads.clone(), status: status.clone() };
    let ad_feed = supervise(
        sup,
        Spec::new("ad_feed", Stage::Pullers, AdFeed, move || Ok(ad_feed_args.clone())).seen(ad_feed_seen(&status)),
    )
    .await?;
    let claim_args = ClaimUplinkArgs {
        store: store.clone(),
        link: link.clone(),
        region: config.region.clone(),
        status: status.clone(),
        wake: claims_wake,
    };
    let claim_uplink = supervise(
        sup,
        Spec::new("claim_uplink", Stage::Uplinks, ClaimUplink, move || Ok(claim_args.clone()))
            .seen(reported(&status, |s| &s.claims_reported)),
    )
    .await?;
    let uplink_args =
        UplinkArgs { store: store.clone(), link: link.clone(), region: config.region.clone(), status: status.clone() };
    let uplink = supervise(
        sup,
        Spec::new("uplink", Stage::Uplinks, Uplink, move || Ok(uplink_args.clone()))
            .seen(reported(&status, |s| &s.reported))
            .tick(Duration::from_millis(UPLINK_INTERVAL_MS), || UplinkMsg::Ship),
    )
    .await?;
    Ok(Replica {
        replicator,
        uplink,
        claim_uplink,
        nonce_feed,
        ad_feed,
        status,
        link,
        outbox,
        introductions: Default::default(),
    })
}

/// How often a read region ships its outbox: part of the replay window.
const UPLINK_INTERVAL_MS: u64 = 20;

/// How long an actor whose messages can be long work (a commit, a merge, a
/// chunk of a bulk import, a compaction, a pass of checks) may go without
/// answering before the watchdog restarts it.
const LONG_WORK: Duration = Duration::from_secs(600);

/// How often the watchdog looks over the roster.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// A puller spends its time in a long poll: it shows what it shares.
fn replicated(status: &Arc<ReplicationStatus>) -> impl Fn() -> serde_json::Value + Send + Sync + 'static {
    let status = status.clone();
    move || <ReplicatorMsg as crate::actors::observed::Observed>::describe(status.snapshot())
}

fn nonce_feed_seen(status: &Arc<ReplicationStatus>) -> impl Fn() -> serde_json::Value + Send + Sync + 'static {
    let status = status.clone();
    move || serde_json::json!({"head": status.feed_head.load(Relaxed), "learned": status.feed_learned.load(Relaxed)})
}

fn ad_feed_seen(status: &Arc<ReplicationStatus>) -> impl Fn() -> serde_json::Value + Send + Sync + 'static {
    let status = status.clone();
    move || serde_json::json!({"head": status.ad_feed_head.load(Relaxed), "learned": status.ad_feed_learned.load(Relaxed)})
}

/// An uplink's count of what home took.
fn reported(
    status: &Arc<ReplicationStatus>,
    count: fn(&ReplicationStatus) -> &std::sync::atomic::AtomicU64,
) -> impl Fn() -> serde_json::Value + Send + Sync + 'static {
    let status = status.clone();
    move || serde_json::json!({"reported": count(&status).load(Relaxed)})
}
