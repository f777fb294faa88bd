//! `url_flagged` through HTTP with signed requests: a real DNS blocklist
//! (hickory-server, in process on 127.0.0.1) lists one host, and a publish
//! rejects only the record linking to it; a resolver that never answers
//! leaves every URL unflagged.

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;

use common::*;
use hickory_server::Server;
use hickory_server::net::runtime::TokioRuntimeProvider;
use hickory_server::proto::rr::rdata::{A, SOA};
use hickory_server::proto::rr::{LowerName, Name, RData, Record};
use hickory_server::store::in_memory::InMemoryZoneHandler;
use hickory_server::zone_handler::{AxfrPolicy, Catalog, ZoneType};
use serde_json::json;
use svc_node::config::BlocklistConfig;

const ZONE: &str = "bl.test.";
const EVIL_URL: &str = "https://evil.example/p/SKU-2";

/// An authoritative DNS server for `zone` where each of `listed` has an A
/// record (`<host>.<zone>`) and every other name is NXDOMAIN, answering UDP on
/// a free port of 127.0.0.1. The server stops when the returned value drops,
/// so the caller keeps it for the whole test.
async fn blocklist_server(zone: &str, listed: &[&str]) -> (SocketAddr, Server<Catalog>) {
    let origin = Name::from_ascii(zone).unwrap();
    let mut handler =
        InMemoryZoneHandler::<TokioRuntimeProvider>::empty(origin.clone(), ZoneType::Primary, AxfrPolicy::Deny);
    // A zone needs its SOA: the handler answers NXDOMAIN for unlisted hosts with it.
    let soa = SOA::new(
        Name::from_ascii(format!("ns.{zone}")).unwrap(),
        Name::from_ascii(format!("hostmaster.{zone}")).unwrap(),
        1,
        3_600,
        600,
        86_400,
        60,
    );
    assert!(handler.upsert_mut(Record::from_rdata(origin.clone(), 60, RData::SOA(soa)), 1));
    for host in listed {
        // 127.0.0.2 is what URIBL-style lists answer for a listed name.
        let name = Name::from_ascii(format!("{host}.{zone}")).unwrap();
        assert!(handler.upsert_mut(Record::from_rdata(name, 60, RData::A(A::new(127, 0, 0, 2))), 1));
    }
    let mut catalog = Catalog::new();
    catalog.upsert(LowerName::new(&origin), vec![Arc::new(handler)]);
    // Port 0: the OS picks a free port, so parallel tests never collide.
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = socket.local_addr().unwrap();
    let mut server = Server::new(catalog);
    server.register_socket(socket);
    (addr, server)
}

/// A home region whose `url_blocklist` asks `resolver` about `ZONE`.
async fn home_with_blocklist(resolver: SocketAddr, timeout_ms: u64) -> Home {
    Home::start_with_config(tempfile::tempdir().unwrap(), |config| {
        config.url_blocklist = Some(BlocklistConfig { zone: ZONE.into(), resolver, timeout_ms });
    })
    .await
}

/// SKU-1 links to the clean `shop.example.com`; SKU-2 to the listed `evil.example`.
fn batch() -> Vec<Vec<u8>> {
    let mut evil: serde_json::Value = serde_json::from_slice(&product("Lumio", "SKU-2", "5.00")).unwrap();
    evil["product_url"] = json!(EVIL_URL);
    vec![product("Lumio", "SKU-1", "19.99"), serde_json::to_vec(&evil).unwrap()]
}

// rule: P2.5.23, P1.18
#[tokio::test(flavor = "multi_thread")]
async fn a_listed_url_rejects_only_its_record() {
    let (resolver, _dns) = blocklist_server(ZONE, &["evil.example"]).await;
    let home = home_with_blocklist(resolver, 2_000).await;
    let b = home.business("Lumio", products_scope(1000)).await;

    let answer = home.publish(&b, &batch(), "k-1").await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let results = answer.body["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{:?}", answer.body);
    assert_eq!(results[0]["outcome"], "accepted", "{:?}", results[0]);
    assert!(results[0].get("errors").is_none(), "{:?}", results[0]);
    assert_eq!(results[1]["outcome"], "rejected", "{:?}", results[1]);
    let errors = results[1]["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["code"], "url_flagged");
    assert_eq!(errors[0]["pointer"], "/product_url");
    assert!(errors[0]["detail"].as_str().unwrap().contains(EVIL_URL), "{errors:?}");

    // One flagged record never fails the batch (P1.18).
    let batch_id = answer.body["batch_id"].as_str().unwrap();
    let status = home.signed(&b.key, "GET", &format!("/v1/pushes/{batch_id}"), b"", "svc-business-read", &[]).await;
    assert_eq!(status.status, 200, "{:?}", status.body);
    assert_eq!(status.body["state"], "complete", "{:?}", status.body);
    assert_eq!(status.body["error"], serde_json::Value::Null);
    assert_eq!(status.body["counts"]["accepted"], 1);
    assert_eq!(status.body["counts"]["rejected"], 1);
}

// rule: P2.5.23, P1.18
#[tokio::test(flavor = "multi_thread")]
async fn a_resolver_that_never_answers_flags_nothing() {
    // A bound socket that never reads: every lookup times out rather than
    // being refused, and nothing else can take the port during the test.
    let silent = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let home = home_with_blocklist(silent.local_addr().unwrap(), 200).await;
    let b = home.business("Lumio", products_scope(1000)).await;

    let started = std::time::Instant::now();
    let answer = home.publish(&b, &batch(), "k-1").await;
    // The lookups were made and waited out their timeout, not skipped.
    assert!(started.elapsed() >= std::time::Duration::from_millis(200), "{:?}", started.elapsed());
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let results = answer.body["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{:?}", answer.body);
    for result in results {
        assert_eq!(result["outcome"], "accepted", "{result:?}");
        assert!(result.get("errors").is_none(), "{result:?}");
    }
    drop(silent);
}
