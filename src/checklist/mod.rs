//! The node-reboot checklist: what changes between the deployed cGPU settings and the
//! desired ones, which nodes run the installer and must restart, and in what order. One model,
//! three printers (markdown task list, JSON, a reviewable shell script).
//!
//! The dependencies run one way: [`model`] is what a checklist is (data, importing no other
//! file here); [`read`] reads both sides and the nodes into it; [`plan`] makes the checklist;
//! [`steps`] holds the steps and commands the printers share ([`shell`] the shell words they
//! are written in); [`markdown`], [`json`] and [`script`] print it. This file chooses the printer.

pub mod json;
pub mod markdown;
pub mod model;
pub(crate) mod plan;
mod read;
pub mod script;
pub mod shell;
pub(crate) mod steps;

use model::{Checklist, ChecklistError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecklistFormat {
    Markdown,
    Json,
    Shell,
}

/// Render in a format. Shell needs `--nodes`.
pub fn render(
    list: &Checklist,
    format: ChecklistFormat,
    yes: bool,
) -> Result<String, ChecklistError> {
    Ok(match format {
        ChecklistFormat::Markdown => markdown::render(list),
        ChecklistFormat::Json => json::render(list),
        ChecklistFormat::Shell => {
            if !list.nodes_given && list.reboot_required() {
                return Err(ChecklistError::ShellNeedsNodes);
            }
            let id = &list.options.identity;
            if id.context.is_none() && id.cluster_uid.is_none() {
                return Err(ChecklistError::ShellNeedsContext);
            }
            script::render(list, yes)
        }
    })
}
