use std::path::Path;
use std::sync::Arc;

use super::find::{disabled, parent_chart, strip_templated, targets};
use super::others::{Data, Others, values_data};
use super::target::{Form, Layer, Param, Target, Values};
use crate::cgpu::CHART;
use crate::helm::{
    Layers, Refusal, SetKind, Version, coalesce, empty_map, merge_maps, read_file, view,
};
use crate::yaml::{self, Node, Parsed, Scalar, Source, Value};

/// What one release (or subchart instance) of the chart receives.
#[derive(Debug)]
pub struct Release {
    pub name: String,
    /// The ApplicationSet list generator element it is rendered from (1-based).
    pub element: Option<usize>,
    /// The values its templates get, or why it is not rendered.
    pub values: Result<Node, String>,
    /// An ApplicationSet's keys that its generators fill in (`cgpu.policy`): left out of
    /// `values`, where the chart's defaults show instead.
    pub templated: Vec<String>,
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
    let chart = match read_file(&crate::helm::chart_source(layers), version) {
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
        // An ApplicationSet's template whose elements follow: they are the releases.
        for t in ts.iter().filter(|t| t.release && !t.expanded) {
            if let Some((node, why)) = t.fails.first() {
                return Some(Err(Refusal {
                    src: node.src.clone(),
                    offset: node.span.start,
                    message: format!("{}: {why}", t.label()),
                }));
            }
            let read = &mut Vec::new();
            match release_values(t, &parsed, others, &first.name, Some(&chart), version, read) {
                Ok(mut user) => {
                    // What the generators fill in (a parameter's `{{.policy}}` too) is no
                    // value: left out, as check leaves it, and named.
                    if t.form == Form::ApplicationSet {
                        at_parameters(&mut user, &t.parameters);
                    }
                    if t.strips_templates() {
                        strip_templated(&mut user, "", &mut Vec::new());
                    }
                    coalesce(&mut user, &chart);
                    let templated = if t.strips_templates() {
                        t.unread
                            .iter()
                            .filter(|(_, why)| why.contains("generators fill in"))
                            .filter_map(|(_, why)| why.split('`').nth(1).map(str::to_string))
                            .collect()
                    } else {
                        Vec::new()
                    };
                    out.push(Release {
                        name: release_name(t),
                        element: t.element.as_ref().map(|e| e.index),
                        values: Ok(user),
                        templated,
                    });
                }
                Err(r) => return Some(Err(r)),
            }
        }
    }
    Some(Ok(out))
}

/// A release's name: an ApplicationSet element's is the Application's it renders (else the
/// ApplicationSet's with the element's number), a source's path kept after it.
fn release_name(t: &Target) -> String {
    let Some(e) = &t.element else {
        return t.name.clone();
    };
    let (own, source) = t.name.split_at(t.name.find(" (").unwrap_or(t.name.len()));
    match &e.application {
        Some(a) => format!("{a}{source}"),
        None => format!("{own} (element {}){source}", e.index),
    }
}

fn same_file(p: &Path, name: &str) -> bool {
    match (p.canonicalize(), Path::new(name).canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The values of a HelmRelease, an Application or a helmfile release, before the chart's
/// defaults, or the first thing the tool or Helm refuses. Each values file the release names
/// that is read is added to `read` (as findings name it), so that a run can count the files it
/// read without reading them again.
pub fn release_values(
    t: &Target,
    parsed: &Parsed,
    others: Option<&Others>,
    file: &str,
    chart: Option<&Node>,
    version: Version,
    read: &mut Vec<String>,
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
                if let Some(n) = layer_file(t, entry, path, base, *skip_missing, version, read)? {
                    merge_maps(&mut out, n);
                }
            }
            Layer::SourceFile(entry, folder, skip_missing, path) => {
                let Some(base) = source_folder(file, folder) else {
                    continue;
                };
                let path = path.as_deref().or(entry.as_str()).unwrap_or_default();
                if let Some(n) = layer_file(t, entry, path, &base, *skip_missing, version, read)? {
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
                crate::helm::strvals::apply(kind, &format!("{path}={text}"), &mut out, version)?;
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
        Values::Embedded(_, parsed) if t.strips_templates() => {
            if let Some(root) = parsed.documents.first().and_then(|d| d.root.as_ref())
                && matches!(root.value, Value::Map(_))
            {
                merge_maps(&mut out, view(root)?);
            }
        }
        Values::Embedded(src, _) | Values::Decoded(_, src) => {
            merge_maps(&mut out, read_file(src, version)?)
        }
        Values::Quoted(_, q) => merge_maps(&mut out, read_file(&q.src, version)?),
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
        crate::helm::strvals::apply(p.kind, &p.arg, &mut out, version)?;
    }
    Ok(out)
}

/// The values file a layer names (`entry`, relative to `base`), read as Helm reads it (its name
/// added to `read`); None when it does not exist and the tool skips a missing file; the tool's
/// refusal when it does not.
fn layer_file(
    t: &Target,
    entry: &Node,
    path: &str,
    base: &Path,
    skip_missing: bool,
    version: Version,
    read: &mut Vec<String>,
) -> Result<Option<Node>, Refusal> {
    let p = crate::paths::lexical(&base.join(path));
    let path = entry.as_str().unwrap_or(path);
    let text = match crate::spill::read_text_at_most(
        &p,
        crate::check::DEFAULT_MAX_FILE_SIZE,
        "--max-file-size's default",
    ) {
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
    let name = p.to_string_lossy().into_owned();
    if !read.contains(&name) {
        read.push(name.clone());
    }
    read_file(&Source::new(name, text), version).map(Some)
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

/// Every node a parameter set moved to the parameter's `value` (in the file, or the string an
/// ApplicationSet's element rendered there), so that the rules quote and point at what is
/// written there: a string as the quoted string it is for Helm, a number, boolean or null in
/// the file's text.
pub fn at_parameters(node: &mut Node, params: &[Param]) {
    if let Some(p) = params.iter().find(|p| node.src.name == p.source_name()) {
        node.src = p.value.src.clone();
        node.span = p.value.span.clone();
        node.style = match node.value {
            Value::Scalar(Scalar::Str(_)) => crate::yaml::Style::DoubleQuoted,
            _ => crate::yaml::Style::Plain,
        };
    }
    match &mut node.value {
        Value::Map(entries) => {
            for e in entries {
                at_parameters(&mut e.value, params);
            }
        }
        Value::Seq(items) => {
            for i in items {
                at_parameters(i, params);
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
            release_values(&t, &parsed, None, &src.name, None, version, &mut Vec::new()).map(
                |mut tree| {
                    at_parameters(&mut tree, &t.parameters);
                    if t.form == Form::ApplicationSet {
                        strip_templated(&mut tree, "", &mut Vec::new());
                    }
                    tree
                },
            ),
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
        && let Ok(text) = crate::spill::read_text_at_most(
            &p,
            crate::check::DEFAULT_MAX_FILE_SIZE,
            "--max-file-size's default",
        )
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
            element: None,
            values: match disabled(t, &coalesced) {
                Some(why) => Err(why),
                None => Ok(sub),
            },
            templated: Vec::new(),
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
    coalesce_values_with(v, chart, merge, children, crate::helm::keys::LINEAR_LOOKUPS)
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
    let mut finder = crate::helm::keys::Finder::new(d, c.len(), linear);
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
    globals_with(sub, parent, crate::helm::keys::LINEAR_LOOKUPS)
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
    let mut finder = crate::helm::keys::Finder::new(dg, src_entries.len(), linear);
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
    let chart = read_file(&crate::helm::chart_source(layers), version)?;
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
            crate::helm::strvals::apply(*k, arg, &mut base, version)?;
        }
    }
    Ok(base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::helm::tests::{node_of, root_tree};

    /// `coalesce_values` as it was before the key index: the oracle.
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
            for linear in [0, crate::helm::keys::LINEAR_LOOKUPS] {
                let mut new = node_of(&u, &src);
                coalesce_values_with(&mut new, &node_of(&c, &src), merge, &children, linear);
                proptest::prop_assert_eq!(format!("{new:?}"), format!("{old:?}"));
            }
        }
    }
}
