//! `cgpu-lint values`: the values a chart's templates get, as JSON.

use std::sync::Arc;

use super::{AppError, Exit, Streams};
use crate::check::read_input;
use crate::cli::ValuesArgs;
use crate::helm::{self, Layers, SetKind, Version, json};
use crate::yaml::{Node, Source, Value};

pub(crate) fn run(s: &mut Streams, args: &ValuesArgs) -> Result<Exit, AppError> {
    let chart = match &args.chart_values {
        Some(p) => Some(read_input(p, args.max_file_size)?),
        None => None,
    };
    let mut files = Vec::new();
    for f in &args.files {
        files.push(read_input(f, args.max_file_size)?);
    }
    let mut sets = Vec::new();
    for (kind, list) in [
        (SetKind::Set, &args.set),
        (SetKind::String, &args.set_string),
        (SetKind::Json, &args.set_json),
    ] {
        sets.extend(list.iter().map(|a| (kind, a.clone())));
    }
    // Flux's valuesFrom objects may be in any of the files.
    let others = (files.len() > 1).then(|| helm::place::Others::of(&files));
    let stacks: Vec<Vec<Arc<Source>>> = if args.stack || files.len() <= 1 {
        vec![files]
    } else {
        files.into_iter().map(|f| vec![f]).collect()
    };
    let versions: Vec<Version> = match super::settings::helm_or(&args.config, args.helm)? {
        Some(h) => vec![h],
        None => Version::BOTH.to_vec(),
    };
    for stack in stacks {
        // One plain values file: its JSON written as it is read, without its tree (a large values file fits in little memory).
        if let [only] = stack.as_slice()
            && sets.is_empty()
            && !args.origins
            && others.is_none()
            && let Some(v) = helm::stream::values(
                &helm::chart_source(&Layers {
                    chart: chart.clone(),
                    ..Layers::default()
                }),
                only,
                &versions,
            )
        {
            let v = v.map_err(|r| refusal(&versions, versions[0], r))?;
            use std::io::Write as _;
            let mut out = std::io::BufWriter::with_capacity(1 << 16, &mut *s.out);
            v.write(&mut out)?;
            out.write_all(b"\n")?;
            out.flush()?;
            continue;
        }
        // A file of Kubernetes objects is not a values file: refused, naming what it holds,
        // rather than printed as the chart's defaults beside its keys. Flux's valuesFrom objects
        // of another input are read by that input: nothing to print for them.
        if let [only] = stack.as_slice()
            && let Some(what) = kubernetes_objects(only)
        {
            let referenced = others.as_ref().is_some_and(|o| {
                let refs = o.values_from();
                objects_of(only)
                    .iter()
                    .all(|root| refs.iter().any(|(_, r)| helm::place::names(root, r)))
            });
            if referenced {
                continue;
            }
            return Err(AppError::Usage(format!(
                "{}: {what}: not a values file, and no release of the chart {} (a Flux HelmRelease, an Argo CD Application or ApplicationSet, a kustomization's helmCharts, a helmfile release); nothing to print",
                only.name,
                crate::cgpu::CHART
            )));
        }
        if stack.len() > 1
            && let Some((src, what)) = stack
                .iter()
                .find_map(|s| kubernetes_objects(s).map(|w| (s, w)))
        {
            return Err(AppError::Usage(format!(
                "{}: {what}: not a values file of the stack",
                src.name
            )));
        }
        let layers = Layers {
            chart: chart.clone(),
            files: stack,
            sets: sets.clone(),
        };
        let mut printed: Option<(Version, String)> = None;
        for &v in &versions {
            // Helm 4 refuses a UTF-16LE values file, which Helm 3 decodes.
            if v == Version::Four
                && let Some(f) = layers
                    .files
                    .iter()
                    .find(|f| f.encoding == crate::yaml::source::Encoding::Utf16Le)
            {
                let r = helm::Refusal {
                    src: f.clone(),
                    offset: 0,
                    message: "Helm 4 refuses a UTF-16LE values file (\"incomplete UTF-16 character\"); save it as UTF-8".into(),
                };
                return Err(refusal(&versions, v, r));
            }
            if let Some(releases) = helm::place::releases_among(&layers, others.as_ref(), v) {
                let releases = releases.map_err(|r| refusal(&versions, v, r))?;
                // An ApplicationSet's generators fill some keys in: named, since the values
                // printed show the chart's defaults there, not what each Application gets.
                if printed.is_none() {
                    for r in releases.iter().filter(|r| !r.templated.is_empty()) {
                        writeln!(
                            s.err,
                            "cgpu-lint: warning: {}: release `{}`: {} {} filled in by the ApplicationSet's generators: left out of the values printed (the chart's defaults show there)",
                            crate::output::escape_controls(&layers.files[0].name),
                            crate::output::escape_controls(&r.name),
                            r.templated.join(", "),
                            if r.templated.len() == 1 { "is" } else { "are" },
                        )?;
                    }
                }
                let text = releases_text(&releases, args.origins);
                compare(&mut printed, v, text)?;
                continue;
            }
            let tree = helm::place::effective(&layers, v).map_err(|r| refusal(&versions, v, r))?;
            compare(&mut printed, v, values_text(&tree, args.origins))?;
        }
        if let Some((_, text)) = printed {
            writeln!(s.out, "{text}")?;
        }
    }
    Ok(Exit::Clean)
}

/// The roots of a file's documents.
fn objects_of(src: &Arc<Source>) -> Vec<Node> {
    crate::yaml::parse(src)
        .documents
        .into_iter()
        .filter_map(|d| d.root)
        .collect()
}

/// What a file holds when it is Kubernetes objects (every document has an `apiVersion` and a
/// `kind`, none a `cgpu` key) that are not releases of the chart: `a ConfigMap `x``, … ; None
/// for a values file and for the forms [`helm::place`] reads.
fn kubernetes_objects(src: &Arc<Source>) -> Option<String> {
    if src.invalid.is_some() {
        return None;
    }
    let roots = objects_of(src);
    if roots.is_empty() {
        return None;
    }
    let mut names = Vec::new();
    for root in &roots {
        if root.entry("cgpu").is_some() || !helm::place::targets(root, None).is_empty() {
            return None;
        }
        let what = if let Some((what, charts)) = helm::place::other_charts(root) {
            let charts: Vec<String> = charts.iter().map(|c| format!("`{c}`")).collect();
            format!("{what} (of {})", charts.join(", "))
        } else {
            let kind = root.get("kind").and_then(Node::as_str)?;
            root.get("apiVersion").and_then(Node::as_str)?;
            match root.pointer("/metadata/name").and_then(Node::as_str) {
                Some(n) => format!("a {kind} `{n}`"),
                None => format!("a {kind}"),
            }
        };
        if names.len() < 3 {
            names.push(what);
        }
    }
    if roots.len() > 3 {
        names.push("…".into());
    }
    Some(names.join(", "))
}

fn origins_of(node: &Node, pointer: &str, out: &mut String, first: &mut bool) {
    match &node.value {
        Value::Map(entries) if !entries.is_empty() => {
            let mut sorted: Vec<_> = entries.iter().collect();
            sorted.sort_by(|a, b| a.key.cmp(&b.key));
            for e in sorted {
                let p = format!("{pointer}/{}", crate::yaml::node::escape_pointer(&e.key));
                origins_of(&e.value, &p, out, first);
            }
        }
        _ => {
            if !*first {
                out.push(',');
            }
            *first = false;
            json::string(pointer, out);
            out.push(':');
            let line = node.src.line_col(node.span.start).line;
            json::string(&format!("{}:{line}", node.src.name), out);
        }
    }
}

/// The values as JSON; with `origins`, `{"origins":{pointer: "file:line"},"values":…}`.
fn values_text(tree: &Node, origins: bool) -> String {
    if !origins {
        return json::to_string(tree);
    }
    let mut o = String::from("{");
    let mut first = true;
    if let Some(cgpu) = tree.get("cgpu") {
        origins_of(cgpu, "/cgpu", &mut o, &mut first);
    }
    o.push('}');
    format!("{{\"origins\":{o},\"values\":{}}}", json::to_string(tree))
}

fn refusal(versions: &[Version], v: Version, r: helm::Refusal) -> AppError {
    AppError::Usage(if versions.len() > 1 {
        format!("{r} ({} reading)", v.name())
    } else {
        r.to_string()
    })
}

/// Keep the first version's text; another version that reads the values differently is an
/// error naming both.
fn compare(
    printed: &mut Option<(Version, String)>,
    v: Version,
    text: String,
) -> Result<(), AppError> {
    match printed {
        None => *printed = Some((v, text)),
        Some((pv, ptext)) if *ptext != text => {
            return Err(AppError::Usage(format!(
                "{} and {} read these values differently:\n  {}: {ptext}\n  {}: {text}\nchoose one with --helm 3 or --helm 4",
                pv.name(),
                v.name(),
                pv.name(),
                v.name()
            )));
        }
        Some(_) => {}
    }
    Ok(())
}

/// What the releases of the chart in a file receive: one release alone prints as a values file
/// does; several print one line each, `{"name":…,"values":…}` (or `"disabled":` and why; an
/// ApplicationSet's Application with its list generator `"element":` too).
fn releases_text(releases: &[helm::place::Release], origins: bool) -> String {
    let tree = |n: &Node| values_text(n, origins);
    if let [only] = releases
        && let Ok(n) = &only.values
    {
        return tree(n);
    }
    let mut lines = Vec::new();
    for r in releases {
        let mut line = String::from("{\"name\":");
        json::string(&r.name, &mut line);
        if let Some(e) = r.element {
            line.push_str(&format!(",\"element\":{e}"));
        }
        match &r.values {
            Ok(n) => {
                line.push_str(",\"values\":");
                line.push_str(&tree(n));
            }
            Err(why) => {
                line.push_str(",\"disabled\":");
                json::string(why, &mut line);
            }
        }
        line.push('}');
        lines.push(line);
    }
    lines.join("\n")
}
