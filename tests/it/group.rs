//! Home's group over HTTP/2: three members, each with its own store and
//! listener, agree on one state through their Raft messages; a message not
//! signed under the group's token changes nothing; with the leader gone the
//! other two elect one and go on.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use openraft::{BasicNode, ServerState};
use serde_json::json;
use svc_client::transport::Transport;
use svc_client::trust::Trust;
use svc_clock::{Clock, SharedClock, SystemClock};
use svc_consensus::member::{Member, Settings};
use svc_http::api::group::{GroupState, router};
use svc_store::{Store, StoreError, cf, keys};

const TOKEN: &str = "group-token-for-tests-only-0123456789";

struct Running {
    store: Store,
    member: Arc<Member>,
    url: String,
    server: tokio::task::JoinHandle<()>,
}

async fn start_all(dir: &std::path::Path) -> BTreeMap<u64, Running> {
    let mut listeners = BTreeMap::new();
    for id in 1..=3u64 {
        listeners.insert(id, tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap());
    }
    let urls: BTreeMap<u64, String> =
        listeners.iter().map(|(id, l)| (*id, format!("http://{}", l.local_addr().unwrap()))).collect();
    let clock: SharedClock = Arc::new(SystemClock);
    let mut running = BTreeMap::new();
    for (id, listener) in listeners {
        let store = Store::open(&dir.join(id.to_string())).unwrap();
        let settings = Settings {
            id,
            heartbeat_ms: 100,
            election_ms: (500, 1000),
            commit_timeout: Duration::from_secs(5),
            snapshots: dir.join(format!("{id}-snapshots")),
            snapshot_every: 50_000,
            logs_kept: 10_000,
        };
        let network =
            svc_node::group::Network { id, token: TOKEN.into(), trust: Trust::system(), clock: clock.clone() };
        let member = tokio::task::block_in_place(|| Member::start(&settings, store.clone(), network)).unwrap();
        let state =
            GroupState { member: member.clone(), token: TOKEN.into(), members: vec![1, 2, 3], clock: clock.clone() };
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router(state)).await;
        });
        running.insert(id, Running { store, member, url: urls[&id].clone(), server });
    }
    let members: BTreeMap<u64, BasicNode> = urls.iter().map(|(id, url)| (*id, BasicNode::new(url))).collect();
    tokio::task::block_in_place(|| running[&1].member.initialize(members)).unwrap();
    running
}

/// The member all of `among` see leading.
async fn leader(running: &BTreeMap<u64, Running>, among: &[u64]) -> u64 {
    for _ in 0..400 {
        let seen: Vec<Option<u64>> =
            among.iter().map(|id| running[id].member.raft().metrics().borrow().current_leader).collect();
        if let Some(Some(id)) = seen.first()
            && seen.iter().all(|s| *s == Some(*id))
            && among.contains(id)
            && running[id].member.raft().metrics().borrow().state == ServerState::Leader
        {
            return *id;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no leader among {among:?}");
}

fn put(running: &Running, key: &str, value: &str) -> Result<(), StoreError> {
    tokio::task::block_in_place(|| running.store.put(cf::FRESHNESS, key.as_bytes(), &value.to_owned()))
}

async fn state_at(running: &Running, index: u64) -> Vec<svc_store::Write> {
    for _ in 0..400 {
        if running.member.raft().metrics().borrow().last_applied.is_some_and(|id| id.index >= index) {
            return running.store.group_state((cf::meta::RAFT_APPLIED, keys::meta::RAFT_APPLIED)).unwrap().0;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("never applied {index}");
}

#[tokio::test(flavor = "multi_thread")]
async fn three_members_agree_over_http_refuse_an_outsiders_vote_and_go_on_without_their_leader() {
    let dir = tempfile::tempdir().unwrap();
    let mut running = start_all(dir.path()).await;
    let first = leader(&running, &[1, 2, 3]).await;
    put(&running[&first], "a", "one").unwrap();
    let index = running[&first].member.raft().metrics().borrow().last_log_index.unwrap();
    let mut states = Vec::new();
    for id in 1..=3 {
        states.push(state_at(&running[&id], index).await);
    }
    assert!(states.iter().all(|s| *s == states[0]) && !states[0].is_empty(), "every member holds the write");

    // An outsider asks a follower to vote for it in a far later term: signed
    // under another token, as an unknown member, or too late, it is refused,
    // and the follower's term does not move (it would, and the group would
    // lose its leader, if the vote were heard).
    let follower = (1..=3).find(|id| *id != first).unwrap();
    let term = running[&follower].member.raft().metrics().borrow().current_term;
    let vote = openraft::raft::VoteRequest::new(openraft::Vote::new(term + 100, 9), None);
    let body = postcard::to_stdvec(&vote).unwrap();
    let now = SystemClock.now().0;
    let transport = Transport::http2(&running[&follower].url, &Trust::system()).unwrap();
    for (signer, token, at) in
        [("group-2", "not-the-group-token", now), ("group-9", TOKEN, now), ("group-3", TOKEN, now - 10 * 60_000)]
    {
        let request = crate::common::link_request_at(
            "POST",
            "/internal/v1/group/vote",
            signer,
            token,
            body.clone(),
            at,
            "v0te-1d",
        );
        let answer = transport.send(request).await.unwrap();
        assert_eq!(answer.status, 401, "{signer}: {}", String::from_utf8_lossy(&answer.bytes));
    }
    assert_eq!(running[&follower].member.raft().metrics().borrow().current_term, term);

    // The leader stops, and its listener with it: the others elect one of
    // themselves and take writes again; the old leader's store holds none.
    let gone = running.remove(&first).unwrap();
    gone.server.abort();
    tokio::task::block_in_place(|| gone.member.stop());
    let others: Vec<u64> = running.keys().copied().collect();
    let second = leader(&running, &others).await;
    put(&running[&second], "b", "two").unwrap();
    let index = running[&second].member.raft().metrics().borrow().last_log_index.unwrap();
    let (x, y) = (state_at(&running[&others[0]], index).await, state_at(&running[&others[1]], index).await);
    assert_eq!(x, y);
    assert!(x.iter().any(|w| matches!(w, svc_store::Write::Put { key, .. } if key == b"b")));
    assert_eq!(gone.store.get::<String>(cf::FRESHNESS, b"b").unwrap(), None);
    for (_, member) in running {
        member.server.abort();
        tokio::task::block_in_place(|| member.member.stop());
    }
}

/// A port free on loopback now (for addresses a config names before its
/// node binds them).
fn free_port() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

/// The members' configs: sandbox homes on loopback, one group, with
/// timings short enough for tests (a leader's lease, twice the longest
/// election timeout, stays 3 s: a whole suite on two cores delays acks),
/// and a snapshot every few entries, so a member far behind takes one.
pub(crate) fn group_configs(dir: &std::path::Path) -> Vec<svc_node::config::NodeConfig> {
    let mut configs = svc_node::config::NodeConfig::local_group(dir, 3).unwrap();
    for config in &mut configs {
        // The operator's token `common::Home`'s helpers send, so a test can
        // drive the leader's region with them.
        config.admin_token = "operator-token-of-thirty-two-characters".into();
    }
    for group in configs.iter_mut().filter_map(|c| c.home_group.as_mut()) {
        (group.heartbeat_ms, group.election_ms, group.commit_timeout_ms) = (100, [500, 1_500], 3_000);
        (group.snapshot_every, group.logs_kept) = (16, 4);
    }
    configs
}

/// Every member of `configs`, started, by number.
pub(crate) async fn start_members(
    configs: &[svc_node::config::NodeConfig],
    clock: &SharedClock,
) -> BTreeMap<u64, svc_http::group_node::GroupNode> {
    let mut nodes = BTreeMap::new();
    for config in configs {
        let id = config.home_group.as_ref().unwrap().id;
        nodes.insert(id, svc_http::group_node::GroupNode::start(config.clone(), clock.clone()).await.unwrap());
    }
    nodes
}

/// The member that leads with its region up, among `nodes`; up to a
/// minute (a whole suite on two cores slows an election and a region's
/// start), then what each member's Raft saw.
pub(crate) async fn leading(nodes: &BTreeMap<u64, svc_http::group_node::GroupNode>) -> u64 {
    for _ in 0..2_400 {
        for (id, node) in nodes {
            if node.leading.lock().await.is_some() {
                return *id;
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let seen: Vec<String> = nodes
        .iter()
        .map(|(id, node)| {
            let m = node.member.raft().metrics().borrow().clone();
            format!(
                "member {id}: {:?}, leader {:?}, term {}, applied {:?}, quorum answered {:?} ms ago",
                m.state, m.current_leader, m.current_term, m.last_applied, m.millis_since_quorum_ack
            )
        })
        .collect();
    panic!("no member brought its region up: {seen:?}");
}

async fn admin_call(
    base: &str,
    token: &str,
    method: &str,
    path: &str,
    body: serde_json::Value,
) -> Result<svc_client::transport::Answer, svc_client::ClientError> {
    let request = axum::http::Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    Transport::new(base).unwrap().send(request).await
}

/// Three members running, the leader found, and a company made there.
struct Group {
    dir: tempfile::TempDir,
    configs: Vec<svc_node::config::NodeConfig>,
    token: String,
    clock: SharedClock,
    nodes: BTreeMap<u64, svc_http::group_node::GroupNode>,
    first: u64,
    admin: String,
    before: String,
}

impl Group {
    async fn with_a_company(name: &str) -> Group {
        Self::configured(name, |_| {}).await
    }

    /// The same, each member's config adjusted by `configure` first.
    async fn configured(name: &str, configure: impl Fn(&mut svc_node::config::NodeConfig)) -> Group {
        let dir = tempfile::tempdir().unwrap();
        let mut configs = group_configs(dir.path());
        configs.iter_mut().for_each(configure);
        let token = configs[0].admin_token.clone();
        let clock: SharedClock = Arc::new(SystemClock);
        let nodes = start_members(&configs, &clock).await;
        let first = leading(&nodes).await;
        let admin = format!("http://{}", configs[first as usize - 1].admin_listen);
        let before = company_at(&admin, &token, name).await;
        Group { dir, configs, token, clock, nodes, first, admin, before }
    }
}

// Home as three `svc node` members: one leads and runs the region, the
// others stand by (readyz 503, naming the leader) and send requests on to
// the leader. The leader stops: another is elected, brings its region up
// over the same state (the company written before is there) and takes
// writes, and its transparency log extends the old leader's (a
// consistency proof between their checkpoints); the old member, started
// again, stands by and holds what was written while it was away.
#[tokio::test(flavor = "multi_thread")]
async fn a_home_of_three_members_fails_over_to_a_member_holding_every_acknowledged_write() {
    let Group { dir: _dir, configs, token, clock, mut nodes, first, admin, before } =
        Group::with_a_company("Before").await;
    let standby = nodes.keys().copied().find(|id| *id != first).unwrap();
    let public = format!("http://{}", configs[standby as usize - 1].listen);
    let ready = Transport::new(&public)
        .unwrap()
        .send(axum::http::Request::get("/readyz").body(axum::body::Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(ready.status, 503);
    assert_eq!(
        (ready.json()["role"].as_str(), ready.json()["group_leader"].as_u64()),
        (Some("home-standby"), Some(first))
    );
    // A standby sends a write on to the leader, which makes it and answers.
    let standby_admin = format!("http://{}", configs[standby as usize - 1].admin_listen);
    let relayed =
        admin_until(&standby_admin, &token, "POST", "/admin/companies", json!({"name": "Relayed"}), 201).await;
    let relayed = relayed["ai_company_uuid"].as_str().unwrap().to_owned();
    {
        let region = nodes[&first].leading.lock().await;
        let store = &region.as_ref().unwrap().state.store;
        assert!(store.contains(cf::COMPANIES, relayed.as_bytes()).unwrap(), "the leader made what the standby took");
    }
    // A request already sent on by a member is not sent round again: a
    // standby answers it 503 (two members each thinking the other leads
    // would otherwise pass it between them).
    let request = axum::http::Request::post("/admin/companies")
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .header(svc_http::group_node::RELAYED_HEADER, "9")
        .body(axum::body::Body::from(r#"{"name":"Round"}"#))
        .unwrap();
    let round = Transport::new(&standby_admin).unwrap().send(request).await.unwrap();
    assert_eq!(round.status, 503, "{}", String::from_utf8_lossy(&round.bytes));
    // Its public listener sends on too: the leader's key set, through a standby.
    let keys = public_answer(&public, "/.well-known/keys").await;
    assert_eq!(keys.status, 200, "{}", String::from_utf8_lossy(&keys.bytes));

    // A business's key (a leaf of the transparency log), and the first
    // leader's checkpoint over it.
    let key = {
        let region = nodes[&first].leading.lock().await;
        region.as_ref().unwrap().state.keys.checkpoint.verifying_key()
    };
    let leader_public = format!("http://{}", configs[first as usize - 1].listen);
    let (size1, checkpoint1, _) = checkpoint_after_business(&admin, &leader_public, &token, "Before SAS", &key).await;

    // The leader stops; another member leads, over every acknowledged write.
    nodes.remove(&first).unwrap().stop().await;
    let second = leading(&nodes).await;
    assert_ne!(second, first);
    let admin = format!("http://{}", configs[second as usize - 1].admin_listen);
    let after = company_at(&admin, &token, "After").await;
    {
        let region = nodes[&second].leading.lock().await;
        let store = &region.as_ref().unwrap().state.store;
        assert!(store.contains(cf::COMPANIES, before.as_bytes()).unwrap(), "the write acknowledged before is kept");
        assert!(store.contains(cf::COMPANIES, relayed.as_bytes()).unwrap(), "and the one a standby sent on");
        assert!(store.contains(cf::COMPANIES, after.as_bytes()).unwrap());
    }

    // The transparency log did not fork: the new leader signs with the
    // same key, and its checkpoint is consistent with the old leader's
    // last one, by the consistency proof it serves.
    let leader_public = format!("http://{}", configs[second as usize - 1].listen);
    let (size2, checkpoint2, _) = checkpoint_after_business(&admin, &leader_public, &token, "After SAS", &key).await;
    assert!(size2 > size1, "{size1} then {size2}");
    let proof = public_get(&leader_public, &format!("/v1/log/proof?from={size1}&to={size2}")).await;
    let path = svc_core::tlog::parse_path(&proof["consistency_path"]).unwrap();
    checkpoint1.check_consistency(&checkpoint2, &path).expect("the new leader's log extends the old leader's");

    // The old leader comes back as a standby and catches up.
    let back =
        svc_http::group_node::GroupNode::start(configs[first as usize - 1].clone(), clock.clone()).await.unwrap();
    let mut caught_up = false;
    for _ in 0..400 {
        if back.member.raft().metrics().borrow().last_applied
            >= nodes[&second].member.raft().metrics().borrow().last_applied
        {
            caught_up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(caught_up, "the member that came back applied what was written while it was away");
    assert!(back.leading.lock().await.is_none(), "it stands by");
    back.stop().await;
    for (_, node) in nodes {
        node.stop().await;
    }
}

async fn public_get(base: &str, path: &str) -> serde_json::Value {
    let answer = public_answer(base, path).await;
    assert_eq!(answer.status, 200, "{path}: {}", String::from_utf8_lossy(&answer.bytes));
    answer.json()
}

/// What `base` answers a `GET` of `path`, whatever its status.
async fn public_answer(base: &str, path: &str) -> svc_client::transport::Answer {
    let request = axum::http::Request::get(path).body(axum::body::Body::empty()).unwrap();
    Transport::new(base).unwrap().send(request).await.unwrap()
}

/// Creates a business and its integration key at the leader, has it
/// sequence its log, and opens the checkpoint it then serves under `key`;
/// with the business's id.
async fn checkpoint_after_business(
    admin: &str,
    public: &str,
    token: &str,
    name: &str,
    key: &svc_core::keys::VerifyingKey,
) -> (u64, svc_core::tlog::Checkpoint, String) {
    let business = serde_json::json!({"legal_name": name, "country": "FR", "brands": [name]});
    let created = admin_until(admin, token, "POST", "/admin/businesses", business, 201).await;
    let uuid = created["business_uuid"].as_str().unwrap().to_owned();
    let seed = svc_core::digest::sha256(name.as_bytes());
    let integration = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &seed).unwrap();
    let key_added = serde_json::json!({"jwk": integration.verifying_key().to_jwk(), "purpose": "integration"});
    admin_until(admin, token, "POST", &format!("/admin/businesses/{uuid}/keys"), key_added, 201).await;
    let sequenced = admin_until(admin, token, "POST", "/admin/log/sequence", serde_json::json!({}), 200).await;
    let size = sequenced["tree_size"].as_u64().unwrap();
    assert!(size > 0, "the key's `key_added` is a leaf");
    let served = public_get(public, &format!("/v1/log/checkpoint?tree_size={size}")).await;
    let note = served["checkpoint"].as_str().unwrap();
    let origin = served["origin"].as_str().unwrap();
    let checkpoint = svc_core::tlog::Checkpoint::open(note, origin, key).expect("a checkpoint under home's one key");
    (size, checkpoint, uuid)
}

// A member that does not lead answers home's public reads from its own
// copy of the group's state, with or without a leader: here the other two
// stopped, so no leader can be elected, and the standby still serves the
// transparency log's checkpoint (the one the leader signed, under home's
// key), a business's certificate and its keys, the key set byte for byte,
// and a verification and a verify page of a published product, signed by
// the statement key the leader rotated to after the standby opened its
// copy. A signed search needs the leader (it bills): 503.
// rule: P4.2.8, P4.2.18
#[tokio::test(flavor = "multi_thread")]
async fn a_standby_answers_home_s_public_reads_from_its_own_copy_with_no_leader() {
    let Group { dir: _dir, configs, token, mut nodes, first, admin, .. } =
        Group::configured("Before", production).await;
    let home = helpers_at(&nodes[&first]).await;
    let key = home.state.keys.checkpoint.verifying_key();
    let leader_public = format!("http://{}", configs[first as usize - 1].listen);
    let business = home.business("Lumen", crate::common::products_scope(1_000)).await;
    // The helpers sign at their clock's time: the machine's, after the key was registered.
    home.clock.set(SystemClock.now());
    let published = home.publish(&business, &[crate::common::product("Lumen", "l-1", "19.90")], "a").await;
    assert_eq!(published.status, 200, "{:?}", published.body);
    let record_id = published.body["results"][0]["record_id"].as_str().unwrap().to_owned();
    let caller = home.caller("Reader").await;
    home.clock.set(SystemClock.now());
    let fetched = home.signed(&caller.key, "GET", &format!("/v1/records/{record_id}"), b"", "svc-retrieval", &[]).await;
    assert_eq!(fetched.status, 200, "{:?}", fetched.body);
    let record = crate::verify::record_of(&fetched);
    let (size, signed, uuid) = checkpoint_after_business(&admin, &leader_public, &token, "Copy SAS", &key).await;
    let from_leader = public_get(&leader_public, &format!("/v1/certificates/{uuid}")).await;
    let standby = nodes.keys().copied().find(|id| *id != first).unwrap();
    let public = format!("http://{}", configs[standby as usize - 1].listen);
    // The standby opened its copy; the leader rotates its statement key since.
    readiness_until(&public, "the standby opens its own copy", |r| r["own_copy"] == true).await;
    let rotated = json!({"purpose": "statement"});
    admin_until(&admin, &token, "POST", "/admin/service-keys/rotate", rotated, 200).await;
    let statement_key = home.state.keys.statement_key();
    assert_ne!(statement_key.classical.verifying_key(), home.state.keys.statement.classical.verifying_key());
    let key_set = public_answer(&leader_public, "/.well-known/keys").await;
    let target = nodes[&first].member.raft().metrics().borrow().last_applied;
    crate::common::eventually("the standby applies what the leader did", async || {
        nodes[&standby].member.raft().metrics().borrow().last_applied >= target
    })
    .await;
    let others: Vec<u64> = nodes.keys().copied().filter(|id| *id != standby).collect();
    for id in others {
        nodes.remove(&id).unwrap().stop().await;
    }
    // Past the 250 ms for which the standby signs with the keys it last read.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let served = public_get(&public, &format!("/v1/log/checkpoint?tree_size={size}")).await;
    let checkpoint = svc_core::tlog::Checkpoint::open(
        served["checkpoint"].as_str().unwrap(),
        served["origin"].as_str().unwrap(),
        &key,
    )
    .expect("the standby serves a checkpoint under home's key");
    assert_eq!((checkpoint.size, checkpoint.root), (signed.size, signed.root), "the one the leader signed");
    let certificate = public_get(&public, &format!("/v1/certificates/{uuid}")).await;
    assert_eq!(certificate, from_leader, "the certificate the leader served");
    let tiled = public_answer(&public, "/log/checkpoint").await;
    assert_eq!(tiled.status, 200, "{}", String::from_utf8_lossy(&tiled.bytes));
    let keys = public_answer(&public, "/.well-known/keys").await;
    assert_eq!((keys.status, &keys.bytes), (200, &key_set.bytes), "the key set the leader served, byte for byte");
    let business_keys = public_get(&public, &format!("/v1/certificates/{}/keys", business.uuid)).await;
    assert_eq!(business_keys["keys"].as_array().map(Vec::len), Some(2), "{business_keys}");

    let body = serde_json::json!({
        "record_base64": svc_core::b64::std_encode(&record),
        "seal": fetched.body["seal"],
        "sidecar": fetched.body["sidecar"],
    });
    let request = axum::http::Request::post("/v1/verify")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(serde_json::to_vec(&body).unwrap()))
        .unwrap();
    let judged = Transport::new(&public).unwrap().send(request).await.unwrap();
    assert_eq!(judged.status, 200, "{}", String::from_utf8_lossy(&judged.bytes));
    let envelope = svc_core::dsse::Envelope::from_value(&judged.json()["statement"]).unwrap();
    let payload = statement_key
        .verify_short_lived(&envelope, "application/vnd.service.verify-statement.v1+json")
        .expect("signed by the statement key the leader rotated to");
    let statement: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!((&statement["seal"]["valid"], &statement["log_inclusion"]["included"]), (&json!(true), &json!(true)));
    let origin = svc_core::digest::sha256_prefixed(&record);
    let page = public_get(&public, &format!("/v1/verify/{record_id}?origin={origin}")).await;
    assert_eq!((page["status"].as_str(), page["valid"].as_bool()), (Some("current"), Some(true)), "{page}");
    let envelope = svc_core::dsse::Envelope::from_value(&page["statement"]).unwrap();
    statement_key.verify(&envelope, &envelope.payload_type).expect("the page is signed by the current statement key");

    let search =
        home.signed_request(&caller.key, "POST", "/v1/search", br#"{"collection":"products"}"#, "svc-retrieval", &[]);
    let searched = Transport::new(&public).unwrap().send(search).await.unwrap();
    assert_eq!(searched.status, 503, "a signed search bills: it needs the leader");
    for (_, node) in nodes {
        node.stop().await;
    }
}

/// A production home, as `common::Home`'s helpers expect (a sandbox would
/// want their keys introduced), whose searches wait for every row.
fn production(config: &mut svc_node::config::NodeConfig) {
    config.environment = svc_store::model::Environment::Production;
    config.search_budget_ms = 10_000;
}

/// `common::Home`'s helpers over the region of `leader`, signing at the
/// machine's time (`clock.set` again after a key is registered).
async fn helpers_at(leader: &svc_http::group_node::GroupNode) -> crate::common::Home {
    let region = leader.leading.lock().await;
    crate::common::Home {
        state: region.as_ref().expect("it leads").state.clone(),
        clock: svc_clock::ManualClock::at(SystemClock.now()),
        dir: tempfile::tempdir().unwrap(),
    }
}

// A member that does not lead keeps a search index of its own from the
// log it applies: what the leader published is searchable there before it
// is elected (its `/readyz` says how far it got), and once the leader is
// gone and it leads, its region answers a search with every product at
// once, having nothing left to index.
#[tokio::test(flavor = "multi_thread")]
async fn a_standby_keeps_its_own_search_index_and_leads_with_it_current() {
    let Group { dir: _dir, configs, mut nodes, first, .. } = Group::configured("Before", production).await;
    let home = helpers_at(&nodes[&first]).await;
    let business = home.business("Lumen", crate::common::products_scope(1_000)).await;
    home.clock.set(SystemClock.now());
    let products: Vec<Vec<u8>> = (1..=3).map(|n| crate::common::product("Lumen", &format!("l-{n}"), "19.90")).collect();
    let published = home.publish(&business, &products, "a").await;
    assert_eq!(published.status, 200, "{:?}", published.body);
    let caller = home.caller("Reader").await;
    let head = svc_node::replication::last_seq(&home.state.store).unwrap();
    let standbys: Vec<u64> = nodes.keys().copied().filter(|id| *id != first).collect();
    for id in &standbys {
        crate::common::eventually("each standby indexes what the leader published", async || {
            svc_node::actors::indexer::indexed_seq(&nodes[id].store).unwrap() >= head
        })
        .await;
    }
    let ready = public_answer(&format!("http://{}", configs[standbys[0] as usize - 1].listen), "/readyz").await;
    assert_eq!((ready.status, ready.json()["role"].as_str()), (503, Some("home-standby")));
    assert!(ready.json()["indexed_seq"].as_u64() >= Some(head), "{}", ready.json());

    nodes.remove(&first).unwrap().stop().await;
    let second = leading(&nodes).await;
    let home = helpers_at(&nodes[&second]).await;
    home.clock.set(SystemClock.now());
    let indexed = home.state.indexer.call(svc_node::actors::indexer::IndexerMsg::Observe).await.unwrap();
    assert!(indexed.applied_seq >= head, "the new leader's index was current when its region started");
    let found = home.search(&caller, "/v1/search", json!({"collection": "products", "q": "lampe", "filter": {"all": [{"country": "FR"}]}, "sort_by": "_text_match:desc"})).await;
    assert_eq!(found.status, 200, "{:?}", found.body);
    assert_eq!(found.body["rows"].as_array().map(Vec::len), Some(3), "{:?}", found.body);
    for (_, node) in nodes {
        node.stop().await;
    }
}

// A member whose disk is lost is rebuilt from the others: started again
// over an empty data directory, it takes the leader's snapshot (the log it
// would need was purged: a snapshot every 16 entries here) and holds what
// the others hold, the member that made the group included (its first
// start makes nothing new over a group that exists: the others' log
// agrees with it).
#[tokio::test(flavor = "multi_thread")]
async fn a_member_that_lost_its_disk_catches_up_from_the_others() {
    let Group { dir: _dir, configs, token, clock, mut nodes, admin: _, before, .. } =
        Group::with_a_company("Before the loss").await;
    // Member 1, the one that made the group (and likely the leader), loses
    // its disk; on its next start it makes the group again, over nothing.
    let lost = 1;
    nodes.remove(&lost).unwrap().stop().await;
    std::fs::remove_dir_all(&configs[lost as usize - 1].data_dir).unwrap();
    let first = leading(&nodes).await;
    let admin = format!("http://{}", configs[first as usize - 1].admin_listen);
    let during = company_at(&admin, &token, "While it was away").await;
    crate::common::eventually("the leader purges its log", async || {
        nodes[&first].member.raft().metrics().borrow().purged.is_some_and(|id| id.index > 0)
    })
    .await;
    let back = svc_http::group_node::GroupNode::start(configs[lost as usize - 1].clone(), clock.clone()).await.unwrap();
    let target = nodes[&first].member.raft().metrics().borrow().last_applied;
    let mut caught_up = false;
    for _ in 0..800 {
        if back.member.raft().metrics().borrow().last_applied >= target {
            caught_up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(caught_up, "member {lost} holds the group's state again");
    let installed = back.member.raft().metrics().borrow().snapshot;
    assert!(installed.is_some(), "from the leader's snapshot");
    for company in [&before, &during] {
        assert!(back.store.contains(cf::COMPANIES, company.as_bytes()).unwrap(), "the rebuilt member holds {company}");
    }
    assert!(back.leading.lock().await.is_none(), "it stands by");
    back.stop().await;
    for (_, node) in nodes {
        node.stop().await;
    }
}

// A member elected while its region cannot start (here its public port is
// held by another process) tries again until it can: once the port is
// free its region comes up, with no election or write to wake it. A leader
// that gave up would leave home without a region for good, every standby
// answering that the leader cannot be reached.
#[tokio::test(flavor = "multi_thread")]
async fn a_leader_whose_region_could_not_start_brings_it_up_once_it_can() {
    let dir = tempfile::tempdir().unwrap();
    let configs = svc_node::config::NodeConfig::local_group(dir.path(), 1).unwrap();
    let held = std::net::TcpListener::bind(configs[0].listen).unwrap();
    let clock: SharedClock = Arc::new(SystemClock);
    let nodes = start_members(&configs, &clock).await;
    let mut elected = false;
    for _ in 0..800 {
        elected = nodes[&1].member.raft().metrics().borrow().state == ServerState::Leader;
        if elected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(elected, "the group of one elects its member");
    // Its first start failed, and the group has long settled.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(nodes[&1].leading.lock().await.is_none(), "no region while its port is held");
    drop(held);
    assert_eq!(leading(&nodes).await, 1, "the leader's region came up once its port was free");
    let admin = format!("http://{}", configs[0].admin_listen);
    company_at(&admin, &configs[0].admin_token, "After the port was freed").await;
    for (_, node) in nodes {
        node.stop().await;
    }
}

// A leader cut off from the rest of its group (here they stopped) keeps its
// title in Raft, which has no word from a newer term; it stops serving once
// no quorum has answered it for its lease (twice the longest election
// timeout), so it neither
// answers reads from a state the others may have moved past nor takes
// writes it cannot commit: its public address stands by (`503`).
#[tokio::test(flavor = "multi_thread")]
async fn a_leader_no_quorum_answers_stops_serving() {
    let Group { dir: _dir, configs, mut nodes, first, .. } = Group::with_a_company("Before the cut").await;
    let others: Vec<u64> = nodes.keys().copied().filter(|id| *id != first).collect();
    for id in others {
        nodes.remove(&id).unwrap().stop().await;
    }
    let public = format!("http://{}", configs[first as usize - 1].listen);
    let ready = readiness_until(&public, "the cut-off leader stands by", |r| r["role"] == "home-standby").await;
    assert_eq!((ready["ready"].as_bool(), ready["group_leader"].as_u64()), (Some(false), None), "{ready}");
    assert!(nodes[&first].leading.lock().await.is_none(), "its region stopped");
    assert_eq!(nodes[&first].member.raft().metrics().borrow().state, ServerState::Leader, "Raft still calls it leader");
    for (_, node) in nodes {
        node.stop().await;
    }
}

/// Waits until `base`'s `/readyz` says `check`.
async fn readiness_until(base: &str, what: &str, check: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let transport = Transport::new(base).unwrap();
    let mut last = serde_json::Value::Null;
    for _ in 0..1_200 {
        let request = axum::http::Request::get("/readyz").body(axum::body::Body::empty()).unwrap();
        if let Ok(answer) = transport.send(request).await {
            last = answer.json();
            if check(&last) {
                return last;
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{what} never happened: {last}");
}

/// An admin call at the leading member, asked again while it answers 503
/// or cannot be reached (a member switching roles, or the group electing a
/// leader under the load of the tests beside), as a client would.
async fn admin_until(
    admin: &str,
    token: &str,
    method: &str,
    path: &str,
    body: serde_json::Value,
    status: u16,
) -> serde_json::Value {
    for _ in 0..400 {
        if let Ok(answer) = admin_call(admin, token, method, path, body.clone()).await {
            if answer.status == status {
                return answer.json();
            }
            assert_eq!(answer.status, 503, "{path}: {}", String::from_utf8_lossy(&answer.bytes));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the leader never answered {path}");
}

/// Makes a company at the leading member.
pub(crate) async fn company_at(admin: &str, token: &str, name: &str) -> String {
    let made = admin_until(admin, token, "POST", "/admin/companies", serde_json::json!({ "name": name }), 201).await;
    made["ai_company_uuid"].as_str().unwrap().to_owned()
}

// A read region names every member of home's group and follows whichever
// leads: with the leader stopped it pulls the new leader's log, which runs
// on from the same history (the running hash agrees: no fork is found).
#[tokio::test(flavor = "multi_thread")]
async fn a_read_region_follows_home_s_leading_member_and_its_history_runs_on_unforked() {
    let dir = tempfile::tempdir().unwrap();
    let mut configs = group_configs(dir.path());
    let eu_token = crate::common::region_token("eu");
    for config in &mut configs {
        config.internal_listen = Some(free_port());
        config.replication =
            Some(svc_node::config::ReplicationConfig::home(vec![svc_node::config::RegionCredential::new(
                "eu", &eu_token,
            )]));
    }
    let token = configs[0].admin_token.clone();
    let clock: SharedClock = Arc::new(SystemClock);
    let mut nodes = start_members(&configs, &clock).await;
    let first = leading(&nodes).await;
    let urls = |c: &svc_node::config::NodeConfig| {
        (format!("http://{}", c.listen), format!("http://{}", c.internal_listen.unwrap()))
    };
    let loopback = "127.0.0.1:0".parse().unwrap();
    let mut eu_config = svc_node::config::NodeConfig::local_home(dir.path().join("eu"), loopback, loopback);
    eu_config.region = "eu".into();
    eu_config.role = svc_node::config::Role::Read;
    let (home_url, internal_url) = urls(&configs[0]);
    let mut link = svc_node::config::ReplicationConfig::read(Some(home_url), Some(internal_url), &eu_token);
    link.home_members = configs[1..]
        .iter()
        .map(|c| {
            let (home_url, internal_url) = urls(c);
            svc_node::config::HomeMemberUrls { home_url, internal_url }
        })
        .collect();
    eu_config.replication = Some(link);
    let eu = svc_http::node::Node::start(eu_config, clock.clone()).await.unwrap();
    let eu_url = format!("http://{}", eu.addr);

    let admin = format!("http://{}", configs[first as usize - 1].admin_listen);
    let before = company_at(&admin, &token, "Before").await;
    let head = {
        let region = nodes[&first].leading.lock().await;
        svc_node::replication::last_seq(&region.as_ref().unwrap().state.store).unwrap()
    };
    readiness_until(&eu_url, "eu catches up with the first leader", |r| {
        r["ready"] == true && r["applied_seq"].as_u64() >= Some(head)
    })
    .await;
    assert!(eu.state.store.contains(cf::COMPANIES, before.as_bytes()).unwrap());

    nodes.remove(&first).unwrap().stop().await;
    let second = leading(&nodes).await;
    let admin = format!("http://{}", configs[second as usize - 1].admin_listen);
    let after = company_at(&admin, &token, "After").await;
    let head = {
        let region = nodes[&second].leading.lock().await;
        svc_node::replication::last_seq(&region.as_ref().unwrap().state.store).unwrap()
    };
    let ready =
        readiness_until(&eu_url, "eu follows the new leader", |r| r["applied_seq"].as_u64() >= Some(head)).await;
    assert!(ready["history_fork"].is_null(), "one history across the failover: {ready}");
    assert!(eu.state.store.contains(cf::COMPANIES, after.as_bytes()).unwrap(), "eu holds what the new leader wrote");
    eu.stop().await;
    for (_, node) in nodes {
        node.stop().await;
    }
}

// Every member lost at once: the group starts again from one member's
// backup of `db/` (taken with it stopped, as deploy/OPERATING.md says),
// the other two with empty data directories. The restored member leads
// (its log is the only one) and the others take its snapshot: each holds
// what the backup held, and none what was written after it (a restore
// loses that, as for a lone home). The restored member's snapshot file,
// made after the backup, was left beside the restored `db/`: it is not
// the store's and is not sent (the others would hold what came after).
#[tokio::test(flavor = "multi_thread")]
async fn the_whole_group_starts_again_from_one_member_s_backup() {
    let Group { dir, configs, token, clock, nodes, before, admin, .. } = Group::with_a_company("In the backup").await;
    // Member 1's log is purged (a snapshot every 16 entries), so the
    // others can only take a snapshot.
    for i in 0..20 {
        company_at(&admin, &token, &format!("Filler {i}")).await;
    }
    crate::common::eventually("member 1 purges its log", async || {
        nodes[&1].member.raft().metrics().borrow().purged.is_some_and(|id| id.index > 0)
    })
    .await;
    let backed_up = nodes[&1].member.raft().metrics().borrow().last_applied;
    for (_, node) in nodes {
        node.stop().await;
    }
    let backup = dir.path().join("backup");
    crate::common::copy_tree(&configs[0].data_dir.join("db"), &backup, &[]);
    let nodes = start_members(&configs, &clock).await;
    let first = leading(&nodes).await;
    let admin = format!("http://{}", configs[first as usize - 1].admin_listen);
    let after = company_at(&admin, &token, "After the backup").await;
    for i in 0..20 {
        company_at(&admin, &token, &format!("Filler after {i}")).await;
    }
    crate::common::eventually("member 1 snapshots what came after the backup", async || {
        nodes[&1].member.raft().metrics().borrow().snapshot > backed_up
    })
    .await;
    for (_, node) in nodes {
        node.stop().await;
    }

    // Member 1's `db/` restored over its own; the others lost everything.
    std::fs::remove_dir_all(configs[0].data_dir.join("db")).unwrap();
    for config in &configs[1..] {
        std::fs::remove_dir_all(&config.data_dir).unwrap();
    }
    crate::common::copy_tree(&backup, &configs[0].data_dir.join("db"), &[]);
    let nodes = start_members(&configs, &clock).await;
    let first = leading(&nodes).await;
    assert_eq!(first, 1, "the member with the log leads");
    let target = nodes[&first].member.raft().metrics().borrow().last_applied;
    for (id, node) in &nodes {
        crate::common::eventually(&format!("member {id} catches up"), async || {
            node.member.raft().metrics().borrow().last_applied >= target
        })
        .await;
        assert!(node.store.contains(cf::COMPANIES, before.as_bytes()).unwrap(), "member {id} holds the backup's");
        assert!(!node.store.contains(cf::COMPANIES, after.as_bytes()).unwrap(), "member {id}: not what came after it");
    }
    // And it takes writes again.
    let admin = format!("http://{}", configs[first as usize - 1].admin_listen);
    company_at(&admin, &token, "After the restore").await;
    for (_, node) in nodes {
        node.stop().await;
    }
}

// A lone home that holds data becomes a group of three: its data
// directory is member 1's (given to member 2 it is refused), and members 2
// and 3 start empty. Member 1 makes
// a group of itself (its store has no log of what it holds), snapshots
// that, and adds the others, which take the snapshot: each holds what the
// lone home held, then all three vote. With member 1 stopped the other two
// elect a leader that holds it and takes writes.
#[tokio::test(flavor = "multi_thread")]
async fn a_lone_home_holding_data_becomes_a_group_of_three() {
    let dir = tempfile::tempdir().unwrap();
    let clock: SharedClock = Arc::new(SystemClock);
    // On ports the system picks: the members' ports are chosen just before
    // they start, as in the other tests, so no other test takes one meanwhile.
    let loopback = "127.0.0.1:0".parse().unwrap();
    let mut lone = svc_node::config::NodeConfig::local_home(dir.path().join("home-1"), loopback, loopback);
    let token = "operator-token-of-thirty-two-characters".to_owned();
    lone.admin_token = token.clone();
    let alone = svc_http::node::Node::start(lone, clock.clone()).await.unwrap();
    let before = company_at(&format!("http://{}", alone.admin_addr), &token, "Before the group").await;
    alone.stop().await;
    let configs = group_configs(dir.path());
    assert_eq!(configs[0].data_dir, dir.path().join("home-1"), "member 1 takes the lone home's data");
    // Given to any other member, the lone home's data would be replaced
    // by the group's state: refused, by name.
    crate::common::copy_tree(&configs[0].data_dir, &configs[1].data_dir, &[]);
    let refused = svc_http::group_node::GroupNode::start(configs[1].clone(), clock.clone()).await.err().unwrap();
    assert!(refused.to_string().contains("give it to member 1"), "{refused}");
    std::fs::remove_dir_all(&configs[1].data_dir).unwrap();

    let mut nodes = start_members(&configs, &clock).await;
    assert_eq!(leading(&nodes).await, 1, "only the member holding the data can lead at first");
    let all: std::collections::BTreeSet<u64> = [1, 2, 3].into();
    for node in nodes.values() {
        crate::common::eventually("each member holds the lone home's data, and all three vote", async || {
            node.member.voters() == all && node.store.contains(cf::COMPANIES, before.as_bytes()).unwrap()
        })
        .await;
    }
    assert!(nodes[&2].member.raft().metrics().borrow().snapshot.is_some(), "from member 1's snapshot");

    nodes.remove(&1).unwrap().stop().await;
    let second = leading(&nodes).await;
    let admin = format!("http://{}", configs[second as usize - 1].admin_listen);
    let after = company_at(&admin, &token, "After the group").await;
    for (id, node) in &nodes {
        crate::common::eventually("both members hold the new write", async || {
            node.store.contains(cf::COMPANIES, after.as_bytes()).unwrap()
        })
        .await;
        assert!(node.store.contains(cf::COMPANIES, before.as_bytes()).unwrap(), "member {id}");
    }
    for (_, node) in nodes {
        node.stop().await;
    }
}
