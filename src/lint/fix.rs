//! `fix`: check → splice the fixes → check again, to a fixpoint, over the one pipeline (ruff's
//! `lint_fix`); a round whose result does not parse is not applied.

use std::sync::Arc;

use crate::catalogue::RuleId;
use crate::diag::{Diagnostic, Edit};
use crate::edit;
use crate::yaml::{self, Source};

use super::{Settings, lint_file};

/// How many check → splice rounds a fix may take. One is almost always enough; a second round
/// picks up a fix that was held back because its range overlapped another fix of the first.
pub const MAX_ROUNDS: usize = 5;

/// One fix that was applied.
#[derive(Debug, Clone)]
pub struct Applied {
    pub rule: RuleId,
    /// 1-based line of the finding in the text the round started from.
    pub line: usize,
    pub message: String,
    /// For an unsafe fix (applied under `--unsafe-fixes`): what it changes at the next upgrade.
    pub consequence: Option<crate::diag::Consequence>,
    /// Made safe by the settings (`[fix] extend-safe`): a fix that changes what the chart
    /// renders applied without `--unsafe-fixes`.
    pub promoted: bool,
}

/// The outcome of fixing one source.
#[derive(Debug)]
pub struct Fixed {
    pub original: Arc<Source>,
    /// The fixed text (equal to the original when nothing was fixed).
    pub text: String,
    pub applied: Vec<Applied>,
    /// Findings on the fixed text: what is left for a person.
    pub remaining: Vec<Diagnostic>,
    /// Set when a round produced text that no longer parses; the fixes of that round and later
    /// are dropped (this is a bug in a rule's edit, never expected).
    pub refused: Option<String>,
}

impl Fixed {
    pub fn changed(&self) -> bool {
        self.text != self.original.text
    }
}

/// Fix `src` to a fixpoint (at most [`MAX_ROUNDS`] rounds) with the findings of [`lint_file`]:
/// a finding that is suppressed or filtered out is neither fixed nor reported (ruff's `lint_fix`).
/// Only safe fixes are applied unless `unsafe_fixes` (`--unsafe-fixes`); the unsafe ones left
/// stay among [`Fixed::remaining`] with their consequence.
pub fn lint_fix(src: &Arc<Source>, settings: &Settings, unsafe_fixes: bool) -> Fixed {
    lint_fix_among(src, None, settings, unsafe_fixes)
}

/// [`lint_fix`], with the ConfigMaps, Secrets and HelmReleases of the run's other inputs (`fix`
/// on several files finds what `check` on them finds).
pub fn lint_fix_among(
    src: &Arc<Source>,
    others: Option<&crate::helm::place::Others>,
    settings: &Settings,
    unsafe_fixes: bool,
) -> Fixed {
    let lint = |s: &Arc<Source>| match others {
        Some(o) => super::lint_file_among(s, o, settings),
        None => lint_file(s, settings),
    };
    let mut current = src.clone();
    let mut diags = lint(&current);
    let mut applied = Vec::new();
    let mut refused = None;
    // Text that does not parse (or is not UTF-8) has no fixes: the rules only see parsed values.
    // (Judged from the findings, not by parsing again: fixing a fleet that needs no fix must
    // cost one parse per file.)
    // A Markdown file's blocks are fixed each on its own: a block that does not parse has no
    // fixes, the others do.
    let markdown = yaml::markdown::is_markdown(&src.name);
    if src.invalid.is_none() && (markdown || parses(&diags)) {
        for _ in 0..MAX_ROUNDS {
            let broken = super::markdown::broken_blocks(&current, &diags);
            let fixable: Vec<&Diagnostic> = diags
                .iter()
                .filter(|d| {
                    d.fix_applies(unsafe_fixes)
                        && d.edits.iter().all(|e| Arc::ptr_eq(&e.src, &current))
                        && !broken.iter().any(|r| r.contains(&d.span.start))
                })
                .collect();
            if fixable.is_empty() {
                break;
            }
            let groups: Vec<Vec<&Edit>> =
                fixable.iter().map(|d| d.edits.iter().collect()).collect();
            let chosen = edit::compatible_groups(&groups);
            let edits: Vec<&Edit> = chosen.iter().flat_map(|&i| groups[i].clone()).collect();
            let text = match edit::apply(&current.text, &edits) {
                Ok(t) => t,
                Err(e) => {
                    refused = Some(format!("internal error splicing fixes: {e}"));
                    break;
                }
            };
            if text == current.text {
                break;
            }
            let next = Source::new(current.name.clone(), text);
            let next_diags = lint(&next);
            if syntax_errors(&next_diags) > syntax_errors(&diags) {
                refused = Some(
                    "a fix produced YAML that does not parse; those fixes were not applied".into(),
                );
                break;
            }
            applied.extend(chosen.iter().map(|&i| {
                let d = fixable[i];
                Applied {
                    rule: d.rule,
                    line: d.start().line,
                    message: d.message.clone(),
                    consequence: d.consequence.as_deref().cloned(),
                    promoted: d.consequence.is_some()
                        && d.fix_applicability() == Some(crate::diag::Applicability::Safe),
                }
            }));
            current = next;
            diags = next_diags;
        }
    }
    Fixed {
        original: src.clone(),
        text: current.text.clone(),
        applied,
        remaining: diags,
        refused,
    }
}

fn parses(diags: &[Diagnostic]) -> bool {
    syntax_errors(diags) == 0
}

fn syntax_errors(diags: &[Diagnostic]) -> usize {
    diags
        .iter()
        .filter(|d| d.rule == RuleId::YamlSyntax)
        .count()
}

/// Does `text` parse (the check before a file is written)?
pub fn text_parses(name: &str, text: &str) -> bool {
    let src = Source::new(name, text.to_string());
    if yaml::markdown::is_markdown(name) {
        return super::markdown::blocks_parse(&src);
    }
    src.invalid.is_none() && yaml::parse(&src).error.is_none()
}
