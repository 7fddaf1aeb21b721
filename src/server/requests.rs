//! The requests answered on a snapshot: code actions (quick fixes, fix all), hover, completion.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;

use lsp_types as lsp;

use super::convert::minimal_edit;
use super::knowledge;
use super::setup::FIX_ALL_KIND;
use super::snapshot::Ctx;
use crate::lint;

pub(super) fn wanted(only: Option<&[lsp::CodeActionKind]>, kind: &str) -> bool {
    only.is_none_or(|only| {
        only.iter().any(|o| {
            let o = o.as_str();
            kind == o || kind.strip_prefix(o).is_some_and(|r| r.starts_with('.'))
        })
    })
}

pub(super) fn overlaps(a: &lsp::Range, b: &lsp::Range) -> bool {
    let key = |p: &lsp::Position| (p.line, p.character);
    key(&a.start) <= key(&b.end) && key(&b.start) <= key(&a.end)
}

/// Quick fixes for the findings in the requested range, and "fix all".
pub(super) fn code_actions(ctx: &Ctx, p: lsp::CodeActionParams) -> serde_json::Value {
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
            let diag = ctx.to_lsp(&d);
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
            let (title, preferred) = match (d.fix_applicability(), &d.consequence) {
                (Some(crate::diag::Applicability::Unsafe), c) => (
                    format!(
                        "{}: {} (unsafe fix: {})",
                        d.rule,
                        d.help,
                        c.as_ref()
                            .map_or("made unsafe by `[fix] extend-unsafe`", |c| &c.line)
                    ),
                    false,
                ),
                _ => (format!("{}: {}", d.rule, d.help), true),
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
        let fixed = lint::fix::lint_fix(&ctx.src, &ctx.setup.settings, ctx.setup.unsafe_fixes);
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

pub(super) fn hover(ctx: &Ctx, p: lsp::HoverParams) -> serde_json::Value {
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

pub(super) fn completion(ctx: &Ctx, p: lsp::CompletionParams) -> serde_json::Value {
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
    pub(super) fn only_filters_kinds_by_prefix() {
        let k = |s: &str| vec![lsp::CodeActionKind::from(s.to_string())];
        assert!(wanted(None, FIX_ALL_KIND));
        assert!(wanted(Some(&k("source")), FIX_ALL_KIND));
        assert!(wanted(Some(&k("source.fixAll")), FIX_ALL_KIND));
        assert!(!wanted(Some(&k("source.fix")), FIX_ALL_KIND));
        assert!(!wanted(Some(&k("quickfix")), FIX_ALL_KIND));
    }
}
