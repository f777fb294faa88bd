//! The group's storage against openraft's own suite, and three members
//! wired in process (a test double of the network, here alone): their
//! stores hold the same values, a leader cut off acknowledges nothing, and
//! the others elect a leader that goes on.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use openraft::testing::{StoreBuilder, Suite};
use openraft::{BasicNode, Raft, RaftNetwork, RaftNetworkFactory, ServerState, StorageError};
use svc_store::{Store, StoreError, Write, cf, keys};

use crate::Group;
use crate::log_store::LogStore;
use crate::member::{Member, Settings};
use crate::state_machine::StateMachine;

struct Fresh;

impl StoreBuilder<Group, LogStore, StateMachine, tempfile::TempDir> for Fresh {
    async fn build(&self) -> Result<(tempfile::TempDir, LogStore, StateMachine), StorageError<u64>> {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let store = Store::open(dir.path()).expect("a store");
        let state = StateMachine::new(store.clone(), &dir.path().join("snapshots")).expect("a snapshot folder");
        Ok((dir, LogStore::new(store), state))
    }
}

#[test]
fn the_log_and_state_machine_pass_openraft_s_storage_suite() {
    Suite::test_all(Fresh).unwrap();
}

/// The members' wires: each reaches the others' Raft nodes directly; a
/// member cut off reaches no one and no one reaches it.
#[derive(Clone, Default)]
struct Wires {
    members: Arc<Mutex<BTreeMap<u64, Raft<Group>>>>,
    cut: Arc<Mutex<BTreeSet<u64>>>,
}

struct Wire {
    wires: Wires,
    from: u64,
    to: u64,
}

/// One member's end of the wires.
struct End(Wires, u64);

impl RaftNetworkFactory<Group> for End {
    type Network = Wire;

    async fn new_client(&mut self, to: u64, _node: &BasicNode) -> Wire {
        Wire { wires: self.0.clone(), from: self.1, to }
    }
}

impl Wire {
    /// The member at the other end, unless either end is cut off.
    fn reach(&self) -> Option<Raft<Group>> {
        let cut = self.wires.cut.lock().unwrap();
        if cut.contains(&self.from) || cut.contains(&self.to) {
            return None;
        }
        self.wires.members.lock().unwrap().get(&self.to).cloned()
    }
}

fn cut_off<E: std::error::Error>() -> RPCError<u64, BasicNode, E> {
    RPCError::Network(NetworkError::new(&std::io::Error::other("cut off")))
}

impl RaftNetwork<Group> for Wire {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<Group>,
        _: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        let Some(to) = self.reach() else { return Err(cut_off()) };
        to.append_entries(rpc).await.map_err(|e| RPCError::RemoteError(RemoteError::new(self.to, e)))
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<Group>,
        _: RPCOption,
    ) -> Result<InstallSnapshotResponse<u64>, RPCError<u64, BasicNode, RaftError<u64, InstallSnapshotError>>> {
        let Some(to) = self.reach() else { return Err(cut_off()) };
        to.install_snapshot(rpc).await.map_err(|e| RPCError::RemoteError(RemoteError::new(self.to, e)))
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        _: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        let Some(to) = self.reach() else { return Err(cut_off()) };
        to.vote(rpc).await.map_err(|e| RPCError::RemoteError(RemoteError::new(self.to, e)))
    }
}

struct Node {
    store: Store,
    member: Arc<Member>,
}

fn settings(id: u64, dir: &std::path::Path) -> Settings {
    Settings {
        id,
        heartbeat_ms: 50,
        election_ms: (300, 600),
        commit_timeout: Duration::from_secs(2),
        snapshots: dir.join(format!("{id}-snapshots")),
        snapshot_every: 50_000,
        logs_kept: 10_000,
    }
}

fn start(wires: &Wires, dir: &std::path::Path, id: u64) -> Node {
    // A member stopped a moment ago may still hold its store's lock.
    let path = dir.join(id.to_string());
    let mut opened = Store::open(&path);
    for _ in 0..200 {
        if opened.is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
        opened = Store::open(&path);
    }
    let store = opened.unwrap();
    let member = Member::start(&settings(id, dir), store.clone(), End(wires.clone(), id)).unwrap();
    wires.members.lock().unwrap().insert(id, member.raft().clone());
    Node { store, member }
}

/// Waits until one of `among` leads, as every one of them sees it.
fn leader(nodes: &BTreeMap<u64, Node>, among: &[u64]) -> u64 {
    for _ in 0..400 {
        let seen: BTreeSet<Option<u64>> =
            among.iter().map(|id| nodes[id].member.raft().metrics().borrow().current_leader).collect();
        if let [Some(id)] = seen.into_iter().collect::<Vec<_>>()[..]
            && among.contains(&id)
            && nodes[&id].member.raft().metrics().borrow().state == ServerState::Leader
        {
            return id;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("no leader among {among:?}");
}

/// The group's state in a member's store, once it applied `index`.
fn state_at(node: &Node, index: u64) -> Vec<Write> {
    for _ in 0..400 {
        if node.member.raft().metrics().borrow().last_applied.is_some_and(|id| id.index >= index) {
            return node.store.group_state((cf::meta::RAFT_APPLIED, keys::meta::RAFT_APPLIED)).unwrap().0;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("the member never applied {index}");
}

fn last_index(node: &Node) -> u64 {
    node.member.raft().metrics().borrow().last_log_index.unwrap_or(0)
}

fn write(node: &Node, key: &str, value: &str) -> Result<(), StoreError> {
    node.store.put(cf::FRESHNESS, key.as_bytes(), &value.to_owned())
}

fn read(node: &Node, key: &str) -> Option<String> {
    node.store.get(cf::FRESHNESS, key.as_bytes()).unwrap()
}

#[test]
fn three_members_hold_one_state_a_cut_off_leader_acknowledges_nothing_and_the_others_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let wires = Wires::default();
    let mut nodes: BTreeMap<u64, Node> = (1..=3).map(|id| (id, start(&wires, dir.path(), id))).collect();
    let all: BTreeMap<u64, BasicNode> = (1..=3).map(|id| (id, BasicNode::new(format!("member-{id}")))).collect();
    nodes[&1].member.initialize(all).unwrap();

    // Writes go through the leader; a follower's store refuses them.
    let first = leader(&nodes, &[1, 2, 3]);
    write(&nodes[&first], "a", "one").unwrap();
    write(&nodes[&first], "b", "two").unwrap();
    let follower = *nodes.keys().find(|id| **id != first).unwrap();
    assert!(matches!(write(&nodes[&follower], "c", "refused"), Err(StoreError::NotLeader { .. })));
    let index = last_index(&nodes[&first]);
    let states: Vec<Vec<Write>> = nodes.values().map(|node| state_at(node, index)).collect();
    assert!(states[0].iter().any(|w| matches!(w, Write::Put { key, .. } if key == b"a")));
    assert!(states.iter().all(|state| *state == states[0]), "every member holds what the leader wrote");
    assert_eq!(read(&nodes[&follower], "c"), None);

    // The leader is cut off: what it is asked to write is never acknowledged.
    wires.cut.lock().unwrap().insert(first);
    assert!(matches!(write(&nodes[&first], "lost", "never"), Err(StoreError::Group(_))));
    let others: Vec<u64> = nodes.keys().copied().filter(|id| *id != first).collect();
    let second = leader(&nodes, &others);
    write(&nodes[&second], "c", "three").unwrap();

    // Healed, the old leader follows: the write it never acknowledged is
    // nowhere, the new leader's is everywhere.
    wires.cut.lock().unwrap().clear();
    write(&nodes[&second], "d", "four").unwrap();
    let index = last_index(&nodes[&second]);
    let states: Vec<Vec<Write>> = nodes.values().map(|node| state_at(node, index)).collect();
    assert!(states.iter().all(|state| *state == states[0]), "one history after the cut");
    for node in nodes.values() {
        assert_eq!((read(node, "c"), read(node, "lost")), (Some("three".into()), None));
    }

    // A member stopped and started again from its store resumes, and
    // catches up with what was written meanwhile.
    let restarted = *nodes.keys().find(|id| **id != second).unwrap();
    let stopped = nodes.remove(&restarted).unwrap();
    stopped.member.stop();
    wires.members.lock().unwrap().remove(&restarted);
    drop(stopped);
    write(&nodes[&second], "e", "five").unwrap();
    nodes.insert(restarted, start(&wires, dir.path(), restarted));
    let index = last_index(&nodes[&second]);
    assert_eq!(state_at(&nodes[&restarted], index), state_at(&nodes[&second], index));
    assert_eq!(read(&nodes[&restarted], "e"), Some("five".into()));
    for node in nodes.values() {
        node.member.stop();
    }
}
