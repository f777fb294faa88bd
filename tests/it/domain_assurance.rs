//! Domain assurance of business files' endpoints against a real DNS server
//! (hickory-server, in process): a domain whose TXT record names the
//! business is confirmed; one that names another business (a lie) loses
//! the endpoints their assurance; a server that stops answering changes
//! nothing until a confirmation is 30 days old. The verify page shows each
//! domain as last found.

use crate::common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use common::*;
use hickory_server::Server;
use hickory_server::net::runtime::TokioRuntimeProvider;
use hickory_server::proto::rr::rdata::{SOA, TXT};
use hickory_server::proto::rr::{LowerName, Name, RData, Record};
use hickory_server::store::in_memory::InMemoryZoneHandler;
use hickory_server::zone_handler::{AxfrPolicy, Catalog, ZoneType};
use serde_json::{Value, json};
use svc_core::assurance::expected_value;
use svc_core::ids::RecordType;
use svc_core::time::DAY;
use svc_node::config::DomainAssuranceConfig;

/// An authoritative server for `example.` holding each (name, value) TXT
/// record, answering on `socket`. It stops when dropped.
fn dns_server(socket: std::net::UdpSocket, txt: &[(&str, String)]) -> Server<Catalog> {
    let origin = Name::from_ascii("example.").unwrap();
    let mut handler =
        InMemoryZoneHandler::<TokioRuntimeProvider>::empty(origin.clone(), ZoneType::Primary, AxfrPolicy::Deny);
    let soa = SOA::new(
        Name::from_ascii("ns.example.").unwrap(),
        Name::from_ascii("hostmaster.example.").unwrap(),
        1,
        3_600,
        600,
        86_400,
        60,
    );
    assert!(handler.upsert_mut(Record::from_rdata(origin.clone(), 60, RData::SOA(soa)), 1));
    for (name, value) in txt {
        let record = Record::from_rdata(Name::from_ascii(name).unwrap(), 60, RData::TXT(TXT::new(vec![value.clone()])));
        assert!(handler.upsert_mut(record, 1));
    }
    let mut catalog = Catalog::new();
    catalog.upsert(LowerName::new(&origin), vec![Arc::new(handler)]);
    let mut server = Server::new(catalog);
    server.register_socket(tokio::net::UdpSocket::from_std(socket).unwrap());
    server
}

/// A business file of `brand` whose endpoints are on `domains`.
fn business_file(brand: &str, domains: &[&str]) -> Vec<u8> {
    let mut file = svc_core::records::examples::example(RecordType::BusinessFiles);
    file["description"] = json!(format!("{brand} designs lamps."));
    file["brands_owned"] = json!([{"name": brand}]);
    file["brands_sold"] = json!([]);
    file["locations"][0]["name"] = json!(format!("{brand} Lyon"));
    file["endpoints"] = json!({"domains": domains, "checkout_url": format!("https://{}/checkout", domains[0])});
    serde_json::to_vec(&file).unwrap()
}

/// The `endpoints` member of the verify page of a business's file.
async fn endpoints(home: &Home, business: &Business, file: &[u8]) -> Value {
    let id = svc_core::ids::record_id(RecordType::BusinessFiles, &business.uuid, "main");
    let origin = svc_core::digest::sha256_prefixed(file);
    let uri = format!("/v1/verify/{id}?origin={origin}&format=json");
    let page = home.send(Request::get(uri).body(Body::empty()).unwrap()).await;
    assert_eq!(page.status, 200, "{:?}", page.body);
    page.body["endpoints"].clone()
}

async fn check(home: &Home) -> Value {
    let pass = home.admin("POST", "/admin/domain-assurance/check", json!({})).await;
    assert_eq!(pass.status, 200, "{:?}", pass.body);
    pass.body
}

fn states(endpoints: &Value) -> Vec<(String, String)> {
    let domains = endpoints["domains"].as_array().unwrap();
    domains.iter().map(|d| (d["domain"].as_str().unwrap().into(), d["state"].as_str().unwrap().into())).collect()
}

// rule: R2.7.10, R2.7.11, R3.15, R-NS-6, P4.2.45, P4.2.49
#[tokio::test(flavor = "multi_thread")]
async fn endpoints_follow_what_each_domain_answers() {
    // Bound now so the node can be told where to ask; served once the
    // businesses exist, since their records name the businesses.
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_nonblocking(true).unwrap();
    let silent = socket.try_clone().unwrap();
    let resolver = socket.local_addr().unwrap();
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| {
        config.domain_assurance = Some(DomainAssuranceConfig { resolver, timeout_ms: 300, every_ms: 3_600_000 });
    })
    .await;
    let lumio = home.business("Lumio", products_scope(100)).await;
    let brisa = home.business("Brisa", products_scope(100)).await;
    let (lumio_file, brisa_file) =
        (business_file("Lumio", &["lumio.example", "shop.lumio.example"]), business_file("Brisa", &["brisa.example"]));
    for (business, file) in [(&lumio, &lumio_file), (&brisa, &brisa_file)] {
        let saved = home.save_sealed(business, "business_files", file).await;
        assert!(saved.status == 200 || saved.status == 201, "{:?}", saved.body);
        assert_ne!(saved.body["outcome"], "rejected", "{:?}", saved.body);
    }
    // Before any look: every domain unchecked, the endpoints stand.
    let before = endpoints(&home, &lumio, &lumio_file).await;
    assert_eq!(before["status"], "live");
    assert_eq!(
        states(&before),
        [("lumio.example".into(), "unchecked".into()), ("shop.lumio.example".into(), "unchecked".into())]
    );

    // shop.lumio.example names Brisa: a lie about who stands behind it.
    let mut server = dns_server(
        socket,
        &[
            ("_svc-assurance.lumio.example.", expected_value(&lumio.uuid)),
            ("_svc-assurance.shop.lumio.example.", expected_value(&brisa.uuid)),
            ("_svc-assurance.brisa.example.", expected_value(&brisa.uuid)),
        ],
    );
    let pass = check(&home).await;
    assert_eq!(pass["businesses"], 2);
    assert_eq!(pass["domains"], json!({"confirmed": 2, "refused": 1, "expired": 0, "unchecked": 0}));
    assert_eq!(pass["endpoints_suspended"], 1);
    let lumio_now = endpoints(&home, &lumio, &lumio_file).await;
    assert_eq!(lumio_now["status"], "suspended");
    assert_eq!(
        states(&lumio_now),
        [("lumio.example".into(), "confirmed".into()), ("shop.lumio.example".into(), "refused".into())]
    );
    let brisa_now = endpoints(&home, &brisa, &brisa_file).await;
    assert_eq!(brisa_now["status"], "live");
    let confirmed = &brisa_now["domains"][0];
    assert_eq!(confirmed["last_confirmed_at"], home.clock.now().to_rfc3339_secs());
    assert_eq!(confirmed["expires_on"], svc_core::analytics::date_of(home.clock.now().plus(30 * DAY)));

    // The server stops answering (the port stays bound, unread): nothing
    // changes while Brisa's confirmation stands...
    server.shutdown_gracefully().await.unwrap();
    let pass = check(&home).await;
    assert_eq!(pass["domains"]["confirmed"], 2, "{pass}");
    assert_eq!(endpoints(&home, &brisa, &brisa_file).await["status"], "live");
    // ...and once it is 30 days old, the assurance is lost.
    home.clock.advance(30 * DAY);
    let pass = check(&home).await;
    assert_eq!(pass["domains"]["expired"], 2, "{pass}");
    let brisa_later = endpoints(&home, &brisa, &brisa_file).await;
    assert_eq!(
        (brisa_later["status"].as_str(), brisa_later["domains"][0]["state"].as_str()),
        (Some("suspended"), Some("expired"))
    );
    drop(silent);
}

// rule: R-NS-6
#[tokio::test(flavor = "multi_thread")]
async fn a_node_without_domain_assurance_says_so() {
    let home = Home::start().await;
    let answer = home.admin("POST", "/admin/domain-assurance/check", json!({})).await;
    assert_eq!((answer.status, answer.body["code"].as_str()), (501, Some("not_implemented")), "{:?}", answer.body);
}
