//! LSP positions ↔ byte offsets. A position's `character` counts code units of the negotiated
//! encoding (LSP 3.17 `positionEncoding`: UTF-16 unless client and server agree on another).
//! Lines are the protocol's: they end at `\n`, `\r\n` or a lone `\r`, and a line's characters do
//! not include its terminator.

use lsp_types::{Position, PositionEncodingKind, Range};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
    Utf32,
}

impl Encoding {
    /// The encoding to use given the client's `general.positionEncodings`. UTF-8 is taken when
    /// offered (no conversion), then UTF-32, else the mandatory UTF-16.
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

/// Where the protocol's lines of one text start.
#[derive(Debug, Clone)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let b = text.as_bytes();
        let mut starts = vec![0];
        let mut i = 0;
        while let Some(j) = memchr::memchr2(b'\n', b'\r', &b[i..]) {
            let at = i + j;
            let next = if b[at] == b'\r' && b.get(at + 1) == Some(&b'\n') {
                at + 2
            } else {
                at + 1
            };
            starts.push(next);
            i = next;
        }
        LineIndex { starts }
    }

    /// The bytes of 0-based `line` without its terminator.
    fn line(&self, text: &str, line: usize) -> std::ops::Range<usize> {
        let start = self.starts[line];
        let mut end = self.starts.get(line + 1).copied().unwrap_or(text.len());
        let b = text.as_bytes();
        if end > start && b[end - 1] == b'\n' {
            end -= 1;
        }
        if end > start && b[end - 1] == b'\r' {
            end -= 1;
        }
        start..end
    }

    /// The position of byte `offset` (clamped to the text; an offset inside a character counts
    /// from that character's start, one inside a `\r\n` is the end of its line).
    pub fn position(&self, text: &str, offset: usize, enc: Encoding) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let r = self.line(text, line);
        let character = text[r.start..offset.min(r.end)]
            .chars()
            .map(|c| enc.units(c))
            .sum();
        Position {
            line: line as u32,
            character,
        }
    }

    pub fn range(&self, text: &str, span: &std::ops::Range<usize>, enc: Encoding) -> Range {
        Range {
            start: self.position(text, span.start, enc),
            end: self.position(text, span.end.max(span.start), enc),
        }
    }

    /// The byte offset of `pos`. A line past the end is the end of the text; a character past
    /// the end of its line is the end of that line (before its terminator), as LSP says; a
    /// position inside a character (half a surrogate pair) is that character's start.
    pub fn offset(&self, text: &str, pos: Position, enc: Encoding) -> usize {
        let line = pos.line as usize;
        if line >= self.starts.len() {
            return text.len();
        }
        let r = self.line(text, line);
        let mut units = 0u32;
        for (i, c) in text[r.clone()].char_indices() {
            let next = units + enc.units(c);
            if next > pos.character {
                return r.start + i;
            }
            units = next;
        }
        r.end
    }
}

/// `text` with `range` replaced by `new` (one `contentChanges` entry of an incremental
/// `didChange`); a change without a range replaces the whole text.
pub fn apply_change(text: &str, range: Option<Range>, new: &str, enc: Encoding) -> String {
    match range {
        None => new.to_string(),
        Some(r) => {
            let index = LineIndex::new(text);
            let a = index.offset(text, r.start, enc);
            let b = index.offset(text, r.end, enc).max(a);
            let mut out = String::with_capacity(text.len() + new.len());
            out.push_str(&text[..a]);
            out.push_str(new);
            out.push_str(&text[b..]);
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
        let t = "a: 😀x\nb: é\n";
        let ix = LineIndex::new(t);
        let x = t.find('x').unwrap();
        assert_eq!(ix.position(t, x, Encoding::Utf16), pos(0, 5));
        assert_eq!(ix.position(t, x, Encoding::Utf32), pos(0, 4));
        assert_eq!(ix.position(t, x, Encoding::Utf8), pos(0, 7));
        for enc in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
            assert_eq!(ix.offset(t, ix.position(t, x, enc), enc), x, "{enc:?}");
        }
        // Half a surrogate pair is the character's start.
        assert_eq!(ix.offset(t, pos(0, 4), Encoding::Utf16), 3);
        assert_eq!(ix.position(t, t.len() - 1, Encoding::Utf16), pos(1, 4));
    }

    #[test]
    fn lines_end_at_lf_crlf_and_lone_cr() {
        let t = "ab\r\ncd\ref\ngh";
        let ix = LineIndex::new(t);
        assert_eq!(
            ix.position(t, t.find('e').unwrap(), Encoding::Utf16),
            pos(2, 0)
        );
        assert_eq!(
            ix.position(t, t.find('h').unwrap(), Encoding::Utf16),
            pos(3, 1)
        );
        // Inside "\r\n": the end of the line.
        assert_eq!(ix.position(t, 3, Encoding::Utf16), pos(0, 2));
        assert_eq!(ix.offset(t, pos(1, 1), Encoding::Utf16), 5);
    }

    #[test]
    fn positions_past_a_line_or_the_text_clamp() {
        let t = "ab\r\ncd\n";
        let ix = LineIndex::new(t);
        assert_eq!(ix.offset(t, pos(0, 99), Encoding::Utf16), 2);
        assert_eq!(ix.offset(t, pos(9, 0), Encoding::Utf16), t.len());
        assert_eq!(ix.position(t, 999, Encoding::Utf16), pos(2, 0));
    }

    #[test]
    fn incremental_changes_splice() {
        let t = "cgpu:\n  policy: 😀\"1\"\n";
        // after "  policy: " (10 units) and the emoji (2 units): the quoted "1"
        let r = Range {
            start: pos(1, 12),
            end: pos(1, 15),
        };
        assert_eq!(
            apply_change(t, Some(r), "1", Encoding::Utf16),
            "cgpu:\n  policy: 😀1\n"
        );
        assert_eq!(apply_change(t, None, "x", Encoding::Utf16), "x");
    }
}
