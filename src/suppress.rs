//! Inline suppressions: `# cgpu-lint: ignore[rule-a, rule-b]` on the offending line or on the line
//! above it, and `# cgpu-lint: ignore-file`. They are applied to a file's findings after the rules
//! ran and before `--select`/`--ignore`, so a comment that hides nothing can be reported
//! (`unused-ignore`) whatever the command line asks to see.
//!
//! The comments are found by scanning the text rather than through the YAML parser: a suppression
//! must work in a file that does not parse (to silence a `yaml-syntax` finding, say), and the only
//! thing that matters is where a YAML comment starts: at a `#` that begins the line or follows
//! whitespace, outside quotes.

use std::ops::Range;
use std::sync::Arc;

use crate::diag::Diagnostic;
use crate::rules::catalogue;
use crate::yaml::Source;

/// The marker every directive starts with, after the `#`.
const MARKER: &str = "cgpu-lint:";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// `ignore[a, b]`: these rules, on this line and the next.
    Ignore { rules: Vec<(String, Range<usize>)> },
    /// `ignore-file`: every finding in the file.
    IgnoreFile,
    /// `cgpu-lint:` followed by something that is neither (a typo such as `ignroe[...]`).
    Malformed(String),
}

/// One `# cgpu-lint:` comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    /// 1-based line of the comment.
    pub line: usize,
    /// Byte span of the comment, from `#` to the end of the line.
    pub span: Range<usize>,
    pub directive: Directive,
}

/// The byte offset within `line` of the comment on it, if any.
fn comment_start(line: &str) -> Option<usize> {
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut prev: Option<char> = None;
    for (i, c) in line.char_indices() {
        if double {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => double = false,
                _ => escaped = false,
            }
        } else if single {
            // `''` inside a single-quoted scalar is an escaped quote: closing and reopening
            // gives the same state, so toggling is enough.
            if c == '\'' {
                single = false;
            }
        } else {
            let at_token_start =
                prev.is_none_or(|p| p.is_whitespace() || matches!(p, ':' | '[' | '{' | ',' | '-'));
            match c {
                '#' if prev.is_none_or(char::is_whitespace) => return Some(i),
                '"' if at_token_start => double = true,
                '\'' if at_token_start => single = true,
                _ => {}
            }
        }
        prev = Some(c);
    }
    None
}

fn parse_directive(rest: &str, rest_offset: usize) -> Directive {
    let trimmed = rest.trim_end();
    if trimmed == "ignore-file" {
        return Directive::IgnoreFile;
    }
    if let Some(list) = trimmed.strip_prefix("ignore[")
        && let Some(list) = list.strip_suffix(']')
    {
        let list_offset = rest_offset + "ignore[".len();
        let mut rules = Vec::new();
        let mut at = 0;
        for part in list.split(',') {
            let lead = part.len() - part.trim_start().len();
            let name = part.trim();
            if !name.is_empty() {
                let start = list_offset + at + lead;
                rules.push((name.to_string(), start..start + name.len()));
            }
            at += part.len() + 1;
        }
        if !rules.is_empty() {
            return Directive::Ignore { rules };
        }
    }
    Directive::Malformed(trimmed.to_string())
}

/// Every `# cgpu-lint:` comment of `text`, in order.
pub fn scan(text: &str) -> Vec<Comment> {
    let mut out = Vec::new();
    // One vectorised search of the whole text, instead of one per line, for the usual file
    // without directives.
    if memchr::memmem::find(text.as_bytes(), MARKER.as_bytes()).is_none() {
        return out;
    }
    let mut base = 0;
    for (idx, raw) in text.split_inclusive('\n').enumerate() {
        let line = raw.trim_end_matches(['\n', '\r']);
        if line.contains(MARKER)
            && let Some(comment) = comment_start(line)
        {
            // The directive may follow other comment text: `# our mirror # cgpu-lint: ...`.
            let directive = line[comment..]
                .match_indices('#')
                .map(|(i, _)| comment + i)
                .find_map(|hash| {
                    let body = &line[hash + 1..];
                    let lead = body.len() - body.trim_start().len();
                    body[lead..]
                        .strip_prefix(MARKER)
                        .map(|rest| (hash, hash + 1 + lead + MARKER.len(), rest))
                });
            if let Some((hash, rest_at, rest)) = directive {
                let rest_lead = rest.len() - rest.trim_start().len();
                out.push(Comment {
                    line: idx + 1,
                    span: base + hash..base + line.len(),
                    directive: parse_directive(rest.trim_start(), base + rest_at + rest_lead),
                });
            }
        }
        base += raw.len();
    }
    out
}

/// The document (1-based) that byte `offset` of `text` belongs to, counted by `---` markers; a
/// marker before any content opens document 1 rather than ending an empty one.
fn document_at(text: &str, offset: usize) -> usize {
    let mut doc = 1;
    let mut content_seen = false;
    let mut base = 0;
    for raw in text.split_inclusive('\n') {
        if base > offset {
            break;
        }
        let line = raw.trim_end_matches(['\n', '\r']);
        if line == "---" || line.starts_with("--- ") || line.starts_with("---\t") {
            if content_seen {
                doc += 1;
            }
            content_seen = true;
        } else {
            let t = line.trim_start();
            if !t.is_empty() && !t.starts_with('#') {
                content_seen = true;
            }
        }
        base += raw.len();
    }
    doc
}

fn unused(src: &Arc<Source>, span: Range<usize>, message: String) -> Diagnostic {
    let info = catalogue::RuleId::UnusedIgnore.info();
    Diagnostic {
        rule: info.id,
        severity: info.severity,
        message,
        help: info.help.to_string(),
        src: src.clone(),
        document: document_at(&src.text, span.start),
        path: String::new(),
        span,
        edits: Vec::new(),
        related: Vec::new(),
        fix_note: None,
        consequence: None,
    }
}

/// Drop the findings of `diags` that point into `src` and that its comments suppress, and add an
/// `unused-ignore` finding for each name in an `ignore[...]` that suppressed nothing. Findings
/// that point into other sources pass through untouched.
pub fn apply(src: &Arc<Source>, diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let comments = scan(&src.text);
    if comments.is_empty() {
        return diags;
    }
    let here = |d: &Diagnostic| Arc::ptr_eq(&d.src, src);
    if comments
        .iter()
        .any(|c| c.directive == Directive::IgnoreFile)
    {
        return diags.into_iter().filter(|d| !here(d)).collect();
    }
    // used[comment][rule]
    let mut used: Vec<Vec<bool>> = comments
        .iter()
        .map(|c| match &c.directive {
            Directive::Ignore { rules } => vec![false; rules.len()],
            _ => Vec::new(),
        })
        .collect();
    let mut kept = Vec::with_capacity(diags.len());
    'diag: for d in diags {
        if here(&d) {
            let line = d.start().line;
            for (ci, c) in comments.iter().enumerate() {
                if c.line != line && c.line + 1 != line {
                    continue;
                }
                if let Directive::Ignore { rules } = &c.directive
                    && let Some(ri) = rules.iter().position(|(r, _)| r == d.rule.name())
                {
                    used[ci][ri] = true;
                    continue 'diag;
                }
            }
        }
        kept.push(d);
    }
    for (ci, c) in comments.iter().enumerate() {
        match &c.directive {
            Directive::Ignore { rules } => {
                for (ri, (name, span)) in rules.iter().enumerate() {
                    if used[ci][ri] {
                        continue;
                    }
                    let message = if catalogue::find(name).is_none() {
                        format!("`{name}` is not a cgpu-lint rule, so this ignore suppresses nothing")
                    } else {
                        format!(
                            "ignore[{name}] suppresses nothing: no `{name}` finding starts on line {} or {}",
                            c.line,
                            c.line + 1
                        )
                    };
                    kept.push(unused(src, span.clone(), message));
                }
            }
            Directive::Malformed(text) => kept.push(unused(
                src,
                c.span.clone(),
                format!(
                    "`cgpu-lint: {text}` is not a directive (expected `ignore[rule, …]` or `ignore-file`), so it suppresses nothing"
                ),
            )),
            Directive::IgnoreFile => {}
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comment_after_yaml_and_on_its_own_line() {
        let text = "cgpu:\n  # cgpu-lint: ignore[policy-out-of-range]\n  policy: 9 # cgpu-lint: ignore[a, b]\n";
        let c = scan(text);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].line, 2);
        assert_eq!(c[1].line, 3);
        let Directive::Ignore { rules } = &c[1].directive else {
            panic!("{c:?}")
        };
        assert_eq!(&text[rules[1].1.clone()], "b");
        assert_eq!(&text[rules[0].1.clone()], "a");
    }

    #[test]
    fn hash_inside_quotes_or_a_word_is_not_a_comment() {
        assert!(scan("a: \"x # cgpu-lint: ignore[a]\"\n").is_empty());
        assert!(scan("a: 'x # cgpu-lint: ignore[a]'\n").is_empty());
        assert!(scan("a: x#cgpu-lint: ignore[a]\n").is_empty());
        assert_eq!(scan("a: it's # cgpu-lint: ignore[a]\n").len(), 1);
        let text = "a: b  # our mirror # cgpu-lint: ignore[image-name]\n";
        let c = scan(text);
        let Directive::Ignore { rules } = &c[0].directive else {
            panic!("{c:?}")
        };
        assert_eq!(&text[rules[0].1.clone()], "image-name");
    }

    #[test]
    fn ignore_file_and_malformed() {
        assert_eq!(
            scan("# cgpu-lint: ignore-file\n")[0].directive,
            Directive::IgnoreFile
        );
        assert!(matches!(
            scan("# cgpu-lint: ignroe[a]\n")[0].directive,
            Directive::Malformed(_)
        ));
    }

    #[test]
    fn documents_are_counted_by_markers() {
        let text = "# c\n---\na: 1\n---\nb: 2\n";
        assert_eq!(document_at(text, text.find("a:").unwrap()), 1);
        assert_eq!(document_at(text, text.find("b:").unwrap()), 2);
    }
}
