//! Hands four cGPU versions from the compatibility data (src/cgpu/compat.toml) to the crate's
//! static texts, so that the rule catalogue's summaries and help lines, which are `&'static str`
//! built with `concat!`, state the data's versions instead of a copy of them:
//!
//! - `CGPU_MIN_POLICY_VERSION`: `since` of the `[[support]]` entry with `kind = "policy"`;
//! - `CGPU_LAST_DEADLOCK_VERSION`: `to` of the `[[issue]]` entry `issue-deadlock`;
//! - `CGPU_RECOMMENDED_VERSION`: `fixed` of that entry (the FAQ's "upgrade to … or later");
//! - `CGPU_NEWEST_VERSION`: `newest` of `[meta]` (the value rules compare every tag with read
//!   it from here, so that a check does not parse the whole file at start-up).
//!
//! The scan is line by line over `[[table]]` blocks of `key = "value"` lines, which is all the file
//! uses for these keys; it needs no TOML parser at build time (no build dependency for the
//! pre-commit hook's cold build). The crate's decisions read the parsed data at run time
//! (`cgpu::compat::data()`), and a unit test holds these variables equal to it, so this scan
//! cannot drift from what the parser reads.

use std::collections::BTreeMap;

const DATA: &str = "src/cgpu/compat.toml";

/// One `[[table]]` block: its table name and its `key = "string"` pairs.
fn blocks(text: &str) -> Vec<(String, BTreeMap<String, String>)> {
    let mut out: Vec<(String, BTreeMap<String, String>)> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix("[[").and_then(|l| l.strip_suffix("]]")) {
            out.push((name.trim().to_string(), BTreeMap::new()));
        } else if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            out.push((format!("[{}]", name.trim()), BTreeMap::new()));
        } else if let Some((key, value)) = line.split_once('=')
            && let Some((_, last)) = out.last_mut()
            && let Some(value) = value
                .trim()
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
        {
            last.insert(key.trim().to_string(), value.to_string());
        }
    }
    out
}

fn find<'a>(
    blocks: &'a [(String, BTreeMap<String, String>)],
    table: &str,
    key: &str,
    value: &str,
) -> &'a BTreeMap<String, String> {
    blocks
        .iter()
        .find(|(name, m)| name == table && m.get(key).is_some_and(|v| v == value))
        .map(|(_, m)| m)
        .unwrap_or_else(|| panic!("{DATA}: no [[{table}]] with {key} = \"{value}\""))
}

fn get<'a>(m: &'a BTreeMap<String, String>, key: &str, what: &str) -> &'a str {
    m.get(key)
        .unwrap_or_else(|| panic!("{DATA}: {what} has no `{key}`"))
}

fn main() {
    println!("cargo:rerun-if-changed={DATA}");
    println!("cargo:rerun-if-changed=build.rs");
    let text = std::fs::read_to_string(DATA).unwrap_or_else(|e| panic!("{DATA}: {e}"));
    let blocks = blocks(&text);
    let policy = find(&blocks, "support", "kind", "policy");
    let deadlock = find(&blocks, "issue", "id", "issue-deadlock");
    let meta = blocks
        .iter()
        .find(|(name, _)| name == "[meta]")
        .map(|(_, m)| m)
        .unwrap_or_else(|| panic!("{DATA}: no [meta] table"));
    let facts = [
        (
            "CGPU_MIN_POLICY_VERSION",
            get(policy, "since", "the policy support entry"),
        ),
        (
            "CGPU_LAST_DEADLOCK_VERSION",
            get(deadlock, "to", "issue-deadlock"),
        ),
        (
            "CGPU_RECOMMENDED_VERSION",
            get(deadlock, "fixed", "issue-deadlock"),
        ),
        ("CGPU_NEWEST_VERSION", get(meta, "newest", "[meta]")),
    ];
    for (var, version) in facts {
        let parts: Vec<&str> = version.split('.').collect();
        assert!(
            parts.len() == 3 && parts.iter().all(|p| p.parse::<u64>().is_ok()),
            "{DATA}: {var} would be `{version}`, not MAJOR.MINOR.PATCH"
        );
        println!("cargo:rustc-env={var}={version}");
    }
}
