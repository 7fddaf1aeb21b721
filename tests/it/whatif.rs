//! The upgrade what-if, `cgpu-lint compat --nodes FILE [INPUTS] --kubernetes/--tag/--driver/
//! --os-image`, over tests/fixtures/nodes-upgrade-2026.yaml (one node per fact, see its
//! comment). The oracle for "after" is `check` itself on a copy of the inputs that this test
//! edits by hand (the fields a real upgrade changes): the what-if must find exactly the node
//! findings `check` finds there, and call new errors breaks, vanished findings fixed.

use crate::common::*;

use std::collections::BTreeSet;

use serde_json::{Value, json};

const NODES: &str = "nodes-upgrade-2026.yaml";

/// The node rules of the catalogue (`rules --format json`, group nodes).
fn node_rules() -> BTreeSet<String> {
    let out = bin().args(["rules", "--format", "json"]).output().unwrap();
    let rules: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    rules
        .iter()
        .filter(|r| r["group"].as_str().is_some_and(|g| g.starts_with("nodes")))
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect()
}

/// `compat --nodes NODES INPUTS ARGS --format json`: exit status and the one cluster's answer.
fn what_if(inputs: &[&str], args: &[&str]) -> (i32, Value) {
    let mut cmd = bin();
    cmd.arg("compat").arg("--nodes").arg(fixture(NODES));
    for i in inputs {
        cmd.arg(fixture(i));
    }
    let out = cmd.args(args).args(["--format", "json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(v["version"], 1);
    (out.status.code().unwrap(), v["clusters"][0].clone())
}

/// (node's last octet, rule, severity) of one list (`breaks`, `new`, `fixed`, `unchanged`) of
/// every node.
fn listed(answer: &Value, list: &str) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for n in answer["nodes"].as_array().unwrap() {
        let node = n["name"].as_str().unwrap().rsplit('.').next().unwrap();
        for i in n[list].as_array().unwrap() {
            out.insert((
                node.to_string(),
                i["rule"].as_str().unwrap().to_string(),
                i["severity"].as_str().unwrap().to_string(),
            ));
        }
    }
    out
}

/// (node's last octet, rule, severity) of `check INPUTS --nodes NODES`'s node findings, each
/// rule alone (one `--select` per rule, so that none merges into another on the same token).
fn checked(inputs: &[String], nodes: &str) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for rule in node_rules() {
        let mut args: Vec<&str> = inputs.iter().map(String::as_str).collect();
        args.extend(["--nodes", nodes, "--select", &rule]);
        let run = check_json(&args);
        for d in run.diagnostics() {
            let msg = d["message"].as_str().unwrap();
            let node = msg.split('`').nth(1).unwrap().rsplit('.').next().unwrap();
            out.insert((
                node.to_string(),
                rule.clone(),
                d["severity"].as_str().unwrap().to_string(),
            ));
        }
    }
    out
}

/// The fixture with `edit` applied to its text, written to `dir`.
fn edited(dir: &std::path::Path, name: &str, edit: impl Fn(String) -> String) -> String {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    let changed = edit(text.clone());
    assert_ne!(changed, text, "the edit changes {name}");
    let p = dir.join(name);
    std::fs::write(&p, changed).unwrap();
    p.to_string_lossy().into_owned()
}

/// before ∪ after, as the what-if says them, equal `check` before and after.
fn assert_matches_check(
    answer: &Value,
    before: &BTreeSet<(String, String, String)>,
    after: &BTreeSet<(String, String, String)>,
) {
    let unchanged = listed(answer, "unchanged");
    let breaks = listed(answer, "breaks");
    let new = listed(answer, "new");
    let fixed = listed(answer, "fixed");
    let said_after: BTreeSet<_> = unchanged
        .union(&breaks)
        .cloned()
        .collect::<BTreeSet<_>>()
        .union(&new)
        .cloned()
        .collect();
    let said_before: BTreeSet<_> = unchanged.union(&fixed).cloned().collect();
    assert_eq!(&said_after, after, "after");
    assert_eq!(&said_before, before, "before");
    assert!(breaks.iter().all(|b| b.2 == "error"), "{breaks:?}");
    assert!(new.iter().all(|b| b.2 != "error"), "{new:?}");
}

#[test]
fn kubernetes_1_35_breaks_the_nodes_of_cgpu_1_5_8_below_it() {
    // ACK 1.35's kubelet refuses cgroup v1; cGPU supports cgroup v2 from 1.5.9. .21, .22 and
    // .28 run 1.35 or later already (and keep their kubelet); .23-.27 run 1.34.
    let (code, answer) = what_if(&["values-compat-1.5.8.yaml"], &["--kubernetes", "1.35"]);
    assert_eq!(code, 1);
    let breaks = listed(&answer, "breaks");
    let want: BTreeSet<_> = ["23", "24", "25", "26", "27"]
        .iter()
        .map(|n| {
            (
                n.to_string(),
                "node-kubelet-cgroup-v2".to_string(),
                "error".to_string(),
            )
        })
        .collect();
    assert_eq!(breaks, want);
    // Each break names the data entry and its dated source.
    let first = &answer["nodes"][2]["breaks"][0];
    let facts: Vec<&str> = first["facts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["entry"].as_str())
        .collect();
    assert_eq!(facts, ["kubelet-1.35-cgroup-v2", "support-cgroup-v2"]);
    assert_eq!(
        first["facts"][0]["url"],
        "https://www.alibabacloud.com/help/doc-detail/3021327.html"
    );
    assert_eq!(first["facts"][0]["read"], "2026-12-04");
    assert!(
        answer["advice"].as_array().unwrap().iter().any(|a| a
            .as_str()
            .unwrap()
            .starts_with("upgrade cGPU to ≥ 1.5.9 before Kubernetes 1.35")),
        "{:#}",
        answer["advice"]
    );
    assert_eq!(answer["cgpu_now"], "1.5.8");
    assert_eq!(answer["summary"]["breaks"], 5);
    // The oracle: check on the nodes as the upgrade leaves them.
    let dir = tempfile::tempdir().unwrap();
    let values = fixture("values-compat-1.5.8.yaml");
    let upgraded = edited(dir.path(), NODES, |t| {
        t.replace("kubeletVersion: v1.34.3-aliyun.1", "kubeletVersion: v1.35")
    });
    let before = checked(std::slice::from_ref(&values), &fixture(NODES));
    let after = checked(&[values], &upgraded);
    assert_matches_check(&answer, &before, &after);
}

#[test]
fn cgpu_first_then_kubernetes_is_the_order_the_what_if_advises() {
    // Both changes together break nothing; Kubernetes alone would: the advice says which first.
    let (code, answer) = what_if(
        &["values-compat-1.5.8.yaml"],
        &["--kubernetes", "1.35", "--tag", "v1.5.19-7c2e91a-aliyun"],
    );
    assert_eq!(code, 0, "{answer:#}");
    assert!(listed(&answer, "breaks").is_empty());
    let advice: Vec<&str> = answer["advice"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        advice,
        [
            "--kubernetes 1.35 alone breaks 5 nodes (node-kubelet-cgroup-v2), which --tag v1.5.19-7c2e91a-aliyun fixes: apply --tag v1.5.19-7c2e91a-aliyun before --kubernetes"
        ]
    );
    // 1.5.19 supports ebmgn9t: .25's error is fixed, its driver warning stays.
    let fixed = listed(&answer, "fixed");
    assert!(fixed.contains(&("25".into(), "node-family-needs".into(), "error".into())));
    assert!(listed(&answer, "unchanged").contains(&(
        "25".into(),
        "node-family-needs".into(),
        "warning".into()
    )));
    let dir = tempfile::tempdir().unwrap();
    let upgraded = edited(dir.path(), NODES, |t| {
        t.replace("kubeletVersion: v1.34.3-aliyun.1", "kubeletVersion: v1.35")
    });
    let before = checked(&[fixture("values-compat-1.5.8.yaml")], &fixture(NODES));
    let after = checked(&[fixture("values-compat-1.5.19.yaml")], &upgraded);
    assert_matches_check(&answer, &before, &after);
}

#[test]
fn a_driver_on_acks_incompatible_list_is_new_and_one_cgpu_can_run_fixes() {
    // 470.82.01 is on ACK's list "incompatible with the latest operating systems" (a warning,
    // not a break); cGPU 1.5.19 runs 470 (the FAQ's 1.5.3 row). One driver for the pool: .23's
    // drift is fixed.
    let (code, answer) = what_if(&["values-compat-1.5.19.yaml"], &["--driver", "470.82.01"]);
    assert_eq!(code, 0, "{answer:#}");
    let new = listed(&answer, "new");
    assert!(new.contains(&("21".into(), "node-driver-outdated".into(), "warning".into())));
    assert!(listed(&answer, "fixed").contains(&(
        "23".into(),
        "node-pool-driver-drift".into(),
        "info".into()
    )));
    let dir = tempfile::tempdir().unwrap();
    let drivers = |t: String| {
        let mut t = t;
        for d in ["535.161.07", "535.129.03", "550.144.03", "550.163.01"] {
            t = t.replace(
                &format!("nvidia-driver-version: {d}"),
                "nvidia-driver-version: 470.82.01",
            );
        }
        t
    };
    let after = checked(
        &[fixture("values-compat-1.5.19.yaml")],
        &edited(dir.path(), NODES, drivers),
    );
    let before = checked(&[fixture("values-compat-1.5.19.yaml")], &fixture(NODES));
    assert_matches_check(&answer, &before, &after);

    // cGPU 1.5.2 (the FAQ's 1.0.5-1.5.2 row: 470 up to 470.161.03, 535+ unsupported) cannot
    // run the nodes' drivers now; 470.161.03 fixes that on every GPU-sharing node, and is on
    // ACK's incompatible list (new warnings, no break).
    let (code, answer) = what_if(&["values-compat-1.5.2.yaml"], &["--driver", "470.161.03"]);
    assert_eq!(code, 0, "{answer:#}");
    let fixed = listed(&answer, "fixed");
    for n in ["21", "22", "24", "25", "28"] {
        assert!(
            fixed.contains(&(n.into(), "driver-incompatible".into(), "error".into())),
            "{n}: {fixed:?}"
        );
    }
    assert!(listed(&answer, "new").contains(&(
        "21".into(),
        "node-driver-outdated".into(),
        "warning".into()
    )));
    assert!(listed(&answer, "breaks").is_empty());
}

#[test]
fn an_os_image_cgpu_predates_breaks() {
    // Ubuntu 22.04 is supported from cGPU 1.5.9 (release notes): under 1.5.8, every
    // GPU-sharing node breaks with node-os-unsupported.
    let (code, answer) = what_if(
        &["values-compat-1.5.8.yaml"],
        &["--os-image", "Ubuntu 22.04.5 LTS"],
    );
    assert_eq!(code, 1);
    let rules: BTreeSet<String> = listed(&answer, "breaks").into_iter().map(|b| b.1).collect();
    assert_eq!(rules, BTreeSet::from(["node-os-unsupported".to_string()]));
    assert_eq!(answer["summary"]["breaks"], 8);
    // Under 1.5.19 nothing breaks.
    let (code, answer) = what_if(
        &["values-compat-1.5.19.yaml"],
        &["--os-image", "Ubuntu 22.04.5 LTS"],
    );
    assert_eq!((code, answer["summary"]["breaks"].as_u64()), (0, Some(0)));
}

#[test]
fn the_installers_tag_is_what_the_tag_rewrites() {
    // The legacy installer (cGPU 1.5.19, selecting cgpu=true) runs on .26 and .27 only: the
    // planned 1.5.8 with Kubernetes 1.35 breaks exactly those; the installer keeps selecting
    // the mig and disabled nodes (unchanged).
    let (code, answer) = what_if(
        &["daemonset-cgpu-installer-legacy-selector.yaml"],
        &["--tag", "v1.5.8-0d41c2a-aliyun", "--kubernetes", "1.35"],
    );
    assert_eq!(code, 1);
    assert_eq!(answer["cgpu_now"], "1.5.19");
    let breaks: BTreeSet<(String, String)> = listed(&answer, "breaks")
        .into_iter()
        .map(|b| (b.0, b.1))
        .collect();
    assert_eq!(
        breaks,
        BTreeSet::from([
            ("26".to_string(), "node-kubelet-cgroup-v2".to_string()),
            ("27".to_string(), "node-kubelet-cgroup-v2".to_string()),
        ])
    );
    let unchanged = listed(&answer, "unchanged");
    assert!(unchanged.contains(&(
        "26".into(),
        "installer-selects-exclusive-node".into(),
        "error".into()
    )));
    let dir = tempfile::tempdir().unwrap();
    let installer = edited(
        dir.path(),
        "daemonset-cgpu-installer-legacy-selector.yaml",
        |t| t.replace("v1.5.19-7c2e91a-aliyun", "v1.5.8-0d41c2a-aliyun"),
    );
    let upgraded = edited(dir.path(), NODES, |t| {
        t.replace("kubeletVersion: v1.34.3-aliyun.1", "kubeletVersion: v1.35")
    });
    let before = checked(
        &[fixture("daemonset-cgpu-installer-legacy-selector.yaml")],
        &fixture(NODES),
    );
    let after = checked(&[installer], &upgraded);
    assert_matches_check(&answer, &before, &after);
}

#[test]
fn without_a_current_version_the_answer_says_so() {
    // The nodes run cGPU at a version no input gives: nothing before the change to compare
    // with, so no node can be said to break (a what-if that can judge nothing exits 2).
    let (code, answer) = what_if(&[], &["--tag", "1.5.8", "--kubernetes", "1.35"]);
    assert_eq!(code, 2);
    assert!(answer["cgpu_now"].is_null());
    assert!(
        answer["notes"][0]
            .as_str()
            .unwrap()
            .starts_with("no input says which cGPU version runs now"),
        "{answer:#}"
    );
}

#[test]
fn the_human_answer_names_breaks_facts_and_advice() {
    let out = bin()
        .args([
            "compat",
            "--nodes",
            &fixture(NODES),
            &fixture("values-compat-1.5.8.yaml"),
        ])
        .args(["--kubernetes", "1.35"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "what-if: --kubernetes 1.35 (cGPU 1.5.8 now)\n",
        "node cn-beijing.10.0.2.23: breaks\n  breaks: node-kubelet-cgroup-v2 (error): node `cn-beijing.10.0.2.23` runs kubelet v1.35 ",
        "    fact: kubelet-1.35-cgroup-v2: Alibaba Cloud ACK: Kubernetes 1.35 release notes",
        "node cn-beijing.10.0.2.21: unchanged (2 findings stay)\n",
        "advice: upgrade cGPU to ≥ 1.5.9 before Kubernetes 1.35 ",
        "5 of 8 nodes break, 0 get new warnings, 0 fixed, 3 unchanged\n",
    ] {
        assert!(text.contains(want), "{want}\n---\n{text}");
    }
}

#[test]
fn what_if_flags_need_nodes_or_a_cluster_and_a_change() {
    for args in [
        vec!["compat", "--kubernetes", "1.35"],
        vec!["compat", "--driver", "570.169"],
        vec!["compat", "--nodes", "x.yaml"],
        vec!["compat", "--nodes", "x.yaml", "--driver", "latest"],
        vec!["compat", "--nodes", "x.yaml", "--kubernetes", "next"],
        vec!["compat", "--nodes", "x.yaml", "--tag", "latest"],
    ] {
        let out = bin().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    // A nodes file without nodes.
    let out = bin()
        .args([
            "compat",
            "--nodes",
            &fixture("values-compat-1.5.8.yaml"),
            "--kubernetes",
            "1.35",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no Node object"));
}

#[test]
fn the_checklist_blocks_every_node_the_what_if_says_a_tag_breaks() {
    // The checklist plans the installer as it will be (the target version on the nodes it
    // selects), through the same node rules: a target tag the what-if says breaks a node is a
    // blocking finding there, on that node.
    // The live installer, made to run cGPU 1.5.19 (cgroup v2 and ebmgn9t supported).
    let dir = tempfile::tempdir().unwrap();
    let current = edited(
        dir.path(),
        "daemonset-cgpu-installer-live-kubectl-get.yaml",
        |t| t.replace("v1.5.3-8d3fc1b-aliyun", "v1.5.19-7c2e91a-aliyun"),
    );
    let out = bin()
        .args(["compat", "--nodes", &fixture(NODES), &current])
        .args(["--tag", "v1.5.8-0d41c2a-aliyun", "--format", "json"])
        .output()
        .unwrap();
    let code = out.status.code().unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let answer = answer["clusters"][0].clone();
    let breaks: BTreeSet<(String, String)> = listed(&answer, "breaks")
        .into_iter()
        .map(|b| (b.0, b.1))
        .collect();
    assert_eq!(code, 1);
    assert!(!breaks.is_empty());
    let out = bin()
        .args(["checklist", "--current", &current])
        .args(["--desired", &fixture("values-compat-1.5.8.yaml")])
        .args(["--nodes", &fixture(NODES), "--format", "json"])
        .output()
        .unwrap();
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let blocking: BTreeSet<(String, String)> = j["blocking"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| {
            let msg = b["message"].as_str()?;
            let node = msg.split('`').nth(1)?.rsplit('.').next()?;
            Some((node.to_string(), b["rule"].as_str()?.to_string()))
        })
        .collect();
    for b in &breaks {
        assert!(blocking.contains(b), "{b:?} not blocking: {blocking:?}");
    }
}

#[cfg(feature = "tools")]
mod cluster {
    //! `compat --cluster`: the same what-if over the objects `check --cluster` reads, from the
    //! fake API server through the real kubectl.

    use super::*;
    use crate::common::apiserver::{Fake, Pki, TOKEN, kubectl};

    #[test]
    fn kubernetes_1_35_on_a_live_cluster_of_cgpu_1_5_3() {
        let pki = Pki::new();
        let fake = Fake::start(&pki, json!([{"name": "prod", "nodes": 18}]));
        let home = tempfile::tempdir().unwrap();
        let kubeconfig = home.path().join("config");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: audit\n  user:\n    token: {TOKEN}\ncontexts:\n- name: prod\n  context:\n    cluster: prod\n    user: audit\ncurrent-context: prod\n",
                fake.server("prod"),
                pki.path("ca.pem")
            ),
        )
        .unwrap();
        let k = kubectl();
        let run = |args: &[&str]| {
            bin()
                .env("HOME", home.path())
                .env_remove("KUBECONFIG")
                .env_remove("KUBERNETES_SERVICE_HOST")
                .args(["compat", "--cluster", "--kubeconfig"])
                .arg(&kubeconfig)
                .args(["--kubectl", &k])
                .args(args)
                .args(["--format", "json"])
                .output()
                .unwrap()
        };
        // The oracle: the nodes as the real kubectl reads them. The installers (cGPU 1.5.3)
        // select ack.node.gpu.schedule=cgpu and =core_mem; a virtual node has no cgroups.
        let out = std::process::Command::new(&k)
            .env("HOME", home.path())
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["get", "nodes", "-o", "json"])
            .output()
            .unwrap();
        let nodes: Value = serde_json::from_slice(&out.stdout).unwrap();
        let want: BTreeSet<String> = nodes["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| {
                let l = &n["metadata"]["labels"];
                let schedule = l["ack.node.gpu.schedule"].as_str().unwrap_or("");
                let ecs = n["spec"]["providerID"]
                    .as_str()
                    .is_some_and(|p| p.split_once('.').is_some_and(|(_, i)| i.starts_with("i-")));
                ["cgpu", "core_mem"].contains(&schedule) && ecs
            })
            .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        assert!(!want.is_empty());
        let out = run(&["--kubernetes", "1.35"]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let c = &v["clusters"][0];
        assert_eq!(c["cluster"], "prod");
        assert_eq!(c["cgpu_now"], "1.5.3");
        let broken: BTreeSet<String> = c["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["verdict"] == "breaks")
            .map(|n| {
                for b in n["breaks"].as_array().unwrap() {
                    assert_eq!(b["rule"], "node-kubelet-cgroup-v2", "{b}");
                }
                n["name"].as_str().unwrap().to_string()
            })
            .collect();
        assert_eq!(broken, want);
        // cGPU 1.5.10 first: nothing breaks, and the order is the advice.
        let out = run(&["--kubernetes", "1.35", "--tag", "v1.5.10-3c9d1e7-aliyun"]);
        assert_eq!(out.status.code(), Some(0));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            v["clusters"][0]["advice"][0]
                .as_str()
                .unwrap()
                .ends_with("apply --tag v1.5.10-3c9d1e7-aliyun before --kubernetes"),
            "{v:#}"
        );
        // An older tag than the live installers' 1.5.3 is a downgrade on each node that runs
        // cGPU: exit 1 without --allow-downgrade, never "0 break, all unchanged" and 0.
        let out = run(&["--tag", "v1.5.2-5c0e7a1-aliyun"]);
        assert_eq!(out.status.code(), Some(1));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let c = &v["clusters"][0];
        assert_eq!(c["downgrade"]["from"], "1.5.3");
        let downgraded: BTreeSet<String> = c["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["downgrade"]["to"] == "1.5.2")
            .map(|n| n["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(downgraded, want);
        // Read-only: GET requests only.
        assert!(fake.requests().iter().all(|r| r["method"] == "GET"));
    }
}

/// `compat --nodes FILE INPUT --format json ARGS` with the values written to a temporary file.
fn what_if_with_values(nodes: &str, values: &str, args: &[&str]) -> (i32, Value) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("values.yaml");
    std::fs::write(&p, values).unwrap();
    let out = bin()
        .args(["compat", "--nodes", &fixture(nodes)])
        .arg(&p)
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), v["clusters"][0].clone())
}

#[test]
fn a_tag_older_than_the_running_one_is_a_downgrade_that_says_what_it_loses() {
    // `compat --tag v1.5.3-8d3fc1b-aliyun` lists the kernel-driver deadlock (≤ 1.5.7), no
    // cgroup v2 support (from 1.5.9) and no driver 550 (from 1.5.7): taking nodes from 1.5.10
    // to 1.5.3 gets the first back and loses the others.
    let (code, answer) = what_if_with_values(
        NODES,
        "cgpu:\n  enabled: true\n  tag: v1.5.10-2b9e7d4-aliyun\n",
        &["--tag", "v1.5.3-8d3fc1b-aliyun"],
    );
    assert_eq!(code, 1, "{answer:#}");
    let d = &answer["downgrade"];
    assert_eq!(
        (d["from"].as_str(), d["to"].as_str()),
        (Some("1.5.10"), Some("1.5.3"))
    );
    assert_eq!(d["allowed"], false);
    let entries: BTreeSet<&str> = d["loses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["entry"].as_str().unwrap())
        .collect();
    for want in ["issue-deadlock", "support-cgroup-v2", "support-driver-550"] {
        assert!(entries.contains(want), "{want}: {entries:?}");
    }
    // Every node of the fixture carries a GPU-sharing label: each is downgraded.
    for n in answer["nodes"].as_array().unwrap() {
        assert_eq!(n["downgrade"]["to"], "1.5.3", "{n:#}");
        assert!(["breaks", "downgrade"].contains(&n["verdict"].as_str().unwrap()));
    }
    assert_eq!(answer["summary"]["downgraded"], 8);
}

#[test]
fn a_downgrade_fails_unless_allowed_and_its_breaks_still_count() {
    // 1.5.19 → 1.5.12 breaks nothing on nodes-compat.yaml, yet it is a downgrade.
    let values = std::fs::read_to_string(fixture("values-compat-1.5.19.yaml")).unwrap();
    let (code, answer) = what_if_with_values(
        "nodes-compat.yaml",
        &values,
        &["--tag", "v1.5.12-1a2b3c4-aliyun"],
    );
    assert_eq!(answer["summary"]["breaks"], 0, "{answer:#}");
    assert!(answer["summary"]["downgraded"].as_u64().unwrap() > 0);
    assert_eq!(code, 1);
    let (code, answer) = what_if_with_values(
        "nodes-compat.yaml",
        &values,
        &["--tag", "v1.5.12-1a2b3c4-aliyun", "--allow-downgrade"],
    );
    assert_eq!((code, &answer["downgrade"]["allowed"]), (0, &json!(true)));
    // 1.5.7 → 1.5.3 breaks the gn8is node: allowed or not, that fails.
    let (code, answer) = what_if_with_values(
        "nodes-compat.yaml",
        "cgpu:\n  enabled: true\n  tag: v1.5.7-1a2b3c4-aliyun\n",
        &["--tag", "v1.5.3-8d3fc1b-aliyun", "--allow-downgrade"],
    );
    assert_eq!((code, answer["summary"]["breaks"].as_u64()), (1, Some(1)));
    // The human answer names the downgrade on each node and in the summary.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("values.yaml");
    std::fs::write(&p, "cgpu:\n  enabled: true\n  tag: v1.5.7-1a2b3c4-aliyun\n").unwrap();
    let out = bin()
        .args(["compat", "--nodes", &fixture("nodes-compat.yaml")])
        .arg(&p)
        .args(["--tag", "v1.5.3-8d3fc1b-aliyun"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "node cn-hangzhou.10.0.1.11: downgrade, cGPU 1.5.7 → 1.5.3\n",
        "downgrade: cGPU 1.5.7 → 1.5.3 on 6 nodes, refused without --allow-downgrade\n",
        "1 of 8 nodes break, 6 downgraded, ",
    ] {
        assert!(text.contains(want), "{want}\n---\n{text}");
    }
}

#[test]
fn a_node_that_runs_cgpu_at_an_unknown_version_is_unknown_and_the_answer_exits_2() {
    // No input says which cGPU runs: every node carries a GPU-sharing label, so none can be
    // judged (given 1.5.3, 5 of them break).
    let (code, answer) = what_if(&[], &["--kubernetes", "1.35"]);
    assert_eq!(code, 2, "{answer:#}");
    for n in answer["nodes"].as_array().unwrap() {
        assert_eq!(n["verdict"], "unknown", "{n:#}");
        assert!(
            n["unknown"]
                .as_str()
                .unwrap()
                .starts_with("unknown: give the installer or values")
        );
    }
    assert_eq!(answer["summary"]["unknown"], 8);
    assert_eq!(answer["summary"]["unchanged"], 0);
    let out = bin()
        .args(["compat", "--nodes", &fixture(NODES), "--kubernetes", "1.35"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("unchanged, no findings"), "{text}");
    assert!(text.contains("0 of 8 nodes break, 8 unknown, "), "{text}");
    // A node without a GPU-sharing label does not depend on the version: judged as before.
    let dir = tempfile::tempdir().unwrap();
    let plain = edited(dir.path(), NODES, |t| {
        t.replace(
            "ack.node.gpu.schedule: cgpu",
            "ack.node.gpu.schedule: default",
        )
        .replace("cgpu: \"true\"", "cgpu: \"false\"")
    });
    let out = bin()
        .args([
            "compat",
            "--nodes",
            &plain,
            "--kubernetes",
            "1.35",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["clusters"][0]["summary"]["unknown"], 0, "{v:#}");
    assert_eq!(out.status.code(), Some(0));
}
