//! A read region's calls to home's internal routes, over one HTTP/2
//! connection, each bounded in time so a partition never hangs a caller.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, header};
use serde::{Serialize, de::DeserializeOwned};
use svc_core::time::UnixMs;

use super::exchange::{LeaseAsk, LeaseGrant};
use crate::client::transport::{Answer, Transport};

/// How long a lease request may take: it holds up the request being served.
const LEASE_WAIT: Duration = Duration::from_secs(1);
/// After a failed lease request, requests needing one fail at once for
/// this long rather than each waiting on an unreachable home.
const LEASE_BACKOFF_MS: i64 = 1_000;

pub struct HomeLink {
    pub home: Transport,
    token: String,
    region: String,
    lease_units: i64,
    /// Lease requests fail fast until then (ms).
    lease_down_until: AtomicI64,
    /// Companies whose lease is being renewed in the background.
    renewing: Mutex<HashSet<String>>,
}

impl HomeLink {
    pub fn new(home: Transport, token: String, region: String, lease_units: i64) -> Self {
        HomeLink {
            home,
            token,
            region,
            lease_units,
            lease_down_until: AtomicI64::new(0),
            renewing: Mutex::new(HashSet::new()),
        }
    }

    /// Sends a request to home with the replication token, within `wait`.
    pub async fn send(
        &self,
        method: &str,
        path_and_query: &str,
        body: Vec<u8>,
        wait: Duration,
    ) -> Result<Answer, String> {
        let request = Request::builder()
            .method(method)
            .uri(path_and_query)
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token))
            .header(header::CONTENT_TYPE, "application/vnd.svc.postcard")
            .body(Body::from(body))
            .map_err(|e| e.to_string())?;
        let answer = tokio::time::timeout(wait, self.home.send(request))
            .await
            .map_err(|_| format!("home did not answer {path_and_query} within {} ms", wait.as_millis()))??;
        if answer.status != 200 {
            return Err(format!("home answered {path_and_query} with {}", answer.status));
        }
        Ok(answer)
    }

    /// A postcard request and answer.
    pub async fn call<Q: Serialize, A: DeserializeOwned>(
        &self,
        method: &str,
        path_and_query: &str,
        body: Option<&Q>,
        wait: Duration,
    ) -> Result<A, String> {
        let bytes = match body {
            Some(body) => postcard::to_stdvec(body).map_err(|e| e.to_string())?,
            None => Vec::new(),
        };
        let answer = self.send(method, path_and_query, bytes, wait).await?;
        postcard::from_bytes(&answer.bytes).map_err(|e| format!("home's answer to {path_and_query}: {e}"))
    }

    /// Asks home for a lease of the company's allowance.
    pub async fn lease(&self, company_uuid: &str, now: UnixMs) -> Result<LeaseGrant, String> {
        if now.0 < self.lease_down_until.load(Ordering::Relaxed) {
            return Err("home was unreachable a moment ago".into());
        }
        let ask =
            LeaseAsk { region: self.region.clone(), company_uuid: company_uuid.to_owned(), units: self.lease_units };
        let grant = self.call("POST", "/internal/v1/lease", Some(&ask), LEASE_WAIT).await;
        if grant.is_err() {
            self.lease_down_until.store(now.0 + LEASE_BACKOFF_MS, Ordering::Relaxed);
        }
        grant
    }

    /// Marks a background renewal for the company as started; false when
    /// one already runs.
    pub fn start_renewal(&self, company_uuid: &str) -> bool {
        self.renewing.lock().map(|mut set| set.insert(company_uuid.to_owned())).unwrap_or(false)
    }

    pub fn end_renewal(&self, company_uuid: &str) {
        if let Ok(mut set) = self.renewing.lock() {
            set.remove(company_uuid);
        }
    }
}
