//! `check --add-ignore`: turn a file's current findings into reviewed inline ignores (ruff's
//! `--add-noqa`). Each finding gets `# cgpu-lint: ignore[rule]` (with ` until=DATE` and
//! ` -- REASON` when asked) where [`crate::suppress`] reads it: merged into a directive already on
//! its line (or alone on the line above), else at the end of its line (after a comment already
//! there), else on a new line above it with its indentation. A place is taken only when the
//! file's reading is unchanged by it: every document's values as the parser reads them, a
//! `values: |` string's YAML read as YAML (a comment in it changes the string, not the values
//! Helm gets), a Markdown file's text outside its ```yaml blocks byte for byte. A finding with
//! no such place (inside a block scalar that is not YAML, a multi-line quoted string) is reported
//! as not ignorable; a file-level `ignore-file` would hide every future finding too, so it is
//! never written. Everything else is copied byte for byte (CRLF too), and the result is checked
//! again before it is returned: the rules ignored are gone from those lines.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::catalogue::{self, RuleId, Severity};
use crate::diag::Diagnostic;
use crate::lint::{self, Settings};
use crate::suppress::{self, Directive};
use crate::yaml::{self, Node, Scalar, Source, Style, Value};

/// What to write besides the rules.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// ` -- REASON` after the list (one line; empty: none).
    pub reason: Option<String>,
    /// ` until=YYYY-MM-DD`.
    pub until: Option<String>,
}

/// A finding no comment can be placed for.
#[derive(Debug, Clone)]
pub struct NotIgnorable {
    pub line: usize,
    pub column: usize,
    pub rule: RuleId,
    pub why: String,
}

/// The outcome for one file.
#[derive(Debug, Clone)]
pub struct Added {
    /// The new text (the original when nothing was added).
    pub text: String,
    /// How many rule names were written (one per rule and line).
    pub added: usize,
    pub not_ignorable: Vec<NotIgnorable>,
}

/// Does `--add-ignore` write an ignore for this finding? Errors and warnings (what fails a
/// check, with `--deny-warnings`); infos fail nothing.
pub fn wanted(d: &Diagnostic) -> bool {
    matches!(d.severity, Severity::Error | Severity::Warning) && d.rule != RuleId::IoError
}

/// The rules of a finding: its own and those merged into it on the same token (`; also RULE:`),
/// which surface once its own is ignored.
fn rules_of(d: &Diagnostic) -> Vec<&'static str> {
    let mut out = vec![d.rule.name()];
    for info in catalogue::RULES {
        if info.id != d.rule && d.message.contains(&format!("; also {}: ", info.id.name())) {
            out.push(info.id.name());
        }
    }
    out
}

/// Why a comment cannot ignore this finding, if it cannot.
fn cannot(src: &Source, d: &Diagnostic) -> Option<String> {
    if src.invalid.is_some() {
        return Some("the file is not valid text: fix its encoding first".into());
    }
    match d.rule {
        RuleId::YamlSyntax => Some(
            "the YAML does not parse here, so no comment can be placed safely: fix the syntax"
                .into(),
        ),
        RuleId::UnusedIgnore | RuleId::SuppressionExpired => {
            Some("a finding about a cgpu-lint comment: edit or remove that comment".into())
        }
        _ => None,
    }
}

/// Add ignores for `targets` (findings of `src`, as the check that found them reported them) and
/// check the result with `settings`. `Err` when the result would still report one of them (a
/// bug; nothing is to be written then).
pub fn add_ignores(
    src: &Arc<Source>,
    targets: &[&Diagnostic],
    settings: &Settings,
    o: &Options,
) -> Result<Added, String> {
    let mut not_ignorable = Vec::new();
    let mut by_line: BTreeMap<usize, (Vec<&'static str>, Vec<&Diagnostic>)> = BTreeMap::new();
    for d in targets {
        if let Some(why) = cannot(src, d) {
            let at = d.start();
            not_ignorable.push(NotIgnorable {
                line: at.line,
                column: at.column,
                rule: d.rule,
                why,
            });
            continue;
        }
        let entry = by_line.entry(d.start().line).or_default();
        for r in rules_of(d) {
            if !entry.0.contains(&r) {
                entry.0.push(r);
            }
        }
        entry.1.push(d);
    }
    let before = reading(&src.name, &src.text);
    // The usual case first: every line's best place at once, read once (a file with thousands
    // of findings must not be parsed once per finding).
    if let Some((text, added, placed)) = all_at_once(src, &by_line, &before, o) {
        verify(src, &text, &placed, settings)?;
        not_ignorable.sort_by_key(|n| (n.line, n.column));
        return Ok(Added {
            text,
            added,
            not_ignorable,
        });
    }
    let mut text = src.text.clone();
    let mut added = 0;
    // (line of the finding, rules, a line was inserted above it)
    let mut placed: Vec<(usize, Vec<&'static str>, bool)> = Vec::new();
    // Bottom up: an inserted line never moves a line still to do.
    for (&line, (rules, ds)) in by_line.iter().rev() {
        let cur = Source::new(src.name.clone(), text.clone());
        let comments = suppress::scan(&text);
        let mut done = false;
        for cand in candidates(&cur, &comments, line, rules, o) {
            let mut next = text.clone();
            next.replace_range(cand.at.clone(), &cand.text);
            if reading(&src.name, &next) == before && covers(&next, cand.directive_line, rules) {
                added += cand.added;
                text = next;
                placed.push((line, rules.clone(), cand.inserted));
                done = true;
                break;
            }
        }
        if !done {
            for d in ds {
                let at = d.start();
                not_ignorable.push(NotIgnorable {
                    line: at.line,
                    column: at.column,
                    rule: d.rule,
                    why: "no comment can go on this line or the one above without changing what it reads (inside a block string or a multi-line value)".into(),
                });
            }
        }
    }
    not_ignorable.sort_by_key(|n| (n.line, n.column));
    if added > 0 {
        verify(src, &text, &placed, settings)?;
    }
    Ok(Added {
        text,
        added,
        not_ignorable,
    })
}

type Placed = Vec<(usize, Vec<&'static str>, bool)>;

/// Each line's first candidate, all written at once: the new text, the count and the places,
/// when the file reads the same and every directive is read where it was meant to be; `None`
/// sends the lines one by one through every candidate.
fn all_at_once(
    src: &Source,
    by_line: &BTreeMap<usize, (Vec<&'static str>, Vec<&Diagnostic>)>,
    before: &Reading,
    o: &Options,
) -> Option<(String, usize, Placed)> {
    let comments = suppress::scan(&src.text);
    let mut chosen: Vec<(usize, Candidate, Vec<&'static str>)> = Vec::new();
    for (&line, (rules, _)) in by_line {
        let cand = candidates(src, &comments, line, rules, o)
            .into_iter()
            .next()?;
        chosen.push((line, cand, rules.clone()));
    }
    if chosen.is_empty() {
        return None;
    }
    // Edits at distinct places only (two lines merging into one directive go one by one).
    let mut ats: Vec<(usize, usize)> = chosen.iter().map(|c| (c.1.at.start, c.1.at.end)).collect();
    ats.sort();
    if ats.windows(2).any(|w| w[1].0 < w[0].1 || w[1].0 == w[0].0) {
        return None;
    }
    let mut text = src.text.clone();
    let mut order: Vec<usize> = (0..chosen.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(chosen[i].1.at.start));
    for i in order {
        let c = &chosen[i].1;
        text.replace_range(c.at.clone(), &c.text);
    }
    if reading(&src.name, &text) != *before {
        return None;
    }
    let inserted: Vec<usize> = chosen
        .iter()
        .filter(|c| c.1.inserted)
        .map(|c| c.0)
        .collect();
    // A directive line, moved by the lines inserted at or above it (an inserted directive is on
    // its finding's old line number plus those above it).
    let moved = |line: usize| line + inserted.iter().filter(|&&l| l < line).count();
    let scanned = suppress::scan(&text);
    let today = crate::date::today_utc();
    for (_, c, rules) in &chosen {
        let at = moved(c.directive_line);
        let read = scanned.iter().any(|d| {
            d.line == at
                && matches!(&d.directive, Directive::Ignore { rules: have, until }
                    if until.as_ref().is_none_or(|(u, _)| !suppress::expired(u, &today))
                        && rules.iter().all(|r| have.iter().any(|(h, _)| h == r)))
        });
        if !read {
            return None;
        }
    }
    let added = chosen.iter().map(|c| c.1.added).sum();
    let placed = chosen
        .into_iter()
        .map(|(line, c, rules)| (line, rules, c.inserted))
        .collect();
    Some((text, added, placed))
}

/// One way to write the ignore of a line.
struct Candidate {
    at: std::ops::Range<usize>,
    text: String,
    /// The line the directive is on afterwards.
    directive_line: usize,
    inserted: bool,
    added: usize,
}

fn directive(rules: &[&str], o: &Options) -> String {
    let mut s = format!("# cgpu-lint: ignore[{}]", rules.join(", "));
    if let Some(d) = &o.until {
        s.push_str(&format!(" until={d}"));
    }
    if let Some(r) = o.reason.as_deref().map(one_line).filter(|r| !r.is_empty()) {
        s.push_str(&format!(" -- {r}"));
    }
    s
}

/// A reason as one line (a line break would end the comment).
pub fn one_line(reason: &str) -> String {
    reason
        .split(['\n', '\r'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The places to try, best first.
fn candidates(
    src: &Source,
    comments: &[suppress::Comment],
    line: usize,
    rules: &[&'static str],
    o: &Options,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    let until = o.until.as_deref();
    let ours = o.reason.as_deref().map(one_line).filter(|r| !r.is_empty());
    let merge = |c: &suppress::Comment| -> Option<Candidate> {
        let Directive::Ignore {
            rules: have,
            until: u,
        } = &c.directive
        else {
            return None;
        };
        if u.as_ref().map(|(d, _)| d.as_str()) != until {
            return None;
        }
        let missing: Vec<&str> = rules
            .iter()
            .copied()
            .filter(|r| !have.iter().any(|(h, _)| h == r))
            .collect();
        let end = have.last()?.1.end;
        let mut text: String = missing.iter().map(|r| format!(", {r}")).collect();
        let mut at = end..end;
        // The rules join the directive; its reason and ours are both kept ("old; new"), so
        // that neither ignore loses why it was written.
        if let Some(ours) = &ours {
            let tail = src.text.get(end..c.span.end)?;
            let tail = tail.trim_end();
            let reason = tail.find("--").map(|i| tail[i + 2..].trim());
            if reason != Some(ours.as_str()) {
                text.push_str(tail);
                match reason {
                    Some(r) if !r.is_empty() => text.push_str(&format!("; {ours}")),
                    Some(_) => text.push_str(&format!(" {ours}")),
                    None => text.push_str(&format!(" -- {ours}")),
                }
                at = end..end + tail.len();
            }
        }
        Some(Candidate {
            at,
            text,
            directive_line: c.line,
            inserted: false,
            added: missing.len(),
        })
    };
    let here = comments.iter().find(|c| c.line == line);
    if let Some(c) = here {
        out.extend(merge(c));
    }
    if line > 1
        && let Some(c) = comments.iter().find(|c| c.line == line - 1)
        && src.line_text(line - 1).trim_start().starts_with('#')
    {
        out.extend(merge(c));
    }
    let text = src.line_text(line);
    let start = src.line_start(line);
    let end = start + text.len();
    // A second directive on a line is not read: only the first `# cgpu-lint:` counts.
    if here.is_none() {
        let sep = if text.trim().is_empty() { "" } else { " " };
        out.push(Candidate {
            at: end..end,
            text: format!("{sep}{}", directive(rules, o)),
            directive_line: line,
            inserted: false,
            added: rules.len(),
        });
    }
    let rest = &src.text[end..];
    let eol = if rest.starts_with("\r\n") {
        "\r\n"
    } else if rest.starts_with('\n') {
        "\n"
    } else if rest.starts_with('\r') {
        "\r"
    } else {
        src.line_ending()
    };
    let indent: String = text
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    out.push(Candidate {
        at: start..start,
        text: format!("{indent}{}{eol}", directive(rules, o)),
        directive_line: line,
        inserted: true,
        added: rules.len(),
    });
    out
}

/// Does a live directive on `line` of `text` name every rule?
fn covers(text: &str, line: usize, rules: &[&str]) -> bool {
    let today = crate::date::today_utc();
    suppress::scan(text).iter().any(|c| {
        c.line == line
            && matches!(&c.directive, Directive::Ignore { rules: have, until }
                if until.as_ref().is_none_or(|(d, _)| !suppress::expired(d, &today))
                    && rules.iter().all(|r| have.iter().any(|(h, _)| h == r)))
    })
}

/// What a file reads as, for "a comment changed nothing": each document's values (with a
/// `values: |` string's YAML as YAML) and whether it stops at a syntax error; for Markdown, the
/// text outside the ```yaml blocks and each block's reading.
#[derive(Debug, PartialEq)]
enum Reading {
    Yaml(bool, Vec<Option<serde_json::Value>>),
    Markdown(String, Vec<Result<Box<Reading>, String>>),
}

fn reading(name: &str, text: &str) -> Reading {
    let src = Source::new(name, text.to_string());
    if yaml::markdown::is_markdown(name) {
        let blocks = yaml::markdown::yaml_blocks(text);
        let mut outside = String::new();
        let mut at = 0;
        let mut inner = Vec::new();
        for b in &blocks {
            outside.push_str(&text[at..b.content.start]);
            at = b.content.end;
            inner.push(
                yaml::markdown::block_source(&src, b).map(|s| Box::new(yaml_reading(&s.text))),
            );
        }
        outside.push_str(&text[at..]);
        return Reading::Markdown(outside, inner);
    }
    yaml_reading(text)
}

fn yaml_reading(text: &str) -> Reading {
    let src = Source::new("-", text.to_string());
    let parsed = yaml::parse(&src);
    Reading::Yaml(
        parsed.error.is_some(),
        parsed
            .documents
            .iter()
            .map(|d| d.root.as_ref().map(expanded))
            .collect(),
    )
}

/// A node as JSON, a literal block string that holds a YAML mapping as that mapping's reading.
fn expanded(node: &Node) -> serde_json::Value {
    use serde_json::Value as J;
    match &node.value {
        Value::Scalar(Scalar::Str(_)) if node.style == Style::Literal => {
            if let Ok(inner) = yaml::embedded::literal_source(node) {
                let parsed = yaml::parse(&inner);
                let mapping = parsed
                    .documents
                    .first()
                    .and_then(|d| d.root.as_ref())
                    .is_some_and(|r| r.as_map().is_some());
                if parsed.error.is_none() && mapping {
                    let docs: Vec<J> = parsed
                        .documents
                        .iter()
                        .map(|d| d.root.as_ref().map_or(J::Null, expanded))
                        .collect();
                    return serde_json::json!({ "$yaml": docs });
                }
            }
            node.to_json()
        }
        Value::Seq(items) => J::Array(items.iter().map(expanded).collect()),
        Value::Map(entries) => J::Object(
            entries
                .iter()
                .map(|e| (e.key.clone(), expanded(&e.value)))
                .collect(),
        ),
        Value::Scalar(_) => node.to_json(),
    }
}

/// The file checked again: none of the rules ignored starts on the (moved) line of its finding,
/// and no comment written is reported unused.
fn verify(
    src: &Arc<Source>,
    text: &str,
    placed: &[(usize, Vec<&'static str>, bool)],
    settings: &Settings,
) -> Result<(), String> {
    let inserted: Vec<usize> = placed
        .iter()
        .filter(|p| p.2)
        .map(|p| p.0)
        .collect::<Vec<_>>();
    let moved = |line: usize| line + inserted.iter().filter(|&&l| l <= line).count();
    let next = Source::new(src.name.clone(), text.to_string());
    let after = lint::lint_file(&next, settings);
    for (line, rules, _) in placed {
        let now = moved(*line);
        if let Some(d) = after.iter().find(|d| {
            let l = d.start().line;
            (l == now && rules.contains(&d.rule.name()))
                || (d.rule == RuleId::UnusedIgnore
                    && (l == now || l + 1 == now)
                    && next
                        .text
                        .get(d.span.clone())
                        .is_some_and(|r| rules.contains(&r)))
        }) {
            return Err(format!(
                "{}:{now}: the ignore written does not hide {} (a bug: nothing was written)",
                src.name, d.rule
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, text: &str, o: &Options) -> Added {
        let src = Source::new(name, text.to_string());
        let settings = Settings::default();
        let found = lint::lint_file(&src, &settings);
        let targets: Vec<&Diagnostic> = found.iter().filter(|d| wanted(d)).collect();
        add_ignores(&src, &targets, &settings, o).unwrap()
    }

    #[test]
    fn a_trailing_comment_after_an_existing_one_and_crlf_kept() {
        let text = "cgpu:\r\n  enabled: true\r\n  policy: 9 # ours\r\n";
        let a = run("v.yaml", text, &Options::default());
        assert_eq!(
            a.text,
            "cgpu:\r\n  enabled: true\r\n  policy: 9 # ours # cgpu-lint: ignore[policy-out-of-range]\r\n"
        );
        assert_eq!(a.added, 1);
        // A second run adds nothing.
        assert_eq!(run("v.yaml", &a.text, &Options::default()).added, 0);
    }

    #[test]
    fn merged_into_a_directive_on_the_line() {
        let text = "cgpu:\n  enabled: true\n  policy: 9 # cgpu-lint: ignore[image-name] -- old\n";
        let a = run("v.yaml", text, &Options::default());
        assert!(
            a.text
                .contains("# cgpu-lint: ignore[image-name, policy-out-of-range] -- old\n"),
            "{}",
            a.text
        );
    }

    #[test]
    fn reason_and_until_are_written_as_the_suppression_reads_them() {
        let o = Options {
            reason: Some("vendor\nimage".into()),
            until: Some("2999-01-31".into()),
        };
        let a = run("v.yaml", "cgpu:\n  enabled: true\n  policy: 9\n", &o);
        assert!(
            a.text.ends_with(
                "policy: 9 # cgpu-lint: ignore[policy-out-of-range] until=2999-01-31 -- vendor image\n"
            ),
            "{}",
            a.text
        );
    }

    #[test]
    fn a_flow_mapping_over_lines_gets_the_line_above_or_nothing() {
        // A comment after `9` inside the flow mapping is a comment: allowed if the reading holds.
        let text = "cgpu: {enabled: true,\n  policy: 9}\n";
        let a = run("v.yaml", text, &Options::default());
        let again = run("v.yaml", &a.text, &Options::default());
        assert_eq!(again.added, 0);
        assert!(again.not_ignorable.is_empty());
    }
}
