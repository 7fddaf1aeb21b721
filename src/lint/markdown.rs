//! A Markdown file through the one pipeline: each fenced YAML block that mentions cGPU (a
//! `cgpu:` key, an installer DaemonSet's name, the chart's name) is read in place
//! ([`yaml::markdown::block_source`]: the file's offsets, everything else blank) and checked by
//! `lint::check_yaml` as a YAML file of its own would be, suppressions and filters included;
//! its findings are then moved onto the Markdown file, whose line, column and bytes they already
//! use (as a `values: |` string's findings are moved onto its HelmRelease). A file with no such
//! block is "nothing to check", as a YAML file without a `cgpu:` block is.

use crate::cgpu;
use crate::diag::Diagnostic;
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
