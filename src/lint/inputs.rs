//! The pipeline over the inputs [`crate::check`] reads: each path on its own, several files as
//! one cluster, or a Helm values stack, with the input errors beside the findings.

use std::sync::Arc;

use rayon::prelude::*;

use super::{Inputs, Settings, check_path_reading, lint_stack};
use crate::cgpu;
use crate::check::{InputError, expand_paths_with, read_input};
use crate::diag::Diagnostic;
use crate::yaml::Source;

/// The outcome of checking several inputs.
#[derive(Debug, Default)]
pub struct Report {
    pub diagnostics: Vec<Diagnostic>,
    pub errors: Vec<InputError>,
    /// The files checked: the inputs, and the values files their releases name that were read
    /// (each once: a file both given and read is one).
    pub files: usize,
    /// The inputs that were read (what `--format policyreport` reports as checked).
    pub sources: Vec<Arc<Source>>,
}

/// Check each path on its own through [`lint_file`], in parallel; findings in input order.
pub fn check_paths(paths: &[String], settings: &Settings, max_size: u64) -> Report {
    let (files, mut errors) = expand_paths_with(paths, settings.include_markdown);
    if files.len() > 1 {
        return check_among(files, errors, settings, max_size);
    }
    type Checked = Result<(Arc<Source>, Vec<Diagnostic>, Vec<String>), InputError>;
    let one = |p: &String| -> Checked {
        let src = read_input(p, max_size)?;
        let (d, read) = check_path_reading(Inputs::File(&src), settings);
        Ok((src, d, read))
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
    let mut read = Vec::new();
    for r in results {
        match r {
            Ok((src, d, r)) => {
                sources.push(src);
                diagnostics.extend(d);
                read.extend(r);
            }
            Err(e) => errors.push(e),
        }
    }
    Report {
        diagnostics,
        errors,
        files: files_checked(&files, read),
        sources,
    }
}

/// How many files a run checked: the inputs, and each file their releases read that is not one
/// of them (paths compared as absolute paths, lexically: no file is touched again).
fn files_checked(inputs: &[String], read: Vec<String>) -> usize {
    if read.is_empty() {
        return inputs.len();
    }
    let key = |p: &str| crate::paths::absolute(std::path::Path::new(p));
    let mut seen: std::collections::HashSet<std::path::PathBuf> = inputs
        .iter()
        .filter(|p| *p != "-")
        .map(|p| key(p))
        .collect();
    inputs.len() + read.iter().filter(|r| seen.insert(key(r))).count()
}

/// The files read, in parallel from 4 files on; what cannot be read goes to `errors`.
fn read_all(files: &[String], errors: &mut Vec<InputError>, max_size: u64) -> Vec<Arc<Source>> {
    let read = |p: &String| read_input(p, max_size);
    let results: Vec<Result<Arc<Source>, InputError>> = if files.len() < 4 {
        files.iter().map(read).collect()
    } else {
        files.par_iter().map(read).collect()
    };
    let mut sources = Vec::new();
    for r in results {
        match r {
            Ok(src) => sources.push(src),
            Err(e) => errors.push(e),
        }
    }
    sources
}

/// Each source checked on its own through [`super::lint_file_among`] (with the files it read),
/// in parallel from 4 files on.
fn lint_each_among(
    sources: &[Arc<Source>],
    others: &crate::helm::place::Others,
    settings: &Settings,
) -> Vec<(Vec<Diagnostic>, Vec<String>)> {
    let one = |src: &Arc<Source>| check_path_reading(Inputs::Among(src, others), settings);
    if sources.len() < 4 {
        sources.iter().map(one).collect()
    } else {
        sources.par_iter().map(one).collect()
    }
}

/// `check --gitops`: of the files, only those whose bytes name the chart, those holding the
/// ConfigMaps and Secrets its HelmReleases take values from, and the values files beside an
/// umbrella's Chart.yaml that names it, are checked (each on its own, with
/// the ConfigMaps, Secrets and HelmReleases of all the files); the others are not reported. The byte search comes before any parse, so a repository
/// of thousands of YAML files costs about the time to read them.
pub fn check_gitops(paths: &[String], settings: &Settings, max_size: u64) -> Report {
    let (files, mut errors) = expand_paths_with(paths, settings.include_markdown);
    let all = read_all(&files, &mut errors, max_size);
    let others = crate::helm::place::Others::of(&all);
    let sources: Vec<Arc<Source>> = gitops_selection(&all, &others)
        .into_iter()
        .filter(|(_, skip)| skip.is_none())
        .map(|(s, _)| s.clone())
        .collect();
    let (diagnostics, read) = flatten(lint_each_among(&sources, &others, settings));
    let names: Vec<String> = sources.iter().map(|s| s.name.clone()).collect();
    Report {
        diagnostics,
        errors,
        files: files_checked(&names, read),
        sources,
    }
}

/// Each file's findings in order, and every file they read.
fn flatten(per_file: Vec<(Vec<Diagnostic>, Vec<String>)>) -> (Vec<Diagnostic>, Vec<String>) {
    let mut diagnostics = Vec::new();
    let mut read = Vec::new();
    for (d, r) in per_file {
        diagnostics.extend(d);
        read.extend(r);
    }
    (diagnostics, read)
}

/// What `check --gitops` does with each of the files read: `None`, checked; else why not.
fn gitops_selection<'a>(
    all: &'a [Arc<Source>],
    others: &crate::helm::place::Others,
) -> Vec<(&'a Arc<Source>, Option<&'static str>)> {
    // The files of the ConfigMaps and Secrets the chart's HelmReleases take values from are
    // checked too: their values are the release's.
    let refs = others.values_from();
    let referenced: std::collections::HashSet<&str> = others
        .roots
        .iter()
        .filter(|root| refs.iter().any(|(_, r)| crate::helm::place::names(root, r)))
        .map(|root| root.src.name.as_str())
        .collect();
    // The values files beside an umbrella's Chart.yaml that depends on the chart are the
    // subchart's (under its alias, which need not name the chart); one look per folder.
    let mut umbrella: std::collections::HashMap<Option<std::path::PathBuf>, bool> =
        Default::default();
    let mut beside_umbrella = |s: &Source| {
        let dir = std::path::Path::new(&s.name)
            .parent()
            .map(|p| p.to_path_buf());
        *umbrella.entry(dir).or_insert_with(|| {
            crate::helm::place::parent_chart(&s.name).is_some_and(|(_, deps)| !deps.is_empty())
        })
    };
    let is_chart_yaml = |s: &Source| {
        std::path::Path::new(&s.name).file_name() == Some(std::ffi::OsStr::new("Chart.yaml"))
    };
    all.iter()
        .map(|s| {
            let skip = if is_chart_yaml(s) {
                Some("chart metadata (Chart.yaml): read for the umbrella's dependencies")
            } else if s.text.contains(cgpu::CHART)
                || referenced.contains(s.name.as_str())
                || beside_umbrella(s)
            {
                None
            } else {
                Some(
                    "does not name ack-ai-installer, holds no ConfigMap or Secret a HelmRelease of it takes values from, and is no values file beside an umbrella chart of it",
                )
            };
            (s, skip)
        })
        .collect()
}

/// `check --show-files --gitops`: each file a walk found, `None` when `check --gitops` checks
/// it, else why not; and the files that could not be read.
pub fn gitops_files(
    files: &[String],
    max_size: u64,
) -> (Vec<(String, Option<&'static str>)>, Vec<InputError>) {
    let mut errors = Vec::new();
    let all = read_all(files, &mut errors, max_size);
    let others = crate::helm::place::Others::of(&all);
    let rows = gitops_selection(&all, &others)
        .into_iter()
        .map(|(s, skip)| (s.name.clone(), skip))
        .collect();
    (rows, errors)
}

/// Several files, each checked on its own through [`super::lint_file_among`], with the ConfigMaps,
/// Secrets and HelmReleases of all of them (Flux's `valuesFrom` in another file): read first,
/// then checked, both in parallel from 4 files on.
fn check_among(
    files: Vec<String>,
    mut errors: Vec<InputError>,
    settings: &Settings,
    max_size: u64,
) -> Report {
    let sources = read_all(&files, &mut errors, max_size);
    let others = crate::helm::place::Others::of(&sources);
    let (diagnostics, read) = flatten(lint_each_among(&sources, &others, settings));
    Report {
        diagnostics,
        errors,
        files: files_checked(&files, read),
        sources,
    }
}

/// Check files as one cluster through [`super::lint_cluster`] (`check --nodes`, `--same-cluster`).
pub fn check_cluster(paths: &[String], settings: &Settings, max_size: u64) -> Report {
    let (files, mut errors) = expand_paths_with(paths, settings.include_markdown);
    let mut srcs = Vec::new();
    for f in &files {
        match read_input(f, max_size) {
            Ok(s) => srcs.push(s),
            Err(e) => errors.push(e),
        }
    }
    let (diagnostics, read) = check_path_reading(Inputs::Cluster(&srcs), settings);
    Report {
        diagnostics,
        errors,
        files: files_checked(&files, read),
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
        None => cgpu::chart_defaults(),
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
