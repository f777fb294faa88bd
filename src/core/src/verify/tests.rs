//! Every reason a seal, a row or AI policy bits can be refused for, each
//! reached from a valid case by one change.

use std::collections::HashMap;

use super::*;
use crate::dsse::payload_type;
use crate::keys::{Alg, SigningKey};
use crate::merkle::{BatchTree, root_form};
use crate::seal::{BatchMembership, BatchSealV2, CertificateStatus, SealV2};

const BUSINESS: &str = "6f1d2c3b-4a59-4e68-9d7c-8b9a0f1e2d3c";
const RP: &str = "portal.svc.example";
const ORIGIN: &str = "https://portal.svc.example";
const CERT: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
/// 2026-11-22T10:00:00Z
const T: UnixMs = UnixMs(1_795_341_600_000);

fn integration() -> SigningKey {
    SigningKey::from_seed(Alg::Ed25519, &[3; 32]).unwrap()
}

fn passkey() -> SigningKey {
    SigningKey::from_seed(Alg::Es256, &[4; 32]).unwrap()
}

fn projection_key() -> SigningKey {
    SigningKey::from_seed(Alg::Ed25519, &[5; 32]).unwrap()
}

fn product(sku: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schema": "service/products/1",
        "language": "fr",
        "business_product_id": sku,
        "product_name": format!("Lampe {sku}"),
        "countries": ["FR"],
        "brand": "Lumio",
        "prices": [{"country": "FR", "currency": "EUR", "amount": "19.90"}],
        "on_sale": false,
        "availability": "in_stock",
        "product_url": format!("https://shop.example.com/p/{sku}"),
    }))
    .unwrap()
}

struct TestRegister {
    keys: HashMap<String, RegisteredKey>,
    certificates: Vec<Issuance>,
    ai_policy_version: u64,
    mandate: bool,
    logged: bool,
}

impl Default for TestRegister {
    fn default() -> Self {
        let validity = KeyValidity {
            valid_from: T.minus(86_400_000),
            valid_until: None,
            revocation_effective_from: None,
            compromised_at: None,
        };
        let key = |k: &SigningKey, purpose: &str| RegisteredKey {
            business_uuid: BUSINESS.into(),
            public: k.verifying_key(),
            purpose: purpose.into(),
            webauthn: purpose == "sealing",
            validity: validity.clone(),
        };
        let keys = HashMap::from([
            (integration().verifying_key().thumbprint(), key(&integration(), "integration")),
            (passkey().verifying_key().thumbprint(), key(&passkey(), "sealing")),
        ]);
        TestRegister {
            keys,
            certificates: vec![Issuance {
                cert_id: CERT.into(),
                status: CertificateStatus::Active,
                status_effective_from: T.minus(86_400_000),
                issued_at: T.minus(86_400_000),
            }],
            ai_policy_version: 0,
            mandate: true,
            logged: true,
        }
    }
}

impl Register for TestRegister {
    fn business_key(&self, key_id: &str) -> Option<RegisteredKey> {
        self.keys.get(key_id).cloned()
    }
    fn certificates(&self, _: &str) -> Vec<Issuance> {
        self.certificates.clone()
    }
    fn ai_policy_version_at(&self, _: &str, _: UnixMs) -> u64 {
        self.ai_policy_version
    }
    fn mandate_covers(&self, _: &str, _: UnixMs, record_type: &str, countries: &[String]) -> bool {
        self.mandate && record_type == "products" && countries.iter().all(|c| c == "FR")
    }
    fn key_added_logged(&self, _: &str, _: &RegisteredKey) -> bool {
        self.logged
    }
    fn service_key(&self, purpose: Purpose, kid: &str, _: UnixMs) -> Option<VerifyingKey> {
        let key = projection_key().verifying_key();
        (purpose == Purpose::Projection && key.thumbprint() == kid).then_some(key)
    }
    fn passkey_binding(&self) -> (&str, &str) {
        (RP, ORIGIN)
    }
}

/// A batch seal over three products, and the first record's membership.
fn batch(edit: impl FnOnce(&mut BatchSealV2)) -> (Vec<u8>, ServedSeal) {
    let records = vec![product("a"), product("b"), product("c")];
    let tree = BatchTree::from_records(&records);
    let mut payload = BatchSealV2 {
        v: 2,
        key_id: integration().verifying_key().thumbprint(),
        cert_id: CERT.into(),
        root: root_form(&tree.root()),
        tree_size: 3,
        seq: 1,
        sealed_at: T.to_rfc3339_millis(),
        record_type: "products".into(),
        ai_policy_version: 0,
    };
    edit(&mut payload);
    let bytes = crate::canonical::to_signed_bytes(&payload).unwrap();
    let envelope = Envelope::sign(&payload_type("batch-seal.v2"), &bytes, &[&integration()]);
    let membership = BatchMembership::new(envelope, 0, &tree.inclusion_proof(0).unwrap());
    (records[0].clone(), ServedSeal::Batch(membership))
}

/// A Path B record seal by the owner's passkey.
fn passkey_seal(record: &[u8], edit: impl FnOnce(&mut SealV2)) -> ServedSeal {
    let mut payload = SealV2 {
        v: 2,
        key_id: passkey().verifying_key().thumbprint(),
        cert_id: CERT.into(),
        hash: sha256_prefixed(record),
        sealed_at: T.to_rfc3339_millis(),
        record_type: "products".into(),
        ai_policy_version: 0,
        next_ai_policy_version: None,
    };
    edit(&mut payload);
    let bytes = crate::canonical::to_signed_bytes(&payload).unwrap();
    let envelope =
        crate::publish::webauthn::seal_with_passkey(&passkey(), RP, ORIGIN, &payload_type("seal.v2"), &bytes, 1)
            .unwrap();
    ServedSeal::Record(envelope)
}

fn judge(record: &[u8], seal: &ServedSeal, register: &TestRegister, events: KeyEvents) -> SealVerdict {
    judge_seal(&Submitted { record, seal, sidecar: None, key_events: events }, register)
}

fn reason(record: &[u8], seal: &ServedSeal, register: &TestRegister) -> Option<Reason> {
    judge(record, seal, register, KeyEvents::Warn).reason
}

// rule: P4.2.27, P4.2.28, P4.2.33, P4.2.35, P4.2.36, P4.2.37, P4.2.38, P4.2.41
#[test]
fn a_valid_batch_record_passes_every_check() {
    let (record, seal) = batch(|_| {});
    let verdict = judge(&record, &seal, &TestRegister::default(), KeyEvents::Warn);
    assert!(verdict.valid(), "{:?}", verdict.reason);
    let value = verdict.to_value();
    assert_eq!(value["path"], "A");
    assert_eq!(value["business_uuid"], BUSINESS);
    assert_eq!(value["format"], 2);
    let checks = &value["checks"];
    for (name, expected) in [
        ("signature", "ok"),
        ("hash", "not_applicable"),
        ("inclusion", "ok"),
        ("schema", "ok"),
        ("key_validity", "ok"),
        ("certificate", "ok"),
        ("ai_policy", "ok"),
        ("scope", "ok"),
        ("key_event", "ok"),
    ] {
        assert_eq!(checks[name], expected, "{name}");
    }
    let path_b = passkey_seal(&record, |_| {});
    let verdict = judge(&record, &path_b, &TestRegister::default(), KeyEvents::Warn);
    assert!(verdict.valid(), "{:?}", verdict.reason);
    assert_eq!((verdict.path, verdict.to_value()["checks"]["hash"].clone()), ("B", json!("ok")));
}

// rule: P1.8, P4.2.27
#[test]
fn a_hosted_key_seals_on_path_b_without_webauthn_and_a_passkey_must_use_it() {
    // The service's key for the business signs the seal plainly (no
    // authenticator output): Path B, judged against that key's own algorithm.
    let hosted = SigningKey::from_seed(Alg::Ed25519, &[6; 32]).unwrap();
    let mut register = TestRegister::default();
    let mut key = register.keys[&passkey().verifying_key().thumbprint()].clone();
    key.public = hosted.verifying_key();
    key.webauthn = false;
    register.keys.insert(hosted.verifying_key().thumbprint(), key);
    let record = product("a");
    let payload = SealV2 {
        v: 2,
        key_id: hosted.verifying_key().thumbprint(),
        cert_id: CERT.into(),
        hash: sha256_prefixed(&record),
        sealed_at: T.to_rfc3339_millis(),
        record_type: "products".into(),
        ai_policy_version: 0,
        next_ai_policy_version: None,
    };
    let bytes = crate::canonical::to_signed_bytes(&payload).unwrap();
    let plain = ServedSeal::Record(Envelope::sign(&payload_type("seal.v2"), &bytes, &[&hosted]));
    let verdict = judge(&record, &plain, &register, KeyEvents::Warn);
    assert!(verdict.valid(), "{:?}", verdict.reason);
    assert_eq!(verdict.path, "B");
    // A passkey's seal without its authenticator output is refused.
    let bare = Envelope::sign(&payload_type("seal.v2"), &bytes, &[&hosted]);
    let mut as_passkey = register.keys[&hosted.verifying_key().thumbprint()].clone();
    as_passkey.webauthn = true;
    register.keys.insert(hosted.verifying_key().thumbprint(), as_passkey);
    assert!(!judge(&record, &ServedSeal::Record(bare), &register, KeyEvents::Warn).valid());
}

// rule: P4.2.42, P4.2.43, P7.13
#[test]
fn a_missing_key_event_warns_unless_required() {
    let (record, seal) = batch(|_| {});
    let register = TestRegister { logged: false, ..TestRegister::default() };
    let warned = judge(&record, &seal, &register, KeyEvents::Warn);
    assert!(warned.valid());
    assert_eq!(warned.to_value()["checks"]["key_event"], "missing");
    assert_eq!(warned.warnings, ["key_event_missing"]);
    let required = judge(&record, &seal, &register, KeyEvents::Require);
    assert_eq!(required.reason, Some(Reason::KeyEventMissing));
    assert_eq!(required.to_value()["valid"], false);
}

// rule: P4.2.34, P4.2.57, P3.6, P3.7, P3.8, P3.37, P3.38, P3.39, P2.2.5
#[test]
fn each_seal_reason_is_reached() {
    let (record, seal) = batch(|_| {});
    let base = TestRegister::default;
    // The first failing check names the reason; the rest are not checked.
    let unknown = TestRegister { keys: HashMap::new(), ..base() };
    let verdict = judge(&record, &seal, &unknown, KeyEvents::Warn);
    assert_eq!(verdict.reason, Some(Reason::KeyUnknown));
    assert_eq!(verdict.to_value()["checks"]["signature"], "failed");
    assert_eq!(verdict.to_value()["checks"]["scope"], "not_checked");

    let ServedSeal::Batch(membership) = &seal else { unreachable!() };
    let mut forged = membership.clone();
    forged.batch_seal.signatures[0].sig = crate::b64::std_encode(&[0u8; 64]);
    assert_eq!(reason(&record, &ServedSeal::Batch(forged), &base()), Some(Reason::SignatureInvalid));
    let mut empty = membership.clone();
    empty.batch_seal.signatures.clear();
    assert_eq!(reason(&record, &ServedSeal::Batch(empty), &base()), Some(Reason::EnvelopeMalformed));
    let mut retyped = membership.clone();
    retyped.batch_seal.payload_type = payload_type("sidecar.v2");
    assert_eq!(reason(&record, &ServedSeal::Batch(retyped), &base()), Some(Reason::PayloadTypeMismatch));
    let mut future = membership.clone();
    future.batch_seal.payload_type = payload_type("batch-seal.v3");
    assert_eq!(reason(&record, &ServedSeal::Batch(future), &base()), Some(Reason::VersionUnknown));
    let mut garbled = membership.clone();
    garbled.batch_seal.payload = crate::b64::std_encode(b"{\"v\":2}");
    assert_eq!(reason(&record, &ServedSeal::Batch(garbled), &base()), Some(Reason::PayloadMalformed));

    // A batch seal made by a passkey is not a batch seal of this register.
    let by_passkey = {
        let mut payload: Value = serde_json::from_slice(&membership.batch_seal.payload_bytes().unwrap()).unwrap();
        payload["key_id"] = json!(passkey().verifying_key().thumbprint());
        let bytes = crate::canonical::canonicalize(&payload);
        let envelope = Envelope::sign(&payload_type("batch-seal.v2"), &bytes, &[&passkey()]);
        ServedSeal::Batch(BatchMembership { batch_seal: envelope, ..membership.clone() })
    };
    assert_eq!(reason(&record, &by_passkey, &base()), Some(Reason::KeyMismatch));

    assert_eq!(reason(&product("z"), &seal, &base()), Some(Reason::InclusionInvalid));
    let path_b = passkey_seal(&record, |_| {});
    assert_eq!(reason(&product("z"), &path_b, &base()), Some(Reason::HashMismatch));
    let (record_e, as_events) = batch(|s| s.record_type = "events".into());
    assert_eq!(reason(&record_e, &as_events, &base()), Some(Reason::RecordTypeMismatch));

    let shifted = |edit: fn(&mut KeyValidity)| {
        let mut register = base();
        for key in register.keys.values_mut() {
            edit(&mut key.validity);
        }
        register
    };
    assert_eq!(reason(&record, &seal, &shifted(|v| v.valid_from = T.plus(1))), Some(Reason::KeyNotValid));
    assert_eq!(
        reason(&record, &seal, &shifted(|v| v.revocation_effective_from = Some(T))),
        Some(Reason::KeyNotValid),
        "revoked from the moment it was sealed"
    );
    assert_eq!(reason(&record, &seal, &shifted(|v| v.compromised_at = Some(T.minus(1)))), Some(Reason::KeyCompromised));
    assert_eq!(reason(&record, &seal, &shifted(|v| v.compromised_at = Some(T))), None, "sealed before the compromise");

    let (record_c, other_cert) = batch(|s| s.cert_id = format!("sha256:{}", "2".repeat(64)));
    assert_eq!(reason(&record_c, &other_cert, &base()), Some(Reason::CertificateUnknown));
    let status = |status: CertificateStatus, from: UnixMs| {
        let mut register = base();
        register.certificates.push(Issuance {
            cert_id: format!("sha256:{}", "3".repeat(64)),
            status,
            status_effective_from: from,
            issued_at: T.plus(1_000),
        });
        register
    };
    assert_eq!(
        reason(&record, &seal, &status(CertificateStatus::Withdrawn, T.minus(1))),
        Some(Reason::CertificateWithdrawn)
    );
    assert_eq!(reason(&record, &seal, &status(CertificateStatus::Withdrawn, T.plus(1))), None, "earlier seals stand");
    assert_eq!(reason(&record, &seal, &status(CertificateStatus::Suspended, T)), Some(Reason::CertificateNotInForce));

    let policy = TestRegister { ai_policy_version: 1, ..base() };
    assert_eq!(reason(&record, &seal, &policy), Some(Reason::AiPolicyVersionMismatch));
    let no_mandate = TestRegister { mandate: false, ..base() };
    assert_eq!(reason(&record, &seal, &no_mandate), Some(Reason::OutOfScope));
    assert_eq!(reason(&record, &path_b, &no_mandate), None, "a passkey seal is the person's own grant");
}

// rule: P4.2.30, P4.2.51, P2.6.43
#[test]
fn a_row_is_checked_by_its_signature_and_by_re_running_the_projection() {
    let record_bytes = product("a");
    let record =
        records::validate(&record_bytes, RecordType::Products, &ValidationContext::new(vec![], vec![], None)).unwrap();
    let ctx = ProjectionContext {
        record_id: record.record_id(BUSINESS),
        business_uuid: BUSINESS.into(),
        business_name: "Lumio".into(),
        published_at: T,
        ad: None,
    };
    let row = projection::project(&record, &ctx, &projection_key());
    let register = TestRegister::default();
    let judged = judge_row(&row, Some(&record), &register);
    assert_eq!((judged["row_signature"].clone(), judged["rerun"].clone()), (json!("ok"), json!("matches")));
    let other =
        records::validate(&product("b"), RecordType::Products, &ValidationContext::new(vec![], vec![], None)).unwrap();
    assert_eq!(judge_row(&row, Some(&other), &register)["rerun"], "differs");
    let mut tampered = row.clone();
    tampered.insert("product_name".into(), json!("Autre"));
    assert_eq!(judge_row(&tampered, Some(&record), &register)["reason"], "row_signature_invalid");
    let mut unknown = row.clone();
    unknown.insert("adl_proj".into(), json!(format!("sha256:{}", "0".repeat(64))));
    assert_eq!(judge_row(&unknown, Some(&record), &register)["reason"], "projection_unknown");
}

// rule: P4.2.25, P4.2.31
#[test]
fn bits_are_compared_with_those_derived_from_the_sealed_policy() {
    let policy = ai_policy::record_bytes(&["answer"], &["quote"], &[]);
    let sealed = passkey_seal(&policy, |s| {
        s.record_type = "ai_policy".into();
        s.next_ai_policy_version = Some(1);
    });
    let envelope = sealed.envelope().clone();
    let derived = ai_policy::parse_record(&policy).unwrap().bits(1);
    let register = TestRegister::default();
    let ok = judge_bits(&derived, &policy, &envelope, Some(BUSINESS), &register);
    assert_eq!(ok["matches"], true, "{ok}");
    let withheld = judge_bits(&derived.with_purchase_withheld(), &policy, &envelope, Some(BUSINESS), &register);
    assert_eq!(withheld["matches"], true);
    let other = AiPolicyBits { use_mask: derived.use_mask ^ 1, ..derived };
    let refused = judge_bits(&other, &policy, &envelope, Some(BUSINESS), &register);
    assert_eq!(
        (refused["matches"].clone(), refused["reason"].clone()),
        (json!(false), json!("ai_policy_bits_mismatch"))
    );
    let elsewhere = judge_bits(&derived, &policy, &envelope, Some("another"), &register);
    assert_eq!(elsewhere["reason"], "key_mismatch");
}
