//! Releasing a held push once an owner or admin confirmed it: publish its
//! held records as they were sealed, a chunk at a time, or discard them.
//! Each chunk moves its leaves from `held` to `accepted`/`updated` in the
//! same write that makes them live, so a resume publishes nothing twice.

use svc_core::digest::sha256_prefixed;
use svc_core::publish::outcome::{Outcome, PushState};
use svc_core::records;
use svc_core::time::UnixMs;

use super::{CHUNK, Engine, EngineError, count_index};
use crate::replication::Change;
use svc_store::model::{Named, PushLeaf, PushRecord, RecordSource, RecordState};
use svc_store::{cf, keys};

impl Engine {
    /// Publishes the held records of one chunk of a held push, from leaf
    /// `from`. Answers the push and the leaf to go on from; `None` when the
    /// push is done, and then `complete`. A record with a newer version
    /// since the hold keeps its `held` leaf: the newer version stands.
    pub fn release_chunk(
        &mut self,
        push_id: &str,
        from: u64,
        now: UnixMs,
    ) -> Result<(PushRecord, Option<u64>), EngineError> {
        self.settle_writes()?;
        let store = self.log.store().clone();
        let mut push = self.push(push_id)?.ok_or_else(|| EngineError::Invalid("unknown push".into()))?;
        if push.state != PushState::Held {
            return Err(EngineError::Invalid(format!("the push is {}, not held", push.state.name())));
        }
        let pctx = self.push_context(&push)?;
        let prefix = keys::push_leaves(push_id);
        let leaves: Vec<(Vec<u8>, PushLeaf)> = store
            .scan::<PushLeaf>(cf::PUSH_LEAVES, &prefix, Some(&keys::push_leaf(push_id, from)), CHUNK)?
            .into_iter()
            .filter(|(k, _)| k.len() == prefix.len() + 9)
            .collect();
        let next = (leaves.len() == CHUNK).then(|| leaves.last().map(|(_, l)| l.leaf_index + 1)).flatten();
        let mut change = Change::new();
        for (k, mut leaf) in leaves {
            if leaf.outcome != Outcome::Held {
                continue;
            }
            let (Some(record_id), Some(generation)) = (leaf.record_id.clone(), leaf.version) else { continue };
            let Some(head) = self.registry.record_head(&record_id)? else { continue };
            let Some(version) = self.registry.record_version(&record_id, generation)? else { continue };
            if head.generation != generation {
                continue;
            }
            // It was valid when held; a rule that changed since refuses it now.
            let Ok(record) = records::validate(&version.bytes, pctx.record_type, &pctx.ctx.validation) else {
                continue;
            };
            let was_live = head.state == RecordState::Live && head.live_generation > 0;
            let seal_digest = sha256_prefixed(&version.seal);
            let sidecar =
                pctx.sidecar(&push, &record_id, &record.origin(), generation, &seal_digest, leaf.leaf_index, now);
            let (outcome, new_head, live) = self.live_version(
                &record,
                &pctx.ctx.business,
                was_live,
                version.seal,
                sidecar,
                push_id,
                RecordSource::of_push(push.source),
                None,
                now,
            )?;
            change.put(cf::VERSIONS, &keys::version(&record_id, generation), &live);
            change.put(cf::RECORDS, record_id.as_bytes(), &new_head);
            let was_withdrawn = head.state == RecordState::Withdrawn;
            super::list_live(&mut change, &push.business_uuid, pctx.record_type, &record_id, was_withdrawn);
            push.counts[count_index(Outcome::Held)] = push.counts[count_index(Outcome::Held)].saturating_sub(1);
            push.counts[count_index(outcome)] += 1;
            leaf.outcome = outcome;
            change.put(cf::PUSH_LEAVES, &k, &leaf);
        }
        if next.is_none() {
            push.state = PushState::Complete;
            push.held = false;
            push.completed_at = Some(now);
        }
        push.updated_at = now;
        push.last_step_at = now;
        change.put(cf::PUSHES, &keys::push(push_id), &push);
        self.log.commit(change, now)?;
        Ok((push, next))
    }

    /// Ends a held push without publishing: its held versions stay stored and
    /// unserved, and the push is `complete`.
    pub fn discard(&mut self, push_id: &str, now: UnixMs) -> Result<PushRecord, EngineError> {
        self.settle_writes()?;
        let mut push = self.push(push_id)?.ok_or_else(|| EngineError::Invalid("unknown push".into()))?;
        if push.state != PushState::Held {
            return Err(EngineError::Invalid(format!("the push is {}, not held", push.state.name())));
        }
        self.settle(&mut push, PushState::Complete, now)?;
        Ok(push)
    }
}
