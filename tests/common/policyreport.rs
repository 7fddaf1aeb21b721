//! Policy reports against the CRDs their projects publish (tests/schemas/): shared by
//! tests/it/policyreport.rs (files) and tests/kube/cluster.rs (`check --cluster`).

use std::path::PathBuf;

use serde_json::Value;

/// The openAPIV3Schema of `version` in the CRD file `tests/schemas/NAME.yaml`.
pub fn crd_schema(name: &str, version: &str) -> Value {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = root.join("target/venv/bin/python");
    assert!(python.exists(), "run scripts/install-test-tools");
    let out = std::process::Command::new(python)
        .args([
            "-c",
            "import sys, yaml, json; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
        ])
        .arg(root.join("tests/schemas").join(format!("{name}.yaml")))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let crd: Value = serde_json::from_slice(&out.stdout).unwrap();
    crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == version)
        .unwrap_or_else(|| panic!("{name} has no {version}"))["schema"]["openAPIV3Schema"]
        .clone()
}

/// Validate every report of a `v1` List against its kind's CRD schema; returns the items.
pub fn validate(list: &Value, openreports: bool) -> Vec<Value> {
    let (files, version, group) = if openreports {
        (
            [
                ("Report", "openreports.io_reports"),
                ("ClusterReport", "openreports.io_clusterreports"),
            ],
            "v1alpha1",
            "openreports.io/v1alpha1",
        )
    } else {
        (
            [
                ("PolicyReport", "wgpolicyk8s.io_policyreports"),
                ("ClusterPolicyReport", "wgpolicyk8s.io_clusterpolicyreports"),
            ],
            "v1alpha2",
            "wgpolicyk8s.io/v1alpha2",
        )
    };
    let validators: Vec<(&str, jsonschema::Validator)> = files
        .iter()
        .map(|(kind, file)| {
            let schema = crd_schema(file, version);
            (
                *kind,
                jsonschema::validator_for(&schema).expect("the CRD schema compiles"),
            )
        })
        .collect();
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["kind"], "List");
    let items = list["items"].as_array().unwrap().clone();
    for item in &items {
        assert_eq!(item["apiVersion"], group);
        let kind = item["kind"].as_str().unwrap();
        let (_, v) = validators
            .iter()
            .find(|(k, _)| *k == kind)
            .unwrap_or_else(|| panic!("unexpected kind {kind}"));
        let errors: Vec<String> = v
            .iter_errors(item)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}\n{item:#}");
        assert_eq!(item["metadata"]["name"], "cgpu-lint");
        // The summary counts the results.
        for k in ["pass", "fail", "warn", "error", "skip"] {
            let n = item["results"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["result"] == k)
                .count();
            assert_eq!(item["summary"][k], n, "{k}: {item:#}");
        }
    }
    // The schemas do bite: a result outside their enum is refused.
    let mut bad = items[0].clone();
    bad["results"][0]["result"] = "failed".into();
    assert!(!validators[0].1.is_valid(&bad) || !validators[1].1.is_valid(&bad));
    items
}
