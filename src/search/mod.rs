//! Search over what the replication log delivered: `doc` turns a signed row
//! into an index document, `index` holds the tantivy shards and runs judged
//! queries against them.

pub mod doc;
mod filter;
pub mod index;
mod orders;

pub use index::{Hits, SearchIndex, ShardWriter, open_all, shard_of};
