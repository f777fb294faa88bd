//! The command line's errors: each area's error, and what the commands
//! themselves refuse. Only the commands' `run` functions print them.

use std::path::PathBuf;

use svc_core::Reason;
use svc_core::canonical::CanonicalError;

use crate::loadgen::LoadgenError;
use svc_client::ClientError;
use svc_http::front_door::FrontDoorError;
use svc_http::sandbox::seed::SeedError;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Seed(#[from] SeedError),
    #[error(transparent)]
    Loadgen(#[from] LoadgenError),
    #[error(transparent)]
    FrontDoor(#[from] FrontDoorError),
    #[error(transparent)]
    Mcp(#[from] crate::own_mcp::OwnError),
    /// A configuration that names its secrets wrongly.
    #[error(transparent)]
    Config(#[from] svc_node::config::ConfigError),
    /// A CA command that failed (boxed: certificate errors are large).
    #[error("{0}")]
    Ca(Box<crate::ca::CaError>),
    /// A node that did not start.
    #[error("{0}")]
    Node(#[from] svc_http::node::NodeError),
    /// Arguments that do not make a command.
    #[error("{0}")]
    Usage(String),
    /// A file that does not read or write.
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// The admin token file, when no token was passed.
    #[error("{}: {source} (pass --token or --token-file)", .path.display())]
    TokenFile { path: PathBuf, source: std::io::Error },
    /// A configuration file that is not the TOML expected. Boxed: a TOML
    /// error is large, and every command's result would carry its size.
    #[error("{}: {source}", .path.display())]
    Toml { path: PathBuf, source: Box<toml::de::Error> },
    /// A saved file that is not the JSON expected.
    #[error("{}: {source}", .path.display())]
    JsonFile { path: PathBuf, source: serde_json::Error },
    /// A JSON value (an argument, or part of an answer) that is not the one expected.
    #[error("{what}: {source}")]
    Json { what: &'static str, source: serde_json::Error },
    /// Output that does not encode as JSON.
    #[error("{0}")]
    Encode(#[from] serde_json::Error),
    #[error("{0}")]
    Canonical(#[from] CanonicalError),
    /// A pinned root anchor that is not a public key.
    #[error("{name}: {source}")]
    Anchor { name: &'static str, source: svc_core::keys::KeyError },
    /// The async runtime, or the signal handlers, did not start.
    #[error("{0}")]
    Runtime(#[source] std::io::Error),
    /// An answer, or a saved key set, without what the command needs.
    #[error("{0}")]
    Missing(&'static str),
    /// An answer with a status the command cannot go on from.
    #[error("{what} answered {status}")]
    Answered { what: &'static str, status: u16 },
    #[error("offline check failed: {0}")]
    Offline(Reason),
    #[error("the key set does not verify: {0}")]
    KeySet(Reason),
    /// A document that is not what the verification index pins.
    #[error("{url} is not the document the verification index pins ({sha256})")]
    NotPinned { url: String, sha256: String },
}

impl From<crate::ca::CaError> for CliError {
    fn from(error: crate::ca::CaError) -> Self {
        CliError::Ca(Box::new(error))
    }
}
