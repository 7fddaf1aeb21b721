//! go-yaml v2's parser (`parserc.go`): tokens → events, with go-yaml's states, its tag
//! directives and its errors (among them what it does not take from later libyaml: a `...`
//! that opens a stream, `%YAML 1.2`, a directive without a `...` before it).

use super::scanner::{Error, ErrorKind, Mark, ScalarStyle, Scanner, Tk, TokenKind};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    StreamStart,
    StreamEnd,
    DocumentStart {
        implicit: bool,
    },
    DocumentEnd {
        implicit: bool,
    },
    Alias {
        anchor: Vec<u8>,
    },
    Scalar {
        anchor: Option<Vec<u8>>,
        /// The resolved tag (`tag:yaml.org,2002:str`, `!local`), empty when none was written.
        tag: Vec<u8>,
        value: Vec<u8>,
        style: ScalarStyle,
        /// No tag (or `!`) on a plain scalar: go-yaml resolves its type from its text.
        plain_implicit: bool,
        /// The scalar came from the token itself (not an empty node made up by the parser).
        token: bool,
        /// Where the scalar's own text starts (after its anchor and tag).
        value_start: Mark,
    },
    SequenceStart {
        anchor: Option<Vec<u8>>,
        tag: Vec<u8>,
        flow: bool,
        /// Where the collection's own first token starts (after its anchor and tag).
        value_start: Mark,
    },
    SequenceEnd,
    MappingStart {
        anchor: Option<Vec<u8>>,
        tag: Vec<u8>,
        flow: bool,
        value_start: Mark,
    },
    MappingEnd,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    pub start: Mark,
    pub end: Mark,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    StreamStart,
    ImplicitDocumentStart,
    DocumentStart,
    DocumentContent,
    DocumentEnd,
    BlockNode,
    BlockSequenceFirstEntry,
    BlockSequenceEntry,
    IndentlessSequenceEntry,
    BlockMappingFirstKey,
    BlockMappingKey,
    BlockMappingValue,
    FlowSequenceFirstEntry,
    FlowSequenceEntry,
    FlowSequenceEntryMappingKey,
    FlowSequenceEntryMappingValue,
    FlowSequenceEntryMappingEnd,
    FlowMappingFirstKey,
    FlowMappingKey,
    FlowMappingValue,
    FlowMappingEmptyValue,
    End,
}

type Result<T> = std::result::Result<T, Box<Error>>;

pub struct Parser<'a> {
    scanner: Scanner<'a>,
    state: State,
    states: Vec<State>,
    marks: Vec<Mark>,
    tag_directives: Vec<(Vec<u8>, Vec<u8>)>,
    error: Option<Box<Error>>,
    done: bool,
}

fn parser_error(problem: &str, problem_mark: Mark) -> Box<Error> {
    Box::new(Error {
        kind: ErrorKind::Parser,
        problem: problem.to_string(),
        problem_mark,
        context: "",
        context_mark: Mark::default(),
        prev_end: None,
    })
}

fn parser_error_context(
    context: &'static str,
    context_mark: Mark,
    problem: &str,
    problem_mark: Mark,
) -> Box<Error> {
    Box::new(Error {
        kind: ErrorKind::Parser,
        problem: problem.to_string(),
        problem_mark,
        context,
        context_mark,
        prev_end: None,
    })
}

impl<'a> Parser<'a> {
    pub fn new(input: &'a [u8]) -> Parser<'a> {
        // go-yaml's newParser reads an empty input as a single line break.
        let input: &'a [u8] = if input.is_empty() { b"\n" } else { input };
        Parser {
            scanner: Scanner::new(input),
            state: State::StreamStart,
            states: Vec::new(),
            marks: Vec::new(),
            tag_directives: Vec::new(),
            error: None,
            done: false,
        }
    }

    /// The next event; `None` after STREAM-END; an error stays the answer.
    pub fn next_event(&mut self) -> Option<Result<Event>> {
        if let Some(e) = &self.error {
            return Some(Err(e.clone()));
        }
        if self.done || self.scanner.stream_end_produced || self.state == State::End {
            return None;
        }
        match self.state_machine() {
            Ok(ev) => {
                if matches!(ev.kind, EventKind::StreamEnd) {
                    self.done = true;
                }
                Some(Ok(ev))
            }
            Err(mut e) => {
                if e.kind == ErrorKind::Parser {
                    e.prev_end = self.scanner.last_end;
                }
                self.error = Some(e.clone());
                Some(Err(e))
            }
        }
    }

    fn peek(&mut self) -> Result<(TokenKind, Mark, Mark)> {
        let t = self.scanner.peek()?;
        Ok((t.kind.clone(), t.start, t.end))
    }

    /// The kind of the next token only (cheaper than [`peek`] for scalars: no copy of the value).
    fn peek_is(&mut self) -> Result<(Tk, Mark, Mark)> {
        let t = self.scanner.peek()?;
        Ok((t.kind.tk(), t.start, t.end))
    }

    fn skip(&mut self) {
        self.scanner.skip_token();
    }

    /// Consume the token [`peek_is`](Self::peek_is) saw, and own its data.
    fn take(&mut self) -> TokenKind {
        self.scanner
            .skip_token()
            .map_or(TokenKind::StreamEnd, |t| t.kind)
    }

    fn pop_state(&mut self) {
        self.state = self.states.pop().unwrap_or(State::End);
    }

    fn state_machine(&mut self) -> Result<Event> {
        match self.state {
            State::StreamStart => self.parse_stream_start(),
            State::ImplicitDocumentStart => self.parse_document_start(true),
            State::DocumentStart => self.parse_document_start(false),
            State::DocumentContent => self.parse_document_content(),
            State::DocumentEnd => self.parse_document_end(),
            State::BlockNode => self.parse_node(true, false),
            State::BlockSequenceFirstEntry => self.parse_block_sequence_entry(true),
            State::BlockSequenceEntry => self.parse_block_sequence_entry(false),
            State::IndentlessSequenceEntry => self.parse_indentless_sequence_entry(),
            State::BlockMappingFirstKey => self.parse_block_mapping_key(true),
            State::BlockMappingKey => self.parse_block_mapping_key(false),
            State::BlockMappingValue => self.parse_block_mapping_value(),
            State::FlowSequenceFirstEntry => self.parse_flow_sequence_entry(true),
            State::FlowSequenceEntry => self.parse_flow_sequence_entry(false),
            State::FlowSequenceEntryMappingKey => self.parse_flow_sequence_entry_mapping_key(),
            State::FlowSequenceEntryMappingValue => self.parse_flow_sequence_entry_mapping_value(),
            State::FlowSequenceEntryMappingEnd => self.parse_flow_sequence_entry_mapping_end(),
            State::FlowMappingFirstKey => self.parse_flow_mapping_key(true),
            State::FlowMappingKey => self.parse_flow_mapping_key(false),
            State::FlowMappingValue => self.parse_flow_mapping_value(false),
            State::FlowMappingEmptyValue => self.parse_flow_mapping_value(true),
            State::End => Err(parser_error("no more events", Mark::default())),
        }
    }

    fn parse_stream_start(&mut self) -> Result<Event> {
        let (t, start, end) = self.peek_is()?;
        if t != Tk::StreamStart {
            return Err(parser_error("did not find expected <stream-start>", start));
        }
        self.state = State::ImplicitDocumentStart;
        self.skip();
        Ok(Event {
            kind: EventKind::StreamStart,
            start,
            end,
        })
    }

    fn parse_document_start(&mut self, implicit: bool) -> Result<Event> {
        let (mut t, mut start, mut end) = self.peek_is()?;
        if !implicit {
            while t == Tk::DocumentEnd {
                self.skip();
                (t, start, end) = self.peek_is()?;
            }
        }
        if implicit
            && !matches!(
                t,
                Tk::VersionDirective | Tk::TagDirective | Tk::DocumentStart | Tk::StreamEnd
            )
        {
            self.process_directives()?;
            self.states.push(State::DocumentEnd);
            self.state = State::BlockNode;
            return Ok(Event {
                kind: EventKind::DocumentStart { implicit: true },
                start,
                end,
            });
        }
        if t != Tk::StreamEnd {
            let doc_start = start;
            self.process_directives()?;
            let (t, start, end) = self.peek_is()?;
            if t != Tk::DocumentStart {
                return Err(parser_error(
                    "did not find expected <document start>",
                    start,
                ));
            }
            self.states.push(State::DocumentEnd);
            self.state = State::DocumentContent;
            self.skip();
            return Ok(Event {
                kind: EventKind::DocumentStart { implicit: false },
                start: doc_start,
                end,
            });
        }
        self.state = State::End;
        self.skip();
        Ok(Event {
            kind: EventKind::StreamEnd,
            start,
            end,
        })
    }

    fn parse_document_content(&mut self) -> Result<Event> {
        let (t, start, _) = self.peek_is()?;
        if matches!(
            t,
            Tk::VersionDirective
                | Tk::TagDirective
                | Tk::DocumentStart
                | Tk::DocumentEnd
                | Tk::StreamEnd
        ) {
            self.pop_state();
            return Ok(empty_scalar(start));
        }
        self.parse_node(true, false)
    }

    fn parse_document_end(&mut self) -> Result<Event> {
        let (t, start, tend) = self.peek_is()?;
        let mut end = start;
        let mut implicit = true;
        if t == Tk::DocumentEnd {
            end = tend;
            self.skip();
            implicit = false;
        }
        self.tag_directives.clear();
        self.state = State::DocumentStart;
        Ok(Event {
            kind: EventKind::DocumentEnd { implicit },
            start,
            end,
        })
    }

    fn parse_node(&mut self, block: bool, indentless_sequence: bool) -> Result<Event> {
        let (mut kind, mut tstart, mut tend) = self.peek_is()?;
        if kind == Tk::Alias {
            self.pop_state();
            let anchor = match self.take() {
                TokenKind::Alias(a) => a,
                _ => Vec::new(),
            };
            return Ok(Event {
                kind: EventKind::Alias { anchor },
                start: tstart,
                end: tend,
            });
        }
        let start = tstart;
        let mut end = tstart;
        let mut tag_token: Option<(Vec<u8>, Vec<u8>)> = None;
        let mut anchor: Option<Vec<u8>> = None;
        let mut tag_mark = tstart;
        if kind == Tk::Anchor {
            if let TokenKind::Anchor(a) = self.take() {
                anchor = Some(a);
            }
            end = tend;
            (kind, tstart, tend) = self.peek_is()?;
            if kind == Tk::Tag {
                if let TokenKind::Tag(h, s) = self.take() {
                    tag_token = Some((h, s));
                }
                tag_mark = tstart;
                end = tend;
                (kind, tstart, tend) = self.peek_is()?;
            }
        } else if kind == Tk::Tag {
            if let TokenKind::Tag(h, s) = self.take() {
                tag_token = Some((h, s));
            }
            tag_mark = tstart;
            end = tend;
            (kind, tstart, tend) = self.peek_is()?;
            if kind == Tk::Anchor {
                if let TokenKind::Anchor(a) = self.take() {
                    anchor = Some(a);
                }
                end = tend;
                (kind, tstart, tend) = self.peek_is()?;
            }
        }
        let mut tag: Vec<u8> = Vec::new();
        if let Some((handle, suffix)) = tag_token {
            if handle.is_empty() {
                tag = suffix;
            } else {
                match self.tag_directives.iter().find(|(h, _)| *h == handle) {
                    Some((_, prefix)) => {
                        tag = prefix.clone();
                        tag.extend_from_slice(&suffix);
                    }
                    None => {
                        return Err(parser_error_context(
                            "while parsing a node",
                            start,
                            "found undefined tag handle",
                            tag_mark,
                        ));
                    }
                }
                if tag.is_empty() {
                    return Err(parser_error_context(
                        "while parsing a node",
                        start,
                        "found undefined tag handle",
                        tag_mark,
                    ));
                }
            }
        }
        let value_start = tstart;
        if indentless_sequence && kind == Tk::BlockEntry {
            end = tend;
            self.state = State::IndentlessSequenceEntry;
            return Ok(Event {
                kind: EventKind::SequenceStart {
                    anchor,
                    tag,
                    flow: false,
                    value_start,
                },
                start,
                end,
            });
        }
        if kind == Tk::Scalar {
            end = tend;
            self.pop_state();
            let (value, style) = match self.take() {
                TokenKind::Scalar(v, s) => (v, s),
                _ => (Vec::new(), ScalarStyle::Plain),
            };
            let plain_implicit =
                (tag.is_empty() && style == ScalarStyle::Plain) || tag.as_slice() == b"!";
            return Ok(Event {
                kind: EventKind::Scalar {
                    anchor,
                    tag,
                    value,
                    style,
                    plain_implicit,
                    token: true,
                    value_start,
                },
                start,
                end,
            });
        }
        let collection = match kind {
            Tk::FlowSequenceStart => Some((State::FlowSequenceFirstEntry, false, true)),
            Tk::FlowMappingStart => Some((State::FlowMappingFirstKey, true, true)),
            Tk::BlockSequenceStart if block => Some((State::BlockSequenceFirstEntry, false, false)),
            Tk::BlockMappingStart if block => Some((State::BlockMappingFirstKey, true, false)),
            _ => None,
        };
        if let Some((state, is_map, flow)) = collection {
            end = tend;
            self.state = state;
            let kind = if is_map {
                EventKind::MappingStart {
                    anchor,
                    tag,
                    flow,
                    value_start,
                }
            } else {
                EventKind::SequenceStart {
                    anchor,
                    tag,
                    flow,
                    value_start,
                }
            };
            return Ok(Event { kind, start, end });
        }
        if anchor.is_some() || !tag.is_empty() {
            self.pop_state();
            let plain_implicit = tag.is_empty();
            return Ok(Event {
                kind: EventKind::Scalar {
                    anchor,
                    tag,
                    value: Vec::new(),
                    style: ScalarStyle::Plain,
                    plain_implicit,
                    token: false,
                    value_start: end,
                },
                start,
                end,
            });
        }
        let context = if block {
            "while parsing a block node"
        } else {
            "while parsing a flow node"
        };
        Err(parser_error_context(
            context,
            start,
            "did not find expected node content",
            tstart,
        ))
    }

    /// The first call for a collection: its start token's mark kept for the errors, the token
    /// skipped.
    fn open_collection(&mut self, first: bool) -> Result<()> {
        if first {
            let (_, start, _) = self.peek_is()?;
            self.marks.push(start);
            self.skip();
        }
        Ok(())
    }

    /// A collection's end token: back to the state before the collection, its mark dropped,
    /// the token skipped.
    fn close_collection(&mut self, kind: EventKind, start: Mark, end: Mark) -> Event {
        self.pop_state();
        self.marks.pop();
        self.skip();
        Event { kind, start, end }
    }

    /// A block entry's or value's indicator ending at `mark` (skipped here): its node, or an
    /// empty scalar at `mark` when the next token is one of `empty_before`; `next` comes after
    /// either (parserc.go writes this out in each block state).
    fn block_entry_node(
        &mut self,
        mark: Mark,
        empty_before: &[Tk],
        next: State,
        indentless_sequence: bool,
    ) -> Result<Event> {
        self.skip();
        let (t, _, _) = self.peek_is()?;
        if !empty_before.contains(&t) {
            self.states.push(next);
            return self.parse_node(true, indentless_sequence);
        }
        self.state = next;
        Ok(empty_scalar(mark))
    }

    /// A block collection's token that is no entry: its end, or the error `problem` at the
    /// token in `context` at the collection's start.
    fn block_end_or_error(
        &mut self,
        (t, start, end): (Tk, Mark, Mark),
        kind: EventKind,
        context: &'static str,
        problem: &str,
    ) -> Result<Event> {
        if t == Tk::BlockEnd {
            return Ok(self.close_collection(kind, start, end));
        }
        let context_mark = self.marks.pop().unwrap_or_default();
        Err(parser_error_context(context, context_mark, problem, start))
    }

    fn parse_block_sequence_entry(&mut self, first: bool) -> Result<Event> {
        self.open_collection(first)?;
        let (t, start, end) = self.peek_is()?;
        if t == Tk::BlockEntry {
            return self.block_entry_node(
                end,
                &[Tk::BlockEntry, Tk::BlockEnd],
                State::BlockSequenceEntry,
                false,
            );
        }
        self.block_end_or_error(
            (t, start, end),
            EventKind::SequenceEnd,
            "while parsing a block collection",
            "did not find expected '-' indicator",
        )
    }

    fn parse_indentless_sequence_entry(&mut self) -> Result<Event> {
        let (t, start, end) = self.peek_is()?;
        if t == Tk::BlockEntry {
            return self.block_entry_node(
                end,
                &[Tk::BlockEntry, Tk::Key, Tk::Value, Tk::BlockEnd],
                State::IndentlessSequenceEntry,
                false,
            );
        }
        self.pop_state();
        Ok(Event {
            kind: EventKind::SequenceEnd,
            start,
            end: start,
        })
    }

    fn parse_block_mapping_key(&mut self, first: bool) -> Result<Event> {
        self.open_collection(first)?;
        let (t, start, end) = self.peek_is()?;
        if t == Tk::Key {
            return self.block_entry_node(
                end,
                &[Tk::Key, Tk::Value, Tk::BlockEnd],
                State::BlockMappingValue,
                true,
            );
        }
        self.block_end_or_error(
            (t, start, end),
            EventKind::MappingEnd,
            "while parsing a block mapping",
            "did not find expected key",
        )
    }

    fn parse_block_mapping_value(&mut self) -> Result<Event> {
        let (t, start, end) = self.peek_is()?;
        if t == Tk::Value {
            return self.block_entry_node(
                end,
                &[Tk::Key, Tk::Value, Tk::BlockEnd],
                State::BlockMappingKey,
                true,
            );
        }
        self.state = State::BlockMappingKey;
        Ok(empty_scalar(start))
    }

    /// Before each entry of a flow collection but the first: its ',' skipped and the token
    /// after it, or the error `problem` at the token in `context` at the collection's start.
    fn flow_separator(
        &mut self,
        first: bool,
        token: (Tk, Mark, Mark),
        context: &'static str,
        problem: &str,
    ) -> Result<(Tk, Mark, Mark)> {
        if first {
            return Ok(token);
        }
        if token.0 == Tk::FlowEntry {
            self.skip();
            return self.peek_is();
        }
        let context_mark = self.marks.pop().unwrap_or_default();
        Err(parser_error_context(
            context,
            context_mark,
            problem,
            token.1,
        ))
    }

    fn parse_flow_sequence_entry(&mut self, first: bool) -> Result<Event> {
        self.open_collection(first)?;
        let (mut t, mut start, mut end) = self.peek_is()?;
        if t != Tk::FlowSequenceEnd {
            (t, start, end) = self.flow_separator(
                first,
                (t, start, end),
                "while parsing a flow sequence",
                "did not find expected ',' or ']'",
            )?;
            if t == Tk::Key {
                self.state = State::FlowSequenceEntryMappingKey;
                self.skip();
                return Ok(Event {
                    kind: EventKind::MappingStart {
                        anchor: None,
                        tag: Vec::new(),
                        flow: true,
                        value_start: start,
                    },
                    start,
                    end,
                });
            } else if t != Tk::FlowSequenceEnd {
                self.states.push(State::FlowSequenceEntry);
                return self.parse_node(false, false);
            }
        }
        Ok(self.close_collection(EventKind::SequenceEnd, start, end))
    }

    fn parse_flow_sequence_entry_mapping_key(&mut self) -> Result<Event> {
        let (t, _, end) = self.peek_is()?;
        if !matches!(t, Tk::Value | Tk::FlowEntry | Tk::FlowSequenceEnd) {
            self.states.push(State::FlowSequenceEntryMappingValue);
            return self.parse_node(false, false);
        }
        let mark = end;
        self.skip();
        self.state = State::FlowSequenceEntryMappingValue;
        Ok(empty_scalar(mark))
    }

    fn parse_flow_sequence_entry_mapping_value(&mut self) -> Result<Event> {
        let (t, start, _) = self.peek_is()?;
        if t == Tk::Value {
            self.skip();
            let (t2, start2, _) = self.peek_is()?;
            if t2 != Tk::FlowEntry && t2 != Tk::FlowSequenceEnd {
                self.states.push(State::FlowSequenceEntryMappingEnd);
                return self.parse_node(false, false);
            }
            // go-yaml's `token` here is the inner (shadowing) one only inside the if; the
            // empty scalar takes the outer token's mark, the VALUE token's start.
            let _ = start2;
        }
        self.state = State::FlowSequenceEntryMappingEnd;
        Ok(empty_scalar(start))
    }

    fn parse_flow_sequence_entry_mapping_end(&mut self) -> Result<Event> {
        let (_, start, _) = self.peek_is()?;
        self.state = State::FlowSequenceEntry;
        Ok(Event {
            kind: EventKind::MappingEnd,
            start,
            end: start,
        })
    }

    fn parse_flow_mapping_key(&mut self, first: bool) -> Result<Event> {
        self.open_collection(first)?;
        let (mut t, mut start, mut end) = self.peek_is()?;
        if t != Tk::FlowMappingEnd {
            (t, start, end) = self.flow_separator(
                first,
                (t, start, end),
                "while parsing a flow mapping",
                "did not find expected ',' or '}'",
            )?;
            if t == Tk::Key {
                self.skip();
                let (t, start, _) = self.peek_is()?;
                if !matches!(t, Tk::Value | Tk::FlowEntry | Tk::FlowMappingEnd) {
                    self.states.push(State::FlowMappingValue);
                    return self.parse_node(false, false);
                }
                self.state = State::FlowMappingValue;
                return Ok(empty_scalar(start));
            } else if t != Tk::FlowMappingEnd {
                self.states.push(State::FlowMappingEmptyValue);
                return self.parse_node(false, false);
            }
        }
        Ok(self.close_collection(EventKind::MappingEnd, start, end))
    }

    fn parse_flow_mapping_value(&mut self, empty: bool) -> Result<Event> {
        let (t, start, _) = self.peek_is()?;
        if empty {
            self.state = State::FlowMappingKey;
            return Ok(empty_scalar(start));
        }
        if t == Tk::Value {
            self.skip();
            let (t2, start2, _) = self.peek_is()?;
            if t2 != Tk::FlowEntry && t2 != Tk::FlowMappingEnd {
                self.states.push(State::FlowMappingKey);
                return self.parse_node(false, false);
            }
            self.state = State::FlowMappingKey;
            return Ok(empty_scalar(start2));
        }
        self.state = State::FlowMappingKey;
        Ok(empty_scalar(start))
    }

    fn process_directives(&mut self) -> Result<()> {
        let mut version_seen = false;
        loop {
            let (kind, start, _) = self.peek()?;
            match kind {
                TokenKind::VersionDirective(major, minor) => {
                    if version_seen {
                        return Err(parser_error("found duplicate %YAML directive", start));
                    }
                    if major != 1 || minor != 1 {
                        return Err(parser_error("found incompatible YAML document", start));
                    }
                    version_seen = true;
                }
                TokenKind::TagDirective(handle, prefix) => {
                    if self.tag_directives.iter().any(|(h, _)| *h == handle) {
                        return Err(parser_error("found duplicate %TAG directive", start));
                    }
                    self.tag_directives.push((handle, prefix));
                }
                _ => break,
            }
            self.skip();
        }
        for (h, p) in [(&b"!"[..], &b"!"[..]), (b"!!", b"tag:yaml.org,2002:")] {
            if !self.tag_directives.iter().any(|(x, _)| x == h) {
                self.tag_directives.push((h.to_vec(), p.to_vec()));
            }
        }
        Ok(())
    }
}

fn empty_scalar(mark: Mark) -> Event {
    Event {
        kind: EventKind::Scalar {
            anchor: None,
            tag: Vec::new(),
            value: Vec::new(),
            style: ScalarStyle::Plain,
            plain_implicit: true,
            token: false,
            value_start: mark,
        },
        start: mark,
        end: mark,
    }
}
