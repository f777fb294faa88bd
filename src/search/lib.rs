//! Search over what the replication log delivered: `doc` turns a signed row
//! into an index document, `schema` lays it out in tantivy, `shard` holds
//! one shard's writer and reader and translates a judged query (`merges`:
//! the writer's merge policy, which leaves fresh segments alone), `plan` and
//! `collect` answer it segment by segment, and `index` runs a search over
//! every shard of a collection, copying each hit's row from `rows` (each
//! segment's rows held in memory). `text` folds and stems words the same way
//! for records and queries; `held` is the record ids a search is held to
//! beside its filter (its `sponsored` clauses).

mod collect;
mod deferred_sync;
pub mod doc;
mod error;
mod filter;
mod held;
pub mod index;
mod merges;
mod orders;
mod plan;
mod rows;
mod schema;
mod shard;
mod text;

pub use error::SearchError;
pub use held::RecordIds;
pub use index::{Hits, RowsHeld, SearchIndex, open_all};
pub use schema::shard_of;
pub use shard::{NamedOpener, ShardOpener, ShardWriter, prepare_layout};
