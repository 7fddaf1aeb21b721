//! `cgpu-lint checklist`: the fixtures scenario in every format, no change, a tag-only upgrade,
//! nodes as JSON, untolerated taints, refused names, and the generated script run against stub
//! `kubectl`/`aliyun` commands.

mod common;
use common::*;

use std::path::Path;
use std::process::Command as Process;

const LIVE: &str = "daemonset-cgpu-installer-live-kubectl-get.yaml";
const TARGET: &str = "values-policy-change-target.yaml";
const NODES: &str = "nodes-list-mixed-gpu-sharing.yaml";

const N21: &str = "cn-hangzhou.192.168.10.21";
const N22: &str = "cn-hangzhou.192.168.10.22";
const N27: &str = "cn-hangzhou.192.168.10.27";

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn checklist(args: &[&str]) -> Out {
    let out = bin().arg("checklist").args(args).output().expect("run");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn scenario(format: &str) -> Out {
    checklist(&[
        "--current",
        &fixture(LIVE),
        "--desired",
        &fixture(TARGET),
        "--nodes",
        &fixture(NODES),
        "--format",
        format,
    ])
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
fn fixtures_scenario_json_policy_1_to_2_reboots_21_22_27_canary_21() {
    let out = scenario("json");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let j = json_of(&out);
    assert_eq!(j["version"], 1);
    assert_eq!(j["policy_change"], serde_json::json!({"from": 1, "to": 2}));
    assert_eq!(j["tag_change"], serde_json::Value::Null);
    assert_eq!(j["reboot_required"], true);
    // Canary first: .21 is the Ready, schedulable one.
    assert_eq!(names(&j["nodes"]), [N21, N22, N27]);
    let nodes = j["nodes"].as_array().unwrap();
    assert_eq!(nodes[0]["state"], "ready");
    assert_eq!(nodes[1]["state"], "cordoned");
    assert!(nodes[1]["notes"][0].as_str().unwrap().contains("cordoned"));
    assert_eq!(nodes[2]["state"], "not-ready");
    assert!(nodes[2]["notes"][0].as_str().unwrap().contains("NotReady"));
    // Steps in order: cordon, drain, read version, reboot, wait, verify, uncordon.
    let steps: Vec<&str> = nodes[0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    let order = [
        "kubectl cordon cn-hangzhou.192.168.10.21",
        "kubectl drain cn-hangzhou.192.168.10.21 --ignore-daemonsets --delete-emptydir-data",
        "nsenter -t 1 -i -p -n -u -m -- cat /proc/cgpu_km/version",
        "aliyun ecs RebootInstance --RegionId cn-hangzhou --InstanceId i-bp111224074888237672",
        "kubectl wait --for=condition=Ready node/cn-hangzhou.192.168.10.21",
        "/proc/cgpu_km/[0-9]*/policy",
        "kubectl uncordon cn-hangzhou.192.168.10.21",
    ];
    assert_eq!(steps.len(), order.len(), "{steps:#?}");
    for (s, want) in steps.iter().zip(order) {
        assert!(s.contains(want), "step {s:?} should contain {want:?}");
    }
    // Listed apart, excluded, not affected.
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
    assert_eq!(j["other_nodes"].as_array().unwrap().len(), 6);
    // Findings: the virtual node and the legacy label; driver 550 fits cGPU 1.5.3.
    let rules: Vec<&str> = j["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["legacy-cgpu-label", "virtual-node-cgpu"]);
    let d = &j["diagnostics"][1];
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
    let p21 = md.find(&format!("`kubectl cordon {N21}`")).unwrap();
    let p22 = md.find(&format!("`kubectl cordon {N22}`")).unwrap();
    let p27 = md.find(&format!("`kubectl cordon {N27}`")).unwrap();
    assert!(canary < p21 && p21 < rest && rest < p22 && p22 < p27);
    // One task per step: 7 per node, 3 nodes, plus 3 before and the canary check.
    assert_eq!(md.matches("- [ ] ").count(), 7 * 3 + 3 + 1, "{md}");
    assert!(md.contains("already cordoned"));
    assert!(md.contains("NotReady"));
    assert!(md.contains("`virtual-node-cgpu`"));
    assert!(md.contains("`legacy-cgpu-label`"));
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
    assert!(sh.contains(r#"read -r -p "$1 [y/N] " answer"#));
    assert!(sh.contains(&format!(
        "process_node '{N21}' 'i-bp111224074888237672' 'cn-hangzhou' 0"
    )));
    assert!(sh.contains(&format!(
        "process_node '{N22}' 'i-bp197855828341328201' 'cn-hangzhou' 1"
    )));
    let p21 = sh.find(&format!("process_node '{N21}'")).unwrap();
    let p22 = sh.find(&format!("process_node '{N22}'")).unwrap();
    let p27 = sh.find(&format!("process_node '{N27}'")).unwrap();
    assert!(p21 < p22 && p22 < p27);
    // Names appear only single-quoted (or in comments/prompts that are single-quoted).
    for line in sh.lines().filter(|l| l.contains(N21)) {
        assert!(
            line.contains(&format!("'{N21}'")) || line.contains("'Canary cn-hangzhou"),
            "unquoted name in {line:?}"
        );
    }
    assert!(!sh.contains("virtual-kubelet-cn-hangzhou-k"));
}

#[test]
fn no_policy_change_means_no_reboot_and_exit_0() {
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
                assert_eq!(j["reboot_required"], false);
                assert_eq!(j["nodes"], serde_json::json!([]));
            }
            "shell" => {
                assert_bash_syntax(&out.stdout);
                let run = Process::new("bash")
                    .arg("-c")
                    .arg(&out.stdout)
                    .output()
                    .unwrap();
                assert!(run.status.success());
                assert!(String::from_utf8_lossy(&run.stdout).contains("No reboot needed"));
            }
            _ => assert!(out.stdout.contains("No reboot needed"), "{}", out.stdout),
        }
    }
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
    assert_eq!(names(&j["nodes"]), [N21, N22, N27]);
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
    assert_eq!(names(&j["nodes"]), [N21, N22, N27]);
    assert_eq!(names(&j["other_nodes"]), ["cn-hangzhou.192.168.10.30"]);
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
    assert_eq!(names(&j["nodes"]), [N21, N22, N27]);
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
    let diags = j["diagnostics"].as_array().unwrap();
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(diags[0]["rule"], "driver-incompatible");
    assert!(
        diags[0]["message"]
            .as_str()
            .unwrap()
            .contains("cn-beijing.10.0.3.13")
    );
}

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
    assert_eq!(out.code, 0, "{}", out.stderr);
    let j = json_of(&out);
    assert_eq!(j["policy_change"], serde_json::json!({"from": 1, "to": 2}));
    assert!(
        j["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["rule"] == "installer-policy-missing")
    );
    // This old installer selects the legacy cgpu=true label: .26 is the node to restart.
    assert_eq!(names(&j["nodes"]), ["cn-hangzhou.192.168.10.26"]);
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

const KUBECTL_STUB: &str = r#"#!/usr/bin/env bash
# Records its argv (unit-separated) and answers like a cluster where every node is Ready,
# cGPU 1.5.3 is loaded and every GPU already shows policy 2.
{ printf '%s\x1f' kubectl "$@"; printf '\n'; } >> "$STUB_LOG"
args=" $* "
case "$args" in
  *" get ds cgpu-installer "*) printf '2' ;;
  *" get pod "*) printf 'cgpu-installer-7xk2p' ;;
  *" get node "*) printf 'True' ;;
  *" exec "*"/proc/cgpu_km/version"*) printf '1.5.3\n' ;;
  *" exec "*"sh -c"*) printf '/proc/cgpu_km/0/policy:2\n/proc/cgpu_km/1/policy:2\n' ;;
esac
exit 0
"#;

const ALIYUN_STUB: &str = r#"#!/usr/bin/env bash
{ printf '%s\x1f' aliyun "$@"; printf '\n'; } >> "$STUB_LOG"
"#;

fn write_exec(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn generated_script_runs_against_stub_kubectl_and_aliyun_in_order() {
    let out = scenario("shell");
    assert_eq!(out.code, 0);
    let dir = tempfile::tempdir().unwrap();
    let bin_dir = dir.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    write_exec(&bin_dir.join("kubectl"), KUBECTL_STUB);
    write_exec(&bin_dir.join("aliyun"), ALIYUN_STUB);
    let script = dir.path().join("checklist.sh");
    write_exec(&script, &out.stdout);
    let log = dir.path().join("calls.log");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = Process::new("bash")
        .arg(&script)
        .arg("--yes")
        .env("PATH", path)
        .env("STUB_LOG", &log)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "script failed: {}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let calls: Vec<Vec<String>> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| {
            l.trim_end_matches('\x1f')
                .split('\x1f')
                .map(str::to_string)
                .collect()
        })
        .collect();
    // The state-changing calls, in order; node names and instance ids are single argv items.
    let actions: Vec<Vec<&str>> = calls
        .iter()
        .filter(|c| {
            matches!(c[1].as_str(), "cordon" | "drain" | "uncordon")
                || c[0] == "aliyun"
                || (c.iter().any(|a| a == "exec") && c.iter().any(|a| a == "/proc/cgpu_km/version"))
        })
        .map(|c| c.iter().map(String::as_str).collect())
        .collect();
    let exec_version = || -> Vec<&str> {
        vec![
            "kubectl",
            "-n",
            "kube-system",
            "exec",
            "cgpu-installer-7xk2p",
            "--",
            "nsenter",
            "-t",
            "1",
            "-i",
            "-p",
            "-n",
            "-u",
            "-m",
            "--",
            "cat",
            "/proc/cgpu_km/version",
        ]
    };
    let reboot = |id: &'static str| {
        vec![
            "aliyun",
            "ecs",
            "RebootInstance",
            "--RegionId",
            "cn-hangzhou",
            "--InstanceId",
            id,
        ]
    };
    let drain = |n: &'static str| {
        vec![
            "kubectl",
            "drain",
            n,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
        ]
    };
    let want: Vec<Vec<&str>> = vec![
        vec!["kubectl", "cordon", N21],
        drain(N21),
        exec_version(),
        reboot("i-bp111224074888237672"),
        vec!["kubectl", "uncordon", N21],
        vec!["kubectl", "cordon", N22],
        drain(N22),
        exec_version(),
        reboot("i-bp197855828341328201"),
        // .22 was cordoned before the change: left cordoned.
        vec!["kubectl", "cordon", N27],
        drain(N27),
        exec_version(),
        reboot("i-bp160589183187485978"),
        vec!["kubectl", "uncordon", N27],
    ];
    assert_eq!(actions, want, "all calls: {calls:#?}");
    // The pod lookup passes the node in one argv item.
    assert!(
        calls
            .iter()
            .any(|c| c.contains(&format!("spec.nodeName={N21}")))
    );
    // The live POLICY is checked before any node is touched.
    assert!(
        calls[0].contains(&"ds".to_string()) || calls[0].contains(&"cgpu-installer".to_string())
    );
}

#[test]
fn without_yes_a_declined_reboot_leaves_the_node_cordoned_and_fails() {
    let out = scenario("shell");
    let dir = tempfile::tempdir().unwrap();
    let bin_dir = dir.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    write_exec(&bin_dir.join("kubectl"), KUBECTL_STUB);
    write_exec(&bin_dir.join("aliyun"), ALIYUN_STUB);
    let script = dir.path().join("checklist.sh");
    write_exec(&script, &out.stdout);
    let log = dir.path().join("calls.log");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Process::new("bash")
        .arg(&script)
        .env("PATH", path)
        .env("STUB_LOG", &log)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        // Decline the canary's reboot, then decline going on.
        child.stdin.take().unwrap().write_all(b"n\nn\n").unwrap();
    }
    let run = child.wait_with_output().unwrap();
    assert!(!run.status.success());
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(!log.contains("aliyun"), "no reboot without a yes: {log}");
    assert!(!log.contains(&format!("uncordon\x1f{N21}")));
    assert!(!log.contains(N22), "stopped after the canary: {log}");
}

#[test]
fn readme_checklist_is_the_real_output_of_the_fixtures_scenario() {
    let out = bin()
        .current_dir(fixtures())
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
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme.find("````markdown\n").expect("checklist block") + "````markdown\n".len();
    let end = start + readme[start..].find("````").unwrap();
    assert_eq!(
        &readme[start..end],
        String::from_utf8_lossy(&out.stdout),
        "README checklist is stale: paste the output of the fixtures scenario (run in tests/fixtures)"
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
