//! go-yaml v2's events (the port in [`super::goyaml`]) → calls on the raw arena
//! ([`super::raw::Arena`]). This is the only file that reads the parser's events: swapping the
//! parser means replacing this file.
//!
//! Here go-yaml's marks become byte ranges (a node's own text: after its anchor and tag; a
//! quoted scalar ends at its closing quote, a block scalar at its last content character), its
//! anchor names the arena's numbers (go-yaml keeps the latest definition of a name), its tags the
//! model's, and its errors point at the line Helm's message names.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use super::goyaml::{self, EventKind, Parser, ScalarStyle};
use super::lean::Lean;
use super::node::{Parsed, Style, Visitor};
use super::raw::Arena;
use super::raw_node::MAX_NESTING_DEPTH;
use super::source::Source;

/// Read every document of `src` into the arena (lean when `lean` is given; without the arena
/// when `direct`, see `direct.rs`). `None`: the lean or direct reading gave up.
pub(super) fn read(src: &Arc<Source>, lean: Option<&Lean>, direct: bool) -> Option<Parsed> {
    read_into(src, Arena::new(src, lean, direct))
}

/// Read the first document of `src` into `visitor` (see [`super::node::Visitor`]): `None` when
/// the visitor or the reading gave up; a parsed result without documents otherwise (with the
/// syntax error or node budget refusal that ended the file, if any).
pub(super) fn visit<'a>(src: &'a Arc<Source>, visitor: &'a mut dyn Visitor) -> Option<Parsed> {
    let mut arena = Arena::new(src, None, false);
    arena.visitor = Some(visitor);
    read_into(src, arena)
}

fn read_into<'a>(src: &'a Arc<Source>, mut arena: Arena<'a>) -> Option<Parsed> {
    let text = src.text.as_bytes();
    let mut parser = Parser::new(text);
    // Anchor names → the arena's numbers: each definition is a new number, an alias takes the
    // latest definition read so far (go-yaml's `p.doc.anchors[name]`, one map per document).
    let mut anchors: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut next_anchor = 0usize;
    let mut depth = 0usize;
    // Whether the last document has ended and the next has not started.
    let mut between = false;
    let mut define = |anchors: &mut HashMap<Vec<u8>, usize>, name: Option<Vec<u8>>| {
        name.map(|name| {
            next_anchor += 1;
            anchors.insert(name, next_anchor);
            next_anchor
        })
    };

    loop {
        let event = match parser.next_event() {
            None => break,
            Some(Ok(ev)) => ev,
            Some(Err(e)) => {
                return Some(arena.syntax_error(message(src, &e), e.offset(text), between));
            }
        };
        let range = event.start.pos..event.end.pos;
        let is_map = matches!(event.kind, EventKind::MappingStart { .. });
        between = matches!(event.kind, EventKind::DocumentEnd { .. });
        let step = match event.kind {
            EventKind::StreamStart | EventKind::StreamEnd => continue,
            EventKind::DocumentStart { .. } => {
                anchors.clear();
                depth = 0;
                arena.document_start(range.start);
                continue;
            }
            EventKind::DocumentEnd { .. } => arena.document_end(range.end),
            EventKind::Alias { anchor } => match anchors.get(&anchor) {
                Some(&id) => arena.alias(id, range),
                None => {
                    let name = String::from_utf8_lossy(&anchor);
                    let why = format!(
                        "unknown anchor '{name}' referenced (go-yaml: an alias must follow its anchor in the same document)"
                    );
                    return Some(arena.syntax_error(why, range.start, false));
                }
            },
            EventKind::Scalar {
                anchor,
                tag,
                value,
                style,
                value_start,
                ..
            } => {
                let style = match style {
                    ScalarStyle::Plain => Style::Plain,
                    ScalarStyle::SingleQuoted => Style::SingleQuoted,
                    ScalarStyle::DoubleQuoted => Style::DoubleQuoted,
                    ScalarStyle::Literal => Style::Literal,
                    ScalarStyle::Folded => Style::Folded,
                };
                let value = String::from_utf8(value)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                let id = define(&mut anchors, anchor);
                arena.scalar(
                    value,
                    style,
                    id,
                    model_tag(&tag),
                    value_start.pos..range.end,
                )
            }
            EventKind::SequenceStart {
                anchor,
                flow,
                value_start,
                ..
            }
            | EventKind::MappingStart {
                anchor,
                flow,
                value_start,
                ..
            } => {
                depth += 1;
                if depth > MAX_NESTING_DEPTH {
                    let why = format!(
                        "collections nested deeper than {MAX_NESTING_DEPTH} levels (cgpu-lint's limit)"
                    );
                    return Some(arena.syntax_error(why, value_start.pos, false));
                }
                let id = define(&mut anchors, anchor);
                arena.collection_start(is_map, flow, id, value_start.pos..range.end)
            }
            EventKind::SequenceEnd | EventKind::MappingEnd => {
                depth = depth.saturating_sub(1);
                arena.collection_end(range.end)
            }
        };
        if let ControlFlow::Break(out) = step {
            return out;
        }
    }
    Some(arena.finish())
}

/// A tag as the model holds it: the suffix of a standard tag (`tag:yaml.org,2002:str` → `str`),
/// else the tag as go-yaml resolved it (`!local`, `!`); `None` when none was written.
fn model_tag(tag: &[u8]) -> Option<String> {
    if tag.is_empty() {
        return None;
    }
    let tag = String::from_utf8_lossy(tag);
    Some(match tag.strip_prefix("tag:yaml.org,2002:") {
        Some(s) => s.to_string(),
        None => tag.into_owned(),
    })
}

/// go-yaml's problem, with the construct it was reading and, for a parser error (reported on the
/// line Helm's message names, the line above the token), where the token is.
fn message(src: &Source, e: &goyaml::Error) -> String {
    let mut m = e.problem.clone();
    let at = |pos: usize| {
        let lc = src.line_col(pos);
        format!("line {}, column {}", lc.line, lc.column)
    };
    let mut notes = Vec::new();
    if !e.context.is_empty() {
        notes.push(format!("{} at {}", e.context, at(e.context_mark.pos)));
    }
    if e.kind == goyaml::ErrorKind::Parser && e.offset(src.text.as_bytes()) != e.problem_mark.pos {
        notes.push(format!("found at {}", at(e.problem_mark.pos)));
    }
    if !notes.is_empty() {
        m.push_str(&format!(" ({})", notes.join("; ")));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::super::node::{Parsed, Style};
    use super::super::parse;
    use super::super::source::Source;

    fn doc(text: &str) -> Parsed {
        parse(&Source::new("t.yaml", text.to_string()))
    }

    #[test]
    fn quoted_scalar_span_ends_at_its_closing_quote() {
        let p = doc("a: \"x\"   # comment\n");
        let root = p.documents[0].root.as_ref().unwrap();
        let a = root.get("a").unwrap();
        assert_eq!(a.raw(), "\"x\"");
        assert_eq!(a.style, Style::DoubleQuoted);
    }

    #[test]
    fn spans_are_bytes_after_multibyte_text() {
        let p = doc("# héllo wörld\nkey: välue\nn: 1\n");
        let root = p.documents[0].root.as_ref().unwrap();
        assert_eq!(root.get("key").unwrap().raw(), "välue");
        assert_eq!(root.get("n").unwrap().raw(), "1");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let s = "[".repeat(100_000);
        let p = doc(&s);
        assert!(p.error.is_some());
    }

    #[test]
    fn multi_documents_and_comment_only_documents() {
        let p = doc("---\n# only a comment\n---\na: 1\n---\nb: 2\n");
        assert_eq!(p.documents.len(), 3);
        assert!(p.documents[0].root.is_none());
        assert_eq!(p.documents[2].index, 3);
    }

    #[test]
    fn crlf_and_bom_are_accepted() {
        let p = doc("\u{feff}cgpu:\r\n  policy: 2\r\n");
        assert!(p.error.is_none(), "{:?}", p.error);
        let root = p.documents[0].root.as_ref().unwrap();
        assert_eq!(root.pointer("/cgpu/policy").unwrap().raw(), "2");
    }
}
