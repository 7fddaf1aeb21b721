//! The raw arena: the seam between a parser and Helm's semantics. A parser front (today
//! `events.rs`) reports what it reads as calls on [`Arena`] (a document starts or ends, a scalar,
//! an alias, a collection opens or closes, with byte ranges); the arena keeps each document as a
//! flat list of [`RawNode`]s (anchors kept, aliases as links) and hands a finished document to
//! `build.rs`, or, read lean, each finished root entry to `lean.rs`. Nothing here names the
//! parser crate, so replacing the parser means writing a new front that makes these calls.

use std::collections::HashMap;
use std::ops::{ControlFlow, Range};
use std::sync::Arc;

use super::build::{build_document, scalar_node};
use super::direct::Direct;
use super::lean::{Lean, LeanRoot, lean_document};
use super::node::{Document, Parsed, Style, SyntaxError, Value, Visitor};
use super::raw_node::{RawKind, RawNode};
use super::resolve::Scalar;
use super::source::Source;

/// What a call on the arena tells the parser front: read on, or stop with this result (`None`:
/// the lean reading gives up, read the file with the full parse).
pub(super) type Step = ControlFlow<Option<Parsed>>;

/// The documents read so far and the open document's arena.
pub(super) struct Arena<'a> {
    src: &'a Arc<Source>,
    lean: Option<&'a Lean<'a>>,
    documents: Vec<Document>,
    raw: Vec<RawNode>,
    anchors: HashMap<usize, usize>,
    /// Open collections: (arena index, pending key for maps)
    stack: Vec<(usize, Option<usize>)>,
    root: Option<usize>,
    doc_start: usize,
    doc_index: usize,
    lean_root: Option<LeanRoot>,
    /// Nodes read so far in the file, against [`Source::node_budget`].
    nodes: usize,
    /// Set when the documents are built straight from the calls, without the arena (see
    /// `direct.rs`); a call it cannot take ends the reading with `None`.
    direct: Option<Direct>,
    /// Set when the first document is handed to a [`Visitor`] call by call (nothing is built
    /// here): an anchor, an alias or a second document ends the reading with `None`.
    pub(super) visitor: Option<&'a mut dyn Visitor>,
}

impl<'a> Arena<'a> {
    /// `direct`: build the documents without the arena (see `direct.rs`; not with `lean`).
    pub(super) fn new(src: &'a Arc<Source>, lean: Option<&'a Lean<'a>>, direct: bool) -> Self {
        Arena {
            src,
            lean,
            documents: Vec::new(),
            raw: Vec::new(),
            anchors: HashMap::new(),
            stack: Vec::new(),
            root: None,
            doc_start: 0,
            doc_index: 0,
            lean_root: None,
            nodes: 0,
            direct: (direct && lean.is_none()).then(Direct::default),
            visitor: None,
        }
    }

    /// Count one more node, starting at byte `at`: `Some` (the file is refused) when it crosses
    /// the file's node budget.
    fn over_budget(&mut self, at: usize) -> Option<Step> {
        self.nodes += 1;
        if self.nodes <= self.src.node_budget {
            return None;
        }
        let message = format!(
            "the file holds more than {} YAML nodes, cgpu-lint's node budget (one node per 4 bytes of --max-file-size); refusing to read on before memory runs out",
            self.src.node_budget
        );
        let document = self.doc_index.max(1);
        let mut parsed = self.stop(message, at, document);
        if let Some(e) = &mut parsed.error {
            e.own_limit = true;
        }
        Some(ControlFlow::Break(Some(parsed)))
    }

    /// The documents read, and no error.
    pub(super) fn finish(self) -> Parsed {
        Parsed {
            documents: self.documents,
            error: None,
        }
    }

    /// The documents read before the parser met `message` at byte `offset`; `between`: the open
    /// document had ended, so the error belongs to the next one (which Helm 3 never reads).
    pub(super) fn syntax_error(mut self, message: String, offset: usize, between: bool) -> Parsed {
        let document = if between {
            self.doc_index + 1
        } else {
            self.doc_index.max(1)
        };
        self.stop(message, offset, document)
    }

    /// The documents read so far, and the error that ends the file in document `document`.
    fn stop(&mut self, message: String, offset: usize, document: usize) -> Parsed {
        Parsed {
            documents: std::mem::take(&mut self.documents),
            error: Some(SyntaxError {
                message,
                offset,
                document,
                own_limit: false,
            }),
        }
    }

    /// A document starts at byte `at`.
    pub(super) fn document_start(&mut self, at: usize) {
        self.doc_index += 1;
        self.raw.clear();
        self.anchors.clear();
        self.stack.clear();
        self.root = None;
        self.lean_root = None;
        self.doc_start = at;
        if self.direct.is_some() {
            self.direct = Some(Direct::default());
        }
    }

    /// The open document ends at byte `at`: it is built.
    pub(super) fn document_end(&mut self, at: usize) -> Step {
        let span = self.doc_start..at.max(self.doc_start);
        if self.visitor.is_some() {
            return if self.doc_index > 1 {
                ControlFlow::Break(None)
            } else {
                ControlFlow::Continue(())
            };
        }
        if let Some(d) = &mut self.direct {
            let d = std::mem::take(d);
            // A document holding only an empty plain scalar is an empty document.
            let root = d
                .root
                .filter(|n| !(matches!(n.value, Value::Scalar(Scalar::Null)) && n.span.is_empty()));
            self.documents.push(Document {
                index: self.doc_index,
                root,
                duplicates: d.duplicates,
                alias_uses: HashMap::new(),
                span,
            });
            return ControlFlow::Continue(());
        }
        if let Some(l) = self.lean_root.take() {
            let Some(lean) = self.lean else {
                return ControlFlow::Break(None);
            };
            let Some(mut doc) = lean_document(self.src, &self.raw, l, lean, self.doc_index) else {
                return ControlFlow::Break(None);
            };
            doc.span = span;
            self.documents.push(doc);
            return ControlFlow::Continue(());
        }
        let built = build_document(
            self.src,
            &self.raw,
            &self.anchors,
            self.root,
            self.doc_index,
        );
        match built {
            Ok(mut doc) => {
                doc.span = span;
                self.documents.push(doc);
                ControlFlow::Continue(())
            }
            Err((message, offset)) => {
                let document = self.doc_index;
                ControlFlow::Break(Some(self.stop(message, offset, document)))
            }
        }
    }

    /// An alias (`*name`) to the anchor numbered `id`.
    pub(super) fn alias(&mut self, id: usize, span: Range<usize>) -> Step {
        if self.lean.is_some() {
            // Its anchor may sit in a root entry that was dropped.
            return ControlFlow::Break(None);
        }
        if let Some(stop) = self.over_budget(span.start) {
            return stop;
        }
        if self.direct.is_some() || self.visitor.is_some() {
            return ControlFlow::Break(None);
        }
        let Some(&target) = self.anchors.get(&id) else {
            let document = self.doc_index;
            let message = "alias to an unknown anchor".into();
            return ControlFlow::Break(Some(self.stop(message, span.start, document)));
        };
        self.raw.push(RawNode {
            kind: RawKind::Alias(target),
            span,
            flow: false,
        });
        self.leaf(self.raw.len() - 1)
    }

    /// A scalar with its text, style, anchor and tag (see [`RawKind::Scalar`]).
    pub(super) fn scalar(
        &mut self,
        value: String,
        style: Style,
        anchor: Option<usize>,
        tag: Option<String>,
        span: Range<usize>,
    ) -> Step {
        if let Some(stop) = self.over_budget(span.start) {
            return stop;
        }
        if let Some(v) = &mut self.visitor {
            if self.doc_index > 1
                || anchor.is_some()
                || v.scalar(scalar_node(self.src, &value, style, tag.as_deref(), span))
                    .is_break()
            {
                return ControlFlow::Break(None);
            }
            return ControlFlow::Continue(());
        }
        if let Some(d) = &mut self.direct {
            if anchor.is_some()
                || d.scalar(self.src, &value, style, tag.as_deref(), span)
                    .is_break()
            {
                return ControlFlow::Break(None);
            }
            return ControlFlow::Continue(());
        }
        self.raw.push(RawNode {
            kind: RawKind::Scalar(value, style, tag),
            span,
            flow: false,
        });
        if let Some(anchor) = anchor {
            self.anchors.insert(anchor, self.raw.len() - 1);
        }
        self.leaf(self.raw.len() - 1)
    }

    /// A mapping or a sequence opens.
    pub(super) fn collection_start(
        &mut self,
        is_map: bool,
        flow: bool,
        anchor: Option<usize>,
        span: Range<usize>,
    ) -> Step {
        if let Some(stop) = self.over_budget(span.start) {
            return stop;
        }
        if let Some(v) = &mut self.visitor {
            if self.doc_index > 1 || anchor.is_some() || v.start(is_map).is_break() {
                return ControlFlow::Break(None);
            }
            return ControlFlow::Continue(());
        }
        if let Some(d) = &mut self.direct {
            if anchor.is_some() || d.start(is_map, flow, span).is_break() {
                return ControlFlow::Break(None);
            }
            return ControlFlow::Continue(());
        }
        self.raw.push(RawNode {
            kind: if is_map {
                RawKind::Map(Vec::new())
            } else {
                RawKind::Seq(Vec::new())
            },
            span,
            flow,
        });
        let idx = self.raw.len() - 1;
        if let Some(anchor) = anchor {
            self.anchors.insert(anchor, idx);
        }
        if self.lean.is_some() && self.stack.is_empty() && is_map {
            // A root mapping is read lean; other roots (which hold no entry to keep) are built
            // as `parse` builds them.
            self.lean_root = Some(LeanRoot::new(idx));
            self.root = Some(idx);
        } else if let Some(l) = self.lean_root.as_mut()
            && l.streams_children(self.stack.len())
        {
            let &(parent, pending) = self.stack.last().expect("an open collection");
            if l.child_start(&self.raw, parent, pending, true).is_break() {
                return ControlFlow::Break(None);
            }
        } else {
            attach(&mut self.raw, &mut self.stack, &mut self.root, idx);
        }
        self.stack.push((idx, None));
        ControlFlow::Continue(())
    }

    /// The innermost open collection closes; `at` is where its end event ends.
    pub(super) fn collection_end(&mut self, at: usize) -> Step {
        if let Some(v) = &mut self.visitor {
            return match v.end() {
                ControlFlow::Break(()) => ControlFlow::Break(None),
                ControlFlow::Continue(()) => ControlFlow::Continue(()),
            };
        }
        if let Some(d) = &mut self.direct {
            if d.end(self.src, at).is_break() {
                return ControlFlow::Break(None);
            }
            return ControlFlow::Continue(());
        }
        let Some((idx, _)) = self.stack.pop() else {
            return ControlFlow::Continue(());
        };
        let read_lean = match &mut self.lean_root {
            Some(l) if l.streams.len() > self.stack.len() => l.streams.pop(),
            _ => None,
        };
        let raw = &mut self.raw;
        // A flow collection ends at its closing bracket; a block collection ends with
        // its last child (its end event sits at the next token, often a line later).
        let end = if raw[idx].flow {
            at
        } else {
            match read_lean {
                Some(s) => s.last_end.unwrap_or(0),
                None => last_child_end(raw, idx),
            }
        };
        raw[idx].span.end = end.max(raw[idx].span.start);
        self.done(idx)
    }

    /// A node without children was read.
    fn leaf(&mut self, node: usize) -> Step {
        if let Some(l) = self.lean_root.as_mut()
            && l.streams_children(self.stack.len())
        {
            let &(parent, pending) = self.stack.last().expect("an open collection");
            if l.child_start(&self.raw, parent, pending, false).is_break() {
                return ControlFlow::Break(None);
            }
            return self.done(node);
        }
        attach(&mut self.raw, &mut self.stack, &mut self.root, node);
        ControlFlow::Continue(())
    }

    /// Read lean, the child `node` of a collection read lean has ended: see
    /// [`LeanRoot::child_done`].
    fn done(&mut self, node: usize) -> Step {
        if let (Some(l), Some(lean)) = (self.lean_root.as_mut(), self.lean)
            && l.streams_children(self.stack.len())
        {
            let (parent, pending) = self.stack.last_mut().expect("an open collection");
            let step = l.child_done(self.src, &mut self.raw, lean, *parent, pending, node);
            if step.is_break() {
                return ControlFlow::Break(None);
            }
        }
        ControlFlow::Continue(())
    }
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
