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
//! are the edits those findings carry; "fix all" is [`crate::lint::lint_fix`], which is `fix`.

pub mod knowledge;
pub mod position;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{RecvTimeoutError, Sender};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types as lsp;
use serde::Deserialize;

use crate::check::DEFAULT_MAX_FILE_SIZE;
use crate::config::{self, Overrides};
use crate::diag::Diagnostic;
use crate::lint::Filter;
use crate::lint::{self, Settings};
use crate::rules::catalogue::Severity;
use crate::yaml::Source;
use position::{Encoding, LineIndex};

/// The code action kind of "fix all cgpu-lint findings".
pub const FIX_ALL_KIND: &str = "source.fixAll.cgpu-lint";

/// How long after the last change a document is linted again, unless `debounceMs` says otherwise.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(100);

/// `initializationOptions` the server understands (all optional).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct InitOptions {
    /// The cluster's region id, as `--region`.
    pub region: Option<String>,
    /// A Helm values stack in `-f` order, paths relative to the workspace root: a member is
    /// checked as `check --stack` checks the stack.
    pub stack: Vec<String>,
    /// The chart's values.yaml under the stack, as `--chart-values`.
    pub chart_values: Option<String>,
    /// As `--select` / `--ignore` / `--require-cgpu`.
    pub select: Vec<String>,
    pub ignore: Vec<String>,
    pub require_cgpu: bool,
    /// As `--config FILE` (relative to the workspace root) and `--no-config`.
    pub config: Option<String>,
    pub no_config: bool,
    /// Milliseconds to wait after a change before linting.
    pub debounce_ms: Option<u64>,
    /// As `--max-file-size`: a larger document is not checked (the user is told once).
    pub max_file_size: Option<u64>,
    /// As `fix --unsafe-fixes`: "fix all" applies the unsafe fixes too.
    pub unsafe_fixes: bool,
}

/// What decides the findings, shared with the worker.
struct Setup {
    settings: Settings,
    /// The stack members, absolute, in order; the chart values under them.
    stack: Vec<PathBuf>,
    chart_values: Option<PathBuf>,
    max_size: u64,
    /// `unsafeFixes`: fix-all applies unsafe fixes too.
    unsafe_fixes: bool,
}

struct Doc {
    version: i32,
    src: Arc<Source>,
}

type Docs = Arc<Mutex<HashMap<String, Doc>>>;
type Job = Box<dyn FnOnce() + Send>;

struct Server {
    out: Sender<Message>,
    enc: Encoding,
    root: Option<PathBuf>,
    init: InitOptions,
    setup: Arc<Setup>,
    docs: Docs,
    pending: HashMap<String, Instant>,
    debounce: Duration,
    jobs: Sender<Job>,
    shut_down: bool,
}

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
    let (jobs, job_rx) = crossbeam_channel::unbounded::<Job>();
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

fn capabilities(enc: Encoding) -> lsp::ServerCapabilities {
    lsp::ServerCapabilities {
        position_encoding: Some(enc.kind()),
        text_document_sync: Some(lsp::TextDocumentSyncCapability::Options(
            lsp::TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(lsp::TextDocumentSyncKind::INCREMENTAL),
                save: Some(lsp::TextDocumentSyncSaveOptions::Supported(true)),
                ..Default::default()
            },
        )),
        code_action_provider: Some(lsp::CodeActionProviderCapability::Options(
            lsp::CodeActionOptions {
                code_action_kinds: Some(vec![
                    lsp::CodeActionKind::QUICKFIX,
                    lsp::CodeActionKind::new(FIX_ALL_KIND),
                ]),
                resolve_provider: Some(false),
                ..Default::default()
            },
        )),
        hover_provider: Some(lsp::HoverProviderCapability::Simple(true)),
        completion_provider: Some(lsp::CompletionOptions {
            trigger_characters: Some(vec![":".into(), " ".into()]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The first workspace folder, else the root URI, else the deprecated root path.
fn workspace_root(p: &lsp::InitializeParams) -> Option<PathBuf> {
    if let Some(f) = p.workspace_folders.as_ref().and_then(|f| f.first()) {
        return uri_to_path(f.uri.as_str());
    }
    #[allow(deprecated)]
    if let Some(u) = &p.root_uri {
        return uri_to_path(u.as_str());
    }
    #[allow(deprecated)]
    p.root_path.as_ref().map(PathBuf::from)
}

/// The settings a `check` run in the workspace root would use: `.cgpu-lint.toml` there (or the
/// nearest one above it, as `check` finds it from its working directory), with the
/// initializationOptions in the place of command-line flags. Problems are returned as messages for
/// the user; the server then runs with what could be read.
fn build_setup(root: Option<&Path>, init: &InitOptions) -> (Setup, Vec<String>) {
    let mut problems = Vec::new();
    let base = root
        .map(Path::to_path_buf)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default();
    let overrides = Overrides {
        config: init.config.as_ref().map(|c| base.join(c)),
        no_config: init.no_config,
        select: init.select.clone(),
        ignore: init.ignore.clone(),
        region: init.region.clone(),
        require_cgpu: init.require_cgpu,
        ..Overrides::default()
    };
    let file = overrides
        .config_file(&base)
        .map_err(|e| problems.push(format!("cgpu-lint: {e}")))
        .ok()
        .flatten();
    let settings = config::resolve_with(&overrides, file.as_ref()).unwrap_or_else(|e| {
        problems.push(format!("cgpu-lint: initializationOptions: {e}"));
        // What could be read, with no select/ignore at all.
        let mut r = config::resolve_with(
            &Overrides {
                select: Vec::new(),
                ignore: Vec::new(),
                ..overrides.clone()
            },
            file.as_ref(),
        )
        .expect("the file's rules were checked when it was read");
        r.settings.filter = Filter::default();
        r
    });
    let setup = Setup {
        settings: settings.settings,
        stack: init.stack.iter().map(|p| absolute(&base.join(p))).collect(),
        chart_values: init.chart_values.as_ref().map(|p| base.join(p)),
        max_size: init.max_file_size.unwrap_or(DEFAULT_MAX_FILE_SIZE),
        unsafe_fixes: init.unsafe_fixes,
    };
    (setup, problems)
}

/// `path` with `.` and `..` resolved lexically (symlinks are not followed, as editors do not).
fn absolute(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The local path of a `file:` URI (percent-decoded); `None` for other schemes.
pub fn uri_to_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    use std::os::unix::ffi::OsStringExt;
    Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
}

/// A `file:` URI for a local absolute path.
pub fn path_to_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The name a document's findings carry: its path for a `file:` URI (so per-file-ignores match
/// as they do for `check`), else the URI.
fn source_name(uri: &str) -> String {
    uri_to_path(uri).map_or_else(|| uri.to_string(), |p| p.to_string_lossy().into_owned())
}

impl Server {
    /// What a job on the worker thread needs: a snapshot of one document and the settings.
    fn ctx(&self, uri: String, src: Arc<Source>) -> Ctx {
        Ctx {
            uri,
            src,
            enc: self.enc,
            setup: self.setup.clone(),
            docs: self.docs.clone(),
            lines: std::sync::OnceLock::new(),
        }
    }

    fn main_loop(&mut self, connection: &Connection) -> u8 {
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

    fn send(&self, m: impl Into<Message>) {
        let _ = self.out.send(m.into());
    }

    fn show(&self, typ: lsp::MessageType, message: String) {
        self.send(Notification::new(
            "window/showMessage".into(),
            lsp::ShowMessageParams { typ, message },
        ));
    }

    fn error(&self, id: RequestId, code: ErrorCode, message: String) {
        self.send(Response::new_err(id, code as i32, message));
    }

    fn request(&mut self, req: Request) {
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
    fn with_doc<P>(
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

    fn notification(&mut self, n: Notification) {
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
                        size: src.text.len() as u64,
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
    fn lint_with_stack(&self, uri: &str) {
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
    fn lint(&self, uri: &str) {
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
                    .map(|d| to_lsp(&ctx, d))
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

/// A snapshot of one document and the settings, for a job on the worker.
struct Ctx {
    uri: String,
    src: Arc<Source>,
    enc: Encoding,
    setup: Arc<Setup>,
    docs: Docs,
    /// The protocol's lines of `src`, built on the worker when first needed.
    lines: std::sync::OnceLock<LineIndex>,
}

impl Ctx {
    fn lines(&self) -> &LineIndex {
        self.lines.get_or_init(|| LineIndex::new(&self.src.text))
    }

    /// A byte range of the document as an LSP range.
    fn range(&self, span: &std::ops::Range<usize>) -> lsp::Range {
        self.lines().range(&self.src.text, span, self.enc)
    }

    fn offset(&self, pos: lsp::Position) -> usize {
        self.lines().offset(&self.src.text, pos, self.enc)
    }

    /// Whether the snapshot is still the document's text.
    fn is_current(&self) -> bool {
        self.docs
            .lock()
            .ok()
            .and_then(|d| d.get(&self.uri).map(|d| Arc::ptr_eq(&d.src, &self.src)))
            .unwrap_or(false)
    }

    /// The findings `check` reports for this text, in `check`'s order.
    fn findings(&self) -> Vec<Diagnostic> {
        if self.src.text.len() as u64 > self.setup.max_size {
            return Vec::new();
        }
        let mut diags = match self.stack_member() {
            Some(i) => self.stack_findings(i),
            None => lint::lint_file(&self.src, &self.setup.settings),
        };
        diags.retain(|d| Arc::ptr_eq(&d.src, &self.src));
        diags.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        diags
    }

    fn stack_member(&self) -> Option<usize> {
        stack_position(&self.setup, &self.uri)
    }

    /// `check --stack` over the stack, with open members' editor text in place of their files.
    fn stack_findings(&self, me: usize) -> Vec<Diagnostic> {
        let setup = &self.setup;
        let max = setup.max_size;
        let open: HashMap<String, Arc<Source>> = self
            .docs
            .lock()
            .map(|d| {
                d.iter()
                    .map(|(u, doc)| (source_name(u), doc.src.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let mut layers = Vec::new();
        for (i, p) in setup.stack.iter().enumerate() {
            let name = p.to_string_lossy().into_owned();
            if i == me {
                layers.push(self.src.clone());
            } else if let Some(s) = open.get(&name) {
                layers.push(s.clone());
            } else if let Ok(s) = crate::check::read_input(&name, max) {
                layers.push(s);
            }
        }
        let base = match &setup.chart_values {
            Some(p) => crate::check::read_input(&p.to_string_lossy(), max).ok(),
            None => None,
        };
        let base = base.unwrap_or_else(|| {
            Source::new("<chart defaults>", crate::cgpu::CHART_DEFAULTS.to_string())
        });
        let mut all = vec![base];
        all.extend(layers);
        lint::lint_stack(&all, &setup.settings)
    }
}

/// The place of the document `uri` in the values stack, if it is a member.
fn stack_position(setup: &Setup, uri: &str) -> Option<usize> {
    let path = absolute(&uri_to_path(uri)?);
    setup.stack.iter().position(|p| *p == path)
}

fn is_stack_member(setup: &Setup, uri: &str) -> bool {
    stack_position(setup, uri).is_some()
}

fn severity(s: Severity) -> lsp::DiagnosticSeverity {
    match s {
        Severity::Error => lsp::DiagnosticSeverity::ERROR,
        Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        Severity::Info => lsp::DiagnosticSeverity::INFORMATION,
    }
}

/// One finding as an LSP diagnostic: the rule name is the code; the help line follows the message
/// on a second line; related places (the first of two duplicate keys) are relatedInformation.
/// There is no `codeDescription`: the rules have no documentation pages on the web (their
/// explanation is `cgpu-lint explain RULE`), and a link that does not resolve is worse than none.
fn to_lsp(ctx: &Ctx, d: &Diagnostic) -> lsp::Diagnostic {
    let uri = lsp::Uri::from_str(&ctx.uri).ok();
    let related = match &uri {
        Some(uri) if !d.related.is_empty() => Some(
            d.related
                .iter()
                .map(|r| lsp::DiagnosticRelatedInformation {
                    location: lsp::Location {
                        uri: uri.clone(),
                        range: ctx.range(&r.span),
                    },
                    message: r.message.clone(),
                })
                .collect(),
        ),
        _ => None,
    };
    let mut message = d.message.clone();
    if !d.help.is_empty() {
        message.push_str("\nhelp: ");
        message.push_str(&d.help);
    }
    if let Some(note) = &d.fix_note {
        message.push_str("\nnote: ");
        message.push_str(note);
    }
    lsp::Diagnostic {
        range: ctx.range(&d.span),
        severity: Some(severity(d.severity)),
        code: Some(lsp::NumberOrString::String(d.rule.to_string())),
        code_description: None,
        source: Some("cgpu-lint".into()),
        message,
        related_information: related,
        tags: None,
        data: None,
    }
}

fn wanted(only: Option<&[lsp::CodeActionKind]>, kind: &str) -> bool {
    only.is_none_or(|only| {
        only.iter().any(|o| {
            let o = o.as_str();
            kind == o || kind.strip_prefix(o).is_some_and(|r| r.starts_with('.'))
        })
    })
}

fn overlaps(a: &lsp::Range, b: &lsp::Range) -> bool {
    let key = |p: &lsp::Position| (p.line, p.character);
    key(&a.start) <= key(&b.end) && key(&b.start) <= key(&a.end)
}

/// Quick fixes for the findings in the requested range, and "fix all".
fn code_actions(ctx: &Ctx, p: lsp::CodeActionParams) -> serde_json::Value {
    let Ok(uri) = lsp::Uri::from_str(&ctx.uri) else {
        return serde_json::Value::Null;
    };
    let only = p.context.only.as_deref();
    let mut actions: Vec<lsp::CodeActionOrCommand> = Vec::new();
    let edit_of = |edits: Vec<lsp::TextEdit>| lsp::WorkspaceEdit {
        changes: Some(HashMap::from([(uri.clone(), edits)])),
        ..Default::default()
    };
    if wanted(only, lsp::CodeActionKind::QUICKFIX.as_str()) {
        for d in ctx.findings() {
            // Quick fixes offer unsafe fixes too, one by one and labelled as such.
            if d.edits.is_empty() || !d.edits.iter().all(|e| Arc::ptr_eq(&e.src, &ctx.src)) {
                continue;
            }
            let diag = to_lsp(ctx, &d);
            if !overlaps(&diag.range, &p.range) {
                continue;
            }
            let edits = d
                .edits
                .iter()
                .map(|e| lsp::TextEdit {
                    range: ctx.range(&e.range),
                    new_text: e.replacement.clone(),
                })
                .collect();
            let (title, preferred) = match &d.consequence {
                Some(c) => (
                    format!("{}: {} (unsafe fix: {})", d.rule, d.help, c.line),
                    false,
                ),
                None => (format!("{}: {}", d.rule, d.help), true),
            };
            actions.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
                title,
                kind: Some(lsp::CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![diag]),
                edit: Some(edit_of(edits)),
                is_preferred: Some(preferred),
                ..Default::default()
            }));
        }
    }
    if wanted(only, FIX_ALL_KIND) && ctx.src.text.len() as u64 <= ctx.setup.max_size {
        // Exactly what `fix` does to this text: the same pipeline, settings and fixpoint.
        let fixed = lint::lint_fix(&ctx.src, &ctx.setup.settings, ctx.setup.unsafe_fixes);
        if fixed.changed() && fixed.refused.is_none() {
            let (span, new_text) = minimal_edit(&ctx.src.text, &fixed.text);
            actions.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
                title: format!(
                    "Fix all cgpu-lint findings ({} fix{})",
                    fixed.applied.len(),
                    if fixed.applied.len() == 1 { "" } else { "es" }
                ),
                kind: Some(lsp::CodeActionKind::new(FIX_ALL_KIND)),
                edit: Some(edit_of(vec![lsp::TextEdit {
                    range: ctx.range(&span),
                    new_text,
                }])),
                ..Default::default()
            }));
        }
    }
    serde_json::to_value(actions).unwrap_or_default()
}

/// One replacement that turns `before` into `after`: the bytes between their common prefix and
/// common suffix (on character boundaries).
pub fn minimal_edit(before: &str, after: &str) -> (std::ops::Range<usize>, String) {
    let mut pre = before
        .bytes()
        .zip(after.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    while !before.is_char_boundary(pre) || !after.is_char_boundary(pre) {
        pre -= 1;
    }
    let max_suf = before.len().min(after.len()) - pre;
    let mut suf = before
        .bytes()
        .rev()
        .zip(after.bytes().rev())
        .take(max_suf)
        .take_while(|(a, b)| a == b)
        .count();
    while !before.is_char_boundary(before.len() - suf) || !after.is_char_boundary(after.len() - suf)
    {
        suf -= 1;
    }
    (
        pre..before.len() - suf,
        after[pre..after.len() - suf].to_string(),
    )
}

fn hover(ctx: &Ctx, p: lsp::HoverParams) -> serde_json::Value {
    if ctx.src.text.len() as u64 > ctx.setup.max_size {
        return serde_json::Value::Null;
    }
    let at = ctx.offset(p.text_document_position_params.position);
    match knowledge::hover(&ctx.src, at) {
        Some((text, span)) => serde_json::to_value(lsp::Hover {
            contents: lsp::HoverContents::Markup(lsp::MarkupContent {
                kind: lsp::MarkupKind::Markdown,
                value: text,
            }),
            range: Some(ctx.range(&span)),
        })
        .unwrap_or_default(),
        None => serde_json::Value::Null,
    }
}

fn completion(ctx: &Ctx, p: lsp::CompletionParams) -> serde_json::Value {
    let at = ctx.offset(p.text_document_position.position);
    let Some((candidates, span)) = knowledge::complete(&ctx.src, at) else {
        return serde_json::Value::Null;
    };
    let range = ctx.range(&span);
    let items: Vec<lsp::CompletionItem> = candidates
        .into_iter()
        .enumerate()
        .map(|(i, c)| lsp::CompletionItem {
            label: c.label.clone(),
            kind: Some(if c.is_key {
                lsp::CompletionItemKind::PROPERTY
            } else {
                lsp::CompletionItemKind::ENUM_MEMBER
            }),
            detail: Some(c.detail),
            documentation: c.documentation.map(|d| {
                lsp::Documentation::MarkupContent(lsp::MarkupContent {
                    kind: lsp::MarkupKind::Markdown,
                    value: d,
                })
            }),
            sort_text: Some(format!("{i:02}")),
            filter_text: Some(c.label),
            text_edit: Some(lsp::CompletionTextEdit::Edit(lsp::TextEdit {
                range,
                new_text: c.insert,
            })),
            ..Default::default()
        })
        .collect();
    serde_json::to_value(lsp::CompletionResponse::Array(items)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_edit_spans_the_change_only() {
        let (r, t) = minimal_edit("a: \"1\"\nb: x\n", "a: 1\nb: x\n");
        assert_eq!((r, t.as_str()), (3..6, "1"));
        let (r, t) = minimal_edit("aé", "aè");
        assert_eq!((r, t.as_str()), (1..3, "è"));
        let (r, t) = minimal_edit("same", "same");
        assert_eq!((r, t.as_str()), (4..4, ""));
    }

    #[test]
    fn file_uris_round_trip() {
        let p = Path::new("/tmp/a b/värde.yaml");
        let u = path_to_uri(p);
        assert_eq!(u, "file:///tmp/a%20b/v%C3%A4rde.yaml");
        assert_eq!(uri_to_path(&u).unwrap(), p);
        assert!(uri_to_path("untitled:Untitled-1").is_none());
    }

    #[test]
    fn only_filters_kinds_by_prefix() {
        let k = |s: &str| vec![lsp::CodeActionKind::from(s.to_string())];
        assert!(wanted(None, FIX_ALL_KIND));
        assert!(wanted(Some(&k("source")), FIX_ALL_KIND));
        assert!(wanted(Some(&k("source.fixAll")), FIX_ALL_KIND));
        assert!(!wanted(Some(&k("source.fix")), FIX_ALL_KIND));
        assert!(!wanted(Some(&k("quickfix")), FIX_ALL_KIND));
    }
}
