//! The compatibility data ([`crate::cgpu::compat`]) as `cgpu-lint compat` prints it: the whole
//! table, or the row of one cGPU version; human text or JSON. `explain`'s list of the entries a
//! rule uses is here too.

use semver::Version;
use serde_json::{Value, json};

use crate::cgpu::compat::{Compat, Entry};

fn source_tag(id: &str) -> String {
    format!("[{id}]")
}

/// The whole table, for people.
pub fn human_table(d: &Compat) -> String {
    let mut out = format!(
        "cGPU compatibility data: versions up to {}, sources up to {} (src/cgpu/compat.toml)\n",
        d.meta.newest, d.meta.date
    );
    out.push_str("\nNVIDIA drivers (the cGPU FAQ's matrix)\n");
    for r in &d.drivers {
        out.push_str(&format!(
            "  {:<14} {}  {}\n",
            format!("{}–{}", r.from, r.to),
            Compat::driver_text(r),
            source_tag(&r.source)
        ));
        note(&mut out, r.note.as_deref());
    }
    out.push_str("\nSupport added in a version\n");
    for s in &d.support {
        out.push_str(&format!(
            "  {:<14} {}  {}\n",
            format!("since {}", s.since),
            s.text,
            source_tag(&s.source)
        ));
        note(&mut out, s.note.as_deref());
    }
    if !d.cgroup_v2.is_empty() {
        out.push_str("\nDistributions with cgroup v2 by default (status.nodeInfo.osImage)\n");
        for c in &d.cgroup_v2 {
            out.push_str(&format!(
                "  {} {} and later  {}\n",
                c.os,
                c.since,
                source_tag(&c.source)
            ));
            note(&mut out, c.note.as_deref());
        }
    }
    if !d.kernel.is_empty() {
        out.push_str("\nKernel requirements (status.nodeInfo.kernelVersion)\n");
        for k in &d.kernel {
            out.push_str(&format!(
                "  {:<14} {}  {}\n",
                format!("from {}", k.from),
                k.text,
                source_tag(&k.source)
            ));
            note(&mut out, k.note.as_deref());
        }
    }
    out.push_str("\nInstance families\n");
    for f in &d.families {
        out.push_str(&format!(
            "  {:<14} {}  {}\n",
            format!("{}–{}", f.from, f.to),
            f.families.join(", "),
            source_tag(&f.source)
        ));
        note(&mut out, f.note.as_deref());
    }
    out.push_str("  (no row for versions before the first one here: the source's table was read only in part)\n");
    out.push_str("\nKnown issues\n");
    for i in &d.issues {
        out.push_str(&format!(
            "  {:<14} {}{}  {}\n",
            i.range_text(),
            i.text,
            i.when_text(),
            source_tag(&i.source)
        ));
        note(&mut out, i.note.as_deref());
    }
    if !d.conflicts.is_empty() {
        out.push_str("\nGPU-sharing stacks that conflict on a node\n");
        for c in &d.conflicts {
            out.push_str(&format!(
                "  {} with {}: \"{}\"; {}  {}\n",
                c.stack,
                c.with,
                c.text,
                c.remedy,
                source_tag(&c.source)
            ));
            note(&mut out, c.note.as_deref());
        }
    }
    if !d.kubelet.is_empty() {
        out.push_str("\nKubernetes releases (status.nodeInfo.kubeletVersion)\n");
        for k in &d.kubelet {
            let needs = k
                .needs
                .as_deref()
                .and_then(|id| d.support_entry(id))
                .map(|s| format!("; needs cGPU {} or later ({})", s.since, s.id))
                .unwrap_or_else(|| "; unknown for cGPU".into());
            out.push_str(&format!(
                "  {:<14} {}{needs}  {}\n",
                format!("from {}", k.from),
                k.text,
                source_tag(&k.source)
            ));
            note(&mut out, k.note.as_deref());
        }
    }
    for l in &d.driver_list {
        out.push_str(&format!(
            "\nACK's NVIDIA driver list of {} (default {})  {}\n",
            l.date,
            l.default,
            source_tag(&l.source)
        ));
        out.push_str(&format!("  supported      {}\n", l.supported.join(", ")));
        out.push_str(&format!(
            "  {:<14} {} ({})\n",
            "incompatible",
            l.incompatible.join(", "),
            l.text
        ));
        note(&mut out, l.note.as_deref());
    }
    if !d.family_needs.is_empty() {
        out.push_str("\nInstance families that need a driver and a cGPU version\n");
        for f in &d.family_needs {
            out.push_str(&format!(
                "  {:<14} driver {}, cGPU {} or later: {}  {}\n",
                f.families.join(", "),
                f.driver,
                f.since,
                f.text,
                source_tag(&f.source)
            ));
            note(&mut out, f.note.as_deref());
        }
    }
    if !d.schedule.is_empty() {
        out.push_str("\nack.node.gpu.schedule values no cgpu-installer may select\n");
        for s in &d.schedule {
            out.push_str(&format!(
                "  {:<14} {}  {}\n",
                s.value,
                s.text,
                source_tag(&s.source)
            ));
            note(&mut out, s.note.as_deref());
        }
    }
    for p in &d.pool_drift {
        out.push_str(&format!(
            "\nNode pools ({}): \"{}\"; {}  {}\n",
            p.label,
            p.text,
            p.remedy,
            source_tag(&p.source)
        ));
        note(&mut out, p.note.as_deref());
    }
    if !d.numbering.is_empty() {
        out.push_str("\nOther stacks' policy numbers\n");
        for n in &d.numbering {
            let list: Vec<String> = n
                .policies
                .iter()
                .enumerate()
                .map(|(i, p)| format!("{i} {p}"))
                .collect();
            out.push_str(&format!(
                "  {}: {}  {}\n",
                n.stack,
                list.join(", "),
                source_tag(&n.source)
            ));
            note(&mut out, n.note.as_deref());
        }
    }
    sources(&mut out, d, None);
    out
}

fn note(out: &mut String, note: Option<&str>) {
    if let Some(n) = note {
        out.push_str(&format!("  {:<14} note: {n}\n", ""));
    }
}

/// The sources, all or those `only` names.
fn sources(out: &mut String, d: &Compat, only: Option<&[&str]>) {
    out.push_str("\nSources\n");
    for s in &d.sources {
        if only.is_some_and(|o| !o.contains(&s.id.as_str())) {
            continue;
        }
        out.push_str(&format!("  [{}] {}\n", s.id, s.title));
        let dates = match &s.updated {
            Some(u) => format!("updated {u}, read {}", s.read),
            None => format!("read {}", s.read),
        };
        match &s.url {
            Some(url) => out.push_str(&format!("      {url} ({dates})\n")),
            None => out.push_str(&format!("      (no address recorded; {dates})\n")),
        }
    }
}

/// What the data says about one cGPU version, for people.
pub fn human_version(d: &Compat, tag: &str, v: &Version) -> String {
    if d.is_newer(v) {
        return format!(
            "cGPU {v} (tag {tag}) is newer than the compatibility data of {} (newest version {}): nothing is known about it yet, which is not an error\n",
            d.meta.date, d.meta.newest
        );
    }
    let mut out = format!(
        "cGPU {v} (tag {tag}), compatibility data of {}\n",
        d.meta.date
    );
    let mut used: Vec<&str> = Vec::new();
    match d.driver_row(v) {
        Some(r) => {
            out.push_str(&format!(
                "  NVIDIA drivers: {} (the row for {}–{})  {}\n",
                Compat::driver_text(r),
                r.from,
                r.to,
                source_tag(&r.source)
            ));
            used.push(&r.source);
        }
        None => out.push_str("  NVIDIA drivers: the data has no row for this version\n"),
    }
    for s in &d.support {
        let has = *v >= s.since.0;
        out.push_str(&format!(
            "  {}: {} (since {})  {}\n",
            if has { "supports" } else { "lacks" },
            s.text,
            s.since,
            source_tag(&s.source)
        ));
        used.push(&s.source);
    }
    match d.families_at(v) {
        Some(f) => {
            out.push_str(&format!(
                "  instance families: {}  {}\n",
                f.families.join(", "),
                source_tag(&f.source)
            ));
            used.push(&f.source);
        }
        None => {
            let read: Vec<String> = d
                .families
                .iter()
                .map(|f| format!("{}–{}", f.from, f.to))
                .collect();
            out.push_str(&format!(
                "  instance families: not in the data for this version (only {} was read)\n",
                read.join(", ")
            ));
        }
    }
    let issues: Vec<_> = d.issues_at(v).collect();
    if issues.is_empty() {
        out.push_str("  known issues: none in the data\n");
    }
    for i in issues {
        out.push_str(&format!(
            "  known issue ({}): {}{}  {}\n",
            i.range_text(),
            i.text,
            i.when_text(),
            source_tag(&i.source)
        ));
        used.push(&i.source);
    }
    used.sort_unstable();
    used.dedup();
    sources(&mut out, d, Some(&used));
    out
}

/// The whole data as JSON (the file's tables, as parsed).
pub fn json_table(d: &Compat) -> String {
    let mut s = serde_json::to_string_pretty(d).unwrap_or_default();
    s.push('\n');
    s
}

/// One version's row as JSON.
pub fn json_version(d: &Compat, tag: &str, v: &Version) -> String {
    let newer = d.is_newer(v);
    let value: Value = if newer {
        json!({
            "tag": tag,
            "version": v.to_string(),
            "data_date": d.meta.date,
            "newer_than_data": true,
        })
    } else {
        json!({
            "tag": tag,
            "version": v.to_string(),
            "data_date": d.meta.date,
            "newer_than_data": false,
            "drivers": d.driver_row(v),
            "supports": d.support.iter().filter(|s| *v >= s.since.0).collect::<Vec<_>>(),
            "lacks": d.support.iter().filter(|s| *v < s.since.0).collect::<Vec<_>>(),
            "families": d.families_at(v),
            "issues": d.issues_at(v).collect::<Vec<_>>(),
        })
    };
    let mut s = serde_json::to_string_pretty(&value).unwrap_or_default();
    s.push('\n');
    s
}

/// The entries a rule uses, for `explain` (empty when the rule reads none).
pub fn explain_entries(d: &Compat, entries: &[Entry]) -> String {
    if entries.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "Compatibility data it uses (src/cgpu/compat.toml, `cgpu-lint compat`; data of {}):\n",
        d.meta.date
    );
    for e in entries {
        let src = d.source(e.source);
        let summary = match d.drivers.iter().find(|r| r.id == e.id) {
            Some(r) => format!("{}–{}: {}", r.from, r.to, Compat::driver_text(r)),
            None => match d.families.iter().find(|f| f.id == e.id) {
                Some(f) => format!("{}–{}: {}", f.from, f.to, f.families.join(", ")),
                None => e.summary.to_string(),
            },
        };
        out.push_str(&format!("  - {}: {summary}\n", e.id));
        if let Some(s) = src {
            let read = format!("read {}", s.read);
            match &s.url {
                Some(url) => out.push_str(&format!("    {} ({read})\n    {url}\n", s.title)),
                None => out.push_str(&format!("    {} ({read})\n", s.title)),
            }
        }
        if let Some(n) = e.note {
            out.push_str(&format!("    note: {n}\n"));
        }
    }
    out
}
