//! The YAML model: bytes → documents with byte spans → values typed the way Helm types them.
//!
//! Reading runs through files of one idea each, in one direction:
//! - `goyaml/`: go-yaml v2's scanner and parser, ported (Helm's syntax decisions, byte spans).
//! - `events.rs`: the parser's events → calls on the arena. The only file that reads them, so
//!   the parser can be swapped by replacing it alone.
//! - `raw.rs`: the raw arena a document's events make, and the seam that hands a finished
//!   document (or root entry) to `build.rs`, `lean.rs` or `direct.rs`; `raw_node.rs`: what the
//!   arena holds (anchors kept, aliases as links), read by `build.rs` and `lean.rs`.
//! - `build.rs`: the arena → [`Node`]s with Helm's semantics (typing, tags, merge keys, the alias
//!   budget, duplicate keys); it reads the arena only.
//! - `direct.rs`: the same nodes built straight from the calls on the arena, without it, for
//!   documents without anchors, aliases, merge keys or complex keys (memory: the tree alone).
//! - `lean.rs`: the reading that keeps one root entry and drops the others as they end
//!   ([`parse_lean`] here starts it).
//! - `node.rs`: the model the readers above see (nodes, documents, duplicates, syntax errors,
//!   JSON pointers); `resolve.rs`: go-yaml v2's scalar typing; `source.rs`: a file's text and its
//!   line/column map.

mod build;
mod direct;
pub mod embedded;
pub mod emit;
mod events;
mod goyaml;
pub mod lean;
pub mod markdown;
pub mod node;
mod raw;
mod raw_node;
pub mod resolve;
pub mod source;

use std::sync::Arc;

pub use node::{Document, Entry, KeyKind, Node, Parsed, Style, SyntaxError, Value, Visitor};
pub use resolve::Scalar;
pub use source::{LineCol, Source};

/// Parse every document of a source.
pub fn parse(src: &Arc<Source>) -> Parsed {
    events::read(src, None, true)
        .unwrap_or_else(|| events::read(src, None, false).expect("a full parse never gives up"))
}

/// Parse every document like [`parse`], but keep of each document's root mapping only
/// the entries named `lean.keep`, building and dropping every other root entry piece by piece as
/// each of its entries and items ends, so that memory holds the open collections' keys instead of
/// the whole tree. Every
/// event is still read (so every syntax error is found where [`parse`] finds it) and every
/// duplicate key is recorded as [`parse`] records it; documents whose root is not a
/// mapping are built whole. Gives up (`None`: read the file with [`parse`]) whenever the
/// result could differ for a reader that looks only at the kept entry: an alias anywhere (its
/// anchor may have been dropped), a merge key at the root, any error while building, a root
/// mapping without `keep` or with a `give_up_on` key, a dropped entry `droppable` refuses.
pub fn parse_lean(src: &Arc<Source>, lean: &lean::Lean) -> Option<Parsed> {
    events::read(src, Some(lean), false)
}

/// Hand the first document of `src` to `visitor` call by call, building nothing (memory: what the
/// visitor keeps). `None`: the visitor gave up, or the file holds an anchor, an alias or a second
/// document; otherwise no documents and the error that ended the file, if any (a syntax error, the
/// node budget), as [`parse`] reports it.
pub fn visit(src: &Arc<Source>, visitor: &mut dyn Visitor) -> Option<Parsed> {
    events::visit(src, visitor)
}

/// Every YAML file of the repository's `tests`, `charts-fixtures` and `examples` (name, text),
/// for the tests that compare two readings on all of them.
#[cfg(test)]
pub(crate) fn repository_yaml_files() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut texts = Vec::new();
    for dir in ["tests", "charts-fixtures", "examples"] {
        let walk = ignore::WalkBuilder::new(root.join(dir))
            .hidden(false)
            .build();
        for e in walk.flatten() {
            let p = e.path();
            if matches!(p.extension().and_then(|x| x.to_str()), Some("yaml" | "yml"))
                && let Ok(t) = std::fs::read_to_string(p)
            {
                texts.push((p.display().to_string(), t));
            }
        }
    }
    texts
}
