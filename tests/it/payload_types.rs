//! The verification index lists every payload type this build issues or
//! accepts: each `pub const NAME: &str = "family.vN";` declared in the
//! sources, and each `payload_type("family.vN")` named outside a test
//! module. A type added without its index entry fails here.

use std::collections::BTreeSet;
use std::path::Path;

/// The `family.vN` names a source file declares or signs with, outside
/// its test module (a `tests.rs` file is one whole).
fn names_in(text: &str, found: &mut BTreeSet<String>) {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    for line in code.lines() {
        let line = line.trim();
        let quoted = line.split('"').nth(1);
        let declared = line.starts_with("pub const ") && line.contains(": &str = \"");
        let signed = line.contains("payload_type(\"");
        if let Some(name) = quoted.filter(|_| declared || signed)
            && let Some((family, version)) = name.rsplit_once(".v")
            && !family.is_empty()
            && family.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
            && version.parse::<u32>().is_ok()
        {
            found.insert(name.to_owned());
        }
    }
}

fn walk(dir: &Path, found: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("tests.rs") {
            names_in(&std::fs::read_to_string(&path).unwrap(), found);
        }
    }
}

// rule: P4.2.16
#[test]
fn the_verification_index_lists_every_payload_type_the_sources_name() {
    let mut found = BTreeSet::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut found);
    assert!(found.len() >= 20, "the scan finds the sources' types: {found:?}");
    let listed: BTreeSet<String> = svc_core::index::PAYLOAD_TYPES.iter().map(|t| (*t).to_owned()).collect();
    let missing: Vec<&String> = found.difference(&listed).collect();
    assert!(missing.is_empty(), "payload types missing from the verification index: {missing:?}");
    let served = svc_core::index::verification_index();
    let served: BTreeSet<String> = served["payload_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["payload_type"].as_str().unwrap().to_owned())
        .collect();
    for name in ["render.v1", "click.v1", "campaign.v1", "custody-request.v1"] {
        assert!(served.contains(&svc_core::dsse::payload_type(name)), "{name}");
    }
}
