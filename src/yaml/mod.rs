//! The YAML model: bytes → documents with byte spans → values typed the way Helm types them.
//! The parser crate is used only in `tree.rs`, so it can be swapped without touching the rules.

pub mod resolve;
pub mod source;
pub mod tree;

pub use resolve::Scalar;
pub use source::{LineCol, Source};
pub use tree::{Document, Entry, KeyKind, Node, Parsed, Style, SyntaxError, Value, parse};
