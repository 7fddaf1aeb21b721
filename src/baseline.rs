//! The baseline (`.cgpu-lint-baseline.json`): findings recorded on a day so that `check` reports
//! only the ones that came after, for a team adopting cgpu-lint on a repository that is red
//! today. An entry is keyed by what stays when lines move, as GitLab's fingerprint is
//! ([`Diagnostic::stable_key`]): the file (relative to the baseline's folder), the document, the
//! JSON pointer, the rule, and a hash of the offending text, so that a changed value is a new
//! finding. Never the line. An entry may carry `until` (`YYYY-MM-DD`): from the day after, it
//! hides nothing and is a `suppression-expired` finding.
//!
//! The file is JSON with one entry per line, so that an entry that matches nothing any more
//! (`baseline-unmatched`) is reported at its own line:
//!
//! ```json
//! {"version": 1, "entries": [
//!   {"file": "values/prod.yaml", "document": 1, "pointer": "/cgpu/policy", "rule": "policy-out-of-range", "value": "…"}
//! ]}
//! ```
//!
//! Reading and writing the file is the front end's; this module parses, renders and matches.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::catalogue::RuleId;
use crate::diag::{Diagnostic, stable_hash};
use crate::yaml::Source;

/// The default file name, in the working directory.
pub const FILE_NAME: &str = ".cgpu-lint-baseline.json";

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub file: String,
    pub document: usize,
    pub pointer: String,
    pub rule: String,
    /// FNV-1a 128 of the offending text, 32 hex digits.
    pub value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
}

impl Entry {
    /// Where the entry points, as its messages name it: `FILE POINTER` (`/` for the root).
    pub fn place(&self) -> String {
        let pointer = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        format!("{} {pointer}", self.file)
    }

    /// The entry recording `d`, whose file the baseline names `file`.
    pub fn of(d: &Diagnostic, file: &str) -> Entry {
        let text = d
            .src
            .text
            .get(d.span.start..d.span.end.max(d.span.start))
            .unwrap_or("");
        Entry {
            file: file.to_string(),
            document: d.document,
            pointer: d.path.clone(),
            rule: d.rule.name().to_string(),
            value: format!("{:032x}", stable_hash(text.as_bytes())),
            until: None,
        }
    }

    /// What an entry and a finding must share to match (`until` aside).
    fn key(&self) -> Entry {
        Entry {
            until: None,
            ..self.clone()
        }
    }
}

/// May `d` be recorded? Not a file that could not be read (nothing is known about it), and not
/// a finding about the suppressions themselves.
pub fn recordable(d: &Diagnostic) -> bool {
    !matches!(
        d.rule,
        RuleId::IoError | RuleId::SuppressionExpired | RuleId::BaselineUnmatched
    )
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    entries: Vec<Entry>,
}

/// A baseline file, read.
#[derive(Debug, Clone)]
pub struct Baseline {
    pub src: Arc<Source>,
    pub entries: Vec<Entry>,
    /// The span of each entry's line in `src` (empty spans when the file was not written one
    /// entry per line).
    spans: Vec<Range<usize>>,
}

impl Baseline {
    /// Parse the text of a baseline file named `name`; an error names `name:line:column`.
    pub fn parse(name: &str, text: String) -> Result<Baseline, String> {
        let file: File = serde_json::from_str(&text)
            .map_err(|e| format!("{name}:{}:{}: {e}", e.line(), e.column()))?;
        if file.version != 1 {
            return Err(format!(
                "{name}:1:1: baseline version {} is not one this cgpu-lint reads (1)",
                file.version
            ));
        }
        for e in &file.entries {
            if let Some(u) = &e.until
                && !crate::suppress::valid_date(u)
            {
                return Err(format!(
                    "{name}: entry for {} {}: `until` is {u:?}, not a date YYYY-MM-DD",
                    e.file, e.pointer
                ));
            }
        }
        let mut spans = Vec::new();
        let mut at = 0;
        for line in text.split_inclusive('\n') {
            let t = line.trim();
            if t.starts_with("{\"file\"") {
                let lead = line.len() - line.trim_start().len();
                spans.push(at + lead..at + lead + t.trim_end_matches(',').len());
            }
            at += line.len();
        }
        if spans.len() != file.entries.len() {
            spans = vec![0..0; file.entries.len()];
        }
        Ok(Baseline {
            src: Source::new(name, text),
            entries: file.entries,
            spans,
        })
    }
}

/// The file's text: one entry per line, in the order given.
pub fn render(entries: &[Entry]) -> String {
    let mut out = String::from("{\"version\": 1, \"entries\": [\n");
    for (i, e) in entries.iter().enumerate() {
        out.push_str("  ");
        out.push_str(&serde_json::to_string(e).expect("serialisable"));
        if i + 1 < entries.len() {
            out.push(',');
        }
        out.push('\n');
    }
    out.push_str("]}\n");
    out
}

/// What applying a baseline did.
#[derive(Debug, Default)]
pub struct Applied {
    /// How many findings it hid.
    pub hidden: usize,
    /// Which entries matched a finding (for `baseline --prune`).
    pub matched: Vec<bool>,
}

/// Hide the findings of `diags` the baseline records (each entry hides one finding), as of
/// `today`. `file_of` names a finding's file as the baseline does; `checked` says whether an
/// entry's file was among this run's inputs: an entry there that hid nothing is
/// `baseline-unmatched`, one past its `until` is `suppression-expired` (and hides nothing).
pub fn apply(
    b: &Baseline,
    diags: &mut Vec<Diagnostic>,
    file_of: &dyn Fn(&Diagnostic) -> String,
    checked: &dyn Fn(&str) -> bool,
    today: &str,
) -> Applied {
    let mut open: HashMap<Entry, Vec<usize>> = HashMap::new();
    let mut expired = vec![false; b.entries.len()];
    for (i, e) in b.entries.iter().enumerate().rev() {
        if e.until
            .as_deref()
            .is_some_and(|u| crate::suppress::expired(u, today))
        {
            expired[i] = true;
        } else {
            open.entry(e.key()).or_default().push(i);
        }
    }
    let mut matched = vec![false; b.entries.len()];
    let mut hidden = 0;
    diags.retain(|d| {
        if !recordable(d) {
            return true;
        }
        let entry = Entry::of(d, &file_of(d));
        match open.get_mut(&entry.key()).and_then(Vec::pop) {
            Some(i) => {
                matched[i] = true;
                hidden += 1;
                false
            }
            None => true,
        }
    });
    for (i, e) in b.entries.iter().enumerate() {
        let (rule, message) = if expired[i] {
            (
                RuleId::SuppressionExpired,
                format!(
                    "the baseline entry for {} at {} expired on {}: it hides nothing now",
                    e.rule,
                    e.place(),
                    e.until.as_deref().unwrap_or_default()
                ),
            )
        } else if !matched[i] && checked(&e.file) {
            (
                RuleId::BaselineUnmatched,
                format!(
                    "the baseline entry for {} at {} matches no finding (fixed, or the value changed)",
                    e.rule,
                    e.place()
                ),
            )
        } else {
            continue;
        };
        diags.push(Diagnostic::new(
            rule,
            &b.src,
            1,
            format!("/entries/{i}"),
            b.spans[i].clone(),
            message,
        ));
    }
    Applied { hidden, matched }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pointer: &str, until: Option<&str>) -> Entry {
        Entry {
            file: "v.yaml".into(),
            document: 1,
            pointer: pointer.into(),
            rule: "policy-out-of-range".into(),
            value: "0".repeat(32),
            until: until.map(String::from),
        }
    }

    #[test]
    fn rendered_files_parse_back_with_one_line_per_entry() {
        let entries = vec![
            entry("/cgpu/policy", None),
            entry("/cgpu/tag", Some("2027-01-31")),
        ];
        let text = render(&entries);
        let b = Baseline::parse("b.json", text.clone()).unwrap();
        assert_eq!(b.entries, entries);
        assert_eq!(b.src.line_col(b.spans[1].start).line, 3);
        assert!(text[b.spans[0].clone()].ends_with("}"));
        let err = Baseline::parse(
            "b.json",
            "{\"version\": 1, \"entries\": [\n  {\"file\": 1}\n]}".into(),
        )
        .unwrap_err();
        assert!(err.starts_with("b.json:2:"), "{err}");
        let b = Baseline::parse("b.json", render(&[])).unwrap();
        assert!(b.entries.is_empty());
    }
}
