// The server_messages target's property, shared with tests/it/fuzz_regressions.rs (which runs it on
// tests/fuzz-regressions/server_messages/ and fuzz/corpus/server_messages/). The input is split
// at its first NUL byte: before it, JSON-RPC message bodies, one a line; after it (or the whole
// input when there is no NUL), a document text opened, changed and asked about. No panic; every
// request gets one response (or, for a notification, nothing); the server ends with status 0.

/// Panics (with the reason) when the property fails on `data`.
pub fn server_messages_property(data: &[u8]) {
    let (bodies, text) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (&data[..0], data),
    };
    let bodies: Vec<&[u8]> = bodies.split(|&b| b == b'\n').collect();
    cgpu_lint::server::fuzz::server_session(&bodies, &String::from_utf8_lossy(text));
}
