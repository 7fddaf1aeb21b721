//! A snapshot of one document and the settings, for a job on the worker.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use lsp_types as lsp;

use super::convert::{severity, source_name, uri_to_path};
use super::position::{Encoding, LineIndex};
use super::setup::Setup;
use crate::diag::Diagnostic;
use crate::lint;
use crate::yaml::Source;

pub(crate) struct Doc {
    pub(super) version: i32,
    pub(super) src: Arc<Source>,
}

pub(crate) type Docs = Arc<Mutex<HashMap<String, Doc>>>;
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// A snapshot of one document and the settings, for a job on the worker.
pub(super) struct Ctx {
    pub(super) uri: String,
    pub(super) src: Arc<Source>,
    pub(super) enc: Encoding,
    pub(super) setup: Arc<Setup>,
    pub(super) docs: Docs,
    /// The protocol's lines of `src`, built on the worker when first needed.
    pub(super) lines: std::sync::OnceLock<LineIndex>,
}

impl Ctx {
    /// One finding as an LSP diagnostic: the rule name is the code; the help line follows the message
    /// on a second line; related places (the first of two duplicate keys) are relatedInformation.
    /// There is no `codeDescription`: the rules have no documentation pages on the web (their
    /// explanation is `cgpu-lint explain RULE`), and a link that does not resolve is worse than none.
    pub(super) fn to_lsp(&self, d: &Diagnostic) -> lsp::Diagnostic {
        let uri = lsp::Uri::from_str(&self.uri).ok();
        let related = match &uri {
            Some(uri) if !d.related.is_empty() => Some(
                d.related
                    .iter()
                    .map(|r| lsp::DiagnosticRelatedInformation {
                        location: lsp::Location {
                            uri: uri.clone(),
                            range: self.range(&r.span),
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
            range: self.range(&d.span),
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

    pub(super) fn lines(&self) -> &LineIndex {
        self.lines.get_or_init(|| LineIndex::new(&self.src.text))
    }

    /// A byte range of the document as an LSP range.
    pub(super) fn range(&self, span: &std::ops::Range<usize>) -> lsp::Range {
        self.lines().range(&self.src.text, span, self.enc)
    }

    pub(super) fn offset(&self, pos: lsp::Position) -> usize {
        self.lines().offset(&self.src.text, pos, self.enc)
    }

    /// Whether the snapshot is still the document's text.
    pub(super) fn is_current(&self) -> bool {
        self.docs
            .lock()
            .ok()
            .and_then(|d| d.get(&self.uri).map(|d| Arc::ptr_eq(&d.src, &self.src)))
            .unwrap_or(false)
    }

    /// The findings `check` reports for this text, in `check`'s order.
    pub(super) fn findings(&self) -> Vec<Diagnostic> {
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

    pub(super) fn stack_member(&self) -> Option<usize> {
        stack_position(&self.setup, &self.uri)
    }

    /// `check --stack` over the stack, with open members' editor text in place of their files.
    pub(super) fn stack_findings(&self, me: usize) -> Vec<Diagnostic> {
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
        let base = base.unwrap_or_else(crate::cgpu::chart_defaults);
        let mut all = vec![base];
        all.extend(layers);
        lint::lint_stack(&all, &setup.settings)
    }
}

/// The place of the document `uri` in the values stack, if it is a member.
pub(super) fn stack_position(setup: &Setup, uri: &str) -> Option<usize> {
    let path = crate::paths::lexical(&uri_to_path(uri)?);
    setup.stack.iter().position(|p| *p == path)
}

pub(super) fn is_stack_member(setup: &Setup, uri: &str) -> bool {
    stack_position(setup, uri).is_some()
}
