//! The one lint pipeline: bytes → documents → classify → rules → inline suppressions → config and
//! command-line filters, in that order. Every front end (check, fix, set, post-render, checklist,
//! the cluster mode, the language server) gets its findings from [`lint_file`] or
//! [`lint_cluster`], so two commands cannot answer differently about the same bytes.
//! Modelled on ruff's `linter.rs` (`check_path`, wrapped by `lint_only` and `lint_fix`).

use std::sync::Arc;

use crate::check::{self, Filter};
use crate::config::Loaded;
use crate::diag::Diagnostic;
use crate::rules::RuleOptions;
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
    for src in srcs {
        let (diags, ps) = check::check_source_with_policies(src, &settings.opts);
        found.extend(diags);
        policies.extend(ps.into_iter().map(|p| (src.name.clone(), p)));
    }
    found.extend(check::policy_mismatches(&settings.opts, &policies));
    finish(srcs, found, settings)
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
