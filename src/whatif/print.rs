//! The what-if's answers printed: for people ([`human`]) and as JSON ([`json`]).

use super::WhatIf;

/// The answers of one or more clusters (`label`: the context, or `None` for files), for people.
pub fn human(answers: &[(Option<String>, WhatIf)]) -> String {
    use crate::output::escape_controls as esc;
    let mut out = String::new();
    for (label, w) in answers {
        let change: Vec<String> = w
            .change
            .flags()
            .iter()
            .map(|(f, v)| format!("--{f} {}", esc(v)))
            .collect();
        let now = match &w.cgpu_now {
            Some(v) => format!("cGPU {v} now"),
            None => "cGPU version now unknown".into(),
        };
        let on = label
            .as_deref()
            .map(|l| format!(" on cluster {}", esc(l)))
            .unwrap_or_default();
        out.push_str(&format!("what-if{on}: {} ({now})\n", change.join(", ")));
        for n in &w.nodes {
            let count = n.unchanged.len();
            let verdict = match n.verdict {
                "unchanged" if count == 0 => "unchanged, no findings".to_string(),
                "unchanged" if count == 1 => "unchanged (1 finding stays)".to_string(),
                "unchanged" => format!("unchanged ({count} findings stay)"),
                "new" => "new warnings".to_string(),
                "unknown" => n.unknown.clone().unwrap_or_default(),
                v => v.to_string(),
            };
            let verdict = match (&n.downgrade, n.verdict) {
                (Some(m), "downgrade") => format!("downgrade, cGPU {} → {}", m.from, m.to),
                (Some(m), _) => format!("{verdict} (downgrade, cGPU {} → {})", m.from, m.to),
                (None, _) => verdict,
            };
            out.push_str(&format!("node {}: {verdict}\n", esc(&n.name)));
            for i in &n.after {
                out.push_str(&format!(
                    "  after: {} ({}): {}\n",
                    i.rule,
                    i.severity.as_str(),
                    esc(&i.message)
                ));
            }
            for (what, list) in [("breaks", &n.breaks), ("new", &n.new), ("fixed", &n.fixed)] {
                for i in list {
                    out.push_str(&format!(
                        "  {what}: {} ({}): {}\n",
                        i.rule,
                        i.severity.as_str(),
                        esc(&i.message)
                    ));
                    if what == "fixed" {
                        continue;
                    }
                    for f in &i.facts {
                        let entry = f
                            .entry
                            .as_deref()
                            .map(|e| format!("{e}: "))
                            .unwrap_or_default();
                        let read = f
                            .read
                            .as_deref()
                            .map(|r| format!(" (read {r})"))
                            .unwrap_or_default();
                        let url = f
                            .url
                            .as_deref()
                            .map(|u| format!(" {u}"))
                            .unwrap_or_default();
                        out.push_str(&format!("    fact: {entry}{}{read}{url}\n", f.source));
                    }
                }
            }
            if !n.unchanged.is_empty() && n.verdict != "unchanged" {
                let mut rules: Vec<&str> = n.unchanged.iter().map(|i| i.rule).collect();
                rules.dedup();
                out.push_str(&format!("  unchanged: {}\n", rules.join(", ")));
            }
        }
        if let Some(d) = &w.downgrade {
            let nodes = w.downgraded();
            out.push_str(&format!(
                "downgrade: cGPU {} → {} on {nodes} node{}, {}\n",
                d.from,
                d.to,
                if nodes == 1 { "" } else { "s" },
                if d.allowed {
                    "allowed by --allow-downgrade"
                } else {
                    "refused without --allow-downgrade"
                }
            ));
            for l in &d.loses {
                let what = if l.kind == "issue" { "back" } else { "loses" };
                out.push_str(&format!("  {what}: {} (entry {})\n", l.text, l.entry));
            }
        }
        for a in &w.advice {
            out.push_str(&format!("advice: {a}\n"));
        }
        for n in &w.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        let count = |v: &str| w.nodes.iter().filter(|n| n.verdict == v).count();
        let mut also = String::new();
        if w.downgraded() > 0 {
            also.push_str(&format!(", {} downgraded", w.downgraded()));
        }
        if w.unknown() > 0 {
            also.push_str(&format!(", {} unknown", w.unknown()));
        }
        out.push_str(&format!(
            "{} of {} nodes break{also}, {} get new warnings, {} fixed, {} unchanged\n",
            count("breaks"),
            w.nodes.len(),
            count("new"),
            count("fixed"),
            count("unchanged"),
        ));
    }
    out
}

/// The answers as JSON: `{"version": 1, "clusters": [{"cluster", "change", "cgpu_now",
/// "nodes", "advice", "notes", "downgrade", "summary"}]}`.
pub fn json(answers: &[(Option<String>, WhatIf)]) -> String {
    let clusters: Vec<serde_json::Value> = answers
        .iter()
        .map(|(label, w)| {
            let count = |v: &str| w.nodes.iter().filter(|n| n.verdict == v).count();
            serde_json::json!({
                "cluster": label,
                "change": w.change,
                "cgpu_now": w.cgpu_now,
                "nodes": w.nodes,
                "advice": w.advice,
                "notes": w.notes,
                "downgrade": w.downgrade,
                "summary": {
                    "nodes": w.nodes.len(),
                    "breaks": count("breaks"),
                    "downgraded": w.downgraded(),
                    "unknown": w.unknown(),
                    "new": count("new"),
                    "fixed": count("fixed"),
                    "unchanged": count("unchanged"),
                },
            })
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&serde_json::json!({
        "version": 1,
        "clusters": clusters,
    }))
    .unwrap_or_default();
    s.push('\n');
    s
}
