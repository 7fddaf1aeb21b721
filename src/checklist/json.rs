//! `checklist --format json`: its keys in a fixed order (scripts read them); diagnostics exactly as
//! `check --format json` prints them.

use serde::Serialize;
use serde_json::Value;

use super::model::{Checklist, Step};
use super::steps::{header_lines, preflight, steps, target_text, verify_step};
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
    /// The prose of each step, in order: read the state, the decision, then each branch.
    steps: Vec<String>,
    /// The same steps as the commands the script runs (docs/runbook.md, "JSON actions").
    actions: Vec<JsonAction>,
}

#[derive(Serialize)]
struct JsonAction {
    /// The step it belongs to (the script's step name).
    step: &'static str,
    /// The outcome of the read-state it runs on: always, at-target, no-module, differs.
    branch: &'static str,
    /// A stable id of the command.
    action: &'static str,
    /// The exact command, one word per element; null when there is none to run (decide, a
    /// reboot by hand).
    argv: Option<Vec<String>>,
    expect: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    only_if: Option<&'static str>,
    text: String,
}

/// Which cluster the plan is for, when it was made, and how many nodes may restart.
#[derive(Serialize)]
struct JsonCluster<'a> {
    context: Option<&'a str>,
    kubeconfig: Option<&'a str>,
    server: Option<&'a str>,
    /// `metadata.uid` of kube-system; null: read (and recorded) by the script at run time.
    kube_system_uid: Option<&'a str>,
    planned_at: Option<&'a str>,
    /// Nodes that may restart (each only if its own state differs) …
    restart: usize,
    /// … of the nodes running cgpu-installer, cordoned ones included.
    installer_nodes: usize,
    /// The header lines markdown and the script print.
    header: Vec<String>,
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
    cluster: JsonCluster<'a>,
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
                actions: steps(list, t)
                    .iter()
                    .flat_map(|s| {
                        let text = step_text(s);
                        s.actions.iter().map(move |a| JsonAction {
                            step: s.id,
                            branch: s.branch.as_str(),
                            action: a.action,
                            argv: a.argv.clone(),
                            expect: a.expect.clone(),
                            only_if: a.only_if,
                            text: text.clone(),
                        })
                    })
                    .collect(),
            })
            .collect()
    } else {
        Vec::new()
    };
    let id = &list.options.identity;
    let report = JsonChecklist {
        version: 1,
        cluster: JsonCluster {
            context: id.context.as_deref(),
            kubeconfig: id.kubeconfig.as_deref(),
            server: id.server.as_deref(),
            kube_system_uid: id.cluster_uid.as_deref(),
            planned_at: id.planned_at.as_deref(),
            restart: list.nodes.len(),
            installer_nodes: list.installer_nodes,
            header: header_lines(list),
        },
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
