//! The lean reading: every event of a file is read and checked, but of each document's root
//! mapping only one entry is kept; the others are built as `build.rs` builds them, checked and
//! dropped as soon as their value ends, so memory holds one root entry at a time.

use std::collections::HashMap;
use std::sync::Arc;

use std::ops::ControlFlow;

use super::build::{Entries, KeySpans, Seg, build_key, build_node, entry_of, pointer};
use super::node::{Document, Duplicate, Node, Style, Value};
use super::raw_node::{RawKind, RawNode};
use super::source::Source;

/// What [`super::parse_lean`] keeps and when it gives up.
pub struct Lean<'a> {
    /// The root key whose entry is kept (all others are read, checked and dropped).
    pub keep: &'a str,
    /// Whether a root mapping without `keep` makes the reading give up (its reader needs the
    /// rest); otherwise it is an empty mapping (with every duplicate of the dropped entries).
    pub keep_required: bool,
    /// Root keys whose presence makes the lean reading give up (their readers need the rest).
    pub give_up_on: &'a [&'a str],
    /// Whether a dropped part may be dropped: called with a one-entry mapping or a one-item list
    /// holding it, once for each entry and item of a dropped root entry, innermost first. A
    /// collection is passed without its children (each was passed before), so this must hold of
    /// a whole whenever it holds of each of its parts (as [`crate::helm::view_unchanged`] does).
    pub droppable: &'a dyn Fn(&Node) -> bool,
}

/// The state of the current document's root mapping while reading lean. The root mapping and
/// every collection inside a dropped root entry are read lean: each of their children is built
/// as `build.rs` builds it as soon as it ends (its own children are built and gone by then),
/// checked and dropped, so that memory holds the open collections and their keys, not their
/// contents. The kept entry's value is built whole.
pub(super) struct LeanRoot {
    /// Arena index of the root mapping.
    pub(super) root: usize,
    out: Entries,
    duplicates: Vec<Duplicate>,
    /// The open collections read lean, outermost (the root mapping) first: the bottom of the
    /// arena's stack of open collections.
    pub(super) streams: Vec<Stream>,
    /// The JSON pointer of the innermost open collection read lean (and of the key read in it).
    path: Vec<Seg>,
    /// The root key read last is the kept one: its value is built whole.
    kept: bool,
}

/// One open collection read lean.
#[derive(Default)]
pub(super) struct Stream {
    /// A mapping's keys so far, for duplicate reports.
    seen: KeySpans,
    /// A list's items so far.
    items: usize,
    /// A mapping's key whose value is awaited: its text and built node.
    key: Option<(String, Node)>,
    /// Where the last child ended (the end of a block collection).
    pub(super) last_end: Option<usize>,
}

/// What a lean step tells the arena: read on, or give up (read the file with the full parse).
type LeanStep = ControlFlow<()>;

impl LeanRoot {
    /// The root mapping at arena index `root` opens.
    pub(super) fn new(root: usize) -> Self {
        LeanRoot {
            root,
            out: Entries::with_capacity(1),
            duplicates: Vec::new(),
            streams: vec![Stream::default()],
            path: Vec::new(),
            kept: false,
        }
    }

    /// Whether the children of the innermost of `open` open collections are read lean.
    pub(super) fn streams_children(&self, open: usize) -> bool {
        open > 0 && self.streams.len() == open
    }

    /// A child (`collection`: a mapping or list) of the innermost open collection, `parent`,
    /// starts; `pending`: the key it holds when it is a mapping. A collection started here is
    /// read lean unless it is the kept entry's value.
    pub(super) fn child_start(
        &mut self,
        raw: &[RawNode],
        parent: usize,
        pending: Option<usize>,
        collection: bool,
    ) -> LeanStep {
        match raw[parent].kind {
            // A mapping or list as a key: Helm refuses it (a complex key).
            RawKind::Map(_) if pending.is_none() && collection => return ControlFlow::Break(()),
            RawKind::Seq(_) => {
                let i = self.streams.last().map_or(0, |s| s.items);
                self.path.push(Seg::Index(i));
            }
            _ => {}
        }
        if collection && !(self.streams.len() == 1 && self.kept) {
            self.streams.push(Stream::default());
        }
        ControlFlow::Continue(())
    }

    /// The child `node` of the innermost open collection `parent` (read lean) has ended: a key
    /// is recorded (its duplicate too); a value or item is built, checked and dropped, or kept
    /// when it is the kept entry's value.
    pub(super) fn child_done(
        &mut self,
        src: &Arc<Source>,
        raw: &mut Vec<RawNode>,
        lean: &Lean,
        parent: usize,
        pending: &mut Option<usize>,
        node: usize,
    ) -> LeanStep {
        let give_up = ControlFlow::Break(());
        let level = self.streams.len() - 1;
        let is_map = matches!(raw[parent].kind, RawKind::Map(_));
        if is_map && pending.is_none() {
            let Ok((key_node, key, merge)) = build_key(src, raw, node) else {
                return give_up;
            };
            if merge
                || !matches!(key_node.value, Value::Scalar(_))
                || (level == 0 && lean.give_up_on.contains(&key.as_str()))
            {
                return give_up;
            }
            let s = &mut self.streams[level];
            if let Some(first) = s.seen.get(&key) {
                self.duplicates.push(Duplicate {
                    key: key.clone(),
                    map_pointer: pointer(&self.path),
                    first: first.clone(),
                    second: key_node.span.clone(),
                });
            }
            s.seen.insert(key.clone(), key_node.span.clone());
            self.path.push(Seg::Key(key.clone()));
            if level == 0 {
                self.kept = key == lean.keep;
            }
            s.key = Some((key, key_node));
            *pending = Some(node);
            return ControlFlow::Continue(());
        }
        let built = build_node(src, raw, node, &mut self.path, &mut self.duplicates);
        self.path.pop();
        let Ok(value) = built else {
            return give_up;
        };
        let s = &mut self.streams[level];
        s.last_end = Some(raw[node].span.end);
        raw.truncate(parent + 1);
        let probe = if is_map {
            *pending = None;
            let Some((key, key_node)) = s.key.take() else {
                return give_up;
            };
            let entry = entry_of(key, key_node, value);
            if level == 0 && std::mem::take(&mut self.kept) {
                self.out.upsert(entry);
                return ControlFlow::Continue(());
            }
            Value::Map(vec![entry])
        } else {
            s.items += 1;
            Value::Seq(vec![value])
        };
        let probe = Node::synthetic(probe, src);
        if (lean.droppable)(&probe) {
            ControlFlow::Continue(())
        } else {
            give_up
        }
    }
}

/// The document a lean root mapping makes: only the kept entries.
pub(super) fn lean_document(
    src: &Arc<Source>,
    raw: &[RawNode],
    l: LeanRoot,
    lean: &Lean,
    index: usize,
) -> Option<Document> {
    if lean.keep_required && !l.out.list.iter().any(|e| e.key == lean.keep) {
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
            alias_at: None,
            refused: None,
        }),
        duplicates: l.duplicates,
        alias_uses: HashMap::new(),
        span: 0..0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::{Parsed, parse, parse_lean};

    fn doc(text: &str) -> Parsed {
        parse(&Source::new("t.yaml", text.to_string()))
    }

    const LEAN: Lean = Lean {
        keep: "cgpu",
        keep_required: true,
        give_up_on: &["apiVersion", "kind"],
        droppable: &crate::helm::view_unchanged,
    };

    fn lean(text: &str) -> Option<Parsed> {
        parse_lean(&Source::new("t.yaml", text.to_string()), &LEAN)
    }

    #[test]
    fn lean_keeps_the_cgpu_entry_and_every_duplicate_as_the_full_parse_does() {
        let text = "a:\n  x: 1\n  x: 2\ncgpu:\n  policy: 2\n  tag: v1\n  policy: 3\nb: [1, 2]\na: 3\ncgpu: {policy: 4, policy: 5}\nd:\n  - {p: 1, p: 2}\n  - q:\n      r: [1, {s: 1, s: 2}]\n      r: 2\n    q: 3\n---\nhello\n---\n{cgpu: {x: 1}, z: 2, z: 3}\n";
        let full = doc(text);
        let lean = lean(text).expect("nothing here makes the lean reading give up");
        assert!(full.error.is_none() && lean.error.is_none());
        assert_eq!(lean.documents.len(), 3);
        for (f, l) in full.documents.iter().zip(&lean.documents) {
            assert_eq!(f.index, l.index);
            assert_eq!(f.span, l.span);
            assert_eq!(f.duplicate_keys(), l.duplicate_keys());
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
        // Ten duplicates over the three documents, in the full parse's order, those inside
        // dropped entries under the pointers the full parse gives.
        assert_eq!(
            lean.documents
                .iter()
                .map(|d| d.duplicates.len())
                .sum::<usize>(),
            10
        );
        let pointers: Vec<&str> = lean.documents[0]
            .duplicates
            .iter()
            .map(|d| d.map_pointer.as_str())
            .collect();
        assert_eq!(
            pointers,
            [
                "/a",
                "/cgpu",
                "",
                "",
                "/cgpu",
                "/d/0",
                "/d/1/q/r/1",
                "/d/1/q",
                "/d/1"
            ]
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

    /// The node budget counts every node read, dropped ones too, so the lean reading refuses a
    /// file where the full parse does, at the same node.
    #[test]
    fn lean_and_full_refuse_at_the_same_node_over_the_budget() {
        let text = format!("a: [{}]\ncgpu: {{}}\n", "x, ".repeat(40));
        let src = |budget| {
            let mut s = Source::new("t.yaml", text.clone());
            Arc::get_mut(&mut s).unwrap().node_budget = budget;
            s
        };
        let (full, lean) = (parse(&src(20)), parse_lean(&src(20), &LEAN).unwrap());
        let (f, l) = (full.error.unwrap(), lean.error.unwrap());
        assert!(
            f.message.contains("more than 20 YAML nodes"),
            "{}",
            f.message
        );
        // Node 21: root, `a`, the list, then item 18 at byte 4 + 3 * 17.
        assert_eq!((f.offset, l.offset), (4 + 3 * 17, 4 + 3 * 17));
        assert!(parse(&src(45)).error.is_none());
        assert!(parse_lean(&src(45), &LEAN).unwrap().error.is_none());
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
}
