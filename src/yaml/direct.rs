//! The full parse built straight from the parser's calls, without the raw arena: each scalar
//! becomes its [`Node`] as it is read and each collection its node as it ends, so memory holds
//! the tree alone instead of the arena and the tree beside it. It builds what `build.rs` builds
//! from the arena (typing, tags, duplicate keys recorded at the same pointers in the same order,
//! the last of two keys kept) and gives up (`raw.rs` then reads the file through the arena) on
//! whatever needs the arena: an anchor, an alias, a merge key (`<<`), a mapping or list as a key.

use std::ops::{ControlFlow, Range};
use std::sync::Arc;

use super::build::{Entries, Seg, entry_of, is_merge, key_text, pointer, scalar_node};
use super::node::{Duplicate, Node, Style, Value};
use super::source::Source;

/// Read on, or give up (read the file through the arena).
pub(super) type Go = ControlFlow<()>;

/// One open collection.
struct Frame {
    is_map: bool,
    flow: bool,
    span: Range<usize>,
    items: Vec<Node>,
    /// The entries so far; each holds where its key was last written (no merge key here), which
    /// a duplicate report names.
    entries: Entries,
    /// A key whose value is awaited: its text and node.
    key: Option<(String, Node)>,
    /// Where the last child ended (the end of a block collection).
    last_end: Option<usize>,
}

/// The open document's state.
#[derive(Default)]
pub(super) struct Direct {
    frames: Vec<Frame>,
    /// The JSON pointer of the innermost open collection (and of the key read in it).
    path: Vec<Seg>,
    pub(super) root: Option<Node>,
    pub(super) duplicates: Vec<Duplicate>,
}

impl Direct {
    /// A scalar with its text, style and tag.
    pub(super) fn scalar(
        &mut self,
        src: &Arc<Source>,
        value: &str,
        style: Style,
        tag: Option<&str>,
        span: Range<usize>,
    ) -> Go {
        let node = scalar_node(src, value, style, tag, span);
        match self.frames.last() {
            Some(f) if f.is_map && f.key.is_none() => self.key(node, tag),
            _ => self.child(node),
        }
    }

    /// A mapping or list opens at `span.start`.
    pub(super) fn start(&mut self, is_map: bool, flow: bool, span: Range<usize>) -> Go {
        match self.frames.last() {
            Some(f) if f.is_map && f.key.is_none() => return ControlFlow::Break(()),
            Some(f) if !f.is_map => self.path.push(Seg::Index(f.items.len())),
            _ => {}
        }
        self.frames.push(Frame {
            is_map,
            flow,
            span,
            items: Vec::new(),
            entries: Entries::with_capacity(0),
            key: None,
            last_end: None,
        });
        ControlFlow::Continue(())
    }

    /// The innermost collection ends; `at` is where its end event ends.
    pub(super) fn end(&mut self, src: &Arc<Source>, at: usize) -> Go {
        let Some(f) = self.frames.pop() else {
            return ControlFlow::Continue(());
        };
        if let Some(parent) = self.frames.last()
            && !parent.is_map
        {
            self.path.pop();
        }
        // A flow collection ends at its closing bracket; a block collection ends with its last
        // child (as `raw.rs` places it).
        let end = if f.flow { at } else { f.last_end.unwrap_or(0) };
        let value = if f.is_map {
            let mut list = f.entries.list;
            list.shrink_to_fit();
            Value::Map(list)
        } else {
            let mut items = f.items;
            items.shrink_to_fit();
            Value::Seq(items)
        };
        let node = Node {
            value,
            span: f.span.start..end.max(f.span.start),
            style: if f.flow { Style::Flow } else { Style::Block },
            src: src.clone(),
            via_alias: None,
            alias_at: None,
            refused: None,
        };
        self.child(node)
    }

    /// A mapping's key was read: its duplicate is recorded, its value awaited.
    fn key(&mut self, node: Node, tag: Option<&str>) -> Go {
        let key = key_text(&node);
        if is_merge(&key, node.style, tag) {
            return ControlFlow::Break(());
        }
        let f = self.frames.last_mut().expect("a mapping is open");
        if let Some(first) = f.entries.get(&key) {
            self.duplicates.push(Duplicate {
                key: key.clone(),
                map_pointer: pointer(&self.path),
                first: first.key_span.clone(),
                second: node.span.clone(),
            });
        }
        self.path.push(Seg::Key(key.clone()));
        f.key = Some((key, node));
        ControlFlow::Continue(())
    }

    /// A value, item or root node is complete.
    fn child(&mut self, node: Node) -> Go {
        let Some(f) = self.frames.last_mut() else {
            self.root = Some(node);
            return ControlFlow::Continue(());
        };
        f.last_end = Some(node.span.end);
        if f.is_map {
            let Some((key, key_node)) = f.key.take() else {
                return ControlFlow::Break(());
            };
            self.path.pop();
            f.entries.upsert(entry_of(key, key_node, node));
        } else {
            f.items.push(node);
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::events::read;
    use super::super::node::{Entry, Parsed};
    use super::super::source::Source;
    use super::*;

    /// Every field of two nodes, recursively.
    fn same_node(a: &Node, b: &Node, at: &str) {
        assert_eq!(
            (&a.span, a.style, &a.refused, a.via_alias, &a.alias_at),
            (&b.span, b.style, &b.refused, b.via_alias, &b.alias_at),
            "{at}"
        );
        match (&a.value, &b.value) {
            (Value::Scalar(x), Value::Scalar(y)) => {
                assert_eq!(format!("{x:?}"), format!("{y:?}"), "{at}")
            }
            (Value::Seq(x), Value::Seq(y)) => {
                assert_eq!(x.len(), y.len(), "{at}");
                for (i, (x, y)) in x.iter().zip(y).enumerate() {
                    same_node(x, y, &format!("{at}/{i}"));
                }
            }
            (Value::Map(x), Value::Map(y)) => {
                assert_eq!(x.len(), y.len(), "{at}");
                for (x, y) in x.iter().zip(y) {
                    let key = |e: &Entry| {
                        (
                            e.key.clone(),
                            e.key_span.clone(),
                            e.key_style,
                            e.merged,
                            e.key_kind.clone(),
                        )
                    };
                    assert_eq!(key(x), key(y), "{at}");
                    same_node(&x.value, &y.value, &format!("{at}/{}", x.key));
                }
            }
            _ => panic!("{at}: {} and {}", a.type_name(), b.type_name()),
        }
    }

    fn same(direct: &Parsed, arena: &Parsed, name: &str) {
        assert_eq!(direct.documents.len(), arena.documents.len(), "{name}");
        for (d, a) in direct.documents.iter().zip(&arena.documents) {
            assert_eq!((d.index, &d.span), (a.index, &a.span), "{name}");
            assert_eq!(d.duplicate_keys(), a.duplicate_keys(), "{name}");
            assert_eq!(d.alias_uses, a.alias_uses, "{name}");
            match (&d.root, &a.root) {
                (Some(x), Some(y)) => same_node(x, y, name),
                (None, None) => {}
                _ => panic!("{name}: one root is empty"),
            }
        }
        let err = |p: &Parsed| {
            p.error
                .as_ref()
                .map(|e| (e.message.clone(), e.offset, e.document))
        };
        assert_eq!(err(direct), err(arena), "{name}");
    }

    /// The direct reading gives what the arena gives, field by field, on every YAML file of the
    /// repository's fixtures and on the shapes written here; it gives up where it must.
    #[test]
    fn direct_builds_what_the_arena_builds() {
        let mut texts: Vec<(String, String)> = [
            "a:\n  b: 1\n  b: [x, {c: 1, c: 2}]\n  d:\n    - e: 1\n      e: 2\n    -\n    - f\n",
            "---\n# only a comment\n---\na: 1\n...\n---\n[1, 2]\n--- |\n  text\n",
            "a: !!str 1\nb: !!int \"2\"\nc: !!int abc\nd: .nan\ne: !local x\n? plain\n: ''\n",
            "a: {b: 1, b: 2, b: 3}\nb: [\n  1,\n  2\n]\nc:\n  - - 1\n    - 2\n  - [3]\n",
            "~: 1\nnull: 2\n1: 3\n0x1F: 4\nyes: 5\n'k': 6\n\"k\": 7\n",
            "a: 1\nb: [\n",
            "a:\n  b: 1\n c: 2\n",
            "",
            "# nothing\n",
            "'x'\n",
        ]
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("case {i}"), t.to_string()))
        .collect();
        texts.extend(super::super::repository_yaml_files());
        let mut compared = 0;
        for (name, text) in &texts {
            let src = Source::new(name.clone(), text.clone());
            let arena = read(&src, None, false).unwrap();
            if let Some(direct) = read(&src, None, true) {
                same(&direct, &arena, name);
                compared += 1;
            }
        }
        assert!(compared > 100, "{compared} of {} compared", texts.len());
        for gives_up in [
            "a: &x 1\nb: *x\n",
            "a: &x 1\n",
            "m:\n  <<: {a: 1}\n",
            "? [a]\n: 1\n",
            "? {a: 1}\n: 1\n",
        ] {
            let src = Source::new("t.yaml", gives_up.to_string());
            assert!(read(&src, None, true).is_none(), "{gives_up:?}");
        }
    }
}
