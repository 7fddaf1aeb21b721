//! `check --stack`: the rules over the values Helm computes from a stack of files, read the way
//! the chosen Helm reads them (or both Helms, when none is chosen).

use crate::catalogue::RuleId;
use std::collections::HashSet;

use crate::diag::Diagnostic;
use crate::helm::{self, Layers, Version};
use crate::rules::{Ctx, RuleOptions, values};
use crate::yaml;

/// The rules over the values `layers` make, read as `opts.helm` reads them (as both Helm 3 and
/// Helm 4 do when None): per file its duplicate keys, then Helm's refusal or the values rules on
/// the coalesced tree, and `helm-versions-differ` when the two Helms compute different values.
/// Unfiltered and unsuppressed (the lint pipeline does that).
pub fn rules(layers: &Layers, opts: &RuleOptions) -> Vec<Diagnostic> {
    let empty = Default::default();
    let mut found: Vec<Diagnostic> = Vec::new();
    for src in layers.files.iter().chain(layers.chart.iter()) {
        if src.invalid.is_some() {
            continue;
        }
        for doc in yaml::parse(src).documents {
            let mut ctx = Ctx::new(opts, doc.index, &empty);
            crate::rules::duplicates(&mut ctx, src, &doc);
            found.extend(ctx.out);
        }
    }
    let versions = match opts.helm {
        Some(v) => vec![v],
        None => Version::BOTH.to_vec(),
    };
    let mut views = Vec::new();
    for &v in &versions {
        let mut ctx = Ctx::new(opts, 1, &empty);
        match helm::place::effective(layers, v) {
            Err(r) => {
                let mut message = r.message.clone();
                if versions.len() == 1 {
                    message.push_str(&format!(" ({} refuses these values)", v.name()));
                }
                ctx.report(RuleId::YamlSyntax, &r.src, r.offset..r.offset, "", message);
            }
            Ok(tree) => {
                if tree.entry("cgpu").is_some() {
                    values::check(&mut ctx, &tree);
                } else if let Some(top) = layers.files.last() {
                    values::missing(
                        &mut ctx,
                        top,
                        0..0,
                        "no `cgpu` key in the stack: not ack-ai-installer values, skipped".into(),
                        None,
                    );
                }
                views.push((v, helm::json::to_string(&tree)));
            }
        }
        found.extend(ctx.out);
    }
    if let [(v3, a), (v4, b)] = views.as_slice()
        && a != b
    {
        found.extend(versions_differ(opts, layers, *v3, *v4));
    }
    // A value a parameter or a `set:` entry of a GitOps layer gives: its text is the tool's
    // string, which no edit here changes (as `check` on the file says).
    for src in &layers.files {
        let params = helm::place::stack_parameters(src);
        for d in found.iter_mut().filter(|d| d.src.name == src.name) {
            if let Some(p) = params.iter().find(|p| p.value.span == d.span) {
                d.edits.clear();
                d.consequence = None;
                d.fix_note = Some(format!(
                    "not fixed automatically: the value comes from the {} `{}`; edit it by hand",
                    p.what, p.name
                ));
            }
        }
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
    found
}

/// `helm-versions-differ`: at the second document of each multi-document values file.
fn versions_differ(opts: &RuleOptions, layers: &Layers, a: Version, b: Version) -> Vec<Diagnostic> {
    let empty = Default::default();
    let mut ctx = Ctx::new(opts, 1, &empty);
    for src in &layers.files {
        let parsed = yaml::parse(src);
        if let Some(second) = parsed.documents.iter().skip(1).find(|d| d.root.is_some()) {
            let at = second.root.as_ref().map_or(0, |r| r.span.start);
            ctx.report(
                RuleId::HelmVersionsDiffer,
                src,
                at..at,
                "",
                format!(
                    "this values file has {} documents: {} reads only the first, {} merges them all, so the two install different values",
                    parsed.documents.len(),
                    a.name(),
                    b.name()
                ),
            )
            .document(second.index);
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
    // Helm 3 decodes a UTF-16LE file (BOM FF FE) as go-yaml does; Helm 4 refuses every one
    // ("yaml: incomplete UTF-16 character"; measured with Helm 4 in tests/safe_output.rs).
    if src.encoding == crate::yaml::source::Encoding::Utf16Le {
        let empty = Default::default();
        let mut ctx = Ctx::new(opts, 1, &empty);
        ctx.report(
            RuleId::HelmVersionsDiffer,
            src,
            0..0,
            "",
            "this values file is UTF-16LE: Helm 3 reads it, Helm 4 refuses it (\"incomplete UTF-16 character\")",
        )
        .help("save it as UTF-8, which every Helm and every YAML tool reads");
        return ctx.out;
    }
    // One parse for both readings (a file of thousands of documents stays linear): Helm 3's
    // first document, and every document merged as Helm 4 merges them.
    let parsed = yaml::parse(src);
    let mut docs = parsed.documents.iter().map(|d| match &d.root {
        None => Some(helm::empty_map(src)),
        Some(r) => helm::view(r).ok().filter(|n| n.as_map().is_some()),
    });
    let first = docs.next().flatten();
    let mut all = first.clone();
    for d in docs {
        match (&mut all, d) {
            (Some(a), Some(d)) => helm::merge_maps(a, d),
            _ => all = None,
        }
    }
    let json = |n: Option<crate::yaml::Node>| n.map(|n| helm::json::to_string(&n));
    match (json(first), json(all)) {
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
