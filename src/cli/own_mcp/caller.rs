//! One tool call, one signed request: signed afresh for every attempt (a new
//! nonce and `created`), retried only when the region did not serve it.
//!
//! Retried: `429` and `503` after their `Retry-After` when that is within
//! `max_delay_ms`; `502` and `504`; a connection that failed before the
//! request was sent. Never retried: a request that timed out or broke after
//! it was sent (the region may have served and billed it), and every other
//! answer.

use std::time::Duration;

use axum::body::Body;
use http_body_util::BodyExt;
use svc_core::keys::SigningKey;

use super::config::Retry;
use svc_client::transport::{Answer, Transport};
use svc_client::{Signer, Unsigned};

/// Why no answer came back.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("the region could not be reached after {attempts} attempt(s): {last}")]
    Unreachable { attempts: u32, last: String },
    #[error("no answer within {0} ms after the request was sent; not retried, as the region may have served it")]
    TimedOut(u64),
    #[error("the request failed after it was sent; not retried, as the region may have served it: {0}")]
    Broken(String),
    #[error("the request could not be signed: {0}")]
    Sign(String),
}

/// How a call went: the answer and how many attempts it took.
pub struct Called {
    pub answer: Answer,
    pub attempts: u32,
}

/// Signs and sends as one AI company's retrieval key.
pub struct Caller {
    transport: Transport,
    signer: Signer,
    grant: Option<String>,
    timeout: Duration,
    retry: Retry,
    /// The largest answer read: far above any route's.
    max_answer: usize,
}

impl Caller {
    pub fn new(
        api_base_url: &str,
        authority: &str,
        key: SigningKey,
        grant: Option<String>,
        timeout_ms: u64,
        retry: Retry,
        trust: &svc_client::trust::Trust,
    ) -> Result<Caller, svc_client::ClientError> {
        Ok(Caller {
            transport: Transport::trusting(api_base_url, trust)?,
            signer: Signer::new(key, authority, svc_client::retrieval::TAG_RETRIEVAL),
            grant,
            timeout: Duration::from_millis(timeout_ms),
            retry,
            max_answer: svc_http::mcp::MAX_ANSWER,
        })
    }

    pub fn key_id(&self) -> String {
        self.signer.key.verifying_key().thumbprint()
    }

    /// An unsigned `GET` of a public document (the key set), retried as a signed call is.
    pub async fn public(&self, path: &str) -> Result<Called, CallError> {
        self.send(|| {
            axum::http::Request::get(path)
                .header("host", self.signer.authority.as_str())
                .body(Body::empty())
                .map_err(|e| CallError::Sign(e.to_string()))
        })
        .await
    }

    /// A signed call; `body` empty for a GET.
    pub async fn call(&self, method: &str, path_and_query: &str, body: &[u8]) -> Result<Called, CallError> {
        self.call_with(method, path_and_query, body, &[]).await
    }

    /// A signed call with headers of its own (`Idempotency-Key`).
    pub async fn call_with(
        &self,
        method: &str,
        path_and_query: &str,
        body: &[u8],
        headers: &[(&str, &str)],
    ) -> Result<Called, CallError> {
        self.send(|| {
            let mut unsigned = Unsigned::new(method, path_and_query, body.to_vec());
            for (name, value) in headers {
                unsigned = unsigned.header(name, value);
            }
            if let Some(grant) = &self.grant {
                unsigned = unsigned.header(svc_core::sandbox::GRANT_HEADER, grant);
            }
            let now = svc_clock::Clock::now(&svc_clock::SystemClock).as_secs();
            self.signer.sign_now(unsigned, now).map_err(|e| CallError::Sign(e.to_string()))
        })
        .await
    }

    async fn send(
        &self,
        build: impl Fn() -> Result<axum::http::Request<Body>, CallError>,
    ) -> Result<Called, CallError> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let request = build()?;
            let sent = tokio::time::timeout(self.timeout, self.transport.try_forward(request)).await;
            let last = attempts >= self.retry.max_attempts;
            let response = match sent {
                Err(_) => return Err(CallError::TimedOut(self.timeout.as_millis() as u64)),
                Ok(Err(e)) if e.is_connect() => {
                    if last {
                        return Err(CallError::Unreachable { attempts, last: e.to_string() });
                    }
                    tracing::info!(attempt = attempts, "mcp: connection failed before sending; retrying");
                    tokio::time::sleep(backoff(attempts, self.retry.max_delay_ms)).await;
                    continue;
                }
                Ok(Err(e)) => return Err(CallError::Broken(e.to_string())),
                Ok(Ok(response)) => response,
            };
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let body = tokio::time::timeout(
                self.timeout,
                http_body_util::Limited::new(response.into_body(), self.max_answer).collect(),
            )
            .await;
            let bytes = match body {
                Err(_) => return Err(CallError::TimedOut(self.timeout.as_millis() as u64)),
                Ok(Err(e)) => return Err(CallError::Broken(e.to_string())),
                Ok(Ok(collected)) => collected.to_bytes().to_vec(),
            };
            let answer = Answer { status, headers, bytes };
            match wait_before_retry(&answer, attempts, self.retry) {
                Some(wait) if !last => {
                    tracing::info!(
                        attempt = attempts,
                        status,
                        wait_ms = wait.as_millis() as u64,
                        "mcp: not served; retrying"
                    );
                    tokio::time::sleep(wait).await;
                }
                _ => return Ok(Called { answer, attempts }),
            }
        }
    }
}

/// How long to wait before retrying an answer that was not served, or
/// `None` when it must not be retried.
pub fn wait_before_retry(answer: &Answer, attempt: u32, retry: Retry) -> Option<Duration> {
    match answer.status {
        429 | 503 => {
            let wait = retry_after(answer)?;
            (wait.as_millis() as u64 <= retry.max_delay_ms).then_some(wait)
        }
        502 | 504 => Some(backoff(attempt, retry.max_delay_ms)),
        _ => None,
    }
}

/// The wait an answer asks for: `retry_after_ms` in its problem, else its
/// `Retry-After` seconds. An answer that names none is not retried.
fn retry_after(answer: &Answer) -> Option<Duration> {
    let ms = serde_json::from_slice::<serde_json::Value>(&answer.bytes).ok().and_then(|p| p["retry_after_ms"].as_u64());
    let seconds = answer.headers.get("retry-after").and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
    ms.or(seconds.map(|s| s * 1000)).map(Duration::from_millis)
}

fn backoff(attempt: u32, max_delay_ms: u64) -> Duration {
    Duration::from_millis((100u64 << attempt.min(6)).min(max_delay_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, retry_after: Option<&str>, body: &str) -> Answer {
        let mut headers = axum::http::HeaderMap::new();
        if let Some(value) = retry_after {
            headers.insert("retry-after", value.parse().unwrap());
        }
        Answer { status, headers, bytes: body.as_bytes().to_vec() }
    }

    // rule: R4.4.35, R4.4.36, R4.4.37
    #[test]
    fn only_what_was_not_served_is_retried() {
        let retry = Retry { max_attempts: 3, max_delay_ms: 2_000 };
        assert_eq!(wait_before_retry(&answer(503, Some("1"), ""), 1, retry), Some(Duration::from_secs(1)));
        assert_eq!(
            wait_before_retry(&answer(429, Some("1"), "{\"retry_after_ms\":250}"), 1, retry),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            wait_before_retry(&answer(429, Some("5"), ""), 1, retry),
            None,
            "beyond max_delay_ms: not waited for"
        );
        assert_eq!(wait_before_retry(&answer(503, None, ""), 1, retry), None, "no wait named");
        assert!(wait_before_retry(&answer(502, None, ""), 1, retry).is_some());
        assert!(wait_before_retry(&answer(504, None, ""), 2, retry).is_some());
        for status in [200, 400, 401, 402, 404, 413, 500] {
            assert_eq!(wait_before_retry(&answer(status, Some("1"), ""), 1, retry), None, "{status}");
        }
        assert!(backoff(9, 300) <= Duration::from_millis(300));
    }
}
