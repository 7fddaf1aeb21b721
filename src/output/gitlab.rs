//! `--format gitlab`: a GitLab Code Quality report (`artifacts:reports:codequality`), the subset
//! of the CodeClimate issue format GitLab documents: one JSON array, each finding an object with
//! `description`, `check_name` (the rule), `fingerprint`, `severity` (`info`, `minor`, `major`,
//! `critical` or `blocker`), `location.path` (relative to the working directory, the repository
//! root in CI) and `location.lines.begin` (and `end`). `type`, `categories` and `content.body`
//! (the help) make each entry a CodeClimate issue as well; GitLab ignores them.
//!
//! GitLab compares the reports of the source and target branches by fingerprint: a finding
//! whose fingerprint is in both is neither new nor resolved. So the fingerprint is made of what
//! stays when lines move: the file, the document, the JSON pointer and the rule
//! ([`Diagnostic::stable_key`]), never the line, the column or the message (which carries the
//! value). Findings with the same key in one report (two syntax errors in one document) get a
//! counter in report order, as GitLab shows identical fingerprints as one entry.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Value, json};

use crate::catalogue::{RuleId, Severity};
use crate::diag::{Diagnostic, stable_hash};
use crate::output::ci_path;

fn severity(d: &Diagnostic) -> &'static str {
    if d.rule == RuleId::IoError {
        // A file that could not be read: nothing about it is known.
        return "blocker";
    }
    match d.severity {
        Severity::Error => "major",
        Severity::Warning => "minor",
        Severity::Info => "info",
    }
}

/// The fingerprints of `diags`, in order: 32 hex digits (an MD5-sized string, as in GitLab's
/// example) of the FNV-1a 128 hash of the finding's stable key and its counter.
pub fn fingerprints(diags: &[Diagnostic], cwd: Option<&Path>) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    diags
        .iter()
        .map(|d| {
            let key = d.stable_key(&ci_path(d.file(), cwd));
            let n = seen.entry(key.clone()).or_insert(0);
            let hash = stable_hash(format!("{key}\0{n}").as_bytes());
            *n += 1;
            format!("{hash:032x}")
        })
        .collect()
}

pub fn render(diags: &[Diagnostic], cwd: Option<&Path>) -> String {
    let issues: Vec<Value> = diags
        .iter()
        .zip(fingerprints(diags, cwd))
        .map(|(d, fingerprint)| {
            let (s, e) = (d.start(), d.end());
            json!({
                "type": "issue",
                "check_name": d.rule.name(),
                "description": d.message,
                "content": {"body": d.help},
                "categories": ["Bug Risk"],
                "severity": severity(d),
                "fingerprint": fingerprint,
                "location": {
                    "path": ci_path(d.file(), cwd),
                    "lines": {"begin": s.line, "end": e.line.max(s.line)},
                },
            })
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&issues).expect("serialisable");
    s.push('\n');
    s
}
