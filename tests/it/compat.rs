//! The compatibility data (src/cgpu/compat.toml) and what reads it: `cgpu-lint compat`,
//! `explain`, and the node rules over node fixtures. The oracle for the printed table is the
//! data file itself, read here with the toml crate as plain TOML (not through the crate's
//! types); the oracle for the node findings is the sourced facts each fixture's comment names.

use crate::common::*;

use serde_json::Value;

const DATA: &str = include_str!("../../src/cgpu/compat.toml");

fn toml_data() -> toml::Table {
    DATA.parse().expect("compat.toml is TOML")
}

fn tables<'a>(t: &'a toml::Table, key: &str) -> Vec<&'a toml::Table> {
    t.get(key)
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|e| e.as_table()).collect())
        .unwrap_or_default()
}

const ENTRY_TABLES: [&str; 12] = [
    "driver",
    "support",
    "cgroup_v2",
    "families",
    "issue",
    "conflict",
    "kubelet",
    "driver_list",
    "family_needs",
    "schedule",
    "pool_drift",
    "numbering",
];

/// The tables of the facts read on 2026-12-04 (kubelet 1.35/1.36, ACK's driver list, the gn9t
/// families, mig and disabled nodes, node-pool drift, xGPU's numbering).
#[cfg(feature = "tools")]
const TABLES_2026: [&str; 6] = [
    "kubelet",
    "driver_list",
    "family_needs",
    "schedule",
    "pool_drift",
    "numbering",
];

fn stdout(args: &[&str]) -> (i32, String) {
    let out = bin().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

#[test]
fn every_entry_has_a_source_with_a_date_and_names_real_rules() {
    let t = toml_data();
    let sources = tables(&t, "source");
    let (_, rules) = stdout(&["rules", "--format", "json"]);
    let rules: Vec<Value> = serde_json::from_str(&rules).unwrap();
    let names: Vec<&str> = rules.iter().filter_map(|r| r["name"].as_str()).collect();
    let mut n = 0;
    for key in ENTRY_TABLES {
        for e in tables(&t, key) {
            n += 1;
            let id = e["id"].as_str().unwrap();
            let src = e["source"].as_str().unwrap();
            let s = sources
                .iter()
                .find(|s| s["id"].as_str() == Some(src))
                .unwrap_or_else(|| panic!("{id}: no source {src}"));
            assert!(s["read"].as_str().is_some_and(|d| d.len() == 10), "{src}");
            for r in e["rules"].as_array().unwrap() {
                let r = r.as_str().unwrap();
                assert!(
                    names.contains(&r),
                    "{id} names rule {r}, not in the catalogue"
                );
            }
        }
    }
    assert!(n >= 15, "{n} entries");
}

/// schemas/compat.schema.json, the data file's JSON Schema (also named by the file's `#:schema`
/// line, which TOML editors such as Taplo read).
#[cfg(feature = "tools")]
fn compat_schema() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/compat.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Schema errors of a TOML text (the jsonschema crate), as one line each.
#[cfg(feature = "tools")]
fn schema_errors(toml_text: &str) -> Vec<String> {
    let doc: toml::Table = toml_text.parse().expect("TOML");
    let doc = serde_json::to_value(doc).unwrap();
    let validator = jsonschema::validator_for(&compat_schema()).expect("the schema compiles");
    validator
        .iter_errors(&doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// check-jsonschema (Python's jsonschema, from target/venv) on a TOML file: its exit status.
#[cfg(feature = "tools")]
fn check_jsonschema(file: &std::path::Path) -> (bool, String) {
    let out = std::process::Command::new(venv_tool("check-jsonschema"))
        .arg("--schemafile")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/schemas/compat.schema.json"
        ))
        .arg(file)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[cfg(feature = "tools")]
#[test]
fn the_data_file_passes_its_schema_by_two_validators() {
    assert_eq!(schema_errors(DATA), Vec::<String>::new());
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/src/cgpu/compat.toml");
    let (ok, out) = check_jsonschema(std::path::Path::new(file));
    assert!(ok, "{out}");
    assert!(
        DATA.starts_with("#:schema ../../schemas/compat.schema.json\n"),
        "editors find the schema"
    );
}

#[cfg(feature = "tools")]
#[test]
fn the_schema_refuses_what_the_data_must_not_hold() {
    // Each broken copy of the file, and the instance path the schema must name for it.
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, String, &str); 7] = [
        (
            "an entry without a source",
            DATA.replacen(
                "source = \"faq\"\nrules = [\"driver-incompatible\"]",
                "rules = [\"driver-incompatible\"]",
                1,
            ),
            "/driver/0",
        ),
        (
            "a read date that is not YYYY-MM-DD",
            DATA.replacen("read = \"2026-12-02\"", "read = \"2 Dec 2026\"", 1),
            "/source/0/read",
        ),
        (
            "a version that is not MAJOR.MINOR.PATCH",
            DATA.replacen("newest = \"1.5.20\"", "newest = \"1.5\"", 1),
            "/meta/newest",
        ),
        (
            "an unknown key",
            DATA.replacen(
                "[[issue]]\nid = \"issue-deadlock\"",
                "[[issue]]\nid = \"issue-deadlock\"\nseverity = \"high\"",
                1,
            ),
            "/issue/0",
        ),
        (
            "a support kind the rules do not read",
            DATA.replacen("kind = \"cgroup\"", "kind = \"kernel\"", 1),
            "/support/1/kind",
        ),
        (
            "an address that is not https",
            DATA.replacen(
                "url = \"https://kubernetes.io",
                "url = \"http://kubernetes.io",
                1,
            ),
            "/source/",
        ),
        (
            "an entry that names no rule",
            DATA.replacen("rules = [\"pods-per-gpu\"]", "rules = []", 1),
            "/issue/3/rules",
        ),
    ];
    for (i, (what, text, path)) in cases.iter().enumerate() {
        assert_ne!(text, DATA, "{what}: the case changes the file");
        let errors = schema_errors(text);
        assert!(
            errors.iter().any(|e| e.starts_with(path)),
            "{what}: want an error at {path}, got {errors:?}"
        );
        let file = dir.path().join(format!("case{i}.toml"));
        std::fs::write(&file, text).unwrap();
        let (ok, out) = check_jsonschema(&file);
        assert!(!ok, "{what}: check-jsonschema accepted it: {out}");
    }
}

#[cfg(feature = "tools")]
#[test]
fn every_entry_without_its_source_is_refused_by_the_schema() {
    // Each entry of every table, its `source` removed: the schema (jsonschema here, and
    // check-jsonschema for the entries of 2026) names that entry.
    let doc = serde_json::to_value(toml_data()).unwrap();
    let validator = jsonschema::validator_for(&compat_schema()).expect("the schema compiles");
    let dir = tempfile::tempdir().unwrap();
    let (mut n, mut new) = (0, 0);
    for &key in ENTRY_TABLES.iter().chain(&["kernel"]) {
        let len = doc[key].as_array().map_or(0, Vec::len);
        for i in 0..len {
            let mut broken = doc.clone();
            let entry = broken[key][i].as_object_mut().unwrap();
            assert!(entry.remove("source").is_some(), "{key} {i} has a source");
            let path = format!("/{key}/{i}");
            let errors: Vec<String> = validator
                .iter_errors(&broken)
                .map(|e| e.instance_path().to_string())
                .collect();
            assert!(errors.contains(&path), "{path}: {errors:?}");
            if TABLES_2026.contains(&key) {
                let file = dir.path().join(format!("{key}-{i}.json"));
                std::fs::write(&file, broken.to_string()).unwrap();
                let (ok, out) = check_jsonschema(&file);
                assert!(!ok, "{path}: check-jsonschema accepted it: {out}");
                new += 1;
            }
            n += 1;
        }
    }
    assert!(n >= 28 && new >= 8, "{n} entries, {new} of 2026");
}

#[test]
fn explain_names_every_entry_a_rule_uses() {
    let t = toml_data();
    for key in ENTRY_TABLES {
        for e in tables(&t, key) {
            let id = e["id"].as_str().unwrap();
            for r in e["rules"].as_array().unwrap() {
                let r = r.as_str().unwrap();
                let (code, text) = stdout(&["explain", r]);
                assert_eq!(code, 0);
                assert!(
                    text.contains(&format!("  - {id}: ")),
                    "explain {r} does not name {id}:\n{text}"
                );
            }
        }
    }
}

#[test]
fn compat_json_is_the_file() {
    let (code, out) = stdout(&["compat", "--format", "json"]);
    assert_eq!(code, 0);
    let printed: Value = serde_json::from_str(&out).unwrap();
    let t = toml_data();
    assert_eq!(printed["meta"]["newest"], "1.5.20");
    assert_eq!(printed["meta"]["date"], "2026-03-31");
    for key in ENTRY_TABLES.iter().chain(&["source"]) {
        let file = tables(&t, key);
        let shown = printed[key].as_array().unwrap();
        assert_eq!(shown.len(), file.len(), "{key}");
        for (f, s) in file.iter().zip(shown) {
            for (k, v) in f.iter() {
                let want = serde_json::to_value(v).unwrap();
                assert_eq!(s[k], want, "{key} {}: {k}", f["id"]);
            }
        }
    }
}

#[test]
fn compat_human_shows_every_driver_row_and_source() {
    let (code, out) = stdout(&["compat"]);
    assert_eq!(code, 0);
    // The FAQ's matrix, as the cGPU FAQ states it.
    for line in [
        "0.8.13–1.0.3   460, 470 ≤ 470.161.03; 510+ unsupported",
        "1.0.5–1.5.2    460, 470 ≤ 470.161.03, 510 ≤ 510.108.03, 515 ≤ 515.86.01, 525 ≤ 525.89.03; 535+ unsupported",
        "1.5.3–1.5.20   460, 470, 510, 515, 525, 535, 550, 560, 565, 570, 575",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
    for s in tables(&toml_data(), "source") {
        assert!(out.contains(&format!("[{}] ", s["id"].as_str().unwrap())));
    }
    // Both sides of the 535+ disagreement are shown.
    assert!(out.contains("both are true") || out.contains("both are kept"));
    assert!(out.contains("ebmgn9t"));
}

#[test]
fn compat_tag_gives_one_row() {
    // cGPU 1.5.8: before the 1.5.9 support for cgroup v2 and Ubuntu 22.04, after the ≤ 1.5.7
    // deadlock, before the 1.5.12 isolation fix for drivers 535+ (release notes, cGPU FAQ).
    let (code, out) = stdout(&[
        "compat",
        "--tag",
        "v1.5.8-0d41c2a-aliyun",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["version"], "1.5.8");
    assert_eq!(v["newer_than_data"], false);
    assert_eq!(v["drivers"]["id"], "driver-1.5.3");
    let ids = |k: &str| -> Vec<String> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(ids("lacks").contains(&"support-ubuntu-22.04".to_string()));
    assert!(ids("lacks").contains(&"support-cgroup-v2".to_string()));
    assert!(ids("supports").contains(&"support-driver-550".to_string()));
    let issues = ids("issues");
    assert!(!issues.contains(&"issue-deadlock".to_string()));
    assert!(issues.contains(&"issue-isolation-535".to_string()));
    let (_, human) = stdout(&["compat", "--tag", "1.5.7"]);
    assert!(human.contains("a kernel-driver deadlock"), "{human}");
}

#[test]
fn a_tag_newer_than_the_data_is_not_an_error() {
    let (code, out) = stdout(&["compat", "--tag", "v1.5.21-0123abc-aliyun"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("newer than the compatibility data of 2026-03-31"),
        "{out}"
    );
    let (code, out) = stdout(&["compat", "--tag", "1.6.0", "--format", "json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["newer_than_data"], true);
}

#[test]
fn a_bad_tag_is_a_usage_error() {
    for tag in ["latest", "1.5", ""] {
        let out = bin().args(["compat", "--tag", tag]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{tag}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--tag"));
    }
}

/// The driver matrix lives in the data file only: none of its capped versions appears in the
/// code outside the unit tests (which keep their own expected values).
/// The non-test code of every `src/**/*.rs` file (what comes before `#[cfg(test)]`; none of a
/// `tests.rs` module file), with the file's path.
fn source_code() -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src"
    ))];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs")
                // A unit-test module of its own file (`#[cfg(test)] mod tests;`) is test code whole.
                && !p.ends_with("tests.rs")
            {
                let text = std::fs::read_to_string(&p).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap().to_string();
                out.push((p, code));
            }
        }
    }
    assert!(out.len() > 50, "src/ was read");
    out
}

/// Every cGPU version the data states: row bounds, `since`, issue bounds and fixes, `newest`.
fn data_versions(t: &toml::Table) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for key in ENTRY_TABLES {
        for e in tables(t, key) {
            for field in ["from", "to", "since", "fixed"] {
                if let Some(v) = e.get(field).and_then(|v| v.as_str())
                    && v.split('.').count() == 3
                    && v.split('.').all(|p| p.parse::<u64>().is_ok())
                {
                    out.insert(v.to_string());
                }
            }
        }
    }
    out.insert(t["meta"]["newest"].as_str().unwrap().to_string());
    out
}

#[test]
fn no_fact_constant_outside_the_data() {
    // A fact the code decides by lives in src/cgpu/compat.toml alone: no driver cap, and no cGPU
    // version of the data spelled as `Version::new(a, b, c)` or as a whole string literal, in
    // the code outside the data's reader (build.rs hands three versions to static texts, read
    // from the same file).
    let t = toml_data();
    let mut facts: Vec<String> = Vec::new();
    for r in tables(&t, "driver") {
        if let Some(max) = r.get("max").and_then(|m| m.as_table()) {
            facts.extend(max.values().filter_map(|v| v.as_str()).map(str::to_string));
        }
    }
    assert!(facts.len() >= 4);
    let caps = facts.clone();
    // ACK's driver list and the drivers the families need (a driver version quoted in code would
    // be a second list).
    for l in tables(&t, "driver_list") {
        for key in ["supported", "incompatible"] {
            facts.extend(
                l[key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|v| v.as_str())
                    .map(str::to_string),
            );
        }
        facts.push(l["default"].as_str().unwrap().to_string());
    }
    for f in tables(&t, "family_needs") {
        facts.push(f["driver"].as_str().unwrap().to_string());
    }
    assert!(facts.len() >= 24);
    let versions = data_versions(&t);
    for v in ["1.0.6", "1.5.7", "1.5.10", "1.5.9", "1.5.12", "1.5.20"] {
        assert!(versions.contains(v), "the data states {v}");
    }
    facts.extend(versions);
    let reader = std::path::Path::new("cgpu/compat.rs");
    for (p, code) in source_code() {
        if p.ends_with(reader) {
            continue;
        }
        for f in &facts {
            let parts: Vec<u64> = f.split('.').map(|x| x.parse().unwrap()).collect();
            let spelled = match parts[..] {
                [a, b, c] => format!("Version::new({a}, {b}, {c})"),
                _ => format!("\"{f}\""),
            };
            let quoted = format!("\"{f}\"");
            // A capped version anywhere; the driver list's as a string literal.
            let driver_cap = caps.contains(f);
            let found = code.contains(&spelled)
                || code.contains(&quoted)
                || (driver_cap && code.contains(f.as_str()));
            assert!(
                !found,
                "{}: the fact {f} belongs in src/cgpu/compat.toml (read it through cgpu::compat)",
                p.display()
            );
        }
    }
}

#[test]
fn the_versions_the_texts_state_are_the_datas() {
    // The rule catalogue's explanations and the printers' words state versions in prose: each
    // cGPU version they name (0.x.y or 1.x.y) must be one the data states, so that a changed
    // entry cannot leave a text behind. The exceptions say why they are not compatibility facts.
    let t = toml_data();
    let versions = data_versions(&t);
    let not_facts: [(&str, &str); 4] = [
        (
            "1.0.7",
            "the chart's default financeCloudImageTag, v1.0.7-fin (cgpu::DEFAULT_FINANCE_TAG)",
        ),
        (
            "1.5.6",
            "the last version before support-driver-550 (1.5.7), in `1.5.3–1.5.6`",
        ),
        ("1.2.2", "the YAML specification's version"),
        (
            "1.5.2",
            "ack-cgpu 1.5.2, a component version, with cGPU 1.5.9",
        ),
    ];
    let components = ["ack-cgpu ", "ack-ai-installer ", "yaml.org/spec/", "YAML "];
    let mut seen = 0;
    for (p, code) in source_code() {
        for (i, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            let bytes = line.as_bytes();
            let mut at = 0;
            while at < bytes.len() {
                if !bytes[at].is_ascii_digit()
                    || (at > 0 && (bytes[at - 1].is_ascii_digit() || bytes[at - 1] == b'.'))
                {
                    at += 1;
                    continue;
                }
                let end = at
                    + line[at..]
                        .find(|c: char| !c.is_ascii_digit() && c != '.')
                        .unwrap_or(line.len() - at);
                let token = line[at..end].trim_end_matches('.');
                let parts: Vec<&str> = token.split('.').collect();
                let before = &line[..at];
                if parts.len() == 3
                    && parts.iter().all(|p| p.parse::<u64>().is_ok())
                    && (parts[0] == "0" || parts[0] == "1")
                    && !components.iter().any(|c| before.ends_with(c))
                {
                    seen += 1;
                    assert!(
                        versions.contains(token) || not_facts.iter().any(|(v, _)| *v == token),
                        "{}:{}: `{token}` is not a version of src/cgpu/compat.toml; state the data's version, or read it from the data",
                        p.display(),
                        i + 1
                    );
                }
                at = end.max(at + 1);
            }
        }
    }
    assert!(seen > 20, "the scan found the texts' versions ({seen})");
}

// ---------------------------------------------------------------------------------------------
// The node rules over tests/fixtures/nodes-compat.yaml (one node per fact, see its comment).

const NODE_RULES: [&str; 5] = [
    "node-os-unsupported",
    "node-cgroup-v2",
    "node-family-unsupported",
    "node-known-issue",
    "hami-device-plugin-conflict",
];

/// (rule, node, severity) of the compatibility findings of `check VALUES --nodes NODES`.
fn node_findings(values: &str, nodes: &str) -> (i32, Vec<(String, String, String)>, Vec<Value>) {
    let run = check_json(&[&fixture(values), "--nodes", &fixture(nodes)]);
    let diags: Vec<Value> = run
        .diagnostics()
        .iter()
        .filter(|d| NODE_RULES.contains(&d["rule"].as_str().unwrap()))
        .cloned()
        .collect();
    let mut out: Vec<(String, String, String)> = diags
        .iter()
        .map(|d| {
            let msg = d["message"].as_str().unwrap();
            let node = msg
                .split('`')
                .nth(1)
                .and_then(|n| n.rsplit('.').next())
                .unwrap_or("?")
                .to_string();
            (
                d["rule"].as_str().unwrap().to_string(),
                node,
                d["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    (run.code, out, diags)
}

fn triples(want: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    let mut w: Vec<_> = want
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect();
    w.sort();
    w
}

#[test]
fn cgpu_1_5_8_on_the_compat_nodes() {
    // 1.5.8: before 1.5.9 (Ubuntu 22.04, ebmgn8ia, cgroup v2), before the 1.5.12 fix for
    // drivers 535+, up to 1.5.18 on ContainerOS; HAMi beside ACK's plugin on .15 (error) and on
    // ACK's cGPU node .17 (warning); .16 is labelled as HAMi's guide says; .18's gn5 is judged only
    // where the FAQ's family list is known (1.5.19–1.5.20).
    let (code, got, diags) = node_findings("values-compat-1.5.8.yaml", "nodes-compat.yaml");
    assert_eq!(code, 1);
    assert_eq!(
        got,
        triples(&[
            ("node-os-unsupported", "11", "error"),
            ("node-known-issue", "11", "warning"),
            ("node-known-issue", "12", "warning"),
            ("node-family-unsupported", "12", "error"),
            ("node-cgroup-v2", "13", "warning"),
            ("node-known-issue", "14", "warning"),
            ("hami-device-plugin-conflict", "15", "error"),
            ("hami-device-plugin-conflict", "17", "warning"),
        ])
    );
    let text = |rule: &str, node: &str| -> String {
        diags
            .iter()
            .filter(|d| d["rule"] == rule)
            .map(|d| d["message"].as_str().unwrap().to_string())
            .find(|m| m.contains(&format!("10.0.1.{node}`")))
            .unwrap()
    };
    // Each message names the first version that has the support, and the entry.
    let os = text("node-os-unsupported", "11");
    assert!(os.contains("Ubuntu 22.04") && os.contains("1.5.9"), "{os}");
    assert!(os.contains("support-ubuntu-22.04"), "{os}");
    assert!(text("node-family-unsupported", "12").contains("ebmgn8ia"));
    assert!(text("node-known-issue", "11").contains("1.5.12"));
    assert!(text("node-known-issue", "14").contains("1.12.6"));
    let hami = text("hami-device-plugin-conflict", "15");
    assert!(
        hami.contains("the last plugin to register takes over nvidia.com/gpu")
            && hami.contains("HAMi's limits no longer apply")
            && hami.contains("ack.node.gpu.schedule=disabled"),
        "{hami}"
    );
    // The finding points at the fact: osImage, the instance-type label, the schedule label.
    let path = |rule: &str| {
        diags
            .iter()
            .find(|d| d["rule"] == rule)
            .map(|d| d["path"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(
        path("node-os-unsupported"),
        "/items/0/status/nodeInfo/osImage"
    );
    assert_eq!(
        path("node-family-unsupported"),
        "/items/1/metadata/labels/node.kubernetes.io~1instance-type"
    );
    assert_eq!(
        path("hami-device-plugin-conflict"),
        "/items/4/metadata/labels/ack.node.gpu.schedule"
    );
}

#[test]
fn cgpu_1_5_19_on_the_compat_nodes() {
    // 1.5.19 has every support the release notes date, no known node issue, and the FAQ's list
    // of families: gn5 (.18) is not on it; the HAMi conflicts do not depend on the version.
    let (code, got, _) = node_findings("values-compat-1.5.19.yaml", "nodes-compat.yaml");
    assert_eq!(code, 1);
    assert_eq!(
        got,
        triples(&[
            ("node-family-unsupported", "18", "warning"),
            ("hami-device-plugin-conflict", "15", "error"),
            ("hami-device-plugin-conflict", "17", "warning"),
        ])
    );
}

#[test]
fn cgpu_1_5_6_adds_gn8_and_the_driver_550_disagreement() {
    // 1.5.6: before 1.5.7's gn8X families (gn8is on .13) and driver 550+ (.12 runs 550: the
    // FAQ's matrix supports it from 1.5.3, the release notes from 1.5.7: both said).
    let (_, got, diags) = node_findings("values-compat-1.5.6.yaml", "nodes-compat.yaml");
    assert!(got.contains(&(
        "node-family-unsupported".into(),
        "13".into(),
        "error".into()
    )));
    let on_12: Vec<&str> = diags
        .iter()
        .filter(|d| d["rule"] == "node-known-issue")
        .filter_map(|d| d["message"].as_str())
        .filter(|m| m.contains("10.0.1.12`"))
        .collect();
    assert!(
        on_12.iter().any(|m| m.contains("support-driver-550")),
        "{on_12:?}"
    );
    // driver-incompatible follows the FAQ's matrix: 550 on 1.5.6 is supported.
    assert!(
        diags.iter().all(|d| d["rule"] != "driver-incompatible"),
        "{diags:#?}"
    );
}

/// (node, pointer, line, column, message) of one rule's findings.
fn located(run: &Run, rule: &str) -> Vec<(String, String, u64, u64, String)> {
    let mut out: Vec<_> = run
        .diagnostics()
        .iter()
        .filter(|d| d["rule"] == rule)
        .map(|d| {
            let msg = d["message"].as_str().unwrap().to_string();
            let node = msg.split('`').nth(1).unwrap().rsplit('.').next().unwrap();
            (
                node.to_string(),
                d["path"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap(),
                d["column"].as_u64().unwrap(),
                msg,
            )
        })
        .collect();
    out.sort();
    out
}

/// The 1-based line and column of the value of the `n`th occurrence (0-based) of `key: ` in a
/// fixture, read from its bytes.
fn value_position(name: &str, key: &str, n: usize) -> (u64, u64) {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    let needle = format!("{key}: ");
    let (i, line) = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with(&needle))
        .nth(n)
        .unwrap_or_else(|| panic!("{key} #{n} in {name}"));
    let col = line.find(&needle).unwrap() + needle.len() + 1;
    (i as u64 + 1, col as u64)
}

#[test]
fn the_driver_is_read_from_gpu_feature_discovery_labels() {
    // tests/fixtures/nodes-gfd-driver-labels.yaml: cGPU nodes whose driver only NVIDIA's GPU
    // Feature Discovery labels give (.24 has ACK's label too, which wins). cGPU 1.5.2 is on the
    // FAQ's 1.0.5–1.5.2 row: 470 ≤ 470.161.03, 525 ≤ 525.89.03, 535+ unsupported.
    let nodes = "nodes-gfd-driver-labels.yaml";
    let run = check_json(&[
        &fixture("values-compat-1.5.2.yaml"),
        "--nodes",
        &fixture(nodes),
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let got = located(&run, "driver-incompatible");
    let full = "nvidia.com/cuda.driver-version.full";
    let major = "nvidia.com/cuda.driver.major";
    let want = [
        ("21", 0, full, value_position(nodes, full, 0), "550.120"),
        (
            "22",
            1,
            major,
            value_position(nodes, major, 1),
            "535.104.12",
        ),
        (
            "25",
            4,
            major,
            value_position(nodes, major, 4),
            "525.147.05",
        ),
    ];
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for ((node, path, line, col, msg), (w_node, item, label, (w_line, w_col), driver)) in
        got.iter().zip(want)
    {
        assert_eq!(node, w_node);
        let label = label.replace('/', "~1");
        assert_eq!(path, &format!("/items/{item}/metadata/labels/{label}"));
        assert_eq!((*line, *col), (w_line, w_col), "{msg}");
        assert!(
            msg.contains(&format!("runs NVIDIA driver {driver}, which cGPU 1.5.2")),
            "{msg}"
        );
    }

    // cGPU 1.5.6 runs all of them (the FAQ's 1.5.3 row); below 1.5.12 a driver 535+ loses
    // isolation for some CUDA APIs, and the release notes add 550+ only in 1.5.7.
    let run = check_json(&[
        &fixture("values-compat-1.5.6.yaml"),
        "--nodes",
        &fixture(nodes),
    ]);
    assert!(located(&run, "driver-incompatible").is_empty());
    let issues = located(&run, "node-known-issue");
    let on: Vec<(&str, &str)> = issues
        .iter()
        .map(|(n, p, ..)| (n.as_str(), p.rsplit('/').next().unwrap()))
        .collect();
    assert_eq!(
        on,
        [
            ("21", "nvidia.com~1cuda.driver-version.full"),
            ("22", "nvidia.com~1cuda.driver.major")
        ]
    );
    assert!(
        issues[0].4.contains("issue-isolation-535") && issues[0].4.contains("support-driver-550")
    );
    assert!(
        issues[1].4.contains("issue-isolation-535") && !issues[1].4.contains("support-driver-550")
    );
}

#[test]
fn a_kernel_older_than_cgroup_v2_needs_is_not_a_cgroup_v2_node() {
    // tests/fixtures/nodes-cgroup-kernel.yaml: two Debian 11 nodes (cgroup v2 by default), one
    // still on Debian 10's kernel 4.19; Kubernetes' cgroup v2 requirements need Linux 5.8 or
    // later. cGPU 1.5.8 predates cgroup v2 support (1.5.9).
    let run = check_json(&[
        &fixture("values-compat-1.5.8.yaml"),
        "--nodes",
        &fixture("nodes-cgroup-kernel.yaml"),
    ]);
    let got = located(&run, "node-cgroup-v2");
    assert_eq!(got.len(), 1, "{got:#?}");
    let (node, path, line, col, msg) = &got[0];
    assert_eq!(node, "32");
    assert_eq!(path, "/items/1/status/nodeInfo/osImage");
    assert_eq!(
        (*line, *col),
        value_position("nodes-cgroup-kernel.yaml", "osImage", 1)
    );
    assert!(msg.contains("with kernel 5.10.0-28-amd64"), "{msg}");
    assert!(
        msg.contains("cgroup-v2-debian") && msg.contains("support-cgroup-v2"),
        "{msg}"
    );
    // The rule names the kernel entry among the data it reads.
    let (_, explain) = stdout(&["explain", "node-cgroup-v2"]);
    assert!(explain.contains("kernel-cgroup-v2"), "{explain}");
    // 1.5.9 supports cgroup v2: neither node is reported.
    let run = check_json(&[
        &fixture("values-compat-1.5.19.yaml"),
        "--nodes",
        &fixture("nodes-cgroup-kernel.yaml"),
    ]);
    assert!(located(&run, "node-cgroup-v2").is_empty());
}

#[test]
fn a_version_newer_than_the_data_gets_no_compatibility_finding() {
    let (_, got, _) = node_findings("values-compat-1.5.21.yaml", "nodes-compat.yaml");
    assert_eq!(
        got,
        triples(&[
            ("hami-device-plugin-conflict", "15", "error"),
            ("hami-device-plugin-conflict", "17", "warning"),
        ])
    );
}

#[test]
fn hami_and_ack_daemonsets_on_one_node() {
    let run = check_json(&[&fixture("cluster-hami-and-ack-device-plugins.yaml")]);
    let found: Vec<&str> = run
        .find("hami-device-plugin-conflict")
        .iter()
        .filter_map(|d| d["message"].as_str())
        .collect();
    assert_eq!(found.len(), 1, "{:#}", run.json);
    assert!(found[0].contains("cn-hangzhou.10.0.2.31"), "{}", found[0]);
    assert!(found[0].contains("DaemonSet gpu-share-hami-device-plugin"));
    assert_eq!(run.code, 1);
    // The DaemonSets' selectors decide, not the labels: HAMi's plugin moved to another label
    // no longer meets ACK's on .31 (gpu=on alone), and meets it on .33 once .33 has that label.
    let text = std::fs::read_to_string(fixture("cluster-hami-and-ack-device-plugins.yaml"))
        .unwrap()
        .replace(
            "        nodeSelector:\n          gpu: \"on\"",
            "        nodeSelector:\n          hami.example.com/vgpu: \"yes\"",
        )
        .replace(
            "      kubernetes.io/hostname: cn-hangzhou.10.0.2.33",
            "      hami.example.com/vgpu: \"yes\"\n      kubernetes.io/hostname: cn-hangzhou.10.0.2.33",
        );
    let dir = tempfile::tempdir().unwrap();
    let moved = dir.path().join("moved.yaml");
    std::fs::write(&moved, text).unwrap();
    let run = check_json(&[moved.to_str().unwrap()]);
    let found: Vec<&str> = run
        .find("hami-device-plugin-conflict")
        .iter()
        .filter_map(|d| d["message"].as_str())
        .collect();
    assert_eq!(found.len(), 1, "{:#}", run.json);
    assert!(found[0].contains("cn-hangzhou.10.0.2.33"), "{}", found[0]);
}

#[test]
fn the_checklist_blocks_a_target_the_nodes_cannot_run() {
    // Target 1.5.8 on nodes that need 1.5.9 (Ubuntu 22.04, ebmgn8ia): blocked in every format,
    // the message naming 1.5.9.
    let args = |format: &str| -> Vec<String> {
        let mut a: Vec<String> = [
            "checklist",
            "--current",
            &fixture("daemonset-cgpu-installer-live-kubectl-get.yaml"),
            "--desired",
            &fixture("values-compat-1.5.8.yaml"),
            "--nodes",
            &fixture("nodes-compat.yaml"),
            "--format",
            format,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if format == "shell" {
            a.extend(["--context".to_string(), "prod".to_string()]);
        }
        a
    };
    let run = |format: &str| {
        let out = bin().args(args(format)).output().unwrap();
        (out.status.code(), String::from_utf8(out.stdout).unwrap())
    };
    let (code, json) = run("json");
    assert_eq!(code, Some(1));
    let j: Value = serde_json::from_str(&json).unwrap();
    let blocking: Vec<&str> = j["blocking"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["rule"].as_str())
        .collect();
    assert!(blocking.contains(&"node-os-unsupported"), "{blocking:?}");
    assert!(
        blocking.contains(&"node-family-unsupported"),
        "{blocking:?}"
    );
    let (code, md) = run("markdown");
    assert_eq!(code, Some(1));
    let blocked = md
        .split("## Blocking")
        .nth(1)
        .expect("a Blocking section")
        .split("\n## ")
        .next()
        .unwrap();
    assert!(
        blocked.contains("`node-os-unsupported`") && blocked.contains("upgrade cGPU to 1.5.9"),
        "{blocked}"
    );
    let (code, sh) = run("shell");
    assert_eq!(code, Some(1));
    let listed: Vec<&str> = sh.lines().filter(|l| l.starts_with("#   node-")).collect();
    assert!(
        listed.iter().any(|l| l.contains("node-os-unsupported"))
            && listed.iter().any(|l| l.contains("node-family-unsupported")),
        "{sh}"
    );
    // The target the nodes can run (1.5.19) is not blocked by them.
    let ok = bin()
        .args([
            "checklist",
            "--current",
            &fixture("daemonset-cgpu-installer-live-kubectl-get.yaml"),
            "--desired",
            &fixture("values-compat-1.5.19.yaml"),
            "--nodes",
            &fixture("nodes-compat.yaml"),
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let j: Value = serde_json::from_slice(&ok.stdout).unwrap();
    let blocking: Vec<&str> = j["blocking"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["rule"].as_str())
        .collect();
    assert!(
        !blocking.iter().any(|r| r.starts_with("node-")),
        "{blocking:?}"
    );
}

#[test]
fn check_says_a_tag_is_newer_than_the_data_and_exits_0() {
    let run = check_json(&[&fixture("values-compat-1.5.21.yaml")]);
    assert_eq!(run.code, 0, "{:#}", run.json);
    let found = run.find("tag-newer-than-data");
    assert_eq!(found.len(), 1, "{:#}", run.json);
    assert_eq!(found[0]["severity"], "info");
    assert!(
        found[0]["message"]
            .as_str()
            .unwrap()
            .contains("newer than the compatibility data of 2026-03-31")
    );
    // 1.5.20, the newest version in the data, is not newer.
    let text = std::fs::read_to_string(fixture("values-compat-1.5.21.yaml"))
        .unwrap()
        .replace("v1.5.21-", "v1.5.20-");
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("values.yaml");
    std::fs::write(&f, text).unwrap();
    let run = check_json(&[f.to_str().unwrap()]);
    assert!(run.find("tag-newer-than-data").is_empty(), "{:#}", run.json);
}

/// The `pods-per-gpu` findings of a run: (node suffix, path, message).
fn pods_findings(run: &Run) -> Vec<(String, String, String)> {
    let mut out: Vec<_> = run
        .diagnostics()
        .iter()
        .filter(|d| d["rule"] == "pods-per-gpu")
        .map(|d| {
            let msg = d["message"].as_str().unwrap().to_string();
            let node = msg.split('`').nth(1).unwrap_or("?").to_string();
            (node, d["path"].as_str().unwrap().to_string(), msg)
        })
        .collect();
    out.sort();
    out
}

// The limit is the ACK page's (the data entry issue-pods-per-gpu): at most 20
// pods share one GPU under cGPU. The fixture's comment says which pods count on which node.
#[test]
fn pods_per_gpu_over_a_pod_list_and_its_nodes() {
    let run = check_json(&[
        &fixture("pods-per-gpu.yaml"),
        "--nodes",
        &fixture("nodes-pods-per-gpu.yaml"),
    ]);
    let found = pods_findings(&run);
    let nodes: Vec<&str> = found.iter().map(|(n, _, _)| n.as_str()).collect();
    // a: 20 counted (Succeeded, Failed, nvidia.com/gpu only, unscheduled left out); c: 21 on 2
    // GPUs; b: 21 on 1 GPU; d: 21, GPU count unknown.
    assert_eq!(nodes, ["cn-hangzhou.10.0.2.2", "cn-hangzhou.10.0.2.4"]);
    for d in run
        .diagnostics()
        .iter()
        .filter(|d| d["rule"] == "pods-per-gpu")
    {
        assert_eq!(d["severity"], "warning");
    }
    // The warning is on the 21st counted pod of the node: b's pods follow a's 24 items.
    assert_eq!(found[0].1, "/items/44/spec/nodeName");
    let b = &found[0].2;
    assert!(b.contains("21 pods"), "{b}");
    assert!(b.contains("1 GPU(s), so at most 20"), "{b}");
    for (_, _, msg) in &found {
        assert!(
            msg.contains("at most 20 pods share one GPU under cGPU"),
            "{msg}"
        );
        assert!(msg.contains("issue-pods-per-gpu"), "{msg}");
        assert!(msg.contains("manage-shared-gpu"), "{msg}");
    }
    assert!(found[1].2.contains("unknown GPU count"), "{}", found[1].2);
    assert!(!b.contains("unknown GPU count"), "{b}");
    assert_eq!(run.code, 0, "warnings only");
}

#[test]
fn pods_per_gpu_without_nodes_counts_one_gpu_per_node() {
    let run = check_json(&[&fixture("pods-per-gpu.yaml")]);
    let found = pods_findings(&run);
    let nodes: Vec<&str> = found.iter().map(|(n, _, _)| n.as_str()).collect();
    // c's 21 pods now exceed the one GPU it is taken to have; a's 20 still pass.
    assert_eq!(
        nodes,
        [
            "cn-hangzhou.10.0.2.2",
            "cn-hangzhou.10.0.2.3",
            "cn-hangzhou.10.0.2.4"
        ]
    );
    assert!(
        found
            .iter()
            .all(|(_, _, m)| m.contains("unknown GPU count"))
    );
    // A pod list alone is an input cgpu-lint checks: no "nothing to check" finding.
    assert!(
        run.rules().keys().all(|r| r == "pods-per-gpu"),
        "{:?}",
        run.rules()
    );
}

#[test]
fn a_finished_pod_made_running_is_counted() {
    // Node a is at the limit only because its Succeeded pod is left out: running, it is the 21st.
    let text = std::fs::read_to_string(fixture("pods-per-gpu.yaml")).unwrap();
    let needle = "    name: job-a-done\n";
    let start = text.find(needle).unwrap();
    let phase = start + text[start..].find("phase: Succeeded").unwrap();
    let changed = format!(
        "{}phase: Running{}",
        &text[..phase],
        &text[phase + "phase: Succeeded".len()..]
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pods.yaml");
    std::fs::write(&path, changed).unwrap();
    let run = check_json(&[
        path.to_str().unwrap(),
        "--nodes",
        &fixture("nodes-pods-per-gpu.yaml"),
    ]);
    let found = pods_findings(&run);
    let nodes: Vec<&str> = found.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(
        nodes,
        [
            "cn-hangzhou.10.0.2.1",
            "cn-hangzhou.10.0.2.2",
            "cn-hangzhou.10.0.2.4"
        ]
    );
    // The 21st counted pod of a is job-a-done, item 20.
    assert_eq!(found[0].1, "/items/20/spec/nodeName");
}

#[test]
fn explain_pods_per_gpu_names_the_data_entry() {
    let (code, out) = stdout(&["explain", "pods-per-gpu"]);
    assert_eq!(code, 0);
    assert!(out.contains("issue-pods-per-gpu"), "{out}");
    assert!(out.contains("at most 20 pods share one GPU"), "{out}");
    assert!(
        out.contains("manage-shared-gpu") || out.contains("Manage the shared GPU"),
        "{out}"
    );
}

// ---------------------------------------------------------------------------------------------
// The facts of 2026 over tests/fixtures/nodes-upgrade-2026.yaml (one node per fact, see its
// comment): each rule alone (`--select`, so that no finding on the same token merges into
// another), its node, severity and position read from the fixture's bytes.

const UPGRADE_NODES: &str = "nodes-upgrade-2026.yaml";

/// (node, severity, pointer, line, column, message) of a finding.
type Found = (String, String, String, u64, u64, String);

/// The exit status and the findings of one rule.
fn upgrade_findings(inputs: &[&str], rule: &str) -> (i32, Vec<Found>) {
    let mut args: Vec<String> = inputs.iter().map(|i| fixture(i)).collect();
    args.extend([
        "--nodes".into(),
        fixture(UPGRADE_NODES),
        "--select".into(),
        rule.into(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = check_json(&args);
    let mut out: Vec<_> = run
        .diagnostics()
        .iter()
        .map(|d| {
            assert_eq!(d["rule"], rule);
            let msg = d["message"].as_str().unwrap().to_string();
            let node = msg.split('`').nth(1).unwrap().rsplit('.').next().unwrap();
            (
                node.to_string(),
                d["severity"].as_str().unwrap().to_string(),
                d["path"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap(),
                d["column"].as_u64().unwrap(),
                msg,
            )
        })
        .collect();
    out.sort();
    (run.code, out)
}

/// The fixture's nodes in order: .21 is item 0.
fn item(node: &str) -> usize {
    node.parse::<usize>().unwrap() - 21
}

#[test]
fn kubelet_1_35_on_a_cgpu_older_than_1_5_9_is_an_error_at_the_kubelet_version() {
    // ACK 1.35's kubelet refuses cgroup v1; cGPU supports cgroup v2 from 1.5.9.
    let (code, got) = upgrade_findings(&["values-compat-1.5.8.yaml"], "node-kubelet-cgroup-v2");
    assert_eq!(code, 1);
    let nodes: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(nodes, ["21", "22", "28"]);
    for (node, sev, path, line, col, msg) in &got {
        assert_eq!(sev, "error");
        assert_eq!(
            path,
            &format!("/items/{}/status/nodeInfo/kubeletVersion", item(node))
        );
        assert_eq!(
            (*line, *col),
            value_position(UPGRADE_NODES, "kubeletVersion", item(node)),
            "{msg}"
        );
        assert!(
            msg.contains("kubelet-1.35-cgroup-v2")
                && msg.contains("support-cgroup-v2")
                && msg.contains("upgrade cGPU to 1.5.9 or later before Kubernetes 1.35"),
            "{msg}"
        );
    }
    // The certain finding replaces the guess from Debian 12's default on .28.
    let (_, guess) = upgrade_findings(&["values-compat-1.5.8.yaml"], "node-cgroup-v2");
    assert!(guess.is_empty(), "{guess:#?}");
    // cGPU 1.5.19 runs on cgroup v2.
    let (code, got) = upgrade_findings(&["values-compat-1.5.19.yaml"], "node-kubelet-cgroup-v2");
    assert_eq!((code, got.len()), (0, 0), "{got:#?}");
}

#[test]
fn kubelet_1_36_with_cgpu_is_information_that_containerd_2_is_undocumented() {
    let (code, got) = upgrade_findings(&["values-compat-1.5.19.yaml"], "node-containerd-2");
    assert_eq!(code, 0, "an info never fails");
    assert_eq!(got.len(), 1, "{got:#?}");
    let (node, sev, path, line, col, msg) = &got[0];
    assert_eq!((node.as_str(), sev.as_str()), ("22", "info"));
    assert_eq!(path, "/items/1/status/nodeInfo/kubeletVersion");
    assert_eq!(
        (*line, *col),
        value_position(UPGRADE_NODES, "kubeletVersion", 1)
    );
    assert!(
        msg.contains("kubelet-1.36-containerd-2") && msg.contains("containerd 2"),
        "{msg}"
    );
}

#[test]
fn a_driver_on_acks_incompatible_list_is_a_warning_naming_the_lists_date() {
    let label = "ack.aliyun.com/nvidia-driver-version";
    let (code, got) = upgrade_findings(&["values-compat-1.5.19.yaml"], "node-driver-outdated");
    assert_eq!(code, 0);
    assert_eq!(got.len(), 1, "{got:#?}");
    let (node, sev, path, line, col, msg) = &got[0];
    assert_eq!((node.as_str(), sev.as_str()), ("23", "warning"));
    assert_eq!(
        path,
        "/items/2/metadata/labels/ack.aliyun.com~1nvidia-driver-version"
    );
    assert_eq!((*line, *col), value_position(UPGRADE_NODES, label, 2));
    assert!(
        msg.contains("535.129.03")
            && msg.contains("driver list of 2026-03-26")
            && msg.contains("incompatible with the latest operating systems")
            && msg.contains("default driver is 535.161.07"),
        "{msg}"
    );
}

#[test]
fn ebmgn9t_needs_cgpu_1_5_19_and_the_driver_ack_names_for_it() {
    let (code, got) = upgrade_findings(&["values-compat-1.5.8.yaml"], "node-family-needs");
    assert_eq!(code, 1);
    let want_type = value_position(UPGRADE_NODES, "node.kubernetes.io/instance-type", 4);
    let want_driver = value_position(UPGRADE_NODES, "ack.aliyun.com/nvidia-driver-version", 4);
    let seen: Vec<(&str, &str, (u64, u64))> = got
        .iter()
        .map(|g| (g.0.as_str(), g.1.as_str(), (g.3, g.4)))
        .collect();
    assert_eq!(
        seen,
        [("25", "error", want_type), ("25", "warning", want_driver)],
        "{got:#?}"
    );
    assert!(got[0].5.contains("cGPU 1.5.8 predates") && got[0].5.contains("1.5.19 or later"));
    assert!(got[1].5.contains("driver 550.163.01") && got[1].5.contains("driver 570.169"));
    // 1.5.19 supports the family: the driver remains.
    let (code, got) = upgrade_findings(&["values-compat-1.5.19.yaml"], "node-family-needs");
    assert_eq!(code, 0);
    assert_eq!(
        got.iter().map(|g| g.1.as_str()).collect::<Vec<_>>(),
        ["warning"]
    );
}

#[test]
fn an_installer_selecting_mig_or_disabled_nodes_is_an_error() {
    // The legacy installer selects cgpu=true, which .26 (mig) and .27 (disabled) kept.
    let (code, got) = upgrade_findings(
        &["daemonset-cgpu-installer-legacy-selector.yaml"],
        "installer-selects-exclusive-node",
    );
    assert_eq!(code, 1);
    let seen: Vec<(&str, &str, (u64, u64))> = got
        .iter()
        .map(|g| (g.0.as_str(), g.1.as_str(), (g.3, g.4)))
        .collect();
    assert_eq!(
        seen,
        [
            (
                "26",
                "error",
                value_position(UPGRADE_NODES, "ack.node.gpu.schedule", 5)
            ),
            (
                "27",
                "error",
                value_position(UPGRADE_NODES, "ack.node.gpu.schedule", 6)
            ),
        ]
    );
    assert!(got[0].5.contains("=mig") && got[0].5.contains("schedule-mig"));
    assert!(got[1].5.contains("=disabled") && got[1].5.contains("schedule-disabled"));
    assert!(
        got[0]
            .5
            .contains("cgpu-installer selects it (nodeSelector cgpu=true)")
    );
    // Without an installer among the inputs, nothing says the nodes are selected.
    let (_, got) = upgrade_findings(
        &["values-compat-1.5.19.yaml"],
        "installer-selects-exclusive-node",
    );
    assert!(got.is_empty(), "{got:#?}");
}

#[test]
fn the_node_of_a_pool_whose_driver_differs_is_information() {
    let (code, got) = upgrade_findings(&["values-compat-1.5.19.yaml"], "node-pool-driver-drift");
    assert_eq!(code, 0);
    assert_eq!(got.len(), 1, "{got:#?}");
    let (node, sev, _, line, col, msg) = &got[0];
    assert_eq!((node.as_str(), sev.as_str()), ("23", "info"));
    assert_eq!(
        (*line, *col),
        value_position(UPGRADE_NODES, "ack.aliyun.com/nvidia-driver-version", 2)
    );
    assert!(
        msg.contains("535.161.07 (2 nodes), 535.129.03 (1 node)")
            && msg.contains("npa1f2e3d4c5b6a7980a1b2c3d4e5f6a7"),
        "{msg}"
    );
}

#[test]
fn explain_and_hover_name_xgpus_numbering() {
    let (_, text) = stdout(&["explain", "policy-out-of-range"]);
    assert!(
        text.contains("numbering-huawei-xgpu") && text.contains("0 native"),
        "{text}"
    );
}
