//! A Markdown file through the one pipeline: each fenced YAML block that mentions cGPU (a
//! `cgpu:` key, an installer DaemonSet's name, the chart's name) is read in place
//! ([`yaml::markdown::block_source`]: the file's offsets, everything else blank) and checked by
//! [`super::check_yaml`] as a YAML file of its own would be, suppressions and filters included;
//! its findings are then moved onto the Markdown file, whose line, column and bytes they already
//! use (as a `values: |` string's findings are moved onto its HelmRelease). A file with no such
//! block is "nothing to check", as a YAML file without a `cgpu:` block is.

use std::sync::Arc;

use super::{Inputs, Settings, check_yaml};
use crate::cgpu;
use crate::diag::Diagnostic;
use crate::helm::place::Others;
use crate::rules::{Ctx, values};
use crate::yaml::markdown::{Block, block_source, yaml_blocks};
use crate::yaml::{self, Source};

/// Is this block's content about cGPU: a `cgpu:` key at the start of a line, an installer
/// DaemonSet's name, or the chart's name (the byte test `check --gitops` uses)?
pub fn relevant(content: &str) -> bool {
    content.lines().any(|l| l.trim_start().starts_with("cgpu:"))
        || cgpu::INSTALLER_NAMES.iter().any(|n| content.contains(n))
        || content.contains(cgpu::CHART)
}

/// The blocks [`check`] reads: fenced YAML, not opted out, about cGPU.
pub fn checked_blocks(src: &Source) -> Vec<Block> {
    yaml_blocks(&src.text)
        .into_iter()
        .filter(|b| !b.opted_out && relevant(&src.text[b.content.clone()]))
        .collect()
}

/// The findings of a Markdown file: its blocks' through the pipeline, on the file.
pub(super) fn check(
    src: &Arc<Source>,
    others: Option<&Others>,
    settings: &Settings,
) -> Vec<Diagnostic> {
    if src.invalid.is_some() {
        return check_yaml(Inputs::File(src), settings);
    }
    let blocks = checked_blocks(src);
    let mut out = Vec::new();
    let mut own = Vec::new();
    let empty = Default::default();
    // The YAML documents of the earlier blocks: a finding's document is counted over the file's
    // blocks, so two blocks' findings are told apart (in the report and the baseline).
    let mut documents = 0;
    for block in &blocks {
        match block_source(src, block) {
            Ok(inner) => {
                let found = match others {
                    Some(o) => check_yaml(Inputs::Among(&inner, o), settings),
                    None => check_yaml(Inputs::File(&inner), settings),
                };
                out.extend(found.into_iter().map(|mut d| {
                    d.document += documents;
                    moved(d, src)
                }));
                documents += yaml::parse(&inner).documents.len().max(1);
            }
            Err(why) => {
                let at = src.line_start(block.fence_line);
                let mut ctx = Ctx::new(&settings.opts, 1, &empty);
                values::missing(
                    &mut ctx,
                    src,
                    at..at,
                    format!("this ```yaml block is not checked: {why}"),
                    None,
                );
                own.extend(ctx.out);
            }
        }
    }
    if blocks.is_empty() {
        let mut ctx = Ctx::new(&settings.opts, 1, &empty);
        values::missing(
            &mut ctx,
            src,
            0..0,
            format!(
                "a Markdown file with no ```yaml block holding a `cgpu:` key, {} or {}: nothing to check, skipped",
                cgpu::INSTALLER_NAMES.join(" or "),
                cgpu::CHART
            ),
            Some(
                "cgpu-lint checks the fenced ```yaml/```yml blocks of Markdown that mention cGPU"
                    .into(),
            ),
        );
        own.extend(ctx.out);
    }
    // The file's own findings (a block not read, nothing to check) are filtered as any, but a
    // `#` line of Markdown is a heading, not a directive; the blocks' findings were suppressed
    // and filtered in their own pass, by the comments inside them.
    own.retain(|d| settings.filter.allows(d.rule.name()));
    if let Some(ignores) = &settings.per_file_ignores {
        ignores.retain(&mut own);
    }
    out.extend(own);
    out.sort_by_key(|d| d.span.start);
    out
}

/// A block's finding, on the Markdown file (the offsets are already the file's).
fn moved(mut d: Diagnostic, src: &Arc<Source>) -> Diagnostic {
    d.src = src.clone();
    for e in &mut d.edits {
        e.src = src.clone();
    }
    d
}

/// The byte ranges of the blocks of a Markdown file that hold a `yaml-syntax` finding (from the
/// fence line to the line after the content, where a block's error at its end is placed); for
/// another file, nothing.
pub fn broken_blocks(src: &Source, diags: &[Diagnostic]) -> Vec<std::ops::Range<usize>> {
    if !yaml::markdown::is_markdown(&src.name) {
        return Vec::new();
    }
    let blocks: Vec<std::ops::Range<usize>> = checked_blocks(src)
        .iter()
        .map(|b| {
            let end_line = src.line_col(b.content.end).line + 1;
            src.line_start(b.fence_line)..src.line_start(end_line + 1)
        })
        .collect();
    blocks
        .into_iter()
        .filter(|r| {
            diags.iter().any(|d| {
                d.rule == crate::catalogue::RuleId::YamlSyntax && r.contains(&d.span.start)
            })
        })
        .collect()
}

/// Does every block [`check`] reads still parse (the check before a fixed Markdown file is
/// written)?
pub fn blocks_parse(src: &Source) -> bool {
    checked_blocks(src)
        .iter()
        .all(|b| block_source(src, b).map_or(true, |inner| yaml::parse(&inner).error.is_none()))
}
