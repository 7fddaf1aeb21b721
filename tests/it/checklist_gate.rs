//! `checklist`: the desired values read as the upgrade applies them.
//! `helm upgrade -f FILE` without `--reuse-values` renders the chart defaults plus FILE, so a
//! key the file leaves out takes the chart's default (tag `v1.5.3-8d3fc1b-aliyun`, policy 1:
//! the chart's documented values); a key that falls back to a default other than the live
//! value, and a downgrade, block the plan before any step; `enabled: false` is a removal plan.

use crate::common::*;

use std::process::Command as Process;

/// A live DaemonSet running cGPU 1.5.10 with POLICY "1" in cn-hangzhou.
const LIVE_1510: &str = "daemonset-cgpu-installer-v1.5.10-hangzhou.yaml";
const POLICY_ONLY: &str = "values-policy-only.yaml";
const DOWNGRADE: &str = "values-tag-downgrade.yaml";
const DISABLED: &str = "values-disabled.yaml";
const NODES: &str = "nodes-list-mixed-gpu-sharing.yaml";
/// The chart's documented default tag and the live one.
const DEFAULT_TAG: &str = "v1.5.3-8d3fc1b-aliyun";
const LIVE_TAG: &str = "v1.5.10-2b9e7d4-aliyun";

fn run(args: &[&str]) -> Out {
    let out = bin().args(args).output().expect("run");
    Out::from(out)
}

fn plan(desired: &str, format: &str, extra: &[&str]) -> Out {
    let (live, desired, nodes) = (fixture(LIVE_1510), fixture(desired), fixture(NODES));
    let mut args = vec![
        "checklist",
        "--current",
        &live,
        "--desired",
        &desired,
        "--nodes",
        &nodes,
        "--format",
        format,
    ];
    if format == "shell" {
        args.extend(["--context", "ack-prod"]);
    }
    args.extend(extra);
    run(&args)
}

fn json(out: &Out) -> serde_json::Value {
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", out.stdout, out.stderr))
}

fn rules(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap().to_string())
        .collect()
}

fn key<'a>(j: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    j["upgrade"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key"] == name)
        .unwrap_or_else(|| panic!("{name} not in upgrade.keys: {:#}", j["upgrade"]))
}

fn bash_n(script: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("checklist.sh");
    std::fs::write(&path, script).unwrap();
    let st = Process::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(
        st.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&st.stderr)
    );
}

#[test]
fn policy_only_file_on_1_5_10_falls_back_to_the_default_tag_and_is_blocked() {
    let out = plan(POLICY_ONLY, "json", &[]);
    assert_eq!(
        out.code, 1,
        "a blocking finding fails the run: {}",
        out.stdout
    );
    let j = json(&out);
    let blocking = j["blocking"].as_array().unwrap();
    let fallback = blocking
        .iter()
        .find(|d| d["rule"] == "upgrade-default-fallback")
        .unwrap_or_else(|| panic!("no upgrade-default-fallback: {blocking:#?}"));
    let msg = fallback["message"].as_str().unwrap();
    for part in ["cgpu.tag", "1.5.10", "1.5.3", LIVE_TAG, DEFAULT_TAG] {
        assert!(msg.contains(part), "{part} not in: {msg}");
    }
    let help = fallback["help"].as_str().unwrap();
    assert!(help.contains("--reuse-values"), "{help}");
    assert!(help.contains(&format!("tag: {LIVE_TAG}")), "{help}");
    // Only the tag falls back to something else: the file sets the policy, and the chart's
    // default image and pull policy are what runs.
    assert_eq!(
        blocking
            .iter()
            .filter(|d| d["rule"] == "upgrade-default-fallback")
            .count(),
        1,
        "{blocking:#?}"
    );
    // 1.5.10 → 1.5.3 is a downgrade too.
    assert!(rules(&j["blocking"]).contains(&"upgrade-downgrade".to_string()));
    // The key table: live → after, from where.
    let tag = key(&j, "cgpu.tag");
    assert_eq!(tag["live"], LIVE_TAG);
    assert_eq!(tag["after"], DEFAULT_TAG);
    assert_eq!(tag["from"], "chart-default");
    let policy = key(&j, "cgpu.policy");
    assert_eq!(
        (policy["live"].as_str(), policy["after"].as_str()),
        (Some("1"), Some("2"))
    );
    assert_eq!(policy["from"], "desired-file");
    assert_eq!(j["upgrade"]["cgpu_enabled"], true);
    // JSON version 1 keeps its keys.
    assert_eq!(j["version"], 1);
    assert_eq!(j["tag_change"]["to"], DEFAULT_TAG);
}

#[test]
fn the_fallback_blocks_before_any_step_in_markdown_and_shell() {
    let md = plan(POLICY_ONLY, "markdown", &[]);
    assert_eq!(md.code, 1);
    let blocked = md
        .stdout
        .find("## Blocking: fix these before any step")
        .expect("blocking section");
    let first_step = md.stdout.find("- [ ]").expect("steps");
    assert!(blocked < first_step, "{}", md.stdout);
    let section = &md.stdout[blocked..first_step];
    assert!(
        section.contains("upgrade-default-fallback") && section.contains("cgpu.tag"),
        "{section}"
    );
    // The key table names the fallback's source.
    assert!(
        md.stdout.contains(&format!(
            "| `cgpu.tag` | `{LIVE_TAG}` | `{DEFAULT_TAG}` | chart-default |"
        )),
        "{}",
        md.stdout
    );
    let sh = plan(POLICY_ONLY, "shell", &[]);
    assert_eq!(sh.code, 1);
    bash_n(&sh.stdout);
    let blocked = sh
        .stdout
        .lines()
        .find(|l| l.starts_with("#   upgrade-default-fallback "))
        .expect("the blocking finding in the launcher's header");
    assert!(blocked.contains("upgrade-default-fallback"), "{blocked}");
    assert!(sh.stdout.contains(&format!(
        "#   cgpu.tag: {LIVE_TAG} -> {DEFAULT_TAG} (chart-default)"
    )));
}

#[test]
fn reuse_values_keeps_1_5_10_and_plans_the_policy_change() {
    let out = plan(POLICY_ONLY, "json", &["--reuse-values"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let j = json(&out);
    assert_eq!(j["blocking"], serde_json::json!([]));
    assert_eq!(j["tag_change"], serde_json::Value::Null);
    assert_eq!(j["policy_change"], serde_json::json!({"from": 1, "to": 2}));
    let tag = key(&j, "cgpu.tag");
    assert_eq!(
        (tag["live"].as_str(), tag["after"].as_str()),
        (Some(LIVE_TAG), Some(LIVE_TAG))
    );
    assert_eq!(tag["from"], "reused");
    assert!(!j["nodes"].as_array().unwrap().is_empty());
    // 1.5.10 has no deadlock advisory: the default tag's does not leak in.
    assert!(!rules(&j["diagnostics"]).contains(&"tag-known-deadlock".to_string()));
}

#[test]
fn a_deployed_values_file_as_current_is_not_reused_without_the_flag() {
    let (cur, des, nodes) = (
        fixture("values-deployed-v1.5.10.yaml"),
        fixture(POLICY_ONLY),
        fixture(NODES),
    );
    let base = [
        "checklist",
        "--current",
        &cur,
        "--desired",
        &des,
        "--nodes",
        &nodes,
        "--format",
        "json",
    ];
    let out = run(&base);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let j = json(&out);
    assert!(rules(&j["blocking"]).contains(&"upgrade-default-fallback".to_string()));
    assert_eq!(key(&j, "cgpu.tag")["after"], DEFAULT_TAG);
    let mut reuse = base.to_vec();
    reuse.push("--reuse-values");
    let out = run(&reuse);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let j = json(&out);
    assert_eq!(key(&j, "cgpu.tag")["after"], LIVE_TAG);
    assert_eq!(key(&j, "cgpu.tag")["from"], "reused");
    // The file sets no image: with --reuse-values it still comes from the chart defaults.
    assert_eq!(key(&j, "cgpu.image")["from"], "chart-default");
}

#[test]
fn a_lower_desired_tag_is_blocked_unless_allow_downgrade() {
    let out = plan(DOWNGRADE, "json", &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let j = json(&out);
    assert_eq!(rules(&j["blocking"]), ["upgrade-downgrade"]);
    let msg = j["blocking"][0]["message"].as_str().unwrap();
    assert!(msg.contains("1.5.10") && msg.contains("1.5.5"), "{msg}");
    assert!(
        j["blocking"][0]["help"]
            .as_str()
            .unwrap()
            .contains("--allow-downgrade")
    );

    let out = plan(DOWNGRADE, "json", &["--allow-downgrade"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let j = json(&out);
    assert_eq!(j["blocking"], serde_json::json!([]));
    assert_eq!(j["tag_change"]["to"], "v1.5.5-4e1c2a9-aliyun");
    assert!(!j["nodes"].as_array().unwrap().is_empty());
    // 1.5.5 is within the known deadlock (≤ 1.5.7): the advisory, a warning, as `check` says.
    let deadlock: Vec<_> = j["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["rule"] == "tag-known-deadlock")
        .collect();
    assert_eq!(deadlock.len(), 1, "{:#}", j["diagnostics"]);
    assert_eq!(deadlock[0]["severity"], "warning");
    assert!(
        j["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("--allow-downgrade"))
    );
}

/// The target version's findings in `checklist` equal `check`'s on the same values: for a tag
/// from the chart defaults, `check --stack`'s; for a tag in the file, `check`'s.
#[test]
fn check_and_checklist_agree_on_the_target_version_findings() {
    let pick = |v: &serde_json::Value, rule: &str| -> Vec<(String, String, String)> {
        v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["rule"] == rule)
            .map(|d| {
                (
                    d["severity"].as_str().unwrap().to_string(),
                    d["message"].as_str().unwrap().to_string(),
                    d["help"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let file = fixture(POLICY_ONLY);
    let check = run(&["check", "--stack", &file, "--format", "json"]);
    let check = json(&check);
    let from_check = pick(&check, "tag-known-deadlock");
    assert_eq!(from_check.len(), 1, "{check:#}");
    assert_eq!(from_check[0].0, "warning");
    assert!(from_check[0].1.contains("1.5.3"), "{:?}", from_check[0]);
    let list = json(&plan(POLICY_ONLY, "json", &[]));
    assert_eq!(pick(&list, "tag-known-deadlock"), from_check);

    let file = fixture(DOWNGRADE);
    let check = json(&run(&["check", &file, "--format", "json"]));
    let from_check = pick(&check, "tag-known-deadlock");
    assert_eq!(from_check.len(), 1);
    let list = json(&plan(DOWNGRADE, "json", &["--allow-downgrade"]));
    assert_eq!(pick(&list, "tag-known-deadlock"), from_check);
}

#[test]
fn enabled_false_is_a_removal_plan_without_reboots_in_every_format() {
    let out = plan(DISABLED, "json", &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let j = json(&out);
    assert_eq!(j["reboot_required"], false);
    assert_eq!(j["nodes"], serde_json::json!([]));
    assert_eq!(j["preflight"], serde_json::json!([]));
    assert_eq!(j["blocking"], serde_json::json!([]));
    assert_eq!(j["upgrade"]["cgpu_enabled"], false);
    let enabled = key(&j, "cgpu.enabled");
    assert_eq!(
        (enabled["live"].as_str(), enabled["after"].as_str()),
        (Some("true"), Some("false"))
    );
    let removal = j["upgrade"]["removal"].as_array().unwrap();
    let text: String = removal
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    for part in [
        "deletes the cgpu-installer DaemonSet",
        "keeps",
        "until that node reboots",
        "kubectl get ds cgpu-installer -n kube-system",
        "NotFound",
        "/proc/cgpu_km/",
    ] {
        assert!(text.contains(part), "{part} not in: {text}");
    }
    // The loaded modules keep the live policy (1), not a desired one.
    assert!(text.contains("(1)"), "{text}");

    let md = plan(DISABLED, "markdown", &[]);
    assert_eq!(md.code, 0);
    assert!(
        md.stdout.contains("## cGPU is turned off: no reboots"),
        "{}",
        md.stdout
    );
    for never in [
        "kubectl cordon",
        "kubectl drain",
        "RebootInstance",
        "## Canary",
        "## Before you start",
    ] {
        assert!(!md.stdout.contains(never), "{never} in:\n{}", md.stdout);
    }
    assert!(md.stdout.contains("NotFound") && md.stdout.contains("/proc/cgpu_km/"));

    let sh = plan(DISABLED, "shell", &[]);
    assert_eq!(sh.code, 0, "{}", sh.stderr);
    bash_n(&sh.stdout);
    for never in ["kubectl cordon", "kubectl drain", "RebootInstance"] {
        assert!(!sh.stdout.contains(never), "{never}:\n{}", sh.stdout);
    }
    let ran = Process::new("bash")
        .arg("-c")
        .arg(&sh.stdout)
        .output()
        .unwrap();
    assert!(ran.status.success());
    let said = String::from_utf8_lossy(&ran.stdout);
    assert!(
        said.contains("deletes the cgpu-installer DaemonSet"),
        "{said}"
    );
}

/// `enabled: "false"` (quoted) is a non-empty string: the chart's `if` renders the installer,
/// so the plan is not a removal, and string-boolean (an error) fails it.
#[test]
fn quoted_false_is_not_a_removal_and_fails_on_string_boolean() {
    let out = plan(
        "values-invalid-enabled-and-checkregions-strings.yaml",
        "json",
        &["--allow-downgrade"],
    );
    assert_eq!(out.code, 1, "{}", out.stdout);
    let j = json(&out);
    assert_eq!(j["upgrade"]["cgpu_enabled"], true);
    assert_eq!(key(&j, "cgpu.enabled")["after"], "\"false\"");
    assert!(rules(&j["diagnostics"]).contains(&"string-boolean".to_string()));
}

/// The gate's findings are suppressed and filtered as every finding is (an inline
/// `# cgpu-lint: ignore[rule]` on the line or the line above): a team that means the fallback
/// says so in the file, and the plan goes on.
#[test]
fn an_inline_suppression_silences_the_gate_like_any_finding() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("values.yaml");
    std::fs::write(
        &path,
        "cgpu:\n  # cgpu-lint: ignore[upgrade-default-fallback]\n  policy: 2\n",
    )
    .unwrap();
    let (live, nodes) = (fixture(LIVE_1510), fixture(NODES));
    let args = |extra: &[&'static str]| {
        let mut a = vec![
            "checklist".to_string(),
            "--current".into(),
            live.clone(),
            "--desired".into(),
            path.to_str().unwrap().into(),
            "--nodes".into(),
            nodes.clone(),
            "--format".into(),
            "json".into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let out: Out = bin().args(args(&[])).output().unwrap().into();
    let j = json(&out);
    assert!(
        !rules(&j["blocking"]).contains(&"upgrade-default-fallback".to_string()),
        "{:#}",
        j["blocking"]
    );
    // The downgrade the fallback brings (1.5.10 → 1.5.3) still blocks: only the named rule is
    // suppressed.
    assert!(
        rules(&j["blocking"]).contains(&"upgrade-downgrade".to_string()),
        "{:#}",
        j["blocking"]
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
}

/// The removal plan's verify command is pinned to the plan's context in every format, as every
/// kubectl call of the plan is, not only in the script.
#[test]
fn the_removal_verify_command_is_pinned_to_the_context_in_json_too() {
    let out = plan(
        DISABLED,
        "json",
        &["--context", "ack-prod", "--kubeconfig", "/k/config"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let j = json(&out);
    let removal: Vec<&str> = j["upgrade"]["removal"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(
        removal.iter().any(|s| s.contains(
            "kubectl --context 'ack-prod' --kubeconfig '/k/config' get ds cgpu-installer -n kube-system"
        )),
        "{removal:#?}"
    );
}
