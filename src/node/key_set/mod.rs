//! The deployment's key set, kept by home and replicated to every region:
//! the register of keys (home's own, and each region's receipt keys, in
//! `register`) and the signed key directory of businesses (`directory`).
//! A region's view of it, the document it serves and the receipt key it
//! signs with, is one of the region's running parts
//! (`region::key_view`).

pub mod directory;
pub(crate) mod register;
