//! The `svc` command line.

pub mod admin;
pub mod ca;
pub mod client;
pub mod doctor;
pub mod error;
pub mod loadgen;
pub mod output;
pub mod progress;
pub mod publish;
pub mod up;

use clap::{Parser, Subcommand};

pub use error::CliError;

#[derive(Debug, Parser)]
#[command(
    name = "svc",
    version,
    about = "Sealed business records: publish, search, fetch, verify.",
    after_help = "Example:\n  svc up    # a local deployment with the sandbox corpus; the README's tour goes on from there"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a deployment on this machine: a home region, two read regions
    /// (eu, ap) replicating from it, and a front door, with the sandbox corpus.
    #[command(
        after_help = "Example:\n  svc up --seed 1   # home, eu and ap behind a front door on :8080, the sandbox corpus seeded\n  svc up --home-nodes 3   # home as three nodes in one Raft group"
    )]
    Up {
        /// Where the regions keep their data (one folder each).
        #[arg(long, default_value = "svc-data")]
        data_dir: std::path::PathBuf,
        /// The front door: each request goes to the nearest ready region.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: std::net::SocketAddr,
        /// Home's admin API.
        #[arg(long, default_value = "127.0.0.1:8081")]
        admin_listen: std::net::SocketAddr,
        /// Each region's own public port: home on this one, eu 10 above, ap 20
        /// above (their admin APIs one above that).
        #[arg(long, default_value_t = 8100)]
        ports_from: u16,
        /// Each region's simulated distance from the front door, `region=ms`:
        /// the door waits that long on its way to the region, and measures
        /// it (all regions share this machine).
        #[arg(long, value_delimiter = ',', default_value = "eu=10,home=25,ap=40")]
        latency: Vec<String>,
        /// The sandbox corpus's seed: the same seed gives the same corpus.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Every listener over HTTPS, from a deployment CA made under
        /// `<data-dir>/tls/` (its `ca.pem` is what clients believe, `--ca`),
        /// and mutual TLS between the regions.
        #[arg(long)]
        tls: bool,
        /// Home's nodes: 1, or 3 or 5 in one Raft group (each under
        /// `<data-dir>/home-<n>`, the first under `home`; member n's ports
        /// from `--ports-from` + 30 + 10 × (n − 2)); the one that leads runs
        /// the region and the others send requests on to it.
        #[arg(long, default_value_t = 1)]
        home_nodes: u8,
    },
    /// Run a front door from its configuration file (`regions/front-door.toml`).
    #[command(after_help = "Example:\n  svc front-door --config regions/front-door.toml")]
    FrontDoor {
        #[arg(long)]
        config: std::path::PathBuf,
    },
    /// Run one region from its configuration file (`regions/<name>.toml`).
    #[command(after_help = "Example:\n  svc node --config regions/home.toml")]
    Node {
        #[arg(long)]
        config: std::path::PathBuf,
    },
    /// Check a node's config as a production operator must: TLS and its
    /// certificate's end, the link's mutual TLS, tokens, the key-encryption
    /// key, blocklist, domain assurance, backups, clock sync. Exits 1 when
    /// a check fails.
    #[command(after_help = "Example:\n  svc doctor --config /etc/svc/home.toml")]
    Doctor {
        #[arg(long)]
        config: std::path::PathBuf,
        /// JSON even at a terminal.
        #[arg(long)]
        json: bool,
    },
    /// Print the payload types, record schemas and projection hashes this build speaks.
    #[command(after_help = "Example:\n  svc formats | jq '.payload_types'")]
    Formats,
    /// Print a fresh token (256 random bits, hex) for `admin_token_file` or
    /// `[replication] token_file`.
    #[command(after_help = "Example:\n  svc secret > regions/secrets/home-admin-token")]
    Secret,
    /// A deployment's own certificate authority, for `[tls]`: `init` makes
    /// it, `issue` makes or renews a region's or a listener's certificate.
    #[command(
        after_help = "Example:\n  svc ca init --dir tls && svc ca issue --dir tls --region eu --host eu.example.net"
    )]
    Ca(ca::CaArgs),
    /// Write a new private key file (Ed25519 or ES256) and print its public half.
    #[command(after_help = "Example:\n  svc keygen --alg ed25519 --out ai.json")]
    Keygen {
        /// `ed25519` or `es256` (passkeys are `es256`).
        #[arg(long, default_value = "ed25519")]
        alg: String,
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// The operator's commands against a node's admin API; each prints JSON.
    #[command(
        after_help = "Example:\n  svc admin --url http://127.0.0.1:8081 --token-file svc-data/home/admin_token observe"
    )]
    Admin(admin::AdminArgs),
    /// An AI company's signed calls: search, fetch, receipts, usage, Terms,
    /// and the key set; answers are checked offline.
    #[command(
        after_help = "Example:\n  svc client --key ai.json --grant <sandbox_key_grant> search --country FR --q lamp"
    )]
    Client(client::ClientArgs),
    /// Run a chaos scenario (`chaos/scenarios/*.toml`): a deployment of
    /// `svc node` processes, load, faults on schedule, invariants checked from
    /// outside. Prints the report's path last; exits 0 when the verdict is
    /// the one the scenario expects. With `--target`, against your own
    /// deployment instead, its faults run by the file's commands.
    #[command(after_help = "Example:\n  svc chaos chaos/scenarios/clock-skew.toml --out chaos-runs\n\
                            Against your own deployment:\n  \
                            SVC_ADMIN_TOKEN=… svc chaos chaos/scenarios/home-kill.toml \
                            --target deploy/compose-chaos.toml")]
    Chaos {
        scenario: std::path::PathBuf,
        /// An operator's deployment (`deploy/compose-chaos.toml` shows
        /// one): each node's addresses and the commands that kill, start,
        /// pause, resume and cut it off. Nothing of it is started or deleted.
        #[arg(long)]
        target: Option<std::path::PathBuf>,
        /// Where the run keeps its deployment, logs and report.
        #[arg(long, default_value = "chaos-runs")]
        out: std::path::PathBuf,
        /// Keep the nodes' data directories even when the run ended as
        /// expected (they are always kept when it did not).
        #[arg(long)]
        keep_data: bool,
    },
    /// Run the billable MCP server with your own retrieval key (retrieval
    /// 4.4): stdio by default, or Streamable HTTP as the file says.
    #[command(after_help = "Example:\n  svc mcp --config mcp.toml")]
    Mcp {
        #[arg(long)]
        config: std::path::PathBuf,
        /// A CA certificate (PEM) to believe `api_base_url`'s certificate by
        /// over `https://`, beside the system's roots.
        #[arg(long, env = "SVC_CA")]
        ca: Option<std::path::PathBuf>,
    },
    /// Signed product searches against a running region from N connections;
    /// prints requests/s and latency percentiles as JSON.
    #[command(
        after_help = "Example:\n  svc loadgen --base-url http://127.0.0.1:8110 --key ai.json --sandbox-grant --connections 32 --seconds 20"
    )]
    Loadgen(loadgen::LoadgenArgs),
}

/// What `svc up` does not run yet.
pub const NOT_YET: &[&str] = &["svc client verify checks a passkey's (Path B) seal only through POST /v1/verify"];

pub fn run(cli: Cli) -> i32 {
    match cli.command {
        Command::Up { data_dir, listen, admin_listen, ports_from, latency, seed, tls, home_nodes } => {
            let plan = up::Plan { data_dir, listen, admin_listen, ports_from, latency, seed, tls, home_nodes };
            match up::run(plan) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("svc up: {e}");
                    1
                }
            }
        }
        Command::FrontDoor { config } => match front_door(&config) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("svc front-door: {e}");
                1
            }
        },
        Command::Node { config } => match node(&config) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("svc node: {e}");
                1
            }
        },
        Command::Doctor { config, json } => match node_config(&config) {
            Ok(config) => {
                let checks = doctor::examine(&config, svc_clock::Clock::now(&svc_clock::SystemClock));
                match output::Output::choose(json) {
                    output::Output::Human => print_out(&doctor::table(&checks)),
                    output::Output::Json => print_out(&doctor::answer(&checks).to_string()),
                }
                if doctor::passed(&checks) { 0 } else { 1 }
            }
            Err(e) => {
                eprintln!("svc doctor: {e}");
                2
            }
        },
        Command::Formats => {
            print_out(&serde_json::to_string_pretty(&formats()).unwrap_or_default());
            0
        }
        Command::Keygen { alg, out } => print_result(keygen(&alg, &out)),
        Command::Ca(args) => print_result(ca::run(args)),
        Command::Secret => {
            print_out(&hex::encode(svc_clock::random::<32>()));
            0
        }
        Command::Admin(args) => {
            let shape = match args.command {
                admin::AdminCommand::Observe => output::Shape::Observe,
                _ => output::Shape::Other,
            };
            match (output::Output::choose(args.json), block_on(admin::run(args))) {
                (output::Output::Human, Ok(answer)) => {
                    print_out(&output::human(shape, &answer));
                    0
                }
                (_, result) => print_result(result),
            }
        }
        Command::Client(args) => client::run(args),
        Command::Loadgen(args) => print_result(loadgen::run(args)),
        Command::Chaos { scenario, target, out, keep_data } => {
            match chaos(&scenario, target.as_deref(), &out, keep_data) {
                Ok(true) => 0,
                Ok(false) => 1,
                Err(e) => {
                    eprintln!("svc chaos: {e}");
                    2
                }
            }
        }
        Command::Mcp { config, ca } => {
            let served = block_on_workers(async move {
                let stopped = stop_signal()?;
                Ok(crate::own_mcp::run(&config, ca.as_deref(), stopped).await?)
            });
            match served {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("svc mcp: {e}");
                    1
                }
            }
        }
    }
}

/// Writes a command's output and a newline to stdout. A reader that went
/// away (`svc … | head`) ends the output quietly; `println!` would panic.
pub fn print_out(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}").and_then(|()| out.flush())
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("svc: writing the output: {e}");
    }
}

/// Prints a JSON answer to stdout (exit 0) or an error to stderr (exit 1).
fn print_result(result: Result<serde_json::Value, CliError>) -> i32 {
    match result {
        Ok(value) => {
            print_out(&serde_json::to_string_pretty(&value).unwrap_or_default());
            0
        }
        Err(e) => {
            eprintln!("svc: {}", output::error_text(&e));
            1
        }
    }
}

fn block_on<T>(future: impl std::future::Future<Output = Result<T, CliError>>) -> Result<T, CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(CliError::Runtime)?;
    runtime.block_on(future)
}

/// Runs `future` on a runtime with a worker per core: what a node, a front
/// door or a load generator needs.
pub(crate) fn block_on_workers<T>(
    future: impl std::future::Future<Output = Result<T, CliError>>,
) -> Result<T, CliError> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(CliError::Runtime)?;
    runtime.block_on(future)
}

/// A TOML configuration file, read and parsed; errors name the file.
fn toml_file<T: serde::de::DeserializeOwned>(path: &std::path::Path) -> Result<T, CliError> {
    let text = std::fs::read_to_string(path).map_err(|source| CliError::Io { path: path.to_owned(), source })?;
    toml::from_str(&text).map_err(|source| CliError::Toml { path: path.to_owned(), source: Box::new(source) })
}

fn keygen(alg: &str, out: &std::path::Path) -> Result<serde_json::Value, CliError> {
    let alg = match alg.to_ascii_lowercase().as_str() {
        "ed25519" => svc_core::keys::Alg::Ed25519,
        "es256" | "p256" | "p-256" => svc_core::keys::Alg::Es256,
        other => return Err(CliError::Usage(format!("--alg {other}: ed25519 or es256"))),
    };
    let key = svc_client::keyfile::generate(alg)?;
    let file = svc_client::keyfile::write(out, &key)?;
    Ok(serde_json::json!({"key_file": out, "alg": file.alg, "key_id": file.key_id, "jwk": file.jwk}))
}

/// The formats this build reads and writes, with the hashes that pin them:
/// the verification index.
pub fn formats() -> serde_json::Value {
    svc_core::index::verification_index()
}

/// Runs a chaos scenario; answers whether its verdict is the expected one.
fn chaos(
    path: &std::path::Path,
    target: Option<&std::path::Path>,
    out: &std::path::Path,
    keep_data: bool,
) -> Result<bool, CliError> {
    let text = std::fs::read_to_string(path).map_err(|source| CliError::Io { path: path.to_owned(), source })?;
    let scenario = crate::chaos::scenario::Scenario::parse(&path.display().to_string(), &text)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let target =
        target.map(crate::chaos::target::TargetFile::read).transpose().map_err(|e| CliError::Usage(e.to_string()))?;
    let binary = std::env::current_exe().map_err(CliError::Runtime)?;
    let stamp = svc_clock::Clock::now(&svc_clock::SystemClock).0;
    let out = out.join(format!("{}-{stamp}", scenario.name));
    let waiting = progress::Bar::waiting(&format!("chaos {}", scenario.name));
    waiting.set(0, 0, format!("a deployment under load and faults; the load lasts {} s", scenario.duration()));
    let report = block_on_workers(async move {
        let stopped = stop_signal()?;
        tokio::select! {
            report = async {
                match &target {
                    Some(target) => crate::chaos::run_against(&scenario, target, &out).await,
                    None => crate::chaos::run(&scenario, &binary, &out, keep_data).await,
                }
            } => report.map(|r| (r, out)).map_err(|e| CliError::Usage(e.to_string())),
            _ = stopped => Err(CliError::Usage("interrupted: every process the run started was stopped".into())),
        }
    })?;
    waiting.finish();
    let (report, out) = report;
    for checked in &report.invariants {
        eprintln!("{} {}: {}", if checked.held { "held  " } else { "FAILED" }, checked.name, checked.evidence);
    }
    eprintln!("verdict: {:?} (expected {:?})", report.verdict, report.expect);
    println!("{}", out.join("report.json").display());
    Ok(report.as_expected())
}

/// Runs one node until SIGINT or SIGTERM, then drains and stops. Its first
/// line on stdout is a JSON object with the bound addresses, for scripts.
fn node(path: &std::path::Path) -> Result<(), CliError> {
    svc_node::sabotage::started();
    for sabotage in svc_node::sabotage::chosen() {
        eprintln!("svc node: sabotaged on purpose (SVC_SABOTAGE): {}", sabotage.name());
    }
    let config = node_config(path)?;
    config.check_production()?;
    config.check_plain_http()?;
    block_on_workers(async move {
        let region = config.region.clone();
        let stopped = stop_signal()?;
        let clock: svc_clock::SharedClock = if config.fault_injection {
            eprintln!("svc node: fault injection is on (/admin/faults/*): for chaos runs only");
            std::sync::Arc::new(svc_node::faults::SkewedClock)
        } else {
            std::sync::Arc::new(svc_clock::SystemClock)
        };
        if let Some(group) = &config.home_group {
            // A member of home's group: its region runs while it leads.
            let (id, listen, admin_listen) = (group.id, config.listen, config.admin_listen);
            let internal = config.internal_listen.map(|a| a.to_string());
            let member = svc_http::group_node::GroupNode::start(config, clock).await?;
            println!(
                "{}",
                serde_json::json!({"region": region, "home_group_member": id, "group_listen": member.group_addr.to_string(),
                    "listen": listen.to_string(), "admin_listen": admin_listen.to_string(), "internal_listen": internal})
            );
            stopped.await;
            member.stop().await;
            return Ok(());
        }
        let node = svc_http::node::Node::start(config, clock).await?;
        println!(
            "{}",
            serde_json::json!({"region": region, "listen": node.addr.to_string(), "admin_listen": node.admin_addr.to_string(),
                "internal_listen": node.internal_addr.map(|a| a.to_string())})
        );
        stopped.await;
        node.stop().await;
        Ok(())
    })
}

/// A node's config file, with the secrets it names read.
pub fn node_config(path: &std::path::Path) -> Result<svc_node::config::NodeConfig, CliError> {
    let mut config: svc_node::config::NodeConfig = toml_file(path)?;
    config.read_secret_files(path.parent().unwrap_or(std::path::Path::new(".")))?;
    Ok(config)
}

/// SIGINT or SIGTERM, caught from the moment this returns: call it before
/// announcing readiness, so a signal sent right after is a clean stop and
/// not the default (killing) disposition.
pub(crate) fn stop_signal() -> Result<impl std::future::Future<Output = ()>, CliError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).map_err(CliError::Runtime)?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(CliError::Runtime)?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

/// Runs a front door until SIGINT or SIGTERM. Its first line on stdout is
/// a JSON object with its address.
fn front_door(path: &std::path::Path) -> Result<(), CliError> {
    let config: svc_http::front_door::FrontDoorConfig = toml_file(path)?;
    if config.tls.is_none() && !config.allow_plain_http {
        return Err(svc_node::config::ConfigError::PlainHttpUnsaid.into());
    }
    block_on_workers(async move {
        let stopped = stop_signal()?;
        let door = svc_http::front_door::FrontDoor::start(config).await?;
        println!("{}", serde_json::json!({"front_door": door.addr.to_string()}));
        stopped.await;
        door.stop().await;
        Ok(())
    })
}

/// A secret (an admin or replication token) kept in a file: made once,
/// readable by its owner only, so `svc admin` can find it.
pub(crate) fn secret_file(path: &std::path::Path) -> Result<String, CliError> {
    if let Ok(token) = std::fs::read_to_string(path) {
        return Ok(token.trim().to_owned());
    }
    let token = hex::encode(svc_clock::random::<24>());
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    use std::io::Write;
    let io = |source| CliError::Io { path: path.to_owned(), source };
    let mut file = options.open(path).map_err(io)?;
    file.write_all(token.as_bytes()).map_err(io)?;
    Ok(token)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// Every command `svc --help` lists, and every `svc client` command,
    /// shows an example in its help.
    #[test]
    fn each_command_s_help_gives_an_example() {
        /// Every command under `command`, at every depth, without one.
        fn without_example(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            if !command.get_after_help().is_some_and(|h| h.to_string().contains("Example:")) {
                missing.push(path.to_owned());
            }
            for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
                without_example(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut cli = Cli::command();
        cli.build();
        let mut missing = Vec::new();
        without_example(&cli, "svc", &mut missing);
        assert!(missing.is_empty(), "no example in the help of: {missing:?}");
    }
}
