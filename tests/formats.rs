//! The CI output formats (sarif, github, junit): snapshots on the multi-document fixture, and the
//! SARIF log validated against the OASIS SARIF 2.1.0 JSON Schema (tests/schemas/).
//!
//! Snapshots live in tests/snapshots/; regenerate them with `UPDATE_SNAPSHOTS=1 cargo test`.

mod common;
use common::*;

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
