//! The home region's write path for records: creating a push (the moment a
//! batch is accepted), committing it chunk by chunk, withdrawing and deleting.
//!
//! `Engine` is owned by the publisher actor, so these steps run one at a
//! time and sequence numbers have a single writer. Each step is one atomic
//! write: a record's version, head, row, sidecar, push result and replication
//! entry land together or not at all, so a crash at any point loses nothing
//! accepted and a resume publishes nothing twice.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rayon::prelude::*;

use svc_core::digest::{sha256, sha256_prefixed};
use svc_core::dsse::Envelope;
use svc_core::ids::RecordType;
use svc_core::merkle::{self, BatchTree, Hash};
use svc_core::projection::{self, AdParts, ProjectionContext};
use svc_core::publish::caps::UsageLedger;
use svc_core::publish::outcome::{MAX_RECORDS, Outcome, PushState, Source};
use svc_core::publish::price_shock;
use svc_core::records::{self, ValidRecord, ValidationContext};
use svc_core::seal::{BatchMembership, BatchSealV2, ServedSeal};
use svc_core::sidecar::{self, ResolvedScope, Sidecar};
use svc_core::time::UnixMs;

use crate::registry::Registry;
use crate::replication::{Change, LogWriter};
use crate::service_keys::ServiceKeys;
use svc_store::model::*;
use svc_store::{StoreError, StoreResult, cf, keys};

pub use svc_core::publish::outcome::CHUNK;

/// How many of a bulk file's leaves one write takes (a leaf holds its
/// record's bytes: about a megabyte a write).
const LEAVES_PER_WRITE: usize = 1_000;

mod release;

/// What the handler checked and hands over to be accepted.
pub struct NewPush {
    pub business_uuid: String,
    pub key_id: String,
    pub record_type: RecordType,
    pub seq: u64,
    pub source: Source,
    pub received_at: UnixMs,
    pub batch_seal_json: Vec<u8>,
    pub batch_seal: BatchSealV2,
    pub mandate: MandateRecord,
    pub records: PushRecords,
    pub sealed_at_fresh: bool,
    /// `Idempotency-Key` and the fingerprint of the whole request.
    pub idempotency: Option<(String, Vec<u8>)>,
    pub body_bytes: u64,
}

/// A record a person sealed with a passkey, its seal already verified.
pub struct SealedSave {
    pub business_uuid: String,
    pub record_type: RecordType,
    pub bytes: Vec<u8>,
    /// The seal envelope's JSON as received.
    pub seal_json: Vec<u8>,
    /// The passkey that sealed it.
    pub key_id: String,
    pub cert_id: String,
    pub certificate_status: String,
    pub ai_policy_version: u64,
    pub now: UnixMs,
    /// An ad's images as the service fetched them, by slot.
    pub images: Vec<(svc_core::ads::images::Slot, AdImage)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    pub outcome: Outcome,
    pub record_id: String,
    pub version: u64,
    pub sha256: String,
}

/// The records of a push: in the request, or in a bulk file read later.
pub enum PushRecords {
    Inline(Vec<Vec<u8>>),
    File { upload_id: String, records: u64 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created {
    /// A new push, accepted now.
    New(String),
    /// The exact batch again: resume (or report) the existing push.
    Resume(String),
    /// The same `Idempotency-Key` and request: the first answer, again.
    Replay(IdempotentAnswer),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    SeqNotIncreasing,
    SealedAtStale,
    IdempotencyKeyReused,
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Invalid(String),
}

/// The fingerprint that identifies "the exact same batch": the batch seal
/// payload and every record's bytes, in order.
pub fn batch_fingerprint(batch_seal_payload: &[u8], records: &[Vec<u8>]) -> Vec<u8> {
    let mut all = Vec::with_capacity(32 * (records.len() + 1));
    all.extend_from_slice(&sha256(batch_seal_payload));
    for r in records {
        all.extend_from_slice(&sha256(r));
    }
    sha256(&all).to_vec()
}

/// "The exact same import": the batch seal payload and the upload it names.
pub fn file_fingerprint(batch_seal_payload: &[u8], upload_id: &str) -> Vec<u8> {
    let mut all = sha256(batch_seal_payload).to_vec();
    all.extend_from_slice(upload_id.as_bytes());
    sha256(&all).to_vec()
}

/// The head of a record whose new version goes live now, and whether that
/// is an `accepted` or an `updated`.
fn live_head(
    record: &ValidRecord,
    business: &Business,
    was_live: bool,
    generation: u64,
    source: RecordSource,
    now: UnixMs,
) -> (Outcome, RecordHead) {
    let head = RecordHead {
        record_id: record.record_id(&business.uuid),
        record_type: record.record_type(),
        business_uuid: business.uuid.clone(),
        own_id: record.own_id().to_owned(),
        generation,
        live_generation: generation,
        state: RecordState::Live,
        last_updated: now,
        source,
        prices: product_prices(record),
    };
    (Outcome::settle(was_live, false), head)
}

/// A live version: the row projected and signed, the sidecar signed. Pure
/// work over one record, so a chunk's records are signed in parallel.
#[allow(clippy::too_many_arguments)]
fn sign_version(
    keys: &ServiceKeys,
    record: &ValidRecord,
    business: &Business,
    seal_json: Vec<u8>,
    sidecar: &Sidecar,
    push_id: &str,
    ad: Option<AdParts>,
    now: UnixMs,
) -> Result<RecordVersion, EngineError> {
    let pctx = ProjectionContext {
        record_id: sidecar.record_id.clone(),
        business_uuid: business.uuid.clone(),
        business_name: business.legal_name.clone(),
        published_at: now,
        ad,
    };
    let row = projection::project(record, &pctx, &keys.projection_key());
    let signed = sidecar::make(sidecar, &keys.sidecar_key()).map_err(|e| EngineError::Invalid(e.to_string()))?;
    Ok(RecordVersion {
        record_id: sidecar.record_id.clone(),
        generation: sidecar.generation,
        bytes: record.bytes().to_vec(),
        seal: seal_json,
        sidecar: signed.to_json(),
        row: serde_json::to_vec(&row).unwrap_or_default(),
        published_at: now,
        push_id: push_id.to_owned(),
    })
}

/// Where an outcome is counted in `PushRecord::counts` (accepted, updated,
/// rejected, held, pending: the order of `Outcome::ALL`).
fn count_index(outcome: Outcome) -> usize {
    Outcome::ALL.iter().position(|o| *o == outcome).unwrap_or(4)
}

/// What every record of one business is judged with.
/// A push's record type, business, seal and certificate, for its chunks.
struct PushContext {
    record_type: RecordType,
    mandate_countries: Option<Vec<String>>,
    ctx: BusinessContext,
    envelope: Envelope,
    cert_status: &'static str,
}

impl PushContext {
    /// The sidecar of a batch record accepted (or released) now.
    #[allow(clippy::too_many_arguments)]
    fn sidecar(
        &self,
        push: &PushRecord,
        record_id: &str,
        origin: &str,
        generation: u64,
        seal_digest: &str,
        leaf_index: u64,
        now: UnixMs,
    ) -> Sidecar {
        Sidecar {
            v: 2,
            record_id: record_id.to_owned(),
            business_uuid: push.business_uuid.clone(),
            record_type: self.record_type.name().into(),
            origin: origin.to_owned(),
            generation,
            path: "A".into(),
            seal_digest: seal_digest.to_owned(),
            key_id: push.key_id.clone(),
            cert_id: push.cert_id.clone(),
            certificate_status: self.cert_status.into(),
            ai_policy_version: push.ai_policy_version,
            scope: ResolvedScope {
                basis: "mandate".into(),
                id: push.mandate_id.clone(),
                record_types: vec![self.record_type.name().into()],
                countries: self.mandate_countries.clone().unwrap_or_default(),
            },
            batch_id: Some(push.push_id.clone()),
            leaf_index: Some(leaf_index),
            geocoded: None,
            accepted_at: now.to_rfc3339_millis(),
        }
    }
}

struct BusinessContext {
    business: Business,
    validation: ValidationContext,
}

pub struct Engine {
    log: LogWriter,
    registry: Registry,
    keys: Arc<ServiceKeys>,
    /// What the key directory this engine signs is of.
    directory: crate::key_set::directory::Scope,
    trees: HashMap<String, Arc<BatchTree>>,
    /// What the chunk commit still in flight wrote: record heads and the
    /// push, read by the next chunk before the store has them.
    in_flight: InFlight,
    /// The valid records of the batch staged last, by leaf, as validated
    /// then: its chunks, committed next, take them rather than validate each
    /// record again. One batch of at most `MAX_RECORDS` (a bulk file's are
    /// validated again: 100,000 parsed records would not be kept in memory),
    /// and forgotten when the registry changes, since validation reads it.
    staged: Option<(String, Vec<Option<ValidRecord>>)>,
    /// The chunk prepared last, its records being signed on rayon while
    /// the publisher prepares the next one; written by the next chunk's
    /// commit, or by whatever step comes first.
    signing: Option<Signing>,
}

impl Drop for Engine {
    fn drop(&mut self) {
        // A stop is not a crash: the chunk being signed is written first.
        if let Err(e) = self.settle_writes() {
            tracing::warn!(error = %e, "the last chunk was not written; its push resumes from the one before");
        }
    }
}

/// A chunk whose every write is built but its versions, which rayon signs.
struct Signing {
    push_id: String,
    change: Change,
    now: UnixMs,
    versions: std::sync::mpsc::Receiver<Vec<Result<RecordVersion, EngineError>>>,
}

#[derive(Default)]
struct InFlight {
    /// The heads of the chunk being signed, then of the chunk on its way to
    /// disk: a chunk is prepared before either is in the store.
    heads: [HashMap<String, RecordHead>; 2],
    pushes: HashMap<String, PushRecord>,
}

impl InFlight {
    fn head(&self, record_id: &str) -> Option<RecordHead> {
        self.heads.iter().find_map(|heads| heads.get(record_id)).cloned()
    }
}

impl Engine {
    pub fn new(log: LogWriter, keys: Arc<ServiceKeys>, directory: crate::key_set::directory::Scope) -> Self {
        let registry = Registry::new(log.store().clone());
        Engine {
            log,
            registry,
            keys,
            directory,
            trees: HashMap::new(),
            in_flight: InFlight::default(),
            staged: None,
            signing: None,
        }
    }

    /// Writes the chunk being signed, then waits until every chunk commit is
    /// on disk. Every step but a chunk commit starts here, so it reads the
    /// store as the last chunk left it.
    pub fn settle_writes(&mut self) -> Result<(), EngineError> {
        let signing = self.signing.take();
        let written = self.write_signed(signing);
        let drained = self.log.drain();
        self.in_flight = InFlight::default();
        written?;
        Ok(drained?)
    }

    /// Hands a signed chunk's write to the log (pipelined: its disk wait
    /// overlaps what comes next), once rayon has signed its versions.
    fn write_signed(&mut self, signing: Option<Signing>) -> Result<(), EngineError> {
        let Some(Signing { push_id, mut change, now, versions }) = signing else { return Ok(()) };
        let signed = versions
            .recv()
            .map_err(|_| EngineError::Invalid(format!("the signing of a chunk of {push_id} stopped")))?;
        for version in signed {
            let version = version?;
            if crate::sabotage::on(crate::sabotage::Sabotage::LostVersions) && lost_version() {
                continue;
            }
            change.put(cf::VERSIONS, &keys::version(&version.record_id, version.generation), &version);
        }
        self.log.commit_pipelined(change, now)?;
        crate::faults::crash_point(crate::faults::CrashPoint::ChunkWritten);
        Ok(())
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn last_seq(&self) -> u64 {
        self.log.last_seq()
    }

    /// Commits an operator's change to the registry (it replicates).
    pub fn apply(&mut self, change: Change, now: UnixMs) -> Result<Option<u64>, EngineError> {
        self.settle_writes()?;
        self.staged = None;
        Ok(self.log.commit(change, now)?)
    }

    /// Applies `edit` to the key set's register and commits it, signed
    /// again, with `also` in the same write. Read and written here, by the
    /// one writer, so no change to the set is lost between the two.
    fn amend_key_set(
        &mut self,
        now: UnixMs,
        edit: impl FnOnce(&mut Vec<svc_core::keyset::KeyEntry>) -> Result<bool, svc_core::Reason>,
        also: impl FnOnce(&mut Change),
    ) -> Result<Result<(), svc_core::Reason>, EngineError> {
        self.settle_writes()?;
        self.staged = None;
        match crate::key_set::register::amend(self.log.store(), &self.keys, now, edit)? {
            Ok(Some(mut change)) => {
                also(&mut change);
                self.log.commit(change, now)?;
                Ok(Ok(()))
            }
            Ok(None) => Ok(Ok(())),
            Err(reason) => Ok(Err(reason)),
        }
    }

    /// Signs the key directory again when the companies it lists changed.
    pub fn renew_key_directory(&mut self, now: UnixMs) -> Result<bool, EngineError> {
        self.settle_writes()?;
        let companies = crate::key_set::directory::companies(&self.registry, &self.directory, now)?;
        match crate::key_set::directory::renewal(self.log.store(), &self.keys, companies, now)? {
            Some(change) => {
                self.log.commit(change, now)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Registers home's own keys (all but receipt keys, which are certified
    /// like any region's) in the key set, the first time.
    pub fn found_key_set(&mut self, valid_from: UnixMs, now: UnixMs) -> Result<(), EngineError> {
        let own = self.keys.entries(valid_from);
        let founding = |entries: &mut Vec<svc_core::keyset::KeyEntry>| {
            let missing: Vec<_> = own.into_iter().filter(|e| !entries.iter().any(|k| k.kid == e.kid)).collect();
            let changed = !missing.is_empty();
            entries.splice(0..0, missing);
            Ok(changed)
        };
        self.amend_key_set(now, founding, |_| {}).map(|_| ())
    }

    /// Certifies `key` as `region`'s receipt key (idempotent).
    pub fn certify_receipt_key(
        &mut self,
        region: &str,
        key: &svc_core::keys::VerifyingKey,
        now: UnixMs,
    ) -> Result<(), EngineError> {
        let certify = |entries: &mut Vec<_>| Ok(svc_core::keyset::certify_receipt_key(entries, key, region, now));
        self.amend_key_set(now, certify, |_| {}).map(|_| ())
    }

    /// Draws a successor for one of home's own keys, lists it in the key set
    /// (the old one closing after the overlap) and signs with it from then
    /// on. Answers the new key ids; `None` for a purpose home does not rotate.
    pub fn rotate_service_key(
        &mut self,
        purpose: svc_core::keyset::Purpose,
        now: UnixMs,
    ) -> Result<Option<Vec<String>>, EngineError> {
        let Some(successor) = self.keys.draw_successor(purpose, now) else {
            return Ok(None);
        };
        let stored = self.keys.stored_rotations(&successor.all)?;
        let kids = successor.entries.iter().map(|e| e.kid.clone()).collect();
        let entries = successor.entries;
        let succeed = |all: &mut Vec<_>| {
            svc_core::keyset::succeed(all, entries, now);
            Ok(true)
        };
        // Listing a successor never refuses: only the stored write can fail.
        let (clear_key, wrapped_key) = ServiceKeys::rotations_keys();
        let _listed = self.amend_key_set(now, succeed, |change| match &stored {
            crate::service_keys::StoredRotations::Clear(rotations) => {
                change.put(crate::service_keys::ROTATIONS, clear_key, rotations);
            }
            crate::service_keys::StoredRotations::Wrapped(wrapped) => {
                change.put(cf::meta::SERVICE_KEY_ROTATIONS_WRAPPED, wrapped_key, wrapped);
            }
        })?;
        self.keys.install(&successor.rotation);
        Ok(Some(kids))
    }

    /// Ends a service key in the key set (retired or compromised).
    pub fn end_service_key(
        &mut self,
        kid: &str,
        valid_until: Option<UnixMs>,
        compromised_at: Option<UnixMs>,
        now: UnixMs,
    ) -> Result<Result<(), svc_core::Reason>, EngineError> {
        self.amend_key_set(now, |entries| svc_core::keyset::end_key(entries, kid, valid_until, compromised_at), |_| {})
    }

    fn business_context(
        &self,
        business_uuid: &str,
        mandate_countries: Option<Vec<String>>,
    ) -> Result<BusinessContext, EngineError> {
        let (business, validation) = self
            .registry
            .validation_context(business_uuid, mandate_countries)?
            .ok_or_else(|| EngineError::Invalid("unknown business".into()))?;
        Ok(BusinessContext { business, validation })
    }

    /// Accepts a batch: after this commit it is never lost. Every record gets
    /// its result row (`pending`, or `rejected` with all its reasons) in the
    /// same write, before any record is stored.
    pub fn create_push(&mut self, push: NewPush, push_id: String) -> Result<Result<Created, Refused>, EngineError> {
        self.settle_writes()?;
        let store = self.log.store().clone();
        let payload = push_payload(&push.batch_seal_json);
        let (fingerprint, records) = match &push.records {
            PushRecords::Inline(records) => (batch_fingerprint(&payload, records), records.len() as u64),
            PushRecords::File { upload_id, records } => (file_fingerprint(&payload, upload_id), *records),
        };
        if let Some((idem, request_fp)) = &push.idempotency
            && let Some(answer) =
                store.get::<IdempotentAnswer>(cf::IDEMPOTENCY, &keys::idempotency(&push.key_id, idem))?
        {
            return Ok(if &answer.fingerprint == request_fp {
                Ok(Created::Replay(answer))
            } else {
                Err(Refused::IdempotencyKeyReused)
            });
        }
        if let Some(entry) = store.get::<SeqEntry>(cf::SEQS, &keys::seq(&push.key_id, push.seq))? {
            return Ok(if entry.fingerprint == fingerprint {
                Ok(Created::Resume(entry.push_id))
            } else {
                Err(Refused::SeqNotIncreasing)
            });
        }
        // The seal's own checks come before `seq` (section 4.1's order).
        if !push.sealed_at_fresh {
            return Ok(Err(Refused::SealedAtStale));
        }
        let last = store.get::<u64>(cf::LAST_SEQS, push.key_id.as_bytes())?;
        if !svc_core::seal::seq_increases(push.seq, last) {
            return Ok(Err(Refused::SeqNotIncreasing));
        }

        let mut record = PushRecord {
            push_id: push_id.clone(),
            business_uuid: push.business_uuid.clone(),
            key_id: push.key_id.clone(),
            record_type: push.record_type,
            seq: push.seq,
            source: push.source,
            state: PushState::Queued,
            held: false,
            held_reasons: Vec::new(),
            records,
            received_at: push.received_at,
            updated_at: push.received_at,
            completed_at: None,
            error: None,
            chunks: records.div_ceil(CHUNK as u64),
            chunks_done: 0,
            fingerprint: fingerprint.clone(),
            batch_seal: push.batch_seal_json.clone(),
            cert_id: push.batch_seal.cert_id.clone(),
            ai_policy_version: push.batch_seal.ai_policy_version,
            mandate_id: push.mandate.mandate_id.clone(),
            counts: [0, 0, 0, 0, records],
            last_step_at: push.received_at,
            upload_id: None,
            staged: false,
        };
        let mut change = Change::new();
        match &push.records {
            PushRecords::Inline(records) => self.stage(&mut change, &mut record, records)?,
            PushRecords::File { upload_id, .. } => record.upload_id = Some(upload_id.clone()),
        }
        change.put(cf::PUSHES, &keys::push(&push_id), &record);
        change.put(cf::ATTEMPTS, &keys::attempt(&push.business_uuid, push.received_at, &push_id), &());
        change.put(cf::LAST_SEQS, push.key_id.as_bytes(), &push.seq);
        change.put(cf::SEQS, &keys::seq(&push.key_id, push.seq), &SeqEntry { push_id: push_id.clone(), fingerprint });
        let mut ledger: UsageLedger = store.get(cf::USAGE_LEDGERS, push.key_id.as_bytes())?.unwrap_or_default();
        ledger.record(push.received_at, records, push.body_bytes);
        ledger.prune(push.received_at);
        change.put(cf::USAGE_LEDGERS, push.key_id.as_bytes(), &ledger);
        queue_seal(&mut change, &push.batch_seal_json, push.received_at);
        self.log.commit(change, push.received_at)?;
        crate::faults::crash_point(crate::faults::CrashPoint::PushAccepted);
        Ok(Ok(Created::New(push_id)))
    }

    /// Gives every record of a push its result row (`pending`, or `rejected`
    /// with all its reasons), judges the price-shock hold, and keeps the
    /// leaf hashes for inclusion proofs. Nothing is stored as a record yet.
    fn stage(&mut self, change: &mut Change, push: &mut PushRecord, records: &[Vec<u8>]) -> Result<(), EngineError> {
        let record_type = push.record_type;
        let countries = self.mandate_countries(push)?;
        let ctx = self.business_context(&push.business_uuid, countries)?;
        let mut counts = [0u64; 5];
        let mut valid: Vec<Option<ValidRecord>> = Vec::with_capacity(records.len());
        let validated: Vec<_> =
            records.par_iter().map(|bytes| records::validate(bytes, record_type, &ctx.validation)).collect();
        for (i, (bytes, validated)) in records.iter().zip(validated).enumerate() {
            let leaf = match validated {
                Ok(record) => {
                    let leaf = pending_leaf(i as u64, bytes, &record, &push.business_uuid);
                    valid.push(Some(record));
                    leaf
                }
                Err(errors) => {
                    valid.push(None);
                    rejected_leaf(i as u64, bytes, &errors)
                }
            };
            counts[count_index(leaf.outcome)] += 1;
            change.put(cf::PUSH_LEAVES, &keys::push_leaf(&push.push_id, i as u64), &leaf);
        }
        push.held_reasons = if record_type == RecordType::Products {
            self.price_shock(&push.business_uuid, valid.iter().flatten())?
        } else {
            Vec::new()
        };
        push.held = !push.held_reasons.is_empty();
        push.counts = counts;
        push.records = records.len() as u64;
        push.chunks = records.len().div_ceil(CHUNK) as u64;
        push.staged = true;
        self.staged = (records.len() <= MAX_RECORDS).then(|| (push.push_id.clone(), valid));
        let leaf_hashes: Vec<Hash> = records.iter().map(|r| merkle::leaf_hash(r)).collect();
        change.put(cf::PUSH_LEAF_HASHES, &keys::push_leaf_hashes(&push.push_id), &leaf_hashes);
        self.trees.insert(push.push_id.clone(), Arc::new(BatchTree::from_leaf_hashes(&leaf_hashes)));
        Ok(())
    }

    /// The countries of the mandate a push was accepted under.
    fn mandate_countries(&self, push: &PushRecord) -> StoreResult<Option<Vec<String>>> {
        Ok(self
            .registry
            .mandates_of_key(&push.key_id)?
            .into_iter()
            .find(|m| m.mandate_id == push.mandate_id)
            .map(|m| m.countries))
    }

    /// Stages the records a bulk file delivered (read once, in the
    /// background, after the import was accepted). Staging twice is a no-op.
    pub fn stage_file(&mut self, push_id: &str, records: Vec<Vec<u8>>, now: UnixMs) -> Result<PushRecord, EngineError> {
        self.settle_writes()?;
        let mut push = self.push(push_id)?.ok_or_else(|| EngineError::Invalid("unknown push".into()))?;
        if push.staged || push.completed_at.is_some() {
            return Ok(push);
        }
        let mut change = Change::new();
        self.stage(&mut change, &mut push, &records)?;
        // A file's leaves go to the store a part at a time before the push
        // is marked staged: a large import's leaves in one write would be
        // one entry of home's group larger than a member takes within a
        // heartbeat, sent again and again. A stop before the last part
        // leaves the push unstaged, and staging again writes every leaf again.
        for part in change.split_local(cf::PUSH_LEAVES, LEAVES_PER_WRITE) {
            self.log.commit(part, now)?;
        }
        push.updated_at = now;
        push.last_step_at = now;
        change.put(cf::PUSHES, &keys::push(push_id), &push);
        self.log.commit(change, now)?;
        Ok(push)
    }

    /// Ends a push that cannot go on (its file does not match its seal):
    /// `failed`, with the code, before any record was checked.
    pub fn fail(&mut self, push_id: &str, code: &str, now: UnixMs) -> Result<PushRecord, EngineError> {
        self.settle_writes()?;
        let mut push = self.push(push_id)?.ok_or_else(|| EngineError::Invalid("unknown push".into()))?;
        if push.completed_at.is_some() {
            return Ok(push);
        }
        push.error = Some(code.to_owned());
        self.settle(&mut push, PushState::Failed, now)?;
        tracing::warn!(push_id, code, "push failed");
        Ok(push)
    }

    /// The held reasons of the price-shock rule for these valid products.
    fn price_shock<'a>(
        &self,
        business_uuid: &str,
        valid: impl Iterator<Item = &'a ValidRecord>,
    ) -> StoreResult<Vec<String>> {
        let mut catalogue = BTreeMap::new();
        for record_id in self.registry.all_catalogue_ids(business_uuid, "products")? {
            if let Some(head) = self.registry.record_head(&record_id)?
                && head.state == RecordState::Live
            {
                for (country, currency, amount) in head.prices {
                    catalogue
                        .insert((record_id.clone(), country), price_shock::Price { currency, amount_minor: amount });
                }
            }
        }
        let mut pushed: BTreeMap<String, BTreeMap<String, price_shock::Price>> = BTreeMap::new();
        for record in valid {
            pushed.insert(
                record.record_id(business_uuid),
                product_prices(record)
                    .into_iter()
                    .map(|(c, cur, a)| (c, price_shock::Price { currency: cur, amount_minor: a }))
                    .collect(),
            );
        }
        Ok(price_shock::judge(&catalogue, &pushed).unwrap_or_default().into_iter().map(String::from).collect())
    }

    pub fn push(&self, push_id: &str) -> StoreResult<Option<PushRecord>> {
        self.log.store().get(cf::PUSHES, &keys::push(push_id))
    }

    fn tree(&mut self, push_id: &str) -> StoreResult<Arc<BatchTree>> {
        if let Some(tree) = self.trees.get(push_id) {
            return Ok(tree.clone());
        }
        let hashes: Vec<Hash> =
            self.log.store().get(cf::PUSH_LEAF_HASHES, &keys::push_leaf_hashes(push_id))?.unwrap_or_default();
        let tree = Arc::new(BatchTree::from_leaf_hashes(&hashes));
        self.trees.insert(push_id.to_owned(), tree.clone());
        Ok(tree)
    }

    /// The record at `leaf` of the push staged last, as validated then.
    fn take_staged(&mut self, push_id: &str, leaf: u64) -> Option<ValidRecord> {
        let (staged_push, records) = self.staged.as_mut()?;
        if staged_push != push_id {
            return None;
        }
        records.get_mut(usize::try_from(leaf).ok()?)?.take()
    }

    /// What every chunk of a push is judged and signed with.
    fn push_context(&self, push: &PushRecord) -> Result<PushContext, EngineError> {
        let record_type = push.record_type;
        let mandate_countries = self.mandate_countries(push)?;
        let ctx = self.business_context(&push.business_uuid, mandate_countries.clone())?;
        let envelope = Envelope::parse(&push.batch_seal).map_err(|r| EngineError::Invalid(r.to_string()))?;
        let sealed_at = svc_core::seal::read_batch_seal(&envelope)
            .ok()
            .and_then(|b| UnixMs::parse_rfc3339_millis_utc(&b.sealed_at))
            .ok_or_else(|| EngineError::Invalid("stored batch seal".into()))?;
        let cert_status = self
            .registry
            .certificate_in_force(&push.business_uuid, sealed_at)?
            .map(|c| c.status.as_str())
            .ok_or_else(|| EngineError::Invalid("no certificate in force at sealed_at".into()))?;
        Ok(PushContext { record_type, mandate_countries, ctx, envelope, cert_status })
    }

    /// Settles every still-pending record of one chunk in one atomic write.
    /// Records already settled keep their outcome, so running a chunk again
    /// (after a crash) publishes nothing twice.
    pub fn commit_chunk(
        &mut self,
        push_id: &str,
        chunk: u64,
        flagged: &BTreeMap<u64, Vec<(String, String, String)>>,
        now: UnixMs,
    ) -> Result<PushRecord, EngineError> {
        let store = self.log.store().clone();
        // The chunk before may still be being signed: read what it will write.
        // Another push's (or none) settles first, writing any chunk being signed.
        let in_flight = self.in_flight.pushes.remove(push_id);
        let mut push = match in_flight {
            Some(push) => push,
            None => {
                self.settle_writes()?;
                self.push(push_id)?.ok_or_else(|| EngineError::Invalid("unknown push".into()))?
            }
        };
        if push.state.is_settled() {
            return Ok(push);
        }
        let from = keys::push_leaf(push_id, chunk * CHUNK as u64);
        let prefix = keys::push_leaves(push_id);
        let mut leaves: Vec<(Vec<u8>, PushLeaf)> = Vec::new();
        for (k, leaf) in store.scan::<PushLeaf>(cf::PUSH_LEAVES, &prefix, Some(&from), CHUNK)? {
            if k.len() == prefix.len() + 9 && leaves.len() < CHUNK {
                leaves.push((k, leaf));
            }
        }
        let tree = self.tree(push_id)?;
        let pctx = self.push_context(&push)?;
        let (record_type, ctx, envelope) = (pctx.record_type, &pctx.ctx, &pctx.envelope);
        // Validation and signing are pure work per record: spread over the
        // cores. Heads and generations are settled in leaf order between.
        let known: Vec<Option<ValidRecord>> =
            leaves.iter().map(|(_, leaf)| self.take_staged(push_id, leaf.leaf_index)).collect();
        let mut validated: Vec<Option<Result<ValidRecord, Vec<records::RecordError>>>> = leaves
            .par_iter()
            .zip(known)
            .map(|((_, leaf), known)| {
                (leaf.outcome == Outcome::Pending).then(|| match known {
                    Some(record) => Ok(record),
                    None => records::validate(&leaf.bytes, record_type, &ctx.validation),
                })
            })
            .collect();
        let mut heads: HashMap<String, RecordHead> = HashMap::new();
        let mut to_sign: Vec<(ValidRecord, Vec<u8>, Sidecar)> = Vec::new();
        let mut change = Change::new();
        for (i, (k, mut leaf)) in leaves.into_iter().enumerate() {
            let Some(validated) = validated[i].take() else { continue };
            push.counts[4] = push.counts[4].saturating_sub(1);
            let flags = flagged.get(&leaf.leaf_index).cloned().unwrap_or_default();
            let record = match validated {
                Ok(record) if flags.is_empty() => record,
                Ok(_) => {
                    leaf.outcome = Outcome::Rejected;
                    leaf.errors = flags;
                    leaf.bytes.clear();
                    push.counts[count_index(Outcome::Rejected)] += 1;
                    change.put(cf::PUSH_LEAVES, &k, &leaf);
                    continue;
                }
                Err(errors) => {
                    let settled = rejected_leaf(leaf.leaf_index, &leaf.bytes, &errors);
                    push.counts[count_index(Outcome::Rejected)] += 1;
                    change.put(cf::PUSH_LEAVES, &k, &settled);
                    continue;
                }
            };
            let record_id = record.record_id(&push.business_uuid);
            let head = match heads.remove(&record_id).or_else(|| self.in_flight.head(&record_id)) {
                Some(h) => Some(h),
                None => self.registry.record_head(&record_id)?,
            };
            let generation = head.as_ref().map_or(1, |h| h.generation + 1);
            let proof = tree
                .inclusion_proof(leaf.leaf_index as usize)
                .ok_or_else(|| EngineError::Invalid("no inclusion proof for the leaf".into()))?;
            let served = ServedSeal::Batch(BatchMembership::new(envelope.clone(), leaf.leaf_index, &proof));
            let seal_json = serde_json::to_vec(&served).unwrap_or_default();
            let seal_digest = sha256_prefixed(&seal_json);
            let origin = record.origin();
            let was_live = head.as_ref().is_some_and(|h| h.state == RecordState::Live && h.live_generation > 0);
            let was_withdrawn = head.as_ref().is_some_and(|h| h.state == RecordState::Withdrawn);
            let (outcome, new_head) = if push.held {
                let new_head = match head {
                    Some(mut h) => {
                        h.generation = generation;
                        h.last_updated = now;
                        h
                    }
                    None => RecordHead {
                        record_id: record_id.clone(),
                        record_type,
                        business_uuid: push.business_uuid.clone(),
                        own_id: record.own_id().to_owned(),
                        generation,
                        live_generation: 0,
                        state: RecordState::Held,
                        last_updated: now,
                        source: RecordSource::of_push(push.source),
                        prices: Vec::new(),
                    },
                };
                let version = RecordVersion {
                    record_id: record_id.clone(),
                    generation,
                    bytes: leaf.bytes.clone(),
                    seal: seal_json,
                    sidecar: Vec::new(),
                    row: Vec::new(),
                    published_at: now,
                    push_id: push_id.to_owned(),
                };
                change.put(cf::VERSIONS, &keys::version(&record_id, generation), &version);
                (Outcome::Held, new_head)
            } else {
                let sidecar = pctx.sidecar(&push, &record_id, &origin, generation, &seal_digest, leaf.leaf_index, now);
                let source = RecordSource::of_push(push.source);
                let live = live_head(&record, &ctx.business, was_live, generation, source, now);
                to_sign.push((record, seal_json, sidecar));
                live
            };
            change.put(cf::RECORDS, record_id.as_bytes(), &new_head);
            if outcome != Outcome::Held {
                list_live(&mut change, &push.business_uuid, record_type, &record_id, was_withdrawn);
            }
            heads.insert(record_id.clone(), new_head);
            leaf.outcome = outcome;
            leaf.record_id = Some(record_id);
            leaf.version = Some(generation);
            leaf.sha256 = Some(origin);
            leaf.seal_digest = Some(seal_digest);
            leaf.bytes.clear();
            push.counts[count_index(outcome)] += 1;
            change.put(cf::PUSH_LEAVES, &k, &leaf);
        }
        push.chunks_done = push.chunks_done.max(chunk + 1);
        push.state = PushState::Processing;
        push.updated_at = now;
        push.last_step_at = now;
        change.put(cf::PUSHES, &keys::push(push_id), &push);
        // A pipeline: rayon signs this chunk while the publisher writes the
        // chunk before (signed meanwhile) and prepares the next; each
        // chunk's disk wait overlaps the work after it.
        let (sent, versions) = std::sync::mpsc::sync_channel(1);
        let (keys, business, owner) = (self.keys.clone(), ctx.business.clone(), push_id.to_owned());
        rayon::spawn(move || {
            let signed = to_sign
                .into_par_iter()
                .map(|(record, seal_json, sidecar)| {
                    sign_version(&keys, &record, &business, seal_json, &sidecar, &owner, None, now)
                })
                .collect();
            let _ = sent.send(signed);
        });
        let this = Signing { push_id: push_id.to_owned(), change, now, versions };
        let before = self.signing.replace(this);
        // The chunk before goes to disk next; the one before it is there
        // once that write starts (the log drains it first).
        let [signing, _] = std::mem::take(&mut self.in_flight.heads);
        self.in_flight =
            InFlight { heads: [heads, signing], pushes: HashMap::from([(push_id.to_owned(), push.clone())]) };
        if let Err(e) = self.write_signed(before) {
            // This chunk was prepared on the one before, which is not written.
            self.signing = None;
            self.in_flight = InFlight::default();
            return Err(e);
        }
        Ok(push)
    }

    /// A record's new live version: its row projected and signed, its
    /// sidecar signed, its head pointing at it. The caller stores them.
    #[allow(clippy::too_many_arguments)]
    fn live_version(
        &self,
        record: &ValidRecord,
        business: &Business,
        was_live: bool,
        seal_json: Vec<u8>,
        sidecar: Sidecar,
        push_id: &str,
        source: RecordSource,
        ad: Option<AdParts>,
        now: UnixMs,
    ) -> Result<(Outcome, RecordHead, RecordVersion), EngineError> {
        let (outcome, head) = live_head(record, business, was_live, sidecar.generation, source, now);
        let version = sign_version(&self.keys, record, business, seal_json, &sidecar, push_id, ad, now)?;
        Ok((outcome, head, version))
    }

    /// Publishes one record a person sealed with a passkey (Path B, the
    /// business portal's save). The caller has verified the seal; this
    /// validates the record and stores its live version in one write.
    pub fn save_sealed(&mut self, save: SealedSave) -> Result<Result<Saved, Vec<records::RecordError>>, EngineError> {
        self.settle_writes()?;
        let ctx = self.business_context(&save.business_uuid, None)?;
        let record = match records::validate(&save.bytes, save.record_type, &ctx.validation) {
            Ok(record) => record,
            Err(errors) => return Ok(Err(errors)),
        };
        let record_id = record.record_id(&save.business_uuid);
        let head = self.registry.record_head(&record_id)?;
        let generation = head.as_ref().map_or(1, |h| h.generation + 1);
        let was_live = head.as_ref().is_some_and(|h| h.state == RecordState::Live && h.live_generation > 0);
        let was_withdrawn = head.as_ref().is_some_and(|h| h.state == RecordState::Withdrawn);
        let sidecar = Sidecar {
            v: 2,
            record_id: record_id.clone(),
            business_uuid: save.business_uuid.clone(),
            record_type: save.record_type.name().into(),
            origin: record.origin(),
            generation,
            path: "B".into(),
            seal_digest: sha256_prefixed(&save.seal_json),
            key_id: save.key_id.clone(),
            cert_id: save.cert_id.clone(),
            certificate_status: save.certificate_status.clone(),
            ai_policy_version: save.ai_policy_version,
            scope: ResolvedScope {
                basis: "grant".into(),
                id: save.key_id.clone(),
                record_types: vec![save.record_type.name().into()],
                countries: record.countries().to_vec(),
            },
            batch_id: None,
            leaf_index: None,
            geocoded: None,
            accepted_at: save.now.to_rfc3339_millis(),
        };
        let mut change = Change::new();
        let ad = (save.record_type == RecordType::Ads).then(|| {
            let mut creative = serde_json::Map::new();
            for (slot, image) in &save.images {
                let hex = hex::encode(sha256(&image.bytes));
                creative.insert(slot.creative_member().into(), format!("sha256:{hex}").into());
                change.put(cf::AD_IMAGES, hex.as_bytes(), image);
            }
            let origin_seal = serde_json::from_slice(&save.seal_json).unwrap_or_default();
            AdParts { origin_seal, creative }
        });
        let (outcome, head, version) = self.live_version(
            &record,
            &ctx.business,
            was_live,
            save.seal_json,
            sidecar,
            "",
            RecordSource::Manual,
            ad,
            save.now,
        )?;
        change.put(cf::VERSIONS, &keys::version(&record_id, generation), &version);
        change.put(cf::RECORDS, record_id.as_bytes(), &head);
        list_live(&mut change, &save.business_uuid, save.record_type, &record_id, was_withdrawn);
        queue_seal(&mut change, &version.seal, save.now);
        self.log.commit(change, save.now)?;
        Ok(Ok(Saved { outcome, record_id, version: generation, sha256: record.origin() }))
    }

    /// Writes a push's final state: settled pushes are never touched again.
    fn settle(&mut self, push: &mut PushRecord, state: PushState, now: UnixMs) -> StoreResult<()> {
        push.state = state;
        push.completed_at = Some(now);
        push.updated_at = now;
        push.last_step_at = now;
        let mut change = Change::new();
        change.put(cf::PUSHES, &keys::push(&push.push_id), &*push);
        self.log.commit(change, now)?;
        self.trees.remove(&push.push_id);
        if self.staged.as_ref().is_some_and(|(id, _)| *id == push.push_id) {
            self.staged = None;
        }
        Ok(())
    }

    /// Marks a push whose every record is settled as `complete` or `held`.
    pub fn finish(&mut self, push_id: &str, now: UnixMs) -> Result<PushRecord, EngineError> {
        self.settle_writes()?;
        let mut push = self.push(push_id)?.ok_or_else(|| EngineError::Invalid("unknown push".into()))?;
        if push.completed_at.is_some() || push.counts[4] > 0 {
            return Ok(push);
        }
        let state = if push.held { PushState::Held } else { PushState::Complete };
        self.settle(&mut push, state, now)?;
        tracing::info!(push_id, business = %push.business_uuid, state = push.state.name(), "push settled; owners and admins notified");
        Ok(push)
    }

    /// Stores the first answer given for an `Idempotency-Key`.
    pub fn remember_answer(&mut self, key_id: &str, idem: &str, answer: IdempotentAnswer) -> Result<(), EngineError> {
        self.settle_writes()?;
        let mut change = Change::new();
        change.put(cf::IDEMPOTENCY, &keys::idempotency(key_id, idem), &answer);
        self.log.commit(change, answer.at)?;
        Ok(())
    }

    /// Takes a live record out of serving (`withdraw`) or clears its bytes
    /// too (`delete`), queueing the purge of every older copy
    /// (`retention`). Hashes, rows' origins and log leaves stay.
    pub fn end_record(
        &mut self,
        business_uuid: &str,
        record_id: &str,
        delete: bool,
        seal_json: &[u8],
        now: UnixMs,
    ) -> Result<Option<RecordHead>, EngineError> {
        self.settle_writes()?;
        let Some(mut head) = self.registry.record_head(record_id)? else { return Ok(None) };
        if head.business_uuid != business_uuid || matches!(head.state, RecordState::Deleted) {
            return Ok(None);
        }
        if !delete && head.state == RecordState::Withdrawn {
            return Ok(None);
        }
        if !delete && crate::sabotage::on(crate::sabotage::Sabotage::IgnoredWithdrawals) {
            return Ok(Some(head));
        }
        let mut change = Change::new();
        head.state = if delete { RecordState::Deleted } else { RecordState::Withdrawn };
        head.last_updated = now;
        head.prices.clear();
        if delete {
            // Only the fingerprints stay: each version's seal (its hash).
            for generation in 1..=head.generation {
                if let Some(mut version) = self.registry.record_version(record_id, generation)? {
                    version.purge_content();
                    change.put(cf::VERSIONS, &keys::version(record_id, generation), &version);
                }
            }
            // Every node purges what older entries and files still hold.
            let purge = Purge { record_id: record_id.to_owned(), generations: head.generation, deleted_at: now };
            change.put(cf::PURGES, &keys::purge(self.log.next_seq(), record_id), &purge);
        }
        change.put(cf::RECORDS, record_id.as_bytes(), &head);
        let entry = keys::catalogue(business_uuid, head.record_type.name(), record_id);
        change.delete(cf::CATALOGUE, &entry);
        // The portal lists what was withdrawn, to delete it later.
        if delete {
            change.delete(cf::WITHDRAWN, &entry);
        } else {
            change.put(cf::WITHDRAWN, &entry, &());
        }
        queue_seal(&mut change, seal_json, now);
        self.log.commit(change, now)?;
        Ok(Some(head))
    }
}

/// Every second call answers true (`Sabotage::LostVersions`).
fn lost_version() -> bool {
    static WRITTEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    WRITTEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 2 == 1
}

/// Queues a seal's leaf for the transparency log, in the write that accepts it.
pub fn queue_seal(change: &mut Change, envelope_json: &[u8], now: UnixMs) {
    match Envelope::parse(envelope_json) {
        Ok(envelope) => {
            let leaf = svc_core::tlog::seal_leaf(&envelope);
            crate::transparency::queue(change, svc_store::model::LeafKind::Seal, leaf, now);
        }
        // Callers pass seals they verified; an empty one is an end driven
        // straight through the publisher (tests), with nothing to log.
        Err(reason) if !envelope_json.is_empty() => {
            tracing::warn!(%reason, "a seal that does not parse was not queued for the log");
        }
        Err(_) => {}
    }
}

/// The JSON payload bytes inside a batch seal envelope.
fn push_payload(envelope_json: &[u8]) -> Vec<u8> {
    Envelope::parse(envelope_json).ok().and_then(|e| e.payload_bytes().ok()).unwrap_or_default()
}

/// A product's prices as (country, currency, amount × 10^4).
fn product_prices(record: &ValidRecord) -> Vec<(String, String, i64)> {
    let Some(prices) = record.value().get("prices").and_then(|p| p.as_array()) else { return Vec::new() };
    prices
        .iter()
        .filter_map(|p| {
            let country = p.get("country")?.as_str()?.to_owned();
            let currency = p.get("currency")?.as_str()?.to_owned();
            let amount = price_shock::parse_amount(p.get("amount")?.as_str()?)?;
            Some((country, currency, amount))
        })
        .collect()
}

fn text_member(value: &serde_json::Value, name: &str) -> Option<String> {
    value.get(name).and_then(|v| v.as_str()).map(str::to_owned)
}

fn pending_leaf(i: u64, bytes: &[u8], record: &ValidRecord, business_uuid: &str) -> PushLeaf {
    PushLeaf {
        leaf_index: i,
        bytes: bytes.to_vec(),
        outcome: Outcome::Pending,
        record_id: Some(record.record_id(business_uuid)),
        version: None,
        sha256: Some(record.origin()),
        seal_digest: None,
        errors: Vec::new(),
        business_product_id: Some(record.own_id().to_owned()),
        product_name: text_member(record.value(), "product_name"),
    }
}

fn rejected_leaf(i: u64, bytes: &[u8], errors: &[records::RecordError]) -> PushLeaf {
    let value: Option<serde_json::Value> = serde_json::from_slice(bytes).ok();
    let member = |name: &str| value.as_ref().and_then(|v| text_member(v, name));
    PushLeaf {
        leaf_index: i,
        bytes: Vec::new(),
        outcome: Outcome::Rejected,
        record_id: None,
        version: None,
        sha256: Some(sha256_prefixed(bytes)),
        seal_digest: None,
        errors: errors.iter().map(|e| (e.code.as_str().to_owned(), e.pointer.clone(), e.detail.clone())).collect(),
        business_product_id: member("business_product_id"),
        product_name: member("product_name"),
    }
}

/// Lists a record that is live again in the business's catalogue, and off
/// the portal's list of withdrawn records if it was on it.
pub(crate) fn list_live(
    change: &mut Change,
    business_uuid: &str,
    record_type: RecordType,
    record_id: &str,
    was_withdrawn: bool,
) {
    let entry = keys::catalogue(business_uuid, record_type.name(), record_id);
    change.put(cf::CATALOGUE, &entry, &());
    if was_withdrawn {
        change.delete(cf::WITHDRAWN, &entry);
    }
}
