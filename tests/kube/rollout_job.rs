//! `cgpu-lint generate rollout-job`: the ServiceAccount, RBAC and batch/v1 Job that run
//! `cgpu-lint rollout --reboot-via node --wait-for-lock …` inside the cluster.
//!
//! - the generated objects pass the Kubernetes OpenAPI schemas (kubernetes-validate, strict);
//! - applied with the real kubectl 1.33 to the stateful fake API server
//!   (tests/fake-apiserver/stateful.py), the Job's container arguments are run AS ITS POD WOULD
//!   RUN THEM: no kubeconfig, `KUBERNETES_SERVICE_HOST`/`_PORT` and the service-account files at
//!   /var/run/secrets/kubernetes.io/serviceaccount (a tmpfs in a private mount namespace, a
//!   private UTS namespace for the pod's hostname), kubectl's in-cluster configuration. The
//!   first pod is killed with `kill -9` after its first reboot; its replacement (another pod
//!   name, another token) waits for the Lease to expire and finishes the rollout: every node
//!   at the target, rebooted once, each through a reboot pod on the node (`via: node-pod` in the
//!   fake's history), no reboot pod left, never two holders of the lock at once;
//! - every API request the two pods made is allowed by the generated ClusterRole or Role, as
//!   the RBAC authorizer maps it (verb, group, resource, subresource, namespace, name), and
//!   every (rule, verb) of the generated roles was used.
//!
//! Needs root (or user namespaces) for `unshare -m -u` and `mount -t tmpfs`; scripts/
//! install-test-tools for kubectl and kubernetes-validate. A missing tool fails the test.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::apiserver::{Fake, Pki, TOKEN, kubectl};
use crate::common::bin;
use serde_json::{Value, json};

const JOB_IMAGE: &str = "registry.example.com/ops/cgpu-lint:0.1.0";
const OLD_IMAGE: &str =
    "registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.9-1f0c2b4-aliyun";
const NS_UID: &str = "d2b7c1f4-9a3e-4c6b-8e21-0f5a7c3d9b11";
const NEW_POLICY: &str = "2";
const MARK: &str = "cgpu-lint/cordoned";
/// The service-account tokens of the Job's first pod and of its replacement (the fake
/// attributes every change, and logs every request, by token).
const POD_A: &str = "job-pod-a-sa-token-5c1e";
const POD_B: &str = "job-pod-b-sa-token-9f3d";
const NODES: [&str; 3] = [
    "cn-hangzhou.10.0.1.11",
    "cn-hangzhou.10.0.1.12",
    "cn-hangzhou.10.0.1.13",
];
/// The waits for the fake's simulated time, over the Job's own values (a later flag replaces
/// the Job's). `--wait-for-lock` bounds the replacement's wait for the killed pod's Lease.
const LEASE_SECONDS: f64 = 6.0;
const FAST: &[(&str, &str)] = &[
    ("--poll-interval", "200ms"),
    ("--reboot-timeout", "6s"),
    ("--wait-timeout", "6s"),
    ("--lease-duration", "6s"),
    ("--wait-for-lock", "60s"),
];

/// The objects of a multi-document YAML (one top-level `kind:` each).
fn objects(yaml: &str) -> usize {
    yaml.lines().filter(|l| l.starts_with("kind: ")).count()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `generate rollout-job` as the README's recipe runs it.
fn generate() -> String {
    let args = [
        "generate",
        "rollout-job",
        "--policy",
        NEW_POLICY,
        "--image",
        JOB_IMAGE,
        "--cluster-uid",
        NS_UID,
    ];
    let out = bin().args(args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "cgpu-lint {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

// ---- (a) the schemas ------------------------------------------------------------------------------

/// Every object of the generated YAML passes the strict Kubernetes schema (an unknown field is
/// an error) of each version kubernetes-validate ships from 1.28 on; an edited copy with a
/// misspelt field fails, so the check can fail.
#[test]
fn the_generated_objects_validate_against_kubernetes_schemas() {
    let tool = common::venv_tool("kubernetes-validate");
    let yaml = generate();
    let kinds = [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Job",
    ];
    for kind in kinds {
        assert!(
            yaml.lines().any(|l| l == format!("kind: {kind}")),
            "no {kind} in:\n{yaml}"
        );
    }
    assert!(
        yaml.contains(NS_UID),
        "the Job does not pin the cluster:\n{yaml}"
    );
    assert!(
        yaml.contains(JOB_IMAGE),
        "the Job does not run {JOB_IMAGE}:\n{yaml}"
    );
    let dir = tempfile::tempdir().unwrap();
    let validate = |minor: u32, name: &str, text: &str| {
        let f = dir.path().join(name);
        std::fs::write(&f, text).unwrap();
        let out = Command::new(&tool)
            .args(["--strict", "-k", &format!("1.{minor}.0")])
            .arg(&f)
            .output()
            .unwrap();
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let mut failed = Vec::new();
    for minor in 28..=37u32 {
        let (ok, out) = validate(minor, "rollout-job.yaml", &yaml);
        if !ok
            || out.matches("passed for resource").count() != objects(&yaml)
            || out.contains("WARN")
            || out.contains("ERROR")
        {
            failed.push(format!("1.{minor}: {}", out.trim()));
        }
    }
    assert!(failed.is_empty(), "{}\n{yaml}", failed.join("\n"));
    // The check can fail: the pod template's serviceAccountName misspelt.
    let line = yaml
        .lines()
        .find(|l| l.trim_start().starts_with("serviceAccountName:"))
        .unwrap_or_else(|| panic!("the Job names no serviceAccountName:\n{yaml}"));
    let bad = yaml.replacen(
        line,
        &line.replacen("serviceAccountName:", "serviceAccountNam:", 1),
        1,
    );
    let (ok, out) = validate(33, "rollout-job-bad.yaml", &bad);
    assert!(
        !ok && out.contains("'serviceAccountNam' was unexpected"),
        "{out}"
    );
}

// ---- the Job run as its pods would run it -------------------------------------------------------

/// One cluster `prod`: three cGPU nodes at POLICY 1 (one workload on the first), a GPU node
/// outside cGPU where evicted pods fit, OnDelete installers; the DaemonSets already at POLICY 2.
fn cluster(pki: &Pki) -> Value {
    let mut nodes: Vec<Value> = NODES
        .iter()
        .enumerate()
        .map(|(i, name)| {
            json!({
                "name": name, "instance": format!("i-bp1eeeeeeeeeeeeee0{i}"),
                "schedule": "cgpu", "gpus": 1, "gpu_mem": 22,
                "module": {"version": "1.5.9", "policy": "1"},
                "workloads": if i == 0 { vec![4] } else { vec![] },
            })
        })
        .collect();
    nodes.push(json!({
        "name": "cn-hangzhou.10.0.2.1", "instance": "i-bp1spare000000000001",
        "schedule": null, "gpu_mem": 60, "module": null, "workloads": [],
    }));
    json!({
        "name": "prod",
        "cert": pki.path("server.pem"),
        "key": pki.path("server.key"),
        "token": TOKEN,
        "tokens": [POD_A, POD_B],
        "runbook": {
            "seed": 47,
            "ns_uid": NS_UID,
            "nodes": nodes,
            "daemonsets": {
                "cgpu-installer": {"policy": "1", "image": OLD_IMAGE, "strategy": "OnDelete"},
                "cgpu-core-installer": {"policy": "1", "image": OLD_IMAGE, "strategy": "OnDelete"},
            },
        },
    })
}

/// A tool the pod's sandbox needs (util-linux, coreutils), by absolute path; missing: fail.
fn system_tool(name: &str) -> PathBuf {
    for d in ["/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"] {
        let p = Path::new(d).join(name);
        if p.is_file() {
            return p;
        }
    }
    panic!(
        "`{name}` is missing: the Job's pod is run in a private mount and UTS namespace (unshare -m -u, mount -t tmpfs, hostname: util-linux)"
    );
}

fn is_root() -> bool {
    let out = Command::new(system_tool("id")).arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// What one pod of the Job printed and how it ended.
struct PodRun {
    code: Option<i32>,
    out: String,
}

struct Pod {
    child: Child,
    host: String,
    log: PathBuf,
}

impl Pod {
    fn read(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `kill -9` of the cgpu-lint process (the one `unshare` and `sh` exec'd into) and of
    /// every process under it, as the container runtime kills a pod's container.
    fn kill(mut self) -> PodRun {
        let pid = self.child.id();
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
        let bin = std::fs::canonicalize(env!("CARGO_BIN_EXE_cgpu-lint")).unwrap();
        assert_eq!(
            exe,
            bin,
            "pod {}: process {pid} is not cgpu-lint (the sandbox did not exec it): {}",
            self.host,
            self.read()
        );
        let mut all = vec![pid];
        let mut i = 0;
        while i < all.len() {
            let p = all[i];
            for t in std::fs::read_dir(format!("/proc/{p}/task"))
                .into_iter()
                .flatten()
                .flatten()
            {
                let kids = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
                all.extend(
                    kids.split_whitespace()
                        .filter_map(|k| k.parse::<u32>().ok()),
                );
            }
            i += 1;
        }
        for p in &all {
            let _ = Command::new(system_tool("kill"))
                .args(["-9", &p.to_string()])
                .status();
        }
        let status = self.child.wait().unwrap();
        PodRun {
            code: status.code(),
            out: self.read(),
        }
    }

    fn wait(mut self, limit: Duration) -> PodRun {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return PodRun {
                    code: status.code(),
                    out: self.read(),
                };
            }
            if Instant::now() > deadline {
                let out = self.read();
                let host = self.host.clone();
                let _ = self.kill();
                panic!("pod {host} still runs after {limit:?}:\n{out}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The stateful fake with the Job applied, and the two pods' runs.
struct Scenario {
    fake: Fake,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    /// The history length before the first pod started.
    from: usize,
    job: Value,
    a: PodRun,
    b: PodRun,
    ca: String,
    /// Kept: the kubeconfig and the pods read its CA.
    _pki: Pki,
}

impl Scenario {
    fn admin(&self, req: Value) -> Value {
        admin(&self.fake, req)
    }

    fn history(&self) -> Vec<Value> {
        self.admin(json!({"op": "state", "cluster": "prod"}))["history"]
            .as_array()
            .unwrap()[self.from..]
            .to_vec()
    }

    /// The test's own kubectl (the admin's kubeconfig, token TOKEN), JSON out.
    fn get(&self, args: &[&str]) -> Value {
        let out = Command::new(kubectl())
            .env("HOME", self.dir.path())
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .args(["-o", "json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// The Job's container as the fake stores it, run as `cgpu-lint ARGS` in a pod named
    /// `host` whose service-account token is `token`.
    fn start_pod(&self, host: &str, token: &str) -> Pod {
        let sa = self.dir.path().join(format!("sa-{host}"));
        std::fs::create_dir_all(&sa).unwrap();
        std::fs::write(sa.join("token"), token).unwrap();
        std::fs::copy(&self.ca, sa.join("ca.crt")).unwrap();
        std::fs::write(sa.join("namespace"), "kube-system").unwrap();
        let home = self.dir.path().join(format!("home-{host}"));
        std::fs::create_dir_all(&home).unwrap();
        let log = self.dir.path().join(format!("{host}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let script = r#"set -e
hostname "$0"
mkdir -p /var/run/secrets
mount -t tmpfs -o size=1m tmpfs /var/run/secrets
d=/var/run/secrets/kubernetes.io/serviceaccount
mkdir -p "$d"
cp "$SA/token" "$SA/ca.crt" "$SA/namespace" "$d/"
unset SA
exec "$@""#;
        let mut cmd = Command::new(system_tool("unshare"));
        if !is_root() {
            cmd.arg("-r"); // a user namespace (mapped to root) where root is not at hand
        }
        let path = format!(
            "{}:/usr/bin:/bin:/usr/sbin:/sbin",
            root().join("target/tools").display()
        );
        cmd.env_clear();
        // The container's own environment (its HOME aside: each pod gets an empty one here, as
        // its emptyDir is).
        let c = &self.job["spec"]["template"]["spec"]["containers"][0];
        for e in c["env"].as_array().into_iter().flatten() {
            if let (Some(k), Some(v)) = (e["name"].as_str(), e["value"].as_str())
                && k != "HOME"
            {
                cmd.env(k, v);
            }
        }
        let child = cmd
            .args(["-m", "-u"])
            .arg(system_tool("sh"))
            .args(["-c", script, host, env!("CARGO_BIN_EXE_cgpu-lint")])
            .args(job_argv(&self.job))
            .env("PATH", path)
            .env("HOME", &home)
            .env("HOSTNAME", host)
            .env("NO_COLOR", "1")
            .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
            .env(
                "KUBERNETES_SERVICE_PORT",
                self.fake.ports["prod"].to_string(),
            )
            .env(
                "KUBERNETES_SERVICE_PORT_HTTPS",
                self.fake.ports["prod"].to_string(),
            )
            .env("SA", &sa)
            .current_dir(&home)
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap();
        Pod {
            child,
            host: host.into(),
            log,
        }
    }
}

fn admin(fake: &Fake, req: Value) -> Value {
    let (body, out) = fake.admin_call(&req);
    let v: Value =
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("admin {req}: {e}: {out}"));
    assert!(v.get("error").is_none(), "admin {req}: {v}");
    v
}

/// The cgpu-lint arguments of the Job's container (command and args, the binary's own name
/// left out), with the waits of FAST in place of the Job's.
fn job_argv(job: &Value) -> Vec<String> {
    let c = &job["spec"]["template"]["spec"]["containers"][0];
    let mut words: Vec<String> = c["command"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(c["args"].as_array().into_iter().flatten())
        .map(|w| w.as_str().unwrap().to_string())
        .collect();
    if words
        .first()
        .is_some_and(|w| w == "cgpu-lint" || w.ends_with("/cgpu-lint"))
    {
        words.remove(0);
    }
    assert_eq!(
        words.first().map(String::as_str),
        Some("rollout"),
        "the Job's container does not run `cgpu-lint rollout`: {c}"
    );
    for (flag, value) in FAST {
        let eq = format!("{flag}=");
        if let Some(i) = words.iter().position(|w| w == flag) {
            words[i + 1] = value.to_string();
        } else if let Some(i) = words.iter().position(|w| w.starts_with(&eq)) {
            words[i] = format!("{flag}={value}");
        } else {
            words.extend([flag.to_string(), value.to_string()]);
        }
    }
    words
}

/// Start the fake, apply the generated YAML with kubectl, run the Job's first pod until its
/// first reboot, `kill -9` it, run its replacement to the end.
fn scenario() -> Scenario {
    let pki = Pki::new();
    let fake = Fake::start_with(&pki, json!([cluster(&pki)]), json!({"admin": true}));
    for ds in ["cgpu-installer", "cgpu-core-installer"] {
        admin(
            &fake,
            json!({"op": "apply", "cluster": "prod", "daemonset": ds, "policy": NEW_POLICY, "image": OLD_IMAGE}),
        );
    }
    assert_eq!(
        admin(
            &fake,
            json!({"op": "settle", "cluster": "prod", "timeout": 15})
        )["ok"],
        true
    );
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: admin\n  user:\n    token: {TOKEN}\ncontexts:\n- name: prod\n  context:\n    cluster: prod\n    user: admin\ncurrent-context: prod\n",
            fake.server("prod"),
            pki.path("ca.pem")
        ),
    )
    .unwrap();
    let yaml_path = dir.path().join("rollout-job.yaml");
    let yaml = generate();
    std::fs::write(&yaml_path, &yaml).unwrap();
    // Client-side apply, as the README says; --validate=false: the fake serves no OpenAPI
    // document (the schemas are the previous test's).
    let out = Command::new(kubectl())
        .env("HOME", dir.path())
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["apply", "--validate=false", "-f"])
        .arg(&yaml_path)
        .output()
        .unwrap();
    let applied = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && applied.matches(" created\n").count() == objects(&yaml),
        "kubectl apply: {applied}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ca = pki.path("ca.pem");
    let mut s = Scenario {
        fake,
        dir,
        kubeconfig,
        from: 0,
        job: Value::Null,
        a: PodRun {
            code: None,
            out: String::new(),
        },
        b: PodRun {
            code: None,
            out: String::new(),
        },
        ca,
        _pki: pki,
    };
    let jobs = s.get(&["get", "jobs", "-n", "kube-system"]);
    let items = jobs["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{jobs}");
    s.job = items[0].clone();
    s.from = s.admin(json!({"op": "state", "cluster": "prod"}))["history"]
        .as_array()
        .unwrap()
        .len();

    let mut a = s.start_pod("cgpu-lint-rollout-7x2kq", POD_A);
    let deadline = Instant::now() + Duration::from_secs(90);
    while !s
        .history()
        .iter()
        .any(|e| e["ev"] == "reboot" && e["by"] == POD_A)
    {
        if let Some(status) = a.child.try_wait().unwrap() {
            panic!(
                "the Job's first pod ended ({status}) before any reboot:\n{}",
                a.read()
            );
        }
        if Instant::now() > deadline {
            let out = a.read();
            let _ = a.kill();
            panic!("the Job's first pod made no reboot in 90s:\n{out}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    s.a = a.kill();
    // The Job controller starts a new pod: another name, another token.
    let b = s.start_pod("cgpu-lint-rollout-m4n8t", POD_B);
    s.b = b.wait(Duration::from_secs(150));
    assert_eq!(
        s.admin(json!({"op": "settle", "cluster": "prod", "timeout": 15}))["ok"],
        true
    );
    s
}

// ---- (b) a pod killed mid-run, its replacement finishes -----------------------------------------

/// The cluster lock over the history: every change by a pod (cordon and annotation patches,
/// evictions, pod creations and deletions, reboots) is made while that pod holds the Lease, and
/// a pod takes the Lease from another only once the other's last renewal has expired.
fn lock_problems(history: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    let mut holder: Option<String> = None;
    let mut renewed: BTreeMap<String, f64> = BTreeMap::new();
    for e in history {
        let by = e["by"].as_str().unwrap_or("").to_string();
        let t = e["t"].as_f64().unwrap_or(0.0);
        match e["ev"].as_str().unwrap_or("") {
            "lease-create" | "lease-update" => {
                let held = e["holder"].as_str().is_some_and(|h| !h.is_empty());
                let now = held.then(|| by.clone());
                if let (Some(new), Some(old)) = (&now, &holder)
                    && new != old
                {
                    let last = renewed.get(old).copied().unwrap_or(0.0);
                    if t < last + LEASE_SECONDS - 0.25 {
                        out.push(format!(
                            "{new} took the lock at {t:.2} from {old}, which renewed it at {last:.2} (the Lease lasts {LEASE_SECONDS}s)"
                        ));
                    }
                }
                if held {
                    renewed.insert(by.clone(), t);
                }
                holder = now;
            }
            "lease-delete" => holder = None,
            "patch-node" | "evict" | "delete-pod" | "create-pod" | "reboot"
                if (by == POD_A || by == POD_B) && holder.as_deref() != Some(by.as_str()) =>
            {
                out.push(format!(
                    "{} {} {} by {by} while the lock is held by {holder:?}",
                    e["ev"], e["node"], e["pod"]
                ));
            }
            _ => {}
        }
    }
    out
}

/// The Job's first pod is killed (`kill -9`) right after its first reboot; the pod that replaces
/// it (another name, another token) waits for the Lease and finishes: exit 0, every node at the
/// target and uncordoned, each rebooted exactly once and every reboot through a reboot pod on
/// the node (no ECS call), no reboot pod left, one holder of the lock at a time.
#[test]
fn a_job_pod_killed_mid_run_is_replaced_and_the_rollout_converges_with_node_pods() {
    let s = scenario();
    let show = format!(
        "---- first pod (killed after its first reboot):\n{}\n---- replacement (exit {:?}):\n{}",
        s.a.out, s.b.code, s.b.out
    );
    let st = s.admin(json!({"op": "state", "cluster": "prod"}));
    let history = s.history();
    // ROLLOUT_JOB_SHOW=1: what the pods printed and what the cluster saw.
    if std::env::var_os("ROLLOUT_JOB_SHOW").is_some() {
        eprintln!("{show}");
        for e in &history {
            eprintln!("{e}");
        }
    }
    let mut problems: Vec<String> = Vec::new();
    if s.b.code != Some(0) {
        problems.push(format!("the replacement pod exited {:?}", s.b.code));
    }
    for name in NODES {
        let m = &st["nodes"][name]["module"];
        let at_target = m["version"] == "1.5.9"
            && m["policies"]
                .as_array()
                .is_some_and(|p| !p.is_empty() && p.iter().all(|x| x == NEW_POLICY));
        if !at_target {
            problems.push(format!("{name} is not at the target: module {m}"));
        }
    }
    for (name, n) in st["nodes"].as_object().unwrap() {
        if n["unschedulable"] == true || n["annotations"].get(MARK).is_some() {
            problems.push(format!(
                "{name} is left cordoned ({}, annotations {})",
                n["unschedulable"], n["annotations"]
            ));
        }
    }
    let mut rebooted: BTreeMap<String, usize> = BTreeMap::new();
    for e in history.iter().filter(|e| e["ev"] == "reboot") {
        let node = e["node"].as_str().unwrap_or("").to_string();
        if e["via"] != "node-pod" {
            problems.push(format!(
                "{node} rebooted by {} not through a reboot pod: {e}",
                e["by"]
            ));
        }
        if e["cordoned"] != true || e["drained"] != true || e["provider_id_matches"] != true {
            problems.push(format!(
                "{node} rebooted while not cordoned and drained: {e}"
            ));
        }
        if e["ds_policy"] != NEW_POLICY {
            problems.push(format!(
                "{node} rebooted while the installer runs POLICY {}",
                e["ds_policy"]
            ));
        }
        if e["by"] != POD_A && e["by"] != POD_B {
            problems.push(format!("{node} rebooted by a pod neither run created: {e}"));
        }
        if e["effective"] == true {
            *rebooted.entry(node).or_default() += 1;
        }
    }
    let want: BTreeMap<String, usize> = NODES.iter().map(|n| (n.to_string(), 1)).collect();
    if rebooted != want {
        problems.push(format!(
            "reboots per node {rebooted:?}, want one each of {NODES:?}"
        ));
    }
    if !history
        .iter()
        .any(|e| e["ev"] == "reboot" && e["by"] == POD_B)
    {
        problems.push("the replacement pod rebooted no node: it did not take over".into());
    }
    for e in history.iter().filter(|e| e["ev"] == "reboot-refused") {
        problems.push(format!("a reboot pod could not reboot its node: {e}"));
    }
    if st["reboots"].as_array().is_some_and(|r| !r.is_empty()) {
        problems.push(format!("ECS RebootInstance was called: {}", st["reboots"]));
    }
    let left = s.get(&[
        "get",
        "pods",
        "-n",
        "kube-system",
        "-l",
        "app.kubernetes.io/component=reboot",
    ]);
    for p in left["items"].as_array().unwrap() {
        problems.push(format!(
            "reboot pod {} left on {} ({})",
            p["metadata"]["name"], p["spec"]["nodeName"], p["status"]["phase"]
        ));
    }
    problems.extend(lock_problems(&history));
    let held = st["leases"]
        .as_object()
        .unwrap()
        .values()
        .filter(|l| {
            l["spec"]["holderIdentity"]
                .as_str()
                .is_some_and(|h| !h.is_empty())
        })
        .count();
    if held > 0 {
        problems.push(format!(
            "the lock is still held after the run: {}",
            st["leases"]
        ));
    }
    assert!(problems.is_empty(), "{}\n{show}", problems.join("\n"));
}

// ---- (c) the generated RBAC, request by request -------------------------------------------------

/// What the RBAC authorizer checks for one request (k8s.io/apiserver RequestInfoFactory).
#[derive(Debug, Clone)]
enum Need {
    /// A non-resource URL (discovery, /version, /openapi).
    Url(String),
    Resource {
        verb: String,
        group: String,
        resource: String,
        sub: String,
        ns: String,
        name: String,
    },
}

impl std::fmt::Display for Need {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Need::Url(u) => write!(f, "{u} (non-resource URL)"),
            Need::Resource {
                verb,
                group,
                resource,
                sub,
                ns,
                name,
            } => {
                let r = if sub.is_empty() {
                    resource.clone()
                } else {
                    format!("{resource}/{sub}")
                };
                let g = if group.is_empty() { "core" } else { group };
                let n = if name.is_empty() {
                    String::new()
                } else {
                    format!(" {name:?}")
                };
                let scope = if ns.is_empty() {
                    "cluster scope".to_string()
                } else {
                    format!("namespace {ns}")
                };
                write!(f, "{verb} {r}{n} (group {g}, {scope})")
            }
        }
    }
}

/// The attributes the authorizer checks for a logged request. A WebSocket GET on pods/exec
/// (or attach, portforward) is authorized as `get` and, since Kubernetes 1.35
/// (AuthorizePodWebsocketUpgradeCreatePermission, kubernetes/kubernetes#134577), also as
/// `create`: a role for every ACK version needs both.
fn needs(r: &Value) -> Vec<Need> {
    let path = r["path"].as_str().unwrap();
    let method = r["method"].as_str().unwrap();
    let q = |k: &str| r["query"][k].as_str().unwrap_or("").to_string();
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let url = || vec![Need::Url(path.to_string())];
    if parts.len() < 3 || !(parts[0] == "api" || parts[0] == "apis") {
        return url();
    }
    let mut rest = &parts[1..];
    let mut group = "";
    if parts[0] == "apis" {
        if rest.len() < 3 {
            return url();
        }
        group = rest[0];
        rest = &rest[1..];
    }
    rest = &rest[1..]; // the version
    let mut verb = match method {
        "POST" => "create",
        "GET" | "HEAD" => "get",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" => "delete",
        other => panic!("unexpected method {other} in {r}"),
    }
    .to_string();
    let mut ns = String::new();
    if rest[0] == "namespaces" && rest.len() > 1 {
        ns = rest[1].to_string();
        if rest.len() > 2 && !["status", "finalize"].contains(&rest[2]) {
            rest = &rest[2..];
        }
    }
    let resource = rest[0].to_string();
    let mut name = rest.get(1).map_or(String::new(), |s| s.to_string());
    let sub = rest.get(2).map_or(String::new(), |s| s.to_string());
    if name.is_empty() && verb == "get" {
        verb = if ["true", "1"].contains(&q("watch").as_str()) {
            "watch".into()
        } else {
            "list".into()
        };
        for term in q("fieldSelector").split(',') {
            let term = term.replace("==", "=");
            if let Some(n) = term.strip_prefix("metadata.name=") {
                name = n.to_string();
            }
        }
    }
    if name.is_empty() && verb == "delete" {
        verb = "deletecollection".into();
    }
    let need = |verb: &str| Need::Resource {
        verb: verb.into(),
        group: group.into(),
        resource: resource.clone(),
        sub: sub.clone(),
        ns: ns.clone(),
        name: name.clone(),
    };
    let mut out = vec![need(&verb)];
    if verb == "get"
        && resource == "pods"
        && ["exec", "attach", "portforward"].contains(&sub.as_str())
    {
        out.push(need("create"));
    }
    out
}

/// Allowed to every authenticated user (the system:discovery and system:public-info-viewer
/// ClusterRoles).
fn discovery_url(u: &str) -> bool {
    [
        "/api",
        "/apis",
        "/version",
        "/version/",
        "/openapi",
        "/healthz",
        "/livez",
        "/readyz",
    ]
    .contains(&u)
        || ["/api/", "/apis/", "/openapi/"]
            .iter()
            .any(|p| u.starts_with(p))
}

/// One rule of a generated role, and where it applies.
struct Grant {
    /// `ClusterRole/NAME` or `Role/NS/NAME`, and the rule's index in it.
    role: String,
    index: usize,
    rule: Value,
    /// None: cluster-wide (a ClusterRoleBinding); Some(ns): a RoleBinding's namespace.
    ns: Option<String>,
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str().map(String::from))
        .collect()
}

struct Rbac {
    grants: Vec<Grant>,
    /// (role, rule index, verb) of every rule of every generated role.
    pairs: BTreeSet<(String, usize, String)>,
    used: BTreeSet<(String, usize, String)>,
    unbound: Vec<String>,
}

impl Rbac {
    /// The roles the fake holds (what `kubectl apply` of the generated YAML created) and the
    /// bindings of the Job's service account `kube-system/sa`.
    fn read(s: &Scenario, sa: &str) -> Rbac {
        let items =
            |args: &[&str]| -> Vec<Value> { s.get(args)["items"].as_array().unwrap().to_vec() };
        let mut roles: BTreeMap<String, Value> = BTreeMap::new();
        for r in items(&["get", "clusterroles"]) {
            roles.insert(
                format!("ClusterRole/{}", r["metadata"]["name"].as_str().unwrap()),
                r,
            );
        }
        for r in items(&["get", "roles", "-A"]) {
            roles.insert(
                format!(
                    "Role/{}/{}",
                    r["metadata"]["namespace"].as_str().unwrap(),
                    r["metadata"]["name"].as_str().unwrap()
                ),
                r,
            );
        }
        let ours = |b: &Value| {
            b["subjects"].as_array().into_iter().flatten().any(|x| {
                x["kind"] == "ServiceAccount" && x["name"] == sa && x["namespace"] == "kube-system"
            })
        };
        let mut bound: Vec<(String, Option<String>)> = Vec::new();
        for b in items(&["get", "clusterrolebindings"]) {
            if ours(&b) {
                assert_eq!(b["roleRef"]["kind"], "ClusterRole", "{b}");
                bound.push((
                    format!("ClusterRole/{}", b["roleRef"]["name"].as_str().unwrap()),
                    None,
                ));
            }
        }
        for b in items(&["get", "rolebindings", "-A"]) {
            if ours(&b) {
                let ns = b["metadata"]["namespace"].as_str().unwrap().to_string();
                let name = b["roleRef"]["name"].as_str().unwrap();
                let role = match b["roleRef"]["kind"].as_str() {
                    Some("Role") => format!("Role/{ns}/{name}"),
                    _ => format!("ClusterRole/{name}"),
                };
                bound.push((role, Some(ns)));
            }
        }
        assert!(!bound.is_empty(), "no binding names kube-system/{sa}");
        let mut grants = Vec::new();
        let mut pairs = BTreeSet::new();
        for (id, role) in &roles {
            for (i, rule) in role["rules"].as_array().into_iter().flatten().enumerate() {
                for v in strings(&rule["verbs"]) {
                    pairs.insert((id.clone(), i, v));
                }
            }
        }
        let mut unbound = Vec::new();
        for id in roles.keys() {
            if !bound.iter().any(|(r, _)| r == id) {
                unbound.push(id.clone());
            }
        }
        for (id, ns) in &bound {
            let role = roles
                .get(id)
                .unwrap_or_else(|| panic!("a binding of {sa} names {id}, which does not exist"));
            for (i, rule) in role["rules"].as_array().into_iter().flatten().enumerate() {
                grants.push(Grant {
                    role: id.clone(),
                    index: i,
                    rule: rule.clone(),
                    ns: ns.clone(),
                });
            }
        }
        Rbac {
            grants,
            pairs,
            used: BTreeSet::new(),
            unbound,
        }
    }

    /// Whether some rule allows `need` (marking every rule and verb that does).
    fn allow(&mut self, need: &Need) -> bool {
        let mut hits: Vec<(String, usize, String)> = Vec::new();
        for g in &self.grants {
            let verbs = strings(&g.rule["verbs"]);
            let matched_verb = |verb: &str| {
                verbs
                    .iter()
                    .find(|v| v.as_str() == verb || v.as_str() == "*")
                    .cloned()
            };
            match need {
                Need::Url(u) => {
                    if g.ns.is_some() {
                        continue;
                    }
                    let urls = strings(&g.rule["nonResourceURLs"]);
                    let hit = urls.iter().any(|p| {
                        p == u || p == "*" || p.strip_suffix('*').is_some_and(|x| u.starts_with(x))
                    });
                    if let (true, Some(v)) = (hit, matched_verb("get")) {
                        hits.push((g.role.clone(), g.index, v));
                    }
                }
                Need::Resource {
                    verb,
                    group,
                    resource,
                    sub,
                    ns,
                    name,
                } => {
                    if g.ns.as_ref().is_some_and(|n| n != ns) {
                        continue;
                    }
                    let Some(v) = matched_verb(verb) else {
                        continue;
                    };
                    let groups = strings(&g.rule["apiGroups"]);
                    if !groups.iter().any(|x| x == group || x == "*") {
                        continue;
                    }
                    let full = if sub.is_empty() {
                        resource.clone()
                    } else {
                        format!("{resource}/{sub}")
                    };
                    let resources = strings(&g.rule["resources"]);
                    if !resources.iter().any(|x| {
                        *x == full || x == "*" || (!sub.is_empty() && *x == format!("*/{sub}"))
                    }) {
                        continue;
                    }
                    let names = strings(&g.rule["resourceNames"]);
                    if !names.is_empty() && !names.contains(name) {
                        continue;
                    }
                    hits.push((g.role.clone(), g.index, v));
                }
            }
        }
        let ok = !hits.is_empty();
        self.used.extend(hits);
        ok || matches!(need, Need::Url(u) if discovery_url(u))
    }

    fn unused(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .unbound
            .iter()
            .map(|r| format!("{r} is not bound to the Job's service account"))
            .collect();
        for (role, i, verb) in self.pairs.difference(&self.used) {
            let rule = self
                .grants
                .iter()
                .find(|g| &g.role == role && g.index == *i)
                .map_or(Value::Null, |g| g.rule.clone());
            out.push(format!("{role} rule #{i} {rule}: `{verb}` never used"));
        }
        out
    }
}

/// Every request the Job's two pods made (by their service-account tokens; the test's own
/// `kubectl apply` aside) is allowed by the generated roles as the RBAC authorizer maps it, with
/// resourceNames honoured and a Role only in its namespace; every verb of every generated rule
/// was needed by some request.
#[test]
fn every_api_call_is_allowed_by_the_generated_rbac_and_no_rule_goes_unused() {
    let s = scenario();
    assert_eq!(
        s.b.code,
        Some(0),
        "the replacement pod failed:\n{}\n---- first pod:\n{}",
        s.b.out,
        s.a.out
    );
    let sa = s.job["spec"]["template"]["spec"]["serviceAccountName"]
        .as_str()
        .unwrap_or_else(|| panic!("the Job names no service account: {}", s.job))
        .to_string();
    assert_ne!(sa, "default", "the Job runs as the default service account");
    s.get(&["get", "serviceaccount", "-n", "kube-system", &sa]);
    let mut rbac = Rbac::read(&s, &sa);
    let requests: Vec<Value> = s
        .fake
        .requests()
        .into_iter()
        .filter(|r| r["token"] == POD_A || r["token"] == POD_B)
        .collect();
    for token in [POD_A, POD_B] {
        assert!(
            requests.iter().any(|r| r["token"] == token),
            "no request with the token of {token}: the pod did not use its service account"
        );
    }
    let mut denied: BTreeSet<String> = BTreeSet::new();
    for r in &requests {
        assert_eq!(r["authenticated"], true, "{r}");
        for need in needs(r) {
            if !rbac.allow(&need) {
                let query: Vec<String> = r["query"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .filter(|(k, _)| k.as_str() != "command")
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                    .collect();
                denied.insert(format!(
                    "{} {}?{} needs {need}",
                    r["method"].as_str().unwrap(),
                    r["path"].as_str().unwrap(),
                    query.join("&")
                ));
            }
        }
    }
    let unused = rbac.unused();
    assert!(
        denied.is_empty() && unused.is_empty(),
        "denied by the generated RBAC:\n{}\nunused:\n{}",
        denied.into_iter().collect::<Vec<_>>().join("\n"),
        unused.join("\n")
    );
}
