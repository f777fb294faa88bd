//! `svc-core` stays pure: no runtime, storage, search, HTTP or actor crate in
//! its dependency graph, and no code of its own that reads the clock, the
//! filesystem or the network.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const FORBIDDEN_CRATES: &[&str] = &[
    "tokio",
    "rocksdb",
    "librocksdb-sys",
    "tantivy",
    "axum",
    "ractor",
    "hyper",
    "hyper-util",
    "reqwest",
    "ureq",
    "isahc",
    "surf",
    "hickory-resolver",
    "mio",
    "curl",
    "minreq",
    "attohttpc",
    "awc",
    "socket2",
];

const FORBIDDEN_CODE: &[&str] = &[
    "SystemTime",
    "Instant::now",
    "now_utc",
    "now_local",
    "Utc::now",
    "Local::now",
    "UtcDateTime::now",
    "OffsetDateTime::now",
    "std::fs",
    "std::{fs",
    "fs::read",
    "fs::write",
    "File::open",
    "File::create",
    "read_to_string(",
    "std::io::stdin",
    // `std::net` address types (IpAddr for CIDR allow-lists) are pure values;
    // sockets and name resolution are not.
    "TcpStream",
    "TcpListener",
    "UdpSocket",
    "ToSocketAddrs",
    "to_socket_addrs",
    "std::env",
    "getrandom",
    "thread_rng",
    "OsRng",
    "std::process",
    "include_bytes!(\"/",
    "include_str!(\"/",
];

/// Package name -> names of its dependencies, from Cargo.lock.
fn lock_graph(root: &Path) -> BTreeMap<String, Vec<String>> {
    let lock: toml::Table = std::fs::read_to_string(root.join("Cargo.lock")).unwrap().parse().unwrap();
    let mut graph: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for package in lock["package"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap().to_owned();
        let deps = package
            .get("dependencies")
            .and_then(|d| d.as_array())
            .map(|d| d.iter().map(|s| s.as_str().unwrap().split(' ').next().unwrap().to_owned()).collect())
            .unwrap_or_default();
        graph.entry(name).or_default().extend::<Vec<String>>(deps);
    }
    graph
}

// Cargo.lock lists dev-dependencies too, so the walk starts from the normal
// dependencies named in svc-core's manifest: what ships must be pure.
#[test]
fn core_dependency_graph_has_no_io_crates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest: toml::Table = std::fs::read_to_string(root.join("src/core/Cargo.toml")).unwrap().parse().unwrap();
    let direct: Vec<String> = manifest["dependencies"].as_table().unwrap().keys().cloned().collect();
    let graph = lock_graph(root);
    let mut seen = BTreeSet::new();
    let mut stack = direct;
    while let Some(name) = stack.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        assert!(!FORBIDDEN_CRATES.contains(&name.as_str()), "svc-core depends on {name}");
        stack.extend(graph.get(&name).cloned().unwrap_or_default());
    }
    assert!(seen.contains("ed25519-dalek"), "the walk found the crypto crates: {seen:?}");
}

#[test]
fn core_code_reads_no_clock_files_or_network() {
    let root = crate::common::sources::root().join("src/core");
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches"] {
        if root.join(dir).exists() {
            files.extend(crate::common::sources::rust_files(&root.join(dir)));
        }
    }
    assert!(files.len() > 10, "found the core sources");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for pattern in FORBIDDEN_CODE {
            // Benchmarks measure time, which is their job; nothing else may.
            if file.to_string_lossy().contains("benches") && *pattern == "Instant::now" {
                continue;
            }
            assert!(!text.contains(pattern), "{} uses {pattern}", file.display());
        }
    }
}
