//! Writing YAML text back: a string rendered as a scalar Helm reads as that same string, and the
//! text a node's replacement needs to stay well-formed where it stands. Used by `fix`, `set`,
//! `generate` and the rules' fixes (which wrap these texts in `diag::Edit`s).

use super::node::{Node, Style};
use super::resolve::{self, Scalar};

/// Render a string value, keeping the original quoting style where it stays a string. Plain is
/// used only when the plain text reads back as the same string under Helm's rules.
pub fn render_string(s: &str, style: Style) -> String {
    match style {
        Style::SingleQuoted => format!("'{}'", s.replace('\'', "''")),
        Style::DoubleQuoted => double_quoted(s),
        _ if plain_is_safe(s) => s.to_string(),
        _ => double_quoted(s),
    }
}

pub fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match escape_common(c) {
            Some(e) => out.push_str(e),
            None if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            None => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The escapes YAML's double-quoted style and JSON write alike: `"`, `\`, a line feed and a tab
/// (`helm/json.rs` writes them with these too).
pub fn escape_common(c: char) -> Option<&'static str> {
    match c {
        '"' => Some("\\\""),
        '\\' => Some("\\\\"),
        '\n' => Some("\\n"),
        '\t' => Some("\\t"),
        _ => None,
    }
}

/// Can `s` be written as a plain scalar and read back (by Helm) as this same string?
pub fn plain_is_safe(s: &str) -> bool {
    if s.is_empty() || s.trim() != s {
        return false;
    }
    if !matches!(resolve::helm(s), Scalar::Str(_)) {
        return false;
    }
    if resolve::yaml11_disagreement(s) {
        return false;
    }
    let first = s.chars().next().unwrap_or(' ');
    if "-?:,[]{}#&*!|>'\"%@`".contains(first) {
        return false;
    }
    !(s.contains(": ") || s.contains(" #") || s.contains(['\n', '\t', '\r']) || s.ends_with(':'))
}

/// The text that replaces `node`'s whole text with `replacement`.
///
/// go-yaml ends a quoted scalar at its closing quote, so `"true"# note` reads a comment after
/// it; a plain replacement there would take the `#` and the rest of the line into its text (and
/// `true# typo: x` does not even parse). A space keeps the comment a comment.
pub fn replacement_for(node: &Node, replacement: impl Into<String>) -> String {
    let mut replacement = replacement.into();
    if node.src.text.as_bytes().get(node.span.end) == Some(&b'#') {
        replacement.push(' ');
    }
    replacement
}
