//! The fuzz seed corpus and the seeded simulation, as run from the
//! workspace (svc-core itself touches no file and reads no environment).

use std::path::Path;

// The seed corpus committed in fuzz/seeds is exactly what the entry points
// accept today: each seed file equals one of `svc_core::fuzzing::seeds()`,
// under its target's folder. `SVC_FUZZ_SEEDS=1` writes them afresh.
#[test]
fn the_committed_fuzz_seeds_are_the_ones_the_targets_accept() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    let seeds = svc_core::fuzzing::seeds();
    if std::env::var_os("SVC_FUZZ_SEEDS").is_some() {
        for (i, (name, bytes)) in seeds.iter().enumerate() {
            std::fs::create_dir_all(dir.join(name)).unwrap();
            std::fs::write(dir.join(name).join(format!("seed-{i}")), bytes).unwrap();
        }
    }
    for (i, (name, bytes)) in seeds.iter().enumerate() {
        let path = dir.join(name).join(format!("seed-{i}"));
        let committed = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(&committed, bytes, "{} is stale: run with SVC_FUZZ_SEEDS=1", path.display());
    }
    for (name, _) in svc_core::fuzzing::TARGETS {
        assert!(dir.join(name).is_dir(), "{name} has a seed folder");
    }
}

// One schedule of each simulated protocol: the seed `SVC_SIM_SEED` names
// (to replay a failure the svc-core tests printed), or seed 0.
#[test]
fn simulation_replays_a_seed() {
    let seed = std::env::var("SVC_SIM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let replication = svc_core::sim::replication(seed);
    let billing = svc_core::sim::billing(seed);
    assert!(replication.is_ok() && billing.is_ok(), "seed {seed}: {replication:?} {billing:?}");
}
