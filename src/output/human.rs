//! The human format: a miette report per finding (source line, a caret under the span, the rule,
//! the help, `file:line:column`), then a summary line.

use std::fmt::Write as _;
use std::sync::Arc;

use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteDiagnostic, MietteError,
    MietteSpanContents, SourceCode, SourceSpan, SpanContents,
};

use crate::diag::{Diagnostic, Summary};
use crate::rules::catalogue::Severity;
use crate::yaml::Source;

/// Lets miette read our sources without copying them per finding. A source holding control
/// characters is shown through an escaped copy ([`Shown`]), so a snippet never sends them to
/// the terminal raw.
struct Src {
    src: Arc<Source>,
    shown: Option<Shown>,
}

/// A source's text with each control character (but a CR before LF) written as `\xNN`, and
/// where the escapes are, to move offsets between the two texts.
struct Shown {
    text: String,
    /// For each escape: (offset in the source, offset in `text`, bytes added up to its end).
    escapes: Vec<(usize, usize, usize)>,
}

impl Shown {
    fn of(text: &str) -> Option<Shown> {
        let bytes = text.as_bytes();
        let hazard = |i: usize, c: char| {
            crate::output::is_hazard(c) && !(c == '\r' && bytes.get(i + 1) == Some(&b'\n'))
        };
        if !text.char_indices().any(|(i, c)| hazard(i, c)) {
            return None;
        }
        let mut out = String::with_capacity(text.len() + 16);
        let mut escapes = Vec::new();
        let mut added = 0;
        for (i, c) in text.char_indices() {
            if hazard(i, c) {
                let at = out.len();
                out.push_str(&format!("\\x{:02x}", c as u32));
                added += 4 - c.len_utf8();
                escapes.push((i, at, added));
            } else {
                out.push(c);
            }
        }
        Some(Shown { text: out, escapes })
    }

    /// A source offset in the escaped text.
    fn forward(&self, offset: usize) -> usize {
        let n = self.escapes.partition_point(|&(o, _, _)| o < offset);
        offset + if n == 0 { 0 } else { self.escapes[n - 1].2 }
    }

    /// An escaped-text offset in the source (inside an escape: the escaped character).
    fn back(&self, offset: usize) -> usize {
        let n = self.escapes.partition_point(|&(_, e, _)| e < offset);
        if n == 0 {
            return offset;
        }
        let (o, e, added) = self.escapes[n - 1];
        if offset < e + 4 { o } else { offset - added }
    }
}

impl SourceCode for Src {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let shown = self
            .shown
            .as_ref()
            .map_or(self.src.text.as_str(), |s| &s.text);
        let inner = shown.read_span(span, context_lines_before, context_lines_after)?;
        // miette counts the column in bytes; the header (`[file:line:column]`) must agree with
        // our locations, which count characters of the source (spec §5).
        let text = &self.src.text;
        let at = inner.span().offset().min(shown.len());
        let at = self
            .shown
            .as_ref()
            .map_or(at, |s| s.back(at))
            .min(text.len());
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let column = if text.is_char_boundary(line_start) && text.is_char_boundary(at) {
            text[line_start..at].chars().count()
        } else {
            inner.column()
        };
        Ok(Box::new(MietteSpanContents::new_named(
            crate::output::escape_controls(&self.src.name).into_owned(),
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
    use crate::output::escape_controls as esc;
    // Spans move with the escapes of the shown text.
    let shown = if d.src.text.is_empty() {
        None
    } else {
        Shown::of(&d.src.text)
    };
    let at = |r: std::ops::Range<usize>| match &shown {
        Some(s) => {
            let start = s.forward(r.start);
            start..s.forward(r.end).max(start)
        }
        None => r,
    };
    let mut labels = vec![LabeledSpan::new_primary_with_span(
        Some(d.rule.to_string()),
        SourceSpan::from(at(d.span.start..d.span.end.max(d.span.start))),
    )];
    for r in &d.related {
        labels.push(LabeledSpan::new_with_span(
            Some(esc(&r.message).into_owned()),
            SourceSpan::from(at(r.span.clone())),
        ));
    }
    let mut help = esc(&d.help).into_owned();
    if let Some(note) = &d.fix_note {
        help.push_str(&format!("\n({})", esc(note)));
    } else if let Some(c) = d.consequence.as_deref().filter(|_| !d.edits.is_empty()) {
        help.push_str(&format!(
            "\n(unsafe fix, with `cgpu-lint fix --unsafe-fixes`: {})",
            esc(&c.line)
        ));
    } else if d.fixable() {
        help.push_str("\n(fixable: `cgpu-lint fix`)");
    }
    let diag = MietteDiagnostic::new(esc(&d.message).into_owned())
        .with_severity(severity(d.severity))
        .with_help(help)
        .with_labels(labels);
    // An input that could not be read (`io-error`) has no text to show: the message alone.
    let report = if d.src.text.is_empty() {
        let mut diag = diag;
        diag.labels = None;
        miette::Report::new(diag)
    } else {
        miette::Report::new(diag).with_source_code(Src {
            src: d.src.clone(),
            shown,
        })
    };
    let mut out = format!(
        "{} document {} {}\n",
        crate::output::locator(d),
        d.document,
        if d.path.is_empty() {
            "/".into()
        } else {
            esc(&d.path)
        }
    );
    let mut body = String::new();
    if handler.render_report(&mut body, report.as_ref()).is_err() {
        let _ = writeln!(body, "  {}", esc(&d.message));
    }
    out.push_str(&body);
    out
}

pub fn summary_line(s: &Summary) -> String {
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    format!(
        "{} checked: {}, {}, {}{}{}{}\n",
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
        if s.baselined > 0 {
            format!("; {} in the baseline not shown", s.baselined)
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
