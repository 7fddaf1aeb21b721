//! `--format rdjson`: reviewdog's Diagnostic Format, the JSON of one `DiagnosticResult`
//! (reviewdog's `proto/rdf/reviewdog.proto` and `proto/rdf/jsonschema/`), for
//! `reviewdog -f=rdjson`: a source (`cgpu-lint`), then per finding its message, location
//! (path and range), severity (`ERROR`, `WARNING`, `INFO`), rule code (with the rule's first
//! source as its URL), related locations and, for a fix `cgpu-lint fix` applies (a safe one,
//! after `[fix] extend-safe`/`extend-unsafe`), one suggestion per edit: the exact range it
//! replaces and the replacement text.
//!
//! Positions follow reviewdog.proto's `Position`: lines from 1, and columns from 1 counting
//! UTF-8 **bytes** ("the column of b in 'a𐐀b' is 6"), not characters as the other formats do;
//! ranges end exclusively.

use std::path::Path;

use serde_json::{Value, json};

use crate::catalogue::Severity;
use crate::diag::Diagnostic;
use crate::output::ci_path;
use crate::yaml::Source;

fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Error => "ERROR",
        Severity::Warning => "WARNING",
        Severity::Info => "INFO",
    }
}

/// reviewdog's position of byte `offset` of `src`: the line from 1, the column from 1 in UTF-8
/// bytes of the line (an offset inside a character is moved back to its start).
pub fn position(src: &Source, offset: usize) -> Value {
    let mut offset = offset.min(src.text.len());
    while !src.text.is_char_boundary(offset) {
        offset -= 1;
    }
    let line = src.line_col(offset).line;
    let column = offset - src.line_start(line) + 1;
    json!({"line": line, "column": column})
}

fn range(src: &Source, r: &std::ops::Range<usize>) -> Value {
    json!({
        "start": position(src, r.start),
        "end": position(src, r.end.max(r.start)),
    })
}

fn diagnostic(d: &Diagnostic, cwd: Option<&Path>) -> Value {
    let path = ci_path(d.file(), cwd);
    let mut v = json!({
        "message": format!("{}\nhelp: {}", d.message, d.help),
        "location": {"path": path, "range": range(&d.src, &d.span)},
        "severity": severity(d.severity),
        "code": {"value": d.rule.name()},
    });
    if let Some(url) = d.rule.info().sources().iter().find_map(|s| s.url) {
        v["code"]["url"] = json!(url);
    }
    // A suggestion has no path of its own: it applies to the diagnostic's file, so a fix with
    // an edit elsewhere is not offered (as `fix` on this file would not make it either).
    if d.fixable()
        && d.edits
            .iter()
            .all(|e| std::sync::Arc::ptr_eq(&e.src, &d.src) || e.src.name == d.src.name)
    {
        v["suggestions"] = d
            .edits
            .iter()
            .map(|e| json!({"range": range(&e.src, &e.range), "text": e.replacement}))
            .collect();
    }
    if !d.related.is_empty() {
        v["related_locations"] = d
            .related
            .iter()
            .map(|r| {
                json!({
                    "message": r.message,
                    "location": {"path": path, "range": range(&d.src, &r.span)},
                })
            })
            .collect();
    }
    v
}

pub fn render(diags: &[Diagnostic], cwd: Option<&Path>) -> String {
    let result = json!({
        "source": {"name": "cgpu-lint"},
        "diagnostics": diags.iter().map(|d| diagnostic(d, cwd)).collect::<Vec<_>>(),
    });
    let mut s = serde_json::to_string_pretty(&result).expect("serialisable");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    // reviewdog.proto's own example: in 'a𐐀b' the column of a is 1, of 𐐀 2, of b 6.
    #[test]
    fn columns_count_utf8_bytes_as_reviewdog_proto_says() {
        let src = Source::new("t", "x\na\u{10400}b\n".to_string());
        assert_eq!(position(&src, 2), json!({"line": 2, "column": 1}));
        assert_eq!(position(&src, 3), json!({"line": 2, "column": 2}));
        assert_eq!(position(&src, 7), json!({"line": 2, "column": 6}));
        // Inside the four bytes of 𐐀: its start.
        assert_eq!(position(&src, 5), json!({"line": 2, "column": 2}));
        // The end of a line's break is the next line's column 1.
        assert_eq!(position(&src, 9), json!({"line": 3, "column": 1}));
    }
}
