//! The records a search is held to beside its filter: what its `sponsored`
//! clauses admit, which the region answers from its campaigns by record id
//! (`svc_core::search::split_paid`), never the index.

/// Few ids: the items of funded campaigns.
#[derive(Debug, Clone, Default)]
pub enum RecordIds {
    #[default]
    All,
    Only(Vec<String>),
    Except(Vec<String>),
}
