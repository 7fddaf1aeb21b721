//! The one diagnostic type every printer consumes, and the edits a diagnostic may carry.

use std::ops::Range;
use std::sync::Arc;

use serde::Serialize;

use crate::catalogue::{RuleId, Severity};
use crate::yaml::{LineCol, Node, Source, emit};

/// Replace the bytes `range` of `src` with `replacement` (an insertion when the range is empty).
#[derive(Debug, Clone)]
pub struct Edit {
    pub src: Arc<Source>,
    pub range: Range<usize>,
    pub replacement: String,
}

impl Edit {
    /// An edit replacing a node's whole text (a space added where a comment follows the node
    /// unseparated: [`emit::replacement_for`]).
    pub fn replace(node: &Node, replacement: impl Into<String>) -> Edit {
        Edit {
            src: node.src.clone(),
            range: node.span.clone(),
            replacement: emit::replacement_for(node, replacement),
        }
    }

    /// Insert a new `key: value` line after the line on which `after` ends, indented like the
    /// line at `indent_of` (a key of the same mapping), using the file's line ending.
    pub fn insert_line_after(
        src: &Arc<Source>,
        after: usize,
        indent_of: usize,
        line: &str,
    ) -> Edit {
        let lc = src.line_col(after);
        let indent_line = src.line_col(indent_of).line;
        let indent: String = src
            .line_text(indent_line)
            .chars()
            .take_while(|c| *c == ' ')
            .collect();
        let eol = src.line_ending();
        let next_line_start = src.line_start(lc.line + 1);
        if lc.line >= src.line_count()
            || next_line_start >= src.text.len() && !src.text.ends_with('\n')
        {
            // Last line without a line break: add one first.
            Edit {
                src: src.clone(),
                range: src.text.len()..src.text.len(),
                replacement: format!("{eol}{indent}{line}"),
            }
        } else {
            Edit {
                src: src.clone(),
                range: next_line_start..next_line_start,
                replacement: format!("{indent}{line}{eol}"),
            }
        }
    }
}

/// Whether a fix keeps what the chart renders (ruff's fix applicability). `fix`, the pre-commit
/// hook, post-render `--fix` and the editor's fix-all apply [`Applicability::Safe`] fixes only;
/// `--unsafe-fixes` applies both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Applicability {
    /// What the chart renders does not change, or only a value Helm or the API server refuses
    /// becomes one they accept.
    Safe,
    /// What the chart renders changes: the next upgrade does something else.
    Unsafe,
}

impl Applicability {
    pub fn as_str(self) -> &'static str {
        match self {
            Applicability::Safe => "safe",
            Applicability::Unsafe => "unsafe",
        }
    }
}

/// What an unsafe fix changes at the next upgrade.
#[derive(Debug, Clone, PartialEq)]
pub struct Consequence {
    /// One line: "cgpu.enabled becomes false: the next upgrade removes the cgpu-installer
    /// DaemonSet".
    pub line: String,
    /// The values the chart reads differently after the fix, as Helm's `--set-json` pairs
    /// (`cgpu.enabled`, `false`): rendering the original with these set renders the fixed file.
    /// Empty for a fix to a manifest (the change is the manifest itself).
    pub sets: Vec<(String, serde_json::Value)>,
}

/// A second place a finding refers to (the first occurrence of a duplicate key, say).
#[derive(Debug, Clone)]
pub struct Related {
    pub span: Range<usize>,
    pub message: String,
}

#[derive(Debug, Clone)]
pub struct Diagnostic {
    pub rule: RuleId,
    pub severity: Severity,
    pub message: String,
    pub help: String,
    /// The file the finding points into (for a `--stack` finding: the file that set the value).
    pub src: Arc<Source>,
    /// 1-based document number within `src`.
    pub document: usize,
    /// JSON pointer into that document.
    pub path: String,
    pub span: Range<usize>,
    pub edits: Vec<Edit>,
    pub related: Vec<Related>,
    /// Why a fix that would otherwise be offered is not (the value comes through an alias, …).
    pub fix_note: Option<String>,
    /// Set when the fix (`edits`) is unsafe: what it changes at the next upgrade.
    pub consequence: Option<Box<Consequence>>,
    /// The applicability the settings give the fix (`.cgpu-lint.toml`'s `[fix] extend-safe` /
    /// `extend-unsafe`), set by the pipeline alone; `None`: the rule's own (from `consequence`).
    pub fix_override: Option<Applicability>,
}

impl Diagnostic {
    /// A finding of `rule` at `span` of `src`, with the catalogue's severity and help, and no
    /// edits, related places or notes yet.
    pub fn new(
        rule: RuleId,
        src: &Arc<Source>,
        document: usize,
        path: String,
        span: Range<usize>,
        message: String,
    ) -> Diagnostic {
        let info = rule.info();
        Diagnostic {
            rule,
            severity: info.severity,
            message,
            help: info.help.to_string(),
            src: src.clone(),
            document,
            path,
            span,
            edits: Vec::new(),
            related: Vec::new(),
            fix_note: None,
            consequence: None,
            fix_override: None,
        }
    }

    /// An `io-error` finding: `path` could not be read (the run exits 2). It points at line 1,
    /// column 1 of an empty source, as there is no text to point into.
    pub fn io_error(path: &str, reason: String) -> Diagnostic {
        Diagnostic::new(
            RuleId::IoError,
            &Source::new(path, String::new()),
            1,
            String::new(),
            0..0,
            format!("could not read {path}: {reason}"),
        )
    }

    pub fn file(&self) -> &str {
        &self.src.name
    }

    pub fn start(&self) -> LineCol {
        self.src.line_col(self.span.start)
    }

    /// The end position (exclusive end of the span, so a one-character span ends one column later).
    pub fn end(&self) -> LineCol {
        self.src.line_col(self.span.end.max(self.span.start))
    }

    /// Is a fix applied by default (a safe one)? This is JSON's `fixable`.
    pub fn fixable(&self) -> bool {
        self.fix_applicability() == Some(Applicability::Safe)
    }

    /// The applicability of the fix the finding carries, if it carries one: the settings'
    /// (`[fix] extend-safe`/`extend-unsafe`, [`Diagnostic::fix_override`]) when they name its
    /// rule, else the rule's own (unsafe when the fix changes what the chart renders). Every
    /// consumer (fix, the hook, post-render `--fix`, the editor, the reports) asks here.
    pub fn fix_applicability(&self) -> Option<Applicability> {
        if self.edits.is_empty() {
            None
        } else if let Some(a) = self.fix_override {
            Some(a)
        } else if self.consequence.is_some() {
            Some(Applicability::Unsafe)
        } else {
            Some(Applicability::Safe)
        }
    }

    /// Is the fix applied, with `--unsafe-fixes` (`unsafe_fixes`) or without?
    pub fn fix_applies(&self, unsafe_fixes: bool) -> bool {
        match self.fix_applicability() {
            Some(Applicability::Safe) => true,
            Some(Applicability::Unsafe) => unsafe_fixes,
            None => false,
        }
    }

    /// Order for reports: file, then position, then severity (the most severe first), then
    /// rule.
    pub fn sort_key(
        &self,
    ) -> (
        &str,
        usize,
        usize,
        std::cmp::Reverse<Severity>,
        &'static str,
    ) {
        (
            &self.src.name,
            self.document,
            self.span.start,
            std::cmp::Reverse(self.severity),
            self.rule.name(),
        )
    }

    /// What identifies a finding across edits that move lines (GitLab's fingerprint, a baseline
    /// entry): `file` as the report names it, the document, the JSON pointer and the rule; never
    /// the line, the column or the message (which carries the value).
    pub fn stable_key(&self, file: &str) -> String {
        format!(
            "{file}\0{}\0{}\0{}",
            self.document,
            self.path,
            self.rule.name()
        )
    }

    /// Do `self` and `other` point at the same token: the same text of the same document?
    pub fn same_token(&self, other: &Diagnostic) -> bool {
        (Arc::ptr_eq(&self.src, &other.src) || self.src.name == other.src.name)
            && self.document == other.document
            && self.span == other.span
    }
}

/// FNV-1a with 128 bits (draft-eastlake-fnv): the same value on every platform and in every
/// release, for fingerprints and baseline keys that are stored and compared across runs.
pub fn stable_hash(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    let mut h = OFFSET;
    for &b in bytes {
        h ^= u128::from(b);
        h = h.wrapping_mul(PRIME);
    }
    h
}

/// Counts for a report's summary line and JSON `summary`.
#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct Summary {
    /// How many inputs were checked: files, or Kubernetes objects for `check --cluster`.
    pub files: usize,
    #[serde(skip)]
    pub counted: Counted,
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    pub fixable: usize,
    /// Findings whose fix is unsafe: held back unless `--unsafe-fixes` (not in JSON's version-1
    /// summary; each diagnostic's `fix.applicability` says it).
    #[serde(skip)]
    pub unsafe_fixable: usize,
    /// Findings the baseline hid (in JSON's summary only when there are some).
    #[serde(skip_serializing_if = "is_zero")]
    pub baselined: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What [`Summary::files`] counts, for the human summary line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    #[default]
    Files,
    /// `check --cluster`: the installers and nodes read from the API server.
    Objects,
}

impl Summary {
    pub fn of(files: usize, diags: &[Diagnostic]) -> Summary {
        let mut s = Summary {
            files,
            ..Summary::default()
        };
        for d in diags {
            match d.severity {
                Severity::Error => s.errors += 1,
                Severity::Warning => s.warnings += 1,
                Severity::Info => s.infos += 1,
            }
            match d.fix_applicability() {
                Some(Applicability::Safe) => s.fixable += 1,
                Some(Applicability::Unsafe) => s.unsafe_fixable += 1,
                None => {}
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The FNV-1a 128 test vectors of draft-eastlake-fnv (its appendix lists "", "a", "foobar").
    #[test]
    fn stable_hash_is_fnv1a_128() {
        assert_eq!(stable_hash(b""), 0x6c62272e07bb014262b821756295c58d);
        assert_eq!(stable_hash(b"a"), 0xd228cb696f1a8caf78912b704e4a8964);
        assert_eq!(stable_hash(b"foobar"), 0x343e1662793c64bf6f0d3597ba446f18);
    }
}
