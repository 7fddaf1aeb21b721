//! `--format policyreport`: the findings as Kubernetes policy reports, what Kyverno, Kubewarden
//! and the Trivy adapter write and Policy Reporter shows: `wgpolicyk8s.io/v1alpha2`
//! `PolicyReport`s, one per namespace of the objects checked (the installers: kube-system), and
//! one `ClusterPolicyReport` for cluster-scoped objects (nodes) and for findings in files that
//! are no Kubernetes object (values files). With `--openreports`, the same as
//! `openreports.io/v1alpha1` `Report`s and a `ClusterReport`.
//!
//! Each finding is one result: `policy` and `rule` the rule, `category` its group, `result`
//! `fail` for an error (scored), `warn` for a warning, `pass` for an info (the rule passed, with
//! a remark), `error` for a file that could not be read; `severity` high, medium or info;
//! `source: cgpu-lint`; the object as `resources` (a `check --cluster` object from its name
//! `CONTEXT:Kind/namespace/name`, an object in a file from its `apiVersion`, `kind` and
//! `metadata`); where it is as `properties` (file, line, JSON pointer, context) with the help.
//! As Kyverno does, every object checked also gets a `pass` result for each enabled rule that
//! applies to it and did not fire ([`Checked`]: the installer rules for an installer DaemonSet,
//! the node rules for a Node, the values rules for a values document), so a clean cluster still
//! has its reports and the summary's pass count is the checks that came out clean.
//! The reports are printed as one `v1` `List`, which `kubectl apply -f` takes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::catalogue::{Group, RuleId, Severity};
use crate::diag::Diagnostic;
use crate::output::ci_path;
use crate::yaml::{Node, Source};

/// The Kubernetes object a finding is about.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Object {
    api_version: String,
    kind: String,
    namespace: Option<String>,
    name: Option<String>,
    /// The kubeconfig context of a `check --cluster` object.
    context: Option<String>,
}

impl Object {
    fn reference(&self) -> Value {
        let mut r = Map::new();
        r.insert("apiVersion".into(), json!(self.api_version));
        r.insert("kind".into(), json!(self.kind));
        if let Some(ns) = &self.namespace {
            r.insert("namespace".into(), json!(ns));
        }
        if let Some(n) = &self.name {
            r.insert("name".into(), json!(n));
        }
        Value::Object(r)
    }
}

fn api_version_of(kind: &str) -> &'static str {
    match kind {
        "DaemonSet" => "apps/v1",
        _ => "v1",
    }
}

/// A `check --cluster` source name: `CONTEXT:DaemonSet/kube-system/cgpu-installer`,
/// `CONTEXT:Node/NAME`, `CONTEXT:DaemonSet/kube-system` (no installer), `CONTEXT:Pod/NS/NAME`
/// (`--pods`).
fn cluster_object(name: &str) -> Option<Object> {
    let (context, rest) = name.split_once(':')?;
    let (kind, rest) = rest.split_once('/')?;
    let (namespace, name) = match kind {
        "DaemonSet" | "Pod" => match rest.split_once('/') {
            Some((ns, n)) => (Some(ns), Some(n)),
            None => (Some(rest), None),
        },
        "Node" => (None, Some(rest)),
        _ => return None,
    };
    Some(Object {
        api_version: api_version_of(kind).into(),
        kind: kind.into(),
        namespace: namespace.map(String::from),
        name: name.map(String::from),
        context: Some(context.into()),
    })
}

fn string_at<'a>(node: &'a Node, path: &[&str]) -> Option<&'a str> {
    let mut n = node;
    for k in path {
        n = n.get(k)?;
    }
    n.as_str()
}

/// The object of document `doc` of `src` that pointer `pointer` is in (an item of a `List` for
/// `/items/N/…`), when the document is a Kubernetes object.
fn file_object(parsed: &crate::yaml::Parsed, doc: usize, pointer: &str) -> Option<Object> {
    let root = parsed.documents.get(doc.checked_sub(1)?)?.root.as_ref()?;
    let mut node = root;
    if string_at(root, &["kind"]) == Some("List") {
        let index: usize = pointer
            .strip_prefix("/items/")?
            .split('/')
            .next()?
            .parse()
            .ok()?;
        node = root.get("items")?.as_seq()?.get(index)?;
    }
    let kind = string_at(node, &["kind"])?;
    Some(Object {
        api_version: string_at(node, &["apiVersion"])
            .unwrap_or(api_version_of(kind))
            .to_string(),
        kind: kind.to_string(),
        namespace: string_at(node, &["metadata", "namespace"]).map(String::from),
        name: string_at(node, &["metadata", "name"]).map(String::from),
        context: None,
    })
}

fn result_of(d: &Diagnostic) -> &'static str {
    if d.rule == RuleId::IoError {
        return "error";
    }
    match d.severity {
        Severity::Error => "fail",
        Severity::Warning => "warn",
        Severity::Info => "pass",
    }
}

/// The CRD a report is written for: what its `apiVersion` is and which severities it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crd {
    /// wgpolicyk8s.io/v1alpha2 as kubernetes-sigs/wg-policy-prototypes publishes it now
    /// (`policy-report/crd/v1alpha2/`, last changed 2023-02-08): severity critical, high,
    /// medium, low or info.
    WgPolicy,
    /// wgpolicyk8s.io/v1alpha2 as earlier CRDs define it: severity high, medium or low only (an
    /// info finding is written `low`), for clusters whose CRD predates `info`.
    WgPolicyOriginal,
    /// openreports.io/v1alpha1 (openreports/reports-api).
    OpenReports,
}

impl Crd {
    /// What the reports' `cgpu-lint/crd` annotation says.
    pub fn note(self) -> &'static str {
        match self {
            Crd::WgPolicy => {
                "wgpolicyk8s.io/v1alpha2 as wg-policy-prototypes publishes it, last changed 2023-02-08 (severity critical, high, medium, low, info)"
            }
            Crd::WgPolicyOriginal => {
                "wgpolicyk8s.io/v1alpha2 as earlier CRDs define it (severity high, medium, low; info findings written low)"
            }
            Crd::OpenReports => "openreports.io/v1alpha1 (openreports/reports-api)",
        }
    }
}

fn severity_of(s: Severity, crd: Crd) -> &'static str {
    match s {
        Severity::Error => "high",
        Severity::Warning => "medium",
        Severity::Info if crd == Crd::WgPolicyOriginal => "low",
        Severity::Info => "info",
    }
}

/// Which report a result goes to: a namespace's, or the cluster's (`None`).
type Scope = Option<String>;

/// What a run checked, for the `pass` results: the inputs read (files, or a cluster's objects
/// named `CONTEXT:Kind/namespace/name`) and the rules the run had enabled.
#[derive(Debug, Default)]
pub struct Checked {
    pub sources: Vec<std::sync::Arc<Source>>,
    pub rules: Vec<RuleId>,
}

/// Which result an object or values document is: its input's name, the document, the `List`
/// item (`/items/N`).
type Place = (String, usize, Option<usize>);

fn list_item(pointer: &str) -> Option<usize> {
    pointer
        .strip_prefix("/items/")?
        .split('/')
        .next()?
        .parse()
        .ok()
}

/// The rule group that applies to a checked object: the installers' rules to a cgpu-installer
/// or cgpu-core-installer DaemonSet, the node rules to a Node.
fn group_of(o: &Object) -> Option<Group> {
    match o.kind.as_str() {
        "DaemonSet"
            if o.name
                .as_deref()
                .is_some_and(|n| crate::cgpu::INSTALLER_NAMES.contains(&n)) =>
        {
            Some(Group::Installer)
        }
        "Node" => Some(Group::Nodes),
        _ => None,
    }
}

/// Every object (or values document) `checked` holds, with where it is and the rules that
/// apply to it: cluster objects by their name; in a file, each installer DaemonSet or Node
/// (items of a `List` too), and each document that is no Kubernetes object (values).
fn checked_places(checked: &Checked) -> Vec<(Place, Option<Object>, Group)> {
    let mut out = Vec::new();
    for src in &checked.sources {
        if let Some(o) = cluster_object(&src.name) {
            if let Some(g) = group_of(&o) {
                out.push(((src.name.clone(), 1, None), Some(o), g));
            }
            continue;
        }
        let parsed = crate::yaml::parse(src);
        for (i, doc) in parsed.documents.iter().enumerate() {
            let Some(root) = doc.root.as_ref() else {
                continue;
            };
            let place = |item| (src.name.clone(), i + 1, item);
            if string_at(root, &["kind"]) == Some("List") {
                let items = root.get("items").and_then(|n| n.as_seq());
                for (j, _) in items.into_iter().flatten().enumerate() {
                    let pointer = format!("/items/{j}");
                    if let Some(o) = file_object(&parsed, i + 1, &pointer)
                        && let Some(g) = group_of(&o)
                    {
                        out.push((place(Some(j)), Some(o), g));
                    }
                }
            } else if string_at(root, &["kind"]).is_some() {
                if let Some(o) = file_object(&parsed, i + 1, "")
                    && let Some(g) = group_of(&o)
                {
                    out.push((place(None), Some(o), g));
                }
            } else if root.as_map().is_some() {
                out.push((place(None), None, Group::Values));
            }
        }
    }
    out
}

/// The reports as a `v1` `List` for `crd` (named in each report's `cgpu-lint/crd` annotation);
/// `now` is the results' timestamp (seconds since the epoch).
pub fn render(
    diags: &[Diagnostic],
    checked: &Checked,
    cwd: Option<&Path>,
    crd: Crd,
    now: u64,
) -> String {
    let openreports = crd == Crd::OpenReports;
    let mut parsed: HashMap<*const Source, crate::yaml::Parsed> = HashMap::new();
    let mut reports: BTreeMap<Scope, Vec<Value>> = BTreeMap::new();
    // The rules that gave a result, per object: those get no `pass` result.
    let mut fired: HashSet<(Place, RuleId)> = HashSet::new();
    for d in diags {
        fired.insert((
            (d.file().to_string(), d.document, list_item(&d.path)),
            d.rule,
        ));
        let object = cluster_object(d.file()).or_else(|| {
            if d.src.text.is_empty() {
                return None;
            }
            let p = parsed
                .entry(std::sync::Arc::as_ptr(&d.src))
                .or_insert_with(|| crate::yaml::parse(&d.src));
            file_object(p, d.document, &d.path)
        });
        let start = d.start();
        let mut properties = Map::new();
        if object.as_ref().is_none_or(|o| o.context.is_none()) {
            properties.insert("file".into(), json!(ci_path(d.file(), cwd)));
            properties.insert("line".into(), json!(start.line.to_string()));
            properties.insert("column".into(), json!(start.column.to_string()));
        }
        if let Some(c) = object.as_ref().and_then(|o| o.context.as_ref()) {
            properties.insert("context".into(), json!(c));
        }
        properties.insert("document".into(), json!(d.document.to_string()));
        properties.insert(
            "pointer".into(),
            json!(if d.path.is_empty() { "/" } else { &d.path }),
        );
        properties.insert("help".into(), json!(d.help));
        let mut result = json!({
            "source": "cgpu-lint",
            "policy": d.rule.name(),
            "rule": d.rule.name(),
            "category": d.rule.info().group.title(),
            "message": d.message,
            "result": result_of(d),
            "severity": severity_of(d.severity, crd),
            "scored": d.severity == Severity::Error,
            "timestamp": {"seconds": now, "nanos": 0},
            "properties": properties,
        });
        // An object without a name (`CONTEXT:DaemonSet/kube-system`: no installer there) is
        // the namespace's report itself.
        if let Some(o) = object.as_ref().filter(|o| o.name.is_some()) {
            result["resources"] = json!([o.reference()]);
        }
        let scope = object.and_then(|o| o.namespace);
        reports.entry(scope).or_default().push(result);
    }
    // Kyverno's convention: one result per rule per resource checked, `pass` when the rule
    // found nothing, so the summary's pass count is the checks that came out clean.
    for (place, object, group) in checked_places(checked) {
        for &rule in checked.rules.iter().filter(|r| r.info().group == group) {
            if fired.contains(&(place.clone(), rule)) {
                continue;
            }
            let info = rule.info();
            let mut properties = Map::new();
            match object.as_ref().and_then(|o| o.context.as_ref()) {
                Some(c) => {
                    properties.insert("context".into(), json!(c));
                }
                None => {
                    properties.insert("file".into(), json!(ci_path(&place.0, cwd)));
                }
            }
            properties.insert("document".into(), json!(place.1.to_string()));
            if let Some(j) = place.2 {
                properties.insert("pointer".into(), json!(format!("/items/{j}")));
            }
            let mut result = json!({
                "source": "cgpu-lint",
                "policy": info.name,
                "rule": info.name,
                "category": group.title(),
                "message": format!("{}: nothing found", info.name),
                "result": "pass",
                "severity": severity_of(info.severity, crd),
                "scored": info.severity == Severity::Error,
                "timestamp": {"seconds": now, "nanos": 0},
                "properties": properties,
            });
            if let Some(o) = &object {
                result["resources"] = json!([o.reference()]);
            }
            let scope = object.as_ref().and_then(|o| o.namespace.clone());
            reports.entry(scope).or_default().push(result);
        }
    }
    let (api_version, namespaced, cluster) = if openreports {
        ("openreports.io/v1alpha1", "Report", "ClusterReport")
    } else {
        (
            "wgpolicyk8s.io/v1alpha2",
            "PolicyReport",
            "ClusterPolicyReport",
        )
    };
    let items: Vec<Value> = reports
        .into_iter()
        .map(|(scope, results)| {
            let mut summary = json!({"pass": 0, "fail": 0, "warn": 0, "error": 0, "skip": 0});
            for r in &results {
                let k = r["result"].as_str().expect("set above");
                summary[k] = json!(summary[k].as_u64().unwrap_or(0) + 1);
            }
            let mut metadata = json!({
                "name": "cgpu-lint",
                "labels": {"app.kubernetes.io/managed-by": "cgpu-lint"},
                "annotations": {"cgpu-lint/crd": crd.note()},
            });
            if let Some(ns) = &scope {
                metadata["namespace"] = json!(ns);
            }
            let mut report = json!({
                "apiVersion": api_version,
                "kind": if scope.is_some() { namespaced } else { cluster },
                "metadata": metadata,
                "summary": summary,
                "results": results,
            });
            if openreports {
                report["source"] = json!("cgpu-lint");
            }
            report
        })
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    let mut s = serde_json::to_string_pretty(&list).expect("serialisable");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_names_are_objects() {
        let o = cluster_object("prod:DaemonSet/kube-system/cgpu-installer").unwrap();
        assert_eq!(o.api_version, "apps/v1");
        assert_eq!(o.namespace.as_deref(), Some("kube-system"));
        assert_eq!(o.name.as_deref(), Some("cgpu-installer"));
        assert_eq!(o.context.as_deref(), Some("prod"));
        let n = cluster_object("prod:Node/cn-hangzhou.10.0.0.1").unwrap();
        assert_eq!(
            (n.kind.as_str(), n.namespace, n.name.as_deref()),
            ("Node", None, Some("cn-hangzhou.10.0.0.1"))
        );
        let p = cluster_object("prod:Pod/inference/infer-21").unwrap();
        assert_eq!(
            (
                p.api_version.as_str(),
                p.namespace.as_deref(),
                p.name.as_deref()
            ),
            ("v1", Some("inference"), Some("infer-21"))
        );
        assert_eq!(p.context.as_deref(), Some("prod"));
        let none = cluster_object("prod:DaemonSet/kube-system").unwrap();
        assert_eq!(none.name, None);
        assert_eq!(cluster_object("values/prod.yaml"), None);
        assert_eq!(cluster_object("C:Windows/x"), None);
    }
}
