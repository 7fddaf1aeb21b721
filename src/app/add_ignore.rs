//! `check --add-ignore[=REASON] [--until DATE]`: the findings `check` would report become inline
//! ignores ([`crate::add_ignore`]), written in place as `fix` writes (atomic, mode kept). Exit
//! status as ruff's `--add-noqa`: 0 once the ignores are written; 1 when a finding could not be
//! ignored (it is listed, and a check still reports it); 2 when an input could not be read or
//! written.

use std::collections::BTreeMap;

use super::{AppError, Exit, Streams};
use crate::add_ignore::{self, Options};
use crate::cli::CheckArgs;
use crate::diag::Diagnostic;
use crate::lint::Settings;
use crate::output::escape_line as esc;

/// The flags `--add-ignore` cannot go with, and a valid `--until`.
pub(crate) fn usage(args: &CheckArgs) -> Result<(), AppError> {
    if args.paths.iter().any(|p| p == "-") {
        return Err(AppError::Usage(
            "--add-ignore writes the ignores into the files: it cannot write to stdin".into(),
        ));
    }
    // A YAML comment holds printable characters only (YAML 1.2's c-printable: tab, line breaks,
    // which the reason is joined over, and the rest of Unicode but the C0 and C1 controls,
    // DEL and U+FFFE/U+FFFF): no place in any file could hold such a reason.
    if let Some(reason) = &args.add_ignore
        && let Some(c) = reason.chars().find(|&c| {
            let printable = matches!(c, '\t' | '\n' | '\r' | '\u{85}')
                || (' '..='~').contains(&c)
                || ('\u{a0}'..='\u{fffd}').contains(&c)
                || c >= '\u{10000}';
            !printable
        })
    {
        return Err(AppError::Usage(format!(
            "--add-ignore REASON: the reason holds the control character U+{:04X}, which a YAML comment cannot hold: write the reason without it",
            c as u32
        )));
    }
    if let Some(d) = &args.until {
        if !crate::suppress::valid_date(d) {
            return Err(AppError::Usage(format!(
                "--until {d}: not a date YYYY-MM-DD"
            )));
        }
        if crate::suppress::expired(d, &crate::date::today_utc()) {
            return Err(AppError::Usage(format!(
                "--until {d}: the day is past, so the ignores would hide nothing"
            )));
        }
    }
    Ok(())
}

pub(crate) fn run(
    s: &mut Streams,
    diags: &[Diagnostic],
    settings: &Settings,
    reason: &str,
    args: &CheckArgs,
    mut trouble: bool,
) -> Result<Exit, AppError> {
    let o = Options {
        reason: Some(reason.to_string()).filter(|r| !r.trim().is_empty()),
        until: args.until.clone(),
    };
    // Per file, in the order reported.
    let mut files: BTreeMap<&str, Vec<&Diagnostic>> = BTreeMap::new();
    for d in diags.iter().filter(|d| add_ignore::wanted(d)) {
        files.entry(d.file()).or_default().push(d);
    }
    let (mut added, mut written, mut left) = (0, 0, 0);
    for (path, targets) in &files {
        let src = &targets[0].src;
        let refuse = |why: &str| -> Vec<String> {
            targets
                .iter()
                .map(|d| {
                    let at = d.start();
                    format!(
                        "{}:{}:{}: {}: not ignorable: {why}",
                        path, at.line, at.column, d.rule
                    )
                })
                .collect()
        };
        let lines = if !std::path::Path::new(path).is_file() {
            refuse("not a file cgpu-lint can write to")
        } else if src.encoding != crate::yaml::source::Encoding::Utf8 {
            refuse(&format!(
                "the file is {}; save it as UTF-8 for cgpu-lint to edit it",
                src.encoding.name()
            ))
        } else {
            match add_ignore::add_ignores(src, targets, settings, &o) {
                Err(e) => {
                    writeln!(s.err, "cgpu-lint: error: {}", esc(&e))?;
                    trouble = true;
                    Vec::new()
                }
                Ok(a) => {
                    if a.added > 0 {
                        match crate::fix::write_in_place(path, &a.text) {
                            Ok(_) => {
                                added += a.added;
                                written += 1;
                            }
                            Err(e) => {
                                writeln!(s.err, "cgpu-lint: error: {}", esc(&e.to_string()))?;
                                trouble = true;
                            }
                        }
                    }
                    a.not_ignorable
                        .iter()
                        .map(|n| {
                            format!(
                                "{}:{}:{}: {}: not ignorable: {}",
                                path, n.line, n.column, n.rule, n.why
                            )
                        })
                        .collect()
                }
            }
        };
        left += lines.len();
        for l in lines {
            writeln!(s.err, "{}", esc(&l))?;
        }
    }
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    writeln!(
        s.err,
        "Added {} in {}",
        plural(added, "ignore"),
        plural(written, "file")
    )?;
    if left > 0 {
        writeln!(
            s.err,
            "{} not ignorable: a check still reports {}",
            plural(left, "finding"),
            if left == 1 { "it" } else { "them" }
        )?;
    }
    Ok(if trouble {
        Exit::Trouble
    } else if left > 0 {
        Exit::Findings
    } else {
        Exit::Clean
    })
}
