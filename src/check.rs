//! Reading inputs and running the rules over them: one file, a directory, stdin, or a Helm
//! values stack.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use crate::diag::Diagnostic;
use crate::rules::installer::{self, InstallerPolicy};
use crate::rules::{Ctx, RuleOptions, values};
use crate::yaml::{self, Node, Source, Value};

/// The largest values file or manifest `check` reads (post-render streams have no limit).
pub const DEFAULT_MAX_FILE_SIZE: u64 = 64 * 1024 * 1024;

/// A problem that stops the tool from doing its job on an input (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: is a directory; give it to `check`, which walks directories")]
    IsDirectory { path: String },
    #[error("{path}: file is {size} bytes, over the {limit}-byte limit (--max-file-size)")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("{path}: {message}")]
    Walk { path: String, message: String },
}

impl InputError {
    /// The input the error is about.
    pub fn path(&self) -> &str {
        match self {
            InputError::Io { path, .. }
            | InputError::IsDirectory { path }
            | InputError::TooLarge { path, .. }
            | InputError::Walk { path, .. } => path,
        }
    }

    /// The error as an `io-error` finding on its input, so that every output format carries it.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let path = self.path();
        let full = self.to_string();
        let reason = full
            .strip_prefix(&format!("{path}: "))
            .unwrap_or(&full)
            .to_string();
        Diagnostic::io_error(path, reason)
    }
}

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

/// Read one input (a path or `-` for stdin) into a [`Source`].
pub fn read_input(path: &str, max_size: u64) -> Result<Arc<Source>, InputError> {
    let io = |source| InputError::Io {
        path: path.to_string(),
        source,
    };
    let bytes = if path == "-" {
        let mut buf = Vec::new();
        std::io::stdin().lock().read_to_end(&mut buf).map_err(io)?;
        buf
    } else {
        let meta = std::fs::metadata(path).map_err(io)?;
        if meta.is_dir() {
            return Err(InputError::IsDirectory {
                path: path.to_string(),
            });
        }
        if meta.len() > max_size {
            return Err(InputError::TooLarge {
                path: path.to_string(),
                size: meta.len(),
                limit: max_size,
            });
        }
        std::fs::read(path).map_err(io)?
    };
    if bytes.len() as u64 > max_size {
        return Err(InputError::TooLarge {
            path: path.to_string(),
            size: bytes.len() as u64,
            limit: max_size,
        });
    }
    Ok(match yaml::source::decode(bytes) {
        Ok(text) => Source::new(path, text),
        Err((lossy, offset, message)) => Source::new_invalid(path, lossy, offset, message),
    })
}

/// Expand directories into their `*.yaml`/`*.yml` files (honouring .gitignore), keep files and
/// `-` as given. Directory contents are sorted so reports are stable.
pub fn expand_paths(paths: &[String]) -> (Vec<String>, Vec<InputError>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        if p != "-" && Path::new(p).is_dir() {
            let mut found: Vec<PathBuf> = Vec::new();
            let walker = ignore::WalkBuilder::new(p)
                .hidden(false)
                .git_ignore(true)
                .git_global(false)
                .git_exclude(true)
                .require_git(false)
                .follow_links(false)
                .filter_entry(|e| e.file_name() != ".git" && !is_chart_templates_dir(e.path()))
                .build();
            for entry in walker {
                match entry {
                    Ok(e) => {
                        let path = e.path();
                        let is_yaml = path
                            .extension()
                            .and_then(|x| x.to_str())
                            .is_some_and(|x| x == "yaml" || x == "yml");
                        if is_yaml && e.file_type().is_some_and(|t| t.is_file()) {
                            found.push(path.to_path_buf());
                        }
                    }
                    Err(err) => errors.push(InputError::Walk {
                        path: p.clone(),
                        message: err.to_string(),
                    }),
                }
            }
            found.sort();
            out.extend(found.into_iter().map(|f| f.to_string_lossy().into_owned()));
        } else {
            out.push(p.clone());
        }
    }
    (out, errors)
}

/// A chart's `templates/` folder (its parent holds `Chart.yaml`): Go templates, which are YAML
/// only after `helm template` renders them. Directory walks skip it.
fn is_chart_templates_dir(dir: &Path) -> bool {
    dir.file_name().is_some_and(|n| n == "templates")
        && dir.parent().is_some_and(|p| p.join("Chart.yaml").is_file())
}

/// Is this file inside a chart's `templates/` folder?
pub fn is_chart_template(path: &Path) -> bool {
    path.ancestors().skip(1).any(is_chart_templates_dir)
}

/// A chart template named on the command line (pre-commit passes any matching file): skipped
/// with an info instead of a flood of syntax errors about `{{ … }}`.
fn chart_template_skipped(src: &Arc<Source>, opts: &RuleOptions) -> Vec<Diagnostic> {
    let empty = Default::default();
    let mut ctx = Ctx::new(opts, 1, &empty);
    values::missing(&mut ctx, src, 0..0);
    if let Some(d) = ctx.out.last_mut() {
        d.message =
            "a Helm chart template (Go template syntax, YAML only once rendered): skipped; \
                     check the rendered stream with `helm template … | cgpu-lint check -`"
                .into();
        d.help = "nothing to fix here: cgpu-lint checks values files and rendered manifests".into();
        d.severity = crate::diag::Severity::Info;
    }
    ctx.out
}

/// What one document is, judged by its content.
enum Kind<'a> {
    Values(&'a Node),
    /// Kubernetes objects among which is a cgpu installer DaemonSet.
    Installers(&'a Node),
    /// Node objects (`kubectl get nodes -o yaml|json`, one Node): their rules need the cluster
    /// (which installer selects a node, which cGPU version it runs), so they run in
    /// [`crate::lint::lint_cluster`]; on its own such a document is not a skipped values file.
    Nodes,
    Other,
}

fn classify(root: &Node) -> Kind<'_> {
    if root.entry("cgpu").is_some() {
        return Kind::Values(root);
    }
    if installer::has_installer(root) {
        return Kind::Installers(root);
    }
    if crate::manifest::Objects::of(root)
        .iter()
        .any(|o| o.kind == "Node")
    {
        return Kind::Nodes;
    }
    Kind::Other
}

/// What a source held, for the checks across the sources of one cluster.
#[derive(Debug, Default)]
pub struct Held {
    /// A values `cgpu:` block or an installer DaemonSet.
    pub cgpu: bool,
    /// Node objects.
    pub nodes: bool,
}

/// Check one source with every rule; findings unfiltered, in source order. The installers of
/// one source are one cluster: their policies must agree (`cluster-policy-mismatch`).
pub fn check_source(src: &Arc<Source>, opts: &RuleOptions) -> Vec<Diagnostic> {
    let (mut out, policies) = check_source_with_policies(src, opts);
    let named: Vec<(String, InstallerPolicy)> = policies
        .into_iter()
        .map(|p| (src.name.clone(), p))
        .collect();
    out.extend(policy_mismatches(opts, &named));
    out
}

/// `cluster-policy-mismatch` findings for installers that belong to one cluster.
pub fn policy_mismatches(
    opts: &RuleOptions,
    policies: &[(String, InstallerPolicy)],
) -> Vec<Diagnostic> {
    let empty = Default::default();
    let mut out = Vec::new();
    for (i, message) in installer::mismatches(policies) {
        let p = &policies[i].1;
        let mut ctx = Ctx::new(opts, p.document, &empty);
        ctx.at(
            "cluster-policy-mismatch",
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
    ctx.report("yaml-syntax", src, offset..offset, "", message);
    ctx.out
}

/// [`check_source`] without the cross-installer check, returning the installers' policies.
pub fn check_source_with_policies(
    src: &Arc<Source>,
    opts: &RuleOptions,
) -> (Vec<Diagnostic>, Vec<InstallerPolicy>) {
    let (out, policies, _) = check_source_held(src, opts);
    (out, policies)
}

/// [`check_source_with_policies`], also saying what the source held.
pub fn check_source_held(
    src: &Arc<Source>,
    opts: &RuleOptions,
) -> (Vec<Diagnostic>, Vec<InstallerPolicy>, Held) {
    let mut policies = Vec::new();
    let mut out = Vec::new();
    let mut held = Held::default();
    if let Some(bad) = &src.invalid {
        return (
            syntax_finding(opts, src, 1, bad.offset, &bad.message),
            policies,
            held,
        );
    }
    let parsed = yaml::parse(src);
    let mut checked_any = false;
    let mut first_content: Option<(usize, std::ops::Range<usize>)> = None;
    for doc in &parsed.documents {
        let Some(root) = &doc.root else { continue };
        if first_content.is_none() {
            first_content = Some((doc.index, root.span.start..root.span.start));
        }
        let mut ctx = Ctx::new(opts, doc.index, &doc.alias_uses);
        match classify(root) {
            Kind::Values(root) => {
                checked_any = true;
                held.cgpu = true;
                duplicates(&mut ctx, src, doc);
                values::check(&mut ctx, root);
            }
            Kind::Installers(root) => {
                checked_any = true;
                held.cgpu = true;
                duplicates(&mut ctx, src, doc);
                policies.extend(installer::check_document(&mut ctx, root));
            }
            Kind::Nodes => {
                checked_any = true;
                held.nodes = true;
                duplicates(&mut ctx, src, doc);
            }
            Kind::Other => {}
        }
        out.extend(ctx.out);
    }
    let empty = Default::default();
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
        values::missing(&mut ctx, src, span);
        out.extend(ctx.out);
    }
    (out, policies, held)
}

/// An installer of a cluster as the node rules need it: which nodes it selects and the cGPU
/// version its image runs.
#[derive(Debug, Clone)]
pub struct Placed {
    pub name: String,
    pub selector: Vec<(String, String)>,
    pub version: Option<semver::Version>,
}

/// The installers of a source (their nodeSelector and image version).
pub fn installers_of(src: &Arc<Source>) -> Vec<Placed> {
    let parsed = yaml::parse(src);
    let mut out = Vec::new();
    for root in parsed.documents.iter().filter_map(|d| d.root.as_ref()) {
        for obj in crate::manifest::Objects::of(root).iter() {
            if let Some(inst) = obj.installer() {
                let version = inst
                    .image()
                    .and_then(|(n, _)| n.as_str().map(str::to_string))
                    .and_then(|img| values::split_image(&img).tag.map(str::to_string))
                    .and_then(|t| crate::rules::version::parse_tag(&t).ok())
                    .map(|t| t.core);
                out.push(Placed {
                    name: inst.name().to_string(),
                    selector: inst.node_selector_pairs(),
                    version,
                });
            }
        }
    }
    out
}

/// The one region (`topology.kubernetes.io/region`) the nodes of these sources carry, if they
/// agree on one.
pub fn nodes_region(srcs: &[Arc<Source>]) -> Result<Option<String>, Vec<String>> {
    let mut regions = std::collections::BTreeSet::new();
    for src in srcs {
        let parsed = yaml::parse(src);
        for root in parsed.documents.iter().filter_map(|d| d.root.as_ref()) {
            let objects = crate::manifest::Objects::of(root);
            regions.extend(
                crate::rules::nodes::nodes_of(&objects)
                    .iter()
                    .filter_map(|n| n.region()),
            );
        }
    }
    match regions.len() {
        0 => Ok(None),
        1 => Ok(regions.into_iter().next()),
        _ => Err(regions.into_iter().collect()),
    }
}

/// The node rules over the nodes of a source: a node selected by an installer is checked
/// against the cGPU version that installer runs (the driver matrix).
pub fn check_nodes(
    src: &Arc<Source>,
    opts: &RuleOptions,
    installers: &[Placed],
) -> Vec<Diagnostic> {
    let parsed = yaml::parse(src);
    let mut out = Vec::new();
    for doc in &parsed.documents {
        let Some(root) = &doc.root else { continue };
        let objects = crate::manifest::Objects::of(root);
        let mut ctx = Ctx::new(opts, doc.index, &doc.alias_uses);
        for node in crate::rules::nodes::nodes_of(&objects) {
            let version = installers
                .iter()
                .find(|i| !i.selector.is_empty() && node.matches(&i.selector))
                .and_then(|i| i.version.as_ref());
            let selector = installers
                .iter()
                .find(|i| i.name == "cgpu-installer")
                .map(|i| i.selector.as_slice());
            crate::rules::nodes::check(&mut ctx, &node, version, selector);
        }
        out.extend(ctx.out);
    }
    out
}

/// `cgpu-missing` for a cluster whose inputs hold no installer and no values: cGPU is not
/// installed there (or not by ack-ai-installer). Reported at the start of `src`.
pub fn cluster_missing(src: &Arc<Source>, opts: &RuleOptions) -> Vec<Diagnostic> {
    let empty = Default::default();
    let mut ctx = Ctx::new(opts, 1, &empty);
    values::missing(&mut ctx, src, 0..0);
    if let Some(d) = ctx.out.last_mut() {
        d.message = if opts.require_cgpu {
            "no cgpu-installer or cgpu-core-installer DaemonSet in kube-system, and --require-cgpu is set".into()
        } else {
            "no cgpu-installer or cgpu-core-installer DaemonSet in kube-system: cGPU is not installed in this cluster (or not by ack-ai-installer); nothing to check".into()
        };
        d.help = "install ack-ai-installer with cGPU enabled, or leave this cluster out".into();
    }
    ctx.out
}

/// `--same-cluster`: the installers of all `paths` belong to one cluster. Returns the
/// `cluster-policy-mismatch` findings across files (a file's own mismatches are already reported
/// by [`check_source`] and are left out here).
pub fn same_cluster_mismatches(
    paths: &[String],
    opts: &RuleOptions,
    filter: &Filter,
    max_size: u64,
) -> Vec<Diagnostic> {
    let (files, _) = expand_paths(paths);
    let mut all = Vec::new();
    let mut own = std::collections::HashSet::new();
    for f in &files {
        let Ok(src) = read_input(f, max_size) else {
            continue;
        };
        let (_, policies) = check_source_with_policies(&src, opts);
        let named: Vec<(String, InstallerPolicy)> =
            policies.into_iter().map(|p| (f.clone(), p)).collect();
        for d in policy_mismatches(opts, &named) {
            own.insert((d.src.name.clone(), d.document, d.path.clone()));
        }
        all.extend(named);
    }
    policy_mismatches(opts, &all)
        .into_iter()
        .filter(|d| !own.contains(&(d.src.name.clone(), d.document, d.path.clone())))
        .filter(|d| filter.allows(d.rule))
        .collect()
}

fn duplicates(ctx: &mut Ctx, src: &Arc<Source>, doc: &yaml::Document) {
    for d in &doc.duplicates {
        let first = src.line_col(d.first.start).line;
        let second = src.line_col(d.second.start).line;
        let path = format!("{}/{}", d.map_pointer, yaml::tree::escape_pointer(&d.key));
        ctx.report(
            "duplicate-key",
            src,
            d.second.clone(),
            path,
            format!(
                "key `{}` appears twice in this mapping (lines {first} and {second}); Helm keeps the last one (line {second})",
                d.key
            ),
        );
        ctx.relate_last(
            d.first.clone(),
            format!("first `{}` here (ignored by Helm)", d.key),
        );
    }
}

/// The outcome of checking several inputs.
#[derive(Debug, Default)]
pub struct Report {
    pub diagnostics: Vec<Diagnostic>,
    pub errors: Vec<InputError>,
    pub files: usize,
}

/// Check each path on its own, in parallel; findings sorted by file and position.
pub fn check_paths(paths: &[String], opts: &RuleOptions, filter: &Filter, max_size: u64) -> Report {
    let (files, mut errors) = expand_paths(paths);
    let one = |p: &String| -> Result<Vec<Diagnostic>, InputError> {
        let src = read_input(p, max_size)?;
        if p != "-" && is_chart_template(Path::new(p)) {
            return Ok(chart_template_skipped(&src, opts));
        }
        Ok(crate::suppress::apply(&src, check_source(&src, opts)))
    };
    // A pre-commit hook usually gets one or a few files: starting rayon's thread pool would
    // cost more than it saves.
    let results: Vec<Result<Vec<Diagnostic>, InputError>> = if files.len() < 4 {
        files.iter().map(one).collect()
    } else {
        files.par_iter().map(one).collect()
    };
    let mut diagnostics = Vec::new();
    for r in results {
        match r {
            Ok(d) => diagnostics.extend(d.into_iter().filter(|d| filter.allows(d.rule))),
            Err(e) => errors.push(e),
        }
    }
    Report {
        diagnostics,
        errors,
        files: files.len(),
    }
}

/// The chart's documented defaults, as the bottom of a `--stack`.
pub const CHART_DEFAULTS: &str = "\
# ack-ai-installer chart defaults (documented), the base of every values stack
cgpu:
  enabled: true
  image: acs/cgpu-installer
  tag: v1.5.3-8d3fc1b-aliyun
  financeCloudImageTag: v1.0.7-fin
  imagePullPolicy: IfNotPresent
  policy: 1
  nodeSelector: {}
  checkRegions: true
";

/// Merge `over` into `base` the way `helm -f a -f b` layers values: mappings merge key by key,
/// anything else replaces, and null deletes the key.
pub fn coalesce(base: &mut Node, over: &Node) {
    let (Value::Map(base_entries), Value::Map(over_entries)) = (&mut base.value, &over.value)
    else {
        *base = over.clone();
        return;
    };
    for e in over_entries {
        if matches!(e.value.scalar(), Some(yaml::Scalar::Null)) {
            base_entries.retain(|b| b.key != e.key);
            continue;
        }
        match base_entries.iter_mut().find(|b| b.key == e.key) {
            Some(b) if b.value.as_map().is_some() && e.value.as_map().is_some() => {
                coalesce(&mut b.value, &e.value);
            }
            Some(b) => *b = e.clone(),
            None => base_entries.push(e.clone()),
        }
    }
}

/// Check files as one Helm values stack over the chart defaults (or `chart_values`).
pub fn check_stack(
    paths: &[String],
    chart_values: Option<&str>,
    opts: &RuleOptions,
    filter: &Filter,
    max_size: u64,
) -> Report {
    let mut report = Report::default();
    let base_src = match chart_values {
        Some(p) => match read_input(p, max_size) {
            Ok(s) => s,
            Err(e) => {
                report.errors.push(e);
                return report;
            }
        },
        None => Source::new("<chart defaults>", CHART_DEFAULTS.to_string()),
    };
    let mut layers = Vec::new();
    for p in paths {
        match read_input(p, max_size) {
            Ok(s) => layers.push(s),
            Err(e) => report.errors.push(e),
        }
    }
    report.files = paths.len();
    report.diagnostics = check_stack_sources(Some(base_src), &layers, opts, filter);
    report
}

/// The findings of a values stack already read: `base` (the chart's values; the documented
/// defaults when `None`) under `layers` in `-f` order. `check --stack` and the language server
/// call this.
pub fn check_stack_sources(
    base: Option<Arc<Source>>,
    layers: &[Arc<Source>],
    opts: &RuleOptions,
    filter: &Filter,
) -> Vec<Diagnostic> {
    let mut report = Report::default();
    let base_src =
        base.unwrap_or_else(|| Source::new("<chart defaults>", CHART_DEFAULTS.to_string()));
    let mut all = vec![base_src];
    all.extend(layers.iter().cloned());
    let layers = all;
    let mut merged: Option<Node> = None;
    for src in &layers {
        // Syntax problems and duplicates are reported per file, as for a plain check.
        let parsed = yaml::parse(src);
        let empty = Default::default();
        if src.invalid.is_some() || parsed.error.is_some() {
            report.diagnostics.extend(
                check_source(src, opts)
                    .into_iter()
                    .filter(|d| d.rule == "yaml-syntax" && filter.allows(d.rule)),
            );
            continue;
        }
        // Helm reads the first document of a values file.
        let Some(doc) = parsed.documents.into_iter().find(|d| d.root.is_some()) else {
            continue;
        };
        let mut ctx = Ctx::new(opts, doc.index, &empty);
        duplicates(&mut ctx, src, &doc);
        report
            .diagnostics
            .extend(ctx.out.into_iter().filter(|d| filter.allows(d.rule)));
        let root = doc.root.expect("filtered on root");
        match &mut merged {
            None => merged = Some(root),
            Some(m) => coalesce(m, &root),
        }
    }
    if let Some(root) = merged {
        let empty = Default::default();
        let mut ctx = Ctx::new(opts, 1, &empty);
        if root.entry("cgpu").is_some() {
            values::check(&mut ctx, &root);
        } else {
            values::missing(&mut ctx, &layers[layers.len() - 1], 0..0);
        }
        report
            .diagnostics
            .extend(ctx.out.into_iter().filter(|d| filter.allows(d.rule)));
    }
    // Inline suppressions of every layer. Here they come after --select/--ignore, so an ignore
    // whose rule the command line filtered out counts as unused (then filtered out itself when
    // the command line hides unused-ignore).
    for src in &layers {
        report.diagnostics = crate::suppress::apply(src, std::mem::take(&mut report.diagnostics));
    }
    report.diagnostics.retain(|d| filter.allows(d.rule));
    report.diagnostics
}
