//! `svc-core`: the pure logic of svc.
//!
//! Formats, cryptography, rules and windows. Nothing here reads the clock, the
//! filesystem or the network: time is passed in as [`time::UnixMs`], keys and
//! nonce stores are passed in as closures, and every function returns what the
//! caller must apply.

pub mod ads;
pub mod ai_policy;
pub mod analytics;
pub mod assurance;
pub mod b64;
pub mod canonical;
pub mod cosign;
pub mod custody;
pub mod digest;
pub mod dsse;
pub mod frames;
pub mod freshness;
pub mod fuzzing;
pub mod http_sig;
pub mod ids;
pub mod index;
pub mod keys;
pub mod keyset;
pub mod limits;
pub mod link;
pub mod log_chain;
pub mod merkle;
pub mod nearest;
pub mod net;
pub mod offline;
pub mod portal;
pub mod problem;
pub mod projection;
pub mod publish;
pub mod reason;
pub mod receipt;
pub mod receipt_fold;
pub mod records;
pub mod rng;
pub mod sandbox;
pub mod sandbox_images;
pub mod seal;
pub mod search;
pub mod sidecar;
pub mod sim;
pub mod source_line;
pub mod tiles;
pub mod time;
pub mod tlog;
pub mod trace_context;
pub mod verify;
pub mod web_bot_auth;
pub mod wrap;

pub use reason::Reason;
