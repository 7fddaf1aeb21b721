//! Adopting cgpu-lint on a red repository: `cgpu-lint baseline` records today's
//! findings, `check` then reports only new ones; entries are keyed by file, document, JSON
//! pointer, rule and a hash of the offending text (never the line); inline ignores and
//! baseline entries expire with `until=`.
//!
//! The oracle is `check --format json --no-baseline` on the same files: what the baseline holds
//! is what check reported, and what check reports after is exactly what changed.

use crate::common::*;

use std::path::Path;

/// A copy of tests/fixtures in a fresh directory.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(fixtures()).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), dir.path().join(e.file_name())).unwrap();
        }
    }
    dir
}

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = run_in(dir, args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `check --format json` in `dir` (with `extra` flags): (status, rule and file of each
/// diagnostic, summary).
fn check(dir: &Path, extra: &[&str]) -> (i32, Vec<(String, String)>, serde_json::Value) {
    let mut args = vec!["check", "--no-config", "--format", "json"];
    args.extend(extra);
    args.push(".");
    let (code, out, err) = run(dir, &args);
    let report: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let diags = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["rule"].as_str().unwrap().to_string(),
                d["file"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (code, diags, report["summary"].clone())
}

#[test]
fn baseline_round_trip_on_the_fixtures() {
    let dir = repo();
    let d = dir.path();
    let (code, before, _) = check(d, &[]);
    assert_eq!(code, 1);
    assert!(before.len() > 50, "{before:?}");
    let (code, _, err) = run(d, &["baseline", "--no-config", "."]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.starts_with(&format!(
            "cgpu-lint: wrote .cgpu-lint-baseline.json: {} findings in ",
            before.len()
        )),
        "{err}"
    );
    // Everything recorded: clean, and the summary says how much the baseline hides.
    let (code, after, summary) = check(d, &[]);
    assert_eq!((code, after.len()), (0, 0), "{after:?}");
    assert_eq!(summary["baselined"], before.len());
    let (_, human, _) = run(d, &["check", "--no-config", "."]);
    assert!(
        human.ends_with(&format!("; {} in the baseline not shown\n", before.len())),
        "{human}"
    );
    // --no-baseline shows them all again.
    let (_, all, _) = check(d, &["--no-baseline"]);
    assert_eq!(all, before);

    // Lines inserted above every finding of every file change nothing.
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "yaml") {
            let text = std::fs::read_to_string(&p).unwrap();
            std::fs::write(
                &p,
                format!("# reviewed 2026-12-02\n\n# ticket OPS-1\n{text}"),
            )
            .unwrap();
        }
    }
    let (code, after, _) = check(d, &[]);
    assert_eq!((code, after.len()), (0, 0), "{after:?}");

    // One new error is the only finding shown, and fails the run.
    std::fs::write(d.join("new.yaml"), "cgpu:\n  policy: 9\n").unwrap();
    let (code, after, _) = check(d, &[]);
    assert_eq!(code, 1);
    assert_eq!(
        after,
        [("policy-out-of-range".to_string(), "./new.yaml".to_string())]
    );
    std::fs::remove_file(d.join("new.yaml")).unwrap();

    // A changed value is a new finding; its old entry matches nothing and is reported.
    let f = d.join("values-invalid-policy-out-of-range.yaml");
    let text = std::fs::read_to_string(&f).unwrap();
    std::fs::write(&f, text.replace("policy: 6 ", "policy: 7 ")).unwrap();
    let (code, after, _) = check(d, &[]);
    assert_eq!(code, 1);
    assert_eq!(
        after,
        [
            (
                "policy-out-of-range".to_string(),
                "./values-invalid-policy-out-of-range.yaml".to_string()
            ),
            (
                "baseline-unmatched".to_string(),
                ".cgpu-lint-baseline.json".to_string()
            ),
        ]
    );
    // Checking another file does not call the entries of this one unmatched.
    let (_, other, _) = run(
        d,
        &[
            "check",
            "--no-config",
            "--format",
            "json",
            "values-valid-full-default.yaml",
        ],
    );
    assert!(!other.contains("baseline-unmatched"), "{other}");
    // --prune drops the stale entry and adds nothing.
    let (code, _, err) = run(d, &["baseline", "--no-config", "--prune", "."]);
    assert_eq!(code, 0);
    assert_eq!(
        err,
        format!(
            "cgpu-lint: pruned .cgpu-lint-baseline.json: kept {} entries, dropped 1\n",
            before.len() - 1
        )
    );
    let (_, after, _) = check(d, &[]);
    assert_eq!(
        after,
        [(
            "policy-out-of-range".to_string(),
            "./values-invalid-policy-out-of-range.yaml".to_string()
        )]
    );
}

#[test]
fn baseline_entries_expire_after_their_until_day() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("v.yaml"), "cgpu:\n  policy: 9\n").unwrap();
    let (code, _, err) = run(d, &["baseline", "--until", "2999-12-31", "."]);
    assert_eq!(code, 0, "{err}");
    assert!(err.ends_with(", until 2999-12-31\n"), "{err}");
    assert_eq!(check(d, &[]).0, 0);
    run(d, &["baseline", "--until", "2000-01-01", "."]);
    let (code, after, _) = check(d, &[]);
    assert_eq!(code, 1);
    let rules: Vec<&str> = after.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(rules, ["policy-out-of-range", "suppression-expired"]);
    let (_, out, _) = run(d, &["check", "--format", "json", "."]);
    assert!(out.contains("expired on 2000-01-01"), "{out}");
    // A bad date is refused before anything is written.
    let (code, _, err) = run(d, &["baseline", "--until", "2000-02-30", "."]);
    assert_eq!(code, 2);
    assert!(err.contains("not a date YYYY-MM-DD"), "{err}");
}

#[test]
fn inline_ignores_expire_after_their_until_day() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let v = d.join("v.yaml");
    std::fs::write(
        &v,
        "cgpu:\n  policy: 9 # cgpu-lint: ignore[policy-out-of-range] until=2999-12-31\n",
    )
    .unwrap();
    let (code, after, _) = check(d, &[]);
    assert_eq!((code, after.len()), (0, 0), "{after:?}");
    std::fs::write(
        &v,
        "cgpu:\n  policy: 9 # cgpu-lint: ignore[policy-out-of-range] until=2000-01-31\n",
    )
    .unwrap();
    let (code, out, _) = run(d, &["check", "--format", "json", "v.yaml"]);
    assert_eq!(code, 1);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let diags = report["diagnostics"].as_array().unwrap();
    let rules: Vec<&str> = diags.iter().map(|d| d["rule"].as_str().unwrap()).collect();
    assert_eq!(rules, ["policy-out-of-range", "suppression-expired"]);
    // It points at the date.
    assert_eq!(
        (diags[1]["line"].as_u64(), diags[1]["column"].as_u64()),
        (Some(2), Some(60))
    );
    // A date that does not exist is a malformed comment.
    std::fs::write(
        &v,
        "cgpu:\n  policy: 9 # cgpu-lint: ignore[policy-out-of-range] until=2027-02-30\n",
    )
    .unwrap();
    let (_, out, _) = run(d, &["check", "--format", "json", "v.yaml"]);
    assert!(out.contains("\"rule\": \"unused-ignore\""), "{out}");
}

#[test]
fn a_missing_or_broken_baseline_is_exit_2_with_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("v.yaml"), "cgpu:\n  policy: 1\n").unwrap();
    let (code, _, err) = run(d, &["check", "--baseline", "nope.json", "v.yaml"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("cgpu-lint: error: --baseline nope.json: "),
        "{err}"
    );
    std::fs::write(
        d.join(".cgpu-lint-baseline.json"),
        "{\"version\": 1, \"entries\": [\n  {\"file\": \"v.yaml\"}\n]}\n",
    )
    .unwrap();
    let (code, _, err) = run(d, &["check", "v.yaml"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("cgpu-lint: error: .cgpu-lint-baseline.json:2:"),
        "{err}"
    );
    // --no-baseline does not read it.
    assert_eq!(run(d, &["check", "--no-baseline", "v.yaml"]).0, 0);
}

/// The fixtures with findings whose lines the property test moves.
const MOVED: &[&str] = &[
    "values-multi-doc-two-clusters.yaml",
    "values-invalid-duplicate-keys.yaml",
    "values-warn-unknown-keys-typo.yaml",
    "daemonset-invalid-old-version-public-registry-no-policy.yaml",
    "helm-template-rendered-core-mismatch-helm4.yaml",
    "nodes-list-mixed-gpu-sharing.yaml",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 16, ..Default::default() })]

    /// Baseline keys survive lines inserted above the findings (comments or blank lines at the
    /// top of the file and after each `---`): the moved file stays clean against the baseline
    /// of the original.
    #[test]
    fn baseline_keys_survive_lines_inserted_above(
        which in 0..MOVED.len(),
        top in proptest::collection::vec("(# [a-z ]{0,12})?", 1..6),
        per_doc in 0usize..3,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let name = MOVED[which];
        let text = std::fs::read_to_string(fixtures().join(name)).unwrap();
        std::fs::write(d.join(name), &text).unwrap();
        let (code, _, err) = run(d, &["baseline", "--no-config", name]);
        proptest::prop_assert_eq!(code, 0, "{}", err);
        let mut moved = top.iter().map(|l| format!("{l}\n")).collect::<String>();
        for line in text.split_inclusive('\n') {
            moved.push_str(line);
            if line.trim_end() == "---" {
                moved.push_str(&"# inserted\n".repeat(per_doc));
            }
        }
        std::fs::write(d.join(name), &moved).unwrap();
        let (code, out, _) = run(d, &["check", "--no-config", "--format", "json", name]);
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        proptest::prop_assert_eq!(code, 0, "{}", out);
        proptest::prop_assert_eq!(report["diagnostics"].as_array().unwrap().len(), 0);
        proptest::prop_assert!(report["summary"]["baselined"].as_u64().unwrap() > 0);
    }
}
