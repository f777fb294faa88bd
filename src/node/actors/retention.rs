//! Retention: how long the node keeps what it holds. Every node purges a
//! deleted record's bytes from each copy it has (the log entries written
//! before the delete, home's push results, the store's files, the index's
//! files) once its index has dropped the record; home also deletes bulk
//! files 7 days after their upload address was made, signs the key
//! directory again when a certificate status issued for later has taken
//! effect, deletes the portal's expired passkey requests, sessions and
//! invitations, and in the sandbox removes an AI company's data 90 days after
//! its last use (R1.42), every node then forgetting its receipts, and a
//! business's a caller made (its records deleted as a delete is, purged at
//! every node; then its keys, mandates, people, campaigns and certificate).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use svc_core::time::{DAY, UnixMs};

use crate::actors::error::ActorError;
use crate::actors::index_shard::IndexShardMsg;
use crate::actors::mailbox::Mailbox;
use crate::actors::publisher::PublisherMsg;
use crate::registry::Registry;
use crate::replication::Change;
use crate::replication::purge::{Pending, sweep};
use svc_clock::SharedClock;
use svc_store::model::{ExpiredCaller, Person, PersonRef, Purge, PushLeaf, RecordVersion, UploadRecord, UsageEvent};
use svc_store::{Store, be, cf, from_be, keys};

/// Bulk files are kept at most this long (P8.13).
pub const BULK_FILE_KEPT_MS: i64 = 7 * DAY;
/// Deletes purged in one pass; the rest wait for the next.
const PURGES_PER_PASS: usize = 10_000;
/// Upload records looked at in one pass; the next pass goes on from there.
const UPLOADS_PER_PASS: usize = 10_000;
/// An expiring business's records deleted in one pass, and its entries of
/// one family removed in one change; the next pass goes on.
const EXPIRING_PER_PASS: usize = 1_000;
/// Campaigns looked at to find an expiring business's.
const CAMPAIGNS_SCANNED: usize = 100_000;

/// Families keyed by business uuid first: an expiring business's own.
const BY_BUSINESS: &[svc_store::Named] = &[
    cf::CERTIFICATES.named(),
    cf::CUSTODY.named(),
    cf::AI_POLICIES.named(),
    cf::BLOCKS.named(),
    cf::DOMAINS.named(),
    cf::FRESHNESS.named(),
    cf::PEOPLE.named(),
    cf::ATTEMPTS.named(),
    cf::ANALYTICS.named(),
    cf::NOTICES_SEEN.named(),
];
/// Families keyed by a key id first: an expiring business's keys' own.
const BY_KEY: &[svc_store::Named] = &[cf::MANDATES.named(), cf::SEQS.named(), cf::IDEMPOTENCY.named()];

pub enum RetentionMsg {
    Tick,
    Observe(RpcReplyPort<RetentionSnapshot>),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionSnapshot {
    /// The log sequence of the last delete purged here.
    pub purged_through: u64,
    pub records_purged: u64,
    pub entries_rewritten: u64,
    pub bulk_files_expired: u64,
    /// Sandbox callers whose data expired (home), and whose receipts this
    /// node forgot.
    pub callers_expired: u64,
    pub receipts_forgotten: u64,
    /// Sandbox businesses a caller made whose data expired (home).
    pub businesses_expired: u64,
}

/// Home's part: the one writer of its own column families, and the bulk
/// files' folder.
#[derive(Clone)]
pub struct AtHome {
    pub publisher: Mailbox<PublisherMsg>,
    pub uploads: PathBuf,
    pub environment: svc_store::model::Environment,
}

#[derive(Clone)]
pub struct RetentionArgs {
    pub store: Store,
    pub clock: SharedClock,
    pub shards: Vec<Mailbox<IndexShardMsg>>,
    pub home: Option<AtHome>,
}

pub struct RetentionState {
    args: RetentionArgs,
    snapshot: RetentionSnapshot,
    /// Where the next pass over upload records starts.
    uploads_from: Vec<u8>,
}

#[derive(Clone)]
pub struct Retention;

impl RetentionState {
    /// Purges every delete the index has applied and this node has not
    /// purged yet.
    async fn purge(&mut self) -> Result<(), ActorError> {
        let store = &self.args.store;
        let through: u64 = store.get(cf::meta::PURGED_THROUGH, keys::meta::PURGED_THROUGH)?.unwrap_or(0);
        let indexed = crate::actors::indexer::indexed_seq(store)?;
        let found: Vec<(Vec<u8>, Purge)> =
            store.scan(cf::PURGES, &[], Some(&be(through.saturating_add(1))), PURGES_PER_PASS)?;
        // Only once the index dropped a record can its files be rewritten without it.
        let ready: Vec<(u64, Purge)> = found
            .into_iter()
            .filter_map(|(key, purge)| Some((from_be(key.get(..8)?)?, purge)))
            .take_while(|(seq, _)| *seq <= indexed)
            .collect();
        let Some(last) = ready.last().map(|(seq, _)| *seq) else { return Ok(()) };
        let purges: Vec<Purge> = ready.into_iter().map(|(_, p)| p).collect();
        let pending = Pending::new(&purges);
        let swept = tokio::task::block_in_place(|| sweep(store, &pending, last))?;
        let pushes = match &self.args.home {
            Some(home) => clear_push_leaves(store, &home.publisher, &purges, self.args.clock.now()).await?,
            None => Vec::new(),
        };
        // Only where old values were replaced: the log's rewritten span,
        // each record's head and versions, each push's leaves.
        let mut ranges: Vec<(&'static str, Vec<u8>, Vec<u8>)> = Vec::new();
        if let Some((first, last)) = swept.span {
            ranges.push((crate::replication::REPLOG.name(), be(first).to_vec(), be(last).to_vec()));
        }
        for purge in &purges {
            let id = &purge.record_id;
            ranges.push((cf::RECORDS.name(), id.as_bytes().to_vec(), id.as_bytes().to_vec()));
            ranges.push((cf::VERSIONS.name(), keys::version(id, 0), keys::version(id, u64::MAX)));
        }
        for push_id in pushes {
            let leaves = keys::push_leaves(&push_id);
            ranges.push((cf::PUSH_LEAVES.name(), leaves.clone(), [leaves.as_slice(), &[0xff]].concat()));
        }
        tokio::task::block_in_place(|| store.purge_replaced(&ranges))?;
        for shard in &self.args.shards {
            shard.call(IndexShardMsg::Purge).await??;
        }
        store.put(cf::meta::PURGED_THROUGH, keys::meta::PURGED_THROUGH, &last)?;
        tracing::info!(
            records = purges.len(),
            entries = swept.entries,
            through = last,
            "deleted records' bytes purged"
        );
        self.snapshot.purged_through = last;
        self.snapshot.records_purged += purges.len() as u64;
        self.snapshot.entries_rewritten += swept.entries;
        Ok(())
    }

    /// Deletes the bulk files of uploads made 7 days ago or more.
    async fn expire_uploads(&mut self) -> Result<(), ActorError> {
        let Some(home) = &self.args.home else { return Ok(()) };
        let now = self.args.clock.now();
        let page: Vec<(Vec<u8>, UploadRecord)> =
            self.args.store.scan(cf::UPLOADS, &[], Some(&self.uploads_from), UPLOADS_PER_PASS)?;
        self.uploads_from = match page.last() {
            Some((key, _)) if page.len() == UPLOADS_PER_PASS => [key.as_slice(), &[0]].concat(),
            _ => Vec::new(),
        };
        for (_, upload) in page {
            if upload.deleted_at.is_some() || upload.created_at.plus(BULK_FILE_KEPT_MS) > now {
                continue;
            }
            for name in [format!("{}.ndjson", upload.upload_id), format!("{}.part", upload.upload_id)] {
                let path = home.uploads.join(name);
                match std::fs::remove_file(&path) {
                    Ok(()) => self.snapshot.bulk_files_expired += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => tracing::warn!(path = %path.display(), error = %e, "bulk file not deleted"),
                }
            }
            // An import's status stays answerable by its upload id; an
            // upload never imported is gone.
            if upload.push_id.is_none() {
                let mut expired = upload.clone();
                expired.deleted_at = Some(now);
                let mut change = Change::new();
                change.require_unchanged(cf::UPLOADS, upload.upload_id.as_bytes(), &upload);
                change.put(cf::UPLOADS, upload.upload_id.as_bytes(), &expired);
                // Changed meanwhile (an import was just accepted): the next pass looks again.
                let _ = home.publisher.call(|reply| PublisherMsg::Apply { change, now, reply }).await?;
            }
        }
        Ok(())
    }
}

/// Portal entries looked at in one pass, per column family.
const PORTAL_PER_PASS: usize = 10_000;

impl RetentionState {
    /// Home: deletes the portal's expired passkey requests, ended sessions
    /// and lapsed invitations (each stored under a secret's digest, so
    /// nothing else would ever read them again).
    async fn sweep_portal(&mut self) -> Result<(), ActorError> {
        use svc_core::portal::{ceremony_id_prefix, session_ended};
        use svc_store::model::{Ceremony, Invitation, PortalSession};
        let Some(home) = &self.args.home else { return Ok(()) };
        let now = self.args.clock.now();
        let store = &self.args.store;
        let mut change = Change::new();
        let open_from = ceremony_id_prefix(now);
        for (key, _) in store.scan::<Ceremony>(cf::CEREMONIES, &[], None, PORTAL_PER_PASS)? {
            if key.as_slice() >= open_from.as_bytes() {
                break;
            }
            change.delete(cf::CEREMONIES, &key);
        }
        for (key, session) in store.scan::<PortalSession>(cf::PORTAL_SESSIONS, &[], None, PORTAL_PER_PASS)? {
            if session_ended(session.created_at, session.last_seen, now) {
                change.delete(cf::PORTAL_SESSIONS, &key);
            }
        }
        for (key, invitation) in store.scan::<Invitation>(cf::INVITATIONS, &[], None, PORTAL_PER_PASS)? {
            if invitation.expires_at <= now {
                change.delete(cf::INVITATIONS, &key);
                change.delete(cf::ACCOUNT_INVITATIONS, &keys::account_invitation(&invitation.account_uuid, &key));
            }
        }
        if !change.is_empty() {
            home.publisher.call(|reply| PublisherMsg::Apply { change, now, reply }).await??;
        }
        Ok(())
    }

    /// Sandbox: removes each caller-created AI company 90 days after its
    /// last use, with its groups, keys, certificates, usage and allowance,
    /// and tells every node (`expired_callers`) to forget its receipts.
    async fn expire_callers(&mut self) -> Result<(), ActorError> {
        let Some(home) = self.args.home.as_ref().filter(|h| h.environment.is_sandbox()) else { return Ok(()) };
        let (store, now) = (&self.args.store, self.args.clock.now());
        let registry = Registry::new(store.clone());
        let corpus = registry.sandbox_corpus_company()?;
        // A corpus seeded by an older build names its company on the node's
        // next start (the nightly job); until then nothing is expired.
        if corpus.is_none() && store.contains(cf::meta::RAW, keys::meta::SANDBOX_SEED)? {
            tracing::warn!("the sandbox corpus's own company is not named yet; caller expiry waits");
            return Ok(());
        }
        let all_keys = registry.retrieval_keys()?;
        for company in registry.companies()? {
            let last_used = registry.last_billed_day(&company.uuid)?;
            if Some(&company.uuid) == corpus.as_ref()
                || !svc_core::sandbox::caller_expired(company.created_at, last_used, now)
            {
                continue;
            }
            let uuid = company.uuid.as_str();
            let groups: Vec<String> = registry.groups_of(uuid)?.into_iter().map(|g| g.group_id).collect();
            let key_ids: Vec<String> =
                all_keys.iter().filter(|k| k.company_uuid == uuid).map(|k| k.key_id.clone()).collect();
            let mut change = Change::new();
            change.delete(cf::COMPANIES, uuid.as_bytes());
            change.delete(cf::BILLING_PLANS, uuid.as_bytes());
            change.delete(cf::DIRECTORY, uuid.as_bytes());
            change.delete(cf::TERMS_ACCEPTED, uuid.as_bytes());
            change.delete(cf::ALLOWANCES, uuid.as_bytes());
            for group in &groups {
                change.delete(cf::GROUPS, group.as_bytes());
            }
            for key_id in &key_ids {
                change.delete(cf::RETRIEVAL_KEYS, key_id.as_bytes());
                let events: Vec<(Vec<u8>, UsageEvent)> = store.scan_all(cf::USAGE, &keys::prefix(&[key_id]))?;
                for (k, _) in events {
                    change.delete(cf::USAGE, &k);
                }
            }
            for issuance in registry.certificates(uuid)? {
                change.delete(cf::CERTIFICATES, &keys::certificate(uuid, issuance.issued_at, &issuance.cert_id));
            }
            let days: Vec<(Vec<u8>, svc_store::model::DayUsage)> =
                store.scan_all(cf::USAGE_DAYS, &keys::prefix(&[uuid]))?;
            for (k, _) in days {
                change.delete(cf::USAGE_DAYS, &k);
            }
            let expired = ExpiredCaller { company_uuid: uuid.to_owned(), groups, keys: key_ids, expired_at: now };
            change.put(cf::EXPIRED_CALLERS, uuid.as_bytes(), &expired);
            home.publisher.call(|reply| PublisherMsg::Apply { change, now, reply }).await??;
            tracing::info!(company = uuid, "sandbox caller data expired 90 days after its last use");
            self.snapshot.callers_expired += 1;
        }
        Ok(())
    }

    /// Sandbox: removes each business a caller made 90 days after its last
    /// use (R1.42): first its records, deleted as a delete is (out of
    /// serving and purged at every node, their fingerprints kept), a
    /// bounded number a pass; then, in one change, its keys and their
    /// mandates, its people, campaigns, certificate and the rest it owns.
    /// Its key's next request is `401 key_unknown`, its certificate `404`.
    async fn expire_businesses(&mut self) -> Result<(), ActorError> {
        let Some(home) = self.args.home.as_ref().filter(|h| h.environment.is_sandbox()) else { return Ok(()) };
        let (store, now) = (&self.args.store, self.args.clock.now());
        let registry = Registry::new(store.clone());
        let corpus = registry.sandbox_corpus_businesses()?;
        // A corpus seeded by an older build names its businesses on the
        // node's next start; until then nothing is expired.
        if corpus.is_none() && store.contains(cf::meta::RAW, keys::meta::SANDBOX_SEED)? {
            return Ok(());
        }
        let corpus = corpus.unwrap_or_default();
        for business in registry.businesses()? {
            let uuid = business.uuid.as_str();
            let last_used = registry.business_last_used(uuid)?;
            if corpus.iter().any(|c| c == uuid)
                || !svc_core::sandbox::caller_expired(business.created_at, last_used, now)
            {
                continue;
            }
            // Its records first: each deleted as a delete is.
            let mut listed = store.scan_keys(cf::CATALOGUE, &keys::prefix(&[uuid]), EXPIRING_PER_PASS)?;
            listed.extend(store.scan_keys(cf::WITHDRAWN, &keys::prefix(&[uuid]), EXPIRING_PER_PASS)?);
            let more = listed.len() >= EXPIRING_PER_PASS;
            for entry in listed.iter().take(EXPIRING_PER_PASS) {
                let Some(record_id) = entry.rsplit(|b| *b == 0).next().and_then(|id| std::str::from_utf8(id).ok())
                else {
                    continue;
                };
                let (business_uuid, record_id) = (uuid.to_owned(), record_id.to_owned());
                // No seal: the service ends it, so nothing goes to the log.
                home.publisher
                    .call(|reply| PublisherMsg::EndRecord {
                        business_uuid,
                        record_id,
                        delete: true,
                        seal_json: Vec::new(),
                        now,
                        reply,
                    })
                    .await??;
            }
            if more {
                continue;
            }
            let (change, whole) = business_removal(store, &registry, uuid)?;
            home.publisher.call(|reply| PublisherMsg::Apply { change, now, reply }).await??;
            if whole {
                tracing::info!(business = uuid, "sandbox business data expired 90 days after its last use");
                self.snapshot.businesses_expired += 1;
            }
        }
        Ok(())
    }

    /// Forgets the receipts of expired callers' groups held here. A read
    /// region keeps those home has not taken yet (its shipments are
    /// numbered without gaps) until a later pass.
    fn forget_expired_receipts(&mut self) -> Result<(), ActorError> {
        let store = &self.args.store;
        let shipped: Option<u64> = match self.args.home {
            Some(_) => None,
            None => Some(store.get(cf::meta::RECEIPTS_SHIPPED_SEQ, keys::meta::RECEIPTS_SHIPPED_SEQ)?.unwrap_or(0)),
        };
        let mut expired: Vec<ExpiredCaller> = Vec::new();
        let mut from: Vec<u8> = Vec::new();
        loop {
            let page: Vec<(Vec<u8>, ExpiredCaller)> = store.scan(cf::EXPIRED_CALLERS, &[], Some(&from), 1_000)?;
            let Some((last, _)) = page.last() else { break };
            from = [last.as_slice(), &[0]].concat();
            let full = page.len() == 1_000;
            expired.extend(page.into_iter().map(|(_, c)| c));
            if !full {
                break;
            }
        }
        for caller in expired {
            let done = keys::expired_forgotten(&caller.company_uuid);
            if store.contains(cf::meta::EXPIRED_FORGOTTEN, &done)? {
                continue;
            }
            let mut whole = true;
            for group in &caller.groups {
                let prefix = keys::prefix(&[group]);
                let listed: Vec<(Vec<u8>, ())> = store.scan_all(cf::RECEIPTS_BY_GROUP, &prefix)?;
                let mut batch = store.batch();
                for (k, ()) in listed {
                    let Some((_, seq, region)) = keys::parse_receipt_by_group(&k[prefix.len()..]) else { continue };
                    match region {
                        Some(region) => batch.delete(cf::REGION_RECEIPTS, &keys::region_receipt(&region, seq)),
                        _ if shipped.is_some_and(|s| seq > s) => {
                            whole = false;
                            continue;
                        }
                        _ => batch.delete(cf::RECEIPTS, &svc_store::be(seq)),
                    }
                    batch.delete(cf::RECEIPTS_BY_GROUP, &k);
                    self.snapshot.receipts_forgotten += 1;
                }
                batch.commit()?;
            }
            if whole {
                store.put(cf::meta::EXPIRED_FORGOTTEN, &done, &caller.expired_at)?;
            }
        }
        Ok(())
    }
}

/// What an expiring business owns besides its records, removed in one
/// change, at most [`EXPIRING_PER_PASS`] entries of each family; answers
/// whether that was all (the business itself goes last, with its index).
fn business_removal(store: &Store, registry: &Registry, uuid: &str) -> Result<(Change, bool), ActorError> {
    let mut change = Change::new();
    let mut whole = true;
    let mut remove_under = |change: &mut Change, family: svc_store::Named, prefix: &[u8]| -> Result<(), ActorError> {
        let found = store.scan_keys(family, prefix, EXPIRING_PER_PASS)?;
        whole &= found.len() < EXPIRING_PER_PASS;
        for key in found {
            change.delete(family, &key);
        }
        Ok(())
    };
    for family in BY_BUSINESS {
        remove_under(&mut change, *family, &keys::prefix(&[uuid]))?;
    }
    for key in registry.business_keys(uuid)? {
        for family in BY_KEY {
            remove_under(&mut change, *family, &keys::prefix(&[&key.key_id]))?;
        }
        change.delete(cf::INTEGRATION_KEYS, key.key_id.as_bytes());
        change.delete(cf::PASSKEYS, key.key_id.as_bytes());
        change.delete(cf::KEY_INDEX, &keys::business_key(uuid, &key.key_id));
        if let Some(sandbox) = &key.sandbox {
            change.delete(cf::KEY_INDEX, &keys::sandbox_bearer(&sandbox.bearer_sha256));
        }
    }
    let people: Vec<(Vec<u8>, Person)> = store.scan(cf::PEOPLE, &keys::prefix(&[uuid]), None, EXPIRING_PER_PASS)?;
    for (_, person) in people {
        // The address may name someone of another account by now.
        let named: Option<PersonRef> = store.get(cf::PEOPLE_EMAILS, person.email.as_bytes())?;
        if named.is_some_and(|r| r.account_uuid == uuid) {
            change.delete(cf::PEOPLE_EMAILS, person.email.as_bytes());
        }
    }
    for campaign in crate::campaign_ledger::campaigns(store, CAMPAIGNS_SCANNED)? {
        if campaign.business_uuid == uuid {
            crate::campaign_ledger::remove_campaign(&mut change, &campaign.campaign_id);
        }
    }
    if whole {
        change.delete(cf::HOSTED_KEYS, uuid.as_bytes());
        change.delete(cf::ENDPOINTS, uuid.as_bytes());
        change.delete(cf::BUSINESSES, uuid.as_bytes());
    }
    Ok((change, whole))
}

/// Home's push results name each record and its product; a deleted
/// record's leaves keep only its id and outcome. Answers the pushes seen.
async fn clear_push_leaves(
    store: &Store,
    publisher: &Mailbox<PublisherMsg>,
    purges: &[Purge],
    now: UnixMs,
) -> Result<Vec<String>, ActorError> {
    let mut by_push: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for purge in purges {
        for generation in 1..=purge.generations {
            if let Some(version) =
                store.get::<RecordVersion>(cf::VERSIONS, &keys::version(&purge.record_id, generation))?
            {
                by_push.entry(version.push_id).or_default().insert(purge.record_id.clone());
            }
        }
    }
    let pushes: Vec<String> = by_push.keys().cloned().collect();
    for (push_id, records) in by_push {
        let leaves: Vec<(Vec<u8>, PushLeaf)> = store.scan_all(cf::PUSH_LEAVES, &keys::push_leaves(&push_id))?;
        let mut change = Change::new();
        for (key, leaf) in leaves {
            let named = leaf.product_name.is_some() || !leaf.bytes.is_empty();
            if named && leaf.record_id.as_ref().is_some_and(|r| records.contains(r)) {
                let mut cleared = leaf.clone();
                cleared.product_name = None;
                cleared.bytes.clear();
                change.require_unchanged(cf::PUSH_LEAVES, &key, &leaf);
                change.put(cf::PUSH_LEAVES, &key, &cleared);
            }
        }
        if !change.is_empty() {
            publisher.call(|reply| PublisherMsg::Apply { change, now, reply }).await??;
        }
    }
    Ok(pushes)
}

impl Actor for Retention {
    type Msg = RetentionMsg;
    type State = RetentionState;
    type Arguments = RetentionArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<RetentionMsg>,
        args: RetentionArgs,
    ) -> Result<RetentionState, ActorProcessingErr> {
        let purged_through = args.store.get(cf::meta::PURGED_THROUGH, keys::meta::PURGED_THROUGH)?.unwrap_or(0);
        let snapshot = RetentionSnapshot { purged_through, ..Default::default() };
        Ok(RetentionState { args, snapshot, uploads_from: Vec::new() })
    }

    async fn handle(
        &self,
        _me: ActorRef<RetentionMsg>,
        msg: RetentionMsg,
        state: &mut RetentionState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            RetentionMsg::Tick => {
                // A failed pass is tried again at the next tick; what it
                // did is kept (every step can run twice).
                if let Err(e) = state.purge().await {
                    tracing::warn!(error = %e, "purge pass failed");
                }
                if let Err(e) = state.expire_uploads().await {
                    tracing::warn!(error = %e, "bulk file expiry failed");
                }
                if let Err(e) = state.sweep_portal().await {
                    tracing::warn!(error = %e, "portal sweep failed");
                }
                if let Err(e) = state.expire_callers().await {
                    tracing::warn!(error = %e, "sandbox caller expiry failed");
                }
                if let Err(e) = state.expire_businesses().await {
                    tracing::warn!(error = %e, "sandbox business expiry failed");
                }
                if let Err(e) = tokio::task::block_in_place(|| state.forget_expired_receipts()) {
                    tracing::warn!(error = %e, "forgetting expired callers' receipts failed");
                }
                if let Some(home) = &state.args.home {
                    let now = state.args.clock.now();
                    let renewed = home.publisher.call(|reply| PublisherMsg::RenewKeyDirectory { now, reply }).await;
                    if let Err(e) = renewed.map_err(ActorError::from).and_then(|r| r) {
                        tracing::warn!(error = %e, "key directory renewal failed");
                    }
                }
            }
            RetentionMsg::Observe(reply) => {
                let _ = reply.send(state.snapshot.clone());
            }
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for RetentionMsg {
    type Seen = RetentionSnapshot;

    fn observe(reply: ractor::RpcReplyPort<RetentionSnapshot>) -> Self {
        RetentionMsg::Observe(reply)
    }

    fn describe(seen: RetentionSnapshot) -> serde_json::Value {
        serde_json::json!({"purged_through": seen.purged_through, "records_purged": seen.records_purged,
            "entries_rewritten": seen.entries_rewritten, "bulk_files_expired": seen.bulk_files_expired,
            "callers_expired": seen.callers_expired, "receipts_forgotten": seen.receipts_forgotten,
            "businesses_expired": seen.businesses_expired})
    }
}
