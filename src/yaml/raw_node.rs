//! What the raw arena ([`super::raw::Arena`]) holds: a document as a flat list of nodes, anchors
//! kept, aliases as links to the node they name. It imports only `node.rs`: `raw.rs` fills it,
//! `build.rs` and `lean.rs` read it, `events.rs` takes the nesting limit from it.

use std::ops::Range;

use super::node::Style;

/// How deep collections may nest (the parser stops at this depth with an error instead of
/// recursing into a stack overflow).
pub const MAX_NESTING_DEPTH: usize = 256;

pub(super) enum RawKind {
    /// The scalar's text (escapes resolved), its style and its tag (the suffix after
    /// `tag:yaml.org,2002:` for a standard tag, else the tag as written).
    Scalar(String, Style, Option<String>),
    Seq(Vec<usize>),
    Map(Vec<(usize, usize)>),
    Alias(usize),
}

pub(super) struct RawNode {
    pub(super) kind: RawKind,
    pub(super) span: Range<usize>,
    pub(super) flow: bool,
}
