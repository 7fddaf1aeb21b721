//! Reports beside the findings: `--statistics` (counts per rule, as ruff counts them)
//! and `--output FILE` (the report in a file, the human side on stderr).
//!
//! The oracle for the counts is the JSON report of the same run: each rule's count is the number
//! of its diagnostics there, its fixable count the number with `"fixable": true`.

use crate::common::*;

use std::collections::BTreeMap;

/// Run cgpu-lint in tests/fixtures with `args`: (status, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = bin().current_dir(fixtures()).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// (rule → (count, fixable count)) from a `--format json` report.
fn counts_of_report(json: &str) -> BTreeMap<String, (u64, u64)> {
    let report: serde_json::Value = serde_json::from_str(json).unwrap();
    let mut counts = BTreeMap::new();
    for d in report["diagnostics"].as_array().unwrap() {
        let e = counts
            .entry(d["rule"].as_str().unwrap().to_string())
            .or_insert((0, 0));
        e.0 += 1;
        if d["fixable"] == true {
            e.1 += 1;
        }
    }
    counts
}

#[test]
fn statistics_count_what_the_json_report_lists() {
    let (code, report, _) = run(&["check", "--no-config", "--format", "json", "."]);
    let (scode, stats, _) = run(&[
        "check",
        "--no-config",
        "--format",
        "json",
        "--statistics",
        ".",
    ]);
    assert_eq!(code, scode, "--statistics does not change the exit status");
    let expected = counts_of_report(&report);
    assert!(expected.len() > 10, "{expected:?}");
    let stats: Vec<serde_json::Value> = serde_json::from_str(&stats).unwrap();
    let got: BTreeMap<String, (u64, u64)> = stats
        .iter()
        .map(|s| {
            (
                s["rule"].as_str().unwrap().to_string(),
                (
                    s["count"].as_u64().unwrap(),
                    s["fixable_count"].as_u64().unwrap(),
                ),
            )
        })
        .collect();
    assert_eq!(got, expected);
    // ruff's order: the most frequent first, ties by name.
    let order: Vec<(u64, &str)> = stats
        .iter()
        .map(|s| (s["count"].as_u64().unwrap(), s["rule"].as_str().unwrap()))
        .collect();
    let mut sorted = order.clone();
    sorted.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    assert_eq!(order, sorted);
}

#[test]
fn statistics_as_text_are_rufs_table_then_the_summary_line() {
    let files = [
        "values-invalid-image-pull-policy-case.yaml",
        "values-invalid-duplicate-keys.yaml",
    ];
    let mut args = vec!["check", "--no-config", "--format", "json"];
    args.extend(files);
    let (_, report, _) = run(&args);
    let expected = counts_of_report(&report);
    args[3] = "human";
    args.push("--statistics");
    let (code, text, _) = run(&args);
    assert_eq!(code, 1);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), expected.len() + 1, "{text}");
    for line in &lines[..expected.len()] {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 3, "{line:?}");
        let (marker, rule) = cols[2].split_at(4);
        let (count, fixable) = expected[rule];
        assert_eq!(cols[0].trim().parse::<u64>().unwrap(), count, "{line:?}");
        assert_eq!(
            marker,
            if fixable > 0 { "[*] " } else { "[ ] " },
            "{line:?}"
        );
        assert!(["error", "warning", "info"].contains(&cols[1]), "{line:?}");
    }
    assert!(
        lines[expected.len()].starts_with("2 files checked: "),
        "{text}"
    );
    // No fixable finding: no marker column, as ruff prints it.
    let (_, text, _) = run(&[
        "check",
        "--no-config",
        "--statistics",
        "values-invalid-duplicate-keys.yaml",
    ]);
    assert_eq!(
        text.lines().next().unwrap(),
        "1\terror\tduplicate-key",
        "{text}"
    );
}

#[test]
fn statistics_refuse_a_ci_format_without_a_file_for_the_report() {
    let (code, out, err) = run(&["check", "--statistics", "--format", "sarif", "."]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(
        err.contains("to keep the sarif report, write it with --output FILE"),
        "{err}"
    );
}

/// `--output FILE` writes exactly what stdout would have held, and stdout stays empty; stderr
/// (not a terminal here) gets the summary line.
#[test]
fn output_file_holds_the_report_and_stderr_the_summary_line() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = [
        "values-multi-doc-two-clusters.yaml",
        "values-invalid-duplicate-keys.yaml",
    ];
    // The summary line is the end of the human report, after its last finding.
    let mut args = vec!["check", "--no-config", "--color", "never"];
    args.extend(inputs);
    let (_, human, _) = run(&args);
    let summary = human.rsplit_once("\n\n").unwrap().1.to_string();
    assert!(summary.starts_with("2 files checked: "), "{summary}");
    for format in ["human", "json", "sarif", "github", "junit", "gitlab"] {
        let mut args = vec![
            "check",
            "--no-config",
            "--color",
            "never",
            "--format",
            format,
        ];
        args.extend(inputs);
        let (code, expected, _) = run(&args);
        let file = dir.path().join(format!("report.{format}"));
        let file = file.to_str().unwrap();
        args.extend(["--output", file]);
        let (ocode, out, err) = run(&args);
        assert_eq!(ocode, code, "{format}");
        assert_eq!(out, "", "{format}: nothing on stdout");
        assert_eq!(std::fs::read_to_string(file).unwrap(), expected, "{format}");
        assert_eq!(err, summary, "{format}");
    }
}

#[test]
fn output_file_with_statistics_puts_the_counts_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gl-code-quality.json");
    let file = file.to_str().unwrap();
    let (_, report, _) = run(&[
        "check",
        "--format",
        "gitlab",
        "values-invalid-duplicate-keys.yaml",
    ]);
    let (code, out, err) = run(&[
        "check",
        "--format",
        "gitlab",
        "--statistics",
        "--output",
        file,
        "values-invalid-duplicate-keys.yaml",
    ]);
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert_eq!(std::fs::read_to_string(file).unwrap(), report);
    let (_, table, _) = run(&[
        "check",
        "--statistics",
        "values-invalid-duplicate-keys.yaml",
    ]);
    assert_eq!(err, table);
}

/// On a terminal, stderr shows the human report itself (`script` gives the command a pty).
#[test]
fn output_file_leaves_the_human_report_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.json");
    let command = format!(
        "{} check --no-config --color never --format json --output {} values-invalid-duplicate-keys.yaml",
        env!("CARGO_BIN_EXE_cgpu-lint"),
        file.display()
    );
    let out = std::process::Command::new("script")
        .current_dir(fixtures())
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("script(1) from util-linux");
    assert_eq!(out.status.code(), Some(1));
    let shown = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    assert!(
        shown.contains("values-invalid-duplicate-keys.yaml:12:3: error[duplicate-key]"),
        "{shown}"
    );
    assert!(
        shown.contains("help: delete one of the two entries"),
        "{shown}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(report["summary"]["errors"], 1);
}

#[test]
fn output_file_that_cannot_be_written_is_exit_2_naming_it() {
    let (code, out, err) = run(&[
        "check",
        "--output",
        "no-such-dir/r.json",
        "values-invalid-duplicate-keys.yaml",
    ]);
    assert_eq!(code, 2);
    assert_eq!(out, "");
    assert!(
        err.starts_with("cgpu-lint: error: --output no-such-dir/r.json: "),
        "{err}"
    );
}

/// `fix --diff` keeps the diff on stdout; the report of what is left goes to the file.
#[test]
fn fix_diff_with_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("left.json");
    let file = file.to_str().unwrap();
    let (code, out, err) = run(&[
        "fix",
        "--diff",
        "--no-config",
        "--format",
        "json",
        "--output",
        file,
        "values-invalid-image-pull-policy-case.yaml",
    ]);
    assert_eq!(code, 1);
    assert!(out.starts_with("--- "), "{out}");
    let left: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    assert_eq!(left["version"], 1);
    assert!(err.contains(" checked: "), "{err}");
}
