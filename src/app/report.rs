//! Printing findings, and the exit status they call for.

use std::io::Write;

use super::{AppError, Exit, Streams};
use crate::check::InputError;
use crate::cli::Color;
use crate::diag::{Diagnostic, Summary};
use crate::output::{self, Format};
use crate::rules::catalogue::Severity;

/// How a command with the common flags reports: its flags with the config file's `format` and
/// `deny-warnings`.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    pub format: Format,
    pub color: Color,
    pub quiet: bool,
    pub deny_warnings: bool,
}

pub(crate) fn use_color(choice: Color, is_terminal: bool) -> bool {
    match choice {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    }
}

/// The exit status findings call for.
pub(crate) fn verdict(diags: &[Diagnostic], deny_warnings: bool) -> Exit {
    let fails = diags.iter().any(|d| {
        d.severity == Severity::Error || (deny_warnings && d.severity == Severity::Warning)
    });
    if fails { Exit::Findings } else { Exit::Clean }
}

/// Print findings in the chosen format; `files` inputs were checked (objects with
/// `Counted::Objects`).
pub(crate) fn print_report(
    s: &mut Streams,
    c: &Report,
    diags: &mut [Diagnostic],
    files: usize,
    counted: crate::diag::Counted,
) -> Result<(), AppError> {
    diags.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    let summary = Summary {
        counted,
        ..Summary::of(files, diags)
    };
    // CI formats report paths relative to the working directory (the repository root in CI).
    let cwd = std::env::current_dir().ok();
    let text = match c.format {
        Format::Human => output::human::render(
            diags,
            summary,
            use_color(c.color, s.out_is_terminal),
            c.quiet,
        ),
        Format::Json => output::json::render(diags, summary),
        Format::Sarif => output::sarif::render(diags, cwd.as_deref()),
        Format::Github => output::github::render(diags, summary, cwd.as_deref(), c.quiet),
        Format::Junit => output::junit::render(diags, summary, cwd.as_deref(), c.deny_warnings),
        Format::Gitlab => output::gitlab::render(diags, cwd.as_deref()),
    };
    s.out.write_all(text.as_bytes())?;
    Ok(())
}

/// An input that could not be read: a line on stderr (so a CI log shows it beside a redirected
/// report) and an `io-error` finding in the report, in every format (the run exits 2).
pub(crate) fn input_error(
    s: &mut Streams,
    e: &InputError,
    diags: &mut Vec<Diagnostic>,
) -> Result<(), AppError> {
    writeln!(s.err, "cgpu-lint: error: {e}")?;
    diags.push(e.to_diagnostic());
    Ok(())
}

/// Render findings into a byte buffer (for `fix --diff`/`--stdout`, whose report goes to stderr).
pub(crate) fn report_to(
    err: &mut dyn Write,
    c: &Report,
    diags: &mut [Diagnostic],
    files: usize,
) -> Result<(), AppError> {
    let mut buf = Vec::new();
    let mut sink = std::io::sink();
    let mut inner = Streams {
        out_is_stdout: false,
        out: &mut buf,
        err: &mut sink,
        out_is_terminal: false,
        in_is_pipe: false,
    };
    let mut c = c.clone();
    c.color = Color::Never;
    print_report(&mut inner, &c, diags, files, crate::diag::Counted::Files)?;
    err.write_all(&buf)?;
    Ok(())
}
