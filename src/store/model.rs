//! What the store holds. Every struct here is postcard-encoded (after the
//! store's version byte); JSON that is served byte for byte (records,
//! envelopes, rows, JWKs) is kept as bytes.
//!
//! A state, kind or source is an enum, never a free string. Those stored by
//! name ([`Named`], `#[serde(with = "by_name")]`) keep the bytes older builds
//! wrote (a postcard string), so no stored value changes layout, and a name
//! this build does not know fails to decode instead of being carried along;
//! the name also keeps the stored form apart from the order of the variants.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use svc_core::custody::Custody;
use svc_core::ids::RecordType;
use svc_core::publish::outcome::{Outcome, PushState, Source};
use svc_core::seal::CertificateStatus;
use svc_core::time::UnixMs;

/// An enum stored by the name it always had as a string.
pub trait Named: Sized + Copy + 'static {
    const ALL: &'static [Self];

    fn name(self) -> &'static str;

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.name() == name)
    }
}

/// `#[serde(with = "by_name")]`: a [`Named`] enum as its name. The name is
/// a newtype struct named for the enum's type, which postcard and JSON
/// write as the bare string: a tool that reads the stored formats
/// (serde-reflection, in the tables test) tells the enums apart by it and
/// can be given a valid name for each.
pub mod by_name {
    use super::*;

    pub fn serialize<T: Named, S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_newtype_struct(std::any::type_name::<T>(), value.name())
    }

    pub fn deserialize<'de, T: Named, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
        let name = deserializer.deserialize_newtype_struct(std::any::type_name::<T>(), NameVisitor)?;
        T::from_name(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown stored name {name:?}")))
    }

    /// Reads the name inside the newtype (or, from a format that writes
    /// none, the bare string).
    struct NameVisitor;

    impl<'de> serde::de::Visitor<'de> for NameVisitor {
        type Value = String;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a stored name")
        }

        fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
            String::deserialize(deserializer)
        }

        fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<String, E> {
            Ok(name.to_owned())
        }

        fn visit_string<E: serde::de::Error>(self, name: String) -> Result<String, E> {
            Ok(name)
        }
    }
}

/// A [`Named`] enum as [`by_name`] stores it, for a test that records each
/// enum's name as a sample.
pub struct ByName<T: Named>(pub T);

impl<T: Named> Serialize for ByName<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        by_name::serialize(&self.0, serializer)
    }
}

impl<'de, T: Named> Deserialize<'de> for ByName<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        by_name::deserialize(deserializer).map(ByName)
    }
}

/// `#[serde(with = "by_name_option")]`: an optional [`Named`] enum.
pub mod by_name_option {
    use super::*;

    pub fn serialize<T: Named, S: Serializer>(value: &Option<T>, serializer: S) -> Result<S::Ok, S::Error> {
        value.map(ByName).serialize(serializer)
    }

    pub fn deserialize<'de, T: Named, D: Deserializer<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
        Ok(Option::<ByName<T>>::deserialize(deserializer)?.map(|named| named.0))
    }
}

/// Declares a [`Named`] enum with its names (also its JSON form).
macro_rules! named_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text)] $variant),+
        }

        impl Named for $name {
            const ALL: &'static [Self] = &[$($name::$variant),+];

            fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                self.name()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

/// Names of enums `svc-core` defines, as they were stored.
impl Named for RecordType {
    const ALL: &'static [Self] = &RecordType::ALL;

    fn name(self) -> &'static str {
        RecordType::name(self)
    }
}

impl Named for Outcome {
    const ALL: &'static [Self] = &Outcome::ALL;

    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Named for PushState {
    const ALL: &'static [Self] =
        &[PushState::Queued, PushState::Processing, PushState::Complete, PushState::Held, PushState::Failed];

    fn name(self) -> &'static str {
        match self {
            PushState::Queued => "queued",
            PushState::Processing => "processing",
            PushState::Complete => "complete",
            PushState::Held => "held",
            PushState::Failed => "failed",
        }
    }
}

impl Named for Source {
    const ALL: &'static [Self] = &[Source::Api, Source::Bulk];

    fn name(self) -> &'static str {
        match self {
            Source::Api => "api",
            Source::Bulk => "bulk",
        }
    }
}

impl Named for Custody {
    const ALL: &'static [Self] = &[Custody::Hosted, Custody::OwnKey];

    fn name(self) -> &'static str {
        self.as_str()
    }
}

named_enum! {
    /// What a business key is for.
    KeyPurpose {
        Integration = "integration",
        Sealing = "sealing",
    }
}

named_enum! {
    /// A business key's kind.
    KeyKind {
        Ed25519 = "ed25519",
        P256 = "p256",
        Passkey = "passkey",
    }
}

named_enum! {
    /// A passkey holder's role.
    PasskeyRole {
        Owner = "owner",
        Admin = "admin",
        /// A business's: manages integration keys, seals nothing.
        Developer = "developer",
        /// An AI company's: manages retrieval keys.
        IntegrationManager = "integration_manager",
    }
}

named_enum! {
    /// How a record's current version arrived.
    RecordSource {
        /// A push through the API.
        Api = "api",
        /// A bulk import.
        Import = "import",
        /// Saved by a person with a passkey (the portal).
        Manual = "manual",
    }
}

impl RecordSource {
    /// The source of a record a push of `source` published.
    pub fn of_push(source: Source) -> RecordSource {
        match source {
            Source::Api => RecordSource::Api,
            Source::Bulk => RecordSource::Import,
        }
    }
}

named_enum! {
    /// The kinds of leaf the transparency log holds.
    LeafKind {
        Seal = "seal",
        KeyAdded = "key_added",
        KeyRevoked = "key_revoked",
        KeyCustody = "key_custody",
        ReceiptMinute = "receipt_minute",
    }
}

named_enum! {
    /// Whether a campaign places its items now.
    CampaignState {
        Active = "active",
        Paused = "paused",
        Ended = "ended",
    }
}

/// Production or sandbox. Keys, tokens and data of one never serve the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Environment {
    Production,
    Sandbox,
}

impl Environment {
    pub fn is_sandbox(self) -> bool {
        self == Environment::Sandbox
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Business {
    pub uuid: String,
    pub legal_name: String,
    pub country: String,
    pub created_at: UnixMs,
    /// Brand names the business owns or sells (from its business file), used
    /// by the scope check. Kept here so every record push can read them.
    pub brands: Vec<String>,
}

/// One issuance of a certificate. A status change is a new issuance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CertificateIssuance {
    pub cert_id: String,
    pub business_uuid: String,
    pub status: CertificateStatus,
    pub status_effective_from: UnixMs,
    pub issued_at: UnixMs,
    pub status_reason: Option<String>,
    /// The dual-signed `certificate.v1` envelope, as issued.
    #[serde(with = "serde_bytes")]
    pub envelope: Vec<u8>,
}

impl CertificateIssuance {
    pub fn as_core(&self) -> svc_core::seal::Issuance {
        svc_core::seal::Issuance {
            cert_id: self.cert_id.clone(),
            status: self.status,
            status_effective_from: self.status_effective_from,
            issued_at: self.issued_at,
        }
    }
}

/// A business's key: an integration key (Ed25519 or P-256) or a sealing passkey.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BusinessKey {
    pub key_id: String,
    pub business_uuid: String,
    #[serde(with = "by_name")]
    pub purpose: KeyPurpose,
    #[serde(with = "by_name")]
    pub kind: KeyKind,
    /// For passkeys.
    #[serde(with = "by_name_option")]
    pub role: Option<PasskeyRole>,
    #[serde(with = "serde_bytes")]
    pub jwk: Vec<u8>,
    pub valid_from: UnixMs,
    pub valid_until: Option<UnixMs>,
    pub revocation_effective_from: Option<UnixMs>,
    pub compromised_at: Option<UnixMs>,
    pub registered_at: UnixMs,
    pub environment: Environment,
    /// Sandbox integration keys: the grant that introduces the key on its
    /// first request, the one-hour bearer token's digest, and whether the
    /// sandbox has seen the grant.
    pub sandbox: Option<SandboxCredentials>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxCredentials {
    pub grant: String,
    pub bearer_sha256: String,
    pub introduced: bool,
}

impl BusinessKey {
    pub fn validity(&self) -> svc_core::seal::KeyValidity {
        svc_core::seal::KeyValidity {
            valid_from: self.valid_from,
            valid_until: self.valid_until,
            revocation_effective_from: self.revocation_effective_from,
            compromised_at: self.compromised_at,
        }
    }

    /// Usable to sign a request at `now`: registered, not revoked, in validity.
    pub fn live_at(&self, now: UnixMs) -> bool {
        self.validity().judge(now).is_ok()
    }
}

/// A key-custody statement, as issued (never edited; a change is a new one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustodyRecord {
    pub business_uuid: String,
    pub key_id: String,
    #[serde(with = "by_name")]
    pub custody: Custody,
    pub effective_from: UnixMs,
    pub issued_at: UnixMs,
    pub statement_id: String,
    /// The dual-signed `key-custody.v1` envelope.
    #[serde(with = "serde_bytes")]
    pub envelope: Vec<u8>,
}

/// A mandate, as sealed and as judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MandateRecord {
    pub mandate_id: String,
    pub business_uuid: String,
    pub key_id: String,
    /// The passkey-sealed `mandate.v1` envelope.
    #[serde(with = "serde_bytes")]
    pub envelope: Vec<u8>,
    pub record_types: Vec<String>,
    pub countries: Vec<String>,
    pub records_per_hour: u64,
    pub bytes_per_day: u64,
    pub source_ip_allow_list: Option<Vec<String>>,
    pub valid_from: UnixMs,
    pub valid_until: UnixMs,
    pub revoked_at: Option<UnixMs>,
}

impl MandateRecord {
    pub fn live_at(&self, now: UnixMs) -> bool {
        self.valid_from <= now && now <= self.valid_until && self.revoked_at.is_none_or(|r| now < r)
    }

    /// Whether it was live at `at` for `record_type` in every one of `countries`.
    pub fn covers(&self, at: UnixMs, record_type: &str, countries: &[String]) -> bool {
        self.live_at(at)
            && self.record_types.iter().any(|t| t == record_type)
            && countries.iter().all(|c| self.countries.contains(c))
    }
}

/// One sealed version of a business's AI policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AiPolicyVersion {
    pub business_uuid: String,
    pub version: u64,
    pub record_id: String,
    #[serde(with = "serde_bytes")]
    pub bytes: Vec<u8>,
    #[serde(with = "serde_bytes")]
    pub seal: Vec<u8>,
    pub live_from: UnixMs,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Company {
    pub uuid: String,
    pub name: String,
    pub verified: bool,
    pub terms_accepted: Option<u64>,
    pub environment: Environment,
    pub created_at: UnixMs,
}

/// An AI group: the unit a business blocks and whose keys share receipts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    pub group_id: String,
    pub company_uuid: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetrievalKey {
    pub key_id: String,
    pub group_id: String,
    pub company_uuid: String,
    #[serde(with = "serde_bytes")]
    pub jwk: Vec<u8>,
    pub environment: Environment,
    pub registered_at: UnixMs,
    pub revoked_at: Option<UnixMs>,
    /// Sandbox keys: the grant that introduces the key on its first request.
    pub grant: Option<String>,
    /// Sandbox keys: SHA-256 of the one-hour bearer token (valid for the
    /// hour after `registered_at`).
    pub bearer_sha256: Option<String>,
    /// Sandbox keys: set once the sandbox has seen the grant.
    pub introduced: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    pub business_uuid: String,
    pub group_id: String,
    pub since: UnixMs,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TermsVersion {
    pub version: u64,
    pub effective_from: UnixMs,
    pub text: String,
    pub sha256: String,
}

/// Whether a company is prepaid: the part of its allowance every region
/// holds. A company with none is not prepaid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BillingPlan {
    pub company_uuid: String,
    pub prepay: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allowance {
    pub company_uuid: String,
    pub prepay: bool,
    /// Billable units left for a prepay company.
    pub remaining: i64,
}

/// Where a record stands now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordState {
    Live,
    Held,
    Withdrawn,
    Deleted,
}

/// A record's current state, one per record id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordHead {
    pub record_id: String,
    #[serde(with = "by_name")]
    pub record_type: RecordType,
    pub business_uuid: String,
    pub own_id: String,
    /// The newest stored version (held versions included).
    pub generation: u64,
    /// The version served; 0 when none ever went live.
    pub live_generation: u64,
    pub state: RecordState,
    pub last_updated: UnixMs,
    #[serde(with = "by_name")]
    pub source: RecordSource,
    /// Live prices for the price-shock rule: (country, currency, amount × 10^4).
    pub prices: Vec<(String, String, i64)>,
}

/// One stored version of a record: its exact bytes and what was signed for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordVersion {
    pub record_id: String,
    pub generation: u64,
    #[serde(with = "serde_bytes")]
    pub bytes: Vec<u8>,
    /// JSON of the served seal (record envelope or batch membership).
    #[serde(with = "serde_bytes")]
    pub seal: Vec<u8>,
    /// JSON of the signed sidecar envelope.
    #[serde(with = "serde_bytes")]
    pub sidecar: Vec<u8>,
    /// JSON of the signed row.
    #[serde(with = "serde_bytes")]
    pub row: Vec<u8>,
    pub published_at: UnixMs,
    pub push_id: String,
}

impl RecordVersion {
    /// Clears what a delete purges (the bytes, and the row and sidecar made
    /// from them), keeping the seal: the fingerprint. Answers whether
    /// anything was left to clear.
    pub fn purge_content(&mut self) -> bool {
        let held = !(self.bytes.is_empty() && self.row.is_empty() && self.sidecar.is_empty());
        self.bytes.clear();
        self.row.clear();
        self.sidecar.clear();
        held
    }

    /// The key that sealed this version and when, read from its served
    /// seal; `None` when the seal cannot be read.
    pub fn sealed_by(&self) -> Option<(String, UnixMs)> {
        serde_json::from_slice::<svc_core::seal::ServedSeal>(&self.seal).ok()?.sealed_by()
    }
}

/// A sandbox AI company whose data expired 90 days after its last use
/// (R1.42): its groups, whose receipts every node forgets, and its keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpiredCaller {
    pub company_uuid: String,
    pub groups: Vec<String>,
    pub keys: Vec<String>,
    pub expired_at: UnixMs,
}

/// The Terms version an AI company accepted, pinned by its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TermsAcceptance {
    pub version: u64,
    pub sha256: String,
    pub accepted_at: UnixMs,
}

/// An AI company's opt-in to the key directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectoryListing {
    pub listed_since: UnixMs,
}

/// A deleted record whose bytes every node purges: the versions up to
/// `generations` (a later push of the same id is a new record's bytes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Purge {
    pub record_id: String,
    pub generations: u64,
    pub deleted_at: UnixMs,
}

/// A push (an API batch or a bulk import), as the business polls it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushRecord {
    pub push_id: String,
    pub business_uuid: String,
    pub key_id: String,
    #[serde(with = "by_name")]
    pub record_type: RecordType,
    pub seq: u64,
    #[serde(with = "by_name")]
    pub source: Source,
    #[serde(with = "by_name")]
    pub state: PushState,
    pub held: bool,
    pub held_reasons: Vec<String>,
    pub records: u64,
    pub received_at: UnixMs,
    pub updated_at: UnixMs,
    pub completed_at: Option<UnixMs>,
    pub error: Option<String>,
    pub chunks: u64,
    pub chunks_done: u64,
    /// SHA-256 over the batch seal payload and every record: the resend key.
    #[serde(with = "serde_bytes")]
    pub fingerprint: Vec<u8>,
    /// The batch seal envelope JSON as received.
    #[serde(with = "serde_bytes")]
    pub batch_seal: Vec<u8>,
    pub cert_id: String,
    pub ai_policy_version: u64,
    pub mandate_id: String,
    /// accepted, updated, rejected, held, pending.
    pub counts: [u64; 5],
    pub last_step_at: UnixMs,
    /// Bulk imports: the upload whose file holds the records.
    pub upload_id: Option<String>,
    /// Every record has its result row (always, for API pushes; once the
    /// file was read, for bulk imports).
    pub staged: bool,
}

/// A bulk upload address and, once it arrived, its file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadRecord {
    pub upload_id: String,
    pub business_uuid: String,
    pub key_id: String,
    #[serde(with = "by_name")]
    pub record_type: RecordType,
    pub created_at: UnixMs,
    pub expires_at: UnixMs,
    /// Set once the file is stored: its size and line count.
    pub bytes: Option<u64>,
    pub records: Option<u64>,
    pub uploaded_at: Option<UnixMs>,
    /// The import that reads it, once one was accepted.
    pub push_id: Option<String>,
    /// Set when the file is deleted (import complete, or kept 7 days).
    pub deleted_at: Option<UnixMs>,
}

/// One record of a push: its bytes until settled, then its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushLeaf {
    pub leaf_index: u64,
    /// The record's exact bytes; cleared once the leaf is settled.
    #[serde(with = "serde_bytes")]
    pub bytes: Vec<u8>,
    #[serde(with = "by_name")]
    pub outcome: Outcome,
    pub record_id: Option<String>,
    pub version: Option<u64>,
    pub sha256: Option<String>,
    pub seal_digest: Option<String>,
    /// (code, JSON pointer, detail).
    pub errors: Vec<(String, String, String)>,
    pub business_product_id: Option<String>,
    pub product_name: Option<String>,
}

impl PushRecord {
    /// The counts by outcome (stored in the order accepted, updated,
    /// rejected, held, pending).
    pub fn outcome_counts(&self) -> svc_core::publish::outcome::Counts {
        let c = &self.counts;
        svc_core::publish::outcome::Counts { accepted: c[0], updated: c[1], rejected: c[2], held: c[3], pending: c[4] }
    }
}

/// The batch a key sent under one `seq`, for the resend rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeqEntry {
    pub push_id: String,
    #[serde(with = "serde_bytes")]
    pub fingerprint: Vec<u8>,
}

/// A stored first answer for an `Idempotency-Key`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdempotentAnswer {
    #[serde(with = "serde_bytes")]
    pub fingerprint: Vec<u8>,
    pub status: u16,
    #[serde(with = "serde_bytes")]
    pub body: Vec<u8>,
    pub location: Option<String>,
    pub at: UnixMs,
}

/// What a billed request was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageKind {
    Search,
    Fetch,
    /// An ad pool: receipted, never billed.
    Pool,
}

/// One billed request. Keyed by (key id, nonce), so each signed request is
/// counted once whichever region answered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageEvent {
    pub company_uuid: String,
    pub group_id: String,
    pub key_id: String,
    pub nonce: String,
    pub kind: UsageKind,
    pub retrieval_id: String,
    pub region: String,
    pub at: UnixMs,
}

/// Home: allowance units set aside for a region's lease, and how many of
/// them home has billed so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantedLease {
    pub company_uuid: String,
    pub region: String,
    pub granted: i64,
    pub billed: i64,
    /// After this (and a grace for late reports) home takes back what was
    /// not billed.
    pub expires_at: UnixMs,
}

/// A read region: the lease it serves a company from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldLease {
    /// 0 for a company without a prepay allowance (nothing to return).
    pub lease_id: u64,
    pub prepay: bool,
    pub granted: i64,
    /// Units not yet billed.
    pub left: i64,
    pub granted_at: UnixMs,
    pub expires_at: UnixMs,
}

/// Billed requests of one company on one UTC day.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayUsage {
    pub searches: u64,
    pub fetches: u64,
}

/// A receipt as this region issued it, in served order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredReceipt {
    /// The region's receipt sequence; set by the receipt log.
    pub seq: u64,
    pub group_id: String,
    pub company_uuid: String,
    pub caller_key_id: String,
    pub retrieval_id: String,
    pub kind: UsageKind,
    pub served_at: UnixMs,
    /// The country a search named (a fetch names none).
    pub country: Option<String>,
    /// The businesses whose records were served, each once (analytics).
    pub businesses: Vec<String>,
    /// The signed envelope's JSON.
    #[serde(with = "serde_bytes")]
    pub envelope: Vec<u8>,
}

/// A folded part of a minute of one region's receipts (`receipt_fold`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptRoot {
    pub region: String,
    pub minute: UnixMs,
    pub first_seq: u64,
    pub last_seq: u64,
    pub size: u64,
    pub root: [u8; 32],
}

/// A receipt as folding needs it: when it was served and its leaf hash
/// (`merkle::leaf_hash` of its envelope), hashed once as it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptLeaf {
    pub served_at: UnixMs,
    pub leaf: [u8; 32],
}

/// Where a folded receipt is: its part (by first receipt) and its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptPlace {
    pub first_seq: u64,
    pub index: u64,
}

/// A leaf waiting for the transparency log's next sequencing (home only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingLeaf {
    #[serde(with = "by_name")]
    pub kind: LeafKind,
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
    pub queued_at: UnixMs,
}

/// A sequenced leaf of the transparency log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogLeaf {
    pub index: u64,
    #[serde(with = "by_name")]
    pub kind: LeafKind,
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
    pub hash: [u8; 32],
    pub sequenced_at: UnixMs,
}

/// A signed checkpoint of the transparency log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogCheckpoint {
    pub size: u64,
    pub root: [u8; 32],
    /// The C2SP signed note.
    pub note: String,
    pub at: UnixMs,
}

/// A witness's cosignature on the checkpoint of one tree size: its note
/// signature line (c2sp.org/tlog-cosignature) and the time it gives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cosignature {
    pub witness: String,
    pub line: String,
    pub timestamp: u64,
}

/// A business whose authorised endpoints lost domain assurance: `purchase`
/// is withheld on its rows and its business file shows `suspended`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointsSuspension {
    pub business_uuid: String,
    pub since: UnixMs,
    pub reason: String,
}

/// What one AI group asked of one business in one country and hour.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HourCounts {
    /// Searches that served at least one of the business's rows.
    pub searches: u64,
    /// Fetches of the business's records.
    pub fetches: u64,
}

/// A charge home credited back (`ad_refunds`): another region had charged
/// the same conversation's render or click before either knew of the
/// other. The analytics actor takes it off the business's spend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdRefund {
    pub business_uuid: String,
    pub group_id: String,
    pub country: Option<String>,
    /// When the charge was made: the hour it was counted in.
    pub at: UnixMs,
    pub amount: svc_core::ads::Micros,
}

/// What one AI group confirmed of one business's ads and paid rows in one
/// country and hour (`ad_analytics`, keyed as `analytics` is).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdHourCounts {
    pub renders: u64,
    pub clicks: u64,
    /// Charged, in micro-dollars.
    pub spend: u64,
}

/// An accepted render or click, for the business's analytics: written with
/// the confirmation (home's in `ad_events`, a read region's in its outbox)
/// and counted at home once, by the region's sequence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdEvent {
    /// The confirming region's own sequence of events.
    pub seq: u64,
    pub business_uuid: String,
    pub group_id: String,
    /// The pool's or search's country.
    pub country: Option<String>,
    pub at: UnixMs,
    pub click: bool,
    pub charged: svc_core::ads::Micros,
}

named_enum! {
    /// What a WebAuthn ceremony the portal began is for.
    CeremonyKind {
        /// An invited person creates their passkey.
        Register = "register",
        /// A person signs in.
        SignIn = "sign_in",
        /// A person seals a save.
        Seal = "seal",
    }
}

/// A person of a business's portal. Home only: nothing that names a person
/// leaves the portal (their passkeys are listed anonymously).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Person {
    pub person_id: String,
    /// The business's uuid, or the AI company's (the portals share people).
    pub account_uuid: String,
    /// Lower case; one business's portal at a time.
    pub email: String,
    pub name: String,
    #[serde(with = "by_name")]
    pub role: PasskeyRole,
    pub passkeys: Vec<PersonPasskey>,
    pub added_at: UnixMs,
    pub removed_at: Option<UnixMs>,
}

/// One of a person's passkeys: the business key it is, and the relying
/// party's credential (webauthn-rs's JSON: credential id, COSE key, counter).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonPasskey {
    pub key_id: String,
    #[serde(with = "serde_bytes")]
    pub credential: Vec<u8>,
    pub added_at: UnixMs,
}

/// Where a person is: the key of their `people` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonRef {
    pub account_uuid: String,
    pub person_id: String,
}

/// An invitation to a business's portal, by the digest of its token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invitation {
    pub account_uuid: String,
    pub email: String,
    #[serde(with = "by_name")]
    pub role: PasskeyRole,
    /// The person who invited, or `None` for the operator's first owner.
    pub invited_by: Option<String>,
    pub invited_at: UnixMs,
    pub expires_at: UnixMs,
}

/// A signed-in person's session, by the digest of its cookie.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortalSession {
    pub person: PersonRef,
    /// The passkey the person signed in with: the one that seals.
    pub key_id: String,
    /// The token every state change must carry.
    pub csrf: String,
    pub created_at: UnixMs,
    pub last_seen: UnixMs,
}

/// A WebAuthn ceremony in progress, by its random id; taken once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ceremony {
    #[serde(with = "by_name")]
    pub kind: CeremonyKind,
    /// The invitation's token digest (register) or the person (sign in, seal).
    pub subject: String,
    /// The relying party's state, or the save being sealed, as JSON.
    #[serde(with = "serde_bytes")]
    pub state: Vec<u8>,
    pub expires_at: UnixMs,
}

/// A business's campaign (the spec shows none): its checked terms, the
/// records it places (ads, sponsored products, promoted events, jobs and
/// updates), whether it runs, and the money the operator put in. Replicated,
/// so every region knows what it may place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Campaign {
    /// `cmp_` and 24 hex digits.
    pub campaign_id: String,
    pub business_uuid: String,
    pub terms: svc_core::ads::campaign::Terms,
    pub items: Vec<String>,
    #[serde(with = "by_name")]
    pub state: CampaignState,
    /// What the operator funded, in micro-dollars; the campaign spends at
    /// most the lesser of this and its budget.
    pub funded: svc_core::ads::Micros,
    pub created_at: UnixMs,
    pub updated_at: UnixMs,
    /// The `campaign.v1` envelope a person's passkey signed in the portal
    /// (empty when the operator made the campaign).
    #[serde(with = "serde_bytes")]
    pub sealed: Vec<u8>,
}

impl Campaign {
    /// What it may spend at most: the lesser of its budget and its funds.
    pub fn spendable(&self) -> svc_core::ads::Micros {
        self.terms.budget.min(self.funded)
    }

    /// Whether it places `record_id` in a search of `country` now: active,
    /// funded, running there, and listing the record.
    pub fn places(&self, record_id: &str, country: &str) -> bool {
        self.state == CampaignState::Active
            && self.spendable().0 > 0
            && self.terms.runs_in(country, None)
            && self.items.iter().any(|i| i == record_id)
    }
}

/// One confirmation of a render or click token, as the serving region
/// recorded it, with the answer it gave (replayed for its Idempotency-Key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdConfirmation {
    pub idempotency_key: String,
    /// SHA-256 of the confirmation's body.
    pub request: [u8; 32],
    pub accepted: bool,
    /// What the campaign was charged for it.
    pub charged: svc_core::ads::Micros,
    pub at: UnixMs,
    pub answer: Vec<u8>,
}

/// A token's confirmations (`ad_tokens`), at most [`AdToken::MAX`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdToken {
    pub confirmations: Vec<AdConfirmation>,
}

impl AdToken {
    /// Confirmations one token keeps: a click token is confirmed once per
    /// click, and a caller clicking more often than this is not a person.
    pub const MAX: usize = 1_000;
}

/// An image an ad names, as the service fetched it (`ad_images`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdImage {
    pub content_type: String,
    pub width: u32,
    pub height: u32,
    #[serde(with = "serde_bytes")]
    pub bytes: Vec<u8>,
}

/// What a conversation did with one item (`ad_conversations`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdConversation {
    /// When the conversation first met the item: it is forgotten 24 hours on.
    pub first_at: UnixMs,
    /// Accepted renders, and the last one's time.
    pub renders: u32,
    pub rendered_at: Option<UnixMs>,
    pub clicked_at: Option<UnixMs>,
}

/// The sealing key the service holds for a business that chose hosted
/// signing, by business uuid (home only, never replicated): its secret,
/// and the owner's passkey-signed `custody-request.v1` that asked for it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostedKey {
    pub key_id: String,
    /// The Ed25519 seed: wrapped under the operator's key-encryption key
    /// (60 bytes, `svc_core::wrap`), or in clear (32) on a node without one.
    #[serde(with = "serde_bytes")]
    pub seed: Vec<u8>,
    /// The consent envelope as JSON bytes.
    #[serde(with = "serde_bytes")]
    pub consent: Vec<u8>,
    pub enabled_at: UnixMs,
}

/// The seed is never printed.
impl std::fmt::Debug for HostedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostedKey")
            .field("key_id", &self.key_id)
            .field("seed", &"[redacted]")
            .field("enabled_at", &self.enabled_at)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log leaf as older builds stored it, with its kind a string.
    #[derive(Serialize)]
    struct StringKindLeaf {
        index: u64,
        kind: String,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        hash: [u8; 32],
        sequenced_at: UnixMs,
    }

    #[test]
    fn named_states_keep_the_bytes_strings_had_and_refuse_unknown_names() {
        let leaf =
            LogLeaf { index: 3, kind: LeafKind::KeyAdded, data: vec![1, 2], hash: [7; 32], sequenced_at: UnixMs(9) };
        let old = StringKindLeaf {
            index: 3,
            kind: "key_added".into(),
            data: vec![1, 2],
            hash: [7; 32],
            sequenced_at: UnixMs(9),
        };
        let bytes = postcard::to_stdvec(&leaf).unwrap();
        assert_eq!(bytes, postcard::to_stdvec(&old).unwrap(), "the stored layout is unchanged");
        assert_eq!(postcard::from_bytes::<LogLeaf>(&bytes).unwrap(), leaf);
        let unknown = StringKindLeaf { kind: "key_rotated".into(), ..old };
        assert!(postcard::from_bytes::<LogLeaf>(&postcard::to_stdvec(&unknown).unwrap()).is_err());
        // Every name reads back as its variant, and JSON shows the same name.
        for kind in LeafKind::ALL {
            assert_eq!(LeafKind::from_name(kind.name()), Some(*kind));
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
        }
        for state in PushState::ALL {
            assert_eq!(serde_json::to_value(state).unwrap(), state.name());
        }
        for source in Source::ALL {
            assert_eq!(serde_json::to_value(source).unwrap(), source.name());
        }
        for custody in Custody::ALL {
            assert_eq!(serde_json::to_value(custody).unwrap(), custody.name());
        }
        for outcome in <Outcome as Named>::ALL {
            assert_eq!(serde_json::to_value(outcome).unwrap(), outcome.name());
        }
    }
}
