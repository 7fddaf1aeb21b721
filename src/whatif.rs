//! The upgrade what-if (`cgpu-lint compat --nodes FILE | --cluster` with `--kubernetes`,
//! `--tag`, `--driver`, `--os-image`): the node rules of the one pipeline
//! ([`lint::lint_cluster_each`]) over the inputs as they are and as they would be after the
//! change (the node objects' kubeletVersion, driver labels and osImage, the installers' image
//! tag and the values' `cgpu.tag` rewritten in place), and the difference per node: what breaks
//! (a new error, with its rule, the data entry and its source), what is new but does not fail,
//! what is fixed, what stays. Each change is also tried alone: a change that breaks alone what
//! the whole plan does not is advice on the order ("--tag before --kubernetes").

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::Serialize;

use crate::catalogue::{Group, RuleId, Severity};
use crate::cgpu::{self, DRIVER_LABEL, GFD_DRIVER_FULL_LABEL, GFD_DRIVER_PART_LABELS, compat};
use crate::diag::{Diagnostic, Edit};
use crate::lint;
use crate::manifest::Objects;
use crate::manifest::node::nodes_of;
use crate::yaml::{self, Node, Source};

pub mod print;

#[derive(Debug, thiserror::Error)]
pub enum WhatIfError {
    #[error("give at least one change: --kubernetes, --tag, --driver or --os-image")]
    NoChange,
    #[error("--{flag} {value}: {why}")]
    Value {
        flag: &'static str,
        value: String,
        why: String,
    },
    #[error("the inputs hold no Node object (give `kubectl get nodes -o yaml` with --nodes)")]
    NoNodes,
    #[error("rewriting {file}: {why}")]
    Rewrite { file: String, why: String },
}

/// The planned change; each field the user gave.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Change {
    /// The Kubernetes release the kubelets will run (`1.35`, `v1.35.1-aliyun.1`); a node on
    /// that release or a newer one keeps its kubelet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<String>,
    /// The cgpu-installer image tag (or cGPU version) to deploy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// The NVIDIA driver of the GPU nodes (those with a driver label).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// The nodes' `status.nodeInfo.osImage`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_image: Option<String>,
}

impl Change {
    /// The flags given, as the user wrote them (`--kubernetes 1.35`).
    pub fn flags(&self) -> Vec<(&'static str, &str)> {
        [
            ("tag", &self.tag),
            ("kubernetes", &self.kubernetes),
            ("driver", &self.driver),
            ("os-image", &self.os_image),
        ]
        .into_iter()
        .filter_map(|(f, v)| Some((f, v.as_deref()?)))
        .collect()
    }

    /// This change with only `flag` kept.
    fn only(&self, flag: &str) -> Change {
        let keep = |f: &str, v: &Option<String>| if f == flag { v.clone() } else { None };
        Change {
            kubernetes: keep("kubernetes", &self.kubernetes),
            tag: keep("tag", &self.tag),
            driver: keep("driver", &self.driver),
            os_image: keep("os-image", &self.os_image),
        }
    }

    /// Refuse values the rewrite cannot write: a tag that is no cGPU tag, a driver or a
    /// Kubernetes version that does not start with numbers.
    pub fn validate(&self) -> Result<(), WhatIfError> {
        if self.flags().is_empty() {
            return Err(WhatIfError::NoChange);
        }
        let bad = |flag, value: &str, why: &str| WhatIfError::Value {
            flag,
            value: value.to_string(),
            why: why.to_string(),
        };
        if let Some(t) = &self.tag {
            let tag = cgpu::split_image(t).tag.unwrap_or(t);
            cgpu::parse_tag(tag).map_err(|e| bad("tag", t, &e.message(tag)))?;
        }
        if let Some(k) = &self.kubernetes {
            let v = k.trim().trim_start_matches('v');
            let mut parts = v.split(['.', '-', '+']);
            let ok = parts.next().is_some_and(|p| p.parse::<u64>().is_ok())
                && parts.next().is_some_and(|p| p.parse::<u64>().is_ok());
            if !ok {
                return Err(bad(
                    "kubernetes",
                    k,
                    "not a Kubernetes version (1.35, v1.35)",
                ));
            }
        }
        if let Some(d) = &self.driver
            && (compat::driver_parts(d).is_none_or(|p| p.len() < 2))
        {
            return Err(bad(
                "driver",
                d,
                "not an NVIDIA driver version (570.169, 535.161.07)",
            ));
        }
        if let Some(o) = &self.os_image
            && o.trim().is_empty()
        {
            return Err(bad("os-image", o, "empty"));
        }
        Ok(())
    }

    /// The kubelet version written on the nodes: `v` and the release as given.
    fn kubelet(&self) -> Option<String> {
        self.kubernetes.as_ref().map(|k| {
            let k = k.trim();
            if k.starts_with('v') {
                k.to_string()
            } else {
                format!("v{k}")
            }
        })
    }

    /// The planned cGPU tag (the tag of an image reference, or the text given).
    fn tag_text(&self) -> Option<&str> {
        self.tag
            .as_deref()
            .map(|t| cgpu::split_image(t).tag.unwrap_or(t))
    }
}

/// A data entry a finding names (`entry kubelet-1.35-cgroup-v2`), with its source.
#[derive(Debug, Clone, Serialize)]
pub struct Fact {
    pub entry: Option<String>,
    pub source: String,
    pub url: Option<String>,
    /// The date the source was read, for the data's entries.
    pub read: Option<String>,
}

/// One finding of the node rules, before or after.
#[derive(Debug, Clone, Serialize)]
pub struct Item {
    pub rule: &'static str,
    pub severity: Severity,
    pub message: String,
    /// The finding's JSON pointer in its input.
    pub path: String,
    pub facts: Vec<Fact>,
}

/// What the change does to one node.
#[derive(Debug, Clone, Serialize)]
pub struct NodeDiff {
    pub name: String,
    pub file: String,
    /// `breaks` (a new error), `downgrade` (the tag is older than what the node runs), `new`
    /// (a new warning or info), `fixed`, `unchanged`, or `unknown` (the node runs cGPU, and no
    /// input says which version: nothing before the change can be compared).
    pub verdict: &'static str,
    pub breaks: Vec<Item>,
    pub new: Vec<Item>,
    pub fixed: Vec<Item>,
    pub unchanged: Vec<Item>,
    /// On an `unknown` node: why, and the findings it would have after the change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<Item>,
    /// The cGPU version the node runs now and the older one the tag deploys.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub downgrade: Option<Move>,
}

/// A change of cGPU version on a node.
#[derive(Debug, Clone, Serialize)]
pub struct Move {
    pub from: String,
    pub to: String,
}

/// A downgrade of cGPU: the versions, what the older one lacks that the newer one has (each
/// with its data entry), and whether `--allow-downgrade` was given.
#[derive(Debug, Clone, Serialize)]
pub struct Downgrade {
    pub from: String,
    pub to: String,
    pub loses: Vec<Loss>,
    pub allowed: bool,
}

/// One thing a downgrade loses.
#[derive(Debug, Clone, Serialize)]
pub struct Loss {
    /// `issue` (a known issue of the older version), `support` (cgroup v2, a driver, an OS or
    /// an instance family the older version predates), `drivers` (the driver row), `families`.
    pub kind: &'static str,
    pub entry: String,
    pub text: String,
}

/// The answer.
#[derive(Debug, Clone, Serialize)]
pub struct WhatIf {
    pub change: Change,
    /// The cGPU version the inputs deploy now (the installers', else the values').
    pub cgpu_now: Option<String>,
    pub nodes: Vec<NodeDiff>,
    /// The order the data asks for, and what to do first.
    pub advice: Vec<String>,
    /// What the answer cannot know (the current version is not among the inputs...).
    pub notes: Vec<String>,
    /// The tag is older than the version the inputs deploy now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub downgrade: Option<Downgrade>,
}

impl WhatIf {
    pub fn breaks(&self) -> usize {
        self.nodes.iter().filter(|n| !n.breaks.is_empty()).count()
    }

    /// The nodes the tag takes to an older cGPU.
    pub fn downgraded(&self) -> usize {
        self.nodes.iter().filter(|n| n.downgrade.is_some()).count()
    }

    /// The nodes that run cGPU at a version no input gives.
    pub fn unknown(&self) -> usize {
        self.nodes.iter().filter(|n| n.unknown.is_some()).count()
    }

    /// A downgrade not allowed by `--allow-downgrade`.
    pub fn refused_downgrade(&self) -> bool {
        self.downgrade.as_ref().is_some_and(|d| !d.allowed) && self.downgraded() > 0
    }
}

/// A node of the inputs: its input, document and pointer, for placing findings.
struct Place {
    file: String,
    document: usize,
    pointer: String,
    name: String,
    /// The node runs cGPU (an installer among the inputs selects it, else it carries a
    /// GPU-sharing label; never a virtual node): a new tag changes what it runs.
    runs_cgpu: bool,
}

fn places(srcs: &[Arc<Source>]) -> Vec<Place> {
    let parsed: Vec<_> = srcs
        .iter()
        .filter(|s| s.invalid.is_none())
        .map(|s| (s, yaml::parse(s)))
        .collect();
    // Where an installer is among the inputs, cGPU runs on the nodes it selects; else on the
    // nodes labelled for GPU sharing, as the node rules read them.
    let mut selectors: Option<Vec<Vec<(String, String)>>> = None;
    for (_, p) in &parsed {
        for root in p.documents.iter().filter_map(|d| d.root.as_ref()) {
            for inst in Objects::of(root).iter().filter_map(|o| o.installer()) {
                selectors
                    .get_or_insert_with(Vec::new)
                    .push(inst.node_selector_pairs());
            }
        }
    }
    let mut out = Vec::new();
    for (src, parsed) in &parsed {
        for doc in &parsed.documents {
            let Some(root) = &doc.root else { continue };
            let objects = Objects::of(root);
            for n in nodes_of(&objects) {
                let selected = match &selectors {
                    Some(list) => list.iter().any(|s| n.matches(s)),
                    None => crate::rules::nodes::isolating(&n),
                };
                out.push(Place {
                    file: src.name.clone(),
                    document: doc.index,
                    pointer: n.obj.pointer.to_string(),
                    name: n.name().to_string(),
                    runs_cgpu: selected && !n.is_virtual(),
                });
            }
        }
    }
    out
}

/// The node a finding is on: the node of its input and document whose pointer is the longest
/// prefix of the finding's.
fn place_of<'p>(places: &'p [Place], d: &Diagnostic) -> Option<&'p Place> {
    places
        .iter()
        .filter(|p| p.file == d.file() && p.document == d.document)
        .filter(|p| {
            d.path == p.pointer
                || (d.path.starts_with(&p.pointer) && d.path[p.pointer.len()..].starts_with('/'))
        })
        .max_by_key(|p| p.pointer.len())
}

/// The data entries a message names (`entry ID`), with their sources; else the rule's own
/// sources.
fn facts_of(d: &Diagnostic) -> Vec<Fact> {
    let data = compat::data();
    let entries: Vec<compat::Entry> = data.entries();
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for word in d.message.split("entry ").skip(1) {
        let id: String = word
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.')
            .collect();
        let id = id.trim_end_matches('.').to_string();
        if !seen.insert(id.clone()) {
            continue;
        }
        if let Some(e) = entries.iter().find(|e| e.id == id)
            && let Some(s) = data.source(e.source)
        {
            out.push(Fact {
                entry: Some(id),
                source: s.title.clone(),
                url: s.url.clone(),
                read: Some(s.read.clone()),
            });
        }
    }
    if out.is_empty() {
        out.extend(d.rule.info().sources().iter().map(|s| Fact {
            entry: None,
            source: s.title.to_string(),
            url: s.url.map(str::to_string),
            read: None,
        }));
    }
    out
}

/// The node rules' findings, by node (name, file) and key (rule, pointer, severity).
type Keyed = Vec<((String, String), (RuleId, String, Severity), Diagnostic)>;

fn node_findings(srcs: &[Arc<Source>], settings: &lint::Settings) -> Keyed {
    let places = places(srcs);
    lint::lint_cluster_each(srcs, settings)
        .into_iter()
        .filter(|d| d.rule.info().group == Group::Nodes)
        .filter_map(|d| {
            let p = place_of(&places, &d)?;
            Some((
                (p.name.clone(), p.file.clone()),
                (d.rule, d.path.clone(), d.severity),
                d,
            ))
        })
        .collect()
}

/// A string as a YAML (and JSON) double-quoted scalar.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// The inputs after the change: each node's fields, the installers' tag and the values' tag
/// rewritten in place (the rest of every byte kept), and the planned tag as a values input of
/// its own when no input says which version runs.
fn rewrite(srcs: &[Arc<Source>], change: &Change) -> Result<Vec<Arc<Source>>, WhatIfError> {
    let mut out = Vec::with_capacity(srcs.len() + 1);
    let mut any_version = false;
    let kubelet = change.kubelet();
    let tag = change.tag_text();
    for src in srcs {
        if src.invalid.is_some() {
            out.push(src.clone());
            continue;
        }
        let parsed = yaml::parse(src);
        let mut edits: Vec<Edit> = Vec::new();
        let mut set = |n: &Node, value: &str| {
            // A node reached through an alias edits its anchor: leave such nodes be.
            if n.via_alias.is_none() && Arc::ptr_eq(&n.src, src) {
                edits.push(Edit {
                    src: src.clone(),
                    range: n.span.clone(),
                    replacement: quoted(value),
                });
            }
        };
        for doc in &parsed.documents {
            let Some(root) = &doc.root else { continue };
            if let Some(t) = root.pointer("/cgpu/tag") {
                any_version = true;
                if let Some(tag) = tag {
                    set(t, tag);
                }
            }
            let objects = Objects::of(root);
            for inst in objects.iter().filter_map(|o| o.installer()) {
                any_version = true;
                if let (Some(tag), Some((n, _))) = (tag, inst.image())
                    && let Some(image) = n.as_str()
                {
                    let r = cgpu::split_image(image);
                    let base = match r.host {
                        Some(h) => format!("{h}/{}", r.path),
                        None => r.path.to_string(),
                    };
                    set(n, &format!("{base}:{tag}"));
                }
            }
            for node in nodes_of(&objects) {
                // An upgrade leaves a node that already runs that release or a newer one alone.
                if let (Some(k), Some((n, now, _))) = (&kubelet, node.kubelet_version())
                    && compat::kubernetes_release(&now) < compat::kubernetes_release(k)
                {
                    set(n, k);
                }
                if let (Some(os), Some((n, _))) = (&change.os_image, node.os_image()) {
                    set(n, os);
                }
                if let Some(d) = &change.driver
                    && node.driver().is_some()
                {
                    for key in [DRIVER_LABEL, GFD_DRIVER_FULL_LABEL] {
                        if let Some(n) = node.label_node(key) {
                            set(n, d);
                        }
                    }
                    let parts: Vec<&str> = d.trim().split('.').collect();
                    for (i, key) in GFD_DRIVER_PART_LABELS.iter().enumerate() {
                        if let Some(n) = node.label_node(key) {
                            set(n, parts.get(i).copied().unwrap_or(""));
                        }
                    }
                }
            }
        }
        if edits.is_empty() {
            out.push(src.clone());
            continue;
        }
        let refs: Vec<&Edit> = edits.iter().collect();
        let text = crate::edit::apply(&src.text, &refs).map_err(|e| WhatIfError::Rewrite {
            file: src.name.clone(),
            why: e.to_string(),
        })?;
        out.push(Source::new(src.name.clone(), text));
    }
    if let (Some(tag), false) = (tag, any_version) {
        out.push(Source::new(
            "--tag",
            format!("cgpu:\n  enabled: true\n  tag: {}\n", quoted(tag)),
        ));
    }
    Ok(out)
}

/// The cGPU version the inputs deploy now: the first installer's image tag, else the values'.
fn version_now(srcs: &[Arc<Source>]) -> Option<semver::Version> {
    let mut values = None;
    for src in srcs.iter().filter(|s| s.invalid.is_none()) {
        let parsed = yaml::parse(src);
        for root in parsed.documents.iter().filter_map(|d| d.root.as_ref()) {
            if values.is_none() {
                values = root
                    .pointer("/cgpu/tag")
                    .and_then(Node::as_str)
                    .and_then(|t| cgpu::parse_tag(t).ok())
                    .map(|t| t.core);
            }
            for inst in Objects::of(root).iter().filter_map(|o| o.installer()) {
                if let Some(v) = inst
                    .image()
                    .and_then(|(n, _)| n.as_str())
                    .and_then(|s| cgpu::split_image(s).tag)
                    .and_then(|t| cgpu::parse_tag(t).ok())
                {
                    return Some(v.core);
                }
            }
        }
    }
    values
}

fn item(d: &Diagnostic) -> Item {
    Item {
        rule: d.rule.name(),
        severity: d.severity,
        message: d.message.clone(),
        path: d.path.clone(),
        facts: facts_of(d),
    }
}

/// Why a node that runs cGPU at an unknown version cannot be judged.
const UNKNOWN: &str = "unknown: give the installer or values (no input says which cGPU version runs on it now, so nothing can be compared)";

/// The node rules over `srcs` now and after `change`, compared per node; a tag older than the
/// version a node runs is a downgrade there (`allow_downgrade`: `--allow-downgrade` was given).
pub fn what_if(
    srcs: &[Arc<Source>],
    change: &Change,
    settings: &lint::Settings,
    allow_downgrade: bool,
) -> Result<WhatIf, WhatIfError> {
    change.validate()?;
    let all = places(srcs);
    if all.is_empty() {
        return Err(WhatIfError::NoNodes);
    }
    let now = version_now(srcs);
    let planned = change
        .tag_text()
        .and_then(|t| cgpu::parse_tag(t).ok())
        .map(|t| t.core);
    let down = match (&now, &planned) {
        (Some(n), Some(p)) if p < n => Some(Move {
            from: n.to_string(),
            to: p.to_string(),
        }),
        _ => None,
    };
    let before = node_findings(srcs, settings);
    let after = node_findings(&rewrite(srcs, change)?, settings);
    let mut nodes = Vec::new();
    let mut seen = BTreeSet::new();
    for p in &all {
        let who = (p.name.clone(), p.file.clone());
        if !seen.insert(who.clone()) {
            continue;
        }
        let of = |k: &Keyed| -> Vec<((RuleId, String, Severity), Diagnostic)> {
            k.iter()
                .filter(|(n, _, _)| *n == who)
                .map(|(_, key, d)| (key.clone(), d.clone()))
                .collect()
        };
        let (b, a) = (of(&before), of(&after));
        let has =
            |list: &[((RuleId, String, Severity), Diagnostic)],
             key: &(RuleId, String, Severity)| { list.iter().any(|(k, _)| k == key) };
        let mut diff = NodeDiff {
            name: p.name.clone(),
            file: p.file.clone(),
            verdict: "unchanged",
            breaks: Vec::new(),
            new: Vec::new(),
            fixed: Vec::new(),
            unchanged: Vec::new(),
            unknown: None,
            after: Vec::new(),
            downgrade: None,
        };
        if p.runs_cgpu && now.is_none() {
            // The version-dependent rules found nothing before the change for lack of the
            // version, so "unchanged" or "breaks" would be a guess.
            diff.verdict = "unknown";
            diff.unknown = Some(UNKNOWN.to_string());
            diff.after = a.iter().map(|(_, d)| item(d)).collect();
            nodes.push(diff);
            continue;
        }
        for (key, d) in &a {
            if has(&b, key) {
                diff.unchanged.push(item(d));
            } else if d.severity == Severity::Error {
                diff.breaks.push(item(d));
            } else {
                diff.new.push(item(d));
            }
        }
        for (key, d) in &b {
            if !has(&a, key) {
                diff.fixed.push(item(d));
            }
        }
        if p.runs_cgpu {
            diff.downgrade = down.clone();
        }
        diff.verdict = if !diff.breaks.is_empty() {
            "breaks"
        } else if diff.downgrade.is_some() {
            "downgrade"
        } else if !diff.new.is_empty() {
            "new"
        } else if !diff.fixed.is_empty() {
            "fixed"
        } else {
            "unchanged"
        };
        nodes.push(diff);
    }
    let mut notes = Vec::new();
    if now.is_none() {
        notes.push(
            "no input says which cGPU version runs now (give the values or `kubectl get ds -n kube-system cgpu-installer -o yaml`): the rules that need it found nothing before the change".to_string(),
        );
    }
    let downgrade = down.map(|m| {
        let loses = match (&now, &planned) {
            (Some(from), Some(to)) => losses(from, to),
            _ => Vec::new(),
        };
        Downgrade {
            from: m.from,
            to: m.to,
            loses,
            allowed: allow_downgrade,
        }
    });
    let advice = advice(srcs, change, settings, &nodes, now.as_ref())?;
    Ok(WhatIf {
        change: change.clone(),
        cgpu_now: now.map(|v| v.to_string()),
        nodes,
        advice,
        notes,
        downgrade,
    })
}

/// What cGPU `to` lacks that `from` (newer) has, from the compatibility data: the known issues
/// of `to` that `from` does not have, the support added after `to` up to `from` (cgroup v2,
/// drivers, operating systems, instance families), the driver row and the instance families.
fn losses(from: &semver::Version, to: &semver::Version) -> Vec<Loss> {
    let data = compat::data();
    let mut out = Vec::new();
    for i in data.issues_at(to).filter(|i| !i.covers(from)) {
        out.push(Loss {
            kind: "issue",
            entry: i.id.clone(),
            text: format!(
                "known issue ({}): {}{}",
                i.range_text(),
                i.text,
                i.when_text()
            ),
        });
    }
    for s in data
        .support
        .iter()
        .filter(|s| *to < s.since.0 && s.since.0 <= *from)
    {
        out.push(Loss {
            kind: "support",
            entry: s.id.clone(),
            text: format!("{} (since {})", s.text, s.since),
        });
    }
    if let (Some(a), Some(b)) = (data.driver_row(from), data.driver_row(to))
        && a.id != b.id
    {
        out.push(Loss {
            kind: "drivers",
            entry: b.id.clone(),
            text: format!(
                "NVIDIA drivers: {} (cGPU {from}: {})",
                compat::Compat::driver_text(b),
                compat::Compat::driver_text(a)
            ),
        });
    }
    if let Some(f) = data.families_at(from) {
        let kept = data.families_at(to);
        let lost: Vec<&str> = f
            .families
            .iter()
            .filter(|n| kept.is_none_or(|k| !k.families.contains(n)))
            .map(String::as_str)
            .collect();
        if !lost.is_empty() {
            let why = if kept.is_none() {
                format!(" (the data lists no instance families for cGPU {to})")
            } else {
                String::new()
            };
            out.push(Loss {
                kind: "families",
                entry: f.id.clone(),
                text: format!(
                    "instance families listed for cGPU {}–{}: {}{why}",
                    f.from,
                    f.to,
                    lost.join(", ")
                ),
            });
        }
    }
    out
}

/// The order the data asks for: each change alone, where it breaks what the whole plan does
/// not; and for what still breaks, the cGPU version the data names (kubelet entries' `needs`).
fn advice(
    srcs: &[Arc<Source>],
    change: &Change,
    settings: &lint::Settings,
    nodes: &[NodeDiff],
    now: Option<&semver::Version>,
) -> Result<Vec<String>, WhatIfError> {
    let mut out = Vec::new();
    let flags = change.flags();
    let broken_by_plan: BTreeSet<(String, String)> = nodes
        .iter()
        .flat_map(|n| {
            n.breaks
                .iter()
                .map(|b| (n.name.clone(), b.rule.to_string()))
        })
        .collect();
    if flags.len() > 1 {
        let before = node_findings(srcs, settings);
        let had: BTreeSet<_> = before
            .iter()
            .map(|(n, k, _)| (n.clone(), k.clone()))
            .collect();
        for (flag, value) in &flags {
            let alone = node_findings(&rewrite(srcs, &change.only(flag))?, settings);
            let mut hit: BTreeSet<String> = BTreeSet::new();
            let mut rules: BTreeSet<&'static str> = BTreeSet::new();
            for (n, k, d) in &alone {
                if d.severity == Severity::Error
                    && !had.contains(&(n.clone(), k.clone()))
                    && !broken_by_plan.contains(&(n.0.clone(), d.rule.name().to_string()))
                {
                    hit.insert(n.0.clone());
                    rules.insert(d.rule.name());
                }
            }
            if hit.is_empty() {
                continue;
            }
            let others: Vec<String> = flags
                .iter()
                .filter(|(f, _)| f != flag)
                .map(|(f, v)| format!("--{f} {v}"))
                .collect();
            out.push(format!(
                "--{flag} {value} alone breaks {} node{} ({}), which {} fixes: apply {} before --{flag}",
                hit.len(),
                if hit.len() == 1 { "" } else { "s" },
                rules.into_iter().collect::<Vec<_>>().join(", "),
                others.join(" with "),
                others.join(" and "),
            ));
        }
    }
    // What still breaks under Kubernetes K: the support its kubelet entry needs.
    if let Some(k) = change.kubelet() {
        let data = compat::data();
        for entry in data.kubelet.iter().filter(|e| e.covers(&k) == Some(true)) {
            let Some(s) = entry.needs.as_deref().and_then(|id| data.support_entry(id)) else {
                continue;
            };
            let planned = change
                .tag_text()
                .and_then(|t| cgpu::parse_tag(t).ok())
                .map(|t| t.core);
            let runs = planned.as_ref().or(now);
            let broken = nodes.iter().any(|n| {
                n.breaks
                    .iter()
                    .any(|b| b.message.contains(&format!("entry {}", entry.id)))
            });
            if broken || runs.is_some_and(|v| *v < s.since.0) {
                out.push(format!(
                    "upgrade cGPU to ≥ {} before Kubernetes {} (entry {} needs {}, source {})",
                    s.since, entry.from, entry.id, s.id, entry.source
                ));
            }
        }
    }
    Ok(out)
}
