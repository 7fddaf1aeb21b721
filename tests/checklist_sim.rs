//! The script `checklist --format shell` prints, run against a stateful cluster simulator
//! (`tests/sim/`: stub `kubectl` and `aliyun` backed by a JSON state file). Each test describes
//! one cluster, generates the nodes list and the live DaemonSet that `kubectl get` would give
//! for it, runs the checklist, runs the script, and checks the cluster's final state: every
//! GPU-sharing node at the target, no converted node restarted, a re-run after a stop finishing
//! the job, cordons that were there before left alone, and stops naming node and step.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};

use serde_json::{Value, json};

const OLD: &str = "1";
const NEW: &str = "2";
const VERSION: &str = "1.5.10";
const IMAGE: &str =
    "registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-3c9d1e7-aliyun";

#[derive(Clone)]
struct SimNode {
    name: &'static str,
    instance: &'static str,
    schedule: &'static str,
    cordoned: bool,
    /// The module: None = not loaded; Some(policy) on every GPU.
    module: Option<&'static str>,
    gpus: usize,
    gpu_mem: u32,
    /// Reboots the cloud accepts and never performs.
    reboot_failures: u32,
    /// Execs that fail before one works.
    exec_failures: u32,
    /// Workload pods requesting aliyun.com/gpu-mem.
    workloads: Vec<u32>,
}

fn node(name: &'static str, instance: &'static str, module: Option<&'static str>) -> SimNode {
    SimNode {
        name,
        instance,
        schedule: "cgpu",
        cordoned: false,
        module,
        gpus: 2,
        gpu_mem: 32,
        reboot_failures: 0,
        exec_failures: 0,
        workloads: vec![4],
    }
}

struct Cluster {
    nodes: Vec<SimNode>,
    strategy: &'static str,
    /// POLICY the installer pods carry (OnDelete: the old one until deleted).
    pod_policy: &'static str,
    /// PodDisruptionBudgets with no disruption allowed, covering pods on these nodes.
    pdb_blocks: Vec<&'static str>,
    core_policy: &'static str,
    ecs_forbidden: bool,
    /// A cgpu-installer pod that is not Ready on a Ready node.
    unhealthy: bool,
}

fn cluster(nodes: Vec<SimNode>) -> Cluster {
    Cluster {
        nodes,
        strategy: "RollingUpdate",
        pod_policy: NEW,
        pdb_blocks: Vec::new(),
        core_policy: NEW,
        ecs_forbidden: false,
        unhealthy: false,
    }
}

/// The usual cluster: a canary and two more cgpu nodes at the old policy, one node already
/// converted, one where the module is not loaded yet, and a core_mem node at the target.
fn usual() -> Cluster {
    cluster(vec![
        node("cn-hangzhou.10.0.0.1", "i-bp1000000000000001", Some(OLD)),
        node("cn-hangzhou.10.0.0.2", "i-bp1000000000000002", Some(NEW)),
        node("cn-hangzhou.10.0.0.3", "i-bp1000000000000003", None),
        node("cn-hangzhou.10.0.0.4", "i-bp1000000000000004", Some(OLD)),
        node("cn-hangzhou.10.0.0.5", "i-bp1000000000000005", Some(OLD)),
        SimNode {
            schedule: "core_mem",
            ..node("cn-hangzhou.10.0.0.9", "i-bp1000000000000009", Some(NEW))
        },
    ])
}

const N1: &str = "cn-hangzhou.10.0.0.1";
const N2: &str = "cn-hangzhou.10.0.0.2";
const N3: &str = "cn-hangzhou.10.0.0.3";
const N4: &str = "cn-hangzhou.10.0.0.4";
const N5: &str = "cn-hangzhou.10.0.0.5";
const N9: &str = "cn-hangzhou.10.0.0.9";

impl Cluster {
    /// `kubectl get nodes -o yaml` of this cluster.
    fn nodes_yaml(&self) -> String {
        let mut y = String::from("apiVersion: v1\nkind: List\nitems:\n");
        for n in &self.nodes {
            y.push_str(&format!(
                "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: {}\n    uid: uid-{}\n    labels:\n      ack.node.gpu.schedule: {}\n      topology.kubernetes.io/region: cn-hangzhou\n  spec:\n    providerID: cn-hangzhou.{}\n{}  status:\n    conditions:\n    - type: Ready\n      status: \"True\"\n",
                n.name,
                n.name,
                n.schedule,
                n.instance,
                if n.cordoned {
                    "    unschedulable: true\n"
                } else {
                    ""
                }
            ));
        }
        y
    }

    /// `kubectl -n kube-system get ds cgpu-installer -o yaml` before the change.
    fn live_ds_yaml(&self) -> String {
        let cgpu = self.nodes.iter().filter(|n| n.schedule == "cgpu").count();
        format!(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: cgpu-installer\n  namespace: kube-system\nspec:\n  selector:\n    matchLabels:\n      name: cgpu-installer\n  updateStrategy:\n    type: {}\n  template:\n    metadata:\n      labels:\n        name: cgpu-installer\n    spec:\n      priorityClassName: system-node-critical\n      nodeSelector:\n        ack.node.gpu.schedule: cgpu\n      containers:\n      - name: cgpu-installer\n        image: {IMAGE}\n        env:\n        - name: POLICY\n          value: \"{OLD}\"\nstatus:\n  desiredNumberScheduled: {cgpu}\n  numberReady: {cgpu}\n",
            self.strategy
        )
    }

    /// The simulator's state: the cluster after `helm upgrade` set POLICY to the target.
    fn state(&self) -> Value {
        let mut nodes = serde_json::Map::new();
        let mut pods = Vec::new();
        let (mut cgpu_nodes, mut core_nodes) = (Vec::new(), Vec::new());
        for (i, n) in self.nodes.iter().enumerate() {
            let module = match n.module {
                Some(p) => json!({"loaded": true, "version": VERSION, "policies": vec![p; n.gpus]}),
                None => json!({"loaded": false}),
            };
            nodes.insert(
                n.name.into(),
                json!({
                    "bootID": format!("boot-{}-0", n.name),
                    "ready": "True",
                    "unschedulable": n.cordoned,
                    "annotations": {},
                    "labels": {"ack.node.gpu.schedule": n.schedule},
                    "instance": n.instance,
                    "gpus": n.gpus,
                    "gpu_mem": n.gpu_mem,
                    "module": module,
                    "reboot_failures": n.reboot_failures,
                    "exec_failures": n.exec_failures,
                }),
            );
            let ds = if n.schedule == "core_mem" {
                core_nodes.push(n.name);
                "cgpu-core-installer"
            } else {
                cgpu_nodes.push(n.name);
                "cgpu-installer"
            };
            let policy = if ds == "cgpu-core-installer" {
                self.core_policy
            } else {
                self.pod_policy
            };
            pods.push(json!({
                "name": format!("{ds}-n{i}"),
                "ns": "kube-system",
                "node": n.name,
                "labels": {"name": ds},
                "container": ds,
                "owner": "DaemonSet",
                "policy": policy,
                "version": VERSION,
                "image": IMAGE,
                "ready": !(self.unhealthy && i == 1),
            }));
            for (j, mem) in n.workloads.iter().enumerate() {
                pods.push(json!({
                    "name": format!("train-{i}-{j}"),
                    "ns": "default",
                    "node": n.name,
                    "labels": {"app": "train"},
                    "container": "train",
                    "owner": "ReplicaSet",
                    "gpu_mem": mem,
                }));
            }
        }
        json!({
            "tick": 0,
            "nodes": nodes,
            "pods": pods,
            "daemonsets": {
                "cgpu-installer": {"policy": NEW, "image": IMAGE, "version": VERSION,
                                    "strategy": self.strategy, "nodes": cgpu_nodes},
                "cgpu-core-installer": {"policy": self.core_policy, "image": IMAGE,
                                         "version": VERSION, "strategy": "RollingUpdate",
                                         "nodes": core_nodes},
            },
            "pdbs": self.pdb_blocks.iter().map(|n| json!({
                "ns": "default", "name": "train-pdb", "disruptionsAllowed": 0, "blocks": [n]
            })).collect::<Vec<_>>(),
            "ecs_forbidden": self.ecs_forbidden,
        })
    }
}

struct Sim {
    dir: tempfile::TempDir,
    script: PathBuf,
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

fn sim_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sim")
}

/// The interpreter `python3` on PATH resolves to, found once per run and handed to the stubs as
/// $SIM_PYTHON: the stubs start Python once per kubectl or aliyun call, and a version manager's `python3` shim (pyenv's is a bash script that runs
/// `pyenv exec`) costs about 100 ms per start where the interpreter itself takes 10.
fn sim_python() -> &'static str {
    static PYTHON: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = Process::new("python3")
            .args(["-S", "-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 runs");
        assert!(out.status.success(), "python3 -c failed");
        let exe = String::from_utf8(out.stdout).expect("a UTF-8 path");
        let exe = exe.trim();
        // sys.executable may be empty when Python cannot tell; the stubs then use PATH's.
        if exe.is_empty() { "python3" } else { exe }.to_string()
    })
}

impl Sim {
    /// Generate the checklist script for `c` (extra checklist flags in `args`) and the
    /// simulator's state.
    fn new(c: &Cluster, args: &[&str]) -> Sim {
        Sim::with_nodes(c, &c.nodes_yaml(), args)
    }

    /// As [`Sim::new`], planned from this `kubectl get nodes -o yaml`.
    fn with_nodes(c: &Cluster, nodes_yaml: &str, args: &[&str]) -> Sim {
        let dir = tempfile::tempdir().unwrap();
        let nodes = dir.path().join("nodes.yaml");
        let live = dir.path().join("live.yaml");
        std::fs::write(&nodes, nodes_yaml).unwrap();
        std::fs::write(&live, c.live_ds_yaml()).unwrap();
        let out = bin()
            .args(["checklist", "--current"])
            .arg(&live)
            .args(["--policy", NEW, "--nodes"])
            .arg(&nodes)
            .args(["--format", "shell", "--context", "ack-prod"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "checklist failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let script = dir.path().join("checklist.sh");
        std::fs::write(&script, &out.stdout).unwrap();
        let sim = Sim { dir, script };
        sim.set_state(&c.state());
        sim
    }

    fn state_path(&self) -> PathBuf {
        self.dir.path().join("state.json")
    }

    fn set_state(&self, v: &Value) {
        std::fs::write(self.state_path(), serde_json::to_string_pretty(v).unwrap()).unwrap();
    }

    fn state(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.state_path()).unwrap()).unwrap()
    }

    fn log(&self) -> Vec<Vec<String>> {
        std::fs::read_to_string(self.dir.path().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| l.split('\x1f').map(str::to_string).collect())
            .collect()
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Ran {
        let path = format!(
            "{}:{}",
            sim_dir().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Process::new("bash");
        cmd.arg(&self.script)
            .args(args)
            .env("PATH", path)
            .env("SIM_STATE", self.state_path())
            .env("SIM_PYTHON", sim_python())
            .env("SIM_LOG", self.dir.path().join("calls.log"))
            .env("CGPU_CHECKLIST_POLL", "0")
            .env("CGPU_CHECKLIST_REBOOT_TIMEOUT", "15")
            .env("CGPU_CHECKLIST_POD_TIMEOUT", "20")
            .env("CGPU_CHECKLIST_POLICY_TIMEOUT", "20")
            .env("CGPU_CHECKLIST_HEALTH_TIMEOUT", "3")
            .stdin(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn history(&self) -> Vec<String> {
        self.state()["history"]
            .as_array()
            .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    }

    fn reboots(&self) -> Vec<String> {
        self.history()
            .iter()
            .filter_map(|h| h.strip_prefix("reboot ").map(str::to_string))
            .collect()
    }

    fn node(&self, name: &str) -> Value {
        self.state()["nodes"][name].clone()
    }

    fn policies(&self, name: &str) -> Vec<String> {
        let n = self.node(name);
        if n["module"]["loaded"] != true {
            return Vec::new();
        }
        n["module"]["policies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_string())
            .collect()
    }

    fn cordoned(&self, name: &str) -> bool {
        self.node(name)["unschedulable"] == true
    }

    fn marked(&self, name: &str) -> bool {
        self.node(name)["annotations"]
            .get("cgpu-lint/cordoned")
            .is_some()
    }

    /// Every GPU of every GPU-sharing node shows the target policy.
    fn assert_all_converted(&self, c: &Cluster) {
        for n in &c.nodes {
            let p = self.policies(n.name);
            assert!(
                !p.is_empty() && p.iter().all(|x| x == NEW),
                "{}: policies {p:?}",
                n.name
            );
        }
    }
}

/// The run stopped non-zero at this node and step.
fn stopped_at(r: &Ran, node: &str, step: &str) {
    assert_ne!(r.code, 0);
    assert!(
        r.stderr
            .contains(&format!("STOPPED at node {node}, step {step}")),
        "{}",
        r.stderr
    );
}

fn ok(r: &Ran) {
    assert_eq!(
        r.code, 0,
        "script failed\nstdout:\n{}\nstderr:\n{}",
        r.stdout, r.stderr
    );
}

/// The calls that change nodes or pods (the cluster lock's Lease is not one: a run that stops
/// before any step still takes and releases it).
fn mutating(log: &[Vec<String>]) -> Vec<String> {
    log.iter()
        .filter(|c| !c.iter().any(|a| a == "lease"))
        .filter(|c| {
            c[0] == "aliyun" && !c.contains(&"--DryRun".to_string())
                || c.iter().any(|a| {
                    ["cordon", "drain", "uncordon", "annotate", "delete"].contains(&a.as_str())
                })
        })
        .map(|c| c.join(" "))
        .collect()
}

#[test]
fn rolling_update_converts_every_node_and_restarts_only_those_that_differ() {
    let c = usual();
    let sim = Sim::new(&c, &[]);
    let r = sim.run(&["--yes"], &[]);
    ok(&r);
    assert!(r.stdout.contains("done."), "{}", r.stdout);
    sim.assert_all_converted(&c);
    // The canary first, then the others that differ; never .2 (already at 2) nor .3 (module
    // not loaded: the installer loads it with the new policy) nor the core_mem node.
    assert_eq!(sim.reboots(), [N1, N4, N5]);
    let drained: Vec<String> = sim
        .history()
        .iter()
        .filter_map(|h| h.strip_prefix("drain ").map(str::to_string))
        .collect();
    assert_eq!(drained, [N1, N4, N5]);
    for n in &c.nodes {
        assert!(!sim.cordoned(n.name), "{} left cordoned", n.name);
        assert!(!sim.marked(n.name), "{} keeps the annotation", n.name);
    }
    // Each restarted node was waited for by its boot id before anything read its policy.
    let log = sim.log();
    let joined: Vec<String> = log.iter().map(|c| c.join(" ")).collect();
    let reboot = joined
        .iter()
        .position(|c| c.starts_with("aliyun ecs RebootInstance --InstanceId i-bp1000000000000001"))
        .unwrap();
    let boot_reads: Vec<usize> = joined
        .iter()
        .enumerate()
        .filter(|(_, c)| c.contains(N1) && c.contains("{.status.nodeInfo.bootID}"))
        .map(|(i, _)| i)
        .collect();
    assert!(
        boot_reads.iter().any(|&i| i > reboot),
        "no boot id poll after the reboot"
    );
    let ready_wait = joined
        .iter()
        .position(|c| c.contains(&format!("wait --for=condition=Ready node/{N1}")))
        .unwrap();
    assert!(ready_wait > reboot);
    assert!(
        !joined.iter().any(|c| c.contains("rollout")),
        "kubectl rollout status is never called"
    );
}

#[test]
fn a_second_run_touches_nothing() {
    let c = usual();
    let sim = Sim::new(&c, &[]);
    ok(&sim.run(&["--yes"], &[]));
    let before = sim.reboots().len();
    let log_before = sim.log().len();
    let r = sim.run(&["--yes"], &[]);
    ok(&r);
    assert_eq!(sim.reboots().len(), before);
    let again = &sim.log()[log_before..];
    assert!(
        mutating(again)
            .iter()
            .all(|c| !c.contains("RebootInstance")),
        "{:#?}",
        mutating(again)
    );
    assert!(mutating(again).is_empty(), "{:#?}", mutating(again));
}

#[test]
fn on_delete_deletes_the_installer_pod_after_the_drain_and_before_the_reboot() {
    let mut c = usual();
    c.strategy = "OnDelete";
    c.pod_policy = OLD;
    let sim = Sim::new(&c, &[]);
    let r = sim.run(&["--yes"], &[]);
    ok(&r);
    sim.assert_all_converted(&c);
    assert_eq!(sim.reboots(), [N1, N4, N5]);
    let h = sim.history();
    for n in [N1, N4, N5] {
        let drain = h.iter().position(|x| *x == format!("drain {n}")).unwrap();
        let delete = h
            .iter()
            .position(|x| x.starts_with(&format!("delete-pod {n} ")))
            .unwrap_or_else(|| panic!("{n}: installer pod never deleted: {h:#?}"));
        let reboot = h.iter().position(|x| *x == format!("reboot {n}")).unwrap();
        assert!(drain < delete && delete < reboot, "{n}: {h:#?}");
    }
    // The node already at the target keeps its pod (and is not restarted).
    assert!(
        !h.iter()
            .any(|x| x.starts_with(&format!("delete-pod {N2} ")))
    );
    let log: Vec<String> = sim.log().iter().map(|c| c.join(" ")).collect();
    assert!(!log.iter().any(|c| c.contains("rollout")));
}

/// Without the pod deletion an OnDelete node comes back with the old pod and the old policy:
/// the simulator reproduces that, so the test above is not passing by accident.
#[test]
fn simulator_on_delete_reboot_without_deleting_the_pod_keeps_the_old_policy() {
    let mut c = usual();
    c.strategy = "OnDelete";
    c.pod_policy = OLD;
    let sim = Sim::new(&c, &[]);
    let path = format!(
        "{}:{}",
        sim_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let call = |tool: &str, args: &[&str]| {
        let pinned = ["--context", "ack-prod"];
        Process::new(sim_dir().join(tool))
            .args(if tool == "kubectl" { &pinned[..] } else { &[] })
            .args(args)
            .env("PATH", &path)
            .env("SIM_STATE", sim.state_path())
            .env("SIM_PYTHON", sim_python())
            .output()
            .unwrap()
    };
    call(
        "aliyun",
        &[
            "ecs",
            "RebootInstance",
            "--InstanceId",
            "i-bp1000000000000001",
        ],
    );
    for _ in 0..5 {
        call(
            "kubectl",
            &[
                "get",
                "node",
                N1,
                "-o",
                "jsonpath={.status.nodeInfo.bootID}",
            ],
        );
    }
    assert_ne!(sim.node(N1)["bootID"], "boot-cn-hangzhou.10.0.0.1-0");
    assert_eq!(sim.policies(N1), [OLD, OLD]);
    let out = call(
        "kubectl",
        &[
            "-n",
            "kube-system",
            "rollout",
            "status",
            "ds/cgpu-installer",
        ],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("rollout status is only available for RollingUpdate strategy type")
    );
}

#[test]
fn a_pdb_that_blocks_the_drain_stops_at_that_node_and_a_rerun_finishes() {
    let mut c = usual();
    c.pdb_blocks = vec![N4];
    let sim = Sim::new(&c, &[]);
    let r = sim.run(&["--yes"], &[]);
    stopped_at(&r, N4, "drain");
    assert!(r.stderr.contains("--resume"), "{}", r.stderr);
    assert!(
        r.stdout
            .contains("warning: PodDisruptionBudget default/train-pdb")
    );
    // The canary is done; .4 is cordoned by this run and not restarted; .5 untouched.
    assert_eq!(sim.reboots(), [N1]);
    assert!(sim.cordoned(N4) && sim.marked(N4));
    assert_eq!(sim.policies(N5), [OLD, OLD]);
    // The owner settles the budget; the same script, run again, finishes the job.
    let mut st = sim.state();
    st["pdbs"] = json!([]);
    sim.set_state(&st);
    let r = sim.run(&["--yes", "--resume"], &[]);
    ok(&r);
    sim.assert_all_converted(&c);
    assert_eq!(sim.reboots(), [N1, N4, N5], "no node restarted twice");
    assert!(!sim.cordoned(N4) && !sim.marked(N4));
}

#[test]
fn a_reboot_that_never_happens_is_caught_by_the_boot_id_and_a_rerun_finishes() {
    let mut c = usual();
    c.nodes[3].reboot_failures = 1; // .4
    let sim = Sim::new(&c, &[]);
    let r = sim.run(&["--yes"], &[]);
    stopped_at(&r, N4, "wait-boot-id");
    assert!(
        r.stderr.contains("the reboot did not happen"),
        "{}",
        r.stderr
    );
    // Nothing after the failed wait ran: .4 is still cordoned, at the old policy.
    assert!(sim.cordoned(N4));
    assert_eq!(sim.policies(N4), [OLD, OLD]);
    let r = sim.run(&["--yes"], &[]);
    ok(&r);
    sim.assert_all_converted(&c);
    // .4 was asked twice (the first reboot never happened); the canary only once.
    assert_eq!(sim.reboots(), [N1, N4, N4, N5]);
    assert!(!sim.cordoned(N4));
}

#[test]
fn an_exec_that_fails_stops_the_node_before_anything_changes_fail_closed() {
    let mut c = usual();
    c.nodes[0].exec_failures = 1; // the canary
    let sim = Sim::new(&c, &[]);
    let r = sim.run(&["--yes"], &[]);
    stopped_at(&r, N1, "read-state");
    assert!(
        r.stderr.contains("cannot read the cGPU state"),
        "{}",
        r.stderr
    );
    assert!(
        mutating(&sim.log()).is_empty(),
        "{:#?}",
        mutating(&sim.log())
    );
    assert!(sim.reboots().is_empty());
    let r = sim.run(&["--yes"], &[]);
    ok(&r);
    sim.assert_all_converted(&c);
    assert_eq!(sim.reboots(), [N1, N4, N5]);
}

#[test]
fn pre_cordoned_nodes_stay_cordoned_and_block_done_unless_included() {
    let mut c = usual();
    c.nodes[4].cordoned = true; // .5, at the old policy
    let sim = Sim::new(&c, &[]);
    let r = sim.run(&["--yes"], &[]);
    assert_ne!(r.code, 0, "not done while .5 runs the old policy");
    assert!(r.stderr.contains("Not done"), "{}", r.stderr);
    assert!(r.stderr.contains(N5), "{}", r.stderr);
    assert!(!r.stdout.contains("done."));
    assert_eq!(sim.reboots(), [N1, N4]);
    assert!(sim.cordoned(N5) && !sim.marked(N5));
    // Issue 19: the run did all it may; running it again does not help, so its last message
    // names the real next step, not "Resume".
    let last = r.stderr.trim_end().lines().last().unwrap();
    assert!(last.contains("--include-cordoned"), "{}", r.stderr);
    assert!(!r.stderr.contains("Resume:"), "{}", r.stderr);

    // --include-cordoned restarts it and leaves it cordoned.
    let sim = Sim::new(&c, &["--include-cordoned"]);
    let r = sim.run(&["--yes"], &[]);
    ok(&r);
    sim.assert_all_converted(&c);
    assert_eq!(sim.reboots(), [N1, N4, N5]);
    assert!(sim.cordoned(N5), "cordoned before the run: stays cordoned");
    assert!(!sim.marked(N5));
    assert!(!sim.cordoned(N1) && !sim.cordoned(N4));
}

#[test]
fn a_core_mem_node_at_another_policy_blocks_done() {
    let mut c = usual();
    c.core_policy = OLD;
    c.nodes[5].module = Some(OLD);
    let sim = Sim::new(&c, &[]);
    let r = sim.run(&["--yes"], &[]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("Not done"), "{}", r.stderr);
    assert!(r.stderr.contains(N9), "{}", r.stderr);
    assert!(r.stderr.contains("step done-check"), "{}", r.stderr);
    // The cgpu nodes are converted all the same.
    for n in [N1, N2, N3, N4, N5] {
        assert_eq!(sim.policies(n), [NEW, NEW], "{n}");
    }
}

#[test]
fn batches_of_max_unavailable_nodes_after_the_canary() {
    let c = usual();
    let sim = Sim::new(&c, &["--max-unavailable", "2"]);
    let r = sim.run(&["--yes"], &[]);
    ok(&r);
    sim.assert_all_converted(&c);
    // .4 and .5 go down together: both reboots come before either comes back.
    let h = sim.history();
    let r4 = h.iter().position(|x| *x == format!("reboot {N4}")).unwrap();
    let r5 = h.iter().position(|x| *x == format!("reboot {N5}")).unwrap();
    let d5 = h.iter().position(|x| *x == format!("drain {N5}")).unwrap();
    assert!(d5 < r5 && r4 < d5, "{h:#?}");
}

#[test]
fn not_enough_gpu_mem_for_the_evicted_pods_stops_before_the_drain() {
    let mut c = usual();
    for n in &mut c.nodes {
        n.gpu_mem = 8;
        n.workloads = vec![8];
    }
    let sim = Sim::new(&c, &[]);
    let r = sim.run(&["--yes"], &[]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("step capacity"), "{}", r.stderr);
    assert!(r.stderr.contains("would stay Pending"), "{}", r.stderr);
    assert!(sim.reboots().is_empty());
    assert!(!sim.history().iter().any(|h| h.starts_with("drain")));
}

#[test]
fn an_unhealthy_installer_or_a_missing_ecs_permission_stops_before_any_step() {
    let mut c = usual();
    c.unhealthy = true;
    let sim = Sim::new(&c, &[]);
    let r = sim.run(&["--yes"], &[]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("step installer-health"), "{}", r.stderr);
    assert!(r.stderr.contains("is not Ready"), "{}", r.stderr);
    assert!(mutating(&sim.log()).is_empty());

    let mut c = usual();
    c.ecs_forbidden = true;
    let sim = Sim::new(&c, &[]);
    let r = sim.run(&["--yes"], &[]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("step ecs-permission"), "{}", r.stderr);
    assert!(r.stderr.contains("Forbidden.RAM"), "{}", r.stderr);
    assert!(mutating(&sim.log()).is_empty());
}

#[test]
fn the_installer_still_at_the_old_policy_stops_before_any_step() {
    let c = usual();
    let sim = Sim::new(&c, &[]);
    let mut st = sim.state();
    st["daemonsets"]["cgpu-installer"]["policy"] = json!(OLD);
    sim.set_state(&st);
    let r = sim.run(&["--yes"], &[]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("step installer-policy"), "{}", r.stderr);
    assert!(r.stderr.contains("apply the desired values first"));
    assert!(mutating(&sim.log()).is_empty());
}

/// A plan with a finding that makes it unsafe (cGPU 0.8.13 cannot take a policy) is refused by
/// the checklist (exit 1, `blocking`) and its script stops before any step.
#[test]
fn a_blocked_plan_stops_before_any_step() {
    let c = usual();
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live.yaml");
    let nodes = dir.path().join("nodes.yaml");
    std::fs::write(
        &live,
        c.live_ds_yaml()
            .replace("v1.5.10-3c9d1e7-aliyun", "v0.8.13-1a2b3c4-aliyun"),
    )
    .unwrap();
    std::fs::write(&nodes, c.nodes_yaml()).unwrap();
    let run = |format: &str| {
        bin()
            .args(["checklist", "--current"])
            .arg(&live)
            .args(["--policy", "2", "--nodes"])
            .arg(&nodes)
            .args(["--format", format, "--context", "ack-prod"])
            .output()
            .unwrap()
    };
    let out = run("json");
    assert_eq!(out.status.code(), Some(1));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["blocking"][0]["rule"], "tag-too-old", "{j:#}");
    let out = run("shell");
    assert_eq!(out.status.code(), Some(1));
    let script = dir.path().join("s.sh");
    std::fs::write(&script, &out.stdout).unwrap();
    let sim = Sim {
        dir,
        script: script.clone(),
    };
    sim.set_state(&c.state());
    let r = sim.run(&["--yes"], &[]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("step blocking-findings"), "{}", r.stderr);
    assert!(r.stderr.contains("tag-too-old"), "{}", r.stderr);
    assert!(
        sim.log().is_empty(),
        "no kubectl call at all: {:#?}",
        sim.log()
    );
}

/// Issue 19: the script is pinned to its cluster. Planned from files it records the kube-system
/// UID at its first run; a later run against another cluster behind the same context changes
/// nothing.
#[test]
fn another_cluster_behind_the_context_changes_nothing() {
    let c = usual();
    let sim = Sim::new(&c, &[]);
    let mut st = sim.state();
    st["cluster_uid"] = json!("uid-kube-system-prod");
    // Only the canary's state matters here: make every node converted but the first.
    sim.set_state(&st);
    let r = sim.run(&["--yes"], &[]);
    ok(&r);
    let log_before = sim.log().len();
    let reboots = sim.reboots().len();
    let mut st = sim.state();
    st["cluster_uid"] = json!("uid-kube-system-staging");
    for n in [N1, N4] {
        st["nodes"][n]["module"]["policies"] = json!([OLD, OLD]);
    }
    sim.set_state(&st);
    let r = sim.run(&["--yes"], &[]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("step cluster-identity"), "{}", r.stderr);
    assert!(r.stderr.contains("is another cluster"), "{}", r.stderr);
    assert!(r.stderr.contains("Nothing was changed"), "{}", r.stderr);
    assert!(mutating(&sim.log()[log_before..]).is_empty());
    assert_eq!(sim.reboots().len(), reboots);
    // Every kubectl call named the context (the stub refuses a call without one).
    assert!(
        sim.log()
            .iter()
            .filter(|c| c[0] == "kubectl")
            .all(|c| c[1] == "--context" && c[2] == "ack-prod")
    );
}

/// Issue 32: a script planned from files whose first run met another cluster behind the
/// context (its own kube-system UID, other node UIDs) records nothing, says the context may
/// point elsewhere, and does not lock the right cluster out: once the context is right, the
/// run records the identity at its first matching node and converges. The stop ends with the
/// one next step, as the script was run (`bash PATH`).
#[test]
fn a_first_run_on_the_wrong_cluster_records_nothing() {
    let c = usual();
    let sim = Sim::new(&c, &[]);
    let right = sim.state();
    let mut st = right.clone();
    st["cluster_uid"] = json!("uid-kube-system-staging");
    for n in [N1, N2, N3, N4, N5, N9] {
        st["nodes"][n]["uid"] = json!(format!("staging-uid-{n}"));
    }
    sim.set_state(&st);
    let identity = PathBuf::from(format!("{}.cluster-uid", sim.script.display()));
    let r = sim.run(&["--yes"], &[]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("may point at another cluster"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("Nothing was changed"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("then run: bash {} --yes", sim.script.display())),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("--resume"), "{}", r.stderr);
    assert!(
        !identity.exists(),
        "the wrong cluster's identity was recorded"
    );
    assert!(mutating(&sim.log()).is_empty());
    sim.set_state(&right);
    let r = sim.run(&["--yes"], &[]);
    ok(&r);
    assert_eq!(
        std::fs::read_to_string(&identity).unwrap().trim(),
        "uid-kube-system-prod"
    );
    sim.assert_all_converted(&c);
}

/// Issue 32: every stop ends with the one next step that fits: declining says so (no
/// "--resume"), a PodDisruptionBudget that blocks the drain says to resume.
#[test]
fn each_stop_names_the_next_step_that_fits() {
    let c = usual();
    let sim = Sim::new(&c, &[]);
    let r = sim.run(&[], &[]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains(&format!(
            "Next: you declined; nothing in that batch was changed. Run it again when ready: bash {}",
            sim.script.display()
        )),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("Resume:"), "{}", r.stderr);
}

/// Issue 19: a node replaced since the plan (same name, new UID and instance) is not touched.
#[test]
fn a_node_replaced_since_the_plan_is_not_touched() {
    let c = usual();
    let sim = Sim::new(&c, &[]);
    let mut st = sim.state();
    st["nodes"][N1]["uid"] = json!("uid-new-node");
    st["nodes"][N1]["provider"] = json!("cn-hangzhou.i-bp1999999999999999");
    sim.set_state(&st);
    let r = sim.run(&["--yes"], &[]);
    stopped_at(&r, N1, "read-state");
    assert!(r.stderr.contains("the node was replaced"), "{}", r.stderr);
    assert!(
        mutating(&sim.log()).is_empty(),
        "{:#?}",
        mutating(&sim.log())
    );
}

/// Issue 19: one confirmation per batch, before its first cordon; declining changes nothing.
#[test]
fn declining_the_first_batch_changes_nothing() {
    let c = usual();
    let sim = Sim::new(&c, &[]);
    let r = sim.run(&[], &[]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("step confirm"), "{}", r.stderr);
    assert!(r.stderr.contains("declined"), "{}", r.stderr);
    assert!(r.stderr.contains("Nothing was changed"), "{}", r.stderr);
    assert!(
        r.stdout.contains(N1),
        "the batch lists its node: {}",
        r.stdout
    );
    assert!(
        mutating(&sim.log()).is_empty(),
        "{:#?}",
        mutating(&sim.log())
    );
}

/// Issue 19: the canary is the first node that needs a restart, chosen at run time: with the
/// plan's first node already at the target, the next one goes alone before the batches.
#[test]
fn the_canary_is_the_first_node_that_needs_a_restart() {
    let c = cluster(vec![
        node(N2, "i-bp1000000000000002", Some(NEW)),
        node(N1, "i-bp1000000000000001", Some(OLD)),
        node(N4, "i-bp1000000000000004", Some(OLD)),
        node(N5, "i-bp1000000000000005", Some(OLD)),
    ]);
    let sim = Sim::new(&c, &["--max-unavailable", "2"]);
    let r = sim.run(&["--yes"], &[]);
    ok(&r);
    sim.assert_all_converted(&c);
    let h = sim.history();
    let reboot1 = h.iter().position(|x| *x == format!("reboot {N1}")).unwrap();
    let drain4 = h.iter().position(|x| *x == format!("drain {N4}")).unwrap();
    assert!(reboot1 < drain4, "{h:#?}");
    // The canary came back (uncordoned) before the next node was cordoned.
    let log: Vec<String> = sim.log().iter().map(|c| c.join(" ")).collect();
    let uncordon1 = log
        .iter()
        .position(|c| c.contains(&format!("uncordon {N1}")))
        .unwrap();
    let cordon4 = log
        .iter()
        .position(|c| c.ends_with(&format!("cordon {N4}")) && !c.contains("uncordon"))
        .unwrap();
    assert!(uncordon1 < cordon4, "{log:#?}");
    assert!(r.stdout.contains("== canary"), "{}", r.stdout);
}

/// Issue 19: a node cordoned by an earlier run (the annotation), planned again from fresh
/// inputs, is ours: restarted and uncordoned, not "cordoned before this change".
#[test]
fn a_node_an_earlier_run_cordoned_is_finished_by_a_new_plan() {
    let mut c = usual();
    c.nodes[3].cordoned = true; // .4
    let dir_nodes = c.nodes_yaml().replace(
        &format!("name: {N4}\n    uid: uid-{N4}\n"),
        &format!(
            "name: {N4}\n    uid: uid-{N4}\n    annotations:\n      cgpu-lint/cordoned: \"true\"\n"
        ),
    );
    assert!(dir_nodes.contains("cgpu-lint/cordoned"));
    let sim = Sim::with_nodes(&c, &dir_nodes, &[]);
    let mut st = c.state();
    st["nodes"][N4]["annotations"] = json!({"cgpu-lint/cordoned": "true"});
    sim.set_state(&st);
    let r = sim.run(&["--yes"], &[]);
    ok(&r);
    sim.assert_all_converted(&c);
    assert!(sim.reboots().contains(&N4.to_string()));
    assert!(!sim.cordoned(N4) && !sim.marked(N4));
}

#[test]
fn stub_wrappers_are_executable() {
    use std::os::unix::fs::PermissionsExt;
    for f in ["kubectl", "aliyun", "cluster.py"] {
        let mode = std::fs::metadata(sim_dir().join(f))
            .unwrap()
            .permissions()
            .mode();
        assert!(mode & 0o111 != 0, "{f} is not executable");
    }
    let _ = Path::new("");
}

/// `checklist --format json` for the same inputs as the script of `sim`.
fn json_plan(sim: &Sim, args: &[&str]) -> Value {
    let out = bin()
        .args(["checklist", "--current"])
        .arg(sim.dir.path().join("live.yaml"))
        .args(["--policy", NEW, "--nodes"])
        .arg(sim.dir.path().join("nodes.yaml"))
        .args(["--format", "json", "--context", "ack-prod"])
        .args(args)
        .output()
        .unwrap();
    serde_json::from_str(&String::from_utf8_lossy(&out.stdout)).unwrap()
}

/// An action's argv matches a call of the log: word for word, `{pod}` standing for the
/// installer pod the script looked up.
fn argv_matches(argv: &[String], call: &[String]) -> bool {
    argv.len() == call.len()
        && argv
            .iter()
            .zip(call)
            .all(|(a, c)| a == c || (a == "{pod}" && c.starts_with("cgpu-installer-")))
}

/// Issue 19: JSON steps carry the exact command the script runs. The script runs against the
/// simulator, which logs every kubectl/aliyun call as an argument list; every action of the
/// branch a node took, except those whose `only_if` did not hold, is one of those calls word
/// for word, and every call naming that node is one of its actions.
#[test]
fn json_argv_are_the_commands_the_script_runs() {
    let c = usual();
    let sim = Sim::new(&c, &[]);
    let r = sim.run(&["--yes"], &[]);
    ok(&r);
    let log = sim.log();
    let plan = json_plan(&sim, &[]);
    // .1 differs (cordon, drain, reboot), .3 has no module (installer pod only).
    for (name, branch) in [(N1, "differs"), (N3, "no-module")] {
        let node = plan["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name)
            .unwrap();
        let actions: Vec<&Value> = node["actions"].as_array().unwrap().iter().collect();
        let argvs: Vec<Vec<String>> = actions
            .iter()
            .filter(|a| a["argv"].is_array())
            .map(|a| {
                a["argv"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|w| w.as_str().unwrap().to_string())
                    .collect()
            })
            .collect();
        let mut checked = 0;
        for a in &actions {
            let Some(argv) = a["argv"].as_array() else {
                continue;
            };
            let argv: Vec<String> = argv
                .iter()
                .map(|w| w.as_str().unwrap().to_string())
                .collect();
            let runs = a["branch"] == "always" || a["branch"] == branch;
            // RollingUpdate with the pods at the new POLICY: no pod to renew.
            let held = a["only_if"] != "pod-differs";
            let found = log.iter().any(|call| argv_matches(&argv, call));
            if runs && held {
                assert!(found, "{name}: {} not run as {argv:?}", a["action"]);
                checked += 1;
            } else if !runs && !argv.iter().any(|w| w == "{pod}") {
                // Another branch's command that names the node did not run (the reads
                // of the node and its pods that both branches share excepted).
                let shared = [
                    "check-node",
                    "find-installer-pod",
                    "wait-installer-pod",
                    "record-boot-id",
                    "wait-boot-id",
                ];
                assert!(
                    !found || shared.contains(&a["action"].as_str().unwrap()),
                    "{name}: {} of branch {} ran: {argv:?}",
                    a["action"],
                    a["branch"]
                );
            }
        }
        assert!(checked >= 8, "{name}: only {checked} actions checked");
        // The converse: every call that names the node is one of its actions.
        let field = format!("spec.nodeName={name}");
        let node_ref = format!("node/{name}");
        for call in &log {
            let names_it = call
                .iter()
                .any(|w| w == name || *w == field || *w == node_ref);
            if names_it {
                assert!(
                    argvs.iter().any(|a| argv_matches(a, call)),
                    "{name}: the script ran {call:?}, which no JSON action lists"
                );
            }
        }
    }
}
