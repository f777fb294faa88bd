//! The search index's errors: its directories, and tantivy.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// tantivy failed: opening, writing, committing or searching.
    #[error("{0}")]
    Tantivy(#[from] tantivy::TantivyError),
    /// A shard's directory that does not open as an index directory.
    #[error("{}: {source}", .path.display())]
    Directory { path: PathBuf, source: tantivy::directory::error::OpenDirectoryError },
    /// The index directory, or its layout marker, that does not read or write.
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
}
