//! `checklist --format json`: the keys of spec §6, in its order; diagnostics exactly as
//! `check --format json` prints them.

use serde::Serialize;
use serde_json::Value;

use super::{Checklist, Step, preflight, steps, target_text, verify_step};
use crate::output::json::diagnostic_value;

#[derive(Serialize)]
struct Change<T> {
    from: T,
    to: T,
}

#[derive(Serialize)]
struct JsonNode<'a> {
    name: &'a str,
    state: &'static str,
    notes: &'a [String],
    steps: Vec<String>,
}

#[derive(Serialize)]
struct JsonOther<'a> {
    name: &'a str,
    reason: &'a str,
    /// Read at the end; the run is done only when it shows the target.
    verify: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    steps: Vec<String>,
}

#[derive(Serialize)]
struct JsonChecklist<'a> {
    version: u32,
    policy_change: Option<Change<u8>>,
    tag_change: Option<Change<&'a str>>,
    reboot_required: bool,
    nodes: Vec<JsonNode<'a>>,
    other_nodes: Vec<JsonOther<'a>>,
    diagnostics: Vec<Value>,
    /// Findings that block the plan: nothing may run before they are fixed.
    blocking: Vec<Value>,
    update_strategy: Option<&'static str>,
    max_unavailable: u32,
    preflight: Vec<String>,
    /// What every GPU-sharing node must show for the run to be done.
    done_when: String,
    notes: &'a [String],
    upgrade: JsonUpgrade<'a>,
}

#[derive(Serialize)]
struct JsonKey<'a> {
    key: &'a str,
    live: Option<&'a str>,
    after: Option<&'a str>,
    from: &'static str,
}

/// What the upgrade does to every cgpu key; `enabled` false: the removal plan (no reboots).
#[derive(Serialize)]
struct JsonUpgrade<'a> {
    keys: Vec<JsonKey<'a>>,
    cgpu_enabled: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    removal: Vec<String>,
}

fn step_text(s: &Step) -> String {
    match &s.command {
        Some(c) => format!("{}: {c}", s.title),
        None => s.title.clone(),
    }
}

pub fn render(list: &Checklist) -> String {
    let change = list.change() || list.acts();
    let nodes = if change {
        list.nodes
            .iter()
            .map(|t| JsonNode {
                name: &t.name,
                state: t.state.as_str(),
                notes: &t.notes,
                steps: steps(list, t).iter().map(step_text).collect(),
            })
            .collect()
    } else {
        Vec::new()
    };
    let report = JsonChecklist {
        version: 1,
        policy_change: list.policy_change.map(|(from, to)| Change { from, to }),
        tag_change: list.tag_change.as_ref().map(|(from, to)| Change {
            from: from.as_str(),
            to: to.as_str(),
        }),
        reboot_required: list.reboot_required(),
        nodes,
        other_nodes: list
            .other_nodes
            .iter()
            .map(|o| JsonOther {
                name: &o.name,
                reason: &o.reason,
                verify: o.verify && change,
                steps: if o.verify && change {
                    vec![step_text(&verify_step(list, o))]
                } else {
                    Vec::new()
                },
            })
            .collect(),
        diagnostics: list.diagnostics.iter().map(diagnostic_value).collect(),
        blocking: list.blocking.iter().map(diagnostic_value).collect(),
        update_strategy: list.strategy.map(|s| s.as_str()),
        max_unavailable: list.options.max_unavailable,
        preflight: if list.reboot_required() {
            preflight(list).iter().map(step_text).collect()
        } else {
            Vec::new()
        },
        done_when: target_text(list),
        notes: &list.plan_notes,
        upgrade: JsonUpgrade {
            keys: list
                .upgrade
                .iter()
                .map(|k| JsonKey {
                    key: &k.key,
                    live: k.live.as_deref(),
                    after: k.after.as_deref(),
                    from: k.from.as_str(),
                })
                .collect(),
            cgpu_enabled: !list.disabled,
            removal: list.removal.iter().map(step_text).collect(),
        },
    };
    let mut s = serde_json::to_string_pretty(&report).expect("serialisable");
    s.push('\n');
    s
}
