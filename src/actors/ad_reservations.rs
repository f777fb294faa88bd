//! The ad-reservations actor, one per region: the only writer of the
//! region's campaign money and ad confirmations. It holds the leases home
//! granted (`svc_core::ads::reserve::Book`), takes a reserve per campaign
//! for each pool, paces each key's pools against its renders, and judges
//! and records every render and click confirmation with the money it spends
//! in one write. Leases it is done with go home with what they used: from a
//! read region through its outbox, at home straight into the ledger.

use std::collections::HashMap;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use svc_core::ads::campaign::Repeats;
use svc_core::ads::confirm::{self, Earlier, Facts, Judgement, NotAccepted};
use svc_core::ads::ledger::Held;
use svc_core::ads::pace::Pace;
use svc_core::ads::reserve::{Book, Short};
use svc_core::ads::{Basis, Micros, Placement, SESSION_KEPT_MS};
use svc_core::time::{HOUR, MINUTE, UnixMs};

use crate::actors::error::ActorError;
use crate::actors::mailbox::Mailbox;
use crate::actors::publisher::PublisherMsg;
use crate::replication::exchange::{Outgoing, Sequence};
use crate::store::model::{AdConfirmation, AdConversation, AdEvent, AdToken};
use crate::store::{Batch, Store, be, cf};

/// The prefix of each lease's key in `ad_book` (then the campaign id).
const LEASE: &[u8] = b"lease\0";
/// Where builds before leases were kept apart held the whole book.
const LEGACY_BOOK: &[u8] = b"book";
/// The key of the last analytics event's sequence in `ad_book`.
const EVENT_SEQ: &[u8] = b"event_seq";
/// The key of the region's secret for conversation digests in `ad_book`.
pub const CONVERSATION_SECRET: &[u8] = b"conversation_secret";
/// Tokens' confirmations are kept this long after the token's time: past
/// every window a confirmation of it is judged in (a click's 24 hours).
const TOKENS_KEPT_MS: i64 = 25 * HOUR;
/// Conversations one tick forgets at most.
const FORGET_PER_TICK: usize = 10_000;

/// Where the region's settled leases go.
#[derive(Clone)]
pub enum AdRole {
    /// Home applies the ledger's change through its one writer.
    Home { region: String, publisher: Mailbox<PublisherMsg> },
    /// A read region ships them home in its outbox.
    Region { outbox: Sequence },
}

#[derive(Clone)]
pub struct AdArgs {
    pub store: Store,
    pub role: AdRole,
}

/// A confirmation to judge and record, as the use case read it from a
/// verified token.
#[derive(Debug, Clone)]
pub struct Confirmation {
    pub click: bool,
    /// The token's key in `ad_tokens`.
    pub token_key: Vec<u8>,
    pub idempotency_key: String,
    pub request: [u8; 32],
    /// A render: when the pool or search was served; a click: when its
    /// render was accepted.
    pub since: UnixMs,
    pub now: UnixMs,
    pub key_id: String,
    pub campaign_id: String,
    pub placement: Placement,
    pub basis: Basis,
    pub repeats: Repeats,
    /// One billed event's cost.
    pub cost: Micros,
    /// The pool's reserve, for an ad's render.
    pub reserve_id: Option<u64>,
    /// The conversation's key in `ad_conversations`.
    pub conversation_key: Vec<u8>,
    /// The answer if it is accepted (a render's carries its click token).
    pub accepted_answer: Vec<u8>,
    /// Home had no more of the campaign's money when last asked: a charge
    /// that finds none now is not accepted (a render) or not charged (a click).
    pub home_is_out: bool,
    /// For the business's analytics.
    pub business_uuid: String,
    pub group_id: String,
    pub country: Option<String>,
}

/// What a confirmation came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confirmed {
    /// The answer to send (200), first or replayed.
    Answer(Vec<u8>),
    /// The same Idempotency-Key with another body.
    KeyReused,
    /// The region holds too little of the campaign's money: ask home.
    NeedLease(Micros),
}

/// A pool's reserves, each campaign's reserve id or why it has none; or,
/// for a key past its pools, how long until it may ask again (ms).
pub type Paced = Result<Vec<Result<u64, Short>>, i64>;

pub enum AdMsg {
    /// Paces a key's pool, then reserves one event's cost of each campaign:
    /// `Err(wait_ms)` when the key is past its pools.
    Pool {
        key_id: String,
        asks: Vec<(String, Micros)>,
        /// Counts the pool against the key's pace (its first ask).
        pace: bool,
        now: UnixMs,
        reply: RpcReplyPort<Result<Paced, ActorError>>,
    },
    /// Holds a lease home granted; the one it replaces goes home.
    TakeLease {
        campaign_id: String,
        lease: Held,
        now: UnixMs,
        reply: RpcReplyPort<Result<(), ActorError>>,
    },
    Confirm {
        ask: Box<Confirmation>,
        reply: RpcReplyPort<Result<Confirmed, ActorError>>,
    },
    /// Lapses reserves, sends done leases home, forgets old tokens and
    /// conversations.
    Tick {
        now: UnixMs,
    },
    Observe(RpcReplyPort<Book>),
}

#[derive(Clone)]
pub struct AdReservations;

pub struct AdState {
    store: Store,
    role: AdRole,
    book: Book,
    paces: HashMap<String, Pace>,
    /// When old tokens and conversations were last forgotten.
    forgot_at: UnixMs,
    /// The last accepted render or click counted for analytics.
    event_seq: u64,
}

fn lease_key(campaign_id: &str) -> Vec<u8> {
    [LEASE, campaign_id.as_bytes()].concat()
}

impl AdState {
    /// Writes the campaign's lease as the book holds it now (or its end).
    fn write_lease(&self, batch: &mut Batch<'_>, campaign_id: &str) {
        match self.book.leases.get(campaign_id) {
            Some(lease) => batch.put(cf::AD_BOOK, &lease_key(campaign_id), lease),
            None => batch.delete(cf::AD_BOOK, &lease_key(campaign_id)),
        }
    }

    /// Writes the end of each lease done in `batch`, with its settlement.
    async fn send_home(
        &mut self,
        batch: &mut Batch<'_>,
        done: &[(String, Held)],
        now: UnixMs,
    ) -> Result<(), ActorError> {
        for (campaign_id, _) in done {
            batch.delete(cf::AD_BOOK, &lease_key(campaign_id));
        }
        self.settle(batch, done, now).await
    }

    /// Sends each lease done home with what it used: a read region's in its
    /// outbox, in `batch`; home's straight into its ledger.
    async fn settle(&mut self, batch: &mut Batch<'_>, done: &[(String, Held)], now: UnixMs) -> Result<(), ActorError> {
        match &self.role {
            AdRole::Region { outbox } => {
                for (campaign_id, held) in done {
                    let campaign_id = campaign_id.clone();
                    let settle = Outgoing::AdSettle { campaign_id, lease_id: held.lease_id, used: held.used };
                    outbox.append(batch, &settle);
                }
            }
            AdRole::Home { region, publisher } => {
                for (campaign_id, held) in done {
                    let settled = crate::campaign_ledger::settle(
                        &self.store,
                        now,
                        region,
                        campaign_id,
                        held.lease_id,
                        held.used,
                    )?;
                    // A lease home already counted in full needs nothing more.
                    if let Ok(change) = settled {
                        publisher.call(|reply| PublisherMsg::Apply { change, now, reply }).await??;
                    }
                }
            }
        }
        Ok(())
    }

    fn confirm(&mut self, ask: &Confirmation, batch: &mut Batch<'_>) -> Result<Confirmed, ActorError> {
        let mut token = self.store.get::<AdToken>(cf::AD_TOKENS, &ask.token_key)?.unwrap_or_default();
        let earlier: Vec<Earlier> = token
            .confirmations
            .iter()
            .map(|c| Earlier { idempotency_key: c.idempotency_key.clone(), request: c.request, accepted: c.accepted })
            .collect();
        let mut conversation = self
            .store
            .get::<AdConversation>(cf::AD_CONVERSATIONS, &ask.conversation_key)?
            .unwrap_or_else(|| AdConversation { first_at: ask.now, ..AdConversation::default() });
        let facts = Facts {
            now: ask.now,
            since: ask.since,
            idempotency_key: &ask.idempotency_key,
            request: ask.request,
            earlier: &earlier,
            funded: true,
        };
        let judged = if ask.click { confirm::judge_click(&facts) } else { confirm::judge_render(&facts) };
        let mut charged = Micros(0);
        let (accepted, answer) = match judged {
            Judgement::Replay => {
                let first = token.confirmations.iter().find(|c| c.idempotency_key == ask.idempotency_key);
                return Ok(Confirmed::Answer(first.map(|c| c.answer.clone()).unwrap_or_default()));
            }
            Judgement::KeyReused => return Ok(Confirmed::KeyReused),
            Judgement::NotAccepted(reason) => (false, not_accepted(reason)),
            Judgement::Accepted => {
                let charge = if ask.click {
                    confirm::click_billed(ask.placement, ask.basis, conversation.clicked_at, ask.now)
                } else {
                    confirm::render_billed(ask.placement, ask.basis, ask.repeats, conversation.renders)
                };
                let paid = !charge
                    || ask.reserve_id.and_then(|id| self.book.spend(id, &ask.campaign_id, ask.now)).is_some()
                    || self.book.spend_now(&ask.campaign_id, ask.cost, ask.now).is_ok();
                if paid && charge {
                    charged = ask.cost;
                }
                match (paid, ask.home_is_out) {
                    (true, _) => (true, ask.accepted_answer.clone()),
                    (false, false) => return Ok(Confirmed::NeedLease(ask.cost)),
                    // A click is the user's: recorded, never charged past the budget.
                    (false, true) if ask.click => (true, ask.accepted_answer.clone()),
                    (false, true) => (false, not_accepted(NotAccepted::BudgetExhausted)),
                }
            }
        };
        if token.confirmations.len() >= AdToken::MAX {
            return Err(ActorError::Invalid(format!("a token is confirmed at most {} times", AdToken::MAX)));
        }
        token.confirmations.push(AdConfirmation {
            idempotency_key: ask.idempotency_key.clone(),
            request: ask.request,
            accepted,
            charged,
            at: ask.now,
            answer: answer.clone(),
        });
        if accepted {
            self.event_seq += 1;
            let event = AdEvent {
                seq: self.event_seq,
                business_uuid: ask.business_uuid.clone(),
                group_id: ask.group_id.clone(),
                country: ask.country.clone(),
                at: ask.now,
                click: ask.click,
                charged,
            };
            match &self.role {
                AdRole::Home { .. } => batch.put(cf::AD_EVENTS, &be(event.seq), &event),
                AdRole::Region { outbox } => {
                    outbox.append(batch, &Outgoing::AdEvent(event));
                }
            }
            batch.put(cf::AD_BOOK, EVENT_SEQ, &self.event_seq);
            if ask.click {
                conversation.clicked_at = Some(ask.now);
            } else {
                conversation.renders = conversation.renders.saturating_add(1);
                conversation.rendered_at = Some(ask.now);
                self.paces.entry(ask.key_id.clone()).or_default().rendered(ask.now);
            }
            batch.put(cf::AD_CONVERSATIONS, &ask.conversation_key, &conversation);
        }
        batch.put(cf::AD_TOKENS, &ask.token_key, &token);
        self.write_lease(batch, &ask.campaign_id);
        Ok(Confirmed::Answer(answer))
    }

    fn forget(&mut self, batch: &mut Batch<'_>, now: UnixMs) -> Result<(), ActorError> {
        batch.delete_range(cf::AD_TOKENS, &[], &be(now.0.saturating_sub(TOKENS_KEPT_MS).max(0) as u64));
        let conversations = self.store.scan::<AdConversation>(cf::AD_CONVERSATIONS, &[], None, FORGET_PER_TICK)?;
        for (key, conversation) in conversations {
            if now.0 - conversation.first_at.0 >= SESSION_KEPT_MS {
                batch.delete(cf::AD_CONVERSATIONS, &key);
            }
        }
        self.paces.retain(|_, pace| !pace.idle(now));
        Ok(())
    }
}

fn not_accepted(reason: NotAccepted) -> Vec<u8> {
    format!(r#"{{"accepted":false,"reason":"{}"}}"#, reason.as_str()).into_bytes()
}

impl Actor for AdReservations {
    type Msg = AdMsg;
    type State = AdState;
    type Arguments = AdArgs;

    async fn pre_start(&self, _me: ActorRef<AdMsg>, args: AdArgs) -> Result<AdState, ActorProcessingErr> {
        let leases = args.store.scan::<Held>(cf::AD_BOOK, LEASE, None, usize::MAX)?;
        let leases = leases
            .into_iter()
            .filter_map(|(key, lease)| Some((String::from_utf8(key[LEASE.len()..].to_vec()).ok()?, lease)))
            .collect();
        let mut legacy = args.store.batch();
        legacy.delete(cf::AD_BOOK, LEGACY_BOOK);
        legacy.commit()?;
        // Reserve ids name reserves in render tokens: a random start keeps
        // a token from before a restart from naming a reserve after it. Below
        // 2^52, so every id stays a safe JSON integer (RFC 8785).
        let first_id = u64::from_le_bytes(crate::clock::random::<8>()) >> 12;
        let book = Book::with_leases(leases, first_id);
        if args.store.get::<Vec<u8>>(cf::AD_BOOK, CONVERSATION_SECRET)?.is_none() {
            args.store.put(cf::AD_BOOK, CONVERSATION_SECRET, &crate::clock::random::<32>().to_vec())?;
        }
        let event_seq = args.store.get::<u64>(cf::AD_BOOK, EVENT_SEQ)?.unwrap_or(0);
        Ok(AdState { store: args.store, role: args.role, book, paces: HashMap::new(), forgot_at: UnixMs(0), event_seq })
    }

    async fn handle(&self, _me: ActorRef<AdMsg>, msg: AdMsg, state: &mut AdState) -> Result<(), ActorProcessingErr> {
        match msg {
            AdMsg::Pool { key_id, asks, pace, now, reply } => {
                let paced = if pace { state.paces.entry(key_id.clone()).or_default().pool(now) } else { Ok(()) };
                if let Err(wait_ms) = paced {
                    let _ = reply.send(Ok(Err(wait_ms)));
                    return Ok(());
                }
                // Reserves are not written: one lost with the process lapses unspent.
                let reserved: Vec<Result<u64, Short>> = asks
                    .iter()
                    .map(|(campaign_id, cost)| state.book.reserve(campaign_id, &key_id, *cost, now))
                    .collect();
                let _ = reply.send(Ok(Ok(reserved)));
            }
            AdMsg::TakeLease { campaign_id, lease, now, reply } => {
                let replaced = state.book.take_lease(&campaign_id, lease);
                let store = state.store.clone();
                let mut batch = store.batch();
                state.write_lease(&mut batch, &campaign_id);
                let done: Vec<(String, Held)> =
                    replaced.clone().map(|old| (campaign_id.clone(), old)).into_iter().collect();
                // The replaced lease's end is the new one's key: only its settlement is written.
                let written = match state.settle(&mut batch, &done, now).await {
                    Ok(()) => batch.commit().map_err(ActorError::from),
                    Err(e) => Err(e),
                };
                if written.is_err() {
                    state.book.restore(&campaign_id, replaced, None);
                }
                let _ = reply.send(written);
            }
            AdMsg::Confirm { ask, reply } => {
                let lease_before = state.book.leases.get(&ask.campaign_id).cloned();
                let reserve_before = ask.reserve_id.and_then(|id| state.book.reserve_of(id).cloned());
                let event_seq = state.event_seq;
                let store = state.store.clone();
                let mut batch = store.batch();
                let written = match state.confirm(&ask, &mut batch) {
                    // Synced: an accepted confirmation is money spent.
                    Ok(Confirmed::Answer(answer)) => {
                        batch.commit().map(|()| Confirmed::Answer(answer)).map_err(ActorError::from)
                    }
                    other => other,
                };
                // Nothing recorded: the lease and a reserve taken out on the way are back.
                if !matches!(written, Ok(Confirmed::Answer(_))) {
                    state.book.restore(&ask.campaign_id, lease_before, reserve_before);
                    state.event_seq = event_seq;
                }
                let _ = reply.send(written);
            }
            AdMsg::Tick { now } => {
                let done = state.book.due(now);
                let forget = now.0 - state.forgot_at.0 >= MINUTE;
                // A quiet tick writes nothing.
                if done.is_empty() && !forget {
                    return Ok(());
                }
                let store = state.store.clone();
                let mut batch = store.batch();
                let mut written = state.send_home(&mut batch, &done, now).await;
                if written.is_ok() && forget {
                    written = state.forget(&mut batch, now);
                }
                let written = written.and_then(|()| batch.commit().map_err(ActorError::from));
                if written.is_ok() && forget {
                    state.forgot_at = now;
                }
                if let Err(e) = written {
                    for (campaign_id, lease) in done {
                        state.book.take_lease(&campaign_id, lease);
                    }
                    tracing::warn!(error = %e, "the ad book's upkeep failed; the next tick tries again");
                }
            }
            AdMsg::Observe(reply) => {
                let _ = reply.send(state.book.clone());
            }
        }
        Ok(())
    }
}
