//! go-yaml v2's scanner and parser, ported from its Go source (`scannerc.go`, `parserc.go`:
//! go-yaml v2.4.0, byte for byte the `goyaml.v2` that sigs.k8s.io/yaml v1.4.0 vendors, which Helm
//! 3.18 reads values with; Helm 4.2 reads them with the same code as go.yaml.in/yaml/v2). go-yaml
//! v2 is a port of libyaml 0.1, and it keeps 0.1's decisions where YAML 1.2 and later libyaml
//! differ: a flow key and its `:` on one line, tabs only where libyaml 0.1 takes them, a `...`
//! that opens a stream, `%YAML 1.1` only, `?` and `:` as indicators inside flow collections, a
//! comment glued to a token. Porting the code, not imitating its output, makes Helm's decisions
//! ours by construction; `tests.rs` holds them to real Helm's messages.
//!
//! What differs from the Go code changes no decision: marks carry the byte offset beside go-yaml's
//! character index, line and column; a block scalar's token ends at its last content character
//! (go-yaml's ends after its trailing line breaks), so that its span is the node's text; errors are
//! values; go-yaml's ever-growing stale simple-key map is pruned below the token queue's head.

mod parser;
mod scanner;

#[cfg(test)]
use parser::Event;
pub use parser::{EventKind, Parser};
pub use scanner::{Error, ErrorKind, ScalarStyle};

#[cfg(test)]
mod tests;
