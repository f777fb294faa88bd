//! The use cases: what the service does, whoever asks. Each takes typed
//! input and the authenticated caller and answers a typed value or an
//! [`Error`]. Every surface (svc-http's API, portals and MCP server) adapts
//! these: the API and MCP adapters never reach the store or an actor.
//!
//! - `retrieval`: an AI company's signed searches, fetches, receipts, usage, Terms.
//! - `publishing`: a business's pushes, bulk files, catalogue, status, seal context, analytics.
//! - `public`: the key set, certificates, projections, the log, verification.
//! - `operator`: the admin API's operations.
//! - `portal`: the business portal's people, passkey sessions and sealed saves.
//! - `internal`: what home does for its read regions.
//! - `ops`: health, readiness, metrics, and a read region's hand-off of writes.

pub mod ads;
pub mod auth;
pub mod business_keys;
pub mod company_keys;
pub use crate::error;
pub mod internal;
pub mod operator;
pub mod ops;
pub mod portal;
pub mod public;
pub mod publishing;
pub mod raw_json;
pub mod retrieval;
pub mod writes;

pub use error::{Error, Result};
