//! Every integration test in one binary (one link of RocksDB and tantivy
//! instead of one per file). Each module is one area of the node.

mod browser;
mod common;
mod process;

mod ads;
mod analytics;
mod bulk;
mod business_api;
mod business_limits;
mod certificates_serving;
mod chaos;
mod client;
mod company_portal;
mod core_is_pure;
mod deletion;
mod domain_assurance;
mod fuzzing;
mod hardening;
mod key_directory;
mod kill;
mod layers;
mod live;
mod log_tiles;
mod mcp_own;
mod mcp_public;
mod mcp_python;
mod mcp_regions;
mod multi_region;
mod pages;
mod portal;
mod portal_limits;
mod public;
mod push_crash;
mod regions;
mod regions_config;
mod retrieval;
mod sandbox;
mod search;
mod shutdown;
mod supervision;
mod transparency;
mod up;
mod url_flagged;
mod verify;
mod web_bot_auth;
