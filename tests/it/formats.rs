//! The CI output formats (sarif, github, junit): snapshots on the multi-document fixture, and the
//! SARIF log validated against the OASIS SARIF 2.1.0 JSON Schema (tests/schemas/).
//!
//! Snapshots live in tests/snapshots/; regenerate them with `UPDATE_SNAPSHOTS=1 cargo test`.

use crate::common::*;

use std::path::PathBuf;

const MULTI_DOC: &str = "values-multi-doc-two-clusters.yaml";

/// Run `check --format FORMAT FILES...` from tests/fixtures (so paths in the output are the
/// relative names CI would show) and return (status, stdout).
fn run_format(format: &str, files: &[&str]) -> (i32, String) {
    let out = bin()
        .current_dir(fixtures())
        .args(["check", "--format", format])
        .args(files)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

fn snapshot(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run `UPDATE_SNAPSHOTS=1 cargo test --test formats`",
            path.display()
        )
    });
    assert_eq!(
        actual, expected,
        "{name} changed; if that is intended run `UPDATE_SNAPSHOTS=1 cargo test --test formats`"
    );
}

#[test]
fn github_format_on_the_multi_document_fixture() {
    let (code, out) = run_format("github", &[MULTI_DOC]);
    assert_eq!(code, 1);
    // Helm 3 and Helm 4 read this two-document file differently: that warning comes first.
    assert!(out.starts_with(
        "::warning file=values-multi-doc-two-clusters.yaml,line=6,col=1,endLine=6,endColumn=1,title=helm-versions-differ::"
    ));
    assert!(out.contains(
        "::error file=values-multi-doc-two-clusters.yaml,line=7,col=11,endLine=7,endColumn=13,title=policy-out-of-range::"
    ));
    snapshot("multi-doc.github", &out);
}

#[test]
fn junit_format_on_the_multi_document_fixture() {
    let (code, out) = run_format("junit", &[MULTI_DOC]);
    assert_eq!(code, 1);
    snapshot("multi-doc.junit.xml", &out);
}

#[test]
fn sarif_format_on_the_multi_document_fixture() {
    let (code, out) = run_format("sarif", &[MULTI_DOC]);
    assert_eq!(code, 1);
    let log: serde_json::Value = serde_json::from_str(&out).unwrap();
    // The catalogue, the version and rule indexes change whenever a rule is added; they are
    // checked on their own (sarif_driver_rules_are_the_catalogue_with_help), not snapshotted.
    let mut stable = log.clone();
    let driver = &mut stable["runs"][0]["tool"]["driver"];
    driver["rules"] = "<the catalogue>".into();
    driver["version"] = "<version>".into();
    driver["semanticVersion"] = "<version>".into();
    for r in stable["runs"][0]["results"].as_array_mut().unwrap() {
        r.as_object_mut().unwrap().remove("ruleIndex");
    }
    snapshot(
        "multi-doc.sarif",
        &(serde_json::to_string_pretty(&stable).unwrap() + "\n"),
    );
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["ruleId"], "helm-versions-differ");
    let r = &results[1];
    assert_eq!(r["ruleId"], "policy-out-of-range");
    assert_eq!(r["level"], "error");
    let loc = &r["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], MULTI_DOC);
    assert_eq!(loc["region"]["startLine"], 7);
    assert_eq!(loc["region"]["startColumn"], 11);
    assert_eq!(loc["region"]["endLine"], 7);
    assert_eq!(loc["region"]["endColumn"], 13);
    assert_eq!(r["properties"]["document"], 2);
    // pull-policy is fixable: the replacement travels with the result.
    let fix = &results[2]["fixes"][0]["artifactChanges"][0]["replacements"][0];
    assert_eq!(fix["insertedContent"]["text"], "Never");
}

#[test]
fn sarif_driver_rules_are_the_catalogue_with_help() {
    let (_, out) = run_format("sarif", &[MULTI_DOC]);
    let log: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rules = log["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    let listed = bin().args(["rules", "--format", "json"]).output().unwrap();
    let catalogue: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(rules.len(), catalogue.len());
    for (r, c) in rules.iter().zip(&catalogue) {
        assert_eq!(r["id"], c["name"]);
        assert!(
            r["help"]["text"]
                .as_str()
                .unwrap()
                .starts_with(c["help"].as_str().unwrap())
        );
    }
    // ruleIndex points at the result's rule.
    for res in log["runs"][0]["results"].as_array().unwrap() {
        let i = res["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[i]["id"], res["ruleId"]);
    }
}

#[test]
fn sarif_validates_against_the_sarif_2_1_0_schema() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schemas/sarif-schema-2.1.0.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the SARIF schema compiles");
    // Findings of every shape: fixable, related locations (duplicate-key), a syntax error at an
    // empty span, several documents, no finding at all.
    let mut inputs: Vec<&str> = vec![
        MULTI_DOC,
        "values-invalid-duplicate-keys.yaml",
        "values-invalid-image-with-registry-and-tag.yaml",
        "values-invalid-nodeselector-not-a-map.yaml",
        "values-missing-cgpu-block.yaml",
    ];
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken values.yaml");
    std::fs::write(&broken, "cgpu:\n  policy: [1\n").unwrap();
    let broken = broken.to_string_lossy().into_owned();
    inputs.push(&broken);
    for files in [inputs.as_slice(), &["values-policy-change-target.yaml"]] {
        let (_, out) = run_format("sarif", files);
        let log: serde_json::Value = serde_json::from_str(&out).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&log)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "SARIF invalid: {errors:#?}\n{out}");
    }
    // The schema does bite: a level SARIF does not have is refused.
    let (_, out) = run_format("sarif", &[MULTI_DOC]);
    let mut log: serde_json::Value = serde_json::from_str(&out).unwrap();
    log["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(!validator.is_valid(&log));
}

#[test]
fn ci_formats_report_paths_relative_to_the_working_directory() {
    // An absolute path under the working directory is shown relative to it.
    let abs = fixture(MULTI_DOC);
    let (_, gh) = run_format("github", &[&abs]);
    assert!(
        gh.contains("file=values-multi-doc-two-clusters.yaml,"),
        "{gh}"
    );
    let (_, sarif) = run_format("sarif", &[&format!("./{MULTI_DOC}")]);
    assert!(sarif.contains("\"uri\": \"values-multi-doc-two-clusters.yaml\""));
}

#[test]
fn junit_without_findings_is_one_passing_testcase() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("values.yaml"),
        "cgpu:\n  tag: v1.5.10-abc1234-aliyun\n  policy: 1\n",
    )
    .unwrap();
    let out = bin()
        .current_dir(dir.path())
        .args(["check", "--format", "junit", "values.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let xml = String::from_utf8(out.stdout).unwrap();
    assert!(xml.contains("failures=\"0\""), "{xml}");
    assert!(
        xml.contains("<testcase name=\"1 file checked, no findings\""),
        "{xml}"
    );
}

/// The fixtures with findings of every kind the GitLab report must carry.
const GITLAB_INPUTS: &[&str] = &[
    MULTI_DOC,
    "values-invalid-duplicate-keys.yaml",
    "values-invalid-image-with-registry-and-tag.yaml",
    "values-invalid-nodeselector-not-a-map.yaml",
    "values-missing-cgpu-block.yaml",
    "values-warn-unknown-keys-typo.yaml",
    "daemonset-invalid-old-version-public-registry-no-policy.yaml",
    "helm-template-rendered-core-mismatch-helm4.yaml",
    "nodes-list-mixed-gpu-sharing.yaml",
];

#[test]
fn gitlab_format_on_the_multi_document_fixture() {
    let (code, out) = run_format("gitlab", &[MULTI_DOC]);
    assert_eq!(code, 1);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let issues = report.as_array().unwrap();
    assert_eq!(issues.len(), 3);
    let policy = &issues[1];
    assert_eq!(policy["check_name"], "policy-out-of-range");
    assert_eq!(policy["severity"], "major");
    assert_eq!(policy["location"]["path"], MULTI_DOC);
    assert_eq!(policy["location"]["lines"]["begin"], 7);
    snapshot("multi-doc.gitlab.json", &out);
}

/// Every entry passes the schema GitLab itself validates entries with (an entry that fails it
/// is dropped from the merge request widget without a word), and the report keeps what GitLab's
/// "Code Quality report format" documents beyond the schema.
#[test]
fn gitlab_validates_against_gitlabs_codeclimate_schema_and_documented_format() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schemas/gitlab-codeclimate.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("GitLab's schema compiles");
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken values.yaml");
    std::fs::write(&broken, "cgpu:\n  policy: [1\n").unwrap();
    let broken = broken.to_string_lossy().into_owned();
    let mut inputs = GITLAB_INPUTS.to_vec();
    inputs.push(&broken);
    inputs.push("no-such-file.yaml");
    let (code, out) = run_format("gitlab", &inputs);
    assert_eq!(code, 2, "an unreadable input is exit 2");
    assert!(
        !out.starts_with('\u{feff}'),
        "GitLab's parser refuses a BOM"
    );
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let issues = report.as_array().expect("one JSON array");
    assert!(issues.len() > 15, "{out}");
    let mut fingerprints = std::collections::BTreeSet::new();
    for issue in issues {
        let errors: Vec<String> = validator
            .iter_errors(issue)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}\n{issue:#}");
        assert!(issue["check_name"].is_string(), "{issue:#}");
        let severity = issue["severity"].as_str().unwrap();
        assert!(
            ["info", "minor", "major", "critical", "blocker"].contains(&severity),
            "{issue:#}"
        );
        let path = issue["location"]["path"].as_str().unwrap();
        // Relative to the working directory; only a file outside it keeps its absolute path.
        assert!(
            path == broken || (!path.starts_with('/') && !path.starts_with("./")),
            "{path}"
        );
        assert!(issue["location"]["lines"]["begin"].as_u64().unwrap() >= 1);
        assert!(
            fingerprints.insert(issue["fingerprint"].as_str().unwrap().to_string()),
            "GitLab shows identical fingerprints as one entry: {issue:#}"
        );
    }
    assert!(
        issues
            .iter()
            .any(|i| i["check_name"] == "io-error" && i["severity"] == "blocker")
    );
    assert!(issues.iter().any(|i| i["check_name"] == "yaml-syntax"));
    // The schema does bite: a line that is not an integer is refused.
    let mut bad = issues[0].clone();
    bad["location"]["lines"]["begin"] = "7".into();
    assert!(!validator.is_valid(&bad));
}

/// `check --format gitlab` of `text` saved as `name` in a fresh directory: (check_name,
/// fingerprint, line) of each entry.
fn gitlab_of(name: &str, text: &str) -> Vec<(String, String, u64)> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), text).unwrap();
    let out = bin()
        .current_dir(dir.path())
        .args(["check", "--no-config", "--format", "gitlab", name])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    report
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["check_name"].as_str().unwrap().to_string(),
                i["fingerprint"].as_str().unwrap().to_string(),
                i["location"]["lines"]["begin"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn gitlab_fingerprint_ignores_the_value_but_not_the_rule_or_the_place() {
    let a = gitlab_of("v.yaml", "cgpu:\n  policy: 9\n");
    let b = gitlab_of("v.yaml", "cgpu:\n  policy: 7\n");
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].0, "policy-out-of-range");
    assert_eq!(a[0].1, b[0].1, "the same issue with another value");
    let other_file = gitlab_of("w.yaml", "cgpu:\n  policy: 9\n");
    assert_ne!(a[0].1, other_file[0].1);
    let other_doc = gitlab_of("v.yaml", "---\nother: 1\n---\ncgpu:\n  policy: 9\n");
    assert!(
        other_doc.iter().all(|(_, f, _)| *f != a[0].1),
        "{other_doc:?}"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..Default::default() })]

    /// Lines inserted above the findings (comments or blank lines at the top of the file and
    /// after each `---`) move every finding down and keep every fingerprint.
    #[test]
    fn gitlab_fingerprints_survive_lines_inserted_above(
        which in 0..GITLAB_INPUTS.len(),
        top in proptest::collection::vec("(# [a-z ]{0,12})?", 1..6),
        per_doc in 0usize..3,
    ) {
        let name = GITLAB_INPUTS[which];
        let text = std::fs::read_to_string(fixtures().join(name)).unwrap();
        let mut moved = top.iter().map(|l| format!("{l}\n")).collect::<String>();
        for line in text.split_inclusive('\n') {
            moved.push_str(line);
            if line.trim_end() == "---" {
                moved.push_str(&"# inserted\n".repeat(per_doc));
            }
        }
        let before = gitlab_of(name, &text);
        let after = gitlab_of(name, &moved);
        proptest::prop_assert!(!before.is_empty());
        let key = |v: &[(String, String, u64)]| {
            let mut k: Vec<(String, String)> = v.iter().map(|(c, f, _)| (c.clone(), f.clone())).collect();
            k.sort();
            k
        };
        proptest::prop_assert_eq!(key(&before), key(&after));
        let lines = |v: &[(String, String, u64)]| v.iter().map(|x| x.2).sum::<u64>();
        proptest::prop_assert!(lines(&after) >= lines(&before) + top.len() as u64 * before.len() as u64);
    }
}

// ---- rdjson and azure ----

#[cfg(feature = "tools")]
fn node_module(path: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/tools/node/node_modules")
        .join(path);
    assert!(
        p.exists(),
        "{} is missing: run scripts/install-test-tools",
        p.display()
    );
    p
}

/// Generated values files: fixable scalars (safe and unsafe fixes), non-ASCII text before and
/// inside the flagged tokens, CRLF line ends, comments after values, unknown keys and label
/// keys that carry `%`, `;`, `]`, CR, LF and non-ASCII into the messages.
#[cfg(feature = "tools")]
fn generated_values(seed: u64, n: usize) -> Vec<(String, String)> {
    let mut g = Rng::seeded(seed);
    let hostile = [
        "a;b", "x]y", "50%", "%AZP25", "%0A", "ü;é]", "日本", "q\\r\\nr", "t\\nu", "𐐀b",
    ];
    let values = [
        "enabled: \"false\"",
        "enabled: On",
        "checkRegions: n",
        "imagePullPolicy: always",
        "imagePullPolicy: \"ifnotpresent\"",
        "policy: 3.0",
        "policy: \"2\"",
        "policy: 03",
        "policy: 9",
        "tag: latest",
        "tag: v1.5.3-8d3fc1b-aliyun",
    ];
    let comments = ["", "  # ü é", "  # 日本語", "   # %;]"];
    (0..n)
        .map(|i| {
            let eol = if g.below(3) == 0 { "\r\n" } else { "\n" };
            let mut lines = vec![format!("# généré {i} — {}", g.pick(&hostile))];
            lines.push("cgpu:".into());
            for _ in 0..(2 + g.below(4)) {
                lines.push(format!("  {}{}", g.pick(&values), g.pick(&comments)));
            }
            if g.chance(50) {
                lines.push(format!("  \"{}\": 1", g.pick(&hostile)));
            }
            lines.push("  nodeSelector:".into());
            lines.push(format!("    \"é{}\": yes", g.pick(&hostile)));
            lines.push(format!("    pool-{}: no", g.below(10)));
            let mut name = format!("gen-{i}-{}.yaml", g.pick(&["a", "ü", "b;c", "d]e", "f%g"]));
            name = name.replace('/', "_");
            (name, lines.join(eol) + eol)
        })
        .collect()
}

/// Every fixture (recursively) and the generated files, copied into one folder, with the
/// relative names `check` is given.
#[cfg(feature = "tools")]
fn rdjson_cases(dir: &std::path::Path) -> Vec<String> {
    let mut names = Vec::new();
    let mut stack = vec![fixtures()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if matches!(
                p.extension().and_then(|x| x.to_str()),
                Some("yaml" | "yml" | "json")
            ) {
                let rel = p.strip_prefix(fixtures()).unwrap();
                let to = dir.join("fixtures").join(rel);
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(&p, &to).unwrap();
                names.push(format!("fixtures/{}", rel.display()));
            }
        }
    }
    for (name, text) in generated_values(37, 40) {
        std::fs::write(dir.join(&name), text).unwrap();
        names.push(name);
    }
    names.sort();
    names
}

fn run_in(dir: &std::path::Path, args: &[&str]) -> (i32, String) {
    let out = bin().current_dir(dir).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

/// reviewdog's column (1-based, UTF-8 bytes, reviewdog.proto's `Position`) of the character
/// column `col` (1-based, what `--format json` prints) of `line` of `text`.
#[cfg(feature = "tools")]
fn byte_column(text: &str, line: usize, col: usize) -> usize {
    let l = text.split('\n').nth(line - 1).unwrap_or("");
    // JSON's columns do not count a byte-order mark; reviewdog's bytes do.
    let skip = usize::from(line == 1 && l.starts_with('\u{feff}'));
    l.chars()
        .take(col - 1 + skip)
        .map(char::len_utf8)
        .sum::<usize>()
        + 1
}

// Every fixture and 40 generated files: each `--format rdjson` document is valid for the
// reviewdog Diagnostic Format validator (@umbrelladocs/rdformat-validator, strict, no extra
// fields); its positions are the JSON format's converted to UTF-8 byte columns; and applying
// its suggestions as reviewdog does (byte ranges, end exclusive) gives what `fix --stdout`
// prints, for every generated file.
#[cfg(feature = "tools")]
#[test]
fn rdjson_is_valid_reviewdog_format_with_byte_columns_and_exact_suggestions() {
    let validator = node_module("@umbrelladocs/rdformat-validator/bin/rdformat-validator.js");
    let dir = tempfile::tempdir().unwrap();
    let names = rdjson_cases(dir.path());
    assert!(names.len() >= 120, "{} cases", names.len());
    let out_dir = tempfile::tempdir().unwrap();
    let mut written = Vec::new();
    let (mut suggestions, mut non_ascii) = (0, 0);
    for (i, name) in names.iter().enumerate() {
        let (_, rd) = run_in(dir.path(), &["check", "--format", "rdjson", name]);
        let (_, js) = run_in(dir.path(), &["check", "--format", "json", name]);
        let rd: serde_json::Value = serde_json::from_str(&rd).unwrap();
        let js: serde_json::Value = serde_json::from_str(&js).unwrap();
        let (rds, jss) = (
            rd["diagnostics"].as_array().unwrap(),
            js["diagnostics"].as_array().unwrap(),
        );
        assert_eq!(rds.len(), jss.len(), "{name}");
        let read = |path: &str| String::from_utf8(std::fs::read(dir.path().join(path)).ok()?).ok();
        let text = read(name);
        for (r, j) in rds.iter().zip(jss) {
            assert_eq!(r["code"]["value"], j["rule"], "{name}");
            assert_eq!(r["location"]["path"], j["file"], "{name}");
            let sev = j["severity"].as_str().unwrap().to_uppercase();
            assert_eq!(r["severity"], sev.as_str(), "{name}");
            // The file the finding is in (a values file a release names, say).
            let Some(text) = read(j["file"].as_str().unwrap()) else {
                continue;
            };
            let text = &text;
            for (end, line, col) in [
                ("start", "line", "column"),
                ("end", "end_line", "end_column"),
            ] {
                let (l, c) = (
                    j[line].as_u64().unwrap() as usize,
                    j[col].as_u64().unwrap() as usize,
                );
                let pos = &r["location"]["range"][end];
                assert_eq!(pos["line"], l, "{name}: {r}");
                assert_eq!(pos["column"], byte_column(text, l, c), "{name}: {r}");
                if byte_column(text, l, c) != c {
                    non_ascii += 1;
                }
            }
            assert_eq!(
                r.get("suggestions").is_some(),
                j["fixable"] == true,
                "suggestions exactly for the fixes `fix` applies: {name}: {r}"
            );
        }
        if !name.starts_with("fixtures/") {
            // Apply the suggestions to the original bytes as reviewdog does.
            let text = text.unwrap();
            let starts: Vec<usize> = std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .collect();
            let offset = |p: &serde_json::Value| {
                starts[p["line"].as_u64().unwrap() as usize - 1]
                    + p["column"].as_u64().unwrap() as usize
                    - 1
            };
            let mut edits: Vec<(usize, usize, String)> = rds
                .iter()
                .flat_map(|r| r["suggestions"].as_array().cloned().unwrap_or_default())
                .map(|s| {
                    (
                        offset(&s["range"]["start"]),
                        offset(&s["range"]["end"]),
                        s["text"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            suggestions += edits.len();
            edits.sort_by_key(|e| std::cmp::Reverse(e.0));
            let mut fixed = text.clone();
            for (s, e, t) in edits {
                fixed.replace_range(s..e, &t);
            }
            let out = bin()
                .current_dir(dir.path())
                .args(["fix", "--stdout", name])
                .output()
                .unwrap();
            assert_eq!(
                fixed,
                String::from_utf8(out.stdout).unwrap(),
                "{name}: the suggestions applied are not `fix`'s result"
            );
        }
        let file = out_dir.path().join(format!("{i}.json"));
        std::fs::write(&file, serde_json::to_string(&rd).unwrap()).unwrap();
        written.push(file);
    }
    assert!(suggestions >= 40, "{suggestions} suggestions");
    assert!(non_ascii >= 10, "{non_ascii} non-ASCII positions");
    let out = std::process::Command::new("node")
        .arg(&validator)
        .args(["--strict", "--no-extra-fields", "--format", "json"])
        .args(&written)
        .output()
        .expect("node");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(report["filesProcessed"], written.len());
    assert_eq!(report["success"], true, "{report:#}");
    assert_eq!(report["validFiles"], written.len(), "{report:#}");
    // The validator does bite: a lower-case severity is refused.
    let bad = out_dir.path().join("bad.json");
    let (_, rd) = run_format("rdjson", &[MULTI_DOC]);
    std::fs::write(&bad, rd.replace("\"ERROR\"", "\"error\"")).unwrap();
    let out = std::process::Command::new("node")
        .arg(&validator)
        .args(["--strict", "--no-extra-fields", "--format", "json"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
}

// reviewdog.proto's example ('a𐐀b': b is column 6) on a real finding: the label key after
// four-byte and two-byte characters.
#[test]
fn rdjson_columns_on_a_non_ascii_line_count_utf8_bytes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("v.yaml"),
        "cgpu:\n  nodeSelector: {\"𐐀é\": yes}\n",
    )
    .unwrap();
    let (_, rd) = run_in(dir.path(), &["check", "--format", "rdjson", "v.yaml"]);
    let rd: serde_json::Value = serde_json::from_str(&rd).unwrap();
    let d = rd["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"]["value"] == "label-value-type")
        .expect("label-value-type");
    // `  nodeSelector: {"` is 18 bytes, `𐐀é` 4 + 2, then `": ` 3: `yes` starts at byte 27,
    // column 28, and ends before column 31; the JSON format (characters) says 24 and 27.
    assert_eq!(
        d["location"]["range"]["start"],
        serde_json::json!({"line": 2, "column": 28})
    );
    assert_eq!(
        d["location"]["range"]["end"],
        serde_json::json!({"line": 2, "column": 31})
    );
    assert_eq!(d["suggestions"][0]["text"], "\"true\"");
}

#[test]
fn rdjson_format_on_the_multi_document_fixture() {
    let (code, out) = run_format("rdjson", &[MULTI_DOC]);
    assert_eq!(code, 1);
    snapshot("multi-doc.rdjson", &out);
}

#[test]
fn azure_format_on_the_multi_document_fixture() {
    let (code, out) = run_format("azure", &[MULTI_DOC]);
    assert_eq!(code, 1);
    assert!(out.contains(
        "##vso[task.logissue type=error;sourcepath=values-multi-doc-two-clusters.yaml;linenumber=7;columnnumber=11;code=policy-out-of-range;]"
    ));
    snapshot("multi-doc.azure", &out);
}

// Files whose names and findings carry `;`, `]`, `%`, `%AZP25`, CR, LF and non-ASCII text: every
// `##vso[task.logissue …]` line, parsed by the Azure Pipelines task library's own parser
// (azure-pipelines-task-lib's taskcommand.js `commandFromString`, the agent's unescaping), gives
// back exactly the fields of the JSON report: type, sourcepath, line, column, code and message.
#[cfg(feature = "tools")]
#[test]
fn azure_commands_parse_back_to_the_exact_fields_with_the_task_lib() {
    let taskcommand = node_module("azure-pipelines-task-lib/taskcommand.js");
    let dir = tempfile::tempdir().unwrap();
    let mut g = Rng::seeded(3700);
    let parts = [
        "a;b", "c]d", "50%", "%AZP25", "%0A", "%3B", "ü", "日本", "\r", "\n", "x\r\ny", "[v]",
        "k=v",
    ];
    let mut names = Vec::new();
    for i in 0..60 {
        // A name may not end in whitespace: the task library trims each property (documented
        // in docs/output-formats.md).
        let name = format!("{}{i}{}.yaml", g.pick(&parts), g.pick(&parts));
        let key = format!("{}{}", g.pick(&parts), g.pick(&parts));
        let yaml_key = serde_json::to_string(&key).unwrap();
        let text = match i % 4 {
            0 => format!("cgpu:\n  {yaml_key}: 1\n  policy: 3.0\n"),
            1 => format!("cgpu:\n  nodeSelector:\n    {yaml_key}: \"v\"\n"),
            2 => format!("# {key}\ncgpu:\n  enabled: \"false\"\n  tag: latest\n"),
            _ => format!("other: {yaml_key}\n"),
        };
        std::fs::write(dir.path().join(&name), text).unwrap();
        names.push(name);
    }
    let mut args = vec!["check".to_string(), "--format".into(), "azure".into()];
    args.extend(names.iter().cloned());
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (_, azure) = run_in(dir.path(), &arg_refs);
    let mut jargs = arg_refs.clone();
    jargs[2] = "json";
    let (_, js) = run_in(dir.path(), &jargs);
    let js: serde_json::Value = serde_json::from_str(&js).unwrap();
    for esc in ["%3B", "%5D", "%AZP25", "%0D", "%0A"] {
        assert!(azure.contains(esc), "no case needed {esc}");
    }
    let parse = r#"
        const tc = require(process.argv[1]);
        const lines = require('fs').readFileSync(0, 'utf8').split('\n');
        const out = [];
        for (const l of lines) {
            if (!l.startsWith('##vso[')) continue;
            const c = tc.commandFromString(l);
            out.push({command: c.command, properties: c.properties, message: c.message});
        }
        process.stdout.write(JSON.stringify(out));
    "#;
    let out = std::process::Command::new("node")
        .args(["-e", parse])
        .arg(&taskcommand)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(azure.as_bytes())?;
            child.wait_with_output()
        })
        .expect("node");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parsed: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let diags = js["diagnostics"].as_array().unwrap();
    assert!(diags.len() >= 60, "{} findings", diags.len());
    assert_eq!(parsed.len(), diags.len());
    for (p, d) in parsed.iter().zip(diags) {
        let sev = d["severity"].as_str().unwrap();
        let (kind, prefix) = match sev {
            "error" => ("error", ""),
            "warning" => ("warning", ""),
            _ => ("warning", "info: "),
        };
        let want = serde_json::json!({
            "command": "task.logissue",
            "properties": {
                "type": kind,
                "sourcepath": d["file"],
                "linenumber": d["line"].to_string(),
                "columnnumber": d["column"].to_string(),
                "code": d["rule"],
            },
            "message": format!(
                "{prefix}{}\nhelp: {}",
                d["message"].as_str().unwrap(),
                d["help"].as_str().unwrap()
            ),
        });
        assert_eq!(p, &want);
    }
}

// post-render takes the same --format list: its report (stderr, --report) in rdjson and azure
// holds the findings its JSON report holds.
#[test]
fn post_render_reports_in_rdjson_and_azure_as_in_json() {
    let stream = std::fs::read(fixtures().join("helm-template-rendered-stream.yaml")).unwrap();
    let report = |format: &str| -> String {
        let out = bin()
            .args(["post-render", "--fail-on", "never", "--format", format])
            .write_stdin(stream.clone())
            .output()
            .unwrap();
        assert_eq!(out.stdout, stream, "the stream passes unchanged");
        String::from_utf8(out.stderr).unwrap()
    };
    let js: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    let want: Vec<(String, u64)> = js["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["rule"].as_str().unwrap().into(),
                d["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(!want.is_empty());
    let rd: serde_json::Value = serde_json::from_str(&report("rdjson")).unwrap();
    let got: Vec<(String, u64)> = rd["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"]["value"].as_str().unwrap().into(),
                d["location"]["range"]["start"]["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, want);
    let az = report("azure");
    let got: Vec<(String, u64)> = az
        .lines()
        .filter(|l| l.starts_with("##vso[task.logissue "))
        .map(|l| {
            let field = |k: &str| {
                l.split(';')
                    .find_map(|p| p.strip_prefix(k))
                    .unwrap()
                    .to_string()
            };
            (field("code="), field("linenumber=").parse().unwrap())
        })
        .collect();
    assert_eq!(got, want);
}
