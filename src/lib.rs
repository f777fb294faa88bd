//! svc: the platform where verified businesses publish sealed records and AI
//! companies search, fetch and verify them.
//!
//! This crate does the I/O: storage, actors, HTTP and the command line. Every
//! rule lives in `svc-core`; handlers and actors call it and apply what it
//! returns.

/// Every program that links svc (the node, its tests and benchmarks)
/// allocates with mimalloc.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod actors;
pub mod as_table;
pub mod blocklist;
pub mod campaign_ledger;
pub mod chaos;
pub mod cli;
pub mod client;
pub mod clock;
pub mod config;
pub mod faults;
pub mod forwarded;
pub mod front_door;
pub mod http;
pub mod image_fetch;
pub mod key_set;
pub mod limits;
pub mod loadgen;
pub mod logs;
pub mod mcp;
pub mod metrics;
pub mod node;
pub mod outbound;
pub mod page_cache;
pub mod portal;
pub mod publish;
pub mod region;
pub mod registry;
pub mod replication;
pub mod sabotage;
pub mod sandbox;
pub mod search;
pub mod service;
pub mod service_keys;
pub mod store;
pub mod surfaces;
pub mod trace;
pub mod transparency;
