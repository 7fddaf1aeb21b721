//! Snapshot tests of the human and JSON formats. The snapshots in tests/snapshots/ were read line
//! by line against the fixtures (positions, rule names, counts) before they were committed; a
//! change to them must be reviewed the same way.

use crate::common::*;

fn run_in_fixtures(args: &[&str]) -> String {
    let out = bin().current_dir(fixtures()).args(args).output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

fn snapshot(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/snapshots/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn human_report_snapshot() {
    let got = run_in_fixtures(&[
        "check",
        "--color",
        "never",
        "values-invalid-policy-out-of-range.yaml",
        "values-valid-policy-quoted-string.yaml",
    ]);
    assert_eq!(got, snapshot("check-human.txt"));
}

#[test]
fn json_report_snapshot_multi_document() {
    let got = run_in_fixtures(&[
        "check",
        "--format",
        "json",
        "values-multi-doc-two-clusters.yaml",
    ]);
    assert_eq!(got, snapshot("check-multi-doc.json"));
}

#[test]
fn color_always_and_no_color() {
    let coloured = run_in_fixtures(&[
        "check",
        "--color",
        "always",
        "values-invalid-policy-out-of-range.yaml",
    ]);
    assert!(coloured.contains("\u{1b}["));
    let out = bin()
        .current_dir(fixtures())
        .env("NO_COLOR", "1")
        .args(["check", "values-invalid-policy-out-of-range.yaml"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("\u{1b}["));
}
