use std::path::Path;
use std::sync::Arc;

use super::appset::{Expansion, Rendered, expand};
use super::target::{
    Dependency, Form, Layer, Param, Target, Values, ValuesRef, helm_order, str_at,
};
use crate::cgpu::CHART;
use crate::helm::SetKind;
use crate::yaml::node::child;
use crate::yaml::{self, Node, Scalar, Source, Style, Value};

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
    let text = crate::spill::read_text_at_most(
        &dir.join("Chart.yaml"),
        crate::check::DEFAULT_MAX_FILE_SIZE,
        "--max-file-size's default",
    )
    .ok()?;
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
pub(super) fn chart_name(reference: &str) -> &str {
    reference
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("")
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
            Some(spec) => application(spec, "/spec", &name, Template::Application),
            None => Vec::new(),
        };
    }
    if api.starts_with("argoproj.io/") && kind == "ApplicationSet" {
        return match root.pointer("/spec/template/spec") {
            Some(spec) => application_set(root, spec, &name),
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

/// What an Application's `spec` is read from.
#[derive(Clone, Copy)]
enum Template<'a> {
    /// An Application.
    Application,
    /// An ApplicationSet's template as written: its fields holding `{{…}}` (filled in by its
    /// generators) are left out and named, with why the generators are not rendered here.
    AsWritten(&'a str),
    /// The Application an element of an ApplicationSet's list generator renders.
    Element(&'a Rendered),
}

/// The releases of the chart in an ApplicationSet: each Application its list generators'
/// elements render (after the template as written, which `set` edits), or the template as
/// written when its generators are not rendered here, or the template with why Argo CD makes
/// no Application of it.
fn application_set(root: &Node, template: &Node, name: &str) -> Vec<Target> {
    const BASE: &str = "/spec/template/spec";
    match expand(root) {
        Expansion::AsWritten(why) => application(template, BASE, name, Template::AsWritten(&why)),
        Expansion::Fails(fails) => {
            let mut out = application(template, BASE, name, Template::AsWritten(""));
            for t in &mut out {
                t.fails = fails.clone();
            }
            out
        }
        Expansion::Rendered(elements) => {
            let mut out = application(template, BASE, name, Template::AsWritten(""));
            for t in &mut out {
                t.expanded = true;
            }
            for e in &elements {
                out.extend(application(&e.spec, BASE, name, Template::Element(e)));
            }
            out
        }
    }
}

/// The releases of the chart in an Application's `spec` (at `base`), or in an ApplicationSet's
/// template, as written or rendered by an element (`template`).
fn application(spec: &Node, base: &str, name: &str, template: Template) -> Vec<Target> {
    let form = match template {
        Template::Application => Form::Application,
        _ => Form::ApplicationSet,
    };
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
            (_, Some(v)) => {
                let filled = match template {
                    Template::Element(e) => {
                        e.values_at(&format!("{}/helm/values", &at[base.len()..]))
                    }
                    _ => None,
                };
                (
                    format!("{at}/helm/values"),
                    filled.unwrap_or_else(|| string_values(v)),
                )
            }
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
        match template {
            Template::Application => {}
            Template::AsWritten(why) => untemplated(&mut t, why),
            Template::Element(e) => {
                t.element = Some(e.element.clone());
                // fasttemplate leaves a tag it has no param for as written, and Argo CD hands
                // that text on: it is checked as the chart gets it. A Go template this module
                // does not render is left out and named.
                if e.element.go {
                    untemplated(
                        &mut t,
                        "a Go template is rendered here only in its plain `{{.key}}` form",
                    );
                }
            }
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
/// `{{…}}` (in the values, in a parameter) is named once as not checked, with why (`why`, when
/// there is something to say).
fn untemplated(t: &mut Target, why: &str) {
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
    let why = if why.is_empty() {
        String::new()
    } else {
        format!(" ({why})")
    };
    for (node, what) in notes {
        t.unread.push((
            node,
            format!("{what} holds `{{{{…}}}}`, which the ApplicationSet's generators fill in: not checked{why}"),
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
            // A one-line quoted string (kubectl prints a values string with trailing spaces
            // so): Argo CD reads it like any other.
            Err(why) => match yaml::embedded::quoted_source(node) {
                Ok(q) => Values::Quoted(node.clone(), Arc::new(q)),
                Err(quoted) if matches!(node.style, Style::DoubleQuoted | Style::SingleQuoted) => {
                    Values::Unmapped(node.clone(), quoted)
                }
                Err(_) => Values::Unmapped(node.clone(), why),
            },
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
