//! `cgpu-lint status --cluster` against the stateful fake API server (tests/fake-apiserver,
//! stateful.py) through the real kubectl: installer pods and exec over WebSocket answered from
//! each node's simulated /proc/cgpu_km, as tests/kube/runbook_kubectl.rs drives the runbook. The
//! oracle for each node is the module the fake's world says it runs (the admin channel's
//! `state`), not what status printed.

use std::process::Output;

use crate::common::apiserver::{Fake, Pki, TOKEN, kubectl};
use crate::common::bin;
use serde_json::{Value, json};

const IMAGE: &str =
    "registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-3c9d1e7-aliyun";

/// A node of the stateful world: name, instance, schedule label, its module (version, policy)
/// or none, Ready or not.
fn node(i: usize, schedule: Option<&str>, module: Option<(&str, &str)>, ready: bool) -> Value {
    json!({
        "name": format!("cn-hangzhou.10.0.1.{i}"),
        "instance": format!("i-bp1status{i:010}"),
        "schedule": schedule,
        "gpus": 2,
        "module": module.map(|(v, p)| json!({"version": v, "policy": p})),
        "ready": ready,
        "workloads": [],
    })
}

fn cluster(name: &str, pki: &Pki, nodes: Vec<Value>, forbid: &[&str]) -> Value {
    json!({
        "name": name,
        "cert": pki.path("server.pem"),
        "key": pki.path("server.key"),
        "token": TOKEN,
        "forbid": forbid,
        "runbook": {
            "seed": 7,
            "nodes": nodes,
            "daemonsets": {
                "cgpu-installer": {"policy": "2", "image": IMAGE, "strategy": "OnDelete"},
                "cgpu-core-installer": {"policy": "2", "image": IMAGE, "strategy": "OnDelete"},
            },
        },
    })
}

struct World {
    fake: Fake,
    dir: tempfile::TempDir,
}

impl World {
    fn start(pki: &Pki, clusters: Vec<Value>) -> World {
        let names: Vec<String> = clusters
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect();
        let fake = Fake::start_with(pki, Value::Array(clusters), json!({"admin": true}));
        let dir = tempfile::tempdir().unwrap();
        let mut y = String::from("apiVersion: v1\nkind: Config\nclusters:\n");
        for n in &names {
            y.push_str(&format!(
                "- name: {n}\n  cluster:\n    server: {}\n    certificate-authority: {}\n",
                fake.server(n),
                pki.path("ca.pem")
            ));
        }
        y.push_str(&format!(
            "users:\n- name: audit\n  user:\n    token: {TOKEN}\ncontexts:\n"
        ));
        for n in &names {
            y.push_str(&format!(
                "- name: {n}\n  context:\n    cluster: {n}\n    user: audit\n"
            ));
        }
        y.push_str(&format!("current-context: {}\n", names[0]));
        std::fs::write(dir.path().join("kubeconfig"), y).unwrap();
        World { fake, dir }
    }

    fn status(&self, args: &[&str]) -> Output {
        bin()
            .env("HOME", self.dir.path())
            .env_remove("KUBECONFIG")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .arg("status")
            .arg("--cluster")
            .arg("--kubeconfig")
            .arg(self.dir.path().join("kubeconfig"))
            .args(["--kubectl", &kubectl()])
            .args(args)
            .output()
            .unwrap()
    }

    fn json(&self, args: &[&str]) -> (i32, Value) {
        let mut a = args.to_vec();
        a.extend(["--format", "json"]);
        let out = self.status(&a);
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code().unwrap(), v)
    }

    fn admin(&self, req: Value) -> Value {
        let (body, _) = self.fake.admin_call(&req);
        let body = body.as_str();
        serde_json::from_str(body).unwrap()
    }

    /// The module each node of `cluster` runs, as the world holds it.
    fn modules(&self, cluster: &str) -> Value {
        let state = self.admin(json!({"op": "state", "cluster": cluster}));
        let mut out = serde_json::Map::new();
        for (name, n) in state["nodes"].as_object().unwrap() {
            out.insert(name.clone(), n["module"].clone());
        }
        Value::Object(out)
    }

    /// Every request the fake saw changes nothing: GET (LIST, and the WebSocket exec), or
    /// SPDY's exec POST.
    fn read_only(&self) {
        for r in self.fake.requests() {
            let method = r["method"].as_str().unwrap_or("");
            let path = r["path"].as_str().unwrap_or("");
            assert!(
                method == "GET" || (method == "POST" && path.ends_with("/exec")),
                "{r}"
            );
        }
    }
}

/// (verdict, why) by node name, of the one cluster `c`.
fn verdicts(c: &Value) -> std::collections::BTreeMap<String, (String, String)> {
    c["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let why = match &n["why"] {
                Value::Array(a) => a
                    .iter()
                    .map(|w| w.as_str().unwrap())
                    .collect::<Vec<_>>()
                    .join("; "),
                Value::String(s) => s.clone(),
                _ => String::new(),
            };
            (
                n["name"].as_str().unwrap().to_string(),
                (n["verdict"].as_str().unwrap().to_string(), why),
            )
        })
        .collect()
}

#[test]
fn converged_pending_restart_no_module_and_a_pod_that_is_gone() {
    let pki = Pki::new();
    let nodes = vec![
        node(11, Some("cgpu"), Some(("1.5.10", "2")), true),
        node(12, Some("cgpu"), Some(("1.5.10", "1")), true),
        node(13, Some("core_mem"), Some(("1.5.3", "2")), true),
        node(14, Some("cgpu"), None, true),
        node(15, Some("cgpu"), Some(("1.5.10", "1")), true),
        node(16, Some("cgpu"), Some(("1.5.10", "2")), false),
        node(17, None, None, true),
    ];
    let w = World::start(&pki, vec![cluster("prod", &pki, nodes, &[])]);
    // .15's installer pod is being deleted and never goes.
    w.admin(json!({"op": "fault", "cluster": "prod", "fault": "installer_pod_stuck", "node": "cn-hangzhou.10.0.1.15"}));
    let modules = w.modules("prod");
    // The oracle: what the world's nodes run.
    assert_eq!(
        modules["cn-hangzhou.10.0.1.11"],
        json!({"version": "1.5.10", "policies": ["2", "2"]})
    );
    assert_eq!(
        modules["cn-hangzhou.10.0.1.12"],
        json!({"version": "1.5.10", "policies": ["1", "1"]})
    );
    assert_eq!(modules["cn-hangzhou.10.0.1.14"], Value::Null);
    let (code, v) = w.json(&[]);
    assert_eq!(code, 1, "{v:#}");
    let c = &v["clusters"][0];
    let got = verdicts(c);
    let pair = |n: usize| got[&format!("cn-hangzhou.10.0.1.{n}")].clone();
    assert_eq!(pair(11).0, "converged");
    assert_eq!(
        pair(12),
        (
            "needs-restart".into(),
            "GPU 0 runs policy 1, GPU 1 runs policy 1, cgpu-installer asks POLICY 2".into()
        )
    );
    assert_eq!(
        pair(13),
        (
            "needs-restart".into(),
            "the module is cGPU 1.5.3, cgpu-core-installer deploys 1.5.10".into()
        )
    );
    assert_eq!(pair(14).0, "no-module");
    assert_eq!(pair(15).0, "unreadable");
    assert!(pair(15).1.contains("is being deleted"), "{:?}", pair(15));
    assert_eq!(pair(16).0, "unreadable");
    assert!(
        pair(16).1.contains("container is not running"),
        "{:?}",
        pair(16)
    );
    // A node without a GPU-sharing label is not a GPU-sharing node.
    assert!(!got.contains_key("cn-hangzhou.10.0.1.17"));
    assert_eq!(
        c["summary"]["line"],
        "cluster prod: 1 of 6 GPU-sharing nodes converged; 2 need a restart: cn-hangzhou.10.0.1.12, cn-hangzhou.10.0.1.13; 1 has no module: cn-hangzhou.10.0.1.14; 2 are unreadable: cn-hangzhou.10.0.1.15, cn-hangzhou.10.0.1.16; see what a rollout would do: `cgpu-lint rollout --cluster --context prod --policy 2 --dry-run`"
    );
    // What the module runs, per GPU, from the node.
    let n12 = &c["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "cn-hangzhou.10.0.1.12")
        .unwrap();
    assert_eq!(n12["module"]["gpus"], json!([["0", "1"], ["1", "1"]]));
    assert_eq!(n12["asks"]["policy"], "2");
    assert_eq!(n12["asks"]["version"], "1.5.10");
    // status changed nothing: the world still runs what it ran.
    assert_eq!(w.modules("prod"), modules);
    w.read_only();

    // The table and the report formats carry the same verdicts.
    let out = w.status(&[]);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.starts_with("NODE "), "{table}");
    assert!(
        table.contains("cn-hangzhou.10.0.1.11  cgpu-installer: POLICY 2, cGPU 1.5.10"),
        "{table}"
    );
    assert!(
        table.contains("cGPU 1.5.10: GPU 0 policy 2, GPU 1 policy 2  converged"),
        "{table}"
    );
    assert!(
        table.ends_with("`cgpu-lint rollout --cluster --context prod --policy 2 --dry-run`\n"),
        "{table}"
    );
    let sarif: Value = serde_json::from_slice(&w.status(&["--format", "sarif"]).stdout).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 5, "{sarif:#}");
    assert!(results.iter().all(|r| r["ruleId"] == "node-not-converged"));
    let uris: Vec<&str> = results
        .iter()
        .filter_map(|r| r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].as_str())
        .collect();
    assert!(
        uris.iter()
            .any(|u| u.contains("Node/cn-hangzhou.10.0.1.12")),
        "{uris:?}"
    );
    let pr = w.status(&["--format", "policyreport"]);
    let text = String::from_utf8(pr.stdout).unwrap();
    assert!(
        text.contains("node-not-converged") && text.contains("cn-hangzhou.10.0.1.14"),
        "{text}"
    );
}

#[test]
fn a_forbidden_exec_makes_each_node_unreadable_not_the_run() {
    let pki = Pki::new();
    let prod = vec![node(21, Some("cgpu"), Some(("1.5.10", "2")), true)];
    let staging = vec![
        node(31, Some("cgpu"), Some(("1.5.10", "2")), true),
        node(32, Some("cgpu"), Some(("1.5.10", "1")), true),
    ];
    let w = World::start(
        &pki,
        vec![
            cluster("prod", &pki, prod, &[]),
            cluster("staging", &pki, staging, &["create pods/exec"]),
        ],
    );
    let (code, v) = w.json(&["--all-contexts"]);
    assert_eq!(code, 1, "{v:#}");
    let prod = verdicts(&v["clusters"][0]);
    assert_eq!(prod["cn-hangzhou.10.0.1.21"].0, "converged");
    let staging = verdicts(&v["clusters"][1]);
    for n in ["cn-hangzhou.10.0.1.31", "cn-hangzhou.10.0.1.32"] {
        assert_eq!(
            staging[n],
            ("unreadable".into(), "no pods/exec".into()),
            "{n}"
        );
    }
    assert_eq!(v["clusters"][1]["cluster"], "staging");
    // One context alone: that cluster only.
    let (code, v) = w.json(&["--context", "prod"]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["clusters"].as_array().unwrap().len(), 1);
    assert_eq!(
        v["clusters"][0]["summary"]["line"],
        "cluster prod: 1 of 1 GPU-sharing node converged"
    );
    w.read_only();
}

#[test]
fn many_nodes_are_read_in_parallel_within_the_deadline() {
    let pki = Pki::new();
    let nodes: Vec<Value> = (100..140)
        .map(|i| node(i, Some("cgpu"), Some(("1.5.10", "2")), true))
        .collect();
    let w = World::start(&pki, vec![cluster("prod", &pki, nodes, &[])]);
    let (code, v) = w.json(&["--parallel", "8", "--timeout", "10m"]);
    assert_eq!(code, 0, "{v:#}");
    let got = verdicts(&v["clusters"][0]);
    assert_eq!(got.len(), 40);
    assert!(
        got.values().all(|(verdict, _)| verdict == "converged"),
        "{got:?}"
    );
    // One LIST of installer pods per installer, one exec per node.
    let execs = w
        .fake
        .requests()
        .into_iter()
        .filter(|r| r["path"].as_str().is_some_and(|p| p.ends_with("/exec")))
        .count();
    assert!(execs >= 40, "{execs} exec requests");
    // A deadline that passes before any node is read: every node is unreadable, none is
    // skipped, and the run still ends with its answer.
    let (code, v) = w.json(&["--timeout", "1ms"]);
    assert_eq!(code, 1);
    let got = verdicts(&v["clusters"][0]);
    assert_eq!(got.len(), 40);
    assert!(
        got.values().all(|(verdict, why)| verdict == "unreadable"
            && (why.contains("deadline") || why.contains("could not be listed"))),
        "{got:?}"
    );
}

#[test]
fn an_installer_pod_made_from_the_old_template_is_named_in_the_why() {
    // OnDelete: the DaemonSet asks POLICY 2, its pods were made with POLICY 1 and the module
    // runs 1 (the pod must be deleted as well as the node restarted).
    let pki = Pki::new();
    let mut c = cluster(
        "prod",
        &pki,
        vec![node(41, Some("cgpu"), Some(("1.5.10", "1")), true)],
        &[],
    );
    c["runbook"]["daemonsets"]["cgpu-installer"]["pod_policy"] = json!("1");
    let w = World::start(&pki, vec![c]);
    let (code, v) = w.json(&[]);
    assert_eq!(code, 1);
    let n = &v["clusters"][0]["nodes"][0];
    assert_eq!(n["pod_policy"], "1");
    assert_eq!(n["verdict"], "needs-restart");
    // One type for `why`: a string, whatever the verdict.
    assert_eq!(
        n["why"],
        "GPU 0 runs policy 1, GPU 1 runs policy 1, cgpu-installer asks POLICY 2; its installer pod was made with POLICY 1 (an OnDelete DaemonSet): it must be deleted too"
    );
}

#[test]
fn status_needs_the_cluster() {
    let out = bin().args(["status"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--cluster"));
}
