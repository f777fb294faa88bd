//! The operator guide's first day, run by the tour's test after the
//! README's tour (`tour.rs`): every command of
//! `deploy/OPERATING.md`'s "Before the first start" and "First start", read
//! from the guide itself, runs in order, and each one's effect is checked.
//! A command the test has no check for fails it, so the guide cannot drift
//! from what works.
//!
//! Neither a Docker engine nor systemd runs here (nor in CI), so the test
//! plays their part, and only this:
//! - The commands run in a copy of the repository's `regions/` and
//!   `deploy/`, with `svc` (on `PATH`, and as `target/release/svc`) the test
//!   build. The token loops run as written.
//! - `docker compose build` checks that `deploy/Dockerfile` builds `svc`
//!   from this repository and runs it as the image's command. The test
//!   build stands in for the image.
//! - `docker compose up -d <service>` runs the image's command as
//!   `deploy/compose.yaml` sets the service up: its config file copied with
//!   the container's paths (mounted secrets and volumes) made the host's,
//!   and each service's name, fixed address and `0.0.0.0` made
//!   `127.0.0.1`. A published port must be the node's own. `up` returns
//!   once each service's health check passes.
//! - `useradd` is not run: the nodes run as the test's user.
//! - `install` runs as written, but into a temporary root for `/`, and
//!   without `-o` and `-g` (the test's user cannot give files to root).
//! - `systemctl daemon-reload` checks that the units and their programs are
//!   in place; `systemctl enable --now` starts the unit's `ExecStart` in its
//!   `WorkingDirectory` with its `Environment=`, their paths under the
//!   temporary root.
//! - `curl …/readyz` is retried until the region is ready, as a health
//!   check would.
//!
//! Compose and systemd use the same ports: the compose regions stop before
//! the systemd part begins.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a node may take to start, or a region to be ready: a read
/// region's compose health check allows 120 s too (`start_period`).
const READY_WITHIN: Duration = Duration::from_secs(120);

/// The guide's first day: from "Before the first start" to the top-level
/// heading after "First start". Its indented blocks are commands (a list
/// item's, indented four more than its text): a line ending in `\` goes
/// on on the next, and a `for` loop runs to its `done`.
fn first_day_commands(guide: &str) -> Vec<String> {
    let start = guide.find("\n## Before the first start\n").expect("the guide says what to do before the first start");
    let first_start =
        start + 1 + guide[start..].find("\n## First start\n").expect("the guide has a first start after it");
    let end = guide[first_start..].find("\n## ").map_or(guide.len(), |i| first_start + i);
    let mut commands: Vec<String> = Vec::new();
    // The indentation of the text around, of the code block being read, and
    // whether a blank line came before.
    let (mut text, mut code, mut blank) = (0, None, true);
    for line in guide[start..end].lines() {
        let words = line.trim_start();
        if words.is_empty() {
            blank = true;
            continue;
        }
        let indent = line.len() - words.len();
        let (at, first) = match code {
            Some(at) if indent >= at => (at, false),
            _ if blank && indent >= text + 4 => (indent, true),
            _ => {
                code = None;
                blank = false;
                text = list_marker(words).map_or(indent.min(text), |marker| indent + marker);
                continue;
            }
        };
        code = Some(at);
        blank = false;
        let line = without_comment(&line[at..]);
        match commands.last_mut() {
            // A continued line is one command.
            Some(last) if !first && last.ends_with('\\') => {
                last.pop();
                last.push_str(line.trim_start());
            }
            Some(last) if !first && last.starts_with("for ") && !last.ends_with("done") => {
                last.push('\n');
                last.push_str(line);
            }
            _ => commands.push(line.to_owned()),
        }
    }
    commands
}

/// The width of a list item's marker (`- `, `1. `), if the text starts one.
fn list_marker(words: &str) -> Option<usize> {
    if words.starts_with("- ") || words.starts_with("* ") {
        return Some(2);
    }
    let digits = words.len() - words.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    (digits > 0 && words[digits..].starts_with(". ")).then_some(digits + 2)
}

/// A shell command without its trailing comment (`  # …`).
fn without_comment(line: &str) -> &str {
    line.find("   #").or_else(|| line.find("  # ")).map_or(line, |i| &line[..i]).trim_end()
}

/// A node the test started: a compose service or a systemd unit.
struct Node {
    name: String,
    child: Child,
    log: PathBuf,
    region: String,
    listen: String,
}

/// The nodes of one deployment, stopped when dropped, also when a check
/// fails: SIGTERM (each drains and stops), then SIGKILL after 10 s.
#[derive(Default)]
struct Nodes(Vec<Node>);

impl Drop for Nodes {
    fn drop(&mut self) {
        for node in &self.0 {
            let _ = Command::new("kill").arg(node.child.id().to_string()).status();
        }
        for node in &mut self.0 {
            let deadline = Instant::now() + Duration::from_secs(10);
            while !matches!(node.child.try_wait(), Ok(Some(_))) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = node.child.kill();
            let _ = node.child.wait();
        }
    }
}

impl Nodes {
    /// Starts `svc node` and waits for its first line on stdout: its region
    /// and the addresses it bound.
    fn start(&mut self, name: &str, mut command: Command, log: PathBuf) -> Value {
        let stderr = std::fs::File::create(&log).unwrap();
        let mut child = command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(stderr).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        self.0.push(Node { name: name.to_owned(), child, log, region: String::new(), listen: String::new() });
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            let mut first = String::new();
            let _ = stdout.read_line(&mut first);
            let _ = sender.send(first);
            // The rest is read, so the node never waits on a full pipe.
            let _ = std::io::copy(&mut stdout, &mut std::io::sink());
        });
        let first = receiver.recv_timeout(READY_WITHIN).unwrap_or_default();
        let node = self.0.last_mut().unwrap();
        let started: Value = serde_json::from_str(&first)
            .unwrap_or_else(|_| panic!("{name} did not start: {first:?}\n{}", tail(&node.log)));
        node.region = started["region"].as_str().unwrap_or_default().to_owned();
        node.listen = started["listen"].as_str().unwrap_or_default().to_owned();
        started
    }
}

/// The end of a node's log, to show why it failed.
fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// How a command ran.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// What the test reads of `deploy/compose.yaml`: the image's build, each
/// service, and the files the secrets are read from.
#[derive(Default)]
struct Compose {
    context: String,
    dockerfile: String,
    services: Vec<Service>,
    /// Each secret's name and file, relative to the compose file's folder.
    secrets: Vec<(String, String)>,
}

#[derive(Default)]
struct Service {
    name: String,
    /// Each mount's source and its path in the container.
    volumes: Vec<(String, String)>,
    secrets: Vec<String>,
    ports: Vec<String>,
    /// The fixed address on the compose network, if any.
    address: Option<String>,
    healthcheck: Vec<String>,
}

/// A line reader for the parts of the compose file the test plays (no YAML
/// parser is among the dependencies): keys at fixed indentations, lists of
/// `- item`.
fn read_compose(text: &str) -> Compose {
    let mut compose = Compose::default();
    let (mut section, mut key, mut secret) = ("", "", "");
    for line in text.lines() {
        let words = line.trim();
        if words.is_empty() || words.starts_with('#') {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let item = words.strip_prefix("- ").map(|i| i.trim_matches('"'));
        // The image's build, in the nodes' shared settings.
        if let Some(context) = words.strip_prefix("context: ") {
            compose.context = context.to_owned();
        }
        if let Some(dockerfile) = words.strip_prefix("dockerfile: ") {
            compose.dockerfile = dockerfile.to_owned();
        }
        match (indent, section) {
            (0, _) => section = words.trim_end_matches(':'),
            (2, "services") => {
                compose.services.push(Service { name: words.trim_end_matches(':').to_owned(), ..Service::default() })
            }
            (4, "services") => key = words.split(':').next().unwrap_or_default(),
            (_, "services") => {
                let service = compose.services.last_mut().unwrap();
                match (key, item) {
                    ("volumes", Some(volume)) => {
                        let mut parts = volume.split(':');
                        let (source, target) = (parts.next().unwrap(), parts.next().unwrap());
                        service.volumes.push((source.to_owned(), target.to_owned()));
                    }
                    ("secrets", Some(name)) => service.secrets.push(name.to_owned()),
                    ("ports", Some(port)) => service.ports.push(port.to_owned()),
                    ("networks", None) => {
                        if let Some(address) = words.strip_prefix("ipv4_address: ") {
                            service.address = Some(address.to_owned());
                        }
                    }
                    ("healthcheck", None) => {
                        if let Some(test) = words.strip_prefix("test: ") {
                            service.healthcheck = serde_json::from_str(test).unwrap();
                        }
                    }
                    _ => {}
                }
            }
            (2, "secrets") => secret = words.trim_end_matches(':'),
            (4, "secrets") => {
                if let Some(file) = words.strip_prefix("file: ") {
                    compose.secrets.push((secret.to_owned(), file.to_owned()));
                }
            }
            _ => {}
        }
    }
    compose
}

/// What the test takes of the image: its last stage's command, working
/// directory and environment.
struct Image {
    command: Vec<String>,
    workdir: String,
    env: Vec<(String, String)>,
}

/// A Dockerfile's instructions, each continued line joined.
fn instructions(dockerfile: &str) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for line in dockerfile.lines().filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty()) {
        match all.last_mut() {
            Some(last) if last.ends_with('\\') => {
                last.pop();
                last.push_str(line.trim_start());
            }
            _ => all.push(line.to_owned()),
        }
    }
    all
}

/// The nodes run as the test's own processes, so everything in a unit file
/// or a compose service that names a place in `/` is played by a folder.
struct Day {
    /// The temporary folder everything below is in.
    dir: PathBuf,
    /// The copy of the repository the commands run in.
    repo: PathBuf,
    /// What `/` stands for under systemd.
    root: PathBuf,
    /// Where compose's volumes and the services' config files in host terms are.
    containers: PathBuf,
    /// The `svc` on `PATH`.
    bin: PathBuf,
    logs: PathBuf,
    compose: Compose,
    image: Option<Image>,
    compose_nodes: Nodes,
    systemd_nodes: Nodes,
    /// The commands the test cannot run, and checks only.
    not_run: Vec<String>,
}

impl Day {
    fn new(dir: &Path) -> Day {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let repo = dir.join("repo");
        for folder in ["regions", "deploy"] {
            // As a fresh checkout has it: without tokens drawn or data written by a local run.
            crate::common::copy_tree(&manifest.join(folder), &repo.join(folder), &["secrets", "data"]);
        }
        // The binary `cargo build --release` would have written.
        std::fs::create_dir_all(repo.join("target/release")).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_svc"), repo.join("target/release/svc")).unwrap();
        let bin = dir.join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_svc"), bin.join("svc")).unwrap();
        // What a Debian machine has before the guide's first command.
        let root = dir.join("root");
        for folder in ["usr/local/bin", "etc/systemd/system", "var/lib"] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
        }
        let (containers, logs) = (dir.join("containers"), dir.join("logs"));
        std::fs::create_dir(&containers).unwrap();
        std::fs::create_dir(&logs).unwrap();
        let compose = read_compose(&std::fs::read_to_string(repo.join("deploy/compose.yaml")).unwrap());
        Day {
            dir: dir.to_owned(),
            repo,
            root,
            containers,
            bin,
            logs,
            compose,
            image: None,
            compose_nodes: Nodes::default(),
            systemd_nodes: Nodes::default(),
            not_run: Vec::new(),
        }
    }

    fn bash(&self, script: &str) -> Ran {
        let path = format!("{}:{}", self.bin.display(), std::env::var("PATH").unwrap_or_default());
        let output = Command::new("timeout")
            .args(["300", "bash", "-c", script])
            .current_dir(&self.repo)
            .env("PATH", path)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        Ran {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Runs a command of the guide as written, and checks it succeeded.
    fn bash_ok(&self, command: &str) {
        let ran = self.bash(command);
        assert_eq!(ran.code, 0, "{command}\nstdout: {}\nstderr: {}", ran.stdout, ran.stderr);
    }

    /// An absolute path of the guide, under the root that stands for `/`.
    fn under_root(&self, path: &str) -> String {
        assert!(path.starts_with('/'), "{path} is absolute");
        format!("{}{path}", self.root.display())
    }

    fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.compose_nodes.0.iter().chain(&self.systemd_nodes.0)
    }

    /// The end of every running node's log.
    fn logs(&self) -> String {
        self.nodes().map(|n| format!("--- {} ---\n{}\n", n.name, tail(&n.log))).collect()
    }

    /// Tries until `attempt` gives an answer, as a health check would.
    fn within<T>(&self, what: &str, mut attempt: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Some(done) = attempt() {
                return done;
            }
            assert!(Instant::now() < deadline, "{what}: not within {READY_WITHIN:?}\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Plays one command of the guide and checks what it did. A command no
    /// rule knows fails the test.
    fn run(&mut self, command: &str) {
        if ["useradd ", "install ", "systemctl "].iter().any(|p| command.starts_with(p)) {
            // The systemd part: the compose regions hold the same ports.
            drop(std::mem::take(&mut self.compose_nodes));
        }
        match command {
            c if c.starts_with("mkdir -p ") => {
                self.bash_ok(c);
                for folder in c.split_whitespace().skip(2) {
                    assert!(self.repo.join(folder).is_dir(), "{c}: no {folder}");
                }
            }
            c if c.starts_with("for f in ") => self.tokens(c),
            c if c.starts_with("docker compose ") => {
                let words: Vec<&str> = c.split_whitespace().collect();
                let ["docker", "compose", "-f", "deploy/compose.yaml", action @ ..] = words.as_slice() else {
                    panic!("the guide runs compose on another file than deploy/compose.yaml: {c}")
                };
                match action {
                    ["build"] => self.build(),
                    ["up", "-d", services @ ..] if !services.is_empty() => self.compose_up(services),
                    _ => panic!("the guide runs a compose command this test does not play: {c}"),
                }
            }
            c if c.starts_with("curl -s http://") && c.ends_with("/readyz") => self.ready(c),
            c if c.starts_with("useradd ") => self.useradd(c),
            c if c.starts_with("install ") => self.install(c),
            "systemctl daemon-reload" => self.daemon_reload(),
            c if c.starts_with("systemctl enable --now ") => {
                self.enable(c.trim_start_matches("systemctl enable --now "))
            }
            other => panic!("deploy/OPERATING.md's first day runs a command this test does not check: {other}"),
        }
    }

    /// `for f in <names>; do svc secret > <folder>/$f; done`: run as
    /// written; each name is a file of its own 256-bit token.
    fn tokens(&self, command: &str) {
        self.bash_ok(command);
        let (head, body) = command.split_once("; do").expect("for … ; do … done");
        let names: Vec<&str> = head.trim_start_matches("for f in ").split_whitespace().collect();
        let folder = body.split_once("> ").and_then(|(_, to)| to.split_once("/$f")).expect("written to <folder>/$f").0;
        let mut tokens = std::collections::HashSet::new();
        for name in &names {
            let token = std::fs::read_to_string(self.repo.join(folder).join(name)).unwrap();
            let token = token.trim().to_owned();
            assert!(token.len() == 64 && token.chars().all(|c| c.is_ascii_hexdigit()), "{folder}/{name}: {token:?}");
            tokens.insert(token);
        }
        assert_eq!(tokens.len(), names.len(), "each file its own token");
    }

    /// `docker compose build`: the compose file builds its image from the
    /// repository with deploy/Dockerfile, which compiles `svc` and runs it.
    fn build(&mut self) {
        let (context, dockerfile) = (&self.compose.context, &self.compose.dockerfile);
        let context = self.repo.join("deploy").join(context);
        assert!(context.join("deploy").is_dir() && context.join("regions").is_dir(), "the context is the repository");
        let text = std::fs::read_to_string(context.join(dockerfile)).unwrap();
        let all = instructions(&text);
        assert!(
            all.iter().any(|i| i.starts_with("RUN ") && i.contains("cargo build --release --locked --bin svc")),
            "{dockerfile} builds svc from Cargo.lock:\n{text}"
        );
        // What the build needs is in its context.
        let ignored = std::fs::read_to_string(context.join(format!("{dockerfile}.dockerignore"))).unwrap();
        for needed in ["Cargo.toml", "Cargo.lock", "src", "benches"] {
            let excluded = ignored.lines().any(|l| l.trim().trim_end_matches('/') == needed);
            assert!(!excluded && Path::new(env!("CARGO_MANIFEST_DIR")).join(needed).exists(), "{needed}");
        }
        let last = all.iter().rposition(|i| i.starts_with("FROM ")).unwrap();
        let stage = &all[last..];
        assert!(
            stage.iter().any(|i| i.starts_with("COPY --from=") && i.ends_with(" /usr/local/bin/svc")),
            "the image holds the built svc:\n{text}"
        );
        let value = |instruction: &str| stage.iter().rev().find_map(|i| i.strip_prefix(instruction));
        let array = |instruction: &str| -> Vec<String> {
            serde_json::from_str(value(instruction).unwrap_or_else(|| panic!("no {instruction}in {dockerfile}")))
                .unwrap()
        };
        let command = [array("ENTRYPOINT "), array("CMD ")].concat();
        assert_eq!(command[..3], ["svc", "node", "--config"], "the image runs a node");
        let env = stage
            .iter()
            .filter_map(|i| i.strip_prefix("ENV "))
            .flat_map(str::split_whitespace)
            .filter_map(|v| v.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let workdir = value("WORKDIR ").expect("a working directory").to_owned();
        self.image = Some(Image { command, workdir, env });
    }

    /// `docker compose up -d <services>`: each service's node from the
    /// image's command, in host terms; done once each is healthy.
    fn compose_up(&mut self, services: &[&str]) {
        for name in services {
            self.compose_start(name);
        }
        for name in services {
            let service = self.compose.services.iter().find(|s| s.name == *name).unwrap();
            let test: Vec<&str> = service.healthcheck.iter().map(String::as_str).collect();
            let ["CMD", program, args @ ..] = test.as_slice() else {
                panic!("{name}'s health check is not a command: {test:?}")
            };
            self.within(&format!("{name}'s health check"), || {
                let status = Command::new(program).args(args).stdout(Stdio::null()).stderr(Stdio::null()).status();
                status.is_ok_and(|s| s.success()).then_some(())
            });
        }
    }

    fn compose_start(&mut self, name: &str) {
        let image = self.image.as_ref().expect("the guide builds the image before it starts a service");
        let service = self.compose.services.iter().find(|s| s.name == name);
        let service = service.unwrap_or_else(|| panic!("compose.yaml has no service {name}"));
        let deploy = self.repo.join("deploy");
        // Each path in the container, and what stands for it on the host.
        let mut mounts: Vec<(String, PathBuf)> = Vec::new();
        let mut config = None;
        for (source, target) in &service.volumes {
            if source.starts_with('.') {
                // The region's config file: a copy in host terms, below.
                let copy = self.containers.join(format!("{name}.toml"));
                config = Some((deploy.join(source.trim_start_matches("./")), copy.clone()));
                mounts.push((target.clone(), copy));
            } else {
                let volume = self.containers.join(source);
                std::fs::create_dir_all(&volume).unwrap();
                mounts.push((target.clone(), volume));
            }
        }
        for secret in &service.secrets {
            let file = self.compose.secrets.iter().find(|(s, _)| s == secret);
            let file = &file.unwrap_or_else(|| panic!("{name}'s secret {secret} is not declared")).1;
            mounts.push((format!("/run/secrets/{secret}"), deploy.join(file.trim_start_matches("./"))));
        }
        let (source, copy) = config.expect("a config file mounted");
        let mut text = std::fs::read_to_string(source).unwrap().replace("0.0.0.0:", "127.0.0.1:");
        for other in &self.compose.services {
            text = text.replace(&format!("http://{}:", other.name), "http://127.0.0.1:");
            if let Some(address) = &other.address {
                text = text.replace(&format!("\"{address}\""), "\"127.0.0.1\"");
            }
        }
        for (inside, host) in &mounts {
            text = text.replace(&format!("\"{inside}\""), &format!("\"{}\"", host.display()));
        }
        std::fs::write(copy, &text).unwrap();
        let table: toml::Table = text.parse().unwrap();
        // Every file and folder the node is given, compose mounts.
        for path in table.values().flat_map(strings).filter(|s| s.starts_with('/')) {
            assert!(Path::new(path).starts_with(&self.dir), "{name}: nothing in compose.yaml mounts {path}");
        }
        let setting = |key: &str| table.get(key).and_then(toml::Value::as_str).unwrap_or_default().to_owned();
        let listens = [setting("listen"), setting("admin_listen")];
        for port in &service.ports {
            let mut parts = port.rsplit(':');
            let (inside, host) = (parts.next().unwrap(), parts.next().unwrap());
            assert_eq!(inside, host, "{name}: the test runs the node on the host, at the port it publishes");
            assert!(
                listens.iter().any(|l| l.ends_with(&format!(":{inside}"))),
                "{name} listens at {port}: {listens:?}"
            );
        }
        let in_host = |word: &String| mounts.iter().find(|(inside, _)| inside == word).map(|(_, host)| host.clone());
        let (program, args) = image.command.split_first().unwrap();
        assert_eq!(program, "svc", "the image's program is svc");
        let mut node = Command::new(env!("CARGO_BIN_EXE_svc"));
        node.args(args.iter().map(|a| in_host(a).map_or_else(|| a.into(), PathBuf::into_os_string)));
        node.current_dir(in_host(&image.workdir).expect("the working directory is a volume"));
        for (key, value) in &image.env {
            node.env(key, value);
        }
        let log = self.logs.join(format!("compose-{name}.log"));
        let started = self.compose_nodes.start(&format!("compose {name}"), node, log);
        assert_eq!(started["region"].as_str(), Some(setting("region").as_str()), "{started}");
        assert_eq!(started["listen"].as_str(), Some(listens[0].as_str()), "{started}");
    }

    /// `curl -s …/readyz`, until the region there says it is ready.
    fn ready(&self, command: &str) {
        let address = command.trim_start_matches("curl -s http://").trim_end_matches("/readyz");
        let node = self.nodes().find(|n| n.listen == address);
        let region = &node.unwrap_or_else(|| panic!("{command}: no node the guide started listens there")).region;
        let body = self.within(&format!("{command} answers ready"), || {
            let body: Value = serde_json::from_str(&self.bash(command).stdout).ok()?;
            (body["ready"] == true).then_some(body)
        });
        assert_eq!(body["region"].as_str(), Some(region.as_str()), "{body}");
    }

    /// The units as the repository ships them.
    fn units(&self) -> Vec<(String, String)> {
        let folder = self.repo.join("deploy/systemd");
        let mut units: Vec<(String, String)> = std::fs::read_dir(folder)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                let text = std::fs::read_to_string(&p).unwrap();
                (p.file_name().unwrap().to_string_lossy().into_owned(), text)
            })
            .collect();
        units.sort();
        assert!(!units.is_empty());
        units
    }

    /// `useradd … svc`: not run (the test cannot add users; the nodes run
    /// as its own). The user and its group are the ones the units run as,
    /// its home their working directory.
    fn useradd(&mut self, command: &str) {
        let words: Vec<&str> = command.split_whitespace().collect();
        let user = words.last().unwrap();
        assert!(words.contains(&"--user-group"), "{command}: the units' group is the user's own");
        let home = words.iter().position(|w| *w == "--home-dir").map(|i| words[i + 1]);
        for (file, unit) in self.units() {
            assert_eq!(settings(&unit, "User"), [*user], "{file}");
            assert_eq!(settings(&unit, "Group"), [*user], "{file}");
            assert_eq!(settings(&unit, "WorkingDirectory").first().copied(), home, "{file}");
        }
        self.not_run.push(command.to_owned());
    }

    /// `install`, with `/` under the test's root and no owner: each file
    /// or folder in place, with its mode.
    fn install(&self, command: &str) {
        let mut words = command.split_whitespace().skip(1);
        let (mut mode, mut folders, mut paths) = (None, false, Vec::new());
        while let Some(word) = words.next() {
            match word {
                // Owner and group: the test's user cannot give files to root.
                "-o" | "-g" => {
                    words.next();
                }
                "-m" => mode = words.next(),
                "-d" => folders = true,
                option if option.starts_with('-') => panic!("{command}: no interpretation of {option}"),
                path if path.starts_with('/') => paths.push(self.under_root(path)),
                path => paths.push(path.to_owned()),
            }
        }
        let mode = mode.unwrap_or_else(|| panic!("{command}: a mode"));
        self.bash_ok(&format!("install {}-m {mode} {}", if folders { "-d " } else { "" }, paths.join(" ")));
        let mode = u32::from_str_radix(mode, 8).unwrap();
        let installed: Vec<PathBuf> = if folders {
            paths.iter().map(PathBuf::from).collect()
        } else {
            let (target, sources) = paths.split_last().unwrap();
            let target = Path::new(target);
            let placed = |source: &String| {
                let installed = if target.is_dir() {
                    target.join(Path::new(source).file_name().unwrap())
                } else {
                    target.to_owned()
                };
                let size = |path: &Path| std::fs::metadata(path).unwrap().len();
                assert_eq!(size(&installed), size(&self.repo.join(source)), "{command}: {source}");
                installed
            };
            sources.iter().map(placed).collect()
        };
        for path in installed {
            let metadata = std::fs::metadata(&path).unwrap_or_else(|e| panic!("{command}: {}: {e}", path.display()));
            assert_eq!(metadata.is_dir(), folders, "{}", path.display());
            assert_eq!(metadata.permissions().mode() & 0o7777, mode, "{command}: {}", path.display());
        }
    }

    /// `systemctl daemon-reload`: every unit is in place, and the program
    /// it starts too.
    fn daemon_reload(&self) {
        let installed = self.root.join("etc/systemd/system");
        for (file, _) in self.units() {
            let unit = std::fs::read_to_string(installed.join(&file))
                .unwrap_or_else(|e| panic!("{file} is not in /etc/systemd/system: {e}"));
            let [exec] = settings(&unit, "ExecStart")[..] else { panic!("{file}: one ExecStart") };
            let program = self.under_root(exec.split_whitespace().next().unwrap());
            let executable =
                std::fs::metadata(&program).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
            assert!(executable, "{file} starts {program}, which is not installed");
        }
    }

    /// `systemctl enable --now <unit>`: its `ExecStart` (`%i` its
    /// instance), in its `WorkingDirectory` (made as `StateDirectory=`
    /// would), with its `Environment=`, each path under the root.
    fn enable(&mut self, name: &str) {
        // svc-read@eu.service is the template svc-read@.service, for eu.
        let (file, instance) = match name.split_once('@') {
            Some((template, rest)) => {
                let (instance, kind) = rest.split_once('.').expect("<template>@<instance>.service");
                (format!("{template}@.{kind}"), instance)
            }
            None => (name.to_owned(), ""),
        };
        let unit = std::fs::read_to_string(self.root.join("etc/systemd/system").join(&file))
            .unwrap_or_else(|e| panic!("{name}: {file} is not installed: {e}"))
            .replace("%i", instance);
        let one = |key: &str| match settings(&unit, key)[..] {
            [value] => value,
            _ => panic!("{file}: not one {key}="),
        };
        assert!(!settings(&unit, "WantedBy").is_empty(), "{file}: enable needs [Install] WantedBy=");
        for state in settings(&unit, "StateDirectory") {
            std::fs::create_dir_all(self.root.join("var/lib").join(state)).unwrap();
        }
        let cwd = PathBuf::from(self.under_root(one("WorkingDirectory")));
        let writable = PathBuf::from(self.under_root(one("ReadWritePaths")));
        let exec: Vec<String> = one("ExecStart")
            .split_whitespace()
            .map(|w| if w.starts_with('/') { self.under_root(w) } else { w.to_owned() })
            .collect();
        let config = exec.iter().position(|w| w == "--config").map(|i| &exec[i + 1]).expect("--config <file>");
        let config: toml::Table = std::fs::read_to_string(config)
            .unwrap_or_else(|e| panic!("{name}: {config}: {e}"))
            .parse()
            .unwrap_or_else(|e| panic!("{name}: {config}: {e}"));
        let region = config.get("region").and_then(toml::Value::as_str).unwrap_or_default().to_owned();
        if !instance.is_empty() {
            assert_eq!(region, instance, "{name} runs the region of its name");
        }
        // The unit lets the node write under ReadWritePaths only.
        let data_dir = cwd.join(config.get("data_dir").and_then(toml::Value::as_str).unwrap_or_default());
        assert!(
            data_dir.starts_with(writable),
            "{name}: data_dir {} is outside {}",
            data_dir.display(),
            one("ReadWritePaths")
        );
        let mut node = Command::new(&exec[0]);
        node.args(&exec[1..]).current_dir(&cwd);
        for variable in settings(&unit, "Environment") {
            let (key, value) = variable.split_once('=').unwrap();
            node.env(key, value);
        }
        let started = self.systemd_nodes.start(name, node, self.logs.join(format!("{name}.log")));
        assert_eq!(started["region"].as_str(), Some(region.as_str()), "{started}");
        assert!(data_dir.is_dir(), "{name} keeps its data in {}", data_dir.display());
    }
}

/// A unit file's values of `key=` (`Environment=` may repeat), not those
/// commented out.
fn settings<'a>(unit: &'a str, key: &str) -> Vec<&'a str> {
    unit.lines().filter_map(|l| l.strip_prefix(key)?.strip_prefix('=')).collect()
}

/// Every string a TOML value holds.
fn strings(value: &toml::Value) -> Vec<&str> {
    match value {
        toml::Value::String(text) => vec![text.as_str()],
        toml::Value::Array(items) => items.iter().flat_map(strings).collect(),
        toml::Value::Table(table) => table.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

/// Runs the guide's first day; the tour test calls it after the README's
/// tour, so both run in one test.
pub fn operating_s_first_day_runs_as_written() {
    let guide = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/OPERATING.md")).unwrap();
    let commands = first_day_commands(&guide);
    let dir = tempfile::tempdir().unwrap();
    let mut day = Day::new(dir.path());
    for command in &commands {
        day.run(command);
    }
    // Both ways ran to ready regions.
    let readies = commands.iter().filter(|c| c.ends_with("/readyz")).count();
    assert!(commands.len() > 15 && readies >= 3, "the first day ran {} commands: {commands:#?}", commands.len());
    eprintln!("played, not run: {:?}", day.not_run);
    drop(day);
}
