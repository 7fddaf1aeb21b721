//! `--format policyreport`: the findings as wgpolicyk8s.io/v1alpha2 PolicyReports
//! (and openreports.io/v1alpha1 Reports with `--openreports`), validated against the CRDs'
//! OpenAPI schemas as their projects publish them (tests/schemas/, sources in its README; the CRD
//! YAML is read with PyYAML from target/venv, as tests/it/ci.rs reads docs/ci.md's jobs).
//! tests/kube/cluster.rs runs `check --cluster --format policyreport` and `kubectl apply
//! --dry-run=client` of the result against the fake API server.

use crate::common;
use crate::common::policyreport::validate;
use crate::common::*;

use serde_json::Value;

fn report_of(args: &[&str]) -> (i32, Value) {
    let out = bin()
        .current_dir(fixtures())
        .args(["check", "--no-config", "--format", "policyreport"])
        .args(args)
        .output()
        .unwrap();
    let list: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), list)
}

const INPUTS: &[&str] = &[
    "daemonset-cgpu-installer-live-kubectl-get.yaml",
    "daemonset-list-kubectl-get-both-installers.yaml",
    "nodes-list-mixed-gpu-sharing.yaml",
    "values-invalid-policy-out-of-range.yaml",
    "helm-template-rendered-core-mismatch-helm4.yaml",
    "no-such-file.yaml",
];

#[test]
fn policy_reports_of_files_validate_against_the_wg_policy_crds() {
    let (code, list) = report_of(INPUTS);
    assert_eq!(code, 2, "an unreadable file is exit 2");
    let items = validate(&list, false);
    let kinds: Vec<(&str, Option<&str>)> = items
        .iter()
        .map(|i| {
            (
                i["kind"].as_str().unwrap(),
                i["metadata"]["namespace"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("ClusterPolicyReport", None),
            ("PolicyReport", Some("kube-system"))
        ]
    );
    let cluster = items[0]["results"].as_array().unwrap();
    let namespaced = items[1]["results"].as_array().unwrap();
    // The installers' findings are about the DaemonSets, in their namespace's report.
    let drift = namespaced
        .iter()
        .find(|r| r["policy"] == "policy-drift")
        .expect("the live installer's kubectl edit");
    assert_eq!(
        drift["resources"][0],
        serde_json::json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "namespace": "kube-system", "name": "cgpu-installer"})
    );
    assert!(
        drift["message"]
            .as_str()
            .unwrap()
            .contains("the next helm upgrade sets it back"),
        "{drift:#}"
    );
    assert!(namespaced.iter().all(|r| r["source"] == "cgpu-lint"));
    // Nodes are cluster-scoped; a values file is no object: its place is in the properties.
    let node = cluster
        .iter()
        .find(|r| r["resources"][0]["kind"] == "Node")
        .expect("a node finding");
    assert!(node["resources"][0].get("namespace").is_none());
    let values = cluster
        .iter()
        .find(|r| r["policy"] == "policy-out-of-range")
        .unwrap();
    assert_eq!(values["result"], "fail");
    assert_eq!(values["scored"], true);
    assert_eq!(values["severity"], "high");
    assert!(values.get("resources").is_none());
    assert_eq!(
        values["properties"]["file"],
        "values-invalid-policy-out-of-range.yaml"
    );
    assert_eq!(values["properties"]["pointer"], "/cgpu/policy");
    assert!(
        cluster
            .iter()
            .any(|r| r["result"] == "error" && r["policy"] == "io-error")
    );
}

#[test]
fn openreports_validate_against_the_openreports_crds() {
    let (_, list) = report_of(&[&["--openreports"], INPUTS].concat());
    let items = validate(&list, true);
    assert!(items.iter().all(|i| i["source"] == "cgpu-lint"));
    assert_eq!(items[1]["kind"], "Report");
}

/// The catalogue's rules of a group, from `cgpu-lint rules --format json` (each is one check
/// a Kyverno-style report lists per resource).
fn rules_of_group(group: &str) -> std::collections::BTreeSet<String> {
    let out = bin().args(["rules", "--format", "json"]).output().unwrap();
    let rules: Value = serde_json::from_slice(&out.stdout).unwrap();
    rules
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["group"] == group)
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_clean_object_gets_a_pass_result_per_rule_that_applies() {
    // The v1.5.10 installer has no finding (`check` exits 0 and says 0 errors, 0 warnings,
    // 0 infos in tests/it/cli.rs's terms): its report is all `pass`, one per installer rule.
    let (code, list) = report_of(&["daemonset-cgpu-installer-v1.5.10-hangzhou.yaml"]);
    assert_eq!(code, 0);
    let items = validate(&list, false);
    assert_eq!(items.len(), 1, "{list:#}");
    assert_eq!(items[0]["kind"], "PolicyReport");
    let results = items[0]["results"].as_array().unwrap();
    assert!(results.iter().all(|r| r["result"] == "pass"), "{list:#}");
    let policies: std::collections::BTreeSet<String> = results
        .iter()
        .map(|r| r["policy"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(policies.len(), results.len(), "one result per rule");
    assert_eq!(policies, rules_of_group("cgpu-installer DaemonSet"));
    for r in results {
        assert_eq!(
            r["resources"][0],
            serde_json::json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "namespace": "kube-system", "name": "cgpu-installer"})
        );
        assert_eq!(
            r["properties"]["file"],
            "daemonset-cgpu-installer-v1.5.10-hangzhou.yaml"
        );
    }
    assert_eq!(items[0]["summary"]["pass"], results.len());
    assert_eq!(items[0]["summary"]["fail"], 0);
    // --select narrows the checks to the rules that ran.
    let (_, list) = report_of(&[
        "--select",
        "installer-namespace",
        "daemonset-cgpu-installer-v1.5.10-hangzhou.yaml",
    ]);
    let items = validate(&list, false);
    let results = items[0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["policy"], "installer-namespace");
}

#[test]
fn a_failing_rule_has_no_pass_result_for_the_same_object() {
    let file = "daemonset-invalid-policy-unquoted-int.yaml";
    let (code, list) = report_of(&[file]);
    assert_eq!(code, 1);
    let items = validate(&list, false);
    let mut by_object: std::collections::BTreeMap<(String, String), Vec<&str>> = Default::default();
    let mut counts: std::collections::BTreeMap<&str, u64> = Default::default();
    for i in &items {
        for r in i["results"].as_array().unwrap() {
            let key = (r["resources"].to_string(), r["policy"].to_string());
            by_object
                .entry(key)
                .or_default()
                .push(r["result"].as_str().unwrap());
            *counts.entry(r["result"].as_str().unwrap()).or_default() += 1;
        }
    }
    // `check --format json` of the same file names the failing rules.
    let out = bin()
        .current_dir(fixtures())
        .args(["check", "--no-config", "--format", "json", file])
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors: Vec<&str> = json["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| d["rule"].as_str().unwrap())
        .collect();
    assert!(errors.contains(&"installer-policy-unquoted"), "{json:#}");
    for rule in &errors {
        let results: Vec<&str> = by_object
            .iter()
            .filter(|((_, p), _)| p == &format!("\"{rule}\""))
            .flat_map(|(_, v)| v.iter().copied())
            .collect();
        assert!(results.contains(&"fail"), "{rule}: {results:?}");
        assert!(!results.contains(&"pass"), "{rule}: {results:?}");
    }
    // No object has two results for one rule, except where a rule fired twice.
    assert_eq!(
        counts.get("fail").copied().unwrap_or(0),
        errors.len() as u64
    );
    assert!(counts["pass"] > 0, "the rules that did not fire passed");
    let total: u64 = counts.values().sum();
    let summed: u64 = items
        .iter()
        .flat_map(|i| {
            ["pass", "fail", "warn", "error", "skip"].map(|k| i["summary"][k].as_u64().unwrap())
        })
        .sum();
    assert_eq!(summed, total);
}

#[test]
fn a_values_file_passes_the_values_rules_by_file() {
    // values-policy-only.yaml has one info (a pass with a remark); every other values rule
    // passes, named by the file (a values file is no Kubernetes object).
    let (_, list) = report_of(&["values-policy-only.yaml"]);
    let items = validate(&list, false);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["kind"], "ClusterPolicyReport");
    let results = items[0]["results"].as_array().unwrap();
    assert!(results.iter().all(|r| r["result"] == "pass"));
    assert!(
        results.iter().all(|r| r.get("resources").is_none()
            && r["properties"]["file"] == "values-policy-only.yaml")
    );
    let policies: std::collections::BTreeSet<String> = results
        .iter()
        .map(|r| r["policy"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(policies.len(), results.len(), "one result per rule");
    assert_eq!(policies, rules_of_group("values (`cgpu:` block)"));
}

/// Earlier v1alpha2 CRDs took `severity` high, low or medium only (the CRD file in tests/schemas
/// still has that enum in v1alpha1; its v1alpha2 has critical and info too):
/// `--original-severities` writes only those (an info finding as low), and every
/// report names the CRD it is written for in its `cgpu-lint/crd` annotation.
#[test]
fn original_severities_fit_the_first_v1alpha2_crd() {
    let (_, current) = report_of(INPUTS);
    let mut args = vec!["--original-severities"];
    args.extend_from_slice(INPUTS);
    let (code, original) = report_of(&args);
    assert_eq!(code, 2, "an unreadable file is exit 2");
    // The schema as first published: the same, with the three severities.
    let validators: Vec<(&str, jsonschema::Validator)> = [
        ("PolicyReport", "wgpolicyk8s.io_policyreports"),
        ("ClusterPolicyReport", "wgpolicyk8s.io_clusterpolicyreports"),
    ]
    .iter()
    .map(|(kind, file)| {
        let mut schema = common::policyreport::crd_schema(file, "v1alpha2");
        let old = common::policyreport::crd_schema(file, "v1alpha1");
        let severity = |s: &Value| {
            s["properties"]["results"]["items"]["properties"]["severity"]["enum"].clone()
        };
        assert_eq!(severity(&old), serde_json::json!(["high", "low", "medium"]));
        assert_eq!(
            severity(&schema),
            serde_json::json!(["critical", "high", "low", "medium", "info"])
        );
        schema["properties"]["results"]["items"]["properties"]["severity"]["enum"] = severity(&old);
        (*kind, jsonschema::validator_for(&schema).unwrap())
    })
    .collect();
    let fits = |list: &Value| {
        list["items"].as_array().unwrap().iter().all(|item| {
            let kind = item["kind"].as_str().unwrap();
            validators
                .iter()
                .find(|(k, _)| *k == kind)
                .unwrap()
                .1
                .is_valid(item)
        })
    };
    let severities = |list: &Value| -> std::collections::BTreeSet<String> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|i| i["results"].as_array().unwrap().iter())
            .map(|r| r["severity"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        severities(&current).contains("info"),
        "{:?}",
        severities(&current)
    );
    assert!(
        !fits(&current),
        "the current severities do not fit the first CRD"
    );
    assert_eq!(
        severities(&original).into_iter().collect::<Vec<_>>(),
        ["high", "low", "medium"]
    );
    assert!(fits(&original));
    validate(&original, false);
    for (list, crd) in [
        (&current, "last changed 2023-02-08"),
        (&original, "as earlier CRDs define it"),
    ] {
        for item in list["items"].as_array().unwrap() {
            let note = item["metadata"]["annotations"]["cgpu-lint/crd"]
                .as_str()
                .unwrap();
            assert!(
                note.starts_with("wgpolicyk8s.io/v1alpha2 ") && note.contains(crd),
                "{note}"
            );
        }
    }
}
