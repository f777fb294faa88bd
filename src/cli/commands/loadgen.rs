//! `svc loadgen`: signed product searches against a running region from N
//! concurrent connections; prints the report as JSON.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::CliError;
use crate::loadgen::{self, Plan};
use svc_client::keyfile;

#[derive(Debug, Args)]
pub struct LoadgenArgs {
    /// The region's public API.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    pub base_url: String,
    /// The public authority requests are signed for.
    #[arg(long, default_value = "api.svc.localhost")]
    pub authority: String,
    /// A registered retrieval key file; repeat for more keys (connections
    /// take them round-robin).
    #[arg(long = "key", required = true)]
    pub keys: Vec<PathBuf>,
    #[arg(long, default_value_t = 32)]
    pub connections: usize,
    /// Offer this many requests per second on a schedule (latency counted
    /// from when each fell due); without it, connections send as fast as
    /// answers come back.
    #[arg(long)]
    pub rate: Option<f64>,
    /// The measured window.
    #[arg(long, default_value_t = 20)]
    pub seconds: u64,
    /// Unmeasured seconds before the window.
    #[arg(long, default_value_t = 2)]
    pub warmup: u64,
    /// How many distinct searches the mix holds (cycled through).
    #[arg(long, default_value_t = 256)]
    pub queries: usize,
    /// The mix's seed: the same seed gives the same searches.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Send each key's sandbox grant, so a sandbox region admits keys it
    /// has not seen yet.
    #[arg(long)]
    pub sandbox_grant: bool,
    /// A CA certificate (PEM) to believe an `https://` region's certificate
    /// by, beside the system's roots.
    #[arg(long, env = "SVC_CA")]
    pub ca: Option<PathBuf>,
    /// A new connection (and TLS handshake over https://) for every
    /// request: the rate of new connections the region sustains.
    #[arg(long)]
    pub connection_per_request: bool,
}

pub fn run(args: LoadgenArgs) -> Result<serde_json::Value, CliError> {
    let keys = args.keys.iter().map(|path| keyfile::read(path)).collect::<Result<Vec<_>, _>>()?;
    let plan = Plan {
        base_url: args.base_url,
        authority: args.authority,
        keys,
        connections: args.connections,
        rate: args.rate,
        warmup: Duration::from_secs(args.warmup),
        duration: Duration::from_secs(args.seconds.max(1)),
        queries: loadgen::product_mix(args.seed, args.queries.max(1)),
        sandbox_grant: args.sandbox_grant,
        trust: svc_client::trust::Trust::with_ca(args.ca.as_deref())?,
        connection_per_request: args.connection_per_request,
    };
    // Many connections: a runtime with a worker per core, not the single
    // thread the other commands use.
    let report = super::block_on_workers(async { Ok(loadgen::run(plan).await?) })?;
    Ok(serde_json::to_value(report)?)
}
