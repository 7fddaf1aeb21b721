//! `cgpu-lint server`: a Language Server Protocol 3.17 server on stdin/stdout.
//!
//! Built on rust-analyzer's `lsp-server` (framing, the initialize handshake, channels) and
//! `lsp-types` (the protocol's types): synchronous like the rest of this code base, no async
//! runtime. Two threads do the work. The main thread owns the protocol: it reads every message,
//! keeps the open documents and answers at once what needs no linting (shutdown, errors). A worker
//! thread runs everything that reads a document (linting, code actions, hover, completion), on a
//! snapshot, so a slow or hostile document never stops the server from reading the next message;
//! a panic in a job is caught and the request gets an error response.
//!
//! Every finding comes from [`crate::lint::lint_file`] (or, for a `stack` member, the stack check
//! `check --stack` runs), so the editor shows what `check` prints for the same bytes. Quick fixes
//! are the edits those findings carry; "fix all" is [`crate::lint::fix::lint_fix`], which is `fix`.

pub mod fuzz;
pub mod knowledge;
pub mod position;

mod convert;
mod protocol;
mod requests;
mod setup;
mod snapshot;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use lsp_server::Connection;
use lsp_types as lsp;

use position::Encoding;
use protocol::Server;
use setup::{InitOptions, build_setup, capabilities, workspace_root};

/// How long after the last change a document is linted again, unless `debounceMs` says otherwise.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(100);

/// Run the server on stdin/stdout until `exit`. Returns the process exit status the protocol asks
/// for: 0 when `shutdown` came before `exit`, 1 otherwise.
pub fn run_stdio() -> Result<u8, String> {
    let (connection, io_threads) = Connection::stdio();
    let code = run(connection)?;
    io_threads.join().map_err(|e| e.to_string())?;
    Ok(code)
}

/// Run the server on a connection (stdio, or in-memory channels).
pub fn run(connection: Connection) -> Result<u8, String> {
    let (id, params) = connection.initialize_start().map_err(|e| e.to_string())?;
    let params: lsp::InitializeParams = serde_json::from_value(params).unwrap_or_default();
    let enc = Encoding::negotiate(
        params
            .capabilities
            .general
            .as_ref()
            .and_then(|g| g.position_encodings.as_deref()),
    );
    let root = workspace_root(&params);
    let mut messages = Vec::new();
    let init: InitOptions = match params.initialization_options.clone() {
        None | Some(serde_json::Value::Null) => InitOptions::default(),
        Some(v) => serde_json::from_value(v).unwrap_or_else(|e| {
            messages.push(format!("cgpu-lint: initializationOptions: {e}"));
            InitOptions::default()
        }),
    };
    let result = serde_json::json!({
        "capabilities": capabilities(enc),
        "serverInfo": {"name": "cgpu-lint", "version": env!("CARGO_PKG_VERSION")},
    });
    connection
        .initialize_finish(id, result)
        .map_err(|e| e.to_string())?;
    let (jobs, job_rx) = crossbeam_channel::unbounded::<snapshot::Job>();
    let worker = std::thread::Builder::new()
        .name("cgpu-lint-worker".into())
        .spawn(move || {
            for job in job_rx {
                // A panic is a bug; it must not take the server down with it.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
        })
        .map_err(|e| e.to_string())?;
    let (setup, problems) = build_setup(root.as_deref(), &init);
    messages.extend(problems);
    let mut server = Server {
        out: connection.sender.clone(),
        enc,
        root,
        debounce: init
            .debounce_ms
            .map_or(DEFAULT_DEBOUNCE, Duration::from_millis),
        init,
        setup: Arc::new(setup),
        docs: Arc::default(),
        pending: HashMap::new(),
        jobs,
        shut_down: false,
    };
    for m in messages {
        server.show(lsp::MessageType::ERROR, m);
    }
    let code = server.main_loop(&connection);
    drop(server);
    let _ = worker.join();
    Ok(code)
}
