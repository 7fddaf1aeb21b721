//! Inline suppressions: `# cgpu-lint: ignore[rule-a, rule-b]` on the offending line or on the line
//! above it (with `until=YYYY-MM-DD` after the bracket, up to that day, UTC, and then a reason
//! after ` -- `, as ESLint's directives take one: `ignore[a] until=2027-01-31 -- vendor image`),
//! and `# cgpu-lint: ignore-file`. They are applied to a file's findings after the rules
//! ran and before `--select`/`--ignore`, so a comment that hides nothing can be reported
//! (`unused-ignore`) whatever the command line asks to see.
//!
//! The comments are found by scanning the text rather than through the YAML parser: a suppression
//! must work in a file that does not parse (to silence a `yaml-syntax` finding, say), and the only
//! thing that matters is where a YAML comment starts: at a `#` that begins the line or follows
//! whitespace, outside quotes.

use std::ops::Range;
use std::sync::Arc;

use crate::catalogue;
use crate::diag::Diagnostic;
use crate::yaml::Source;

/// The marker every directive starts with, after the `#`.
const MARKER: &str = "cgpu-lint:";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// `ignore[a, b]`: these rules, on this line and the next; `until=DATE`: up to that day.
    Ignore {
        rules: Vec<(String, Range<usize>)>,
        until: Option<(String, Range<usize>)>,
    },
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
pub fn comment_start(line: &str) -> Option<usize> {
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
    if let Some(body) = trimmed.strip_prefix("ignore[")
        && let Some(close) = body.find(']')
        && let Some(until) = parse_until(
            &body[close + 1..],
            rest_offset + "ignore[".len() + close + 1,
        )
    {
        let list = &body[..close];
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
            return Directive::Ignore { rules, until };
        }
    }
    Directive::Malformed(trimmed.to_string())
}

/// What follows `ignore[…]`: nothing (`Some(None)`), or ` until=YYYY-MM-DD` with a real date
/// (`Some(Some((date, span)))`, `offset` the byte offset of `rest`), either followed by a reason
/// after ` -- `; anything else is `None` (the comment is malformed: a misspelt `until` must not
/// pass for a reason and make the ignore permanent).
fn parse_until(rest: &str, offset: usize) -> Option<Option<(String, Range<usize>)>> {
    let rest = match reason_at(rest) {
        Some(at) => &rest[..at],
        None => rest,
    };
    if rest.trim().is_empty() {
        return Some(None);
    }
    let lead = rest.len() - rest.trim_start().len();
    let date = rest.trim().strip_prefix("until=")?;
    if lead == 0 || !valid_date(date) {
        return None;
    }
    let start = offset + lead + "until=".len();
    Some(Some((date.to_string(), start..start + date.len())))
}

/// Where the reason (` -- text`, or `--` right after the bracket) starts in what follows
/// `ignore[…]`.
fn reason_at(rest: &str) -> Option<usize> {
    rest.match_indices("--").map(|(i, _)| i).find(|&i| {
        let before = &rest[..i];
        let after = &rest[i + 2..];
        (before.is_empty() || before.ends_with([' ', '\t']))
            && (after.is_empty() || after.starts_with([' ', '\t']))
    })
}

/// Is `s` a date `YYYY-MM-DD` of the proleptic Gregorian calendar?
pub fn valid_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let t = &s[r];
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// Has a suppression good `until` this date (inclusive) expired `today`? Both are
/// `YYYY-MM-DD`, which sort as dates.
pub fn expired(until: &str, today: &str) -> bool {
    until < today
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
    finding(catalogue::RuleId::UnusedIgnore, src, span, message)
}

/// A finding of `rule` about a comment of `src`.
fn finding(
    rule: catalogue::RuleId,
    src: &Arc<Source>,
    span: Range<usize>,
    message: String,
) -> Diagnostic {
    let document = document_at(&src.text, span.start);
    Diagnostic::new(rule, src, document, String::new(), span, message)
}

/// Drop the findings of `diags` that point into `src` and that its comments suppress, and add an
/// `unused-ignore` finding for each name in an `ignore[...]` that suppressed nothing. Findings
/// that point into other sources pass through untouched.
pub fn apply(src: &Arc<Source>, diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    apply_on(src, diags, &crate::date::today_utc())
}

/// [`apply`] as of `today` (`YYYY-MM-DD`): an ignore whose `until` is before it hides nothing
/// and is a `suppression-expired` finding.
pub fn apply_on(src: &Arc<Source>, diags: Vec<Diagnostic>, today: &str) -> Vec<Diagnostic> {
    apply_with(src, diags, today, true)
}

/// [`apply`] for a source that is not an input of the run but holds findings of one (the values
/// file an Argo CD Application names, read beside it): its comments suppress, but what they do
/// not use here is not reported (it may be used when the file is checked on its own).
pub fn apply_quiet(src: &Arc<Source>, diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    apply_with(src, diags, &crate::date::today_utc(), false)
}

fn apply_with(
    src: &Arc<Source>,
    diags: Vec<Diagnostic>,
    today: &str,
    report: bool,
) -> Vec<Diagnostic> {
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
            Directive::Ignore { rules, .. } => vec![false; rules.len()],
            _ => Vec::new(),
        })
        .collect();
    let live = |c: &Comment| match &c.directive {
        Directive::Ignore {
            until: Some((date, _)),
            ..
        } => !expired(date, today),
        _ => true,
    };
    let mut kept = Vec::with_capacity(diags.len());
    'diag: for d in diags {
        if here(&d) {
            let line = d.start().line;
            // The directive on the finding's own line first: one on the line above also covers
            // its own line, and must not take the credit for the next line's own directive.
            let own = comments.iter().enumerate().filter(|(_, c)| c.line == line);
            let above = comments
                .iter()
                .enumerate()
                .filter(|(_, c)| c.line + 1 == line);
            for (ci, c) in own.chain(above) {
                if let Directive::Ignore { rules, .. } = &c.directive
                    && live(c)
                    && let Some(ri) = rules.iter().position(|(r, _)| r == d.rule.name())
                {
                    used[ci][ri] = true;
                    continue 'diag;
                }
            }
        }
        kept.push(d);
    }
    if !report {
        return kept;
    }
    for (ci, c) in comments.iter().enumerate() {
        match &c.directive {
            Directive::Ignore {
                rules,
                until: Some((date, span)),
            } if !live(c) => {
                let names: Vec<&str> = rules.iter().map(|(r, _)| r.as_str()).collect();
                kept.push(finding(
                    catalogue::RuleId::SuppressionExpired,
                    src,
                    span.clone(),
                    format!(
                        "ignore[{}] expired on {date} (until={date}): it hides nothing now, so what it hid is reported again",
                        names.join(", ")
                    ),
                ));
            }
            Directive::Ignore { rules, .. } => {
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
                    "`cgpu-lint: {text}` is not a directive (expected `ignore[rule, …]`, `ignore[rule, …] until=YYYY-MM-DD` or `ignore-file`), so it suppresses nothing"
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
        let Directive::Ignore { rules, .. } = &c[1].directive else {
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
        let Directive::Ignore { rules, .. } = &c[0].directive else {
            panic!("{c:?}")
        };
        assert_eq!(&text[rules[0].1.clone()], "image-name");
    }

    /// Two neighbouring lines, each with its own directive for the same rule: each is used
    /// (the upper one used to take the credit for both and the lower one was "unused").
    #[test]
    fn the_directive_on_the_findings_own_line_is_credited_first() {
        use crate::lint::{Settings, lint_file};
        let text = "cgpu:\n  enabled: On # cgpu-lint: ignore[yaml11-scalar]\n  checkRegions: n # cgpu-lint: ignore[yaml11-scalar]\n  tag: v1.5.12-77ac0de-aliyun\n  policy: 1\n";
        let src = Source::new("v.yaml", text.to_string());
        let found = lint_file(&src, &Settings::default());
        assert!(
            found
                .iter()
                .all(|d| d.rule != catalogue::RuleId::UnusedIgnore
                    && d.rule != catalogue::RuleId::Yaml11Scalar),
            "{found:?}"
        );
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

    #[test]
    fn until_takes_a_real_date_after_the_bracket() {
        let text = "a: 1 # cgpu-lint: ignore[a] until=2027-01-31\n";
        let c = scan(text);
        let Directive::Ignore {
            until: Some((date, span)),
            ..
        } = &c[0].directive
        else {
            panic!("{c:?}")
        };
        assert_eq!(date, "2027-01-31");
        assert_eq!(&text[span.clone()], "2027-01-31");
        // A reason after ` -- `, with or without a date.
        for good in [
            "# cgpu-lint: ignore[a] -- vendor image, see TICKET-12\n",
            "# cgpu-lint: ignore[a] until=2027-01-31 -- vendor image\n",
            "# cgpu-lint: ignore[a] --\n",
        ] {
            assert!(
                matches!(scan(good)[0].directive, Directive::Ignore { .. }),
                "{good}"
            );
        }
        let c = scan("x: 1 # cgpu-lint: ignore[a] until=2027-01-31 -- until=2020-01-01\n");
        assert!(
            matches!(&c[0].directive, Directive::Ignore { until: Some((d, _)), .. } if d == "2027-01-31")
        );
        for bad in [
            "# cgpu-lint: ignore[a] untl=2027-01-31 -- why\n",
            "# cgpu-lint: ignore[a] --why\n",
            "# cgpu-lint: ignore[a] until=2027-02-30\n",
            "# cgpu-lint: ignore[a] until=2027-1-31\n",
            "# cgpu-lint: ignore[a]until=2027-01-31\n",
            "# cgpu-lint: ignore[a] later\n",
        ] {
            assert!(
                matches!(scan(bad)[0].directive, Directive::Malformed(_)),
                "{bad}"
            );
        }
        assert!(valid_date("2024-02-29") && !valid_date("2023-02-29") && !valid_date("2000-13-01"));
    }

    #[test]
    fn an_until_date_expires_the_day_after() {
        assert!(expired("2026-12-01", "2026-12-02") && !expired("2026-12-02", "2026-12-02"));
    }
}
