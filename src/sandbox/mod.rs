//! The sandbox: a fictional corpus (`corpus`) and the seeder that publishes
//! it through the real pipeline (`seed`).

pub mod corpus;
pub mod seed;
