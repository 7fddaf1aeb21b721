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
//! The reports are printed as one `v1` `List`, which `kubectl apply -f` takes.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::diag::Diagnostic;
use crate::output::ci_path;
use crate::rules::catalogue::{RuleId, Severity};
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
/// `CONTEXT:Node/NAME`, `CONTEXT:DaemonSet/kube-system` (no installer).
fn cluster_object(name: &str) -> Option<Object> {
    let (context, rest) = name.split_once(':')?;
    let (kind, rest) = rest.split_once('/')?;
    let (namespace, name) = match kind {
        "DaemonSet" => match rest.split_once('/') {
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

fn severity_of(s: Severity) -> &'static str {
    match s {
        Severity::Error => "high",
        Severity::Warning => "medium",
        Severity::Info => "info",
    }
}

/// Which report a result goes to: a namespace's, or the cluster's (`None`).
type Scope = Option<String>;

/// The reports as a `v1` `List`; `openreports` chooses `openreports.io/v1alpha1`; `now` is the
/// results' timestamp (seconds since the epoch).
pub fn render(diags: &[Diagnostic], cwd: Option<&Path>, openreports: bool, now: u64) -> String {
    let mut parsed: HashMap<*const Source, crate::yaml::Parsed> = HashMap::new();
    let mut reports: BTreeMap<Scope, Vec<Value>> = BTreeMap::new();
    for d in diags {
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
            "severity": severity_of(d.severity),
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
        let none = cluster_object("prod:DaemonSet/kube-system").unwrap();
        assert_eq!(none.name, None);
        assert_eq!(cluster_object("values/prod.yaml"), None);
        assert_eq!(cluster_object("C:Windows/x"), None);
    }
}
