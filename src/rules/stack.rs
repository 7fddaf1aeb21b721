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
    let mut found = match helm::lean::read(layers) {
        Some(stack) => lean_rules(&stack, layers.chart.is_some(), opts),
        None => whole_rules(layers, opts),
    };
    once_each(&mut found);
    found
}

/// The same finding from both readings once (and from a file given twice).
fn once_each(found: &mut Vec<Diagnostic>) {
    let mut seen = HashSet::new();
    found.retain(|d| {
        seen.insert((
            d.rule,
            d.src.name.clone(),
            d.span.clone(),
            d.message.clone(),
        ))
    });
}

/// [`rules`] on a stack read lean (memory holds the `cgpu` blocks, not every layer's tree, so a
/// stack of large files stays small): each layer's duplicate keys, then the values rules on the coalesced `cgpu` entry, which
/// both Helms compute alike there (see [`helm::lean`]).
fn lean_rules(stack: &helm::lean::Stack, chart: bool, opts: &RuleOptions) -> Vec<Diagnostic> {
    let empty = Default::default();
    let mut found: Vec<Diagnostic> = Vec::new();
    // The documented defaults (no chart values file given) are not checked as a layer.
    let checked = stack.layers.len() - usize::from(!chart);
    for (src, parsed) in &stack.layers[..checked] {
        for doc in &parsed.documents {
            let mut ctx = Ctx::new(opts, doc.index, &empty);
            crate::rules::duplicates(&mut ctx, src, doc);
            found.extend(ctx.out);
        }
    }
    let mut ctx = Ctx::new(opts, 1, &empty);
    on_values(
        &mut ctx,
        &stack.values,
        stack.layers.iter().rev().nth(1).map(|(s, _)| s),
    );
    found.extend(ctx.out);
    found
}

/// The values rules on the coalesced `tree`, or `cgpu-missing` at the top `-f` file when the
/// stack holds no `cgpu`.
fn on_values(ctx: &mut Ctx, tree: &yaml::Node, top: Option<&std::sync::Arc<yaml::Source>>) {
    if tree.entry("cgpu").is_some() {
        values::check(ctx, tree);
    } else if let Some(top) = top {
        values::missing(
            ctx,
            top,
            0..0,
            "no `cgpu` key in the stack: not ack-ai-installer values, skipped".into(),
            None,
        );
    }
}

/// [`rules`] on the stack's whole trees, one per Helm read.
fn whole_rules(layers: &Layers, opts: &RuleOptions) -> Vec<Diagnostic> {
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
                on_values(&mut ctx, &tree, layers.files.last());
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
    // ("yaml: incomplete UTF-16 character"; measured with Helm 4 in tests/it/safe_output.rs).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::Source;
    use std::sync::Arc;

    /// What a user sees of a finding (its file, place, words, fix and related places).
    fn seen(found: &[Diagnostic]) -> Vec<String> {
        found
            .iter()
            .map(|d| {
                let edits: Vec<_> = d
                    .edits
                    .iter()
                    .map(|e| (&e.src.name, &e.range, &e.replacement))
                    .collect();
                let related: Vec<_> = d.related.iter().map(|r| (&r.span, &r.message)).collect();
                format!(
                    "{} {:?} {} {} {:?} {} | {} | {} | {:?} | {:?} | {:?} {:?}",
                    d.src.name,
                    d.span,
                    d.rule,
                    d.document,
                    d.severity,
                    d.path,
                    d.message,
                    d.help,
                    edits,
                    related,
                    d.fix_note,
                    d.consequence.as_ref().map(|c| &c.line)
                )
            })
            .collect()
    }

    /// The whole reading's findings, deduplicated as [`rules`] does.
    fn whole(layers: &Layers, opts: &RuleOptions) -> Vec<Diagnostic> {
        let mut found = whole_rules(layers, opts);
        once_each(&mut found);
        found
    }

    /// Compares the two readings of one stack under each Helm; whether the lean one answered.
    fn same_findings(chart: &Arc<Source>, files: &[Arc<Source>]) -> bool {
        let layers = Layers {
            chart: Some(chart.clone()),
            files: files.to_vec(),
            sets: Vec::new(),
        };
        let Some(stack) = helm::lean::read(&layers) else {
            return false;
        };
        for helm in [None, Some(Version::Three), Some(Version::Four)] {
            let opts = RuleOptions {
                helm,
                ..Default::default()
            };
            let mut lean = lean_rules(&stack, true, &opts);
            once_each(&mut lean);
            let names: Vec<_> = files.iter().map(|f| f.name.as_str()).collect();
            assert_eq!(
                seen(&lean),
                seen(&whole(&layers, &opts)),
                "stack {names:?} under {helm:?}"
            );
        }
        true
    }

    // The lean reading of a stack gives the findings the whole reading gives, on every YAML file
    // of the repository alone, in consecutive pairs, and on generated stacks of values files
    // mixing the `cgpu` block's values, duplicates, other root entries and what Helm reads
    // differently; and it answers for most of them (a test of the shortcut, not of a fallback).
    #[test]
    fn the_lean_stack_finds_what_the_whole_stack_finds() {
        let chart = crate::cgpu::chart_defaults();
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/charts-fixtures/ack-ai-installer/values.yaml"
        );
        let fixture_chart = Source::new(fixture, std::fs::read_to_string(fixture).unwrap());
        let files: Vec<Arc<Source>> = crate::yaml::repository_yaml_files()
            .into_iter()
            .map(|(name, text)| Source::new(name, text))
            .collect();
        let mut answered = 0;
        for f in &files {
            answered += usize::from(same_findings(&chart, std::slice::from_ref(f)));
        }
        for pair in files.windows(2) {
            answered += usize::from(same_findings(&chart, pair));
        }
        assert!(
            answered > files.len() / 2,
            "lean answered {answered} of {}",
            2 * files.len()
        );
        // Generated stacks: lines drawn from pieces that each decide a finding.
        const PIECES: [&str; 22] = [
            "cgpu:\n  enabled: true\n",
            "cgpu:\n  enabled: \"false\"\n",
            "cgpu:\n  policy: 2\n",
            "cgpu:\n  policy: yes\n  policy: 3\n",
            "cgpu:\n  policy: \"9\"\n",
            "cgpu:\n  tag: v1.0.5\n",
            "cgpu:\n  tag: 1.5.20\n  pullPolicy: Sometimes\n",
            "cgpu:\n  nodeSelector:\n    a: b\n    a: c\n",
            "cgpu:\n  nodeSelectr: {}\n",
            "cgpu: null\n",
            "cgpu: [1, 2]\n",
            "cgpu: ~\n",
            "cgpu:\n  image:\n    tag: 0x10\n",
            "big:\n  k1: {name: n, value: \"v\", list: [a, b, 1]}\n  k1: 2\n",
            "other: on\n",
            "other: {a: 1, a: 2}\n",
            "list:\n  - {p: 1, p: 2}\n  - 3\n",
            "1: one\n",
            "? [complex]\n: key\n",
            "anchor: &a {x: 1}\nalias: *a\n",
            "<<: {cgpu: {policy: 1}}\n",
            "# only a comment\n",
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let mut generated = 0;
        for case in 0..600 {
            let layers: Vec<Arc<Source>> = (0..1 + next(3))
                .map(|i| {
                    let text: String = (0..next(4)).map(|_| PIECES[next(PIECES.len())]).collect();
                    Source::new(format!("g{case}-{i}.yaml"), text)
                })
                .collect();
            // The documented defaults, or a chart values file (the fixture chart's, or one
            // drawn like the layers: duplicates, a null or list `cgpu`, what Helm refuses).
            let chart = match case % 3 {
                0 => chart.clone(),
                1 => fixture_chart.clone(),
                _ => {
                    let text: String = (0..next(3)).map(|_| PIECES[next(PIECES.len())]).collect();
                    Source::new(format!("g{case}-chart.yaml"), text)
                }
            };
            generated += usize::from(same_findings(&chart, &layers));
        }
        assert!(
            generated > 200,
            "lean answered {generated} of 600 generated stacks"
        );
    }
}
