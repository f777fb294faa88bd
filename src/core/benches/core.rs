//! Micro-benchmarks of the hot signed formats:
//! RFC 9421 verification of a search request, receipt signing, a row
//! projection with its signature, and a 10,000-leaf batch Merkle root.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use svc_core::http_sig::{self, Policy, Request};
use svc_core::ids::RecordType;
use svc_core::keys::{Alg, SigningKey};
use svc_core::merkle::BatchTree;
use svc_core::projection::{self, ProjectionContext};
use svc_core::receipt::{self, Receipt, ReceiptRow};
use svc_core::records::{self, ValidationContext};
use svc_core::time::UnixMs;

const NOW: i64 = 1_790_000_010;
const BODY: &[u8] = br#"{"collection":"products","q":"espresso machine","filter":{"all":[{"country":"FR"},{"availability":{"in":["in_stock","preorder"]}}]},"sort_by":"_text_match:desc,price_amount:asc","limit":50}"#;

fn search_request_verification(c: &mut Criterion) {
    let key = SigningKey::from_seed(Alg::Ed25519, &[7; 32]).unwrap();
    let public = key.verifying_key();
    let nonce = http_sig::nonce_from_bytes(&[9; 32]);
    let signed = http_sig::sign(
        "POST",
        "api.example",
        "/v1/search",
        None,
        BODY,
        &key,
        NOW - 5,
        NOW + 55,
        &nonce,
        "svc-retrieval",
    )
    .unwrap();
    let pairs = signed.pairs();
    let req = Request {
        method: "POST",
        authority: "api.example",
        path: "/v1/search",
        query: None,
        headers: &pairs,
        body: BODY,
    };
    let policy = Policy { authority: "api.example", tag: "svc-retrieval", now_secs: NOW };
    c.bench_function("rfc9421_verify_search_request_ed25519", |b| {
        b.iter(|| {
            let verified =
                http_sig::verify(black_box(&req), &policy, |_| Some(public.clone()), |_, _, _| true).unwrap();
            black_box(verified);
        })
    });
}

fn receipt_signing(c: &mut Criterion) {
    let signer = receipt::ReceiptSigner::new(SigningKey::from_seed(Alg::Ed25519, &[21; 32]).unwrap());
    let rows: Vec<ReceiptRow> = (0..50)
        .map(|i| ReceiptRow {
            id: format!("svc_{:026}", i).replace('0', "a").replace('1', "b"),
            adl_origin: Some(format!("sha256:{}", "ab".repeat(32))),
            row_sig: Some("c2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJl".into()),
            sha256: None,
            ai_policy_version: Some(3),
            sponsored: None,
        })
        .collect();
    let template = Receipt {
        retrieval_id: "r_aaaaaaaaaaaaaaaaaaaaaaaaaa".into(),
        served_at: "2026-11-01T12:00:00.000Z".into(),
        region: "eu-west".into(),
        request_hash: receipt::request_hash("base"),
        country: Some("FR".into()),
        rows,
        key_id: String::new(),
        caller_key_id: Some("caller".into()),
        sandbox: false,
    };
    c.bench_function("receipt_sign_50_rows", |b| {
        b.iter(|| black_box(receipt::make(template.clone(), &signer).unwrap()))
    });
}

const PRODUCT: &[u8] = br#"{"schema":"service/products/1","language":"fr","business_product_id":"SKU-1","product_name":"Lampe de bureau articulee","countries":["FR","DE","BE"],"vertical":"home","category":"Lighting","channel":"online","brand":"Lumio","tags":["desk","led","lamp"],"short_description":"Une lampe de bureau LED a bras articule.","prices":[{"country":"FR","currency":"EUR","amount":"49.90"},{"country":"DE","currency":"EUR","amount":"51.00"},{"country":"BE","currency":"EUR","amount":"49.90"}],"on_sale":false,"availability":"in_stock","product_url":"https://shop.example.com/p/1"}"#;

fn row_projection(c: &mut Criterion) {
    let key = SigningKey::from_seed(Alg::Ed25519, &[11; 32]).unwrap();
    let vctx = ValidationContext::new(vec!["Lumio".into()], Vec::new(), None);
    let record = records::validate(PRODUCT, RecordType::Products, &vctx).unwrap();
    let ctx = ProjectionContext {
        record_id: record.record_id("6f1d2c3b-4a59-4e68-9d7c-8b9a0f1e2d3c"),
        business_uuid: "6f1d2c3b-4a59-4e68-9d7c-8b9a0f1e2d3c".into(),
        business_name: "Lumio SARL".into(),
        published_at: UnixMs(1_793_534_400_000),
        ad: None,
    };
    c.bench_function("product_row_projection_and_signature", |b| {
        b.iter(|| black_box(projection::project(black_box(&record), &ctx, &key)))
    });
    c.bench_function("product_record_validation", |b| {
        b.iter(|| black_box(records::validate(black_box(PRODUCT), RecordType::Products, &vctx).is_ok()))
    });
}

fn merkle_root(c: &mut Criterion) {
    let records: Vec<Vec<u8>> =
        (0..10_000).map(|i| format!("{{\"record\":{i},\"pad\":\"{}\"}}", "x".repeat(400)).into_bytes()).collect();
    c.bench_function("batch_merkle_root_10000_leaves", |b| {
        b.iter(|| black_box(BatchTree::from_records(black_box(&records)).root()))
    });
}

criterion_group!(benches, search_request_verification, receipt_signing, row_projection, merkle_root);
criterion_main!(benches);
