//! A node in a process of its own beside a bench: which cores each side
//! may run on, and whether the node is ready.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

/// Sets which cores every thread of this process may run on, such as `0`
/// or `0-1`.
pub fn pin_this_process(cores: &str) {
    let pid = std::process::id().to_string();
    let pinned = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", cores, pid.as_str()])
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(pinned, "taskset could not pin this process to cores {cores}");
}

/// `GET /readyz` at `addr`: its status and its JSON body, when it answered.
pub fn readyz(addr: SocketAddr) -> Option<(bool, serde_json::Value)> {
    let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    stream.write_all(b"GET /readyz HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n").ok()?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).ok()?;
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n")?;
    let ready = answer.starts_with(b"HTTP/1.1 200");
    Some((ready, serde_json::from_slice(&answer[split + 4..]).unwrap_or_default()))
}

/// Stops the node (SIGTERM) and waits for it.
pub fn stop(mut child: std::process::Child) {
    let stopped = std::process::Command::new("kill").arg(child.id().to_string()).status();
    assert!(stopped.is_ok_and(|s| s.success()), "the node could not be stopped");
    child.wait().expect("the node stops");
}

/// A build of the node to run as a process: each `FLAG LABEL=PATH` (this
/// bench's own `svc` when none is named), with the environment given by
/// each `FLAG-env LABEL=KEY=VALUE` (such as mimalloc's options).
pub struct NodeBuild {
    pub label: String,
    pub binary: String,
    pub env: Vec<(String, String)>,
}

pub fn node_builds(flag: &str) -> Vec<NodeBuild> {
    let args: Vec<String> = std::env::args().collect();
    let named = |flag: &str| {
        let pairs = args.windows(2).filter(|w| w[0] == flag).filter_map(|w| w[1].split_once('='));
        pairs.map(|(a, b)| (a.to_owned(), b.to_owned())).collect::<Vec<_>>()
    };
    let mut builds: Vec<NodeBuild> =
        named(flag).into_iter().map(|(label, binary)| NodeBuild { label, binary, env: Vec::new() }).collect();
    if builds.is_empty() {
        let binary = env!("CARGO_BIN_EXE_svc").to_owned();
        builds.push(NodeBuild { label: "this build".into(), binary, env: Vec::new() });
    }
    for (label, setting) in named(&format!("{flag}-env")) {
        let build = builds.iter_mut().find(|b| b.label == label).expect("the -env flag names a build's label");
        let (key, value) = setting.split_once('=').expect("-env LABEL=KEY=VALUE");
        build.env.push((key.to_owned(), value.to_owned()));
    }
    builds
}
