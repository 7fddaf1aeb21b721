//! `--format json`, version 1 (stable: scripts read it).

use serde::Serialize;

use crate::catalogue::Severity;
use crate::diag::{Diagnostic, Summary};

#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    rule: &'a str,
    severity: Severity,
    message: &'a str,
    help: &'a str,
    file: &'a str,
    document: usize,
    path: &'a str,
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
    /// Fixed by `cgpu-lint fix` (a safe fix).
    fixable: bool,
    /// The fix the finding carries, safe or unsafe (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<JsonFix<'a>>,
}

#[derive(Serialize)]
struct JsonFix<'a> {
    applicability: crate::diag::Applicability,
    /// For an unsafe fix: what it changes at the next upgrade.
    #[serde(skip_serializing_if = "Option::is_none")]
    consequence: Option<&'a str>,
    /// What `fix` writes (ruff's `fix.edits`): each replacement, in the order applied.
    edits: Vec<JsonEdit<'a>>,
}

/// One replacement of a fix: the bytes `start..end` of `file` (the UTF-8 text as read) become
/// `content`; `location` and `end_location` are the same range as lines and columns (counted
/// as the finding's are, the end exclusive).
#[derive(Serialize)]
struct JsonEdit<'a> {
    file: &'a str,
    start: usize,
    end: usize,
    content: &'a str,
    location: JsonPos,
    end_location: JsonPos,
}

#[derive(Serialize)]
struct JsonPos {
    line: usize,
    column: usize,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    version: u32,
    diagnostics: Vec<JsonDiagnostic<'a>>,
    summary: Summary,
}

/// One diagnostic in its JSON shape (shared with the checklist's `diagnostics`).
fn json_diagnostic(d: &Diagnostic) -> JsonDiagnostic<'_> {
    let (s, e) = (d.start(), d.end());
    JsonDiagnostic {
        rule: d.rule.name(),
        severity: d.severity,
        message: &d.message,
        help: &d.help,
        file: d.file(),
        document: d.document,
        path: &d.path,
        line: s.line,
        column: s.column,
        end_line: e.line,
        end_column: e.column,
        fixable: d.fixable(),
        fix: d.fix_applicability().map(|applicability| JsonFix {
            applicability,
            consequence: d.consequence.as_deref().map(|c| c.line.as_str()),
            edits: d
                .edits
                .iter()
                .map(|e| {
                    let (a, b) = (e.src.line_col(e.range.start), e.src.line_col(e.range.end));
                    JsonEdit {
                        file: &e.src.name,
                        start: e.range.start,
                        end: e.range.end,
                        content: &e.replacement,
                        location: JsonPos {
                            line: a.line,
                            column: a.column,
                        },
                        end_location: JsonPos {
                            line: b.line,
                            column: b.column,
                        },
                    }
                })
                .collect(),
        }),
    }
}

/// One diagnostic as a JSON value, exactly as `--format json` prints it.
pub fn diagnostic_value(d: &Diagnostic) -> serde_json::Value {
    serde_json::to_value(json_diagnostic(d)).expect("serialisable")
}

pub fn render(diags: &[Diagnostic], summary: Summary) -> String {
    let report = JsonReport {
        version: 1,
        diagnostics: diags.iter().map(json_diagnostic).collect(),
        summary,
    };
    let mut s = serde_json::to_string_pretty(&report).expect("serialisable");
    s.push('\n');
    s
}
