//! go-yaml v2's scanner (`scannerc.go`, itself a port of libyaml 0.1's `scanner.c`), ported
//! function by function so that it takes the decisions Helm's YAML reader takes: which
//! characters start which token, where tabs are allowed, when a simple key goes stale, how
//! scalars fold. Marks carry the byte offset beside go-yaml's character index, line and column.
//!
//! Departures, none of which changes a decision: the whole input is in memory (the reader's
//! 512-byte chunks are emulated only for where a control character is found, see
//! [`Scanner::cache`]); errors are values instead of a flag on the parser.

use std::collections::{BTreeMap, VecDeque};

/// A position: byte offset in the input, and go-yaml's character index, 0-based line and
/// 0-based column (both counted in characters; a CRLF counts two in `index`, as in go-yaml).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mark {
    pub pos: usize,
    pub index: usize,
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Reader,
    Scanner,
    Parser,
}

/// go-yaml's error state: the problem and where, and the construct it happened in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub problem: String,
    pub problem_mark: Mark,
    pub context: &'static str,
    pub context_mark: Mark,
    /// For a parser error: the end of the last token with text the parser consumed.
    pub prev_end: Option<Mark>,
}

impl Error {
    /// The text go-yaml's `parser.fail()` makes of it, as Helm prints it after `yaml: `:
    /// `line N: ` with go-yaml's line rule (a scanner error's 1-based line, a parser error's
    /// 0-based one, none on line 0), then the problem.
    #[cfg(test)]
    pub fn go_yaml_text(&self) -> String {
        let mut line = 0;
        if self.kind != ErrorKind::Reader && self.problem_mark.line != 0 {
            line = self.problem_mark.line;
            if self.kind == ErrorKind::Scanner {
                line += 1;
            }
        } else if self.kind != ErrorKind::Reader && self.context_mark.line != 0 {
            line = self.context_mark.line;
        }
        if line != 0 {
            format!("line {line}: {}", self.problem)
        } else {
            self.problem.clone()
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarStyle {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
}

/// Declares [`TokenKind`] and [`Tk`], its kinds without their data, from one list.
macro_rules! token_kinds {
    ($($(#[$m:meta])* $name:ident $(($($field:ty),*))?,)*) => {
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum TokenKind {
            $($(#[$m])* $name $(($($field),*))?,)*
        }

        /// A token's kind without its data.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(super) enum Tk {
            $($name,)*
        }

        impl TokenKind {
            pub(super) fn tk(&self) -> Tk {
                match self {
                    $(TokenKind::$name { .. } => Tk::$name,)*
                }
            }
        }
    };
}

token_kinds! {
    StreamStart,
    StreamEnd,
    VersionDirective(i8, i8),
    TagDirective(Vec<u8>, Vec<u8>),
    DocumentStart,
    DocumentEnd,
    BlockSequenceStart,
    BlockMappingStart,
    BlockEnd,
    FlowSequenceStart,
    FlowSequenceEnd,
    FlowMappingStart,
    FlowMappingEnd,
    BlockEntry,
    FlowEntry,
    Key,
    Value,
    Alias(Vec<u8>),
    Anchor(Vec<u8>),
    /// (handle, suffix)
    Tag(Vec<u8>, Vec<u8>),
    Scalar(Vec<u8>, ScalarStyle),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    pub start: Mark,
    pub end: Mark,
}

#[derive(Debug, Clone, Copy, Default)]
struct SimpleKey {
    possible: bool,
    required: bool,
    token_number: usize,
    mark: Mark,
}

const MAX_FLOW_LEVEL: usize = 10000;
const MAX_INDENTS: usize = 10000;
/// go-yaml's reader decodes its input in chunks of this many bytes (`input_raw_buffer_size`).
const RAW_CHUNK: usize = 512;

type Result<T> = std::result::Result<T, Box<Error>>;

pub struct Scanner<'a> {
    input: &'a [u8],
    mark: Mark,
    /// How far go-yaml's reader has read (a multiple of [`RAW_CHUNK`] or the end) and decoded
    /// (the same, less a character cut at the end).
    raw: usize,
    decoded: usize,
    /// The first character go-yaml's reader refuses (a control character), if any.
    bad_char: Option<(usize, u32)>,
    /// Where go-yaml's start-of-buffer byte-order-mark test stops firing (0: it never fires).
    bom_quirk_until: usize,
    tokens: VecDeque<Token>,
    tokens_parsed: usize,
    token_available: bool,
    stream_start_produced: bool,
    pub(crate) stream_end_produced: bool,
    /// The end of the last consumed token that has text (not an empty BLOCK-END or KEY).
    pub(crate) last_end: Option<Mark>,
    indent: isize,
    indents: Vec<isize>,
    simple_key_allowed: bool,
    simple_keys: Vec<SimpleKey>,
    /// go-yaml's `simple_keys_by_tok`: token number → simple-key level. go-yaml never drops an
    /// entry whose key went stale; such an entry is only ever looked up while its token is at
    /// the head of the queue, so entries below the head are dropped here (memory stays small).
    simple_keys_by_tok: BTreeMap<usize, usize>,
    flow_level: usize,
    error: Option<Box<Error>>,
}

fn width(b: u8) -> usize {
    if b & 0x80 == 0 {
        1
    } else if b & 0xE0 == 0xC0 {
        2
    } else if b & 0xF0 == 0xE0 {
        3
    } else if b & 0xF8 == 0xF0 {
        4
    } else {
        0
    }
}

/// The first character go-yaml's reader refuses ("control characters are not allowed"):
/// its byte offset and code point. The input is valid UTF-8, so only these can be refused:
/// C0 controls but tab, LF and CR; DEL; C1 controls but NEL; U+FFFE and U+FFFF.
fn first_bad_char(input: &[u8]) -> Option<(usize, u32)> {
    let mut i = 0;
    while i < input.len() {
        let b = input[i];
        match b {
            0x09 | 0x0A | 0x0D | 0x20..=0x7E => i += 1,
            0x00..=0x1F | 0x7F => return Some((i, b as u32)),
            0xC2 => {
                let c = input.get(i + 1).copied().unwrap_or(0);
                if (0x80..=0x9F).contains(&c) && c != 0x85 {
                    return Some((i, c as u32));
                }
                i += 2;
            }
            0xEF if input.get(i + 1) == Some(&0xBF)
                && matches!(input.get(i + 2), Some(0xBE | 0xBF)) =>
            {
                return Some((i, 0xFFF0 | (input[i + 2] as u32 & 0x0F)));
            }
            _ => i += width(b).max(1),
        }
    }
    None
}

impl<'a> Scanner<'a> {
    /// `input` must be valid UTF-8 (go-yaml's reader refuses anything else; the caller reports
    /// where). An empty input reads as go-yaml reads it, as a single line break.
    pub fn new(input: &'a [u8]) -> Scanner<'a> {
        let bad_char = first_bad_char(input);
        const BOM: &[u8] = b"\xEF\xBB\xBF";
        // go-yaml's reader drops a leading byte-order mark before the scanner sees it.
        let start = if input.starts_with(BOM) { 3 } else { 0 };
        let bom_quirk_until = if input[start..].starts_with(BOM) {
            RAW_CHUNK.min(input.len() + 1)
        } else {
            0
        };
        Scanner {
            input,
            mark: Mark {
                pos: start,
                ..Mark::default()
            },
            bom_quirk_until,
            raw: 0,
            // Without a character the reader refuses, where it reads up to makes no difference.
            decoded: if bad_char.is_none() { input.len() } else { 0 },
            bad_char,
            tokens: VecDeque::new(),
            tokens_parsed: 0,
            token_available: false,
            stream_start_produced: false,
            stream_end_produced: false,
            last_end: None,
            indent: -1,
            indents: Vec::new(),
            simple_key_allowed: false,
            simple_keys: Vec::new(),
            simple_keys_by_tok: BTreeMap::new(),
            flow_level: 0,
            error: None,
        }
    }

    // -----------------------------------------------------------------------------------
    // The buffer

    /// The byte `k` bytes after the current position (go-yaml's `buffer[buffer_pos+k]`); the
    /// end of the input reads as NUL, as go-yaml's buffer does.
    #[inline]
    fn at(&self, k: usize) -> u8 {
        self.input.get(self.mark.pos + k).copied().unwrap_or(0)
    }

    #[inline]
    fn ch(&self) -> u8 {
        self.at(0)
    }

    /// go-yaml's `cache(parser, n)`: make sure `n` characters are decoded. The reader decodes
    /// a whole chunk at a time and refuses a control character anywhere in it, so the error
    /// comes when the scanner first needs a character of that chunk, before the scanner has
    /// reached the character itself.
    #[inline]
    fn cache(&mut self, n: usize) -> Result<()> {
        let len = self.input.len();
        if self.decoded >= len || self.mark.pos + 4 * n <= self.decoded {
            return Ok(());
        }
        // The end of the n-th character from here.
        let mut end = self.mark.pos;
        for _ in 0..n {
            if end >= len {
                break;
            }
            end += width(self.input[end]).max(1);
        }
        let end = end.min(len).max(self.mark.pos + 1).min(len);
        while self.decoded < end {
            self.raw = (self.raw + RAW_CHUNK).min(len);
            // A character cut by the chunk's end is decoded with the next chunk.
            let mut d = self.raw;
            while d < len && d > 0 && (self.input[d] & 0xC0) == 0x80 {
                d -= 1;
            }
            self.decoded = d;
            if let Some((at, _)) = self.bad_char
                && at < self.decoded
            {
                return Err(Box::new(Error {
                    kind: ErrorKind::Reader,
                    problem: "control characters are not allowed".into(),
                    problem_mark: Mark {
                        pos: at,
                        ..self.mark
                    },
                    context: "",
                    context_mark: Mark::default(),
                    prev_end: None,
                }));
            }
        }
        Ok(())
    }

    fn is_z(&self, k: usize) -> bool {
        self.at(k) == 0
    }
    fn is_blank(&self, k: usize) -> bool {
        matches!(self.at(k), b' ' | b'\t')
    }
    fn is_space(&self, k: usize) -> bool {
        self.at(k) == b' '
    }
    fn is_tab(&self, k: usize) -> bool {
        self.at(k) == b'\t'
    }
    fn is_break(&self, k: usize) -> bool {
        let b = self.at(k);
        b == b'\r'
            || b == b'\n'
            || (b == 0xC2 && self.at(k + 1) == 0x85)
            || (b == 0xE2 && self.at(k + 1) == 0x80 && matches!(self.at(k + 2), 0xA8 | 0xA9))
    }
    fn is_crlf(&self, k: usize) -> bool {
        self.at(k) == b'\r' && self.at(k + 1) == b'\n'
    }
    fn is_breakz(&self, k: usize) -> bool {
        self.is_break(k) || self.is_z(k)
    }
    fn is_blankz(&self, k: usize) -> bool {
        self.is_blank(k) || self.is_breakz(k)
    }
    fn is_alpha(&self, k: usize) -> bool {
        let b = self.at(k);
        b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
    }
    fn is_digit(&self, k: usize) -> bool {
        self.at(k).is_ascii_digit()
    }
    fn is_hex(&self, k: usize) -> bool {
        self.at(k).is_ascii_hexdigit()
    }
    fn as_hex(&self, k: usize) -> u32 {
        (self.at(k) as char).to_digit(16).unwrap_or(0)
    }

    fn skip(&mut self) {
        self.mark.index += 1;
        self.mark.column += 1;
        self.mark.pos += width(self.ch()).max(1);
    }

    fn skip_line(&mut self) {
        if self.is_crlf(0) {
            self.mark.index += 2;
            self.mark.column = 0;
            self.mark.line += 1;
            self.mark.pos += 2;
        } else if self.is_break(0) {
            self.mark.index += 1;
            self.mark.column = 0;
            self.mark.line += 1;
            self.mark.pos += width(self.ch()).max(1);
        }
    }

    fn read(&mut self, s: &mut Vec<u8>) {
        let w = width(self.ch()).max(1);
        let end = (self.mark.pos + w).min(self.input.len());
        s.extend_from_slice(&self.input[self.mark.pos..end]);
        self.mark.pos += w;
        self.mark.index += 1;
        self.mark.column += 1;
    }

    fn read_line(&mut self, s: &mut Vec<u8>) {
        let (b0, b1, b2) = (self.at(0), self.at(1), self.at(2));
        if b0 == b'\r' && b1 == b'\n' {
            s.push(b'\n');
            self.mark.pos += 2;
            self.mark.index += 1;
        } else if b0 == b'\r' || b0 == b'\n' {
            s.push(b'\n');
            self.mark.pos += 1;
        } else if b0 == 0xC2 && b1 == 0x85 {
            s.push(b'\n');
            self.mark.pos += 2;
        } else if b0 == 0xE2 && b1 == 0x80 && (b2 == 0xA8 || b2 == 0xA9) {
            s.extend_from_slice(&[b0, b1, b2]);
            self.mark.pos += 3;
        } else {
            return;
        }
        self.mark.index += 1;
        self.mark.column = 0;
        self.mark.line += 1;
    }

    fn error(&self, context: &'static str, context_mark: Mark, problem: &str) -> Box<Error> {
        Box::new(Error {
            kind: ErrorKind::Scanner,
            problem: problem.to_string(),
            problem_mark: self.mark,
            context,
            context_mark,
            prev_end: None,
        })
    }

    /// `ch` at the mark, eaten; else fail with `problem` in `context` (scannerc.go's repeated
    /// "did not find expected …" checks).
    fn expect_char(
        &mut self,
        ch: u8,
        context: &'static str,
        start: Mark,
        problem: &str,
    ) -> Result<()> {
        if self.ch() != ch {
            return self.fail(context, start, problem);
        }
        self.skip();
        Ok(())
    }

    /// A comment, up to (not including) its line break or the end of the input.
    fn skip_comment(&mut self) -> Result<()> {
        if self.ch() == b'#' {
            while !self.is_breakz(0) {
                self.skip();
                self.cache(1)?;
            }
        }
        Ok(())
    }

    /// Blanks (spaces and tabs) at the mark.
    fn skip_blanks(&mut self) -> Result<()> {
        while self.is_blank(0) {
            self.skip();
            self.cache(1)?;
        }
        Ok(())
    }

    fn fail<T>(&mut self, context: &'static str, context_mark: Mark, problem: &str) -> Result<T> {
        Err(self.error(context, context_mark, problem))
    }

    fn tag_error<T>(&mut self, directive: bool, context_mark: Mark, problem: &str) -> Result<T> {
        let context = if directive {
            "while parsing a %TAG directive"
        } else {
            "while parsing a tag"
        };
        self.fail(context, context_mark, problem)
    }

    // -----------------------------------------------------------------------------------
    // The token queue

    fn insert_token(&mut self, pos: Option<usize>, token: Token) {
        match pos {
            None => self.tokens.push_back(token),
            Some(p) => self.tokens.insert(p.min(self.tokens.len()), token),
        }
    }

    /// The next token, without consuming it (`peek_token`); an error stays the answer.
    pub fn peek(&mut self) -> Result<&Token> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if !self.token_available
            && let Err(e) = self.fetch_more_tokens()
        {
            self.error = Some(e.clone());
            return Err(e);
        }
        self.tokens.front().ok_or_else(|| {
            Box::new(Error {
                kind: ErrorKind::Scanner,
                problem: "no token".into(),
                problem_mark: self.mark,
                context: "",
                context_mark: Mark::default(),
                prev_end: None,
            })
        })
    }

    /// Consume the token [`peek`](Self::peek) returned (`skip_token`).
    pub fn skip_token(&mut self) -> Option<Token> {
        self.token_available = false;
        self.tokens_parsed += 1;
        let t = self.tokens.pop_front();
        if let Some(t) = &t
            && t.end.pos > t.start.pos
        {
            self.last_end = Some(t.end);
        }
        self.stream_end_produced =
            matches!(t.as_ref().map(|t| &t.kind), Some(TokenKind::StreamEnd));
        t
    }

    fn fetch_more_tokens(&mut self) -> Result<()> {
        while let Some((&n, _)) = self.simple_keys_by_tok.first_key_value()
            && n < self.tokens_parsed
        {
            self.simple_keys_by_tok.pop_first();
        }
        loop {
            if !self.tokens.is_empty() {
                let Some(&idx) = self.simple_keys_by_tok.get(&self.tokens_parsed) else {
                    break;
                };
                if idx >= self.simple_keys.len() || !self.simple_key_is_valid(idx)? {
                    break;
                }
            }
            self.fetch_next_token()?;
        }
        self.token_available = true;
        Ok(())
    }

    fn fetch_next_token(&mut self) -> Result<()> {
        self.cache(1)?;
        if !self.stream_start_produced {
            self.fetch_stream_start();
            return Ok(());
        }
        self.scan_to_next_token()?;
        self.unroll_indent(self.mark.column as isize);
        self.cache(4)?;

        if self.is_z(0) {
            return self.fetch_stream_end();
        }
        let c = self.ch();
        if self.mark.column == 0 && c == b'%' {
            return self.fetch_directive();
        }
        if self.at_document_indicator() {
            let kind = if c == b'-' {
                TokenKind::DocumentStart
            } else {
                TokenKind::DocumentEnd
            };
            return self.fetch_document_indicator(kind);
        }
        match c {
            b'[' => return self.fetch_flow_collection_start(TokenKind::FlowSequenceStart),
            b'{' => return self.fetch_flow_collection_start(TokenKind::FlowMappingStart),
            b']' => return self.fetch_flow_collection_end(TokenKind::FlowSequenceEnd),
            b'}' => return self.fetch_flow_collection_end(TokenKind::FlowMappingEnd),
            b',' => return self.fetch_flow_entry(),
            _ => {}
        }
        if c == b'-' && self.is_blankz(1) {
            return self.fetch_block_entry();
        }
        if c == b'?' && (self.flow_level > 0 || self.is_blankz(1)) {
            return self.fetch_key();
        }
        if c == b':' && (self.flow_level > 0 || self.is_blankz(1)) {
            return self.fetch_value();
        }
        match c {
            b'*' => return self.fetch_anchor(true),
            b'&' => return self.fetch_anchor(false),
            b'!' => return self.fetch_tag(),
            b'|' if self.flow_level == 0 => return self.fetch_block_scalar(true),
            b'>' if self.flow_level == 0 => return self.fetch_block_scalar(false),
            b'\'' => return self.fetch_flow_scalar(true),
            b'"' => return self.fetch_flow_scalar(false),
            _ => {}
        }
        let indicator = self.is_blankz(0)
            || matches!(
                c,
                b'-' | b'?'
                    | b':'
                    | b','
                    | b'['
                    | b']'
                    | b'{'
                    | b'}'
                    | b'#'
                    | b'&'
                    | b'*'
                    | b'!'
                    | b'|'
                    | b'>'
                    | b'\''
                    | b'"'
                    | b'%'
                    | b'@'
                    | b'`'
            );
        if !indicator
            || (c == b'-' && !self.is_blank(1))
            || (self.flow_level == 0 && (c == b'?' || c == b':') && !self.is_blankz(1))
        {
            return self.fetch_plain_scalar();
        }
        let m = self.mark;
        self.fail(
            "while scanning for the next token",
            m,
            "found character that cannot start any token",
        )
    }

    /// Whether simple key `idx` is still possible; a required one gone stale is an error.
    fn simple_key_is_valid(&mut self, idx: usize) -> Result<bool> {
        let key = self.simple_keys[idx];
        if !key.possible {
            return Ok(false);
        }
        if key.mark.line < self.mark.line || key.mark.index + 1024 < self.mark.index {
            if key.required {
                return self.fail(
                    "while scanning a simple key",
                    key.mark,
                    "could not find expected ':'",
                );
            }
            self.simple_keys[idx].possible = false;
            return Ok(false);
        }
        Ok(true)
    }

    fn save_simple_key(&mut self) -> Result<()> {
        let required = self.flow_level == 0 && self.indent == self.mark.column as isize;
        if self.simple_key_allowed {
            let key = SimpleKey {
                possible: true,
                required,
                token_number: self.tokens_parsed + self.tokens.len(),
                mark: self.mark,
            };
            self.remove_simple_key()?;
            let last = self.simple_keys.len() - 1;
            self.simple_keys[last] = key;
            self.simple_keys_by_tok.insert(key.token_number, last);
        }
        Ok(())
    }

    fn remove_simple_key(&mut self) -> Result<()> {
        let i = self.simple_keys.len() - 1;
        if self.simple_keys[i].possible {
            if self.simple_keys[i].required {
                let m = self.simple_keys[i].mark;
                return self.fail(
                    "while scanning a simple key",
                    m,
                    "could not find expected ':'",
                );
            }
            self.simple_keys[i].possible = false;
            self.simple_keys_by_tok
                .remove(&self.simple_keys[i].token_number);
        }
        Ok(())
    }

    fn increase_flow_level(&mut self) -> Result<()> {
        self.simple_keys.push(SimpleKey {
            possible: false,
            required: false,
            token_number: self.tokens_parsed + self.tokens.len(),
            mark: self.mark,
        });
        self.flow_level += 1;
        if self.flow_level > MAX_FLOW_LEVEL {
            let m = self.simple_keys[self.simple_keys.len() - 1].mark;
            return self.fail(
                "while increasing flow level",
                m,
                &format!("exceeded max depth of {MAX_FLOW_LEVEL}"),
            );
        }
        Ok(())
    }

    fn decrease_flow_level(&mut self) {
        if self.flow_level > 0 {
            self.flow_level -= 1;
            if let Some(last) = self.simple_keys.pop() {
                self.simple_keys_by_tok.remove(&last.token_number);
            }
        }
    }

    /// `number`: the token number before which to insert, or `None` to append.
    fn roll_indent(
        &mut self,
        column: usize,
        number: Option<usize>,
        kind: TokenKind,
        mark: Mark,
    ) -> Result<()> {
        if self.flow_level > 0 {
            return Ok(());
        }
        if self.indent < column as isize {
            self.indents.push(self.indent);
            self.indent = column as isize;
            if self.indents.len() > MAX_INDENTS {
                let m = self.simple_keys[self.simple_keys.len() - 1].mark;
                return self.fail(
                    "while increasing indent level",
                    m,
                    &format!("exceeded max depth of {MAX_INDENTS}"),
                );
            }
            let token = Token {
                kind,
                start: mark,
                end: mark,
            };
            let pos = number.map(|n| n.saturating_sub(self.tokens_parsed));
            self.insert_token(pos, token);
        }
        Ok(())
    }

    fn unroll_indent(&mut self, column: isize) {
        if self.flow_level > 0 {
            return;
        }
        while self.indent > column {
            let token = Token {
                kind: TokenKind::BlockEnd,
                start: self.mark,
                end: self.mark,
            };
            self.insert_token(None, token);
            self.indent = self.indents.pop().unwrap_or(-1);
        }
    }

    fn fetch_stream_start(&mut self) {
        self.indent = -1;
        self.simple_keys.push(SimpleKey::default());
        self.simple_keys_by_tok.clear();
        self.simple_key_allowed = true;
        self.stream_start_produced = true;
        let m = self.mark;
        self.insert_token(
            None,
            Token {
                kind: TokenKind::StreamStart,
                start: m,
                end: m,
            },
        );
    }

    fn fetch_stream_end(&mut self) -> Result<()> {
        if self.mark.column != 0 {
            self.mark.column = 0;
            self.mark.line += 1;
        }
        self.unroll_indent(-1);
        self.remove_simple_key()?;
        self.simple_key_allowed = false;
        let m = self.mark;
        self.insert_token(
            None,
            Token {
                kind: TokenKind::StreamEnd,
                start: m,
                end: m,
            },
        );
        Ok(())
    }

    fn fetch_directive(&mut self) -> Result<()> {
        self.unroll_indent(-1);
        self.remove_simple_key()?;
        self.simple_key_allowed = false;
        self.fetch_scanned(|s| s.scan_directive())
    }

    fn fetch_document_indicator(&mut self, kind: TokenKind) -> Result<()> {
        self.unroll_indent(-1);
        self.remove_simple_key()?;
        self.simple_key_allowed = false;
        let start = self.mark;
        self.skip();
        self.skip();
        self.skip();
        let end = self.mark;
        self.insert_token(None, Token { kind, start, end });
        Ok(())
    }

    fn fetch_flow_collection_start(&mut self, kind: TokenKind) -> Result<()> {
        self.save_simple_key()?;
        self.increase_flow_level()?;
        self.simple_key_allowed = true;
        self.skip_as_token(kind)
    }

    fn fetch_flow_collection_end(&mut self, kind: TokenKind) -> Result<()> {
        self.remove_simple_key()?;
        self.decrease_flow_level();
        self.simple_key_allowed = false;
        self.skip_as_token(kind)
    }

    /// Skip the one character of an indicator and queue it as a token of `kind`.
    fn skip_as_token(&mut self, kind: TokenKind) -> Result<()> {
        let start = self.mark;
        self.skip();
        let end = self.mark;
        self.insert_token(None, Token { kind, start, end });
        Ok(())
    }

    /// In the block context, an indicator that may open a block collection of `kind` at its
    /// column (roll_indent), and fails with `problem` where a simple key is not allowed
    /// (scannerc.go writes this out in fetch_block_entry, fetch_key and fetch_value).
    fn open_block_collection(&mut self, kind: TokenKind, problem: &str) -> Result<()> {
        if self.flow_level == 0 {
            if !self.simple_key_allowed {
                let m = self.mark;
                return self.fail("", m, problem);
            }
            let m = self.mark;
            self.roll_indent(m.column, None, kind, m)?;
        }
        Ok(())
    }

    /// The tail of fetch_flow_entry, fetch_block_entry and fetch_key in scannerc.go: no simple
    /// key before the indicator, whether one may follow it, and the indicator as a token.
    fn fetch_indicator(&mut self, key_allowed: bool, kind: TokenKind) -> Result<()> {
        self.remove_simple_key()?;
        self.simple_key_allowed = key_allowed;
        self.skip_as_token(kind)
    }

    fn fetch_flow_entry(&mut self) -> Result<()> {
        self.fetch_indicator(true, TokenKind::FlowEntry)
    }

    fn fetch_block_entry(&mut self) -> Result<()> {
        let problem = "block sequence entries are not allowed in this context";
        self.open_block_collection(TokenKind::BlockSequenceStart, problem)?;
        self.fetch_indicator(true, TokenKind::BlockEntry)
    }

    fn fetch_key(&mut self) -> Result<()> {
        let problem = "mapping keys are not allowed in this context";
        self.open_block_collection(TokenKind::BlockMappingStart, problem)?;
        let key_allowed = self.flow_level == 0;
        self.fetch_indicator(key_allowed, TokenKind::Key)
    }

    fn fetch_value(&mut self) -> Result<()> {
        let idx = self.simple_keys.len() - 1;
        if self.simple_key_is_valid(idx)? {
            let key = self.simple_keys[idx];
            let pos = key.token_number.saturating_sub(self.tokens_parsed);
            self.insert_token(
                Some(pos),
                Token {
                    kind: TokenKind::Key,
                    start: key.mark,
                    end: key.mark,
                },
            );
            self.roll_indent(
                key.mark.column,
                Some(key.token_number),
                TokenKind::BlockMappingStart,
                key.mark,
            )?;
            self.simple_keys[idx].possible = false;
            self.simple_keys_by_tok.remove(&key.token_number);
            self.simple_key_allowed = false;
        } else {
            self.open_block_collection(
                TokenKind::BlockMappingStart,
                "mapping values are not allowed in this context",
            )?;
            self.simple_key_allowed = self.flow_level == 0;
        }
        self.skip_as_token(TokenKind::Value)
    }

    /// A token that may be a simple key (an anchor, a tag, a flow or plain scalar), read by
    /// `scan` where a simple key may start and queued.
    fn fetch_simple_key_token(
        &mut self,
        scan: impl FnOnce(&mut Self) -> Result<Token>,
    ) -> Result<()> {
        self.save_simple_key()?;
        self.simple_key_allowed = false;
        self.fetch_scanned(scan)
    }

    /// The token `scan` reads, queued.
    fn fetch_scanned(&mut self, scan: impl FnOnce(&mut Self) -> Result<Token>) -> Result<()> {
        let token = scan(self)?;
        self.insert_token(None, token);
        Ok(())
    }

    fn fetch_anchor(&mut self, alias: bool) -> Result<()> {
        self.fetch_simple_key_token(|s| s.scan_anchor(alias))
    }

    fn fetch_tag(&mut self) -> Result<()> {
        self.fetch_simple_key_token(|s| s.scan_tag())
    }

    fn fetch_block_scalar(&mut self, literal: bool) -> Result<()> {
        self.remove_simple_key()?;
        self.simple_key_allowed = true;
        self.fetch_scanned(|s| s.scan_block_scalar(literal))
    }

    fn fetch_flow_scalar(&mut self, single: bool) -> Result<()> {
        self.fetch_simple_key_token(|s| s.scan_flow_scalar(single))
    }

    fn fetch_plain_scalar(&mut self) -> Result<()> {
        self.fetch_simple_key_token(|s| s.scan_plain_scalar())
    }

    fn scan_to_next_token(&mut self) -> Result<()> {
        loop {
            // go-yaml's `is_bom(buffer, pos)` looks at the start of its buffer, not at `pos`:
            // the first decoded character until the buffer is first compacted (when fewer than
            // the needed characters are left of the first 512-byte chunk). The reader drops a
            // leading byte-order mark, so this fires only for a second one at the start of the
            // stream: then every line that starts before the compaction loses its first
            // character, whatever it is.
            self.cache(1)?;
            if self.mark.column == 0
                && self.bom_quirk_until > 0
                && self.mark.pos + 4 <= self.bom_quirk_until
            {
                self.skip();
            }
            self.cache(1)?;
            while self.ch() == b' '
                || ((self.flow_level > 0 || !self.simple_key_allowed) && self.ch() == b'\t')
            {
                self.skip();
                self.cache(1)?;
            }
            self.skip_comment()?;
            if self.is_break(0) {
                self.cache(2)?;
                self.skip_line();
                if self.flow_level == 0 {
                    self.simple_key_allowed = true;
                }
            } else {
                break;
            }
        }
        Ok(())
    }

    /// The end of a directive's or a block scalar header's line: blanks, a comment, then a line
    /// break (eaten) or the end of the input; anything else fails in `context` (scannerc.go
    /// writes this tail out in both scanners).
    fn finish_line(&mut self, context: &'static str, start: Mark) -> Result<()> {
        self.cache(1)?;
        self.skip_blanks()?;
        self.skip_comment()?;
        if !self.is_breakz(0) {
            return self.fail(
                context,
                start,
                "did not find expected comment or line break",
            );
        }
        if self.is_break(0) {
            self.cache(2)?;
            self.skip_line();
        }
        Ok(())
    }

    fn scan_directive(&mut self) -> Result<Token> {
        let start = self.mark;
        self.skip();
        let name = self.scan_directive_name(start)?;
        let token = if name == b"YAML" {
            let (major, minor) = self.scan_version_directive_value(start)?;
            Token {
                kind: TokenKind::VersionDirective(major, minor),
                start,
                end: self.mark,
            }
        } else if name == b"TAG" {
            let (handle, prefix) = self.scan_tag_directive_value(start)?;
            Token {
                kind: TokenKind::TagDirective(handle, prefix),
                start,
                end: self.mark,
            }
        } else {
            return self.fail(
                "while scanning a directive",
                start,
                "found unknown directive name",
            );
        };
        self.finish_line("while scanning a directive", start)?;
        Ok(token)
    }

    fn scan_directive_name(&mut self, start: Mark) -> Result<Vec<u8>> {
        self.cache(1)?;
        let mut s = Vec::new();
        while self.is_alpha(0) {
            self.read(&mut s);
            self.cache(1)?;
        }
        if s.is_empty() {
            return self.fail(
                "while scanning a directive",
                start,
                "could not find expected directive name",
            );
        }
        if !self.is_blankz(0) {
            return self.fail(
                "while scanning a directive",
                start,
                "found unexpected non-alphabetical character",
            );
        }
        Ok(s)
    }

    fn scan_version_directive_value(&mut self, start: Mark) -> Result<(i8, i8)> {
        self.cache(1)?;
        self.skip_blanks()?;
        let major = self.scan_version_directive_number(start)?;
        self.expect_char(
            b'.',
            "while scanning a %YAML directive",
            start,
            "did not find expected digit or '.' character",
        )?;
        let minor = self.scan_version_directive_number(start)?;
        Ok((major, minor))
    }

    fn scan_version_directive_number(&mut self, start: Mark) -> Result<i8> {
        self.cache(1)?;
        let mut value: i8 = 0;
        let mut length = 0;
        while self.is_digit(0) {
            length += 1;
            if length > 2 {
                return self.fail(
                    "while scanning a %YAML directive",
                    start,
                    "found extremely long version number",
                );
            }
            value = value * 10 + (self.ch() - b'0') as i8;
            self.skip();
            self.cache(1)?;
        }
        if length == 0 {
            return self.fail(
                "while scanning a %YAML directive",
                start,
                "did not find expected version number",
            );
        }
        Ok(value)
    }

    fn scan_tag_directive_value(&mut self, start: Mark) -> Result<(Vec<u8>, Vec<u8>)> {
        self.cache(1)?;
        self.skip_blanks()?;
        let handle = self.scan_tag_handle(true, start)?;
        self.cache(1)?;
        if !self.is_blank(0) {
            return self.fail(
                "while scanning a %TAG directive",
                start,
                "did not find expected whitespace",
            );
        }
        self.skip_blanks()?;
        let prefix = self.scan_tag_uri(true, None, start)?;
        self.cache(1)?;
        if !self.is_blankz(0) {
            return self.fail(
                "while scanning a %TAG directive",
                start,
                "did not find expected whitespace or line break",
            );
        }
        Ok((handle, prefix))
    }

    fn scan_anchor(&mut self, alias: bool) -> Result<Token> {
        let start = self.mark;
        self.skip();
        self.cache(1)?;
        let mut s = Vec::new();
        while self.is_alpha(0) {
            self.read(&mut s);
            self.cache(1)?;
        }
        let end = self.mark;
        let c = self.ch();
        if s.is_empty()
            || !(self.is_blankz(0)
                || matches!(c, b'?' | b':' | b',' | b']' | b'}' | b'%' | b'@' | b'`'))
        {
            let context = if alias {
                "while scanning an alias"
            } else {
                "while scanning an anchor"
            };
            return self.fail(
                context,
                start,
                "did not find expected alphabetic or numeric character",
            );
        }
        Ok(Token {
            kind: if alias {
                TokenKind::Alias(s)
            } else {
                TokenKind::Anchor(s)
            },
            start,
            end,
        })
    }

    fn scan_tag(&mut self) -> Result<Token> {
        let start = self.mark;
        self.cache(2)?;
        let handle;
        let suffix;
        if self.at(1) == b'<' {
            handle = Vec::new();
            self.skip();
            self.skip();
            suffix = self.scan_tag_uri(false, None, start)?;
            self.expect_char(
                b'>',
                "while scanning a tag",
                start,
                "did not find the expected '>'",
            )?;
        } else {
            let h = self.scan_tag_handle(false, start)?;
            if h.first() == Some(&b'!') && h.len() > 1 && h.last() == Some(&b'!') {
                handle = h;
                suffix = self.scan_tag_uri(false, None, start)?;
            } else {
                let s = self.scan_tag_uri(false, Some(&h), start)?;
                if s.is_empty() {
                    // The '!' tag: handle '', suffix '!'.
                    handle = Vec::new();
                    suffix = h;
                } else {
                    handle = b"!".to_vec();
                    suffix = s;
                }
            }
        }
        self.cache(1)?;
        if !self.is_blankz(0) {
            return self.fail(
                "while scanning a tag",
                start,
                "did not find expected whitespace or line break",
            );
        }
        Ok(Token {
            kind: TokenKind::Tag(handle, suffix),
            start,
            end: self.mark,
        })
    }

    fn scan_tag_handle(&mut self, directive: bool, start: Mark) -> Result<Vec<u8>> {
        self.cache(1)?;
        if self.ch() != b'!' {
            return self.tag_error(directive, start, "did not find expected '!'");
        }
        let mut s = Vec::new();
        self.read(&mut s);
        self.cache(1)?;
        while self.is_alpha(0) {
            self.read(&mut s);
            self.cache(1)?;
        }
        if self.ch() == b'!' {
            self.read(&mut s);
        } else if directive && s != b"!" {
            return self.tag_error(directive, start, "did not find expected '!'");
        }
        Ok(s)
    }

    fn scan_tag_uri(
        &mut self,
        directive: bool,
        head: Option<&[u8]>,
        start: Mark,
    ) -> Result<Vec<u8>> {
        let mut s = Vec::new();
        let head = head.unwrap_or(&[]);
        let mut has_tag = !head.is_empty();
        if head.len() > 1 {
            s.extend_from_slice(&head[1..]);
        }
        self.cache(1)?;
        loop {
            let c = self.ch();
            let uri_char = self.is_alpha(0)
                || matches!(
                    c,
                    b';' | b'/'
                        | b'?'
                        | b':'
                        | b'@'
                        | b'&'
                        | b'='
                        | b'+'
                        | b'$'
                        | b','
                        | b'.'
                        | b'!'
                        | b'~'
                        | b'*'
                        | b'\''
                        | b'('
                        | b')'
                        | b'['
                        | b']'
                        | b'%'
                );
            if !uri_char {
                break;
            }
            if c == b'%' {
                self.scan_uri_escapes(directive, start, &mut s)?;
            } else {
                self.read(&mut s);
            }
            self.cache(1)?;
            has_tag = true;
        }
        if !has_tag {
            return self.tag_error(directive, start, "did not find expected tag URI");
        }
        Ok(s)
    }

    fn scan_uri_escapes(&mut self, directive: bool, start: Mark, s: &mut Vec<u8>) -> Result<()> {
        let mut w: usize = 1024;
        while w > 0 {
            self.cache(3)?;
            if !(self.ch() == b'%' && self.is_hex(1) && self.is_hex(2)) {
                return self.tag_error(directive, start, "did not find URI escaped octet");
            }
            let octet = ((self.as_hex(1) << 4) + self.as_hex(2)) as u8;
            if w == 1024 {
                w = width(octet);
                if w == 0 {
                    return self.tag_error(
                        directive,
                        start,
                        "found an incorrect leading UTF-8 octet",
                    );
                }
            } else if octet & 0xC0 != 0x80 {
                return self.tag_error(directive, start, "found an incorrect trailing UTF-8 octet");
            }
            s.push(octet);
            self.skip();
            self.skip();
            self.skip();
            w -= 1;
        }
        Ok(())
    }

    /// A block scalar header's `+` (keep, 1) or `-` (strip, -1), eaten (scannerc.go writes it
    /// out twice in yaml_parser_scan_block_scalar: before and after the indentation digit).
    fn scan_chomping_indicator(&mut self) -> i32 {
        let chomping = if self.ch() == b'+' { 1 } else { -1 };
        self.skip();
        chomping
    }

    /// A block scalar header's indentation digit, eaten; `0` fails as in scannerc.go.
    fn scan_indentation_indicator(&mut self, start: Mark) -> Result<usize> {
        if self.ch() == b'0' {
            return self.fail(
                "while scanning a block scalar",
                start,
                "found an indentation indicator equal to 0",
            );
        }
        let increment = (self.ch() - b'0') as usize;
        self.skip();
        Ok(increment)
    }

    fn scan_block_scalar(&mut self, literal: bool) -> Result<Token> {
        let start = self.mark;
        self.skip();
        self.cache(1)?;
        let mut chomping = 0i32;
        let mut increment = 0usize;
        if self.ch() == b'+' || self.ch() == b'-' {
            chomping = self.scan_chomping_indicator();
            self.cache(1)?;
            if self.is_digit(0) {
                increment = self.scan_indentation_indicator(start)?;
            }
        } else if self.is_digit(0) {
            increment = self.scan_indentation_indicator(start)?;
            self.cache(1)?;
            if self.ch() == b'+' || self.ch() == b'-' {
                chomping = self.scan_chomping_indicator();
            }
        }
        // Where the node's text ends when no content line follows (a departure that changes
        // no decision: go-yaml's token ends after the trailing line breaks; this one ends at the
        // last character of the last content line, so that replacing the node's text keeps the
        // line break after it).
        let mut text_end = self.mark;
        self.finish_line("while scanning a block scalar", start)?;
        let mut end = self.mark;
        let mut indent: usize = 0;
        let _ = end;
        if increment > 0 {
            indent = if self.indent >= 0 {
                self.indent as usize + increment
            } else {
                increment
            };
        }
        let mut s = Vec::new();
        let mut leading_break = Vec::new();
        let mut trailing_breaks = Vec::new();
        self.scan_block_scalar_breaks(&mut indent, &mut trailing_breaks, start, &mut end)?;
        self.cache(1)?;
        let mut leading_blank = false;
        while self.mark.column == indent && !self.is_z(0) {
            let trailing_blank = self.is_blank(0);
            if !literal
                && !leading_blank
                && !trailing_blank
                && leading_break.first() == Some(&b'\n')
            {
                if trailing_breaks.is_empty() {
                    s.push(b' ');
                }
            } else {
                s.extend_from_slice(&leading_break);
            }
            leading_break.clear();
            s.extend_from_slice(&trailing_breaks);
            trailing_breaks.clear();
            leading_blank = self.is_blank(0);
            while !self.is_breakz(0) {
                self.read(&mut s);
                self.cache(1)?;
            }
            text_end = self.mark;
            self.cache(2)?;
            self.read_line(&mut leading_break);
            self.scan_block_scalar_breaks(&mut indent, &mut trailing_breaks, start, &mut end)?;
        }
        if chomping != -1 {
            s.extend_from_slice(&leading_break);
        }
        if chomping == 1 {
            s.extend_from_slice(&trailing_breaks);
        }
        Ok(Token {
            kind: TokenKind::Scalar(
                s,
                if literal {
                    ScalarStyle::Literal
                } else {
                    ScalarStyle::Folded
                },
            ),
            start,
            end: text_end,
        })
    }

    fn scan_block_scalar_breaks(
        &mut self,
        indent: &mut usize,
        breaks: &mut Vec<u8>,
        start: Mark,
        end: &mut Mark,
    ) -> Result<()> {
        *end = self.mark;
        let mut max_indent = 0usize;
        loop {
            self.cache(1)?;
            while (*indent == 0 || self.mark.column < *indent) && self.is_space(0) {
                self.skip();
                self.cache(1)?;
            }
            if self.mark.column > max_indent {
                max_indent = self.mark.column;
            }
            if (*indent == 0 || self.mark.column < *indent) && self.is_tab(0) {
                return self.fail(
                    "while scanning a block scalar",
                    start,
                    "found a tab character where an indentation space is expected",
                );
            }
            if !self.is_break(0) {
                break;
            }
            self.cache(2)?;
            self.read_line(breaks);
            *end = self.mark;
        }
        if *indent == 0 {
            *indent = max_indent;
            if (*indent as isize) < self.indent + 1 {
                *indent = (self.indent + 1) as usize;
            }
            if *indent < 1 {
                *indent = 1;
            }
        }
        Ok(())
    }

    /// A `---` or `...` at the start of a line, followed by a blank, a break or the end.
    fn at_document_indicator(&self) -> bool {
        self.mark.column == 0
            && ((self.at(0) == b'-' && self.at(1) == b'-' && self.at(2) == b'-')
                || (self.at(0) == b'.' && self.at(1) == b'.' && self.at(2) == b'.'))
            && self.is_blankz(3)
    }

    /// One blank or line break between a flow or plain scalar's words, into `sp`.
    fn read_space(&mut self, sp: &mut Spaces) -> Result<()> {
        if self.is_blank(0) {
            if !sp.leading_blanks {
                self.read(&mut sp.whitespaces);
            } else {
                self.skip();
            }
        } else {
            self.cache(2)?;
            if !sp.leading_blanks {
                sp.whitespaces.clear();
                self.read_line(&mut sp.leading_break);
                sp.leading_blanks = true;
            } else {
                self.read_line(&mut sp.trailing_breaks);
            }
        }
        Ok(())
    }

    fn scan_flow_scalar(&mut self, single: bool) -> Result<Token> {
        let start = self.mark;
        self.skip();
        let mut s = Vec::new();
        let mut sp = Spaces::default();
        loop {
            self.cache(4)?;
            if self.at_document_indicator() {
                return self.fail(
                    "while scanning a quoted scalar",
                    start,
                    "found unexpected document indicator",
                );
            }
            if self.is_z(0) {
                return self.fail(
                    "while scanning a quoted scalar",
                    start,
                    "found unexpected end of stream",
                );
            }
            sp.leading_blanks = false;
            while !self.is_blankz(0) {
                let c = self.ch();
                if single && c == b'\'' && self.at(1) == b'\'' {
                    s.push(b'\'');
                    self.skip();
                    self.skip();
                } else if (single && c == b'\'') || (!single && c == b'"') {
                    // The closing quote.
                    break;
                } else if !single && c == b'\\' && self.is_break(1) {
                    self.cache(3)?;
                    self.skip();
                    self.skip_line();
                    sp.leading_blanks = true;
                    break;
                } else if !single && c == b'\\' {
                    let mut code_length = 0usize;
                    match self.at(1) {
                        b'0' => s.push(0),
                        b'a' => s.push(0x07),
                        b'b' => s.push(0x08),
                        b't' | b'\t' => s.push(0x09),
                        b'n' => s.push(0x0A),
                        b'v' => s.push(0x0B),
                        b'f' => s.push(0x0C),
                        b'r' => s.push(0x0D),
                        b'e' => s.push(0x1B),
                        b' ' => s.push(0x20),
                        b'"' => s.push(b'"'),
                        b'\'' => s.push(b'\''),
                        b'\\' => s.push(b'\\'),
                        b'N' => s.extend_from_slice(&[0xC2, 0x85]),
                        b'_' => s.extend_from_slice(&[0xC2, 0xA0]),
                        b'L' => s.extend_from_slice(&[0xE2, 0x80, 0xA8]),
                        b'P' => s.extend_from_slice(&[0xE2, 0x80, 0xA9]),
                        b'x' => code_length = 2,
                        b'u' => code_length = 4,
                        b'U' => code_length = 8,
                        _ => {
                            return self.fail(
                                "while parsing a quoted scalar",
                                start,
                                "found unknown escape character",
                            );
                        }
                    }
                    self.skip();
                    self.skip();
                    if code_length > 0 {
                        self.cache(code_length)?;
                        let mut value: u32 = 0;
                        for k in 0..code_length {
                            if !self.is_hex(k) {
                                return self.fail(
                                    "while parsing a quoted scalar",
                                    start,
                                    "did not find expected hexdecimal number",
                                );
                            }
                            value = (value << 4) + self.as_hex(k);
                        }
                        match char::from_u32(value) {
                            Some(ch) => {
                                let mut buf = [0u8; 4];
                                s.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                            }
                            None => {
                                return self.fail(
                                    "while parsing a quoted scalar",
                                    start,
                                    "found invalid Unicode character escape code",
                                );
                            }
                        }
                        for _ in 0..code_length {
                            self.skip();
                        }
                    }
                } else {
                    self.read(&mut s);
                }
                self.cache(2)?;
            }
            self.cache(1)?;
            if single {
                if self.ch() == b'\'' {
                    break;
                }
            } else if self.ch() == b'"' {
                break;
            }
            while self.is_blank(0) || self.is_break(0) {
                self.read_space(&mut sp)?;
                self.cache(1)?;
            }
            sp.fold_into(&mut s);
        }
        self.skip();
        let end = self.mark;
        Ok(Token {
            kind: TokenKind::Scalar(
                s,
                if single {
                    ScalarStyle::SingleQuoted
                } else {
                    ScalarStyle::DoubleQuoted
                },
            ),
            start,
            end,
        })
    }

    fn scan_plain_scalar(&mut self) -> Result<Token> {
        let mut s = Vec::new();
        let mut sp = Spaces::default();
        let indent = self.indent + 1;
        let start = self.mark;
        let mut end = self.mark;
        loop {
            self.cache(4)?;
            if self.at_document_indicator() {
                break;
            }
            if self.ch() == b'#' {
                break;
            }
            while !self.is_blankz(0) {
                let c = self.ch();
                if (c == b':' && self.is_blankz(1))
                    || (self.flow_level > 0 && matches!(c, b',' | b'?' | b'[' | b']' | b'{' | b'}'))
                {
                    break;
                }
                if sp.leading_blanks || !sp.whitespaces.is_empty() {
                    sp.fold_into(&mut s);
                }
                self.read(&mut s);
                end = self.mark;
                self.cache(2)?;
            }
            if !(self.is_blank(0) || self.is_break(0)) {
                break;
            }
            self.cache(1)?;
            while self.is_blank(0) || self.is_break(0) {
                if self.is_blank(0)
                    && sp.leading_blanks
                    && (self.mark.column as isize) < indent
                    && self.is_tab(0)
                {
                    return self.fail(
                        "while scanning a plain scalar",
                        start,
                        "found a tab character that violates indentation",
                    );
                }
                self.read_space(&mut sp)?;
                self.cache(1)?;
            }
            if self.flow_level == 0 && (self.mark.column as isize) < indent {
                break;
            }
        }
        if sp.leading_blanks {
            self.simple_key_allowed = true;
        }
        Ok(Token {
            kind: TokenKind::Scalar(s, ScalarStyle::Plain),
            start,
            end,
        })
    }
}

/// The blanks and line breaks between a flow or plain scalar's words, as scannerc.go keeps them
/// (`leading_blanks`, `leading_break`, `trailing_breaks`, `whitespaces`) until the next word.
#[derive(Default)]
struct Spaces {
    leading_blanks: bool,
    leading_break: Vec<u8>,
    trailing_breaks: Vec<u8>,
    whitespaces: Vec<u8>,
}

impl Spaces {
    /// Before the next word: after a line break, the breaks folded (a lone `\n` becomes a space,
    /// a `\n` before more breaks is dropped, any other first break is kept); otherwise the blanks
    /// kept as they are.
    fn fold_into(&mut self, s: &mut Vec<u8>) {
        if self.leading_blanks {
            if self.leading_break.first() == Some(&b'\n') {
                if self.trailing_breaks.is_empty() {
                    s.push(b' ');
                } else {
                    s.extend_from_slice(&self.trailing_breaks);
                }
            } else {
                s.extend_from_slice(&self.leading_break);
                s.extend_from_slice(&self.trailing_breaks);
            }
            self.trailing_breaks.clear();
            self.leading_break.clear();
            self.leading_blanks = false;
        } else {
            s.extend_from_slice(&self.whitespaces);
            self.whitespaces.clear();
        }
    }
}

impl Error {
    /// Where to report the error in `input`: on the line go-yaml's message names. A reader or
    /// scanner error names the line of its mark (the character where scanning stopped). A parser
    /// error names its token's 0-based line, which is the line above the token: the report is
    /// then the end of the last token on that line, or the first non-blank character of that line
    /// (a token on go-yaml's line 0 is named without a line; the token itself is reported).
    pub fn offset(&self, input: &[u8]) -> usize {
        if self.kind != ErrorKind::Parser || self.problem_mark.line == 0 {
            return self.problem_mark.pos.min(input.len());
        }
        let want = self.problem_mark.line - 1;
        if let Some(prev) = self.prev_end
            && prev.line == want
        {
            return prev.pos.min(input.len());
        }
        // Walk back from the token to the start of its line, then to the start of the line above.
        let is_break_end = |i: usize| -> Option<usize> {
            // If a line break ends at i (exclusive), its start.
            let b = |k: usize| input.get(k).copied();
            if i >= 1 && b(i - 1) == Some(b'\n') {
                return Some(if i >= 2 && b(i - 2) == Some(b'\r') {
                    i - 2
                } else {
                    i - 1
                });
            }
            if i >= 1 && b(i - 1) == Some(b'\r') && b(i) != Some(b'\n') {
                return Some(i - 1);
            }
            if i >= 2 && b(i - 2) == Some(0xC2) && b(i - 1) == Some(0x85) {
                return Some(i - 2);
            }
            if i >= 3
                && b(i - 3) == Some(0xE2)
                && b(i - 2) == Some(0x80)
                && matches!(b(i - 1), Some(0xA8 | 0xA9))
            {
                return Some(i - 3);
            }
            None
        };
        let line_start = |mut i: usize| -> usize {
            while i > 0 && is_break_end(i).is_none() {
                i -= 1;
            }
            i
        };
        let here = line_start(self.problem_mark.pos.min(input.len()));
        let Some(above_end) = is_break_end(here) else {
            return self.problem_mark.pos.min(input.len());
        };
        let mut at = line_start(above_end);
        while at < above_end && matches!(input[at], b' ' | b'\t') {
            at += 1;
        }
        if at == above_end {
            line_start(above_end)
        } else {
            at
        }
    }
}
