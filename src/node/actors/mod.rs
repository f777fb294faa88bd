//! The actors of a node, one per file. Each owns one piece of mutable state,
//! handles its messages one at a time, and answers `Observe` with a snapshot.

pub mod ad_feed;
pub mod ad_reservations;
pub mod analytics;
pub mod billing;
pub mod claim_uplink;
pub mod domain_assurance;
pub mod error;
pub mod gather;
pub mod index_shard;
pub mod indexer;
pub mod mailbox;
pub mod nonce_feed;
pub mod nonce_store;
pub mod observed;
pub mod publisher;
pub mod push_worker;
pub mod receipt_folder;
pub mod receipt_log;
pub mod replicator;
pub mod retention;
pub mod transparency_log;
pub mod uplink;
pub mod witnesses;
