//! The language server's fuzz entry (fuzz/server_messages.rs, which tests/it/fuzz_regressions.rs
//! also runs on every saved input; the other targets' entries are in `app::fuzz`). Not a stable
//! API: only the fuzz crate and its tests call it.

/// The language server on in-memory channels: initialize, then `bodies` (each one JSON-RPC
/// message body, arbitrary JSON; bodies that are not a message are what the transport would
/// refuse and are skipped), then `text` opened, changed and asked about (hover, completion,
/// code actions, fix all), then shutdown and exit. The server must answer every request once
/// (a response or, for a notification, nothing) and end with status 0.
pub fn server_session(bodies: &[&[u8]], text: &str) {
    use lsp_server::{Connection, Message, Notification, Request, RequestId};
    use serde_json::json;

    let (server, client) = Connection::memory();
    let handle = std::thread::spawn(move || super::run(server));
    let uri = "file:///fuzz/values.yaml";
    let req = |id: i32, method: &str, params: serde_json::Value| {
        Message::Request(Request::new(RequestId::from(id), method.into(), params))
    };
    let note = |method: &str, params: serde_json::Value| {
        Message::Notification(Notification::new(method.into(), params))
    };
    let mut sent = vec![req(1, "initialize", json!({"capabilities": {}}))];
    sent.push(note("initialized", json!({})));
    for b in bodies {
        let Ok(m) = serde_json::from_slice::<Message>(b) else {
            continue;
        };
        // `exit` and `shutdown` end the session early; the script below ends it.
        match &m {
            Message::Notification(n) if n.method == "exit" => continue,
            Message::Request(r) if r.method == "shutdown" || r.method == "initialize" => continue,
            Message::Request(r) if r.id.to_string().starts_with("\"fuzz-") => continue,
            _ => {}
        }
        sent.push(m);
    }
    let doc = json!({"uri": uri});
    let pos = json!({"line": 0, "character": 0});
    let end = json!({"line": text.lines().count(), "character": 0});
    sent.push(note(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}}),
    ));
    sent.push(note(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2},
               "contentChanges": [{"range": {"start": pos, "end": end}, "text": text}]}),
    ));
    let fuzz_req = |n: u32, method: &str, params: serde_json::Value| {
        Message::Request(Request::new(
            RequestId::from(format!("fuzz-{n}")),
            method.into(),
            params,
        ))
    };
    let ours = [
        (
            "textDocument/hover",
            json!({"textDocument": doc, "position": pos}),
        ),
        (
            "textDocument/completion",
            json!({"textDocument": doc, "position": pos}),
        ),
        (
            "textDocument/codeAction",
            json!({"textDocument": doc, "range": {"start": pos, "end": end},
                   "context": {"diagnostics": [], "only": [super::setup::FIX_ALL_KIND]}}),
        ),
    ];
    for (n, (method, params)) in ours.iter().enumerate() {
        sent.push(fuzz_req(n as u32, method, params.clone()));
    }
    sent.push(fuzz_req(99, "shutdown", serde_json::Value::Null));
    sent.push(note("exit", serde_json::Value::Null));
    for m in sent {
        if client.sender.send(m).is_err() {
            break;
        }
    }
    let code = handle.join().expect("the server thread panicked");
    assert_eq!(code, Ok(0), "the server did not end cleanly");
    let mut answered = Vec::new();
    for m in client.receiver.try_iter() {
        if let Message::Response(r) = m {
            let id = r.id.to_string();
            if let Err(e) = &r.response_result {
                assert!(
                    !e.message.contains("internal error"),
                    "request {id} panicked: {}",
                    e.message
                );
            }
            if id.starts_with("\"fuzz-") {
                assert!(!answered.contains(&id), "request {id} answered twice");
                answered.push(id);
            }
        }
    }
    assert_eq!(
        answered.len(),
        ours.len() + 1,
        "requests unanswered: {answered:?}"
    );
}
