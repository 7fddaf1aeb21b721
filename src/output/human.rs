//! The human format: a miette report per finding (source line, a caret under the span, the rule,
//! the help, `file:line:column`), then a summary line.

use std::fmt::Write as _;
use std::sync::Arc;

use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteDiagnostic, MietteError,
    MietteSpanContents, SourceCode, SourceSpan, SpanContents,
};

use crate::diag::{Diagnostic, Severity, Summary};
use crate::yaml::Source;

/// Lets miette read our sources without copying them per finding.
struct Src(Arc<Source>);

impl SourceCode for Src {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let inner = self
            .0
            .text
            .read_span(span, context_lines_before, context_lines_after)?;
        // miette counts the column in bytes; the header (`[file:line:column]`) must agree with
        // our locations, which count characters (spec §5).
        let text = &self.0.text;
        let at = inner.span().offset().min(text.len());
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let column = if text.is_char_boundary(line_start) && text.is_char_boundary(at) {
            text[line_start..at].chars().count()
        } else {
            inner.column()
        };
        Ok(Box::new(MietteSpanContents::new_named(
            self.0.name.clone(),
            inner.data(),
            *inner.span(),
            inner.line(),
            column,
            inner.line_count(),
        )))
    }
}

fn severity(s: Severity) -> miette::Severity {
    match s {
        Severity::Error => miette::Severity::Error,
        Severity::Warning => miette::Severity::Warning,
        Severity::Info => miette::Severity::Advice,
    }
}

pub fn render_one(d: &Diagnostic, color: bool) -> String {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme).with_context_lines(1);
    let mut labels = vec![LabeledSpan::new_primary_with_span(
        Some(d.rule.to_string()),
        SourceSpan::from(d.span.start..d.span.end.max(d.span.start)),
    )];
    for r in &d.related {
        labels.push(LabeledSpan::new_with_span(
            Some(r.message.clone()),
            SourceSpan::from(r.span.clone()),
        ));
    }
    let mut help = d.help.clone();
    if let Some(note) = &d.fix_note {
        help.push_str(&format!("\n({note})"));
    } else if let Some(c) = d.consequence.as_deref().filter(|_| !d.edits.is_empty()) {
        help.push_str(&format!(
            "\n(unsafe fix, with `cgpu-lint fix --unsafe-fixes`: {})",
            c.line
        ));
    } else if d.fixable() {
        help.push_str("\n(fixable: `cgpu-lint fix`)");
    }
    let diag = MietteDiagnostic::new(d.message.clone())
        .with_severity(severity(d.severity))
        .with_help(help)
        .with_labels(labels);
    // An input that could not be read (`io-error`) has no text to show: the message alone.
    let report = if d.src.text.is_empty() {
        let mut diag = diag;
        diag.labels = None;
        miette::Report::new(diag)
    } else {
        miette::Report::new(diag).with_source_code(Src(d.src.clone()))
    };
    let mut out = format!(
        "{} document {} {}\n",
        crate::output::locator(d),
        d.document,
        if d.path.is_empty() { "/" } else { &d.path }
    );
    let mut body = String::new();
    if handler.render_report(&mut body, report.as_ref()).is_err() {
        let _ = writeln!(body, "  {}", d.message);
    }
    out.push_str(&body);
    out
}

pub fn summary_line(s: &Summary) -> String {
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    format!(
        "{} checked: {}, {}, {}{}{}\n",
        plural(
            s.files,
            match s.counted {
                crate::diag::Counted::Files => "file",
                crate::diag::Counted::Objects => "object",
            }
        ),
        plural(s.errors, "error"),
        plural(s.warnings, "warning"),
        plural(s.infos, "info"),
        if s.fixable > 0 {
            format!(" ({} fixable with `cgpu-lint fix`)", s.fixable)
        } else {
            String::new()
        },
        hidden_fixes(s.unsafe_fixable)
    )
}

/// ruff's line for unsafe fixes held back: empty when there are none.
pub fn hidden_fixes(n: usize) -> String {
    match n {
        0 => String::new(),
        1 => "\n1 hidden fix can be enabled with the `--unsafe-fixes` option.".into(),
        n => format!("\n{n} hidden fixes can be enabled with the `--unsafe-fixes` option."),
    }
}

pub fn render(diags: &[Diagnostic], summary: Summary, color: bool, quiet: bool) -> String {
    use rayon::prelude::*;
    // miette's graphical rendering is the costliest step of a large report: spread it over the
    // cores, then join in order.
    let parts: Vec<String> = if diags.len() < 16 {
        diags.iter().map(|d| render_one(d, color)).collect()
    } else {
        diags.par_iter().map(|d| render_one(d, color)).collect()
    };
    let mut out = String::with_capacity(parts.iter().map(|p| p.len() + 1).sum::<usize>() + 128);
    for p in parts {
        out.push_str(&p);
        out.push('\n');
    }
    if !quiet || summary.errors > 0 {
        out.push_str(&summary_line(&summary));
    }
    out
}
