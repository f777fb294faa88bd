//! What a signed search reads once per answer to key its serve-time
//! caches: the replication log's last key, sought in RocksDB, against the
//! count of the log's writes the store holds in memory (`writes_to`).
//! The log holds 100,000 entries of 1 KiB, as at a region after seeding.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use svc_store::{Store, Table, cf};

const LOG: Table<Vec<u8>> = Table::new(cf::families::REPLOG, "be(seq)");

fn replication_head(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for chunk in (1..=100_000u64).collect::<Vec<_>>().chunks(1_000) {
        let mut batch = store.batch();
        for seq in chunk {
            batch.put(LOG, &seq.to_be_bytes(), &vec![7u8; 1024]);
        }
        batch.commit().unwrap();
    }
    let mut group = c.benchmark_group("replication head per answer");
    group.bench_function("seek to the log's last key", |b| b.iter(|| black_box(store.last_key(LOG).unwrap())));
    group.bench_function("count of the log's writes in memory", |b| b.iter(|| black_box(store.writes_to(LOG))));
    group.finish();
}

criterion_group!(benches, replication_head);
criterion_main!(benches);
