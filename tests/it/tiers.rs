//! The hermetic tier stays hermetic: a plain `cargo test` runs tests/it/ with nothing but Rust
//! and this repository, so whatever there drives a tool (real Helm, kubectl and the fake API
//! server, a validator scripts/install-test-tools puts under target/) is behind the `tools`
//! feature. The scan finds each use of a tool in tests/it/ and fails unless the top-level item
//! that holds it, or its whole module in main.rs, is `#[cfg(feature = "tools")]`.

use std::path::PathBuf;

/// What only a tool-driven test writes: the helpers of tests/common that find or start a tool,
/// and the folders the tools are installed in.
const TOOL_USES: &[&str] = &[
    "venv_tool(",
    "helm_bin(",
    "helm_command(",
    "helm_probes(",
    "apiserver::",
    "node_module(",
    "target/tools",
    "target/venv",
];

const GATE: &str = "#[cfg(feature = \"tools\")]";

/// The 1-based lines of `code` that use a tool outside an item gated on the feature.
fn ungated(code: &str) -> Vec<usize> {
    let lines: Vec<&str> = code.lines().collect();
    let starts_item = |l: &str| {
        let l = l.strip_prefix("pub ").unwrap_or(l);
        [
            "fn ", "mod ", "struct ", "enum ", "impl", "const ", "static ", "use ", "type ",
        ]
        .iter()
        .any(|k| l.starts_with(k))
    };
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.trim_start().starts_with("//") || !TOOL_USES.iter().any(|t| l.contains(t)) {
            continue;
        }
        // The top-level item holding line i, then the attributes and docs right above it.
        let Some(start) = (0..=i).rev().find(|&j| starts_item(lines[j])) else {
            out.push(i + 1);
            continue;
        };
        let gated = (0..start)
            .rev()
            .map(|j| lines[j])
            .take_while(|a| a.starts_with("#[") || a.starts_with("//"))
            .any(|a| a == GATE);
        if !gated {
            out.push(i + 1);
        }
    }
    out
}

#[test]
fn every_tool_use_in_the_hermetic_binary_is_behind_the_tools_feature() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    let mut found = Vec::new();
    let mut scanned = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "main" || name == "tiers" || path.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        if main.contains(&format!("{GATE}\nmod {name};")) {
            continue;
        }
        scanned += 1;
        let code = std::fs::read_to_string(&path).unwrap();
        found.extend(
            ungated(&code)
                .into_iter()
                .map(|n| format!("tests/it/{name}.rs:{n}")),
        );
    }
    assert!(scanned > 20, "only {scanned} modules scanned");
    assert!(
        found.is_empty(),
        "a tool is used outside `{GATE}` (a plain `cargo test` would fail without it):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_finds_an_ungated_tool_use_and_passes_a_gated_one() {
    let code = "\
/// Docs.
#[test]
fn plain() {
    let t = common::venv_tool(\"shellcheck\");
}

/// Docs.
#[cfg(feature = \"tools\")]
#[test]
fn gated() {
    let t = common::venv_tool(\"shellcheck\");
}

#[cfg(feature = \"tools\")]
mod cluster {
    use crate::common::apiserver::Fake;
    fn f() {
        // target/tools in a comment is no use
    }
}
";
    assert_eq!(ungated(code), vec![4]);
}
