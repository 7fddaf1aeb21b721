//! A source file held in memory with a line index, so that any byte offset can be turned into
//! the 1-based line and character column every output format reports.

use std::sync::Arc;

/// One input: its display name (a path as given, `-` for stdin, `<chart defaults>`) and text.
#[derive(Debug)]
pub struct Source {
    pub name: String,
    pub text: String,
    /// Set when the bytes were not UTF-8: `text` is then a lossy copy and this says where.
    pub invalid: Option<Invalid>,
    /// How the file's bytes were encoded: UTF-8, or UTF-16 with a byte-order mark, which
    /// go-yaml's reader decodes too (the text here is then the decoded text, without the mark).
    pub encoding: Encoding,
    /// Byte offset of the first byte of each line. Lines end at `\n`, `\r\n` or a lone `\r`:
    /// YAML's line breaks, so line numbers are the ones Helm's errors give (go-yaml counts a
    /// lone CR) and the ones a language client counts (LSP: `\n`, `\r\n`, `\r`).
    line_starts: Vec<usize>,
    /// How many YAML nodes (scalars, aliases, collections) reading this file may create before
    /// it is refused: see [`node_budget`]. [`Source::new`] gives [`DEFAULT_NODE_BUDGET`].
    pub node_budget: usize,
}

/// The node budget of a file read under `--max-file-size` `max_file_size`: one node per 4
/// bytes of the limit. A node costs a few hundred bytes of memory once read, so a file of tiny
/// nodes (`[a,a,a,…]`, 2 bytes a node) is refused at the node that crosses the budget instead of
/// taking hundreds of times its size; real values files hold one node per 15 bytes or more, and
/// the densest realistic shape (`k: {name: n, value: "v", list: [a, b, 1]}`) one per 6.
pub fn node_budget(max_file_size: u64) -> usize {
    usize::try_from(max_file_size / 4).unwrap_or(usize::MAX)
}

/// [`node_budget`] of the default `--max-file-size` (64 MiB): 16,777,216 nodes.
pub const DEFAULT_NODE_BUDGET: usize = 64 * 1024 * 1024 / 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    #[default]
    Utf8,
    Utf16Le,
    Utf16Be,
}

impl Encoding {
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "UTF-8",
            Encoding::Utf16Le => "UTF-16LE",
            Encoding::Utf16Be => "UTF-16BE",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Invalid {
    pub offset: usize,
    pub message: String,
}

/// A 1-based line and 1-based column counted in characters (what editors and SARIF expect).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct LineCol {
    pub line: usize,
    pub column: usize,
}

impl Source {
    pub fn new(name: impl Into<String>, text: String) -> Arc<Source> {
        let mut line_starts = vec![0];
        let bytes = text.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
                line_starts.push(i + 1);
            }
        }
        Arc::new(Source {
            name: name.into(),
            text,
            invalid: None,
            encoding: Encoding::Utf8,
            line_starts,
            node_budget: DEFAULT_NODE_BUDGET,
        })
    }

    /// A source whose bytes were not valid UTF-8 (see [`decode`]).
    pub fn new_invalid(
        name: impl Into<String>,
        text: String,
        offset: usize,
        message: String,
    ) -> Arc<Source> {
        let mut src = Arc::try_unwrap(Source::new(name, text)).expect("fresh Arc");
        src.invalid = Some(Invalid { offset, message });
        Arc::new(src)
    }

    /// Line and column of a byte offset. Offsets past the end clamp to the end; an offset inside
    /// a multi-byte character counts that character.
    pub fn line_col(&self, offset: usize) -> LineCol {
        let offset = offset.min(self.text.len());
        let line_idx = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line_idx];
        let mut end = offset;
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let mut column = self.text[start..end].chars().count() + 1;
        // A byte-order mark at the very start is not a column anybody sees.
        if line_idx == 0 && self.text.starts_with('\u{feff}') && end > 0 {
            column -= 1;
        }
        LineCol {
            line: line_idx + 1,
            column,
        }
    }

    /// The text of a 1-based line without its line break.
    pub fn line_text(&self, line: usize) -> &str {
        if line == 0 || line > self.line_starts.len() {
            return "";
        }
        let start = self.line_starts[line - 1];
        let end = self
            .line_starts
            .get(line)
            .copied()
            .unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }

    /// Byte offset of the start of a 1-based line.
    pub fn line_start(&self, line: usize) -> usize {
        self.line_starts
            .get(line.saturating_sub(1))
            .copied()
            .unwrap_or(self.text.len())
    }

    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// `\r\n` when the file's first line break is CRLF, else `\n`.
    pub fn line_ending(&self) -> &'static str {
        match self.text.find('\n') {
            Some(i) if i > 0 && self.text.as_bytes()[i - 1] == b'\r' => "\r\n",
            _ => "\n",
        }
    }
}

/// Decode bytes as UTF-8; on failure return a lossy copy (identical up to the first bad byte),
/// the byte offset of that byte and a message.
/// A file's bytes as text, as go-yaml's reader takes them: UTF-16 (LE or BE) when they start
/// with its byte-order mark (decoded, the mark dropped; go-yaml has no UTF-32), else UTF-8
/// ([`decode`]). A UTF-16 error is placed at the byte offset of the bad unit in the file.
pub fn decode_file(bytes: Vec<u8>) -> Result<(String, Encoding), (String, usize, String)> {
    let encoding = match bytes.get(..2) {
        Some([0xff, 0xfe]) => Encoding::Utf16Le,
        Some([0xfe, 0xff]) => Encoding::Utf16Be,
        _ => return decode(bytes).map(|t| (t, Encoding::Utf8)),
    };
    let body = &bytes[2..];
    let units = body.chunks(2).map(|c| match (c, encoding) {
        ([a, b], Encoding::Utf16Le) => Some(u16::from_le_bytes([*a, *b])),
        ([a, b], _) => Some(u16::from_be_bytes([*a, *b])),
        _ => None,
    });
    let mut text = String::with_capacity(body.len() / 2);
    let mut pending: Vec<u16> = Vec::new();
    for (i, unit) in units.enumerate() {
        let at = 2 + 2 * i;
        let Some(unit) = unit else {
            return Err((
                text.clone(),
                text.len(),
                format!(
                    "a {} file ends in the middle of a character (byte {at} of an odd-length file)",
                    encoding.name()
                ),
            ));
        };
        pending.push(unit);
        match char::decode_utf16(pending.iter().copied()).next() {
            Some(Ok(c)) => {
                text.push(c);
                pending.clear();
            }
            // A high surrogate waits for its pair.
            Some(Err(_)) if pending.len() == 1 && (0xd800..0xdc00).contains(&unit) => {}
            _ => {
                return Err((
                    text.clone(),
                    text.len(),
                    format!(
                        "invalid {} (an unpaired surrogate at byte {})",
                        encoding.name(),
                        at - 2 * (pending.len() - 1)
                    ),
                ));
            }
        }
    }
    if !pending.is_empty() {
        return Err((
            text.clone(),
            text.len(),
            format!(
                "invalid {} (an unpaired surrogate at the end)",
                encoding.name()
            ),
        ));
    }
    Ok((text, encoding))
}

pub fn decode(bytes: Vec<u8>) -> Result<String, (String, usize, String)> {
    match String::from_utf8(bytes) {
        Ok(s) => Ok(s),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let bad = e.as_bytes()[at];
            let lossy = String::from_utf8_lossy(e.as_bytes()).into_owned();
            Err((
                lossy,
                at,
                format!(
                    "invalid UTF-8 (byte 0x{bad:02x}); Helm reads values files as UTF-8, or as UTF-16 when they start with its byte-order mark"
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_with_a_byte_order_mark_is_decoded_without_it() {
        let text = "cgpu: {image: \"a😀é\"}\n";
        let le: Vec<u8> = [0xfeffu16]
            .into_iter()
            .chain(text.encode_utf16())
            .flat_map(u16::to_le_bytes)
            .collect();
        let be: Vec<u8> = [0xfeffu16]
            .into_iter()
            .chain(text.encode_utf16())
            .flat_map(u16::to_be_bytes)
            .collect();
        assert_eq!(
            decode_file(le.clone()).unwrap(),
            (text.to_string(), Encoding::Utf16Le)
        );
        assert_eq!(
            decode_file(be).unwrap(),
            (text.to_string(), Encoding::Utf16Be)
        );
        // An odd length, a lone surrogate: errors naming the encoding.
        let mut odd = le.clone();
        odd.push(b'x');
        assert!(decode_file(odd).unwrap_err().2.contains("UTF-16LE"));
        let lone = [0xff, 0xfe, b'a', 0, 0x00, 0xdc, b'b', 0];
        assert!(
            decode_file(lone.to_vec())
                .unwrap_err()
                .2
                .contains("unpaired surrogate")
        );
        let high_last = [0xff, 0xfe, b'a', 0, 0x3d, 0xd8];
        assert!(
            decode_file(high_last.to_vec())
                .unwrap_err()
                .2
                .contains("unpaired")
        );
        // No mark: UTF-8, as before.
        assert_eq!(decode_file(b"a: 1\n".to_vec()).unwrap().1, Encoding::Utf8);
    }

    #[test]
    fn line_col_counts_characters_not_bytes() {
        let s = Source::new("t", "a: é\nbb: x\n".to_string());
        assert_eq!(s.line_col(0), LineCol { line: 1, column: 1 });
        // 'x' on line 2 sits after "bb: "
        let x = s.text.find('x').unwrap();
        assert_eq!(s.line_col(x), LineCol { line: 2, column: 5 });
        // the line break after "é" (2 bytes) is column 5
        assert_eq!(s.line_col(5), LineCol { line: 1, column: 5 });
    }

    #[test]
    fn a_lone_cr_ends_a_line_like_lf_and_crlf() {
        let s = Source::new("t", "a: 1\rb: 2\r\nc: 3\nd: 4".to_string());
        assert_eq!(s.line_count(), 4);
        for (needle, line) in [("b", 2), ("c", 3), ("d", 4)] {
            let at = s.text.find(needle).unwrap();
            assert_eq!(s.line_col(at), LineCol { line, column: 1 });
        }
        assert_eq!(s.line_text(1), "a: 1");
        assert_eq!(s.line_text(2), "b: 2");
    }

    #[test]
    fn bom_is_not_a_column() {
        let s = Source::new("t", "\u{feff}a: 1\n".to_string());
        assert_eq!(s.line_col(3), LineCol { line: 1, column: 1 });
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let (text, offset, _) = decode(b"a: 1\nb: \xff\n".to_vec()).unwrap_err();
        let src = Source::new("t", text);
        assert_eq!(src.line_col(offset), LineCol { line: 2, column: 4 });
    }
}
