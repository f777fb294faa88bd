//! Home's group over the network: a member's Raft messages to the others,
//! over HTTP/2 (mutual TLS in production) to their internal listeners, and
//! the answering side.
//!
//! Each message is `POST /internal/v1/group/{append|vote|snapshot}` with a
//! postcard body, signed like a region's link request (`svc_core::link`)
//! under the group's token, as member `group-<id>`, within the link's time
//! window. A message Raft receives twice changes nothing (its terms and
//! log ids decide), so no replay store is kept. The answer is the postcard
//! of openraft's own result, so a member's refusal reaches the sender as
//! openraft's error.

use axum::body::Body;
use axum::http::Request;
use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use openraft::{BasicNode, RaftNetwork, RaftNetworkFactory};
use serde::Serialize;
use serde::de::DeserializeOwned;
use svc_client::transport::Transport;
use svc_client::trust::Trust;
use svc_consensus::Group;
use svc_consensus::MAX_APPEND_BYTES;
use svc_consensus::member::Member;
use svc_core::link;

/// The largest message a member takes: a page of entries
/// (`svc_consensus::member::MAX_ENTRIES` batches).
pub const MAX_MESSAGE_BYTES: usize = 128 << 20;

/// The name a member signs as.
fn signer(id: u64) -> String {
    format!("group-{id}")
}

/// A member's way to the others.
#[derive(Clone)]
pub struct Network {
    pub id: u64,
    pub token: String,
    pub trust: Trust,
    pub clock: svc_clock::SharedClock,
}

/// The way to one other member.
pub struct Peer {
    network: Network,
    to: u64,
    transport: Result<Transport, svc_client::ClientError>,
}

impl RaftNetworkFactory<Group> for Network {
    type Network = Peer;

    async fn new_client(&mut self, to: u64, node: &BasicNode) -> Peer {
        let transport = Transport::http2(&node.addr, &self.trust);
        Peer { network: self.clone(), to, transport }
    }
}

impl Peer {
    async fn call<Q: Serialize, A: DeserializeOwned, E: std::error::Error + DeserializeOwned>(
        &self,
        rpc: &str,
        message: &Q,
        option: &RPCOption,
    ) -> Result<A, RPCError<u64, BasicNode, RaftError<u64, E>>> {
        let unreachable = |why: String| RPCError::Unreachable(Unreachable::new(&std::io::Error::other(why)));
        let transport = self.transport.as_ref().map_err(|e| RPCError::Unreachable(Unreachable::new(e)))?;
        let body = postcard::to_stdvec(message).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let target = format!("/internal/v1/group/{rpc}");
        let at = svc_clock::Clock::now(&*self.network.clock).0;
        let id = hex::encode(svc_clock::random::<16>());
        let body_sha256 = link::body_digest(&body);
        let name = signer(self.network.id);
        let head = link::RequestHead {
            region: &name,
            method: "POST",
            target: &target,
            at_ms: at,
            id: &id,
            body_sha256: &body_sha256,
        };
        let request = Request::post(&target)
            .header(link::REGION_HEADER, &name)
            .header(link::AT_HEADER, at)
            .header(link::ID_HEADER, &id)
            .header(link::BODY_HEADER, &body_sha256)
            .header(link::MAC_HEADER, link::request_mac(&self.network.token, &head))
            .header("content-type", "application/vnd.svc.postcard")
            .body(Body::from(body))
            .map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let answer = tokio::time::timeout(option.hard_ttl(), transport.send(request))
            .await
            .map_err(|_| unreachable(format!("member {} did not answer {rpc} in time", self.to)))?
            .map_err(|e| unreachable(e.to_string()))?;
        if answer.status != 200 {
            let said = String::from_utf8_lossy(&answer.bytes);
            return Err(RPCError::Network(NetworkError::new(&std::io::Error::other(format!(
                "member {} answered {rpc} with {}: {said}",
                self.to, answer.status
            )))));
        }
        let result: Result<A, RaftError<u64, E>> =
            postcard::from_bytes(&answer.bytes).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.to, e)))
    }
}

impl RaftNetwork<Group> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<Group>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        let mut rpc = rpc;
        let keep = within_budget(&rpc.entries);
        if keep == rpc.entries.len() {
            return self.call("append", &rpc, &option).await;
        }
        // The rest goes in the next message: openraft resends from the
        // last entry the member took.
        rpc.entries.truncate(keep);
        let last = rpc.entries.last().map(|entry| entry.log_id);
        match self.call("append", &rpc, &option).await? {
            AppendEntriesResponse::Success => Ok(AppendEntriesResponse::PartialSuccess(last)),
            other => Ok(other),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<Group>,
        option: RPCOption,
    ) -> Result<InstallSnapshotResponse<u64>, RPCError<u64, BasicNode, RaftError<u64, InstallSnapshotError>>> {
        self.call("snapshot", &rpc, &option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        self.call("vote", &rpc, &option).await
    }
}

/// How many of `entries`, from the first, fit one message's budget
/// (`MAX_APPEND_BYTES`); at least one, and a large one alone.
fn within_budget(entries: &[openraft::Entry<Group>]) -> usize {
    let mut bytes = 0;
    for (i, entry) in entries.iter().enumerate() {
        let size = match &entry.payload {
            openraft::EntryPayload::Normal(proposal) => proposal.bytes(),
            _ => 0,
        };
        if i > 0 && bytes + size > MAX_APPEND_BYTES {
            return i;
        }
        bytes += size;
    }
    entries.len()
}

/// Why a member refused a message.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("the message is not signed by a member of the group")]
    Unsigned,
    #[error("the message was signed outside the link's time window")]
    Stale,
    #[error("no such group message: {0}")]
    Unknown(String),
    #[error("the message does not decode: {0}")]
    Malformed(postcard::Error),
}

/// A message's signed head, as the listener read it.
pub struct Signed<'a> {
    pub signer: &'a str,
    pub at_ms: i64,
    pub id: &'a str,
    pub body_sha256: &'a str,
    pub mac: &'a str,
}

/// Answers one message from another member: checked (a member of the
/// group, its MAC over the head and the body, within the window), then
/// handed to this member's Raft node. The answer is postcard.
pub async fn answer(
    member: &Member,
    token: &str,
    members: &[u64],
    now_ms: i64,
    rpc: &str,
    signed: &Signed<'_>,
    body: &[u8],
) -> Result<Vec<u8>, Refused> {
    let target = format!("/internal/v1/group/{rpc}");
    let head = link::RequestHead {
        region: signed.signer,
        method: "POST",
        target: &target,
        at_ms: signed.at_ms,
        id: signed.id,
        body_sha256: signed.body_sha256,
    };
    let known = members.iter().any(|id| signer(*id) == signed.signer);
    if !known || !link::request_mac_matches(token, signed.mac, &head) || link::body_digest(body) != signed.body_sha256 {
        return Err(Refused::Unsigned);
    }
    if !link::fresh(signed.at_ms, now_ms) {
        return Err(Refused::Stale);
    }
    let raft = member.raft();
    let encoded = match rpc {
        "append" => {
            postcard::to_stdvec(&raft.append_entries(postcard::from_bytes(body).map_err(Refused::Malformed)?).await)
        }
        "vote" => postcard::to_stdvec(&raft.vote(postcard::from_bytes(body).map_err(Refused::Malformed)?).await),
        "snapshot" => {
            postcard::to_stdvec(&raft.install_snapshot(postcard::from_bytes(body).map_err(Refused::Malformed)?).await)
        }
        other => return Err(Refused::Unknown(other.to_owned())),
    };
    encoded.map_err(Refused::Malformed)
}

impl From<Refused> for crate::error::Error {
    fn from(refused: Refused) -> Self {
        use svc_core::problem::Code;
        let code = match refused {
            Refused::Unsigned | Refused::Stale => Code::Unauthorized,
            Refused::Unknown(_) => Code::NotFound,
            Refused::Malformed(_) => Code::RequestInvalid,
        };
        crate::error::Error::detail(code, refused.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId};
    use svc_consensus::Proposal;

    fn entry(index: u64, bytes: usize) -> Entry<Group> {
        let write = svc_store::Write::Put { cf: "t".into(), key: vec![1], value: vec![0; bytes] };
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(Proposal { writes: vec![write] }),
        }
    }

    // A page of large batches goes a few at a time, so each message
    // arrives within a heartbeat; one batch larger than the budget still
    // goes, alone.
    #[test]
    fn a_message_carries_entries_up_to_its_budget_and_always_one() {
        let small: Vec<_> = (1..=16).map(|i| entry(i, 1_000)).collect();
        assert_eq!(within_budget(&small), 16);
        let large: Vec<_> = (1..=8).map(|i| entry(i, 400 << 10)).collect();
        assert_eq!(within_budget(&large), 2, "a third 400 KiB would pass 1 MiB");
        let huge = vec![entry(1, 8 << 20), entry(2, 10)];
        assert_eq!(within_budget(&huge), 1);
        let then_huge = vec![entry(1, 500 << 10), entry(2, 8 << 20)];
        assert_eq!(within_budget(&then_huge), 1, "the large one goes alone, in the next message");
        assert_eq!(within_budget(&[]), 0);
    }
}
