//! The sandbox: a fictional corpus (`corpus`), the seeder that publishes
//! it through the real pipeline (`seed`), and its nightly republish (`nightly`).

pub mod corpus;
pub mod nightly;
pub mod seed;
