//! `--format policyreport` (issue 25): the findings as wgpolicyk8s.io/v1alpha2 PolicyReports
//! (and openreports.io/v1alpha1 Reports with `--openreports`), validated against the CRDs'
//! OpenAPI schemas as their projects publish them (tests/schemas/, sources in its README; the CRD
//! YAML is read with PyYAML from target/venv, as tests/ci.rs reads docs/ci.md's jobs).
//! tests/cluster.rs runs `check --cluster --format policyreport` and `kubectl apply
//! --dry-run=client` of the result against the fake API server.

mod common;
use common::policyreport::validate;
use common::*;

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
