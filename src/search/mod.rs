//! Search over what the replication log delivered: `doc` turns a signed row
//! into an index document, `schema` lays it out in tantivy, `shard` holds
//! one shard's writer and reader and translates a judged query, `plan` and
//! `collect` answer it segment by segment, and `index` runs a search over
//! every shard of a collection.

mod collect;
mod deferred_sync;
pub mod doc;
mod error;
mod filter;
pub mod index;
mod orders;
mod plan;
mod schema;
mod shard;
mod text;

pub use error::SearchError;
pub use index::{Hits, RecordIds, SearchIndex, open_all};
pub use schema::shard_of;
pub use shard::{NamedOpener, ShardOpener, ShardWriter, prepare_layout};
