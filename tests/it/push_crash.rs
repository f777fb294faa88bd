//! Nothing accepted is lost or published twice across a crash in the middle
//! of a background push: the node stops after two of three chunks, a new
//! node on the same store resumes the push, and every record is published
//! exactly once.

use crate::common;

use std::collections::HashMap;

use common::*;
use svc_node::actors::publisher::PublisherMsg;
use svc_node::replication::{Op, entries_after};
use svc_store::cf;

/// Commits one chunk of a push through home's publisher, as the push
/// worker would (the tests retire it to drive the push themselves).
async fn commit_chunk(home: &Home, push_id: &str, chunk: u64) {
    let now = home.clock.now();
    let push_id = push_id.to_owned();
    home.state
        .home
        .as_ref()
        .unwrap()
        .publisher
        .call(|reply| PublisherMsg::CommitChunk { push_id, chunk, flagged: Default::default(), now, reply })
        .await
        .unwrap()
        .unwrap();
}

// rule: P4.1.33, P3.16, P3.17, P3.27, P4.1.29
#[tokio::test(flavor = "multi_thread")]
async fn a_crash_mid_push_resumes_and_publishes_nothing_twice() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(100_000)).await;
    let records: Vec<Vec<u8>> = (0..600).map(|i| product("Lumio", &format!("SKU-{i}"), "3.00")).collect();
    // Stop the background worker so only this test drives the push.
    assert!(home.state.retire("push_worker").await);
    let push_id = "bat_00000000000000000000000a".to_owned();
    home.accept_push(&b, records, &push_id).await;
    for chunk in 0..2 {
        commit_chunk(&home, &push_id, chunk).await;
    }
    // Crash: every actor stops where it is; the third chunk never ran.
    home.state.stop_actors().await;
    // The store closes once the last handle to it (the state) is gone.
    let Home { dir, state, .. } = home;
    drop(state);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;

    let restarted = Home::start_in(dir).await;
    let mut settled = None;
    for _ in 0..200 {
        let push: svc_store::model::PushRecord =
            restarted.state.store.get(cf::PUSHES, push_id.as_bytes()).unwrap().unwrap();
        if push.completed_at.is_some() {
            settled = Some(push);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let push = settled.expect("the restarted node resumed the push");
    assert_eq!(push.counts, [600, 0, 0, 0, 0], "600 accepted, none pending");

    // Each record entered the replication log exactly once, at generation 1.
    let mut published: HashMap<Vec<u8>, usize> = HashMap::new();
    for entry in entries_after(&restarted.state.store, 0, usize::MAX).unwrap() {
        for op in entry.ops {
            if let Op::Put { cf: name, key, .. } = op
                && name == cf::RECORDS.name()
            {
                *published.entry(key).or_default() += 1;
            }
        }
    }
    assert_eq!(published.len(), 600);
    assert!(published.values().all(|n| *n == 1), "a record was published twice");
    let head = restarted.state.registry.record_head(&svc_core::ids::product_id(&b.uuid, "SKU-599")).unwrap().unwrap();
    assert_eq!(head.generation, 1);
}

// A push's chunks are a pipeline: a chunk is prepared while the one before
// is still being signed, and before that one is written. A record repeated
// in the next chunk (whose head only the chunk being signed holds) and in a
// chunk further on (whose head may be on its way to disk) still gets one
// new version each time, in order, and every later one is `updated`.
// rule: P2.5.4
#[tokio::test(flavor = "multi_thread")]
async fn a_record_repeated_across_pipelined_chunks_gets_a_version_each_time() {
    let home = Home::start().await;
    let b = home.business("Lumio", products_scope(100_000)).await;
    // Chunks of 200: the repeated SKU sits in chunks 0, 1 and 2.
    let repeated = [150usize, 250, 450];
    let records: Vec<Vec<u8>> = (0..600)
        .map(|i| match repeated.iter().position(|r| *r == i) {
            Some(n) => product("Lumio", "SKU-AGAIN", &format!("{}.00", n + 3)),
            None => product("Lumio", &format!("SKU-{i}"), "3.00"),
        })
        .collect();
    assert!(home.state.retire("push_worker").await);
    let push_id = "bat_00000000000000000000000b".to_owned();
    home.accept_push(&b, records, &push_id).await;
    for chunk in 0..3 {
        commit_chunk(&home, &push_id, chunk).await;
    }
    let publisher = home.state.home.as_ref().unwrap().publisher.clone();
    let now = home.clock.now();
    let push =
        publisher.call(|reply| PublisherMsg::Finish { push_id: push_id.clone(), now, reply }).await.unwrap().unwrap();
    // 598 distinct records: each accepted once, the repeated one updated twice.
    assert_eq!(push.counts, [598, 2, 0, 0, 0], "accepted, updated, rejected, held, pending");
    let id = svc_core::ids::product_id(&b.uuid, "SKU-AGAIN");
    let head = home.state.registry.record_head(&id).unwrap().unwrap();
    assert_eq!((head.generation, head.live_generation), (3, 3));
    for generation in 1..=3u64 {
        let version = home.state.registry.record_version(&id, generation).unwrap();
        let version = version.unwrap_or_else(|| panic!("version {generation} stored"));
        let record: serde_json::Value = serde_json::from_slice(&version.bytes).unwrap();
        assert_eq!(record["prices"][0]["amount"], format!("{}.00", generation + 2), "version {generation}");
    }
}
