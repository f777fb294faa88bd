//! svc-node: a running region. Its actors own the mutable state, its
//! replication keeps read regions in step with home, and its use cases
//! (`service`) are what every surface calls. Every rule lives in
//! `svc-core`; this crate does the I/O and applies what the rules return.
//! It knows no surface: HTTP, portals, MCP and the command line sit above.

pub mod actors;
pub mod as_table;
pub mod blocklist;
pub mod campaign_ledger;
pub mod config;
pub mod document;
pub mod error;
pub mod faults;
pub mod group;
pub mod hosted_seeds;
pub mod image_fetch;
pub mod key_set;
pub mod limits;
pub mod memo;
pub mod metrics;
pub mod outbound;
pub mod page_cache;
pub mod publish;
pub mod region;
pub mod registry;
pub mod replication;
pub mod sabotage;
pub mod service;
pub mod service_keys;
pub mod trace;
pub mod transparency;
