//! The node-reboot checklist (spec §6): what changes between the deployed cGPU settings and the
//! desired ones, which nodes run the installer and must restart, and in what order. One model,
//! three printers (markdown task list, JSON, a reviewable shell script).

pub mod json;
pub mod markdown;
pub mod shell;

use crate::rules::catalogue::RuleId;
use std::sync::Arc;

use semver::Version;

use crate::cgpu::CHART_DEFAULTS;
use crate::cgpu::SCHEDULE_LABEL;
use crate::cgpu::{POLICY_TITLES, Tag, parse_tag, split_image};
use crate::check::{DEFAULT_MAX_FILE_SIZE, InputError, read_input};
use crate::diag::Diagnostic;
use crate::lint;
use crate::manifest::node::{NodeView, Taint, nodes_of};
use crate::manifest::{Objects, Toleration, daemonset_default_tolerations, scalar_text};
use crate::rules::catalogue::Severity;
use crate::rules::{NodeContext, RuleOptions, k8s};
use crate::yaml::{self, Node, Scalar, Source};

/// The policy cgpu-installer is assumed to apply when its POLICY env is missing. Nobody has
/// published the installer's built-in default (domain.md §10.3); the chart documents `policy: 1`,
/// so that is what a DaemonSet rendered from the chart would have carried. The assumption is
/// reported (installer-policy-missing) so a reader can check `/proc/cgpu_km/0/policy` on a node.
pub const ASSUMED_DEFAULT_POLICY: u8 = crate::cgpu::CHART_DEFAULT_POLICY;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecklistFormat {
    Markdown,
    Json,
    Shell,
}

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
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64)
        });
    rfc3339(secs)
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (days to civil date: H. Hinnant's
/// algorithm).
fn rfc3339(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
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

/// The deployed side as read from `--current`.
struct Current {
    /// The sources `--current` was read from (one file, or a cluster's objects).
    srcs: Vec<Arc<Source>>,
    settings: Settings,
    placement: Placement,
    /// The coalesced values root when `--current` is a values file (the base for `--desired`).
    values: Option<Node>,
    /// POLICY of a cgpu-core-installer given in the same input (a List, a stream), if any.
    core_policy: Option<u8>,
    /// The DaemonSet's update strategy, when `--current` is the DaemonSet.
    strategy: Option<Strategy>,
    /// `status.desiredNumberScheduled` and `status.numberReady` of a live DaemonSet.
    status: Option<(u64, u64)>,
    /// POLICY is not set on the DaemonSet: the plan assumes [`ASSUMED_DEFAULT_POLICY`].
    policy_assumed: bool,
    /// The DaemonSet's `.spec.selector.matchLabels`: how its pods are found.
    pod_selector: Option<Vec<(String, String)>>,
    /// The live settings as a values document (`cgpu:` with the keys that could be read): the
    /// values file as given, or what the DaemonSet runs. `--reuse-values` layers the desired
    /// values over it; the plan's key table shows it as "live".
    live_values: Node,
}

/// The desired side.
struct DesiredSide {
    settings: Settings,
    /// The input the findings of the desired side come from (the values file, or the
    /// command line's `--policy/--tag` as a values document).
    src: Option<Arc<Source>>,
    /// The nodeSelector the desired values set explicitly (the chart's DaemonSet then selects
    /// `ack.node.gpu.schedule=cgpu` plus these).
    selector: Option<Vec<(String, String)>>,
    /// The tag was given (`--tag`, or set by the desired values), not carried over.
    tag_given: bool,
    /// Every cgpu key: live value, value after the upgrade, and where that comes from.
    keys: Vec<KeyChange>,
    /// The desired values document as given (the command line's, for `--policy`).
    root: Node,
    /// The effective `cgpu.enabled` is false (as the chart's `if` reads it): the upgrade
    /// removes the installer.
    disabled: bool,
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
    /// Cordoned by an earlier run of a checklist (annotation [`CORDON_MARK`]): ours to finish.
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

    /// Every source parsed, in order; a source that does not parse stops the checklist.
    fn parsed(&self) -> Result<Vec<yaml::Parsed>, ChecklistError> {
        self.sources.iter().map(parse_source).collect()
    }
}

fn load(path: &str) -> Result<(Arc<Source>, yaml::Parsed), ChecklistError> {
    let src = read_input(path, DEFAULT_MAX_FILE_SIZE)?;
    let parsed = parse_source(&src)?;
    Ok((src, parsed))
}

fn parse_source(src: &Arc<Source>) -> Result<yaml::Parsed, ChecklistError> {
    let path = src.name.as_str();
    if let Some(bad) = &src.invalid {
        return Err(ChecklistError::Syntax {
            path: path.into(),
            message: bad.message.clone(),
        });
    }
    let parsed = yaml::parse(src);
    if let Some(err) = &parsed.error {
        let lc = src.line_col(err.offset);
        return Err(ChecklistError::Syntax {
            path: path.into(),
            message: format!("line {}, column {}: {}", lc.line, lc.column, err.message),
        });
    }
    Ok(parsed)
}

fn chart_defaults() -> Node {
    let src = Source::new("<chart defaults>", CHART_DEFAULTS.to_string());
    yaml::parse(&src)
        .documents
        .into_iter()
        .find_map(|d| d.root)
        .expect("chart defaults parse")
}

/// A policy from values: an integer 0–5 or a string holding one (`"1"` works, as Helm passes it on).
fn values_policy(v: &Node) -> Option<u8> {
    match v.scalar()? {
        Scalar::Int(i) if (0..=5).contains(i) => Some(*i as u8),
        // Helm holds every number as a float64: `3.0` renders as 3.
        Scalar::Float(f) if f.fract() == 0.0 && (0.0..=5.0).contains(f) => Some(*f as u8),
        Scalar::Str(s) => s.trim().parse().ok().filter(|n| *n <= 5),
        _ => None,
    }
}

fn tag_version(tag: Option<&str>) -> Option<Tag> {
    tag.and_then(|t| parse_tag(t).ok())
}

/// Settings from a coalesced values root.
fn values_settings(root: &Node, path: &str) -> Result<Settings, ChecklistError> {
    let cgpu = root
        .get("cgpu")
        .ok_or_else(|| ChecklistError::NotValues { path: path.into() })?;
    let policy_node = cgpu.get("policy");
    let policy = policy_node
        .and_then(values_policy)
        .ok_or_else(|| ChecklistError::Unreadable {
            what: format!("{path}: cgpu.policy"),
            message: format!(
                "`{}` is not a policy 0–5 (run `cgpu-lint check {path}`)",
                policy_node.map_or("", |n| n.raw())
            ),
        })?;
    let tag = cgpu.get("tag").and_then(scalar_text);
    Ok(Settings {
        policy,
        version: tag_version(tag.as_deref()),
        tag,
    })
}

/// The user's values over `base` as Helm coalesces them (a null deletes a default).
fn coalesced_values(root: &Node, base: Node) -> Node {
    let mut user = crate::helm::view(root).unwrap_or_else(|_| root.clone());
    crate::helm::coalesce(&mut user, &base);
    user
}

fn read_current(input: &Inputs) -> Result<Current, ChecklistError> {
    let path = input.label.as_str();
    let parsed_all = input.parsed()?;
    let documents = || parsed_all.iter().flat_map(|p| p.documents.iter());
    // `kubectl get ds cgpu-installer cgpu-core-installer -n kube-system -o yaml` gives both: the
    // core installer's policy then tells core_mem nodes what to change.
    let core_policy = documents()
        .filter_map(|d| d.root.as_ref())
        .find_map(|root| {
            Objects::of(root)
                .iter()
                .filter_map(|o| o.installer())
                .find(|i| i.name() == "cgpu-core-installer")
                .and_then(|i| i.policy())
        });
    // A DaemonSet first (a `kind: List` or a stream may hold other objects too).
    for doc in documents() {
        let Some(root) = &doc.root else { continue };
        let objects = Objects::of(root);
        let Some(inst) = objects
            .iter()
            .filter_map(|o| o.installer())
            .find(|i| i.name() == "cgpu-installer")
        else {
            continue;
        };
        let envs = inst.policy_envs();
        let (policy, policy_assumed) = match inst.policy() {
            Some(p) => (p, false),
            // installer-policy-missing (from the pipeline) says so; the plan notes the assumption.
            None if envs.is_empty() => (ASSUMED_DEFAULT_POLICY, true),
            None => {
                let last = envs.last().expect("non-empty");
                return Err(ChecklistError::Unreadable {
                    what: format!("{path}: POLICY of cgpu-installer"),
                    message: if last.value_from {
                        "comes from valueFrom and cannot be read from the manifest".into()
                    } else {
                        format!(
                            "`{}` is not a policy \"0\"–\"5\" (run `cgpu-lint check {path}`)",
                            last.value.map_or("", |v| v.raw())
                        )
                    },
                });
            }
        };
        let tag = inst
            .image()
            .and_then(|(n, _)| n.as_str().map(str::to_string))
            .and_then(|img| split_image(&img).tag.map(str::to_string));
        let mut tolerations = inst.tolerations();
        tolerations.extend(daemonset_default_tolerations());
        let ds = inst.obj.node;
        // apps/v1 defaults updateStrategy.type to RollingUpdate.
        let strategy = match ds
            .pointer("/spec/updateStrategy/type")
            .and_then(Node::as_str)
        {
            Some("OnDelete") => Strategy::OnDelete,
            _ => Strategy::RollingUpdate,
        };
        let count = |p: &str| match ds.pointer(p).and_then(Node::scalar) {
            Some(Scalar::Int(i)) => u64::try_from(*i).ok(),
            _ => None,
        };
        let status = count("/status/desiredNumberScheduled")
            .map(|d| (d, count("/status/numberReady").unwrap_or(0)));
        let pod_selector = ds
            .pointer("/spec/selector/matchLabels")
            .and_then(Node::as_map)
            .map(|m| {
                m.iter()
                    .filter_map(|e| Some((e.key.clone(), scalar_text(&e.value)?)))
                    .collect::<Vec<_>>()
            })
            .filter(|m| !m.is_empty());
        if let Some(sel) = &pod_selector {
            for (k, v) in sel {
                if !is_label_key(k) || !is_label_value(v) {
                    return Err(ChecklistError::Refused {
                        what: "pod selector",
                        value: format!("{k}={v}"),
                        path: path.to_string(),
                        why: "not a label key and value",
                    });
                }
            }
        }
        let pull_policy = inst
            .main_container()
            .and_then(|(c, _)| c.get("imagePullPolicy"))
            .and_then(scalar_text);
        let image_path = inst
            .image()
            .and_then(|(n, _)| n.as_str().map(str::to_string))
            .map(|img| split_image(&img).path.to_string());
        let live_values = daemonset_values(
            policy,
            tag.as_deref(),
            image_path.as_deref(),
            pull_policy.as_deref(),
            &inst.node_selector_pairs(),
            path,
        );
        return Ok(Current {
            live_values,
            srcs: input.sources.clone(),
            settings: Settings {
                policy,
                version: tag_version(tag.as_deref()),
                tag,
            },
            placement: Placement {
                selector: inst.node_selector_pairs(),
                tolerations,
            },
            values: None,
            core_policy,
            strategy: Some(strategy),
            status,
            policy_assumed,
            pod_selector,
        });
    }
    // Else the values now deployed, over the chart defaults.
    let root = documents()
        .filter_map(|d| d.root.as_ref())
        .find(|r| r.get("cgpu").is_some())
        .ok_or_else(|| ChecklistError::NotCurrent { path: path.into() })?;
    let merged = coalesced_values(root, chart_defaults());
    let settings = values_settings(&merged, path)?;
    let selector = chart_selector(merged.pointer("/cgpu/nodeSelector"));
    Ok(Current {
        live_values: root.clone(),
        srcs: input.sources.clone(),
        settings,
        // The chart declares no tolerations of its own that we know of, so only the DaemonSet
        // controller's defaults apply.
        placement: Placement {
            selector,
            tolerations: daemonset_default_tolerations(),
        },
        values: Some(merged),
        core_policy,
        strategy: None,
        status: None,
        policy_assumed: false,
        pod_selector: None,
    })
}

/// What a DaemonSet runs, as the values document that would render it (the chart adds the
/// registry host and the `ack.node.gpu.schedule: cgpu` selector itself): what
/// `--reuse-values` keeps when `--current` is the DaemonSet.
fn daemonset_values(
    policy: u8,
    tag: Option<&str>,
    image: Option<&str>,
    pull_policy: Option<&str>,
    selector: &[(String, String)],
    path: &str,
) -> Node {
    let q = |s: &str| serde_json::Value::String(s.to_string()).to_string();
    let mut text = format!("cgpu:\n  enabled: true\n  policy: {policy}\n");
    for (k, v) in [
        ("image", image),
        ("tag", tag),
        ("imagePullPolicy", pull_policy),
    ] {
        if let Some(v) = v {
            text.push_str(&format!("  {k}: {}\n", q(v)));
        }
    }
    let extra: Vec<String> = selector
        .iter()
        .filter(|(k, v)| !(k == SCHEDULE_LABEL && v == "cgpu"))
        .map(|(k, v)| format!("{}: {}", q(k), q(v)))
        .collect();
    text.push_str(&format!("  nodeSelector: {{{}}}\n", extra.join(", ")));
    let src = Source::new(format!("{path} (as values)"), text);
    yaml::parse(&src)
        .documents
        .into_iter()
        .find_map(|d| d.root)
        .expect("generated values parse")
}

/// A value as the key table shows it: a scalar's text (a string that would read as another
/// type in quotes, so that `"false"` is not taken for a boolean), a map as `{k: v}`; `None`
/// for null.
fn value_text(n: &Node) -> Option<String> {
    match &n.value {
        yaml::Value::Map(m) => Some(format!(
            "{{{}}}",
            m.iter()
                .map(|e| format!("{}: {}", e.key, value_text(&e.value).unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        yaml::Value::Seq(items) => Some(format!(
            "[{}]",
            items
                .iter()
                .map(|i| value_text(i).unwrap_or_default())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        // Quoted only where the plain text would read as something else (`"false"`, `"1"`).
        yaml::Value::Scalar(Scalar::Str(s))
            if !matches!(yaml::resolve::helm(s), Scalar::Str(_)) || s.is_empty() =>
        {
            Some(serde_json::Value::String(s.clone()).to_string())
        }
        yaml::Value::Scalar(_) => scalar_text(n),
    }
}

/// A Go template's truthiness (`{{ if .Values.cgpu.enabled }}`): false, 0, "", null, an empty
/// map or list, or no value at all are false; everything else (a quoted `"false"` too) is true.
fn truthy(n: Option<&Node>) -> bool {
    let Some(n) = n else { return false };
    match &n.value {
        yaml::Value::Scalar(Scalar::Null) => false,
        yaml::Value::Scalar(Scalar::Bool(b)) => *b,
        yaml::Value::Scalar(Scalar::Int(i)) => *i != 0,
        yaml::Value::Scalar(Scalar::Float(f)) => *f != 0.0,
        yaml::Value::Scalar(Scalar::Str(s)) => !s.is_empty(),
        yaml::Value::Map(m) => !m.is_empty(),
        yaml::Value::Seq(v) => !v.is_empty(),
    }
}

/// Every cgpu key: its live value, its value in `merged` (the values the upgrade renders) and
/// where that comes from (`given`: the desired document; `reused`: the values kept under it).
fn key_changes(
    live: &Node,
    merged: &Node,
    given: &Node,
    reused: Option<&Node>,
    given_origin: Origin,
) -> Vec<KeyChange> {
    crate::cgpu::KNOWN_KEYS
        .iter()
        .map(|k| {
            let at = |n: &Node| n.get("cgpu").and_then(|c| c.get(k)).map(|_| ());
            let from = if at(given).is_some() {
                given_origin
            } else if reused.is_some_and(|r| at(r).is_some()) {
                Origin::Reused
            } else {
                Origin::ChartDefault
            };
            let text = |n: &Node| n.get("cgpu").and_then(|c| c.get(k)).and_then(value_text);
            KeyChange {
                key: format!("cgpu.{k}"),
                live: text(live),
                after: text(merged),
                from,
            }
        })
        .collect()
}

/// The chart's DaemonSet selects ack.node.gpu.schedule=cgpu; values' nodeSelector adds to it
/// (domain.md §10.1: merged, an inference).
fn chart_selector(node_selector: Option<&Node>) -> Vec<(String, String)> {
    let mut selector = vec![(SCHEDULE_LABEL.to_string(), "cgpu".to_string())];
    if let Some(m) = node_selector.and_then(Node::as_map) {
        for e in m {
            if let Some(v) = scalar_text(&e.value) {
                selector.retain(|(k, _)| *k != e.key);
                selector.push((e.key.clone(), v));
            }
        }
    }
    selector
}

fn read_desired(
    desired: &Desired,
    current: &Current,
    options: &Options,
) -> Result<DesiredSide, ChecklistError> {
    let live = current.values.as_ref().unwrap_or(&current.live_values);
    let reused_base = || coalesced_values(&current.live_values, chart_defaults());
    match desired {
        Desired::Policy { policy, tag } => {
            // Without --tag the live tag stays: its problems are the live DaemonSet's findings,
            // and nothing here may blame `--tag` for it.
            if let Some(t) = tag
                && let Err(e) = parse_tag(t)
            {
                return Err(ChecklistError::Unreadable {
                    what: "--tag".into(),
                    message: e.message(t),
                });
            }
            // The command line as the values document it stands for, so that its findings
            // (tag-too-old, tag-known-deadlock, policy-weight-hint) come from the same pipeline.
            let name = match tag {
                Some(t) => format!("--policy {policy} --tag {t}"),
                None => format!("--policy {policy}"),
            };
            let text = match tag {
                Some(t) => format!(
                    "cgpu:\n  policy: {policy}\n  tag: {}\n",
                    serde_json::Value::String((*t).to_string())
                ),
                None => format!("cgpu:\n  policy: {policy}\n"),
            };
            let src = Source::new(&name, text);
            // `--policy` keeps every other key as deployed (`helm upgrade --reuse-values --set`).
            let given = yaml::parse(&src)
                .documents
                .into_iter()
                .find_map(|d| d.root)
                .expect("generated values parse");
            let merged = coalesced_values(&given, reused_base());
            let keys = key_changes(
                live,
                &merged,
                &given,
                Some(&current.live_values),
                Origin::CommandLine,
            );
            let tag = tag.map(str::to_string).or(current.settings.tag.clone());
            Ok(DesiredSide {
                root: given,
                keys,
                disabled: false,
                settings: Settings {
                    policy: *policy,
                    version: tag_version(tag.as_deref()),
                    tag,
                },
                src: Some(src),
                selector: None,
                tag_given: matches!(desired, Desired::Policy { tag: Some(_), .. }),
            })
        }
        Desired::Values(path) | Desired::ValuesAs(path, _) => {
            let (src, parsed) = load(path)?;
            let root = match desired {
                Desired::ValuesAs(_, v) => {
                    crate::helm::read_file(&src, *v).map_err(|r| ChecklistError::Unreadable {
                        what: path.to_string(),
                        message: format!("{r} ({} refuses it)", v.name()),
                    })?
                }
                _ => parsed
                    .documents
                    .into_iter()
                    .filter_map(|d| d.root)
                    .find(|r| r.get("cgpu").is_some())
                    .ok_or_else(|| ChecklistError::NotValues {
                        path: path.to_string(),
                    })?,
            };
            if root.get("cgpu").is_none() {
                return Err(ChecklistError::NotValues {
                    path: path.to_string(),
                });
            }
            // An explicit nodeSelector in the desired values moves the installer: the nodes to
            // restart are those it will select.
            let selector = root
                .pointer("/cgpu/nodeSelector")
                .filter(|n| n.as_map().is_some())
                .map(|n| chart_selector(Some(n)));
            let tag_given = root.pointer("/cgpu/tag").is_some();
            // `helm upgrade -f VALUES` renders the chart defaults plus the file, whatever is
            // deployed; `--reuse-values` puts the deployed values (the values file given as
            // `--current`, or what the DaemonSet runs) under the file.
            let base = if options.reuse_values {
                reused_base()
            } else {
                chart_defaults()
            };
            let merged = coalesced_values(&root, base);
            let keys = key_changes(
                live,
                &merged,
                &root,
                options.reuse_values.then_some(&current.live_values),
                Origin::Desired,
            );
            let disabled = !truthy(merged.pointer("/cgpu/enabled"));
            let s = values_settings(&merged, path)?;
            if let Some(t) = &s.tag
                && let Err(e) = parse_tag(t)
            {
                return Err(ChecklistError::Unreadable {
                    what: format!("{path}: cgpu.tag"),
                    message: e.message(t),
                });
            }
            Ok(DesiredSide {
                root,
                keys,
                disabled,
                settings: s,
                src: Some(src),
                selector,
                tag_given,
            })
        }
    }
}

/// A label key: an optional DNS-1123 subdomain prefix and `/`, then a name of at most 63
/// characters of `[A-Za-z0-9_.-]`, starting and ending alphanumeric.
fn is_label_key(k: &str) -> bool {
    let (prefix, name) = match k.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    prefix.is_none_or(k8s::is_dns1123_subdomain) && is_label_value(name) && !name.is_empty()
}

/// A label value: empty, or at most 63 characters of `[A-Za-z0-9_.-]` starting and ending
/// alphanumeric.
fn is_label_value(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= 63
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            && v.as_bytes()[0].is_ascii_alphanumeric()
            && v.as_bytes()[v.len() - 1].is_ascii_alphanumeric())
}

/// A Kubernetes UID as the API server writes it (a UUID; test clusters use other short ids of
/// the same alphabet).
pub fn is_uid(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.".contains(&b))
}

/// `^i-[a-z0-9]{8,40}$`: an ECS instance id.
pub fn is_instance_id(s: &str) -> bool {
    s.strip_prefix("i-").is_some_and(|rest| {
        (8..=40).contains(&rest.len())
            && rest
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    })
}

/// The node-lifecycle controller taints a NotReady node with not-ready/unreachable NoSchedule.
/// The DaemonSet controller does not add tolerations for those, so it would not *place* a new
/// installer pod there; but a pod already running stays (only NoExecute evicts it, and those are
/// tolerated by default), and the taints go away when the node is Ready again. So a NotReady
/// node that the installer was running on still has cGPU loaded and belongs in the list.
fn transient_condition_taint(t: &Taint) -> bool {
    t.effect == "NoSchedule"
        && matches!(
            t.key.as_str(),
            "node.kubernetes.io/not-ready" | "node.kubernetes.io/unreachable"
        )
}

fn refuse_name(name: &str, path: &str) -> Result<(), ChecklistError> {
    if k8s::is_dns1123_subdomain(name) {
        Ok(())
    } else {
        Err(ChecklistError::Refused {
            what: "node name",
            value: name.to_string(),
            path: path.to_string(),
            why: "not a DNS-1123 subdomain",
        })
    }
}

/// Build the checklist from files.
pub fn build(
    current_path: &str,
    desired: &Desired,
    nodes_path: Option<&str>,
    options: &Options,
) -> Result<Checklist, ChecklistError> {
    let current = Inputs::file(current_path)?;
    let nodes = nodes_path.map(Inputs::file).transpose()?;
    build_from(&current, desired, nodes.as_ref(), options)
}

/// Build the checklist from inputs read anywhere (files, or a cluster's objects).
pub fn build_from(
    current_input: &Inputs,
    desired: &Desired,
    nodes_input: Option<&Inputs>,
    options: &Options,
) -> Result<Checklist, ChecklistError> {
    let current_path = current_input.label.as_str();
    let nodes_path = nodes_input.map(|n| n.label.as_str());
    let current = read_current(current_input)?;
    let desired_side = read_desired(desired, &current, options)?;
    let desired_settings = desired_side.settings.clone();
    let cur = &current.settings;
    let policy_change =
        (cur.policy != desired_settings.policy).then_some((cur.policy, desired_settings.policy));
    let (mut tag_change, mut build_change) = (None, None);
    if let (Some(a), Some(b)) = (&cur.tag, &desired_settings.tag)
        && a != b
    {
        let pair = Some((a.clone(), b.clone()));
        match (&cur.version, &desired_settings.version) {
            (Some(x), Some(y)) if x.core == y.core => build_change = pair,
            _ => tag_change = pair,
        }
    }
    let mut placement = current.placement.clone();
    if let Some(sel) = &desired_side.selector {
        placement.selector = sel.clone();
    }
    let mut plan_notes = Vec::new();
    if current.policy_assumed {
        plan_notes.push(format!(
            "cgpu-installer sets no POLICY: the plan assumes {ASSUMED_DEFAULT_POLICY} (the chart's documented default); the per-node state read decides anyway"
        ));
    }
    let mut list = Checklist {
        current: current.settings.clone(),
        desired: desired_settings,
        policy_change,
        tag_change,
        build_change,
        placement,
        nodes_given: nodes_path.is_some(),
        nodes: Vec::new(),
        other_nodes: Vec::new(),
        diagnostics: Vec::new(),
        core_policy: current.core_policy,
        current_path: current_path.to_string(),
        desired_label: match desired {
            Desired::Values(p) | Desired::ValuesAs(p, _) => p.to_string(),
            Desired::Policy { policy, tag } => match tag {
                Some(t) => format!("--policy {policy} --tag {t}"),
                None => format!("--policy {policy}"),
            },
        },
        nodes_path: nodes_path.map(str::to_string),
        options: options.clone(),
        strategy: current.strategy,
        blocking: Vec::new(),
        plan_notes,
        not_ready_now: Vec::new(),
        error_findings: false,
        pod_selector: current
            .pod_selector
            .clone()
            .unwrap_or_else(|| vec![("name".into(), "cgpu-installer".into())]),
        installer_nodes: 0,
        upgrade: desired_side.keys.clone(),
        disabled: desired_side.disabled,
        removal: Vec::new(),
    };
    if list.disabled {
        // Nothing moves towards the desired policy or tag: the installer goes away and the
        // loaded modules keep what they run.
        list.desired = list.current.clone();
        list.policy_change = None;
        list.tag_change = None;
        list.build_change = None;
    }
    let mut srcs = current.srcs.clone();
    srcs.extend(desired_side.src.clone());
    let mut region = None;
    if let Some(nodes) = nodes_input {
        region = read_nodes(&mut list, nodes, &current.placement.selector)?;
        srcs.extend(nodes.sources.iter().cloned());
    }
    let region = region.or_else(|| options.settings.opts.region.clone());
    // Every finding comes from the one pipeline, over the inputs as one cluster. The node rules
    // read the installer as it will be after the change.
    let mut settings = options.settings.clone();
    settings.opts = RuleOptions {
        region,
        require_cgpu: false,
        helm: None,
        nodes: NodeContext {
            cgpu: list
                .desired
                .version
                .as_ref()
                .or(list.current.version.as_ref())
                .map(|t| t.core.clone()),
            selector: Some(list.placement.selector.clone()),
        },
    };
    list.diagnostics = lint::lint_cluster(&srcs, &settings);
    if list.disabled {
        list.removal = removal(&mut list);
    } else {
        let gate = gate(&mut list, &desired_side, &settings);
        list.diagnostics.extend(gate);
    }
    let unsafe_findings = blockers(&list, &current, &desired_side);
    list.error_findings = unsafe_findings
        .iter()
        .any(|d| d.severity == Severity::Error);
    // Nothing to restart, nothing to block (the findings are still listed, and errors still
    // fail the run).
    if list.reboot_required() {
        list.blocking = unsafe_findings.clone();
    }
    if list
        .diagnostics
        .iter()
        .any(|d| d.rule == RuleId::RolloutIncomplete)
        && !unsafe_findings
            .iter()
            .any(|d| d.rule == RuleId::RolloutIncomplete)
    {
        list.plan_notes.push(format!(
            "rollout-incomplete is explained by the NotReady node(s) {}: the run skips them and is not done until they show the target",
            list.not_ready_now.join(", ")
        ));
    }
    Ok(list)
}

/// The desired values read as the upgrade applies them (spec §6): a key that falls back to a
/// chart default other than the live value (`upgrade-default-fallback`), a downgrade
/// (`upgrade-downgrade`, unless `--allow-downgrade`), and the findings of a target tag that
/// comes from the chart defaults (as `check --stack` reports them: the desired file alone
/// does not hold it).
fn gate(list: &mut Checklist, desired: &DesiredSide, settings: &lint::Settings) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let root = &desired.root;
    let file = root.src.name.clone();
    let cgpu = root.get("cgpu").unwrap_or(root);
    let finding = |rule: RuleId, message: String, help: String, at: &Node, path: &str| Diagnostic {
        rule,
        severity: rule.info().severity,
        message,
        help,
        src: at.src.clone(),
        document: 1,
        path: path.to_string(),
        span: at.span.clone(),
        edits: Vec::new(),
        related: Vec::new(),
        fix_note: None,
        consequence: None,
    };
    let version = |t: &str| {
        parse_tag(t)
            .ok()
            .map_or(String::new(), |v| format!(" ({})", v.core))
    };
    for k in &list.upgrade {
        let name = k.key.trim_start_matches("cgpu.");
        if k.from != Origin::ChartDefault
            || !k.changes()
            || !["policy", "tag", "image", "imagePullPolicy", "nodeSelector"].contains(&name)
        {
            continue;
        }
        let (live, after) = (
            k.live.clone().unwrap_or_default(),
            k.after.clone().unwrap_or_else(|| "nothing".into()),
        );
        let (lv, av) = if name == "tag" {
            (version(&live), version(&after))
        } else {
            (String::new(), String::new())
        };
        out.push(finding(
            RuleId::UpgradeDefaultFallback,
            format!(
                "{key} is not set in {file}: `helm upgrade -f {file}` without --reuse-values falls back to the chart default `{after}`{av}, replacing the live `{live}`{lv}",
                key = k.key
            ),
            format!(
                "pass --reuse-values (to `helm upgrade` and to `cgpu-lint checklist`) to keep the deployed values, or pin `{name}: {live}` under `cgpu:` in {file}"
            ),
            cgpu,
            "/cgpu",
        ));
    }
    if let (Some(a), Some(b)) = (&list.current.version, &list.desired.version)
        && b.core < a.core
    {
        let (from, to) = (
            list.current.tag.clone().unwrap_or_default(),
            list.desired.tag.clone().unwrap_or_default(),
        );
        if list.options.allow_downgrade {
            list.plan_notes.push(format!(
                "a downgrade of cGPU, {} (`{from}`) → {} (`{to}`), planned because --allow-downgrade was given",
                a.core, b.core
            ));
        } else {
            let at = cgpu.get("tag").unwrap_or(cgpu);
            let path = if cgpu.get("tag").is_some() {
                "/cgpu/tag"
            } else {
                "/cgpu"
            };
            out.push(finding(
                RuleId::UpgradeDowngrade,
                format!(
                    "the upgrade takes cGPU down from {} (`{from}`, live) to {} (`{to}`)",
                    a.core, b.core
                ),
                format!(
                    "pin the live tag (`tag: {from}`) in the desired values, or pass --allow-downgrade when the downgrade is intended"
                ),
                at,
                path,
            ));
        }
    }
    out.retain(|d| settings.filter.allows(d.rule.name()));
    // The target tag from the chart defaults: its findings as `check --stack` gives them.
    if list
        .upgrade
        .iter()
        .any(|k| k.key == "cgpu.tag" && k.from == Origin::ChartDefault)
        && let Some(src) = desired.src.clone()
    {
        let defaults = Source::new("<chart defaults>", CHART_DEFAULTS.to_string());
        let found = lint::lint_stack(&[defaults.clone(), src], settings);
        out.extend(
            found
                .into_iter()
                .filter(|d| Arc::ptr_eq(&d.src, &defaults) && d.path.starts_with("/cgpu/tag")),
        );
    }
    out
}

/// `enabled: false`: the upgrade deletes the installer DaemonSet; nothing restarts. What stays
/// on the nodes, and how to see it.
fn removal(list: &mut Checklist) -> Vec<Step> {
    let running: Vec<String> = list.nodes.drain(..).map(|t| t.name).collect();
    for o in &mut list.other_nodes {
        o.verify = false;
    }
    let p = list.current.policy;
    let mut steps = vec![
        Step::new("cgpu-disabled", "The desired values turn cGPU off (`cgpu.enabled` is false as the chart's `if` reads it): the upgrade deletes the cgpu-installer DaemonSet; no node is cordoned, drained or rebooted by this plan".into(), None),
        Step::new("module-stays", format!(
                "The cgpu kernel module already loaded on every node {} stays and keeps its policy ({p}) until that node reboots; after a reboot no installer loads it again (no GPU memory isolation there)",
                if running.is_empty() {
                    "that runs it".to_string()
                } else {
                    format!("that runs it ({})", running.join(", "))
                }
            ), None),
        Step::new("verify-removed", "After `helm upgrade`: the installer DaemonSet is gone (expect `NotFound`)".into(), Some("kubectl get ds cgpu-installer -n kube-system".into())),
        Step::new("verify-module", format!(
                "On a node that has not rebooted: the module still shows the old policy (expect {p} on every GPU)"
            ), Some("cat /proc/cgpu_km/*/policy".into())),
    ];
    if list.core_policy.is_some() {
        steps.push(Step::new("core-installer", "cgpu-core-installer is part of the input: check whether the same upgrade removes it too (core_mem nodes)".into(), Some("kubectl get ds cgpu-core-installer -n kube-system".into())));
    }
    steps
}

/// Findings that make the plan unsafe. Every error is one, with one exception: `tag-too-old`
/// on the live DaemonSet when the change installs another tag (that tag is checked on the
/// desired side). `rollout-incomplete` (an info for `check`) is one too: a DaemonSet that is
/// not healthy must not be the base of a node-by-node restart, unless every pod missing is
/// on a NotReady node of the list (which the run skips).
fn blockers(list: &Checklist, current: &Current, desired: &DesiredSide) -> Vec<Diagnostic> {
    let not_ready = list.not_ready_now.len() as u64;
    let from_current = |d: &Diagnostic| current.srcs.iter().any(|s| Arc::ptr_eq(&d.src, s));
    list.diagnostics
        .iter()
        .filter(|d| match d.rule {
            RuleId::TagTooOld if from_current(d) => {
                !desired.tag_given
                    || list.desired.version.as_ref().map(|t| &t.core)
                        == list.current.version.as_ref().map(|t| &t.core)
            }
            RuleId::RolloutIncomplete => match current.status {
                Some((want, ready)) => want.saturating_sub(ready) > not_ready,
                None => true,
            },
            _ => d.severity == Severity::Error,
        })
        .cloned()
        .collect()
}

/// The Node objects: who runs the installer (restart candidates) and who is listed apart.
/// Returns the cluster region when every node agrees.
fn read_nodes(
    list: &mut Checklist,
    input: &Inputs,
    current_selector: &[(String, String)],
) -> Result<Option<String>, ChecklistError> {
    let path = input.label.as_str();
    let parsed_all = input.parsed()?;
    let mut found = false;
    let mut targets = Vec::new();
    let mut regions = std::collections::BTreeSet::new();
    for doc in parsed_all.iter().flat_map(|p| p.documents.iter()) {
        let Some(root) = &doc.root else { continue };
        let objects = Objects::of(root);
        for node in nodes_of(&objects) {
            found = true;
            refuse_name(node.name(), path)?;
            regions.extend(node.region());
            let selected = node.matches(&list.placement.selector);
            let was_selected = node.matches(current_selector);
            if was_selected && !node.is_virtual() && !node.is_ready() {
                list.not_ready_now.push(node.name().to_string());
            }
            if let Some(item) = classify(list, &node, selected, was_selected, path)? {
                match item {
                    Classified::Target(t) => targets.push(t),
                    Classified::Other(o) => list.other_nodes.push(o),
                }
            }
        }
    }
    if !found {
        return Err(ChecklistError::NoNodes { path: path.into() });
    }
    // One node first: a Ready, schedulable one, so a bad policy shows on one node only.
    if let Some(i) = targets.iter().position(|t| t.state == NodeState::Ready) {
        let mut canary = targets.remove(i);
        canary.canary = true;
        canary.notes.insert(
            0,
            "canary: do this node first and check its GPU workloads before the rest (if its own state needs no restart, the next node that does is the canary: the script decides at run time)".into(),
        );
        targets.insert(0, canary);
    }
    // Nodes an earlier run cordoned come first: they are down already.
    targets.sort_by_key(|t| !(t.ours && t.state != NodeState::Ready));
    list.installer_nodes = targets.len()
        + list
            .other_nodes
            .iter()
            .filter(|o| o.kind == OtherKind::Skipped)
            .count();
    list.nodes = targets;
    Ok((regions.len() == 1).then(|| regions.pop_first()).flatten())
}

enum Classified {
    Target(Target),
    Other(Other),
}

fn classify(
    list: &Checklist,
    node: &NodeView,
    selected: bool,
    was_selected: bool,
    path: &str,
) -> Result<Option<Classified>, ChecklistError> {
    let name = node.name().to_string();
    let schedule = node.schedule();
    let other = |kind, reason: String, verify: bool| {
        Ok(Some(Classified::Other(Other {
            name: name.clone(),
            kind,
            reason,
            verify,
        })))
    };
    let p = list.desired.policy;
    if !selected {
        if was_selected && !node.is_virtual() {
            return other(
                OtherKind::Excluded,
                format!(
                    "the desired nodeSelector no longer selects it: the module cgpu-installer loaded there keeps its policy until the node is restarted without it; verified at the end (blocking unless it shows {p})"
                ),
                true,
            );
        }
        return match schedule.as_deref() {
            Some("core_mem") => other(
                OtherKind::AlsoIsolated,
                match list.core_policy {
                    Some(c) if c == p => format!(
                        "ack.node.gpu.schedule=core_mem: cGPU isolation through cgpu-core-installer, whose POLICY is already {c}: consistent with the change; verified at the end"
                    ),
                    Some(c) => format!(
                        "ack.node.gpu.schedule=core_mem: cGPU isolation through cgpu-core-installer, whose POLICY is {c}; all GPU-sharing nodes must use one policy, so set it to {p} too (and restart these nodes the same way); blocking until it shows {p}"
                    ),
                    None => format!(
                        "ack.node.gpu.schedule=core_mem: cGPU isolation through cgpu-core-installer, not this DaemonSet; all GPU-sharing nodes must use one policy, so change cgpu-core-installer's POLICY to {p} too; blocking until it shows {p}"
                    ),
                },
                !node.is_virtual(),
            ),
            None if node.legacy_cgpu() => other(
                OtherKind::AlsoIsolated,
                format!(
                    "legacy cgpu=true label (legacy-cgpu-label): not selected by cgpu-installer, but cGPU may be active; relabel it ack.node.gpu.schedule=cgpu, or make sure it runs policy {p}; verified at the end"
                ),
                !node.is_virtual(),
            ),
            Some(s) => other(
                OtherKind::NotAffected,
                format!("not affected: ack.node.gpu.schedule={s} has no cgpu-installer"),
                false,
            ),
            None => other(
                OtherKind::NotAffected,
                "not affected: no GPU-sharing label".into(),
                false,
            ),
        };
    }
    if node.is_virtual() {
        return other(
            OtherKind::Excluded,
            "virtual (non-ECS) node (virtual-node-cgpu): the installer does not run there; no reboot".into(),
            false,
        );
    }
    let untolerated: Vec<String> = node
        .taints()
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .filter(|t| !t.tolerated_by(&list.placement.tolerations) && !transient_condition_taint(t))
        .map(ToString::to_string)
        .collect();
    if !untolerated.is_empty() {
        return other(
            OtherKind::Excluded,
            format!(
                "the installer does not tolerate the taint {}: it does not run there now, but a module it loaded before the taint keeps its old policy; verified at the end (blocking unless it shows {p})",
                untolerated.join(", ")
            ),
            true,
        );
    }
    // A cordon carrying the annotation is a checklist run's own, whichever plan made it: the
    // node is finished (restarted if it must be, and uncordoned), never "cordoned before".
    let ours = node.annotation(CORDON_MARK).is_some();
    let was_cordoned = node.unschedulable() && !ours;
    if was_cordoned && !list.options.include_cordoned {
        return other(
            OtherKind::Skipped,
            format!(
                "cordoned before this change (spec.unschedulable): left alone (--include-cordoned to restart it too; it stays cordoned); verified at the end (blocking unless it shows {p})"
            ),
            true,
        );
    }
    let ready = node.is_ready();
    let mut notes = Vec::new();
    if was_cordoned {
        notes.push(
            "already cordoned (spec.unschedulable) before this change: it stays cordoned at the end; uncordon it only when the earlier reason is resolved".into(),
        );
    }
    if ours {
        notes.push(format!(
            "carries {CORDON_MARK}: cordoned by an earlier checklist run that did not finish; this run finishes it (restarts it if it still differs) and uncordons it"
        ));
    }
    let uid = node.uid();
    if let Some(u) = &uid
        && !is_uid(u)
    {
        return Err(ChecklistError::Refused {
            what: "node UID",
            value: u.clone(),
            path: path.to_string(),
            why: "not a UID",
        });
    }
    if !ready {
        notes.push(format!(
            "NotReady (Ready={}): the installer pod cannot be reached; the run skips it while it is NotReady and does not count as done",
            node.ready_status().unwrap_or_else(|| "not reported".into())
        ));
    }
    let (mut instance_id, mut region, mut provider_id) = (None, node.region(), None);
    if let Some((r, id)) = node.ecs_instance() {
        if !is_instance_id(&id) {
            return Err(ChecklistError::Refused {
                what: "ECS instance id",
                value: id,
                path: path.to_string(),
                why: "not of the form i-[a-z0-9]{8,40}",
            });
        }
        provider_id = Some(format!("{r}.{id}"));
        instance_id = Some(id);
        // The instance lives in the region its providerID names (the label could be stale).
        region = Some(r);
    } else {
        notes.push(
            "no ECS instance id in spec.providerID: reboot it from the console or with `sudo reboot` on the node".into(),
        );
    }
    if let Some(r) = &region
        && !k8s::is_dns1123_label(r)
    {
        return Err(ChecklistError::Refused {
            what: "region",
            value: r.clone(),
            path: path.to_string(),
            why: "not a region id",
        });
    }
    let state = if !ready {
        NodeState::NotReady
    } else if was_cordoned || (ours && node.unschedulable()) {
        NodeState::Cordoned
    } else {
        NodeState::Ready
    };
    Ok(Some(Classified::Target(Target {
        name,
        state,
        was_cordoned,
        notes,
        instance_id,
        region,
        canary: false,
        uid,
        provider_id,
        ours,
    })))
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
    fn new(id: &'static str, title: String, command: Option<String>) -> Step {
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
/// the steps of its branch (spec §6).
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
    /// `marked` (it carries [`CORDON_MARK`]), `pod-differs` (the pod's POLICY or image is not
    /// the DaemonSet's).
    pub only_if: Option<&'static str>,
}

pub const NSENTER: &str = "nsenter -t 1 -i -p -n -u -m --";

/// The annotation that records "this run cordoned the node" (kured keeps the same fact, the
/// node's `unschedulable` before its drain, in its lock annotation): only such a node is
/// uncordoned, and a re-run after a stop knows the cordon is its own.
pub const CORDON_MARK: &str = "cgpu-lint/cordoned";

/// Read the node's cGPU state in one exec (run by `sh -c` in the node's namespaces): `no-module`
/// when the module is not loaded, else `version X.Y.Z` and one `/proc/cgpu_km/<gpu>/policy N`
/// line per GPU. A file that cannot be read fails the command (fail closed).
pub const READ_STATE: &str = r#"set -e; if [ ! -e /proc/cgpu_km/version ]; then echo no-module; exit 0; fi; v=$(cat /proc/cgpu_km/version); echo "version $v"; for f in /proc/cgpu_km/[0-9]*/policy; do [ -e "$f" ] || continue; p=$(cat "$f"); echo "$f $p"; done"#;

/// Timeouts (seconds) of the waits; the shell script takes overrides from the environment.
pub const REBOOT_TIMEOUT: u32 = 900;
pub const READY_TIMEOUT: u32 = 900;
pub const POD_TIMEOUT: u32 = 600;
pub const POLICY_TIMEOUT: u32 = 600;
pub const POLL_INTERVAL: u32 = 10;

/// The start of every kubectl command of the plan: `kubectl --context C [--kubeconfig K]`,
/// the one place it is built (the shell script builds the same words from the same fields).
pub fn kubectl_argv(list: &Checklist) -> Vec<String> {
    let id = &list.options.identity;
    let mut argv = vec!["kubectl".to_string()];
    if let Some(c) = &id.context {
        argv.extend(["--context".into(), c.clone()]);
    }
    if let Some(k) = &id.kubeconfig {
        argv.extend(["--kubeconfig".into(), k.clone()]);
    }
    argv
}

/// [`kubectl_argv`] as shell words, for the commands markdown and JSON show.
pub fn kubectl_prefix(list: &Checklist) -> String {
    kubectl_argv(list)
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if i == 0 || w.starts_with("--") {
                w.clone()
            } else {
                shell::quote(w)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `-l` of the installer's pods: the DaemonSet's own selector.
pub fn selector_text(sel: &[(String, String)]) -> String {
    sel.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn pod_of(list: &Checklist, label: &str, node: &str) -> String {
    format!(
        "$({} -n kube-system get pod -l {label} --field-selector spec.nodeName={node} -o jsonpath='{{.items[0].metadata.name}}')",
        kubectl_prefix(list)
    )
}

fn read_state_command(list: &Checklist, label: &str, node: &str) -> String {
    format!(
        "{} -n kube-system exec {} -- {NSENTER} sh -c '{READ_STATE}'",
        kubectl_prefix(list),
        pod_of(list, label, node)
    )
}

/// What "converted" means on a node: every GPU at the target policy (and the target module
/// version on an upgrade).
pub fn target_text(list: &Checklist) -> String {
    let p = list.desired.policy;
    match (&list.tag_change, core(&list.desired)) {
        (Some(_), Some(v)) => format!("every GPU shows policy {p} and the module version is {v}"),
        _ => format!("every GPU shows policy {p}"),
    }
}

/// The fields the script reads from a node in one call (`read_node`), `|`-separated, in order.
pub const NODE_FIELDS: [&str; 6] = [
    "uid",
    "provider_id",
    "ready",
    "unschedulable",
    "cordon_mark",
    "boot_id",
];

/// The fields the script reads from each installer pod of a node (`installer_pod`), one line
/// per pod, `|`-separated, in order.
pub const POD_FIELDS: [&str; 5] = ["name", "deletion_timestamp", "policy", "image", "ready"];

/// `-o` of the script's node read (`read_node`), as kubectl receives it.
pub fn node_jsonpath() -> String {
    format!(
        "jsonpath={{.metadata.uid}}|{{.spec.providerID}}|{{.status.conditions[?(@.type==\"Ready\")].status}}|{{.spec.unschedulable}}|{{.metadata.annotations.{CORDON_MARK}}}|{{.status.nodeInfo.bootID}}"
    )
}

/// `-o` of the script's installer-pod listing (`installer_pod`), as kubectl receives it.
pub const POD_JSONPATH: &str = r#"jsonpath={range .items[*]}{.metadata.name}{"|"}{.metadata.deletionTimestamp}{"|"}{.spec.containers[0].env[?(@.name=="POLICY")].value}{"|"}{.spec.containers[0].image}{"|"}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}"#;

/// The exact commands of the script for node `t` (JSON `actions`), built from
/// [`kubectl_argv`] like every kubectl call of the script.
struct Argv<'a> {
    list: &'a Checklist,
    t: &'a Target,
    sel: String,
}

impl Argv<'_> {
    fn k(&self, words: &[&str]) -> Vec<String> {
        let mut v = kubectl_argv(self.list);
        v.extend(words.iter().map(|w| w.to_string()));
        v
    }

    fn fields(names: &[&str]) -> serde_json::Value {
        serde_json::json!(names)
    }

    /// `read_node`: the node's identity, Ready, cordon, mark and boot id in one read.
    fn check_node(&self, action: &'static str) -> Action {
        let mut equal = serde_json::Map::new();
        if let Some(u) = &self.t.uid {
            equal.insert("uid".into(), u.clone().into());
        }
        if let Some(p) = &self.t.provider_id {
            equal.insert("provider_id".into(), p.clone().into());
        }
        Action {
            action,
            argv: Some(self.k(&["get", "node", &self.t.name, "-o", &node_jsonpath()])),
            expect: serde_json::json!({
                "exit": 0, "split": "|", "fields": Self::fields(&NODE_FIELDS), "equal": equal
            }),
            only_if: None,
        }
    }

    fn pods(&self) -> Vec<String> {
        let field = format!("spec.nodeName={}", self.t.name);
        self.k(&[
            "-n",
            "kube-system",
            "get",
            "pod",
            "-l",
            &self.sel,
            "--field-selector",
            &field,
            "-o",
            POD_JSONPATH,
        ])
    }

    /// `installer_pod`: the node's installer pod that is not being deleted, recorded as `{pod}`.
    fn find_pod(&self) -> Action {
        Action {
            action: "find-installer-pod",
            argv: Some(self.pods()),
            expect: serde_json::json!({
                "exit": 0, "split": "|", "fields": Self::fields(&POD_FIELDS),
                "where": {"deletion_timestamp": ""}, "record": {"pod": "name"}
            }),
            only_if: None,
        }
    }

    fn exec_read_state(&self) -> Vec<String> {
        let mut v = self.k(&["-n", "kube-system", "exec", "{pod}", "--"]);
        v.extend(NSENTER.split(' ').map(str::to_string));
        v.extend(["sh".into(), "-c".into(), READ_STATE.into()]);
        v
    }

    fn delete_pod(&self, action: &'static str, only_if: Option<&'static str>) -> Action {
        Action {
            action,
            argv: Some(self.k(&["-n", "kube-system", "delete", "pod", "{pod}", "--wait=true"])),
            expect: serde_json::json!({"exit": 0}),
            only_if,
        }
    }

    fn target(&self) -> serde_json::Value {
        let list = self.list;
        let version = match (&list.tag_change, core(&list.desired)) {
            (Some(_), Some(v)) => serde_json::Value::from(v.to_string()),
            _ => serde_json::Value::Null,
        };
        serde_json::json!({"policy_files": list.desired.policy, "version": version})
    }

    fn wait_pod(&self) -> Action {
        Action {
            action: "wait-installer-pod",
            argv: Some(self.pods()),
            expect: serde_json::json!({
                "split": "|", "fields": Self::fields(&POD_FIELDS),
                "where": {"deletion_timestamp": ""},
                "equal": {"ready": "True", "policy": self.list.desired.policy.to_string(), "image": "{ds_image}"},
                "repeat": {"timeout_s": POD_TIMEOUT, "poll_s": POLL_INTERVAL}
            }),
            only_if: None,
        }
    }

    fn wait_policy(&self) -> Action {
        let mut expect = self.target();
        expect["repeat"] =
            serde_json::json!({"timeout_s": POLICY_TIMEOUT, "poll_s": POLL_INTERVAL});
        Action {
            action: "wait-policy",
            argv: Some(self.exec_read_state()),
            expect,
            only_if: None,
        }
    }

    fn uncordon(&self) -> Vec<Action> {
        let n = &self.t.name;
        let unmark = format!("{CORDON_MARK}-");
        vec![
            Action {
                action: "uncordon",
                argv: Some(self.k(&["uncordon", n])),
                expect: serde_json::json!({"exit": 0}),
                only_if: Some("marked"),
            },
            Action {
                action: "unmark",
                argv: Some(self.k(&["annotate", "node", n, &unmark])),
                expect: serde_json::json!({"exit": 0}),
                only_if: Some("marked"),
            },
        ]
    }
}

/// The per-node steps, in order: read the state, decide, then the steps of each branch
/// (markdown and JSON print them; the shell script runs the same sequence, step ids included,
/// with the decision made at run time).
pub fn steps(list: &Checklist, t: &Target) -> Vec<Step> {
    let n = &t.name;
    let timeout = &list.options.drain_timeout;
    let target = target_text(list);
    let k = kubectl_prefix(list);
    let sel = selector_text(&list.pod_selector);
    let a = Argv {
        list,
        t,
        sel: sel.clone(),
    };
    let p = list.desired.policy;
    let mut out = Vec::new();
    let mut push = |branch: Branch, mut s: Step, actions: Vec<Action>| {
        s.branch = branch;
        s.actions = actions;
        out.push(s);
    };
    push(
        Branch::Always,
        Step::new(
            "read-state",
            "read the node's cGPU state through its installer pod (module version, every /proc/cgpu_km/<gpu>/policy)".into(),
            Some(read_state_command(list, &sel, n)),
        ),
        vec![
            a.check_node("check-node"),
            a.find_pod(),
            Action {
                action: "read-state",
                argv: Some(a.exec_read_state()),
                expect: serde_json::json!({"exit": 0}),
                only_if: None,
            },
        ],
    );
    push(
        Branch::Always,
        Step::new(
            "decide",
            format!(
                "decide from what it shows: {target} → at the target, nothing to do{}; `no-module` → module not loaded: restart the installer pod only (no cordon, no drain, no reboot); the module loaded and not at the target → cordon, drain, reboot; nothing readable → stop here (never reboot blind)",
                if t.ours {
                    " but undo the cordon an earlier checklist run left"
                } else {
                    ""
                }
            ),
            None,
        ),
        vec![Action {
            action: "decide",
            argv: None,
            expect: a.target(),
            only_if: None,
        }],
    );
    if t.ours {
        push(
            Branch::AtTarget,
            Step::new(
                "uncordon",
                format!(
                    "at the target: uncordon it (an earlier checklist run cordoned it: annotation {CORDON_MARK}) and drop the annotation"
                ),
                Some(format!(
                    "{k} uncordon {n} && {k} annotate node {n} {CORDON_MARK}-"
                )),
            ),
            a.uncordon(),
        );
    }
    push(
        Branch::NoModule,
        Step::new(
            "restart-installer-pod",
            format!(
                "module not loaded: delete the node's installer pod; the DaemonSet recreates it and it loads the module with POLICY \"{p}\" (no drain, no reboot)"
            ),
            Some(format!(
                "{k} -n kube-system delete pod {}",
                pod_of(list, &sel, n)
            )),
        ),
        vec![
            a.check_node("check-node"),
            a.find_pod(),
            a.delete_pod("restart-installer-pod", None),
        ],
    );
    let wait_pod = |s: &str| {
        Step::new(
            "wait-installer-pod",
            format!(
                "{s}wait for the node's installer pod to be Ready (it loads the module with the new POLICY)"
            ),
            Some(format!(
                "{k} -n kube-system wait --for=condition=Ready pod -l {sel} --field-selector spec.nodeName={n} --timeout={POD_TIMEOUT}s"
            )),
        )
    };
    let wait_policy = |s: &str| {
        Step::new(
            "wait-policy",
            format!(
                "{s}read the state again every {POLL_INTERVAL} s, at most {} min, until {target}",
                POLICY_TIMEOUT / 60
            ),
            Some(read_state_command(list, &sel, n)),
        )
    };
    push(
        Branch::NoModule,
        wait_pod("module not loaded: "),
        vec![a.wait_pod()],
    );
    push(
        Branch::NoModule,
        wait_policy("module not loaded: "),
        vec![a.find_pod(), a.wait_policy()],
    );
    if t.ours {
        push(
            Branch::NoModule,
            Step::new(
                "uncordon",
                format!(
                    "module not loaded: uncordon it (an earlier checklist run cordoned it: annotation {CORDON_MARK}) and drop the annotation"
                ),
                Some(format!(
                    "{k} uncordon {n} && {k} annotate node {n} {CORDON_MARK}-"
                )),
            ),
            a.uncordon(),
        );
    }
    let mark = format!("{CORDON_MARK}=true");
    let cordon_actions = vec![
        a.check_node("check-node"),
        Action {
            action: "mark",
            argv: Some(a.k(&["annotate", "node", n, &mark, "--overwrite"])),
            expect: serde_json::json!({"exit": 0}),
            only_if: Some("schedulable"),
        },
        Action {
            action: "cordon",
            argv: Some(a.k(&["cordon", n])),
            expect: serde_json::json!({"exit": 0}),
            only_if: Some("schedulable"),
        },
    ];
    push(
        Branch::Differs,
        if t.was_cordoned {
            Step::new(
                "cordon",
                "differs: already cordoned before this change: leave it so (no annotation: this run will not uncordon it)".into(),
                None,
            )
        } else {
            Step::new(
                "cordon",
                format!(
                    "differs: record that this run cordons it (annotation {CORDON_MARK}), then cordon"
                ),
                Some(format!(
                    "{k} annotate node {n} {CORDON_MARK}=true --overwrite && {k} cordon {n}"
                )),
            )
        },
        cordon_actions,
    );
    let drain_timeout = format!("--timeout={timeout}");
    push(
        Branch::Differs,
        Step::new(
            "drain",
            format!(
                "differs: drain (a PodDisruptionBudget that blocks it stops the node here after {timeout})"
            ),
            Some(format!(
                "{k} drain {n} --ignore-daemonsets --delete-emptydir-data --timeout={timeout}"
            )),
        ),
        vec![Action {
            action: "drain",
            argv: Some(a.k(&[
                "drain",
                n,
                "--ignore-daemonsets",
                "--delete-emptydir-data",
                &drain_timeout,
            ])),
            expect: serde_json::json!({"exit": 0}),
            only_if: None,
        }],
    );
    let delete = Some(format!(
        "{k} -n kube-system delete pod {}",
        pod_of(list, &sel, n)
    ));
    let renew_title = match list.strategy {
        Some(Strategy::OnDelete) => format!(
            "differs: updateStrategy OnDelete: delete the node's installer pod so that the DaemonSet recreates it with POLICY \"{p}\" (a reboot would bring the old pod, and the old policy, back)"
        ),
        Some(Strategy::RollingUpdate) => "differs: if the node's installer pod's POLICY or image is not the DaemonSet's (the rollout has not replaced it), delete it so that the DaemonSet recreates it (a reboot would bring the old pod back)".into(),
        None => "differs: if the node's installer pod's POLICY or image is not the DaemonSet's (always so with updateStrategy OnDelete), delete it so that the DaemonSet recreates it with the new POLICY".into(),
    };
    push(
        Branch::Differs,
        Step::new("renew-installer-pod", renew_title, delete),
        vec![
            a.find_pod(),
            a.delete_pod("renew-installer-pod", Some("pod-differs")),
        ],
    );
    let mut record = a.check_node("record-boot-id");
    record.expect["record"] = serde_json::json!({"boot_id": "boot_id"});
    push(
        Branch::Differs,
        Step::new(
            "record-boot-id",
            "differs: record the node's boot id".into(),
            Some(format!(
                "BOOT_ID=$({k} get node {n} -o jsonpath='{{.status.nodeInfo.bootID}}')"
            )),
        ),
        vec![record],
    );
    let reboot = match (&t.instance_id, &t.region) {
        (Some(id), Some(r)) => Some(format!(
            "aliyun ecs RebootInstance --RegionId {r} --InstanceId {id}"
        )),
        (Some(id), None) => Some(format!("aliyun ecs RebootInstance --InstanceId {id}")),
        _ => None,
    };
    let reboot_argv = match (&t.instance_id, &t.region) {
        (Some(id), Some(r)) => Some(
            [
                "aliyun",
                "ecs",
                "RebootInstance",
                "--RegionId",
                r,
                "--InstanceId",
                id,
            ]
            .map(str::to_string)
            .to_vec(),
        ),
        _ => None,
    };
    push(
        Branch::Differs,
        Step::new(
            "reboot",
            format!(
                "differs: reboot it (only the instance the node's live spec.providerID names); RebootInstance only starts the restart{}",
                if reboot.is_none() {
                    " (no ECS instance id: reboot it from the console or with `sudo reboot` on the node)"
                } else {
                    ""
                }
            ),
            reboot,
        ),
        vec![Action {
            action: "reboot",
            argv: reboot_argv,
            expect: serde_json::json!({"exit": 0}),
            only_if: None,
        }],
    );
    let mut wait_boot = a.check_node("wait-boot-id");
    wait_boot.expect["not_equal"] = serde_json::json!({"boot_id": "{boot_id}"});
    wait_boot.expect["repeat"] =
        serde_json::json!({"timeout_s": REBOOT_TIMEOUT, "poll_s": POLL_INTERVAL});
    push(
        Branch::Differs,
        Step::new(
            "wait-boot-id",
            format!(
                "differs: wait until the boot id differs from the one recorded (the node is still Ready right after the call; only a new boot id proves the restart), at most {} min",
                REBOOT_TIMEOUT / 60
            ),
            Some(format!(
                "timeout {REBOOT_TIMEOUT}s sh -c 'while [ \"$({k} get node {n} -o jsonpath={{.status.nodeInfo.bootID}})\" = \"$0\" ]; do sleep {POLL_INTERVAL}; done' \"$BOOT_ID\""
            )),
        ),
        vec![wait_boot],
    );
    let node_ref = format!("node/{n}");
    let ready_timeout = format!("--timeout={READY_TIMEOUT}s");
    push(
        Branch::Differs,
        Step::new(
            "wait-node-ready",
            "differs: wait for the node to be Ready".into(),
            Some(format!(
                "{k} wait --for=condition=Ready node/{n} --timeout={READY_TIMEOUT}s"
            )),
        ),
        vec![Action {
            action: "wait-node-ready",
            argv: Some(a.k(&["wait", "--for=condition=Ready", &node_ref, &ready_timeout])),
            expect: serde_json::json!({"exit": 0}),
            only_if: None,
        }],
    );
    push(Branch::Differs, wait_pod("differs: "), vec![a.wait_pod()]);
    push(
        Branch::Differs,
        wait_policy("differs: "),
        vec![a.find_pod(), a.wait_policy()],
    );
    push(
        Branch::Differs,
        if t.was_cordoned {
            Step::new(
                "uncordon",
                "differs: leave it cordoned: it was cordoned before this change (uncordon it when that reason is resolved)".into(),
                None,
            )
        } else {
            Step::new(
                "uncordon",
                format!(
                    "differs: uncordon it (this run cordoned it: annotation {CORDON_MARK}) and drop the annotation"
                ),
                Some(format!(
                    "{k} uncordon {n} && {k} annotate node {n} {CORDON_MARK}-"
                )),
            )
        },
        {
            let mut v = vec![a.check_node("check-node")];
            v.extend(a.uncordon());
            v
        },
    );
    out
}

/// Checks before the first node, in order.
pub fn preflight(list: &Checklist) -> Vec<Step> {
    let p = list.desired.policy;
    let k = kubectl_prefix(list);
    let sel = selector_text(&list.pod_selector);
    let step = Step::new;
    let apply = match list.desired_label.strip_prefix("--policy") {
        Some(_) => {
            let tag = match (&list.tag_change, &list.desired.tag) {
                (Some(_), Some(t)) => format!(" --set cgpu.tag={t}"),
                _ => String::new(),
            };
            format!("helm upgrade … --reuse-values --set cgpu.policy={p}{tag}")
        }
        None => format!("helm upgrade … -f {}", list.desired_label),
    };
    let mut out = vec![
        step(
            "owners",
            "tell the owners of GPU workloads on these nodes; stop GPU applications that cannot move".into(),
            None,
        ),
        step(
            "apply",
            format!("apply the desired values so that cgpu-installer carries POLICY \"{p}\""),
            Some(apply),
        ),
    ];
    let health = match list.strategy {
        Some(Strategy::OnDelete) =>
            "installer DaemonSet healthy: every cgpu-installer pod on a Ready node is Ready (updateStrategy OnDelete: the pods keep the old POLICY until each node's step deletes them; `kubectl rollout status` does not work with OnDelete); do not start while it is not"
        .to_string(),
        Some(Strategy::RollingUpdate) => format!(
            "installer DaemonSet healthy: every cgpu-installer pod on a Ready node is Ready and carries POLICY \"{p}\" (the rollout of the change is finished); do not start while it is not"
        ),
        None => format!(
            "installer DaemonSet healthy: every cgpu-installer pod on a Ready node is Ready and, with updateStrategy RollingUpdate, carries POLICY \"{p}\" (with OnDelete they keep the old one until each node's step deletes them, and `kubectl rollout status` does not work); do not start while it is not"
        ),
    };
    out.push(step(
        "installer-health",
        health,
        Some(format!("{k} -n kube-system get ds cgpu-installer -o wide && {k} -n kube-system get pod -l {sel} -o wide")),
    ));
    out.push(step(
        "pdb",
        "PodDisruptionBudgets with ALLOWED DISRUPTIONS 0 block a drain: settle them with their owners first".into(),
        Some(format!("{k} get pdb -A")),
    ));
    out.push(step(
        "capacity",
        "room for the evicted GPU pods: the free aliyun.com/gpu-mem (allocatable minus requests) of the nodes that stay up must cover what the pods of the nodes restarted at once request, or they stay Pending".into(),
        Some(format!("{k} describe nodes | grep -E '^Name:|aliyun.com/gpu-mem'")),
    ));
    let mut by_region: Vec<(Option<&str>, Vec<&str>)> = Vec::new();
    for t in &list.nodes {
        let Some(id) = t.instance_id.as_deref() else {
            continue;
        };
        let r = t.region.as_deref();
        match by_region.iter_mut().find(|(x, _)| *x == r) {
            Some((_, ids)) => ids.push(id),
            None => by_region.push((r, vec![id])),
        }
    }
    for (r, ids) in by_region {
        let region = r.map(|r| format!(" --RegionId {r}")).unwrap_or_default();
        out.push(step(
            "ecs-permission",
            "ECS permission: a dry run of the reboot must answer DryRunOperation (the request would succeed); anything else (Forbidden.RAM, an unknown instance) is to fix first".into(),
            Some(format!(
                "for i in {}; do aliyun ecs RebootInstance{region} --InstanceId \"$i\" --DryRun true; done",
                ids.join(" ")
            )),
        ));
    }
    out.push(step(
        "auto-repair",
        "ACK managed node pools: auto repair acts on a node that stays NotReady past its threshold (180 s for KubeletNotReady) and may drain, restart and uncordon it on its own; switch it off for these node pools during the window".into(),
        None,
    ));
    out.push(step(
        "autoscaler",
        "cluster autoscaler: a drained node looks empty and may be removed; pause scale-down for the window or annotate the nodes cluster-autoscaler.kubernetes.io/scale-down-disabled=true".into(),
        None,
    ));
    out
}

/// How to check a GPU-sharing node that the run does not restart.
pub fn verify_step(list: &Checklist, o: &Other) -> Step {
    Step::new(
        "verify",
        format!(
            "read its policy files through its installer pod (cgpu-installer or cgpu-core-installer): blocking until {}; no installer pod there: check by hand (`kubectl debug node/{} -it --image=<an image with sh>` shares the host's PID namespace: `cat /proc/cgpu_km/*/policy`)",
            target_text(list),
            o.name
        ),
        Some(read_state_command(
            list,
            "'name in (cgpu-installer,cgpu-core-installer)'",
            &o.name,
        )),
    )
}

/// The header every format shows: the cluster, context, API server, identity, when it was
/// planned, and how many nodes may restart.
pub fn header_lines(list: &Checklist) -> Vec<String> {
    let id = &list.options.identity;
    let mut out = Vec::new();
    out.push(format!(
        "Cluster: context {} · API server {} · identity {}",
        id.context.as_deref().unwrap_or("(none: kubectl's default)"),
        id.server.as_deref().unwrap_or("unknown"),
        match (&id.cluster_uid, &id.unread) {
            (Some(u), _) => format!("kube-system UID {u}"),
            (None, Some(why)) => format!(
                "not read when planning ({why}): the script reads the kube-system UID at its first run and records it"
            ),
            (None, None) => "kube-system UID read and recorded by the script at its first run".into(),
        }
    ));
    if let Some(k) = &id.kubeconfig {
        out.push(format!("Kubeconfig: {k}"));
    }
    if let Some(t) = &id.planned_at {
        out.push(format!("Planned: {t}"));
    }
    if list.nodes_given {
        out.push(format!(
            "{} of {} nodes running cgpu-installer may restart (each only if its own state differs from the target)",
            list.nodes.len(),
            list.installer_nodes
        ));
    }
    out
}

/// Render in a format. Shell needs `--nodes`.
pub fn render(
    list: &Checklist,
    format: ChecklistFormat,
    yes: bool,
) -> Result<String, ChecklistError> {
    Ok(match format {
        ChecklistFormat::Markdown => markdown::render(list),
        ChecklistFormat::Json => json::render(list),
        ChecklistFormat::Shell => {
            if !list.nodes_given && list.reboot_required() {
                return Err(ChecklistError::ShellNeedsNodes);
            }
            let id = &list.options.identity;
            if id.context.is_none() && id.cluster_uid.is_none() {
                return Err(ChecklistError::ShellNeedsContext);
            }
            shell::render(list, yes)
        }
    })
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
