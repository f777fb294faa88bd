//! Every stored table, listed with its family, its keys, its value and its
//! version (`src/store/TABLES.md`), and each version's migration test: the
//! bytes of sample values as that version stored them, with the value's
//! format (`src/store/tables.lock`). The samples of every version must still
//! read, an older version's through the table's migrations; the current
//! version's must read and write back byte for byte. So a table added
//! without its record, or a value whose format changes while its version
//! stays, fails here; `SVC_BLESS_TABLES=1` records what is missing (a new
//! table, a new version), and never rewrites what was recorded.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_reflection::{Format, Registry, Samples, Tracer, TracerConfig};
use svc_store::{Table, cf};

use crate::common::sources::{root, rust_files};

/// Each enum stored by its name, with a name it has: what a trace gives
/// where the value holds one (an empty name is not one).
fn named_samples(tracer: &mut Tracer) -> Samples {
    use svc_core::custody::Custody;
    use svc_core::ids::RecordType;
    use svc_core::publish::outcome::{Outcome, PushState, Source};
    use svc_store::model::*;
    fn first<T: Named>(tracer: &mut Tracer, samples: &mut Samples) {
        tracer.trace_value(samples, &ByName(T::ALL[0])).unwrap();
    }
    let mut samples = Samples::new();
    first::<RecordType>(tracer, &mut samples);
    first::<Outcome>(tracer, &mut samples);
    first::<PushState>(tracer, &mut samples);
    first::<Source>(tracer, &mut samples);
    first::<Custody>(tracer, &mut samples);
    first::<KeyPurpose>(tracer, &mut samples);
    first::<KeyKind>(tracer, &mut samples);
    first::<PasskeyRole>(tracer, &mut samples);
    first::<RecordSource>(tracer, &mut samples);
    first::<LeafKind>(tracer, &mut samples);
    first::<CampaignState>(tracer, &mut samples);
    first::<CeremonyKind>(tracer, &mut samples);
    samples
}

/// The enums a value holds below its top, traced whole first: a trace of
/// the value alone meets only their first variant.
fn nested(tracer: &mut Tracer, samples: &Samples) {
    fn whole<T: DeserializeOwned>(tracer: &mut Tracer, samples: &Samples) {
        tracer.trace_type::<T>(samples).unwrap();
    }
    whole::<svc_node::replication::exchange::AdFactKind>(tracer, samples);
    whole::<svc_store::model::UsageKind>(tracer, samples);
    whole::<svc_node::replication::Op>(tracer, samples);
    whole::<svc_core::keyset::Purpose>(tracer, samples);
    whole::<svc_core::seal::CertificateStatus>(tracer, samples);
    whole::<svc_store::model::Environment>(tracer, samples);
    whole::<svc_core::assurance::DomainState>(tracer, samples);
    whole::<svc_store::model::RecordState>(tracer, samples);
    whole::<svc_core::ads::Basis>(tracer, samples);
    whole::<svc_core::ads::Format>(tracer, samples);
    whole::<svc_core::ads::Placement>(tracer, samples);
}

/// The containers `format` names, and those they name in turn: a table's
/// format, without the enums traced for other tables.
fn reachable(format: &Format, registry: Registry) -> Registry {
    let mut names: Vec<String> = type_names(&serde_json::to_value(format).unwrap());
    let mut kept = Registry::new();
    while let Some(name) = names.pop() {
        if kept.contains_key(&name) {
            continue;
        }
        if let Some(container) = registry.get(&name) {
            names.extend(type_names(&serde_json::to_value(container).unwrap()));
            kept.insert(name, container.clone());
        }
    }
    kept
}

/// Every `TYPENAME` in a format written as JSON.
fn type_names(json: &serde_json::Value) -> Vec<String> {
    match json {
        serde_json::Value::Object(map) => map
            .iter()
            .flat_map(|(k, v)| match (k.as_str(), v) {
                ("TYPENAME", serde_json::Value::String(name)) => vec![name.clone()],
                _ => type_names(v),
            })
            .collect(),
        serde_json::Value::Array(items) => items.iter().flat_map(type_names).collect(),
        _ => Vec::new(),
    }
}

/// Reads stored bytes and writes them back, or says why it cannot.
type Again = Box<dyn Fn(&[u8]) -> Result<Vec<u8>, String>>;

/// What the test knows of one table.
struct Listed {
    name: &'static str,
    family: &'static str,
    layout: &'static str,
    value: String,
    version: u8,
    /// Whether its family is parted by prefix, exact key or shape.
    parted: bool,
    /// The value's format, as serde-reflection traces it (or why it cannot).
    format: Result<String, String>,
    /// Sample values, encoded at the current version.
    samples: Vec<Vec<u8>>,
    /// Reads stored bytes of any version and writes them back as the
    /// current version does.
    again: Again,
}

fn listed<V: Serialize + DeserializeOwned + 'static>(table: Table<V>) -> Listed {
    let schema = *table.schema();
    let mut tracer = Tracer::new(TracerConfig::default());
    let samples = named_samples(&mut tracer);
    nested(&mut tracer, &samples);
    let traced = tracer.trace_type::<V>(&samples).and_then(|(format, values)| Ok((format, values, tracer.registry()?)));
    let (format, samples) = match traced {
        Ok((format, values, registry)) => (
            Ok(serde_json::to_string(&(&format, reachable(&format, registry))).unwrap()),
            values.iter().map(|v| svc_store::encode(table, v).unwrap()).collect(),
        ),
        Err(e) => (Err(e.to_string()), Vec::new()),
    };
    let value = std::any::type_name::<V>().replace("alloc::string::", "").replace("alloc::vec::", "");
    Listed {
        name: schema.table,
        family: schema.family,
        layout: schema.keys.layout,
        value,
        version: schema.version,
        parted: schema.keys.exact || !schema.keys.prefix.is_empty() || schema.keys.shape.is_some(),
        format,
        samples,
        again: Box::new(move |bytes| {
            let value: V = svc_store::decode(table, bytes).map_err(|e| e.to_string())?;
            svc_store::encode(table, &value).map_err(|e| e.to_string())
        }),
    }
}

macro_rules! tables {
    ($($table:expr),* $(,)?) => { vec![$(listed($table)),*] };
}

fn all() -> Vec<Listed> {
    tables![
        svc_http::sandbox::seed::SEED_STATE,
        svc_node::replication::exchange::OUTBOX,
        svc_node::replication::exchange::CLAIMS_OUT,
        svc_node::replication::exchange::NONCE_FEED,
        svc_node::replication::exchange::AD_FEED,
        svc_node::replication::REPLOG,
        svc_node::service_keys::SEEDS,
        svc_node::service_keys::ROTATIONS,
        svc_store::cf::meta::SCHEMA,
        svc_store::cf::meta::MIGRATING,
        svc_store::cf::meta::WRITE_PROBE,
        svc_store::cf::meta::LEASE_SEQ,
        svc_store::cf::meta::NONCE_FEED_CURSOR,
        svc_store::cf::meta::INDEX_APPLIED_SEQ,
        svc_store::cf::meta::ANALYTICS_APPLIED_SEQ,
        svc_store::cf::meta::AD_EVENTS_APPLIED,
        svc_store::cf::meta::REGION_RECEIPTS_THROUGH,
        svc_store::cf::meta::RECEIPT_FOLDED_SEQ,
        svc_store::cf::meta::RECEIPTS_SHIPPED_SEQ,
        svc_store::cf::meta::PURGED_THROUGH,
        svc_store::cf::meta::LOG_FORK,
        svc_store::cf::meta::RAFT_VOTE,
        svc_store::cf::meta::RAFT_COMMITTED,
        svc_store::cf::meta::RAFT_PURGED,
        svc_store::cf::meta::RAFT_APPLIED,
        svc_store::cf::meta::RAFT_SNAPSHOT,
        svc_store::cf::meta::EXPIRED_FORGOTTEN,
        svc_store::cf::meta::RECEIPT_KEY_ROTATIONS,
        svc_store::cf::meta::SERVICE_KEY_SEEDS_WRAPPED,
        svc_store::cf::meta::SERVICE_KEY_ROTATIONS_WRAPPED,
        svc_store::cf::meta::SERVICE_KEYS_CREATED_AT,
        svc_store::cf::meta::SANDBOX_COMPANY,
        svc_store::cf::meta::SANDBOX_BUSINESSES,
        svc_store::cf::meta::SANDBOX_CAMPAIGNS,
        svc_store::cf::meta::SANDBOX_REPUBLISHED_AT,
        svc_store::cf::meta::BUSINESS_USED,
        svc_store::cf::key_set::ENTRIES,
        svc_store::cf::key_set::DOCUMENT,
        svc_store::cf::key_set::DIRECTORY,
        svc_store::cf::ad_book::LEASES,
        svc_store::cf::ad_book::EVENT_SEQ,
        svc_store::cf::ad_book::FACT_SEQ,
        svc_store::cf::ad_book::FEED_CURSOR,
        svc_store::cf::ad_book::LEARNED,
        svc_store::cf::ad_book::CONVERSATION_SECRET,
        svc_store::cf::ad_book::TAKE_BPS,
        svc_store::cf::ad_book::BILLED_CLICKS,
        svc_store::cf::ad_book::CREDIT,
        svc_store::cf::ad_book::GRANTED,
        svc_store::cf::ad_book::RETURNED,
        svc_store::cf::ad_book::CREDITED,
        svc_store::cf::BUSINESSES,
        svc_store::cf::CERTIFICATES,
        svc_store::cf::INTEGRATION_KEYS,
        svc_store::cf::PASSKEYS,
        svc_store::cf::KEY_INDEX,
        svc_store::cf::MANDATES,
        svc_store::cf::AI_POLICIES,
        svc_store::cf::CUSTODY,
        svc_store::cf::COMPANIES,
        svc_store::cf::GROUPS,
        svc_store::cf::RETRIEVAL_KEYS,
        svc_store::cf::BLOCKS,
        svc_store::cf::TERMS,
        svc_store::cf::ALLOWANCES,
        svc_store::cf::BILLING_PLANS,
        svc_store::cf::RECORDS,
        svc_store::cf::VERSIONS,
        svc_store::cf::PUSHES,
        svc_store::cf::PUSH_LEAVES,
        svc_store::cf::PUSH_LEAF_HASHES,
        svc_store::cf::ATTEMPTS,
        svc_store::cf::LAST_SEQS,
        svc_store::cf::SEQS,
        svc_store::cf::IDEMPOTENCY,
        svc_store::cf::USAGE,
        svc_store::cf::USAGE_LEDGERS,
        svc_store::cf::USAGE_DAYS,
        svc_store::cf::RECEIPTS,
        svc_store::cf::RECEIPTS_BY_GROUP,
        svc_store::cf::RECEIPT_LEAVES,
        svc_store::cf::RECEIPT_SEQS,
        svc_store::cf::ANALYTICS,
        svc_store::cf::ENDPOINTS,
        svc_store::cf::NONCES,
        svc_store::cf::LEGACY_NONCES,
        svc_store::cf::UPLOADS,
        svc_store::cf::CATALOGUE,
        svc_store::cf::LEASES_GRANTED,
        svc_store::cf::LEASES_HELD,
        svc_store::cf::RECEIPT_ROOTS,
        svc_store::cf::TLOG_PENDING,
        svc_store::cf::TLOG_LEAVES,
        svc_store::cf::TLOG_INDEX,
        svc_store::cf::TLOG_CHECKPOINTS,
        svc_store::cf::TLOG_COSIGNATURES,
        svc_store::cf::RECEIPT_PLACES,
        svc_store::cf::RECEIPT_PARTS,
        svc_store::cf::REGION_RECEIPTS,
        svc_store::cf::DOMAINS,
        svc_store::cf::EXPIRED_CALLERS,
        svc_store::cf::TERMS_ACCEPTED,
        svc_store::cf::DIRECTORY,
        svc_store::cf::FRESHNESS,
        svc_store::cf::RECORD_SEQS,
        svc_store::cf::LOG_CHAIN,
        svc_store::cf::RAFT_LOG,
        svc_store::cf::PURGES,
        svc_store::cf::PEOPLE,
        svc_store::cf::PEOPLE_EMAILS,
        svc_store::cf::INVITATIONS,
        svc_store::cf::ACCOUNT_INVITATIONS,
        svc_store::cf::PORTAL_SESSIONS,
        svc_store::cf::CEREMONIES,
        svc_store::cf::HOSTED_KEYS,
        svc_store::cf::NOTICES_SEEN,
        svc_store::cf::WITHDRAWN,
        svc_store::cf::CAMPAIGNS,
        svc_store::cf::CAMPAIGNS_CHANGED,
        svc_store::cf::CAMPAIGN_LEDGERS,
        svc_store::cf::AD_TOKENS,
        svc_store::cf::LEGACY_AD_TOKENS,
        svc_store::cf::AD_CONVERSATIONS,
        svc_store::cf::AD_IMAGES,
        svc_store::cf::AD_EVENTS,
        svc_store::cf::AD_REFUNDS,
        svc_store::cf::AD_ANALYTICS,
    ]
}

/// One recorded version of a table: its format and its samples' bytes.
#[derive(Serialize, Deserialize, Clone, PartialEq)]
struct Recorded {
    table: String,
    version: u8,
    format: String,
    samples: Vec<String>,
}

/// How many tables the sources declare (`Table::new`, `part`, `exact`);
/// a benchmark's stand-in over a scratch store is not one the node keeps.
fn declared() -> usize {
    rust_files(&root().join("src"))
        .iter()
        .filter(|f| !f.ends_with("store/table.rs") && !f.components().any(|c| c.as_os_str() == "benches"))
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            ["Table::new(", "Table::part(", "Table::exact("].iter().map(|d| text.matches(d).count()).sum::<usize>()
        })
        .sum()
}

fn listing(tables: &[Listed]) -> String {
    let mut out = String::from(
        "# Tables\n\nEvery table the node stores, as `tests/it/tables.rs` lists them (it writes this file with\n\
         `SVC_BLESS_TABLES=1`, and fails when it differs). Keys are written as in `src/store/keys.rs`:\n\
         `a ‖ b` is two parts joined by a 0x00 byte, `be(n)` a number as 8 bytes big-endian. Each\n\
         version's format and sample bytes are in `tables.lock`.\n\n\
         | table | family | keys | value | version |\n|---|---|---|---|---|\n",
    );
    for t in tables {
        let keys = t.layout.replace('|', "\\|");
        out.push_str(&format!("| `{}` | `{}` | {} | `{}` | {} |\n", t.name, t.family, keys, t.value, t.version));
    }
    out
}

fn read_lock(path: &Path) -> Vec<Recorded> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn write_lock(path: &Path, recorded: &[Recorded]) {
    let lines: Vec<String> = recorded.iter().map(|r| serde_json::to_string(r).unwrap()).collect();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

// rule: none (a storage invariant, not a spec rule)
#[test]
fn every_table_is_listed_with_a_migration_test_for_each_version() {
    let mut tables = all();
    tables.sort_by_key(|t| t.name);
    let bless = std::env::var_os("SVC_BLESS_TABLES").is_some();

    // Every declaration is in the list above, once.
    assert_eq!(
        declared(),
        tables.len(),
        "the sources declare a table this test does not list: add it to `all()` in tests/it/tables.rs"
    );
    let names: BTreeSet<&str> = tables.iter().map(|t| t.name).collect();
    assert_eq!(names.len(), tables.len(), "two tables have one name");

    // Every value's format is known.
    let untraced: Vec<String> =
        tables.iter().filter_map(|t| t.format.as_ref().err().map(|e| format!("{}: {e}", t.name))).collect();
    assert!(
        untraced.is_empty(),
        "values whose format cannot be traced (trace their enums first: `nested`, `named_samples`): {untraced:#?}"
    );
    let format = |t: &Listed| t.format.clone().unwrap_or_default();

    // Every family has its tables, and a family shared is parted.
    let families: BTreeSet<&str> = tables.iter().map(|t| t.family).collect();
    assert_eq!(families, cf::ALL.iter().copied().collect(), "a column family with no table, or a table in none");
    for family in &families {
        let of: Vec<&Listed> = tables.iter().filter(|t| t.family == *family).collect();
        if of.len() > 1 {
            for t in &of {
                assert!(t.parted, "table {} shares family {family} but takes any key of it", t.name);
            }
        }
    }

    // The listing.
    let doc = root().join("src/store/TABLES.md");
    let written = listing(&tables);
    if bless {
        std::fs::write(&doc, &written).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(&doc).unwrap_or_default(),
        written,
        "src/store/TABLES.md is not the tables' listing: run with SVC_BLESS_TABLES=1"
    );

    // The migration tests.
    let lock = root().join("src/store/tables.lock");
    let mut recorded = read_lock(&lock);
    let mut missing = Vec::new();
    for t in &tables {
        for version in 1..=t.version {
            let found = recorded.iter().find(|r| r.table == t.name && r.version == version);
            let Some(found) = found else {
                if version == t.version && bless {
                    recorded.push(Recorded {
                        table: t.name.to_owned(),
                        version,
                        format: format(t),
                        samples: t.samples.iter().map(hex::encode).collect(),
                    });
                } else {
                    missing.push(format!("{} version {version}", t.name));
                }
                continue;
            };
            for sample in &found.samples {
                let bytes = hex::decode(sample).unwrap();
                let again = (t.again)(&bytes).unwrap_or_else(|e| {
                    panic!(
                        "table {}: a value stored at version {version} no longer reads ({e}); if its type \
                         changed, give the table a new version with a migration from this one (Table::version)",
                        t.name
                    )
                });
                if version == t.version {
                    assert_eq!(
                        again, bytes,
                        "table {}: a value of version {version} does not write back as it was stored",
                        t.name
                    );
                }
            }
            if version == t.version {
                assert_eq!(
                    found.format,
                    format(t),
                    "table {}: its value's format changed while its version stayed {version}: give it version \
                     {} with a migration from {version} (Table::version), and record it",
                    t.name,
                    version + 1
                );
            }
        }
    }
    let known: BTreeMap<&str, u8> = tables.iter().map(|t| (t.name, t.version)).collect();
    let stale: Vec<String> = recorded
        .iter()
        .filter(|r| known.get(r.table.as_str()).is_none_or(|v| r.version > *v))
        .map(|r| format!("{} version {}", r.table, r.version))
        .collect();
    if bless {
        recorded.retain(|r| known.get(r.table.as_str()).is_some_and(|v| r.version <= *v));
        recorded.sort_by(|a, b| (&a.table, a.version).cmp(&(&b.table, b.version)));
        write_lock(&lock, &recorded);
    }
    assert!(missing.is_empty(), "tables without a migration test: {missing:?}: run with SVC_BLESS_TABLES=1");
    assert!(bless || stale.is_empty(), "recorded versions of no table: {stale:?}");
}

/// A table's version moves only with a migration, and an older value is
/// read through it: a table of version 2 whose migration appends a byte
/// reads version 1's bytes as version 2's.
#[test]
fn an_older_value_is_read_through_its_tables_migrations() {
    fn widen(body: &[u8]) -> svc_store::StoreResult<Vec<u8>> {
        // Version 1 held a u8; version 2 holds (u8, bool), false at first.
        Ok([body, &[0]].concat())
    }
    const V1: Table<u8> = Table::new("freshness", "test");
    const V2: Table<(u8, bool)> = Table::new("freshness", "test").version(2, &[widen]);
    let stored = svc_store::encode(V1, &7u8).unwrap();
    assert_eq!(stored[0], 1);
    assert_eq!(svc_store::decode(V2, &stored).unwrap(), (7, false));
    let newer = svc_store::encode(V2, &(7, true)).unwrap();
    assert_eq!(newer[0], 2);
    assert!(matches!(svc_store::decode(V1, &newer), Err(svc_store::StoreError::UnknownVersion { version: 2, .. })));
}
