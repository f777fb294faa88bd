//! Pages made once and answered again while nothing they read changed: the
//! verify page (`GET /v1/verify/{record_id}`), which judges a seal again,
//! unauthenticated work. A page is kept with when it was made (the minute
//! and the replicated sequence it read) and answered again only for the
//! same; the least recently asked go first past the cap.

use std::sync::Mutex;

use serde_json::Value;

/// Pages one node keeps.
const PAGES_KEPT: usize = 10_000;

/// A page's key: the record id and the query it was asked with.
pub type PageKey = (String, String);
/// When a page was made: the minute, and the replicated sequence it read.
pub type Made = (i64, u64);

pub struct PageCache(Mutex<lru::LruCache<PageKey, (Made, Option<Value>)>>);

impl Default for PageCache {
    fn default() -> Self {
        let cap = std::num::NonZeroUsize::new(PAGES_KEPT).expect("not zero");
        PageCache(Mutex::new(lru::LruCache::new(cap)))
    }
}

impl PageCache {
    /// The page (or the one 404, `None` inside) made at `made`, if kept.
    pub fn get(&self, key: &PageKey, made: Made) -> Option<Option<Value>> {
        let mut pages = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        pages.get(key).filter(|(when, _)| *when == made).map(|(_, page)| page.clone())
    }

    pub fn put(&self, key: PageKey, made: Made, page: Option<Value>) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).put(key, (made, page));
    }
}
