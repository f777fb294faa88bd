//! Deletion means gone (publishing section 3, P3.20, P8.18): once a delete
//! is purged, no file of home or of a read region (store, log, index) holds
//! the record's bytes, a region that joins later never receives them, and
//! the fingerprints stay. A second delete, and a delete racing a push of
//! the same record, are answered plainly with nothing half-applied.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use svc_core::ids::product_id;
use svc_http::node::Node;
use svc_node::actors::retention::RetentionMsg;
use svc_node::config::{NodeConfig, RegionCredential, ReplicationConfig, Role};
use svc_store::model::{Environment, RecordState, RecordVersion};
use svc_store::{cf, keys};

use crate::common::*;
use crate::retrieval::get;

/// A product whose name carries `marker`, a string found nowhere else.
fn named_product(sku: &str, marker: &str) -> Vec<u8> {
    let mut value: serde_json::Value = serde_json::from_slice(&product("Lumio", sku, "12.00")).unwrap();
    value["product_name"] = json!(format!("Lampe {marker}"));
    serde_json::to_vec(&value).unwrap()
}

/// The files under `dir` that hold `needle`.
fn files_holding(dir: &Path, needle: &[u8]) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found = Vec::new();
    for path in entries.flatten().map(|e| e.path()) {
        if path.is_dir() {
            found.extend(files_holding(&path, needle));
        } else if std::fs::read(&path).is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle)) {
            found.push(path);
        }
    }
    found
}

/// Polls `check` every 50 ms for up to 30 s; `Err` if it never held.
async fn waited(what: &str, mut check: impl FnMut() -> bool) -> Result<(), ()> {
    for _ in 0..600 {
        if check() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!("{what} never happened");
    Err(())
}

/// `live_in` of a record read back from the catalogue.
async fn live_in(home: &Home, business: &Business, id: &str) -> serde_json::Value {
    let read = home.signed(&business.key, "GET", &format!("/v1/catalogue/{id}"), b"", "svc-business-read", &[]).await;
    assert_eq!(read.status, 200, "{:?}", read.body);
    read.body["live_in"].clone()
}

fn region_config(dir: &Path, region: &str, home: &Node) -> NodeConfig {
    let loopback = "127.0.0.1:0".parse().unwrap();
    let mut config = NodeConfig::local_home(dir.join(region), loopback, loopback);
    config.environment = Environment::Production;
    config.region = region.into();
    config.role = Role::Read;
    config.retention_every_ms = 100;
    config.replication = Some(ReplicationConfig::read(
        Some(format!("http://{}", home.addr)),
        Some(format!("http://{}", home.internal_addr.unwrap())),
        &region_token(region),
    ));
    config
}

async fn caught_up(region: &Node, home: &Home) {
    let head = svc_node::replication::last_seq(&home.state.store).unwrap();
    for _ in 0..600 {
        let indexed: u64 = region
            .state
            .store
            .get(cf::meta::INDEX_APPLIED_SEQ, keys::meta::INDEX_APPLIED_SEQ)
            .unwrap()
            .unwrap_or_default();
        if indexed >= head {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} never caught up with home", region.state.config.region);
}

// rule: P3.20, P8.18, P2.3.1, P4.1.9, P2.5.28
#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_records_bytes_leave_every_file_of_every_region_and_a_later_region_never_gets_them() {
    let (home, home_node) = Home::listening(|config| {
        config.internal_listen = Some("127.0.0.1:0".parse().unwrap());
        config.retention_every_ms = 100;
        let regions = ["eu", "ap"].map(|r| RegionCredential::new(r, &region_token(r))).to_vec();
        config.replication = Some(ReplicationConfig::home(regions));
    })
    .await;
    let regions_dir = tempfile::tempdir().unwrap();
    let eu =
        Node::start(region_config(regions_dir.path(), "eu", &home_node), Arc::new(home.clock.clone())).await.unwrap();

    let lumio = home.business("Lumio", products_scope(1_000)).await;
    let (gone, kept) = ("QXZWVKJYPMRQHFBTGNDLCSAE", "JKWQZXVYRPMTBHGFDNLCSQAE");
    let published = home.publish(&lumio, &[named_product("GONE-1", gone), named_product("KEPT-1", kept)], "a").await;
    assert_eq!(published.status, 200, "{:?}", published.body);
    // A second version, so more than one log entry holds the record.
    let mut again: serde_json::Value = serde_json::from_slice(&named_product("GONE-1", gone)).unwrap();
    again["prices"][0]["amount"] = json!("13.00");
    let again = serde_json::to_vec(&again).unwrap();
    assert_eq!(home.publish(&lumio, &[again], "b").await.status, 200);
    home.wait_indexed().await;
    caught_up(&eu, &home).await;
    let gone_id = product_id(&lumio.uuid, "GONE-1");
    let dirs = |node_dir: &Path| [node_dir.join("db"), node_dir.join("index")];
    let (home_dir, eu_dir) = (home.dir.path().to_path_buf(), regions_dir.path().join("eu"));
    let holding = |dir: &Path, marker: &str| -> Vec<_> {
        dirs(dir).iter().flat_map(|d| files_holding(d, marker.as_bytes())).collect()
    };
    let holds = |dir: &Path, marker: &str| !holding(dir, marker).is_empty();
    assert!(holds(&home_dir, gone) && holds(&eu_dir, gone), "the files hold the record before the delete");

    // `live_in` names the regions whose index holds the record now.
    let kept_id = product_id(&lumio.uuid, "KEPT-1");
    let home_region = home.state.config.region.clone();
    eventually("eu reports its index", || async {
        live_in(&home, &lumio, &kept_id).await == json!([home_region, "eu"])
    })
    .await;

    let (deleted, _) = home.end_record(&lumio, &gone_id, "delete").await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    // Still served where the delete is not applied yet: a subset of the two.
    let still: Vec<String> = serde_json::from_value(deleted.body["live_in"].clone()).unwrap();
    assert!(still.iter().all(|r| *r == home_region || r == "eu"), "{still:?}");
    assert_eq!(
        (deleted.body["record_id"].as_str(), deleted.body["action"].as_str()),
        (Some(&*gone_id), Some("delete"))
    );
    // Out of serving at once, and a second delete says it already took.
    let caller = home.caller("Reader AI").await;
    assert_eq!(get(&home, &caller, &format!("/v1/records/{gone_id}")).await.status, 404);
    let (twice, _) = home.end_record(&lumio, &gone_id, "delete").await;
    assert_eq!((twice.status, twice.body["code"].as_str()), (404, Some("not_found")));
    assert_eq!(twice.body["detail"], "this record is already deleted");
    let (unknown, _) = home.end_record(&lumio, &product_id(&lumio.uuid, "NEVER"), "delete").await;
    assert_eq!(
        (unknown.status, unknown.body["detail"].as_str()),
        (404, Some("no live record of this business has that id"))
    );

    // Purged at home and at the region: no file holds the bytes; the
    // record kept beside it is still there (the search for it works).
    let left = || [holding(&home_dir, gone), holding(&eu_dir, gone)].concat();
    waited("the record's bytes leave home's and eu's files", || left().is_empty()).await.unwrap_or_else(|()| {
        panic!("files still holding the deleted record: {:?}", left());
    });
    assert!(holds(&home_dir, kept) && holds(&eu_dir, kept), "another record's bytes stay");
    let purged = home.state.retention.call(RetentionMsg::Observe).await.unwrap();
    assert_eq!(purged.records_purged, 1);
    assert!(purged.entries_rewritten >= 2, "both versions' entries were rewritten: {purged:?}");

    // A region joining now receives home's log, without the bytes.
    let ap =
        Node::start(region_config(regions_dir.path(), "ap", &home_node), Arc::new(home.clock.clone())).await.unwrap();
    caught_up(&ap, &home).await;
    eventually("ap reports its index", || async {
        live_in(&home, &lumio, &kept_id).await == json!([home_region, "ap", "eu"])
    })
    .await;
    let ap_dir = regions_dir.path().join("ap");
    assert!(holds(&ap_dir, kept), "the later region has the record kept");
    assert!(!holds(&ap_dir, gone), "the later region never received the deleted bytes");
    assert_eq!(
        svc_node::replication::entries_after(&ap.state.store, 0, usize::MAX).unwrap(),
        svc_node::replication::entries_after(&home.state.store, 0, usize::MAX).unwrap(),
        "the later region's log is home's, entry for entry"
    );

    // The fingerprints stay: each version's seal, at every region.
    for node in [&home.state, &eu.state, &ap.state] {
        for generation in 1..=2 {
            let version: RecordVersion =
                node.store.get(cf::VERSIONS, &keys::version(&gone_id, generation)).unwrap().unwrap();
            assert!(version.bytes.is_empty() && version.row.is_empty(), "{}", node.config.region);
            assert!(!version.seal.is_empty(), "the seal (its hash) stays at {}", node.config.region);
        }
    }
    ap.stop().await;
    eu.stop().await;
    home_node.stop().await;
}

// rule: P3.20, P2.3.1
#[tokio::test(flavor = "multi_thread")]
async fn a_delete_racing_a_push_of_the_same_record_leaves_one_whole_outcome() {
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| config.retention_every_ms = 100).await;
    let lumio = home.business("Lumio", products_scope(10_000)).await;
    let caller = home.caller("Reader AI").await;
    for round in 0..6 {
        let sku = format!("RACE-{round}");
        let id = product_id(&lumio.uuid, &sku);
        assert_eq!(
            home.publish(&lumio, &[product("Lumio", &sku, "10.00")], &format!("first-{round}")).await.status,
            200
        );
        let update = product("Lumio", &sku, "11.00");
        let others: Vec<Vec<u8>> = (0..40).map(|i| product("Lumio", &format!("R{round}-{i}"), "5.00")).collect();
        let batch: Vec<Vec<u8>> = others.into_iter().chain([update.clone()]).collect();
        let idem = format!("race-{round}");
        let (pushed, (deleted, _)) =
            tokio::join!(home.publish(&lumio, &batch, &idem), home.end_record(&lumio, &id, "delete"));
        assert_eq!(pushed.status, 200, "{:?}", pushed.body);
        assert_eq!(deleted.status, 200, "the record was live before both: {:?}", deleted.body);
        home.wait_indexed().await;

        // Whichever came last decides, wholly: a live record serves the
        // pushed bytes; a deleted one has no bytes left in any version.
        let head = home.state.registry.record_head(&id).unwrap().unwrap();
        let fetched = get(&home, &caller, &format!("/v1/records/{id}")).await;
        let version =
            |g: u64| -> RecordVersion { home.state.store.get(cf::VERSIONS, &keys::version(&id, g)).unwrap().unwrap() };
        match head.state {
            RecordState::Live => {
                assert_eq!(fetched.status, 200, "a live record is served");
                assert_eq!(version(head.live_generation).bytes, update, "the push after the delete is whole");
                assert!(
                    (1..head.live_generation).all(|g| version(g).bytes.is_empty()),
                    "the deleted versions stay empty"
                );
            }
            RecordState::Deleted => {
                assert_eq!(fetched.status, 404, "a deleted record is not served");
                assert!((1..=head.generation).all(|g| version(g).bytes.is_empty()), "no version keeps bytes");
            }
            other => panic!("a record neither live nor deleted: {other:?}"),
        }
        let catalogued =
            home.signed(&lumio.key, "GET", &format!("/v1/catalogue/{id}"), b"", "svc-business-read", &[]).await;
        assert_eq!(
            catalogued.status == 200,
            head.state == RecordState::Live,
            "the catalogue agrees: {:?}",
            catalogued.body
        );
    }
    // The purge leaves a live record's newer bytes alone.
    waited("every delete is purged", || {
        let through: u64 =
            home.state.store.get(cf::meta::PURGED_THROUGH, keys::meta::PURGED_THROUGH).unwrap().unwrap_or(0);
        let last: Option<Vec<u8>> = home.state.store.last_key(cf::PURGES).unwrap();
        last.is_some_and(|k| svc_store::from_be(&k[..8]) == Some(through))
    })
    .await
    .expect("purged");
    for round in 0..6 {
        let id = product_id(&lumio.uuid, &format!("RACE-{round}"));
        let head = home.state.registry.record_head(&id).unwrap().unwrap();
        if head.state == RecordState::Live {
            let live: RecordVersion =
                home.state.store.get(cf::VERSIONS, &keys::version(&id, head.live_generation)).unwrap().unwrap();
            assert!(!live.bytes.is_empty(), "a push after the delete keeps its bytes through the purge");
        }
    }
}
