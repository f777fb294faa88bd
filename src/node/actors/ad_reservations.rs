//! The ad-reservations actor, one per region: the only writer of the
//! region's campaign money and ad confirmations. It holds the leases home
//! granted (`svc_core::ads::reserve::Book`), takes a reserve per campaign
//! for each pool, paces each key's pools against its renders, and judges
//! and records every render and click confirmation with the money it spends
//! in one write. Leases it is done with go home with what they used: from a
//! read region through its outbox, at home straight into the ledger.
//!
//! What the conversation rules and a key's pace need from every region
//! travels as ad facts: a region writes its own to its outbox in the same
//! write as the confirmation, home adds them to its ad feed, and each
//! region learns the others' from that feed (`ad_feed`). Home also hands
//! out the one conversation secret, so a `session_ref` has one digest
//! everywhere.

use std::collections::HashMap;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use svc_core::ads::campaign::Repeats;
use svc_core::ads::confirm::{self, Earlier, Facts, Judgement, NotAccepted};
use svc_core::ads::ledger::Held;
use svc_core::ads::pace::{Pace, minute_of};
use svc_core::ads::reserve::{Book, Short};
use svc_core::ads::{Basis, Micros, Placement, SESSION_KEPT_MS};
use svc_core::time::{HOUR, MINUTE, UnixMs};

use crate::actors::error::ActorError;
use crate::actors::mailbox::Mailbox;
use crate::actors::publisher::PublisherMsg;
use crate::replication::exchange::{AdFact, AdFactKind, AdFeedPage, Charge, Outgoing, Sequence};
use svc_store::model::{AdConfirmation, AdConversation, AdEvent, AdRefund, AdToken, Campaign};
use svc_store::{Batch, Store, be, cf};

/// The prefix of each lease's key in `ad_book` (then the campaign id).
const LEASE: &[u8] = b"lease\0";
/// Where builds before leases were kept apart held the whole book.
const LEGACY_BOOK: &[u8] = b"book";
/// The key of the last analytics event's sequence in `ad_book`.
const EVENT_SEQ: &[u8] = b"event_seq";
/// The key of the last ad fact's sequence in `ad_book`.
const FACT_SEQ: &[u8] = b"fact_seq";
/// A read region: the key of its place in home's ad feed in `ad_book`.
const FEED_CURSOR: &[u8] = b"feed_cursor";
/// Home: the prefix of the last fact taken from each region in `ad_book`.
const LEARNED: &[u8] = b"learned\0";
/// The key of the service's secret for conversation digests in `ad_book`:
/// home draws it, read regions keep home's.
pub const CONVERSATION_SECRET: &[u8] = b"conversation_secret";
/// The key of the take rate in force (basis points) in `ad_book`: home's
/// from its config, a read region's from home's ad feed.
pub const TAKE_BPS: &[u8] = b"take_bps";
/// Home keeps its ad feed this long: past a conversation's 24 hours.
const FEED_KEPT_MS: i64 = 25 * HOUR;
/// Tokens' confirmations are kept this long after the token's time: past
/// every window a confirmation of it is judged in (a click's 24 hours).
const TOKENS_KEPT_MS: i64 = 25 * HOUR;
/// The prefix of each key's charged clicks on a campaign within an hour in
/// `ad_book` (then the hour, the key id and the campaign id).
const BILLED_CLICKS: &[u8] = b"billed_clicks\0";
/// Conversations one tick forgets at most.
const FORGET_PER_TICK: usize = 10_000;

/// Where the region's settled leases go.
#[derive(Clone)]
pub enum AdRole {
    /// Home applies the ledger's change through its one writer, and passes
    /// ad facts on in its feed.
    Home { region: String, publisher: Mailbox<PublisherMsg>, feed: Sequence<(String, AdFact)>, take_bps: u32 },
    /// A read region ships them home in its outbox.
    Region { region: String, outbox: Sequence },
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
    /// The conversation's digest and the item confirmed in it.
    pub conversation: String,
    pub item_id: String,
    /// The most clicks the key is charged on the campaign in an hour.
    pub billed_clicks_per_hour: u32,
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
    /// Lapses reserves, sends done leases home, tells the other regions of
    /// the pools asked since the last tick, forgets old tokens and
    /// conversations.
    Tick {
        now: UnixMs,
    },
    /// Home: a region's ad facts, those after the last taken from it (its
    /// outbox may ship again); each joins the ad feed.
    Learn {
        region: String,
        facts: Vec<AdFact>,
        now: UnixMs,
        reply: RpcReplyPort<Result<(), ActorError>>,
    },
    /// A read region: a page of home's ad feed, applied with its cursor;
    /// answers the cursor after it.
    LearnFeed {
        page: AdFeedPage,
        /// The conversation secret the page carried, unwrapped.
        secret: Vec<u8>,
        now: UnixMs,
        reply: RpcReplyPort<Result<u64, ActorError>>,
    },
    /// A read region: its place in home's ad feed.
    FeedCursor(RpcReplyPort<u64>),
    Observe(RpcReplyPort<Book>),
    /// A key's pools and renders within the hour, every region's counted.
    ObservePace {
        key_id: String,
        now: UnixMs,
        reply: RpcReplyPort<(u64, u64)>,
    },
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
    /// The last ad fact this node told.
    fact_seq: u64,
    /// Pools counted since the last tick told the other regions, by key
    /// and minute.
    pooled: HashMap<(String, i64), u64>,
    /// A read region: its place in home's ad feed.
    feed_cursor: u64,
}

fn lease_key(campaign_id: &str) -> Vec<u8> {
    [LEASE, campaign_id.as_bytes()].concat()
}

/// The key of a token's `n`th confirmation in `ad_tokens`: the token's key,
/// 0xff (never in a token's UTF-8 id, so no token's confirmations run into
/// another's), and `n`.
fn confirmation_key(token_key: &[u8], n: usize) -> Vec<u8> {
    [token_key, &[0xff], &(n as u32).to_be_bytes()].concat()
}

/// The key of a key's charged clicks on a campaign in the hour of `at`.
fn billed_clicks_key(at: UnixMs, key_id: &str, campaign_id: &str) -> Vec<u8> {
    let hour = be(at.0.div_euclid(HOUR).max(0) as u64);
    [BILLED_CLICKS, &hour, key_id.as_bytes(), &[0], campaign_id.as_bytes()].concat()
}

/// The key of what a conversation did with one item in `ad_conversations`.
pub fn conversation_key(digest: &str, item_id: &str) -> Vec<u8> {
    [digest.as_bytes(), &[0], item_id.as_bytes()].concat()
}

/// Conversations as a run of writes left them: read once, then from here.
struct Conversations<'s> {
    store: &'s Store,
    changed: HashMap<Vec<u8>, AdConversation>,
}

impl<'s> Conversations<'s> {
    fn new(store: &'s Store) -> Self {
        Conversations { store, changed: HashMap::new() }
    }

    fn get(&mut self, key: Vec<u8>, at: UnixMs) -> Result<&mut AdConversation, ActorError> {
        if !self.changed.contains_key(&key) {
            let held = self.store.get::<AdConversation>(cf::AD_CONVERSATIONS, &key)?;
            self.changed
                .insert(key.clone(), held.unwrap_or(AdConversation { first_at: at, ..AdConversation::default() }));
        }
        Ok(self.changed.get_mut(&key).expect("inserted above"))
    }

    fn write(self, batch: &mut Batch<'_>) {
        for (key, conversation) in &self.changed {
            batch.put(cf::AD_CONVERSATIONS, key, conversation);
        }
    }
}

impl AdState {
    /// Writes the campaign's lease as the book holds it now (or its end).
    fn write_lease(&self, batch: &mut Batch<'_>, campaign_id: &str) {
        match self.book.leases.get(campaign_id) {
            Some(lease) => batch.put(cf::ad_book::LEASES, &lease_key(campaign_id), lease),
            None => batch.delete(cf::ad_book::LEASES, &lease_key(campaign_id)),
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
            batch.delete(cf::ad_book::LEASES, &lease_key(campaign_id));
        }
        self.settle(batch, done, now).await
    }

    /// Sends each lease done home with what it used: a read region's in its
    /// outbox, in `batch`; home's straight into its ledger.
    async fn settle(&mut self, batch: &mut Batch<'_>, done: &[(String, Held)], now: UnixMs) -> Result<(), ActorError> {
        match &self.role {
            AdRole::Region { outbox, .. } => {
                for (campaign_id, held) in done {
                    let campaign_id = campaign_id.clone();
                    let settle = Outgoing::AdSettle { campaign_id, lease_id: held.lease_id, used: held.used };
                    outbox.append(batch, &settle);
                }
            }
            AdRole::Home { region, publisher, .. } => {
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

    /// Tells the other regions: at home into the feed, at a read region
    /// into its outbox, in `batch`.
    fn tell(&mut self, batch: &mut Batch<'_>, at: UnixMs, kind: AdFactKind) {
        self.fact_seq += 1;
        let fact = AdFact { seq: self.fact_seq, at, kind };
        match &self.role {
            AdRole::Home { region, feed, .. } => {
                feed.append(batch, &(region.clone(), fact));
            }
            AdRole::Region { outbox, .. } => {
                outbox.append(batch, &Outgoing::AdFact(fact));
            }
        }
        batch.put(cf::ad_book::FACT_SEQ, FACT_SEQ, &self.fact_seq);
    }

    /// Tells the other regions of the pools counted since the last tick.
    fn tell_pooled(&mut self, batch: &mut Batch<'_>, now: UnixMs) {
        let mut pooled: Vec<((String, i64), u64)> = self.pooled.drain().collect();
        pooled.sort();
        for ((key_id, minute), pools) in pooled {
            self.tell(batch, now, AdFactKind::Pooled { key_id, minute, pools });
        }
    }

    /// Counts another region's fact here, as a confirmation or pool of this
    /// region's own is counted. A fact past a conversation's day is moot.
    /// Answers, for home, a charge the fact made that another region's
    /// render or click of the same conversation had made first: two regions
    /// confirmed it before either knew of the other (R3.12 to R3.14).
    fn apply(
        &mut self,
        conversations: &mut Conversations<'_>,
        fact: &AdFact,
        now: UnixMs,
    ) -> Result<Option<Charge>, ActorError> {
        if now.0 - fact.at.0 >= SESSION_KEPT_MS {
            return Ok(None);
        }
        let mut twice = None;
        match &fact.kind {
            AdFactKind::Rendered { conversation, item_id, key_id, charge } => {
                let held = conversations.get(conversation_key(conversation, item_id), fact.at)?;
                if let Some(charge) = charge {
                    let repeats = self.repeats(&charge.campaign_id)?;
                    twice = confirm::render_charged_twice(repeats, held.renders).then(|| charge.clone());
                }
                held.renders = held.renders.saturating_add(1);
                held.rendered_at = held.rendered_at.max(Some(fact.at));
                self.paces.entry(key_id.clone()).or_default().add(minute_of(fact.at), 0, 1, now);
            }
            AdFactKind::Clicked { conversation, item_id, charge } => {
                let held = conversations.get(conversation_key(conversation, item_id), fact.at)?;
                twice = charge.clone().filter(|_| confirm::click_charged_twice(held.clicked_at, fact.at));
                held.clicked_at = held.clicked_at.max(Some(fact.at));
            }
            AdFactKind::Pooled { key_id, minute, pools } => {
                self.paces.entry(key_id.clone()).or_default().add(*minute, *pools, 0, now);
            }
        }
        Ok(twice)
    }

    /// Whether and how often a campaign charges repeats in a conversation.
    fn repeats(&self, campaign_id: &str) -> Result<Repeats, ActorError> {
        let campaign = self.store.get::<Campaign>(cf::CAMPAIGNS, campaign_id.as_bytes())?;
        Ok(campaign.map_or(Repeats { allowed: false, max_per_conversation: 1 }, |c| c.terms.repeats))
    }

    /// Home: what it credits back of a region's charge made twice, as home
    /// counts it: one event's cost of the campaign's terms at the take rate
    /// in force (the region's figure only when it is less), and never past
    /// what the region can have spent of the campaign: what home leased it,
    /// less what it handed back unused from the leases it settled.
    fn creditable(
        &self,
        credited: &mut HashMap<String, Micros>,
        region: &str,
        charge: &Charge,
    ) -> Result<Option<Micros>, ActorError> {
        let AdRole::Home { take_bps, .. } = &self.role else { return Ok(None) };
        let Some(campaign) = self.store.get::<Campaign>(cf::CAMPAIGNS, charge.campaign_id.as_bytes())? else {
            return Ok(None);
        };
        let event = svc_core::ads::event_charge(campaign.terms.net_price, campaign.terms.basis, *take_bps);
        let ledger_key = |key: fn(&str, &str) -> Vec<u8>| key(&charge.campaign_id, region);
        let so_far = match credited.get(&charge.campaign_id) {
            Some(total) => *total,
            None => crate::campaign_ledger::sum(
                &self.store,
                cf::ad_book::CREDITED,
                &ledger_key(crate::campaign_ledger::credited_key),
            )?,
        };
        let granted = crate::campaign_ledger::sum(
            &self.store,
            cf::ad_book::GRANTED,
            &ledger_key(crate::campaign_ledger::granted_key),
        )?;
        let returned = crate::campaign_ledger::sum(
            &self.store,
            cf::ad_book::RETURNED,
            &ledger_key(crate::campaign_ledger::returned_key),
        )?;
        let amount = charge.amount.min(event).min(granted.saturating_sub(returned).saturating_sub(so_far));
        credited.insert(charge.campaign_id.clone(), Micros(so_far.0.saturating_add(amount.0)));
        Ok((amount.0 > 0).then_some(amount))
    }

    /// Home: takes a region's facts after the last taken from it, counts
    /// them here and passes them on in the feed, in one write.
    fn learn(&mut self, region: &str, facts: &[AdFact], now: UnixMs) -> Result<(), ActorError> {
        let AdRole::Home { feed, .. } = &self.role else {
            return Err(ActorError::Refused("only home takes a region's ad facts"));
        };
        let feed = feed.clone();
        let learned_key = [LEARNED, region.as_bytes()].concat();
        let learned: u64 = self.store.get(cf::ad_book::LEARNED, &learned_key)?.unwrap_or(0);
        let fresh: Vec<&AdFact> = facts.iter().filter(|f| f.seq > learned).collect();
        let Some(last) = fresh.iter().map(|f| f.seq).max() else { return Ok(()) };
        let store = self.store.clone();
        let mut batch = store.batch();
        let mut conversations = Conversations::new(&store);
        let mut credits: HashMap<String, Micros> = HashMap::new();
        // What this region was credited back per campaign, so far and in
        // this write: never more than it was leased.
        let mut credited: HashMap<String, Micros> = HashMap::new();
        for fact in fresh {
            if let Some(charge) = self.apply(&mut conversations, fact, now)? {
                let Some(amount) = self.creditable(&mut credited, region, &charge)? else { continue };
                // Credited back to the campaign, and taken off the business's spend.
                let credit = credits.entry(charge.campaign_id.clone()).or_default();
                *credit = Micros(credit.0.saturating_add(amount.0));
                let refund = AdRefund {
                    business_uuid: charge.business_uuid,
                    group_id: charge.group_id,
                    country: charge.country,
                    at: fact.at,
                    amount,
                };
                batch.put(cf::AD_REFUNDS, &[region.as_bytes(), &[0], &be(fact.seq)].concat(), &refund);
            }
            feed.append(&mut batch, &(region.to_owned(), fact.clone()));
        }
        for (campaign_id, total) in credited {
            batch.put(cf::ad_book::CREDITED, &crate::campaign_ledger::credited_key(&campaign_id, region), &total);
        }
        for (campaign_id, credit) in credits {
            let held = crate::campaign_ledger::credit(&store, &campaign_id)?;
            let key = crate::campaign_ledger::credit_key(&campaign_id);
            batch.put(cf::ad_book::CREDIT, &key, &Micros(held.0.saturating_add(credit.0)));
        }
        conversations.write(&mut batch);
        batch.put(cf::ad_book::LEARNED, &learned_key, &last);
        batch.commit().map_err(ActorError::from)
    }

    /// A read region: counts the other regions' facts of a page of home's
    /// feed (its own it counted when they happened), keeps home's secret,
    /// and moves its cursor, in one write.
    fn learn_feed(&mut self, page: &AdFeedPage, secret: &[u8], now: UnixMs) -> Result<u64, ActorError> {
        let AdRole::Region { region, .. } = &self.role else {
            return Err(ActorError::Refused("home writes the ad feed; it does not read one"));
        };
        let region = region.clone();
        let store = self.store.clone();
        let mut batch = store.batch();
        if store.get::<Vec<u8>>(cf::ad_book::CONVERSATION_SECRET, CONVERSATION_SECRET)?.as_deref() != Some(secret) {
            batch.put(cf::ad_book::CONVERSATION_SECRET, CONVERSATION_SECRET, &secret.to_vec());
        }
        if store.get::<u32>(cf::ad_book::TAKE_BPS, TAKE_BPS)? != Some(page.take_bps) {
            batch.put(cf::ad_book::TAKE_BPS, TAKE_BPS, &page.take_bps);
        }
        // Home's feed behind this cursor: home's store was restored. What
        // it numbers anew from its head is new here; counting again what
        // was counted before would count it twice.
        let mut cursor = if page.head < self.feed_cursor { page.head } else { self.feed_cursor };
        let mut conversations = Conversations::new(&store);
        for entry in &page.entries {
            if entry.seq <= cursor {
                continue;
            }
            // Home alone credits a charge made twice.
            if entry.region != region {
                self.apply(&mut conversations, &entry.fact, now)?;
            }
            cursor = entry.seq;
        }
        conversations.write(&mut batch);
        batch.put(cf::ad_book::FEED_CURSOR, FEED_CURSOR, &cursor);
        batch.commit()?;
        self.feed_cursor = cursor;
        Ok(cursor)
    }

    fn confirm(&mut self, ask: &Confirmation, batch: &mut Batch<'_>) -> Result<Confirmed, ActorError> {
        let token = AdToken { confirmations: self.confirmations(&ask.token_key)? };
        let earlier: Vec<Earlier> = token
            .confirmations
            .iter()
            .map(|c| Earlier { idempotency_key: c.idempotency_key.clone(), request: c.request, accepted: c.accepted })
            .collect();
        let conversation_key = conversation_key(&ask.conversation, &ask.item_id);
        let mut conversation = self
            .store
            .get::<AdConversation>(cf::AD_CONVERSATIONS, &conversation_key)?
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
        let clicks_key = billed_clicks_key(ask.now, &ask.key_id, &ask.campaign_id);
        let billed_clicks: u32 =
            if ask.click { self.store.get(cf::ad_book::BILLED_CLICKS, &clicks_key)?.unwrap_or(0) } else { 0 };
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
                    confirm::click_billed(confirm::Click {
                        placement: ask.placement,
                        basis: ask.basis,
                        last_click: conversation.clicked_at,
                        now: ask.now,
                        token_billed: token.confirmations.iter().any(|c| c.charged.0 > 0),
                        billed_this_hour: billed_clicks,
                        hourly_cap: ask.billed_clicks_per_hour,
                    })
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
        // Appended under its own key: a token's thousandth confirmation
        // writes one, not all that came before.
        let confirmation = AdConfirmation {
            idempotency_key: ask.idempotency_key.clone(),
            request: ask.request,
            accepted,
            charged,
            at: ask.now,
            answer: answer.clone(),
        };
        batch.put(cf::AD_TOKENS, &confirmation_key(&ask.token_key, token.confirmations.len()), &confirmation);
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
                AdRole::Region { outbox, .. } => {
                    outbox.append(batch, &Outgoing::AdEvent(event));
                }
            }
            batch.put(cf::ad_book::EVENT_SEQ, EVENT_SEQ, &self.event_seq);
            let (conversation_id, item_id) = (ask.conversation.clone(), ask.item_id.clone());
            let charge = (charged.0 > 0).then(|| Charge {
                campaign_id: ask.campaign_id.clone(),
                amount: charged,
                business_uuid: ask.business_uuid.clone(),
                group_id: ask.group_id.clone(),
                country: ask.country.clone(),
            });
            if ask.click {
                conversation.clicked_at = Some(ask.now);
                if charged.0 > 0 {
                    batch.put(cf::ad_book::BILLED_CLICKS, &clicks_key, &billed_clicks.saturating_add(1));
                }
                self.tell(batch, ask.now, AdFactKind::Clicked { conversation: conversation_id, item_id, charge });
            } else {
                conversation.renders = conversation.renders.saturating_add(1);
                conversation.rendered_at = Some(ask.now);
                self.paces.entry(ask.key_id.clone()).or_default().rendered(ask.now);
                let key_id = ask.key_id.clone();
                let rendered = AdFactKind::Rendered { conversation: conversation_id, item_id, key_id, charge };
                self.tell(batch, ask.now, rendered);
            }
            batch.put(cf::AD_CONVERSATIONS, &conversation_key, &conversation);
        }
        self.write_lease(batch, &ask.campaign_id);
        Ok(Confirmed::Answer(answer))
    }

    /// A token's confirmations, in the order they came: each under its
    /// own key (and, from builds that kept them whole, the token's list).
    fn confirmations(&self, token_key: &[u8]) -> Result<Vec<AdConfirmation>, ActorError> {
        let mut all = self.store.get::<AdToken>(cf::LEGACY_AD_TOKENS, token_key)?.unwrap_or_default().confirmations;
        let prefix = confirmation_key(token_key, 0);
        let appended =
            self.store.scan::<AdConfirmation>(cf::AD_TOKENS, &prefix[..prefix.len() - 4], None, AdToken::MAX)?;
        all.extend(appended.into_iter().map(|(_, c)| c));
        Ok(all)
    }

    fn forget(&mut self, batch: &mut Batch<'_>, now: UnixMs) -> Result<(), ActorError> {
        batch.delete_range(cf::AD_TOKENS.named(), &[], &be(now.0.saturating_sub(TOKENS_KEPT_MS).max(0) as u64));
        // Charged clicks are counted per hour: earlier hours are done.
        batch.delete_range(
            cf::ad_book::BILLED_CLICKS,
            BILLED_CLICKS,
            &billed_clicks_key(now, "", "")[..BILLED_CLICKS.len() + 8],
        );
        let conversations = self.store.scan::<AdConversation>(cf::AD_CONVERSATIONS, &[], None, FORGET_PER_TICK)?;
        for (key, conversation) in conversations {
            if now.0 - conversation.first_at.0 >= SESSION_KEPT_MS {
                batch.delete(cf::AD_CONVERSATIONS, &key);
            }
        }
        self.paces.retain(|_, pace| !pace.idle(now));
        if let AdRole::Home { .. } = self.role {
            let feed = self.store.scan::<(String, AdFact)>(
                crate::replication::exchange::AD_FEED,
                &[],
                None,
                FORGET_PER_TICK,
            )?;
            let old = feed.iter().take_while(|(_, (_, fact))| now.0 - fact.at.0 >= FEED_KEPT_MS);
            if let Some((last, _)) = old.last() {
                let mut end = last.clone();
                end.push(0);
                batch.delete_range(crate::replication::exchange::AD_FEED, &[], &end);
            }
        }
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
        let leases = args.store.scan_all::<Held>(cf::ad_book::LEASES, LEASE)?;
        let leases = leases
            .into_iter()
            .filter_map(|(key, lease)| Some((String::from_utf8(key[LEASE.len()..].to_vec()).ok()?, lease)))
            .collect();
        let mut legacy = args.store.batch();
        legacy.delete(cf::ad_book::RAW, LEGACY_BOOK);
        legacy.commit()?;
        // Reserve ids name reserves in render tokens: a random start keeps
        // a token from before a restart from naming a reserve after it. Below
        // 2^52, so every id stays a safe JSON integer (RFC 8785).
        let first_id = u64::from_le_bytes(svc_clock::random::<8>()) >> 12;
        let book = Book::with_leases(leases, first_id);
        // Home draws the service's one secret; a read region keeps home's
        // from the ad feed (one it drew itself in older builds is replaced).
        if let AdRole::Home { take_bps, .. } = &args.role {
            if args.store.get::<Vec<u8>>(cf::ad_book::CONVERSATION_SECRET, CONVERSATION_SECRET)?.is_none() {
                args.store.put(
                    cf::ad_book::CONVERSATION_SECRET,
                    CONVERSATION_SECRET,
                    &svc_clock::random::<32>().to_vec(),
                )?;
            }
            args.store.put(cf::ad_book::TAKE_BPS, TAKE_BPS, take_bps)?;
        }
        let read = |table: svc_store::Table<u64>, key: &[u8]| args.store.get(table, key).map(Option::unwrap_or_default);
        Ok(AdState {
            book,
            paces: HashMap::new(),
            forgot_at: UnixMs(0),
            event_seq: read(cf::ad_book::EVENT_SEQ, EVENT_SEQ)?,
            fact_seq: read(cf::ad_book::FACT_SEQ, FACT_SEQ)?,
            pooled: HashMap::new(),
            feed_cursor: read(cf::ad_book::FEED_CURSOR, FEED_CURSOR)?,
            store: args.store,
            role: args.role,
        })
    }

    async fn handle(&self, _me: ActorRef<AdMsg>, msg: AdMsg, state: &mut AdState) -> Result<(), ActorProcessingErr> {
        match msg {
            AdMsg::Pool { key_id, asks, pace, now, reply } => {
                let paced = if pace { state.paces.entry(key_id.clone()).or_default().pool(now) } else { Ok(()) };
                if let Err(wait_ms) = paced {
                    let _ = reply.send(Ok(Err(wait_ms)));
                    return Ok(());
                }
                if pace {
                    *state.pooled.entry((key_id.clone(), minute_of(now))).or_default() += 1;
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
                let (event_seq, fact_seq) = (state.event_seq, state.fact_seq);
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
                    (state.event_seq, state.fact_seq) = (event_seq, fact_seq);
                }
                let _ = reply.send(written);
            }
            AdMsg::Tick { now } => {
                let done = state.book.due(now);
                let forget = now.0 - state.forgot_at.0 >= MINUTE;
                // A quiet tick writes nothing.
                if done.is_empty() && !forget && state.pooled.is_empty() {
                    return Ok(());
                }
                let store = state.store.clone();
                let mut batch = store.batch();
                let (pooled, fact_seq) = (state.pooled.clone(), state.fact_seq);
                state.tell_pooled(&mut batch, now);
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
                    (state.pooled, state.fact_seq) = (pooled, fact_seq);
                    tracing::warn!(error = %e, "the ad book's upkeep failed; the next tick tries again");
                }
            }
            AdMsg::Learn { region, facts, now, reply } => {
                let _ = reply.send(state.learn(&region, &facts, now));
            }
            AdMsg::LearnFeed { page, secret, now, reply } => {
                let _ = reply.send(state.learn_feed(&page, &secret, now));
            }
            AdMsg::FeedCursor(reply) => {
                let _ = reply.send(state.feed_cursor);
            }
            AdMsg::Observe(reply) => {
                let _ = reply.send(state.book.clone());
            }
            AdMsg::ObservePace { key_id, now, reply } => {
                let counted = state.paces.get_mut(&key_id).map_or((0, 0), |pace| pace.counted(now));
                let _ = reply.send(counted);
            }
        }
        Ok(())
    }
}

impl crate::actors::observed::Observed for AdMsg {
    type Seen = Book;

    fn observe(reply: ractor::RpcReplyPort<Book>) -> Self {
        AdMsg::Observe(reply)
    }

    fn describe(seen: Book) -> serde_json::Value {
        serde_json::json!({"leases": seen.leases.len(), "reserves": seen.reserves().count()})
    }
}
