//! The protocol loop on the main thread: every message read, the open documents kept, jobs
//! handed to the worker.

use std::collections::HashMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{RecvTimeoutError, Sender};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types as lsp;

use super::convert::{source_name, uri_to_path};
use super::position::{self, Encoding};
use super::requests::{code_actions, completion, hover};
use super::setup::{InitOptions, Setup, build_setup};
use super::snapshot::{Ctx, Doc, Docs, Job, is_stack_member};
use crate::config;
use crate::yaml::Source;

pub(super) struct Server {
    pub(super) out: Sender<Message>,
    pub(super) enc: Encoding,
    pub(super) root: Option<PathBuf>,
    pub(super) init: InitOptions,
    pub(super) setup: Arc<Setup>,
    pub(super) docs: Docs,
    pub(super) pending: HashMap<String, Instant>,
    pub(super) debounce: Duration,
    pub(super) jobs: Sender<Job>,
    pub(super) shut_down: bool,
}

impl Server {
    /// What a job on the worker thread needs: a snapshot of one document and the settings.
    pub(super) fn ctx(&self, uri: String, src: Arc<Source>) -> Ctx {
        Ctx {
            uri,
            src,
            enc: self.enc,
            setup: self.setup.clone(),
            docs: self.docs.clone(),
            lines: std::sync::OnceLock::new(),
        }
    }

    pub(super) fn main_loop(&mut self, connection: &Connection) -> u8 {
        loop {
            let now = Instant::now();
            let next = self.pending.values().min().copied();
            let msg = match next {
                Some(at) => match connection
                    .receiver
                    .recv_timeout(at.saturating_duration_since(now))
                {
                    Ok(m) => Some(m),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return 1,
                },
                None => match connection.receiver.recv() {
                    Ok(m) => Some(m),
                    Err(_) => return 1,
                },
            };
            match msg {
                Some(Message::Request(req)) => self.request(req),
                Some(Message::Notification(n)) if n.method == "exit" => {
                    return if self.shut_down { 0 } else { 1 };
                }
                Some(Message::Notification(n)) => self.notification(n),
                Some(Message::Response(_)) | None => {}
            }
            let now = Instant::now();
            let due: Vec<String> = self
                .pending
                .iter()
                .filter(|(_, at)| **at <= now)
                .map(|(u, _)| u.clone())
                .collect();
            for uri in due {
                self.pending.remove(&uri);
                self.lint_with_stack(&uri);
            }
        }
    }

    pub(super) fn send(&self, m: impl Into<Message>) {
        let _ = self.out.send(m.into());
    }

    pub(super) fn show(&self, typ: lsp::MessageType, message: String) {
        self.send(Notification::new(
            "window/showMessage".into(),
            lsp::ShowMessageParams { typ, message },
        ));
    }

    pub(super) fn error(&self, id: RequestId, code: ErrorCode, message: String) {
        self.send(Response::new_err(id, code as i32, message));
    }

    pub(super) fn request(&mut self, req: Request) {
        if self.shut_down {
            return self.error(
                req.id,
                ErrorCode::InvalidRequest,
                "the server is shutting down".into(),
            );
        }
        match req.method.as_str() {
            "shutdown" => {
                self.shut_down = true;
                self.send(Response::new_ok(req.id, ()));
            }
            "textDocument/codeAction" => {
                self.with_doc::<lsp::CodeActionParams>(req, |p| &p.text_document.uri, code_actions)
            }
            "textDocument/hover" => self.with_doc::<lsp::HoverParams>(
                req,
                |p| &p.text_document_position_params.text_document.uri,
                hover,
            ),
            "textDocument/completion" => self.with_doc::<lsp::CompletionParams>(
                req,
                |p| &p.text_document_position.text_document.uri,
                completion,
            ),
            _ => self.error(
                req.id,
                ErrorCode::MethodNotFound,
                format!("cgpu-lint server does not handle {}", req.method),
            ),
        }
    }

    /// Answer a request about one open document on the worker; an unknown document or bad params
    /// get an error response here.
    pub(super) fn with_doc<P>(
        &mut self,
        req: Request,
        uri_of: fn(&P) -> &lsp::Uri,
        answer: fn(&Ctx, P) -> serde_json::Value,
    ) where
        P: serde::de::DeserializeOwned + Send + 'static,
    {
        let id = req.id.clone();
        let params: P = match serde_json::from_value(req.params) {
            Ok(p) => p,
            Err(e) => {
                return self.error(id, ErrorCode::InvalidParams, format!("{}: {e}", req.method));
            }
        };
        let uri = uri_of(&params).as_str().to_string();
        let Some(src) = self
            .docs
            .lock()
            .ok()
            .and_then(|d| d.get(&uri).map(|d| d.src.clone()))
        else {
            return self.error(
                id,
                ErrorCode::InvalidParams,
                format!("unknown document {uri}: it is not open (textDocument/didOpen)"),
            );
        };
        let ctx = self.ctx(uri, src);
        let out = self.out.clone();
        let method = req.method;
        let _ = self.jobs.send(Box::new(move || {
            let result =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| answer(&ctx, params)));
            let resp = match result {
                Ok(v) => Response::new_ok(id, v),
                Err(_) => Response::new_err(
                    id,
                    ErrorCode::InternalError as i32,
                    format!("cgpu-lint: internal error answering {method}"),
                ),
            };
            let _ = out.send(resp.into());
        }));
    }

    pub(super) fn notification(&mut self, n: Notification) {
        match n.method.as_str() {
            "textDocument/didOpen" => {
                let Ok(p) = serde_json::from_value::<lsp::DidOpenTextDocumentParams>(n.params)
                else {
                    return;
                };
                let uri = p.text_document.uri.as_str().to_string();
                let src = Source::new(source_name(&uri), p.text_document.text);
                // As `check` refuses such a file, the server does not lint it (and says so once).
                if src.text.len() as u64 > self.setup.max_size {
                    let e = crate::check::InputError::TooLarge {
                        path: src.name.clone(),
                        size: Some(src.text.len() as u64),
                        limit: self.setup.max_size,
                    };
                    self.show(
                        lsp::MessageType::WARNING,
                        format!("cgpu-lint: {e}; not checked"),
                    );
                }
                if let Ok(mut docs) = self.docs.lock() {
                    docs.insert(
                        uri.clone(),
                        Doc {
                            version: p.text_document.version,
                            src,
                        },
                    );
                }
                self.pending.remove(&uri);
                self.lint_with_stack(&uri);
            }
            "textDocument/didChange" => {
                let Ok(p) = serde_json::from_value::<lsp::DidChangeTextDocumentParams>(n.params)
                else {
                    return;
                };
                let uri = p.text_document.uri.as_str().to_string();
                let Ok(mut docs) = self.docs.lock() else {
                    return;
                };
                let Some(doc) = docs.get_mut(&uri) else {
                    return;
                };
                let mut src = doc.src.clone();
                for c in p.content_changes {
                    let text = position::apply_change(&src.text, c.range, &c.text, self.enc);
                    src = Source::new(src.name.clone(), text);
                }
                doc.src = src;
                doc.version = p.text_document.version;
                drop(docs);
                self.pending.insert(uri, Instant::now() + self.debounce);
            }
            "textDocument/didClose" => {
                let Ok(p) = serde_json::from_value::<lsp::DidCloseTextDocumentParams>(n.params)
                else {
                    return;
                };
                let uri = p.text_document.uri;
                self.pending.remove(uri.as_str());
                if let Ok(mut docs) = self.docs.lock() {
                    docs.remove(uri.as_str());
                }
                self.send(Notification::new(
                    "textDocument/publishDiagnostics".into(),
                    lsp::PublishDiagnosticsParams {
                        uri,
                        diagnostics: Vec::new(),
                        version: None,
                    },
                ));
            }
            "textDocument/didSave" => {
                let Ok(p) = serde_json::from_value::<lsp::DidSaveTextDocumentParams>(n.params)
                else {
                    return;
                };
                // A saved .cgpu-lint.toml changes the settings of every document.
                let is_config = uri_to_path(p.text_document.uri.as_str())
                    .is_some_and(|p| p.file_name() == Some(config::FILE_NAME.as_ref()));
                if is_config {
                    let (setup, problems) = build_setup(self.root.as_deref(), &self.init);
                    self.setup = Arc::new(setup);
                    for m in problems {
                        self.show(lsp::MessageType::ERROR, m);
                    }
                    let uris: Vec<String> = self
                        .docs
                        .lock()
                        .map(|d| d.keys().cloned().collect())
                        .unwrap_or_default();
                    for u in uris {
                        self.lint(&u);
                    }
                }
            }
            _ => {}
        }
    }

    /// Lint `uri`; when it is a member of the values stack, also the other open members, whose
    /// findings may depend on it (a value set here may override theirs).
    pub(super) fn lint_with_stack(&self, uri: &str) {
        self.lint(uri);
        if !is_stack_member(&self.setup, uri) {
            return;
        }
        let others: Vec<String> = self
            .docs
            .lock()
            .map(|d| {
                d.keys()
                    .filter(|u| *u != uri && is_stack_member(&self.setup, u))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        for u in others {
            self.lint(&u);
        }
    }

    /// Lint the current text of `uri` on the worker and publish the findings, unless the text has
    /// changed again by the time the worker gets to it.
    pub(super) fn lint(&self, uri: &str) {
        let Some((src, version)) = self
            .docs
            .lock()
            .ok()
            .and_then(|d| d.get(uri).map(|d| (d.src.clone(), d.version)))
        else {
            return;
        };
        let ctx = self.ctx(uri.to_string(), src);
        let out = self.out.clone();
        let _ = self.jobs.send(Box::new(move || {
            if !ctx.is_current() {
                return;
            }
            let diagnostics = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                ctx.findings()
                    .iter()
                    .map(|d| ctx.to_lsp(d))
                    .collect::<Vec<_>>()
            })) {
                Ok(d) => d,
                Err(_) => return,
            };
            let Ok(uri) = lsp::Uri::from_str(&ctx.uri) else {
                return;
            };
            let _ = out.send(
                Notification::new(
                    "textDocument/publishDiagnostics".into(),
                    lsp::PublishDiagnosticsParams {
                        uri,
                        diagnostics,
                        version: Some(version),
                    },
                )
                .into(),
            );
        }));
    }
}
