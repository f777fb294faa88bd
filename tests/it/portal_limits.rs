//! The portal's bounds without a browser: invitations and passkey requests
//! begun through the use cases, a cap on open requests, and the retention
//! sweep that deletes what has lapsed.

use serde_json::json;
use svc::service::portal::{people, sessions};
use svc::store::cf;
use svc::store::model::{Ceremony, Invitation, PasskeyRole};
use svc_core::portal::CEREMONY_MS;
use svc_core::problem::Code;

use crate::common::{Home, eventually};

async fn business(home: &Home) -> String {
    let created = home.admin("POST", "/admin/businesses", json!({"legal_name": "Lumio", "country": "FR"})).await;
    created.body["business_uuid"].as_str().unwrap().to_owned()
}

fn count<T: serde::de::DeserializeOwned>(home: &Home, family: &'static str) -> usize {
    home.state.store.scan::<T>(family, &[], None, usize::MAX).unwrap().len()
}

// rule: P1.1
#[tokio::test(flavor = "multi_thread")]
async fn invitations_and_passkey_requests_are_bounded_and_swept_when_they_lapse() {
    let home = Home::start_with_config(tempfile::tempdir().unwrap(), |config| config.retention_every_ms = 50).await;
    let uuid = business(&home).await;

    // An address joins one business's portal; a bad one is refused plainly.
    let made = people::invite(&home.state, None, &uuid, " Ana@Lumio.example ", PasskeyRole::Owner).await.unwrap();
    assert_eq!(made.email, "ana@lumio.example");
    let bad = people::invite(&home.state, None, &uuid, "no-at-sign", PasskeyRole::Owner).await.unwrap_err();
    assert_eq!(bad.code(), Code::RequestInvalid);
    let unknown = people::invitation(&home.state, "not-a-token").unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    let nameless = people::begin_registration(&home.state, &made.token, " ").await.unwrap_err();
    assert_eq!(nameless.code(), Code::RequestInvalid);

    // Passkey requests are capped while open.
    let (first, options) = people::begin_registration(&home.state, &made.token, "Ana").await.unwrap();
    assert_eq!(options["publicKey"]["rp"]["id"], home.state.config.passkey_rp_id.as_str());
    assert_eq!(options["publicKey"]["user"]["name"], "ana@lumio.example");
    for _ in 1..sessions::MAX_OPEN_CEREMONIES {
        people::begin_registration(&home.state, &made.token, "Ana").await.unwrap();
    }
    let full = people::begin_registration(&home.state, &made.token, "Ana").await.unwrap_err();
    assert_eq!(full.code(), Code::Unavailable, "{full}");
    assert_eq!(count::<Ceremony>(&home, cf::CEREMONIES), sessions::MAX_OPEN_CEREMONIES);

    // Once they expire the cap frees at once, and the sweep deletes them.
    home.clock.advance(CEREMONY_MS + 1);
    let (later, _) = people::begin_registration(&home.state, &made.token, "Ana").await.unwrap();
    assert!(later > first, "ids sort by expiry");
    eventually("the sweep of lapsed passkey requests", || async { count::<Ceremony>(&home, cf::CEREMONIES) == 1 })
        .await;

    // An invitation lapses after 7 days and is swept too.
    assert_eq!(count::<Invitation>(&home, cf::INVITATIONS), 1);
    home.clock.advance(people::INVITATION_MS);
    eventually("the sweep of lapsed invitations", || async { count::<Invitation>(&home, cf::INVITATIONS) == 0 }).await;
    assert_eq!(people::invitation(&home.state, &made.token).unwrap_err().code(), Code::NotFound);
}

// rule: P1.8
#[tokio::test(flavor = "multi_thread")]
async fn only_an_owners_passkey_switches_to_hosted_signing() {
    use svc::service::portal::{Signed, hosted};
    use svc_core::custody::{CUSTODY_REQUEST_V1, Custody, CustodyRequest};
    let home = Home::start().await;
    let uuid = business(&home).await;
    let person = |role| Signed {
        account_uuid: uuid.clone(),
        company: false,
        person_id: "p".into(),
        name: "Ana".into(),
        role,
        key_id: "k".into(),
        csrf: "c".into(),
    };
    let admin = hosted::request(&home.state, &person(PasskeyRole::Admin), Custody::Hosted).unwrap_err();
    assert_eq!(admin.code(), Code::Forbidden, "{admin}");
    let off = hosted::request(&home.state, &person(PasskeyRole::Owner), Custody::OwnKey).unwrap_err();
    assert_eq!((off.code(), off.to_string().contains("already off")), (Code::RequestInvalid, true), "{off}");
    let (bytes, payload_type) = hosted::request(&home.state, &person(PasskeyRole::Owner), Custody::Hosted).unwrap();
    assert_eq!(payload_type, svc_core::dsse::payload_type(CUSTODY_REQUEST_V1));
    assert_eq!(CustodyRequest::parse(&bytes).unwrap().0.custody, Custody::Hosted);
    // The request signed by a key that is no owner's passkey: refused, and
    // no key is made.
    let stranger = svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Es256, &[9; 32]).unwrap();
    let forged = svc_core::dsse::Envelope::sign(&payload_type, &bytes, &[&stranger]);
    let refused = hosted::switch(&home.state, &uuid, &forged).await.unwrap_err();
    assert_eq!(refused.code(), Code::SealInvalid, "{refused}");
    assert!(hosted::held(&home.state, &uuid).unwrap().is_none());
}
