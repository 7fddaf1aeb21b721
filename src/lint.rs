//! The one lint pipeline: bytes → documents → classify (values, installer, nodes, other) → rules →
//! inline suppressions → config and command-line filters, in that order. Every front end (check,
//! check --stack, check --nodes, fix, set, generate, post-render, checklist, the cluster mode, the
//! language server) gets its findings from [`check_path`] through one of its wrappers
//! ([`lint_file`], [`lint_cluster`], [`lint_stack`], [`fix::lint_fix`]), so two commands cannot answer
//! differently about the same bytes.
//!
//! Modelled on ruff's `crates/ruff_linter/src/linter.rs`: `check_path` does the work, `lint_only`
//! and `lint_fix` wrap it.

use crate::catalogue::RuleId;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod elements;
mod facts;
pub mod fix;
pub mod inputs;
pub mod markdown;
mod source;

use crate::cgpu;
use crate::diag::Diagnostic;
use crate::manifest::Objects;
use crate::manifest::node::nodes_of;
use crate::rules::installer::InstallerPolicy;
use crate::rules::{Ctx, RuleOptions, values};
use crate::yaml::{self, Source};

use facts::cluster_facts;
use source::{policy_mismatches, rules_source, syntax_finding};

/// Which rules to report.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub select: Vec<String>,
    pub ignore: Vec<String>,
}

impl Filter {
    pub fn allows(&self, rule: &str) -> bool {
        (self.select.is_empty() || self.select.iter().any(|s| s == rule || s == "all"))
            && !self.ignore.iter().any(|s| s == rule)
    }
}

/// Everything that decides which findings a run reports, besides the bytes.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// What the rules read (region, --require-cgpu).
    pub opts: RuleOptions,
    /// --select/--ignore, with the config's select/ignore already merged in.
    pub filter: Filter,
    /// `.cgpu-lint.toml`'s per-file-ignores, compiled.
    pub per_file_ignores: Option<Arc<PerFileIgnores>>,
    /// Directory walks read Markdown files too (`--include-markdown`, `include-markdown`);
    /// a Markdown file named on the command line is always read.
    pub include_markdown: bool,
    /// `[fix] extend-safe`/`extend-unsafe` (and their flags): the rules whose fixes change
    /// class.
    pub fix_classes: FixClasses,
}

/// Rules whose fixes the settings promote to safe or demote to unsafe (ruff's
/// `extend-safe-fixes`/`extend-unsafe-fixes`). A rule in both is unsafe: the cautious side wins,
/// as in ruff.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FixClasses {
    pub extend_safe: Vec<RuleId>,
    pub extend_unsafe: Vec<RuleId>,
}

impl FixClasses {
    /// The applicability these settings give the fixes of `rule`, if they name it.
    pub fn of(&self, rule: RuleId) -> Option<crate::diag::Applicability> {
        if self.extend_unsafe.contains(&rule) {
            Some(crate::diag::Applicability::Unsafe)
        } else if self.extend_safe.contains(&rule) {
            Some(crate::diag::Applicability::Safe)
        } else {
            None
        }
    }

    /// The one place a fix's applicability changes: each finding's own rule decides (before
    /// findings on one token merge, so a fix keeps the class of the rule it belongs to).
    fn apply(&self, diags: &mut [Diagnostic]) {
        if self.extend_safe.is_empty() && self.extend_unsafe.is_empty() {
            return;
        }
        for d in diags.iter_mut().filter(|d| !d.edits.is_empty()) {
            d.fix_override = self.of(d.rule);
        }
    }
}

impl Settings {
    /// These rule options and filter, no per-file ignores.
    pub fn new(opts: RuleOptions, filter: Filter) -> Settings {
        Settings {
            opts,
            filter,
            per_file_ignores: None,
            fix_classes: FixClasses::default(),
            include_markdown: false,
        }
    }
}

/// A config file's `[per-file-ignores]`: glob patterns (relative to the config file's folder; a
/// pattern without `/` also matches a file's name) and the rules not reported in the files they
/// match.
#[derive(Debug, Clone, Default)]
pub struct PerFileIgnores {
    /// The folder the patterns are relative to.
    dir: PathBuf,
    /// (pattern as written, its glob, whether it also matches a file's name, its rules)
    entries: Vec<(String, globset::GlobMatcher, bool, Vec<String>)>,
}

impl PerFileIgnores {
    /// No patterns yet, relative to the folder of the config file at `config_path`.
    pub fn new(config_path: &Path) -> PerFileIgnores {
        PerFileIgnores {
            dir: crate::paths::absolute(config_path)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            entries: Vec::new(),
        }
    }

    /// `rules` are not reported in the files `glob` matches (also by file name when
    /// `basename`).
    pub fn push(
        &mut self,
        pattern: &str,
        glob: globset::GlobMatcher,
        basename: bool,
        rules: Vec<String>,
    ) {
        self.entries
            .push((pattern.to_string(), glob, basename, rules));
    }

    /// The patterns that match `file` (a path as given on the command line), with their rules.
    pub fn matching(&self, file: &str) -> Vec<(&str, &[String])> {
        if self.entries.is_empty() || file == "-" {
            return Vec::new();
        }
        let abs = crate::paths::absolute(Path::new(file));
        let rel = abs.strip_prefix(&self.dir).unwrap_or(&abs);
        let name = abs.file_name().map(Path::new);
        self.entries
            .iter()
            .filter(|(_, glob, basename, _)| {
                glob.is_match(rel) || (*basename && name.is_some_and(|n| glob.is_match(n)))
            })
            .map(|(pattern, _, _, rules)| (pattern.as_str(), rules.as_slice()))
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `rule` may be reported in `file` (a path as given on the command line).
    pub fn allows(&self, file: &str, rule: &str) -> bool {
        !self
            .matching(file)
            .iter()
            .any(|(_, rules)| rules.iter().any(|r| r == rule || r == "all"))
    }

    /// Drop the findings these patterns hide.
    pub fn retain(&self, diags: &mut Vec<Diagnostic>) {
        diags.retain(|d| self.allows(d.file(), d.rule.name()));
    }
}

/// What [`check_path`] is asked to look at.
#[derive(Debug, Clone, Copy)]
pub enum Inputs<'a> {
    /// One input checked on its own (its own nodes and installers are its cluster).
    File(&'a Arc<Source>),
    /// Inputs that describe one cluster: installers, node lists, values. The region of the nodes,
    /// the installers' node selectors and cGPU version apply to all of them, and the installers
    /// must agree on the policy.
    Cluster(&'a [Arc<Source>]),
    /// A Helm values stack, bottom first (the chart defaults or `--chart-values`, then each `-f`
    /// file): each layer's syntax and duplicates, then the rules on the coalesced values.
    Stack(&'a [Arc<Source>]),
    /// One input checked on its own, with the ConfigMaps, Secrets and HelmReleases of the run's
    /// other inputs for Flux's `valuesFrom` (`check` on several files).
    Among(&'a Arc<Source>, &'a crate::helm::place::Others),
}

impl<'a> Inputs<'a> {
    fn sources(&self) -> &'a [Arc<Source>] {
        match *self {
            Inputs::File(src) | Inputs::Among(src, _) => std::slice::from_ref(src),
            Inputs::Cluster(srcs) | Inputs::Stack(srcs) => srcs,
        }
    }
}

/// THE pipeline: rules over the inputs, then inline suppressions of every input, then the
/// command line's and the config's filters. Every finding cgpu-lint prints comes from here.
pub fn check_path(inputs: Inputs, settings: &Settings) -> Vec<Diagnostic> {
    check_path_reading(inputs, settings).0
}

/// [`check_path`], and the files read beside the inputs: the values files their releases name
/// (a helmfile's `values:`, an Argo CD Application's `valueFiles`, a kustomization's
/// `valuesFile`), each once, as findings name them. The summary counts them as files checked.
pub fn check_path_reading(inputs: Inputs, settings: &Settings) -> (Vec<Diagnostic>, Vec<String>) {
    let mut read = Vec::new();
    // A Markdown file: each of its fenced YAML blocks through this same pipeline, in place.
    if let Inputs::File(src) | Inputs::Among(src, _) = inputs
        && src.name != "-"
        && yaml::markdown::is_markdown(&src.name)
    {
        let others = match inputs {
            Inputs::Among(_, o) => Some(o),
            _ => None,
        };
        let found = check_markdown(src, others, settings, &mut read);
        return (found, read);
    }
    let found = check_yaml(inputs, settings, &mut read);
    (found, read)
}

/// The findings of a Markdown file: its blocks' through the pipeline, on the file (each fenced
/// YAML block about cGPU that [`markdown::checked_blocks`] reads, in place: see lint/markdown.rs).
fn check_markdown(
    src: &Arc<Source>,
    others: Option<&crate::helm::place::Others>,
    settings: &Settings,
    read: &mut Vec<String>,
) -> Vec<Diagnostic> {
    if src.invalid.is_some() {
        return check_yaml(Inputs::File(src), settings, read);
    }
    let blocks = markdown::checked_blocks(src);
    let mut out = Vec::new();
    let mut own = Vec::new();
    let empty = Default::default();
    // The YAML documents of the earlier blocks: a finding's document is counted over the file's
    // blocks, so two blocks' findings are told apart (in the report and the baseline).
    let mut documents = 0;
    for block in &blocks {
        match yaml::markdown::block_source(src, block) {
            Ok(inner) => {
                let found = match others {
                    Some(o) => check_yaml(Inputs::Among(&inner, o), settings, read),
                    None => check_yaml(Inputs::File(&inner), settings, read),
                };
                out.extend(found.into_iter().map(|mut d| {
                    d.document += documents;
                    moved(d, src)
                }));
                documents += yaml::parse(&inner).documents.len().max(1);
            }
            Err(why) => {
                let at = src.line_start(block.fence_line);
                let mut ctx = Ctx::new(&settings.opts, 1, &empty);
                values::missing(
                    &mut ctx,
                    src,
                    at..at,
                    format!("this ```yaml block is not checked: {why}"),
                    None,
                );
                own.extend(ctx.out);
            }
        }
    }
    if blocks.is_empty() {
        let mut ctx = Ctx::new(&settings.opts, 1, &empty);
        values::missing(
            &mut ctx,
            src,
            0..0,
            format!(
                "a Markdown file with no ```yaml block holding a `cgpu:` key, {} or {}: nothing to check, skipped",
                cgpu::INSTALLER_NAMES.join(" or "),
                cgpu::CHART
            ),
            Some(
                "cgpu-lint checks the fenced ```yaml/```yml blocks of Markdown that mention cGPU"
                    .into(),
            ),
        );
        own.extend(ctx.out);
    }
    // The file's own findings (a block not read, nothing to check) are filtered as any, but a
    // `#` line of Markdown is a heading, not a directive; the blocks' findings were suppressed
    // and filtered in their own pass, by the comments inside them.
    own.retain(|d| settings.filter.allows(d.rule.name()));
    if let Some(ignores) = &settings.per_file_ignores {
        ignores.retain(&mut own);
    }
    out.extend(own);
    out.sort_by_key(|d| d.span.start);
    out
}

/// A block's finding, on the Markdown file (the offsets are already the file's).
fn moved(mut d: Diagnostic, src: &Arc<Source>) -> Diagnostic {
    d.src = src.clone();
    for e in &mut d.edits {
        e.src = src.clone();
    }
    d
}

/// [`check_path`] on YAML inputs (a Markdown block's source is one, named as its file).
fn check_yaml(inputs: Inputs, settings: &Settings, read: &mut Vec<String>) -> Vec<Diagnostic> {
    let found = match inputs {
        Inputs::File(src) => rules_cluster(std::slice::from_ref(src), &settings.opts, false, read),
        Inputs::Among(src, others) => rules_cluster_among(
            std::slice::from_ref(src),
            &settings.opts,
            false,
            Some(others),
            read,
        ),
        Inputs::Cluster(srcs) => rules_cluster(srcs, &settings.opts, true, read),
        Inputs::Stack(layers) => rules_stack(layers, &settings.opts),
    };
    finish(inputs.sources(), found, settings)
}

/// The findings of one input checked on its own, suppressed and filtered (ruff's `lint_only`).
pub fn lint_file(src: &Arc<Source>, settings: &Settings) -> Vec<Diagnostic> {
    check_path(Inputs::File(src), settings)
}

/// [`lint_file`], with the ConfigMaps, Secrets and HelmReleases of the run's other inputs.
pub fn lint_file_among(
    src: &Arc<Source>,
    others: &crate::helm::place::Others,
    settings: &Settings,
) -> Vec<Diagnostic> {
    check_path(Inputs::Among(src, others), settings)
}

/// The findings of inputs that describe one cluster (installer DaemonSets, node lists, values):
/// each input's own findings, the node rules with what the other inputs say about the cluster,
/// and those across inputs (`cluster-policy-mismatch`).
pub fn lint_cluster(srcs: &[Arc<Source>], settings: &Settings) -> Vec<Diagnostic> {
    check_path(Inputs::Cluster(srcs), settings)
}

/// The findings of inputs that describe one cluster as [`lint_cluster`] finds them, each rule's
/// on its own (none merged into another on the same token): what `compat`'s what-if compares
/// rule by rule before and after a change.
pub fn lint_cluster_each(srcs: &[Arc<Source>], settings: &Settings) -> Vec<Diagnostic> {
    let found = rules_cluster(srcs, &settings.opts, true, &mut Vec::new());
    suppress_and_filter(srcs, found, settings)
}

/// The findings of a Helm values stack (`check --stack`): `layers[0]` is the chart's values.
pub fn lint_stack(layers: &[Arc<Source>], settings: &Settings) -> Vec<Diagnostic> {
    check_path(Inputs::Stack(layers), settings)
}

/// Inline suppressions of every source, then the command line's and the config's filters,
/// then one finding per token.
fn finish(srcs: &[Arc<Source>], diags: Vec<Diagnostic>, settings: &Settings) -> Vec<Diagnostic> {
    one_per_token(suppress_and_filter(srcs, diags, settings))
}

/// Inline suppressions of every source, then the command line's and the config's filters
/// (`--select`/`--ignore`, per-file ignores): the pipeline's own, also for the findings an
/// engine decides beside the rules (the checklist's upgrade gate).
pub(crate) fn suppress_and_filter(
    srcs: &[Arc<Source>],
    mut diags: Vec<Diagnostic>,
    settings: &Settings,
) -> Vec<Diagnostic> {
    for src in srcs {
        diags = crate::suppress::apply(src, diags);
    }
    // Findings in a file the inputs read (a values file an Application names): its own comments
    // hide them too.
    let mut others: Vec<Arc<Source>> = Vec::new();
    for d in &diags {
        if !srcs.iter().chain(&others).any(|s| Arc::ptr_eq(s, &d.src))
            && !srcs.iter().any(|s| s.name == d.src.name)
            && d.src.name != "-"
        {
            others.push(d.src.clone());
        }
    }
    for src in &others {
        diags = crate::suppress::apply_quiet(src, diags);
    }
    diags.retain(|d| settings.filter.allows(d.rule.name()));
    if let Some(ignores) = &settings.per_file_ignores {
        ignores.retain(&mut diags);
    }
    settings.fix_classes.apply(&mut diags);
    diags
}

/// One finding per token (a reader fixes a token once), after suppressions and filters (a suppressed rule leaves the
/// others on its token standing): findings on the same text of the same document become the
/// most severe of them, whose message carries the others' in turn. Its fix is its own; when it
/// has none, the first merged finding's fix (named in the message) comes with it. Findings
/// come out ordered by position, then severity, for every front end alike.
fn one_per_token(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    // Files keep the order in which the rules reported them (the checklist lists the live
    // installer, then the values, then the nodes); inside a file, position decides.
    let mut rank: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let ranks: Vec<usize> = diags
        .iter()
        .map(|d| {
            let next = rank.len();
            *rank.entry(d.file()).or_insert(next)
        })
        .collect();
    let mut order: Vec<usize> = (0..diags.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&diags[a], &diags[b]);
        (
            ranks[a],
            x.document,
            x.span.start,
            std::cmp::Reverse(x.severity),
        )
            .cmp(&(
                ranks[b],
                y.document,
                y.span.start,
                std::cmp::Reverse(y.severity),
            ))
    });
    let mut slots: Vec<Option<Diagnostic>> = diags.into_iter().map(Some).collect();
    let diags: Vec<Diagnostic> = order.into_iter().filter_map(|i| slots[i].take()).collect();
    let mut out: Vec<Diagnostic> = Vec::with_capacity(diags.len());
    for d in diags {
        match out.last_mut() {
            Some(kept) if kept.same_token(&d) => {
                kept.message = format!("{}; also {}: {}", kept.message, d.rule, d.message);
                kept.related.extend(d.related);
                if kept.edits.is_empty() && kept.fix_note.is_none() {
                    // The fix comes with what decides its class (an unsafe fix stays unsafe).
                    kept.edits = d.edits;
                    kept.fix_note = d.fix_note;
                    kept.consequence = d.consequence;
                    kept.fix_override = d.fix_override;
                }
            }
            _ => out.push(d),
        }
    }
    out
}

/// The parse the rules read. A values document keeps only its `cgpu` entry: every other root
/// entry is read, checked for duplicate keys and for what Helm would refuse or read differently,
/// and dropped piece by piece as each of its entries and items ends, so a 50 MB values file
/// takes two to three times its size in memory instead of 20 to 45 times it. The rules look only at `cgpu` in a document that holds it (and at `apiVersion`/`kind` for
/// manifests, where the lean reading gives up); anything the lean reading cannot keep exact
/// (aliases, root merge keys, a key Helm refuses) is parsed whole.
fn parse_for_rules(src: &Arc<Source>) -> yaml::Parsed {
    let lean = yaml::lean::Lean {
        keep: "cgpu",
        keep_required: true,
        give_up_on: &["apiVersion", "kind"],
        droppable: &crate::helm::view_unchanged,
    };
    yaml::parse_lean(src, &lean).unwrap_or_else(|| yaml::parse(src))
}

/// The cluster region of some inputs: `Ok(None)` when no node says, an error listing them when
/// the nodes disagree.
pub fn nodes_region(srcs: &[Arc<Source>]) -> Result<Option<String>, Vec<String>> {
    let mut regions = std::collections::BTreeSet::new();
    for src in srcs {
        if src.invalid.is_some() {
            continue;
        }
        for doc in &yaml::parse(src).documents {
            if let Some(root) = &doc.root {
                let objects = Objects::of(root);
                regions.extend(nodes_of(&objects).iter().filter_map(|n| n.region()));
            }
        }
    }
    match regions.len() {
        0 => Ok(None),
        1 => Ok(regions.into_iter().next()),
        _ => Err(regions.into_iter().collect()),
    }
}

/// The rules over inputs that make one cluster (one input is a cluster of its own). With
/// `cluster`, inputs none of which holds values or an installer give one `cgpu-missing` for the
/// cluster instead of one per input. The values files the inputs' releases name that were read
/// are added to `read`.
fn rules_cluster(
    srcs: &[Arc<Source>],
    opts: &RuleOptions,
    cluster: bool,
    read: &mut Vec<String>,
) -> Vec<Diagnostic> {
    rules_cluster_among(srcs, opts, cluster, None, read)
}

/// [`rules_cluster`], with the ConfigMaps, Secrets and HelmReleases of the run's other inputs
/// (Flux's `valuesFrom`).
fn rules_cluster_among(
    srcs: &[Arc<Source>],
    opts: &RuleOptions,
    cluster: bool,
    others: Option<&crate::helm::place::Others>,
    read: &mut Vec<String>,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut parsed = Vec::with_capacity(srcs.len());
    for src in srcs {
        if let Some(bad) = &src.invalid {
            out.extend(syntax_finding(opts, src, 1, bad.offset, &bad.message));
        } else if src.name != "-" && crate::check::is_chart_template(Path::new(&src.name)) {
            out.extend(chart_template_skipped(src, opts));
        } else {
            parsed.push((src.clone(), parse_for_rules(src)));
        }
    }
    let mut facts = cluster_facts(&parsed);
    // The checklist plans the installer as it will be after the change: its selector and cGPU
    // version come first, so the nodes it selects are checked against the version that will
    // run there (nodes only the live selector matches keep the live installer's version).
    if let Some(selector) = &opts.nodes.selector {
        facts.nodes.legacy_installer = Some(cgpu::selects_legacy(selector));
        if opts.nodes.cgpu.is_some() {
            facts.nodes.cgpu = opts.nodes.cgpu.clone();
        }
        facts.installers.insert(
            0,
            (
                selector.clone(),
                opts.nodes.cgpu.clone(),
                "the planned installer".to_string(),
            ),
        );
    }
    let mut opts = opts.clone();
    if opts.region.is_none() {
        opts.region = facts.region.clone();
    }
    let mut policies: Vec<(String, InstallerPolicy)> = Vec::new();
    for (src, p) in &parsed {
        let (diags, ps) = rules_source(src, p, &opts, &facts, others, read);
        out.extend(diags);
        policies.extend(ps.into_iter().map(|p| (src.name.clone(), p)));
    }
    out.extend(policy_mismatches(&opts, &policies));
    if cluster
        && !facts.any_cgpu
        && let Some(first) = srcs.first()
    {
        out.retain(|d| d.rule != RuleId::CgpuMissing);
        let empty = Default::default();
        let mut ctx = Ctx::new(&opts, 1, &empty);
        let message = format!(
            "no {} DaemonSet in kube-system: cGPU is not installed in this cluster (or not by ack-ai-installer); nothing to check",
            cgpu::INSTALLER_NAMES.join(" or ")
        );
        values::missing(
            &mut ctx,
            first,
            0..0,
            message,
            Some("install ack-ai-installer with cGPU enabled, or leave this cluster out".into()),
        );
        out.extend(ctx.out);
    }
    out
}

/// A chart template named on the command line (pre-commit passes any matching file): skipped
/// with an info instead of a flood of syntax errors about `{{ … }}`.
fn chart_template_skipped(src: &Arc<Source>, opts: &RuleOptions) -> Vec<Diagnostic> {
    let empty = Default::default();
    let mut ctx = Ctx::new(opts, 1, &empty);
    values::missing(
        &mut ctx,
        src,
        0..0,
        "a Helm chart template (Go template syntax, YAML only once rendered): skipped; \
         check the rendered stream with `helm template … | cgpu-lint check -`"
            .into(),
        Some("nothing to fix here: cgpu-lint checks values files and rendered manifests".into()),
    );
    for d in &mut ctx.out {
        d.severity = crate::catalogue::Severity::Info;
    }
    ctx.out
}

/// The rules of a values stack, before suppressions and filters: `layers[0]` is the chart's
/// values, read and layered as Helm does ([`crate::rules::stack::rules`]).
fn rules_stack(layers: &[Arc<Source>], opts: &RuleOptions) -> Vec<Diagnostic> {
    let Some((chart, files)) = layers.split_first() else {
        return Vec::new();
    };
    let layers = crate::helm::Layers {
        chart: Some(chart.clone()),
        files: files.to_vec(),
        sets: Vec::new(),
    };
    crate::rules::stack::rules(&layers, opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::Severity;
    use crate::diag::{Applicability, Consequence, Edit};

    /// A finding of `rule` on bytes 6..13 of one source.
    fn at(src: &Arc<Source>, rule: RuleId, severity: Severity) -> Diagnostic {
        Diagnostic {
            rule,
            severity,
            src: src.clone(),
            span: 6..13,
            ..Diagnostic::io_error("x", String::new())
        }
    }

    // A merged finding that takes the fix of another on its token takes its class with it: an
    // unsafe fix must not become safe (and so applied by `fix`) by being merged.
    #[test]
    fn a_fix_merged_into_another_finding_keeps_its_class() {
        let src = Source::new("v.yaml", "cgpu: \"false\"\n".to_string());
        let kept = at(&src, RuleId::WrongType, Severity::Error);
        let mut merged = at(&src, RuleId::StringBoolean, Severity::Warning);
        merged.edits = vec![Edit {
            src: src.clone(),
            range: 6..13,
            replacement: "false".into(),
        }];
        merged.consequence = Some(Box::new(Consequence {
            line: "changes".into(),
            sets: Vec::new(),
        }));
        let out = one_per_token(vec![kept.clone(), merged.clone()]);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].rule, RuleId::WrongType);
        assert_eq!(out[0].fix_applicability(), Some(Applicability::Unsafe));
        // Promoted by the settings before the merge: safe, and still so after it.
        let classes = FixClasses {
            extend_safe: vec![RuleId::StringBoolean],
            extend_unsafe: Vec::new(),
        };
        let mut both = vec![kept, merged];
        classes.apply(&mut both);
        let out = one_per_token(both);
        assert_eq!(out[0].fix_applicability(), Some(Applicability::Safe));
    }

    #[test]
    fn extend_unsafe_wins_over_extend_safe() {
        let classes = FixClasses {
            extend_safe: vec![RuleId::PolicyWholeFloat],
            extend_unsafe: vec![RuleId::PolicyWholeFloat],
        };
        assert_eq!(
            classes.of(RuleId::PolicyWholeFloat),
            Some(Applicability::Unsafe)
        );
        assert_eq!(classes.of(RuleId::StringBoolean), None);
    }
}
