use std::sync::Arc;

use super::find::{chart_name, string_values, targets};
use super::target::{Form, Target, Values, ValuesRef, str_at};
use crate::yaml::node::child;
use crate::yaml::{self, Node, Parsed, Source};

/// The targets of a ConfigMap that a HelmRelease of the chart names in `valuesFrom`: each
/// referenced `data` key is a values file (read in place when it is a `|` string).
pub fn config_map_targets(root: &Node, refs: &[(String, ValuesRef)]) -> Vec<Target> {
    let kind = root.get("kind").and_then(Node::as_str).unwrap_or_default();
    if kind != "ConfigMap" && kind != "Secret" {
        return Vec::new();
    }
    let Some(name) = str_at(root, "/metadata/name") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (release, r) in refs {
        if !names(root, r) || r.target_path.is_some() {
            continue;
        }
        let (pointer, values) = match object_data(root, &r.key) {
            Some(Data::Text(n)) => {
                let field = if kind == "Secret" {
                    "/stringData"
                } else {
                    "/data"
                };
                (child(field, &r.key), string_values(n))
            }
            Some(Data::Decoded(n, src)) => {
                (child("/data", &r.key), Values::Decoded(n.clone(), src))
            }
            None => continue,
        };
        let mut t = Target::new(Form::HelmRelease, release.clone(), pointer, values);
        t.via = Some(format!("valuesFrom {kind} `{name}`"));
        t.release = false;
        out.push(t);
    }
    out
}

/// What a GitOps document that holds no release of the chart deploys instead: its form and the
/// charts it names (`Flux HelmRelease `web``, [`ingress-nginx`]); None for any other document.
pub fn other_charts(root: &Node) -> Option<(String, Vec<String>)> {
    let api = root.get("apiVersion").and_then(Node::as_str).unwrap_or("");
    let kind = root.get("kind").and_then(Node::as_str).unwrap_or("");
    let name = str_at(root, "/metadata/name").unwrap_or("");
    let of_sources = |spec: Option<&Node>| -> Vec<String> {
        let Some(spec) = spec else { return Vec::new() };
        let mut v: Vec<&Node> = spec.get("source").into_iter().collect();
        v.extend(
            spec.get("sources")
                .and_then(Node::as_seq)
                .unwrap_or_default(),
        );
        v.iter()
            .filter_map(|s| {
                s.get("chart")
                    .and_then(Node::as_str)
                    .or_else(|| s.get("path").and_then(Node::as_str).map(chart_name))
            })
            .map(str::to_string)
            .collect()
    };
    let (what, charts) = if api.starts_with("helm.toolkit.fluxcd.io/") && kind == "HelmRelease" {
        let chart = str_at(root, "/spec/chart/spec/chart")
            .map(chart_name)
            .or_else(|| str_at(root, "/spec/chartRef/name"));
        (
            format!("Flux HelmRelease `{name}`"),
            chart.map(str::to_string).into_iter().collect(),
        )
    } else if api.starts_with("argoproj.io/") && kind == "Application" {
        (
            format!("Argo CD Application `{name}`"),
            of_sources(root.get("spec")),
        )
    } else if api.starts_with("argoproj.io/") && kind == "ApplicationSet" {
        (
            format!("Argo CD ApplicationSet `{name}`"),
            of_sources(root.pointer("/spec/template/spec")),
        )
    } else if let Some(charts) = root.get("helmCharts").and_then(Node::as_seq) {
        (
            "a kustomization's helmCharts".to_string(),
            charts
                .iter()
                .filter_map(|c| c.get("name").and_then(Node::as_str).map(str::to_string))
                .collect(),
        )
    } else if api.is_empty()
        && let Some(releases) = root.get("releases").and_then(Node::as_seq)
        && releases
            .iter()
            .any(|r| r.get("chart").and_then(Node::as_str).is_some())
    {
        (
            "a helmfile".to_string(),
            releases
                .iter()
                .filter_map(|r| r.get("chart").and_then(Node::as_str).map(str::to_string))
                .collect(),
        )
    } else {
        return None;
    };
    Some((what, charts))
}

/// The ConfigMaps, Secrets and HelmReleases of every input of a run (`check` or `values` on
/// several files): Flux takes `valuesFrom` objects from the cluster, where a repository applies
/// them from any file, so a HelmRelease reads them from another input too.
#[derive(Debug, Default)]
pub struct Others {
    pub roots: Vec<Node>,
}

impl Others {
    /// The objects of these inputs (a file is parsed only when its text names one of the
    /// kinds, and none when no input names `valuesFrom`).
    pub fn of(srcs: &[Arc<Source>]) -> Others {
        let mut roots = Vec::new();
        // Without a `valuesFrom` anywhere there is nothing to look up: no file is parsed.
        if !srcs.iter().any(|s| s.text.contains("valuesFrom")) {
            return Others { roots };
        }
        for src in srcs {
            if src.invalid.is_some()
                || !["ConfigMap", "Secret", "HelmRelease"]
                    .iter()
                    .any(|k| src.text.contains(k))
            {
                continue;
            }
            for d in yaml::parse(src).documents {
                if let Some(root) = d.root
                    && matches!(
                        root.get("kind").and_then(Node::as_str),
                        Some("ConfigMap" | "Secret" | "HelmRelease")
                    )
                {
                    roots.push(root);
                }
            }
        }
        Others { roots }
    }

    /// The `valuesFrom` entries of the chart's HelmReleases among them, with the release's name.
    pub fn values_from(&self) -> Vec<(String, ValuesRef)> {
        self.roots
            .iter()
            .filter(|r| r.get("kind").and_then(Node::as_str) == Some("HelmRelease"))
            .flat_map(|r| targets(r, None))
            .flat_map(|t| {
                let name = t.name.clone();
                t.values_from.into_iter().map(move |r| (name.clone(), r))
            })
            .collect()
    }

    fn find(&self, r: &ValuesRef) -> Option<&Node> {
        self.roots.iter().find(|root| names(root, r))
    }

    /// Is the object an entry names among them?
    pub fn has(&self, r: &ValuesRef) -> bool {
        self.find(r).is_some()
    }
}

/// Is `root` the object the entry names (kind, name, and the release's namespace when both
/// say one)?
pub fn names(root: &Node, r: &ValuesRef) -> bool {
    root.get("kind").and_then(Node::as_str) == Some(r.kind.as_str())
        && str_at(root, "/metadata/name") == Some(r.name.as_str())
        && match (&r.namespace, str_at(root, "/metadata/namespace")) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
}

/// What a `valuesFrom` entry reads: a ConfigMap's `data` (or a Secret's `stringData`) string, or
/// a Secret's base64 `data`, decoded.
pub enum Data<'a> {
    Text(&'a Node),
    Decoded(&'a Node, Arc<Source>),
}

impl Data<'_> {
    pub(super) fn text(&self) -> String {
        match self {
            Data::Text(n) => n.as_str().unwrap_or_default().to_string(),
            Data::Decoded(_, src) => src.text.clone(),
        }
    }
}

/// The value of `key` in an object's data: a ConfigMap's `data`, a Secret's `stringData`, else
/// its `data` decoded from base64 (None when it is not base64 of UTF-8).
pub fn object_data<'a>(root: &'a Node, key: &str) -> Option<Data<'a>> {
    match root.get("kind").and_then(Node::as_str)? {
        "ConfigMap" => root.get("data")?.get(key).map(Data::Text),
        "Secret" => {
            if let Some(n) = root.get("stringData").and_then(|d| d.get(key)) {
                return Some(Data::Text(n));
            }
            let n = root.get("data")?.get(key)?;
            let text: String = n.as_str()?.split_whitespace().collect();
            let bytes = crate::yaml::resolve::decode_base64(&text)?;
            let text = String::from_utf8(bytes).ok()?;
            Some(Data::Decoded(n, Source::new(n.src.name.clone(), text)))
        }
        _ => None,
    }
}

/// What a `valuesFrom` entry reads: from the same file, else from the run's other inputs.
pub(super) fn values_data<'a>(
    parsed: &'a Parsed,
    others: Option<&'a Others>,
    r: &ValuesRef,
) -> Option<Data<'a>> {
    let here = parsed
        .documents
        .iter()
        .filter_map(|d| d.root.as_ref())
        .find(|root| names(root, r));
    let root = here.or_else(|| others?.find(r))?;
    object_data(root, &r.key)
}
