//! One pipeline, one answer: every fixture goes through `check`, through `post-render` (inside a
//! rendered stream, as Helm hands it over) and, for DaemonSets and nodes, through `checklist`;
//! the same document must get the same findings (rule, message, position) from each.

use crate::common::*;

use std::collections::BTreeSet;

/// A finding as every command can report it: rule, message, line (within the input), column.
type Finding = (String, String, i64, i64);

fn findings(
    diags: &serde_json::Value,
    line_offset: i64,
    rules: Option<&[&str]>,
) -> BTreeSet<Finding> {
    diags
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| rules.is_none_or(|r| r.contains(&d["rule"].as_str().unwrap())))
        .map(|d| {
            (
                d["rule"].as_str().unwrap().to_string(),
                shift_lines(d["message"].as_str().unwrap(), line_offset),
                d["line"].as_i64().unwrap() - line_offset,
                d["column"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// A message that names another line (`(line 30)`) names it in the stream: shift it back.
fn shift_lines(message: &str, offset: i64) -> String {
    let Some(at) = message.find("(line ") else {
        return message.to_string();
    };
    let rest = &message[at + 6..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let n: i64 = digits.parse().unwrap();
    format!(
        "{}(line {}{}",
        &message[..at],
        n - offset,
        &rest[digits.len()..]
    )
}

fn yaml_fixtures() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "json"))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

fn mentions_installer(text: &str) -> bool {
    text.contains("cgpu-installer") || text.contains("cgpu-core-installer")
}

#[test]
fn check_and_post_render_agree_on_every_installer_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let mut compared = 0;
    for f in yaml_fixtures() {
        let text = std::fs::read_to_string(&f).unwrap();
        let check = check_json(&[&f]);
        let has_installer = check.diagnostics().iter().any(|d| {
            d["path"].as_str().unwrap_or("").contains("/spec/")
                || d["rule"].as_str().unwrap().starts_with("installer-")
        });
        if !mentions_installer(&text) || !has_installer {
            continue;
        }
        // Inside a rendered stream: Helm 3's `---` + `# Source:` header in front (two lines).
        let (stream, offset) = if text.starts_with("---") {
            (text.clone(), 0)
        } else {
            (
                format!("---\n# Source: ack-ai-installer/templates/cgpu-installer.yaml\n{text}"),
                2,
            )
        };
        let report = dir.path().join("report.json");
        let out = bin()
            .args([
                "post-render",
                "--fail-on",
                "never",
                "--format",
                "json",
                "--report",
            ])
            .arg(&report)
            .write_stdin(stream.into_bytes())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{f}");
        let pr: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        // post-render reads the installer documents only: compare the findings on them.
        let from_check: BTreeSet<Finding> = findings(&check.json["diagnostics"], 0, None)
            .into_iter()
            .filter(|d| d.0 != "cgpu-missing")
            .collect();
        let from_pr = findings(&pr["diagnostics"], offset, None);
        assert_eq!(from_check, from_pr, "{f}: check vs post-render");
        compared += 1;
    }
    assert!(compared >= 5, "only {compared} installer fixtures compared");
}

#[test]
fn check_nodes_and_checklist_agree_on_the_node_findings() {
    let node_rules: &[&str] = &[
        "virtual-node-cgpu",
        "legacy-cgpu-label",
        "driver-incompatible",
        "node-os-unsupported",
        "node-cgroup-v2",
        "node-family-unsupported",
        "node-known-issue",
        "hami-device-plugin-conflict",
        "node-kubelet-cgroup-v2",
        "node-containerd-2",
        "node-driver-outdated",
        "node-family-needs",
        "installer-selects-exclusive-node",
        "node-pool-driver-drift",
    ];
    let current = fixture("daemonset-cgpu-installer-live-kubectl-get.yaml");
    let mut compared = 0;
    for nodes in yaml_fixtures()
        .into_iter()
        .filter(|f| f.contains("/nodes-"))
    {
        let out = bin()
            .args([
                "checklist",
                "--current",
                &current,
                "--policy",
                "2",
                "--format",
                "json",
                "--nodes",
                &nodes,
            ])
            .output()
            .unwrap();
        if out.status.code() == Some(2) {
            // A node list the checklist refuses to print commands for (a hostile name).
            continue;
        }
        let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let check = check_json(&["--nodes", &nodes, &current]);
        assert_eq!(
            findings(&check.json["diagnostics"], 0, Some(node_rules)),
            findings(&list["diagnostics"], 0, Some(node_rules)),
            "{nodes}: check --nodes vs checklist"
        );
        compared += 1;
    }
    assert!(compared >= 2, "only {compared} node lists compared");
}
