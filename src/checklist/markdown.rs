//! `checklist --format markdown`: a GitHub task list for a change ticket, one `- [ ]` per step,
//! the canary node first.

use std::fmt::Write;

use super::{Checklist, OtherKind, Target, core, policy_title, steps, version_text};

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

fn node_section(list: &Checklist, t: &Target, heading: &str, out: &mut String) {
    let _ = writeln!(out, "\n### {heading}`{}`\n", t.name);
    for n in &t.notes {
        let _ = writeln!(out, "> {n}  ");
    }
    if !t.notes.is_empty() {
        out.push('\n');
    }
    for s in steps(list, t) {
        let _ = match &s.command {
            Some(c) => writeln!(out, "- [ ] {}: `{c}`", s.title),
            None => writeln!(out, "- [ ] {}", s.title),
        };
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
    change_lines(list, &mut out);
    if !list.reboot_required() {
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
            "\n**Reboot required** on every node running cgpu-installer (`kubectl get nodes -l {}`). Give `--nodes` (`kubectl get nodes -o yaml`) for the per-node list.",
            sel.join(",")
        );
    } else if list.nodes.is_empty() {
        out.push_str(
            "\n**Nothing to restart:** no node in the list runs cgpu-installer (see below).\n",
        );
    } else {
        let _ = writeln!(
            out,
            "\n**Reboot required:** {} node(s) run cgpu-installer; each restarts only if its cGPU module is loaded.",
            list.nodes.len()
        );
        out.push_str("\n## Before you start\n\n");
        let p = list.desired.policy;
        let _ = writeln!(
            out,
            "- [ ] Tell the owners of GPU workloads on these nodes; stop GPU applications that cannot move"
        );
        let _ = writeln!(
            out,
            "- [ ] Apply the desired values (`helm upgrade … -f {}`) so cgpu-installer carries POLICY \"{p}\"",
            list.desired_label
        );
        let _ = writeln!(
            out,
            "- [ ] Wait for the rollout: `kubectl -n kube-system rollout status ds/cgpu-installer`"
        );
        let mut rest = list.nodes.iter().peekable();
        if let Some(first) = list.nodes.first()
            && first.canary
        {
            out.push_str("\n## Canary\n");
            node_section(list, first, "", &mut out);
            rest.next();
            out.push_str(
                "\n- [ ] Canary checked: GPU workloads on it run as expected with the new policy\n",
            );
        }
        if rest.peek().is_some() {
            out.push_str("\n## Then the rest\n");
            for t in rest {
                node_section(list, t, "", &mut out);
            }
        }
    }
    let groups = [
        (
            OtherKind::AlsoIsolated,
            "Also using cGPU isolation (check policy consistency)",
        ),
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
    out
}
