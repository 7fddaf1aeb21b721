//! Printing findings, and the exit status they call for.

use super::{AppError, Exit, Streams};
use crate::catalogue::Severity;
use crate::check::InputError;
use crate::cli::Color;
use crate::diag::{Diagnostic, Summary};
use crate::output::policyreport::Checked;
use crate::output::{self, Format};

/// A baseline file read, with the folder its paths are relative to.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub baseline: crate::baseline::Baseline,
    pub dir: std::path::PathBuf,
}

/// How a command with the common flags reports: its flags with the config file's `format` and
/// `deny-warnings`.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    pub format: Format,
    pub color: Color,
    pub quiet: bool,
    pub deny_warnings: bool,
    /// `--output FILE`: the report goes there, the terminal gets the human side on stderr.
    pub output: Option<std::path::PathBuf>,
    /// `--statistics`: counts per rule instead of the findings.
    pub statistics: bool,
    /// `--openreports`: policy reports as openreports.io/v1alpha1.
    pub openreports: bool,
    /// `--original-severities`: policy reports with the severities the original v1alpha2 CRD
    /// takes (high, medium, low).
    pub original_severities: bool,
    /// The baseline in force (`--baseline`, or the working directory's), and its folder.
    pub baseline: Option<std::sync::Arc<Loaded>>,
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

/// What `--format policyreport` reports as checked: these inputs, under the rules `settings`
/// enables (nothing for the other formats, which print only findings).
pub(crate) fn checked(
    c: &Report,
    sources: Vec<std::sync::Arc<crate::yaml::Source>>,
    settings: &crate::lint::Settings,
) -> Checked {
    if c.format != Format::Policyreport {
        return Checked::default();
    }
    let rules = crate::catalogue::RULES
        .iter()
        .filter(|r| settings.filter.allows(r.name))
        .map(|r| r.id)
        .collect();
    Checked { sources, rules }
}

/// Print findings in the chosen format; `files` inputs were checked (objects with
/// `Counted::Objects`).
///
/// Without `--output` the report goes to stdout (the per-rule counts instead with
/// `--statistics`). With `--output FILE` it goes to FILE and stdout gets nothing; stderr gets
/// the human side: the counts with `--statistics`, else the human report when stderr is a
/// terminal, else the summary line (a CI log still shows what the report holds).
pub(crate) fn print_report(
    s: &mut Streams,
    c: &Report,
    diags: &mut [Diagnostic],
    files: usize,
    counted: crate::diag::Counted,
    baselined: usize,
) -> Result<(), AppError> {
    let none = Checked::default();
    print_checked(s, c, diags, (files, counted), baselined, &none)
}

/// [`print_report`] with what was checked, for the `pass` results of `--format policyreport`.
pub(crate) fn print_checked(
    s: &mut Streams,
    c: &Report,
    diags: &mut [Diagnostic],
    (files, counted): (usize, crate::diag::Counted),
    baselined: usize,
    checked: &Checked,
) -> Result<(), AppError> {
    diags.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    let summary = Summary {
        counted,
        baselined,
        ..Summary::of(files, diags)
    };
    let Some(path) = &c.output else {
        let text = if c.statistics {
            statistics(c, diags, summary)
        } else {
            render(
                c,
                diags,
                summary,
                use_color(c.color, s.out_is_terminal),
                checked,
            )
        };
        s.out.write_all(text.as_bytes())?;
        return Ok(());
    };
    let report = render(c, diags, summary, false, checked);
    std::fs::write(path, report)
        .map_err(|e| AppError::Usage(format!("--output {}: {e}", path.display())))?;
    let side = if c.statistics {
        output::statistics::render_human(diags, summary, c.quiet)
    } else if s.err_is_terminal {
        output::human::render(diags, summary, use_color(c.color, true), c.quiet)
    } else if !c.quiet || summary.errors > 0 {
        output::human::summary_line(&summary)
    } else {
        String::new()
    };
    s.err.write_all(side.as_bytes())?;
    Ok(())
}

/// The report in the chosen format.
fn render(
    c: &Report,
    diags: &[Diagnostic],
    summary: Summary,
    color: bool,
    checked: &Checked,
) -> String {
    // CI formats report paths relative to the working directory (the repository root in CI).
    let cwd = std::env::current_dir().ok();
    match c.format {
        Format::Human => output::human::render(diags, summary, color, c.quiet),
        Format::Json => output::json::render(diags, summary),
        Format::Sarif => output::sarif::render(diags, cwd.as_deref()),
        Format::Github => output::github::render(diags, summary, cwd.as_deref(), c.quiet),
        Format::Junit => output::junit::render(diags, summary, cwd.as_deref(), c.deny_warnings),
        Format::Gitlab => output::gitlab::render(diags, cwd.as_deref()),
        Format::Rdjson => output::rdjson::render(diags, cwd.as_deref()),
        Format::Azure => output::azure::render(diags, summary, cwd.as_deref(), c.quiet),
        Format::Policyreport => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            use output::policyreport::Crd;
            let crd = match (c.openreports, c.original_severities) {
                (true, _) => Crd::OpenReports,
                (false, true) => Crd::WgPolicyOriginal,
                (false, false) => Crd::WgPolicy,
            };
            output::policyreport::render(diags, checked, cwd.as_deref(), crd, now)
        }
    }
}

/// `--statistics` on stdout: JSON for `--format json`, else the table
/// ([`check_statistics`] refused the other formats without `--output`).
fn statistics(c: &Report, diags: &[Diagnostic], summary: Summary) -> String {
    match c.format {
        Format::Json => output::statistics::render_json(diags),
        _ => output::statistics::render_human(diags, summary, c.quiet),
    }
}

/// `--statistics` replaces the report on stdout, as text or JSON; a CI format's report then
/// needs a file of its own.
pub(crate) fn check_statistics(c: &Report) -> Result<(), AppError> {
    if c.statistics && c.output.is_none() && !matches!(c.format, Format::Human | Format::Json) {
        return Err(AppError::Usage(format!(
            "--statistics prints counts per rule (as text, or JSON with --format json) instead of the report; to keep the {} report, write it with --output FILE",
            c.format.name()
        )));
    }
    Ok(())
}

/// An input that could not be read: a line on stderr (so a CI log shows it beside a redirected
/// report) and an `io-error` finding in the report, in every format (the run exits 2).
pub(crate) fn input_error(
    s: &mut Streams,
    e: &InputError,
    diags: &mut Vec<Diagnostic>,
) -> Result<(), AppError> {
    writeln!(
        s.err,
        "cgpu-lint: error: {}",
        crate::output::escape_line(&e.to_string())
    )?;
    diags.push(e.to_diagnostic());
    Ok(())
}

/// Print findings on stderr (for `fix --diff`/`--stdout`, whose stdout is the diff or the file);
/// with `--output FILE` the report goes there as [`print_report`] puts it.
pub(crate) fn report_to_stderr(
    s: &mut Streams,
    c: &Report,
    diags: &mut [Diagnostic],
    files: usize,
    baselined: usize,
) -> Result<(), AppError> {
    if c.output.is_some() {
        return print_report(s, c, diags, files, crate::diag::Counted::Files, baselined);
    }
    let mut buf = Vec::new();
    let mut sink = std::io::sink();
    let mut inner = Streams {
        out_is_stdout: false,
        out: &mut buf,
        err: &mut sink,
        out_is_terminal: false,
        err_is_terminal: false,
        in_is_pipe: false,
    };
    let mut c = c.clone();
    c.color = Color::Never;
    print_report(
        &mut inner,
        &c,
        diags,
        files,
        crate::diag::Counted::Files,
        baselined,
    )?;
    s.err.write_all(&buf)?;
    Ok(())
}
