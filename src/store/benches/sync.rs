//! What an answer's synced writes wait for on this machine's disk (issue 51,
//! section 1, "no stalls"). A signed answer leaves only once its nonce
//! claim, receipt and usage event are on disk (RocksDB's write-ahead log,
//! synced), so the tail of a small synced write is a floor under the
//! answers' tail. Three runs, each write's latency counted from when it
//! fell due, and each run's writes gathered as the actors gather theirs
//! (every write due by the time the last one is done goes in the next):
//!
//! 1. `disk`: one file appended 300 bytes a write and `fdatasync`ed;
//! 2. `disk, flushing`: the same while another thread writes 4 MiB to a new
//!    file and syncs it every 410 ms, as the receipts' memtable is flushed
//!    at 2,000 answers a second;
//! 3. `store`: the store's synced writes to the nonce, receipt and usage
//!    tables, one thread each, a third of the rate each.
//!
//! Each prints p50, p99 and max, and the quarter seconds whose p99 is over
//! 20 ms. `cargo bench -p svc-store --bench sync -- --rate 6000 --seconds 20`
//! (6,000 writes a second: 2,000 answers of three writes).

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use svc_store::{Store, Table};

const NONCES: Table<Vec<u8>> = Table::new("nonces", "key id ‖ nonce");
const RECEIPTS: Table<Vec<u8>> = Table::new("receipts", "be(seq)");
const USAGE: Table<Vec<u8>> = Table::new("usage", "key id ‖ nonce");

fn arg(name: &str, default: f64) -> f64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Each write's (seconds into the run it fell due, milliseconds it waited).
type Waits = Vec<(f64, f64)>;

/// Writes falling due at `rate` a second for `length`; `write(first, count)`
/// writes and syncs the `count` due from the `first`, gathered.
fn paced(rate: f64, length: Duration, mut write: impl FnMut(u64, u64)) -> Waits {
    let start = Instant::now();
    let mut waits = Vec::new();
    let mut next = 0u64;
    while start.elapsed() < length {
        let due = (start.elapsed().as_secs_f64() * rate) as u64;
        if due == next {
            std::thread::sleep(Duration::from_micros(50));
            continue;
        }
        write(next, due - next);
        let done = start.elapsed().as_secs_f64();
        waits.extend((next..due).map(|n| {
            let at = n as f64 / rate;
            (at, (done - at) * 1e3)
        }));
        next = due;
    }
    waits
}

/// A file appended and synced, with 4 MiB flushes beside it when asked.
fn disk(dir: &Path, rate: f64, length: Duration, flushing: bool) -> Waits {
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        if flushing {
            scope.spawn(|| {
                let chunk = vec![7u8; 4 << 20];
                for n in 0.. {
                    let path = dir.join(format!("flush-{n}"));
                    let mut file = std::fs::File::create(&path).unwrap();
                    file.write_all(&chunk).unwrap();
                    file.sync_all().unwrap();
                    let _ = std::fs::remove_file(dir.join(format!("flush-{}", n.max(1) - 1)));
                    for _ in 0..41 {
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
            });
        }
        let mut log = OpenOptions::new().create(true).append(true).open(dir.join("log")).unwrap();
        let waits = paced(rate, length, |_, count| {
            log.write_all(&vec![0u8; 300 * count as usize]).unwrap();
            log.sync_data().unwrap();
        });
        stop.store(true, Ordering::Relaxed);
        waits
    })
}

/// The store's synced writes to the three tables an answer writes, one
/// thread each, with values of about their sizes.
fn store(dir: &Path, rate: f64, length: Duration) -> Waits {
    let store = Store::open(dir).unwrap();
    let tables = [(NONCES, 40), (RECEIPTS, 1_500), (USAGE, 200)];
    let mut waits: Waits = std::thread::scope(|scope| {
        let threads: Vec<_> = tables
            .iter()
            .map(|(table, size)| {
                let store = &store;
                scope.spawn(move || {
                    paced(rate / 3.0, length, |first, count| {
                        let mut batch = store.batch();
                        for n in first..first + count {
                            batch.put(*table, &n.to_be_bytes(), &vec![7u8; *size]);
                        }
                        batch.commit().unwrap();
                    })
                })
            })
            .collect();
        threads.into_iter().flat_map(|t| t.join().unwrap()).collect()
    });
    waits.sort_by(|a, b| a.0.total_cmp(&b.0));
    waits
}

/// The value at `q` (0 to 1) of sorted `values`.
fn quantile(values: &[f64], q: f64) -> f64 {
    values[((values.len() - 1) as f64 * q).round() as usize]
}

fn report(name: &str, waits: &Waits, length: Duration) {
    let mut all: Vec<f64> = waits.iter().map(|w| w.1).collect();
    all.sort_by(f64::total_cmp);
    let slices = (length.as_secs_f64() * 4.0) as usize;
    let mut over = Vec::new();
    for slice in 0..slices {
        let mut within: Vec<f64> = waits.iter().filter(|w| (w.0 * 4.0) as usize == slice).map(|w| w.1).collect();
        within.sort_by(f64::total_cmp);
        if !within.is_empty() && quantile(&within, 0.99) > 20.0 {
            over.push(format!("{:.2} s: p99 {:.1} ms", slice as f64 / 4.0, quantile(&within, 0.99)));
        }
    }
    println!(
        "sync/{name:<16} {:>7} writes  p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>6.1} ms  quarter seconds over 20 ms: {} of {slices}",
        all.len(),
        quantile(&all, 0.5),
        quantile(&all, 0.99),
        all[all.len() - 1],
        over.len()
    );
    for slice in over {
        eprintln!("  {slice}");
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing
    // and expects a quick run, so the bench runs only when asked.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let rate = arg("--rate", 6_000.0);
    let length = Duration::from_secs_f64(arg("--seconds", 20.0));
    let runs = ["disk", "disk, flushing", "store"];
    for name in runs {
        // Where the search bench's node keeps its store: the system's
        // temporary directory.
        let dir = tempfile::tempdir().unwrap();
        let waits = match name {
            "disk" => disk(dir.path(), rate, length, false),
            "disk, flushing" => disk(dir.path(), rate, length, true),
            _ => store(dir.path(), rate, length),
        };
        report(name, &waits, length);
    }
}
