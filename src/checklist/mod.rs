//! The node-reboot checklist (spec §6): what changes between the deployed cGPU settings and the
//! desired ones, which nodes run the installer and must restart, and in what order. One model,
//! three printers (markdown task list, JSON, a reviewable shell script).

pub mod json;
pub mod markdown;
pub mod shell;

use std::sync::Arc;

use semver::Version;

use crate::cgpu::CHART_DEFAULTS;
use crate::cgpu::SCHEDULE_LABEL;
use crate::cgpu::{POLICY_TITLES, Tag, parse_tag, split_image};
use crate::check::{DEFAULT_MAX_FILE_SIZE, InputError, read_input};
use crate::diag::{Diagnostic, Severity};
use crate::manifest::{Objects, Toleration, daemonset_default_tolerations, scalar_text};
use crate::rules::nodes::{self, NodeFacts, NodeView};
use crate::rules::{Ctx, RuleOptions, k8s};
use crate::yaml::{self, Node, Scalar, Source};

/// The policy cgpu-installer is assumed to apply when its POLICY env is missing. Nobody has
/// published the installer's built-in default (domain.md §10.3); the chart documents `policy: 1`,
/// so that is what a DaemonSet rendered from the chart would have carried. The assumption is
/// reported (installer-policy-missing) so a reader can check `/proc/cgpu_km/0/policy` on a node.
pub const ASSUMED_DEFAULT_POLICY: u8 = crate::cgpu::CHART_DEFAULT_POLICY;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
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

/// The deployed side as read from `--current`.
struct Current {
    settings: Settings,
    placement: Placement,
    /// The coalesced values root when `--current` is a values file (the base for `--desired`).
    values: Option<Node>,
    /// POLICY of a cgpu-core-installer given in the same input (a List, a stream), if any.
    core_policy: Option<u8>,
    diagnostics: Vec<Diagnostic>,
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
}

/// A node listed apart.
#[derive(Debug, Clone)]
pub struct Other {
    pub name: String,
    pub kind: OtherKind,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtherKind {
    /// Uses cGPU isolation through another installer (core_mem, legacy cgpu=true).
    AlsoIsolated,
    /// Matches the selector but the installer does not run there (virtual, untolerated taint).
    Excluded,
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
}

impl Checklist {
    pub fn reboot_required(&self) -> bool {
        self.policy_change.is_some() || self.tag_change.is_some()
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
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
        let mut diagnostics = Vec::new();
        let envs = inst.policy_envs();
        let policy = match inst.policy() {
            Some(p) => p,
            None if envs.is_empty() => {
                let opts = RuleOptions::default();
                let empty = Default::default();
                let mut ctx = Ctx::new(&opts, doc.index, &empty);
                let (at, pointer) = inst
                    .main_container()
                    .unwrap_or((inst.obj.node, inst.obj.pointer.to_string()));
                ctx.at(
                    "installer-policy-missing",
                    at,
                    pointer,
                    crate::cgpu::policy_missing_message(inst.name()),
                );
                diagnostics.extend(ctx.out);
                ASSUMED_DEFAULT_POLICY
            }
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
        return Ok(Current {
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
            diagnostics,
        });
    }
    // Else the values now deployed, over the chart defaults.
    let root = documents()
        .filter_map(|d| d.root.as_ref())
        .find(|r| r.get("cgpu").is_some())
        .ok_or_else(|| ChecklistError::NotCurrent { path: path.into() })?;
    let merged = coalesced_values(root, chart_defaults());
    let settings = values_settings(&merged, path)?;
    // The chart's DaemonSet selects ack.node.gpu.schedule=cgpu; values' nodeSelector adds to it
    // (domain.md §10.1: merged, an inference). It declares no tolerations of its own that we
    // know of, so only the DaemonSet controller's defaults apply.
    let mut selector = vec![(SCHEDULE_LABEL.to_string(), "cgpu".to_string())];
    if let Some(m) = merged.pointer("/cgpu/nodeSelector").and_then(Node::as_map) {
        for e in m {
            if let Some(v) = scalar_text(&e.value) {
                selector.retain(|(k, _)| *k != e.key);
                selector.push((e.key.clone(), v));
            }
        }
    }
    Ok(Current {
        settings,
        placement: Placement {
            selector,
            tolerations: daemonset_default_tolerations(),
        },
        values: Some(merged),
        core_policy,
        diagnostics: Vec::new(),
    })
}

fn read_desired(desired: &Desired, current: &Current) -> Result<Settings, ChecklistError> {
    match desired {
        Desired::Policy { policy, tag } => {
            let tag = tag.map(str::to_string).or(current.settings.tag.clone());
            if let Some(t) = &tag
                && let Err(e) = parse_tag(t)
            {
                return Err(ChecklistError::Unreadable {
                    what: "--tag".into(),
                    message: e.message(t),
                });
            }
            Ok(Settings {
                policy: *policy,
                version: tag_version(tag.as_deref()),
                tag,
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
            // `helm upgrade -f VALUES` layers the file over the chart defaults; when the current
            // side is values too, over those (as `--reuse-values` would).
            let base = current.values.clone().unwrap_or_else(chart_defaults);
            let merged = coalesced_values(&root, base);
            let s = values_settings(&merged, path)?;
            if let Some(t) = &s.tag
                && let Err(e) = parse_tag(t)
            {
                return Err(ChecklistError::Unreadable {
                    what: format!("{path}: cgpu.tag"),
                    message: e.message(t),
                });
            }
            Ok(s)
        }
    }
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
fn transient_condition_taint(t: &nodes::Taint) -> bool {
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
) -> Result<Checklist, ChecklistError> {
    let current = Inputs::file(current_path)?;
    let nodes = nodes_path.map(Inputs::file).transpose()?;
    build_from(&current, desired, nodes.as_ref())
}

/// Build the checklist from inputs read anywhere (files, or a cluster's objects).
pub fn build_from(
    current_input: &Inputs,
    desired: &Desired,
    nodes_input: Option<&Inputs>,
) -> Result<Checklist, ChecklistError> {
    let current_path = current_input.label.as_str();
    let nodes_path = nodes_input.map(|n| n.label.as_str());
    let current = read_current(current_input)?;
    let desired_settings = read_desired(desired, &current)?;
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
    let mut list = Checklist {
        current: current.settings.clone(),
        desired: desired_settings,
        policy_change,
        tag_change,
        build_change,
        placement: current.placement.clone(),
        nodes_given: nodes_path.is_some(),
        nodes: Vec::new(),
        other_nodes: Vec::new(),
        diagnostics: current.diagnostics,
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
    };
    if let Some(nodes) = nodes_input {
        read_nodes(&mut list, nodes)?;
    }
    Ok(list)
}

fn read_nodes(list: &mut Checklist, input: &Inputs) -> Result<(), ChecklistError> {
    let path = input.label.as_str();
    let parsed_all = input.parsed()?;
    let opts = RuleOptions::default();
    // The version that will run after the change is the one the driver must fit.
    let cgpu_version = list
        .desired
        .version
        .as_ref()
        .or(list.current.version.as_ref())
        .map(|t| t.core.clone());
    let mut found = false;
    let mut targets = Vec::new();
    for doc in parsed_all.iter().flat_map(|p| p.documents.iter()) {
        let Some(root) = &doc.root else { continue };
        let objects = Objects::of(root);
        let mut ctx = Ctx::new(&opts, doc.index, &doc.alias_uses);
        for node in nodes::nodes_of(&objects) {
            found = true;
            refuse_name(node.name(), path)?;
            let selected = node.matches(&list.placement.selector);
            // The driver check only matters where the installer puts cGPU.
            let version = selected.then_some(cgpu_version.as_ref()).flatten();
            let facts = NodeFacts {
                cgpu: version.cloned(),
                legacy_installer: Some(crate::cgpu::selects_legacy(&list.placement.selector)),
            };
            nodes::check(&mut ctx, &node, &facts);
            if let Some(item) = classify(list, &node, selected, path)? {
                match item {
                    Classified::Target(t) => targets.push(t),
                    Classified::Other(o) => list.other_nodes.push(o),
                }
            }
        }
        list.diagnostics.extend(ctx.out);
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
            "canary: do this node first and check its GPU workloads before the rest".into(),
        );
        targets.insert(0, canary);
    }
    list.nodes = targets;
    Ok(())
}

enum Classified {
    Target(Target),
    Other(Other),
}

fn classify(
    list: &Checklist,
    node: &NodeView,
    selected: bool,
    path: &str,
) -> Result<Option<Classified>, ChecklistError> {
    let name = node.name().to_string();
    let schedule = node.schedule();
    let other = |kind, reason: String| {
        Ok(Some(Classified::Other(Other {
            name: name.clone(),
            kind,
            reason,
        })))
    };
    if !selected {
        return match schedule.as_deref() {
            Some("core_mem") => other(
                OtherKind::AlsoIsolated,
                match list.core_policy {
                    Some(p) if p == list.desired.policy => format!(
                        "ack.node.gpu.schedule=core_mem: cGPU isolation through cgpu-core-installer, whose POLICY is already {p}: consistent with the change"
                    ),
                    Some(p) => format!(
                        "ack.node.gpu.schedule=core_mem: cGPU isolation through cgpu-core-installer, whose POLICY is {p}; all GPU-sharing nodes must use one policy, so set it to {} too (and restart these nodes the same way)",
                        list.desired.policy
                    ),
                    None => "ack.node.gpu.schedule=core_mem: cGPU isolation through cgpu-core-installer, not this DaemonSet; all GPU-sharing nodes must use one policy, so change cgpu-core-installer's POLICY to match".into(),
                },
            ),
            None if node.legacy_cgpu() => other(
                OtherKind::AlsoIsolated,
                "legacy cgpu=true label (legacy-cgpu-label): not selected by cgpu-installer, but cGPU may be active; relabel it ack.node.gpu.schedule=cgpu, or make sure it runs the same policy".into(),
            ),
            Some(s) => other(
                OtherKind::NotAffected,
                format!("not affected: ack.node.gpu.schedule={s} has no cgpu-installer"),
            ),
            None => other(
                OtherKind::NotAffected,
                "not affected: no GPU-sharing label".into(),
            ),
        };
    }
    if node.is_virtual() {
        return other(
            OtherKind::Excluded,
            "virtual (non-ECS) node (virtual-node-cgpu): the installer does not run there; no reboot".into(),
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
                "the installer does not tolerate the taint {}: cGPU is not installed by it there; no reboot",
                untolerated.join(", ")
            ),
        );
    }
    let was_cordoned = node.unschedulable();
    let ready = node.is_ready();
    let mut notes = Vec::new();
    if was_cordoned {
        notes.push(
            "already cordoned (spec.unschedulable) before this change: it stays cordoned at the end; uncordon it only when the earlier reason is resolved".into(),
        );
    }
    if !ready {
        notes.push(format!(
            "NotReady (Ready={}): the installer pod cannot be reached; do this node when it is back, or reboot it from the ECS console",
            node.ready_status().unwrap_or_else(|| "not reported".into())
        ));
    }
    let (mut instance_id, mut region) = (None, node.region());
    if let Some((r, id)) = node.ecs_instance() {
        if !is_instance_id(&id) {
            return Err(ChecklistError::Refused {
                what: "ECS instance id",
                value: id,
                path: path.to_string(),
                why: "not of the form i-[a-z0-9]{8,40}",
            });
        }
        instance_id = Some(id);
        region = region.or(Some(r));
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
    } else if was_cordoned {
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
    })))
}

/// One step of a node's procedure: what to do, and the command when there is one.
#[derive(Debug, Clone)]
pub struct Step {
    pub title: String,
    pub command: Option<String>,
}

pub const NSENTER: &str = "nsenter -t 1 -i -p -n -u -m --";

/// The per-node steps, in order (shared by markdown and JSON; the shell printer runs the same
/// sequence with runtime checks).
pub fn steps(list: &Checklist, t: &Target) -> Vec<Step> {
    let n = &t.name;
    let pod = format!(
        "$(kubectl -n kube-system get pod -l name=cgpu-installer --field-selector spec.nodeName={n} -o jsonpath='{{.items[0].metadata.name}}')"
    );
    let step = |title: &str, command: Option<String>| Step {
        title: title.to_string(),
        command,
    };
    let mut out = vec![
        step(
            if t.was_cordoned {
                "cordon (already cordoned)"
            } else {
                "cordon"
            },
            Some(format!("kubectl cordon {n}")),
        ),
        step(
            "drain",
            Some(format!(
                "kubectl drain {n} --ignore-daemonsets --delete-emptydir-data"
            )),
        ),
        step(
            "read the cGPU module version through the installer pod on the node",
            Some(format!(
                "kubectl -n kube-system exec {pod} -- {NSENTER} cat /proc/cgpu_km/version"
            )),
        ),
    ];
    let reboot = match (&t.instance_id, &t.region) {
        (Some(id), Some(r)) => Some(format!(
            "aliyun ecs RebootInstance --RegionId {r} --InstanceId {id}"
        )),
        (Some(id), None) => Some(format!("aliyun ecs RebootInstance --InstanceId {id}")),
        _ => None,
    };
    out.push(step(
        "reboot only if it printed a version (no module loaded: the new policy applies without a reboot)",
        reboot,
    ));
    out.push(step(
        "wait for Ready",
        Some(format!(
            "kubectl wait --for=condition=Ready node/{n} --timeout=15m"
        )),
    ));
    let p = list.desired.policy;
    out.push(step(
        &format!("verify every GPU shows policy {p}"),
        Some(format!(
            "kubectl -n kube-system exec {pod} -- {NSENTER} sh -c 'grep -H . /proc/cgpu_km/[0-9]*/policy'"
        )),
    ));
    if list.tag_change.is_some()
        && let Some(v) = &list.desired.version
    {
        out.push(step(
            &format!("verify the module version is {}", v.core),
            Some(format!(
                "kubectl -n kube-system exec {pod} -- {NSENTER} cat /proc/cgpu_km/version"
            )),
        ));
    }
    out.push(if t.was_cordoned {
        step(
            "uncordon only when the reason it was cordoned before is resolved",
            Some(format!("kubectl uncordon {n}")),
        )
    } else {
        step("uncordon", Some(format!("kubectl uncordon {n}")))
    });
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
