//! `check --stack`: the rules over the values Helm computes from a stack of files, read the way
//! the chosen Helm reads them (or both Helms, when none is chosen).

use std::collections::HashSet;

use super::{Layers, Version};
use crate::check::{Filter, Report, read_input};
use crate::diag::Diagnostic;
use crate::rules::{Ctx, RuleOptions, values};
use crate::yaml;

/// Check files as one Helm values stack over the chart defaults (or `chart_values`).
pub fn check_stack(
    paths: &[String],
    chart_values: Option<&str>,
    opts: &RuleOptions,
    filter: &Filter,
    max_size: u64,
    version: Option<Version>,
) -> Report {
    let mut report = Report::default();
    let chart = match chart_values {
        Some(p) => match read_input(p, max_size) {
            Ok(s) => Some(s),
            Err(e) => {
                report.errors.push(e);
                return report;
            }
        },
        None => None,
    };
    let mut files = Vec::new();
    for p in paths {
        match read_input(p, max_size) {
            Ok(s) => files.push(s),
            Err(e) => report.errors.push(e),
        }
    }
    report.files = paths.len();
    let layers = Layers {
        chart,
        files,
        sets: Vec::new(),
    };
    let empty = Default::default();
    let mut found: Vec<Diagnostic> = Vec::new();
    // Duplicate keys, per file, as a plain check reports them.
    for src in layers.files.iter().chain(layers.chart.iter()) {
        if src.invalid.is_some() {
            continue;
        }
        for doc in yaml::parse(src).documents {
            let mut ctx = Ctx::new(opts, doc.index, &empty);
            crate::check::duplicates(&mut ctx, src, &doc);
            found.extend(ctx.out);
        }
    }
    let versions = match version {
        Some(v) => vec![v],
        None => Version::BOTH.to_vec(),
    };
    let mut views = Vec::new();
    for &v in &versions {
        let mut ctx = Ctx::new(opts, 1, &empty);
        match super::effective(&layers, v) {
            Err(r) => {
                let mut message = r.message.clone();
                if versions.len() == 1 {
                    message.push_str(&format!(" ({} refuses these values)", v.name()));
                }
                ctx.report("yaml-syntax", &r.src, r.offset..r.offset, "", message);
            }
            Ok(tree) => {
                if tree.entry("cgpu").is_some() {
                    values::check(&mut ctx, &tree);
                } else if let Some(last) = layers.files.last() {
                    values::missing(&mut ctx, last, 0..0);
                }
                views.push((v, super::json::to_string(&tree)));
            }
        }
        found.extend(ctx.out);
    }
    if let [(v3, a), (v4, b)] = views.as_slice()
        && a != b
    {
        found.extend(versions_differ(opts, &layers, *v3, *v4));
    }
    // The same finding from both readings once.
    let mut seen = HashSet::new();
    found.retain(|d| {
        seen.insert((
            d.rule,
            d.src.name.clone(),
            d.span.clone(),
            d.message.clone(),
        ))
    });
    report.diagnostics = found;
    for src in layers.files.iter().chain(layers.chart.iter()) {
        report.diagnostics = crate::suppress::apply(src, std::mem::take(&mut report.diagnostics));
    }
    report.diagnostics.retain(|d| filter.allows(d.rule));
    report
}

/// `helm-versions-differ`: at the second document of each multi-document values file.
fn versions_differ(opts: &RuleOptions, layers: &Layers, a: Version, b: Version) -> Vec<Diagnostic> {
    let empty = Default::default();
    let mut ctx = Ctx::new(opts, 1, &empty);
    for src in &layers.files {
        let parsed = yaml::parse(src);
        if let Some(second) = parsed.documents.iter().skip(1).find(|d| d.root.is_some()) {
            let at = second.root.as_ref().map_or(0, |r| r.span.start);
            let d = ctx.report(
                "helm-versions-differ",
                src,
                at..at,
                "",
                format!(
                    "this values file has {} documents: {} reads only the first, {} merges them all, so the two install different values",
                    parsed.documents.len(),
                    a.name(),
                    b.name()
                ),
            );
            d.document = second.index;
        }
    }
    ctx.out
}

/// `helm-versions-differ` for one values file checked on its own, when Helm 3 and Helm 4 read it
/// differently.
pub fn versions_differ_in(
    opts: &RuleOptions,
    src: &std::sync::Arc<crate::yaml::Source>,
) -> Vec<Diagnostic> {
    let read = |v| {
        super::read_file(src, v)
            .map(|n| super::json::to_string(&n))
            .ok()
    };
    match (read(Version::Three), read(Version::Four)) {
        (Some(a), Some(b)) if a != b => {
            let layers = Layers {
                chart: None,
                files: vec![src.clone()],
                sets: Vec::new(),
            };
            versions_differ(opts, &layers, Version::Three, Version::Four)
        }
        _ => Vec::new(),
    }
}
