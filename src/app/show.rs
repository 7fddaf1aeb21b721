//! `check --show-settings FILE` and `check --show-files [PATH]...` (ruff's `--show-settings` and
//! `--show-files`): the settings that apply to one file, each with where it came from, as
//! [`crate::config::resolve`] (the one place flags meet `.cgpu-lint.toml`) resolved them; and
//! what a walk checks and skips, from the walk `check` itself does ([`crate::check::walk_paths`]).

use std::path::Path;

use serde_json::{Value, json};

use super::settings::{overrides, resolve};
use super::{AppError, Exit, Streams};
use crate::catalogue::RULES;
use crate::cli::CheckArgs;
use crate::output::{Format, ci_path, escape_line as esc};

/// One setting: its key (as in `.cgpu-lint.toml` where it has one), value and origins.
struct Item {
    key: &'static str,
    value: Value,
    origin: Vec<String>,
}

/// An origin with the config file's path as the working directory sees it.
fn shown(origin: &str, config: Option<&Path>) -> String {
    let Some(path) = config else {
        return origin.to_string();
    };
    let full = path.display().to_string();
    match origin.strip_prefix(&full) {
        Some(rest) => format!("{}{rest}", ci_path(&full, Some(&crate::paths::cwd()))),
        None => origin.to_string(),
    }
}

pub(crate) fn settings(s: &mut Streams, args: &CheckArgs) -> Result<Exit, AppError> {
    let [file] = args.paths.as_slice() else {
        return Err(AppError::Usage(format!(
            "--show-settings shows the settings of one file; {} paths were given",
            args.paths.len()
        )));
    };
    // Settings of a file that is not there would answer a question nobody asked (a typo in
    // the path): refused as check refuses it.
    if file != "-"
        && let Err(source) = std::fs::metadata(file)
    {
        return Err(crate::check::InputError::Io {
            path: file.clone(),
            source,
        }
        .into());
    }
    let c = &args.common;
    let o = overrides(c);
    let r = resolve(&o)?;
    let config = r.config_file.as_ref().map(|(p, _)| p.as_path());
    let origin = |key: &str| -> Vec<String> {
        match r.origins.get(key) {
            Some(v) if !v.is_empty() => v.iter().map(|o| shown(o, config)).collect(),
            _ => vec!["default".to_string()],
        }
    };
    let mut items: Vec<Item> = Vec::new();
    let (config_value, config_origin) = match &r.config_file {
        Some((path, how)) => (
            json!(ci_path(
                &path.display().to_string(),
                Some(&crate::paths::cwd())
            )),
            vec![how.clone()],
        ),
        None if o.no_config => (Value::Null, vec!["--no-config".to_string()]),
        None => (
            Value::Null,
            vec![format!(
                "no {} in {} or above",
                crate::config::FILE_NAME,
                crate::paths::cwd().display()
            )],
        ),
    };
    items.push(Item {
        key: "config-file",
        value: config_value,
        origin: config_origin,
    });
    let st = &r.settings;
    let select = if st.filter.select.is_empty() {
        vec!["all".to_string()]
    } else {
        st.filter.select.clone()
    };
    items.push(Item {
        key: "select",
        value: json!(select),
        origin: origin("select"),
    });
    items.push(Item {
        key: "ignore",
        value: json!(st.filter.ignore),
        origin: origin("ignore"),
    });
    // The patterns that match this file, each at its line, by the pipeline's own matching.
    let matches = r
        .file
        .as_ref()
        .map(|l| l.per_file_matches(file))
        .unwrap_or_default();
    let mut table = serde_json::Map::new();
    let mut pf_origin = Vec::new();
    for (pattern, rules, at) in &matches {
        table.insert(pattern.clone(), json!(rules));
        pf_origin.push(shown(at, config));
    }
    items.push(Item {
        key: "per-file-ignores",
        value: Value::Object(table),
        origin: if pf_origin.is_empty() {
            vec![if r.file.is_some() {
                "no pattern matches this file".to_string()
            } else {
                "default".to_string()
            }]
        } else {
            pf_origin
        },
    });
    // What the pipeline then reports in this file: its own filter and per-file ignores.
    let not_reported: Vec<&str> = RULES
        .iter()
        .map(|rule| rule.name)
        .filter(|name| {
            !st.filter.allows(name)
                || st
                    .per_file_ignores
                    .as_ref()
                    .is_some_and(|p| !p.allows(file, name))
        })
        .collect();
    items.push(Item {
        key: "rules-not-reported",
        value: json!(not_reported),
        origin: vec!["select, ignore and per-file-ignores above".to_string()],
    });
    items.push(Item {
        key: "helm",
        value: match st.opts.helm {
            Some(crate::helm::Version::Three) => json!(3),
            Some(crate::helm::Version::Four) => json!(4),
            None => json!("both"),
        },
        origin: origin("helm"),
    });
    items.push(Item {
        key: "region",
        value: json!(st.opts.region),
        origin: origin("region"),
    });
    items.push(Item {
        key: "require-cgpu",
        value: json!(st.opts.require_cgpu),
        origin: origin("require-cgpu"),
    });
    items.push(Item {
        key: "deny-warnings",
        value: json!(r.deny_warnings),
        origin: origin("deny-warnings"),
    });
    items.push(Item {
        key: "format",
        value: json!(r.format.unwrap_or(c.format).name()),
        origin: origin("format"),
    });
    items.push(Item {
        key: "include-markdown",
        value: json!(st.include_markdown),
        origin: origin("include-markdown"),
    });
    let size_default = c.max_file_size == crate::check::DEFAULT_MAX_FILE_SIZE;
    items.push(Item {
        key: "max-file-size",
        value: json!(c.max_file_size),
        origin: vec![
            if size_default {
                "default"
            } else {
                "--max-file-size"
            }
            .to_string(),
        ],
    });
    let names = |ids: &[crate::catalogue::RuleId]| -> Value {
        json!(ids.iter().map(|r| r.name()).collect::<Vec<_>>())
    };
    items.push(Item {
        key: "fix.extend-safe",
        value: names(&st.fix_classes.extend_safe),
        origin: origin("fix.extend-safe"),
    });
    items.push(Item {
        key: "fix.extend-unsafe",
        value: names(&st.fix_classes.extend_unsafe),
        origin: origin("fix.extend-unsafe"),
    });
    let (baseline_value, baseline_origin) = match super::baseline::entries_for(c, file)? {
        Some((path, n)) => (
            json!({"file": path.display().to_string(), "entries_for_this_file": n}),
            vec![if c.baseline.is_some() {
                "--baseline".to_string()
            } else {
                format!("{} in the working directory", crate::baseline::FILE_NAME)
            }],
        ),
        None if c.no_baseline => (Value::Null, vec!["--no-baseline".to_string()]),
        None => (
            Value::Null,
            vec![format!(
                "no {} in the working directory",
                crate::baseline::FILE_NAME
            )],
        ),
    };
    items.push(Item {
        key: "baseline",
        value: baseline_value,
        origin: baseline_origin,
    });
    let format = r.format.unwrap_or(c.format);
    if format == Format::Json {
        let mut settings = serde_json::Map::new();
        for i in &items {
            settings.insert(
                i.key.to_string(),
                json!({"value": i.value, "origin": i.origin}),
            );
        }
        let doc = json!({"file": file, "settings": settings});
        writeln!(
            s.out,
            "{}",
            serde_json::to_string_pretty(&doc).expect("serialisable")
        )?;
    } else {
        writeln!(
            s.out,
            "# the settings cgpu-lint check uses for {}",
            esc(file)
        )?;
        for i in &items {
            writeln!(
                s.out,
                "{} = {}  # {}",
                i.key,
                esc(&i.value.to_string()),
                esc(&i.origin.join(" + "))
            )?;
        }
    }
    Ok(Exit::Clean)
}

pub(crate) fn files(s: &mut Streams, args: &CheckArgs) -> Result<Exit, AppError> {
    let c = &args.common;
    let r = resolve(&overrides(c))?;
    let paths = if args.paths.is_empty() {
        vec![".".to_string()]
    } else {
        args.paths.clone()
    };
    let mut skipped = Vec::new();
    let (checked, errors) =
        crate::check::walk_paths(&paths, r.settings.include_markdown, Some(&mut skipped));
    let format = r.format.unwrap_or(c.format);
    // With --gitops, what the GitOps hook (`check --gitops`) checks of the files walked.
    let gitops = args
        .gitops
        .then(|| crate::lint::inputs::gitops_files(&checked, c.max_file_size));
    let mut rows: Vec<Value> = Vec::new();
    for f in &checked {
        if let Some((selection, _)) = &gitops
            && let Some((_, Some(why))) = selection.iter().find(|(p, _)| p == f)
        {
            rows.push(json!({"path": f, "checked": false, "reason": format!("--gitops: {why}")}));
            continue;
        }
        let mut note = None;
        if f != "-"
            && let Ok(meta) = std::fs::metadata(f)
            && meta.len() > c.max_file_size
        {
            note = Some(format!(
                "over --max-file-size ({} bytes): reported as an io-error",
                meta.len()
            ));
        } else if let Some(p) = &r.settings.per_file_ignores
            && !RULES.iter().any(|rule| p.allows(f, rule.name))
        {
            note = Some("per-file-ignores hide every rule in it".to_string());
        }
        rows.push(json!({"path": f, "checked": true, "note": note}));
    }
    for (path, why) in &skipped {
        // A folder is written with a `/` after it.
        let mut shown = path.to_string_lossy().into_owned();
        if path.is_dir() && !path.is_symlink() {
            shown.push('/');
        }
        rows.push(json!({
            "path": shown,
            "checked": false,
            "reason": why.reason(),
        }));
    }
    for e in errors
        .iter()
        .chain(gitops.iter().flat_map(|(_, errors)| errors))
    {
        rows.push(json!({"path": e.path(), "checked": false, "error": e.to_string()}));
    }
    if format == Format::Json {
        writeln!(
            s.out,
            "{}",
            serde_json::to_string_pretty(&json!({"files": rows})).expect("serialisable")
        )?;
    } else {
        for row in &rows {
            let path = esc(row["path"].as_str().unwrap_or_default());
            let line = if row["checked"] == true {
                match row["note"].as_str() {
                    Some(n) => format!("check {path} ({n})"),
                    None => format!("check {path}"),
                }
            } else if let Some(e) = row["error"].as_str() {
                format!("error {}", esc(e))
            } else {
                format!(
                    "skip  {path}: {}",
                    row["reason"].as_str().unwrap_or_default()
                )
            };
            writeln!(s.out, "{line}")?;
        }
    }
    Ok(Exit::Clean)
}
