//! An operator's own deployment, as `svc chaos --target deployment.toml`
//! drives it: each node's addresses, and the commands that kill, start,
//! pause, resume and cut off each one (systemd, docker compose or ssh: any
//! command line, run with `sh -c`). The runner starts and deletes nothing
//! of it; it runs the scenario's load and faults, then checks the same
//! invariants from outside.
//!
//! Each node's commands are its `[nodes.commands]` table. A command may
//! name `{node}` (the node's name), and a partition's or a heal's `{peer}`
//! and `{peer_host}` (the other side's name and the host of its public
//! URL). `deploy/compose-chaos.toml` is the one for the compose
//! example.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// How long a command may run before the fault counts as failed.
const COMMAND_WITHIN: Duration = Duration::from_secs(120);

/// `deployment.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetFile {
    /// The authority signed requests name: the nodes' `public_authority`.
    pub authority: String,
    /// The variable that holds the nodes' admin token (never the token
    /// itself, so the file can be kept with the deployment's other files).
    pub admin_token_env: String,
    /// The CA the nodes' certificates chain to (relative to the file);
    /// the system's roots when absent.
    pub ca: Option<PathBuf>,
    /// With home as a group: the load balancer over its members, as
    /// clients reach home.
    pub home: Option<HomeUrls>,
    pub nodes: Vec<TargetNode>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HomeUrls {
    pub public_url: String,
    pub admin_url: String,
}

/// One node: `home` (a lone home), `home-1`… (home's group's members), or
/// a read region by its name.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetNode {
    pub name: String,
    pub public_url: String,
    pub admin_url: String,
    /// `[nodes.commands]`.
    #[serde(default)]
    pub commands: Commands,
}

/// What acts on one node; a fault whose command is missing fails with
/// that said.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Commands {
    /// Ends the process at once (SIGKILL).
    pub kill: Option<String>,
    /// Starts it again over its data.
    pub start: Option<String>,
    /// Stops it answering while it keeps its sockets (SIGSTOP).
    pub pause: Option<String>,
    /// Undoes `pause` (SIGCONT).
    pub resume: Option<String>,
    /// Drops everything between it and `{peer}`, both ways.
    pub partition: Option<String>,
    /// Undoes `partition` for `{peer}`.
    pub heal: Option<String>,
}

/// One of a node's commands, picked from its `Commands`.
pub type Pick = fn(&Commands) -> &Option<String>;

/// Why a scenario cannot run on a target deployment.
#[derive(Debug, thiserror::Error)]
pub enum Unfit {
    #[error("the scenario's regions are {wanted:?}; the deployment's are {have:?}")]
    Regions { wanted: Vec<String>, have: Vec<String> },
    #[error("the scenario's home has {scenario} node(s); the deployment's {deployment}")]
    HomeSize { scenario: usize, deployment: usize },
    #[error("a {0} fault needs a process the runner started: it runs only on nodes the runner starts")]
    NeedsOwnProcess(&'static str),
    #[error("a {kind} fault on {aimed} needs `{command}` for {node}")]
    NoCommand { kind: &'static str, aimed: String, command: &'static str, node: String },
}

/// A command that failed: the line run, and what went wrong.
#[derive(Debug, thiserror::Error)]
#[error("{line}: {why}")]
pub struct CommandFailed {
    pub line: String,
    pub why: String,
}

/// Why a target file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: {detail}")]
    Invalid { path: String, detail: String },
}

impl TargetFile {
    /// Reads and checks `path`: names unique, home present (alone or as a
    /// group with its load balancer), a CA path made absolute.
    pub fn read(path: &Path) -> Result<TargetFile, TargetError> {
        let text = std::fs::read_to_string(path).map_err(|source| TargetError::Io { path: path.to_owned(), source })?;
        let invalid = |detail: String| TargetError::Invalid { path: path.display().to_string(), detail };
        let mut file: TargetFile = toml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        if let Some(ca) = &file.ca
            && ca.is_relative()
        {
            file.ca = Some(path.parent().unwrap_or(Path::new(".")).join(ca));
        }
        let mut names: Vec<&str> = file.nodes.iter().map(|n| n.name.as_str()).collect();
        names.sort();
        if let Some(twice) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(invalid(format!("two nodes are called {}", twice[0])));
        }
        let members = file.members();
        match (names.contains(&"home"), members, &file.home) {
            (true, 0, None) => {}
            (true, _, _) => return Err(invalid("name home alone, or its group's members home-1, home-2, …".into())),
            (false, 0, _) => return Err(invalid("no node is home (or home-1, home-2, … for a group)".into())),
            (false, _, None) => {
                return Err(invalid("home is a group: [home] names the load balancer its clients reach".into()));
            }
            (false, _, Some(_)) => {}
        }
        Ok(file)
    }

    /// How many members home's group has (0 for a lone `home`).
    pub fn members(&self) -> usize {
        self.nodes.iter().filter(|n| n.name.starts_with("home-")).count()
    }

    /// The read regions, by name.
    pub fn regions(&self) -> Vec<&str> {
        self.nodes.iter().map(|n| n.name.as_str()).filter(|n| *n != "home" && !n.starts_with("home-")).collect()
    }
}

/// Runs `command` with `sh -c`, its placeholders filled; fails with what it
/// printed when it exits with an error or runs past its time.
pub fn run(command: &str, fills: &[(&str, &str)]) -> Result<(), CommandFailed> {
    let mut line = command.to_owned();
    for (name, value) in fills {
        line = line.replace(&format!("{{{name}}}"), value);
    }
    let failed = |line: &str, why: String| CommandFailed { line: line.to_owned(), why };
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(&line)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| failed(&line, e.to_string()))?;
    let started = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                let mut said = String::new();
                if let Some(mut stderr) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut stderr, &mut said);
                }
                return Err(failed(&line, format!("{status}: {}", said.trim())));
            }
            Ok(None) if started.elapsed() > COMMAND_WITHIN => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(failed(&line, format!("still running after {} s", COMMAND_WITHIN.as_secs())));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(failed(&line, e.to_string())),
        }
    }
}

/// The host of a URL (`https://10.0.0.2:7080` → `10.0.0.2`).
pub fn host(url: &str) -> &str {
    let rest = url.split("://").nth(1).unwrap_or(url);
    let authority = rest.split('/').next().unwrap_or(rest);
    match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority.rsplit_once(':').map_or(authority, |(host, _)| host),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_s_placeholders_are_filled_and_its_failure_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let command = format!("echo {{node}} {{peer}} > {}", out.display());
        run(&command, &[("node", "eu"), ("peer", "home")]).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "eu home\n");
        let failed = run("echo no such unit >&2; exit 3", &[]).unwrap_err().to_string();
        assert!(failed.contains("no such unit") && failed.contains('3'), "{failed}");
    }

    #[test]
    fn a_url_s_host_is_read_for_ipv4_ipv6_and_names() {
        assert_eq!(host("https://10.0.0.2:7080"), "10.0.0.2");
        assert_eq!(host("https://[fd00::2]:7080/x"), "fd00::2");
        assert_eq!(host("https://home-1.internal"), "home-1.internal");
    }

    #[test]
    fn a_target_file_is_refused_when_home_is_missing_or_a_group_has_no_balancer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deployment.toml");
        let node = |name: &str| {
            format!(
                "[[nodes]]\nname = \"{name}\"\npublic_url = \"https://{name}:7080\"\nadmin_url = \"https://{name}:7081\"\n"
            )
        };
        let head = "authority = \"api.example\"\nadmin_token_env = \"SVC_ADMIN_TOKEN\"\n";
        let check = |body: String| {
            std::fs::write(&path, format!("{head}{body}")).unwrap();
            TargetFile::read(&path).map(|_| ()).map_err(|e| e.to_string())
        };
        assert!(check(node("home") + &node("eu")).is_ok());
        assert!(check(node("eu")).unwrap_err().contains("no node is home"));
        assert!(check(node("home-1") + &node("home-2") + &node("home-3")).unwrap_err().contains("[home]"));
        assert!(check(node("home") + &node("home-1")).unwrap_err().contains("alone"));
        assert!(check(node("eu") + &node("eu") + &node("home")).unwrap_err().contains("two nodes are called eu"));
        let balancer = "[home]\npublic_url = \"https://lb:443\"\nadmin_url = \"https://lb:8443\"\n\n";
        let group = format!("{balancer}{}{}{}", node("home-1"), node("home-2"), node("home-3"));
        let file = check(group).map(|_| TargetFile::read(&path).unwrap()).unwrap();
        assert_eq!((file.members(), file.regions()), (3, Vec::<&str>::new()));
    }
}
