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
    /// Byte offset of the first byte of each line. Lines end at `\n`, `\r\n` or a lone `\r`:
    /// YAML's line breaks, so line numbers are the ones Helm's errors give (go-yaml counts a
    /// lone CR) and the ones a language client counts (LSP: `\n`, `\r\n`, `\r`).
    line_starts: Vec<usize>,
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
            line_starts,
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
                format!("invalid UTF-8 (byte 0x{bad:02x}); YAML files must be UTF-8"),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
