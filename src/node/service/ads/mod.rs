//! Ads and paid placements (issue 28): campaigns as a business sets them
//! and the operator funds them, home's ledger of each campaign's money
//! leased to regions, pools, and render and click confirmations.

pub mod campaigns;
pub mod confirm;
pub mod images;
pub mod ledger;
pub mod pool;
pub mod reservations;
