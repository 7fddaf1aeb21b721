//! `--statistics`: the findings counted per rule, as ruff's `--statistics` counts them: one line
//! per rule, `COUNT<TAB>SEVERITY<TAB>[*] RULE`, the most frequent first (then by name), the count
//! right-aligned (ruff's `COUNT<TAB>CODE<TAB>[*] NAME`); `[*]` marks a rule with a finding `cgpu-lint fix` fixes and `[ ]` the others,
//! and there is no marker column when nothing is fixable. The summary line follows. With
//! `--format json`: `[{"rule", "severity", "count", "fixable_count", "unsafe_fixable_count"}]`
//! in the same order.

use serde::Serialize;

use crate::catalogue::{RuleId, Severity};
use crate::diag::{Diagnostic, Summary};
use crate::output::human::with_summary;

#[derive(Debug, Clone, Serialize)]
pub struct RuleCount {
    pub rule: &'static str,
    /// The most severe of the rule's findings.
    pub severity: Severity,
    pub count: usize,
    /// How many of them `cgpu-lint fix` fixes (safe fixes).
    pub fixable_count: usize,
    /// How many carry an unsafe fix (`--unsafe-fixes`).
    pub unsafe_fixable_count: usize,
}

/// Counts per rule, the most frequent first, then by rule name.
pub fn count(diags: &[Diagnostic]) -> Vec<RuleCount> {
    let mut by: Vec<(RuleId, RuleCount)> = Vec::new();
    for d in diags {
        let i = match by.iter().position(|(r, _)| *r == d.rule) {
            Some(i) => i,
            None => {
                by.push((
                    d.rule,
                    RuleCount {
                        rule: d.rule.name(),
                        severity: d.severity,
                        count: 0,
                        fixable_count: 0,
                        unsafe_fixable_count: 0,
                    },
                ));
                by.len() - 1
            }
        };
        let c = &mut by[i].1;
        c.count += 1;
        // A rule's findings can be raised above its default (`--require-cgpu`): the worst shows.
        c.severity = c.severity.max(d.severity);
        match d.fix_applicability() {
            Some(crate::diag::Applicability::Safe) => c.fixable_count += 1,
            Some(crate::diag::Applicability::Unsafe) => c.unsafe_fixable_count += 1,
            None => {}
        }
    }
    let mut out: Vec<RuleCount> = by.into_iter().map(|(_, c)| c).collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then(a.rule.cmp(b.rule)));
    out
}

pub fn render_human(diags: &[Diagnostic], summary: Summary, quiet: bool) -> String {
    let counts = count(diags);
    let width = counts
        .iter()
        .map(|c| c.count.to_string().len())
        .max()
        .unwrap_or(1);
    let any_fixable = counts.iter().any(|c| c.fixable_count > 0);
    let mut out = String::new();
    for c in &counts {
        let marker = match (any_fixable, c.fixable_count > 0) {
            (false, _) => "",
            (true, true) => "[*] ",
            (true, false) => "[ ] ",
        };
        out.push_str(&format!(
            "{:>width$}\t{}\t{marker}{}\n",
            c.count,
            c.severity.as_str(),
            c.rule,
        ));
    }
    with_summary(out, &summary, quiet)
}

pub fn render_json(diags: &[Diagnostic]) -> String {
    let mut s = serde_json::to_string_pretty(&count(diags)).expect("serialisable");
    s.push('\n');
    s
}
