//! The compatibility data (src/cgpu/compat.toml) and what reads it: `cgpu-lint compat`,
//! `explain`, and the node rules over node fixtures. The oracle for the printed table is the
//! data file itself, read here with the toml crate as plain TOML (not through the crate's
//! types); the oracle for the node findings is the sourced facts each fixture's comment names.

mod common;
use common::*;

use serde_json::Value;

const DATA: &str = include_str!("../src/cgpu/compat.toml");

fn toml_data() -> toml::Table {
    DATA.parse().expect("compat.toml is TOML")
}

fn tables<'a>(t: &'a toml::Table, key: &str) -> Vec<&'a toml::Table> {
    t.get(key)
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|e| e.as_table()).collect())
        .unwrap_or_default()
}

const ENTRY_TABLES: [&str; 6] = [
    "driver",
    "support",
    "cgroup_v2",
    "families",
    "issue",
    "conflict",
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
#[test]
fn no_driver_fact_outside_the_data() {
    let t = toml_data();
    let mut facts = Vec::new();
    for r in tables(&t, "driver") {
        if let Some(max) = r.get("max").and_then(|m| m.as_table()) {
            facts.extend(max.values().filter_map(|v| v.as_str()).map(str::to_string));
        }
    }
    assert!(facts.len() >= 4);
    let mut stack = vec![std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src"
    ))];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap();
                for f in &facts {
                    let parts: Vec<u64> = f.split('.').map(|x| x.parse().unwrap()).collect();
                    let spelled = format!("{}, {}, {}", parts[0], parts[1], parts[2]);
                    assert!(
                        !code.contains(f.as_str()) && !code.contains(&spelled),
                        "{}: the driver fact {f} belongs in src/cgpu/compat.toml",
                        p.display()
                    );
                }
            }
        }
    }
}
