//! The rule catalogue as `cgpu-lint rules` (human, JSON, the markdown table of docs/rules.md) and
//! `cgpu-lint explain` print it; the catalogue itself ([`crate::catalogue`]) only declares.

use crate::catalogue::{FixClass, RULES, Rule};

/// The rule in full, as `cgpu-lint explain` prints it.
pub fn explain(rule: &Rule) -> String {
    let mut text = format!(
        "{name} ({sev}, {group})\n\n{summary}\n\n{expl}\n\nFix: {fix}\nHelp shown with findings: {help}\n",
        name = rule.name,
        sev = rule.severity.as_str(),
        group = rule.group.title(),
        summary = rule.summary,
        expl = rule.explanation,
        fix = rule
            .fix
            .map_or("none; the finding is left for a person.".to_string(), |f| {
                let by = match f.class {
                    FixClass::Safe => "`cgpu-lint fix` does this on its own",
                    FixClass::Unsafe => "`cgpu-lint fix --unsafe-fixes` does this",
                    FixClass::Depends => {
                        "`cgpu-lint fix` does this where it is safe, `--unsafe-fixes` everywhere"
                    }
                };
                format!(
                    "{by}: {}.\nApplicability: {}: {}.",
                    f.what,
                    f.class.as_str(),
                    f.why
                )
            }),
        help = rule.help,
    );
    text.push_str("Sources:\n");
    for src in rule.sources() {
        match src.url {
            Some(url) => text.push_str(&format!("  - {}\n    {url}\n", src.title)),
            None => text.push_str(&format!("  - {}\n", src.title)),
        }
    }
    let data = crate::cgpu::compat::data();
    text.push_str(&super::compat::explain_entries(
        data,
        &data.entries_for(rule.name),
    ));
    text
}

/// The catalogue as `cgpu-lint rules` prints it: name, severity, summary, `[fix]`.
pub fn human_list() -> String {
    let width = RULES.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for r in RULES {
        out.push_str(&format!(
            "{:width$}  {:7}  {}{}\n",
            r.name,
            r.severity.as_str(),
            r.summary,
            match r.fix.map(|f| f.class) {
                Some(FixClass::Safe) => " [fix]",
                Some(FixClass::Unsafe) => " [unsafe fix]",
                Some(FixClass::Depends) => " [fix, some unsafe]",
                None => "",
            },
        ));
    }
    out
}

/// The catalogue as `cgpu-lint rules --format json` prints it.
pub fn json_list() -> String {
    let list: Vec<serde_json::Value> = RULES
        .iter()
        .map(|r| {
            serde_json::json!({
                "name": r.name,
                "severity": r.severity,
                "group": r.group.title(),
                "summary": r.summary,
                "fix": r.fix.map(|f| f.what),
                "applicability": r.fix.map(|f| f.class.as_str()),
                "applicability_reason": r.fix.map(|f| f.why),
                "help": r.help,
                "sources": r.sources(),
            })
        })
        .collect();
    serde_json::to_string_pretty(&list).expect("json") + "\n"
}

/// The catalogue as the markdown table of docs/rules.md.
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| rule | severity | group | what | fix | applicability |\n|---|---|---|---|---|---|\n",
    );
    for r in RULES {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            r.name,
            r.severity.as_str(),
            r.group.title(),
            r.summary.replace('|', "\\|"),
            r.fix.map_or("–", |f| f.what).replace('|', "\\|"),
            r.fix.map_or("–", |f| f.class.as_str()),
        ));
    }
    out
}
