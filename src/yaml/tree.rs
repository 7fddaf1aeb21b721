//! Events with byte ranges → a typed tree per document, read the way Helm reads it.
//!
//! The parser is granit-parser: of the span-carrying Rust YAML parsers it is the one whose ranges
//! are byte offsets and tight (a quoted scalar ends at its closing quote, so splicing a fix never
//! eats the comment after it). Everything that depends on the parser crate lives in this file.
//!
//! Two passes. First the events become a raw arena per document (anchors kept, aliases as links).
//! Then the arena is turned into [`Node`]s with Helm's semantics: plain scalars typed as go-yaml
//! v2 types them, merge keys applied, aliases expanded under a budget, duplicate keys recorded
//! (the last one wins, as in Helm).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use granit_parser::{Event, Options, Parser, ScalarStyle, Span};

use super::resolve::{self, Scalar};
use super::source::Source;

/// How many nodes alias expansion may create in one document. A real values file or manifest
/// needs a few hundred; a "billion laughs" file needs billions and is refused as soon as it
/// crosses this line, in milliseconds.
pub const ALIAS_EXPANSION_BUDGET: usize = 100_000;
/// How deep collections may nest (the parser stops at this depth with an error instead of
/// recursing into a stack overflow).
pub const MAX_NESTING_DEPTH: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
    /// A block collection.
    Block,
    /// A flow collection (`[...]`, `{...}`).
    Flow,
}

impl Style {
    pub fn is_quoted(self) -> bool {
        matches!(self, Style::SingleQuoted | Style::DoubleQuoted)
    }
}

/// A value with its place in the source.
#[derive(Debug, Clone)]
pub struct Node {
    pub value: Value,
    /// Byte range of the node's text (a quoted scalar includes its quotes).
    pub span: Range<usize>,
    pub style: Style,
    pub src: Arc<Source>,
    /// Set when this node was reached through an alias (`*name`): the anchor's id. Editing such
    /// a node edits the anchor's text, which every other alias of it shares.
    pub via_alias: Option<usize>,
    /// Why go-yaml (so Helm) refuses this scalar, when it does: a tag its text does not fit
    /// (`!!int abc`), invalid `!!binary` data. The value is then the text, as a string.
    pub refused: Option<Box<str>>,
}

#[derive(Debug, Clone)]
pub enum Value {
    Scalar(Scalar),
    Seq(Vec<Node>),
    Map(Vec<Entry>),
}

#[derive(Debug, Clone)]
pub struct Entry {
    /// The key as Helm sees it (the scalar's text; a non-scalar key is rendered as JSON).
    pub key: String,
    pub key_span: Range<usize>,
    pub key_style: Style,
    pub value: Node,
    /// The entry came from a merge key (`<<: *a`), so its text sits at the anchor.
    pub merged: bool,
    /// What the key is to go-yaml, which decides the string Helm turns it into.
    pub key_kind: KeyKind,
}

/// A mapping key as go-yaml types it. Helm (sigs.k8s.io/yaml) turns every key into a string:
/// `Typed` keys become the text of their value (`yes` → "true", `0x1F` → "31"), `Complex`
/// (mapping or list) keys are refused.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyKind {
    Str,
    Typed(Scalar),
    Complex,
}

impl Node {
    pub fn raw(&self) -> &str {
        &self.src.text[self.span.clone()]
    }

    pub fn as_map(&self) -> Option<&[Entry]> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    pub fn scalar(&self) -> Option<&Scalar> {
        match &self.value {
            Value::Scalar(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Scalar(Scalar::Str(s)) => Some(s),
            _ => None,
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|e| &e.value)
    }

    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.as_map()?.iter().find(|e| e.key == key)
    }

    /// Follow a JSON pointer (`/cgpu/policy`, `/items/0`).
    pub fn pointer(&self, pointer: &str) -> Option<&Node> {
        let mut node = self;
        for token in pointer.split('/').skip(1) {
            let token: std::borrow::Cow<str> = if token.contains('~') {
                token.replace("~1", "/").replace("~0", "~").into()
            } else {
                token.into()
            };
            node = match &node.value {
                Value::Map(_) => node.get(&token)?,
                Value::Seq(items) => items.get(token.parse::<usize>().ok()?)?,
                Value::Scalar(_) => return None,
            };
        }
        Some(node)
    }

    pub fn type_name(&self) -> &'static str {
        match &self.value {
            Value::Scalar(s) => s.type_name(),
            Value::Seq(_) => "list",
            Value::Map(_) => "mapping",
        }
    }

    /// The value as JSON (for schema validation and for `--format json` consumers).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Scalar(Scalar::Null) => J::Null,
            Value::Scalar(Scalar::Bool(b)) => J::Bool(*b),
            Value::Scalar(Scalar::Int(i)) => i64::try_from(*i)
                .map(J::from)
                .or_else(|_| u64::try_from(*i).map(J::from))
                .unwrap_or(J::Null),
            Value::Scalar(Scalar::Float(f)) => {
                serde_json::Number::from_f64(*f).map_or(J::Null, J::Number)
            }
            Value::Scalar(Scalar::Str(s)) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => J::Object(
                entries
                    .iter()
                    .map(|e| (e.key.clone(), e.value.to_json()))
                    .collect(),
            ),
        }
    }
}

/// A key that appeared twice in one mapping.
#[derive(Debug, Clone)]
pub struct Duplicate {
    pub key: String,
    /// JSON pointer of the mapping holding the key.
    pub map_pointer: String,
    pub first: Range<usize>,
    pub second: Range<usize>,
}

/// One `---` document of a file.
#[derive(Debug, Clone)]
pub struct Document {
    /// 1-based position in the file.
    pub index: usize,
    /// `None` for an empty or comment-only document.
    pub root: Option<Node>,
    pub duplicates: Vec<Duplicate>,
    /// How many times each anchor id is used by an alias or merge key.
    pub alias_uses: HashMap<usize, usize>,
    /// Byte range from the document's first event to its last.
    pub span: Range<usize>,
}

/// A problem that stops a document from being read.
#[derive(Debug, Clone)]
pub struct SyntaxError {
    pub message: String,
    pub offset: usize,
    /// 1-based document number in which it happened.
    pub document: usize,
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

/// Everything read from one file: the documents before any error, then the error.
#[derive(Debug)]
pub struct Parsed {
    pub documents: Vec<Document>,
    pub error: Option<SyntaxError>,
}

enum RawKind {
    Scalar(String, ScalarStyle, Option<String>),
    Seq(Vec<usize>),
    Map(Vec<(usize, usize)>),
    Alias(usize),
}

struct RawNode {
    kind: RawKind,
    span: Range<usize>,
    flow: bool,
}

/// Parse every document of a source.
pub fn parse(src: &Arc<Source>) -> Parsed {
    parse_with(src, None).expect("a full parse never gives up")
}

/// What [`parse_lean`] keeps and when it gives up.
pub struct Lean<'a> {
    /// The root key whose entry is kept (all others are read, checked and dropped).
    pub keep: &'a str,
    /// Root keys whose presence makes the lean reading give up (their readers need the rest).
    pub give_up_on: &'a [&'a str],
    /// Whether a dropped root entry may be dropped: called with a one-entry mapping holding it.
    pub droppable: &'a dyn Fn(&Node) -> bool,
}

/// Parse every document like [`parse`], but keep of each document's root mapping only the
/// entries named `lean.keep`, building and dropping every other root entry as soon as its value
/// ends, so that memory holds one root entry at a time instead of the whole tree. Every event is
/// still read (so every syntax error is found where [`parse`] finds it) and every duplicate key
/// is recorded as [`parse`] records it; documents whose root is not a mapping are built whole.
/// Gives up (`None`: read the file with [`parse`]) whenever the result could differ for a reader
/// that looks only at the kept entry: an alias anywhere (its anchor may have been dropped), a
/// merge key at the root, any error while building, a root mapping without `keep` or with a
/// `give_up_on` key, a dropped entry `droppable` refuses.
pub fn parse_lean(src: &Arc<Source>, lean: &Lean) -> Option<Parsed> {
    parse_with(src, Some(lean))
}

/// The state of the current document's root mapping while reading lean.
struct LeanRoot {
    /// Arena index of the root mapping.
    root: usize,
    /// A root entry whose value is still open: (key, value) arena indices.
    pair: Option<(usize, usize)>,
    out: Entries,
    seen: KeySpans,
    duplicates: Vec<Duplicate>,
    /// Where the last root entry's value ends (the end of a block root).
    last_end: usize,
    /// Whether some entry was read (a block root without one ends where it starts).
    any: bool,
}

fn parse_with(src: &Arc<Source>, lean: Option<&Lean>) -> Option<Parsed> {
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

    let mut documents = Vec::new();
    let mut raw: Vec<RawNode> = Vec::new();
    let mut anchors: HashMap<usize, usize> = HashMap::new();
    // Open collections: (arena index, pending key for maps)
    let mut stack: Vec<(usize, Option<usize>)> = Vec::new();
    let mut root: Option<usize> = None;
    let mut doc_start = 0usize;
    let mut doc_index = 0usize;
    let mut lean_root: Option<LeanRoot> = None;

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
                return Some(Parsed {
                    documents,
                    error: Some(SyntaxError {
                        message: e.info(),
                        offset,
                        document: doc_index.max(1),
                    }),
                });
            }
        };
        let range = byte(span.start)..byte(span.end);
        let new_node = match event {
            Event::StreamStart | Event::StreamEnd => continue,
            Event::DocumentStart(..) => {
                doc_index += 1;
                raw.clear();
                anchors.clear();
                stack.clear();
                root = None;
                lean_root = None;
                doc_start = range.start;
                continue;
            }
            Event::DocumentEnd => {
                if let Some(l) = lean_root.take() {
                    let mut doc = lean_document(src, &raw, l, lean?, doc_index)?;
                    doc.span = doc_start..range.end.max(doc_start);
                    documents.push(doc);
                    continue;
                }
                let built = build_document(src, &raw, &anchors, root, doc_index);
                match built {
                    Ok(mut doc) => {
                        doc.span = doc_start..range.end.max(doc_start);
                        documents.push(doc);
                    }
                    Err((message, offset)) => {
                        return Some(Parsed {
                            documents,
                            error: Some(SyntaxError {
                                message,
                                offset,
                                document: doc_index,
                            }),
                        });
                    }
                }
                continue;
            }
            Event::Alias(id) => {
                if lean.is_some() {
                    // Its anchor may sit in a root entry that was dropped.
                    return None;
                }
                let Some(&target) = anchors.get(&id) else {
                    return Some(Parsed {
                        documents,
                        error: Some(SyntaxError {
                            message: "alias to an unknown anchor".into(),
                            offset: range.start,
                            document: doc_index,
                        }),
                    });
                };
                raw.push(RawNode {
                    kind: RawKind::Alias(target),
                    span: range,
                    flow: false,
                });
                raw.len() - 1
            }
            Event::Scalar(value, style, anchor, tag) => {
                let tag = tag.map(|t| match t.suffix_in_namespace("tag:yaml.org,2002:") {
                    Some(s) => s.into_owned(),
                    None => format!("{}{}", t.handle(), t.suffix()),
                });
                raw.push(RawNode {
                    kind: RawKind::Scalar(value.into_owned(), style, tag),
                    span: range,
                    flow: false,
                });
                if anchor != 0 {
                    anchors.insert(anchor, raw.len() - 1);
                }
                raw.len() - 1
            }
            Event::SequenceStart(style, anchor, _) | Event::MappingStart(style, anchor, _) => {
                let is_map = matches!(event, Event::MappingStart(..));
                raw.push(RawNode {
                    kind: if is_map {
                        RawKind::Map(Vec::new())
                    } else {
                        RawKind::Seq(Vec::new())
                    },
                    span: range,
                    flow: style == granit_parser::StructureStyle::Flow,
                });
                let idx = raw.len() - 1;
                if anchor != 0 {
                    anchors.insert(anchor, idx);
                }
                // A root mapping is read lean; other roots (which hold no entry to keep) are built
                // as `parse` builds them.
                if lean.is_some() && stack.is_empty() && is_map {
                    lean_root = Some(LeanRoot {
                        root: idx,
                        pair: None,
                        out: Entries::with_capacity(1),
                        seen: KeySpans::default(),
                        duplicates: Vec::new(),
                        last_end: 0,
                        any: false,
                    });
                }
                attach_or_pair(&mut raw, &mut stack, &mut root, lean_root.as_mut(), idx);
                stack.push((idx, None));
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((idx, _)) = stack.pop() {
                    // A flow collection ends at its closing bracket; a block collection ends with
                    // its last child (its end event sits at the next token, often a line later).
                    let end = if raw[idx].flow {
                        range.end
                    } else {
                        match &lean_root {
                            Some(l) if l.root == idx => {
                                if l.any {
                                    l.last_end
                                } else {
                                    0
                                }
                            }
                            _ => last_child_end(&raw, idx),
                        }
                    };
                    raw[idx].span.end = end.max(raw[idx].span.start);
                    if let Some(l) = &mut lean_root
                        && stack.len() == 1
                        && l.pair.is_some_and(|(_, v)| v == idx)
                    {
                        lean_entry(src, &mut raw, l, lean?)?;
                    }
                }
                continue;
            }
            _ => continue,
        };
        attach_or_pair(
            &mut raw,
            &mut stack,
            &mut root,
            lean_root.as_mut(),
            new_node,
        );
        if let Some(l) = &mut lean_root
            && stack.len() == 1
            && l.pair.is_some_and(|(_, v)| v == new_node)
        {
            lean_entry(src, &mut raw, l, lean?)?;
        }
    }
    Some(Parsed {
        documents,
        error: None,
    })
}

/// [`attach`], except that a pair of the lean root mapping is held in `lean.pair` until its
/// value ends instead of joining the arena.
fn attach_or_pair(
    raw: &mut [RawNode],
    stack: &mut [(usize, Option<usize>)],
    root: &mut Option<usize>,
    lean: Option<&mut LeanRoot>,
    node: usize,
) {
    if let Some(l) = lean
        && let [(parent, pending)] = stack
        && *parent == l.root
    {
        match pending.take() {
            None => *pending = Some(node),
            Some(key) => l.pair = Some((key, node)),
        }
        return;
    }
    attach(raw, stack, root, node);
}

/// A root entry of a lean document has ended: build it as [`Builder::node`] builds a mapping's
/// entry, record its duplicate, keep it or drop it, and free its part of the arena.
fn lean_entry(
    src: &Arc<Source>,
    raw: &mut Vec<RawNode>,
    l: &mut LeanRoot,
    lean: &Lean,
) -> Option<()> {
    let (k, v) = l.pair.take()?;
    l.last_end = raw[v].span.end;
    l.any = true;
    let mut b = Builder {
        src,
        raw: raw.as_slice(),
        anchor_of: HashMap::new(),
        budget: ALIAS_EXPANSION_BUDGET,
        in_progress: vec![l.root],
        duplicates: std::mem::take(&mut l.duplicates),
        alias_uses: HashMap::new(),
        path: Vec::new(),
    };
    let entry = b.root_entry(k, v, &mut l.seen, lean.give_up_on);
    l.duplicates = b.duplicates;
    let entry = entry?;
    raw.truncate(l.root + 1);
    if entry.key == lean.keep {
        l.out.upsert(entry);
        return Some(());
    }
    let probe = Node {
        value: Value::Map(vec![entry]),
        span: 0..0,
        style: Style::Block,
        src: src.clone(),
        via_alias: None,
        refused: None,
    };
    (lean.droppable)(&probe).then_some(())
}

/// The document a lean root mapping makes: only the kept entries.
fn lean_document(
    src: &Arc<Source>,
    raw: &[RawNode],
    l: LeanRoot,
    lean: &Lean,
    index: usize,
) -> Option<Document> {
    if l.pair.is_some() || !l.out.list.iter().any(|e| e.key == lean.keep) {
        return None;
    }
    let r = &raw[l.root];
    Some(Document {
        index,
        root: Some(Node {
            value: Value::Map(l.out.list),
            span: r.span.clone(),
            style: if r.flow { Style::Flow } else { Style::Block },
            src: src.clone(),
            via_alias: None,
            refused: None,
        }),
        duplicates: l.duplicates,
        alias_uses: HashMap::new(),
        span: 0..0,
    })
}

fn last_child_end(raw: &[RawNode], idx: usize) -> usize {
    match &raw[idx].kind {
        RawKind::Seq(items) => items.last().map_or(0, |&i| raw[i].span.end),
        RawKind::Map(entries) => entries.last().map_or(0, |&(_, v)| raw[v].span.end),
        _ => 0,
    }
}

fn attach(
    raw: &mut [RawNode],
    stack: &mut [(usize, Option<usize>)],
    root: &mut Option<usize>,
    node: usize,
) {
    let Some((parent, pending)) = stack.last_mut() else {
        *root = Some(node);
        return;
    };
    match &mut raw[*parent].kind {
        RawKind::Seq(items) => items.push(node),
        RawKind::Map(entries) => match pending.take() {
            None => *pending = Some(node),
            Some(key) => entries.push((key, node)),
        },
        _ => {}
    }
}

fn char_to_byte(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(b, _)| b)
}

struct Builder<'a> {
    src: &'a Arc<Source>,
    raw: &'a [RawNode],
    anchor_of: HashMap<usize, usize>,
    budget: usize,
    in_progress: Vec<usize>,
    duplicates: Vec<Duplicate>,
    alias_uses: HashMap<usize, usize>,
    /// The JSON pointer of the node being built, as segments; joined only when a duplicate key
    /// is recorded (building a pointer string per node was the largest allocation cost).
    path: Vec<Seg>,
}

#[derive(Clone)]
enum Seg {
    Key(String),
    Index(usize),
}

fn build_document(
    src: &Arc<Source>,
    raw: &[RawNode],
    anchors: &HashMap<usize, usize>,
    root: Option<usize>,
    index: usize,
) -> Result<Document, (String, usize)> {
    let mut b = Builder {
        src,
        raw,
        anchor_of: anchors.iter().map(|(&id, &node)| (node, id)).collect(),
        budget: ALIAS_EXPANSION_BUDGET,
        in_progress: Vec::new(),
        duplicates: Vec::new(),
        alias_uses: HashMap::new(),
        path: Vec::new(),
    };
    let root = match root {
        Some(r) => Some(b.node(r, None, 0)?),
        None => None,
    };
    // A document holding only an empty plain scalar is an empty document.
    let root =
        root.filter(|n| !(matches!(n.value, Value::Scalar(Scalar::Null)) && n.span.is_empty()));
    Ok(Document {
        index,
        root,
        duplicates: b.duplicates,
        alias_uses: b.alias_uses,
        span: 0..0,
    })
}

impl Builder<'_> {
    fn pointer(&self) -> String {
        let mut out = String::new();
        for seg in &self.path {
            out.push('/');
            match seg {
                Seg::Key(k) => out.push_str(&escape_pointer(k)),
                Seg::Index(i) => out.push_str(&i.to_string()),
            }
        }
        out
    }

    fn node(
        &mut self,
        idx: usize,
        via_alias: Option<usize>,
        depth: usize,
    ) -> Result<Node, (String, usize)> {
        let r = &self.raw[idx];
        if depth > MAX_NESTING_DEPTH * 4 {
            return Err((
                format!(
                    "nesting deeper than {} levels through aliases",
                    MAX_NESTING_DEPTH * 4
                ),
                r.span.start,
            ));
        }
        if via_alias.is_some() {
            if self.budget == 0 {
                return Err((
                    format!(
                        "alias expansion exceeds the budget of {ALIAS_EXPANSION_BUDGET} nodes \
                         (a \"billion laughs\" document?); refusing to expand it"
                    ),
                    r.span.start,
                ));
            }
            self.budget -= 1;
        }
        let src = self.src.clone();
        match &r.kind {
            RawKind::Alias(target) => {
                let target = *target;
                if self.in_progress.contains(&target) {
                    return Err((
                        "recursive alias: it refers to a node that contains it".into(),
                        r.span.start,
                    ));
                }
                let id = self.anchor_of.get(&target).copied().unwrap_or(0);
                *self.alias_uses.entry(id).or_default() += 1;
                self.node(target, via_alias.or(Some(id)), depth + 1)
            }
            RawKind::Scalar(value, style, tag) => {
                let st = match style {
                    ScalarStyle::Plain => Style::Plain,
                    ScalarStyle::SingleQuoted => Style::SingleQuoted,
                    ScalarStyle::DoubleQuoted => Style::DoubleQuoted,
                    ScalarStyle::Literal => Style::Literal,
                    _ => Style::Folded,
                };
                let (scalar, refused) =
                    match resolve::go_yaml(value, st == Style::Plain, tag.as_deref()) {
                        Ok(s) => (s, None),
                        Err(m) => (Scalar::Str(value.clone()), Some(m.into_boxed_str())),
                    };
                Ok(Node {
                    value: Value::Scalar(scalar),
                    span: r.span.clone(),
                    style: st,
                    src,
                    via_alias,
                    refused,
                })
            }
            RawKind::Seq(items) => {
                self.in_progress.push(idx);
                let mut out = Vec::with_capacity(items.len());
                for (i, &item) in items.iter().enumerate() {
                    self.path.push(Seg::Index(i));
                    let item = self.node(item, via_alias, depth + 1);
                    self.path.pop();
                    out.push(item?);
                }
                self.in_progress.pop();
                Ok(Node {
                    value: Value::Seq(out),
                    span: r.span.clone(),
                    style: if r.flow { Style::Flow } else { Style::Block },
                    src,
                    via_alias,
                    refused: None,
                })
            }
            RawKind::Map(entries) => {
                self.in_progress.push(idx);
                let mut out = Entries::with_capacity(entries.len());
                // Where each explicit key was first written, for duplicate reports.
                let mut seen = KeySpans::default();
                for &(k, v) in entries {
                    let key_node = self.node(k, via_alias, depth + 1)?;
                    let key = key_text(&key_node);
                    if self.is_merge_key(k, &key, &key_node) {
                        self.merge(v, via_alias, depth, &mut out)?;
                        continue;
                    }
                    let entry = self.entry(key_node, key, v, &mut seen, via_alias, depth + 1)?;
                    out.upsert(entry);
                }
                self.in_progress.pop();
                Ok(Node {
                    value: Value::Map(out.list),
                    span: r.span.clone(),
                    style: if r.flow { Style::Flow } else { Style::Block },
                    src,
                    via_alias,
                    refused: None,
                })
            }
        }
    }

    /// One entry of a document's root mapping, built as the mapping branch of [`Builder::node`]
    /// builds it (key, duplicate record, value), for [`parse_lean`]; `None` where that reading
    /// gives up (a merge key, a `give_up_on` key, an error).
    fn root_entry(
        &mut self,
        k: usize,
        v: usize,
        seen: &mut KeySpans,
        give_up_on: &[&str],
    ) -> Option<Entry> {
        let key_node = self.node(k, None, 1).ok()?;
        let key = key_text(&key_node);
        if self.is_merge_key(k, &key, &key_node) || give_up_on.contains(&key.as_str()) {
            return None;
        }
        self.entry(key_node, key, v, seen, None, 1).ok()
    }

    /// go-yaml's isMerge: a plain `<<` without a tag, or any `!!merge <<`.
    fn is_merge_key(&self, k: usize, key: &str, key_node: &Node) -> bool {
        let key_tag = match &self.raw[k].kind {
            RawKind::Scalar(_, _, t) => t.as_deref(),
            _ => None,
        };
        key == "<<"
            && ((key_node.style == Style::Plain && key_tag.is_none()) || key_tag == Some("merge"))
    }

    /// A mapping entry from its built key and its raw value `v`: the duplicate record (a key
    /// already in `seen`), then the value built under the key's pointer at `depth`.
    fn entry(
        &mut self,
        key_node: Node,
        key: String,
        v: usize,
        seen: &mut KeySpans,
        via_alias: Option<usize>,
        depth: usize,
    ) -> Result<Entry, (String, usize)> {
        if let Some(first) = seen.get(&key) {
            self.duplicates.push(Duplicate {
                key: key.clone(),
                map_pointer: self.pointer(),
                first: first.clone(),
                second: key_node.span.clone(),
            });
        }
        seen.insert(key.clone(), key_node.span.clone());
        self.path.push(Seg::Key(key.clone()));
        let value = self.node(v, via_alias, depth);
        self.path.pop();
        let value = value?;
        let key_kind = match &key_node.value {
            Value::Scalar(Scalar::Str(_)) => KeyKind::Str,
            Value::Scalar(s) => KeyKind::Typed(s.clone()),
            _ => KeyKind::Complex,
        };
        Ok(Entry {
            key,
            key_span: key_node.span,
            key_style: key_node.style,
            value,
            merged: false,
            key_kind,
        })
    }

    /// `<<: *a` or `<<: [*a, *b]`. go-yaml v2 applies the merged mappings at the point where the
    /// merge key stands; in a list it applies them last to first, so the first listed wins.
    fn merge(
        &mut self,
        v: usize,
        via_alias: Option<usize>,
        depth: usize,
        out: &mut Entries,
    ) -> Result<(), (String, usize)> {
        let value = self.node(v, via_alias, depth + 1)?;
        let maps: Vec<Node> = match value.value {
            Value::Map(_) => vec![value],
            Value::Seq(items) => items.into_iter().rev().collect(),
            _ => {
                return Err((
                    "a merge key (<<) must refer to a mapping or a list of mappings".into(),
                    value.span.start,
                ));
            }
        };
        for m in maps {
            let Value::Map(entries) = m.value else {
                return Err((
                    "a merge key (<<) list may only hold mappings".into(),
                    m.span.start,
                ));
            };
            for mut e in entries {
                e.merged = true;
                out.upsert(e);
            }
        }
        Ok(())
    }
}

/// A mapping's entries in order, with a key index once it is long, so that building a mapping of
/// n keys is O(n) rather than O(n²) (a 2 MB file of 40,000 keys took 15 s with a linear search),
/// while a short mapping (nearly all of them) is searched without hashing its keys.
struct Entries {
    list: Vec<Entry>,
    index: Option<HashMap<String, usize>>,
}

/// Mappings longer than this get a hash index ([`Entries`], [`KeySpans`]).
const LINEAR_KEYS: usize = 16;

impl Entries {
    fn with_capacity(n: usize) -> Self {
        Entries {
            list: Vec::with_capacity(n),
            index: None,
        }
    }

    /// Insert, or replace the entry with the same key in place (the last one wins, as in Helm).
    fn upsert(&mut self, entry: Entry) {
        let at = match &self.index {
            Some(index) => index.get(&entry.key).copied(),
            None => self.list.iter().position(|e| e.key == entry.key),
        };
        match at {
            Some(i) => self.list[i] = entry,
            None => {
                if let Some(index) = &mut self.index {
                    index.insert(entry.key.clone(), self.list.len());
                }
                self.list.push(entry);
                if self.index.is_none() && self.list.len() > LINEAR_KEYS {
                    let index = self.list.iter().enumerate();
                    self.index = Some(index.map(|(i, e)| (e.key.clone(), i)).collect());
                }
            }
        }
    }
}

/// Where each explicit key of a mapping was last written: a list while short, then a hash map.
#[derive(Default)]
struct KeySpans {
    list: Vec<(String, Range<usize>)>,
    index: Option<HashMap<String, Range<usize>>>,
}

impl KeySpans {
    fn get(&self, key: &str) -> Option<&Range<usize>> {
        match &self.index {
            Some(index) => index.get(key),
            None => self.list.iter().find(|(k, _)| k == key).map(|(_, r)| r),
        }
    }

    fn insert(&mut self, key: String, span: Range<usize>) {
        if let Some(index) = &mut self.index {
            index.insert(key, span);
            return;
        }
        match self.list.iter_mut().find(|(k, _)| *k == key) {
            Some((_, r)) => *r = span,
            None => self.list.push((key, span)),
        }
        if self.list.len() > LINEAR_KEYS {
            self.index = Some(std::mem::take(&mut self.list).into_iter().collect());
        }
    }
}

fn key_text(node: &Node) -> String {
    match &node.value {
        Value::Scalar(Scalar::Str(s)) => s.clone(),
        Value::Scalar(Scalar::Null) if node.style == Style::Plain => {
            let raw = node.raw();
            if raw.is_empty() {
                "null".into()
            } else {
                raw.to_string()
            }
        }
        // go-yaml stringifies non-string keys when Helm converts values to JSON; the source text
        // is what a person wrote and what label validation must look at.
        Value::Scalar(_) => node.raw().to_string(),
        _ => node.to_json().to_string(),
    }
}

pub fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The JSON pointer of `key` under `path`.
pub fn child(path: &str, key: &str) -> String {
    format!("{path}/{}", escape_pointer(key))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn merge_keys_single_and_list() {
        let p = doc(
            "a: &a {x: 1, y: 1}\nb: &b {y: 2, z: 2}\nc:\n  <<: [*a, *b]\n  w: 0\nd:\n  <<: *b\n  z: 3\n",
        );
        let root = p.documents[0].root.as_ref().unwrap();
        let c = root.get("c").unwrap();
        assert_eq!(c.to_json(), serde_json::json!({"x":1,"y":1,"z":2,"w":0}));
        let d = root.get("d").unwrap();
        assert_eq!(d.to_json(), serde_json::json!({"y":2,"z":3}));
        assert!(c.entry("x").unwrap().merged);
    }

    #[test]
    fn duplicate_keys_keep_the_last_and_record_both() {
        let p = doc("m:\n  k: 1\n  j: 0\n  k: 3\n");
        let d = &p.documents[0];
        assert_eq!(
            d.root.as_ref().unwrap().pointer("/m/k").unwrap().to_json(),
            3
        );
        assert_eq!(d.duplicates.len(), 1);
        assert_eq!(d.duplicates[0].key, "k");
        assert_eq!(d.duplicates[0].map_pointer, "/m");
    }

    #[test]
    fn billion_laughs_is_refused_quickly() {
        let mut s = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for i in 1..10 {
            let prev = format!("*a{}", i - 1);
            s.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
        }
        let start = std::time::Instant::now();
        let p = doc(&s);
        assert!(p.error.unwrap().message.contains("alias expansion"));
        assert!(start.elapsed().as_secs() < 5);
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

    const LEAN: Lean = Lean {
        keep: "cgpu",
        give_up_on: &["apiVersion", "kind"],
        droppable: &crate::helm::view_unchanged,
    };

    fn lean(text: &str) -> Option<Parsed> {
        parse_lean(&Source::new("t.yaml", text.to_string()), &LEAN)
    }

    #[test]
    fn lean_keeps_the_cgpu_entry_and_every_duplicate_as_the_full_parse_does() {
        let text = "a:\n  x: 1\n  x: 2\ncgpu:\n  policy: 2\n  tag: v1\n  policy: 3\nb: [1, 2]\na: 3\ncgpu: {policy: 4, policy: 5}\n---\nhello\n---\n{cgpu: {x: 1}, z: 2, z: 3}\n";
        let full = doc(text);
        let lean = lean(text).expect("nothing here makes the lean reading give up");
        assert!(full.error.is_none() && lean.error.is_none());
        assert_eq!(lean.documents.len(), 3);
        for (f, l) in full.documents.iter().zip(&lean.documents) {
            assert_eq!(f.index, l.index);
            assert_eq!(f.span, l.span);
            let dups = |d: &Document| {
                d.duplicates
                    .iter()
                    .map(|d| {
                        (
                            d.key.clone(),
                            d.map_pointer.clone(),
                            d.first.clone(),
                            d.second.clone(),
                        )
                    })
                    .collect::<Vec<_>>()
            };
            assert_eq!(dups(f), dups(l));
            let (fr, lr) = (f.root.as_ref().unwrap(), l.root.as_ref().unwrap());
            assert_eq!((fr.span.clone(), fr.style), (lr.span.clone(), lr.style));
            match fr.get("cgpu") {
                Some(c) => {
                    let lc = lr.get("cgpu").unwrap();
                    assert_eq!(
                        (c.to_json(), c.span.clone()),
                        (lc.to_json(), lc.span.clone())
                    );
                    assert_eq!(lr.as_map().unwrap().len(), 1, "only cgpu is kept");
                }
                None => assert_eq!(fr.to_json(), lr.to_json()),
            }
        }
        // Six duplicates over the three documents, in the full parse's order.
        assert_eq!(
            lean.documents
                .iter()
                .map(|d| d.duplicates.len())
                .sum::<usize>(),
            6
        );
    }

    #[test]
    fn lean_gives_up_where_its_reading_could_differ() {
        for text in [
            "a: &x 1\ncgpu: {}\nb: *x\n",
            "<<: {a: 1}\ncgpu: {}\n",
            "apiVersion: v1\ncgpu: {}\n",
            "cgpu: {}\nkind: List\n",
            "a: 1\n",
            "cgpu: {}\n---\na: 1\n",
            "a: .nan\ncgpu: {}\n",
            "c: {y: 1, y: 2}\ncgpu: {}\n",
            "1: x\ncgpu: {}\n",
            "a: {<<: 1}\ncgpu: {}\n",
        ] {
            assert!(lean(text).is_none(), "{text:?}");
        }
    }

    #[test]
    fn lean_reports_the_syntax_error_the_full_parse_reports() {
        let text = "cgpu: {}\nz: 1\n---\ncgpu: {}\na: [\n";
        let (full, lean) = (doc(text), lean(text).unwrap());
        let (f, l) = (full.error.unwrap(), lean.error.unwrap());
        assert_eq!(
            (f.message, f.offset, f.document),
            (l.message, l.offset, l.document)
        );
        assert_eq!(full.documents.len(), lean.documents.len());
    }

    #[test]
    fn tags_override_resolution() {
        let p = doc("a: !!str 1\nb: !!int \"2\"\n");
        let root = p.documents[0].root.as_ref().unwrap();
        assert_eq!(root.get("a").unwrap().to_json(), "1");
        assert_eq!(root.get("b").unwrap().to_json(), 2);
    }
}
