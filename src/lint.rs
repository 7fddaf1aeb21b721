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
/// each input's own findings plus those across them: `cluster-policy-mismatch`, the region of
/// the nodes (when no `--region` is set) for the installer rules, the node rules with the cGPU
/// version of the installer that selects each node, and one `cgpu-missing` for the cluster when
/// no input holds an installer or values (instead of one per input). `check --cluster` calls
/// this with the objects it read from a kubeconfig context, so a cluster and the same objects
/// as files give the same findings.
pub fn lint_cluster(srcs: &[Arc<Source>], settings: &Settings) -> Vec<Diagnostic> {
    let mut opts = settings.opts.clone();
    if opts.region.is_none() {
        // Nodes in several regions are not one ACK cluster: no region is assumed then.
        opts.region = check::nodes_region(srcs).ok().flatten();
    }
    let mut found = Vec::new();
    let mut policies = Vec::new();
    let mut installers = Vec::new();
    let mut node_sources = Vec::new();
    let mut any_cgpu = false;
    for src in srcs {
        let (diags, ps, held) = check::check_source_held(src, &opts);
        found.extend(diags);
        if !ps.is_empty() || held.cgpu {
            installers.extend(check::installers_of(src));
        }
        any_cgpu |= held.cgpu;
        if held.nodes {
            node_sources.push(src);
        }
        policies.extend(ps.into_iter().map(|p| (src.name.clone(), p)));
    }
    // The checklist plans the installer as it will be after the change: its selector and
    // cGPU version stand in for the cgpu-installer read from the inputs.
    if let Some(selector) = &opts.nodes.selector {
        installers.retain(|i| i.name != "cgpu-installer");
        installers.insert(
            0,
            check::Placed {
                name: "cgpu-installer".into(),
                selector: selector.clone(),
                version: opts.nodes.cgpu.clone(),
            },
        );
    }
    found.extend(check::policy_mismatches(&opts, &policies));
    for src in node_sources {
        found.extend(check::check_nodes(src, &opts, &installers));
    }
    if !any_cgpu && let Some(first) = srcs.first() {
        found.retain(|d| d.rule != "cgpu-missing");
        found.extend(check::cluster_missing(first, &opts));
    }
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
