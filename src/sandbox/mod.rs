//! The sandbox: a fictional corpus (`corpus`), the seeder that publishes
//! it through the real pipeline (`seed`), its nightly republish
//! (`nightly`) and that republish on demand (`routes`).

pub mod corpus;
pub mod nightly;
pub mod routes;
pub mod seed;
