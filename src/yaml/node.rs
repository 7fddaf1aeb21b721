//! The YAML model every reader above sees: [`Node`]s with their spans, styles and Helm-typed
//! values, a file's [`Document`]s, the [`Duplicate`] keys and the [`SyntaxError`] that ended a
//! file, and the JSON pointers that name a node. It knows no parser: `events.rs` and `build.rs`
//! make these values.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use super::resolve::Scalar;
use super::source::Source;

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
    /// For a scalar reached through an alias: the alias's own text (`*a`), where a finding on
    /// the value is placed (the value is the anchor's, the place is where it is used).
    pub alias_at: Option<Range<usize>>,
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
    /// A node with no text of its own (an empty map Helm starts from, a probe): an empty span
    /// at the start of `src`, block style, not reached through an alias.
    pub fn synthetic(value: Value, src: &Arc<Source>) -> Node {
        Node {
            value,
            span: 0..0,
            style: Style::Block,
            src: src.clone(),
            via_alias: None,
            alias_at: None,
            refused: None,
        }
    }

    /// This node's place (span, style, source, alias) holding `value` instead, accepted as it
    /// stands (`refused` cleared).
    pub fn with_value(&self, value: Value) -> Node {
        Node {
            value,
            span: self.span.clone(),
            style: self.style,
            src: self.src.clone(),
            via_alias: self.via_alias,
            alias_at: self.alias_at.clone(),
            refused: None,
        }
    }

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

/// Takes the first document of a file call by call instead of a tree ([`super::visit`]): each
/// scalar typed as [`super::parse`] types it (a key too: the visitor tells keys from values), and
/// each collection's start and end. `Break`: give up (the caller then reads the file whole).
pub trait Visitor {
    fn scalar(&mut self, node: Node) -> std::ops::ControlFlow<()>;
    fn start(&mut self, is_map: bool) -> std::ops::ControlFlow<()>;
    fn end(&mut self) -> std::ops::ControlFlow<()>;
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

#[cfg(test)]
impl Document {
    /// Each duplicate key as (key, mapping's pointer, first place, second place), for tests that
    /// compare two readings.
    pub(crate) fn duplicate_keys(&self) -> Vec<(String, String, Range<usize>, Range<usize>)> {
        self.duplicates
            .iter()
            .map(|d| {
                (
                    d.key.clone(),
                    d.map_pointer.clone(),
                    d.first.clone(),
                    d.second.clone(),
                )
            })
            .collect()
    }
}

/// A problem that stops a document from being read.
#[derive(Debug, Clone)]
pub struct SyntaxError {
    pub message: String,
    pub offset: usize,
    /// 1-based document number in which it happened.
    pub document: usize,
    /// The file was refused by a limit of cgpu-lint's own (the node budget), not by go-yaml's
    /// reading: Helm may well read it.
    pub own_limit: bool,
}

/// Everything read from one file: the documents before any error, then the error.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub documents: Vec<Document>,
    pub error: Option<SyntaxError>,
}

#[cfg(test)]
impl Parsed {
    /// The node at `pointer` in the first document (the test's fixture must have it).
    pub(crate) fn first_at(&self, pointer: &str) -> &Node {
        self.documents[0]
            .root
            .as_ref()
            .unwrap()
            .pointer(pointer)
            .unwrap()
    }
}

/// A key as one JSON pointer token (`~` → `~0`, `/` → `~1`).
pub fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The JSON pointer of `key` under `path`.
pub fn child(path: &str, key: &str) -> String {
    format!("{path}/{}", escape_pointer(key))
}
