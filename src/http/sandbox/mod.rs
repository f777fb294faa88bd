//! The sandbox: a fictional corpus (`corpus`), the seeder that publishes
//! it through the real routes (`seed`), its nightly republish (`nightly`)
//! and that republish on demand (`routes`). It sits above the API as a
//! client of its routers; nothing below calls it.

pub mod corpus;
pub mod nightly;
pub mod routes;
pub mod seed;
