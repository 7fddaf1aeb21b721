//! The rules on one parsed input: what each document is (values, installers, nodes, a release of
//! the chart in a HelmRelease, an Application, a helmfile or an umbrella's values), the rules of
//! each, the Flux valuesFrom entries that are not among the inputs, `cgpu-missing` for a file
//! with nothing to check, and `cluster-policy-mismatch` across the installers of one cluster.

use std::ops::Range;
use std::sync::Arc;

use crate::catalogue::RuleId;
use crate::cgpu;
use crate::diag::Diagnostic;
use crate::helm::place;
use crate::manifest::Objects;
use crate::manifest::node::nodes_of;
use crate::rules::installer::{self, InstallerPolicy};
use crate::rules::nodes;
use crate::rules::{Ctx, RuleOptions, values};
use crate::yaml::{self, Node, Source};

use super::elements;
use super::facts::{ClusterFacts, is_device_plugin};

/// What one document is, judged by its content.
#[derive(Default)]
struct Kind {
    values: bool,
    installers: bool,
    nodes: bool,
}

fn classify(root: &Node, objects: &Objects) -> Kind {
    if root.entry("cgpu").is_some() {
        return Kind {
            values: true,
            ..Kind::default()
        };
    }
    Kind {
        values: false,
        installers: objects.iter().any(|o| o.is_installer()),
        nodes: objects.iter().any(|o| o.kind == "Node"),
    }
}

/// The rules on one parsed source; returns its installers' policies too. The values files its
/// releases name that were read are added to `read`.
pub(super) fn rules_source(
    src: &Arc<Source>,
    parsed: &yaml::Parsed,
    opts: &RuleOptions,
    facts: &ClusterFacts,
    others: Option<&place::Others>,
    read: &mut Vec<String>,
) -> (Vec<Diagnostic>, Vec<InstallerPolicy>) {
    let mut policies = Vec::new();
    let mut out = Vec::new();
    let mut checked_any = false;
    let mut values_docs = 0;
    let mut first_content: Option<(usize, Range<usize>)> = None;
    let mut what = What::default();
    // The parent chart's dependencies on the chart (its Chart.yaml beside the file), read once.
    let mut deps: Option<Option<Vec<place::Dependency>>> = None;
    // The ConfigMaps the chart's HelmReleases of this file take values from.
    // Those of the run's other inputs too (which hold this file's own).
    let values_from: Vec<(String, place::ValuesRef)> = match others {
        Some(o) => o.values_from(),
        None => parsed
            .documents
            .iter()
            .filter_map(|d| d.root.as_ref())
            .filter(|r| r.get("kind").and_then(Node::as_str) == Some("HelmRelease"))
            .flat_map(|r| place::targets(r, None))
            .flat_map(|t| {
                let name = t.name.clone();
                t.values_from.into_iter().map(move |r| (name.clone(), r))
            })
            .collect(),
    };
    // The ConfigMaps and Secrets of this file: a valuesFrom entry naming another (not among
    // the run's inputs either) is not checked.
    let objects: Vec<&Node> = parsed
        .documents
        .iter()
        .filter_map(|d| d.root.as_ref())
        .filter(|r| {
            matches!(
                r.get("kind").and_then(Node::as_str),
                Some("ConfigMap" | "Secret")
            )
        })
        .collect();
    let found = |r: &place::ValuesRef| {
        objects.iter().any(|o| place::names(o, r)) || others.is_some_and(|o| o.has(r))
    };
    for doc in &parsed.documents {
        let Some(root) = &doc.root else { continue };
        if first_content.is_none() {
            first_content = Some((doc.index, root.span.start..root.span.start));
        }
        let objects = Objects::of(root);
        let kind = classify(root, &objects);
        let mut ctx = Ctx::new(opts, doc.index, &doc.alias_uses);
        if kind.values || kind.installers {
            crate::rules::duplicates(&mut ctx, src, doc);
        }
        if kind.values {
            checked_any = true;
            values_docs += 1;
            check_values(&mut ctx, root);
        }
        if !kind.values && !kind.installers && !kind.nodes {
            let deps = deps.get_or_insert_with(|| place::parent_chart(&src.name).map(|(_, d)| d));
            let mut targets: Vec<place::Target> = place::targets(root, deps.as_deref())
                .into_iter()
                .filter(|t| {
                    t.form != place::Form::Umbrella || !matches!(t.values, place::Values::Absent)
                })
                .collect();
            targets.extend(place::config_map_targets(root, &values_from));
            if !targets.is_empty() {
                checked_any = true;
                crate::rules::duplicates(&mut ctx, src, doc);
                if targets[0].form == place::Form::Umbrella {
                    values_docs += 1;
                }
            }
            // The Applications an ApplicationSet's elements render, with their findings: what
            // is common to all of them is said once (see `elements::merge`).
            let mut rendered: Vec<(&place::Target, Vec<Diagnostic>)> = Vec::new();
            for t in &targets {
                // An ApplicationSet's template whose elements follow, each checked instead.
                if t.expanded {
                    continue;
                }
                if !t.fails.is_empty() {
                    for (node, why) in &t.fails {
                        let message = format!("{}: {why}", t.label());
                        ctx.report(
                            RuleId::AppsetGeneratorFails,
                            src,
                            node.span.clone(),
                            "",
                            message,
                        );
                    }
                    continue;
                }
                let start = ctx.out.len();
                'target: {
                    if t.form == place::Form::HelmRelease && t.via.is_none() {
                        values_from_unchecked(&mut ctx, src, t, &found);
                    }
                    for (node, why) in &t.unread {
                        // The file's source: a node inside a `values: |` string has the file's
                        // offsets but a source of its own; a string an element rendered is placed
                        // where it came from.
                        let span = match t.element.as_ref().and_then(|e| e.place(&node.src)) {
                            Some(at) => at,
                            None => node.span.clone(),
                        };
                        let message = format!("{}: {why}", t.label());
                        ctx.report(RuleId::ValuesNotRead, src, span, "", message);
                    }
                    // A helmfile release is judged as a whole (its `values:` list and `set:`
                    // layered), not entry by entry; so is an Application with parameters.
                    if matches!(t.form, place::Form::Helmfile | place::Form::Kustomize) {
                        if t.release {
                            ctx.out
                                .extend(check_layered(src, parsed, doc, t, opts, read));
                        }
                        break 'target;
                    }
                    if !t.check
                        || (t.form == place::Form::Umbrella && place::disabled(t, root).is_some())
                    {
                        break 'target;
                    }
                    if matches!(
                        t.form,
                        place::Form::Application | place::Form::ApplicationSet
                    ) && (!t.parameters.is_empty() || !t.layers.is_empty())
                        && matches!(
                            t.values,
                            place::Values::Absent
                                | place::Values::Node(_)
                                | place::Values::Embedded(..)
                                | place::Values::Quoted(..)
                        )
                    {
                        ctx.out
                            .extend(check_layered(src, parsed, doc, t, opts, read));
                        break 'target;
                    }
                    ctx.out.extend(check_target(src, doc, t, opts));
                }
                if t.element.is_some() {
                    let found = ctx.out.split_off(start);
                    rendered.push((t, found));
                }
            }
            ctx.out.extend(elements::merge(rendered, src));
        }
        if kind.installers {
            checked_any = true;
            policies.extend(installer::check_document(&mut ctx, root));
        }
        if kind.nodes {
            checked_any = true;
            for node in nodes_of(&objects) {
                // The version of the installer that selects this node; without installers among
                // the inputs, the one the values deploy.
                let mut node_facts = facts.nodes.clone();
                if !facts.installers.is_empty() {
                    let selecting = facts
                        .installers
                        .iter()
                        .find(|(sel, _, _)| !sel.is_empty() && node.matches(sel));
                    node_facts.cgpu = selecting.and_then(|(_, v, _)| v.clone());
                    node_facts.selected_by = selecting.map(|(sel, _, name)| {
                        let sel: Vec<String> =
                            sel.iter().map(|(k, v)| format!("{k}={v}")).collect();
                        (name.clone(), sel.join(","))
                    });
                }
                nodes::check(&mut ctx, &node, &node_facts);
                nodes::check_compat(&mut ctx, &node, &node_facts);
            }
        }
        // A pod on a node, and HAMi's or ACK's device plugin, feed the node rules: the input
        // is read, not "nothing to check" (each is its own source from a cluster).
        if objects
            .iter()
            .any(|o| nodes::sharing_pod_node(&o).is_some() || is_device_plugin(&o))
        {
            checked_any = true;
        }
        for over in facts
            .pods_over
            .iter()
            .filter(|o| o.file == src.name && o.document == doc.index)
        {
            nodes::pods_per_gpu(&mut ctx, root, over);
        }
        if !checked_any {
            what.note(root, &objects);
        }
        out.extend(ctx.out);
    }
    let empty = Default::default();
    let utf16le = src.encoding == crate::yaml::source::Encoding::Utf16Le;
    if values_docs > 0 && (parsed.documents.len() > 1 || utf16le) && opts.helm.is_none() {
        out.extend(crate::rules::stack::versions_differ_in(opts, src));
    }
    if let Some(err) = &parsed.error {
        let mut found = syntax_finding(opts, src, err.document, err.offset, &err.message);
        if err.own_limit {
            for d in &mut found {
                d.help = "split the file, or raise --max-file-size (the budget is one node per 4 bytes of it): this limit is cgpu-lint's, Helm may read the file".into();
            }
        }
        out.extend(found);
    } else if !checked_any {
        let (doc, span) = first_content.unwrap_or((1, 0..0));
        let mut ctx = Ctx::new(opts, doc, &empty);
        let (message, help) = what.describe(src);
        values::missing(&mut ctx, src, span, message, help);
        out.extend(ctx.out);
    }
    (out, policies)
}

/// `values-from-unchecked` for each `valuesFrom` entry of a HelmRelease whose ConfigMap or
/// Secret is not in the file (Flux merges the entries in order, then `spec.values` over them).
fn values_from_unchecked(
    ctx: &mut Ctx,
    src: &Arc<Source>,
    t: &place::Target,
    found: &dyn Fn(&place::ValuesRef) -> bool,
) {
    for r in &t.values_from {
        if found(r) {
            continue;
        }
        let kind = if r.kind.is_empty() { "object" } else { &r.kind };
        let target = match &r.target_path {
            Some(p) => format!(", targetPath `{p}`"),
            None => String::new(),
        };
        let optional = if r.optional {
            " (optional: Flux skips it when the object or key does not exist)"
        } else {
            ""
        };
        let message = format!(
            "{}: valuesFrom {kind} `{}` (valuesKey `{}`{target}) is not among the inputs{optional}: its values are not checked; Flux merges it before `spec.values`, so every key `spec.values` does not set comes from it",
            t.label(),
            r.name,
            r.key,
        );
        ctx.report(
            RuleId::ValuesFromUnchecked,
            src,
            r.span.clone(),
            "",
            message,
        );
    }
}

/// The rules on a values document's root (or the values of a release in a document), read as
/// Helm hands it over; what Helm refuses is reported where it is.
fn check_values(ctx: &mut Ctx, root: &Node) {
    // Always through the view, even when it is the document itself: asking first
    // (`view_unchanged`) cost more than the copy it saved (bench/runs/2026-12-08-fast-readings.md).
    match crate::helm::view(root) {
        Ok(view) => values::check(ctx, &view),
        Err(r) => {
            ctx.report(
                RuleId::YamlSyntax,
                &r.src,
                r.offset..r.offset,
                "",
                r.message,
            );
            values::check(ctx, root);
        }
    }
}

/// The rules on the values of one release (or subchart) of the chart in a document: the same
/// rules as a values file, their pointers under the target's (`/spec/values/cgpu/policy`), the
/// `--set` keys of unsafe fixes under the subchart's key, and the findings inside a `values: |`
/// string moved back to the file (the embedded source has the file's offsets, so line, column
/// and every edit are the file's).
fn check_target(
    src: &Arc<Source>,
    doc: &yaml::Document,
    t: &place::Target,
    opts: &RuleOptions,
) -> Vec<Diagnostic> {
    let mut ctx = Ctx::new(opts, doc.index, &doc.alias_uses);
    let mut inner = Vec::new();
    match &t.values {
        place::Values::Absent => {}
        place::Values::Node(n) => check_values(&mut ctx, n),
        place::Values::NotAMap(n, why) => {
            ctx.at(RuleId::NotAMapping, n, "", why.clone());
        }
        place::Values::Unmapped(n, why) => {
            let message = format!("{}: the values string is not checked: {why}", t.label());
            // A string an ApplicationSet's element rendered: where it is in the file.
            let span = match t.element.as_ref().and_then(|e| e.place(&n.src)) {
                Some(at) => at,
                None => n.span.clone(),
            };
            values::missing(&mut ctx, src, span, message, None);
        }
        place::Values::Decoded(n, decoded) => {
            // A Secret's base64 data: the rules read the decoded values; each finding points
            // at the base64 string, which no edit can change in place.
            let parsed = yaml::parse(decoded);
            let no_aliases = Default::default();
            let mut dctx = Ctx::new(opts, doc.index, &no_aliases);
            if let Some(root) = parsed.documents.first().and_then(|d| d.root.as_ref())
                && root.entry("cgpu").is_some()
            {
                check_values(&mut dctx, root);
            }
            for mut d in dctx.out {
                d.src = src.clone();
                d.span = n.span.clone();
                d.edits.clear();
                d.consequence = None;
                d.fix_note =
                    Some("not fixed automatically: the value is inside base64 Secret data".into());
                d.message = format!("(in the base64 data) {}", d.message);
                inner.push(d);
            }
        }
        place::Values::Quoted(n, q) => {
            // A one-line quoted string: the rules read the decoded values; a finding points at
            // its characters in the string, or, where an escape stands in its way, at the
            // string with the value named.
            inner = first_document(opts, doc.index, &q.src, &yaml::parse(&q.src));
            for d in &mut inner {
                in_quoted(d, src, n, q);
            }
        }
        place::Values::Embedded(vsrc, parsed) => {
            // Helm 3 (Argo CD's) reads the first document of a values file.
            inner = first_document(opts, doc.index, vsrc, parsed);
            for d in &mut inner {
                d.src = src.clone();
                for e in &mut d.edits {
                    e.src = src.clone();
                }
            }
        }
    }
    let mut out = ctx.out;
    out.extend(inner);
    for d in &mut out {
        if d.rule == RuleId::CgpuMissing {
            continue;
        }
        d.path = format!("{}{}", t.pointer, d.path);
        d.message = format!("{}: {}", t.label(), d.message);
        if let Some(c) = &mut d.consequence {
            for (key, _) in &mut c.sets {
                *key = format!("{}{key}", t.set_prefix);
            }
        }
    }
    out
}

/// A finding on the decoded values of a one-line quoted string moved into the file: at its
/// characters in the string, its edits escaped as the string's quotes need; where an escape
/// is in the way, at the whole string, the value named and no edit.
fn in_quoted(
    d: &mut Diagnostic,
    src: &Arc<Source>,
    string: &yaml::Node,
    q: &yaml::embedded::Quoted,
) {
    let value = q
        .src
        .text
        .get(d.span.clone())
        .unwrap_or_default()
        .to_string();
    match q.file_span(d.span.clone()) {
        Some(span) => d.span = span,
        None => {
            d.span = string.span.clone();
            d.message = format!(
                "{} (in the values string, at `{}`)",
                d.message,
                crate::output::escape_controls(&value)
            );
        }
    }
    let edits: Option<Vec<crate::diag::Edit>> = d
        .edits
        .iter()
        .map(|e| {
            Some(crate::diag::Edit {
                src: src.clone(),
                range: q.edit_span(e.range.clone())?,
                replacement: q.escape(&e.replacement)?,
            })
        })
        .collect();
    match edits {
        Some(edits) => d.edits = edits,
        None => {
            d.edits.clear();
            d.consequence = None;
            d.fix_note = Some(if q.is_filled() {
                "not fixed automatically: an ApplicationSet's list generator element fills this value in; edit the element (or the template) by hand".into()
            } else {
                "not fixed automatically: an escape inside the values string is in the way; edit it by hand".into()
            });
        }
    }
    d.related.retain_mut(|r| match q.file_span(r.span.clone()) {
        Some(span) => {
            r.span = span;
            true
        }
        None => false,
    });
    d.src = src.clone();
}

/// The rules on what a tool hands Helm for one release when it layers several sources: Argo
/// CD's `parameters` over the Application's values, a helmfile release's `values:` list (inline
/// mappings and files beside the helmfile, in order) then its `set:` and `setString:`. The rules
/// judge the layered values ([`place::release_values`], as the tool passes them to Helm 3, or
/// `--helm`), so a key a later entry sets is judged there only; each finding points at the entry
/// that set the value: the mapping in place (inside a `values: |` string too), a values file in
/// that file, a parameter at its `value`.
/// The values rules on the first document of a values string (as Helm 3, Argo CD's, reads
/// it), its duplicates and a syntax error in it, on the string's own source.
fn first_document(
    opts: &RuleOptions,
    index: usize,
    vsrc: &Arc<Source>,
    parsed: &yaml::Parsed,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if let Some(vdoc) = parsed.documents.first() {
        let mut vctx = Ctx::new(opts, index, &vdoc.alias_uses);
        crate::rules::duplicates(&mut vctx, vsrc, vdoc);
        if let Some(root) = &vdoc.root {
            check_values(&mut vctx, root);
        }
        out = vctx.out;
    }
    if let Some(err) = &parsed.error
        && err.document == 1
    {
        out.extend(syntax_finding(opts, vsrc, index, err.offset, &err.message));
    }
    out
}

fn check_layered(
    src: &Arc<Source>,
    parsed: &yaml::Parsed,
    doc: &yaml::Document,
    t: &place::Target,
    opts: &RuleOptions,
    read: &mut Vec<String>,
) -> Vec<Diagnostic> {
    let version = opts.helm.unwrap_or(crate::helm::Version::Three);
    let mut out = Vec::new();
    // Duplicates and syntax errors inside a `values: |` string are its own.
    if let place::Values::Embedded(vsrc, vparsed) = &t.values {
        if let Some(vdoc) = vparsed.documents.first() {
            let mut vctx = Ctx::new(opts, doc.index, &vdoc.alias_uses);
            crate::rules::duplicates(&mut vctx, vsrc, vdoc);
            out.extend(vctx.out);
        }
        if let Some(err) = &vparsed.error
            && err.document == 1
        {
            out.extend(syntax_finding(
                opts,
                vsrc,
                doc.index,
                err.offset,
                &err.message,
            ));
            return moved_to(out, src);
        }
    }
    let mut ctx = Ctx::new(opts, doc.index, &doc.alias_uses);
    // An Argo CD value file whose source folder is not here: named, not read.
    for l in &t.layers {
        if let place::Layer::SourceFile(entry, folder, _, _) = l
            && place::source_folder(&src.name, folder).is_none()
        {
            let message = format!(
                "{}: the value file `{}` is relative to the source's path `{folder}`, which is not under the Application's folders or the working directory: its values are not checked",
                t.label(),
                entry.as_str().unwrap_or_default()
            );
            ctx.at(RuleId::ValuesNotRead, entry, "", message);
        }
    }
    // A values file that is not there stops the tool (the release is not installed): said at
    // its entry, and the release's other values are still checked without it, so that a typo
    // in one path does not hide the rest.
    let mut reduced: Option<place::Target> = None;
    let result = loop {
        let target = reduced.as_ref().unwrap_or(t);
        let r = match place::release_values(target, parsed, None, &src.name, None, version, read) {
            Err(r) => r,
            ok => break ok,
        };
        let at = |l: &place::Layer| {
            matches!(l, place::Layer::File(entry, _) | place::Layer::SourceFile(entry, _, _, _)
                if entry.span.start == r.offset && Arc::ptr_eq(&entry.src, &r.src))
        };
        if !target.layers.iter().any(at) || !r.message.contains("does not exist") {
            break Err(r);
        }
        let mut mctx = Ctx::new(opts, doc.index, &doc.alias_uses);
        let message = format!("{}: {}", t.label(), r.message);
        mctx.report(
            RuleId::ValuesFileMissing,
            &r.src,
            r.offset..r.offset,
            "",
            message,
        );
        out.extend(moved_to(mctx.out, src));
        let mut next = target.clone();
        next.layers.retain(|l| !at(l));
        reduced = Some(next);
    };
    match result {
        Ok(mut tree) => {
            place::at_parameters(&mut tree, &t.parameters);
            if t.strips_templates() {
                // What the generators fill in is named in `t.unread`, not judged.
                place::strip_templated(&mut tree, "", &mut Vec::new());
            }
            if tree.entry("cgpu").is_some() {
                check_values(&mut ctx, &tree);
            }
        }
        Err(r) => {
            let missing = t.layers.iter().any(|l| {
                matches!(l, place::Layer::File(entry, _) | place::Layer::SourceFile(entry, _, _, _)
                    if entry.span.start == r.offset && Arc::ptr_eq(&entry.src, &r.src))
            });
            let rule = if missing {
                RuleId::ValuesFileMissing
            } else {
                RuleId::YamlSyntax
            };
            let message = format!("{}: {}", t.label(), r.message);
            // Helm's parser refusing a parameter's flag: at the parameter's `value`; Helm
            // refusing a quoted (or rendered) values string: at its characters in the file.
            match t.parameters.iter().find(|p| p.source_name() == r.src.name) {
                Some(p) => {
                    let span = parameter_place(t, p);
                    ctx.report(rule, src, span, p.pointer.clone(), message)
                }
                None => match &t.values {
                    place::Values::Quoted(n, q) if Arc::ptr_eq(&r.src, &q.src) => {
                        let span = q
                            .file_span(r.offset..r.offset)
                            .unwrap_or_else(|| n.span.clone());
                        ctx.report(rule, src, span, "", message)
                    }
                    _ => ctx.report(rule, &r.src, r.offset..r.offset, "", message),
                },
            };
            out.extend(moved_to(ctx.out, src));
            return out;
        }
    }
    for mut d in ctx.out {
        if matches!(d.rule, RuleId::CgpuMissing | RuleId::ValuesNotRead) {
            out.push(d);
            continue;
        }
        let label = t.label();
        if let Some(p) = t
            .parameters
            .iter()
            .find(|p| Arc::ptr_eq(&d.src, &p.value.src) && p.value.span == d.span)
        {
            // A value a parameter sets: the finding is at the parameter's `value`. Its text is
            // a Kubernetes string the tool turns into a flag, so no edit is offered.
            d.src = src.clone();
            d.span = parameter_place(t, p);
            d.path = p.pointer.clone();
            d.edits.clear();
            d.consequence = None;
            let hint = if p.what == "parameter" {
                "its `value` (or `forceString`)"
            } else {
                "its `value` (or move it between `set:` and `setString:`)"
            };
            d.fix_note = Some(format!(
                "not fixed automatically: the value comes from the {} `{}`; edit {hint} by hand",
                p.what, p.name
            ));
            d.message = format!("{label} ({} `{}`): {}", p.what, p.name, d.message);
        } else if let place::Values::Quoted(n, q) = &t.values
            && Arc::ptr_eq(&d.src, &q.src)
        {
            // A value of a one-line quoted string: at its characters in the string.
            in_quoted(&mut d, src, n, q);
            d.path = format!("{}{}", t.pointer, d.path);
            d.message = format!("{label}: {}", d.message);
        } else if t
            .element
            .as_ref()
            .is_some_and(|e| e.place(&d.src).is_some())
        {
            // A string an ApplicationSet's element rendered (in valuesObject): placed with the
            // element's other findings (`elements::place`).
            d.path = format!("{}{}", t.pointer, d.path);
            d.message = format!("{label}: {}", d.message);
        } else if d.src.name == src.name {
            let prefix = t
                .layers
                .iter()
                .find_map(|l| match l {
                    place::Layer::Inline(n, at)
                        if n.span.start <= d.span.start && d.span.end <= n.span.end =>
                    {
                        Some(at.as_str())
                    }
                    _ => None,
                })
                .unwrap_or(&t.pointer);
            d.path = format!("{prefix}{}", d.path);
            d.message = format!("{label}: {}", d.message);
            d.src = src.clone();
            for e in &mut d.edits {
                e.src = src.clone();
            }
        } else {
            // A values file the release names: the finding is in that file, which `fix` on
            // that file changes (not `fix` on this one).
            d.document = 1;
            d.message = format!("{label}: {}", d.message);
            if !d.edits.is_empty() {
                d.edits.clear();
                d.consequence = None;
                d.fix_note = Some(format!(
                    "fixed by `cgpu-lint fix {}`, not from the release's file",
                    d.src.name
                ));
            }
        }
        out.push(d);
    }
    out
}

/// Where a finding on what a parameter sets points: its `value` in the file (for a value an
/// ApplicationSet's element rendered, where that value came from).
fn parameter_place(t: &place::Target, p: &place::Param) -> Range<usize> {
    t.element
        .as_ref()
        .and_then(|e| e.place(&p.value.src))
        .unwrap_or_else(|| p.value.span.clone())
}

/// Findings of a `values: |` string read in place, moved back to the file (the string's source
/// has the file's offsets).
fn moved_to(mut diags: Vec<Diagnostic>, src: &Arc<Source>) -> Vec<Diagnostic> {
    for d in &mut diags {
        if d.src.name == src.name {
            d.src = src.clone();
            for e in &mut d.edits {
                e.src = src.clone();
            }
        }
    }
    diags
}

/// What a file without anything to check holds, so that `cgpu-missing` can say so instead of
/// asking for a `cgpu:` block in a Job or a Chart.yaml.
#[derive(Default)]
struct What {
    documents: usize,
    objects: Vec<String>,
    chart_yaml: bool,
    /// GitOps documents of other charts: what each is and the charts it names.
    gitops: Vec<(String, Vec<String>)>,
}

impl What {
    fn note(&mut self, root: &Node, objects: &Objects) {
        self.documents += 1;
        if let Some(other) = place::other_charts(root) {
            self.gitops.push(other);
        }
        for o in objects.iter() {
            if self.objects.len() < 3 {
                self.objects.push(if o.name.is_empty() {
                    o.kind.to_string()
                } else {
                    format!("{} `{}`", o.kind, o.name)
                });
            } else if self.objects.len() == 3 {
                self.objects.push("…".into());
            }
        }
        // Chart.yaml: apiVersion v1/v2, name and version, and no kind.
        if root.get("kind").is_none()
            && root.get("name").is_some()
            && root.get("version").is_some()
            && matches!(
                root.get("apiVersion").and_then(Node::as_str),
                Some("v1" | "v2")
            )
        {
            self.chart_yaml = true;
        }
    }

    fn describe(&self, src: &Source) -> (String, Option<String>) {
        let installers = cgpu::INSTALLER_NAMES.join(" or ");
        if !self.gitops.is_empty() {
            let parts: Vec<String> = self
                .gitops
                .iter()
                .map(|(what, charts)| match charts.as_slice() {
                    [] => format!("{what} names no chart"),
                    c => format!(
                        "{what} deploys {}",
                        c.iter()
                            .map(|c| format!("`{c}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                })
                .collect();
            return (
                format!(
                    "{}, not {}: nothing for cgpu-lint to check, skipped",
                    parts.join("; "),
                    cgpu::CHART
                ),
                Some(format!(
                    "cgpu-lint reads the values of releases of the chart `{}` (by its name, or the last segment of its path or reference)",
                    cgpu::CHART
                )),
            );
        }
        if self.chart_yaml {
            return (
                "a Helm chart's Chart.yaml (chart metadata, not values): skipped".into(),
                Some(
                    "nothing to do here: cgpu-lint checks the chart's values files and rendered manifests"
                        .into(),
                ),
            );
        }
        if !self.objects.is_empty() {
            let rendered = self.documents > 1 || src.text.contains("# Source: ");
            let head = if rendered {
                format!(
                    "a rendered stream of {} documents ({}) without a {installers} DaemonSet",
                    self.documents,
                    self.objects.join(", ")
                )
            } else {
                format!(
                    "Kubernetes objects ({}) but no {installers} DaemonSet",
                    self.objects.join(", ")
                )
            };
            return (
                format!("{head}: nothing for cgpu-lint to check, skipped"),
                Some(format!(
                    "cgpu-lint checks ack-ai-installer values (a `cgpu:` block), the {installers} DaemonSets and node lists; if this stream should hold the installer, is cgpu.enabled false?"
                )),
            );
        }
        (
            "no `cgpu` key: not an ack-ai-installer values file, skipped".into(),
            None,
        )
    }
}

/// `cluster-policy-mismatch` findings for installers that belong to one cluster.
pub(super) fn policy_mismatches(
    opts: &RuleOptions,
    policies: &[(String, InstallerPolicy)],
) -> Vec<Diagnostic> {
    let empty = Default::default();
    let mut out = Vec::new();
    for (i, message) in installer::mismatches(policies) {
        let p = &policies[i].1;
        let mut ctx = Ctx::new(opts, p.document, &empty);
        ctx.at(
            RuleId::ClusterPolicyMismatch,
            &p.node,
            p.pointer.clone(),
            message,
        );
        out.extend(ctx.out);
    }
    out
}

/// A `yaml-syntax` finding at one offset (not UTF-8, a parse error, an alias bomb, too deep).
pub(super) fn syntax_finding(
    opts: &RuleOptions,
    src: &Arc<Source>,
    document: usize,
    offset: usize,
    message: &str,
) -> Vec<Diagnostic> {
    let empty = Default::default();
    let mut ctx = Ctx::new(opts, document, &empty);
    ctx.report(RuleId::YamlSyntax, src, offset..offset, "", message);
    ctx.out
}
