//! The pipeline over the inputs [`crate::check`] reads: each path on its own, several files as
//! one cluster, or a Helm values stack, with the input errors beside the findings.

use std::sync::Arc;

use rayon::prelude::*;

use super::{Settings, lint_cluster, lint_file, lint_stack};
use crate::cgpu;
use crate::check::{InputError, expand_paths, read_input};
use crate::diag::Diagnostic;
use crate::yaml::Source;

/// The outcome of checking several inputs.
#[derive(Debug, Default)]
pub struct Report {
    pub diagnostics: Vec<Diagnostic>,
    pub errors: Vec<InputError>,
    pub files: usize,
    /// The inputs that were read (what `--format policyreport` reports as checked).
    pub sources: Vec<Arc<Source>>,
}

/// Check each path on its own through [`lint_file`], in parallel; findings in input order.
pub fn check_paths(paths: &[String], settings: &Settings, max_size: u64) -> Report {
    let (files, mut errors) = expand_paths(paths);
    type Checked = Result<(Arc<Source>, Vec<Diagnostic>), InputError>;
    let one = |p: &String| -> Checked {
        let src = read_input(p, max_size)?;
        let d = lint_file(&src, settings);
        Ok((src, d))
    };
    // A pre-commit hook usually gets one or a few files: starting rayon's thread pool would
    // cost more than it saves.
    let results: Vec<Checked> = if files.len() < 4 {
        files.iter().map(one).collect()
    } else {
        files.par_iter().map(one).collect()
    };
    let mut diagnostics = Vec::new();
    let mut sources = Vec::new();
    for r in results {
        match r {
            Ok((src, d)) => {
                sources.push(src);
                diagnostics.extend(d);
            }
            Err(e) => errors.push(e),
        }
    }
    Report {
        diagnostics,
        errors,
        files: files.len(),
        sources,
    }
}

/// Check files as one cluster through [`lint_cluster`] (`check --nodes`, `--same-cluster`).
pub fn check_cluster(paths: &[String], settings: &Settings, max_size: u64) -> Report {
    let (files, mut errors) = expand_paths(paths);
    let mut srcs = Vec::new();
    for f in &files {
        match read_input(f, max_size) {
            Ok(s) => srcs.push(s),
            Err(e) => errors.push(e),
        }
    }
    Report {
        diagnostics: lint_cluster(&srcs, settings),
        errors,
        files: files.len(),
        sources: srcs,
    }
}

/// Check files as one Helm values stack over the chart defaults (or `chart_values`), through
/// [`lint_stack`].
pub fn check_stack(
    paths: &[String],
    chart_values: Option<&str>,
    settings: &Settings,
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
        None => Source::new("<chart defaults>", cgpu::CHART_DEFAULTS.to_string()),
    };
    let mut layers = vec![base_src];
    for p in paths {
        match read_input(p, max_size) {
            Ok(s) => layers.push(s),
            Err(e) => report.errors.push(e),
        }
    }
    // The files read (a missing one is an io-error, not a file checked).
    report.files = layers.len() - 1;
    report.diagnostics = lint_stack(&layers, settings);
    report.sources = layers.into_iter().skip(1).collect();
    report
}
