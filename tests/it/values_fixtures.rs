//! Every values fixture checked through the real binary with the exact rule set the fixtures
//! README gives (KP = tag-known-deadlock). Lines and columns were read off the fixture files.

use crate::common::*;

const KP: &str = "tag-known-deadlock";

#[test]
fn valid_full_default_has_only_the_deadlock_warning() {
    let r = check_json(&[&fixture("values-valid-full-default.yaml")]);
    expect_rules(&r, &[(KP, 1)]);
    assert_eq!(r.code, 0);
    let kp = r.find(KP)[0];
    assert_eq!(
        (kp["line"].as_u64(), kp["column"].as_u64()),
        (Some(19), Some(8))
    );
    assert_eq!(kp["path"], "/cgpu/tag");
}

#[test]
fn quoted_policy_is_info_and_fixable() {
    let r = check_json(&[&fixture("values-valid-policy-quoted-string.yaml")]);
    expect_rules(&r, &[(KP, 1), ("policy-quoted", 1)]);
    assert_eq!(r.code, 0);
    let d = r.find("policy-quoted")[0];
    assert_eq!(d["severity"], "info");
    assert_eq!(d["fixable"], true);
    assert_eq!(
        (
            d["line"].as_u64(),
            d["column"].as_u64(),
            d["end_column"].as_u64()
        ),
        (Some(9), Some(11), Some(14))
    );
}

#[test]
fn finance_cluster_warns_on_finance_tag_only_in_a_finance_region() {
    let r = check_json(&[&fixture("values-valid-finance-cluster.yaml")]);
    expect_rules(&r, &[(KP, 1)]);
    assert_eq!(r.find(KP)[0]["path"], "/cgpu/tag");
    let r = check_json(&[
        "--region",
        "cn-shanghai-finance-1",
        &fixture("values-valid-finance-cluster.yaml"),
    ]);
    expect_rules(&r, &[(KP, 2)]);
    assert_eq!(r.code, 0);
    assert!(
        r.find(KP)
            .iter()
            .any(|d| d["path"] == "/cgpu/financeCloudImageTag")
    );
}

#[test]
fn merge_keys_and_the_boundary_tag_are_valid() {
    let r = check_json(&[&fixture("values-valid-merge-keys-and-boundary-tag.yaml")]);
    // v1.0.6 with a leading-zero SHA is 1.0.6: not tag-too-old, not tag-invalid; `<<` is no label key.
    expect_rules(&r, &[(KP, 1)]);
    assert_eq!(r.code, 0);
}

#[test]
fn policy_out_of_range_is_an_error_without_a_fix() {
    let r = check_json(&[&fixture("values-invalid-policy-out-of-range.yaml")]);
    expect_rules(&r, &[(KP, 1), ("policy-out-of-range", 1)]);
    assert_eq!(r.code, 1);
    let d = r.find("policy-out-of-range")[0];
    assert_eq!(d["fixable"], false);
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(7), Some(11))
    );
    assert_eq!(
        (d["end_line"].as_u64(), d["end_column"].as_u64()),
        (Some(7), Some(12))
    );
    assert_eq!(d["document"], 1);
}

#[test]
fn float_policy_is_not_an_integer() {
    let r = check_json(&[&fixture("values-invalid-policy-non-integer.yaml")]);
    expect_rules(&r, &[(KP, 1), ("policy-not-integer", 1)]);
    assert_eq!(r.find("policy-not-integer")[0]["fixable"], false);
}

#[test]
fn policy_name_is_fixable_to_its_number() {
    let r = check_json(&[&fixture("values-invalid-policy-name-string.yaml")]);
    expect_rules(&r, &[(KP, 1), ("policy-not-integer", 1)]);
    // POLICY "preemptive" becomes "1": a change in what runs, so an unsafe fix.
    assert_eq!(r.find("policy-not-integer")[0]["fixable"], false);
    assert_eq!(
        r.find("policy-not-integer")[0]["fix"]["applicability"],
        "unsafe"
    );
}

#[test]
fn yaml11_scalars_are_typed_as_helm_types_them() {
    let r = check_json(&[&fixture("values-warn-yaml11-scalars-nodeselector.yaml")]);
    // `gpu-pool: no` is one finding, label-value-type, carrying the YAML 1.1 reading.
    expect_rules(&r, &[("yaml11-scalar", 3), ("label-value-type", 1)]);
    // policy 03 reads as 3: no policy finding; v1.5.12 is past the deadlock.
    assert_eq!(r.code, 1);
    let lines: Vec<u64> = r
        .find("yaml11-scalar")
        .iter()
        .map(|d| d["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, vec![2, 4, 5]);
    let lvt = r.find("label-value-type")[0];
    assert_eq!(lvt["line"], 8);
    assert!(
        lvt["message"]
            .as_str()
            .unwrap()
            .contains("YAML 1.2 reader sees the string \"no\"")
    );
    assert_eq!(lvt["fixable"], true);
}

#[test]
fn both_tags_too_old() {
    let r = check_json(&[&fixture("values-invalid-tag-too-old.yaml")]);
    // One finding per token: the deadlock of 1.0.5 rides in the too-old error on `tag`.
    expect_rules(&r, &[("tag-too-old", 2)]);
    let tag = r.find("tag-too-old")[0];
    assert_eq!(tag["path"], "/cgpu/tag");
    assert!(
        tag["message"]
            .as_str()
            .unwrap()
            .contains("also tag-known-deadlock")
    );
}

#[test]
fn kernel_panic_version_itself_is_affected() {
    let r = check_json(&[&fixture("values-warn-tag-kernel-panic-1.5.7.yaml")]);
    expect_rules(&r, &[(KP, 1)]);
    assert_eq!(r.code, 0);
    let r = check_json(&[
        "--deny-warnings",
        &fixture("values-warn-tag-kernel-panic-1.5.7.yaml"),
    ]);
    assert_eq!(r.code, 1);
}

#[test]
fn image_with_registry_and_tag() {
    let r = check_json(&[&fixture("values-invalid-image-with-registry-and-tag.yaml")]);
    expect_rules(&r, &[("image-reference", 1), ("tag-invalid", 1)]);
    // The rendered image changes: an unsafe fix.
    assert_eq!(r.find("image-reference")[0]["fixable"], false);
    assert_eq!(
        r.find("image-reference")[0]["fix"]["applicability"],
        "unsafe"
    );
}

#[test]
fn bad_node_selector_keys_and_values() {
    let r = check_json(&[&fixture("values-invalid-nodeselector-bad-keys.yaml")]);
    expect_rules(
        &r,
        &[
            ("label-key", 5),
            ("label-value", 2),
            ("label-value-type", 2),
            (KP, 1),
        ],
    );
    let key_lines: Vec<u64> = r
        .find("label-key")
        .iter()
        .map(|d| d["line"].as_u64().unwrap())
        .collect();
    assert_eq!(key_lines, vec![10, 11, 12, 13, 15]);
}

#[test]
fn node_selector_list_is_fixable() {
    let r = check_json(&[&fixture("values-invalid-nodeselector-not-a-map.yaml")]);
    expect_rules(&r, &[("node-selector-type", 1), (KP, 1)]);
    assert_eq!(r.find("node-selector-type")[0]["fixable"], true);
}

#[test]
fn pull_policy_case_is_fixable() {
    let r = check_json(&[&fixture("values-invalid-image-pull-policy-case.yaml")]);
    expect_rules(&r, &[("pull-policy", 1), (KP, 1)]);
    assert_eq!(r.find("pull-policy")[0]["fixable"], true);
}

#[test]
fn string_booleans_are_errors_and_other_checks_still_run() {
    let r = check_json(&[&fixture(
        "values-invalid-enabled-and-checkregions-strings.yaml",
    )]);
    expect_rules(&r, &[("string-boolean", 2), (KP, 1)]);
    // `enabled: "false"` → false removes the DaemonSets (unsafe); `checkRegions: "true"` → true
    // renders the same (safe).
    let by_path = |p: &str| {
        r.find("string-boolean")
            .into_iter()
            .find(|d| d["path"] == p)
            .unwrap()
    };
    assert_eq!(by_path("/cgpu/enabled")["fix"]["applicability"], "unsafe");
    assert_eq!(by_path("/cgpu/enabled")["fixable"], false);
    assert_eq!(
        by_path("/cgpu/checkRegions")["fix"]["applicability"],
        "safe"
    );
    assert_eq!(by_path("/cgpu/checkRegions")["fixable"], true);
}

#[test]
fn missing_cgpu_block_is_info_unless_required() {
    let r = check_json(&[&fixture("values-missing-cgpu-block.yaml")]);
    expect_rules(&r, &[("cgpu-missing", 1)]);
    assert_eq!(r.find("cgpu-missing")[0]["severity"], "info");
    assert_eq!(r.code, 0);
    let r = check_json(&["--require-cgpu", &fixture("values-missing-cgpu-block.yaml")]);
    assert_eq!(r.find("cgpu-missing")[0]["severity"], "error");
    assert_eq!(r.code, 1);
}

#[test]
fn unknown_keys_suggest_the_closest() {
    let r = check_json(&[&fixture("values-warn-unknown-keys-typo.yaml")]);
    expect_rules(&r, &[("unknown-key", 3), (KP, 1)]);
    assert_eq!(r.code, 0);
    let msgs: Vec<&str> = r
        .find("unknown-key")
        .iter()
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert!(msgs[0].contains("`policy`"), "{msgs:?}");
    assert!(msgs[1].contains("`nodeSelector`"), "{msgs:?}");
    assert!(msgs[2].contains("`checkRegions`"), "{msgs:?}");
}

#[test]
fn duplicate_key_names_both_lines_and_the_winner() {
    let r = check_json(&[&fixture("values-invalid-duplicate-keys.yaml")]);
    expect_rules(&r, &[("duplicate-key", 1), (KP, 1)]);
    let d = r.find("duplicate-key")[0];
    let msg = d["message"].as_str().unwrap();
    assert!(msg.contains("lines 9 and 12"), "{msg}");
    assert!(msg.contains("keeps the last"), "{msg}");
    assert_eq!(d["line"], 12);
    assert_eq!(r.code, 1);
}

#[test]
fn multi_document_findings_name_their_document() {
    let r = check_json(&[&fixture("values-multi-doc-two-clusters.yaml")]);
    // Without --helm a multi-document values file is checked as both Helm versions
    // read it, and a warning says they differ (Helm 3 installs document 1, Helm 4 merges both).
    expect_rules(
        &r,
        &[
            ("helm-versions-differ", 1),
            ("policy-out-of-range", 1),
            ("pull-policy", 1),
        ],
    );
    assert!(r.diagnostics().iter().all(|d| d["document"] == 2));
    assert_eq!(r.find("pull-policy")[0]["fixable"], true);
}

#[test]
fn policy_change_target_hints_at_weights() {
    let r = check_json(&[&fixture("values-policy-change-target.yaml")]);
    expect_rules(&r, &[(KP, 1), ("policy-weight-hint", 1)]);
    assert_eq!(r.code, 0);
}

#[test]
fn json_summary_counts() {
    let r = check_json(&[&fixture("values-invalid-nodeselector-bad-keys.yaml")]);
    assert_eq!(r.json["version"], 1);
    let s = &r.json["summary"];
    assert_eq!(
        (
            s["files"].as_u64(),
            s["errors"].as_u64(),
            s["warnings"].as_u64(),
            s["infos"].as_u64(),
            s["fixable"].as_u64()
        ),
        (Some(1), Some(9), Some(1), Some(0), Some(2))
    );
}

#[test]
fn stdin_is_reported_as_dash() {
    let out = bin()
        .args(["check", "--format", "json", "-"])
        .write_stdin("cgpu:\n  policy: 7\n")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["diagnostics"][0]["file"], "-");
    assert_eq!(v["diagnostics"][0]["rule"], "policy-out-of-range");
    assert_eq!(out.status.code(), Some(1));
}
