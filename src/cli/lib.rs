//! svc: the command line (`svc up`, `svc node`, `svc admin`, `svc client`,
//! `svc mcp`), the load generator and the chaos runner. Everything here is
//! a client of the layers below: it starts nodes from `svc-http` (whose
//! sandbox seeds the corpus) and speaks to them through `svc-client`.

/// Every program that links svc (the node, its tests and benchmarks)
/// allocates with mimalloc.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod ca;
pub mod chaos;
pub mod commands;
pub mod loadgen;
pub mod logs;
pub mod own_mcp;
