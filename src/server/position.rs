//! LSP positions ↔ byte offsets. A position's `character` counts code units of the negotiated
//! encoding (LSP 3.17 `positionEncoding`: UTF-16 unless client and server agree on another);
//! `line` is 0-based and a line ends at `\n` (a `\r` before it is not part of the line).

use std::sync::Arc;

use lsp_types::{Position, PositionEncodingKind, Range};

use crate::yaml::Source;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
    Utf32,
}

impl Encoding {
    /// The encoding to use given the client's `general.positionEncodings` (in its order of
    /// preference). UTF-8 is taken when offered (no conversion), then UTF-32, else the mandatory
    /// UTF-16.
    pub fn negotiate(offered: Option<&[PositionEncodingKind]>) -> Encoding {
        let offered = offered.unwrap_or_default();
        if offered.contains(&PositionEncodingKind::UTF8) {
            Encoding::Utf8
        } else if offered.contains(&PositionEncodingKind::UTF32) {
            Encoding::Utf32
        } else {
            Encoding::Utf16
        }
    }

    pub fn kind(self) -> PositionEncodingKind {
        match self {
            Encoding::Utf8 => PositionEncodingKind::UTF8,
            Encoding::Utf16 => PositionEncodingKind::UTF16,
            Encoding::Utf32 => PositionEncodingKind::UTF32,
        }
    }

    fn units(self, c: char) -> u32 {
        match self {
            Encoding::Utf8 => c.len_utf8() as u32,
            Encoding::Utf16 => c.len_utf16() as u32,
            Encoding::Utf32 => 1,
        }
    }
}

/// The position of byte `offset` in `src` (clamped to the text; an offset inside a character
/// counts from that character's start).
pub fn position(src: &Source, offset: usize, enc: Encoding) -> Position {
    let text = &src.text;
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let line = src.line_col(offset).line;
    let start = src.line_start(line);
    let character = text[start..offset].chars().map(|c| enc.units(c)).sum();
    Position {
        line: (line - 1) as u32,
        character,
    }
}

pub fn range(src: &Source, span: &std::ops::Range<usize>, enc: Encoding) -> Range {
    Range {
        start: position(src, span.start, enc),
        end: position(src, span.end.max(span.start), enc),
    }
}

/// The byte offset of `pos` in `src`. A line past the end is the end of the text; a character
/// past the end of its line is the end of that line (before its line break), as LSP says; a
/// position inside a character (half a surrogate pair) is that character's start.
pub fn offset(src: &Source, pos: Position, enc: Encoding) -> usize {
    let line = pos.line as usize + 1;
    if line > src.line_count() {
        return src.text.len();
    }
    let start = src.line_start(line);
    let end = src.text[start..]
        .find('\n')
        .map_or(src.text.len(), |i| start + i);
    let end = if end > start && src.text.as_bytes()[end - 1] == b'\r' {
        end - 1
    } else {
        end
    };
    let mut units = 0u32;
    for (i, c) in src.text[start..end].char_indices() {
        let next = units + enc.units(c);
        if next > pos.character {
            return start + i;
        }
        units = next;
    }
    end
}

/// `src` with the bytes of `range` replaced by `text` (one `contentChanges` entry of an
/// incremental `didChange`); a change without a range replaces the whole text.
pub fn apply_change(src: &Arc<Source>, range: Option<Range>, text: &str, enc: Encoding) -> String {
    match range {
        None => text.to_string(),
        Some(r) => {
            let a = offset(src, r.start, enc);
            let b = offset(src, r.end, enc).max(a);
            let mut out = String::with_capacity(src.text.len() + text.len());
            out.push_str(&src.text[..a]);
            out.push_str(text);
            out.push_str(&src.text[b..]);
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u32, character: u32) -> Position {
        Position { line, character }
    }

    #[test]
    fn astral_characters_are_two_utf16_units_and_one_utf32_unit() {
        // "😀" is U+1F600: 4 bytes, 2 UTF-16 units, 1 UTF-32 unit.
        let s = Source::new("t", "a: 😀x\nb: é\n".to_string());
        let x = s.text.find('x').unwrap();
        assert_eq!(position(&s, x, Encoding::Utf16), pos(0, 5));
        assert_eq!(position(&s, x, Encoding::Utf32), pos(0, 4));
        assert_eq!(position(&s, x, Encoding::Utf8), pos(0, 7));
        for enc in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
            assert_eq!(offset(&s, position(&s, x, enc), enc), x, "{enc:?}");
        }
        // Half a surrogate pair is the character's start.
        assert_eq!(offset(&s, pos(0, 4), Encoding::Utf16), 3);
        let e_end = s.text.len() - 1;
        assert_eq!(position(&s, e_end, Encoding::Utf16), pos(1, 4));
    }

    #[test]
    fn positions_past_a_line_or_the_text_clamp() {
        let s = Source::new("t", "ab\r\ncd\n".to_string());
        assert_eq!(offset(&s, pos(0, 99), Encoding::Utf16), 2);
        assert_eq!(offset(&s, pos(1, 1), Encoding::Utf16), 5);
        assert_eq!(offset(&s, pos(9, 0), Encoding::Utf16), s.text.len());
        assert_eq!(position(&s, 999, Encoding::Utf16), pos(2, 0));
    }

    #[test]
    fn incremental_changes_splice() {
        let s = Source::new("t", "cgpu:\n  policy: 😀\"1\"\n".to_string());
        let r = Range {
            // after "  policy: " (10 units) and the emoji (2 units): the quoted "1"
            start: pos(1, 12),
            end: pos(1, 15),
        };
        assert_eq!(
            apply_change(&s, Some(r), "1", Encoding::Utf16),
            "cgpu:\n  policy: 😀1\n"
        );
        assert_eq!(apply_change(&s, None, "x", Encoding::Utf16), "x");
    }
}
