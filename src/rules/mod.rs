//! The rules: one file per group, all reporting through [`Ctx`].

pub mod fields;
pub mod installer;
pub mod k8s;
pub mod nodes;
pub mod schema;
pub mod stack;
pub mod values;

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use crate::catalogue::RuleId;
use crate::catalogue::Severity;
use crate::diag::{Diagnostic, Edit, Related};
use crate::yaml::{Node, Source};

/// Settings the rules read.
#[derive(Debug, Clone, Default)]
pub struct RuleOptions {
    /// The cluster's region, from `--region` or from the nodes' topology label.
    pub region: Option<String>,
    pub require_cgpu: bool,
    /// `--helm 3|4` / config `helm`: read values as that Helm does (None: as both do).
    pub helm: Option<crate::helm::Version>,
    /// What the node rules know about the installer of the cluster the nodes belong to.
    pub nodes: NodeContext,
}

/// The installer as the node rules see it: filled by `lint::lint_cluster` from the installer
/// among its inputs, or by the checklist from the plan (the desired version and selector).
#[derive(Debug, Clone, Default)]
pub struct NodeContext {
    /// The cGPU version the installer runs (or will run) on the nodes it selects.
    pub cgpu: Option<semver::Version>,
    /// The installer's nodeSelector, when an installer is known.
    pub selector: Option<Vec<(String, String)>>,
}

/// Where rules put their findings. One per document checked.
pub struct Ctx<'a> {
    pub opts: &'a RuleOptions,
    pub document: usize,
    /// How often each anchor is used by aliases in this document (to decide whether an aliased
    /// value may be edited).
    pub alias_uses: &'a HashMap<usize, usize>,
    pub out: Vec<Diagnostic>,
}

impl<'a> Ctx<'a> {
    pub fn new(
        opts: &'a RuleOptions,
        document: usize,
        alias_uses: &'a HashMap<usize, usize>,
    ) -> Self {
        Ctx {
            opts,
            document,
            alias_uses,
            out: Vec::new(),
        }
    }

    /// Report `rule` at `span` of `src`. The severity and default help come from the catalogue;
    /// the returned [`Finding`] adds to it (help, fix, related places, severity).
    pub fn report(
        &mut self,
        rule: RuleId,
        src: &Arc<Source>,
        span: Range<usize>,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Finding<'_> {
        let index = self.out.len();
        self.out.push(Diagnostic::new(
            rule,
            src,
            self.document,
            path.into(),
            span,
            message.into(),
        ));
        Finding {
            diagnostic: &mut self.out[index],
            alias_uses: self.alias_uses,
        }
    }

    /// Report at a node.
    pub fn at(
        &mut self,
        rule: RuleId,
        node: &Node,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Finding<'_> {
        let src = node.src.clone();
        // A value reached through an alias is reported where the alias is (the line a reader can edit).
        let span = node.alias_at.clone().unwrap_or_else(|| node.span.clone());
        self.report(rule, &src, span, path, message)
    }

    /// May the text of `node` be edited? See [`editable`].
    pub fn editable(&self, node: &Node) -> Result<(), String> {
        editable(self.alias_uses, node)
    }
}

/// May the text of `node` be edited? Not when it comes through an alias whose anchor is also
/// used elsewhere: the edit would change those places too.
fn editable(alias_uses: &HashMap<usize, usize>, node: &Node) -> Result<(), String> {
    // An implicit null (`key:` with nothing after it) has an empty span, and the parser places
    // it next to the key rather than after the colon: replacing "it" would splice text into the
    // key (found by fuzzing: tests/fuzz-regressions/).
    if node.span.is_empty() {
        return Err("not fixed automatically: the value is empty".into());
    }
    match node.via_alias {
        Some(id) if alias_uses.get(&id).copied().unwrap_or(0) > 1 => Err(
            "not fixed automatically: the value comes from an anchor that other places use too"
                .into(),
        ),
        _ => Ok(()),
    }
}

/// A finding just reported, to be completed by the rule that reported it (ruff's
/// `DiagnosticGuard`): every method returns the finding, so calls chain.
pub struct Finding<'c> {
    diagnostic: &'c mut Diagnostic,
    alias_uses: &'c HashMap<usize, usize>,
}

impl Finding<'_> {
    /// Replace the catalogue's default help line.
    pub fn help(self, help: impl Into<String>) -> Self {
        self.diagnostic.help = help.into();
        self
    }

    /// Offer `edits` as the fix if `node` (the text they replace) may be edited, else record
    /// why the fix is not offered.
    pub fn fix(self, node: &Node, edits: Vec<Edit>) -> Self {
        match editable(self.alias_uses, node) {
            Ok(()) => self.diagnostic.edits = edits,
            Err(why) => self.diagnostic.fix_note = Some(why),
        }
        self
    }

    /// Offer `edits` as the fix; the rule has checked that their target may be edited (a key,
    /// which [`Ctx::editable`] does not cover).
    pub fn edits(self, edits: Vec<Edit>) -> Self {
        self.diagnostic.edits = edits;
        self
    }

    /// Mark the fix unsafe: it changes what the chart renders. `line` says in one line what
    /// changes at the next upgrade; `sets` are the values Helm then reads differently, as
    /// `--set-json` pairs (empty for a manifest's fix). See [`crate::diag::Consequence`].
    pub fn unsafe_fix(
        self,
        line: impl Into<String>,
        sets: Vec<(String, serde_json::Value)>,
    ) -> Self {
        self.diagnostic.consequence = Some(Box::new(crate::diag::Consequence {
            line: line.into(),
            sets,
        }));
        self
    }

    /// Record why no fix is offered.
    pub fn fix_note(self, why: impl Into<String>) -> Self {
        self.diagnostic.fix_note = Some(why.into());
        self
    }

    /// Point at a second place (in the same file) that the message refers to.
    pub fn related(self, span: Range<usize>, message: impl Into<String>) -> Self {
        self.diagnostic.related.push(Related {
            span,
            message: message.into(),
        });
        self
    }

    /// The 1-based document of the file the finding points into, when it is not the document
    /// being checked (a later document of a multi-document values file).
    pub fn document(self, document: usize) -> Self {
        self.diagnostic.document = document;
        self
    }

    /// Override the catalogue's severity (cgpu-missing under --require-cgpu, a digest-only
    /// image as a warning).
    pub fn severity(self, severity: Severity) -> Self {
        self.diagnostic.severity = severity;
        self
    }
}

/// `duplicate-key` for every key a mapping of `doc` holds twice (Helm keeps the last).
pub fn duplicates(ctx: &mut Ctx, src: &Arc<Source>, doc: &crate::yaml::Document) {
    for d in &doc.duplicates {
        let first = src.line_col(d.first.start).line;
        let second = src.line_col(d.second.start).line;
        let path = format!(
            "{}/{}",
            d.map_pointer,
            crate::yaml::node::escape_pointer(&d.key)
        );
        ctx.report(
            RuleId::DuplicateKey,
            src,
            d.second.clone(),
            path,
            format!(
                "key `{}` appears twice in this mapping (lines {first} and {second}); Helm keeps the last one (line {second})",
                d.key
            ),
        )
        .related(
            d.first.clone(),
            format!("first `{}` here (ignored by Helm)", d.key),
        );
    }
}
