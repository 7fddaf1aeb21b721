//! The one lint pipeline: bytes → documents → classify → rules → inline suppressions → config and
//! command-line filters, in that order. Every front end (check, fix, set, post-render, checklist,
//! the cluster mode, the language server) gets its findings from [`lint_file`] or
//! [`lint_cluster`], so two commands cannot answer differently about the same bytes.
//! Modelled on ruff's `linter.rs` (`check_path`, wrapped by `lint_only` and `lint_fix`).

use std::sync::Arc;

use crate::check::{self, Filter};
use crate::config::Loaded;
use crate::diag::Diagnostic;
use crate::manifest::Objects;
use crate::rules::values::split_image;
use crate::rules::version::parse_tag;
use crate::rules::{NodeContext, RuleOptions};
use crate::yaml::Source;

/// Everything that decides which findings a run reports, besides the bytes.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// What the rules read (region, --require-cgpu).
    pub opts: RuleOptions,
    /// --select/--ignore, with the config's select/ignore already merged in.
    pub filter: Filter,
    /// `.cgpu-lint.toml`, for its per-file-ignores.
    pub config: Option<Arc<Loaded>>,
}

/// The findings of one input checked on its own, suppressed and filtered.
pub fn lint_file(src: &Arc<Source>, settings: &Settings) -> Vec<Diagnostic> {
    let found = check::check_source(src, &settings.opts);
    finish(std::slice::from_ref(src), found, settings)
}

/// The findings of inputs that describe one cluster (installer DaemonSets, node lists, values):
/// each input's own findings plus those across them (`cluster-policy-mismatch`).
pub fn lint_cluster(srcs: &[Arc<Source>], settings: &Settings) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    let mut policies = Vec::new();
    // The node rules read the cluster's installer (its selector and cGPU version): from the
    // caller (the checklist knows the desired side), else from the installer among the inputs.
    let mut opts = settings.opts.clone();
    if opts.nodes.selector.is_none() && opts.nodes.cgpu.is_none() {
        opts.nodes = installer_context(srcs);
    }
    for src in srcs {
        let (diags, ps) = check::check_source_with_policies(src, &opts);
        found.extend(diags);
        policies.extend(ps.into_iter().map(|p| (src.name.clone(), p)));
    }
    found.extend(check::policy_mismatches(&opts, &policies));
    finish(srcs, found, settings)
}

/// The first cgpu-installer DaemonSet among `srcs`: its nodeSelector and its image's cGPU version.
fn installer_context(srcs: &[Arc<Source>]) -> NodeContext {
    for src in srcs {
        if src.invalid.is_some() {
            continue;
        }
        let parsed = crate::yaml::parse(src);
        for root in parsed.documents.iter().filter_map(|d| d.root.as_ref()) {
            let objects = Objects::of(root);
            let Some(inst) = objects
                .iter()
                .filter_map(|o| o.installer())
                .find(|i| i.name() == "cgpu-installer")
            else {
                continue;
            };
            let cgpu = inst
                .image()
                .and_then(|(n, _)| n.as_str().map(str::to_string))
                .and_then(|img| split_image(&img).tag.map(str::to_string))
                .and_then(|t| parse_tag(&t).ok())
                .map(|t| t.core);
            return NodeContext {
                cgpu,
                selector: Some(inst.node_selector_pairs()),
            };
        }
    }
    NodeContext::default()
}

/// Inline suppressions of every source, then the command line's and the config's filters.
fn finish(
    srcs: &[Arc<Source>],
    mut diags: Vec<Diagnostic>,
    settings: &Settings,
) -> Vec<Diagnostic> {
    for src in srcs {
        diags = crate::suppress::apply(src, diags);
    }
    diags.retain(|d| settings.filter.allows(d.rule));
    if let Some(config) = &settings.config {
        config.retain(&mut diags);
    }
    diags
}
