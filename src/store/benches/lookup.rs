//! What a billed answer's usage lookup costs: billing asks whether the
//! answer's (key id, nonce) was counted before, and for a new answer it
//! never was. The usage table keeps a bloom filter (`cf_options`); the
//! idempotency table, given the same keys and values here, keeps none. Both
//! hold 400,000 entries of 200 bytes, flushed to files as a serving
//! region's are, and each lookup asks for a key neither holds.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use svc_store::{Store, Table};

const WITH_FILTER: Table<Vec<u8>> = Table::new("usage", "key id ‖ nonce");
const WITHOUT: Table<Vec<u8>> = Table::new("idempotency", "key id ‖ nonce");

fn key(key_id: u64, nonce: u64) -> Vec<u8> {
    format!("ai-key-{key_id:04}\0nonce-{nonce:016x}").into_bytes()
}

fn usage_lookup(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for chunk in (0..400_000u64).collect::<Vec<_>>().chunks(2_000) {
        let mut batch = store.batch();
        for n in chunk {
            for table in [WITH_FILTER, WITHOUT] {
                batch.put(table, &key(n % 32, *n), &vec![7u8; 200]);
            }
        }
        batch.commit().unwrap();
    }
    // Reopened: what was written is in files, not in memtables.
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    let mut group = c.benchmark_group("a new answer's usage lookup");
    let mut n = 1_000_000u64;
    for (name, table) in [("with a bloom filter (usage)", WITH_FILTER), ("without (same keys)", WITHOUT)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                n += 1;
                black_box(store.contains(table, &key(n % 32, n)).unwrap())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, usage_lookup);
criterion_main!(benches);
