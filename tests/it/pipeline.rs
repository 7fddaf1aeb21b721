//! One pipeline and one cGPU model: every command gives the same answer. Each test is
//! named for the disagreement it pins down; each failed before `lint::check_path` was the only
//! path to findings.

use crate::common::*;

use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

fn run_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> std::process::Output {
    let mut c = bin();
    c.current_dir(dir).args(args);
    if let Some(i) = stdin {
        c.write_stdin(i.to_vec());
    }
    c.output().expect("run")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// An installer DaemonSet with an unquoted POLICY (an error) and a suppression for it.
const SUPPRESSED_DS: &str = "\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: cgpu-installer
  namespace: kube-system
spec:
  template:
    spec:
      nodeSelector:
        ack.node.gpu.schedule: cgpu
      priorityClassName: system-node-critical
      containers:
      - name: cgpu-installer
        image: registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun
        env:
        - name: POLICY
          # cgpu-lint: ignore[installer-policy-unquoted]
          value: 1
";

#[test]
fn post_render_applies_inline_suppressions_like_check() {
    let dir = tempfile::tempdir().unwrap();
    let stream = format!("---\n# Source: ack-ai-installer/templates/cgpu.yaml\n{SUPPRESSED_DS}");
    let f = write(dir.path(), "ds.yaml", SUPPRESSED_DS);
    let check = run_in(dir.path(), &["check", "--format", "json", &f], None);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stdout));
    let out = run_in(dir.path(), &["post-render"], Some(stream.as_bytes()));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(out.stdout, stream.as_bytes());
    assert!(!text(&out.stderr).contains("installer-policy-unquoted"));
}

#[test]
fn post_render_applies_the_config_file_like_check() {
    let dir = tempfile::tempdir().unwrap();
    let ds = SUPPRESSED_DS.replace(
        "          # cgpu-lint: ignore[installer-policy-unquoted]\n",
        "",
    );
    write(
        dir.path(),
        ".cgpu-lint.toml",
        "ignore = [\"installer-policy-unquoted\"]\n",
    );
    let f = write(dir.path(), "ds.yaml", &ds);
    let check = run_in(dir.path(), &["check", "--format", "json", &f], None);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stdout));
    let out = run_in(dir.path(), &["post-render"], Some(ds.as_bytes()));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // --no-config: the error is back and the render is refused.
    let out = run_in(
        dir.path(),
        &["post-render", "--no-config"],
        Some(ds.as_bytes()),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
}

/// A suppression whose rule the command line also ignores: suppressions come first, so the
/// comment is used (no `unused-ignore`) in check, check --stack and fix alike.
#[test]
fn check_stack_and_fix_apply_suppressions_then_filters_in_one_order() {
    let dir = tempfile::tempdir().unwrap();
    let values = "cgpu:\n  # cgpu-lint: ignore[policy-quoted]\n  policy: \"2\"\n  tag: v1.5.10-2b9e7d4-aliyun\n";
    let f = write(dir.path(), "values.yaml", values);
    let args = ["--ignore", "policy-quoted,policy-weight-hint"];
    let plain = check_json(&[&f, args[0], args[1]]);
    let stack = check_json(&["--stack", &f, args[0], args[1]]);
    assert_eq!(
        plain.rules(),
        stack.rules(),
        "{:#}\n{:#}",
        plain.json,
        stack.json
    );
    assert!(plain.find("unused-ignore").is_empty(), "{:#}", plain.json);
    let fix = run_in(
        dir.path(),
        &["fix", "--diff", "--format", "json", &f, args[0], args[1]],
        None,
    );
    let report: serde_json::Value = serde_json::from_slice(&fix.stderr).unwrap_or_else(|e| {
        panic!("{e}: {}", text(&fix.stderr));
    });
    let fixed: Vec<&str> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap())
        .collect();
    let mut want: Vec<String> = plain.rules().into_keys().collect();
    want.sort();
    let mut got: Vec<String> = fixed.iter().map(|s| s.to_string()).collect();
    got.sort();
    got.dedup();
    assert_eq!(got, want);
}

#[test]
fn a_daemonset_without_policy_gets_one_message_in_check_and_checklist() {
    let f = fixture("daemonset-cgpu-installer-minimal.yaml");
    let ds = std::fs::read_to_string(&f).unwrap();
    let ds = ds.replace(
        "        env:\n        - name: POLICY\n          value: \"2\"\n",
        "",
    );
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "ds.yaml", &ds);
    let check = check_json(&[&f]);
    let from_check = check.find("installer-policy-missing")[0]["message"].clone();
    let out = run_in(
        dir.path(),
        &[
            "checklist",
            "--current",
            &f,
            "--policy",
            "2",
            "--format",
            "json",
        ],
        None,
    );
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let from_checklist = list["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["rule"] == "installer-policy-missing")
        .map(|d| d["message"].clone())
        .unwrap_or_else(|| panic!("{list:#}"));
    assert_eq!(from_check, from_checklist);
    // Nobody documents the installer's default, so neither may claim one.
    let m = from_check.as_str().unwrap();
    assert!(m.contains("no public source documents"), "{m}");
    assert!(!m.contains("built-in default applies"), "{m}");
}

#[test]
fn check_nodes_runs_the_node_rules() {
    let r = check_json(&[
        "--nodes",
        &fixture("nodes-list-mixed-gpu-sharing.yaml"),
        &fixture("daemonset-cgpu-installer-live-kubectl-get.yaml"),
    ]);
    assert_eq!(r.find("legacy-cgpu-label").len(), 1, "{:#}", r.json);
    assert_eq!(r.find("virtual-node-cgpu").len(), 1, "{:#}", r.json);
}

#[test]
fn an_installer_too_old_for_policies_is_not_told_to_add_policy() {
    let r = check_json(&[&fixture(
        "daemonset-invalid-old-version-public-registry-no-policy.yaml",
    )]);
    let old = r.find("tag-too-old");
    assert_eq!(old.len(), 1, "{:#}", r.json);
    let missing = r.find("installer-policy-missing");
    assert_eq!(missing.len(), 1);
    let m = missing[0]["message"].as_str().unwrap();
    assert!(m.contains("upgrade the image first"), "{m}");
}

#[test]
fn legacy_nodes_of_a_legacy_installer_are_not_told_to_relabel() {
    // The old ack-cgpu installer selects cgpu: "true": those nodes are where it runs.
    let r = check_json(&[
        "--region",
        "cn-beijing",
        "--nodes",
        &fixture("nodes-list-mixed-gpu-sharing.yaml"),
        &fixture("daemonset-invalid-old-version-public-registry-no-policy.yaml"),
    ]);
    assert!(r.find("legacy-cgpu-label").is_empty(), "{:#}", r.json);
    // With ACK Pro's installer the same node is reported.
    let r = check_json(&[
        "--nodes",
        &fixture("nodes-list-mixed-gpu-sharing.yaml"),
        &fixture("daemonset-cgpu-installer-live-kubectl-get.yaml"),
    ]);
    assert_eq!(r.find("legacy-cgpu-label").len(), 1);
}

#[test]
fn the_failure_domain_beta_region_label_gives_region_mismatch() {
    let nodes = std::fs::read_to_string(fixture("nodes-list-mixed-gpu-sharing.yaml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (name, label) in [
        ("topology.yaml", "topology.kubernetes.io/region"),
        ("beta.yaml", "failure-domain.beta.kubernetes.io/region"),
    ] {
        let n = write(
            dir.path(),
            name,
            &nodes.replace("topology.kubernetes.io/region", label),
        );
        // The minimal DaemonSet pulls from cn-shenzhen; the nodes are in cn-hangzhou.
        let r = check_json(&[
            "--nodes",
            &n,
            &fixture("daemonset-cgpu-installer-minimal.yaml"),
        ]);
        assert_eq!(r.find("region-mismatch").len(), 1, "{label}: {:#}", r.json);
    }
}

#[test]
fn post_render_policy_on_a_stream_without_an_installer_fails() {
    let stream = b"---\n# Source: other/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n";
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(dir.path(), &["post-render", "--policy", "3"], Some(stream));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).contains("--policy 3 has nothing to set"));
    let out = run_in(
        dir.path(),
        &["post-render", "--require-installer"],
        Some(stream),
    );
    assert_eq!(out.status.code(), Some(2));
    // Without either, a stream without installers passes through.
    let out = run_in(dir.path(), &["post-render"], Some(stream));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, stream.to_vec());
}

#[test]
fn post_render_format_json_is_the_check_report() {
    let input = std::fs::read(fixture("daemonset-invalid-policy-unquoted-int.yaml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let out = run_in(
        dir.path(),
        &[
            "post-render",
            "--format",
            "json",
            "--report",
            &report.to_string_lossy(),
        ],
        Some(&input),
    );
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["version"], 1);
    let out = bin()
        .args(["check", "--format", "json", "-"])
        .write_stdin(input)
        .output()
        .unwrap();
    let check: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["diagnostics"], check["diagnostics"]);
}

#[test]
fn the_snippet_header_column_counts_characters_like_the_location() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "v.yaml",
        "cgpu:\n  nodeSelector: {\"名前\": x, \"gpu\": yes}\n  tag: v1.5.10-2b9e7d4-aliyun\n",
    );
    let out = run_in(dir.path(), &["check", "--color", "never", &f], None);
    let t = text(&out.stdout);
    // Each `…/v.yaml:2:32: warning[yaml11-scalar] …` has the miette header `[…/v.yaml:2:32]`;
    // the one after the non-ASCII key is the case that differed.
    let locs: Vec<&str> = t
        .lines()
        .filter(|l| l.starts_with(&f))
        .map(|l| l.split(": ").next().unwrap())
        .collect();
    assert!(locs.len() >= 2, "{t}");
    for loc in locs {
        assert!(t.contains(&format!("[{loc}]")), "{loc}: {t}");
    }
}

#[test]
fn cgpu_missing_says_what_the_file_is() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(
        dir.path(),
        "job.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: train\nspec: {}\n",
    );
    let chart = write(
        dir.path(),
        "Chart.yaml",
        "apiVersion: v2\nname: ack-ai-installer\nversion: 1.12.6\n",
    );
    let stream = write(
        dir.path(),
        "rendered.yaml",
        "---\n# Source: x/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n# Source: x/templates/b.yaml\napiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: nvidia-device-plugin\n",
    );
    for (f, want) in [
        (&job, "Kubernetes objects (Job `train`)"),
        (&chart, "Chart.yaml"),
        (&stream, "a rendered stream of 2 documents"),
    ] {
        let r = check_json(&[f]);
        let d = r.find("cgpu-missing");
        assert_eq!(d.len(), 1, "{:#}", r.json);
        let m = d[0]["message"].as_str().unwrap();
        assert!(m.contains(want), "{f}: {m}");
        assert!(
            !d[0]["help"]
                .as_str()
                .unwrap()
                .contains("add a `cgpu:` block")
        );
    }
    // A node list is checked with the node rules, not skipped.
    let r = check_json(&[&fixture("nodes-list-mixed-gpu-sharing.yaml")]);
    assert!(r.find("cgpu-missing").is_empty(), "{:#}", r.json);
    assert_eq!(r.find("virtual-node-cgpu").len(), 1);
}

#[test]
fn a_digest_only_installer_image_is_a_warning() {
    let ds = std::fs::read_to_string(fixture("daemonset-cgpu-installer-minimal.yaml")).unwrap();
    let ds = ds.replace(
        ":v1.5.10-2b9e7d4-aliyun",
        "@sha256:4f53e2564790c8e7856ec08e384732aa38dc43c52f02952483e3f003afbf23db",
    );
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "ds.yaml", &ds);
    let r = check_json(&[&f]);
    let d = r.find("installer-image-tag");
    assert_eq!(d.len(), 1, "{:#}", r.json);
    assert_eq!(d[0]["severity"], "warning");
}

/// HAMi's and ACK's device plugin DaemonSets in a file of their own (each one its own
/// source under `check --cluster`) are inputs of `hami-device-plugin-conflict`, not a file with
/// "nothing for cgpu-lint to check": no `cgpu-missing` for it, and their nodeSelectors judge the
/// nodes.
#[test]
fn a_file_of_device_plugin_daemonsets_is_read_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = write(
        dir.path(),
        "device-plugins.yaml",
        "\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: ack-nvidia-device-plugin
  namespace: kube-system
spec:
  template:
    spec:
      nodeSelector:
        ack.node.gpu.schedule: default
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: hami-device-plugin
  namespace: kube-system
spec:
  template:
    spec:
      nodeSelector:
        hami.io/vgpu-node: \"true\"
",
    );
    let nodes = write(
        dir.path(),
        "nodes.yaml",
        "\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: cn-hangzhou.10.0.2.31
    labels:
      ack.node.gpu.schedule: default
      gpu: \"on\"
- apiVersion: v1
  kind: Node
  metadata:
    name: cn-hangzhou.10.0.2.32
    labels:
      ack.node.gpu.schedule: default
      hami.io/vgpu-node: \"true\"
",
    );
    let installer = fixture("daemonset-cgpu-installer-live-kubectl-get.yaml");
    let r = check_json(&["--nodes", &nodes, &installer, &plugins]);
    assert!(r.find("cgpu-missing").is_empty(), "{:#}", r.json);
    let found = r.find("hami-device-plugin-conflict");
    assert_eq!(found.len(), 1, "{:#}", r.json);
    let m = found[0]["message"].as_str().unwrap();
    assert!(
        m.starts_with("node `cn-hangzhou.10.0.2.32`")
            && m.contains("DaemonSet hami-device-plugin selects hami.io/vgpu-node=true"),
        "{m}"
    );
    // On its own too: read, with nothing to say without nodes.
    let r = check_json(&[&plugins]);
    assert!(r.diagnostics().is_empty(), "{:#}", r.json);
}
