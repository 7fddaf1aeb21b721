//! Every DaemonSet and rendered-stream fixture through `cgpu-lint check`, with the rule set the
//! fixtures README gives (KP = tag-known-deadlock), plus the List and JSON forms of
//! `kubectl get`, --region, --nodes and --same-cluster.

use crate::common::*;

const KP: &str = "tag-known-deadlock";

#[test]
fn live_kubectl_get_is_policy_1_with_rollout_and_drift_infos() {
    let r = check_json(&[&fixture("daemonset-cgpu-installer-live-kubectl-get.yaml")]);
    expect_rules(
        &r,
        &[(KP, 1), ("rollout-incomplete", 1), ("policy-drift", 1)],
    );
    assert_eq!(r.code, 0);
    let drift = r.find("policy-drift")[0];
    assert_eq!(drift["severity"], "info");
    assert_eq!(drift["path"], "/metadata/managedFields/1/manager");
    assert!(drift["message"].as_str().unwrap().contains("kubectl-edit"));
    let ro = r.find("rollout-incomplete")[0];
    assert!(ro["message"].as_str().unwrap().contains("2 of 3"));
    assert_eq!(
        r.find(KP)[0]["path"],
        "/spec/template/spec/containers/0/image"
    );
}

#[test]
fn live_kubectl_get_json_output_reports_the_same_rules() {
    let r = check_json(&[&fixture("daemonset-cgpu-installer-live-kubectl-get.json")]);
    expect_rules(
        &r,
        &[(KP, 1), ("rollout-incomplete", 1), ("policy-drift", 1)],
    );
    assert_eq!(r.code, 0);
}

#[test]
fn minimal_manifest_only_lacks_the_priority_class() {
    let r = check_json(&[&fixture("daemonset-cgpu-installer-minimal.yaml")]);
    expect_rules(&r, &[("priority-class", 1)]);
    assert_eq!(r.code, 0);
    assert_eq!(
        r.find("priority-class")[0]["path"],
        "/spec/template/spec/priorityClassName"
    );
}

#[test]
fn unquoted_policy_int_is_an_error_fixable_to_a_quoted_string() {
    let r = check_json(&[&fixture("daemonset-invalid-policy-unquoted-int.yaml")]);
    expect_rules(
        &r,
        &[
            ("installer-policy-unquoted", 1),
            (KP, 1),
            ("priority-class", 1),
        ],
    );
    assert_eq!(r.code, 1);
    let d = r.find("installer-policy-unquoted")[0];
    assert_eq!(d["fixable"], true);
    assert_eq!(d["path"], "/spec/template/spec/containers/0/env/0/value");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(28), Some(18))
    );
    assert!(d["help"].as_str().unwrap().contains("\"3\""));
}

#[test]
fn old_public_registry_without_policy() {
    let f = fixture("daemonset-invalid-old-version-public-registry-no-policy.yaml");
    let r = check_json(&[&f]);
    // The legacy selector `cgpu: "true"` is accepted: no installer-selector.
    expect_rules(
        &r,
        &[
            // The deadlock of 1.0.3 rides in the too-old error on the same tag.
            ("tag-too-old", 1),
            ("registry-public-endpoint", 1),
            ("installer-policy-missing", 1),
            ("priority-class", 1),
        ],
    );
    assert_eq!(r.code, 1);
    let pe = r.find("registry-public-endpoint")[0];
    // The image changes (pods restart): an unsafe fix, applied only with --unsafe-fixes.
    assert_eq!(pe["fixable"], false);
    assert_eq!(pe["fix"]["applicability"], "unsafe");
    assert!(
        pe["help"].as_str().unwrap().contains(
            "registry-vpc.cn-beijing.aliyuncs.com/acs/cgpu-installer:v1.0.3-2a1c3e9-aliyun"
        )
    );

    let r = check_json(&["--region", "cn-hangzhou", &f]);
    assert_eq!(r.rules().get("region-mismatch"), Some(&1));
    let rm = r.find("region-mismatch")[0];
    assert_eq!(rm["severity"], "error");
    // Another region's registry: the image changes, an unsafe fix.
    assert_eq!(rm["fixable"], false);
    assert_eq!(rm["fix"]["applicability"], "unsafe");
    assert!(rm["message"].as_str().unwrap().contains("cn-beijing"));
}

#[test]
fn region_from_nodes_when_no_region_flag() {
    let f = fixture("daemonset-invalid-old-version-public-registry-no-policy.yaml");
    let nodes = fixture("nodes-list-mixed-gpu-sharing.yaml");
    let r = check_json(&["--nodes", &nodes, &f]);
    assert_eq!(r.rules().get("region-mismatch"), Some(&1), "{:#}", r.json);
    assert!(
        r.find("region-mismatch")[0]["message"]
            .as_str()
            .unwrap()
            .contains("cn-hangzhou")
    );
    // --region wins over the nodes.
    let r = check_json(&["--nodes", &nodes, "--region", "cn-beijing", &f]);
    assert_eq!(r.rules().get("region-mismatch"), None);
}

#[test]
fn rendered_helm3_stream_finds_one_cgpu_installer_in_document_7() {
    let r = check_json(&[&fixture("helm-template-rendered-stream.yaml")]);
    assert_eq!(r.code, 0);
    // KP once per installer (the core installer runs the same image); nothing else: the
    // comment-only document and the other objects are skipped, and both installers use 3.
    expect_rules(&r, &[(KP, 2)]);
    let docs: Vec<u64> = r
        .find(KP)
        .iter()
        .map(|d| d["document"].as_u64().unwrap())
        .collect();
    assert_eq!(docs, vec![7, 8]);
    assert!(r.find("cluster-policy-mismatch").is_empty());
}

#[test]
fn helm4_stream_with_core_mismatch_reports_cluster_policy_mismatch() {
    let r = check_json(&[&fixture("helm-template-rendered-core-mismatch-helm4.yaml")]);
    expect_rules(&r, &[("cluster-policy-mismatch", 1)]);
    assert_eq!(r.code, 1);
    let d = r.find("cluster-policy-mismatch")[0];
    assert_eq!(d["document"], 3);
    let m = d["message"].as_str().unwrap();
    assert!(m.contains("policy 5") && m.contains("uses 0"), "{m}");
}

#[test]
fn list_of_both_installers_points_into_items() {
    let r = check_json(&[&fixture("daemonset-list-kubectl-get-both-installers.yaml")]);
    expect_rules(
        &r,
        &[(KP, 1), ("rollout-incomplete", 1), ("policy-drift", 1)],
    );
    assert_eq!(r.code, 0);
    assert!(
        r.find("policy-drift")[0]["path"]
            .as_str()
            .unwrap()
            .starts_with("/items/0/")
    );
    // With the nodes' region the core installer (ap-southeast-1) is in the wrong region.
    let r = check_json(&[
        "--nodes",
        &fixture("nodes-list-mixed-gpu-sharing.yaml"),
        &fixture("daemonset-list-kubectl-get-both-installers.yaml"),
    ]);
    let rm = r.find("region-mismatch");
    assert_eq!(rm.len(), 1);
    assert_eq!(
        rm[0]["path"],
        "/items/1/spec/template/spec/containers/0/image"
    );
}

#[test]
fn same_cluster_compares_installers_across_files() {
    let a = fixture("daemonset-cgpu-installer-minimal.yaml"); // policy 2
    let b = fixture("daemonset-cgpu-installer-live-kubectl-get.yaml"); // policy 1
    let r = check_json(&[&a, &b]);
    assert!(r.find("cluster-policy-mismatch").is_empty());
    let r = check_json(&["--same-cluster", &a, &b]);
    assert_eq!(r.find("cluster-policy-mismatch").len(), 1, "{:#}", r.json);
    assert_eq!(r.code, 1);
}

#[test]
fn values_and_manifests_are_detected_by_content_in_one_run() {
    let r = check_json(&[
        &fixture("values-valid-full-default.yaml"),
        &fixture("daemonset-cgpu-installer-minimal.yaml"),
    ]);
    let files: std::collections::BTreeSet<String> = r
        .diagnostics()
        .iter()
        .map(|d| {
            d["file"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(files.contains("values-valid-full-default.yaml"));
    assert!(files.contains("daemonset-cgpu-installer-minimal.yaml"));
    assert!(r.find("cgpu-missing").is_empty());
}

#[test]
fn values_multi_doc_policies_are_not_a_cluster_mismatch() {
    let r = check_json(&[&fixture("values-multi-doc-two-clusters.yaml")]);
    assert!(r.find("cluster-policy-mismatch").is_empty());
}

/// A minimal installer manifest with the given image, env lines and selector.
fn manifest(name: &str, image: &str, env: &str, selector: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: {name}\n  namespace: kube-system\nspec:\n  template:\n    spec:\n      priorityClassName: system-node-critical\n      nodeSelector:\n        {selector}\n      containers:\n      - name: {name}\n        image: {image}\n        env:\n{env}"
    )
}

fn check_text(text: &str, extra: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("ds.yaml");
    std::fs::write(&p, text).unwrap();
    let mut args: Vec<&str> = extra.to_vec();
    let ps = p.to_string_lossy().into_owned();
    args.push(&ps);
    check_json(&args)
}

const GOOD_IMAGE: &str =
    "registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun";
const POLICY_1: &str = "        - name: POLICY\n          value: \"1\"\n";
const SEL: &str = "ack.node.gpu.schedule: cgpu";

#[test]
fn a_clean_installer_has_no_findings() {
    let r = check_text(&manifest("cgpu-installer", GOOD_IMAGE, POLICY_1, SEL), &[]);
    expect_rules(&r, &[]);
}

#[test]
fn region_host_forms() {
    let cases = [
        (
            "registry-vpc.cn_hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun",
            "region-invalid",
        ),
        (
            "registry-vpc.xx-newregion-9.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun",
            "region-unknown",
        ),
        (
            "my-mirror.example.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun",
            "registry-host",
        ),
        (
            "registry-cn-hangzhou.ack.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun",
            "registry-public-endpoint",
        ),
        (
            "registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer",
            "installer-image-tag",
        ),
        (
            "registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:latest",
            "installer-image-tag",
        ),
    ];
    for (image, rule) in cases {
        let r = check_text(&manifest("cgpu-installer", image, POLICY_1, SEL), &[]);
        expect_rules(&r, &[(rule, 1)]);
    }
    // The ACK EE -vpc form and a finance region are fine.
    let r = check_text(
        &manifest(
            "cgpu-installer",
            "registry-cn-shanghai-finance-1-vpc.ack.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun",
            POLICY_1,
            SEL,
        ),
        &["--region", "cn-shanghai-finance-1"],
    );
    expect_rules(&r, &[]);
}

#[test]
fn policy_env_variants() {
    let dup = "        - name: POLICY\n          value: \"1\"\n        - name: POLICY\n          value: \"2\"\n";
    let r = check_text(&manifest("cgpu-installer", GOOD_IMAGE, dup, SEL), &[]);
    expect_rules(&r, &[("installer-policy-duplicate", 1)]);
    let vf = "        - name: POLICY\n          valueFrom:\n            configMapKeyRef: {name: cgpu, key: policy}\n";
    let r = check_text(&manifest("cgpu-installer", GOOD_IMAGE, vf, SEL), &[]);
    expect_rules(&r, &[("installer-policy-valuefrom", 1)]);
    // A trimmed POLICY is another string for the API server: unsafe, not fixed by default.
    for (value, fixable) in [
        ("\" 1\"", false),
        ("\"01\"", false),
        ("\"6\"", false),
        ("'x'", false),
    ] {
        let env = format!("        - name: POLICY\n          value: {value}\n");
        let r = check_text(&manifest("cgpu-installer", GOOD_IMAGE, &env, SEL), &[]);
        expect_rules(&r, &[("installer-policy-invalid", 1)]);
        assert_eq!(
            r.find("installer-policy-invalid")[0]["fixable"],
            fixable,
            "{value}"
        );
        let unsafe_fix = r.find("installer-policy-invalid")[0]["fix"]["applicability"] == "unsafe";
        assert_eq!(unsafe_fix, value.len() == 4 || value == "\"01\"", "{value}");
    }
    let env = "        - name: POLICY\n          value: 7\n";
    let r = check_text(&manifest("cgpu-installer", GOOD_IMAGE, env, SEL), &[]);
    // One finding for the one token: not a policy, and not a string either.
    expect_rules(&r, &[("installer-policy-invalid", 1)]);
    let m = r.find("installer-policy-invalid")[0]["message"]
        .as_str()
        .unwrap();
    assert!(m.contains("not even a string"), "{m}");
}

#[test]
fn workload_env_and_selectors() {
    let env = format!(
        "{POLICY_1}        - name: ALIYUN_COM_GPU_MEM_DEV\n          value: \"15\"\n        - name: CGPU_DISABLE\n          value: \"false\"\n"
    );
    let r = check_text(&manifest("cgpu-installer", GOOD_IMAGE, &env, SEL), &[]);
    expect_rules(&r, &[("workload-env-on-installer", 2)]);
    let r = check_text(
        &manifest("cgpu-installer", GOOD_IMAGE, POLICY_1, "gpu: \"yes\""),
        &[],
    );
    expect_rules(&r, &[("installer-selector", 1)]);
    // core_mem is right for the core installer, and not a schedule-label finding there.
    let r = check_text(
        &manifest(
            "cgpu-core-installer",
            GOOD_IMAGE,
            POLICY_1,
            "ack.node.gpu.schedule: core_mem",
        ),
        &[],
    );
    expect_rules(&r, &[]);
    let r = check_text(
        &manifest(
            "cgpu-installer",
            GOOD_IMAGE,
            POLICY_1,
            "ack.node.gpu.schedule: core_mem",
        ),
        &[],
    );
    expect_rules(&r, &[("schedule-label", 1), ("installer-selector", 1)]);
}

#[test]
fn yaml11_words_in_daemonset_fields_are_flagged_and_fixable() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("ds.yaml");
    std::fs::write(
        &p,
        r#"apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: cgpu-installer
  namespace: kube-system
spec:
  template:
    spec:
      hostPID: yes
      priorityClassName: system-node-critical
      nodeSelector:
        ack.node.gpu.schedule: cgpu
      containers:
      - name: cgpu-installer
        image: registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun
        securityContext:
          privileged: On
        env:
        - name: POLICY
          value: "1"
"#,
    )
    .unwrap();
    let r = check_json(&[p.to_str().unwrap()]);
    expect_rules(&r, &[("yaml11-scalar", 2)]);
    let lines: Vec<u64> = r
        .find("yaml11-scalar")
        .iter()
        .map(|d| d["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, vec![9, 17]);
    assert!(r.find("yaml11-scalar").iter().all(|d| d["fixable"] == true));
}

/// The tag-* rules apply to the installer image: with a known region that is not a finance
/// region, a finance-cloud (-fin) build is out of place.
#[test]
fn image_tag_flavour_follows_the_region() {
    let minimal = fixture("daemonset-cgpu-installer-minimal.yaml");
    let r = check_json(&["--region", "cn-shenzhen", &minimal]);
    assert!(r.find("tag-flavour").is_empty());
    let dir = tempfile::tempdir().unwrap();
    let fin = dir.path().join("ds.yaml");
    let text = std::fs::read_to_string(&minimal)
        .unwrap()
        .replace("v1.5.10-2b9e7d4-aliyun", "v1.5.10-fin");
    std::fs::write(&fin, text).unwrap();
    let r = check_json(&["--region", "cn-shenzhen", fin.to_str().unwrap()]);
    let d = r.find("tag-flavour");
    assert_eq!(d.len(), 1, "{:#}", r.json);
    assert!(d[0]["path"].as_str().unwrap().ends_with("/image"));
    let r = check_json(&["--region", "cn-shenzhen-finance-1", fin.to_str().unwrap()]);
    assert!(r.find("tag-flavour").is_empty());
    // Without a region nothing can be said about the flavour.
    let r = check_json(&[fin.to_str().unwrap()]);
    assert!(r.find("tag-flavour").is_empty());
}

/// An installer outside kube-system is reported; a manifest without a namespace (a rendered
/// stream relies on `helm -n`) is not.
#[test]
fn installer_outside_kube_system_is_reported() {
    let minimal =
        std::fs::read_to_string(fixture("daemonset-cgpu-installer-minimal.yaml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("default.yaml");
    std::fs::write(
        &other,
        minimal.replace("namespace: kube-system", "namespace: default"),
    )
    .unwrap();
    let r = check_json(&[other.to_str().unwrap()]);
    let d = r.find("installer-namespace");
    assert_eq!(d.len(), 1, "{:#}", r.json);
    assert_eq!(
        (d[0]["line"].as_u64(), d[0]["path"].as_str()),
        (Some(5), Some("/metadata/namespace"))
    );
    let none = dir.path().join("none.yaml");
    std::fs::write(&none, minimal.replace("  namespace: kube-system\n", "")).unwrap();
    let r = check_json(&[none.to_str().unwrap()]);
    assert!(r.find("installer-namespace").is_empty());
}
