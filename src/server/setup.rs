//! Setup: the initialize handshake's options, the capabilities, and the settings a `check` run
//! in the workspace root would use.

use std::path::{Path, PathBuf};

use lsp_types as lsp;
use serde::Deserialize;

use super::convert::uri_to_path;
use super::position::Encoding;
use crate::check::DEFAULT_MAX_FILE_SIZE;
use crate::config::{self, Overrides};
use crate::lint::Filter;
use crate::lint::Settings;

/// The code action kind of "fix all cgpu-lint findings".
pub(super) const FIX_ALL_KIND: &str = "source.fixAll.cgpu-lint";

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
    /// As `--extend-safe-fixes` / `--extend-unsafe-fixes` (added to the config's `[fix]`).
    pub extend_safe_fixes: Vec<String>,
    pub extend_unsafe_fixes: Vec<String>,
}

/// What decides the findings, shared with the worker.
pub(super) struct Setup {
    pub(super) settings: Settings,
    /// The stack members, absolute, in order; the chart values under them.
    pub(super) stack: Vec<PathBuf>,
    pub(super) chart_values: Option<PathBuf>,
    pub(super) max_size: u64,
    /// `unsafeFixes`: fix-all applies unsafe fixes too.
    pub(super) unsafe_fixes: bool,
}

pub(super) fn capabilities(enc: Encoding) -> lsp::ServerCapabilities {
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
pub(super) fn workspace_root(p: &lsp::InitializeParams) -> Option<PathBuf> {
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
pub(super) fn build_setup(root: Option<&Path>, init: &InitOptions) -> (Setup, Vec<String>) {
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
        extend_safe: init.extend_safe_fixes.clone(),
        extend_unsafe: init.extend_unsafe_fixes.clone(),
        from_editor: true,
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
        let mut r = config::resolve_with(&overrides.without_rule_lists(), file.as_ref())
            .expect("the file's rules were checked when it was read");
        r.settings.filter = Filter::default();
        r
    });
    let setup = Setup {
        settings: settings.settings,
        stack: init
            .stack
            .iter()
            .map(|p| crate::paths::lexical(&base.join(p)))
            .collect(),
        chart_values: init.chart_values.as_ref().map(|p| base.join(p)),
        max_size: init.max_file_size.unwrap_or(DEFAULT_MAX_FILE_SIZE),
        unsafe_fixes: init.unsafe_fixes,
    };
    (setup, problems)
}
