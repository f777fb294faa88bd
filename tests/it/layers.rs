//! The layers of the node hold: a surface (`src/http/`, `src/mcp/`) adapts the use
//! cases and never reaches the store, an actor or the replication log
//! itself; a use case (`src/service/`) never speaks a surface's types.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

fn offenders(dir: &str, forbidden: &[&str], allowed: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for file in rust_files(&root.join(dir)) {
        let name = file.strip_prefix(root).unwrap().display().to_string();
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

#[test]
fn http_handlers_reach_only_use_cases() {
    let found = offenders("src/http", &["crate::store", "crate::actors", "crate::replication", "ractor::"], &[]);
    assert!(found.is_empty(), "{found:#?}");
}

// The MCP surfaces are adapters too: the public server calls the same use
// cases as the public routes, and `svc mcp` is a client of the API.
#[test]
fn mcp_tools_reach_only_use_cases() {
    let found = offenders("src/mcp", &["crate::store", "crate::actors", "crate::replication", "ractor::"], &[]);
    assert!(found.is_empty(), "{found:#?}");
    let found = offenders("src/mcp/own", &["crate::service", "crate::region"], &[]);
    assert!(found.is_empty(), "the self-hosted server knows only the API: {found:#?}");
}

#[test]
fn use_cases_speak_no_surface_types() {
    // A read region's hand-off of a write to home is a proxy: it passes an
    // HTTP request on as it came.
    let allowed = ["src/service/ops.rs"];
    let surface = ["axum", "IntoResponse", "StatusCode", "HeaderMap", "crate::http"];
    let found = offenders("src/service", &surface, &allowed);
    assert!(found.is_empty(), "{found:#?}");
}

// Every listener is served within its limits: no `axum::serve`, whose
// connections have no deadline and no cap, outside `http::listener`.
#[test]
fn every_listener_is_served_within_its_limits() {
    // (The load generator's unit test stands up a stub server to drive.)
    let found = offenders("src", &["axum::serve("], &["src/loadgen.rs"]);
    assert!(found.is_empty(), "{found:#?}");
}

// Errors are typed outside the pure rules: a string says what went wrong
// to a person, but no caller can tell one failure from another by it.
#[test]
fn no_error_is_a_bare_string_outside_svc_core() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for file in rust_files(&root.join("src")) {
        let name = file.strip_prefix(root).unwrap().display().to_string();
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
