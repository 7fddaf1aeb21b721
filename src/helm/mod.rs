//! Values as Helm hands them to templates: how Helm 3 and Helm 4 read a values file, layer
//! `-f` files, apply `--set`, `--set-string` and `--set-json`, and coalesce the result with the
//! chart's defaults. Everything here follows Helm's own code:
//!
//! - reading a file: `sigs.k8s.io/yaml` — go-yaml v2 decodes the first document into
//!   `interface{}` (yaml/build.rs and resolve.rs type the scalars the same way), then the object is turned
//!   into JSON (`convertToJSONableObject`: keys become strings, NaN/±Inf are refused by
//!   `json.Marshal`) and read back into a `map[string]interface{}` (numbers become float64);
//!   Helm 3.18 (`pkg/cli/values/options.go`) reads only the first document of a file; Helm 4.2
//!   (`pkg/chart/v2/loader.LoadValues`) splits the file on `---` lines
//!   (`k8s.io/apimachinery/pkg/util/yaml.YAMLReader`) and merges every document;
//! - layering: every `-f` file merged in order (`MergeMaps`: the later file wins, mappings merge
//!   key by key, a null is kept), then every `--set-json`, `--set`, `--set-string`
//!   (`pkg/strvals/parser.go`, ported in [`strvals`]);
//! - chart defaults: `pkg/chartutil/coalesce.go` `coalesceValues`: a user null deletes a key the
//!   chart defines and stays for a key it does not; a user scalar is never replaced by a chart
//!   table.
//!
//! The tree stays a [`Node`] tree, so every leaf still knows the file and span it came from
//! (`values --origins`, and `check --stack` findings at the right line).

pub mod json;
mod keys;
pub mod lean;
pub mod place;
pub mod stream;
pub mod strvals;

use std::sync::Arc;

use crate::yaml::{self, Entry, KeyKind, Node, Scalar, Source, Value};

/// Which Helm reads the values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Version {
    Three,
    Four,
}

impl Version {
    pub const BOTH: [Version; 2] = [Version::Three, Version::Four];

    pub fn from_number(n: u8) -> Option<Version> {
        match n {
            3 => Some(Version::Three),
            4 => Some(Version::Four),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Version::Three => "Helm 3",
            Version::Four => "Helm 4",
        }
    }
}

/// Helm refuses the values: where and why.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub src: Arc<Source>,
    pub offset: usize,
    pub message: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lc = self.src.line_col(self.offset);
        write!(
            f,
            "{}:{}:{}: {}",
            self.src.name, lc.line, lc.column, self.message
        )
    }
}

fn refuse(src: &Arc<Source>, offset: usize, message: impl Into<String>) -> Refusal {
    Refusal {
        src: src.clone(),
        offset,
        message: message.into(),
    }
}

/// An empty mapping belonging to `src` (the start of a layering, an empty values file).
pub fn empty_map(src: &Arc<Source>) -> Node {
    Node::synthetic(Value::Map(Vec::new()), src)
}

/// One values file as the given Helm reads it: the mapping (empty for an empty file), or why
/// Helm refuses it.
pub fn read_file(src: &Arc<Source>, version: Version) -> Result<Node, Refusal> {
    if let Some(bad) = &src.invalid {
        return Err(refuse(src, bad.offset, bad.message.clone()));
    }
    match version {
        Version::Three => read_document(src),
        Version::Four => {
            let mut out = empty_map(src);
            for chunk in split_documents(src)? {
                let doc = read_document(&chunk)?;
                merge_maps(&mut out, doc);
            }
            Ok(out)
        }
    }
}

/// The first document of `src` read by sigs.k8s.io/yaml into a `map[string]interface{}`.
fn read_document(src: &Arc<Source>) -> Result<Node, Refusal> {
    let parsed = yaml::parse(src);
    let first = parsed.documents.into_iter().next();
    if let Some(err) = parsed.error
        && (first.is_none() || err.document <= 1)
    {
        return Err(refuse(src, err.offset, err.message));
    }
    root_mapping(src, first.and_then(|d| d.root))
}

/// A document's root (`None`: an empty document) as the mapping Helm reads from it, or why
/// Helm refuses it.
fn root_mapping(src: &Arc<Source>, root: Option<Node>) -> Result<Node, Refusal> {
    let Some(root) = root else {
        return Ok(empty_map(src));
    };
    // The view is a copy of the whole tree, taken even when it equals the document: asking
    // first (`view_unchanged`) cost more than the copy it saved.
    let root = view(&root)?;
    match &root.value {
        Value::Map(_) => Ok(root),
        Value::Scalar(Scalar::Null) => Ok(empty_map(src)),
        _ => Err(refuse(
            src,
            root.span.start,
            format!(
                "a values file must be a mapping; this document is a {} (Helm: cannot unmarshal it into map[string]interface {{}})",
                root.type_name()
            ),
        )),
    }
}

/// Does every Helm read `src` as one document, alike: valid UTF-8 without a byte-order mark, no
/// line that starts with `---` (where Helm 4 splits documents and Helm 3 reads only the first)?
fn one_document_alike(src: &Source) -> bool {
    src.invalid.is_none()
        && src.encoding == yaml::source::Encoding::Utf8
        && !src.text.starts_with('\u{feff}')
        && !src.text.starts_with("---")
        && !src.text.contains("\n---")
        && !src.text.contains("\r---")
}

/// Helm 4's document split (`YAMLReader.Read`): a line that starts with `---` ends a document;
/// anything but spaces or a comment after the `---` is an error. Each document is preceded by
/// as many empty lines as come before it in the file, so lines and columns stay the file's.
fn split_documents(src: &Arc<Source>) -> Result<Vec<Arc<Source>>, Refusal> {
    let text = &src.text;
    let mut chunks = Vec::new();
    let mut start = 0usize;
    let mut pos = 0usize;
    let mut has_content = false;
    let flush = |from: usize, to: usize, chunks: &mut Vec<Arc<Source>>| {
        let line = src.line_col(from).line;
        let mut chunk = "\n".repeat(line - 1);
        // go-yaml's reader drops a byte-order mark that starts what it reads, here the document.
        let doc = &text[from..to];
        chunk.push_str(doc.strip_prefix('\u{feff}').unwrap_or(doc));
        // YAMLReader reads lines with a LineReader, which ends every line with `\n`, the last
        // one too (`foo: |\n  x\n   ` at the end of a file holds "x\n \n" for Helm 4).
        if !chunk.ends_with('\n') {
            chunk.push('\n');
        }
        let mut chunk = Source::new(src.name.clone(), chunk);
        if let Some(c) = Arc::get_mut(&mut chunk) {
            c.node_budget = src.node_budget;
        }
        chunks.push(chunk);
    };
    while pos < text.len() {
        let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1);
        let line = &text[pos..end];
        if let Some(rest) = line.strip_prefix("---") {
            let trimmed = rest.trim_matches(|c: char| c.is_whitespace());
            if !trimmed.is_empty() && !trimmed.starts_with('#') {
                return Err(refuse(
                    src,
                    pos,
                    format!(
                        "Helm 4 splits values files on `---` lines and refuses anything but a comment after one (invalid Yaml document separator: {trimmed})"
                    ),
                ));
            }
            if has_content {
                flush(start, pos, &mut chunks);
            }
            has_content = false;
            start = end;
        } else {
            has_content = true;
        }
        pos = end;
    }
    if has_content {
        flush(start, text.len(), &mut chunks);
    }
    Ok(chunks)
}

/// The Helm view of a document's root: keys turned into the strings Helm makes of them, and the
/// values go-yaml or encoding/json refuse reported. Scalars keep their YAML typing (an integer
/// stays an integer here; [`json`] writes it as the float64 Helm holds).
pub fn view(node: &Node) -> Result<Node, Refusal> {
    view_with(node, keys::LINEAR_LOOKUPS)
}

/// [`view`], with a hash index for mappings of more than `linear` keys.
fn view_with(node: &Node, linear: usize) -> Result<Node, Refusal> {
    if let Some(why) = &node.refused {
        return Err(refuse(&node.src, node.span.start, why.to_string()));
    }
    let value = match &node.value {
        Value::Scalar(Scalar::Float(f)) if !f.is_finite() => {
            return Err(refuse(
                &node.src,
                node.span.start,
                format!(
                    "Helm cannot hold {} as a value (json: unsupported value); quote it to make it a string",
                    node.raw()
                ),
            ));
        }
        Value::Scalar(_) => return Ok(node.clone()),
        Value::Seq(items) => Value::Seq(
            items
                .iter()
                .map(|i| view_with(i, linear))
                .collect::<Result<_, _>>()?,
        ),
        Value::Map(entries) => {
            let mut out: Vec<Entry> = Vec::with_capacity(entries.len());
            let mut finder = keys::Finder::new(&out, entries.len(), linear);
            // go-yaml's own key for each output entry, to tell a duplicate (same go-yaml key:
            // the last wins) from a collision (two different keys, one string: Go's map order
            // decides, at random).
            let mut identities: Vec<KeyKind> = Vec::with_capacity(entries.len());
            for e in entries {
                let key = helm_key(e)?;
                let value = view_with(&e.value, linear)?;
                let entry = helm_entry(e, key, value);
                match finder.find(&out, &entry.key) {
                    Some(i) if same_key(&identities[i], &e.key_kind) => out[i] = entry,
                    Some(i) => {
                        return Err(refuse(
                            &node.src,
                            e.key_span.start,
                            format!(
                                "keys `{}` and `{}` both become \"{}\" for Helm, which then keeps one of them at random; write one key",
                                node.src
                                    .text
                                    .get(out[i].key_span.clone())
                                    .unwrap_or_default(),
                                node.src.text.get(e.key_span.clone()).unwrap_or_default(),
                                entry.key
                            ),
                        ));
                    }
                    None => {
                        finder.push(&mut out, entry);
                        identities.push(e.key_kind.clone());
                    }
                }
            }
            finder.finish(&mut out);
            Value::Map(out)
        }
    };
    Ok(node.with_value(value))
}

/// The entry [`view`] makes of `e`: `key` (Helm's string for it) and the viewed `value`.
fn helm_entry(e: &Entry, key: String, value: Node) -> Entry {
    Entry {
        key,
        key_span: e.key_span.clone(),
        key_style: e.key_style,
        value,
        merged: e.merged,
        key_kind: KeyKind::Str,
    }
}

/// An entry no file holds (a plain string key at no place), as Helm's merging makes them.
fn string_entry(key: String, value: Node) -> Entry {
    Entry {
        key,
        key_span: 0..0,
        key_style: yaml::Style::Plain,
        value,
        merged: false,
        key_kind: KeyKind::Str,
    }
}

/// Whether [`view`] would hand back `node` as it is: nothing Helm refuses or reads differently
/// (every key a plain string key, no key twice, no NaN or ±Inf). The lean readings drop a part
/// of a root entry only when this holds of it (Helm could refuse or change a part that fails it).
pub fn view_unchanged(node: &Node) -> bool {
    if node.refused.is_some() {
        return false;
    }
    match &node.value {
        Value::Scalar(Scalar::Float(f)) => f.is_finite(),
        Value::Scalar(_) => true,
        Value::Seq(items) => items.iter().all(view_unchanged),
        Value::Map(entries) => {
            entries.iter().all(|e| e.key_kind == KeyKind::Str)
                && distinct_keys(entries)
                && entries.iter().all(|e| view_unchanged(&e.value))
        }
    }
}

/// No two entries with one key (a parsed mapping never has them; [`view`] would keep the last).
fn distinct_keys(entries: &[Entry]) -> bool {
    if entries.len() <= 16 {
        entries
            .iter()
            .enumerate()
            .all(|(i, e)| !entries[..i].iter().any(|o| o.key == e.key))
    } else {
        let mut seen = std::collections::HashSet::with_capacity(entries.len());
        entries.iter().all(|e| seen.insert(e.key.as_str()))
    }
}

fn same_key(a: &KeyKind, b: &KeyKind) -> bool {
    match (a, b) {
        (KeyKind::Str, KeyKind::Str) => true,
        (KeyKind::Typed(Scalar::Float(x)), KeyKind::Typed(Scalar::Float(y))) => {
            x.to_bits() == y.to_bits()
        }
        (KeyKind::Typed(x), KeyKind::Typed(y)) => x == y,
        _ => false,
    }
}

/// The string sigs.k8s.io/yaml makes of a key (`convertToJSONableObject`).
fn helm_key(e: &Entry) -> Result<String, Refusal> {
    let src = &e.value.src;
    let at = e.key_span.start;
    Ok(match &e.key_kind {
        KeyKind::Str => e.key.clone(),
        KeyKind::Complex => {
            return Err(refuse(
                src,
                at,
                "a mapping or list as a key: go-yaml refuses it (invalid map key)",
            ));
        }
        KeyKind::Typed(Scalar::Null) => {
            return Err(refuse(
                src,
                at,
                "a null key: Helm refuses it (unsupported map key of type: <nil>); quote the key",
            ));
        }
        KeyKind::Typed(Scalar::Int(i)) if *i > i64::MAX as i128 => {
            return Err(refuse(
                src,
                at,
                "an integer key above 9223372036854775807: Helm refuses it (unsupported map key of type: uint64); quote the key",
            ));
        }
        KeyKind::Typed(Scalar::Int(i)) => i.to_string(),
        KeyKind::Typed(Scalar::Bool(b)) => b.to_string(),
        KeyKind::Typed(Scalar::Float(f)) => json::go_format_g32(*f),
        KeyKind::Typed(Scalar::Str(s)) => s.clone(),
    })
}

/// `MergeMaps(a, b)`: b wins; a mapping in both is merged key by key.
pub fn merge_maps(a: &mut Node, b: Node) {
    merge_maps_with(a, b, keys::LINEAR_LOOKUPS)
}

/// [`merge_maps`], with a hash index where more than `linear` keys are looked up.
fn merge_maps_with(a: &mut Node, b: Node, linear: usize) {
    let Value::Map(b_entries) = b.value else {
        *a = b;
        return;
    };
    let Value::Map(a_entries) = &mut a.value else {
        unreachable!("merge_maps is only called on mappings")
    };
    let mut finder = keys::Finder::new(a_entries, b_entries.len(), linear);
    for e in b_entries {
        match finder.find(a_entries, &e.key) {
            Some(i) if a_entries[i].value.as_map().is_some() && e.value.as_map().is_some() => {
                merge_maps_with(&mut a_entries[i].value, e.value, linear);
            }
            Some(i) => a_entries[i] = e,
            None => finder.push(a_entries, e),
        }
    }
    finder.finish(a_entries);
}

/// `coalesceValues(chart, user)` with merge = false: the chart's defaults under the user's
/// values, and the user's nulls deleting the chart's keys.
pub fn coalesce(user: &mut Node, chart: &Node) {
    coalesce_with(user, chart, keys::LINEAR_LOOKUPS)
}

/// [`coalesce`], with a hash index where more than `linear` keys are looked up.
fn coalesce_with(user: &mut Node, chart: &Node, linear: usize) {
    let (Value::Map(u), Value::Map(c)) = (&mut user.value, &chart.value) else {
        return;
    };
    let mut finder = keys::Finder::new(u, c.len(), linear);
    for ce in c {
        match finder.find(u, &ce.key) {
            None => finder.push(u, ce.clone()),
            Some(i) => {
                if is_null(&u[i].value) {
                    finder.remove(u, i);
                } else if u[i].value.as_map().is_some() && ce.value.as_map().is_some() {
                    coalesce_with(&mut u[i].value, &ce.value, linear);
                }
            }
        }
    }
    finder.finish(u);
}

fn is_null(n: &Node) -> bool {
    matches!(n.value, Value::Scalar(Scalar::Null))
}

/// A `--set`-style flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetKind {
    Set,
    String,
    Json,
}

impl SetKind {
    pub fn flag(self) -> &'static str {
        match self {
            SetKind::Set => "--set",
            SetKind::String => "--set-string",
            SetKind::Json => "--set-json",
        }
    }
}

/// What to layer.
#[derive(Debug, Clone, Default)]
pub struct Layers {
    /// The chart's values.yaml; None: the documented defaults ([`crate::cgpu::CHART_DEFAULTS`]).
    pub chart: Option<Arc<Source>>,
    /// `-f` files in order.
    pub files: Vec<Arc<Source>>,
    /// `--set`/`--set-string`/`--set-json` flags, in command-line order (Helm applies every
    /// `--set-json`, then every `--set`, then every `--set-string`).
    pub sets: Vec<(SetKind, String)>,
}

/// The chart's defaults source (the documented ones when no chart values file is given).
pub fn chart_source(layers: &Layers) -> Arc<Source> {
    layers
        .chart
        .clone()
        .unwrap_or_else(crate::cgpu::chart_defaults)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::Style;
    use place::effective;

    fn layers(files: &[&str]) -> Layers {
        Layers {
            chart: None,
            files: files
                .iter()
                .enumerate()
                .map(|(i, t)| Source::new(format!("f{i}.yaml"), t.to_string()))
                .collect(),
            sets: Vec::new(),
        }
    }

    fn out(l: &Layers, v: Version) -> String {
        json::to_string(&effective(l, v).unwrap())
    }

    #[test]
    fn null_then_map_brings_every_default_back() {
        let l = layers(&["cgpu: null\n", "cgpu: {policy: 3}\n"]);
        let j = out(&l, Version::Three);
        assert!(j.contains("\"policy\":3"), "{j}");
        assert!(j.contains("\"image\":\"acs/cgpu-installer\""), "{j}");
    }

    #[test]
    fn null_for_an_unknown_key_is_kept_and_for_a_default_deleted() {
        let l = layers(&["cgpu: {nodeSelector: {pool: null}, tag: null}\n"]);
        let j = out(&l, Version::Three);
        assert!(j.contains("\"nodeSelector\":{\"pool\":null}"), "{j}");
        assert!(!j.contains("\"tag\""), "{j}");
    }

    #[test]
    fn multi_documents_differ_between_versions() {
        let l = layers(&["cgpu: {policy: 3}\n---\ncgpu: {policy: 9}\n"]);
        assert!(out(&l, Version::Three).contains("\"policy\":3"));
        assert!(out(&l, Version::Four).contains("\"policy\":9"));
    }

    #[test]
    fn keys_are_stringified() {
        let l = layers(&["m: {yes: a, 0x1F: b, 1.5: c}\n"]);
        let j = out(&l, Version::Three);
        assert!(
            j.contains("\"m\":{\"1.5\":\"c\",\"31\":\"b\",\"true\":\"a\"}"),
            "{j}"
        );
    }

    /// `view_unchanged` is a shortcut for `view` returning its input: it must never say so when
    /// `view` would change or refuse the document.
    #[test]
    fn view_unchanged_only_when_view_is_the_identity() {
        let cases = [
            (
                "cgpu:\n  policy: 2\n  tag: v1.5.20\n  nodeSelector: {a: b}\n  l: [1, x, 1.5]\n",
                true,
            ),
            ("a: &x {k: 1}\nb:\n  <<: *x\n  j: \"q\\tw\"\n", true),
            ("m: {yes: a}\n", false),
            ("m: {1: a}\n", false),
            ("m: {~: a}\n", false),
            ("m: .nan\n", false),
            ("m: [-.inf]\n", false),
            ("m: !!int abc\n", false),
            ("? [a]\n: 1\n", false),
        ];
        for (text, unchanged) in cases {
            let src = Source::new("t.yaml", text.to_string());
            let parsed = yaml::parse(&src);
            let root = parsed.documents[0].root.as_ref().unwrap();
            assert_eq!(view_unchanged(root), unchanged, "{text:?}");
            if unchanged {
                let v = view(root).unwrap();
                assert_eq!(format!("{v:?}"), format!("{root:?}"), "{text:?}");
            } else {
                let same = view(root).is_ok_and(|v| format!("{v:?}") == format!("{root:?}"));
                assert!(
                    !same,
                    "{text:?}: view is the identity here; the shortcut could say so"
                );
            }
        }
    }

    /// The functions as they were before the key index, a linear search per key:
    /// the oracle the indexed ones must agree with.
    pub(super) mod reference {
        use super::super::*;

        pub fn view(node: &Node) -> Result<Node, Refusal> {
            if let Some(why) = &node.refused {
                return Err(refuse(&node.src, node.span.start, why.to_string()));
            }
            let value = match &node.value {
                Value::Scalar(Scalar::Float(f)) if !f.is_finite() => {
                    return Err(refuse(&node.src, node.span.start, "not finite"));
                }
                Value::Scalar(_) => return Ok(node.clone()),
                Value::Seq(items) => Value::Seq(items.iter().map(view).collect::<Result<_, _>>()?),
                Value::Map(entries) => {
                    let mut out: Vec<Entry> = Vec::with_capacity(entries.len());
                    let mut identities: Vec<KeyKind> = Vec::with_capacity(entries.len());
                    for e in entries {
                        let key = helm_key(e)?;
                        let value = view(&e.value)?;
                        let entry = helm_entry(e, key, value);
                        match out.iter().position(|o| o.key == entry.key) {
                            Some(i) if same_key(&identities[i], &e.key_kind) => out[i] = entry,
                            Some(_) => {
                                return Err(refuse(&node.src, e.key_span.start, "collision"));
                            }
                            None => {
                                out.push(entry);
                                identities.push(e.key_kind.clone());
                            }
                        }
                    }
                    Value::Map(out)
                }
            };
            Ok(node.with_value(value))
        }

        pub fn merge_maps(a: &mut Node, b: Node) {
            let Value::Map(b_entries) = b.value else {
                *a = b;
                return;
            };
            let Value::Map(a_entries) = &mut a.value else {
                unreachable!()
            };
            for e in b_entries {
                match a_entries.iter_mut().find(|x| x.key == e.key) {
                    Some(x) if x.value.as_map().is_some() && e.value.as_map().is_some() => {
                        merge_maps(&mut x.value, e.value);
                    }
                    Some(x) => *x = e,
                    None => a_entries.push(e),
                }
            }
        }

        pub fn coalesce(user: &mut Node, chart: &Node) {
            let (Value::Map(u), Value::Map(c)) = (&mut user.value, &chart.value) else {
                return;
            };
            for ce in c {
                match u.iter().position(|x| x.key == ce.key) {
                    None => u.push(ce.clone()),
                    Some(i) => {
                        if is_null(&u[i].value) {
                            u.remove(i);
                        } else if u[i].value.as_map().is_some() && ce.value.as_map().is_some() {
                            coalesce(&mut u[i].value, &ce.value);
                        }
                    }
                }
            }
        }
    }

    /// A random tree for the differential tests: mappings whose keys come from a few letters
    /// (so that one mapping often holds a key twice, and two mappings share keys), nulls (which
    /// delete in `coalesce`) and integers.
    #[derive(Debug, Clone)]
    pub(crate) enum Tree {
        Null,
        Int(i64),
        Map(Vec<(u8, Tree)>),
    }

    pub(crate) fn tree() -> impl proptest::strategy::Strategy<Value = Tree> {
        use proptest::prelude::*;
        let leaf = prop_oneof![Just(Tree::Null), (0i64..3).prop_map(Tree::Int)];
        leaf.prop_recursive(3, 64, 24, |inner| {
            prop::collection::vec((0u8..6, inner), 0..24).prop_map(Tree::Map)
        })
    }

    /// A mapping at the root (what layering is called on).
    pub(crate) fn root_tree() -> impl proptest::strategy::Strategy<Value = Tree> {
        use proptest::prelude::*;
        prop::collection::vec((0u8..6, tree()), 0..24).prop_map(Tree::Map)
    }

    pub(crate) fn node_of(t: &Tree, src: &Arc<Source>) -> Node {
        let value = match t {
            Tree::Null => Value::Scalar(Scalar::Null),
            Tree::Int(i) => Value::Scalar(Scalar::Int(*i as i128)),
            Tree::Map(entries) => Value::Map(
                entries
                    .iter()
                    .enumerate()
                    .map(|(i, (k, v))| Entry {
                        key: ((b'a' + k) as char).to_string(),
                        key_span: i..i + 1,
                        key_style: Style::Plain,
                        value: node_of(v, src),
                        merged: false,
                        key_kind: KeyKind::Str,
                    })
                    .collect(),
            ),
        };
        Node::synthetic(value, src)
    }

    /// YAML keys that go-yaml reads as different keys and Helm may turn into one string.
    const KEYS: [&str; 12] = [
        "a", "b", "'a'", "1", "'1'", "01", "yes", "true", "1.0", "0x1", "~", "[x]",
    ];

    fn yaml_map() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let value = prop_oneof![
            Just("1".to_string()),
            Just("x".to_string()),
            Just("~".to_string()),
            Just(".nan".to_string()),
            prop::collection::vec((0..KEYS.len(), 0..3usize), 0..24).prop_map(|es| {
                let inner: Vec<String> = es
                    .iter()
                    .map(|(k, v)| format!("{}: {v}", KEYS[*k]))
                    .collect();
                format!("{{{}}}", inner.join(", "))
            }),
        ];
        prop::collection::vec((0..KEYS.len(), value), 0..24).prop_map(|es| {
            es.iter()
                .map(|(k, v)| format!("{}: {v}\n", KEYS[*k]))
                .collect::<String>()
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]

        /// `merge_maps` with its key index (always, and past the linear threshold) equals the
        /// linear search it replaced, duplicates in a mapping included.
        #[test]
        fn merge_maps_agrees_with_the_linear_search(a in root_tree(), b in root_tree()) {
            let src = Source::new("t", String::new());
            let mut old = node_of(&a, &src);
            reference::merge_maps(&mut old, node_of(&b, &src));
            for linear in [0, keys::LINEAR_LOOKUPS] {
                let mut new = node_of(&a, &src);
                merge_maps_with(&mut new, node_of(&b, &src), linear);
                proptest::prop_assert_eq!(format!("{new:?}"), format!("{old:?}"));
            }
        }

        /// `coalesce` (nulls removing keys) the same way.
        #[test]
        fn coalesce_agrees_with_the_linear_search(u in root_tree(), c in root_tree()) {
            let src = Source::new("t", String::new());
            let mut old = node_of(&u, &src);
            reference::coalesce(&mut old, &node_of(&c, &src));
            for linear in [0, keys::LINEAR_LOOKUPS] {
                let mut new = node_of(&u, &src);
                coalesce_with(&mut new, &node_of(&c, &src), linear);
                proptest::prop_assert_eq!(format!("{new:?}"), format!("{old:?}"));
            }
        }

        /// `view` (duplicates after stringifying, collisions refused) the same way.
        #[test]
        fn view_agrees_with_the_linear_search(text in yaml_map()) {
            let src = Source::new("t.yaml", text);
            let parsed = yaml::parse(&src);
            if let Some(root) = parsed.documents.first().and_then(|d| d.root.as_ref()) {
                let old = reference::view(root).map(|n| format!("{n:?}")).map_err(|r| r.offset);
                for linear in [0, keys::LINEAR_LOOKUPS] {
                    let new = view_with(root, linear).map(|n| format!("{n:?}")).map_err(|r| r.offset);
                    proptest::prop_assert_eq!(&new, &old);
                }
            }
        }
    }

    /// 50,000 keys in one mapping of each layer (a file, another over it, the chart's defaults
    /// under them, built as trees: parsing them is slow in a test build): the values equal a
    /// model of Helm's rules on sorted maps (later file wins, mappings merge, a user null
    /// deletes a default).
    #[test]
    fn fifty_thousand_keys_layer_as_the_model_does() {
        use serde_json::{Map, Value as J, json};
        let src = Source::new("t", String::new());
        let map = |entries: Vec<(String, Node)>| {
            let mut n = empty_map(&src);
            n.value = Value::Map(
                entries
                    .into_iter()
                    .map(|(key, value)| string_entry(key, value))
                    .collect(),
            );
            n
        };
        let scalar = |s: Scalar| {
            let mut n = empty_map(&src);
            n.value = Value::Scalar(s);
            n
        };
        let text = |s: String| scalar(Scalar::Str(s));
        let n = 50_000;
        let (mut f1, mut f2, mut chart) = (Vec::new(), Vec::new(), Vec::new());
        let (mut m1, mut m2, mut mc) = (Map::new(), Map::new(), Map::new());
        for i in 0..n {
            let k = format!("k{i}");
            f1.push((k.clone(), map(vec![("name".into(), text(format!("n{i}")))])));
            m1.insert(k.clone(), json!({"name": format!("n{i}")}));
            if i % 3 == 0 {
                f2.push((
                    k.clone(),
                    map(vec![("value".into(), text(format!("v{i}")))]),
                ));
                m2.insert(k.clone(), json!({"value": format!("v{i}")}));
            } else if i % 3 == 1 {
                f2.push((k.clone(), scalar(Scalar::Null)));
                m2.insert(k.clone(), J::Null);
            }
            if i % 2 == 0 {
                let d = map(vec![
                    ("name".into(), text(format!("d{i}"))),
                    ("extra".into(), scalar(Scalar::Int(i))),
                ]);
                chart.push((k.clone(), d));
                mc.insert(k, json!({"name": format!("d{i}"), "extra": i}));
            } else {
                chart.push((format!("d{i}"), scalar(Scalar::Int(i))));
                mc.insert(format!("d{i}"), json!(i));
            }
        }
        // The model: merge the files, then coalesce the chart under them.
        let mut user = m1;
        for (k, v) in m2 {
            match (user.get_mut(&k), v) {
                (Some(J::Object(a)), J::Object(b)) => a.extend(b),
                (_, v) => {
                    user.insert(k, v);
                }
            }
        }
        for (k, cv) in mc {
            match user.get_mut(&k) {
                None => {
                    user.insert(k, cv);
                }
                Some(J::Null) => {
                    user.remove(&k);
                }
                Some(J::Object(u)) => {
                    if let J::Object(c) = cv {
                        for (ck, v) in c {
                            u.entry(ck).or_insert(v);
                        }
                    }
                }
                Some(_) => {}
            }
        }
        let mut got = empty_map(&src);
        merge_maps(&mut got, view(&map(vec![("big".into(), map(f1))])).unwrap());
        merge_maps(&mut got, view(&map(vec![("big".into(), map(f2))])).unwrap());
        coalesce(
            &mut got,
            &view(&map(vec![("big".into(), map(chart))])).unwrap(),
        );
        let got: J = serde_json::from_str(&json::to_string(&got)).unwrap();
        assert_eq!(got, json!({"big": user}));
    }
}
