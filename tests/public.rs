//! The unauthenticated public routes: the signed key set, cacheable and open
//! to any origin (publishing 4.2).

mod common;

use axum::body::Body;
use axum::http::Request;
use common::*;
use svc_core::keyset::{Purpose, RootAnchors, verify};

fn get(path: &str) -> Request<Body> {
    Request::get(path).header("host", AUTHORITY).body(Body::empty()).unwrap()
}

// rule: P2.6.33, P2.6.34, P2.6.35, P2.6.36, P2.6.37, P1.21, P1.22, P1.25, P1.26, P1.27
#[tokio::test(flavor = "multi_thread")]
async fn the_key_set_is_root_signed_cacheable_and_open_to_any_origin() {
    let home = Home::start().await;
    let answer = home.send(get("/.well-known/keys")).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.headers["access-control-allow-origin"], "*");
    assert!(answer.headers.get("access-control-allow-credentials").is_none());
    assert_eq!(answer.headers["cache-control"], "public, max-age=300");
    let etag = answer.headers["etag"].to_str().unwrap().to_owned();

    let keys = &home.state.keys;
    let anchors = RootAnchors {
        classical: keys.root.classical.verifying_key(),
        post_quantum: keys.root.post_quantum.verifying_key(),
    };
    let set = verify(&answer.body, &anchors).expect("signed by the pinned root");
    let receipt_kid = keys.receipt.verifying_key().thumbprint();
    let entry = set.keys.iter().find(|e| e.purpose == Purpose::Receipt).unwrap();
    assert_eq!((entry.kid.as_str(), entry.region.as_deref()), (receipt_kid.as_str(), Some("home")));
    for purpose in [
        Purpose::Root,
        Purpose::Issuance,
        Purpose::Statement,
        Purpose::Projection,
        Purpose::Sidecar,
        Purpose::LogCheckpoint,
    ] {
        assert!(set.keys.iter().any(|e| e.purpose == purpose), "{purpose:?} listed");
    }
    assert_eq!(set.keys.iter().filter(|e| e.purpose == Purpose::Root).count(), 2, "P-256 and ML-DSA-65");
    assert!(set.key(Purpose::Receipt, &receipt_kid, home.clock.now()).is_some(), "valid now");

    // A client holding the same version gets 304, and a preflight is allowed.
    let mut conditional = get("/.well-known/keys");
    conditional.headers_mut().insert("if-none-match", etag.parse().unwrap());
    let unchanged = home.send(conditional).await;
    assert_eq!(unchanged.status, 304);
    assert!(unchanged.bytes.is_empty());
    let preflight = home
        .send(
            Request::options("/.well-known/keys")
                .header("host", AUTHORITY)
                .header("origin", "https://example.org")
                .header("access-control-request-method", "GET")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(preflight.status, 204);
    assert_eq!(preflight.headers["access-control-allow-origin"], "*");
}
