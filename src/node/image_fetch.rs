//! Fetches the images an ad names, for the service (R4.1.22: never an end
//! user's browser). One HTTPS GET with no redirect followed, the size cap
//! judged from `Content-Length` and enforced while reading, one deadline
//! for the whole fetch, and only public addresses, each checked before
//! connecting, so an ad cannot point the service at its own network.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hyper::body::Bytes;
use svc_core::ads::images::MAX_IMAGE_BYTES;

use crate::config::AdImagesConfig;
use crate::outbound::{Bot, Outbound, OutboundError};

/// Why an image was not fetched or cannot be used, for the person saving
/// the ad.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("no such sandbox image")]
    NoSandboxImage,
    #[error("no answer within {0} ms")]
    Timeout(u128),
    #[error("not a URL: {0}")]
    NotUrl(url::ParseError),
    #[error("only https images are fetched")]
    NotHttps,
    #[error("the URL has no host")]
    NoHost,
    #[error("resolving {host}: {source}")]
    Unresolved { host: String, source: std::io::Error },
    #[error("{0} has no address")]
    NoAddress(String),
    #[error("{0} resolves to an address that is not public")]
    NotPublic(String),
    #[error("{0}")]
    Outbound(#[from] OutboundError),
    #[error("the server answered {0} (redirects are not followed)")]
    Status(hyper::StatusCode),
    /// Fetched, but not an image its slot takes.
    #[error("{0}")]
    Unusable(String),
}

/// The HTTPS client ads' images are fetched with.
pub struct ImageFetcher {
    client: Outbound,
    timeout: Duration,
    allow_private: bool,
    /// A sandbox draws the corpus's own images instead of fetching them.
    sandbox: bool,
}

impl ImageFetcher {
    /// Trusts the web PKI's roots and the operator's own, if it names any.
    /// Signs each fetch as `bot` (Web Bot Auth).
    /// In a `sandbox`, the corpus's images ([`svc_core::sandbox_images`]) are drawn.
    pub fn new(config: &AdImagesConfig, bot: Bot, sandbox: bool) -> Result<ImageFetcher, OutboundError> {
        Ok(ImageFetcher {
            client: Outbound::new(config.extra_roots_pem.as_deref(), Some(bot))?,
            timeout: Duration::from_millis(config.timeout_ms),
            allow_private: config.allow_private_addresses,
            sandbox,
        })
    }

    /// The bytes at `url`, at most [`MAX_IMAGE_BYTES`].
    pub async fn fetch(&self, url: &str) -> Result<Vec<u8>, FetchError> {
        if self.sandbox && url.starts_with(svc_core::sandbox_images::BASE) {
            return svc_core::sandbox_images::drawn(url).ok_or(FetchError::NoSandboxImage);
        }
        match tokio::time::timeout(self.timeout, self.get(url)).await {
            Ok(answer) => answer,
            Err(_) => Err(FetchError::Timeout(self.timeout.as_millis())),
        }
    }

    async fn get(&self, url: &str) -> Result<Vec<u8>, FetchError> {
        let parsed = url::Url::parse(url).map_err(FetchError::NotUrl)?;
        if parsed.scheme() != "https" {
            return Err(FetchError::NotHttps);
        }
        let host = parsed.host_str().ok_or(FetchError::NoHost)?.to_owned();
        let address = self.address(&host, parsed.port().unwrap_or(443)).await?;
        let request = hyper::Request::get("/")
            .header(hyper::header::USER_AGENT, "svc-ad-images/1")
            .header(hyper::header::ACCEPT, "image/png, image/jpeg, image/webp, image/gif");
        let answer = self.client.send(address, &parsed, request, Bytes::new(), MAX_IMAGE_BYTES).await?;
        if answer.status != hyper::StatusCode::OK {
            return Err(FetchError::Status(answer.status));
        }
        Ok(answer.body.to_vec())
    }

    /// The first address of `host`, refused when any of them is not public
    /// (a name that also points inward is not trusted either way).
    async fn address(&self, host: &str, port: u16) -> Result<SocketAddr, FetchError> {
        let addresses: Vec<SocketAddr> = tokio::net::lookup_host((host.trim_matches(['[', ']']), port))
            .await
            .map_err(|source| FetchError::Unresolved { host: host.to_owned(), source })?
            .collect();
        let first = *addresses.first().ok_or_else(|| FetchError::NoAddress(host.to_owned()))?;
        if !self.allow_private && addresses.iter().any(|a| !is_public(a.ip())) {
            return Err(FetchError::NotPublic(host.to_owned()));
        }
        Ok(first)
    }
}

/// Whether an address is reachable on the public internet: not loopback,
/// private, shared, link-local, documentation, multicast or unspecified,
/// nor an IPv6 prefix that reaches IPv4 or another network by translation
/// or tunnel (NAT64, 6to4, Teredo, IPv4-compatible) or is otherwise
/// special-purpose (IANA's registry: discard-only, the IETF block,
/// benchmarking, ORCHID, SRv6, site-local).
fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (18..20).contains(&b))
                || a >= 240)
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public(IpAddr::V4(v4)),
            None => {
                let s = v6.segments();
                let first = s[0];
                !(v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
                    || (first & 0xfe00) == 0xfc00 // unique local
                    || (first & 0xffc0) == 0xfe80 // link-local
                    || (first & 0xffc0) == 0xfec0 // site-local
                    || first == 0x2001 && s[1] == 0x0db8 // documentation
                    || first == 0x3fff && s[1] < 0x1000 // documentation (3fff::/20)
                    || first == 0x0064 && s[1] == 0xff9b // NAT64, well-known and local (64:ff9b::/96, 64:ff9b:1::/48)
                    || first == 0x2002 // 6to4
                    || first == 0x2001 && s[1] < 0x0200 // the IETF block: Teredo, benchmarking, ORCHID
                    || first == 0x0100 && s[1..4] == [0, 0, 0] // discard-only
                    || first == 0x5f00 // SRv6 segment identifiers
                    || s[..6] == [0; 6]) // IPv4-compatible (deprecated)
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_fetched_from() {
        for inward in ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0"]
        {
            assert!(!is_public(inward.parse().unwrap()), "{inward}");
        }
        for inward in ["::1", "fd00::1", "fe80::1", "::ffff:10.0.0.1", "2001:db8::1"] {
            assert!(!is_public(inward.parse().unwrap()), "{inward}");
        }
        // Prefixes that reach IPv4 or another network: an ad image at any of
        // them could be the service's own network by another route.
        let translated = [
            "64:ff9b::7f00:1",                      // NAT64 of 127.0.0.1
            "64:ff9b:1::a00:1",                     // local-use NAT64
            "2002:7f00:1::1",                       // 6to4 of 127.0.0.1
            "2001:0:4136:e378:8000:63bf:3fff:fdd2", // Teredo
            "2001:2::1",                            // benchmarking
            "2001:10::1",                           // ORCHID
            "100::1",                               // discard-only
            "::127.0.0.1",                          // IPv4-compatible
            "fec0::1",                              // site-local
            "5f00::1",                              // SRv6
            "3fff::1",                              // documentation
        ];
        for inward in translated {
            assert!(!is_public(inward.parse().unwrap()), "{inward}");
        }
        for outward in ["93.184.215.14", "2606:4700::1111", "8.8.8.8", "2001:4860:4860::8888", "2a00:1450::1"] {
            assert!(is_public(outward.parse().unwrap()), "{outward}");
        }
    }
}
