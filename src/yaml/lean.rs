//! The lean reading: every event of a file is read and checked, but of each document's root
//! mapping only one entry is kept; the others are built as `build.rs` builds them, checked and
//! dropped as soon as their value ends, so memory holds one root entry at a time.

use std::collections::HashMap;
use std::sync::Arc;

use super::build::{Entries, KeySpans, root_entry};
use super::node::{Document, Duplicate, Node, Parsed, Style, Value};
use super::raw::RawNode;
use super::source::Source;

/// What [`parse_lean`] keeps and when it gives up.
pub struct Lean<'a> {
    /// The root key whose entry is kept (all others are read, checked and dropped).
    pub keep: &'a str,
    /// Root keys whose presence makes the lean reading give up (their readers need the rest).
    pub give_up_on: &'a [&'a str],
    /// Whether a dropped root entry may be dropped: called with a one-entry mapping holding it.
    pub droppable: &'a dyn Fn(&Node) -> bool,
}

/// Parse every document like [`super::parse`], but keep of each document's root mapping only
/// the entries named `lean.keep`, building and dropping every other root entry as soon as its
/// value ends, so that memory holds one root entry at a time instead of the whole tree. Every
/// event is still read (so every syntax error is found where [`super::parse`] finds it) and every
/// duplicate key is recorded as [`super::parse`] records it; documents whose root is not a
/// mapping are built whole. Gives up (`None`: read the file with [`super::parse`]) whenever the
/// result could differ for a reader that looks only at the kept entry: an alias anywhere (its
/// anchor may have been dropped), a merge key at the root, any error while building, a root
/// mapping without `keep` or with a `give_up_on` key, a dropped entry `droppable` refuses.
pub fn parse_lean(src: &Arc<Source>, lean: &Lean) -> Option<Parsed> {
    super::events::read(src, Some(lean))
}

/// The state of the current document's root mapping while reading lean.
pub(super) struct LeanRoot {
    /// Arena index of the root mapping.
    pub(super) root: usize,
    /// A root entry whose value is still open: (key, value) arena indices.
    pub(super) pair: Option<(usize, usize)>,
    out: Entries,
    seen: KeySpans,
    duplicates: Vec<Duplicate>,
    /// Where the last root entry's value ends (the end of a block root).
    pub(super) last_end: usize,
    /// Whether some entry was read (a block root without one ends where it starts).
    pub(super) any: bool,
}

impl LeanRoot {
    /// The root mapping at arena index `root` opens.
    pub(super) fn new(root: usize) -> Self {
        LeanRoot {
            root,
            pair: None,
            out: Entries::with_capacity(1),
            seen: KeySpans::default(),
            duplicates: Vec::new(),
            last_end: 0,
            any: false,
        }
    }
}

/// A root entry of a lean document has ended: build it as `build.rs` builds a
/// mapping's entry, record its duplicate, keep it or drop it, and free its part of the arena.
pub(super) fn lean_entry(
    src: &Arc<Source>,
    raw: &mut Vec<RawNode>,
    l: &mut LeanRoot,
    lean: &Lean,
) -> Option<()> {
    let (k, v) = l.pair.take()?;
    l.last_end = raw[v].span.end;
    l.any = true;
    let entry = root_entry(
        src,
        raw,
        l.root,
        (k, v),
        &mut l.seen,
        &mut l.duplicates,
        lean.give_up_on,
    )?;
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
        alias_at: None,
        refused: None,
    };
    (lean.droppable)(&probe).then_some(())
}

/// The document a lean root mapping makes: only the kept entries.
pub(super) fn lean_document(
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
    use crate::yaml::parse;

    fn doc(text: &str) -> Parsed {
        parse(&Source::new("t.yaml", text.to_string()))
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
}
