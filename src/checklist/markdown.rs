//! `checklist --format markdown`: a GitHub task list for a change ticket, one `- [ ]` per step,
//! the canary node first.

use std::fmt::Write;

use super::model::{Branch, Checklist, OtherKind, Step, Target, core, policy_title, version_text};
use super::steps::{CORDON_MARK, header_lines, preflight, steps, target_text, verify_step};

fn change_lines(list: &Checklist, out: &mut String) {
    let (c, d) = (&list.current, &list.desired);
    match list.policy_change {
        Some((from, to)) => writeln!(
            out,
            "- **Policy:** {from} ({}) → {to} ({})",
            policy_title(from),
            policy_title(to)
        ),
        None => writeln!(
            out,
            "- **Policy:** {} ({}), unchanged",
            c.policy,
            policy_title(c.policy)
        ),
    }
    .expect("string");
    let _ = match (&list.tag_change, &list.build_change) {
        (Some(_), _) => writeln!(
            out,
            "- **cGPU version:** {} → {}: {}, nodes restart",
            version_text(c),
            version_text(d),
            match (core(c), core(d)) {
                (Some(a), Some(b)) if b < a => "a downgrade",
                _ => "an upgrade",
            }
        ),
        (None, Some((a, b))) => writeln!(
            out,
            "- **cGPU version:** {}, unchanged (only the build changes, `{a}` → `{b}`: not an upgrade)",
            version_text(d)
        ),
        _ => writeln!(out, "- **cGPU version:** {}, unchanged", version_text(c)),
    };
}

/// What the upgrade sets, key by key (the desired values as the upgrade applies them).
fn upgrade_table(list: &Checklist, out: &mut String) {
    if list.upgrade.is_empty() {
        return;
    }
    out.push_str("\n## What the upgrade sets\n\n| key | live | after the upgrade | from |\n|---|---|---|---|\n");
    let cell = |v: &Option<String>| v.as_deref().map_or("–".to_string(), |v| format!("`{v}`"));
    for k in &list.upgrade {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} |",
            k.key,
            cell(&k.live),
            cell(&k.after),
            k.from.as_str()
        );
    }
}

fn task(out: &mut String, s: &Step) {
    let _ = match &s.command {
        Some(c) => writeln!(out, "- [ ] {}: `{c}`", s.title),
        None => writeln!(out, "- [ ] {}", s.title),
    };
}

fn node_section(list: &Checklist, t: &Target, out: &mut String) {
    let _ = writeln!(out, "\n### `{}`\n", t.name);
    for n in &t.notes {
        let _ = writeln!(out, "> {n}  ");
    }
    if !t.notes.is_empty() {
        out.push('\n');
    }
    // Read, decide, then the steps of each branch: nothing is cordoned before the decision.
    let mut branch = Branch::Always;
    for s in steps(list, t) {
        if s.branch != branch {
            branch = s.branch;
            let _ = writeln!(
                out,
                "\n{}\n",
                match branch {
                    Branch::Always => "",
                    Branch::AtTarget =>
                        "**If it is at the target** (an earlier run's cordon only):",
                    Branch::NoModule =>
                        "**If the module is not loaded: restart the installer pod only** (no cordon, no drain, no reboot):",
                    Branch::Differs =>
                        "**If the module is loaded and not at the target: cordon, drain, reboot:**",
                }
            );
        }
        task(out, &s);
    }
}

/// What to do once the run has done all it may: nodes cordoned before the change are left
/// alone, and only a new plan with `--include-cordoned` restarts them.
fn next_step(list: &Checklist, out: &mut String) {
    let skipped: Vec<_> = list
        .other_nodes
        .iter()
        .filter(|o| o.kind == OtherKind::Skipped)
        .map(|o| format!("`{}`", o.name))
        .collect();
    if skipped.is_empty() || list.options.include_cordoned {
        return;
    }
    let _ = writeln!(
        out,
        "\n**Next, after the run:** {} node(s) cordoned before this change ({}) are left alone and keep the run from being done; running it again does not help: generate the checklist again with `--include-cordoned` to restart them too (they stay cordoned).",
        skipped.len(),
        skipped.join(", ")
    );
}

fn findings(list: &Checklist, out: &mut String) {
    for d in &list.diagnostics {
        let lc = d.start();
        let _ = writeln!(
            out,
            "- **{}** `{}` {}:{}:{}: {} (help: {})",
            d.severity.as_str(),
            d.rule,
            d.file(),
            lc.line,
            lc.column,
            d.message,
            d.help
        );
    }
}

pub fn render(list: &Checklist) -> String {
    let mut out = String::from("# cGPU node-reboot checklist\n\n");
    let _ = writeln!(
        out,
        "Current: `{}` · desired: `{}`{}\n",
        list.current_path,
        list.desired_label,
        list.nodes_path
            .as_deref()
            .map(|p| format!(" · nodes: `{p}`"))
            .unwrap_or_default()
    );
    for line in header_lines(list) {
        let _ = writeln!(out, "- {line}");
    }
    change_lines(list, &mut out);
    if let Some(s) = list.strategy {
        let _ = writeln!(out, "- **Installer updateStrategy:** {}", s.as_str());
    }
    for n in &list.plan_notes {
        let _ = writeln!(out, "- **Note:** {n}");
    }
    if !list.blocking.is_empty() {
        out.push_str("\n## Blocking: fix these before any step\n\n");
        for d in &list.blocking {
            let lc = d.start();
            let _ = writeln!(
                out,
                "- **{}** `{}` {}:{}:{}: {}",
                d.severity.as_str(),
                d.rule,
                d.file(),
                lc.line,
                lc.column,
                d.message
            );
        }
    }
    upgrade_table(list, &mut out);
    let p = list.desired.policy;
    if list.disabled {
        out.push_str("\n## cGPU is turned off: no reboots\n\n");
        for s in &list.removal {
            task(&mut out, s);
        }
    } else if !list.change() && !list.acts() {
        out.push_str("\n**No reboot needed:** the policy and the cGPU version stay as they are.\n");
    } else if !list.nodes_given {
        let sel: Vec<String> = list
            .placement
            .selector
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(
            out,
            "\n**Reboot required** on every node running cgpu-installer where the module is loaded (`kubectl get nodes -l {}`). Give `--nodes` (`kubectl get nodes -o yaml`) for the per-node list.",
            sel.join(",")
        );
    } else if list.nodes.is_empty() {
        out.push_str(
            "\n**Nothing to restart:** no node in the list runs cgpu-installer (see below).\n",
        );
    } else {
        if list.already_applied() {
            let _ = writeln!(
                out,
                "\n**The DaemonSet already carries the target** (the change was applied, or nothing changes): the nodes decide. A node keeps the policy its module loaded until it restarts, so each node below is read and restarted only where it still differs."
            );
        }
        let _ = writeln!(
            out,
            "\n**Reboot required:** {} of {} node(s) running cgpu-installer may restart; each restarts only if its own state differs from the target ({}).",
            list.nodes.len(),
            list.installer_nodes,
            target_text(list)
        );
        out.push_str("\n## Before you start\n\n");
        for s in preflight(list) {
            task(&mut out, &s);
        }
        let mut rest = list.nodes.iter().peekable();
        if let Some(first) = list.nodes.first()
            && first.canary
        {
            out.push_str("\n## Canary\n");
            node_section(list, first, &mut out);
            rest.next();
            out.push_str(
                "\n- [ ] Canary checked: GPU workloads on it run as expected with the new policy\n",
            );
        }
        if rest.peek().is_some() {
            let m = list.options.max_unavailable;
            let _ = writeln!(
                out,
                "\n## Then the rest, {m} node{} at a time (--max-unavailable)",
                if m == 1 { "" } else { "s" }
            );
            for t in rest {
                node_section(list, t, &mut out);
            }
        }
    }
    if list.acts() {
        let verify: Vec<_> = list.to_verify().collect();
        if !verify.is_empty() {
            out.push_str("\n## Other GPU-sharing nodes (blocking until they show the target)\n");
            for o in verify {
                let _ = writeln!(out, "\n### `{}`\n\n> {}  \n", o.name, o.reason);
                task(&mut out, &verify_step(list, o));
            }
        }
        if !list.nodes.is_empty() || list.to_verify().next().is_some() {
            let _ = writeln!(
                out,
                "\n## Done when\n\n- [ ] every GPU-sharing node above shows the target ({}); a node that is NotReady, skipped or unreadable is not done",
                target_text(list)
            );
            let _ = writeln!(
                out,
                "\n## If it stops\n\nA node stops where a step fails: it stays cordoned (annotation `{CORDON_MARK}` if this run cordoned it), drained, and rebooted or not as far as it got. Fix the cause and start again from the top: every node is decided from its own state, so nodes already at policy {p} are skipped and only the rest are drained and restarted. To roll back, set POLICY back to the old value and run the checklist for it: the nodes already converted are then the ones that differ."
            );
            next_step(list, &mut out);
        }
    }
    let groups = [
        (
            OtherKind::AlsoIsolated,
            "Also using cGPU isolation (check policy consistency)",
        ),
        (OtherKind::Skipped, "Skipped (cordoned before this change)"),
        (OtherKind::Excluded, "Excluded"),
        (OtherKind::NotAffected, "Not affected"),
    ];
    for (kind, title) in groups {
        let items: Vec<_> = list.other_nodes.iter().filter(|o| o.kind == kind).collect();
        if items.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n## {title}\n");
        for o in items {
            let _ = writeln!(out, "- `{}`: {}", o.name, o.reason);
        }
    }
    if !list.diagnostics.is_empty() {
        out.push_str("\n## Findings\n\n");
        findings(list, &mut out);
    }
    out
}
