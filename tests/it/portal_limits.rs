//! The portal's bounds without a browser: invitations and passkey requests
//! begun through the use cases, a cap on open requests, and the retention
//! sweep that deletes what has lapsed.

use serde_json::json;
use svc_core::portal::CEREMONY_MS;
use svc_core::problem::Code;
use svc_node::region::open_ceremonies::MAX_OPEN_PER_ACCOUNT;
use svc_node::service::portal::{people, sessions};
use svc_store::cf;
use svc_store::model::{Ceremony, Invitation, PasskeyRole};

use crate::common::{Home, eventually};

async fn business(home: &Home) -> String {
    let created = home.admin("POST", "/admin/businesses", json!({"legal_name": "Lumio", "country": "FR"})).await;
    created.body["business_uuid"].as_str().unwrap().to_owned()
}

fn count<T: serde::de::DeserializeOwned>(home: &Home, family: impl svc_store::Holds<T>) -> usize {
    home.state.store.scan::<T>(family, &[], None, usize::MAX).unwrap().len()
}

/// A person of `account_uuid` signed in with `role`, as the portal's
/// session hands them to the use cases.
fn signed(account_uuid: &str, company: bool, role: PasskeyRole) -> svc_node::service::portal::Signed {
    svc_node::service::portal::Signed {
        account_uuid: account_uuid.to_owned(),
        company,
        person_id: "p".into(),
        name: "Ana".into(),
        role,
        key_id: "k".into(),
        csrf: "c".into(),
    }
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

    // Passkey requests are capped while open: an account's share first
    // (one invitation cannot take every business's places), then the node's.
    let (first, options) = people::begin_registration(&home.state, &made.token, "Ana").await.unwrap();
    assert_eq!(options["publicKey"]["rp"]["id"], home.state.config.passkey_rp_id.as_str());
    assert_eq!(options["publicKey"]["user"]["name"], "ana@lumio.example");
    for _ in 1..MAX_OPEN_PER_ACCOUNT {
        people::begin_registration(&home.state, &made.token, "Ana").await.unwrap();
    }
    let share = people::begin_registration(&home.state, &made.token, "Ana").await.unwrap_err();
    assert_eq!(share.code(), Code::RateLimited, "{share}");
    let mut tokens = Vec::new();
    for n in 1..sessions::MAX_OPEN_CEREMONIES / MAX_OPEN_PER_ACCOUNT {
        let other = business(&home).await;
        let email = format!("p{n}@lumio.example");
        tokens.push(people::invite(&home.state, None, &other, &email, PasskeyRole::Owner).await.unwrap().token);
    }
    for token in &tokens {
        for _ in 0..MAX_OPEN_PER_ACCOUNT {
            people::begin_registration(&home.state, token, "Ana").await.unwrap();
        }
    }
    let another = business(&home).await;
    let last = people::invite(&home.state, None, &another, "last@lumio.example", PasskeyRole::Owner).await.unwrap();
    let full = people::begin_registration(&home.state, &last.token, "Ana").await.unwrap_err();
    assert_eq!(full.code(), Code::Unavailable, "{full}");
    assert_eq!(count::<Ceremony>(&home, cf::CEREMONIES), sessions::MAX_OPEN_CEREMONIES);

    // One ends (as a taken one is deleted): the count is read again from
    // the store once it is at the cap, so the next request is let in.
    let stored = home.state.store.scan::<Ceremony>(cf::CEREMONIES, &[], None, 1).unwrap();
    let mut batch = home.state.store.batch();
    batch.delete(cf::CEREMONIES, &stored[0].0);
    batch.commit().unwrap();
    people::begin_registration(&home.state, &last.token, "Ana").await.unwrap();
    let full = people::begin_registration(&home.state, &last.token, "Ana").await.unwrap_err();
    assert_eq!(full.code(), Code::Unavailable, "{full}");

    // Once they expire the cap frees at once, and the sweep deletes them.
    home.clock.advance(CEREMONY_MS + 1);
    let (later, _) = people::begin_registration(&home.state, &made.token, "Ana").await.unwrap();
    assert!(later > first, "ids sort by expiry");
    eventually("the sweep of lapsed passkey requests", || async { count::<Ceremony>(&home, cf::CEREMONIES) == 1 })
        .await;

    // An invitation lapses after 7 days and is swept too.
    assert_eq!(count::<Invitation>(&home, cf::INVITATIONS), 1 + tokens.len() + 1);
    home.clock.advance(people::INVITATION_MS);
    eventually("the sweep of lapsed invitations", || async { count::<Invitation>(&home, cf::INVITATIONS) == 0 }).await;
    assert_eq!(people::invitation(&home.state, &made.token).unwrap_err().code(), Code::NotFound);
    assert_eq!(count::<()>(&home, cf::ACCOUNT_INVITATIONS), 0, "the accounts' index is swept with them");
}

/// An owner sees the invitations waiting, gives one a new link (the old
/// one then opens nothing) or cancels it; an admin cannot, another
/// business's owner cannot even see it, and an account holds a bounded
/// number of them.
// rule: P1.1
#[tokio::test(flavor = "multi_thread")]
async fn an_owner_renews_or_cancels_an_invitation_and_no_one_else_can() {
    let home = Home::start().await;
    let (lumio, other) = (business(&home).await, business(&home).await);
    let person = |uuid: &str, role| signed(uuid, false, role);
    let (owner, admin, stranger) =
        (person(&lumio, PasskeyRole::Owner), person(&lumio, PasskeyRole::Admin), person(&other, PasskeyRole::Owner));
    let first = people::invite(&home.state, Some(&owner), &lumio, "dev@lumio.example", PasskeyRole::Developer);
    let first = first.await.unwrap();
    let open = people::open_invitations(&home.state, &lumio).unwrap();
    assert_eq!(
        open.iter().map(|i| (i.email.as_str(), i.role)).collect::<Vec<_>>(),
        [("dev@lumio.example", "developer")]
    );
    let id = open[0].invitation_id.clone();
    assert!(!id.contains(&first.token), "the list never shows the secret");
    assert!(people::open_invitations(&home.state, &other).unwrap().is_empty());

    // The attackers: an admin of the business, and another business's owner.
    let refused = people::cancel_invitation(&home.state, &admin, &id).await.unwrap_err();
    assert_eq!(refused.code(), Code::Forbidden, "{refused}");
    let unknown = people::renew_invitation(&home.state, &stranger, &id).await.unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound, "{unknown}");
    assert_eq!(people::cancel_invitation(&home.state, &stranger, &id).await.unwrap_err().code(), Code::NotFound);
    assert!(people::invitation(&home.state, &first.token).is_ok(), "the invitation is untouched");

    // A new link: the old one opens nothing, the new one does.
    let renewed = people::renew_invitation(&home.state, &owner, &id).await.unwrap();
    assert_eq!(people::invitation(&home.state, &first.token).unwrap_err().code(), Code::NotFound);
    assert_eq!(people::invitation(&home.state, &renewed.token).unwrap().0.email, "dev@lumio.example");
    let open = people::open_invitations(&home.state, &lumio).unwrap();
    assert_eq!(open.len(), 1);
    // Cancelled: its link opens nothing and it is no longer listed.
    people::cancel_invitation(&home.state, &owner, &open[0].invitation_id).await.unwrap();
    assert_eq!(people::invitation(&home.state, &renewed.token).unwrap_err().code(), Code::NotFound);
    assert!(people::open_invitations(&home.state, &lumio).unwrap().is_empty());
    assert_eq!(count::<()>(&home, cf::ACCOUNT_INVITATIONS), 0);

    // A bounded number wait at once.
    for n in 0..people::MAX_OPEN_INVITATIONS {
        let email = format!("p{n}@lumio.example");
        people::invite(&home.state, Some(&owner), &lumio, &email, PasskeyRole::Developer).await.unwrap();
    }
    let full = people::invite(&home.state, Some(&owner), &lumio, "more@lumio.example", PasskeyRole::Developer);
    let full = full.await.unwrap_err();
    assert_eq!(full.code(), Code::RequestInvalid, "{full}");
    assert!(full.to_string().contains("cancel one"), "{full}");
}

// rule: P1.8
#[tokio::test(flavor = "multi_thread")]
async fn only_an_owners_passkey_switches_to_hosted_signing() {
    use svc_core::custody::{CUSTODY_REQUEST_V1, Custody, CustodyRequest};
    use svc_node::service::portal::hosted;
    let home = Home::start().await;
    let uuid = business(&home).await;
    let person = |role| signed(&uuid, false, role);
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

// rule: R5.50
#[tokio::test(flavor = "multi_thread")]
async fn an_ai_companys_roles_and_its_own_groups_bound_what_its_people_do() {
    use svc_node::service::portal::{Signed, company};
    let home = Home::start().await;
    let made = |name: &str| {
        let home = &home;
        let name = name.to_owned();
        async move {
            let created = home.admin("POST", "/admin/companies", json!({"name": name, "verified": true})).await;
            created.body["ai_company_uuid"].as_str().unwrap().to_owned()
        }
    };
    let (far, near) = (made("Far AI").await, made("Near AI").await);
    let person = |uuid: &str, role| signed(uuid, true, role);
    let manager = person(&far, PasskeyRole::IntegrationManager);
    let group = company::add_group(&home.state, &manager, "bots").await.unwrap();
    // An integration manager neither accepts the Terms nor lists the keys.
    let terms = company::accept_terms(&home.state, &manager, 1, "sha256:0").await.unwrap_err();
    assert_eq!(terms.code(), Code::Forbidden, "{terms}");
    let listing = company::set_listing(&home.state, &manager, true).await.unwrap_err();
    assert_eq!(listing.code(), Code::Forbidden, "{listing}");
    // An owner accepts only the version in force, as read.
    let owner = person(&far, PasskeyRole::Owner);
    let none = company::accept_terms(&home.state, &owner, 1, "sha256:0").await.unwrap_err();
    assert_eq!(none.code(), Code::RequestInvalid, "no Terms are in force: {none}");
    // Another company's group and key are not found; a bad JWK is refused.
    let other = person(&near, PasskeyRole::Owner);
    let jwk =
        svc_core::keys::SigningKey::from_seed(svc_core::keys::Alg::Ed25519, &[7; 32]).unwrap().verifying_key().to_jwk();
    let jwk = serde_json::to_string(&jwk).unwrap();
    let foreign = company::register_key(&home.state, &other, &group.group_id, &jwk).await.unwrap_err();
    assert_eq!(foreign.code(), Code::NotFound, "{foreign}");
    let bad = company::register_key(&home.state, &manager, &group.group_id, "not json").await.unwrap_err();
    assert_eq!(bad.code(), Code::RequestInvalid, "{bad}");
    // Production: no Terms accepted, so the key is refused.
    let refused = company::register_key(&home.state, &manager, &group.group_id, &jwk).await.unwrap_err();
    assert!(refused.to_string().contains("accepted the Terms"), "{refused}");
    let empty = company::add_group(&home.state, &manager, "  ").await.unwrap_err();
    assert_eq!(empty.code(), Code::RequestInvalid, "{empty}");
    let business = Signed { company: false, role: PasskeyRole::Developer, ..manager.clone() };
    let wrong_role = company::add_group(&home.state, &business, "x").await.unwrap_err();
    assert_eq!(wrong_role.code(), Code::Forbidden, "a developer is a business's role: {wrong_role}");
}

// A portal path that names no page answers the portal's own HTML page (a
// person followed a link, not an API client), not the API's JSON problem;
// the portal has an icon, and an unknown path elsewhere stays JSON.
#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_portal_path_answers_an_html_page_and_the_portal_has_an_icon() {
    let home = Home::start().await;
    let unknown = home.get("/portal/no/such/page").await;
    assert_eq!(unknown.status, 404);
    assert!(unknown.headers["content-type"].to_str().unwrap().starts_with("text/html"), "{:?}", unknown.headers);
    let page = String::from_utf8_lossy(&unknown.bytes);
    assert!(page.contains("The portal has no page at /portal/no/such/page."), "{page}");
    assert!(page.contains("href=\"/portal/\""), "a way back: {page}");
    let icon = home.get("/portal/assets/favicon.svg").await;
    assert_eq!((icon.status, icon.headers["content-type"].to_str().unwrap()), (200, "image/svg+xml"));
    assert!(icon.bytes.starts_with(b"<svg"));
    let api = home.get("/v1/no-such-route").await;
    assert_eq!((api.status, api.body["code"].as_str()), (404, Some("not_found")));
}
