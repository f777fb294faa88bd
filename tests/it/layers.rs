//! The layers hold. The workspace's crates are the layers, bottom up, and a
//! crate names only crates below it: Cargo refuses a cycle, these tests an
//! upward edge and a crate the list forgets. Within each crate the top-level
//! modules a reader sees form no cycle either. Then the finer rules Cargo
//! cannot see: a surface adapts the use cases and never reaches the store,
//! an actor or the replication log; a use case speaks no surface's types.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates, bottom up: (package, manifest folder, source folder).
const LAYERS: &[(&str, &str, &str)] = &[
    ("svc-core", "src/core", "src/core/src"),
    ("svc-clock", "src/clock", "src/clock"),
    ("svc-store", "src/store", "src/store"),
    ("svc-search", "src/search", "src/search"),
    ("svc-consensus", "src/consensus", "src/consensus"),
    ("svc-client", "src/client", "src/client"),
    ("svc-node", "src/node", "src/node"),
    ("svc-http", "src/http", "src/http"),
    ("svc", ".", "src/cli"),
];

use crate::common::sources::{root, rust_files};

fn manifest(folder: &str) -> toml::Table {
    std::fs::read_to_string(root().join(folder).join("Cargo.toml")).unwrap().parse().unwrap()
}

#[test]
fn each_crate_names_only_crates_below_it() {
    let members: Vec<String> = manifest(".")["workspace"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_owned())
        .collect();
    let listed: BTreeSet<&str> = LAYERS.iter().map(|(_, folder, _)| *folder).collect();
    let members: BTreeSet<&str> = members.iter().map(String::as_str).collect();
    assert_eq!(members, listed, "every crate of the workspace has its place among the layers");
    let mut upward = Vec::new();
    for (at, (name, folder, _)) in LAYERS.iter().enumerate() {
        let table = manifest(folder);
        assert_eq!(table["package"]["name"].as_str(), Some(*name));
        for section in ["dependencies", "dev-dependencies"] {
            let Some(deps) = table.get(section).and_then(|d| d.as_table()) else { continue };
            for dep in deps.keys().filter(|d| d.starts_with("svc-")) {
                let place = LAYERS.iter().position(|(n, _, _)| n == dep);
                if place.is_none_or(|p| p >= at) {
                    upward.push(format!("{name} names {dep} in {section}"));
                }
            }
        }
    }
    assert!(upward.is_empty(), "{upward:#?}");
}

/// The top-level modules of a crate's source folder and which of the
/// others each names (`crate::m`, or `m` inside `crate::{...}`).
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_str().unwrap().to_owned();
        if path.is_dir() {
            files.entry(stem).or_default().extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") && !["lib", "main"].contains(&stem.as_str()) {
            files.entry(stem).or_default().push(path);
        }
    }
    let modules: BTreeSet<String> = files.keys().cloned().collect();
    let mut graph = BTreeMap::new();
    for (module, paths) in &files {
        let mut named = BTreeSet::new();
        for path in paths {
            // Comments name modules without using them.
            let text: String = std::fs::read_to_string(path)
                .unwrap()
                .lines()
                .filter(|line| !line.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            for (at, _) in text.match_indices("crate::") {
                let rest = &text[at + "crate::".len()..];
                let heads: Vec<&str> = match rest.strip_prefix('{') {
                    // Each item of the group at its own depth names a module.
                    Some(group) => group_heads(group),
                    None => vec![ident(rest)],
                };
                named.extend(heads.into_iter().filter(|h| h != module && modules.contains(*h)).map(str::to_owned));
            }
        }
        graph.insert(module.clone(), named);
    }
    graph
}

fn ident(text: &str) -> &str {
    let end = text.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(text.len());
    &text[..end]
}

fn group_heads(group: &str) -> Vec<&str> {
    let mut heads = vec![ident(group.trim_start())];
    let mut depth = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => heads.push(ident(group[i + 1..].trim_start())),
            _ => {}
        }
    }
    heads
}

/// Every module that can reach itself through the graph.
fn in_cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&str> = graph[from].iter().map(String::as_str).collect();
        while let Some(m) = stack.pop() {
            if seen.insert(m.to_owned()) {
                stack.extend(graph[m].iter().map(String::as_str));
            }
        }
        seen
    };
    graph.keys().filter(|m| reach(m).contains(*m)).cloned().collect()
}

#[test]
fn no_crate_has_a_cycle_between_its_top_level_modules() {
    let mut found = Vec::new();
    for (name, _, src) in LAYERS {
        let graph = module_graph(&root().join(src));
        assert!(graph.len() > 1 || *name == "svc-clock", "{name}: found its modules");
        let cycle = in_cycles(&graph);
        if !cycle.is_empty() {
            found.push(format!("{name}: {cycle:?}"));
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn the_cycle_check_sees_a_cycle() {
    let graph: BTreeMap<String, BTreeSet<String>> =
        [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"]), ("d", vec!["a"])]
            .into_iter()
            .map(|(m, to)| (m.to_owned(), to.into_iter().map(str::to_owned).collect()))
            .collect();
    assert_eq!(in_cycles(&graph), ["a", "b", "c"].into_iter().map(str::to_owned).collect());
    assert_eq!(group_heads("actors::x, region::{a, b}, store};"), ["actors", "region", "store"]);
}

fn offenders(dir: &str, forbidden: &[&str], allowed: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for file in rust_files(&root().join(dir)) {
        let name = file.strip_prefix(root()).unwrap().display().to_string();
        if allowed.contains(&name.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for word in forbidden {
            if text.contains(word) {
                found.push(format!("{name} names {word}"));
            }
        }
    }
    found
}

const BELOW_THE_USE_CASES: &[&str] = &["svc_store", "svc_node::actors", "svc_node::replication", "ractor::"];

#[test]
fn http_handlers_reach_only_use_cases() {
    let found = offenders("src/http/api", BELOW_THE_USE_CASES, &[]);
    assert!(found.is_empty(), "{found:#?}");
}

// The MCP surfaces are adapters too: the public server calls the same use
// cases as the public routes, and `svc mcp` is a client of the API.
#[test]
fn mcp_tools_reach_only_use_cases() {
    let found = offenders("src/http/mcp", BELOW_THE_USE_CASES, &[]);
    assert!(found.is_empty(), "{found:#?}");
    let found = offenders("src/cli/own_mcp", &["svc_node::service", "svc_node::region"], &[]);
    assert!(found.is_empty(), "the self-hosted server knows only the API: {found:#?}");
}

#[test]
fn use_cases_speak_no_surface_types() {
    // A read region's hand-off of a write to home is a proxy: it passes an
    // HTTP request on as it came.
    let allowed = ["src/node/service/ops.rs"];
    let surface = ["axum", "IntoResponse", "StatusCode", "HeaderMap"];
    let found = offenders("src/node/service", &surface, &allowed);
    assert!(found.is_empty(), "{found:#?}");
}

// A use case names the parts of the region it reads (`region::parts`),
// never the whole region: its signature says what it touches.
#[test]
fn use_cases_take_only_the_parts_they_read() {
    let found = offenders("src/node/service", &["&Region", "region::Region", ": Region"], &[]);
    assert!(found.is_empty(), "{found:#?}");
}

// The time and the random source are read in one place, so a test can
// hand every layer a clock of its own.
#[test]
fn only_svc_clock_reads_the_wall_clock_or_the_random_source() {
    let found: Vec<String> = offenders("src", &["SystemTime::now", "getrandom::"], &["src/clock/lib.rs"])
        .into_iter()
        .filter(|f| !f.starts_with("src/core/"))
        .collect();
    assert!(found.is_empty(), "{found:#?}");
}

// Every listener is served within its limits: no `axum::serve`, whose
// connections have no deadline and no cap, outside `api::listener`.
#[test]
fn every_listener_is_served_within_its_limits() {
    // (The load generator's unit test stands up a stub server to drive.)
    let found = offenders("src", &["axum::serve("], &["src/cli/loadgen.rs"]);
    assert!(found.is_empty(), "{found:#?}");
}

// Errors are typed outside the pure rules: a string says what went wrong
// to a person, but no caller can tell one failure from another by it.
#[test]
fn no_error_is_a_bare_string_outside_svc_core() {
    let mut found = Vec::new();
    for file in rust_files(&root().join("src")) {
        let name = file.strip_prefix(root()).unwrap().display().to_string();
        if name.starts_with("src/core/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if code.match_indices("Result<").any(|(at, _)| error_type(&code[at + "Result<".len()..]) == Some("String"))
            {
                found.push(format!("{name}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

/// The second type argument of a `Result<` whose arguments `rest` begins
/// with, if it has one on this line.
fn error_type(rest: &str) -> Option<&str> {
    let mut depth = 0;
    let mut comma = None;
    for (i, c) in rest.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            ',' if depth == 0 => comma = Some(i),
            '>' | ')' | ']' if depth == 0 => return comma.map(|at| rest[at + 1..i].trim()),
            '>' | ')' | ']' => depth -= 1,
            _ => {}
        }
    }
    None
}
