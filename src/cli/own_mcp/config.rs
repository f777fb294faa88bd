//! The self-hosted server's configuration (retrieval 4.4), member for member:
//! `version`, `environment`, `api_base_url`, `public_base_url`,
//! `source_line_base`, `key`, `country`, `sandbox_key_grant`, `anchors_file`,
//! `verify_online`, `timeout_ms`, `retry`, `transport`. TOML, or JSON for a
//! file named `*.json`. Every refusal names the member at fault.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Why a configuration is refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: {source}", .path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: {detail}", .path.display())]
    Parse { path: PathBuf, detail: String },
    #[error("version {0} is not one this server reads (1)")]
    Version(u64),
    #[error("sandbox_key_grant is for the sandbox: it is refused with environment = \"production\"")]
    GrantInProduction,
    #[error("sandbox_key_grant must begin svc_sbxk1. and be 1 to 8192 characters")]
    GrantMalformed,
    #[error("key names exactly one of file or env: the private key itself is never in this file")]
    KeySource,
    #[error("transport.bearer_token_env is required when transport.host ({0}) is not loopback")]
    BearerRequired(String),
    #[error("the environment variable {0} (transport.bearer_token_env) is not set or is shorter than 32 characters")]
    BearerMissing(String),
    #[error("{member}: {detail}")]
    Member { member: &'static str, detail: String },
}

/// The deployment the key belongs to; a sandbox key is never production's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Environment {
    Production,
    Sandbox,
}

impl Environment {
    pub fn is_sandbox(self) -> bool {
        self == Environment::Sandbox
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnConfig {
    pub version: u64,
    #[serde(default = "production")]
    pub environment: Environment,
    /// Where requests go (`http://` or `https://host:port`; `svc mcp --ca`
    /// names a CA to believe its certificate by).
    pub api_base_url: String,
    /// The public address requests are signed for (`@authority`); the API's
    /// own when absent.
    #[serde(default)]
    pub public_base_url: Option<String>,
    /// Where a source line's `verify=` link points; the public base when absent.
    #[serde(default)]
    pub source_line_base: Option<String>,
    pub key: KeySource,
    /// The country a search names when its filter names none.
    #[serde(default)]
    pub country: Option<String>,
    #[serde(default)]
    pub sandbox_key_grant: Option<String>,
    /// The pinned root anchors (`svc client keys --anchors-out`).
    pub anchors_file: PathBuf,
    /// Also ask `POST /v1/verify` about each fetched record.
    #[serde(default)]
    pub verify_online: bool,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    #[serde(default)]
    pub retry: Retry,
    #[serde(default)]
    pub transport: Transport,
}

fn production() -> Environment {
    Environment::Production
}

fn default_timeout_ms() -> u64 {
    10_000
}

/// Where the private key comes from: a key file, or an environment variable
/// holding a key file's JSON.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeySource {
    #[serde(default)]
    pub file: Option<PathBuf>,
    #[serde(default)]
    pub env: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Retry {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// The longest wait before a retry; a `Retry-After` beyond it is not waited for.
    pub max_delay_ms: u64,
}

impl Default for Retry {
    fn default() -> Self {
        Retry { max_attempts: 3, max_delay_ms: 2_000 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportType {
    Stdio,
    Http,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Transport {
    #[serde(rename = "type")]
    pub kind: TransportType,
    pub host: String,
    pub port: u16,
    pub path: String,
    pub bearer_token_env: Option<String>,
}

impl Default for Transport {
    fn default() -> Self {
        Transport {
            kind: TransportType::Stdio,
            host: "127.0.0.1".into(),
            port: 8787,
            path: "/mcp".into(),
            bearer_token_env: None,
        }
    }
}

impl Transport {
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost" || self.host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

impl OwnConfig {
    pub fn read(path: &Path) -> Result<OwnConfig, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
        let parse = |detail: String| ConfigError::Parse { path: path.to_owned(), detail };
        let mut config: OwnConfig = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(&text).map_err(|e| parse(e.to_string()))?
        } else {
            toml::from_str(&text).map_err(|e| parse(e.to_string()))?
        };
        if config.anchors_file.is_relative()
            && let Some(dir) = path.parent()
        {
            config.anchors_file = dir.join(&config.anchors_file);
        }
        if let Some(file) = config.key.file.as_mut()
            && file.is_relative()
            && let Some(dir) = path.parent()
        {
            *file = dir.join(&*file);
        }
        config.check()?;
        Ok(config)
    }

    /// Every rule the spec names, and the ranges this server keeps.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.version != 1 {
            return Err(ConfigError::Version(self.version));
        }
        if let Some(grant) = &self.sandbox_key_grant {
            if !self.environment.is_sandbox() {
                return Err(ConfigError::GrantInProduction);
            }
            if !grant.starts_with("svc_sbxk1.") || grant.len() > 8192 {
                return Err(ConfigError::GrantMalformed);
            }
        }
        if self.key.file.is_some() == self.key.env.is_some() {
            return Err(ConfigError::KeySource);
        }
        let member = |member: &'static str, detail: &str| Err(ConfigError::Member { member, detail: detail.into() });
        if !(self.api_base_url.starts_with("http://") || self.api_base_url.starts_with("https://")) {
            return member("api_base_url", "an http:// or https:// address");
        }
        if let Some(base) = &self.public_base_url
            && !(base.starts_with("http://") || base.starts_with("https://"))
        {
            return member("public_base_url", "an http:// or https:// address");
        }
        if let Some(country) = &self.country
            && !svc_core::ids::is_country(country)
        {
            return member("country", "an ISO 3166-1 alpha-2 code in capitals");
        }
        if !(100..=120_000).contains(&self.timeout_ms) {
            return member("timeout_ms", "100 to 120000");
        }
        if !(1..=10).contains(&self.retry.max_attempts) {
            return member("retry.max_attempts", "1 to 10");
        }
        if self.retry.max_delay_ms > 60_000 {
            return member("retry.max_delay_ms", "at most 60000");
        }
        if !self.transport.path.starts_with('/') {
            return member("transport.path", "a path beginning with /");
        }
        if self.transport.kind == TransportType::Http
            && !self.transport.is_loopback()
            && self.transport.bearer_token_env.is_none()
        {
            return Err(ConfigError::BearerRequired(self.transport.host.clone()));
        }
        Ok(())
    }

    /// The authority requests are signed for: the public base's host, else the API's.
    pub fn authority(&self) -> String {
        let base = self.public_base_url.as_deref().unwrap_or(&self.api_base_url);
        let rest = base.split_once("://").map_or(base, |(_, rest)| rest);
        rest.split('/').next().unwrap_or(rest).to_ascii_lowercase()
    }

    /// The bearer token an HTTP client must present, read from its variable.
    pub fn bearer_token(&self) -> Result<Option<String>, ConfigError> {
        let Some(var) = &self.transport.bearer_token_env else { return Ok(None) };
        match std::env::var(var) {
            Ok(token) if token.len() >= 32 => {
                super::forget_variable(var);
                Ok(Some(token))
            }
            _ => Err(ConfigError::BearerMissing(var.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<OwnConfig, ConfigError> {
        let detail = |e: toml::de::Error| ConfigError::Parse { path: "mcp.toml".into(), detail: e.to_string() };
        let config: OwnConfig = toml::from_str(text).map_err(detail)?;
        config.check()?;
        Ok(config)
    }

    const MINIMAL: &str = "version = 1\napi_base_url = \"http://127.0.0.1:8080\"\nanchors_file = \"anchors.json\"\nkey = { file = \"key.json\" }\n";

    // rule: R4.4.23, R4.4.24, R4.4.25, R4.4.28, R4.4.29, R4.4.30
    #[test]
    fn defaults_are_the_specs() {
        let config = parse(MINIMAL).unwrap();
        assert_eq!(config.environment, Environment::Production);
        assert!(!config.verify_online);
        assert_eq!(config.transport.kind, TransportType::Stdio);
        assert_eq!(
            (config.transport.host.as_str(), config.transport.port, config.transport.path.as_str()),
            ("127.0.0.1", 8787, "/mcp")
        );
        assert_eq!(config.authority(), "127.0.0.1:8080");
        let every = format!(
            "{MINIMAL}environment = \"sandbox\"\npublic_base_url = \"https://sandbox.api.example\"\nsource_line_base = \"https://verify.example\"\n\
             country = \"FR\"\nsandbox_key_grant = \"svc_sbxk1.abc\"\nverify_online = true\ntimeout_ms = 5000\n\
             retry = {{ max_attempts = 4, max_delay_ms = 1500 }}\n\
             transport = {{ type = \"http\", host = \"0.0.0.0\", port = 9000, path = \"/m\", bearer_token_env = \"MCP_TOKEN\" }}\n"
        );
        let config = parse(&every).unwrap();
        assert_eq!(config.authority(), "sandbox.api.example");
        assert_eq!(config.retry.max_attempts, 4);
    }

    // rule: R4.4.24, R4.4.26, R4.4.27, R4.4.31, R4.4.32
    #[test]
    fn every_refusal_the_spec_names() {
        let refused = |text: String, needle: &str| {
            let error = parse(&text).unwrap_err().to_string();
            assert!(error.contains(needle), "{error} should name {needle}");
        };
        refused(MINIMAL.replace("version = 1", "version = 2"), "version 2");
        refused(
            format!("{MINIMAL}sandbox_key_grant = \"svc_sbxk1.abc\"\n"),
            "refused with environment = \"production\"",
        );
        refused(format!("{MINIMAL}environment = \"sandbox\"\nsandbox_key_grant = \"grant\"\n"), "svc_sbxk1.");
        refused(MINIMAL.replace("key = { file = \"key.json\" }", "key = { file = \"k\", env = \"K\" }"), "exactly one");
        refused(MINIMAL.replace("key = { file = \"key.json\" }", "key = { seed = \"AAAA\" }"), "unknown field");
        refused(
            format!("{MINIMAL}transport = {{ type = \"http\", host = \"0.0.0.0\" }}\n"),
            "bearer_token_env is required",
        );
        refused(format!("{MINIMAL}environment = \"staging\"\n"), "unknown variant");
        refused(format!("{MINIMAL}transport = {{ type = \"ws\" }}\n"), "unknown variant");
        refused(format!("{MINIMAL}retry = {{ max_attempts = 0 }}\n"), "retry.max_attempts");
        refused(format!("{MINIMAL}catalogue = true\n"), "unknown field");
        // Loopback needs no bearer token.
        assert!(parse(&format!("{MINIMAL}transport = {{ type = \"http\", host = \"::1\" }}\n")).is_ok());
    }

    // The bearer token's variable is read once and leaves the environment:
    // a tool's child process, or a later dump of the environment, finds none.
    #[test]
    fn the_bearer_tokens_variable_is_gone_once_read() {
        let var = "SVC_TEST_BEARER_GONE_ONCE_READ";
        // SAFETY: this variable is this test's own; nothing else reads it.
        unsafe { std::env::set_var(var, "a-bearer-token-of-thirty-two-characters") };
        let text = format!("{MINIMAL}[transport]\ntype = \"http\"\nbearer_token_env = \"{var}\"\n");
        let config = parse(&text).unwrap();
        assert_eq!(config.bearer_token().unwrap().as_deref(), Some("a-bearer-token-of-thirty-two-characters"));
        assert!(std::env::var(var).is_err(), "removed once read");
    }
}
