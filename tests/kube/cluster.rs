//! `check --cluster` and `checklist --cluster` against a fake API server (tests/fake-apiserver,
//! Python 3 standard library) started here on 127.0.0.1, over TLS with a CA made by the openssl
//! CLI, with a bearer token, a client certificate or an exec credential plugin. The fake serves
//! a recorded ACK cluster (both installers, up to 2,000 nodes in pages of 500; on request HAMi's
//! and ACK's device plugin DaemonSets beside them in kube-system; with `--pods`, generated pods
//! listed across namespaces) and logs every request. cgpu-lint drives the real kubectl from scripts/install-test-tools
//! (target/tools/kubectl), and one test drives that kubectl directly, so the fake is known to
//! speak the protocol a real client expects.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use crate::common::apiserver::{Fake, Pki, TOKEN, kubectl};
use crate::common::bin;
use serde_json::{Value, json};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A port nobody listens on.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A kubeconfig context: name, server URL, CA file and how the user authenticates.
struct Ctx<'a> {
    name: &'a str,
    server: String,
    ca: String,
    user: String,
}

/// user: entries
fn token_user(token: &str) -> String {
    format!("    token: {token}\n")
}

fn kubeconfig(dir: &Path, file: &str, contexts: &[Ctx], current: Option<&str>) -> String {
    let mut y = String::from("apiVersion: v1\nkind: Config\nclusters:\n");
    for c in contexts {
        y.push_str(&format!(
            "- name: {n}-cluster\n  cluster:\n    server: {s}\n    certificate-authority: {ca}\n",
            n = c.name,
            s = c.server,
            ca = c.ca
        ));
    }
    y.push_str("users:\n");
    for c in contexts {
        y.push_str(&format!("- name: {}-user\n  user:\n{}", c.name, c.user));
    }
    y.push_str("contexts:\n");
    for c in contexts {
        y.push_str(&format!(
            "- name: {n}\n  context:\n    cluster: {n}-cluster\n    user: {n}-user\n",
            n = c.name
        ));
    }
    if let Some(cur) = current {
        y.push_str(&format!("current-context: {cur}\n"));
    }
    let path = dir.join(file);
    std::fs::write(&path, y).unwrap();
    path.to_string_lossy().into_owned()
}

/// Run cgpu-lint with a private HOME (kubectl's discovery cache) and no ambient kubeconfig.
fn cgpu(home: &Path, args: &[&str]) -> Output {
    bin()
        .env("HOME", home)
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            stdout(o),
            stderr(o)
        )
    })
}

fn rules(report: &Value) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for d in report["diagnostics"].as_array().unwrap() {
        *m.entry(d["rule"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    m
}

/// A single-cluster setup: PKI, fake, kubeconfig with context `prod`.
struct One {
    pki: Pki,
    fake: Fake,
    home: tempfile::TempDir,
    kubeconfig: String,
}

fn one(cluster: Value) -> One {
    let pki = Pki::new();
    let mut cluster = cluster;
    cluster["name"] = json!("prod");
    let fake = Fake::start(&pki, json!([cluster]));
    let home = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig(
        home.path(),
        "config",
        &[Ctx {
            name: "prod",
            server: fake.server("prod"),
            ca: pki.path("ca.pem"),
            user: token_user(TOKEN),
        }],
        Some("prod"),
    );
    One {
        pki,
        fake,
        home,
        kubeconfig,
    }
}

impl One {
    fn run(&self, args: &[&str]) -> Output {
        self.run_in(self.home.path(), args)
    }

    /// [`One::run`] with another HOME (kubectl's discovery cache).
    fn run_in(&self, home: &Path, args: &[&str]) -> Output {
        let k = kubectl();
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--kubeconfig", &self.kubeconfig, "--kubectl", &k]);
        cgpu(home, &all)
    }

    /// Real kubectl against the fake, with the same kubeconfig.
    fn kubectl(&self, args: &[&str]) -> Output {
        Command::new(kubectl())
            .env("HOME", self.home.path())
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .output()
            .unwrap()
    }
}

/// Nodes of the recorded cluster's nine templates that `count` nodes hold at template `i`
/// (the fake cycles through them in order).
fn per_template(count: usize, i: usize) -> usize {
    (i..count).step_by(9).count()
}

#[test]
fn check_reads_both_installers_and_2000_nodes_with_paged_get_requests_only() {
    // csi-plugin: a DaemonSet of kube-system the daemonset list returns and cgpu-lint leaves out.
    let s = one(json!({"nodes": 2000, "daemonsets": ["csi-plugin"]}));
    let o = s.run(&["check", "--cluster", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report = json_of(&o);
    // The recorded cluster (tests/fixtures: daemonset-cgpu-installer-live-kubectl-get.yaml,
    // nodes-list-mixed-gpu-sharing.yaml): cGPU 1.5.3 on both installers (the deadlock advisory,
    // twice), 2 of 3 installer pods ready, POLICY last written by kubectl edit; template 7 is
    // the legacy cgpu=true node, template 9 the virtual node (fixtures README). Templates 1 and 2
    // run driver 550 on cGPU 1.5.3: before the 1.5.12 isolation fix for drivers 535+ (ack-cgpu
    // release notes), one node-known-issue each.
    let want: BTreeMap<String, usize> = [
        ("tag-known-deadlock", 2),
        ("rollout-incomplete", 1),
        ("policy-drift", 1),
        (
            "node-known-issue",
            per_template(2000, 0) + per_template(2000, 1),
        ),
        ("legacy-cgpu-label", per_template(2000, 6)),
        ("virtual-node-cgpu", per_template(2000, 8)),
    ]
    .into_iter()
    .map(|(r, n)| (r.to_string(), n))
    .collect();
    assert_eq!(rules(&report), want);
    assert_eq!(report["summary"]["files"], 2002);
    // A finding names the context, the object and the JSON pointer within it.
    let ds = first_finding(&report, "rollout-incomplete");
    assert_eq!(ds["file"], "prod:DaemonSet/kube-system/cgpu-installer");
    assert_eq!(ds["path"], "/status/numberReady");
    // The object's text is what `kubectl get ds cgpu-installer -o json` prints: the line the
    // finding gives is the line of numberReady in real kubectl's output.
    let printed = s.kubectl(&[
        "get",
        "ds",
        "cgpu-installer",
        "-n",
        "kube-system",
        "-o",
        "json",
        "--show-managed-fields",
    ]);
    assert!(printed.status.success(), "{}", stderr(&printed));
    let line = stdout(&printed)
        .lines()
        .position(|l| l.trim_start().starts_with("\"numberReady\""))
        .unwrap()
        + 1;
    assert_eq!(ds["line"], line);
    let legacy = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["file"] == "prod:Node/cn-hangzhou.192.168.16.7")
        .unwrap();
    assert_eq!(legacy["rule"], "legacy-cgpu-label");
    assert_eq!(legacy["path"], "/metadata/labels/cgpu");

    let reqs = s.fake.requests();
    assert!(!reqs.is_empty());
    let not_get: Vec<&Value> = reqs.iter().filter(|r| r["method"] != "GET").collect();
    assert!(not_get.is_empty(), "only GET requests: {not_get:?}");
    let node_lists: Vec<&Value> = reqs
        .iter()
        .filter(|r| r["path"] == "/api/v1/nodes")
        .collect();
    assert_eq!(
        node_lists.len(),
        4,
        "2,000 nodes in pages of 500: {node_lists:?}"
    );
    assert!(node_lists.iter().all(|r| r["query"]["limit"] == "500"));
    assert_eq!(
        node_lists
            .iter()
            .filter(|r| r["query"].get("continue").is_some())
            .count(),
        3
    );
    assert!(reqs.iter().all(|r| r["authenticated"] == true));
    for name in ["cgpu-installer", "cgpu-core-installer"] {
        let path = format!("/apis/apps/v1/namespaces/kube-system/daemonsets/{name}");
        assert!(reqs.iter().any(|r| r["path"] == path), "{path}");
    }
    // The DaemonSets of kube-system, listed once in pages of 500 (for HAMi's and ACK's device
    // plugins), and nothing else besides discovery.
    let ds_lists: Vec<&Value> = reqs
        .iter()
        .filter(|r| r["path"] == "/apis/apps/v1/namespaces/kube-system/daemonsets")
        .collect();
    assert_eq!(ds_lists.len(), 1, "{ds_lists:?}");
    assert_eq!(ds_lists[0]["query"]["limit"], "500");
    let other: Vec<&Value> = reqs
        .iter()
        .filter(|r| {
            let p = r["path"].as_str().unwrap();
            !(p == "/api/v1/nodes"
                || p.starts_with("/apis/apps/v1/namespaces/kube-system/daemonsets")
                || ["/api", "/apis", "/api/v1", "/apis/apps/v1"].contains(&p))
        })
        .collect();
    assert!(other.is_empty(), "{other:?}");
}

#[test]
fn real_kubectl_reads_the_fake_server() {
    let s = one(json!({"nodes": 1200, "daemonsets": ["hami-device-plugin", "csi-plugin"]}));
    let o = s.kubectl(&["get", "nodes", "-o", "name", "--chunk-size=500"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let names: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(names.len(), 1200);
    assert_eq!(names[0], "node/cn-hangzhou.192.168.16.1");
    let o = s.kubectl(&[
        "get",
        "daemonsets",
        "-n",
        "kube-system",
        "-o",
        "jsonpath={.items[*].metadata.name}",
        "--chunk-size=3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "cgpu-installer cgpu-core-installer hami-device-plugin csi-plugin"
    );
    let o = s.kubectl(&["get", "ds", "nope", "-n", "kube-system"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("Error from server (NotFound): daemonsets.apps \"nope\" not found"),
        "{}",
        stderr(&o)
    );
    let pages = s
        .fake
        .requests()
        .iter()
        .filter(|r| r["path"] == "/api/v1/nodes" && r["query"].get("continue").is_some())
        .count();
    assert_eq!(pages, 2);
    // The DaemonSet list is paged the same way: four in pages of three.
    let ds_pages: Vec<Value> = s
        .fake
        .requests_to("/apis/apps/v1/namespaces/kube-system/daemonsets");
    assert_eq!(ds_pages.len(), 2, "{ds_pages:?}");
    assert!(ds_pages.iter().all(|r| r["query"]["limit"] == "3"));
    assert!(ds_pages[1]["query"].get("continue").is_some());
}

#[test]
fn every_output_format_names_the_context_and_the_object() {
    let s = one(json!({"nodes": 9}));
    let obj = "prod:DaemonSet/kube-system/cgpu-installer";
    for (format, want) in [
        ("human", format!("{obj}:")),
        ("json", format!("\"file\": \"{obj}\"")),
        // Workflow commands escape `:` in properties.
        (
            "github",
            "file=prod%3ADaemonSet/kube-system/cgpu-installer,".to_string(),
        ),
        (
            "sarif",
            "prod%3ADaemonSet/kube-system/cgpu-installer".to_string(),
        ),
        ("junit", obj.to_string()),
    ] {
        let o = s.run(&[
            "check",
            "--cluster",
            "--context",
            "prod",
            "--format",
            format,
            "--color",
            "never",
        ]);
        assert_eq!(o.status.code(), Some(0), "{format}: {}", stderr(&o));
        assert!(
            stdout(&o).contains(&want),
            "{format}: {want} in\n{}",
            stdout(&o)
        );
        // The JSON pointer, where the format has a place for it.
        if format != "github" {
            assert!(
                stdout(&o).contains("/status/numberReady"),
                "{format}: the pointer"
            );
        }
    }
}

fn assert_error(o: &Output, want: &str) {
    assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(o));
    let err = stderr(o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert_eq!(lines[0], want);
}

#[test]
fn context_not_found() {
    let s = one(json!({"nodes": 9}));
    let o = s.run(&["check", "--cluster", "--context", "staging"]);
    assert_error(
        &o,
        "cgpu-lint: error: context `staging` not found in the kubeconfig (it has: prod)",
    );
    assert!(s.fake.requests().is_empty());
}

#[test]
fn unreachable_server() {
    let pki = Pki::new();
    let home = tempfile::tempdir().unwrap();
    let server = format!("https://127.0.0.1:{}", closed_port());
    let kc = kubeconfig(
        home.path(),
        "config",
        &[Ctx {
            name: "gone",
            server: server.clone(),
            ca: pki.path("ca.pem"),
            user: token_user(TOKEN),
        }],
        Some("gone"),
    );
    let k = kubectl();
    let o = cgpu(
        home.path(),
        &["check", "--cluster", "--kubeconfig", &kc, "--kubectl", &k],
    );
    let host = server.trim_start_matches("https://");
    assert_error(
        &o,
        &format!(
            "cgpu-lint: error: cluster gone: API server {server} unreachable: The connection to the server {host} was refused - did you specify the right host or port?"
        ),
    );
}

#[test]
fn tls_failure() {
    let s = one(json!({"nodes": 9}));
    let kc = kubeconfig(
        s.home.path(),
        "other-ca",
        &[Ctx {
            name: "prod",
            server: s.fake.server("prod"),
            ca: s.pki.path("other-ca.pem"),
            user: token_user(TOKEN),
        }],
        Some("prod"),
    );
    let k = kubectl();
    let o = cgpu(
        s.home.path(),
        &["check", "--cluster", "--kubeconfig", &kc, "--kubectl", &k],
    );
    assert_error(
        &o,
        &format!(
            "cgpu-lint: error: cluster prod: TLS failure with {}: tls: failed to verify certificate: x509: certificate signed by unknown authority (check the cluster's certificate-authority in the kubeconfig)",
            s.fake.server("prod")
        ),
    );
}

#[test]
fn unauthorized() {
    let s = one(json!({"nodes": 9}));
    let kc = kubeconfig(
        s.home.path(),
        "expired",
        &[Ctx {
            name: "prod",
            server: s.fake.server("prod"),
            ca: s.pki.path("ca.pem"),
            user: token_user("an-expired-token"),
        }],
        Some("prod"),
    );
    let k = kubectl();
    let o = cgpu(
        s.home.path(),
        &[
            "checklist",
            "--cluster",
            "--policy",
            "2",
            "--kubeconfig",
            &kc,
            "--kubectl",
            &k,
        ],
    );
    assert_error(
        &o,
        &format!(
            "cgpu-lint: error: cluster prod: 401 Unauthorized: {} rejected the kubeconfig's credentials (expired token or certificate, or the exec plugin's login)",
            s.fake.server("prod")
        ),
    );
    assert!(s.fake.requests().iter().all(|r| r["method"] == "GET"));
}

#[test]
fn forbidden_names_the_verb_and_the_resource() {
    let s = one(json!({"nodes": 9, "forbid": ["list nodes"]}));
    let o = s.run(&["check", "--cluster"]);
    assert_error(
        &o,
        "cgpu-lint: error: cluster prod: 403 Forbidden: user \"cgpu-audit\" may not list nodes (cluster scope); cgpu-lint needs get and list on nodes and on daemonsets in kube-system (see the ClusterRole in docs/cluster.md)",
    );
    let s = one(json!({"nodes": 9, "forbid": ["get daemonsets"]}));
    let o = s.run(&["check", "--cluster"]);
    assert_error(
        &o,
        "cgpu-lint: error: cluster prod: 403 Forbidden: user \"cgpu-audit\" may not get daemonsets.apps in namespace kube-system; cgpu-lint needs get and list on nodes and on daemonsets in kube-system (see the ClusterRole in docs/cluster.md)",
    );
}

#[test]
fn request_timeout() {
    let s = one(json!({"nodes": 9, "delay": 3}));
    let o = s.run(&["check", "--cluster", "--request-timeout", "1s"]);
    // client-go words the same timeout three ways, depending on where the deadline hits
    // (the third one came from a CI run on a fresh machine).
    let prefix = format!(
        "cgpu-lint: error: cluster prod: timed out after 1s (--request-timeout) talking to {}: ",
        s.fake.server("prod")
    );
    let line = stderr(&o).trim_end().to_string();
    let detail = line
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("{line}"));
    assert!(
        [
            "context deadline exceeded",
            "context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
            "net/http: request canceled (Client.Timeout exceeded while awaiting headers)"
        ]
        .contains(&detail),
        "{line}"
    );
    assert_error(&o, &line);
    // Every request carried kubectl's timeout.
    assert!(
        s.fake
            .requests()
            .iter()
            .filter(|r| r["path"] == "/api")
            .all(|r| r["query"]["timeout"] == "1s")
    );
    let o = s.run(&["check", "--cluster", "--request-timeout", "5x"]);
    assert_error(
        &o,
        "cgpu-lint: error: --request-timeout 5x: not a duration in kubectl's syntax (an integer of seconds, or 5s, 1m, 1h)",
    );
}

#[test]
fn missing_kubectl() {
    let home = tempfile::tempdir().unwrap();
    let o = cgpu(
        home.path(),
        &["check", "--cluster", "--kubectl", "/nonexistent/kubectl"],
    );
    assert_error(
        &o,
        "cgpu-lint: error: cannot run `/nonexistent/kubectl`: not found; cgpu-lint reads clusters through kubectl: install it or give --kubectl PATH",
    );
}

#[test]
fn a_cluster_without_installers_is_a_cgpu_missing_finding() {
    let s = one(json!({"nodes": 9, "installers": []}));
    let o = s.run(&["check", "--cluster", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report = json_of(&o);
    let missing: Vec<&Value> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["rule"] == "cgpu-missing")
        .collect();
    assert_eq!(missing.len(), 1, "{report:#}");
    assert_eq!(missing[0]["file"], "prod:DaemonSet/kube-system");
    assert_eq!(missing[0]["severity"], "info");
    assert!(
        missing[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("no cgpu-installer or cgpu-core-installer DaemonSet in kube-system")
    );
    let o = s.run(&["check", "--cluster", "--require-cgpu", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    // The checklist has nothing to plan there: that is the tool unable to do its job.
    let o = s.run(&["checklist", "--cluster", "--policy", "2"]);
    assert_error(
        &o,
        "cgpu-lint: error: cluster prod: no cgpu-installer DaemonSet in kube-system: cGPU is not installed there, nothing to plan",
    );
}

#[test]
fn all_contexts_over_three_clusters_with_one_unreachable() {
    let pki = Pki::new();
    let fake = Fake::start(
        &pki,
        json!([
            {"name": "hangzhou", "nodes": 2000, "core_policy": "5"},
            {"name": "plain", "nodes": 30, "installers": []},
        ]),
    );
    let home = tempfile::tempdir().unwrap();
    let down = format!("https://127.0.0.1:{}", closed_port());
    let kc = kubeconfig(
        home.path(),
        "config",
        &[
            Ctx {
                name: "ack-hangzhou",
                server: fake.server("hangzhou"),
                ca: pki.path("ca.pem"),
                user: token_user(TOKEN),
            },
            Ctx {
                name: "ack-down",
                server: down.clone(),
                ca: pki.path("ca.pem"),
                user: token_user(TOKEN),
            },
            Ctx {
                name: "ack-plain",
                server: fake.server("plain"),
                ca: pki.path("ca.pem"),
                user: token_user(TOKEN),
            },
        ],
        Some("ack-plain"),
    );
    let k = kubectl();
    let args = [
        "check",
        "--cluster",
        "--all-contexts",
        "--kubeconfig",
        &kc,
        "--kubectl",
        &k,
        "--color",
        "never",
    ];
    let o = cgpu(home.path(), &args);
    // The worst of: findings (the policy mismatch is an error: 1) and an unreadable cluster (2).
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "cgpu-lint: error: cluster ack-down: API server {down} unreachable: "
        )),
        "{err}"
    );
    let out = stdout(&o);
    let tail: Vec<&str> = out.lines().rev().take(3).collect();
    let sum = |count: usize, templates: &[usize]| -> usize {
        templates.iter().map(|i| per_template(count, *i)).sum()
    };
    // GPU-sharing templates: cgpu (0, 1, 2, virtual 8), core_mem (3), legacy cgpu=true (6).
    // Warnings: the legacy and the virtual nodes, the deadlock advisory on both installers, and
    // node-known-issue on the driver-550 nodes (templates 0 and 1) of the cGPU 1.5.3 cluster.
    // One line per cluster, in kubectl's order of contexts (`kubectl config view` sorts them).
    assert_eq!(
        tail.into_iter().rev().collect::<Vec<_>>(),
        vec![
            "cluster ack-down: not read (error above)".to_string(),
            format!(
                "cluster ack-hangzhou: policies differ (cgpu-core-installer 5, cgpu-installer 1), cGPU 1.5.3, {} GPU-sharing of 2000 nodes: 1 error, {} warnings",
                sum(2000, &[0, 1, 2, 3, 6, 8]),
                sum(2000, &[0, 1, 6, 8]) + 2
            ),
            format!(
                "cluster ack-plain: cGPU not installed, cGPU version unknown, {} GPU-sharing of 30 nodes: 0 errors, {} warnings",
                sum(30, &[0, 1, 2, 3, 6, 8]),
                sum(30, &[6, 8])
            ),
        ]
    );
    // Above them the summary counts objects, not files: the readable clusters' installers
    // (2 + 0) and nodes (2000 + 30).
    let summary = out.lines().rev().nth(3).unwrap_or_default();
    assert!(summary.starts_with("2032 objects checked: "), "{out}");
    // The same run in JSON: the findings of both readable clusters, nothing else on stdout.
    let mut json_args = args.to_vec();
    json_args.extend(["--format", "json"]);
    let o = cgpu(home.path(), &json_args);
    assert_eq!(o.status.code(), Some(2));
    let report = json_of(&o);
    let mismatch: Vec<&Value> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["rule"] == "cluster-policy-mismatch")
        .collect();
    assert_eq!(mismatch.len(), 1);
    assert!(
        mismatch[0]["file"]
            .as_str()
            .unwrap()
            .starts_with("ack-hangzhou:DaemonSet/kube-system/")
    );
    assert!(
        report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["rule"] == "cgpu-missing" && d["file"] == "ack-plain:DaemonSet/kube-system")
    );
    assert!(fake.requests().iter().all(|r| r["method"] == "GET"));
}

/// kubeconfig as kubectl reads it: KUBECONFIG with two files (the first one's current-context),
/// a client certificate in one context and an exec credential plugin in another.
#[test]
fn kubeconfig_files_client_certificates_and_exec_plugins() {
    let pki = Pki::new();
    let fake = Fake::start(
        &pki,
        json!([
            {"name": "certs", "nodes": 9, "token": null},
            {"name": "exec", "nodes": 9, "core_policy": "5"},
        ]),
    );
    let home = tempfile::tempdir().unwrap();
    let plugin = home.path().join("ack-login.sh");
    std::fs::write(
        &plugin,
        format!(
            "#!/bin/sh\necho '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"{TOKEN}\"}}}}'\n"
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let first = kubeconfig(
        home.path(),
        "certs.yaml",
        &[Ctx {
            name: "ack-certs",
            server: fake.server("certs"),
            ca: pki.path("ca.pem"),
            user: format!(
                "    client-certificate: {}\n    client-key: {}\n",
                pki.path("client.pem"),
                pki.path("client.key")
            ),
        }],
        Some("ack-certs"),
    );
    let second = kubeconfig(
        home.path(),
        "exec.yaml",
        &[Ctx {
            name: "ack-exec",
            server: fake.server("exec"),
            ca: pki.path("ca.pem"),
            user: format!(
                "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      interactiveMode: Never\n",
                plugin.display()
            ),
        }],
        None,
    );
    let k = kubectl();
    let run = |extra: &[&str]| {
        bin()
            .env("HOME", home.path())
            .env("KUBECONFIG", format!("{first}:{second}"))
            .env_remove("KUBERNETES_SERVICE_HOST")
            .args(["check", "--cluster", "--format", "json", "--kubectl", &k])
            .args(extra)
            .output()
            .unwrap()
    };
    // The current context (from the first file): a client certificate, no token.
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let files: Vec<String> = json_of(&o)["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["file"].as_str().unwrap().to_string())
        .collect();
    assert!(
        files.iter().all(|f| f.starts_with("ack-certs:")),
        "{files:?}"
    );
    // The second file's context, through the exec plugin: its mismatch is found.
    let o = run(&["--context", "ack-exec"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(rules(&json_of(&o)).get("cluster-policy-mismatch"), Some(&1));
    let reqs = fake.requests();
    assert!(reqs.iter().all(|r| r["authenticated"] == true), "{reqs:?}");
}

/// Export the objects with real kubectl, as a user would for the file-based commands.
fn export(s: &One, dir: &Path) -> (String, String) {
    export_with(s, dir, &[])
}

/// [`export`], with more DaemonSets of kube-system in the installers' file.
fn export_with(s: &One, dir: &Path, daemonsets: &[&str]) -> (String, String) {
    let live = dir.join("live.yaml");
    let nodes = dir.join("nodes.yaml");
    let mut args = vec!["get", "ds", "cgpu-installer", "cgpu-core-installer"];
    args.extend(daemonsets);
    args.extend(["-n", "kube-system", "-o", "yaml", "--show-managed-fields"]);
    let o = s.kubectl(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(&live, &o.stdout).unwrap();
    let o = s.kubectl(&["get", "nodes", "-o", "yaml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(&nodes, &o.stdout).unwrap();
    (
        live.to_string_lossy().into_owned(),
        nodes.to_string_lossy().into_owned(),
    )
}

/// A checklist's JSON without where its findings sit in which input (a List's `/items/N`
/// prefix, file, line and column), which is all that may differ between the two readings.
fn comparable(mut v: Value) -> Value {
    // The identity the plan is pinned to is read from the cluster on one side and at the
    // script's first run on the other, and the planning time differs: the rest of `cluster`
    // (context, kubeconfig, N of M) must agree.
    if let Some(c) = v["cluster"].as_object_mut() {
        for k in ["server", "kube_system_uid", "planned_at", "header"] {
            c.remove(k);
        }
    }
    for key in ["diagnostics", "blocking"] {
        let Some(ds) = v[key].as_array_mut() else {
            continue;
        };
        for d in ds.iter_mut() {
            let m = d.as_object_mut().unwrap();
            for k in ["file", "line", "column", "end_line", "end_column"] {
                m.remove(k);
            }
            if let Some(p) = m.get("path").and_then(Value::as_str) {
                m.insert("path".into(), json!(strip_items(p)));
            }
            if let Some(msg) = m.get("message").and_then(Value::as_str) {
                m.insert("message".into(), json!(without_source_name(msg)));
            }
        }
    }
    v
}

/// cluster-policy-mismatch names where the other installer is: `(NAME line N)` in the cluster
/// (each object is its own source) and `(line N)` in a List file, whose line numbers differ by
/// construction (other bytes). Both become `(the other installer)`.
fn without_source_name(msg: &str) -> String {
    let mut out = String::new();
    let mut rest = msg;
    while let Some(i) = rest.find('(') {
        let Some(j) = rest[i..].find(')') else { break };
        let inner = &rest[i + 1..i + j];
        let names_a_line = inner.rsplit_once("line ").is_some_and(|(before, n)| {
            (before.is_empty() || before.ends_with(' '))
                && !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
        });
        out.push_str(&rest[..i]);
        if names_a_line {
            out.push_str("(the other installer)");
        } else {
            out.push_str(&rest[i..=i + j]);
        }
        rest = &rest[i + j + 1..];
    }
    out.push_str(rest);
    out
}

/// A markdown finding (`- **warning** `rule` FILE:LINE:COL: message`) without FILE:LINE:COL.
fn without_location(line: &str) -> String {
    if line.starts_with("- **")
        && let Some(i) = line.find("` ")
        && let Some(j) = line[i + 2..].find(": ")
    {
        return format!("{}{}", &line[..i + 2], &line[i + 2 + j..]);
    }
    line.to_string()
}

fn strip_items(p: &str) -> String {
    match p.strip_prefix("/items/") {
        Some(rest) => rest
            .find('/')
            .map_or(String::new(), |i| rest[i..].to_string()),
        None => p.to_string(),
    }
}

#[test]
fn the_checklist_from_the_cluster_equals_the_checklist_from_the_same_objects_as_files() {
    let s = one(json!({"nodes": 600, "core_policy": "2"}));
    let dir = tempfile::tempdir().unwrap();
    let (live, nodes) = export(&s, dir.path());
    let desired = root().join("tests/fixtures/values-policy-change-target.yaml");
    let desired = desired.to_str().unwrap();
    for target in [
        vec!["--policy", "2"],
        vec!["--policy", "3", "--tag", "v1.5.10-0a1b2c3-aliyun"],
        vec!["--desired", desired],
    ] {
        // Every target in JSON; the printers, which add nothing of the cluster's, once.
        let formats: &[&str] = if target[0] == "--policy" && target.len() == 2 {
            &["json", "markdown", "shell"]
        } else {
            &["json"]
        };
        for &format in formats {
            let mut cluster = vec!["checklist", "--cluster", "--format", format];
            cluster.extend(&target);
            let from_cluster = s.run(&cluster);
            let mut files = vec![
                "checklist",
                "--current",
                &live,
                "--nodes",
                &nodes,
                "--format",
                format,
            ];
            files.extend(&target);
            // The plan is pinned to its context (and kubeconfig): the same on both sides.
            files.extend(["--context", "prod", "--kubeconfig", &s.kubeconfig]);
            let from_files = cgpu(s.home.path(), &files);
            assert_eq!(
                from_cluster.status.code(),
                from_files.status.code(),
                "{target:?} {format}: {}",
                stderr(&from_cluster)
            );
            match format {
                "json" => {
                    let a = comparable(json_of(&from_cluster));
                    assert_eq!(a, comparable(json_of(&from_files)), "{target:?}");
                    assert!(a["nodes"].as_array().unwrap().len() > 100);
                }
                _ => {
                    // Only the line naming the inputs and the findings' locations differ.
                    let strip = |o: &Output| {
                        stdout(o)
                            .lines()
                            .filter(|l| {
                                !(l.starts_with("Current: ")
                                    || l.starts_with("# cGPU node-reboot checklist, generated")
                                    // The identity the plan is pinned to: read from the
                                    // cluster on one side, at the script's first run on the
                                    // other.
                                    || l.starts_with("# Cluster: ")
                                    || l.starts_with("# Planned: ")
                                    || l.starts_with("- Cluster: ")
                                    || l.starts_with("- Planned: ")
                                    || l.starts_with("SERVER=")
                                    || l.starts_with("CLUSTER_UID=")
                                    // The plan's id hashes the plan, identity included.
                                    || l.starts_with("PLAN_ID=")
                                    // The launcher's blocking findings, with their
                                    // locations (compared in the JSON above).
                                    || (l.starts_with("#   ") && l.contains(": ") && l.split_whitespace().nth(1).is_some_and(|w| w.contains('-') && !w.ends_with(':'))))
                            })
                            // The kube-system UID the launcher pins: read from the cluster on
                            // one side only.
                            .map(|l| match l.find("'--cluster-uid' '") {
                                Some(i) => {
                                    let rest = &l[i + "'--cluster-uid' '".len()..];
                                    let end = rest.find('\'').map_or(rest.len(), |j| j + 2);
                                    format!("{}{}", &l[..i], &rest[end.min(rest.len())..])
                                }
                                None => l.to_string(),
                            })
                            .map(|l| without_location(&l))
                            .map(|l| without_source_name(&l))
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(
                        strip(&from_cluster),
                        strip(&from_files),
                        "{target:?} {format}"
                    );
                }
            }
        }
    }
}

#[test]
fn check_findings_from_the_cluster_equal_the_pipeline_on_the_same_objects_as_files() {
    let s = one(json!({"nodes": 600, "core_policy": "0"}));
    let dir = tempfile::tempdir().unwrap();
    let (live, nodes) = export(&s, dir.path());
    let a = same_findings_as_files(&s, &nodes, &[&live], 1);
    assert!(a.iter().any(|k| k.starts_with("cluster-policy-mismatch")));
    assert!(a.iter().any(|k| k.starts_with("legacy-cgpu-label")));
}

/// `check --cluster` against `lint_cluster` and `check --nodes NODES FILES…` on the same objects
/// exported to files: the same findings (rule, severity, pointer in the object, message) and
/// the same exit status. Returns the cluster's findings, as compared.
fn same_findings_as_files(s: &One, nodes: &str, files: &[&str], exit: i32) -> Vec<String> {
    same_findings_as_files_with(s, &[], nodes, files, exit)
}

/// [`same_findings_as_files`], with more arguments for `check --cluster` (`--pods`).
fn same_findings_as_files_with(
    s: &One,
    cluster_args: &[&str],
    nodes: &str,
    files: &[&str],
    exit: i32,
) -> Vec<String> {
    let mut args = vec!["check", "--cluster", "--format", "json"];
    args.extend(cluster_args);
    let o = s.run(&args);
    assert_eq!(o.status.code(), Some(exit), "{}", stderr(&o));
    let from_cluster = json_of(&o);
    // The file side: the same pipeline entry point over the exported files.
    let srcs: Vec<Arc<cgpu_lint::yaml::Source>> = files
        .iter()
        .chain([&nodes])
        .map(|p| cgpu_lint::check::read_input(p, u64::MAX).unwrap())
        .collect();
    let diags = cgpu_lint::lint::lint_cluster(&srcs, &Default::default());
    let key = |rule: &str, severity: &str, path: &str, message: &str| {
        let message = without_source_name(message);
        format!("{rule} {severity} {} {message}", strip_items(path))
    };
    let keys_of_report = |report: &Value| -> Vec<String> {
        let mut k: Vec<String> = report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                key(
                    d["rule"].as_str().unwrap(),
                    d["severity"].as_str().unwrap(),
                    d["path"].as_str().unwrap(),
                    d["message"].as_str().unwrap(),
                )
            })
            .collect();
        k.sort();
        k
    };
    let a = keys_of_report(&from_cluster);
    let mut b: Vec<String> = diags
        .iter()
        .map(|d| key(d.rule.name(), d.severity.as_str(), &d.path, &d.message))
        .collect();
    b.sort();
    let same = |a: &Vec<String>, b: &Vec<String>, what: &str| {
        let only_a: Vec<&String> = a.iter().filter(|k| !b.contains(k)).collect();
        let only_b: Vec<&String> = b.iter().filter(|k| !a.contains(k)).collect();
        assert!(
            only_a.is_empty() && only_b.is_empty() && a.len() == b.len(),
            "{what}: from the cluster only: {only_a:#?}\nfrom the files only: {only_b:#?}"
        );
    };
    same(&a, &b, "lint_cluster on the files");
    // And the command line on the same files: `check --nodes NODES LIVE` is one cluster too.
    let mut args = vec!["check", "--format", "json", "--nodes", nodes];
    args.extend(files);
    let o = cgpu(s.home.path(), &args);
    assert_eq!(o.status.code(), Some(exit), "{}", stderr(&o));
    same(
        &a,
        &keys_of_report(&json_of(&o)),
        "check --nodes on the files",
    );
    a
}

/// In a pod without a kubeconfig kubectl uses the service account, but only when it gets no
/// connection flag (client-go takes `--request-timeout` for a configured connection and dials
/// localhost:8080; seen with kubectl 1.33). So cgpu-lint does not pass the limit there and stops
/// a kubectl call itself. A stand-in kubectl records its arguments and hangs on `get`.
#[test]
fn in_a_pod_the_request_timeout_is_enforced_without_kubectl_flags() {
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("args.log");
    let stub = home.path().join("kubectl");
    std::fs::write(
        &stub,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\nif [ \"$1 $2\" = 'config view' ]; then\n  echo '{{\"kind\":\"Config\",\"apiVersion\":\"v1\",\"preferences\":{{}},\"clusters\":null,\"users\":null,\"contexts\":null,\"current-context\":\"\"}}'\n  exit 0\nfi\nexec sleep 30\n",
            log.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let stub = stub.to_string_lossy().into_owned();
    let start = std::time::Instant::now();
    let o = bin()
        .env("HOME", home.path())
        .env_remove("KUBECONFIG")
        .env("KUBERNETES_SERVICE_HOST", "10.96.0.1")
        .args([
            "check",
            "--cluster",
            "--request-timeout",
            "200ms",
            "--kubectl",
            &stub,
        ])
        .output()
        .unwrap();
    assert!(start.elapsed() < std::time::Duration::from_secs(20));
    assert_error(
        &o,
        "cgpu-lint: error: cluster in-cluster: timed out after 200ms (--request-timeout) talking to the API server: kubectl still ran after 2s, 10 times the limit (in a pod without a kubeconfig kubectl cannot take --request-timeout)",
    );
    let calls = std::fs::read_to_string(&log).unwrap();
    let gets: Vec<&str> = calls.lines().filter(|l| l.starts_with("get ")).collect();
    // The installers, the daemonset list, the nodes.
    assert_eq!(gets.len(), 3, "{calls}");
    assert!(
        gets.iter()
            .all(|l| !l.contains("--request-timeout") && !l.contains("--context")),
        "{calls}"
    );
    // Outside a pod, no current context is a usage problem, said so.
    let o = bin()
        .env("HOME", home.path())
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .args(["check", "--cluster", "--kubectl", &stub])
        .output()
        .unwrap();
    assert_error(
        &o,
        "cgpu-lint: error: kubeconfig: no current-context and not running in a pod: give --context NAME, --all-contexts or --kubeconfig FILE",
    );
}

/// `check --cluster --format policyreport`: the reports validate against the wg-policy CRDs
/// (and openreports.io's with --openreports), and real kubectl maps and accepts them
/// (`kubectl apply --dry-run=client --validate=false`, the fake serving the CRDs' discovery).
#[test]
fn cluster_policy_reports_validate_and_kubectl_applies_them() {
    let s = one(json!({"nodes": 9, "reports": true}));
    for (openreports, group) in [(false, "wgpolicyk8s.io"), (true, "openreports.io")] {
        let mut args = vec!["check", "--cluster", "--format", "policyreport"];
        if openreports {
            args.push("--openreports");
        }
        let o = s.run(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let list: Value = serde_json::from_slice(&o.stdout).unwrap();
        let items = common::policyreport::validate(&list, openreports);
        // The installers' report in kube-system names the DaemonSets; the nodes' findings are
        // in the cluster's report, with the context.
        let ns = items
            .iter()
            .find(|i| i["metadata"]["namespace"] == "kube-system")
            .unwrap();
        assert!(ns["results"].as_array().unwrap().iter().any(|r| {
            r["resources"][0]["kind"] == "DaemonSet" && r["properties"]["context"] == "prod"
        }));
        let cluster = items
            .iter()
            .find(|i| i["metadata"].get("namespace").is_none())
            .unwrap();
        assert!(cluster["results"].as_array().unwrap().iter().any(|r| {
            r["resources"][0]["kind"] == "Node" && r["policy"] == "legacy-cgpu-label"
        }));
        checked_objects_pass(&s, &items);
        let file = s.home.path().join(format!("report-{group}.json"));
        std::fs::write(&file, &o.stdout).unwrap();
        let k = s.kubectl(&[
            "apply",
            "--dry-run=client",
            "--validate=false",
            "-f",
            file.to_str().unwrap(),
        ]);
        let out = String::from_utf8_lossy(&k.stdout);
        assert!(
            k.status.success(),
            "{out}{}",
            String::from_utf8_lossy(&k.stderr)
        );
        let (namespaced, clustered) = if openreports {
            ("report", "clusterreport")
        } else {
            ("policyreport", "clusterpolicyreport")
        };
        assert!(
            out.contains(&format!("{namespaced}.{group}/cgpu-lint created (dry run)"))
                && out.contains(&format!("{clustered}.{group}/cgpu-lint created (dry run)")),
            "{out}"
        );
    }
}

/// Every object the cluster serves (listed by real kubectl) has a `pass` result naming it, a
/// rule has no `pass` beside its finding on the same object, an object without findings is all
/// `pass`, and each summary counts its results.
fn checked_objects_pass(s: &One, items: &[Value]) {
    let mut objects: Vec<(String, String)> = Vec::new();
    for (kind, args) in [
        ("Node", vec!["get", "nodes", "-o", "name"]),
        (
            "DaemonSet",
            vec!["get", "ds", "-n", "kube-system", "-o", "name"],
        ),
    ] {
        let o = s.kubectl(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        for l in String::from_utf8_lossy(&o.stdout).lines() {
            let name = l.split_once('/').unwrap().1.to_string();
            if kind == "Node" || name.starts_with("cgpu-") {
                objects.push((kind.into(), name));
            }
        }
    }
    assert!(objects.len() > 9, "{objects:?}");
    let mut per: std::collections::BTreeMap<(String, String), Vec<(String, String)>> =
        Default::default();
    for i in items {
        let results = i["results"].as_array().unwrap();
        for k in ["pass", "fail", "warn", "error", "skip"] {
            let n = results.iter().filter(|r| r["result"] == k).count();
            assert_eq!(i["summary"][k], n, "{k}");
        }
        for r in results {
            let Some(res) = r["resources"].get(0) else {
                continue;
            };
            assert_eq!(r["properties"]["context"], "prod");
            per.entry((
                res["kind"].as_str().unwrap().into(),
                res["name"].as_str().unwrap().into(),
            ))
            .or_default()
            .push((
                r["policy"].as_str().unwrap().into(),
                r["result"].as_str().unwrap().into(),
            ));
        }
    }
    let mut clean = 0;
    for o in &objects {
        let results = per.get(o).unwrap_or_else(|| panic!("no result for {o:?}"));
        assert!(results.iter().any(|(_, r)| r == "pass"), "{o:?}");
        for (policy, result) in results {
            if result != "pass" {
                assert!(
                    !results.contains(&(policy.clone(), "pass".to_string())),
                    "{o:?}: {policy} is {result} and pass"
                );
            }
        }
        if results.iter().all(|(_, r)| r == "pass") {
            clean += 1;
        }
    }
    assert!(
        clean > 0,
        "some node of the recorded cluster has no finding: {per:?}"
    );
}

/// The first finding of `rule` in a `check --format json` report (the test fails without one).
fn first_finding<'a>(report: &'a Value, rule: &str) -> &'a Value {
    report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["rule"] == rule)
        .unwrap_or_else(|| panic!("no {rule} finding"))
}

/// The conflict findings of a `check --cluster --format json` report: (node source, message).
fn hami_conflicts(report: &Value) -> Vec<(String, String)> {
    report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["rule"] == "hami-device-plugin-conflict")
        .map(|d| {
            (
                d["file"].as_str().unwrap().to_string(),
                d["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The report has exactly one conflict, on `node`, whose message contains `words`.
fn assert_one_conflict(report: &Value, node: &str, words: &str) {
    let conflicts = hami_conflicts(report);
    assert_eq!(conflicts.len(), 1, "{conflicts:#?}");
    assert_eq!(conflicts[0].0, format!("prod:Node/{node}"));
    assert!(conflicts[0].1.contains(words), "{}", conflicts[0].1);
}

/// HAMi's device plugin (Helm release `hami` in kube-system, as HAMi's install guide
/// puts it) and ACK's ack-nvidia-device-plugin listed from kube-system, their nodeSelectors
/// judging the nodes as from files. Node template 5 (ack.node.gpu.schedule=default) gets gpu=on:
/// both plugins select it. csi-plugin, another DaemonSet there, is not read.
#[test]
fn hami_and_ack_device_plugins_listed_from_kube_system_judge_the_nodes_as_files_do() {
    let plugins = ["hami-device-plugin", "ack-nvidia-device-plugin"];
    let s = one(json!({
        "nodes": 9,
        "daemonsets": ["hami-device-plugin", "ack-nvidia-device-plugin", "csi-plugin"],
        "node_labels": {"5": {"gpu": "on"}},
    }));
    let o = s.run(&["check", "--cluster", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    let report = json_of(&o);
    assert_one_conflict(
        &report,
        "cn-hangzhou.192.168.16.6",
        "HAMi's device plugin (DaemonSet hami-device-plugin selects gpu=on) and ACK's ack-nvidia-device-plugin (DaemonSet ack-nvidia-device-plugin selects ack.node.gpu.schedule=default) both select it",
    );
    let d = first_finding(&report, "hami-device-plugin-conflict");
    assert_eq!(d["severity"], "error");
    // Two installers, two device plugins, nine nodes; no finding on a plugin (they are read
    // for the node rule, not checked as installers) and nothing of csi-plugin.
    assert_eq!(report["summary"]["files"], 13);
    let on_daemonsets: Vec<&Value> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| {
            let f = d["file"].as_str().unwrap();
            f.starts_with("prod:DaemonSet/") && !f.ends_with("-installer")
        })
        .collect();
    assert!(on_daemonsets.is_empty(), "{on_daemonsets:#?}");

    // The same objects as files: the plugins in the installers' export, and in a file of
    // their own (which is read, not "nothing to check").
    let dir = tempfile::tempdir().unwrap();
    let (live, nodes) = export_with(&s, dir.path(), &plugins);
    let a = same_findings_as_files(&s, &nodes, &[&live], 1);
    assert!(
        a.iter()
            .any(|k| k.starts_with("hami-device-plugin-conflict error"))
    );
    let apart = tempfile::tempdir().unwrap();
    let (installers, _) = export(&s, apart.path());
    let plugin_file = apart.path().join("device-plugins.yaml");
    let mut args = vec!["get", "ds"];
    args.extend(plugins);
    args.extend(["-n", "kube-system", "-o", "yaml"]);
    let out = s.kubectl(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::write(&plugin_file, &out.stdout).unwrap();
    let b = same_findings_as_files(&s, &nodes, &[&installers, plugin_file.to_str().unwrap()], 1);
    assert_eq!(a, b);

    // And the checklist: --cluster against --current with the plugins, --nodes.
    let from_cluster = s.run(&[
        "checklist",
        "--cluster",
        "--policy",
        "2",
        "--format",
        "json",
    ]);
    let from_files = cgpu(
        s.home.path(),
        &[
            "checklist",
            "--current",
            &live,
            "--nodes",
            &nodes,
            "--policy",
            "2",
            "--format",
            "json",
            "--context",
            "prod",
            "--kubeconfig",
            &s.kubeconfig,
        ],
    );
    assert_eq!(
        from_cluster.status.code(),
        from_files.status.code(),
        "{}",
        stderr(&from_cluster)
    );
    let list = comparable(json_of(&from_cluster));
    assert_eq!(list, comparable(json_of(&from_files)));
    assert!(
        list["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["rule"] == "hami-device-plugin-conflict"),
        "{list:#}"
    );
}

/// The DaemonSet's nodeSelector decides, not the gpu=on label: HAMi's plugin re-selected to
/// another label leaves the gpu=on node alone and conflicts on the node it now selects.
#[test]
fn a_reselected_hami_device_plugin_moves_the_conflict() {
    let s = one(json!({
        "nodes": 9,
        "daemonsets": ["hami-device-plugin", "ack-nvidia-device-plugin"],
        "node_selectors": {"hami-device-plugin": {"hami.io/vgpu-node": "true"}},
        "node_labels": {
            "5": {"gpu": "on"},
            "7": {"hami.io/vgpu-node": "true", "ack.node.gpu.schedule": "default"},
        },
    }));
    let o = s.run(&["check", "--cluster", "--format", "json"]);
    assert_one_conflict(
        &json_of(&o),
        "cn-hangzhou.192.168.16.8",
        "DaemonSet hami-device-plugin selects hami.io/vgpu-node=true",
    );
    let dir = tempfile::tempdir().unwrap();
    let (live, nodes) = export_with(
        &s,
        dir.path(),
        &["hami-device-plugin", "ack-nvidia-device-plugin"],
    );
    same_findings_as_files(&s, &nodes, &[&live], o.status.code().unwrap());
}

/// A user who may only GET the two installers (docs/cluster.md's `resourceNames` Role) cannot
/// list the DaemonSets of kube-system: the cluster is checked anyway, the plugins judged by the
/// node labels, as in a cluster without them, and one warning line says so.
#[test]
fn a_forbidden_daemonset_list_judges_the_plugins_by_labels_with_a_warning() {
    let forbidden = one(json!({
        "nodes": 9,
        "daemonsets": ["hami-device-plugin", "ack-nvidia-device-plugin"],
        "node_selectors": {"hami-device-plugin": {"hami.io/vgpu-node": "true"}},
        "node_labels": {"5": {"gpu": "on"}},
        "forbid": ["list daemonsets"],
    }));
    let without = one(json!({"nodes": 9, "node_labels": {"5": {"gpu": "on"}}}));
    let warning = "cgpu-lint: warning: cluster prod: cannot list daemonsets in kube-system (403 Forbidden); HAMi and ACK device plugins judged by node labels only";
    for format in ["json", "human"] {
        let o = forbidden.run(&["check", "--cluster", "--format", format]);
        let w = without.run(&["check", "--cluster", "--format", format]);
        assert_eq!(o.status.code(), w.status.code(), "{}", stderr(&o));
        let lines: Vec<String> = stderr(&o)
            .lines()
            .filter(|l| l.contains("warning"))
            .map(str::to_string)
            .collect();
        assert_eq!(lines, [warning], "{}", stderr(&o));
        assert!(!stderr(&w).contains("warning"), "{}", stderr(&w));
        if format == "json" {
            let (a, b) = (json_of(&o), json_of(&w));
            assert_eq!(a["diagnostics"], b["diagnostics"]);
            // By the labels: gpu=on and ack.node.gpu.schedule=default on template 5, though
            // the (unread) HAMi DaemonSet selects another label.
            assert_one_conflict(
                &a,
                "cn-hangzhou.192.168.16.6",
                "HAMi's device plugin (gpu=on) and ACK's ack-nvidia-device-plugin (ack.node.gpu.schedule=default)",
            );
        }
    }
    // The list was asked for (and refused), with GET requests only.
    let reqs = forbidden.fake.requests();
    assert!(reqs.iter().all(|r| r["method"] == "GET"));
    assert!(
        reqs.iter()
            .any(|r| r["path"] == "/apis/apps/v1/namespaces/kube-system/daemonsets")
    );
    // The checklist reads the cluster the same way, and says so too.
    let o = forbidden.run(&[
        "checklist",
        "--cluster",
        "--policy",
        "2",
        "--format",
        "json",
    ]);
    json_of(&o);
    assert!(stderr(&o).lines().any(|l| l == warning), "{}", stderr(&o));
}

/// The pods of `pods_per_gpu_from_the_cluster_with_pods_as_from_files` (the fake's `pods`
/// groups): on node template 5 (allocatable nvidia.com/gpu "1", no aliyun.com/gpu-count), 21
/// running pods limiting aliyun.com/gpu-mem, beside finished ones that ask for it too, pods that
/// ask for no share resource (nothing, or nvidia.com/gpu), and elsewhere a few within the limit
/// and one not yet scheduled.
fn pods_per_gpu_cluster() -> Value {
    let mem = json!({"limits": {"aliyun.com/gpu-mem": "2"}});
    json!({
        "nodes": 9,
        "pods": [
            {"node": 5, "count": 21, "namespace": "inference", "name": "infer-%02d",
             "resources": mem},
            {"node": 5, "count": 2, "namespace": "batch", "name": "train-done-%d",
             "phase": "Succeeded", "resources": mem},
            {"node": 5, "count": 1, "namespace": "batch", "name": "train-failed-%d",
             "phase": "Failed", "resources": mem},
            {"node": 5, "count": 3, "namespace": "default", "name": "web-%d"},
            {"node": 5, "count": 2, "namespace": "default", "name": "cuda-%d",
             "resources": {"limits": {"nvidia.com/gpu": "1"}}},
            {"node": 0, "count": 3, "namespace": "inference", "name": "small-%d",
             "resources": {"requests": {"aliyun.com/gpu-core.percentage": "30"}}},
            {"node": null, "count": 1, "namespace": "inference", "name": "queued-%d",
             "phase": "Pending", "resources": mem},
        ],
    })
}

/// The `pods-per-gpu` findings of a `check --format json` report: (file, path, message).
fn pods_per_gpu(report: &Value) -> Vec<(String, String, String)> {
    report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["rule"] == "pods-per-gpu")
        .map(|d| {
            let s = |k: &str| d[k].as_str().unwrap().to_string();
            (s("file"), s("path"), s("message"))
        })
        .collect()
}

/// `check --cluster --pods`: the unfinished pods of all namespaces listed, those requesting a
/// cGPU share kept, each its own object, counted per node as from files.
#[test]
fn pods_per_gpu_from_the_cluster_with_pods_as_from_files() {
    // The ACK doc ("Manage the shared GPU scheduling component"): at most 20 pods per GPU. The
    // limit comes from the compatibility data, not from cgpu-lint's code.
    let entry = cgpu_lint::cgpu::compat::data()
        .issues
        .iter()
        .find(|i| i.id == "issue-pods-per-gpu")
        .unwrap();
    assert_eq!(entry.max_pods_per_gpu, Some(20));
    assert_eq!(entry.text, "at most 20 pods share one GPU under cGPU");

    let s = one(pods_per_gpu_cluster());
    let node = "cn-hangzhou.192.168.16.6";
    let o = s.run(&["check", "--cluster", "--pods", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "warnings only: {}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    let report = json_of(&o);
    let found = pods_per_gpu(&report);
    assert_eq!(found.len(), 1, "{found:#?}");
    let (file, path, message) = &found[0];
    // The 21st counted pod in the API server's order (namespace, then name): batch's finished
    // pods and default's pods without a share resource come first and are not counted.
    assert_eq!(file, "prod:Pod/inference/infer-21");
    assert_eq!(path, "/spec/nodeName");
    assert!(
        message.starts_with(&format!(
            "21 pods that request a cGPU share resource run on node `{node}`, which has 1 GPU(s), so at most 20: at most 20 pods share one GPU under cGPU (entry issue-pods-per-gpu"
        )),
        "{message}"
    );
    let d = first_finding(&report, "pods-per-gpu");
    assert_eq!(d["severity"], "warning");
    // Two installers, nine nodes, and of the pods only the 24 counted ones (21 + node 0's 3):
    // no finished pod, none without a share resource, not the unscheduled one.
    assert_eq!(report["summary"]["files"], 2 + 9 + 24);
    let pods: Vec<&str> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["file"].as_str())
        .filter(|f| f.starts_with("prod:Pod/"))
        .collect();
    assert_eq!(pods, ["prod:Pod/inference/infer-21"]);
    // The pods LIST carried the field selector to the server, once (33 unfinished pods).
    let lists: Vec<Value> = s.fake.requests_to("/api/v1/pods");
    assert_eq!(lists.len(), 1, "{lists:?}");
    assert_eq!(
        lists[0]["query"]["fieldSelector"],
        "status.phase!=Succeeded,status.phase!=Failed"
    );

    // As a policy report: the pod's namespace gets a PolicyReport with the warning on the Pod.
    let o = s.run(&["check", "--cluster", "--pods", "--format", "policyreport"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let reports = json_of(&o);
    let inference = reports["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metadata"]["namespace"] == "inference")
        .unwrap_or_else(|| panic!("{reports:#}"));
    let results = inference["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{results:#?}");
    assert_eq!(results[0]["policy"], "pods-per-gpu");
    assert_eq!(results[0]["result"], "warn");
    assert_eq!(
        results[0]["resources"],
        json!([{"apiVersion": "v1", "kind": "Pod", "namespace": "inference", "name": "infer-21"}])
    );
    assert_eq!(results[0]["properties"]["context"], "prod");

    // With several contexts (here the one twice), each summary line counts the pods kept.
    let o = s.run(&[
        "check",
        "--cluster",
        "--pods",
        "--context",
        "prod",
        "--context",
        "prod",
    ]);
    let lines: Vec<&str> = std::str::from_utf8(&o.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("cluster prod: "))
        .collect();
    assert_eq!(lines.len(), 2, "{}", stdout(&o));
    assert!(
        lines[0].contains(" GPU-sharing of 9 nodes, 24 pods requesting GPU shares: "),
        "{}",
        lines[0]
    );

    // Without --pods: no pod is asked for, and no pods-per-gpu.
    let before = s.fake.requests().len();
    let w = s.run(&["check", "--cluster", "--format", "json"]);
    assert_eq!(w.status.code(), Some(0), "{}", stderr(&w));
    assert!(pods_per_gpu(&json_of(&w)).is_empty());
    let asked: Vec<Value> = s.fake.requests()[before..]
        .iter()
        .filter(|r| r["path"].as_str().unwrap().contains("pods"))
        .cloned()
        .collect();
    assert!(asked.is_empty(), "{asked:?}");
    assert_eq!(json_of(&w)["summary"]["files"], 2 + 9);

    // The same objects as files: every pod (finished ones too) as `kubectl get pods -A -o json`
    // prints them, one List, beside the installers and the nodes.
    let dir = tempfile::tempdir().unwrap();
    let (live, nodes) = export(&s, dir.path());
    let out = s.kubectl(&["get", "pods", "--all-namespaces", "-o", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let all_pods: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(all_pods["kind"], "List");
    let items = all_pods["items"].as_array().unwrap();
    assert_eq!(items.len(), 33);
    let pods_file = dir.path().join("pods.json");
    std::fs::write(&pods_file, &out.stdout).unwrap();
    let a = same_findings_as_files_with(
        &s,
        &["--pods"],
        &nodes,
        &[&live, pods_file.to_str().unwrap()],
        0,
    );
    assert_eq!(
        a.iter().filter(|k| k.starts_with("pods-per-gpu ")).count(),
        1
    );
    // On the file side, the finding is on the same pod in the List.
    let o = cgpu(
        s.home.path(),
        &[
            "check",
            "--format",
            "json",
            "--nodes",
            &nodes,
            &live,
            pods_file.to_str().unwrap(),
        ],
    );
    let i = items
        .iter()
        .position(|p| p["metadata"]["name"] == "infer-21")
        .unwrap();
    let found = pods_per_gpu(&json_of(&o));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].1, format!("/items/{i}/spec/nodeName"));
}

/// `--pods` adds one request to what `check --cluster` asks: the pods of all namespaces, a LIST
/// in pages of 500 with the field selector that leaves the finished pods on the server, GET only.
#[test]
fn pods_add_exactly_the_paged_pods_list_with_the_field_selector() {
    // 1,000 unfinished pods and 200 finished: two pages with the selector, three without.
    let s = one(json!({
        "nodes": 9,
        "pods": [
            {"node": 1, "count": 1000, "namespace": "apps", "name": "web-%04d"},
            {"node": 2, "count": 200, "namespace": "jobs", "name": "done-%03d",
             "phase": "Succeeded"},
        ],
    }));
    // Each run with a HOME of its own: both fill kubectl's discovery cache.
    let (home_a, home_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let o = s.run_in(
        home_a.path(),
        &["check", "--cluster", "--pods", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Not one of the pods requests a share resource: none is an object of the report.
    assert_eq!(json_of(&o)["summary"]["files"], 2 + 9);
    let with = s.fake.requests();
    let w = s.run_in(home_b.path(), &["check", "--cluster", "--format", "json"]);
    assert_eq!(w.status.code(), Some(0), "{}", stderr(&w));
    let without = s.fake.requests()[with.len()..].to_vec();
    assert!(with.iter().chain(&without).all(|r| r["method"] == "GET"));
    // A request without its page token: what was asked, not which page.
    let asked = |r: &Value| {
        let mut q = r["query"].clone();
        q.as_object_mut().unwrap().remove("continue");
        format!(
            "{} {} {q}",
            r["method"].as_str().unwrap(),
            r["path"].as_str().unwrap()
        )
    };
    let set =
        |rs: &[Value]| -> std::collections::BTreeSet<String> { rs.iter().map(asked).collect() };
    let (a, b) = (set(&with), set(&without));
    assert!(
        b.is_subset(&a),
        "{:?}",
        b.difference(&a).collect::<Vec<_>>()
    );
    let added: Vec<&String> = a.difference(&b).collect();
    // (`timeout`: the default --request-timeout, on every request.)
    assert_eq!(
        added,
        [&format!(
            "GET /api/v1/pods {}",
            json!({
                "fieldSelector": "status.phase!=Succeeded,status.phase!=Failed",
                "limit": "500",
                "timeout": "30s",
            })
        )],
    );
    let pages: Vec<&Value> = with
        .iter()
        .filter(|r| r["path"] == "/api/v1/pods")
        .collect();
    assert_eq!(
        pages.len(),
        2,
        "1,000 unfinished pods in pages of 500: {pages:?}"
    );
    assert!(pages[0]["query"].get("continue").is_none());
    assert!(pages[1]["query"].get("continue").is_some());
}

/// A user who may not list pods cluster-wide: `--pods` still checks the rest, with one warning
/// line, and the findings and exit status of a run without `--pods`.
#[test]
fn a_forbidden_pods_list_checks_the_rest_with_a_warning() {
    let mut cluster = pods_per_gpu_cluster();
    cluster["forbid"] = json!(["list pods"]);
    let s = one(cluster);
    let warning = "cgpu-lint: warning: cluster prod: cannot list pods (403 Forbidden); pods-per-gpu not checked";
    for format in ["json", "human"] {
        let o = s.run(&["check", "--cluster", "--pods", "--format", format]);
        let w = s.run(&["check", "--cluster", "--format", format]);
        assert_eq!(o.status.code(), w.status.code(), "{}", stderr(&o));
        let err = stderr(&o);
        let lines: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
        assert_eq!(lines, [warning], "{}", stderr(&o));
        assert!(!stderr(&w).contains("warning"), "{}", stderr(&w));
        if format == "json" {
            let (a, b) = (json_of(&o), json_of(&w));
            assert_eq!(a["diagnostics"], b["diagnostics"]);
            assert_eq!(a["summary"], b["summary"]);
            assert!(pods_per_gpu(&a).is_empty());
        } else {
            assert_eq!(stdout(&o), stdout(&w));
        }
    }
    // The list was asked for (and refused), with GET requests only.
    let reqs = s.fake.requests();
    assert!(reqs.iter().all(|r| r["method"] == "GET"));
    assert!(reqs.iter().any(|r| r["path"] == "/api/v1/pods"));
}

/// `KUBECONFIG` naming a file that is not there: real kubectl skips it without a word and reads
/// an empty configuration; the error names the missing file, not only "no current-context".
#[test]
fn a_kubeconfig_variable_naming_a_missing_file_is_said_so() {
    let home = tempfile::tempdir().unwrap();
    let missing = home.path().join("nope.yaml");
    let k = kubectl();
    let o = bin()
        .env("HOME", home.path())
        .env("KUBECONFIG", &missing)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .args(["check", "--cluster", "--kubectl", &k])
        .output()
        .unwrap();
    assert_error(
        &o,
        &format!(
            "cgpu-lint: error: kubeconfig: KUBECONFIG names {}, which does not exist, so there is no current-context: give --kubeconfig FILE or fix KUBECONFIG",
            missing.display()
        ),
    );
    let o = bin()
        .env("HOME", home.path())
        .env("KUBECONFIG", &missing)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .args(["check", "--cluster", "--all-contexts", "--kubectl", &k])
        .output()
        .unwrap();
    assert_error(
        &o,
        &format!(
            "cgpu-lint: error: kubeconfig: --all-contexts: KUBECONFIG names {}, which does not exist",
            missing.display()
        ),
    );
}
