//! `--format json`, version 1 (spec §5).

use serde::Serialize;

use crate::diag::{Diagnostic, Severity, Summary};

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
    fixable: bool,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    version: u32,
    diagnostics: Vec<JsonDiagnostic<'a>>,
    summary: Summary,
}

/// One diagnostic in the JSON shape of spec §5 (shared with the checklist's `diagnostics`).
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
