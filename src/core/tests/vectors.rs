//! Every case of the independent vector files in `testdata/` (copied from
//! the shared vectors), exercised against svc-core. The files are compiled
//! in, so a fresh clone tests itself and nothing here reads the filesystem.
//! RFC 9421 vectors are exercised by `http_sig`'s own tests.

use serde_json::Value;
use svc_core::dsse::{Envelope, pae};
use svc_core::keys::{Alg, Jwk, SigningKey, VerifyingKey};
use svc_core::merkle::{self, BatchTree, Hash};
use svc_core::{b64, canonical, digest, seal};

fn load(text: &str) -> Value {
    serde_json::from_str(text).expect("vector file is JSON")
}

fn hex32(v: &Value) -> Hash {
    hex::decode(v.as_str().unwrap()).unwrap().try_into().unwrap()
}

fn hashes(v: &Value) -> Vec<Hash> {
    v.as_array().unwrap().iter().map(hex32).collect()
}

fn rfc9421_test_key() -> SigningKey {
    let v = load(include_str!("../testdata/rfc9421.json"));
    let seed: [u8; 32] = b64::std_decode(v["test_key"]["seed_b64"].as_str().unwrap()).unwrap().try_into().unwrap();
    SigningKey::from_seed(Alg::Ed25519, &seed).unwrap()
}

// rule: P2.2.1
#[test]
fn rfc8785_every_case() {
    let v = load(include_str!("../testdata/rfc8785.json"));
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 8);
    for case in cases {
        let input: Value = serde_json::from_str(case["input"].as_str().unwrap()).unwrap();
        let canonical = canonical::canonicalize(&input);
        assert_eq!(std::str::from_utf8(&canonical).unwrap(), case["canonical_utf8"].as_str().unwrap());
        assert_eq!(digest::sha256_hex(&canonical), case["sha256_hex"].as_str().unwrap());
    }
}

#[test]
fn content_digest_every_case() {
    let v = load(include_str!("../testdata/content_digest.json"));
    assert_eq!(v["cases"].as_array().unwrap().len(), 3, "every case of the file runs");
    for case in v["cases"].as_array().unwrap() {
        let body = case["body_utf8"].as_str().unwrap().as_bytes();
        let expected = case["content_digest"].as_str().unwrap();
        assert_eq!(digest::content_digest(body), expected);
        assert!(digest::content_digest_matches(expected, body));
    }
}

// rule: R5.11, P2.6.15
#[test]
fn jwk_thumbprint_every_case() {
    let v = load(include_str!("../testdata/jwk_thumbprint.json"));
    assert_eq!(v["cases"].as_array().unwrap().len(), 2, "every case of the file runs");
    for case in v["cases"].as_array().unwrap() {
        let jwk: Jwk = serde_json::from_value(case["jwk"].clone()).unwrap();
        let expected = case["thumbprint"].as_str().unwrap();
        assert_eq!(jwk.thumbprint(), expected);
        assert_eq!(VerifyingKey::from_jwk(&jwk).unwrap().thumbprint(), expected);
    }
    let rfc = load(include_str!("../testdata/rfc9421.json"));
    assert_eq!(rfc9421_test_key().verifying_key().thumbprint(), rfc["test_key"]["jwk_thumbprint"].as_str().unwrap());
    let jwk: Jwk = serde_json::from_value(rfc["test_key"]["jwk"].clone()).unwrap();
    assert_eq!(rfc9421_test_key().verifying_key().to_jwk(), jwk);
}

// rule: P2.1.1, P2.1.2, P2.1.4
#[test]
fn dsse_pae_and_envelope() {
    let v = load(include_str!("../testdata/dsse.json"));
    let example = &v["pae_example"];
    let encoded = pae(example["payload_type"].as_str().unwrap(), example["payload_utf8"].as_str().unwrap().as_bytes());
    assert_eq!(String::from_utf8(encoded).unwrap(), example["pae_utf8"].as_str().unwrap());

    let envelope = Envelope::from_value(&v["envelope"]).unwrap();
    let key = rfc9421_test_key();
    let payload = envelope.verify(&envelope.payload_type, &key.verifying_key()).unwrap();
    // Ed25519 is deterministic: signing the same payload reproduces the vector.
    let resigned = Envelope::sign(&envelope.payload_type, &payload, &[&key]);
    assert_eq!(resigned, envelope);
    assert_eq!(serde_json::to_value(&resigned).unwrap(), v["envelope"]);

    // The payload is the canonical batch seal over record-0..record-12.
    let batch = seal::verify_batch_seal(&envelope, &key.verifying_key()).unwrap();
    let records: Vec<String> = (0..13).map(|i| format!("record-{i}")).collect();
    seal::check_batch_root(&batch, &records).unwrap();
    assert_eq!((batch.seq, batch.tree_size, batch.ai_policy_version), (7, 13, 3));
}

// rule: P4.2.56
#[test]
fn rfc6962_roots_inclusion_and_consistency() {
    let v = load(include_str!("../testdata/rfc6962.json"));
    assert_eq!(merkle::empty_root(), hex32(&v["empty_root_hex"]));
    let trees = v["trees"].as_array().unwrap();
    let (mut roots, mut paths, mut proofs) = (0, 0, 0);
    for tree in trees {
        let data: Vec<Vec<u8>> =
            tree["leaves_hex"].as_array().unwrap().iter().map(|h| hex::decode(h.as_str().unwrap()).unwrap()).collect();
        let leaves: Vec<Hash> = data.iter().map(|d| merkle::leaf_hash(d)).collect();
        for (i, root) in tree["roots_hex"].as_array().unwrap().iter().enumerate() {
            let root = hex32(root);
            assert_eq!(BatchTree::from_records(&data[..=i]).root(), root, "root of {} leaves", i + 1);
            assert_eq!(merkle::root_of(&leaves[..=i]), root);
            roots += 1;
        }
        let root_at = |size: u64| hex32(&tree["roots_hex"][size as usize - 1]);
        for case in tree["inclusion"].as_array().unwrap() {
            let (size, index) = (case["tree_size"].as_u64().unwrap(), case["leaf_index"].as_u64().unwrap());
            let path = hashes(&case["path_hex"]);
            let built = BatchTree::from_leaf_hashes(&leaves[..size as usize]);
            assert_eq!(built.inclusion_proof(index as usize).unwrap(), path, "path {index} of {size}");
            assert_eq!(merkle::inclusion_proof_of(&leaves[..size as usize], index as usize).unwrap(), path);
            assert!(merkle::verify_inclusion(&leaves[index as usize], index, size, &path, &root_at(size)));
            paths += 1;
        }
        for case in tree["consistency"].as_array().unwrap() {
            let (old, new) = (case["old_size"].as_u64().unwrap(), case["new_size"].as_u64().unwrap());
            let proof = hashes(&case["proof_hex"]);
            assert_eq!(
                merkle::consistency_proof(&leaves[..new as usize], old as usize).unwrap(),
                proof,
                "{old}->{new}"
            );
            assert!(merkle::verify_consistency(old, new, &proof, &root_at(old), &root_at(new)));
            if let Some((first, rest)) = proof.split_first() {
                let mut broken = vec![{
                    let mut h = *first;
                    h[31] ^= 1;
                    h
                }];
                broken.extend_from_slice(rest);
                assert!(!merkle::verify_consistency(old, new, &broken, &root_at(old), &root_at(new)));
            }
            proofs += 1;
        }
    }
    assert_eq!((roots, paths, proofs), (21, 127, 127));
}

// rule: P4.2.14
#[test]
fn signed_note_reference_example() {
    use svc_core::tlog;
    let v = load(include_str!("../testdata/signed_note.json"));
    let text = |name: &str| v[name].as_str().unwrap().to_owned();
    let encoded = text("signer_key").splitn(5, '+').nth(4).unwrap().to_owned();
    let raw = b64::std_decode(&encoded).unwrap();
    assert_eq!(raw[0], 0x01, "an Ed25519 signer key");
    let signer = SigningKey::from_seed(Alg::Ed25519, &raw[1..].try_into().unwrap()).unwrap();
    let public = signer.verifying_key();
    assert_eq!(tlog::verifier_key(&text("name"), &public).unwrap(), text("verifier_key"));
    // Ed25519 is deterministic: our signature is the reference's, byte for byte.
    assert_eq!(tlog::sign_note(&text("text"), &text("name"), &signer).unwrap(), text("note"));
    assert_eq!(tlog::open_note(&text("note"), &text("name"), &public), Ok(text("text").as_str()));
    let tampered = text("note").replacen("problem,", "problem;", 1);
    assert!(tlog::open_note(&tampered, &text("name"), &public).is_err());
}
