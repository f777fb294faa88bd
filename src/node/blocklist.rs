//! `url_flagged`: a DNS blocklist (URIBL-style) lookup of every URL's host.
//!
//! A host `h` is flagged when `h.<zone>` resolves to an address. A lookup
//! that fails or times out leaves the URL unflagged and is logged: the check
//! protects readers, and a resolver outage must not reject honest records.

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::time::Duration;

use hickory_resolver::Resolver;
use hickory_resolver::config::{NameServerConfig, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;

use crate::config::BlocklistConfig;

#[derive(Debug, thiserror::Error)]
pub enum BlocklistError {
    /// The resolver could not be built from the configuration.
    #[error("{0}")]
    Resolver(#[from] hickory_resolver::net::NetError),
}

/// A resolver asking one server over UDP, once, waiting `timeout_ms`: the
/// blocklist's (which keeps answers for their TTL) and domain assurance's
/// (which keeps none: each look is a fresh answer).
pub fn resolver(
    server: SocketAddr,
    timeout_ms: u64,
    cache: bool,
) -> Result<Resolver<TokioRuntimeProvider>, BlocklistError> {
    let mut config = NameServerConfig::udp(server.ip());
    for connection in &mut config.connections {
        connection.port = server.port();
    }
    let mut builder = Resolver::builder_with_config(
        ResolverConfig::from_parts(None, vec![], vec![config]),
        TokioRuntimeProvider::default(),
    );
    let opts = builder.options_mut();
    opts.timeout = Duration::from_millis(timeout_ms);
    opts.attempts = 1;
    opts.ndots = 0;
    if !cache {
        opts.cache_size = 0;
    }
    Ok(builder.build()?)
}

pub struct Blocklist {
    resolver: Resolver<TokioRuntimeProvider>,
    zone: String,
}

impl Blocklist {
    pub fn new(config: &BlocklistConfig) -> Result<Blocklist, BlocklistError> {
        let resolver = resolver(config.resolver, config.timeout_ms, true)?;
        Ok(Blocklist { resolver, zone: config.zone.trim_matches('.').to_owned() })
    }

    /// Whether a host is listed.
    pub async fn host_listed(&self, host: &str) -> bool {
        let name = format!("{}.{}.", host.trim_end_matches('.'), self.zone);
        match self.resolver.lookup_ip(name.as_str()).await {
            Ok(answer) => answer.iter().next().is_some(),
            Err(e) if e.is_nx_domain() || e.is_no_records_found() => false,
            Err(e) => {
                tracing::warn!(host, error = %e, "blocklist lookup failed; URL left unflagged");
                false
            }
        }
    }

    /// `url_flagged` errors for each leaf whose record links to a listed host.
    pub async fn flag(&self, leaves: &[(u64, Vec<(String, String)>)]) -> BTreeMap<u64, Vec<(String, String, String)>> {
        let hosts: HashSet<String> =
            leaves.iter().flat_map(|(_, urls)| urls.iter().filter_map(|(_, u)| host_of(u))).collect();
        let mut listed = HashSet::new();
        for host in hosts {
            if self.host_listed(&host).await {
                listed.insert(host);
            }
        }
        let mut out = BTreeMap::new();
        for (leaf, urls) in leaves {
            let errors: Vec<(String, String, String)> = urls
                .iter()
                .filter(|(_, url)| host_of(url).is_some_and(|h| listed.contains(&h)))
                .map(|(pointer, url)| {
                    (
                        "url_flagged".to_owned(),
                        pointer.clone(),
                        format!("{url} is on the malware and phishing blocklist"),
                    )
                })
                .collect();
            if !errors.is_empty() {
                out.insert(*leaf, errors);
            }
        }
        out
    }
}

fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = host.split(':').next()?.to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}
