//! `--format sarif`: a SARIF 2.1.0 log with one run. `tool.driver.rules` is the whole catalogue
//! (so `ruleIndex` is stable across runs); each result carries its rule, level, message, a region
//! with start and end line and column, and, when `cgpu-lint fix` would change the file, a `fixes`
//! entry with the replacement text.
//!
//! Columns count Unicode characters, as in every other format, so the run says
//! `"columnKind": "unicodeCodePoints"` (SARIF's default would be UTF-16 code units).

use crate::catalogue::RuleId;
use std::path::Path;

use serde_json::{Value, json};

use crate::catalogue::RULES;
use crate::catalogue::Severity;
use crate::diag::Diagnostic;
use crate::output::ci_path;
use crate::yaml::LineCol;

const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// A path as a URI reference: unreserved characters and `/` stay, everything else is
/// percent-encoded byte by byte; an absolute path (outside the working directory) becomes a
/// `file://` URI.
fn uri(path: &str) -> String {
    let mut out = String::new();
    if path.starts_with('/') {
        out.push_str("file://");
    }
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn region(start: LineCol, end: LineCol) -> Value {
    json!({
        "startLine": start.line,
        "startColumn": start.column,
        "endLine": end.line,
        "endColumn": end.column,
    })
}

fn driver_rules() -> Vec<Value> {
    RULES
        .iter()
        .map(|r| {
            let mut help = r.help.to_string();
            let sources: Vec<String> = r
                .sources()
                .iter()
                .map(|s| match s.url {
                    Some(u) => format!("{}: {u}", s.title),
                    None => s.title.to_string(),
                })
                .collect();
            if let Some(fix) = r.fix {
                help.push_str(&format!(
                    "\n\nFix ({}): {}. {}.",
                    fix.class.as_str(),
                    fix.what,
                    fix.why
                ));
            }
            help.push_str(&format!("\n\nSources:\n{}", sources.join("\n")));
            let mut rule = json!({
                "id": r.name,
                "name": r.name,
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.explanation},
                "help": {"text": help},
                "defaultConfiguration": {"level": level(r.severity)},
                "properties": {"tags": [r.group.title()]},
            });
            if let Some(fix) = r.fix {
                rule["properties"]["fixApplicability"] = json!(fix.class.as_str());
            }
            if let Some(url) = r.sources().iter().find_map(|s| s.url) {
                rule["helpUri"] = json!(url);
            }
            rule
        })
        .collect()
}

fn result(d: &Diagnostic, cwd: Option<&Path>) -> Value {
    let file = uri(&ci_path(d.file(), cwd));
    let mut r = json!({
        "ruleId": d.rule.name(),
        "level": level(d.severity),
        "message": {"text": format!("{}\nhelp: {}", d.message, d.help)},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": {"uri": file},
                "region": region(d.start(), d.end()),
            },
            "logicalLocations": [{
                "fullyQualifiedName": if d.path.is_empty() { "/" } else { &d.path },
                "kind": "element",
            }],
        }],
        "properties": {"document": d.document, "path": d.path},
    });
    if let Some(i) = RULES.iter().position(|r| r.id == d.rule) {
        r["ruleIndex"] = json!(i);
    }
    if !d.related.is_empty() {
        r["relatedLocations"] = d
            .related
            .iter()
            .enumerate()
            .map(|(i, rel)| {
                json!({
                    "id": i,
                    "message": {"text": rel.message},
                    "physicalLocation": {
                        "artifactLocation": {"uri": file},
                        "region": region(d.src.line_col(rel.span.start), d.src.line_col(rel.span.end)),
                    },
                })
            })
            .collect();
    }
    if let Some(a) = d.fix_applicability() {
        // Every fix's class is a property of the result (`safe` or `unsafe`, after the
        // config's `[fix] extend-safe`/`extend-unsafe`); an unsafe fix is not applied by
        // default, so it is not a SARIF `fixes` entry, and what it would change is a property.
        r["properties"]["applicability"] = json!(a.as_str());
        if a == crate::diag::Applicability::Unsafe {
            r["properties"]["unsafeFix"] = json!(
                d.consequence
                    .as_deref()
                    .map_or("made unsafe by the config's `[fix] extend-unsafe`", |c| c
                        .line
                        .as_str())
            );
        }
    }
    if d.fixable() {
        // One artifactChange per file the edits touch, in the order they first appear.
        let mut changes: Vec<(String, Vec<Value>)> = Vec::new();
        for e in &d.edits {
            let u = uri(&ci_path(&e.src.name, cwd));
            let replacement = json!({
                "deletedRegion": region(e.src.line_col(e.range.start), e.src.line_col(e.range.end)),
                "insertedContent": {"text": e.replacement},
            });
            match changes.iter_mut().find(|(f, _)| *f == u) {
                Some((_, reps)) => reps.push(replacement),
                None => changes.push((u, vec![replacement])),
            }
        }
        let fix = d
            .rule
            .info()
            .fix
            .map_or("apply the replacement", |f| f.what);
        r["fixes"] = json!([{
            "description": {"text": fix},
            "properties": {"applicability": "safe"},
            "artifactChanges": changes
                .into_iter()
                .map(|(u, reps)| json!({"artifactLocation": {"uri": u}, "replacements": reps}))
                .collect::<Vec<_>>(),
        }]);
    }
    r
}

pub fn render(diags: &[Diagnostic], cwd: Option<&Path>) -> String {
    let log = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "cgpu-lint",
                "version": env!("CARGO_PKG_VERSION"),
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "rules": driver_rules(),
            }},
            "columnKind": "unicodeCodePoints",
            // An input that could not be read (an `io-error` result) means the run did not do
            // its job: exit status 2.
            "invocations": [{
                "executionSuccessful": !diags.iter().any(|d| d.rule == RuleId::IoError),
            }],
            "results": diags.iter().map(|d| result(d, cwd)).collect::<Vec<_>>(),
        }],
    });
    let mut s = serde_json::to_string_pretty(&log).expect("serialisable");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_percent_encoded() {
        assert_eq!(uri("values/a b.yaml"), "values/a%20b.yaml");
        assert_eq!(uri("<chart defaults>"), "%3Cchart%20defaults%3E");
        assert_eq!(uri("/tmp/a b.yaml"), "file:///tmp/a%20b.yaml");
    }
}
