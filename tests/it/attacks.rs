//! Money and trust (issue 45), each protection played as the attack it
//! stops: a thief holding a revoked passkey's session, a key clicking one
//! render a thousand times, a link eavesdropper replaying what it captured,
//! a region forging the money it reports.

use serde_json::json;
use svc_core::custody::{CUSTODY_REQUEST_V1, Custody, CustodyRequest};
use svc_core::ids::RecordType;
use svc_core::problem::Code;
use svc_node::service::portal::{hosted, saves, sessions};
use svc_store::model::PasskeyRole;

use crate::common::person::PortalPerson;
use crate::common::{Clock, Home, products_scope};

/// A hosted update the person confirms, published by the service's key.
fn update_bytes(update_id: &str) -> Vec<u8> {
    let mut update = svc_core::records::examples::example(RecordType::Updates);
    update["update_id"] = json!(update_id);
    serde_json::to_vec(&update).unwrap()
}

// rule: P1.8, P5.14
// A thief signed in with an owner's passkey keeps nothing once the operator
// revokes it: both sessions it opened end at once, a sign-in begun before
// the revocation cannot finish, and none can start. While it was live, the
// session alone could publish through hosted signing but never take a
// record down: that needs the passkey itself.
#[tokio::test(flavor = "multi_thread")]
async fn a_revoked_passkey_is_out_at_once_and_a_session_alone_never_deletes() {
    let home = Home::start().await;
    let business = home.business("Larch", products_scope(100)).await;
    let owner = PortalPerson::register(&home, &business.uuid, "owner@larch.example", PasskeyRole::Owner).await;
    let state = &home.state;

    // A second session, signed in with the passkey.
    let (ceremony, options) = sessions::begin_sign_in(state, "owner@larch.example", None).await.unwrap();
    let answer = serde_json::from_value(owner.assertion(&home, &options)).unwrap();
    let second = sessions::finish_sign_in(state, &ceremony, &answer).await.unwrap();
    assert_eq!(sessions::resolve(state, &second.cookie).await.unwrap().key_id, owner.key_id);

    // Hosted signing on, by the owner's passkey.
    let signed = owner.signed(&home).await;
    let (request, payload_type) = hosted::request(state, &signed, Custody::Hosted).unwrap();
    assert_eq!(payload_type, svc_core::dsse::payload_type(CUSTODY_REQUEST_V1));
    assert!(CustodyRequest::parse(&request).is_some());
    assert!(hosted::switch(state, &business.uuid, &owner.seal(&home, &payload_type, &request)).await.unwrap());

    // The session confirms a save, which the service signs…
    let prepared = saves::prepare(state, &signed, RecordType::Updates, update_bytes("u-1")).await.unwrap();
    let saved = saves::confirm_hosted(state, &signed, &prepared.ceremony_id).await.unwrap();
    let saves::Finished::Record(svc_node::service::publishing::saves::Saved::Published { record_id, .. }) = saved
    else {
        panic!("{saved:?}")
    };
    // …but a deletion confirmed by the session alone is refused: the
    // passkey must sign it, and the record stays.
    let (prepared, _) = saves::prepare_end(state, &signed, &record_id, true).await.unwrap();
    let refused = saves::confirm_hosted(state, &signed, &prepared.ceremony_id).await.unwrap_err();
    assert_eq!(refused.code(), Code::Forbidden, "{refused}");
    let (prepared, _) = saves::prepare_end(state, &signed, &record_id, false).await.unwrap();
    let refused = saves::confirm_hosted(state, &signed, &prepared.ceremony_id).await.unwrap_err();
    assert_eq!(refused.code(), Code::Forbidden, "a withdrawal too: {refused}");
    let head = state.registry.record_head(&record_id).unwrap().unwrap();
    assert_eq!(head.state, svc_store::model::RecordState::Live, "the record is still served");

    // The thief begins a sign-in, then the operator revokes the passkey.
    let (pending, options) = sessions::begin_sign_in(state, "owner@larch.example", None).await.unwrap();
    let revoked = home.admin("POST", &format!("/admin/keys/{}/revoke", owner.key_id), json!({})).await;
    assert_eq!(revoked.status, 200, "{:?}", revoked.body);

    // Both sessions end at once: the use case says so, a page sends the
    // cookie's holder to sign in, and a script's call is answered 401.
    for cookie in [&owner.cookie, &second.cookie] {
        let ended = sessions::resolve(state, cookie).await.unwrap_err();
        assert_eq!((ended.code(), ended.code().status()), (Code::SignInRequired, 401), "{ended}");
        let page = axum::http::Request::get("/portal/")
            .header("host", crate::common::AUTHORITY)
            .header("cookie", format!("{}={cookie}", svc_http::portal::session::COOKIE))
            .body(axum::body::Body::empty())
            .unwrap();
        let answer = home.send(page).await;
        assert_eq!(answer.status, 303, "{:?}", answer.bytes);
        assert_eq!(answer.headers["location"], "/portal/sign-in");
        // The portal script's JSON call (a seal) gets the 401 itself.
        let seal = axum::http::Request::post("/portal/seal/any-ceremony")
            .header("host", crate::common::AUTHORITY)
            .header("cookie", format!("{}={cookie}", svc_http::portal::session::COOKIE))
            .header("content-type", "application/json")
            .header("x-csrf-token", &signed.csrf)
            .body(axum::body::Body::from("{}"))
            .unwrap();
        let answer = home.send(seal).await;
        assert_eq!((answer.status, answer.body["code"].as_str()), (401, Some("sign_in_required")), "{:?}", answer.body);
    }
    // The sign-in begun before cannot finish, and none can begin.
    let answer = serde_json::from_value(owner.assertion(&home, &options)).unwrap();
    let refused = sessions::finish_sign_in(state, &pending, &answer).await.unwrap_err();
    assert_eq!(refused.code(), Code::PasskeyRefused, "{refused}");
    // A new one begins as for any address, and cannot finish either.
    let (fresh, options) = sessions::begin_sign_in(state, "owner@larch.example", None).await.unwrap();
    let answer = serde_json::from_value(owner.assertion(&home, &options)).unwrap();
    let refused = sessions::finish_sign_in(state, &fresh, &answer).await.unwrap_err();
    assert_eq!(refused.code(), Code::PasskeyRefused, "{refused}");
}

/// Home with read regions `eu` and `ap`, each with its own link token.
async fn home_with_regions() -> Home {
    Home::start_with_config(tempfile::tempdir().unwrap(), |config| {
        use svc_node::config::{RegionCredential, ReplicationConfig};
        let regions = ["eu", "ap"].map(|r| RegionCredential::new(r, &crate::common::region_token(r))).to_vec();
        config.replication = Some(ReplicationConfig::home(regions));
        config.internal_listen = Some("127.0.0.1:0".parse().unwrap());
    })
    .await
}

/// A link request as region `eu` sends it at home's clock, under `id`:
/// the same arguments make the same bytes, as a captured request replayed.
fn captured(home: &Home, path: &str, body: &impl serde::Serialize, id: &str) -> axum::http::Request<axum::body::Body> {
    let body = postcard::to_stdvec(body).unwrap();
    let at = home.clock.now().0;
    crate::common::link_request_at("POST", path, "eu", &crate::common::region_token("eu"), body, at, id)
}

/// Home's internal router's answer: its status and body.
async fn on_link(home: &Home, request: axum::http::Request<axum::body::Body>) -> (u16, Vec<u8>) {
    use tower::ServiceExt;
    let answer = svc_http::api::internal_router(home.state.clone()).oneshot(request).await.unwrap();
    let status = answer.status().as_u16();
    (status, http_body_util::BodyExt::collect(answer.into_body()).await.unwrap().to_bytes().to_vec())
}

// An eavesdropper on the link replays a region's captured ad-lease ask and
// allowance lease 50 times each within the window: home answered each once
// and granted nothing more.
#[tokio::test(flavor = "multi_thread")]
async fn a_captured_link_request_replayed_changes_nothing() {
    use svc_core::ads::Micros;
    use svc_core::ads::ledger::Lease;
    use svc_node::replication::exchange::{LeaseAsk, LeaseGrant};
    use svc_node::service::ads::ledger::AdLeaseAsk;
    let home = home_with_regions().await;
    let business = home.business("Lumen", products_scope(100)).await;
    let caller = home.caller("Reader").await;
    let allowance = json!({"ai_company_uuid": caller.company_uuid, "prepay": true, "remaining": 200});
    assert_eq!(home.admin("POST", "/admin/allowances", allowance).await.status, 200);
    let terms = json!({"name": "lamps", "placement": "ad", "budget": "10", "net_price": "0.50", "basis": "cpc",
        "keywords": ["lamp"], "countries": ["FR"], "formats": ["card"],
        "repeats": {"allowed": false, "max_per_conversation": 1}});
    let mut ad = svc_core::records::examples::example(RecordType::Ads);
    for image in ["image_square_url", "image_landscape_url"] {
        ad.as_object_mut().unwrap().remove(image);
    }
    let ad = home.save_sealed(&business, "ads", &serde_json::to_vec(&ad).unwrap()).await;
    assert_eq!(ad.status, 201, "{:?}", ad.body);
    let made = home
        .admin(
            "POST",
            &format!("/admin/businesses/{}/campaigns", business.uuid),
            json!({"terms": terms, "items": [ad.body["record_id"]]}),
        )
        .await;
    let campaign = made.body["campaign_id"].as_str().unwrap().to_owned();
    assert_eq!(
        home.admin("POST", &format!("/admin/campaigns/{campaign}/funds"), json!({"amount": "10"})).await.status,
        200
    );
    let ledger = || {
        let stored = home.state.store.get(svc_store::cf::CAMPAIGNS, campaign.as_bytes()).unwrap().unwrap();
        svc_node::campaign_ledger::current(&home.state.store, &stored, home.clock.now()).unwrap().1
    };

    let ask = AdLeaseAsk {
        region: "eu".into(),
        campaign_id: campaign.clone(),
        want: Micros(500_000),
        event: Micros(500_000),
    };
    let (status, first) = on_link(&home, captured(&home, "/internal/v1/ad-lease", &ask, "ad-lease-0000000001")).await;
    assert_eq!(status, 200);
    let lease: Option<Lease> = postcard::from_bytes(&first).unwrap();
    assert!(lease.is_some());
    for _ in 0..50 {
        let (status, _) = on_link(&home, captured(&home, "/internal/v1/ad-lease", &ask, "ad-lease-0000000001")).await;
        assert_eq!(status, 401, "a replay is refused");
    }
    assert_eq!(ledger().leases.len(), 1, "one lease, however often the ask came");

    let ask = LeaseAsk { region: "eu".into(), company_uuid: caller.company_uuid.clone(), units: 3 };
    let (status, first) = on_link(&home, captured(&home, "/internal/v1/lease", &ask, "allowance-000000001")).await;
    assert_eq!(status, 200);
    let grant: LeaseGrant = postcard::from_bytes(&first).unwrap();
    assert_eq!(grant.units, 3);
    for _ in 0..50 {
        let (status, _) = on_link(&home, captured(&home, "/internal/v1/lease", &ask, "allowance-000000001")).await;
        assert_eq!(status, 401, "a replay is refused");
    }
    let allowance: svc_store::model::Allowance =
        home.state.store.get(svc_store::cf::ALLOWANCES, caller.company_uuid.as_bytes()).unwrap().unwrap();
    assert_eq!(allowance.remaining, 197, "one lease of 3 units parked, not 51");
    // A fresh request of the region's own is answered.
    let (status, _) = on_link(&home, captured(&home, "/internal/v1/lease", &ask, "allowance-000000002")).await;
    assert_eq!(status, 200);
}

/// The declared size of the publishes that never finish: under the 32 MiB
/// limit, so only the head can refuse them.
const DECLARED: usize = 31_000_000;

/// A publish whose body never finishes: its connection's reading half,
/// and the task still holding the writing half open.
struct Stalled {
    read: tokio::net::tcp::OwnedReadHalf,
    _writing: tokio::task::JoinHandle<()>,
}

/// Opens a connection to `addr` and sends a publish head declaring
/// [`DECLARED`] bytes with `headers`, then 1 MiB of the body, and no more
/// (a write the server refuses by closing is no failure: it answered).
async fn stalled_publish(addr: std::net::SocketAddr, headers: &[(&str, String)]) -> Stalled {
    stalled_post(addr, "/v1/publish/products", headers).await
}

/// As [`stalled_publish`], to `path`.
async fn stalled_post(addr: std::net::SocketAddr, path: &str, headers: &[(&str, String)]) -> Stalled {
    use tokio::io::AsyncWriteExt;
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (read, mut write) = stream.into_split();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {DECLARED}\r\n",
        crate::common::AUTHORITY
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let writing = tokio::spawn(async move {
        if write.write_all(head.as_bytes()).await.is_ok() {
            let _ = write.write_all(&vec![b' '; 1 << 20]).await;
        }
        std::future::pending::<()>().await;
    });
    Stalled { read, _writing: writing }
}

/// The status line of the answer to a stalled publish, or `None` when none
/// came within 20 s (its body never finishes, so only the head is judged).
async fn status_of(stalled: &mut Stalled) -> Option<u16> {
    use tokio::io::AsyncReadExt;
    let mut read = Vec::new();
    let mut buffer = [0u8; 4096];
    let answered = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        while !read.windows(2).any(|w| w == b"\r\n") {
            let n = stalled.read.read(&mut buffer).await.ok()?;
            if n == 0 {
                return None;
            }
            read.extend_from_slice(&buffer[..n]);
        }
        Some(())
    })
    .await;
    answered.ok()??;
    String::from_utf8_lossy(&read).split(' ').nth(1)?.parse().ok()
}

/// Signature headers for a publish of [`DECLARED`] bytes by `key`, with
/// the signature's first byte flipped when `forge`.
fn publish_signature(
    home: &Home,
    key: &svc_core::keys::SigningKey,
    n: u32,
    forge: bool,
) -> Vec<(&'static str, String)> {
    let now = home.clock.now().as_secs();
    let nonce = svc_core::http_sig::nonce_from_bytes(&svc_core::digest::sha256(format!("stalled-{n}").as_bytes()));
    let body = vec![b' '; DECLARED];
    let signed = svc_core::http_sig::sign(
        "POST",
        crate::common::AUTHORITY,
        "/v1/publish/products",
        None,
        &body,
        key,
        now,
        now + 60,
        &nonce,
        "svc-push",
    )
    .unwrap();
    let mut signature = signed.signature.clone();
    if forge {
        let (label, rest) = signature.split_once("=:").unwrap();
        let mut bytes = svc_core::b64::std_decode(rest.trim_end_matches(':')).unwrap();
        bytes[0] ^= 1;
        signature = format!("{label}=:{}:", svc_core::b64::std_encode(&bytes));
    }
    vec![
        ("content-digest", signed.content_digest.unwrap()),
        ("signature-input", signed.signature_input),
        ("signature", signature),
    ]
}

// rule: R5.2, R5.31, R5.33
// Knowing a business's key id is not enough to hold the publishing routes:
// 8 publishes with no signature and 8 with a forged one under the real key
// id, each declaring 31 MB and stalling after 1 MiB, are all answered 401
// from their heads while their bodies never finish, and an honest publish
// goes through beside them. A real key holder's stalled publishes are
// capped in flight, so even it cannot take every slot.
#[tokio::test(flavor = "multi_thread")]
async fn publishes_are_judged_from_their_signed_head_before_their_body_is_read() {
    let (home, node) = Home::listening(|_| {}).await;
    let business = home.business("Larch", products_scope(10_000)).await;
    let mut stalled = Vec::new();
    for n in 0..8 {
        stalled.push(stalled_publish(node.addr, &[]).await);
        stalled.push(stalled_publish(node.addr, &publish_signature(&home, &business.key, n, true)).await);
    }
    for (n, caller) in stalled.iter_mut().enumerate() {
        assert_eq!(status_of(caller).await, Some(401), "caller {n} was answered from its head");
    }

    // The honest publish, sent beside sixteen stalled strangers.
    let strangers: Vec<_> = futures::future::join_all((0..16).map(|_| stalled_publish(node.addr, &[]))).await;
    let records = [crate::common::product("Larch", "L-1", "9.00")];
    let seq = business.seq.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let seal = home.batch_seal(&business, &records, seq, 0, home.clock.now());
    let body = home.publish_body(&seal, &records);
    let idem = [("idempotency-key", "honest")];
    let request = home.signed_request(&business.key, "POST", "/v1/publish/products", &body, "svc-push", &idem);
    let transport = svc_client::transport::Transport::new(&format!("http://{}", node.addr)).unwrap();
    let honest = transport.send(request).await.unwrap();
    assert_eq!(honest.status, 200, "{}", String::from_utf8_lossy(&honest.bytes));
    drop(strangers);

    // The key's own holder: past its cap of publishes in flight, the next
    // is refused at once (429), before its body.
    let mut own = Vec::new();
    for n in 0..svc_node::limits::PUBLISHES_PER_KEY as u32 {
        own.push(stalled_publish(node.addr, &publish_signature(&home, &business.key, 100 + n, false)).await);
    }
    crate::common::eventually("the key's publishes in flight", async || {
        home.state.limits.publishes_per_key.of(&business.key_id) == svc_node::limits::PUBLISHES_PER_KEY
    })
    .await;
    let mut over = stalled_publish(node.addr, &publish_signature(&home, &business.key, 200, false)).await;
    assert_eq!(status_of(&mut over).await, Some(429));
    drop(own);
}

/// A JSON value with every string replaced by its length: what an observer
/// learns of an answer's shape without its random values.
fn shape(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::String(text) => json!(text.len()),
        serde_json::Value::Array(items) => items.iter().map(shape).collect(),
        serde_json::Value::Object(members) => members.iter().map(|(k, v)| (k.clone(), shape(v))).collect(),
        other => other.clone(),
    }
}

// An attacker probing which addresses have a portal account gets answers of
// one shape for each, and the ticket tells no more; beginning sign-ins
// stores nothing, so a flood of them from everywhere cannot fill the
// passkey requests every business's saves need; a flood from one address,
// or at one person, is slowed without slowing anyone else.
#[tokio::test(flavor = "multi_thread")]
async fn sign_in_tells_nobody_who_exists_and_a_flood_of_them_holds_nothing() {
    let home = Home::start().await;
    let business = home.business("Larch", products_scope(100)).await;
    let owner = PortalPerson::register(&home, &business.uuid, "owner@larch.example", PasskeyRole::Owner).await;
    let state = &home.state;
    let ceremonies =
        || state.store.scan::<svc_store::model::Ceremony>(svc_store::cf::CEREMONIES, &[], None, 100_000).unwrap().len();
    let held = ceremonies();
    let at = |n: u8| Some(std::net::IpAddr::from([192, 0, 2, n]));

    let (known_ticket, known) = sessions::begin_sign_in(state, "owner@larch.example", at(1)).await.unwrap();
    let (unknown_ticket, unknown) = sessions::begin_sign_in(state, "nobod@larch.example", at(1)).await.unwrap();
    assert_eq!(shape(&known), shape(&unknown), "{known} / {unknown}");
    assert_eq!(known_ticket.len(), unknown_ticket.len(), "tickets of one length for addresses of one length");
    let payload = |ticket: &str| svc_core::b64::url_decode(ticket.split_once('.').unwrap().0).unwrap();
    assert!(!String::from_utf8_lossy(&payload(&known_ticket)).contains("cred_id"), "no credential in the ticket");
    // The stand-in is the same each time, as a real passkey would be.
    let (_, again) = sessions::begin_sign_in(state, "nobod@larch.example", at(2)).await.unwrap();
    assert_eq!(unknown["publicKey"]["allowCredentials"], again["publicKey"]["allowCredentials"]);
    assert_eq!(ceremonies(), held, "beginning a sign-in stores nothing");

    // The unknown address's ticket signs nobody in, however it is answered.
    let answer = serde_json::from_value(owner.assertion(&home, &unknown)).unwrap();
    let refused = sessions::finish_sign_in(state, &unknown_ticket, &answer).await.unwrap_err();
    assert_eq!(refused.code(), Code::PasskeyRefused, "{refused}");
    // The known one signs in once; the same ticket again is refused.
    let answer = serde_json::from_value(owner.assertion(&home, &known)).unwrap();
    sessions::finish_sign_in(state, &known_ticket, &answer).await.unwrap();
    let replayed = sessions::finish_sign_in(state, &known_ticket, &answer).await.unwrap_err();
    assert_eq!(replayed.code(), Code::PasskeyRefused, "{replayed}");
    // A ticket changed by its bearer is no ticket.
    let (ticket, options) = sessions::begin_sign_in(state, "owner@larch.example", at(3)).await.unwrap();
    let (_, tag) = ticket.split_once('.').unwrap();
    let forged = format!("{}.{tag}", svc_core::b64::url_encode(b"anything"));
    let answer = serde_json::from_value(owner.assertion(&home, &options)).unwrap();
    assert_eq!(sessions::finish_sign_in(state, &forged, &answer).await.unwrap_err().code(), Code::PasskeyRefused);

    // A flood from one address: past its share it is slowed (429); nothing
    // was stored, and anyone else, and a save's passkey request, go on.
    let mut slowed = 0;
    for n in 0..2_000 {
        let email = format!("probe-{n}@larch.example");
        match sessions::begin_sign_in(state, &email, at(9)).await {
            Ok(_) => {}
            Err(e) if e.code() == Code::RateLimited => slowed += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(slowed, 2_000 - svc_node::limits::SIGN_INS_PER_CLIENT_MINUTE as usize, "one address's share");
    assert_eq!(ceremonies(), held + 1, "only the used ticket's mark");
    assert!(sessions::begin_sign_in(state, "owner@larch.example", at(4)).await.is_ok(), "another address signs in");
    let signed = owner.signed(&home).await;
    let prepared = saves::prepare(state, &signed, RecordType::Updates, update_bytes("u-2")).await;
    assert!(prepared.is_ok(), "a save's passkey request is not crowded out");
    // And a flood at one person from many addresses is held to that person's rate.
    let mut at_owner = 0;
    for n in 0..100u8 {
        if sessions::begin_sign_in(state, "owner@larch.example", at(100 + n)).await.is_err() {
            at_owner += 1;
        }
    }
    assert!(at_owner >= 100 - svc_node::limits::SIGN_INS_PER_EMAIL_MINUTE as usize, "{at_owner}");
}

// The public business-keys route and a sandbox bearer token are answered
// through an index, not by reading every key on the platform (a cost any
// caller could make grow): with the index entries gone neither is found,
// and a node's start writes them back from the keys it holds.
#[tokio::test(flavor = "multi_thread")]
async fn business_keys_and_bearer_tokens_are_found_through_the_index() {
    use svc_store::cf;
    let home = Home::start_sandbox().await;
    let mut uuids = Vec::new();
    for name in ["Larch", "Birch"] {
        let created = home
            .admin("POST", "/admin/businesses", json!({"legal_name": name, "country": "FR", "brands": [name]}))
            .await;
        uuids.push(created.body["business_uuid"].as_str().unwrap().to_owned());
    }
    let key = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[3; 32]).unwrap();
    let registered = home
        .admin(
            "POST",
            &format!("/admin/businesses/{}/keys", uuids[0]),
            json!({"jwk": key.verifying_key().to_jwk(), "purpose": "integration"}),
        )
        .await;
    assert_eq!(registered.status, 201, "{:?}", registered.body);
    let bearer = registered.body["sandbox_bearer_token"].as_str().unwrap().to_owned();
    let now = home.clock.now();
    let listed = |uuid: &str| home.state.registry.business_keys(uuid).unwrap().len();
    assert_eq!((listed(&uuids[0]), listed(&uuids[1])), (1, 0), "each business its own keys");
    assert!(home.state.registry.integration_key_by_bearer(&bearer, now).unwrap().is_some());

    let entries = home.state.store.scan::<String>(cf::KEY_INDEX, &[], None, 100).unwrap();
    assert_eq!(entries.len(), 2, "by business, and by bearer digest");
    let mut batch = home.state.store.batch();
    for (entry, _) in &entries {
        batch.delete(cf::KEY_INDEX, entry);
    }
    batch.commit().unwrap();
    assert_eq!(listed(&uuids[0]), 0, "found through the index only");
    assert!(home.state.registry.integration_key_by_bearer(&bearer, now).unwrap().is_none());
    assert_eq!(svc_node::registry::Registry::index_keys(&home.state.store).unwrap(), 1);
    assert_eq!(listed(&uuids[0]), 1);
    assert!(home.state.registry.integration_key_by_bearer(&bearer, now).unwrap().is_some());
    assert!(home.state.registry.integration_key_by_bearer("not-the-token", now).unwrap().is_none());
}

// An AI company's person can sign out, as a business's can: the session
// ends at once (a shared computer keeps nothing signed in).
#[tokio::test(flavor = "multi_thread")]
async fn an_ai_companys_person_signs_out_and_the_session_ends() {
    let home = Home::start().await;
    let caller = home.caller("Far AI").await;
    let person = PortalPerson::register(&home, &caller.company_uuid, "ops@far.example", PasskeyRole::Owner).await;
    let signed = person.signed(&home).await;
    assert!(signed.company);
    let sign_out = axum::http::Request::post("/portal/sign-out")
        .header("host", crate::common::AUTHORITY)
        .header("cookie", format!("{}={}", svc_http::portal::session::COOKIE, person.cookie))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(axum::body::Body::from(format!("csrf={}", signed.csrf)))
        .unwrap();
    let answer = home.send(sign_out).await;
    assert_eq!(answer.status, 303, "{}", String::from_utf8_lossy(&answer.bytes));
    assert_eq!(answer.headers["location"], "/portal/sign-in");
    let ended = sessions::resolve(&home.state, &person.cookie).await.unwrap_err();
    assert_eq!(ended.code(), Code::SignInRequired);
}

// A person asking for the account export again while one is under way is
// told to wait: one export at a time per account, each reading every record.
#[tokio::test(flavor = "multi_thread")]
async fn account_exports_run_one_at_a_time_per_account() {
    let home = Home::start().await;
    let business = home.business("Larch", products_scope(100)).await;
    let other = home.business("Birch", products_scope(100)).await;
    let owner = PortalPerson::register(&home, &business.uuid, "owner@larch.example", PasskeyRole::Owner).await;
    let theirs = PortalPerson::register(&home, &other.uuid, "owner@birch.example", PasskeyRole::Owner).await;
    let signed = owner.signed(&home).await;
    let under_way = svc_node::service::portal::export::begin(&home.state, &signed).unwrap();
    let again = svc_node::service::portal::export::begin(&home.state, &signed).unwrap_err();
    assert_eq!(again.code(), Code::RateLimited, "{again}");
    assert!(
        svc_node::service::portal::export::begin(&home.state, &theirs.signed(&home).await).is_ok(),
        "another account's"
    );
    drop(under_way);
    assert!(svc_node::service::portal::export::begin(&home.state, &signed).is_ok(), "once the first is done");
}

/// Stops `home` and answers its folder, for a start over the same store.
async fn stopped(home: Home) -> tempfile::TempDir {
    home.state.stop_actors().await;
    let Home { dir, state, .. } = home;
    drop(state);
    dir
}

/// Whether any file under `dir` holds `bytes` (a stolen disk or backup).
fn on_disk(dir: &std::path::Path, bytes: &[u8]) -> bool {
    let mut found = false;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found |= on_disk(&path, bytes);
        } else if let Ok(content) = std::fs::read(&path) {
            found |= content.windows(bytes.len()).any(|w| w == bytes);
        }
    }
    found
}

// A thief with the store (a disk, a backup) but not the operator's
// key-encryption key finds no usable seed: the node's seeds and a hosted
// business's seed are stored wrapped; a store is wrapped in place when a
// key is first given; the node does not start without the key, or with
// another; a hosted seed switched off leaves the store's files; and a seed
// never shows in a debug print.
#[tokio::test(flavor = "multi_thread")]
async fn seeds_at_rest_are_wrapped_under_the_operators_key() {
    use svc_node::service_keys::KeyEncryptionKey;
    use svc_store::cf;
    let kek = || Some(KeyEncryptionKey::from_token("the-operators-key-encryption-token-0001"));
    let clear_seeds = |home: &Home| home.state.store.contains(cf::meta::RAW, b"service_key_seeds").unwrap();
    let wrapped_seeds = |home: &Home| {
        home.state.store.get::<Vec<u8>>(cf::meta::SERVICE_KEY_SEEDS_WRAPPED, b"service_key_seeds_wrapped").unwrap()
    };

    // Started without a key: seeds in clear. Given one: wrapped in place.
    let home = Home::start().await;
    assert!(clear_seeds(&home) && wrapped_seeds(&home).is_none());
    let statement_key = home.state.keys.statement.classical.verifying_key().thumbprint();
    let dir = stopped(home).await;
    let home = Home::start_with_config(dir, |c| c.key_encryption_key = kek()).await;
    assert!(!clear_seeds(&home), "the clear seeds are gone");
    assert!(wrapped_seeds(&home).is_some_and(|w| w.len() > 200));
    assert_eq!(home.state.keys.statement.classical.verifying_key().thumbprint(), statement_key, "the same keys");

    // Hosted signing on: the business's seed is stored wrapped, and signs.
    let business = home.business("Larch", products_scope(100)).await;
    let owner = PortalPerson::register(&home, &business.uuid, "owner@larch.example", PasskeyRole::Owner).await;
    let signed = owner.signed(&home).await;
    let (request, payload_type) = hosted::request(&home.state, &signed, Custody::Hosted).unwrap();
    assert!(hosted::switch(&home.state, &business.uuid, &owner.seal(&home, &payload_type, &request)).await.unwrap());
    let held = hosted::held(&home.state, &business.uuid).unwrap().unwrap();
    assert_eq!(held.seed.len(), 60, "wrapped: nonce, seed and tag");
    assert!(!format!("{held:?}").contains(&format!("{:?}", held.seed)), "never printed");
    let prepared = saves::prepare(&home.state, &signed, RecordType::Updates, update_bytes("u-1")).await.unwrap();
    let saved = saves::confirm_hosted(&home.state, &signed, &prepared.ceremony_id).await.unwrap();
    assert!(matches!(saved, saves::Finished::Record(svc_node::service::publishing::saves::Saved::Published { .. })));

    // No start without the key, nor with another.
    let dir = stopped(home).await;
    let path = dir.path().to_path_buf();
    let config = |kek: Option<KeyEncryptionKey>| {
        let mut config = svc_node::config::NodeConfig::local_home(
            path.clone(),
            "127.0.0.1:0".parse().unwrap(),
            "127.0.0.1:0".parse().unwrap(),
        );
        config.environment = svc_store::model::Environment::Production;
        config.key_encryption_key = kek;
        config
    };
    let clock = std::sync::Arc::new(svc_clock::ManualClock::at(crate::common::START));
    let without = svc_node::region::start(config(None), clock.clone()).await.err().expect("refused without the key");
    assert!(without.to_string().contains("key-encryption key"), "{without}");
    let other = Some(KeyEncryptionKey::from_token("another-key-encryption-token-of-32-chars"));
    let wrong = svc_node::region::start(config(other), clock).await.err().expect("refused with another key");
    assert!(wrong.to_string().contains("not the one"), "{wrong}");

    // With it: hosted signing off, and the wrapped seed leaves the files.
    let home = Home::start_with_config(dir, |c| c.key_encryption_key = kek()).await;
    let signed = owner.signed(&home).await;
    let (request, payload_type) = hosted::request(&home.state, &signed, Custody::OwnKey).unwrap();
    assert!(!hosted::switch(&home.state, &business.uuid, &owner.seal(&home, &payload_type, &request)).await.unwrap());
    assert!(hosted::held(&home.state, &business.uuid).unwrap().is_none());
    let db = home.dir.path().join("db");
    crate::common::eventually("the deleted seed leaves the store's files", async || !on_disk(&db, &held.seed)).await;
}

// A link request is judged from its head: one whose MAC is not the
// region's is refused before its body is read (a stalled body is never
// waited for), and a body other than the one its MAC'd head declared is
// refused once read, however well the head is signed.
#[tokio::test(flavor = "multi_thread")]
async fn a_link_request_is_judged_from_its_head_and_its_body_is_the_declared_one() {
    use svc_node::replication::exchange::LeaseAsk;
    let (home, node) = Home::listening(|config| {
        use svc_node::config::{RegionCredential, ReplicationConfig};
        let regions = ["eu", "ap"].map(|r| RegionCredential::new(r, &crate::common::region_token(r))).to_vec();
        config.replication = Some(ReplicationConfig::home(regions));
        config.internal_listen = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    let internal = node.internal_addr.unwrap();
    let forged = [
        ("x-svc-region", "eu".to_owned()),
        ("x-svc-link-at", home.clock.now().0.to_string()),
        ("x-svc-link-id", "forged-request-000001".to_owned()),
        ("x-svc-link-body", svc_core::link::body_digest(b"anything")),
        ("x-svc-link-mac", "00".repeat(32)),
    ];
    let mut stalled = stalled_post(internal, "/internal/v1/report", &forged).await;
    assert_eq!(status_of(&mut stalled).await, Some(401), "answered from the head");

    let caller = home.caller("Reader").await;
    let ask = LeaseAsk { region: "eu".into(), company_uuid: caller.company_uuid.clone(), units: 3 };
    let (parts, _) = captured(&home, "/internal/v1/lease", &ask, "swapped-body-000001").into_parts();
    let greedy = LeaseAsk { units: 1_000_000, ..ask };
    let swapped = axum::http::Request::from_parts(parts, axum::body::Body::from(postcard::to_stdvec(&greedy).unwrap()));
    let (status, _) = on_link(&home, swapped).await;
    assert_eq!(status, 401, "the body is not the declared one");
}
