//! What the decision core takes and gives: the goal and the run's settings, what this process
//! did itself, each node's verdict and phase, the actions, the waits and the stops. Data only:
//! `decide` fills it, `run`, `status` and the plans read it.

use std::collections::{BTreeMap, BTreeSet};

use semver::Version;
use serde::Serialize;

use super::observe::{InstallerObs, Module};

/// What every GPU-sharing node of cgpu-installer must run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Goal {
    pub policy: u8,
    /// The cGPU version (`None`: not judged).
    pub version: Option<Version>,
    /// The image tag the DaemonSet must deploy (`None`: any with the version above).
    pub tag: Option<String>,
}

impl Goal {
    pub fn text(&self) -> String {
        match &self.version {
            Some(v) => format!("policy {} and cGPU {v}", self.policy),
            None => format!("policy {}", self.policy),
        }
    }

    /// Why a node is converged, in words.
    pub fn converged_text(&self) -> String {
        match &self.version {
            Some(v) => format!("every GPU shows policy {}, cGPU {v}", self.policy),
            None => format!("every GPU shows policy {}", self.policy),
        }
    }

    /// The state annotation of a node this rollout finished.
    pub fn done_state(&self) -> String {
        format!("done: {}", self.text())
    }
}

/// How the run is to go.
#[derive(Debug, Clone)]
pub struct Config {
    /// Nodes down at once after the canary (the canary alone before).
    pub max_unavailable: usize,
    /// Nodes cordoned by someone else are restarted too (and left cordoned).
    pub include_cordoned: bool,
    /// A node may be restarted into an older cGPU than its module runs.
    pub allow_downgrade: bool,
    /// Seconds each wait may take.
    pub reboot_timeout: i64,
    pub ready_timeout: i64,
    pub pod_timeout: i64,
    pub policy_timeout: i64,
    pub drain_timeout: i64,
    /// The cgpu-installer DaemonSet as the run found it at its start: any change stops it.
    pub pinned: Option<InstallerObs>,
    /// How a node is rebooted.
    pub reboot_via: RebootVia,
}

/// How a node is rebooted: the ECS API (the aliyun CLI, the instance the live providerID
/// names), or a short-lived privileged pod on the node that reboots it from inside, as kured
/// does (no cloud credentials; what a Job in the cluster uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RebootVia {
    #[default]
    Ecs,
    Node,
}

/// What this process did itself (a new process starts empty: nothing in it is needed to
/// decide, it only keeps one process from repeating an action whose effect it is waiting for).
#[derive(Debug, Clone, Default)]
pub struct Memory {
    /// Nodes whose reboot this process asked for.
    pub rebooted: BTreeSet<String>,
    /// Nodes whose installer pod this process deleted to load the module.
    pub restarted: BTreeSet<String>,
    /// Since when (seconds) each node has waited for the same thing.
    pub waiting_since: BTreeMap<(String, WaitKind), i64>,
}

impl Memory {
    /// After a decision: the waits it names start (or go on), the others end.
    pub fn note_waits(&mut self, d: &Decision, now: i64) {
        let current: BTreeSet<(String, WaitKind)> =
            d.waiting.iter().map(|w| (w.node.clone(), w.kind)).collect();
        self.waiting_since.retain(|k, _| current.contains(k));
        for k in current {
            self.waiting_since.entry(k).or_insert(now);
        }
    }
}

/// A node's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Converged,
    NeedsRestart,
    NoModule,
    Down,
    Held,
    RefusedDowngrade,
    NotOurs,
    Unreadable,
}

impl Kind {
    pub fn word(self) -> &'static str {
        match self {
            Kind::Converged => "converged",
            Kind::NeedsRestart => "needs a restart",
            Kind::NoModule => "no module",
            Kind::Down => "down",
            Kind::Held => "held by another actor",
            Kind::RefusedDowngrade => "refused downgrade",
            Kind::NotOurs => "not ours",
            Kind::Unreadable => "unreadable",
        }
    }
}

/// Where a node is in its restart, from its annotations (nothing: not in flight).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Cordoned by a run (drained next, then rebooted).
    Cordoned,
    /// Its reboot was asked for; the boot id has not changed yet.
    Rebooting,
    /// Rebooted: waiting for it to show the goal, then uncordoned.
    Rebooted,
}

/// One GPU-sharing node.
#[derive(Debug, Clone, Serialize)]
pub struct NodeVerdict {
    pub name: String,
    /// The installer that selects it.
    pub installer: Option<String>,
    pub verdict: Kind,
    /// Why, in words (always a string).
    pub why: String,
    /// In flight: a run cordoned it and has not finished it.
    pub phase: Option<Phase>,
    /// This tool's cordon is on it (uncordoned when it is finished).
    pub cordoned_by_us: bool,
    pub module: Option<Module>,
}

/// The next change, one API call (or one ECS call) each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Action {
    /// Cordon (if it is schedulable) and mark the node, in one patch guarded by its UID.
    Cordon {
        node: String,
        uid: String,
        mark: bool,
    },
    /// Evict one pod (the Eviction API: PodDisruptionBudgets hold).
    Evict {
        node: String,
        namespace: String,
        pod: String,
        uid: String,
    },
    /// Delete the node's installer pod: under OnDelete, the one made from the old template
    /// (before the reboot, so the node comes back with the new one); with no module loaded, to
    /// load it (no drain, no reboot).
    DeletePod {
        node: String,
        pod: String,
        uid: String,
        why: String,
    },
    /// Record the boot id and the time on the node, then reboot it.
    Reboot {
        node: String,
        uid: String,
        boot_id: String,
        provider_id: String,
        region: String,
        instance: String,
    },
    /// The node is at the goal: uncordon it if this tool cordoned it, mark it done.
    Finish {
        node: String,
        uid: String,
        uncordon: bool,
    },
}

impl Action {
    pub fn node(&self) -> &str {
        match self {
            Action::Cordon { node, .. }
            | Action::Evict { node, .. }
            | Action::DeletePod { node, .. }
            | Action::Reboot { node, .. }
            | Action::Finish { node, .. } => node,
        }
    }

    /// The step's name, as stops and Events name it.
    pub fn step(&self) -> &'static str {
        match self {
            Action::Cordon { .. } => "cordon",
            Action::Evict { .. } => "drain",
            Action::DeletePod { .. } => "delete-installer-pod",
            Action::Reboot { .. } => "reboot",
            Action::Finish { .. } => "uncordon",
        }
    }

    pub fn text(&self) -> String {
        match self {
            Action::Cordon { mark: true, .. } => "cordon it".into(),
            Action::Cordon { mark: false, .. } => {
                "take it (cordoned before the run: it stays cordoned)".into()
            }
            Action::Evict { namespace, pod, .. } => format!("evict pod {namespace}/{pod}"),
            Action::DeletePod { pod, why, .. } => format!("delete installer pod {pod} ({why})"),
            Action::Reboot {
                region, instance, ..
            } => format!("reboot ECS instance {instance} ({region})"),
            Action::Finish { uncordon: true, .. } => "uncordon it (done)".into(),
            Action::Finish {
                uncordon: false, ..
            } => "mark it done (it stays cordoned, as it was before the run)".into(),
        }
    }
}

/// What a node in flight waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitKind {
    Drain,
    InstallerPod,
    Reboot,
    Ready,
    Policy,
    Health,
}

impl WaitKind {
    pub fn step(self) -> &'static str {
        match self {
            WaitKind::Drain => "drain",
            WaitKind::InstallerPod => "wait-installer-pod",
            WaitKind::Reboot => "wait-boot-id",
            WaitKind::Ready => "wait-node-ready",
            WaitKind::Policy => "wait-policy",
            WaitKind::Health => "installer-health",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Wait {
    pub node: String,
    pub kind: WaitKind,
    pub why: String,
}

/// The one next step a stop names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Next {
    /// Fix the cause, run again.
    Resume,
    /// Apply the desired values first (helm upgrade).
    Apply,
    /// The DaemonSet is not what the goal says: plan again.
    Replan,
    /// Nodes are down or held: bring them back (or wait for the other actor), run again.
    WaitNodes,
    /// A downgrade: `--allow-downgrade` or another tag.
    Downgrade,
    /// Nodes this run does not restart (another installer, cordoned before): their own step.
    OtherNodes,
}

/// Nothing safe is left to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stop {
    /// The node it stopped at (`None`: the cluster as a whole).
    pub node: Option<String>,
    pub step: &'static str,
    pub message: String,
    pub next: Next,
}

#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    pub nodes: Vec<NodeVerdict>,
    /// The next actions, in order: finishing first, then the nodes in flight, then new ones.
    pub actions: Vec<Action>,
    pub waiting: Vec<Wait>,
    pub stop: Option<Stop>,
    /// Every GPU-sharing node is converged and none is in flight.
    pub done: bool,
    /// The first node of the rollout has not been finished yet (batches are 1 until it is).
    pub canary: bool,
    /// Nodes taken now (cordoned by the actions): a new batch.
    pub batch: Vec<String>,
}
