//! Reading inputs and running the rules over them: one file, a directory, stdin, or a Helm
//! values stack.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use crate::diag::Diagnostic;
use crate::rules::installer::{self, InstallerPolicy};
use crate::rules::{Ctx, RuleOptions, values};
use crate::yaml::{self, Node, Source};

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
    Other,
}

fn classify(root: &Node) -> Kind<'_> {
    if root.entry("cgpu").is_some() {
        return Kind::Values(root);
    }
    if installer::has_installer(root) {
        return Kind::Installers(root);
    }
    Kind::Other
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
    let mut policies = Vec::new();
    let mut out = Vec::new();
    if let Some(bad) = &src.invalid {
        return (
            syntax_finding(opts, src, 1, bad.offset, &bad.message),
            policies,
        );
    }
    let parsed = yaml::parse(src);
    let mut checked_any = false;
    let mut values_docs = 0;
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
                duplicates(&mut ctx, src, doc);
                // The rules read the document as Helm hands it over; what Helm refuses is
                // reported where it is.
                match crate::helm::view(root) {
                    Ok(view) => values::check(&mut ctx, &view),
                    Err(r) => {
                        ctx.report("yaml-syntax", &r.src, r.offset..r.offset, "", r.message);
                        values::check(&mut ctx, root);
                    }
                }
                values_docs += 1;
            }
            Kind::Installers(root) => {
                checked_any = true;
                duplicates(&mut ctx, src, doc);
                policies.extend(installer::check_document(&mut ctx, root));
            }
            Kind::Other => {}
        }
        out.extend(ctx.out);
    }
    let empty = Default::default();
    if values_docs > 0 && parsed.documents.len() > 1 && opts.helm.is_none() {
        out.extend(crate::helm::stack::versions_differ_in(opts, src));
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
        values::missing(&mut ctx, src, span);
        out.extend(ctx.out);
    }
    (out, policies)
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

pub(crate) fn duplicates(ctx: &mut Ctx, src: &Arc<Source>, doc: &yaml::Document) {
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

/// Check files as one Helm values stack over the chart defaults (or `chart_values`), read as
/// `helm` reads them (both Helm 3 and Helm 4 when None): see [`crate::helm::stack`].
pub fn check_stack(
    paths: &[String],
    chart_values: Option<&str>,
    opts: &RuleOptions,
    filter: &Filter,
    max_size: u64,
    helm: Option<crate::helm::Version>,
) -> Report {
    crate::helm::stack::check_stack(paths, chart_values, opts, filter, max_size, helm)
}
