//! YAML held in a literal block string (an Argo CD Application's `helm.values: |`, a ConfigMap's
//! `values.yaml: |`) read in place: [`literal_source`] makes a source of the same length as the
//! file in which every byte outside the string's content is a space (line breaks kept) and the
//! content lines stand as written. The YAML inside then parses as the string does (only its
//! indentation differs, by the same number of spaces on every line), and every span in it is a
//! span of the file: line and column are the file's, and an edit splices the file's bytes.

use std::sync::Arc;

use super::{Node, Scalar, Source, Style};

/// The content lines of a literal block string (first and last line, 1-based) and their
/// indentation, or why it cannot be read in place.
fn literal_lines(node: &Node) -> Result<(usize, usize, usize), String> {
    match node.style {
        Style::Literal => {}
        Style::Folded => {
            return Err(
                "a folded string (`>`): its lines are joined, so positions inside it cannot be given; write it as `|`"
                    .into(),
            );
        }
        _ => {
            return Err(
                "a one-line string: write the values as a literal block (`|`) or as valuesObject to have them checked"
                    .into(),
            );
        }
    }
    let src = &node.src;
    // A block scalar's span starts at its header (`|`, chomping, perhaps a comment).
    let header_line = src.line_col(node.span.start).line;
    let header = src.line_text(header_line);
    let indicators = header
        .char_indices()
        .rev()
        .filter(|&(_, c)| c == '|')
        .map(|(i, _)| header[i + 1..].split('#').next().unwrap_or("").trim())
        .find(|rest| {
            rest.chars()
                .all(|c| c.is_ascii_digit() || c == '+' || c == '-')
        });
    let Some(indicators) = indicators else {
        return Err("the block string's header (`|`) was not found".into());
    };
    if indicators.chars().any(|c| c.is_ascii_digit()) {
        return Err(
            "a block string with an indentation indicator (`|2`): positions inside it are not mapped"
                .into(),
        );
    }
    let mut indent: Option<usize> = None;
    let first = header_line + 1;
    let mut last = header_line;
    for line in first..=src.line_count() {
        let t = src.line_text(line);
        if t.bytes().all(|b| b == b' ') {
            continue;
        }
        let n = t.bytes().take_while(|&b| b == b' ').count();
        match indent {
            None if n == 0 => break,
            None => indent = Some(n),
            Some(i) if n < i => break,
            Some(_) => {}
        }
        last = line;
    }
    let Some(indent) = indent else {
        return Err("an empty block string".into());
    };
    Ok((first, last, indent))
}

/// The content of a literal block string as a source with the file's offsets (named as the
/// file), or why it cannot be read in place.
pub fn literal_source(node: &Node) -> Result<Arc<Source>, String> {
    let Some(Scalar::Str(decoded)) = node.scalar() else {
        return Err("the block string is not a string".into());
    };
    let (first, last, indent) = literal_lines(node)?;
    let src = &node.src;
    let text = &src.text;
    let start = src.line_start(first);
    let end = src.line_start(last) + src.line_text(last).len();
    let mut rebuilt = String::new();
    for line in first..=last {
        let t = src.line_text(line);
        let cut = t.bytes().take(indent).take_while(|&b| b == b' ').count();
        let t = &t[cut..];
        if t.starts_with("---") || t.starts_with("...") || t.starts_with('%') {
            return Err(
                "the string holds a document marker or directive at the start of a line: positions inside it are not mapped"
                    .into(),
            );
        }
        rebuilt.push_str(t);
        rebuilt.push('\n');
    }
    if rebuilt.trim_end_matches('\n') != decoded.trim_end_matches('\n') {
        return Err("the block string's lines do not read back as its text: positions inside it are not mapped".into());
    }
    let mut out = String::with_capacity(text.len());
    for (i, ch) in text.char_indices() {
        if (start..end).contains(&i) || ch == '\n' || ch == '\r' {
            out.push(ch);
        } else {
            for _ in 0..ch.len_utf8() {
                out.push(' ');
            }
        }
    }
    let inner = Source::new(src.name.clone(), out);
    // The same YAML, read in place and read as the string: anything indentation could change
    // (it should not) is caught here rather than reported at a wrong place.
    let as_string = Source::new(src.name.clone(), decoded.clone());
    if !reads_alike(&inner, &as_string) {
        return Err(
            "the YAML in the block string reads differently in place: positions inside it are not mapped"
                .into(),
        );
    }
    Ok(inner)
}

/// YAML held in a string, decoded: its own text, and where each of its bytes is in the file, so
/// that a finding inside it points at its characters there. A one-line quoted string
/// (`values: "cgpu:\n  policy: 7\n"`, as kubectl prints a values string with trailing spaces,
/// [`quoted_source`]), or a literal block ([`literal_map`]); either with parts replaced
/// ([`Quoted::replaced`]: what an ApplicationSet's generator fills in).
#[derive(Debug)]
pub struct Quoted {
    /// The decoded YAML (named as the file).
    pub src: Arc<Source>,
    /// Per decoded byte: the file's bytes of the character it belongs to (for a character
    /// written as itself, the byte's own; for an escape, the whole escape; for a replaced part,
    /// the whole text it replaced).
    at: Vec<(usize, usize)>,
    /// The offset of the closing quote (after a block's last content line).
    end: usize,
    /// How text is written inside the string.
    quotes: Quotes,
    /// The decoded ranges that replaced parts of the string, each with the file's span of the
    /// value it came from, when one value is all of it.
    filled: Vec<(std::ops::Range<usize>, Option<std::ops::Range<usize>>)>,
}

/// A part of a decoded string replaced ([`Quoted::replaced`]): its range, its new text, and the
/// file's span of the value that text came from whole, when there is one.
pub type Replacement = (
    std::ops::Range<usize>,
    String,
    Option<std::ops::Range<usize>>,
);

/// The kind of string a [`Quoted`] is read from.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Quotes {
    Double,
    Single,
    /// A literal block (`|`): text stands as it is, on one line.
    Block,
}

impl Quoted {
    /// The file's span of the decoded span `r`: its characters as written, an escape (`\n`,
    /// `\u0037`) whole; `None` when `r` does not start and end between two characters. A span
    /// that is exactly a replaced part (its quotes aside) whose value came whole from one place
    /// is that place.
    pub fn file_span(&self, r: std::ops::Range<usize>) -> Option<std::ops::Range<usize>> {
        let text = &self.src.text;
        if r.start > r.end
            || r.end > self.at.len()
            || !text.is_char_boundary(r.start)
            || !text.is_char_boundary(r.end)
        {
            return None;
        }
        let bytes = text.as_bytes();
        let inner = match (bytes.get(r.start), r.end.checked_sub(1).map(|e| bytes[e])) {
            (Some(&a), Some(b)) if r.len() >= 2 && a == b && (a == b'"' || a == b'\'') => {
                r.start + 1..r.end - 1
            }
            _ => r.clone(),
        };
        if let Some((_, Some(from))) = self
            .filled
            .iter()
            .find(|(f, _)| *f == r || (*f == inner && !f.is_empty()))
        {
            return Some(from.clone());
        }
        if r.start == r.end {
            let p = self.at.get(r.start).map_or(self.end, |a| a.0);
            return Some(p..p);
        }
        Some(self.at[r.start].0..self.at[r.end - 1].1)
    }

    /// The file's span an edit of the decoded span `r` changes: `None` when it touches a
    /// replaced part (editing the string there would change what every value renders from).
    pub fn edit_span(&self, r: std::ops::Range<usize>) -> Option<std::ops::Range<usize>> {
        let touches = |f: &std::ops::Range<usize>| {
            if r.is_empty() {
                f.start < r.start && r.start < f.end
            } else {
                r.start < f.end && f.start < r.end
            }
        };
        if self.filled.iter().any(|(f, _)| touches(f)) {
            return None;
        }
        if r.start == r.end {
            return self.file_span(r);
        }
        let text = &self.src.text;
        if r.end > self.at.len() || !text.is_char_boundary(r.start) || !text.is_char_boundary(r.end)
        {
            return None;
        }
        Some(self.at[r.start].0..self.at[r.end - 1].1)
    }

    /// Whether parts of the string were replaced ([`Quoted::replaced`]).
    pub fn is_filled(&self) -> bool {
        !self.filled.is_empty()
    }

    /// `text` as it must be written inside the string (escaped as its quotes need); `None`
    /// when the string cannot hold it (a line break in a single-quoted one-line string or in
    /// one line of a block).
    pub fn escape(&self, text: &str) -> Option<String> {
        let mut out = String::new();
        for c in text.chars() {
            match (self.quotes, c) {
                (Quotes::Double, '\\') => out.push_str("\\\\"),
                (Quotes::Double, '"') => out.push_str("\\\""),
                (Quotes::Double, '\n') => out.push_str("\\n"),
                (Quotes::Double, '\t') => out.push_str("\\t"),
                (Quotes::Double, '\r') => out.push_str("\\r"),
                (Quotes::Double, c) if c.is_control() => {
                    out.push_str(&format!("\\u{:04X}", c as u32))
                }
                (Quotes::Single, '\'') => out.push_str("''"),
                (Quotes::Single | Quotes::Block, '\n' | '\r') => return None,
                (_, c) => out.push(c),
            }
        }
        Some(out)
    }

    /// The same string with the decoded ranges of `parts` (in order, not overlapping) replaced
    /// by their text: each replacement's bytes stand for the whole text it replaced, and a
    /// finding on exactly one points at the file's span given with it (the value it came from).
    pub fn replaced(&self, parts: &[Replacement]) -> Quoted {
        let old = &self.src.text;
        let mut text = String::with_capacity(old.len());
        let mut at = Vec::with_capacity(self.at.len());
        let mut filled = Vec::new();
        let mut from = 0;
        for (r, new, place) in parts {
            text.push_str(&old[from..r.start]);
            at.extend_from_slice(&self.at[from..r.start]);
            let whole = match (
                self.at.get(r.start),
                r.end.checked_sub(1).and_then(|e| self.at.get(e)),
            ) {
                (Some(a), Some(b)) if r.end > r.start => (a.0, b.1),
                _ => {
                    let p = self.at.get(r.start).map_or(self.end, |a| a.0);
                    (p, p)
                }
            };
            let start = text.len();
            text.push_str(new);
            at.extend(std::iter::repeat_n(whole, new.len()));
            filled.push((start..text.len(), place.clone()));
            from = r.end;
        }
        text.push_str(&old[from..]);
        at.extend_from_slice(&self.at[from..]);
        Quoted {
            src: Source::new(self.src.name.clone(), text),
            at,
            end: self.end,
            quotes: self.quotes,
            filled,
        }
    }
}

/// The text of a literal block string (as its node decodes it), with the file position of
/// every byte ([`Quoted`]), or why it cannot be read so.
pub fn literal_map(node: &Node) -> Result<Quoted, String> {
    let Some(Scalar::Str(decoded)) = node.scalar() else {
        return Err("the block string is not a string".into());
    };
    let (first, last, indent) = literal_lines(node)?;
    let src = &node.src;
    let mut text = String::new();
    let mut at = Vec::new();
    for line in first..=last {
        let start = src.line_start(line);
        let t = src.line_text(line);
        let cut = t.bytes().take(indent).take_while(|&b| b == b' ').count();
        text.push_str(&t[cut..]);
        at.extend((start + cut..start + t.len()).map(|i| (i, i + 1)));
        let eol = start + t.len();
        text.push('\n');
        at.push((
            eol,
            src.line_start(line + 1).max(eol + 1).min(src.text.len()),
        ));
    }
    let end = src.line_start(last) + src.line_text(last).len();
    let core = decoded.trim_end_matches('\n');
    if text.trim_end_matches('\n') != core {
        return Err("the block string's lines do not read back as its text: positions inside it are not mapped".into());
    }
    // The chomping decides the line breaks at the end: those of the lines read, then at the
    // last content line's end.
    at.truncate(core.len());
    at.resize(decoded.len(), (end, end));
    Ok(Quoted {
        src: Source::new(src.name.clone(), decoded.clone()),
        at,
        end,
        quotes: Quotes::Block,
        filled: Vec::new(),
    })
}

/// The YAML of a one-line double- or single-quoted string, decoded with the file position of
/// every character ([`Quoted`]), or why it cannot be read so.
pub fn quoted_source(node: &Node) -> Result<Quoted, String> {
    let double = match node.style {
        Style::DoubleQuoted => true,
        Style::SingleQuoted => false,
        _ => {
            return Err(
                "a plain one-line string: write the values as a literal block (`|`) or as valuesObject to have them checked"
                    .into(),
            );
        }
    };
    let Some(Scalar::Str(decoded)) = node.scalar() else {
        return Err("the string is not a string".into());
    };
    let src = &node.src;
    let raw = src.text.get(node.span.clone()).unwrap_or_default();
    let q = if double { '"' } else { '\'' };
    let body = raw
        .strip_prefix(q)
        .and_then(|r| r.strip_suffix(q))
        .filter(|b| !b.contains(['\n', '\r']))
        .ok_or("a quoted string over several lines: its line breaks fold, so positions inside it are not mapped; write it as `|`")?;
    let base = node.span.start + 1;
    let mut text = String::new();
    let mut at: Vec<(usize, usize)> = Vec::new();
    let mut chars = body.char_indices().peekable();
    let bad = || {
        "an escape the string's reading does not match: positions inside it are not mapped"
            .to_string()
    };
    while let Some((i, c)) = chars.next() {
        let (ch, len, escaped) = if double && c == '\\' {
            let (_, e) = chars.next().ok_or_else(bad)?;
            let hex = |n: usize, chars: &mut std::iter::Peekable<std::str::CharIndices>| {
                let mut v = 0u32;
                for _ in 0..n {
                    let (_, h) = chars.next()?;
                    v = v * 16 + h.to_digit(16)?;
                }
                char::from_u32(v)
            };
            let ch = match e {
                '0' => '\0',
                'a' => '\u{7}',
                'b' => '\u{8}',
                't' | '\t' => '\t',
                'n' => '\n',
                'v' => '\u{b}',
                'f' => '\u{c}',
                'r' => '\r',
                'e' => '\u{1b}',
                ' ' => ' ',
                '"' => '"',
                '/' => '/',
                '\\' => '\\',
                'N' => '\u{85}',
                '_' => '\u{a0}',
                'L' => '\u{2028}',
                'P' => '\u{2029}',
                'x' => hex(2, &mut chars).ok_or_else(bad)?,
                'u' => hex(4, &mut chars).ok_or_else(bad)?,
                'U' => hex(8, &mut chars).ok_or_else(bad)?,
                _ => return Err(bad()),
            };
            let next = chars.peek().map_or(body.len(), |(j, _)| *j);
            (ch, next - i, true)
        } else if !double && c == '\'' {
            chars.next().filter(|(_, e)| *e == '\'').ok_or_else(bad)?;
            ('\'', 2, true)
        } else {
            (c, c.len_utf8(), false)
        };
        let start = base + i;
        for k in 0..ch.len_utf8() {
            at.push(if escaped {
                (start, start + len)
            } else {
                (start + k, start + k + 1)
            });
        }
        text.push(ch);
    }
    if text != *decoded {
        return Err(bad());
    }
    Ok(Quoted {
        src: Source::new(src.name.clone(), text),
        at,
        end: base + body.len(),
        quotes: if double {
            Quotes::Double
        } else {
            Quotes::Single
        },
        filled: Vec::new(),
    })
}

/// Do two texts read as the same YAML (the same documents, values and verdict)? A text read in
/// place, its surroundings blanked, against the same text read on its own: anything its
/// indentation could change is caught before a finding is placed by it.
pub fn reads_alike(a: &Arc<Source>, b: &Arc<Source>) -> bool {
    let json = |p: &super::Parsed| {
        (
            p.error.is_some(),
            p.documents
                .iter()
                .map(|d| d.root.as_ref().map(Node::to_json))
                .collect::<Vec<_>>(),
        )
    };
    json(&super::parse(a)) == json(&super::parse(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string_node(text: &str, pointer: &str) -> (Arc<Source>, Node) {
        let src = Source::new("f.yaml", text.to_string());
        let parsed = crate::yaml::parse(&src);
        let root = parsed.documents[0].root.clone().unwrap();
        let node = root.pointer(pointer).unwrap().clone();
        (src, node)
    }

    #[test]
    fn the_string_keeps_the_files_offsets() {
        let text = "a:\r\n  x: \"é\"\t# tab\r\n  values: |\r\n    cgpu:\r\n      policy:\t7\r\n\r\n      tag: v1\r\n  b: 1\r\n";
        let (src, node) = string_node(text, "/a/values");
        let inner = literal_source(&node).unwrap();
        assert_eq!(inner.text.len(), text.len());
        // The content lines are the file's, everything else is blank.
        let start = text.find("    cgpu").unwrap();
        let end = text.find("  b: 1").unwrap();
        assert_eq!(&inner.text[start..end], &text[start..end]);
        assert!(inner.text[..start].bytes().all(|b| b" \r\n".contains(&b)));
        assert!(inner.text[end..].bytes().all(|b| b" \r\n".contains(&b)));
        let parsed = crate::yaml::parse(&inner);
        let policy = parsed.first_at("/cgpu/policy");
        assert_eq!(policy.span.start, text.find('7').unwrap());
        assert_eq!(
            inner.line_col(policy.span.start),
            src.line_col(policy.span.start)
        );
    }

    #[test]
    fn strings_that_cannot_be_read_in_place() {
        for (text, why) in [
            ("v: >\n  cgpu: {}\n", "folded"),
            ("v: \"cgpu: {}\"\n", "one-line"),
            ("v: |2\n    cgpu: {}\n", "indentation indicator"),
            ("v: |\n  cgpu: {}\n  ---\n  cgpu: {}\n", "document marker"),
        ] {
            let (_, node) = string_node(text, "/v");
            let err = literal_source(&node).unwrap_err();
            assert!(err.contains(why), "{text:?}: {err}");
        }
        // A header with chomping and a comment is fine.
        let (_, node) = string_node("v: |- # values\n  cgpu:\n    policy: 1\n", "/v");
        assert!(literal_source(&node).is_ok());
    }

    // A literal block's text with the file position of each byte (CRLF line ends too), and the
    // same text with parts replaced: a span exactly on one replaced part (its quotes aside) is
    // the place given with it, any other is the template's text as written; an edit touching a
    // replaced part is refused.
    #[test]
    fn a_block_maps_its_bytes_and_keeps_them_through_replacement() {
        let text = "a:\r\n  values: |-\r\n    cgpu:\r\n      policy: {{p}}\r\n      tag: 'v{{p}}'\r\nb: \"7\"\r\n";
        let (_, node) = string_node(text, "/a/values");
        let q = literal_map(&node).unwrap();
        assert_eq!(q.src.text, "cgpu:\n  policy: {{p}}\n  tag: 'v{{p}}'");
        let at = |needle: &str, nth: usize| text.match_indices(needle).nth(nth).unwrap().0;
        let cgpu = q.src.text.find("cgpu").unwrap();
        assert_eq!(
            q.file_span(cgpu..cgpu + 4),
            Some(at("cgpu", 0)..at("cgpu", 0) + 4)
        );
        // The decoded line break stands for the file's `\r\n`.
        assert_eq!(
            q.file_span(cgpu + 5..cgpu + 6),
            Some(at("cgpu:", 0) + 5..at("cgpu:", 0) + 7)
        );
        let tag = q.src.text.find("{{p}}").unwrap();
        let in_tag = q.src.text.rfind("{{p}}").unwrap();
        let seven = at("\"7\"", 0);
        let r = q.replaced(&[
            (tag..tag + 5, "2".into(), Some(seven..seven + 3)),
            (in_tag..in_tag + 5, "2".into(), Some(seven..seven + 3)),
        ]);
        assert_eq!(r.src.text, "cgpu:\n  policy: 2\n  tag: 'v2'");
        assert!(r.is_filled());
        let two = r.src.text.find('2').unwrap();
        assert_eq!(r.file_span(two..two + 1), Some(seven..seven + 3));
        assert_eq!(r.edit_span(two..two + 1), None);
        // `'v2'`: the template's `'v{{p}}'`, whole.
        let v = r.src.text.find("'v2'").unwrap();
        let written = at("'v{{p}}'", 0);
        assert_eq!(r.file_span(v..v + 4), Some(written..written + 8));
        assert_eq!(r.edit_span(v..v + 4), None);
        // Text before the parts is the template's, and may be edited.
        let policy = r.src.text.find("policy").unwrap();
        let file = at("policy", 0);
        assert_eq!(r.edit_span(policy..policy + 6), Some(file..file + 6));
        assert_eq!(r.escape("x\ny"), None);
    }
}
