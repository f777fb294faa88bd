//! `svc ca`: the command over `crate::ca`, a deployment's own certificate
//! authority: `init` makes it; `issue` makes (or renews) a region's or a
//! listener's certificate from it, for a node's `[tls]`.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::Value;

use super::CliError;
use crate::ca::{init, issue};

#[derive(Debug, Args)]
pub struct CaArgs {
    #[command(subcommand)]
    pub command: CaCommand,
}

#[derive(Debug, Subcommand)]
pub enum CaCommand {
    /// Make the CA: `<dir>/ca.pem`, and `<dir>/ca-key.pem` readable by its
    /// owner alone. Refused when `<dir>/ca.pem` exists.
    #[command(after_help = "Example:\n  svc ca init --dir tls")]
    Init {
        #[arg(long, default_value = "svc-data/tls")]
        dir: PathBuf,
    },
    /// Issue a certificate from the CA, or renew one by issuing it again:
    /// `<dir>/<name>.pem` (the chain) and `<dir>/<name>-key.pem`, each
    /// replaced whole, so a node reading them again never sees half a file.
    #[command(after_help = "Example:\n  svc ca issue --dir tls --region eu --host eu.example.net --host 10.0.0.5")]
    Issue {
        #[arg(long, default_value = "svc-data/tls")]
        dir: PathBuf,
        /// A region's certificate, named for the region: it serves the
        /// region's listeners and names the region as a client of home.
        #[arg(long, conflicts_with = "listener", required_unless_present = "listener")]
        region: Option<String>,
        /// Another listener's certificate (the front door's).
        #[arg(long)]
        listener: Option<String>,
        /// A name or address the certificate serves; repeat for each.
        /// `localhost` and `127.0.0.1` when none is given.
        #[arg(long = "host")]
        hosts: Vec<String>,
        /// Days it is valid from now.
        #[arg(long, default_value_t = 90)]
        days: u32,
    },
}

pub fn run(args: CaArgs) -> Result<Value, CliError> {
    Ok(match args.command {
        CaCommand::Init { dir } => init(&dir)?,
        CaCommand::Issue { dir, region, listener, hosts, days } => {
            let (name, region) = match (region, listener) {
                (Some(region), _) => (region, true),
                (None, Some(listener)) => (listener, false),
                (None, None) => return Err(CliError::Usage("name --region or --listener".into())),
            };
            issue(&dir, &name, region, &hosts, days)?
        }
    })
}
