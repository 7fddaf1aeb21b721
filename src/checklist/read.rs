//! Reading both sides of the change: the deployed side (`--current`: a DaemonSet or values),
//! the desired side (values or `--policy`), and the Node objects (who runs the installer, who is
//! listed apart).

use std::sync::Arc;

use super::model::{
    Checklist, ChecklistError, Desired, Inputs, KeyChange, NodeState, Options, Origin, Other,
    OtherKind, Placement, Settings, Strategy, Target,
};
use super::steps::{CORDON_MARK, NVIDIA_UPGRADE_STATE};
use crate::cgpu::{self, POLICY_RANGE_TEXT, SCHEDULE_LABEL};
use crate::cgpu::{Tag, parse_tag, split_image};
use crate::check::{DEFAULT_MAX_FILE_SIZE, read_input};
use crate::manifest::node::{NodeView, Taint, nodes_of};
use crate::manifest::{Objects, daemonset_default_tolerations, scalar_text};
use crate::rules::k8s;
use crate::yaml::{self, Node, Scalar, Source};

/// The deployed side as read from `--current`.
pub(super) struct Current {
    /// The sources `--current` was read from (one file, or a cluster's objects).
    pub(super) srcs: Vec<Arc<Source>>,
    pub(super) settings: Settings,
    pub(super) placement: Placement,
    /// The coalesced values root when `--current` is a values file (the base for `--desired`).
    pub(super) values: Option<Node>,
    /// POLICY of a cgpu-core-installer given in the same input (a List, a stream), if any.
    pub(super) core_policy: Option<u8>,
    /// The DaemonSet's update strategy, when `--current` is the DaemonSet.
    pub(super) strategy: Option<Strategy>,
    /// `status.desiredNumberScheduled` and `status.numberReady` of a live DaemonSet.
    pub(super) status: Option<(u64, u64)>,
    /// POLICY is not set on the DaemonSet: the plan assumes [`CHART_DEFAULT_POLICY`](crate::cgpu::CHART_DEFAULT_POLICY).
    pub(super) policy_assumed: bool,
    /// The DaemonSet's `.spec.selector.matchLabels`: how its pods are found.
    pub(super) pod_selector: Option<Vec<(String, String)>>,
    /// The installer container's image as the DaemonSet runs it (`host/path:tag`).
    pub(super) image: Option<String>,
    /// The DaemonSet's `metadata.generation`, when the input has it (a live object).
    pub(super) generation: Option<u64>,
    /// The live settings as a values document (`cgpu:` with the keys that could be read): the
    /// values file as given, or what the DaemonSet runs. `--reuse-values` layers the desired
    /// values over it; the plan's key table shows it as "live".
    pub(super) live_values: Node,
}

/// The desired side.
pub(super) struct DesiredSide {
    pub(super) settings: Settings,
    /// The input the findings of the desired side come from (the values file, or the
    /// command line's `--policy/--tag` as a values document).
    pub(super) src: Option<Arc<Source>>,
    /// The nodeSelector the desired values set explicitly (the chart's DaemonSet then selects
    /// `ack.node.gpu.schedule=cgpu` plus these).
    pub(super) selector: Option<Vec<(String, String)>>,
    /// The tag was given (`--tag`, or set by the desired values), not carried over.
    pub(super) tag_given: bool,
    /// Every cgpu key: live value, value after the upgrade, and where that comes from.
    pub(super) keys: Vec<KeyChange>,
    /// The desired values document as given (the command line's, for `--policy`).
    pub(super) root: Node,
    /// The effective `cgpu.enabled` is false (as the chart's `if` reads it): the upgrade
    /// removes the installer.
    pub(super) disabled: bool,
}

pub(super) fn load(path: &str) -> Result<(Arc<Source>, yaml::Parsed), ChecklistError> {
    let src = read_input(path, DEFAULT_MAX_FILE_SIZE)?;
    let parsed = parse_source(&src)?;
    Ok((src, parsed))
}

/// Every source of `input` parsed, in order; a source that does not parse stops the checklist.
fn parsed(input: &Inputs) -> Result<Vec<yaml::Parsed>, ChecklistError> {
    input.sources.iter().map(parse_source).collect()
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
    let src = crate::cgpu::chart_defaults();
    yaml::parse(&src)
        .documents
        .into_iter()
        .find_map(|d| d.root)
        .expect("chart defaults parse")
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
        .and_then(|n| cgpu::values_policy(n.scalar()?))
        .ok_or_else(|| ChecklistError::Unreadable {
            what: format!("{path}: cgpu.policy"),
            message: format!(
                "`{}` is not a policy {POLICY_RANGE_TEXT} (run `cgpu-lint check {path}`)",
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

pub(super) fn read_current(input: &Inputs) -> Result<Current, ChecklistError> {
    let path = input.label.as_str();
    let parsed_all = parsed(input)?;
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
            None if envs.is_empty() => (crate::cgpu::CHART_DEFAULT_POLICY, true),
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
        let generation = count("/metadata/generation");
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
            image: inst
                .image()
                .and_then(|(n, _)| n.as_str().map(str::to_string)),
            generation,
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
        image: None,
        generation: None,
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
/// (merged: an inference from the chart's templates, not documented by Alibaba Cloud).
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

pub(super) fn read_desired(
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

/// The Node objects: who runs the installer (restart candidates) and who is listed apart.
/// Returns the cluster region when every node agrees.
pub(super) fn read_nodes(
    list: &mut Checklist,
    input: &Inputs,
    current_selector: &[(String, String)],
) -> Result<Option<String>, ChecklistError> {
    let path = input.label.as_str();
    let parsed_all = parsed(input)?;
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
    // Another actor that drains and reboots GPU nodes (the NVIDIA GPU Operator's driver upgrade
    // controller): the run does not take the node while its state is set.
    if let Some(state) = node
        .label(NVIDIA_UPGRADE_STATE)
        .filter(|s| s != "upgrade-done")
    {
        notes.push(format!(
            "{NVIDIA_UPGRADE_STATE}={state}: the NVIDIA GPU Operator is upgrading its driver (it cordons, drains and restarts the node itself); the run does not take it while the state is set and it is not done until then"
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
