//! Ads and paid placements (issue 28): campaigns as a business sets them
//! and the operator funds them, and home's ledger of each campaign's money,
//! leased to regions. Pools, renders and clicks are not served yet (`501`).

pub mod campaigns;
pub mod ledger;
