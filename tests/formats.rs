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
