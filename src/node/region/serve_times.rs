//! Each business's serve-time members (its AI policy bits, whether its
//! endpoints are suspended, the freshness it declared for each record
//! type), kept between answers. Reading them means a scan
//! of the business's policy versions and a parse of the one in force, for
//! every business in every answer; they change only through the replication
//! log, or when a sealed version's `live_from` comes.

use std::collections::HashMap;
use std::sync::Mutex;

use svc_core::ai_policy::AiPolicyBits;
use svc_core::freshness::FreshnessExpectation;
use svc_core::ids::RecordType;
use svc_core::search::serve::ServeTime;
use svc_core::time::UnixMs;

use crate::error::{Error, Result};
use crate::registry::Registry;
use svc_store::Store;

/// What a business's rows carry now, and the span of time it holds for.
#[derive(Clone, Copy)]
struct Cached {
    at: ServeTime,
    /// The declared freshness of each collection, in `COLLECTIONS` order.
    freshness: [Option<FreshnessExpectation>; RecordType::COLLECTIONS.len()],
    /// When the version in force came into force (`None`: none ever did).
    from: Option<UnixMs>,
    /// When a later sealed version comes into force, if one will.
    until: Option<UnixMs>,
}

impl Cached {
    fn holds_at(&self, now: UnixMs) -> bool {
        self.from.is_none_or(|from| from <= now) && self.until.is_none_or(|until| now < until)
    }
}

#[derive(Default)]
pub struct ServeTimes {
    /// The replication sequence the entries were read at, and the entries.
    held: Mutex<(u64, HashMap<String, Cached>)>,
}

impl ServeTimes {
    /// What to read at, once per answer: a token that changes with each
    /// write to the replication log, held in memory (a seek to the log's
    /// last key per answer was 2.6% of a signed search's time).
    pub fn seq(store: &Store) -> u64 {
        store.writes_to(crate::replication::REPLOG).unwrap_or(0)
    }

    /// The serve-time members of a business's rows of `record_type` now,
    /// as of replicated sequence `seq`: its AI policy bits, with `purchase`
    /// withheld while its endpoints are suspended, and the freshness it
    /// declared for the type.
    pub fn of(
        &self,
        registry: &Registry,
        seq: u64,
        business_uuid: &str,
        record_type: RecordType,
        now: UnixMs,
    ) -> Result<ServeTime> {
        let for_type = |entry: &Cached| {
            let position = RecordType::COLLECTIONS.iter().position(|c| *c == record_type);
            ServeTime { freshness: position.and_then(|i| entry.freshness[i]), ..entry.at }
        };
        if let Ok(mut held) = self.held.lock() {
            if held.0 != seq {
                *held = (seq, HashMap::new());
            }
            if let Some(entry) = held.1.get(business_uuid).filter(|h| h.holds_at(now)) {
                return Ok(for_type(entry));
            }
        }
        let entry = read(registry, business_uuid, now)?;
        if let Ok(mut held) = self.held.lock()
            && held.0 == seq
        {
            held.1.insert(business_uuid.to_owned(), entry);
        }
        Ok(for_type(&entry))
    }
}

fn read(registry: &Registry, business_uuid: &str, now: UnixMs) -> Result<Cached> {
    let versions = registry.ai_policies(business_uuid).map_err(Error::internal)?;
    let (in_force, until) = crate::registry::policy_in_force(&versions, now);
    let bits = match in_force {
        Some(policy) => svc_core::ai_policy::parse_record(&policy.bytes).map_err(Error::internal)?.bits(policy.version),
        None => AiPolicyBits::none(),
    };
    let endpoints_suspended = registry.endpoints_suspension(business_uuid)?.is_some();
    let at = ServeTime { bits, endpoints_suspended, sponsored: false, freshness: None };
    let mut freshness = [None; RecordType::COLLECTIONS.len()];
    for (record_type, expectation) in registry.freshness_expectations(business_uuid)? {
        if let Some(i) = RecordType::COLLECTIONS.iter().position(|c| *c == record_type) {
            freshness[i] = Some(expectation);
        }
    }
    Ok(Cached { at, freshness, from: in_force.map(|p| p.live_from), until })
}
