//! What a checklist is: the two sides of the change ([`Settings`], with where each key comes
//! from), the installer's placement and strategy, the nodes to restart ([`Target`]) and those
//! listed apart ([`Other`]), the run's [`Options`] and the cluster's [`Identity`], the [`Step`]s
//! the printers show, and why a checklist cannot be made ([`ChecklistError`]). Data only: `read.rs` and `plan.rs` fill it,
//! `steps.rs` and the printers read it; it imports none of them.

use std::sync::Arc;

use semver::Version;

use crate::cgpu::{POLICY_TITLES, Tag};
use crate::check::{DEFAULT_MAX_FILE_SIZE, InputError, read_input};
use crate::diag::Diagnostic;
use crate::lint;
use crate::manifest::Toleration;
use crate::yaml::Source;

/// Why a checklist cannot be made (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum ChecklistError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("{path}: not valid YAML or JSON: {message}")]
    Syntax { path: String, message: String },
    #[error(
        "{path}: neither a cgpu-installer DaemonSet nor a values file with a `cgpu:` block (give `kubectl get ds cgpu-installer -n kube-system -o yaml` or the deployed values)"
    )]
    NotCurrent { path: String },
    #[error("{path}: no `cgpu:` block: not an ack-ai-installer values file")]
    NotValues { path: String },
    #[error("{path}: no Node objects (give `kubectl get nodes -o yaml`)")]
    NoNodes { path: String },
    #[error("{what}: {message}")]
    Unreadable { what: String, message: String },
    #[error(
        "refusing to print commands for {what} `{value}` from {path}: {why}; a real cluster never has such a name, so the input was altered"
    )]
    Refused {
        what: &'static str,
        value: String,
        path: String,
        why: &'static str,
    },
    #[error("--format shell needs --nodes: the script acts on named nodes only")]
    ShellNeedsNodes,
    #[error(
        "--format shell needs --context NAME: the script is pinned to one kubeconfig context and passes it to every kubectl call (planned from files, nothing else says which cluster the plan is for)"
    )]
    ShellNeedsContext,
}

/// Which cluster the plan is for. Planned with `--cluster` it holds what the API server said;
/// planned from files, the context named on the command line (the script reads and records
/// the cluster's identity at its first run).
#[derive(Debug, Clone, Default)]
pub struct Identity {
    /// The kubeconfig context every kubectl call of the script passes (`--context`).
    pub context: Option<String>,
    /// `--kubeconfig`, passed on to every kubectl call when given.
    pub kubeconfig: Option<String>,
    /// The API server URL of the context, when known.
    pub server: Option<String>,
    /// `metadata.uid` of the kube-system namespace: the cluster's identity.
    pub cluster_uid: Option<String>,
    /// When the plan was made (UTC, RFC 3339).
    pub planned_at: Option<String>,
    /// Why the cluster's identity could not be read when planning from it (the script then
    /// reads and records it at its first run).
    pub unread: Option<String>,
}

/// Now, or `SOURCE_DATE_EPOCH` when set (reproducible output), as RFC 3339 UTC.
pub fn planning_time() -> String {
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or_else(crate::date::now_secs);
    crate::date::rfc3339(secs)
}

/// What the run must find the installer DaemonSet running, as the plan saw and changed it: the
/// script compares the live DaemonSet with it at its start and before each change, and stops
/// ("plan again") at any difference, so that no node reboots into a version or policy other than
/// the plan's (a `helm upgrade` between the plan and the run, or during it).
#[derive(Debug, Clone, Default)]
pub struct Planned {
    /// The image the DaemonSet runs after the change (`host/path:tag`), when it can be told: the
    /// live image with the desired path and tag. `None`: only the version is compared.
    pub image: Option<String>,
    /// The image the DaemonSet ran when the plan was made.
    pub live_image: Option<String>,
    /// The cGPU version (`1.5.10`) every restarted node comes back with.
    pub version: Option<String>,
    pub strategy: Option<Strategy>,
    /// The DaemonSet's pod selector, when read from it.
    pub selector: Option<Vec<(String, String)>>,
    /// `metadata.generation` when the plan was made (a `helm upgrade` moves it on).
    pub generation: Option<u64>,
}

/// The cGPU settings on one side of the change.
#[derive(Debug, Clone)]
pub struct Settings {
    pub policy: u8,
    /// The image tag (`v1.5.3-8d3fc1b-aliyun`), when known.
    pub tag: Option<String>,
    pub version: Option<Tag>,
}

/// What the installer DaemonSet runs on: its nodeSelector and its tolerations (the DaemonSet
/// controller's defaults included).
#[derive(Debug, Clone, Default)]
pub struct Placement {
    pub selector: Vec<(String, String)>,
    pub tolerations: Vec<Toleration>,
}

/// How the installer DaemonSet replaces its pods after a change of its template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// The controller replaces the pods itself (apps/v1's default).
    RollingUpdate,
    /// A pod is replaced only when it is deleted: the node's old pod (with the old POLICY)
    /// comes back after a reboot unless it was deleted first.
    OnDelete,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::RollingUpdate => "RollingUpdate",
            Strategy::OnDelete => "OnDelete",
        }
    }
}

/// How the run is to go, from the command line.
#[derive(Debug, Clone)]
pub struct Options {
    /// Nodes restarted at once after the canary.
    pub max_unavailable: u32,
    /// Process nodes that were cordoned before the run (they stay cordoned at the end).
    pub include_cordoned: bool,
    /// `kubectl drain --timeout` (a Go duration such as `10m`).
    pub drain_timeout: String,
    /// The findings' settings as resolved with `.cgpu-lint.toml`: `--select/--ignore` with the
    /// file's, its per-file-ignores, and its region (the fallback when the nodes give none); the
    /// rule options are the plan's own.
    pub settings: lint::Settings,
    /// The cluster the plan is pinned to.
    pub identity: Identity,
    /// `--reuse-values`: the desired values are layered over the values deployed now (as
    /// `helm upgrade --reuse-values` does), not over the chart defaults alone.
    pub reuse_values: bool,
    /// `--allow-downgrade`: a lower cGPU version than the live one is planned, not blocked.
    pub allow_downgrade: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_unavailable: 1,
            include_cordoned: false,
            drain_timeout: "10m".into(),
            settings: lint::Settings::default(),
            identity: Identity::default(),
            reuse_values: false,
            allow_downgrade: false,
        }
    }
}

/// Where a cgpu key's value after the upgrade comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Set by the desired values file.
    Desired,
    /// `--policy`/`--tag` on the command line.
    CommandLine,
    /// Kept from the values deployed now (`--reuse-values`, or `--policy` without `--tag`).
    Reused,
    /// Left out: the chart default applies (`helm upgrade -f FILE` without `--reuse-values`).
    ChartDefault,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Desired => "desired-file",
            Origin::CommandLine => "command-line",
            Origin::Reused => "reused",
            Origin::ChartDefault => "chart-default",
        }
    }
}

/// One cgpu key as the upgrade will set it.
#[derive(Debug, Clone)]
pub struct KeyChange {
    /// `cgpu.tag`.
    pub key: String,
    /// The live value, when it could be read (`None`: unknown or unset).
    pub live: Option<String>,
    /// The value after the upgrade (`None`: unset).
    pub after: Option<String>,
    pub from: Origin,
}

impl KeyChange {
    pub fn changes(&self) -> bool {
        self.live.is_some() && self.live != self.after
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeState {
    Ready,
    Cordoned,
    NotReady,
}

impl NodeState {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::Ready => "ready",
            NodeState::Cordoned => "cordoned",
            NodeState::NotReady => "not-ready",
        }
    }
}

/// A node the installer runs on, to restart.
#[derive(Debug, Clone)]
pub struct Target {
    pub name: String,
    pub state: NodeState,
    /// Cordoned before this change: left cordoned at the end.
    pub was_cordoned: bool,
    pub notes: Vec<String>,
    /// Validated ECS instance id and region, when the provider id is the ECS form.
    pub instance_id: Option<String>,
    pub region: Option<String>,
    pub canary: bool,
    /// `metadata.uid` when the input has it: the script checks it before touching the node.
    pub uid: Option<String>,
    /// `spec.providerID` as read (the ECS form `<region>.<instance>`), when validated.
    pub provider_id: Option<String>,
    /// Cordoned by an earlier run of a checklist (annotation `steps::CORDON_MARK`): ours to finish.
    pub ours: bool,
}

/// A node listed apart.
#[derive(Debug, Clone)]
pub struct Other {
    pub name: String,
    pub kind: OtherKind,
    pub reason: String,
    /// cGPU may be loaded there with a policy of its own: its policy files are read at the end,
    /// and the run is done only when they show the target.
    pub verify: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtherKind {
    /// Uses cGPU isolation through another installer (core_mem, legacy cgpu=true).
    AlsoIsolated,
    /// Matches the selector but the installer does not run there (virtual, untolerated taint).
    Excluded,
    /// Runs the installer but is left out of this run (cordoned before it).
    Skipped,
    /// No cGPU isolation.
    NotAffected,
}

#[derive(Debug, Clone)]
pub struct Checklist {
    pub current: Settings,
    pub desired: Settings,
    pub policy_change: Option<(u8, u8)>,
    /// Tags whose version cores differ (an upgrade or downgrade: nodes restart).
    pub tag_change: Option<(String, String)>,
    /// Tags that differ only in the build suffix: not an upgrade.
    pub build_change: Option<(String, String)>,
    pub placement: Placement,
    /// The nodes file was given.
    pub nodes_given: bool,
    /// Canary first, then the rest in input order.
    pub nodes: Vec<Target>,
    pub other_nodes: Vec<Other>,
    pub diagnostics: Vec<Diagnostic>,
    pub current_path: String,
    pub desired_label: String,
    pub nodes_path: Option<String>,
    /// POLICY of cgpu-core-installer when `--current` held it too.
    pub core_policy: Option<u8>,
    pub options: Options,
    /// The installer's update strategy, when `--current` is the DaemonSet.
    pub strategy: Option<Strategy>,
    /// Findings that make the plan unsafe: no step may run before they are fixed.
    pub blocking: Vec<Diagnostic>,
    /// What the plan assumes or explains (POLICY not set, a rollout explained by NotReady nodes).
    pub plan_notes: Vec<String>,
    /// NotReady nodes the installer runs on now (its pods there cannot be ready).
    pub not_ready_now: Vec<String>,
    /// An error finding that counts (not a live tag-too-old the change replaces).
    pub error_findings: bool,
    /// The installer DaemonSet's own pod selector (`.spec.selector.matchLabels`), when
    /// `--current` is the DaemonSet; the script reads it from the cluster again in any case.
    pub pod_selector: Vec<(String, String)>,
    /// Nodes of the list that run the installer (targets, cordoned ones included).
    pub installer_nodes: usize,
    /// What the upgrade does to every cgpu key (live → after, and from where).
    pub upgrade: Vec<KeyChange>,
    /// The desired values turn cGPU off (`enabled` false as the chart reads it): the plan is
    /// the removal, with no reboots.
    pub disabled: bool,
    /// With `disabled`: what the upgrade removes, what stays on the nodes, how to verify.
    pub removal: Vec<Step>,
    /// What the run must find the DaemonSet running.
    pub planned: Planned,
}

impl Checklist {
    /// Something changes that needs a restart where the module is loaded.
    pub fn change(&self) -> bool {
        !self.disabled && (self.policy_change.is_some() || self.tag_change.is_some())
    }

    /// A restart may be needed on a node of the list (or, without `--nodes`, on some node).
    /// With `--nodes` this holds whether or not the DaemonSet already carries the change (a
    /// checklist made after `helm upgrade` still restarts the nodes that run the old policy):
    /// each node's own state decides at run time.
    pub fn reboot_required(&self) -> bool {
        if self.nodes_given {
            !self.nodes.is_empty()
        } else {
            self.change()
        }
    }

    /// The plan has per-node steps: the nodes are listed and some run the installer or are to
    /// be verified. This holds whether or not the DaemonSet already carries the change: the
    /// nodes' own state decides.
    pub fn acts(&self) -> bool {
        !self.disabled
            && self.nodes_given
            && (!self.nodes.is_empty() || self.to_verify().next().is_some())
    }

    /// The DaemonSet (or the values) already carries the desired policy and version.
    pub fn already_applied(&self) -> bool {
        !self.change()
    }

    /// Exit 1: something blocks the plan, or an error finding.
    pub fn has_errors(&self) -> bool {
        !self.blocking.is_empty() || self.error_findings
    }

    /// GPU-sharing nodes outside the run whose policy files are read at the end.
    pub fn to_verify(&self) -> impl Iterator<Item = &Other> {
        self.other_nodes.iter().filter(|o| o.verify)
    }
}

/// What the desired side is.
pub enum Desired<'a> {
    Values(&'a str),
    /// A values file read as this Helm reads it (`--helm`: Helm 3 its first document, Helm 4 all
    /// of them merged).
    ValuesAs(&'a str, crate::helm::Version),
    Policy {
        policy: u8,
        tag: Option<&'a str>,
    },
}

pub fn policy_title(p: u8) -> &'static str {
    POLICY_TITLES.get(p as usize).copied().unwrap_or("?")
}

/// One side's input: a file, or the objects `--cluster` read from a kubeconfig context (one
/// source per object). `label` names it in messages (the path, or the context).
#[derive(Debug, Clone)]
pub struct Inputs {
    pub label: String,
    pub sources: Vec<Arc<Source>>,
}

impl Inputs {
    pub fn file(path: &str) -> Result<Inputs, ChecklistError> {
        Ok(Inputs {
            label: path.to_string(),
            sources: vec![read_input(path, DEFAULT_MAX_FILE_SIZE)?],
        })
    }
}

/// A short version text for a tag (`1.5.3 (v1.5.3-8d3fc1b-aliyun)`).
pub fn version_text(s: &Settings) -> String {
    match (&s.version, &s.tag) {
        (Some(v), Some(t)) => format!("{} (`{t}`)", v.core),
        (None, Some(t)) => format!("`{t}`"),
        _ => "unknown".into(),
    }
}

pub fn core(s: &Settings) -> Option<&Version> {
    s.version.as_ref().map(|t| &t.core)
}

/// One step: what to do, and the command when there is one. `id` names the step in the
/// shell script's messages too, so a stop names the same step the ticket shows.
#[derive(Debug, Clone)]
pub struct Step {
    pub id: &'static str,
    pub title: String,
    /// The command a person copies (markdown, JSON `steps`): pod names looked up inline.
    pub command: Option<String>,
    /// Which outcome of the node's read-state the step belongs to.
    pub branch: Branch,
    /// The commands the script runs for this step, as argument lists (JSON `actions`).
    pub actions: Vec<Action>,
}

impl Step {
    pub(super) fn new(id: &'static str, title: String, command: Option<String>) -> Step {
        Step {
            id,
            title,
            command,
            branch: Branch::Always,
            actions: Vec::new(),
        }
    }
}

/// The outcome of a node's read-state that a step belongs to: the decision comes first, then
/// the steps of its branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Branch {
    /// Read before the decision, on every node.
    Always,
    /// Every GPU at the target already: only a checklist run's cordon is undone.
    AtTarget,
    /// The module is not loaded: restart the installer pod only.
    NoModule,
    /// The module is loaded and differs: cordon, drain, reboot.
    Differs,
}

impl Branch {
    pub fn as_str(self) -> &'static str {
        match self {
            Branch::Always => "always",
            Branch::AtTarget => "at-target",
            Branch::NoModule => "no-module",
            Branch::Differs => "differs",
        }
    }
}

/// One command of a step, exactly as the script runs it. `argv` may hold the placeholder
/// `{pod}` (the installer pod `find-installer-pod` recorded); `expect` says what it must show
/// (docs/runbook.md, "JSON actions").
#[derive(Debug, Clone)]
pub struct Action {
    pub action: &'static str,
    pub argv: Option<Vec<String>>,
    pub expect: serde_json::Value,
    /// Run only when this holds at run time: `schedulable` (the node is not cordoned),
    /// `marked` (it carries `steps::CORDON_MARK`), `pod-differs` (the pod's POLICY or image is not
    /// the DaemonSet's).
    pub only_if: Option<&'static str>,
}
