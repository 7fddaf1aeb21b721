//! The reboot runbook (`checklist --cluster --context prod --format shell`) run with the REAL
//! kubectl 1.33 (target/tools/kubectl) against the stateful fake API server
//! (tests/fake-apiserver/stateful.py: nodes cordoned, drained and rebooted, installer pods
//! renewed by a DaemonSet controller, `exec` over WebSocket v5 answered from the node's simulated
//! /proc/cgpu_km) and the `aliyun` stub (tests/runbook/aliyun: reboots through the fake's ECS
//! account). Every kubectl command line the script emits is parsed and executed by kubectl.
//!
//! A seeded sweep: random cluster shapes (1-4 cGPU nodes at the old policy, at the target or
//! without the module, some cordoned before the change, some NotReady at the start and Ready
//! again before the re-run or not, some core_mem nodes of cgpu-core-installer, workloads),
//! RollingUpdate or OnDelete, `--max-unavailable` 1-3, `--include-cordoned` or not, a policy
//! change with or without an image upgrade, and one random
//! fault at a random point (after the Nth change the cluster sees), then a re-run with the fault
//! cleared. The invariants are checked after every run from the fake's history
//! (what the cluster saw, when) and its final state; each failure prints the seed, and
//! `RUNBOOK_SEED=N` replays one case. `RUNBOOK_CASES=N` sets the size of each sweep (default
//! small, for the 2-core machine), `RUNBOOK_JOBS=N` how many cases run side by side (default
//! 2), `RUNBOOK_BASE_SEED` the first seed; each sweep prints its size and wall time.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::common::apiserver::{Fake, Pki, TOKEN, kubectl};
use crate::common::bin;
use serde_json::{Value, json};

const OLD_POLICY: &str = "1";
const NEW_POLICY: &str = "2";
const OLD_IMAGE: &str =
    "registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.9-1f0c2b4-aliyun";
const NEW_TAG: &str = "v1.5.10-3c9d1e7-aliyun";
const NEW_IMAGE: &str =
    "registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-3c9d1e7-aliyun";
const MARK: &str = "cgpu-lint/cordoned";
/// The rollout's waits for the fake's simulated time (seconds where a real node takes minutes).
const FAST: &[&str] = &[
    "--lease-duration",
    "15s",
    "--poll-interval",
    "200ms",
    "--reboot-timeout",
    "6s",
    "--wait-timeout",
    "6s",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ---- its own seeded RNG (SplitMix64): the seed alone replays a case ------------------------------
// Not tests/common's `Rng`: the regression_seed_* tests below replay recorded cases by seed, and
// another generator would silently swap each of them for a different case.

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

// ---- the shape of one case ----------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Module {
    Old,
    Target,
    None,
}

#[derive(Clone, Debug)]
struct NodeShape {
    name: String,
    instance: String,
    module: Module,
    cordoned: bool,
    gpus: u32,
    workloads: u32,
    /// Ready at the start of the run (false: NotReady, skipped by the run).
    ready: bool,
    /// `ack.node.gpu.schedule=core_mem`: cGPU through cgpu-core-installer, listed apart (the
    /// run reads it at the end, never restarts it).
    core: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    None,
    DrainRefused,
    ExecFail,
    RebootRefused,
    RebootNever,
    NeverReady,
    InstallerNeverReady,
    OldPolicy,
    NodeDeleted,
    NodeReplaced,
    PolicyChanged,
    OtherContextCurrent,
    ContextPointsElsewhere,
    Declined,
    /// Between the plan and the run, a plain `helm upgrade` sets the desired POLICY and also the
    /// chart default's image (cGPU 1.5.3): the run must stop before any change.
    ImageDrift,
    /// An earlier run left the node cordoned, marked and NotReady: it holds the budget.
    DownMarked,
    /// The NVIDIA GPU Operator is upgrading the node's driver (its label).
    NvidiaUpgrade,
    /// kured holds its reboot lock on the node.
    KuredLock,
    /// Two runs of the plan started 0.5 s apart.
    ConcurrentStart,
    /// A second run of the plan started once the first cordoned its first node.
    ConcurrentAfterCordon,
    /// A second run with `--break-lock` once the first cordoned a node: it must refuse (the
    /// holder's process still runs here) and change nothing.
    BreakLockWhileHeld,
    /// A second run with `--force-break-lock` once the first cordoned a node: it takes the
    /// lock; the first stops before its next change; every node is rebooted once.
    ForceBreakWhileHeld,
    /// After the chart default's image (cGPU 1.5.3) came with a plain `helm upgrade`, the plan is
    /// made again from the cluster: the nodes run newer, the run must refuse the downgrade.
    ReplanAfterDowngrade,
}

impl Fault {
    /// The fake's name of a fault it injects itself.
    fn server_name(self) -> Option<&'static str> {
        Some(match self {
            Fault::DrainRefused => "drain_refused",
            Fault::ExecFail => "exec_fail",
            Fault::RebootRefused => "reboot_refused",
            Fault::RebootNever => "reboot_never",
            Fault::NeverReady => "never_ready",
            Fault::InstallerNeverReady => "installer_never_ready",
            Fault::OldPolicy => "old_policy",
            Fault::NodeDeleted => "node_deleted",
            Fault::NodeReplaced => "node_replaced",
            Fault::PolicyChanged => "policy_changed",
            _ => return None,
        })
    }
}

const STATIC_FAULTS: &[Fault] = &[
    Fault::None,
    Fault::DrainRefused,
    Fault::ExecFail,
    Fault::RebootRefused,
    Fault::RebootNever,
    Fault::NeverReady,
    Fault::InstallerNeverReady,
    Fault::OldPolicy,
];
const MID_RUN_FAULTS: &[Fault] = &[
    Fault::NodeDeleted,
    Fault::NodeReplaced,
    Fault::PolicyChanged,
];
const CONTEXT_FAULTS: &[Fault] = &[Fault::OtherContextCurrent, Fault::ContextPointsElsewhere];
/// Time and other people: drift between plan and run, a node an earlier run left
/// down, other actors on a node, two runs of one plan.
const COORDINATION_FAULTS: &[Fault] = &[
    Fault::ImageDrift,
    Fault::DownMarked,
    Fault::NvidiaUpgrade,
    Fault::KuredLock,
    Fault::ConcurrentStart,
    Fault::ConcurrentAfterCordon,
    Fault::BreakLockWhileHeld,
    Fault::ForceBreakWhileHeld,
    Fault::ReplanAfterDowngrade,
];
/// The image a plain `helm upgrade -f` without `tag:` falls back to (the chart default).
const CHART_DEFAULT_IMAGE: &str =
    "registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.3-8d3fc1b-aliyun";
/// The bearer token of a second run of the plan (the fake attributes every change to its
/// token; the first run uses TOKEN).
const SECOND_RUN: &str = "second-run-token-7d2e";

#[derive(Clone, Debug)]
struct Shape {
    seed: u64,
    nodes: Vec<NodeShape>,
    strategy: &'static str,
    max_unavailable: u32,
    /// The image changes too (cGPU 1.5.9 -> 1.5.10), not only the policy.
    upgrade: bool,
    /// The policy changes (false: an upgrade that keeps POLICY, the nodes differ by version only).
    policy_change: bool,
    /// The node outside cGPU where evicted pods fit is Ready (false: its free gpu-mem is unusable).
    spare_ready: bool,
    fault: Fault,
    fault_node: usize,
    /// The fault fires after this many changes the cluster saw (0: from the start).
    fault_after: u64,
    /// Generated with `--include-cordoned`: nodes cordoned before the change are restarted too
    /// (and left cordoned).
    include_cordoned: bool,
    /// The nodes NotReady at the start are Ready again before the re-run.
    recover: bool,
}

impl Shape {
    fn random(seed: u64, faults: &[Fault], max_nodes: u64) -> Shape {
        let mut r = Rng(seed);
        let n = 1 + r.below(max_nodes) as usize;
        let base = r.below(1 << 40);
        let mut nodes: Vec<NodeShape> = (0..n)
            .map(|i| NodeShape {
                name: format!("cn-hangzhou.10.0.1.{}", 11 + i),
                instance: format!("i-bp1{:013x}{:02}", base, i),
                module: match r.below(10) {
                    0..=5 => Module::Old,
                    6 | 7 => Module::Target,
                    _ => Module::None,
                },
                cordoned: r.chance(15),
                gpus: 1 + r.below(2) as u32,
                workloads: r.below(2) as u32,
                ready: true,
                core: false,
            })
            .collect();
        // At least one node needs a reboot, so that most faults meet a step that acts.
        if !nodes.iter().any(|x| x.module == Module::Old && !x.cordoned) {
            let i = r.below(n as u64) as usize;
            nodes[i].module = Module::Old;
            nodes[i].cordoned = false;
        }
        let fault = r.pick(faults);
        Shape {
            seed,
            nodes,
            strategy: r.pick(&["RollingUpdate", "OnDelete"]),
            max_unavailable: 1 + r.below(3) as u32,
            upgrade: r.chance(40),
            policy_change: true,
            spare_ready: true,
            fault,
            fault_node: r.below(n as u64) as usize,
            fault_after: if r.chance(50) {
                0
            } else {
                1 + r.below(3 * n as u64)
            },
            include_cordoned: false,
            recover: false,
        }
    }

    /// `random`, then the shapes added later (nodes NotReady at the start, core_mem nodes,
    /// `--include-cordoned`) from a second stream, so that the seeds named before they existed
    /// (`random`) keep their cases.
    fn random_full(seed: u64, faults: &[Fault], max_nodes: u64) -> Shape {
        let mut s = Shape::random(seed, faults, max_nodes);
        let mut r = Rng(seed ^ 0x1919_C0DE_5EED_0019);
        for n in &mut s.nodes {
            n.ready = !r.chance(12);
            n.core = r.chance(12);
        }
        s.include_cordoned = r.chance(30);
        s.recover = r.chance(50);
        // Still one node that this run restarts: the first one that needs it.
        if !s
            .nodes
            .iter()
            .any(|n| s.targeted(n) && n.module == Module::Old)
        {
            let i = r.below(s.nodes.len() as u64) as usize;
            let n = &mut s.nodes[i];
            (n.module, n.cordoned, n.ready, n.core) = (Module::Old, false, true, false);
        }
        // The other actors (an operator, a controller, `helm upgrade`) work on a node the run would restart, one not cordoned before
        // the change (an earlier run's mark on such a node would make it the run's to finish).
        if COORDINATION_FAULTS.contains(&s.fault)
            && let Some(i) = s
                .nodes
                .iter()
                .position(|n| s.targeted(n) && n.module == Module::Old && !n.cordoned)
        {
            s.fault_node = i;
        }
        s
    }

    /// A node this run may restart: on cgpu-installer, Ready at the start, not cordoned before
    /// the change unless `--include-cordoned`.
    fn targeted(&self, n: &NodeShape) -> bool {
        !n.core && n.ready && (!n.cordoned || self.include_cordoned)
    }

    fn old_policy(&self) -> &'static str {
        if self.policy_change {
            OLD_POLICY
        } else {
            NEW_POLICY
        }
    }

    fn target_version(&self) -> &'static str {
        if self.upgrade { "1.5.10" } else { "1.5.9" }
    }

    fn at_target(&self, module: &Value) -> bool {
        let Some(m) = module.as_object() else {
            return false;
        };
        m["version"] == self.target_version()
            && m["policies"]
                .as_array()
                .is_some_and(|p| !p.is_empty() && p.iter().all(|x| x == NEW_POLICY))
    }

    fn module_json(&self, m: Module) -> Value {
        match m {
            Module::None => Value::Null,
            Module::Old => json!({"version": "1.5.9", "policy": self.old_policy()}),
            Module::Target => json!({"version": self.target_version(), "policy": NEW_POLICY}),
        }
    }

    /// The fake's CONFIG entry of one cluster: `prod` as the shape says; `staging` with the
    /// same node names (ACK names nodes by VPC IP) on other instances, all at the old policy.
    fn cluster(&self, name: &str, pki: &Pki) -> Value {
        let staging = name == "staging";
        let mut nodes: Vec<Value> = self
            .nodes
            .iter()
            .map(|n| {
                json!({
                    "name": n.name,
                    "instance": if staging { n.instance.replace("i-bp1", "i-bp9") } else { n.instance.clone() },
                    "schedule": if n.core { "core_mem" } else { "cgpu" },
                    "cordoned": n.cordoned && !staging,
                    "ready": n.ready || staging,
                    "gpus": n.gpus,
                    "gpu_mem": 22,
                    "module": self.module_json(if staging { Module::Old } else { n.module }),
                    "workloads": vec![4; n.workloads as usize],
                })
            })
            .collect();
        // A GPU node outside cGPU where evicted pods fit (the capacity gate).
        nodes.push(json!({
            "name": "cn-hangzhou.10.0.2.1",
            "instance": if staging { "i-bp9spare000000000001" } else { "i-bp1spare000000000001" },
            "schedule": null, "gpu_mem": 60, "module": null, "workloads": [],
            "ready": self.spare_ready || staging,
        }));
        json!({
            "name": name,
            "cert": pki.path("server.pem"),
            "key": pki.path("server.key"),
            "token": TOKEN,
            "tokens": [SECOND_RUN],
            "runbook": {
                "seed": self.seed ^ u64::from(staging),
                "ns_uid": if staging { "6f1e0c2a-3b4d-4e5f-8a6b-57a9e1c90000" } else { "d2b7c1f4-9a3e-4c6b-8e21-0f5a7c3d9b11" },
                "nodes": nodes,
                "daemonsets": {
                    "cgpu-installer": {
                        "policy": self.old_policy(), "image": OLD_IMAGE, "strategy": self.strategy,
                    },
                    "cgpu-core-installer": {
                        "policy": self.old_policy(), "image": OLD_IMAGE, "strategy": self.strategy,
                    },
                },
            },
        })
    }
}

// ---- the world of one case ------------------------------------------------------------------------

struct World {
    shape: Shape,
    fake: Fake,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    script: PathBuf,
    ca: String,
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    /// History lengths (prod, staging) before the run.
    from: (usize, usize),
    /// Our cordons before the run.
    leftover: usize,
}

struct Running {
    child: std::process::Child,
    from: (usize, usize),
    leftover: usize,
    agent: String,
}

impl World {
    fn start(pki: &Pki, shape: Shape) -> World {
        let fake = Fake::start_with(
            pki,
            json!([shape.cluster("prod", pki), shape.cluster("staging", pki)]),
            json!({"admin": true}),
        );
        let dir = tempfile::tempdir().unwrap();
        let w = World {
            kubeconfig: dir.path().join("kubeconfig"),
            script: dir.path().join("checklist.sh"),
            ca: pki.path("ca.pem"),
            shape,
            fake,
            dir,
        };
        w.write_kubeconfig("prod", "prod");
        w
    }

    /// Contexts `prod` (to the server named by `prod_to`) and `staging`; `current` is current.
    fn write_kubeconfig(&self, current: &str, prod_to: &str) {
        self.write_kubeconfig_as(&self.kubeconfig, current, prod_to, TOKEN);
    }

    /// The kubeconfig of a run that authenticates with `token`.
    fn kubeconfig_of(&self, token: &str) -> PathBuf {
        if token == TOKEN {
            return self.kubeconfig.clone();
        }
        let path = self.dir.path().join(format!("kubeconfig-{token}"));
        self.write_kubeconfig_as(&path, "prod", "prod", token);
        path
    }

    fn write_kubeconfig_as(
        &self,
        path: &std::path::Path,
        current: &str,
        prod_to: &str,
        token: &str,
    ) {
        let mut y = String::from("apiVersion: v1\nkind: Config\nclusters:\n");
        for (name, to) in [("prod", prod_to), ("staging", "staging")] {
            let _ = write!(
                y,
                "- name: {name}\n  cluster:\n    server: {}\n    certificate-authority: {}\n",
                self.fake.server(to),
                self.ca
            );
        }
        let _ = write!(
            y,
            "users:\n- name: audit\n  user:\n    token: {token}\ncontexts:\n- name: prod\n  context:\n    cluster: prod\n    user: audit\n- name: staging\n  context:\n    cluster: staging\n    user: audit\ncurrent-context: {current}\n"
        );
        std::fs::write(path, y).unwrap();
    }

    fn admin(&self, req: Value) -> Value {
        let (body, out) = self.fake.admin_call(&req);
        let body = body.as_str();
        let v: Value =
            serde_json::from_str(body).unwrap_or_else(|e| panic!("admin {req}: {e}: {out}"));
        assert!(
            v.get("error").is_none() || req["op"] == "reboot",
            "admin {req}: {v}"
        );
        v
    }

    fn state(&self, cluster: &str) -> Value {
        self.admin(json!({"op": "state", "cluster": cluster}))
    }

    fn settle(&self) {
        let v = self.admin(json!({"op": "settle", "cluster": "prod", "timeout": 15}));
        assert_eq!(
            v["ok"], true,
            "seed {}: the fake did not settle: {v}",
            self.shape.seed
        );
    }

    /// `cgpu-lint checklist --cluster --context prod ... --format shell` into `self.script`.
    fn generate(&self) {
        let s = &self.shape;
        let mut args: Vec<String> = [
            "checklist",
            "--cluster",
            "--context",
            "prod",
            "--policy",
            NEW_POLICY,
            "--format",
            "shell",
            "--drain-timeout",
            "3s",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        // The kubeconfig through KUBECONFIG, not --kubeconfig: the script then pins only the
        // context, and each run authenticates with the kubeconfig it is given (two copies of
        // one plan with two tokens, which the fake tells apart).
        args.extend(["--kubectl".into(), kubectl()]);
        args.extend(["--max-unavailable".into(), s.max_unavailable.to_string()]);
        if s.upgrade {
            args.extend(["--tag".into(), NEW_TAG.into()]);
        }
        if s.include_cordoned {
            args.push("--include-cordoned".into());
        }
        let out = bin()
            .env("HOME", self.dir.path())
            .env("KUBECONFIG", &self.kubeconfig)
            .args(&args)
            .output()
            .unwrap();
        // Exit 1: the plan has blocking findings (planned again after a chart default's
        // downgrade); the launcher lists them and the run stops on them.
        assert!(
            matches!(out.status.code(), Some(0 | 1))
                && out.stdout.starts_with(b"#!/usr/bin/env bash"),
            "seed {}: checklist {args:?} failed: {}",
            s.seed,
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(&self.script, &out.stdout).unwrap();
    }

    /// `helm upgrade` with the desired values: the DaemonSet's template changes.
    fn apply(&self) {
        let image = if self.shape.upgrade {
            NEW_IMAGE
        } else {
            OLD_IMAGE
        };
        // The same chart goes to both clusters (staging first, as usual).
        for cluster in ["staging", "prod"] {
            for ds in ["cgpu-installer", "cgpu-core-installer"] {
                self.admin(json!({"op": "apply", "cluster": cluster, "daemonset": ds, "policy": NEW_POLICY, "image": image}));
            }
        }
        self.settle();
    }

    fn history_len(&self, cluster: &str) -> usize {
        self.state(cluster)["history"].as_array().unwrap().len()
    }

    fn run(&self, yes: bool, stdin: &str) -> Ran {
        let r = self.spawn(yes, stdin, TOKEN);
        self.finish(r)
    }

    /// The script started as the run authenticating with `token`; `finish` waits for it.
    fn spawn(&self, yes: bool, stdin: &str, token: &str) -> Running {
        self.spawn_with(yes, stdin, token, &[])
    }

    /// `spawn` with more arguments for the run (`--break-lock`, `--force-break-lock`).
    fn spawn_with(&self, yes: bool, stdin: &str, token: &str, extra: &[&str]) -> Running {
        let from = (self.history_len("prod"), self.history_len("staging"));
        let leftover = ours_cordoned(&self.state("prod")["nodes"]).len();
        let path = format!(
            "{}:{}:/usr/local/bin:/usr/bin:/bin",
            root().join("target/tools").display(),
            root().join("tests/runbook").display()
        );
        let mut cmd = Command::new("timeout");
        cmd.args(["-k", "5", "150", "bash"]).arg(&self.script);
        if yes {
            cmd.arg("--yes");
        }
        // The launcher passes its arguments on to `cgpu-lint rollout`: the waits as short as
        // the fake's simulated time allows.
        cmd.args(FAST);
        cmd.args(extra);
        let mut child = cmd
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.dir.path())
            .env("KUBECONFIG", self.kubeconfig_of(token))
            .env("RUNBOOK_AGENT", token)
            .env("CGPU_LINT", env!("CARGO_BIN_EXE_cgpu-lint"))
            .env(
                "RUNBOOK_ADMIN",
                format!("http://127.0.0.1:{}", self.fake.admin.unwrap()),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
        Running {
            child,
            from,
            leftover,
            agent: token.to_string(),
        }
    }

    fn finish(&self, r: Running) -> Ran {
        let out = r.child.wait_with_output().unwrap();
        // RUNBOOK_SHOW=1: what each run printed, to read a case whole.
        if std::env::var_os("RUNBOOK_SHOW").is_some() {
            eprintln!(
                "---- run by {} exited {:?}\n{}{}",
                r.agent,
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            from: r.from,
            leftover: r.leftover,
        }
    }

    /// The image the plan is for (the DaemonSet after the desired `helm upgrade`).
    fn planned_image(&self) -> &'static str {
        if self.shape.upgrade {
            NEW_IMAGE
        } else {
            OLD_IMAGE
        }
    }

    /// Wait (at most 60 s) until the run `r` cordoned a node, or ended.
    fn wait_for_cordon_by(&self, r: &mut Running) {
        let (token, from) = (r.agent.clone(), r.from.0);
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        while Instant::now() < deadline && r.child.try_wait().ok().flatten().is_none() {
            let st = self.state("prod");
            if st["history"].as_array().unwrap()[from..].iter().any(|e| {
                e["ev"] == "patch-node"
                    && e["unschedulable"] == true
                    && e["was"][0] == false
                    && e["by"] == token.as_str()
            }) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

/// The cGPU version of an image (`…:v1.5.10-3c9d1e7-aliyun` → 1.5.10).
fn image_version(image: &str) -> Option<semver::Version> {
    let tag = image.rsplit_once(':')?.1;
    semver::Version::parse(tag.trim_start_matches('v').split('-').next()?).ok()
}

fn ours_cordoned(nodes: &Value) -> Vec<String> {
    nodes
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, n)| n["unschedulable"] == true && n["annotations"].get(MARK).is_some())
        .map(|(k, _)| k.clone())
        .collect()
}

// ---- the invariants ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Inv {
    /// No reboot of a node that is not cordoned and drained.
    RebootOnlyDrained,
    /// No reboot of an instance the node's live providerID does not name.
    RebootLiveInstance,
    /// Never more cordoned-by-us nodes than the canary (1), then --max-unavailable.
    CordonLimit,
    /// A node at the target is never cordoned.
    AtTargetNeverCordoned,
    /// A fault stops the run non-zero naming node and step, with no destructive action after.
    StopsAtFault,
    /// The re-run converges: targets at target, our cordons removed, pre-cordoned left, no node
    /// rebooted twice.
    Converges,
    /// A wrong context changes nothing.
    WrongContextChangesNothing,
    /// A declined confirmation changes nothing.
    DeclinedChangesNothing,
    /// A node the run does not restart (core_mem, NotReady, cordoned before the change without
    /// `--include-cordoned`) is never cordoned, drained (no eviction) nor rebooted.
    LeftAlone,
    /// Every change a run makes (cordon, eviction, pod deletion, reboot) happens while that run
    /// holds the cluster lock: a run that does not hold it changes nothing, and two runs never
    /// act at once.
    LockHeld,
    /// No node is rebooted, and no installer pod renewed, while the DaemonSet runs another
    /// POLICY or image than the plan's.
    AsPlanned,
    /// A drift between plan and run stops the run before any change, and says to plan again.
    DriftStops,
    /// A node another actor works on (NVIDIA driver upgrade, kured's lock) is never cordoned,
    /// drained or rebooted while it does.
    OtherActors,
    /// No node is rebooted into an older cGPU than its module runs (the installer's image at
    /// the reboot is the version it comes back with).
    NoDowngrade,
    /// Every cordon and every reboot a run makes is a Kubernetes Event on its node (where
    /// `kubectl describe node` shows it).
    Recorded,
}

const ALL: &[Inv] = &[
    Inv::RebootOnlyDrained,
    Inv::RebootLiveInstance,
    Inv::CordonLimit,
    Inv::AtTargetNeverCordoned,
    Inv::StopsAtFault,
    Inv::Converges,
    Inv::WrongContextChangesNothing,
    Inv::DeclinedChangesNothing,
    Inv::LeftAlone,
    Inv::LockHeld,
    Inv::AsPlanned,
    Inv::DriftStops,
    Inv::OtherActors,
    Inv::NoDowngrade,
    Inv::Recorded,
];

fn destructive(e: &Value) -> bool {
    match e["ev"].as_str().unwrap_or("") {
        "reboot" | "evict" | "delete-pod" => true,
        "patch-node" => e["unschedulable"] == true && e["was"][0] == false,
        _ => false,
    }
}

struct Judge<'a> {
    w: &'a World,
    out: Vec<(Inv, String)>,
}

impl Judge<'_> {
    fn fail(&mut self, inv: Inv, msg: String) {
        self.out.push((inv, msg));
    }

    fn events(&self, cluster: &str, from: usize) -> Vec<Value> {
        self.w.state(cluster)["history"].as_array().unwrap()[from..].to_vec()
    }

    /// The nodes as the run `label` finds them: after the fault is cleared a node NotReady at
    /// the start may be Ready again, and a replaced node is a new one (Ready, not cordoned).
    fn nodes_for(&self, label: &str) -> Vec<NodeShape> {
        let s = &self.w.shape;
        let rerun = label == "re-run";
        let replaced = rerun
            && s.fault == Fault::NodeReplaced
            && self.w.state("prod")["history"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["ev"] == "fault");
        s.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let mut n = n.clone();
                if rerun && s.recover {
                    n.ready = true;
                }
                if replaced && i == s.fault_node {
                    (n.ready, n.cordoned) = (true, false);
                }
                // Clearing never_ready brings the node's kubelet back (the fake's clear), even
                // one NotReady from the start: Ready at the re-run, it is the run's to restart.
                if rerun && s.fault == Fault::NeverReady && i == s.fault_node {
                    n.ready = true;
                }
                n
            })
            .collect()
    }

    /// The invariants that hold for any run.
    fn every_run(&mut self, label: &str, ran: &Ran) {
        let s = &self.w.shape;
        let apart: BTreeMap<String, &'static str> = self
            .nodes_for(label)
            .iter()
            .filter(|n| !s.targeted(n))
            .map(|n| {
                let why = if n.core {
                    "core_mem"
                } else if !n.ready {
                    "NotReady"
                } else {
                    "cordoned before the change"
                };
                (n.name.clone(), why)
            })
            .collect();
        for e in self.events("prod", ran.from.0) {
            let Some(why) = e["node"].as_str().and_then(|n| apart.get(n)) else {
                continue;
            };
            let cordon =
                e["ev"] == "patch-node" && e["unschedulable"] == true && e["was"][0] == false;
            if cordon || e["ev"] == "evict" || e["ev"] == "reboot" {
                self.fail(
                    Inv::LeftAlone,
                    format!(
                        "{label}: {} {} ({why}), which the run must leave alone",
                        e["ev"], e["node"]
                    ),
                );
            }
        }
        for (cluster, from) in [("prod", ran.from.0), ("staging", ran.from.1)] {
            for e in self.events(cluster, from) {
                if e["ev"] == "reboot" {
                    if e["provider_id_matches"] != true {
                        self.fail(
                            Inv::RebootLiveInstance,
                            format!(
                                "{label}: {cluster}: rebooted {} {} while node {} names {}",
                                e["region"], e["instance"], e["node"], e["live_provider_id"]
                            ),
                        );
                    } else if e["cordoned"] != true || e["drained"] != true {
                        self.fail(
                            Inv::RebootOnlyDrained,
                            format!(
                                "{label}: {cluster}: rebooted {} (cordoned {}, drained {})",
                                e["node"], e["cordoned"], e["drained"]
                            ),
                        );
                    }
                }
                if e["ev"] == "patch-node"
                    && e["unschedulable"] == true
                    && e["was"][0] == false
                    && s.at_target(&e["module"])
                {
                    self.fail(
                        Inv::AtTargetNeverCordoned,
                        format!(
                            "{label}: {cluster}: cordoned {} at the target {}",
                            e["node"], e["module"]
                        ),
                    );
                }
            }
        }
        // Cordon limit (prod): 1 until the first node this run rebooted is back, then M.
        let m = s.max_unavailable.max(1) as usize;
        let mut rebooted = BTreeSet::new();
        let mut canary_done = false;
        let mut precordoned_canary: Option<String> = None;
        for e in self.events("prod", ran.from.0) {
            match e["ev"].as_str().unwrap_or("") {
                "reboot" if e["effective"] == true => {
                    let node = e["node"].as_str().unwrap().to_string();
                    // A canary cordoned before the change (--include-cordoned) stays cordoned:
                    // no uncordon shows it done, the next batch's first cordon does (the run
                    // waits for the canary before it).
                    if s.nodes.iter().any(|n| n.name == node && n.cordoned) {
                        precordoned_canary = Some(node.clone());
                    }
                    rebooted.insert(node);
                }
                "patch-node" => {
                    if precordoned_canary
                        .as_deref()
                        .is_some_and(|c| c != e["node"].as_str().unwrap_or(""))
                        && e["unschedulable"] == true
                        && e["was"][0] == false
                    {
                        canary_done = true;
                    }
                    let n = e["ours_cordoned"].as_array().unwrap().len();
                    let limit = if canary_done { m } else { 1 }.max(ran.leftover);
                    if n > limit {
                        self.fail(
                            Inv::CordonLimit,
                            format!(
                                "{label}: {n} nodes carry our cordon ({}), limit {limit} ({})",
                                e["ours_cordoned"],
                                if canary_done {
                                    "after the canary"
                                } else {
                                    "before the canary is done"
                                }
                            ),
                        );
                        break;
                    }
                    if e["was"][0] == true
                        && e["unschedulable"] == false
                        && rebooted.contains(e["node"].as_str().unwrap())
                    {
                        canary_done = true;
                    }
                }
                _ => {}
            }
        }
    }

    /// The lock and the plan, over every event since `from` (all runs of the case).
    fn lock_and_plan(&mut self, from: usize) {
        let planned = self.w.planned_image();
        let mut holder: Option<String> = None;
        // After a run took the lock from another, the one call the other had started when it
        // last proved it held the lock may still land, once, before the new holder's first
        // change (the new holder waits a grace period for it).
        let mut in_flight: Option<String> = None;
        for e in self.events("prod", from) {
            let by = e["by"].as_str().map(str::to_string);
            let change = matches!(
                e["ev"].as_str().unwrap_or(""),
                "patch-node" | "evict" | "delete-pod" | "reboot"
            );
            if change && by.is_some() && by == holder {
                in_flight = None;
            }
            match e["ev"].as_str().unwrap_or("") {
                "lease-create" | "lease-update" => {
                    if holder.is_some() && by != holder {
                        in_flight = holder.clone();
                    }
                    holder = by.clone();
                }
                "lease-delete" => holder = None,
                "patch-node" | "evict" | "delete-pod" | "reboot"
                    if by.is_some() && by != holder && by == in_flight =>
                {
                    in_flight = None;
                }
                "patch-node" | "evict" | "delete-pod" | "reboot"
                    if by.is_some() && by != holder =>
                {
                    self.fail(
                        Inv::LockHeld,
                        format!(
                            "{} {} by {:?} while the lock is held by {holder:?}",
                            e["ev"], e["node"], by
                        ),
                    );
                }
                _ => {}
            }
            if e["ev"] == "reboot" && e["effective"] == true {
                let into = e["ds_image"].as_str().and_then(image_version);
                let from = e["module"]["version"]
                    .as_str()
                    .and_then(|v| semver::Version::parse(v).ok());
                if let (Some(into), Some(from)) = (into, from)
                    && into < from
                {
                    self.fail(
                        Inv::NoDowngrade,
                        format!("reboot of {} from cGPU {from} into {into}", e["node"]),
                    );
                }
            }
            let renews = e["ev"] == "reboot" && e["effective"] == true
                || e["ev"] == "delete-pod" && e["installer"] == true;
            if renews && (e["ds_policy"] != NEW_POLICY || e["ds_image"] != planned) {
                self.fail(
                    Inv::AsPlanned,
                    format!(
                        "{} {} while the DaemonSet runs POLICY {} and {} (the plan: {NEW_POLICY}, {planned})",
                        e["ev"], e["node"], e["ds_policy"], e["ds_image"]
                    ),
                );
            }
        }
    }

    /// Each cordon and reboot by a run (a token) since `from` is followed by its Event on the
    /// node, from the same run.
    fn recorded(&mut self, from: usize) {
        let events = self.events("prod", from);
        for (i, e) in events.iter().enumerate() {
            let reason = match e["ev"].as_str().unwrap_or("") {
                "patch-node" if e["unschedulable"] == true && e["was"][0] == false => {
                    "CgpuRolloutCordoned"
                }
                "reboot" if e["effective"] == true => "CgpuRolloutRebooting",
                _ => continue,
            };
            if e["by"].is_null() {
                continue;
            }
            let found = events[i..].iter().any(|x| {
                x["ev"] == "event"
                    && x["node"] == e["node"]
                    && x["reason"] == reason
                    && x["by"] == e["by"]
            });
            if !found {
                self.fail(
                    Inv::Recorded,
                    format!(
                        "{} {} by {} has no {reason} Event",
                        e["ev"], e["node"], e["by"]
                    ),
                );
            }
        }
    }

    /// A node another actor works on (run 1): never cordoned, evicted from or rebooted, and the
    /// run does not say done.
    fn other_actor_left_alone(&mut self, ran: &Ran) {
        let node = self.w.shape.nodes[self.w.shape.fault_node].name.clone();
        for e in self.events("prod", ran.from.0) {
            let cordon =
                e["ev"] == "patch-node" && e["unschedulable"] == true && e["was"][0] == false;
            if e["node"] == node.as_str() && (cordon || e["ev"] == "evict" || e["ev"] == "reboot") {
                self.fail(
                    Inv::OtherActors,
                    format!(
                        "run 1: {} {node} while another actor works on it ({:?})",
                        e["ev"], self.w.shape.fault
                    ),
                );
            }
        }
        if ran.code == 0 {
            self.fail(
                Inv::OtherActors,
                format!("run 1 exited 0 while {node} was left to another actor"),
            );
        }
    }

    /// The first event by which the fault showed, and whether the script could see it at once.
    fn manifest(&self, ran: &Ran) -> Option<(usize, bool)> {
        let s = &self.w.shape;
        let node = &s.nodes[s.fault_node].name;
        let events = self.events("prod", ran.from.0);
        let on = |e: &&Value| e["node"] == node.as_str();
        let find = |f: &dyn Fn(&Value) -> bool| {
            events
                .iter()
                .filter(on)
                .find(|e| f(e))
                .map(|e| e["seq"].as_u64().unwrap() as usize)
        };
        let fired = events
            .iter()
            .find(|e| e["ev"] == "fault")
            .map(|e| e["seq"].as_u64().unwrap() as usize);
        match s.fault {
            Fault::DrainRefused => find(&|e| e["ev"] == "evict-refused").map(|i| (i, true)),
            Fault::ExecFail => {
                find(&|e| e["ev"] == "exec" && e["failed"] == true).map(|i| (i, true))
            }
            Fault::RebootRefused => find(&|e| e["ev"] == "reboot-refused").map(|i| (i, true)),
            Fault::RebootNever | Fault::NeverReady | Fault::OldPolicy => {
                let f = fired?;
                find(&|e| e["ev"] == "reboot" && e["seq"].as_u64().unwrap() as usize > f)
                    .map(|i| (i, false))
            }
            Fault::InstallerNeverReady => {
                let f = fired?;
                find(&|e| {
                    (e["ev"] == "reboot" || e["ev"] == "delete-pod")
                        && e["seq"].as_u64().unwrap() as usize > f
                })
                .map(|i| (i, false))
            }
            Fault::NodeDeleted => {
                let f = fired?;
                // Seen once the script reaches the node: it must stop, not skip it.
                let decided = events
                    .iter()
                    .filter(on)
                    .any(|e| e["ev"] == "exec" && (e["seq"].as_u64().unwrap() as usize) < f);
                let targeted = s.targeted(&s.nodes[s.fault_node]);
                (!decided && targeted).then_some((f, false))
            }
            Fault::PolicyChanged => fired.map(|f| (f, false)),
            _ => None,
        }
    }

    fn stops_at_fault(&mut self, ran: &Ran) {
        let s = &self.w.shape;
        let Some((at, immediate)) = self.manifest(ran) else {
            return;
        };
        let node = &s.nodes[s.fault_node].name;
        let named = if s.fault == Fault::PolicyChanged {
            true
        } else {
            ran.stderr.contains(node.as_str())
        };
        if ran.code == 0 || !named || !ran.stderr.contains("step") {
            self.fail(Inv::StopsAtFault, format!("run 1: {:?} on {node} showed (event {at}) but the run exited {} without naming node and step; stderr tail: {}", s.fault, ran.code, tail(&ran.stderr)));
        }
        let events = self.events("prod", ran.from.0);
        let ours_at = events
            .iter()
            .rev()
            .find(|e| e["seq"].as_u64().unwrap() as usize <= at && e["ev"] == "patch-node")
            .map_or(ran.leftover, |e| {
                e["ours_cordoned"].as_array().unwrap().len()
            });
        let after: Vec<&Value> = events
            .iter()
            .filter(|e| e["seq"].as_u64().unwrap() as usize > at && destructive(e))
            .collect();
        if immediate {
            let other: Vec<String> = after
                .iter()
                .filter(|e| e["node"] != node.as_str())
                .map(|e| format!("{} {}", e["ev"], e["node"]))
                .collect();
            if !other.is_empty() {
                self.fail(
                    Inv::StopsAtFault,
                    format!("run 1: after {:?} on {node}: {other:?}", s.fault),
                );
            }
        } else {
            let newly: BTreeSet<String> = after
                .iter()
                .filter(|e| e["ev"] == "patch-node")
                .map(|e| e["node"].as_str().unwrap().to_string())
                .collect();
            let limit = s.max_unavailable.max(1) as usize;
            if ours_at + newly.len() > limit {
                self.fail(Inv::StopsAtFault, format!("run 1: after {:?} on {node} the run went on cordoning {newly:?} ({ours_at} already ours)", s.fault));
            }
        }
    }

    fn converges(&mut self, runs: &[&Ran], last: &Ran) {
        let s = &self.w.shape;
        let st = self.w.state("prod");
        let nodes = &st["nodes"];
        let shapes = self.nodes_for("re-run");
        // Nodes the run does not restart (core_mem, cordoned before the change without
        // --include-cordoned) while not at the target, and nodes still NotReady: the run cannot
        // say "done" and must say which.
        // Under RollingUpdate a NotReady node stalls the rollout: the run stops at the health
        // gate, before it reads any node, naming the NotReady nodes that hold it (the others it
        // did not reach are not its to name).
        let stalled_now = s.strategy == "RollingUpdate"
            && last.stderr.contains("step installer-health")
            && shapes.iter().any(|n| !n.ready && !n.core);
        let waiting: Vec<&str> = shapes
            .iter()
            .filter(|n| {
                nodes.get(&n.name).is_some_and(|l| {
                    !n.ready || (!stalled_now && !s.targeted(n) && !s.at_target(&l["module"]))
                })
            })
            .map(|n| n.name.as_str())
            .collect();
        if waiting.is_empty() && last.code != 0 {
            self.fail(
                Inv::Converges,
                format!("re-run exited {}: {}", last.code, tail(&last.stderr)),
            );
        }
        if !waiting.is_empty()
            && (last.code == 0 || !waiting.iter().all(|n| last.stderr.contains(n)))
        {
            self.fail(Inv::Converges, format!("re-run exited {} without naming the nodes it did not bring to the target {waiting:?}", last.code));
        }
        // Under RollingUpdate the installer pod of a NotReady node never becomes Ready and
        // holds the rollout (maxUnavailable 1, as the DaemonSet controller counts it): the
        // health gate stops every run before any change while the node stays NotReady.
        let stalled = s.strategy == "RollingUpdate" && shapes.iter().any(|n| !n.ready && !n.core);
        for n in &shapes {
            let Some(live) = nodes.get(&n.name) else {
                continue;
            };
            if s.targeted(n) && !stalled && !s.at_target(&live["module"]) {
                self.fail(
                    Inv::Converges,
                    format!("{} is not at the target: {}", n.name, live["module"]),
                );
            }
            if n.cordoned {
                if live["unschedulable"] != true {
                    self.fail(
                        Inv::Converges,
                        format!(
                            "{} was cordoned before the change and is not any more",
                            n.name
                        ),
                    );
                }
                if live["annotations"].get(MARK).is_some() {
                    self.fail(
                        Inv::Converges,
                        format!(
                            "{} was cordoned before the change and carries our mark",
                            n.name
                        ),
                    );
                }
            } else if (live["annotations"].get(MARK).is_some() || live["unschedulable"] == true)
                // The node the harness left down (DownMarked) keeps that cordon while a stalled
                // rollout stops every run before it reaches any node.
                && !(stalled && s.fault == Fault::DownMarked && n.name == s.nodes[s.fault_node].name)
            {
                self.fail(
                    Inv::Converges,
                    format!(
                        "{} keeps our cordon ({} {})",
                        n.name, live["unschedulable"], live["annotations"]
                    ),
                );
            }
        }
        let mut count: BTreeMap<String, u32> = BTreeMap::new();
        let first = runs[0].from.0;
        for e in &st["history"].as_array().unwrap()[first..] {
            if e["ev"] == "reboot" && e["effective"] == true {
                *count
                    .entry(e["node"].as_str().unwrap().to_string())
                    .or_default() += 1;
            }
        }
        for (node, c) in count {
            let allowed = if s.fault == Fault::OldPolicy && node == s.nodes[s.fault_node].name {
                2
            } else {
                1
            };
            if c > allowed {
                self.fail(Inv::Converges, format!("{node} rebooted {c} times"));
            }
        }
    }

    fn changes_nothing(&mut self, inv: Inv, cluster: &str, from: usize, label: &str) {
        let bad: Vec<String> = self
            .events(cluster, from)
            .iter()
            .filter(|e| destructive(e) || e["ev"] == "patch-node")
            .map(|e| format!("{} {}", e["ev"], e["node"]))
            .collect();
        if !bad.is_empty() {
            self.fail(inv, format!("{label}: {cluster} changed: {bad:?}"));
        }
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(6)..].join(" | ")
}

/// One case: plan, apply, fault, run, clear, re-run; the invariants broken, with what showed them.
fn case(pki: &Pki, sweep: &str, shape: Shape) -> Vec<(Inv, String)> {
    case_with(pki, sweep, shape, &|s| s.to_string())
}

/// `case` with the generated script edited by `mutate` (to show that an invariant can fail).
fn case_with(
    pki: &Pki,
    sweep: &str,
    shape: Shape,
    mutate: &dyn Fn(&str) -> String,
) -> Vec<(Inv, String)> {
    let w = World::start(pki, shape.clone());
    w.generate();
    let text = std::fs::read_to_string(&w.script).unwrap();
    std::fs::write(&w.script, mutate(&text)).unwrap();
    w.apply();
    let s = &w.shape;
    let node = s.nodes[s.fault_node].name.clone();
    let start = w.history_len("prod");
    match s.fault {
        // `helm upgrade -f desired.yaml` without the tag: the chart default's image comes too.
        Fault::ImageDrift | Fault::ReplanAfterDowngrade => {
            w.admin(json!({"op": "apply", "cluster": "prod", "daemonset": "cgpu-installer", "policy": NEW_POLICY, "image": CHART_DEFAULT_IMAGE}));
            w.settle();
        }
        Fault::DownMarked => {
            w.admin(json!({"op": "mark_down", "cluster": "prod", "node": node}));
        }
        Fault::NvidiaUpgrade => {
            w.admin(json!({"op": "label", "cluster": "prod", "node": node, "key": "nvidia.com/gpu-driver-upgrade-state", "value": "upgrade-required"}));
        }
        Fault::KuredLock => {
            w.admin(json!({"op": "kured", "cluster": "prod", "node": node}));
        }
        _ => {}
    }
    if let Some(name) = s.fault.server_name() {
        let value = match s.fault {
            Fault::NodeReplaced => json!(format!("i-bp1replaced{:08}", s.seed % 100_000_000)),
            Fault::PolicyChanged => json!(OLD_POLICY),
            _ => Value::Null,
        };
        w.admin(json!({"op": "fault", "cluster": "prod", "fault": name, "node": node, "after": s.fault_after, "value": value}));
    }
    match s.fault {
        Fault::OtherContextCurrent => w.write_kubeconfig("staging", "prod"),
        Fault::ContextPointsElsewhere => w.write_kubeconfig("prod", "staging"),
        _ => {}
    }
    let mut j = Judge {
        w: &w,
        out: Vec::new(),
    };
    let mut second = None;
    let first = match s.fault {
        Fault::Declined => w.run(false, "n\nn\nn\nn\n"),
        Fault::ConcurrentStart
        | Fault::ConcurrentAfterCordon
        | Fault::BreakLockWhileHeld
        | Fault::ForceBreakWhileHeld => {
            let mut a = w.spawn(true, "", TOKEN);
            if s.fault == Fault::ConcurrentStart {
                std::thread::sleep(std::time::Duration::from_millis(500));
            } else {
                w.wait_for_cordon_by(&mut a);
            }
            let extra: &[&str] = match s.fault {
                Fault::BreakLockWhileHeld => &["--break-lock"],
                Fault::ForceBreakWhileHeld => &["--force-break-lock"],
                _ => &[],
            };
            let b = w.spawn_with(true, "", SECOND_RUN, extra);
            let a = w.finish(a);
            second = Some(w.finish(b));
            a
        }
        _ => w.run(true, ""),
    };
    j.every_run("run 1", &first);
    j.stops_at_fault(&first);
    if let Some(b) = &second {
        j.every_run("run 1 (second copy)", b);
        // A copy that met the other's lock (its create refused: AlreadyExists) stops and names
        // the holder; what each changed is judged by LockHeld.
        let events = j.events("prod", first.from.0);
        let refused = |token: &str| {
            events
                .iter()
                .any(|e| e["ev"] == "lease-create-refused" && e["by"] == token)
        };
        for (r, token) in [(&first, TOKEN), (b, SECOND_RUN)] {
            let named = r.stderr.contains("holds the cluster lock")
                || r.stderr.contains("took the cluster lock")
                || r.stderr.contains("just released");
            // A forced takeover is the one a refused create may end in.
            if refused(token) && (r.code == 0 || !named) && s.fault != Fault::ForceBreakWhileHeld {
                j.fail(
                    Inv::LockHeld,
                    format!(
                        "the copy of {token} met the other's lock and exited {} without naming it: {}",
                        r.code,
                        tail(&r.stderr)
                    ),
                );
            }
        }
    }
    match s.fault {
        Fault::BreakLockWhileHeld => {
            let b = second.as_ref().expect("the second run");
            let by_b = j
                .events("prod", first.from.0)
                .iter()
                .filter(|e| {
                    e["by"] == SECOND_RUN
                        && (destructive(e) || e["ev"] == "patch-node" || e["ev"] == "lease-update")
                })
                .count();
            // A second run that met the lock must say its holder still runs here; one that
            // found nothing left to do never asked for it.
            let met = b.stderr.contains("step cluster-lock");
            if by_b > 0 || (met && (b.code == 0 || !b.stderr.contains("still runs on this host"))) {
                j.fail(
                    Inv::LockHeld,
                    format!(
                        "--break-lock while the holder runs here: exit {}, {by_b} change(s) by it: {}",
                        b.code,
                        tail(&b.stderr)
                    ),
                );
            }
        }
        Fault::ForceBreakWhileHeld => {
            let lost = first.stderr.contains("lost the cluster lock");
            if first.code == 0 && !lost {
                // The first may have finished before the takeover; then it holds nothing to lose.
                let took = j
                    .events("prod", first.from.0)
                    .iter()
                    .any(|e| e["ev"] == "lease-update" && e["by"] == SECOND_RUN);
                if took && !first.stdout.contains("done.") {
                    j.fail(
                        Inv::LockHeld,
                        format!(
                            "run 1 lost the lock and did not say so: {}",
                            tail(&first.stderr)
                        ),
                    );
                }
            }
        }
        Fault::ReplanAfterDowngrade => {
            // Planned again from the cluster as it is now (the DaemonSet deploys 1.5.3).
            w.generate();
            let again_from = w.history_len("prod");
            let again = w.run(true, "");
            j.every_run("run 2 (planned after the downgrade)", &again);
            // It refuses the downgrade, or (planned with the tag it had) the image the DaemonSet
            // deploys now: either way before any change.
            j.changes_nothing(
                Inv::NoDowngrade,
                "prod",
                again_from,
                "run 2 (planned after the downgrade)",
            );
            if again.code == 0
                || !(again.stderr.contains("downgrade") || again.stderr.contains("another image"))
            {
                j.fail(
                    Inv::NoDowngrade,
                    format!(
                        "run 2, planned after the chart default's downgrade, exited {} without refusing the downgrade: {}",
                        again.code,
                        tail(&again.stderr)
                    ),
                );
            }
        }
        _ => {}
    }
    match s.fault {
        Fault::ImageDrift | Fault::ReplanAfterDowngrade => {
            j.changes_nothing(Inv::DriftStops, "prod", first.from.0, "run 1 (image drift)");
            if first.code == 0 || !first.stderr.contains("plan again") {
                j.fail(
                    Inv::DriftStops,
                    format!(
                        "run 1 after the image drift exited {} without \"plan again\": {}",
                        first.code,
                        tail(&first.stderr)
                    ),
                );
            }
        }
        Fault::NvidiaUpgrade | Fault::KuredLock => j.other_actor_left_alone(&first),
        // The node left down holds the budget (1 before the canary): the run takes no other
        // node (CordonLimit) and does not end as done.
        Fault::DownMarked if first.code == 0 => j.fail(
            Inv::CordonLimit,
            format!(
                "run 1 exited 0 while {node} was down: {}",
                tail(&first.stdout)
            ),
        ),
        _ => {}
    }
    match s.fault {
        Fault::OtherContextCurrent => j.changes_nothing(
            Inv::WrongContextChangesNothing,
            "staging",
            first.from.1,
            "run 1 (current context staging)",
        ),
        Fault::ContextPointsElsewhere => {
            j.changes_nothing(
                Inv::WrongContextChangesNothing,
                "staging",
                first.from.1,
                "run 1 (context prod points at staging)",
            );
            j.changes_nothing(
                Inv::WrongContextChangesNothing,
                "prod",
                first.from.0,
                "run 1 (context prod points at staging)",
            );
            if first.code == 0 {
                j.fail(
                    Inv::WrongContextChangesNothing,
                    "run 1 against the wrong cluster exited 0".into(),
                );
            }
        }
        Fault::Declined => {
            j.changes_nothing(
                Inv::DeclinedChangesNothing,
                "prod",
                first.from.0,
                "run 1 (declined)",
            );
        }
        _ => {}
    }
    // Clear the fault, then run again (as the stop message says); a node deleted or replaced
    // needs a new plan.
    let restore = (s.fault == Fault::PolicyChanged).then_some(NEW_POLICY);
    w.admin(json!({"op": "clear", "cluster": "prod", "restore_policy": restore}));
    match s.fault {
        // The desired values applied as planned (the tag pinned), after the drift.
        Fault::ImageDrift | Fault::ReplanAfterDowngrade => {
            w.admin(json!({"op": "apply", "cluster": "prod", "daemonset": "cgpu-installer", "policy": NEW_POLICY, "image": w.planned_image()}));
        }
        Fault::DownMarked => {
            w.admin(json!({"op": "recover", "cluster": "prod", "node": node}));
        }
        Fault::NvidiaUpgrade => {
            w.admin(json!({"op": "label", "cluster": "prod", "node": node, "key": "nvidia.com/gpu-driver-upgrade-state", "value": "upgrade-done"}));
        }
        Fault::KuredLock => {
            w.admin(json!({"op": "kured", "cluster": "prod", "node": null}));
        }
        _ => {}
    }
    w.write_kubeconfig("prod", "prod");
    if s.recover {
        for n in s.nodes.iter().filter(|n| !n.ready) {
            w.admin(json!({"op": "recover", "cluster": "prod", "node": n.name}));
        }
    }
    w.settle();
    if matches!(
        s.fault,
        Fault::NodeDeleted | Fault::NodeReplaced | Fault::ReplanAfterDowngrade
    ) {
        w.generate();
    }
    let again = w.run(true, "");
    j.every_run("re-run", &again);
    j.converges(&[&first, &again], &again);
    j.lock_and_plan(start);
    j.recorded(start);
    let mut out = j.out;
    // RUNBOOK_KEEP_LOGS=1 keeps every case's output, not only a failing one's.
    if !out.is_empty() || std::env::var_os("RUNBOOK_KEEP_LOGS").is_some() {
        let plan: String = std::fs::read_to_string(&w.script)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with('#') || l.contains("=("))
            .map(|l| format!("{l}\n"))
            .collect();
        let second = second
            .as_ref()
            .map(|b| {
                format!(
                    "run 1, second copy (exit {}):\n{}\n{}\n",
                    b.code, b.stdout, b.stderr
                )
            })
            .unwrap_or_default();
        let history: String = w.state("prod")["history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| format!("{e}\n"))
            .collect();
        let log = format!(
            "shape: {:?}\nplan:\n{plan}\nrun 1 (exit {}):\n{}\n{}\n{second}re-run (exit {}):\n{}\n{}\nthe cluster's history:\n{history}",
            w.shape, first.code, first.stdout, first.stderr, again.code, again.stdout, again.stderr
        );
        let path = std::env::temp_dir().join(format!("runbook-{sweep}-seed-{}.log", s.seed));
        let _ = std::fs::write(&path, log);
        if let Some(first) = out.first().map(|f| f.0) {
            out.push((first, format!("(script output: {})", path.display())));
        }
    }
    out
}

fn pki() -> Pki {
    Pki::new()
}

fn cases(default: u64) -> u64 {
    std::env::var("RUNBOOK_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Cases run side by side in one sweep (`RUNBOOK_JOBS`, default 2): a case mostly waits (polls,
/// timeouts), so more cases than cores keep the machine busy.
fn jobs() -> usize {
    std::env::var("RUNBOOK_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&j| j > 0)
        .unwrap_or(2)
}

fn describe(s: &Shape) -> String {
    let count = |f: &dyn Fn(&NodeShape) -> bool| s.nodes.iter().filter(|n| f(n)).count();
    format!(
        "{} node(s) ({} NotReady{}, {} core_mem, {} cordoned{}), {}, max-unavailable {}, upgrade {}, {:?} on node {} after {} change(s)",
        s.nodes.len(),
        count(&|n| !n.ready),
        if s.recover && s.nodes.iter().any(|n| !n.ready) {
            " then Ready"
        } else {
            ""
        },
        count(&|n| n.core),
        count(&|n| n.cordoned),
        if s.include_cordoned {
            ", --include-cordoned"
        } else {
            ""
        },
        s.strategy,
        s.max_unavailable,
        s.upgrade,
        s.fault,
        s.fault_node,
        s.fault_after
    )
}

/// Run `n` seeded cases with faults from `faults`; assert the invariants `check`. Prints each
/// case and, at the end, the sweep's size and wall time (visible with `--nocapture`).
fn sweep(name: &str, faults: &[Fault], check: &[Inv], n: u64, max_nodes: u64) {
    let pki = pki();
    let start = Instant::now();
    let base: u64 = std::env::var("RUNBOOK_BASE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(19_000);
    let seeds: Vec<u64> = match std::env::var("RUNBOOK_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(s) => vec![s],
        None => (0..n).map(|i| base + i).collect(),
    };
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    let jobs = jobs().min(seeds.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(&seed) = seeds.get(k) else { break };
                    let shape = Shape::random_full(seed, faults, max_nodes);
                    let t = Instant::now();
                    let found = case(&pki, name, shape.clone());
                    eprintln!(
                        "{name}: seed {seed}: {}: {:.1}s, {}",
                        describe(&shape),
                        t.elapsed().as_secs_f64(),
                        if found.is_empty() {
                            "ok".to_string()
                        } else {
                            format!("{:?}", found.iter().map(|f| f.0).collect::<BTreeSet<_>>())
                        }
                    );
                    results.lock().unwrap().push((seed, shape, found));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|r| r.0);
    let mut broken: Vec<String> = Vec::new();
    let mut all: BTreeMap<Inv, u32> = BTreeMap::new();
    for (seed, shape, found) in results {
        for (inv, msg) in found {
            *all.entry(inv).or_default() += 1;
            if check.contains(&inv) {
                broken.push(format!(
                    "seed {seed} ({:?}, {:?}): {inv:?}: {msg}",
                    shape.fault, shape.strategy
                ));
            }
        }
    }
    eprintln!(
        "{name}: sweep of {} case(s) (seeds {}..={}, 2 runs each, {jobs} side by side) in {:.1}s wall; invariants broken (all, checked or not): {all:?}",
        seeds.len(),
        seeds.first().copied().unwrap_or(base),
        seeds.last().copied().unwrap_or(base),
        start.elapsed().as_secs_f64()
    );
    assert!(
        broken.is_empty(),
        "{name}: invariants broken:\n{}",
        broken.join("\n")
    );
}

// ---- the protocol: real kubectl against the fake ----------------------------------------------

#[test]
fn real_kubectl_cordons_drains_execs_and_waits_against_the_fake() {
    let pki = pki();
    let shape = Shape {
        seed: 1,
        nodes: vec![NodeShape {
            name: "cn-hangzhou.10.0.1.11".into(),
            instance: "i-bp1aaaaaaaaaaaaaaa01".into(),
            module: Module::Old,
            cordoned: false,
            gpus: 2,
            workloads: 1,
            ready: true,
            core: false,
        }],
        strategy: "OnDelete",
        max_unavailable: 1,
        upgrade: false,
        policy_change: true,
        spare_ready: true,
        fault: Fault::None,
        fault_node: 0,
        fault_after: 0,
        include_cordoned: false,
        recover: false,
    };
    let w = World::start(&pki, shape);
    let node = "cn-hangzhou.10.0.1.11";
    let k = |args: &[&str]| {
        let out = Command::new(kubectl())
            .env("HOME", w.dir.path())
            .env("KUBECONFIG", &w.kubeconfig)
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, uid, _) = k(&[
        "get",
        "namespace",
        "kube-system",
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    assert_eq!(
        (code, uid.as_str()),
        (0, "d2b7c1f4-9a3e-4c6b-8e21-0f5a7c3d9b11")
    );
    let (_, pid, _) = k(&["get", "node", node, "-o", "jsonpath={.spec.providerID}"]);
    assert_eq!(pid, "cn-hangzhou.i-bp1aaaaaaaaaaaaaaa01");
    let (_, pod, _) = k(&[
        "-n",
        "kube-system",
        "get",
        "pod",
        "-l",
        "name in (cgpu-installer,cgpu-core-installer)",
        "--field-selector",
        &format!("spec.nodeName={node}"),
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]);
    assert!(pod.starts_with("cgpu-installer-"), "{pod}");
    // exec over WebSocket: the node's module as /proc/cgpu_km, and the exit status.
    let (code, out, err) = k(&[
        "-n",
        "kube-system",
        "exec",
        &pod,
        "--",
        "nsenter",
        "-t",
        "1",
        "-m",
        "--",
        "sh",
        "-c",
        "cat /proc/cgpu_km/version; cat /proc/cgpu_km/1/policy; echo oops >&2; exit 3",
    ]);
    assert_eq!((code, out.as_str()), (3, "1.5.9\n1\n"), "{err}");
    assert!(err.contains("oops"), "{err}");
    // annotate (merge patch), cordon (strategic merge patch), drain (eviction), uncordon.
    assert_eq!(
        k(&[
            "annotate",
            "node",
            node,
            &format!("{MARK}=true"),
            "--overwrite"
        ])
        .0,
        0
    );
    assert_eq!(k(&["cordon", node]).0, 0);
    let (code, _, err) = k(&[
        "drain",
        node,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=20s",
    ]);
    assert_eq!(code, 0, "{err}");
    let st = w.state("prod");
    let n = &st["nodes"][node];
    assert_eq!(
        (n["unschedulable"].clone(), n["workloads"].clone()),
        (json!(true), json!(0))
    );
    let kinds: Vec<(String, String)> = st["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ev"] == "patch-node")
        .map(|e| {
            (
                e["node"].as_str().unwrap().into(),
                e["content_type"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            (node.to_string(), "application/merge-patch+json".to_string()),
            (
                node.to_string(),
                "application/strategic-merge-patch+json".to_string()
            )
        ]
    );
    // delete --wait (watch), the pod comes back from the template; reboot; wait Ready (watch).
    assert_eq!(
        k(&["-n", "kube-system", "delete", "pod", &pod, "--wait=true"]).0,
        0
    );
    let r = Command::new(root().join("tests/runbook/aliyun"))
        .args([
            "ecs",
            "RebootInstance",
            "--InstanceId",
            "i-bp1aaaaaaaaaaaaaaa01",
            "--RegionId",
            "cn-hangzhou",
        ])
        .env(
            "RUNBOOK_ADMIN",
            format!("http://127.0.0.1:{}", w.fake.admin.unwrap()),
        )
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    std::thread::sleep(std::time::Duration::from_millis(500));
    let (code, _, err) = k(&[
        "wait",
        "--for=condition=Ready",
        &format!("node/{node}"),
        "--timeout=20s",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(k(&["uncordon", node]).0, 0);
    w.settle();
    let st = w.state("prod");
    let reboot = st["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["ev"] == "reboot")
        .unwrap()
        .clone();
    assert_eq!(
        (
            reboot["cordoned"].clone(),
            reboot["drained"].clone(),
            reboot["provider_id_matches"].clone()
        ),
        (json!(true), json!(true), json!(true))
    );
    // The module came back from the new installer pod (the template: POLICY 1 until applied).
    assert_eq!(
        st["nodes"][node]["module"],
        json!({"version": "1.5.9", "policies": ["1", "1"]})
    );
    // A PodDisruptionBudget that allows nothing: 429, and drain gives up at its timeout.
    w.admin(json!({"op": "fault", "cluster": "staging", "fault": "drain_refused", "node": node}));
    let staging = |args: &[&str]| {
        let mut a = vec!["--context", "staging"];
        a.extend_from_slice(args);
        k(&a)
    };
    let (code, _, err) = staging(&["drain", node, "--ignore-daemonsets", "--timeout=2s"]);
    assert_ne!(code, 0);
    assert!(err.contains("disruption budget"), "{err}");
}

// ---- the sweeps ---------------------------------------------------------------------------------
//
// Every sweep asserts every invariant. Until the pinned script landed (main 74e57e6) the ones it
// broke were asserted by #[ignore]d twins (no effective canary, wrong context, declined
// confirmation, re-plan after the change).

/// Static faults (and none): drain refused, exec failing, reboot refused, reboot accepted but
/// never happening, node never Ready, installer pod never Ready, old policy after the reboot.
#[test]
fn sweep_static_faults() {
    sweep("static", STATIC_FAULTS, ALL, cases(2), 4);
}

/// A node deleted or replaced mid-run, POLICY changed by someone else mid-run.
#[test]
fn sweep_mid_run_faults() {
    sweep("mid-run", MID_RUN_FAULTS, ALL, cases(2), 4);
}

/// The kubeconfig's current context on another cluster, or the context name pointing at one.
#[test]
fn sweep_wrong_context() {
    sweep("context", CONTEXT_FAULTS, ALL, cases(1), 3);
}

/// Time and other people: the DaemonSet's image changed between plan and run (the
/// chart default's 1.5.3), a node an earlier run left down, a node in an NVIDIA driver upgrade
/// or under kured's lock, two runs of one plan at once and one after the other's first cordon.
#[test]
fn sweep_coordination() {
    sweep("coordination", COORDINATION_FAULTS, ALL, cases(2), 4);
}

/// Answering "N" at the first question changes nothing.
#[test]
fn declined_confirmation_changes_nothing() {
    sweep("declined", &[Fault::Declined], ALL, cases(1), 3);
}

// ---- seeds the sweeps found, named ------------------------------------------------------------------

/// Seed 501 (static): the plan's first node is at the target, the canary is skipped, and two
/// nodes are cordoned and rebooted together before any canary came back.
#[test]
fn regression_seed_501_no_effective_canary() {
    replay("static", STATIC_FAULTS, 4, 501, ALL);
}

/// Seed 500 (context): `prod` in the kubeconfig points at staging; the run drains staging's
/// nodes of the same names and reboots prod's instances recorded at plan time.
#[test]
fn regression_seed_500_context_points_at_another_cluster() {
    replay("context", CONTEXT_FAULTS, 3, 500, ALL);
}

/// An upgrade that keeps POLICY (cGPU 1.5.9 -> 1.5.10, policy 2 before and after) under
/// OnDelete: the installer pod must be renewed for its image, or the module comes back at 1.5.9.
#[test]
fn an_upgrade_that_keeps_the_policy_converges_under_on_delete() {
    let pki = pki();
    let shape = Shape {
        seed: 7,
        nodes: vec![
            NodeShape {
                name: "cn-hangzhou.10.0.1.11".into(),
                instance: "i-bp1bbbbbbbbbbbbbb011".into(),
                module: Module::Old,
                cordoned: false,
                gpus: 1,
                workloads: 1,
                ready: true,
                core: false,
            },
            NodeShape {
                name: "cn-hangzhou.10.0.1.12".into(),
                instance: "i-bp1bbbbbbbbbbbbbb012".into(),
                module: Module::Old,
                cordoned: false,
                gpus: 2,
                workloads: 0,
                ready: true,
                core: false,
            },
        ],
        strategy: "OnDelete",
        max_unavailable: 1,
        upgrade: true,
        policy_change: false,
        spare_ready: true,
        fault: Fault::None,
        fault_node: 0,
        fault_after: 0,
        include_cordoned: false,
        recover: false,
    };
    let found = case(&pki, "tag-only", shape);
    assert!(found.is_empty(), "{found:#?}");
}

/// The judge is not blind: a launcher replaced by a tool that goes on after a refused drain
/// (plain kubectl and aliyun: cordon, a drain that fails, the reboot anyway) reboots a node
/// that was not drained, past the fault, and the invariants say so.
#[test]
fn the_invariants_catch_a_tool_that_goes_on_after_a_refused_drain() {
    let pki = pki();
    let node = |i: u32| NodeShape {
        name: format!("cn-hangzhou.10.0.1.{}", 11 + i),
        instance: format!("i-bp1cccccccccccccc0{i}"),
        module: Module::Old,
        cordoned: false,
        gpus: 1,
        workloads: 1,
        ready: true,
        core: false,
    };
    let shape = Shape {
        seed: 11,
        nodes: vec![node(1), node(2)],
        strategy: "RollingUpdate",
        max_unavailable: 1,
        upgrade: false,
        policy_change: true,
        spare_ready: true,
        fault: Fault::DrainRefused,
        fault_node: 0,
        fault_after: 0,
        include_cordoned: false,
        recover: false,
    };
    let found = case_with(&pki, "mutant", shape, &|_| {
        mutant(&[
            "k annotate node cn-hangzhou.10.0.1.12 cgpu-lint/cordoned=true",
            "k cordon cn-hangzhou.10.0.1.12",
            "k drain cn-hangzhou.10.0.1.12 --ignore-daemonsets --timeout=2s || true",
            "aliyun ecs RebootInstance --RegionId cn-hangzhou --InstanceId i-bp1cccccccccccccc01",
        ])
    });
    let kinds: BTreeSet<Inv> = found.iter().map(|f| f.0).collect();
    for want in [Inv::RebootOnlyDrained, Inv::StopsAtFault] {
        assert!(kinds.contains(&want), "{want:?} not reported: {found:#?}");
    }
}

/// A stand-in for the launcher that acts with plain kubectl (pinned to the plan's context) and
/// aliyun, with no lock, no checks and no decisions: what the judge must catch.
fn mutant(lines: &[&str]) -> String {
    let mut s =
        String::from("#!/usr/bin/env bash\nset -u\nk() { kubectl --context prod \"$@\"; }\n");
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s.push_str("exit 0\n");
    s
}

/// A small case of one of the drift shapes: `n` nodes at the old policy, one workload each.
fn coordination_shape(seed: u64, n: u32, strategy: &'static str, fault: Fault) -> Shape {
    Shape {
        seed,
        nodes: (0..n)
            .map(|i| NodeShape {
                name: format!("cn-hangzhou.10.0.1.{}", 11 + i),
                instance: format!("i-bp1eeeeeeeeeeeeee0{i}"),
                module: Module::Old,
                cordoned: false,
                gpus: 1,
                workloads: 1,
                ready: true,
                core: false,
            })
            .collect(),
        strategy,
        max_unavailable: 1,
        upgrade: false,
        policy_change: true,
        spare_ready: true,
        fault,
        fault_node: 0,
        fault_after: 0,
        include_cordoned: false,
        recover: false,
    }
}

/// A trial: the case breaks no invariant, and a stand-in tool (`mutant`) that skips the guard
/// in question breaks each of `want`: the invariants can fail.
fn trial(shape: Shape, without_guard: &[&str], want: &[Inv]) {
    let pki = pki();
    let found = case(&pki, "trial", shape.clone());
    assert!(found.is_empty(), "{found:#?}");
    let found = case_with(&pki, "trial-mutant", shape, &|_| mutant(without_guard));
    let kinds: BTreeSet<Inv> = found.iter().map(|f| f.0).collect();
    for w in want {
        assert!(kinds.contains(w), "{w:?} not reported: {found:#?}");
    }
}

/// A trial of time and other people: planned for POLICY 2 on cGPU 1.5.9, then a plain `helm upgrade`
/// brought the chart default's 1.5.3 too; the run stops before any change and says to plan
/// again. Without the plan check, the judge sees nodes rebooted into 1.5.3.
#[test]
fn an_image_changed_between_plan_and_run_stops_before_any_change() {
    trial(
        coordination_shape(41, 2, "RollingUpdate", Fault::ImageDrift),
        &[
            "k annotate node cn-hangzhou.10.0.1.11 cgpu-lint/cordoned=true",
            "k drain cn-hangzhou.10.0.1.11 --ignore-daemonsets --delete-emptydir-data --timeout=5s",
            "aliyun ecs RebootInstance --RegionId cn-hangzhou --InstanceId i-bp1eeeeeeeeeeeeee00",
            "sleep 3",
            "k uncordon cn-hangzhou.10.0.1.11",
        ],
        &[Inv::DriftStops, Inv::AsPlanned],
    );
}

/// A trial of time and other people: two copies of one script started 0.5 s apart with --yes. One runs,
/// the other names the lock's holder and changes nothing; without the lock both act.
#[test]
fn two_runs_of_one_plan_never_act_at_once() {
    trial(
        coordination_shape(42, 3, "OnDelete", Fault::ConcurrentStart),
        &[
            "k annotate node cn-hangzhou.10.0.1.11 cgpu-lint/cordoned=true --overwrite",
            "k cordon cn-hangzhou.10.0.1.11",
            "sleep 1",
            "k uncordon cn-hangzhou.10.0.1.11",
            "k annotate node cn-hangzhou.10.0.1.11 cgpu-lint/cordoned-",
        ],
        &[Inv::LockHeld],
    );
}

/// A trial of time and other people: a run stopped at wait-node-ready left its node NotReady, cordoned
/// and marked; a re-run while it is still down takes no other node (the budget of 1 is held)
/// and finishes it once it is back. Without the budget check it drains a second node.
#[test]
fn a_node_left_down_by_an_earlier_run_holds_the_budget() {
    trial(
        coordination_shape(43, 2, "OnDelete", Fault::DownMarked),
        &[
            "k annotate node cn-hangzhou.10.0.1.12 cgpu-lint/cordoned=true",
            "k cordon cn-hangzhou.10.0.1.12",
        ],
        &[Inv::CordonLimit],
    );
}

/// Seed 1003 (mid-run): the node is replaced (same name, new instance) after the plan; the run
/// reboots the instance recorded at plan time, which the live providerID no longer names.
#[test]
fn regression_seed_1003_node_replaced_is_rebooted_by_its_old_instance() {
    replay(
        "mid-run",
        MID_RUN_FAULTS,
        4,
        1003,
        &[Inv::RebootLiveInstance],
    );
}

/// Seed 1000 (mid-run): POLICY goes back to 1 between the canary's cordon and its reboot; the
/// node came back at policy 1 and the re-run (POLICY 2 again) rebooted it a second time. The
/// script now reads the DaemonSet again right before RebootInstance and stops there (7698412).
#[test]
fn regression_seed_1000_policy_changed_mid_run_reboots_twice() {
    replay("mid-run", MID_RUN_FAULTS, 4, 1000, &[Inv::Converges]);
}

/// Seed 40033 (mid-run, the large sweep): the canary is replaced (same name, new UID) right
/// after its cordon; `kubectl drain` cordoned the new node, at the target, without our mark,
/// and no run ever uncordoned it. The script now reads the node (UID) again before the drain.
#[test]
fn regression_seed_40033_node_replaced_after_the_cordon_is_not_drained() {
    replay_full("mid-run", MID_RUN_FAULTS, 4, 40033, ALL);
}

/// Seed 19006 (static): two nodes NotReady from the start hold the RollingUpdate (their new
/// installer pods never become Ready); the health gate stops every run before any change and
/// must name them, or the re-run's "not done" does not say which nodes it waits for.
#[test]
fn regression_seed_19006_not_ready_nodes_hold_a_rolling_update() {
    replay_full("static", STATIC_FAULTS, 4, 19006, ALL);
}

/// Seed 50033 (coordination, the 300-case sweep): the lock's keeper was killed while a renewal
/// was in flight; the stop read the resourceVersion written before it, saw the Lease "changed"
/// and left it, so the re-run found its own plan's lock held. The keeper is now asked to stop
/// and waited for, and the release goes by the holder.
#[test]
fn regression_seed_50033_a_renewal_in_flight_at_the_stop_kept_the_lock() {
    replay_full("coordination", COORDINATION_FAULTS, 4, 50033, ALL);
}

/// The only free aliyun.com/gpu-mem is on a NotReady node: evicted pods could not land, so the
/// capacity gate stops the run before the first cordon.
#[test]
fn the_capacity_gate_does_not_count_a_not_ready_node() {
    let pki = pki();
    let shape = Shape {
        seed: 13,
        nodes: vec![NodeShape {
            name: "cn-hangzhou.10.0.1.11".into(),
            instance: "i-bp1dddddddddddddd011".into(),
            module: Module::Old,
            cordoned: false,
            gpus: 1,
            workloads: 1,
            ready: true,
            core: false,
        }],
        strategy: "RollingUpdate",
        max_unavailable: 1,
        upgrade: false,
        policy_change: true,
        spare_ready: false,
        fault: Fault::None,
        fault_node: 0,
        fault_after: 0,
        include_cordoned: false,
        recover: false,
    };
    let w = World::start(&pki, shape);
    w.generate();
    w.apply();
    let ran = w.run(true, "");
    let mut j = Judge {
        w: &w,
        out: Vec::new(),
    };
    j.changes_nothing(
        Inv::StopsAtFault,
        "prod",
        ran.from.0,
        "capacity on a NotReady node",
    );
    assert!(j.out.is_empty(), "{:?}", j.out);
    assert_ne!(ran.code, 0, "{}", ran.stdout);
    assert!(ran.stderr.contains("step capacity"), "{}", ran.stderr);
}

fn replay(name: &str, faults: &[Fault], max_nodes: u64, seed: u64, check: &[Inv]) {
    replay_shape(name, Shape::random(seed, faults, max_nodes), check);
}

/// A seed of the sweeps as they are now (`Shape::random_full`: NotReady, core_mem,
/// `--include-cordoned`).
fn replay_full(name: &str, faults: &[Fault], max_nodes: u64, seed: u64, check: &[Inv]) {
    replay_shape(name, Shape::random_full(seed, faults, max_nodes), check);
}

fn replay_shape(name: &str, shape: Shape, check: &[Inv]) {
    let pki = pki();
    let seed = shape.seed;
    let found = case(&pki, name, shape);
    let broken: Vec<String> = found
        .iter()
        .filter(|f| check.contains(&f.0))
        .map(|f| format!("{:?}: {}", f.0, f.1))
        .collect();
    assert!(broken.is_empty(), "seed {seed}: {}", broken.join("\n"));
}

// ---- kill -9 at every change --------------------------------------------------------------------

/// The changes a run made (by its token) since `from`: what a kill may fall between.
fn changes_by(w: &World, from: usize, token: &str) -> usize {
    w.state("prod")["history"].as_array().unwrap()[from..]
        .iter()
        .filter(|e| e["by"] == token && (destructive(e) || e["ev"] == "patch-node"))
        .count()
}

/// `kill -9` the rollout a run started (the launcher execs it: the child of `timeout`).
fn kill_rollout(r: &Running) {
    let pid = r.child.id();
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    for child in children.split_whitespace() {
        let _ = Command::new("kill").args(["-9", child]).status();
    }
}

/// The reconciler keeps no state of its own: a run killed with `kill -9` right after its k-th
/// change (every k a clean run makes), then a run again with `--break-lock` (the holder's
/// process is gone), converges with one reboot per node, and every invariant holds over both.
#[test]
fn a_run_killed_after_any_change_is_finished_by_the_next_with_one_reboot_per_node() {
    let pki = pki();
    let mut shape = coordination_shape(44, 2, "OnDelete", Fault::None);
    shape.nodes[1].workloads = 0;
    let total = {
        let w = World::start(&pki, shape.clone());
        w.generate();
        w.apply();
        let from = w.history_len("prod");
        let ran = w.run(true, "");
        assert_eq!(ran.code, 0, "{}", ran.stderr);
        changes_by(&w, from, TOKEN)
    };
    assert!(total >= 10, "a clean run made {total} changes");
    let next = std::sync::atomic::AtomicUsize::new(1);
    let found: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..jobs() {
            scope.spawn(|| {
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if k > total {
                        break;
                    }
                    let w = World::start(&pki, shape.clone());
                    w.generate();
                    w.apply();
                    let start = w.history_len("prod");
                    let mut a = w.spawn(true, "", TOKEN);
                    let deadline = Instant::now() + std::time::Duration::from_secs(60);
                    while changes_by(&w, start, TOKEN) < k
                        && Instant::now() < deadline
                        && a.child.try_wait().ok().flatten().is_none()
                    {
                        std::thread::sleep(std::time::Duration::from_millis(10));
                    }
                    kill_rollout(&a);
                    let _ = a.child.try_wait();
                    let first = w.finish(a);
                    let again = w.finish(w.spawn_with(true, "", TOKEN, &["--break-lock"]));
                    let mut j = Judge {
                        w: &w,
                        out: Vec::new(),
                    };
                    j.every_run("killed run", &first);
                    j.every_run("re-run", &again);
                    j.converges(&[&first, &again], &again);
                    j.lock_and_plan(start);
                    if again.code != 0 {
                        j.fail(
                            Inv::Converges,
                            format!("re-run exited {}: {}", again.code, tail(&again.stderr)),
                        );
                    }
                    let mut f = found.lock().unwrap();
                    for (inv, msg) in j.out {
                        f.push(format!("killed after change {k}: {inv:?}: {msg}"));
                    }
                }
            });
        }
    });
    eprintln!(
        "kill -9 after each of {total} changes, then a re-run: {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let found = found.into_inner().unwrap();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Seed 30025 (coordination, the 300-case sweep): planned again after a chart default put
/// cGPU 1.5.3 in the DaemonSet, the run refused the downgrade on the nodes running 1.5.9 but
/// restarted the installer pod of a node with no module, which loaded 1.5.3. A refused
/// downgrade now blocks every change but finishing nodes already at the goal.
#[test]
fn regression_seed_30025_a_refused_downgrade_blocks_loading_the_older_module_elsewhere() {
    replay_full("coordination", COORDINATION_FAULTS, 4, 30025, ALL);
}

/// Seed 30038 (coordination): under RollingUpdate a node's installer pod was being replaced
/// when the re-run read it ("no cgpu-installer pod"), and the run stopped; a missing or
/// not-Ready installer pod is now waited for (--wait-timeout).
#[test]
fn regression_seed_30038_an_installer_pod_being_replaced_is_waited_for() {
    replay_full("coordination", COORDINATION_FAULTS, 4, 30038, ALL);
}

/// Seed 30012 (mid-run): the node was deleted right after its reboot was recorded on it; the
/// run rebooted its instance anyway. The node is read again right before the ECS call.
#[test]
fn regression_seed_30012_a_node_deleted_after_its_reboot_mark_is_not_rebooted() {
    replay_full("mid-run", MID_RUN_FAULTS, 4, 30012, ALL);
}

/// Seed 40024 (mid-run, the second 300-case sweep): POLICY went back to 1 right after the
/// node's reboot mark, and the run rebooted it from the same observation. The DaemonSet is
/// read again right before a reboot or an installer pod's deletion.
#[test]
fn regression_seed_40024_a_daemonset_changed_right_before_the_reboot_stops_it() {
    replay_full("mid-run", MID_RUN_FAULTS, 4, 40024, ALL);
}

/// Seed 40051 (static, the second 300-case sweep): the run read the module of a NotReady node
/// (its exec failed, the fault) though it skips such a node; an exec on a NotReady node is no
/// longer made.
#[test]
fn regression_seed_40051_a_not_ready_node_is_not_read() {
    replay_full("static", STATIC_FAULTS, 4, 40051, ALL);
}
