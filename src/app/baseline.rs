//! `cgpu-lint baseline`, and the baseline that `check` and `fix` hide recorded findings with
//! ([`crate::baseline`] parses, renders and matches; this reads and writes the file).

use std::path::{Path, PathBuf};

use super::report::{Report, input_error};
use super::settings::{dir_of, load, resolve_common};
use super::{AppError, Exit, Streams};
use crate::baseline::{self, Baseline, Entry, FILE_NAME};
use crate::cli::{BaselineArgs, CommonArgs};
use crate::diag::Diagnostic;
use crate::lint::inputs;
use crate::paths::cwd;

/// A finding's file as the baseline in `dir` names it: relative to `dir` for a file on disk,
/// else its name (`-`, a cluster object `CONTEXT:Kind/namespace/name`).
fn file_in(dir: &Path, d: &Diagnostic) -> String {
    name_in(dir, d.file())
}

/// A file's name (as given on the command line) as the baseline in `dir` names it.
fn name_in(dir: &Path, name: &str) -> String {
    let p = Path::new(name);
    if name == "-" || !p.is_file() {
        return name.to_string();
    }
    let abs = cwd().join(p);
    crate::output::ci_path(&abs.to_string_lossy(), Some(dir))
}

/// The baseline in force (its file, as named or found) and how many of its entries are about
/// `file` (a path as given on the command line): `check --show-settings`.
pub(crate) fn entries_for(
    c: &CommonArgs,
    file: &str,
) -> Result<Option<(PathBuf, usize)>, AppError> {
    let Some(l) = load(c)? else { return Ok(None) };
    let name = name_in(&l.dir, file);
    let n = l.baseline.entries.iter().filter(|e| e.file == name).count();
    let path = c
        .baseline
        .clone()
        .unwrap_or_else(|| PathBuf::from(FILE_NAME));
    Ok(Some((path, n)))
}

/// Was an entry's `file` (relative to `dir`) among `paths`, the inputs of this run?
pub(crate) fn under(dir: &Path, paths: &[String], file: &str) -> bool {
    let abs = dir.join(file);
    paths.iter().any(|p| {
        if p == "-" {
            file == "-"
        } else {
            abs.starts_with(cwd().join(p))
        }
    })
}

/// Hide the findings the baseline in force records (see [`baseline::apply`]); `checked`
/// says whether an entry's file was an input of this run. Returns how many it hid.
pub(crate) fn hide(
    c: &Report,
    diags: &mut Vec<Diagnostic>,
    checked: &dyn Fn(&Path, &str) -> bool,
) -> usize {
    let Some(l) = &c.baseline else { return 0 };
    let today = crate::date::today_utc();
    baseline::apply(
        &l.baseline,
        diags,
        &|d| file_in(&l.dir, d),
        &|f| checked(&l.dir, f),
        &today,
    )
    .hidden
}

/// `cgpu-lint baseline [PATHS]`: record what `check` reports on PATHS (with the same flags) in
/// the baseline file, or with `--prune` drop the entries of the existing one that match nothing.
pub(crate) fn run(s: &mut Streams, args: &BaselineArgs) -> Result<Exit, AppError> {
    let mut common = args.common.clone();
    let target = common
        .baseline
        .take()
        .unwrap_or_else(|| PathBuf::from(FILE_NAME));
    common.no_baseline = true;
    let (_, settings) = resolve_common(&common)?;
    let paths = if args.paths.is_empty() {
        vec![".".to_string()]
    } else {
        args.paths.clone()
    };
    let mut report = inputs::check_paths(&paths, &settings, common.max_file_size);
    let mut unread = Vec::new();
    for e in &report.errors {
        input_error(s, e, &mut unread)?;
    }
    let diags = &mut report.diagnostics;
    diags.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    let dir = dir_of(&target);
    let shown = target.display();
    let note;
    let entries: Vec<Entry> = if args.prune {
        let text = crate::spill::read_text_at_most(
            &target,
            crate::check::DEFAULT_MAX_FILE_SIZE,
            "--max-file-size's default",
        )
        .map_err(|e| AppError::Usage(format!("--prune: {shown}: {e}")))?;
        let old = Baseline::parse(&target.to_string_lossy(), text).map_err(AppError::Usage)?;
        let applied = baseline::apply(
            &old,
            &mut diags.clone(),
            &|d| file_in(&dir, d),
            &|_| false,
            &crate::date::today_utc(),
        );
        let kept: Vec<Entry> = old
            .entries
            .iter()
            .zip(&applied.matched)
            .filter(|(_, m)| **m)
            .map(|(e, _)| e.clone())
            .collect();
        note = format!(
            "cgpu-lint: pruned {shown}: kept {} entr{}, dropped {}",
            kept.len(),
            if kept.len() == 1 { "y" } else { "ies" },
            old.entries.len() - kept.len()
        );
        kept
    } else {
        let entries: Vec<Entry> = diags
            .iter()
            .filter(|d| baseline::recordable(d))
            .map(|d| Entry {
                until: args.until.clone(),
                ..Entry::of(d, &file_in(&dir, d))
            })
            .collect();
        let mut files: Vec<&str> = entries.iter().map(|e| e.file.as_str()).collect();
        files.dedup();
        note = format!(
            "cgpu-lint: wrote {shown}: {} finding{} in {} file{}{}",
            entries.len(),
            if entries.len() == 1 { "" } else { "s" },
            files.len(),
            if files.len() == 1 { "" } else { "s" },
            args.until
                .as_deref()
                .map(|u| format!(", until {u}"))
                .unwrap_or_default()
        );
        entries
    };
    std::fs::write(&target, baseline::render(&entries))
        .map_err(|e| AppError::Usage(format!("{shown}: {e}")))?;
    writeln!(s.err, "{note}")?;
    Ok(if report.errors.is_empty() {
        Exit::Clean
    } else {
        Exit::Trouble
    })
}
