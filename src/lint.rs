//! The one lint pipeline: bytes → documents → classify (values, installer, nodes, other) → rules →
//! inline suppressions → config and command-line filters, in that order. Every front end (check,
//! check --stack, check --nodes, fix, set, generate, post-render, checklist, the cluster mode, the
//! language server) gets its findings from [`check_path`] through one of its wrappers
//! ([`lint_file`], [`lint_cluster`], [`lint_stack`], [`lint_fix`]), so two commands cannot answer
//! differently about the same bytes.
//!
//! Modelled on ruff's `crates/ruff_linter/src/linter.rs`: `check_path` does the work, `lint_only`
//! and `lint_fix` wrap it.

use crate::rules::catalogue::RuleId;
use std::ops::Range;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use semver::Version;

pub mod inputs;

use crate::cgpu;
use crate::diag::{Diagnostic, Edit};
use crate::edit;
use crate::helm::place;
use crate::manifest::Objects;
use crate::manifest::node::nodes_of;
use crate::rules::installer::{self, InstallerPolicy};
use crate::rules::nodes::{self, NodeFacts};
use crate::rules::{Ctx, RuleOptions, values};
use crate::yaml::{self, Node, Source};

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
}

impl Settings {
    /// These rule options and filter, no per-file ignores.
    pub fn new(opts: RuleOptions, filter: Filter) -> Settings {
        Settings {
            opts,
            filter,
            per_file_ignores: None,
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
    entries: Vec<(globset::GlobMatcher, bool, Vec<String>)>,
}

impl PerFileIgnores {
    /// No patterns yet, relative to the folder of the config file at `config_path`.
    pub fn new(config_path: &Path) -> PerFileIgnores {
        PerFileIgnores {
            dir: absolute(config_path)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            entries: Vec::new(),
        }
    }

    /// `rules` are not reported in the files `glob` matches (also by file name when
    /// `basename`).
    pub fn push(&mut self, glob: globset::GlobMatcher, basename: bool, rules: Vec<String>) {
        self.entries.push((glob, basename, rules));
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `rule` may be reported in `file` (a path as given on the command line).
    pub fn allows(&self, file: &str, rule: &str) -> bool {
        if self.entries.is_empty() || file == "-" {
            return true;
        }
        let abs = absolute(Path::new(file));
        let rel = abs.strip_prefix(&self.dir).unwrap_or(&abs);
        let name = abs.file_name().map(Path::new);
        !self.entries.iter().any(|(glob, basename, rules)| {
            let hit = glob.is_match(rel) || (*basename && name.is_some_and(|n| glob.is_match(n)));
            hit && rules.iter().any(|r| r == rule || r == "all")
        })
    }

    /// Drop the findings these patterns hide.
    pub fn retain(&self, diags: &mut Vec<Diagnostic>) {
        diags.retain(|d| self.allows(d.file(), d.rule.name()));
    }
}

/// `path` made absolute against the working directory, `.` and `..` resolved lexically.
fn absolute(path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
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
}

impl<'a> Inputs<'a> {
    fn sources(&self) -> &'a [Arc<Source>] {
        match *self {
            Inputs::File(src) => std::slice::from_ref(src),
            Inputs::Cluster(srcs) | Inputs::Stack(srcs) => srcs,
        }
    }
}

/// THE pipeline: rules over the inputs, then inline suppressions of every input, then the
/// command line's and the config's filters. Every finding cgpu-lint prints comes from here.
pub fn check_path(inputs: Inputs, settings: &Settings) -> Vec<Diagnostic> {
    let found = match inputs {
        Inputs::File(src) => rules_cluster(std::slice::from_ref(src), &settings.opts, false),
        Inputs::Cluster(srcs) => rules_cluster(srcs, &settings.opts, true),
        Inputs::Stack(layers) => rules_stack(layers, &settings.opts),
    };
    finish(inputs.sources(), found, settings)
}

/// The findings of one input checked on its own, suppressed and filtered (ruff's `lint_only`).
pub fn lint_file(src: &Arc<Source>, settings: &Settings) -> Vec<Diagnostic> {
    check_path(Inputs::File(src), settings)
}

/// The findings of inputs that describe one cluster (installer DaemonSets, node lists, values):
/// each input's own findings, the node rules with what the other inputs say about the cluster,
/// and those across inputs (`cluster-policy-mismatch`).
pub fn lint_cluster(srcs: &[Arc<Source>], settings: &Settings) -> Vec<Diagnostic> {
    check_path(Inputs::Cluster(srcs), settings)
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
    diags.retain(|d| settings.filter.allows(d.rule.name()));
    if let Some(ignores) = &settings.per_file_ignores {
        ignores.retain(&mut diags);
    }
    diags
}

/// One finding per token (spec §4), after suppressions and filters (a suppressed rule leaves the
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
                    kept.edits = d.edits;
                    kept.fix_note = d.fix_note;
                }
            }
            _ => out.push(d),
        }
    }
    out
}

/// The parse the rules read. A values document keeps only its `cgpu` entry: every other root
/// entry is read, checked for duplicate keys and for what Helm would refuse or read differently,
/// then dropped, so a 50 MB values file takes about its own size in memory instead of 20 times
/// it. The rules look only at `cgpu` in a document that holds it (and at `apiVersion`/`kind` for
/// manifests, where the lean reading gives up); anything the lean reading cannot keep exact
/// (aliases, root merge keys, a key Helm refuses) is parsed whole.
fn parse_for_rules(src: &Arc<Source>) -> yaml::Parsed {
    let lean = yaml::lean::Lean {
        keep: "cgpu",
        give_up_on: &["apiVersion", "kind"],
        droppable: &crate::helm::view_unchanged,
    };
    yaml::lean::parse_lean(src, &lean).unwrap_or_else(|| yaml::parse(src))
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

/// A nodeSelector as label pairs.
type Selector = Vec<(String, String)>;

/// What the inputs of one cluster say about it, for the rules on each of them.
#[derive(Debug, Default)]
struct ClusterFacts {
    region: Option<String>,
    nodes: NodeFacts,
    /// Each installer's nodeSelector and the cGPU version its image runs: a node is checked
    /// against the version of the installer that selects it.
    installers: Vec<(Selector, Option<Version>)>,
    /// Whether any input holds a values `cgpu:` block or an installer.
    any_cgpu: bool,
    /// The nodes with more cGPU-sharing pods than the data allows per GPU (`pods-per-gpu`).
    pods_over: Vec<nodes::PodsOver>,
}

/// Read the facts from parsed inputs: the nodes' region, the installers' selectors and the cGPU
/// version the installer (else the values) deploys.
fn cluster_facts(parsed: &[(Arc<Source>, yaml::Parsed)]) -> ClusterFacts {
    let mut regions = std::collections::BTreeSet::new();
    let mut facts = ClusterFacts::default();
    let mut installer_version: Option<Version> = None;
    // The values' tags, in order: their version matters only to node checks, so they are parsed
    // only when some input holds nodes.
    let mut values_tags: Vec<&str> = Vec::new();
    let mut any_nodes = false;
    // The counted pods in input order: (file, document, pointer, node).
    let mut pods: Vec<(String, usize, String, String)> = Vec::new();
    let mut gpus: std::collections::BTreeMap<String, u64> = Default::default();
    for (src, p) in parsed {
        for doc in &p.documents {
            let Some(root) = &doc.root else { continue };
            if root.entry("cgpu").is_some() {
                facts.any_cgpu = true;
            }
            if let Some(tag) = root.pointer("/cgpu/tag").and_then(Node::as_str) {
                values_tags.push(tag);
            }
            let objects = Objects::of(root);
            let nodes = nodes_of(&objects);
            any_nodes |= !nodes.is_empty();
            regions.extend(nodes.iter().filter_map(|n| n.region()));
            for o in objects.iter() {
                if let Some(node) = nodes::sharing_pod_node(&o) {
                    pods.push((
                        src.name.clone(),
                        doc.index,
                        o.pointer.to_string(),
                        node.to_string(),
                    ));
                } else if o.kind == "Node"
                    && let Some(g) = nodes::node_gpus(&o)
                {
                    gpus.insert(o.name.to_string(), g);
                }
            }
            for o in objects.iter().filter(is_device_plugin) {
                let pairs = || crate::manifest::Installer { obj: o }.node_selector_pairs();
                if cgpu::is_hami_device_plugin(o.name) {
                    let hami = facts.nodes.device_plugins.hami.get_or_insert_with(Vec::new);
                    hami.push((o.name.to_string(), pairs()));
                } else if o.name == cgpu::ACK_DEVICE_PLUGIN {
                    let ack = facts.nodes.device_plugins.ack.get_or_insert_with(Vec::new);
                    ack.push((o.name.to_string(), pairs()));
                }
            }
            for inst in objects.iter().filter_map(|o| o.installer()) {
                facts.any_cgpu = true;
                let pairs = inst.node_selector_pairs();
                if cgpu::selects_legacy(&pairs) {
                    facts.nodes.legacy_installer = Some(true);
                } else if inst.name() == cgpu::INSTALLER {
                    facts.nodes.legacy_installer.get_or_insert(false);
                }
                let version = inst
                    .image()
                    .and_then(|(img, _)| img.as_str())
                    .and_then(|s| cgpu::split_image(s).tag)
                    .and_then(|tag| cgpu::parse_tag(tag).ok())
                    .map(|t| t.core);
                if let Some(v) = &version {
                    installer_version.get_or_insert(v.clone());
                }
                facts.installers.push((pairs, version));
            }
        }
    }
    facts.nodes.cgpu = match installer_version {
        Some(v) => Some(v),
        None if any_nodes => values_tags
            .iter()
            .find_map(|t| cgpu::parse_tag(t).ok())
            .map(|t| t.core),
        None => None,
    };
    if let Some(per_gpu) = crate::cgpu::compat::data()
        .issues
        .iter()
        .filter(|i| i.rules.iter().any(|r| r == RuleId::PodsPerGpu.name()))
        .find_map(|i| i.max_pods_per_gpu)
    {
        let mut per_node: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
        for (i, (_, _, _, node)) in pods.iter().enumerate() {
            per_node.entry(node).or_default().push(i);
        }
        for (node, list) in per_node {
            let gpus = gpus.get(node).copied();
            let limit = per_gpu.saturating_mul(gpus.unwrap_or(1));
            let Some(&first_over) = usize::try_from(limit).ok().and_then(|l| list.get(l)) else {
                continue;
            };
            let (file, document, pointer, _) = &pods[first_over];
            facts.pods_over.push(nodes::PodsOver {
                file: file.clone(),
                document: *document,
                pointer: pointer.clone(),
                node: node.to_string(),
                pods: list.len(),
                gpus,
                limit,
            });
        }
    }
    if regions.len() == 1 {
        facts.region = regions.into_iter().next();
    }
    facts
}

/// The rules over inputs that make one cluster (one input is a cluster of its own). With
/// `cluster`, inputs none of which holds values or an installer give one `cgpu-missing` for the
/// cluster instead of one per input.
fn rules_cluster(srcs: &[Arc<Source>], opts: &RuleOptions, cluster: bool) -> Vec<Diagnostic> {
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
        facts
            .installers
            .insert(0, (selector.clone(), opts.nodes.cgpu.clone()));
    }
    let mut opts = opts.clone();
    if opts.region.is_none() {
        opts.region = facts.region.clone();
    }
    let mut policies: Vec<(String, InstallerPolicy)> = Vec::new();
    for (src, p) in &parsed {
        let (diags, ps) = rules_source(src, p, &opts, &facts);
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

/// A GPU device plugin DaemonSet `hami-device-plugin-conflict` reads: HAMi's or ACK's.
fn is_device_plugin(o: &crate::manifest::Object) -> bool {
    o.kind == "DaemonSet"
        && (cgpu::is_hami_device_plugin(o.name) || o.name == cgpu::ACK_DEVICE_PLUGIN)
}

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

/// The rules on one parsed source; returns its installers' policies too.
fn rules_source(
    src: &Arc<Source>,
    parsed: &yaml::Parsed,
    opts: &RuleOptions,
    facts: &ClusterFacts,
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
    let values_from: Vec<(String, place::ValuesRef)> = parsed
        .documents
        .iter()
        .filter_map(|d| d.root.as_ref())
        .filter(|r| r.get("kind").and_then(Node::as_str) == Some("HelmRelease"))
        .flat_map(|r| place::targets(r, None))
        .flat_map(|t| {
            let name = t.name.clone();
            t.values_from.into_iter().map(move |r| (name.clone(), r))
        })
        .collect();
    // The ConfigMaps of this file, by name: a valuesFrom entry naming another is not checked.
    let config_maps: Vec<&str> = parsed
        .documents
        .iter()
        .filter_map(|d| d.root.as_ref())
        .filter(|r| r.get("kind").and_then(Node::as_str) == Some("ConfigMap"))
        .filter_map(|r| r.get("metadata")?.get("name")?.as_str())
        .collect();
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
            for t in &targets {
                if t.form == place::Form::HelmRelease && t.via.is_none() {
                    values_from_unchecked(&mut ctx, src, t, &config_maps);
                }
                if !t.check
                    || (t.form == place::Form::Umbrella && place::disabled(t, root).is_some())
                {
                    continue;
                }
                ctx.out.extend(check_target(src, doc, t, opts));
            }
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
                    node_facts.cgpu = facts
                        .installers
                        .iter()
                        .find(|(sel, _)| !sel.is_empty() && node.matches(sel))
                        .and_then(|(_, v)| v.clone());
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
    if values_docs > 0 && parsed.documents.len() > 1 && opts.helm.is_none() {
        out.extend(crate::rules::stack::versions_differ_in(opts, src));
    }
    if let Some(err) = &parsed.error {
        out.extend(syntax_finding(
            opts,
            src,
            err.document,
            err.offset,
            &err.message,
        ));
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
    config_maps: &[&str],
) {
    for r in &t.values_from {
        if r.kind == "ConfigMap" && config_maps.contains(&r.name.as_str()) {
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
    if crate::helm::view_unchanged(root) {
        values::check(ctx, root);
        return;
    }
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
            values::missing(&mut ctx, src, n.span.clone(), message, None);
        }
        place::Values::Embedded(vsrc, parsed) => {
            // Helm 3 (Argo CD's) reads the first document of a values file.
            if let Some(vdoc) = parsed.documents.first() {
                let mut vctx = Ctx::new(opts, doc.index, &vdoc.alias_uses);
                crate::rules::duplicates(&mut vctx, vsrc, vdoc);
                if let Some(root) = &vdoc.root {
                    check_values(&mut vctx, root);
                }
                inner = vctx.out;
            }
            if let Some(err) = &parsed.error
                && err.document == 1
            {
                inner.extend(syntax_finding(
                    opts,
                    vsrc,
                    doc.index,
                    err.offset,
                    &err.message,
                ));
            }
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

/// What a file without anything to check holds, so that `cgpu-missing` can say so instead of
/// asking for a `cgpu:` block in a Job or a Chart.yaml.
#[derive(Default)]
struct What {
    documents: usize,
    objects: Vec<String>,
    chart_yaml: bool,
}

impl What {
    fn note(&mut self, root: &Node, objects: &Objects) {
        self.documents += 1;
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
fn policy_mismatches(
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
fn syntax_finding(
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
        d.severity = crate::rules::catalogue::Severity::Info;
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

/// How many check → splice rounds a fix may take. One is almost always enough; a second round
/// picks up a fix that was held back because its range overlapped another fix of the first.
pub const MAX_ROUNDS: usize = 5;

/// One fix that was applied.
#[derive(Debug, Clone)]
pub struct Applied {
    pub rule: RuleId,
    /// 1-based line of the finding in the text the round started from.
    pub line: usize,
    pub message: String,
    /// For an unsafe fix (applied under `--unsafe-fixes`): what it changes at the next upgrade.
    pub consequence: Option<crate::diag::Consequence>,
}

/// The outcome of fixing one source.
#[derive(Debug)]
pub struct Fixed {
    pub original: Arc<Source>,
    /// The fixed text (equal to the original when nothing was fixed).
    pub text: String,
    pub applied: Vec<Applied>,
    /// Findings on the fixed text: what is left for a person.
    pub remaining: Vec<Diagnostic>,
    /// Set when a round produced text that no longer parses; the fixes of that round and later
    /// are dropped (this is a bug in a rule's edit, never expected).
    pub refused: Option<String>,
}

impl Fixed {
    pub fn changed(&self) -> bool {
        self.text != self.original.text
    }
}

/// Fix `src` to a fixpoint (at most [`MAX_ROUNDS`] rounds) with the findings of [`lint_file`]:
/// a finding that is suppressed or filtered out is neither fixed nor reported (ruff's `lint_fix`).
/// Only safe fixes are applied unless `unsafe_fixes` (`--unsafe-fixes`); the unsafe ones left
/// stay among [`Fixed::remaining`] with their consequence.
pub fn lint_fix(src: &Arc<Source>, settings: &Settings, unsafe_fixes: bool) -> Fixed {
    let mut current = src.clone();
    let mut diags = lint_file(&current, settings);
    let mut applied = Vec::new();
    let mut refused = None;
    // Text that does not parse (or is not UTF-8) has no fixes: the rules only see parsed values.
    // (Judged from the findings, not by parsing again: fixing a fleet that needs no fix must
    // cost one parse per file.)
    if src.invalid.is_none() && parses(&diags) {
        for _ in 0..MAX_ROUNDS {
            let fixable: Vec<&Diagnostic> = diags
                .iter()
                .filter(|d| {
                    d.fix_applies(unsafe_fixes)
                        && d.edits.iter().all(|e| Arc::ptr_eq(&e.src, &current))
                })
                .collect();
            if fixable.is_empty() {
                break;
            }
            let groups: Vec<Vec<&Edit>> =
                fixable.iter().map(|d| d.edits.iter().collect()).collect();
            let chosen = edit::compatible_groups(&groups);
            let edits: Vec<&Edit> = chosen.iter().flat_map(|&i| groups[i].clone()).collect();
            let text = match edit::apply(&current.text, &edits) {
                Ok(t) => t,
                Err(e) => {
                    refused = Some(format!("internal error splicing fixes: {e}"));
                    break;
                }
            };
            if text == current.text {
                break;
            }
            let next = Source::new(current.name.clone(), text);
            let next_diags = lint_file(&next, settings);
            if !parses(&next_diags) {
                refused = Some(
                    "a fix produced YAML that does not parse; those fixes were not applied".into(),
                );
                break;
            }
            applied.extend(chosen.iter().map(|&i| {
                let d = fixable[i];
                Applied {
                    rule: d.rule,
                    line: d.start().line,
                    message: d.message.clone(),
                    consequence: d.consequence.as_deref().cloned(),
                }
            }));
            current = next;
            diags = next_diags;
        }
    }
    Fixed {
        original: src.clone(),
        text: current.text.clone(),
        applied,
        remaining: diags,
        refused,
    }
}

fn parses(diags: &[Diagnostic]) -> bool {
    !diags.iter().any(|d| d.rule == RuleId::YamlSyntax)
}

/// Does `text` parse (the check before a file is written)?
pub fn text_parses(name: &str, text: &str) -> bool {
    let src = Source::new(name, text.to_string());
    src.invalid.is_none() && yaml::parse(&src).error.is_none()
}
