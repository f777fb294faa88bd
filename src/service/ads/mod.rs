//! Ads and paid placements (issue 28): campaigns as a business sets them
//! and the operator funds them. Pools, renders and clicks are not served
//! yet (`501`).

pub mod campaigns;
