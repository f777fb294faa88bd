//! The home region's publisher: the single writer of the replication log.
//! It accepts pushes, commits their chunks, ends records and applies the
//! operator's registry changes, one message at a time.

use std::collections::BTreeMap;
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use svc_core::time::UnixMs;

use crate::actors::error::ActorError;
use crate::publish::{Created, Engine, NewPush, Refused, Saved, SealedSave};
use crate::replication::{Change, LogWriter};
use crate::service_keys::ServiceKeys;
use svc_store::Store;
use svc_store::model::{IdempotentAnswer, PushRecord, RecordHead};

pub type Flags = BTreeMap<u64, Vec<(String, String, String)>>;

pub enum PublisherMsg {
    CreatePush(Box<NewPush>, String, RpcReplyPort<Result<Result<Created, Refused>, ActorError>>),
    CommitChunk {
        push_id: String,
        chunk: u64,
        flagged: Flags,
        now: UnixMs,
        reply: RpcReplyPort<Result<PushRecord, ActorError>>,
    },
    /// Stages the records a bulk file delivered.
    StageFile {
        push_id: String,
        records: Vec<Vec<u8>>,
        now: UnixMs,
        reply: RpcReplyPort<Result<PushRecord, ActorError>>,
    },
    /// Ends a push that cannot go on, with its code.
    Fail {
        push_id: String,
        code: String,
        now: UnixMs,
        reply: RpcReplyPort<Result<PushRecord, ActorError>>,
    },
    Finish {
        push_id: String,
        now: UnixMs,
        reply: RpcReplyPort<Result<PushRecord, ActorError>>,
    },
    RememberAnswer {
        key_id: String,
        idem: String,
        answer: IdempotentAnswer,
        reply: RpcReplyPort<Result<(), ActorError>>,
    },
    EndRecord {
        business_uuid: String,
        record_id: String,
        delete: bool,
        /// The sealed document's seal, for the transparency log.
        seal_json: Vec<u8>,
        now: UnixMs,
        reply: RpcReplyPort<Result<Option<RecordHead>, ActorError>>,
    },
    /// A record a person sealed with a passkey (Path B).
    SaveSealed(Box<SealedSave>, RpcReplyPort<Result<Result<Saved, Vec<svc_core::records::RecordError>>, ActorError>>),
    /// Publishes one chunk of a held push's held records (a person confirmed).
    ReleaseChunk {
        push_id: String,
        from: u64,
        now: UnixMs,
        reply: RpcReplyPort<Result<(PushRecord, Option<u64>), ActorError>>,
    },
    /// Ends a held push without publishing it.
    Discard {
        push_id: String,
        now: UnixMs,
        reply: RpcReplyPort<Result<PushRecord, ActorError>>,
    },
    Apply {
        change: Change,
        now: UnixMs,
        reply: RpcReplyPort<Result<Option<u64>, ActorError>>,
    },
    /// Signs the key directory again if what it lists changed; answers
    /// whether it did.
    RenewKeyDirectory {
        now: UnixMs,
        reply: RpcReplyPort<Result<bool, ActorError>>,
    },
    /// Registers home's own keys in the key set, the first time.
    FoundKeySet {
        valid_from: UnixMs,
        now: UnixMs,
        reply: RpcReplyPort<Result<(), ActorError>>,
    },
    /// Draws a successor for one of home's own keys and signs with it.
    RotateServiceKey {
        purpose: svc_core::keyset::Purpose,
        now: UnixMs,
        reply: RpcReplyPort<Result<Option<Vec<String>>, ActorError>>,
    },
    /// Ends a service key in the key set: retired or compromised.
    EndServiceKey {
        kid: String,
        valid_until: Option<UnixMs>,
        compromised_at: Option<UnixMs>,
        now: UnixMs,
        reply: RpcReplyPort<Result<Result<(), svc_core::Reason>, ActorError>>,
    },
    /// Certifies a region's receipt key (idempotent).
    CertifyReceiptKey {
        region: String,
        key: svc_core::keys::VerifyingKey,
        now: UnixMs,
        reply: RpcReplyPort<Result<(), ActorError>>,
    },
    Observe(RpcReplyPort<PublisherSnapshot>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublisherSnapshot {
    /// The newest replication log sequence number.
    pub last_seq: u64,
}

#[derive(Clone)]
pub struct Publisher;

#[derive(Clone)]
pub struct PublisherArgs {
    pub store: Store,
    pub keys: Arc<ServiceKeys>,
    pub directory: crate::key_set::directory::Scope,
}

impl Actor for Publisher {
    type Msg = PublisherMsg;
    type State = Engine;
    type Arguments = PublisherArgs;

    async fn pre_start(&self, _me: ActorRef<PublisherMsg>, args: PublisherArgs) -> Result<Engine, ActorProcessingErr> {
        Ok(Engine::new(LogWriter::open(args.store)?, args.keys, args.directory))
    }

    async fn handle(
        &self,
        _me: ActorRef<PublisherMsg>,
        msg: PublisherMsg,
        engine: &mut Engine,
    ) -> Result<(), ActorProcessingErr> {
        // CPU-heavy work (validation, signing) runs here on purpose: the
        // publisher is the one writer, and a chunk is at most 200 records.
        match msg {
            PublisherMsg::CreatePush(push, push_id, reply) => {
                let _ = reply
                    .send(tokio::task::block_in_place(|| engine.create_push(*push, push_id)).map_err(ActorError::from));
            }
            PublisherMsg::CommitChunk { push_id, chunk, flagged, now, reply } => {
                let result = tokio::task::block_in_place(|| engine.commit_chunk(&push_id, chunk, &flagged, now));
                let _ = reply.send(result.map_err(ActorError::from));
            }
            PublisherMsg::StageFile { push_id, records, now, reply } => {
                let result = tokio::task::block_in_place(|| engine.stage_file(&push_id, records, now));
                let _ = reply.send(result.map_err(ActorError::from));
            }
            PublisherMsg::Fail { push_id, code, now, reply } => {
                let _ = reply.send(engine.fail(&push_id, &code, now).map_err(ActorError::from));
            }
            PublisherMsg::Finish { push_id, now, reply } => {
                let _ = reply.send(engine.finish(&push_id, now).map_err(ActorError::from));
            }
            PublisherMsg::RememberAnswer { key_id, idem, answer, reply } => {
                let _ = reply.send(engine.remember_answer(&key_id, &idem, answer).map_err(ActorError::from));
            }
            PublisherMsg::EndRecord { business_uuid, record_id, delete, seal_json, now, reply } => {
                let _ = reply.send(
                    engine.end_record(&business_uuid, &record_id, delete, &seal_json, now).map_err(ActorError::from),
                );
            }
            PublisherMsg::SaveSealed(save, reply) => {
                let _ = reply.send(tokio::task::block_in_place(|| engine.save_sealed(*save)).map_err(ActorError::from));
            }
            PublisherMsg::ReleaseChunk { push_id, from, now, reply } => {
                let result = tokio::task::block_in_place(|| engine.release_chunk(&push_id, from, now));
                let _ = reply.send(result.map_err(ActorError::from));
            }
            PublisherMsg::Discard { push_id, now, reply } => {
                let _ = reply.send(engine.discard(&push_id, now).map_err(ActorError::from));
            }
            PublisherMsg::Apply { change, now, reply } => {
                let _ = reply.send(engine.apply(change, now).map_err(ActorError::from));
            }
            PublisherMsg::RenewKeyDirectory { now, reply } => {
                let result = tokio::task::block_in_place(|| engine.renew_key_directory(now));
                let _ = reply.send(result.map_err(ActorError::from));
            }
            PublisherMsg::FoundKeySet { valid_from, now, reply } => {
                let result = tokio::task::block_in_place(|| engine.found_key_set(valid_from, now));
                let _ = reply.send(result.map_err(ActorError::from));
            }
            PublisherMsg::RotateServiceKey { purpose, now, reply } => {
                let result = tokio::task::block_in_place(|| engine.rotate_service_key(purpose, now));
                let _ = reply.send(result.map_err(ActorError::from));
            }
            PublisherMsg::EndServiceKey { kid, valid_until, compromised_at, now, reply } => {
                let result =
                    tokio::task::block_in_place(|| engine.end_service_key(&kid, valid_until, compromised_at, now));
                let _ = reply.send(result.map_err(ActorError::from));
            }
            PublisherMsg::CertifyReceiptKey { region, key, now, reply } => {
                let result = tokio::task::block_in_place(|| engine.certify_receipt_key(&region, &key, now));
                let _ = reply.send(result.map_err(ActorError::from));
            }
            PublisherMsg::Observe(reply) => {
                let _ = reply.send(PublisherSnapshot { last_seq: engine.last_seq() });
            }
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for PublisherMsg {
    type Seen = PublisherSnapshot;

    fn observe(reply: ractor::RpcReplyPort<PublisherSnapshot>) -> Self {
        PublisherMsg::Observe(reply)
    }

    fn describe(seen: PublisherSnapshot) -> serde_json::Value {
        serde_json::json!({"last_seq": seen.last_seq})
    }
}
