//! Where the chart's values live when they are not a values file of their own (spec §10): an
//! umbrella chart's values (the subchart's key), a Flux `HelmRelease` of the chart
//! (`spec.values`), an Argo CD `Application` of it (`helm.valuesObject`, or the `helm.values`
//! string read in place). [`targets`] finds them in a document, with the nodes the rules check;
//! [`releases`] computes what each release of the chart receives, the way Helm (and Flux or
//! Argo CD before it) layers them:
//!
//! - umbrella (Helm's `pkg/chartutil/coalesce.go`, checked with real Helm 3.18 and 4.2): the
//!   parent's values (its `-f` files over its values.yaml), then for each dependency of the
//!   chart the key `alias` (or `name`): it must be a mapping ("type mismatch on KEY"), it gets the
//!   parent's `global` over its own (`coalesceGlobals`), then the chart's defaults; a
//!   `condition` that resolves to a boolean, else the `tags`, may disable it;
//! - HelmRelease (helm-controller `ChartValuesFromReferences`; fluxcd.io, "Helm Releases",
//!   values references): each `valuesFrom` entry in order (a ConfigMap of the same file, its
//!   `valuesKey`, default `values.yaml`; `targetPath` set like `--set`), then `spec.values`, each
//!   merged over the last as Helm merges `-f` files;
//! - Application (argo-cd `ApplicationSourceHelm.ValuesYAML` and the repo server's
//!   `helmTemplate`; argo-cd.readthedocs.io, user guide "Helm": "parameters > valuesObject >
//!   values > valueFiles"): `valuesObject` when set, else the `values` string (never both: the
//!   object replaces the string), as the last `-f` file, then `parameters` as `--set`
//!   (`forceString`: `--set-string`).

use std::path::Path;
use std::sync::Arc;

use super::{Layers, Refusal, SetKind, Version, coalesce, empty_map, merge_maps, read_file, view};
use crate::cgpu::CHART;
use crate::yaml::node::child;
use crate::yaml::{self, Node, Parsed, Scalar, Source, Value};

/// Which of the forms holds the values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Umbrella,
    HelmRelease,
    Application,
    ApplicationSet,
    Helmfile,
    Kustomize,
}

impl Form {
    pub fn describe(self) -> &'static str {
        match self {
            Form::Umbrella => "subchart",
            Form::HelmRelease => "Flux HelmRelease",
            Form::Application => "Argo CD Application",
            Form::ApplicationSet => "Argo CD ApplicationSet",
            Form::Helmfile => "helmfile release",
            Form::Kustomize => "kustomize helmCharts entry",
        }
    }
}

/// What a target holds where the chart's values are.
#[derive(Debug, Clone)]
pub enum Values {
    /// Nothing: the chart gets its defaults.
    Absent,
    /// A mapping of the document.
    Node(Node),
    /// Something other than a mapping where Helm needs one (the node, and what Helm does).
    NotAMap(Node, String),
    /// YAML inside a literal block string, read in place (see [`crate::yaml::embedded`]).
    Embedded(Arc<Source>, Arc<Parsed>),
    /// A string that cannot be read in place: the node and why.
    Unmapped(Node, String),
    /// A Secret's base64 `data` value (the node) and its decoded text, read as a values file;
    /// findings point at the node.
    Decoded(Node, Arc<Source>),
}

/// A Flux `valuesFrom` entry.
#[derive(Debug, Clone)]
pub struct ValuesRef {
    pub kind: String,
    pub name: String,
    pub key: String,
    pub target_path: Option<String>,
    /// `optional: true`: Flux skips the entry when the object or key does not exist.
    pub optional: bool,
    /// The HelmRelease's namespace, where Flux looks the object up.
    pub namespace: Option<String>,
    /// The entry's bytes in the file.
    pub span: std::ops::Range<usize>,
}

/// The values of one release (or subchart instance) of the chart in a document.
#[derive(Debug, Clone)]
pub struct Target {
    pub form: Form,
    /// The subchart's key, or the release's `metadata.name`.
    pub name: String,
    /// JSON pointer (in the document) of the values the chart receives as its root.
    pub pointer: String,
    /// What `--set` writes before a key of these values from the top of the release (`gpu.`
    /// for an umbrella's subchart `gpu`).
    pub set_prefix: String,
    pub values: Values,
    /// An umbrella dependency's `condition` and `tags`.
    pub condition: Option<String>,
    pub tags: Vec<String>,
    /// Argo CD's `helm.parameters`, helmfile's `set:` and `setString:`: the Helm flags the tool
    /// passes, in the order Helm applies them.
    pub parameters: Vec<Param>,
    /// Flux's `spec.valuesFrom`, in order.
    pub values_from: Vec<ValuesRef>,
    /// A helmfile release's `values:` list in order: inline mappings, and files (paths relative
    /// to the helmfile).
    pub layers: Vec<Layer>,
    /// Where the values come from, when not the release itself (`valuesFrom ConfigMap `cm``).
    pub via: Option<String>,
    /// The rules check `values` (an inline helmfile entry, a ConfigMap of valuesFrom, every
    /// target but a helmfile release as a whole).
    pub check: bool,
    /// `values` prints what this target's release receives (not for a part of a release).
    pub release: bool,
    /// What the release's tool hands the chart that is not read here, or that the tool ignores:
    /// the node and what to say (`values-not-read`).
    pub unread: Vec<(Node, String)>,
}

impl Target {
    /// How findings name the release: "Flux HelmRelease `gpu` (valuesFrom ConfigMap `base`)".
    pub fn label(&self) -> String {
        match &self.via {
            Some(via) => format!("{} `{}` ({via})", self.form.describe(), self.name),
            None => format!("{} `{}`", self.form.describe(), self.name),
        }
    }
}

/// A `--set` or `--set-string` flag a tool passes to Helm for one entry of the release.
#[derive(Debug, Clone)]
pub struct Param {
    pub kind: SetKind,
    /// The entry's `name`.
    pub name: String,
    /// The flag's argument as the tool writes it (`name=value`, escaped as the tool escapes).
    pub arg: String,
    /// The entry's `value` (or `values`) node in the file: where findings about it point.
    pub value: Node,
    /// Its JSON pointer in the document (`/spec/source/helm/parameters/0/value`).
    pub pointer: String,
    /// How findings name the entry: `parameter`, `` `set:` entry``, `` `setString:` entry``.
    pub what: &'static str,
}

impl Param {
    /// The name of the source [`super::strvals::apply`] gives the values this flag sets.
    pub fn source_name(&self) -> String {
        format!("{} {}", self.kind.flag(), self.arg)
    }
}

/// Helm applies every `--set` before every `--set-string`, whatever their order on the command
/// line: the parameters in that order (stable within a kind).
fn helm_order(params: &mut [Param]) {
    params.sort_by_key(|p| match p.kind {
        SetKind::Json => 0,
        SetKind::Set => 1,
        SetKind::String => 2,
    });
}

/// One entry of a helmfile release's `values:` list.
#[derive(Debug, Clone)]
pub enum Layer {
    /// An inline mapping and its pointer (`/releases/1/values/0`).
    Inline(Node, String),
    /// A file named by the entry (its string node, relative to the file that names it), and
    /// whether helmfile skips it when missing (`missingFileHandler` other than `Error`).
    File(Node, bool),
    /// The chart's own values.yaml (kustomize's `valuesMerge: merge` without a `valuesFile`).
    ChartDefaults,
    /// An Argo CD `valueFiles` entry (its string node), relative to the source's `path` (the
    /// second field) in the checked repository (see [`source_folder`]), whether a missing one is
    /// skipped (`ignoreMissingValueFiles`), and the path to read when it is not the entry's text
    /// (a `$ref/…` file of the same repository, from `path`'s folder).
    SourceFile(Node, String, bool, Option<String>),
}

impl Target {
    fn new(form: Form, name: String, pointer: String, values: Values) -> Target {
        Target {
            form,
            name,
            pointer,
            set_prefix: String::new(),
            values,
            condition: None,
            tags: Vec::new(),
            parameters: Vec::new(),
            values_from: Vec::new(),
            layers: Vec::new(),
            via: None,
            check: true,
            release: true,
            unread: Vec::new(),
        }
    }
}

/// A dependency of a parent chart on the chart, from its Chart.yaml.
#[derive(Debug, Clone)]
pub struct Dependency {
    /// The key of its values in the parent's: `alias`, else `name`.
    pub key: String,
    pub condition: Option<String>,
    pub tags: Vec<String>,
}

/// The parent chart's `Chart.yaml` beside the values file `path`, if there is one: its
/// dependencies on the chart (perhaps none), and the folder.
pub fn parent_chart(path: &str) -> Option<(std::path::PathBuf, Vec<Dependency>)> {
    if path == "-" || path.starts_with('<') {
        return None;
    }
    let dir = Path::new(path).parent()?;
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let text = std::fs::read_to_string(dir.join("Chart.yaml")).ok()?;
    let src = Source::new(dir.join("Chart.yaml").to_string_lossy(), text);
    let parsed = yaml::parse(&src);
    let root = parsed.documents.first()?.root.as_ref()?;
    let mut deps = Vec::new();
    for d in root
        .get("dependencies")
        .and_then(Node::as_seq)
        .unwrap_or_default()
    {
        if d.get("name").and_then(Node::as_str) != Some(CHART) {
            continue;
        }
        let key = d
            .get("alias")
            .and_then(Node::as_str)
            .filter(|a| !a.is_empty())
            .unwrap_or(CHART)
            .to_string();
        let condition = d
            .get("condition")
            .and_then(Node::as_str)
            .map(str::to_string);
        let tags = d
            .get("tags")
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .filter_map(|t| t.as_str().map(str::to_string))
            .collect();
        deps.push(Dependency {
            key,
            condition,
            tags,
        });
    }
    Some((dir.to_path_buf(), deps))
}

/// The last segment of a chart reference (`./charts/ack-ai-installer/`, `oci://…/name`).
fn chart_name(reference: &str) -> &str {
    reference
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("")
}

fn str_at<'a>(node: &'a Node, pointer: &str) -> Option<&'a str> {
    node.pointer(pointer).and_then(Node::as_str)
}

/// A node where a mapping of values is expected.
fn values_node(node: Option<&Node>, what: &str) -> Values {
    match node {
        None => Values::Absent,
        Some(n) if matches!(n.value, Value::Map(_)) => Values::Node(n.clone()),
        Some(n) if matches!(n.value, Value::Scalar(Scalar::Null)) => Values::Absent,
        Some(n) => Values::NotAMap(
            n.clone(),
            format!("{what} is a {}, not a mapping of values", n.type_name()),
        ),
    }
}

/// The chart's values in one document, for each release (or subchart) of the chart it holds.
/// `deps` are the parent chart's dependencies on the chart ([`parent_chart`]), when the values
/// file has a Chart.yaml beside it. A document whose root holds `cgpu` is a values file of the
/// chart itself and has none.
pub fn targets(root: &Node, deps: Option<&[Dependency]>) -> Vec<Target> {
    if root.entry("cgpu").is_some() || root.as_map().is_none() {
        return Vec::new();
    }
    let api = root.get("apiVersion").and_then(Node::as_str).unwrap_or("");
    let kind = root.get("kind").and_then(Node::as_str).unwrap_or("");
    let name = str_at(root, "/metadata/name").unwrap_or("").to_string();
    if api.starts_with("helm.toolkit.fluxcd.io/") && kind == "HelmRelease" {
        return helm_release(root, name).into_iter().collect();
    }
    if api.starts_with("argoproj.io/") && kind == "Application" {
        return match root.get("spec") {
            Some(spec) => application(spec, "/spec", &name, Form::Application),
            None => Vec::new(),
        };
    }
    if api.starts_with("argoproj.io/") && kind == "ApplicationSet" {
        return match root.pointer("/spec/template/spec") {
            Some(spec) => application(spec, "/spec/template/spec", &name, Form::ApplicationSet),
            None => Vec::new(),
        };
    }
    if let Some(charts) = root.get("helmCharts").and_then(Node::as_seq)
        && (kind.is_empty() || kind == "Kustomization" || kind == "Component")
    {
        return kustomize(charts);
    }
    if !api.is_empty() && !kind.is_empty() {
        return Vec::new();
    }
    if let Some(releases) = root.get("releases").and_then(Node::as_seq)
        && releases
            .iter()
            .any(|r| r.get("chart").and_then(Node::as_str).is_some())
    {
        return helmfile(root, releases);
    }
    let fallback = [Dependency {
        key: CHART.to_string(),
        condition: None,
        tags: Vec::new(),
    }];
    // Without a Chart.yaml beside it, a file is an umbrella's values only when it holds the
    // chart's key: any other values file (no `cgpu`, no `ack-ai-installer`) is a plain one, read
    // whole, as Helm reads it for the chart itself.
    let deps = match deps {
        Some(d) => d,
        None if root.entry(CHART).is_some() => &fallback,
        None => return Vec::new(),
    };
    deps.iter()
        .map(|d| {
            let what = format!("`{}`", d.key);
            let values = match root.get(&d.key) {
                // Helm refuses a null too: "type mismatch on KEY: %!t(<nil>)".
                Some(n) if !matches!(n.value, Value::Map(_)) => Values::NotAMap(
                    n.clone(),
                    format!(
                        "{what} is a {}, not a mapping: Helm refuses the parent chart (\"type mismatch on {}\")",
                        n.type_name(),
                        d.key
                    ),
                ),
                other => values_node(other, &what),
            };
            let mut t = Target::new(Form::Umbrella, d.key.clone(), child("", &d.key), values);
            t.set_prefix = format!("{}.", d.key);
            t.condition = d.condition.clone();
            t.tags = d.tags.clone();
            t
        })
        .collect()
}

fn helm_release(root: &Node, name: String) -> Option<Target> {
    let spec = root.get("spec")?;
    let chart = str_at(spec, "/chart/spec/chart")
        .map(chart_name)
        .or_else(|| str_at(spec, "/chartRef/name"));
    if chart != Some(CHART) {
        return None;
    }
    let mut t = Target::new(
        Form::HelmRelease,
        name,
        "/spec/values".into(),
        values_node(spec.get("values"), "`spec.values`"),
    );
    // Flux's chart template `valuesFiles`: files of the chart's source, merged under
    // `valuesFrom` and `spec.values`.
    for f in spec
        .pointer("/chart/spec/valuesFiles")
        .and_then(Node::as_seq)
        .unwrap_or_default()
    {
        t.unread.push((
            f.clone(),
            format!(
                "`{}` is a values file of the chart's source (`spec.chart.spec.valuesFiles`), which Flux merges under `valuesFrom` and `spec.values`: not read here",
                f.as_str().unwrap_or_default()
            ),
        ));
    }
    for r in spec
        .get("valuesFrom")
        .and_then(Node::as_seq)
        .unwrap_or_default()
    {
        let s = |k: &str| r.get(k).and_then(Node::as_str).map(str::to_string);
        t.values_from.push(ValuesRef {
            kind: s("kind").unwrap_or_default(),
            name: s("name").unwrap_or_default(),
            key: s("valuesKey")
                .filter(|k| !k.is_empty())
                .unwrap_or_else(|| "values.yaml".into()),
            target_path: s("targetPath").filter(|p| !p.is_empty()),
            optional: r.get("optional").and_then(Node::scalar) == Some(&Scalar::Bool(true)),
            namespace: str_at(root, "/metadata/namespace").map(str::to_string),
            span: r.span.clone(),
        });
    }
    Some(t)
}

/// The releases of the chart in an Application's `spec` (at `base`), or in an ApplicationSet's
/// template (`form`), whose fields holding `{{…}}` (filled in by its generators) are left out
/// and named.
fn application(spec: &Node, base: &str, name: &str, form: Form) -> Vec<Target> {
    let mut sources: Vec<(String, &Node)> = Vec::new();
    if let Some(s) = spec.get("source") {
        sources.push((format!("{base}/source"), s));
    }
    for (i, s) in spec
        .get("sources")
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        sources.push((format!("{base}/sources/{i}"), s));
    }
    let several = sources.len() > 1;
    let mut out = Vec::new();
    for (at, s) in sources.iter().cloned() {
        let chart = s
            .get("chart")
            .and_then(Node::as_str)
            .or_else(|| s.get("path").and_then(Node::as_str).map(chart_name));
        if chart != Some(CHART) {
            continue;
        }
        let helm = s.get("helm");
        let mut t_unread = Vec::new();
        let object = helm.and_then(|h| h.get("valuesObject"));
        let string = helm.and_then(|h| h.get("values"));
        if let (Some(o), Some(v)) = (object, string)
            && !matches!(o.value, Value::Scalar(Scalar::Null))
            && !matches!(v.scalar(), Some(Scalar::Null))
        {
            t_unread.push((
                v.clone(),
                "`values` beside `valuesObject`: Argo CD passes only valuesObject, so this string is not read by Argo CD (nor checked here); move what it should set into valuesObject, or delete it".to_string(),
            ));
        }
        let (pointer, values) = match (object, string) {
            (Some(o), _) if !matches!(o.value, Value::Scalar(Scalar::Null)) => (
                format!("{at}/helm/valuesObject"),
                values_node(Some(o), "`valuesObject`"),
            ),
            (_, Some(v)) => (format!("{at}/helm/values"), string_values(v)),
            _ => (format!("{at}/helm/values"), Values::Absent),
        };
        let label = if several {
            format!("{name} ({})", &at[1..])
        } else {
            name.to_string()
        };
        let mut t = Target::new(form, label, pointer, values);
        t.parameters = argo_parameters(helm, &format!("{at}/helm/parameters"));
        let ignore_missing = matches!(
            helm.and_then(|h| h.get("ignoreMissingValueFiles"))
                .and_then(Node::scalar),
            Some(Scalar::Bool(true))
        );
        let folder = s
            .get("path")
            .and_then(Node::as_str)
            .filter(|p| !p.is_empty());
        for f in helm
            .and_then(|h| h.get("valueFiles"))
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            let Some(name) = f.as_str() else { continue };
            // `$ref/rest` of a `ref:` source of the same repository as this `path` source: the
            // file is `rest` from the repository's root, here `path`'s folder's `..` for each
            // of its components.
            if let (Some(rest), Some(folder)) = (same_repo_ref(name, s, &sources), folder) {
                let up = "../".repeat(Path::new(folder).components().count());
                t.layers.push(Layer::SourceFile(
                    f.clone(),
                    folder.to_string(),
                    ignore_missing,
                    Some(format!("{up}{rest}")),
                ));
                continue;
            }
            let why = if name.starts_with('$') {
                Some(
                    "comes from another source of the Application (a `ref:` checkout of another repository), which is not read here",
                )
            } else if name.contains("://") {
                Some("is fetched from a URL, which is not read here")
            } else if folder.is_none() {
                Some("is inside the chart package the Application pulls, which is not read here")
            } else {
                None
            };
            match (why, folder) {
                (None, Some(folder)) => t.layers.push(Layer::SourceFile(
                    f.clone(),
                    folder.to_string(),
                    ignore_missing,
                    None,
                )),
                _ => t_unread.push((
                    f.clone(),
                    format!(
                        "the value file `{name}` {}: its values are not checked; Argo CD layers it under `values`, `valuesObject` and `parameters`",
                        why.unwrap_or_default()
                    ),
                )),
            }
        }
        for f in helm
            .and_then(|h| h.get("fileParameters"))
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            t_unread.push((
                f.clone(),
                format!(
                    "the file parameter `{}` (`--set-file`: a file's text becomes the value): not read here",
                    f.get("name").and_then(Node::as_str).unwrap_or_default()
                ),
            ));
        }
        t.unread = std::mem::take(&mut t_unread);
        if form == Form::ApplicationSet {
            untemplated(&mut t);
        }
        out.push(t);
    }
    out
}

/// The path after `$ref/` when `name` is a value file of a `ref:` source of the same repository
/// (`repoURL`, without a trailing `/` or `.git`, case aside) as the chart's source `s`.
fn same_repo_ref<'a>(name: &'a str, s: &Node, sources: &[(String, &Node)]) -> Option<&'a str> {
    let (reference, rest) = name.strip_prefix('$')?.split_once('/')?;
    let url = |n: &Node| {
        n.get("repoURL").and_then(Node::as_str).map(|u| {
            u.trim_end_matches('/')
                .trim_end_matches(".git")
                .to_ascii_lowercase()
        })
    };
    let own = url(s)?;
    sources
        .iter()
        .any(|(_, o)| {
            o.get("ref").and_then(Node::as_str) == Some(reference) && url(o).as_ref() == Some(&own)
        })
        .then_some(rest)
}

/// Does this value hold a `{{…}}` of an ApplicationSet template (a scalar containing one, or a
/// collection that is one, such as `{{.policy}}` read as a flow mapping)?
fn templated(n: &Node) -> bool {
    match n.value {
        Value::Scalar(_) => n.raw().contains("{{"),
        _ => n.raw().trim_start().starts_with("{{"),
    }
}

/// Remove from a mapping of values every entry whose value is templated, noting each.
pub fn strip_templated(node: &mut Node, path: &str, notes: &mut Vec<(Node, String)>) {
    let Value::Map(entries) = &mut node.value else {
        return;
    };
    entries.retain_mut(|e| {
        let p = if path.is_empty() {
            e.key.clone()
        } else {
            format!("{path}.{}", e.key)
        };
        if templated(&e.value) || e.key.contains("{{") {
            notes.push((e.value.clone(), format!("`{p}`")));
            return false;
        }
        strip_templated(&mut e.value, &p, notes);
        true
    });
}

/// An ApplicationSet's template with what its generators fill in left out: each field holding
/// `{{…}}` (in the values, in a parameter) is named once as not checked.
fn untemplated(t: &mut Target) {
    let mut notes: Vec<(Node, String)> = Vec::new();
    match &mut t.values {
        Values::Node(n) => strip_templated(n, "", &mut notes),
        Values::Embedded(src, parsed) => {
            if parsed.error.is_some() && src.text.contains("{{") {
                if let Some(root) = parsed.documents.first().and_then(|d| d.root.clone()) {
                    t.values = Values::Unmapped(
                        root,
                        "it holds `{{…}}` that the ApplicationSet's generators fill in, and is not YAML before that".into(),
                    );
                }
            } else {
                let mut p = (**parsed).clone();
                for d in &mut p.documents {
                    if let Some(root) = &mut d.root {
                        strip_templated(root, "", &mut notes);
                    }
                }
                *parsed = Arc::new(p);
            }
        }
        _ => {}
    }
    // A templated parameter still overrides what the values set under its name: it passes its
    // template text as a string (every `,`, `{` and `\` escaped for Helm's parser), which the
    // rules then leave out.
    t.parameters.retain_mut(|p| {
        if p.name.contains("{{") {
            notes.push((p.value.clone(), format!("the parameter `{}`", p.name)));
            return false;
        }
        if templated(&p.value) {
            notes.push((p.value.clone(), format!("the parameter `{}`", p.name)));
            let text = scalar_text(&p.value).unwrap_or_default();
            let mut escaped = String::new();
            for c in text.chars() {
                if matches!(c, ',' | '{' | '\\') {
                    escaped.push('\\');
                }
                escaped.push(c);
            }
            p.kind = SetKind::String;
            p.arg = format!("{}={escaped}", p.name);
        }
        true
    });
    helm_order(&mut t.parameters);
    for (node, what) in notes {
        t.unread.push((
            node,
            format!("{what} holds `{{{{…}}}}`, which the ApplicationSet's generators fill in: not checked"),
        ));
    }
}

/// kustomize's `helmCharts` entries of the chart (`name`), as its helm generator
/// (`HelmChartInflationGenerator`, `api/types/helmchartargs.go` `AsHelmArgs`) passes them to
/// `helm template`: `-f` the values file, then `-f` each `additionalValuesFiles` entry (relative to
/// the kustomization). The values file is `valuesFile` (default: the chart's own values.yaml)
/// with `valuesInline` merged into it by `valuesMerge`: `override` (the default: inline over the
/// file), `merge` (the file over inline), `replace` (inline alone).
fn kustomize(charts: &[Node]) -> Vec<Target> {
    let mut out = Vec::new();
    for (i, c) in charts.iter().enumerate() {
        if c.get("name").and_then(Node::as_str) != Some(CHART) {
            continue;
        }
        let name = c
            .get("releaseName")
            .and_then(Node::as_str)
            .filter(|n| !n.is_empty())
            .unwrap_or(CHART)
            .to_string();
        let at = format!("/helmCharts/{i}");
        let inline = c
            .get("valuesInline")
            .filter(|v| v.as_map().is_some_and(|m| !m.is_empty()));
        let file = c
            .get("valuesFile")
            .filter(|f| f.as_str().is_some_and(|s| !s.is_empty()));
        let merge = c
            .get("valuesMerge")
            .and_then(Node::as_str)
            .unwrap_or("override");
        let mut whole = Target::new(Form::Kustomize, name.clone(), at.clone(), Values::Absent);
        let inline_layer = inline.map(|v| Layer::Inline(v.clone(), format!("{at}/valuesInline")));
        let file_layer = file.map(|f| Layer::File(f.clone(), false));
        match (merge, inline_layer) {
            ("replace", Some(l)) => {
                whole.layers.push(l);
                if let Some(f) = file {
                    whole.unread.push((
                        f.clone(),
                        "`valuesMerge: replace`: kustomize passes valuesInline alone, so this values file is not read".into(),
                    ));
                }
            }
            ("merge", Some(l)) => {
                whole.layers.push(l);
                // Without a valuesFile the chart's own values.yaml is merged over valuesInline.
                whole
                    .layers
                    .push(file_layer.unwrap_or(Layer::ChartDefaults));
            }
            (_, Some(l)) => {
                whole.layers.extend(file_layer);
                whole.layers.push(l);
            }
            (_, None) => whole.layers.extend(file_layer),
        }
        for f in c
            .get("additionalValuesFiles")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            if f.as_str().is_some() {
                whole.layers.push(Layer::File(f.clone(), false));
            }
        }
        whole.check = false;
        if let Some(v) = inline {
            let mut t = Target::new(
                Form::Kustomize,
                name,
                format!("{at}/valuesInline"),
                Values::Node(v.clone()),
            );
            t.release = false;
            out.push(t);
        }
        out.push(whole);
    }
    out
}

/// Argo CD's `helm.parameters` as its repo server passes them (`reposerver/repository`
/// `helmTemplate` and `util/helm/cmd.go`): each into the map `Set` (or `SetString` with
/// `forceString`) by name, the last of one name winning, then `--set name=value` for each of
/// `Set` and `--set-string` for each of `SetString`, the value's commas escaped
/// (`cleanSetParameters`: every `,` not after a `\`, unless the value is a `{…}` list).
fn argo_parameters(helm: Option<&Node>, at: &str) -> Vec<Param> {
    let mut out: Vec<Param> = Vec::new();
    let list = helm
        .and_then(|h| h.get("parameters"))
        .and_then(Node::as_seq)
        .unwrap_or_default();
    for (i, p) in list.iter().enumerate() {
        let (Some(name), Some(node)) = (p.get("name").and_then(Node::as_str), p.get("value"))
        else {
            continue;
        };
        let value = scalar_text(node).unwrap_or_default();
        let force = matches!(
            p.get("forceString").and_then(Node::scalar),
            Some(Scalar::Bool(true))
        );
        let kind = if force { SetKind::String } else { SetKind::Set };
        let cleaned = if value.starts_with('{') && value.ends_with('}') {
            value
        } else {
            let mut s = String::with_capacity(value.len());
            let mut prev = None;
            for c in value.chars() {
                if c == ',' && prev != Some('\\') {
                    s.push_str("\\,");
                } else {
                    s.push(c);
                }
                prev = Some(c);
            }
            s
        };
        out.retain(|o| !(o.kind == kind && o.name == name));
        out.push(Param {
            kind,
            name: name.to_string(),
            arg: format!("{name}={cleaned}"),
            value: node.clone(),
            pointer: format!("{at}/{i}/value"),
            what: "parameter",
        });
    }
    helm_order(&mut out);
    out
}

/// helmfile's `set:` (as `--set`) and `setString:` (as `--set-string`) entries of a release, as
/// its `setFlags`/`setStringFlags` write them (`pkg/state/state.go`): `name=value` with `{`, `}`
/// and `,` of both escaped (`escape`), a `values:` list as `name={a,b}`; an entry with an empty
/// `value` and no `values` passes nothing (a `file:` entry is `--set-file`, not read).
fn helmfile_sets(r: &Node, at: &str) -> Vec<Param> {
    fn escape(s: &str) -> String {
        s.replace('{', "\\{")
            .replace('}', "\\}")
            .replace(',', "\\,")
    }
    let mut out = Vec::new();
    for (key, kind) in [("set", SetKind::Set), ("setString", SetKind::String)] {
        for (j, p) in r
            .get(key)
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let Some(name) = p.get("name").and_then(Node::as_str) else {
                continue;
            };
            let value = p
                .get("value")
                .filter(|v| scalar_text(v).is_some_and(|t| !t.is_empty()));
            let (arg, node, field) = if let Some(v) = value {
                let text = scalar_text(v).unwrap_or_default();
                (format!("{}={}", escape(name), escape(&text)), v, "value")
            } else if let Some(list) = p
                .get("values")
                .filter(|v| v.as_seq().is_some_and(|l| !l.is_empty()))
            {
                let items: Vec<String> = list
                    .as_seq()
                    .unwrap_or_default()
                    .iter()
                    .map(|i| escape(&scalar_text(i).unwrap_or_default()))
                    .collect();
                (
                    format!("{}={{{}}}", escape(name), items.join(",")),
                    list,
                    "values",
                )
            } else {
                continue;
            };
            out.push(Param {
                kind,
                name: name.to_string(),
                arg,
                value: node.clone(),
                pointer: format!("{at}/{key}/{j}/{field}"),
                what: if kind == SetKind::String {
                    "`setString:` entry"
                } else {
                    "`set:` entry"
                },
            });
        }
    }
    out
}

/// helmfile's releases of the chart: each release's `values:` entries in order (an inline
/// mapping is a values file of its own; a string names a file beside the helmfile), then `set:`
/// as `--set` (helmfile passes them to `helm` as `--values` and `--set`, in that order).
fn helmfile(root: &Node, releases: &[Node]) -> Vec<Target> {
    let mut out = Vec::new();
    for (i, r) in releases.iter().enumerate() {
        if r.get("chart").and_then(Node::as_str).map(chart_name) != Some(CHART) {
            continue;
        }
        let name = r
            .get("name")
            .and_then(Node::as_str)
            .unwrap_or(CHART)
            .to_string();
        let entries = r.get("values").and_then(Node::as_seq).unwrap_or_default();
        for (j, v) in entries.iter().enumerate() {
            let pointer = format!("/releases/{i}/values/{j}");
            if matches!(v.value, Value::Map(_)) {
                let mut t = Target::new(
                    Form::Helmfile,
                    name.clone(),
                    pointer,
                    Values::Node(v.clone()),
                );
                t.release = false;
                out.push(t);
            }
        }
        // The release as a whole, for `values` (its checks are the inline entries above).
        let mut whole = Target::new(
            Form::Helmfile,
            name,
            format!("/releases/{i}"),
            Values::Absent,
        );
        // `missingFileHandler` of the release, else of the helmfile; `Error` by default.
        let handler = r
            .get("missingFileHandler")
            .or_else(|| root.get("missingFileHandler"))
            .and_then(Node::as_str)
            .unwrap_or("Error");
        for (j, v) in entries.iter().enumerate() {
            match (&v.value, v.as_str()) {
                (Value::Map(_), _) => whole.layers.push(Layer::Inline(
                    v.clone(),
                    format!("/releases/{i}/values/{j}"),
                )),
                (_, Some(path)) if path.ends_with(".gotmpl") || path.contains("{{") => {
                    whole.unread.push((
                        v.clone(),
                        format!("the values file `{path}` is a template helmfile renders first (`.gotmpl`, `{{{{ }}}}`): not read here, its values are not checked"),
                    ));
                }
                (_, Some(_)) => whole
                    .layers
                    .push(Layer::File(v.clone(), handler != "Error")),
                _ => {}
            }
        }
        for s in r.get("secrets").and_then(Node::as_seq).unwrap_or_default() {
            whole.unread.push((
                s.clone(),
                "a `secrets:` entry (decrypted by helm-secrets, passed after `values:`): not read here, its values are not checked".into(),
            ));
        }
        for key in ["set", "setString"] {
            for e in r.get(key).and_then(Node::as_seq).unwrap_or_default() {
                if let Some(f) = e.get("file").filter(|_| e.get("value").is_none()) {
                    whole.unread.push((
                        f.clone(),
                        format!("a `{key}:` entry with `file:` (`--set-file`: the file's text becomes the value): not read here"),
                    ));
                }
            }
        }
        whole.parameters = helmfile_sets(r, &format!("/releases/{i}"));
        whole.check = false;
        out.push(whole);
    }
    out
}

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

/// A scalar's text as a Kubernetes string field holds it.
fn scalar_text(n: &Node) -> Option<String> {
    match n.scalar()? {
        Scalar::Str(s) => Some(s.clone()),
        Scalar::Null => None,
        _ => Some(n.raw().to_string()),
    }
}

/// A string of values YAML: read in place when it is a literal block.
pub fn string_values(node: &Node) -> Values {
    match node.scalar() {
        Some(Scalar::Str(s)) if s.trim().is_empty() => Values::Absent,
        Some(Scalar::Str(_)) => match yaml::embedded::literal_source(node) {
            Ok(src) => {
                let parsed = yaml::parse(&src);
                Values::Embedded(src, Arc::new(parsed))
            }
            Err(why) => Values::Unmapped(node.clone(), why),
        },
        Some(Scalar::Null) | None if node.scalar().is_some() => Values::Absent,
        _ => Values::NotAMap(
            node.clone(),
            format!("`values` is a {}, not a string of YAML", node.type_name()),
        ),
    }
}

/// Why an umbrella's subchart is disabled in these (parent) values, if it is: its `condition`
/// (the first path that resolves to a boolean decides; a non-boolean is ignored, as Helm
/// warns), else its `tags` (enabled if any tag it names is true, disabled if all that are set
/// are false).
pub fn disabled(target: &Target, parent: &Node) -> Option<String> {
    if let Some(cond) = &target.condition {
        for path in cond.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let mut node = Some(parent);
            for key in path.split('.') {
                node = node.and_then(|n| n.get(key));
            }
            if let Some(Scalar::Bool(b)) = node.and_then(Node::scalar) {
                return (!b).then(|| format!("its condition `{path}` is false"));
            }
        }
    }
    let tags = parent.get("tags");
    let set: Vec<bool> = target
        .tags
        .iter()
        .filter_map(
            |t| match tags.and_then(|m| m.get(t)).and_then(Node::scalar) {
                Some(Scalar::Bool(b)) => Some(*b),
                _ => None,
            },
        )
        .collect();
    (!set.is_empty() && !set.iter().any(|b| *b))
        .then(|| format!("its tags ({}) are all false", target.tags.join(", ")))
}

/// What one release (or subchart instance) of the chart receives.
#[derive(Debug)]
pub struct Release {
    pub name: String,
    /// The values its templates get, or why it is not rendered.
    pub values: Result<Node, String>,
}

/// What each release of the chart in `layers.files[0]` receives (its documents' targets), as
/// `version` computes it; `None` when that file is not one of these forms (a plain values file).
/// An umbrella's parent values are all of `layers.files` (and sets) merged; the other forms take
/// the one file.
pub fn releases(layers: &Layers, version: Version) -> Option<Result<Vec<Release>, Refusal>> {
    releases_among(layers, None, version)
}

/// [`releases`], with the ConfigMaps and Secrets of the run's other inputs for Flux's
/// `valuesFrom`.
pub fn releases_among(
    layers: &Layers,
    others: Option<&Others>,
    version: Version,
) -> Option<Result<Vec<Release>, Refusal>> {
    let first = layers.files.first()?;
    if first.invalid.is_some() {
        return None;
    }
    let parsed = yaml::parse(first);
    let parent = parent_chart(&first.name);
    let deps = parent.as_ref().map(|(_, d)| d.as_slice());
    let mut per_doc: Vec<(&Node, Vec<Target>)> = Vec::new();
    for doc in &parsed.documents {
        let Some(root) = &doc.root else { continue };
        let ts = targets(root, deps);
        if !ts.is_empty() {
            per_doc.push((root, ts));
        }
    }
    let (_, first_targets) = per_doc.first()?;
    // A stack of several files: a release's file is one layer of it (`stack_layer`).
    if layers.files.len() > 1 && first_targets[0].form != Form::Umbrella {
        return None;
    }
    let chart = match read_file(&super::chart_source(layers), version) {
        Ok(c) => c,
        Err(r) => return Some(Err(r)),
    };
    if first_targets[0].form == Form::Umbrella {
        let targets = first_targets.clone();
        let parent_defaults = parent
            .as_ref()
            .map(|(dir, _)| dir.join("values.yaml"))
            .filter(|p| p.is_file() && !same_file(p, &first.name));
        return Some(umbrella(layers, &targets, parent_defaults, &chart, version));
    }
    let mut out = Vec::new();
    for (_, ts) in &per_doc {
        for t in ts.iter().filter(|t| t.release) {
            match release_values(t, &parsed, others, &first.name, Some(&chart), version) {
                Ok(mut user) => {
                    coalesce(&mut user, &chart);
                    out.push(Release {
                        name: t.name.clone(),
                        values: Ok(user),
                    });
                }
                Err(r) => return Some(Err(r)),
            }
        }
    }
    Some(Ok(out))
}

fn same_file(p: &Path, name: &str) -> bool {
    match (p.canonicalize(), Path::new(name).canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The values of a HelmRelease, an Application or a helmfile release, before the chart's
/// defaults, or the first thing the tool or Helm refuses.
pub fn release_values(
    t: &Target,
    parsed: &Parsed,
    others: Option<&Others>,
    file: &str,
    chart: Option<&Node>,
    version: Version,
) -> Result<Node, Refusal> {
    let base_src = Source::new("<values>", String::new());
    let mut out = empty_map(&base_src);
    for layer in &t.layers {
        match layer {
            Layer::Inline(n, _) => merge_maps(&mut out, view(n)?),
            Layer::ChartDefaults => match chart {
                Some(c) => merge_maps(&mut out, c.clone()),
                None => {
                    let c = crate::cgpu::chart_defaults();
                    merge_maps(&mut out, read_file(&c, version)?);
                }
            },
            Layer::File(entry, skip_missing) => {
                let base = Path::new(file).parent().unwrap_or(Path::new("."));
                let path = entry.as_str().unwrap_or_default();
                if let Some(n) = layer_file(t, entry, path, base, *skip_missing, version)? {
                    merge_maps(&mut out, n);
                }
            }
            Layer::SourceFile(entry, folder, skip_missing, path) => {
                let Some(base) = source_folder(file, folder) else {
                    continue;
                };
                let path = path.as_deref().or(entry.as_str()).unwrap_or_default();
                if let Some(n) = layer_file(t, entry, path, &base, *skip_missing, version)? {
                    merge_maps(&mut out, n);
                }
            }
        }
    }
    for r in &t.values_from {
        let Some(data) = values_data(parsed, others, r) else {
            continue;
        };
        match &r.target_path {
            Some(path) => {
                let text = data.text();
                let text = text.as_str();
                let quoted = (text.starts_with('"') && text.ends_with('"'))
                    || (text.starts_with('\'') && text.ends_with('\''));
                let (kind, text) = if quoted && text.len() >= 2 {
                    (SetKind::String, text.trim_matches(['"', '\'']))
                } else {
                    (SetKind::Set, text)
                };
                super::strvals::apply(kind, &format!("{path}={text}"), &mut out, version)?;
            }
            None => match data {
                Data::Text(n) => merge_maps(&mut out, string_file(n, version)?),
                Data::Decoded(_, src) => merge_maps(&mut out, read_file(&src, version)?),
            },
        }
    }
    match &t.values {
        Values::Absent => {}
        Values::Node(n) => merge_maps(&mut out, view(n)?),
        // An ApplicationSet's string without its templated fields (see `untemplated`).
        Values::Embedded(_, parsed) if t.form == Form::ApplicationSet => {
            if let Some(root) = parsed.documents.first().and_then(|d| d.root.as_ref())
                && matches!(root.value, Value::Map(_))
            {
                merge_maps(&mut out, view(root)?);
            }
        }
        Values::Embedded(src, _) | Values::Decoded(_, src) => {
            merge_maps(&mut out, read_file(src, version)?)
        }
        Values::Unmapped(n, _) => merge_maps(&mut out, string_file(n, version)?),
        Values::NotAMap(n, why) => {
            return Err(Refusal {
                src: n.src.clone(),
                offset: n.span.start,
                message: why.clone(),
            });
        }
    }
    for p in &t.parameters {
        super::strvals::apply(p.kind, &p.arg, &mut out, version)?;
    }
    Ok(out)
}

/// The values file a layer names (`entry`, relative to `base`), read as Helm reads it; None when
/// it does not exist and the tool skips a missing file; the tool's refusal when it does not.
fn layer_file(
    t: &Target,
    entry: &Node,
    path: &str,
    base: &Path,
    skip_missing: bool,
    version: Version,
) -> Result<Option<Node>, Refusal> {
    let p = crate::paths::lexical(&base.join(path));
    let path = entry.as_str().unwrap_or(path);
    let text = match std::fs::read_to_string(&p) {
        Ok(t) => t,
        Err(_) if skip_missing && !p.exists() => return Ok(None),
        Err(e) if p.exists() => {
            return Err(Refusal {
                src: entry.src.clone(),
                offset: entry.span.start,
                message: format!("{}: {e} (a values file of the {})", p.display(), t.label()),
            });
        }
        Err(_) => {
            let base = if base.as_os_str().is_empty() {
                Path::new(".")
            } else {
                base
            };
            let message = match t.form {
                Form::Kustomize => format!(
                    "values file `{path}` does not exist in \"{}\" (kustomize stops here: the chart is not inflated)",
                    base.display()
                ),
                Form::Application | Form::ApplicationSet => format!(
                    "value file `{path}` does not exist in \"{}\" (Argo CD fails to generate the manifests; `ignoreMissingValueFiles: true` skips it)",
                    base.display()
                ),
                _ => format!(
                    "values file matching \"{path}\" does not exist in \"{}\" (helmfile stops here: the release `{}` is not installed)",
                    base.display(),
                    t.name
                ),
            };
            return Err(Refusal {
                src: entry.src.clone(),
                offset: entry.span.start,
                message,
            });
        }
    };
    read_file(&Source::new(p.to_string_lossy(), text), version).map(Some)
}

/// The folder of an Argo CD source's `path` in the checked repository: under the first folder
/// above the Application's file that holds it, else under the working directory; None when
/// neither does (the repository is not here).
pub fn source_folder(file: &str, folder: &str) -> Option<std::path::PathBuf> {
    if file == "-" || file.starts_with('<') || Path::new(folder).is_absolute() {
        return None;
    }
    // The file's folders as written first (findings then name files as the inputs do), then
    // above them.
    let parent = Path::new(file).parent()?;
    for dir in parent.ancestors() {
        let candidate = dir.join(folder);
        if candidate.is_dir() {
            return Some(candidate);
        }
    }
    for dir in parent.canonicalize().ok()?.ancestors() {
        let candidate = dir.join(folder);
        if candidate.is_dir() {
            return Some(candidate);
        }
    }
    let cwd = std::env::current_dir().ok()?.join(folder);
    cwd.is_dir().then_some(cwd)
}

/// Every node a parameter set moved to the parameter's `value` in the file, so that the rules
/// quote and point at what is written there: a string as the quoted string it is for Helm, a
/// number, boolean or null in the file's text.
pub fn at_parameters(node: &mut Node, params: &[Param], src: &Arc<Source>) {
    if let Some(p) = params.iter().find(|p| node.src.name == p.source_name()) {
        node.src = src.clone();
        node.span = p.value.span.clone();
        node.style = match node.value {
            Value::Scalar(Scalar::Str(_)) => crate::yaml::Style::DoubleQuoted,
            _ => crate::yaml::Style::Plain,
        };
    }
    match &mut node.value {
        Value::Map(entries) => {
            for e in entries {
                at_parameters(&mut e.value, params, src);
            }
        }
        Value::Seq(items) => {
            for i in items {
                at_parameters(i, params, src);
            }
        }
        Value::Scalar(_) => {}
    }
}

/// What a GitOps file stands for in a values stack (`check --stack`, `values --stack`): the
/// values its first release of the chart passes (an umbrella's values are the parent's, read as
/// a values file; None then, and for any other file). A file that does not name the chart is not
/// parsed here.
pub fn stack_layer(src: &Arc<Source>, version: Version) -> Option<Result<Node, Refusal>> {
    if src.invalid.is_some() || !src.text.contains(CHART) {
        return None;
    }
    let parsed = yaml::parse(src);
    for root in parsed.documents.iter().filter_map(|d| d.root.as_ref()) {
        let Some(t) = targets(root, None)
            .into_iter()
            .find(|t| t.release && t.form != Form::Umbrella)
        else {
            continue;
        };
        return Some(
            release_values(&t, &parsed, None, &src.name, None, version).map(|mut tree| {
                at_parameters(&mut tree, &t.parameters, src);
                if t.form == Form::ApplicationSet {
                    strip_templated(&mut tree, "", &mut Vec::new());
                }
                tree
            }),
        );
    }
    None
}

/// The `value` nodes of the parameters (`set:` entries) of the release [`stack_layer`] reads
/// in `src`, with how findings name each: findings there carry no edit.
pub fn stack_parameters(src: &Arc<Source>) -> Vec<Param> {
    if src.invalid.is_some() || !src.text.contains(CHART) {
        return Vec::new();
    }
    let parsed = yaml::parse(src);
    parsed
        .documents
        .iter()
        .filter_map(|d| d.root.as_ref())
        .find_map(|root| {
            targets(root, None)
                .into_iter()
                .find(|t| t.release && t.form != Form::Umbrella)
        })
        .map(|t| t.parameters)
        .unwrap_or_default()
}

/// A string holding a values file, read as Helm reads the file.
fn string_file(node: &Node, version: Version) -> Result<Node, Refusal> {
    if let Ok(src) = yaml::embedded::literal_source(node) {
        return read_file(&src, version);
    }
    let text = node.as_str().unwrap_or_default().to_string();
    read_file(&Source::new(node.src.name.clone(), text), version)
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
    fn text(&self) -> String {
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
fn values_data<'a>(
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

/// What each subchart instance of an umbrella receives, in Helm's order
/// (`ProcessDependenciesWithMerge`, then `ToRenderValues`):
///
/// 1. `processDependencyEnabled`: the parent's values over its values.yaml; a subchart key that
///    is not a mapping is refused ("type mismatch on KEY").
/// 2. `processImportValues` (merge): the parent chart's own values become its values.yaml with
///    each subchart's defaults under its key, the parent defaults' `global` merged into it.
/// 3. `CoalesceValues`: the user's values over those (under a subchart's key nulls are kept:
///    `childChartMergeTrue`), then for each subchart its key's values, the parent's `global`
///    over its own, and the subchart's defaults under them (nulls delete).
fn umbrella(
    layers: &Layers,
    targets: &[Target],
    parent_defaults: Option<std::path::PathBuf>,
    chart: &Node,
    version: Version,
) -> Result<Vec<Release>, Refusal> {
    let user = user_values(layers, version)?;
    let mut defaults = empty_map(&user.src);
    if let Some(p) = parent_defaults
        && let Ok(text) = std::fs::read_to_string(&p)
    {
        defaults = read_file(&Source::new(p.to_string_lossy(), text), version)?;
    }
    let keys: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
    // 1.
    let mut enabled_view = user.clone();
    coalesce_values(&mut enabled_view, &defaults, false, &keys);
    for key in &keys {
        if let Some(n) = enabled_view.get(key)
            && !matches!(n.value, Value::Map(_))
        {
            return Err(Refusal {
                src: n.src.clone(),
                offset: n.span.start,
                message: format!(
                    "type mismatch on {key}: the subchart's values are a {}, not a mapping (Helm refuses the chart)",
                    n.type_name()
                ),
            });
        }
    }
    // 2.
    let mut hoisted = defaults.clone();
    for key in &keys {
        let mut dv = match hoisted.get(key) {
            Some(n) if matches!(n.value, Value::Map(_)) => n.clone(),
            Some(_) => continue,
            None => empty_map(&hoisted.src),
        };
        globals(&mut dv, &hoisted);
        coalesce_values(&mut dv, chart, true, &[]);
        set_entry(&mut hoisted, key, dv);
    }
    // 3.
    let mut top = user;
    coalesce_values(&mut top, &hoisted, false, &keys);
    let mut subs: Vec<(String, Node)> = Vec::new();
    for key in &keys {
        let mut sub = match top.get(key) {
            Some(n) if matches!(n.value, Value::Map(_)) => n.clone(),
            _ => empty_map(&top.src),
        };
        globals(&mut sub, &top);
        coalesce_values(&mut sub, chart, false, &[]);
        subs.push((key.clone(), sub));
    }
    // Conditions and tags read the coalesced values.
    let mut coalesced = top.clone();
    for (key, sub) in &subs {
        set_entry(&mut coalesced, key, sub.clone());
    }
    Ok(targets
        .iter()
        .zip(subs)
        .map(|(t, (name, sub))| Release {
            name,
            values: match disabled(t, &coalesced) {
                Some(why) => Err(why),
                None => Ok(sub),
            },
        })
        .collect())
}

fn set_entry(map: &mut Node, key: &str, value: Node) {
    let Value::Map(entries) = &mut map.value else {
        return;
    };
    match entries.iter_mut().find(|e| e.key == key) {
        Some(e) => e.value = value,
        None => entries.push(crate::yaml::Entry {
            key: key.to_string(),
            key_span: 0..0,
            key_style: crate::yaml::Style::Plain,
            value,
            merged: false,
            key_kind: crate::yaml::KeyKind::Str,
        }),
    }
}

fn is_null(n: &Node) -> bool {
    matches!(n.value, Value::Scalar(Scalar::Null))
}

/// Helm's `coalesceValues(chart, v, merge)` with `coalesceTablesFullKey` below it: the chart's
/// entries under `v`'s; a null in `v` deletes the chart's key unless `merge` (or the key is one
/// of `children`, a subchart's: `childChartMergeTrue`); a table and a non-table never mix (`v`
/// keeps its value).
fn coalesce_values(v: &mut Node, chart: &Node, merge: bool, children: &[String]) {
    coalesce_values_with(v, chart, merge, children, super::keys::LINEAR_LOOKUPS)
}

/// [`coalesce_values`], with a hash index where more than `linear` keys are looked up.
fn coalesce_values_with(
    v: &mut Node,
    chart: &Node,
    merge: bool,
    children: &[String],
    linear: usize,
) {
    let (Value::Map(d), Value::Map(c)) = (&mut v.value, &chart.value) else {
        return;
    };
    let mut finder = super::keys::Finder::new(d, c.len(), linear);
    for ce in c {
        match finder.find(d, &ce.key) {
            None => finder.push(d, ce.clone()),
            Some(i) if is_null(&d[i].value) && !merge => finder.remove(d, i),
            Some(i) => {
                if matches!(d[i].value.value, Value::Map(_))
                    && matches!(ce.value.value, Value::Map(_))
                {
                    let merge = merge || children.contains(&ce.key);
                    coalesce_values_with(&mut d[i].value, &ce.value, merge, &[], linear);
                }
            }
        }
    }
    finder.finish(d);
}

/// Helm's `coalesceGlobals(dest = the subchart's values, src = the parent's)`: the parent's
/// `global` over the subchart's own `global` key; tables merge (the parent's entries win), a
/// parent table never replaces a non-table, a non-table `global` on either side is skipped.
fn globals(sub: &mut Node, parent: &Node) {
    globals_with(sub, parent, super::keys::LINEAR_LOOKUPS)
}

/// [`globals`], with a hash index where more than `linear` keys are looked up.
fn globals_with(sub: &mut Node, parent: &Node, linear: usize) {
    let Some(src) = parent.get("global") else {
        return;
    };
    let Value::Map(src_entries) = &src.value else {
        return;
    };
    let Value::Map(entries) = &mut sub.value else {
        return;
    };
    let i = match entries.iter().position(|e| e.key == "global") {
        Some(i) => i,
        None => {
            entries.push(crate::yaml::Entry {
                key: "global".into(),
                key_span: 0..0,
                key_style: crate::yaml::Style::Plain,
                value: empty_map(&src.src),
                merged: false,
                key_kind: crate::yaml::KeyKind::Str,
            });
            entries.len() - 1
        }
    };
    let dest = &mut entries[i].value;
    let Value::Map(dg) = &mut dest.value else {
        return;
    };
    let mut finder = super::keys::Finder::new(dg, src_entries.len(), linear);
    for se in src_entries {
        let pos = finder.find(dg, &se.key);
        if matches!(se.value.value, Value::Map(_)) {
            match pos {
                None => finder.push(dg, se.clone()),
                Some(p) if matches!(dg[p].value.value, Value::Map(_)) => {
                    // coalesceTablesFullKey(vv = parent's copy, destvmap), merge = true: the
                    // parent's entries over the subchart's.
                    let mut vv = se.clone();
                    coalesce_values_with(&mut vv.value, &dg[p].value, true, &[], linear);
                    dg[p] = vv;
                }
                Some(_) => {}
            }
        } else if let Some(p) = pos {
            if !matches!(dg[p].value.value, Value::Map(_)) {
                dg[p] = se.clone();
            }
        } else {
            finder.push(dg, se.clone());
        }
    }
    finder.finish(dg);
}

/// The values templates see, as `version` computes them, or the first refusal.
pub fn effective(layers: &Layers, version: Version) -> Result<Node, Refusal> {
    let user = user_values(layers, version)?;
    let chart = read_file(&super::chart_source(layers), version)?;
    let mut out = user;
    coalesce(&mut out, &chart);
    Ok(out)
}

/// The user-supplied values alone (`-f` files and set flags, before the chart's defaults); a
/// GitOps file among them is what its release passes ([`stack_layer`]).
pub fn user_values(layers: &Layers, version: Version) -> Result<Node, Refusal> {
    let base_src = Source::new("<values>", String::new());
    let mut base = empty_map(&base_src);
    for f in &layers.files {
        let doc = match stack_layer(f, version) {
            Some(release) => release?,
            None => read_file(f, version)?,
        };
        merge_maps(&mut base, doc);
    }
    for kind in [SetKind::Json, SetKind::Set, SetKind::String] {
        for (k, arg) in layers.sets.iter().filter(|(k, _)| *k == kind) {
            super::strvals::apply(*k, arg, &mut base, version)?;
        }
    }
    Ok(base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::helm::tests::{node_of, root_tree};

    /// `coalesce_values` as it was before the key index (issue 38): the oracle.
    fn reference(v: &mut Node, chart: &Node, merge: bool, children: &[String]) {
        let (Value::Map(d), Value::Map(c)) = (&mut v.value, &chart.value) else {
            return;
        };
        for ce in c {
            match d.iter().position(|x| x.key == ce.key) {
                None => d.push(ce.clone()),
                Some(i) if is_null(&d[i].value) && !merge => {
                    d.remove(i);
                }
                Some(i) => {
                    if matches!(d[i].value.value, Value::Map(_))
                        && matches!(ce.value.value, Value::Map(_))
                    {
                        let merge = merge || children.contains(&ce.key);
                        reference(&mut d[i].value, &ce.value, merge, &[]);
                    }
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        /// The umbrella's coalescing with its key index equals the linear search it replaced.
        #[test]
        fn coalesce_values_agrees_with_the_linear_search(
            u in root_tree(),
            c in root_tree(),
            merge: bool,
        ) {
            let src = Source::new("t", String::new());
            let children = vec!["a".to_string(), "c".to_string()];
            let mut old = node_of(&u, &src);
            reference(&mut old, &node_of(&c, &src), merge, &children);
            for linear in [0, super::super::keys::LINEAR_LOOKUPS] {
                let mut new = node_of(&u, &src);
                coalesce_values_with(&mut new, &node_of(&c, &src), merge, &children, linear);
                proptest::prop_assert_eq!(format!("{new:?}"), format!("{old:?}"));
            }
        }
    }
}
