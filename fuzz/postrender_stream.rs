// The postrender_stream target's property, shared with tests/it/fuzz_regressions.rs (which runs it
// on tests/fuzz-regressions/postrender_stream/ and fuzz/corpus/postrender_stream/): the
// post-render engine on an arbitrary multi-document stream, checking and fixing: no panic; an
// error or an outcome whose findings and replacements lie inside the stream.

/// Panics (with the reason) when the property fails on `data`.
pub fn postrender_stream_property(data: &[u8]) {
    cgpu_lint::app::fuzz::postrender(data);
}
