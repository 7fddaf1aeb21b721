//! The raw arena → [`Node`]s with Helm's semantics: plain scalars typed as go-yaml v2 types them
//! (`resolve.rs`), tags applied, merge keys applied where they stand, aliases expanded under a
//! budget, duplicate keys recorded (the last one wins, as in Helm), each node's JSON pointer
//! kept for those records. It reads only the arena (`raw.rs`), never the parser.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use super::node::{Document, Duplicate, Entry, KeyKind, Node, Style, Value, escape_pointer};
use super::raw_node::{MAX_NESTING_DEPTH, RawKind, RawNode};
use super::resolve::{self, Scalar};
use super::source::Source;

/// How many nodes alias expansion may create in one document. A real values file or manifest
/// needs a few hundred; a "billion laughs" file needs billions and is refused as soon as it
/// crosses this line, in milliseconds.
pub const ALIAS_EXPANSION_BUDGET: usize = 100_000;

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

/// One step of a JSON pointer: a mapping key or a list index.
#[derive(Clone)]
pub(super) enum Seg {
    Key(String),
    Index(usize),
}

/// A finished document's arena (`root` its root node, `anchors` anchor id → node) as a
/// [`Document`], or the message and byte offset of what Helm would refuse in it.
pub(super) fn build_document(
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

/// The node at arena index `idx` built as [`build_document`] builds it, under the JSON pointer
/// `path` (for the duplicate keys recorded in `duplicates`), for the lean reading (no aliases).
pub(super) fn build_node(
    src: &Arc<Source>,
    raw: &[RawNode],
    idx: usize,
    path: &mut Vec<Seg>,
    duplicates: &mut Vec<Duplicate>,
) -> Result<Node, (String, usize)> {
    let mut b = Builder {
        src,
        raw,
        anchor_of: HashMap::new(),
        budget: ALIAS_EXPANSION_BUDGET,
        in_progress: Vec::new(),
        duplicates: std::mem::take(duplicates),
        alias_uses: HashMap::new(),
        path: std::mem::take(path),
    };
    let depth = b.path.len();
    let node = b.node(idx, None, depth);
    *duplicates = b.duplicates;
    *path = b.path;
    node
}

/// A mapping key at arena index `k` as the mapping branch of [`Builder::node`] reads it: its
/// node, its text as Helm sees it, and whether it is a merge key (`<<`).
pub(super) fn build_key(
    src: &Arc<Source>,
    raw: &[RawNode],
    k: usize,
) -> Result<(Node, String, bool), (String, usize)> {
    let mut no_path = Vec::new();
    let key_node = build_node(src, raw, k, &mut no_path, &mut Vec::new())?;
    let key = key_text(&key_node);
    let b = Builder {
        src,
        raw,
        anchor_of: HashMap::new(),
        budget: 0,
        in_progress: Vec::new(),
        duplicates: Vec::new(),
        alias_uses: HashMap::new(),
        path: Vec::new(),
    };
    let merge = b.is_merge_key(k, &key, &key_node);
    Ok((key_node, key, merge))
}

/// A scalar's node: its text typed as go-yaml types it with its style and tag, or kept as a
/// string with the reason Helm refuses it.
pub(super) fn scalar_node(
    src: &Arc<Source>,
    value: &str,
    style: Style,
    tag: Option<&str>,
    span: Range<usize>,
) -> Node {
    let (scalar, refused) = match resolve::go_yaml(value, style == Style::Plain, tag) {
        Ok(s) => (s, None),
        Err(m) => (Scalar::Str(value.to_string()), Some(m.into_boxed_str())),
    };
    Node {
        value: Value::Scalar(scalar),
        span,
        style,
        src: src.clone(),
        via_alias: None,
        alias_at: None,
        refused,
    }
}

/// go-yaml's isMerge for a key's text, style and tag: a plain `<<` without a tag, or any
/// `!!merge <<`.
pub(super) fn is_merge(key: &str, style: Style, tag: Option<&str>) -> bool {
    key == "<<" && ((style == Style::Plain && tag.is_none()) || tag == Some("merge"))
}

/// The JSON pointer a path names.
pub(super) fn pointer(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        out.push('/');
        match seg {
            Seg::Key(k) => out.push_str(&escape_pointer(k)),
            Seg::Index(i) => out.push_str(&i.to_string()),
        }
    }
    out
}

/// The entry a built key and value make (not from a merge key).
pub(super) fn entry_of(key: String, key_node: Node, value: Node) -> Entry {
    let key_kind = match &key_node.value {
        Value::Scalar(Scalar::Str(_)) => KeyKind::Str,
        Value::Scalar(s) => KeyKind::Typed(s.clone()),
        _ => KeyKind::Complex,
    };
    Entry {
        key,
        key_span: key_node.span,
        key_style: key_node.style,
        value,
        merged: false,
        key_kind,
    }
}

/// A sequence's or mapping's node: `value` its children, its span and flow style the arena's.
fn collection(value: Value, r: &RawNode, src: Arc<Source>, via_alias: Option<usize>) -> Node {
    Node {
        value,
        span: r.span.clone(),
        style: if r.flow { Style::Flow } else { Style::Block },
        src,
        via_alias,
        alias_at: None,
        refused: None,
    }
}

impl Builder<'_> {
    fn pointer(&self) -> String {
        pointer(&self.path)
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
                let mut node = self.node(target, via_alias.or(Some(id)), depth + 1)?;
                // A scalar is judged where the alias uses it (a collection's entries keep the
                // anchor's places, which name their keys).
                if via_alias.is_none() && matches!(node.value, Value::Scalar(_)) {
                    node.alias_at = Some(r.span.clone());
                }
                Ok(node)
            }
            RawKind::Scalar(value, st, tag) => {
                let mut node = scalar_node(&src, value, *st, tag.as_deref(), r.span.clone());
                node.via_alias = via_alias;
                Ok(node)
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
                Ok(collection(Value::Seq(out), r, src, via_alias))
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
                Ok(collection(Value::Map(out.list), r, src, via_alias))
            }
        }
    }

    /// go-yaml's isMerge: a plain `<<` without a tag, or any `!!merge <<`.
    fn is_merge_key(&self, k: usize, key: &str, key_node: &Node) -> bool {
        let key_tag = match &self.raw[k].kind {
            RawKind::Scalar(_, _, t) => t.as_deref(),
            _ => None,
        };
        is_merge(key, key_node.style, key_tag)
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
        Ok(entry_of(key, key_node, value?))
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
        // go-yaml's merge: an alias must lead to a mapping (a list of mappings behind an alias is
        // refused, though the same list written in place is merged).
        if let RawKind::Alias(target) = self.raw[v].kind
            && !matches!(self.raw[target].kind, RawKind::Map(_))
        {
            return Err((
                "a merge key (<<) alias must refer to a mapping (go-yaml, so Helm: map merge requires map or sequence of maps as the value)".into(),
                self.raw[v].span.start,
            ));
        }
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
pub(super) struct Entries {
    pub(super) list: Vec<Entry>,
    index: Option<HashMap<String, usize>>,
}

/// Mappings longer than this get a hash index ([`Entries`], [`KeySpans`]).
const LINEAR_KEYS: usize = 16;

impl Entries {
    pub(super) fn with_capacity(n: usize) -> Self {
        Entries {
            list: Vec::with_capacity(n),
            index: None,
        }
    }

    /// The entry with this key.
    pub(super) fn get(&self, key: &str) -> Option<&Entry> {
        match &self.index {
            Some(index) => index.get(key).map(|&i| &self.list[i]),
            None => self.list.iter().find(|e| e.key == key),
        }
    }

    /// Insert, or replace the entry with the same key in place (the last one wins, as in Helm).
    pub(super) fn upsert(&mut self, entry: Entry) {
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
pub(super) struct KeySpans {
    list: Vec<(String, Range<usize>)>,
    index: Option<HashMap<String, Range<usize>>>,
}

impl KeySpans {
    pub(super) fn get(&self, key: &str) -> Option<&Range<usize>> {
        match &self.index {
            Some(index) => index.get(key),
            None => self.list.iter().find(|(k, _)| k == key).map(|(_, r)| r),
        }
    }

    pub(super) fn insert(&mut self, key: String, span: Range<usize>) {
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

pub(super) fn key_text(node: &Node) -> String {
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

#[cfg(test)]
mod tests {
    use super::super::node::Parsed;
    use super::super::parse;
    use super::super::source::Source;

    fn doc(text: &str) -> Parsed {
        parse(&Source::new("t.yaml", text.to_string()))
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

    /// Real Helm 3.18 refuses the alias to a list ("map merge requires map or sequence of maps
    /// as the value") and merges the same list written in place.
    #[test]
    fn a_merge_alias_must_lead_to_a_mapping() {
        let p = doc("l: &l [{a: 1}, {b: 2}]\nm:\n  <<: *l\n");
        assert!(p.error.unwrap().message.contains("map merge requires map"));
        let p = doc("m:\n  <<: [{a: 1}, {b: 2}]\n");
        assert!(p.error.is_none());
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
    fn tags_override_resolution() {
        let p = doc("a: !!str 1\nb: !!int \"2\"\n");
        let root = p.documents[0].root.as_ref().unwrap();
        assert_eq!(root.get("a").unwrap().to_json(), "1");
        assert_eq!(root.get("b").unwrap().to_json(), 2);
    }
}
