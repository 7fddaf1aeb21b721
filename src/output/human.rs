//! The human format: a miette report per finding (source line, a caret under the span, the rule,
//! the help, `file:line:column`), then a summary line.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteDiagnostic, MietteError,
    MietteSpanContents, SourceCode, SourceSpan, SpanContents,
};

use crate::catalogue::Severity;
use crate::diag::{Diagnostic, Summary};
use crate::yaml::Source;

/// Lets miette read our sources without copying them per finding. A source holding control,
/// bidi or invisible characters, or a very long line, is shown through an escaped and cut copy
/// ([`Shown`]), so a snippet never sends them to the terminal raw nor a 20 MB line whole.
struct Src {
    src: Arc<Source>,
    prep: Arc<Prepared>,
}

/// What every finding of one source shares, made once per source and report: the text miette
/// reads (the source's, or its [`Shown`] copy) and where that text's lines start. miette's own
/// `read_span` of a `str` walks the text from its first byte for every snippet, so a report of
/// N findings in a file of L bytes cost N·L (2,000 findings in a 445 KB file: 71 s); a snippet
/// now reads only the lines around its span.
struct Prepared {
    shown: Option<Shown>,
    /// Byte offsets where the lines of the read text start, breaking lines as miette does
    /// (`\r\n`, `\r` or `\n`).
    starts: Vec<usize>,
}

impl Prepared {
    fn of(src: &Source) -> Prepared {
        let shown = if src.text.is_empty() {
            None
        } else {
            Shown::of(&src.text)
        };
        let text = shown.as_ref().map_or(src.text.as_str(), |s| &s.text);
        let bytes = text.as_bytes();
        let mut starts = vec![0];
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
                starts.push(i + 1);
            }
        }
        Prepared { shown, starts }
    }

    fn text<'a>(&'a self, src: &'a Source) -> &'a str {
        self.shown.as_ref().map_or(src.text.as_str(), |s| &s.text)
    }

    /// The 0-based line of a byte offset of the read text.
    fn line_of(&self, offset: usize) -> usize {
        self.starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1)
    }
}

/// The longest source line a snippet shows whole, in characters; a longer one is cut after
/// [`LINE_KEEP`] characters with its length named.
const LINE_BOUND: usize = 400;
const LINE_KEEP: usize = 200;

/// A source's text with each hazardous character (but a CR before LF) written as its escape
/// and each line longer than [`LINE_BOUND`] cut, and where the replacements are, to move offsets
/// between the two texts.
struct Shown {
    text: String,
    /// Each replacement, in order: (source range, shown range).
    reps: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>,
}

impl Shown {
    fn of(text: &str) -> Option<Shown> {
        let bytes = text.as_bytes();
        let hazard = |i: usize, c: char| {
            crate::output::is_hazard(c) && !(c == '\r' && bytes.get(i + 1) == Some(&b'\n'))
        };
        let long_line = text
            .split('\n')
            .any(|l| l.len() > LINE_BOUND && l.chars().count() > LINE_BOUND);
        if !long_line && !text.char_indices().any(|(i, c)| hazard(i, c)) {
            return None;
        }
        let mut out = String::with_capacity(text.len().min(1 << 20) + 16);
        let mut reps = Vec::new();
        let mut line_start = 0;
        for line in text.split_inclusive('\n') {
            let body = line.strip_suffix('\n').unwrap_or(line);
            let n = if body.len() > LINE_BOUND {
                body.chars().count()
            } else {
                0
            };
            for (k, (j, c)) in body.char_indices().enumerate() {
                let i = line_start + j;
                if n > LINE_BOUND && k == LINE_KEEP {
                    let at = out.len();
                    out.push_str(&format!("… (a line of {n} characters, cut)"));
                    reps.push((i..line_start + body.len(), at..out.len()));
                    break;
                }
                if hazard(i, c) {
                    let at = out.len();
                    out.push_str(&crate::output::escaped(c));
                    reps.push((i..i + c.len_utf8(), at..out.len()));
                } else {
                    out.push(c);
                }
            }
            if line.ends_with('\n') {
                out.push('\n');
            }
            line_start += line.len();
        }
        Some(Shown { text: out, reps })
    }

    /// A source offset in the shown text (inside a replacement: its start).
    fn forward(&self, offset: usize) -> usize {
        let n = self.reps.partition_point(|(src, _)| src.start <= offset);
        match n.checked_sub(1).map(|i| &self.reps[i]) {
            None => offset,
            Some((src, shown)) if offset < src.end => shown.start,
            Some((src, shown)) => offset - src.end + shown.end,
        }
    }

    /// A shown-text offset in the source (inside a replacement: the replaced text's start).
    fn back(&self, offset: usize) -> usize {
        let n = self
            .reps
            .partition_point(|(_, shown)| shown.start <= offset);
        match n.checked_sub(1).map(|i| &self.reps[i]) {
            None => offset,
            Some((src, shown)) if offset < shown.end => src.start,
            Some((src, shown)) => offset - shown.end + src.end,
        }
    }
}

impl SourceCode for Src {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let shown = self.prep.text(&self.src);
        // The lines around the span, with a line to spare on each side, are all miette's walk
        // reaches: reading that window gives what reading the whole text gives, once its offsets
        // and line numbers are moved by where the window starts.
        let first = self
            .prep
            .line_of(span.offset().min(shown.len()))
            .saturating_sub(context_lines_before + 1);
        let last = self
            .prep
            .line_of((span.offset() + span.len()).min(shown.len()))
            .saturating_add(context_lines_after + 2);
        let from = self.prep.starts[first];
        let to = self
            .prep
            .starts
            .get(last.saturating_add(1))
            .copied()
            .unwrap_or(shown.len());
        let window = &shown[from..to];
        let local = SourceSpan::new(span.offset().saturating_sub(from).into(), span.len());
        let inner = window.read_span(&local, context_lines_before, context_lines_after)?;
        let start = inner.span().offset() + from;
        // miette counts the column in bytes; the header (`[file:line:column]`) must agree with
        // our locations, which count characters of the source (as editors do).
        let text = &self.src.text;
        let at = start.min(shown.len());
        let at = self
            .prep
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
            crate::output::escape_line(&self.src.name).into_owned(),
            inner.data(),
            SourceSpan::new(start.into(), inner.span().len()),
            inner.line() + first,
            column,
            inner.line_count() + first,
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
    render_prepared(d, color, Arc::new(Prepared::of(&d.src)))
}

fn render_prepared(d: &Diagnostic, color: bool, prep: Arc<Prepared>) -> String {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme).with_context_lines(1);
    use crate::output::shown_text as esc;
    // Spans move with the escapes of the shown text.
    let at = |r: std::ops::Range<usize>| match &prep.shown {
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
            Some(esc(&r.message)),
            SourceSpan::from(at(r.span.clone())),
        ));
    }
    let mut help = esc(&d.help);
    if let Some(note) = &d.fix_note {
        help.push_str(&format!("\n({})", esc(note)));
    } else if d.fix_applicability() == Some(crate::diag::Applicability::Unsafe) {
        let what = match d.consequence.as_deref() {
            Some(c) => esc(&c.line),
            None => "made unsafe by the config's `[fix] extend-unsafe`".into(),
        };
        help.push_str(&format!(
            "\n(unsafe fix, with `cgpu-lint fix --unsafe-fixes`: {what})"
        ));
    } else if let Some(c) = d.consequence.as_deref().filter(|_| d.fixable()) {
        help.push_str(&format!(
            "\n(fixable: `cgpu-lint fix`, made safe by the config's `[fix] extend-safe`: {})",
            esc(&c.line)
        ));
    } else if d.fixable() {
        help.push_str("\n(fixable: `cgpu-lint fix`)");
    }
    let diag = MietteDiagnostic::new(esc(&d.message))
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
            prep,
        })
    };
    // An input that could not be read has no document and no position to name.
    let mut out = if d.rule == crate::catalogue::RuleId::IoError {
        format!("{}\n", crate::output::locator(d))
    } else {
        format!(
            "{} document {} {}\n",
            crate::output::locator(d),
            d.document,
            if d.path.is_empty() {
                "/".to_string()
            } else {
                crate::output::shown_text(&d.path)
            }
        )
    };
    let mut body = String::new();
    if handler.render_report(&mut body, report.as_ref()).is_err() {
        let _ = writeln!(body, "  {}", esc(&d.message));
    }
    out.push_str(&body);
    out
}

/// `out` with the summary line after it, unless `--quiet` and no error: the tail of every report
/// that prints one.
pub fn with_summary(mut out: String, summary: &Summary, quiet: bool) -> String {
    if !quiet || summary.errors > 0 {
        out.push_str(&summary_line(summary));
    }
    out
}

pub fn summary_line(s: &Summary) -> String {
    let plural = crate::output::count;
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
    // Each source is prepared once, however many findings it has.
    let mut prepared: HashMap<*const Source, Arc<Prepared>> = HashMap::new();
    let preps: Vec<Arc<Prepared>> = diags
        .iter()
        .map(|d| {
            prepared
                .entry(Arc::as_ptr(&d.src))
                .or_insert_with(|| Arc::new(Prepared::of(&d.src)))
                .clone()
        })
        .collect();
    drop(prepared);
    let parts: Vec<String> = if diags.len() < 16 {
        diags
            .iter()
            .zip(preps)
            .map(|(d, p)| render_prepared(d, color, p))
            .collect()
    } else {
        diags
            .par_iter()
            .zip(preps)
            .map(|(d, p)| render_prepared(d, color, p))
            .collect()
    };
    let mut out = String::with_capacity(parts.iter().map(|p| p.len() + 1).sum::<usize>() + 128);
    for p in parts {
        out.push_str(&p);
        out.push('\n');
    }
    with_summary(out, &summary, quiet)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_text_maps_offsets_both_ways_around_escapes_and_cuts() {
        let long = "x".repeat(LINE_BOUND + 50);
        let text = format!("a\u{202e}b\u{1b}c\n{long}\nend\r\n");
        let shown = Shown::of(&text).expect("hazards and a long line");
        // A CR before LF ends a line; it is the one control character kept.
        assert!(
            !shown
                .text
                .replace("\r\n", "\n")
                .chars()
                .any(crate::output::is_hazard)
        );
        assert!(shown.text.contains("a\\u{202e}b\\x1bc\n"));
        assert!(
            shown
                .text
                .contains(&format!("(a line of {} characters, cut)", LINE_BOUND + 50))
        );
        // Every character boundary outside the replaced text comes back to itself.
        let end_line = text.find("end").unwrap();
        let cut = text.find('x').unwrap() + LINE_KEEP..end_line - 1;
        for (i, _) in text.char_indices() {
            let f = shown.forward(i);
            assert!(f <= shown.text.len());
            if i <= cut.start || i >= cut.end {
                assert_eq!(shown.back(f), i, "offset {i}");
            } else {
                assert_eq!(shown.back(f), cut.start, "offset {i} in the cut");
            }
        }
        assert_eq!(&shown.text[shown.forward(end_line)..], "end\r\n");
        // A clean short text needs no copy.
        assert!(Shown::of("cgpu:\n  policy: 5\r\n").is_none());
    }

    /// A snippet read from the lines around its span is what miette's walk over the whole text
    /// gives: the same bytes, offsets, line and line count, for every span of texts mixing LF,
    /// CRLF, lone CR, hazards (escaped copies) and long (cut) lines, at several context sizes.
    #[test]
    fn a_snippet_read_from_its_window_is_the_whole_texts() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let pieces = [
            "cgpu:",
            "\n",
            "\r\n",
            "\r",
            "  policy: 5",
            "é",
            "\u{202e}",
            "\u{1b}",
            "",
            " ",
        ];
        let long = "y".repeat(LINE_BOUND + 3);
        for case in 0..300 {
            let mut text = String::new();
            for _ in 0..next(40) {
                if next(25) == 0 {
                    text.push_str(&long);
                } else {
                    text.push_str(pieces[next(pieces.len())]);
                }
            }
            if text.is_empty() {
                continue;
            }
            let src = Source::new("t.yaml", text);
            let prep = Arc::new(Prepared::of(&src));
            let shown = prep.text(&src).to_string();
            let whole = Src {
                src: src.clone(),
                prep: prep.clone(),
            };
            let bounds: Vec<usize> = (0..=shown.len())
                .filter(|&i| shown.is_char_boundary(i))
                .collect();
            for _ in 0..20 {
                let a = bounds[next(bounds.len())];
                let b = bounds[next(bounds.len())];
                let (a, b) = (a.min(b), a.max(b));
                let span = SourceSpan::new(a.into(), b - a);
                let (before, after) = [(1, 1), (0, 0), (2, 3), (0, 2)][next(4)];
                let full = shown.as_str().read_span(&span, before, after);
                let windowed = whole.read_span(&span, before, after);
                match (full, windowed) {
                    (Ok(f), Ok(w)) => {
                        let what = format!("case {case}, span {a}..{b}, context {before}/{after}");
                        assert_eq!(f.data(), w.data(), "{what}");
                        assert_eq!(f.span(), w.span(), "{what}");
                        assert_eq!(f.line(), w.line(), "{what}");
                        assert_eq!(f.line_count(), w.line_count(), "{what}");
                    }
                    (Err(_), Err(_)) => {}
                    (f, w) => panic!(
                        "case {case}, span {a}..{b}: whole text {:?}, window {:?}",
                        f.is_ok(),
                        w.is_ok()
                    ),
                }
            }
        }
    }

    #[test]
    fn the_summary_line_takes_each_noun_in_its_number() {
        let s = Summary {
            files: 1,
            errors: 1,
            warnings: 2,
            infos: 1,
            ..Summary::default()
        };
        assert_eq!(
            summary_line(&s),
            "1 file checked: 1 error, 2 warnings, 1 info\n"
        );
        let s = Summary {
            files: 0,
            ..Summary::default()
        };
        assert_eq!(
            summary_line(&s),
            "0 files checked: 0 errors, 0 warnings, 0 infos\n"
        );
    }
}
