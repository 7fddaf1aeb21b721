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
    /// `breaks` (a new error), `new` (a new warning or info), `fixed`, `unchanged`.
    pub verdict: &'static str,
    pub breaks: Vec<Item>,
    pub new: Vec<Item>,
    pub fixed: Vec<Item>,
    pub unchanged: Vec<Item>,
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
}

impl WhatIf {
    pub fn breaks(&self) -> usize {
        self.nodes.iter().filter(|n| !n.breaks.is_empty()).count()
    }
}

/// A node of the inputs: its input, document and pointer, for placing findings.
struct Place {
    file: String,
    document: usize,
    pointer: String,
    name: String,
}

fn places(srcs: &[Arc<Source>]) -> Vec<Place> {
    let mut out = Vec::new();
    for src in srcs.iter().filter(|s| s.invalid.is_none()) {
        let parsed = yaml::parse(src);
        for doc in &parsed.documents {
            let Some(root) = &doc.root else { continue };
            let objects = Objects::of(root);
            for n in nodes_of(&objects) {
                out.push(Place {
                    file: src.name.clone(),
                    document: doc.index,
                    pointer: n.obj.pointer.to_string(),
                    name: n.name().to_string(),
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

/// The node rules over `srcs` now and after `change`, compared per node.
pub fn what_if(
    srcs: &[Arc<Source>],
    change: &Change,
    settings: &lint::Settings,
) -> Result<WhatIf, WhatIfError> {
    change.validate()?;
    let all = places(srcs);
    if all.is_empty() {
        return Err(WhatIfError::NoNodes);
    }
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
        };
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
        diff.verdict = if !diff.breaks.is_empty() {
            "breaks"
        } else if !diff.new.is_empty() {
            "new"
        } else if !diff.fixed.is_empty() {
            "fixed"
        } else {
            "unchanged"
        };
        nodes.push(diff);
    }
    let now = version_now(srcs);
    let mut notes = Vec::new();
    if now.is_none() {
        notes.push(
            "no input says which cGPU version runs now (give the values or `kubectl get ds -n kube-system cgpu-installer -o yaml`): the rules that need it found nothing before the change".to_string(),
        );
    }
    let advice = advice(srcs, change, settings, &nodes, now.as_ref())?;
    Ok(WhatIf {
        change: change.clone(),
        cgpu_now: now.map(|v| v.to_string()),
        nodes,
        advice,
        notes,
    })
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

/// The answers of one or more clusters (`label`: the context, or `None` for files), for people.
pub fn human(answers: &[(Option<String>, WhatIf)]) -> String {
    use crate::output::escape_controls as esc;
    let mut out = String::new();
    for (label, w) in answers {
        let change: Vec<String> = w
            .change
            .flags()
            .iter()
            .map(|(f, v)| format!("--{f} {}", esc(v)))
            .collect();
        let now = match &w.cgpu_now {
            Some(v) => format!("cGPU {v} now"),
            None => "cGPU version now unknown".into(),
        };
        let on = label
            .as_deref()
            .map(|l| format!(" on cluster {}", esc(l)))
            .unwrap_or_default();
        out.push_str(&format!("what-if{on}: {} ({now})\n", change.join(", ")));
        for n in &w.nodes {
            let count = n.unchanged.len();
            let verdict = match n.verdict {
                "unchanged" if count == 0 => "unchanged, no findings".to_string(),
                "unchanged" if count == 1 => "unchanged (1 finding stays)".to_string(),
                "unchanged" => format!("unchanged ({count} findings stay)"),
                "new" => "new warnings".to_string(),
                v => v.to_string(),
            };
            out.push_str(&format!("node {}: {verdict}\n", esc(&n.name)));
            for (what, list) in [("breaks", &n.breaks), ("new", &n.new), ("fixed", &n.fixed)] {
                for i in list {
                    out.push_str(&format!(
                        "  {what}: {} ({}): {}\n",
                        i.rule,
                        i.severity.as_str(),
                        esc(&i.message)
                    ));
                    if what == "fixed" {
                        continue;
                    }
                    for f in &i.facts {
                        let entry = f
                            .entry
                            .as_deref()
                            .map(|e| format!("{e}: "))
                            .unwrap_or_default();
                        let read = f
                            .read
                            .as_deref()
                            .map(|r| format!(" (read {r})"))
                            .unwrap_or_default();
                        let url = f
                            .url
                            .as_deref()
                            .map(|u| format!(" {u}"))
                            .unwrap_or_default();
                        out.push_str(&format!("    fact: {entry}{}{read}{url}\n", f.source));
                    }
                }
            }
            if !n.unchanged.is_empty() && n.verdict != "unchanged" {
                let mut rules: Vec<&str> = n.unchanged.iter().map(|i| i.rule).collect();
                rules.dedup();
                out.push_str(&format!("  unchanged: {}\n", rules.join(", ")));
            }
        }
        for a in &w.advice {
            out.push_str(&format!("advice: {a}\n"));
        }
        for n in &w.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        let count = |v: &str| w.nodes.iter().filter(|n| n.verdict == v).count();
        out.push_str(&format!(
            "{} of {} nodes break, {} get new warnings, {} fixed, {} unchanged\n",
            count("breaks"),
            w.nodes.len(),
            count("new"),
            count("fixed"),
            count("unchanged"),
        ));
    }
    out
}

/// The answers as JSON: `{"version": 1, "clusters": [{"cluster", "change", "cgpu_now",
/// "nodes", "advice", "notes", "summary"}]}`.
pub fn json(answers: &[(Option<String>, WhatIf)]) -> String {
    let clusters: Vec<serde_json::Value> = answers
        .iter()
        .map(|(label, w)| {
            let count = |v: &str| w.nodes.iter().filter(|n| n.verdict == v).count();
            serde_json::json!({
                "cluster": label,
                "change": w.change,
                "cgpu_now": w.cgpu_now,
                "nodes": w.nodes,
                "advice": w.advice,
                "notes": w.notes,
                "summary": {
                    "nodes": w.nodes.len(),
                    "breaks": count("breaks"),
                    "new": count("new"),
                    "fixed": count("fixed"),
                    "unchanged": count("unchanged"),
                },
            })
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&serde_json::json!({
        "version": 1,
        "clusters": clusters,
    }))
    .unwrap_or_default();
    s.push('\n');
    s
}
