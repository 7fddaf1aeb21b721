//! granit-parser's events → calls on the raw arena ([`super::raw::Arena`]). This is the only file
//! that names the parser crate: swapping the parser means replacing this file.
//!
//! granit-parser is, of the span-carrying Rust YAML parsers, the one whose ranges are byte
//! offsets and tight (a quoted scalar ends at its closing quote, so splicing a fix never eats the
//! comment after it). Here its markers become byte offsets, its styles and tags the model's, and
//! its errors point where Helm's point.

use std::ops::ControlFlow;
use std::sync::Arc;

use granit_parser::{Event, Options, Parser, ScalarStyle, Span};

use super::lean::Lean;
use super::node::{Parsed, Style};
use super::raw::{Arena, MAX_NESTING_DEPTH};
use super::source::Source;

/// Read every document of `src` into the arena (lean when `lean` is given). `None`: the lean
/// reading gave up.
pub(super) fn read(src: &Arc<Source>, lean: Option<&Lean>) -> Option<Parsed> {
    let mut options = Options::default();
    options.emit_comments = false;
    options.flow_nesting_limit = MAX_NESTING_DEPTH;
    options.block_nesting_limit = MAX_NESTING_DEPTH;
    let mut parser = Parser::new_from_str_with_options(&src.text, options);
    let text = &src.text;
    let byte = |span_marker: granit_parser::Marker| -> usize {
        span_marker
            .byte_offset()
            .unwrap_or_else(|| char_to_byte(text, span_marker.index()))
    };
    let mut arena = Arena::new(src, lean);

    loop {
        let (event, span): (Event, Span) = match parser.next_event() {
            None => break,
            Some(Ok(ev)) => ev,
            Some(Err(e)) => {
                let m = e.marker();
                let mut offset = m
                    .byte_offset()
                    .unwrap_or_else(|| char_to_byte(text, m.index()));
                if e.info().contains("found a tab") {
                    offset = indentation_tab(text, offset).unwrap_or(offset);
                }
                return Some(arena.syntax_error(e.info(), offset));
            }
        };
        let range = byte(span.start)..byte(span.end);
        let step = match event {
            Event::StreamStart | Event::StreamEnd => continue,
            Event::DocumentStart(..) => {
                arena.document_start(range.start);
                continue;
            }
            Event::DocumentEnd => arena.document_end(range.end),
            Event::Alias(id) => arena.alias(id, range),
            Event::Scalar(value, style, anchor, tag) => {
                let tag = tag.map(|t| match t.suffix_in_namespace("tag:yaml.org,2002:") {
                    Some(s) => s.into_owned(),
                    None => format!("{}{}", t.handle(), t.suffix()),
                });
                let style = match style {
                    ScalarStyle::Plain => Style::Plain,
                    ScalarStyle::SingleQuoted => Style::SingleQuoted,
                    ScalarStyle::DoubleQuoted => Style::DoubleQuoted,
                    ScalarStyle::Literal => Style::Literal,
                    _ => Style::Folded,
                };
                arena.scalar(value.into_owned(), style, anchor_id(anchor), tag, range)
            }
            Event::SequenceStart(style, anchor, _) | Event::MappingStart(style, anchor, _) => {
                let is_map = matches!(event, Event::MappingStart(..));
                let flow = style == granit_parser::StructureStyle::Flow;
                arena.collection_start(is_map, flow, anchor_id(anchor), range);
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => arena.collection_end(range.end),
            _ => continue,
        };
        if let ControlFlow::Break(out) = step {
            return out;
        }
    }
    Some(arena.finish())
}

/// granit-parser numbers anchors from 1; 0 is "no anchor".
fn anchor_id(anchor: usize) -> Option<usize> {
    (anchor != 0).then_some(anchor)
}

/// The first tab at or after `from` that stands in a line's indentation (only spaces before it
/// on its line). The parser reports "found a tab" at the start of the scalar it was scanning
/// (which may continue on the next line); the tab itself is where Helm's error points.
fn indentation_tab(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    (from..bytes.len()).find(|&i| {
        bytes[i] == b'\t'
            && bytes[..i]
                .iter()
                .rev()
                .take_while(|&&b| b != b'\n' && b != b'\r')
                .all(|&b| b == b' ')
    })
}

fn char_to_byte(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(b, _)| b)
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
