//! Rules for the `cgpu:` block of ack-ai-installer values; the schema's findings
//! are in [`crate::rules::schema`], the field checks shared with the installer in
//! [`crate::rules::fields`].

use crate::catalogue::RuleId;

use crate::catalogue::Severity;
use crate::cgpu::{
    EXPECTED_IMAGE, KNOWN_KEYS, POLICY_NAMES, POLICY_RANGE_TEXT, POLICY_TITLES, policy_number,
    split_image,
};
use crate::diag::Edit;
use crate::rules::Ctx;
use crate::yaml::emit::{double_quoted, render_string};
use crate::yaml::node::child;
use crate::yaml::{Node, Scalar, Style, Value};

use crate::rules::fields::{check_tag, node_selector, pull_policy, yaml11};
use crate::rules::schema::schema_findings;

/// Check one values document whose root holds a `cgpu` key.
pub fn check(ctx: &mut Ctx, root: &Node) {
    let Some(entry) = root.entry("cgpu") else {
        return;
    };
    let cgpu = &entry.value;
    let before = ctx.out.len();
    match &cgpu.value {
        Value::Map(_) => check_block(ctx, cgpu),
        Value::Scalar(Scalar::Null) => {
            ctx.at(
                RuleId::NotAMapping,
                cgpu,
                "/cgpu",
                "`cgpu` is null: in a values file that deletes the chart's whole cgpu block",
            );
        }
        _ => {
            ctx.at(
                RuleId::NotAMapping,
                cgpu,
                "/cgpu",
                format!(
                    "`cgpu` is a {}, not a mapping of settings",
                    cgpu.type_name()
                ),
            );
        }
    }
    if let Value::Map(_) = cgpu.value {
        schema_findings(ctx, root, before);
    }
}

fn check_block(ctx: &mut Ctx, cgpu: &Node) {
    let entries = cgpu.as_map().unwrap_or_default();
    // YAML 1.1 scalars first: a plain scalar whose meaning depends on the YAML version.
    for e in entries {
        if !KNOWN_KEYS.contains(&e.key.as_str()) {
            continue;
        }
        if e.key == "nodeSelector" {
            if let Some(sel) = e.value.as_map() {
                for s in sel {
                    // label-value-type owns non-string values and says how Helm reads them.
                    if !matches!(s.value.scalar(), Some(Scalar::Str(_))) {
                        continue;
                    }
                    yaml11(
                        ctx,
                        &s.value,
                        &child(&child("/cgpu", "nodeSelector"), &s.key),
                        false,
                    );
                }
            }
            continue;
        }
        // The fix writes Helm's reading; only where that reading has the type the key takes.
        let fits = matches!(
            (e.key.as_str(), e.value.scalar()),
            ("enabled" | "checkRegions", Some(Scalar::Bool(_)))
                | ("policy", Some(Scalar::Int(_)))
                | (_, Some(Scalar::Str(_)))
        );
        yaml11(ctx, &e.value, &child("/cgpu", &e.key), fits);
    }
    for e in entries {
        let path = child("/cgpu", &e.key);
        let v = &e.value;
        match e.key.as_str() {
            "enabled" | "checkRegions" => boolean(ctx, &e.key, v, &path),
            "policy" => policy(ctx, v, &path),
            "image" => image(ctx, cgpu, v, &path),
            "tag" => tag(ctx, v, &path, false),
            "financeCloudImageTag" => tag(ctx, v, &path, true),
            "imagePullPolicy" => pull_policy(ctx, v, &path),
            "nodeSelector" => node_selector(ctx, v, &path),
            _ => unknown_key(ctx, cgpu, e),
        }
    }
    if let Some(enabled) = cgpu.entry("enabled")
        && matches!(enabled.value.scalar(), Some(Scalar::Bool(false)))
    {
        let others: Vec<&str> = entries
            .iter()
            .filter(|e| e.key != "enabled")
            .map(|e| e.key.as_str())
            .collect();
        if !others.is_empty() {
            ctx.at(
                RuleId::DisabledWithSettings,
                &enabled.value,
                "/cgpu/enabled",
                format!(
                    "cgpu is disabled, so {} take{} no effect",
                    others.join(", "),
                    if others.len() == 1 { "s" } else { "" }
                ),
            );
        }
    }
}

fn bool_word(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "y" => Some(true),
        "false" | "no" | "off" | "n" => Some(false),
        _ => None,
    }
}

fn boolean(ctx: &mut Ctx, key: &str, v: &Node, path: &str) {
    if let Some(Scalar::Str(s)) = v.scalar() {
        let as_bool = bool_word(s);
        let msg = match as_bool {
            Some(false) => format!(
                "`{key}` is the string {}: a Go template treats every non-empty string as true, so this does NOT turn it off",
                v.raw()
            ),
            _ => format!("`{key}` is the string {}, not a boolean", v.raw()),
        };
        let finding = ctx.at(RuleId::StringBoolean, v, path.to_string(), msg);
        if let Some(b) = as_bool {
            let finding = finding
                .help(format!("write `{key}: {b}` without quotes"))
                .fix(v, vec![Edit::replace(v, b.to_string())]);
            // The chart tests `enabled` with `if` (every non-empty string is true) and quotes
            // `checkRegions` into its ConfigMap: only a true-like `enabled` and exactly "true"
            // render alike as a boolean.
            if !(b && (key == "enabled" || s == "true")) {
                let effect = match (key, b) {
                    ("enabled", _) => upgrade_effect(key, &serde_json::json!(b), None),
                    (_, false) => "the chart's region check turns off at the next upgrade".into(),
                    _ => format!(
                        "the chart renders `true` where it rendered {} (the cgpu-installer-config ConfigMap)",
                        v.raw()
                    ),
                };
                becomes(finding, key, serde_json::json!(b), effect);
            }
        }
    }
}

/// A large float as Go's `%v` prints it (`1.8446744073709552e+19`).
fn go_float(f: f64) -> String {
    let s = format!("{f:e}");
    if s.contains("e-") {
        s
    } else {
        s.replacen('e', "e+", 1)
    }
}

fn policy(ctx: &mut Ctx, v: &Node, path: &str) {
    let number = match v.scalar() {
        // Helm holds every number as a float64: an integer this large it renders as a float
        // (18446744073709551615 as 1.8446744073709552e+19), so it is judged as that float.
        Some(Scalar::Int(i)) if i.unsigned_abs() >= 1_000_000_000_000_000 => {
            ctx.at(
                RuleId::PolicyNotInteger,
                v,
                path.to_string(),
                format!(
                    "policy `{}` is a float to Helm, which holds every number as a float64 and renders this one as {}; cGPU policies are the integers {POLICY_RANGE_TEXT}",
                    v.raw(),
                    go_float(*i as f64)
                ),
            );
            None
        }
        Some(Scalar::Int(i)) => Some(*i),
        Some(Scalar::Float(f)) if f.fract() == 0.0 && f.abs() < 1e15 => {
            let n = *f as i128;
            let finding = ctx.at(
                RuleId::PolicyWholeFloat,
                v,
                path.to_string(),
                format!(
                    "policy `{}` is written as a float; Helm holds every number as a float64 and renders it as {n}, but write the integer",
                    v.raw()
                ),
            );
            if *f == 0.0 && f.is_sign_negative() {
                // Helm renders -0.0 as POLICY "-0", the integer as "0".
                finding.fix_note("not fixed automatically: Helm renders -0.0 as \"-0\", not 0");
            } else {
                finding
                    .help(format!("write `policy: {n}`"))
                    .fix(v, vec![Edit::replace(v, n.to_string())]);
            }
            Some(n)
        }
        Some(Scalar::Float(_)) => {
            ctx.at(
                RuleId::PolicyNotInteger,
                v,
                path.to_string(),
                format!(
                    "policy `{}` is a float; cGPU policies are the integers {POLICY_RANGE_TEXT}",
                    v.raw()
                ),
            );
            None
        }
        Some(Scalar::Str(s)) => {
            let t = s.trim();
            if !t.is_empty() && t.len() < 20 && t.bytes().all(|b| b.is_ascii_digit()) && t == s {
                let n: i128 = t.parse().unwrap_or(i128::MAX);
                if t.len() > 1 && t.starts_with('0') {
                    // The chart quotes the string as it is: POLICY "02", which is not one of
                    // the digits cGPU reads. One finding, an error (the schema's too).
                    ctx.at(
                        RuleId::WrongType,
                        v,
                        path.to_string(),
                        format!(
                            "policy {} is a string with a leading zero: the chart renders POLICY {}, which is not one of \"0\"…\"5\"",
                            v.raw(),
                            double_quoted(s)
                        ),
                    )
                    .help(if policy_number(n).is_some() {
                        format!("write `policy: {n}` ({})", POLICY_TITLES[n as usize])
                    } else {
                        RuleId::PolicyOutOfRange.info().help.to_string()
                    });
                    return;
                }
                if policy_number(n).is_some() {
                    let finding = ctx.at(
                        RuleId::PolicyQuoted,
                        v,
                        path.to_string(),
                        format!(
                            "policy {} is a quoted string; the documented form is the number {n}",
                            v.raw()
                        ),
                    );
                    let finding = finding.fix(v, vec![Edit::replace(v, n.to_string())]);
                    // "02" renders POLICY "02", the number 2 renders "2".
                    if t != n.to_string() {
                        let effect = upgrade_effect("policy", &serde_json::json!(n), Some(v));
                        becomes(finding, "policy", serde_json::json!(n), effect);
                    }
                }
                Some(n)
            } else {
                let named = POLICY_NAMES
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case(t))
                    .map(|&(_, n)| n);
                let finding = ctx.at(
                    RuleId::PolicyNotInteger,
                    v,
                    path.to_string(),
                    match named {
                        Some(n) => {
                            format!("policy `{s}` is a name; the chart needs its number, {n}")
                        }
                        None => format!("policy `{s}` is not a number {POLICY_RANGE_TEXT}"),
                    },
                );
                if let Some(n) = named {
                    let finding = finding
                        .help(format!(
                            "write `policy: {n}` ({})",
                            POLICY_TITLES[n as usize]
                        ))
                        .fix(v, vec![Edit::replace(v, n.to_string())]);
                    let effect = upgrade_effect("policy", &serde_json::json!(n), Some(v));
                    becomes(finding, "policy", serde_json::json!(n), effect);
                }
                None
            }
        }
        _ => None,
    };
    let Some(n) = number else { return };
    if policy_number(n).is_none() {
        ctx.at(
            RuleId::PolicyOutOfRange,
            v,
            path.to_string(),
            format!("policy {n} does not exist; cGPU policies are {POLICY_RANGE_TEXT}"),
        );
    } else if n == 2 {
        ctx.at(
            RuleId::PolicyWeightHint,
            v,
            path.to_string(),
            "policy 2 (weight-based preemptive) acts only on workloads that set ALIYUN_COM_GPU_SCHD_WEIGHT > 1",
        );
    }
}

fn image(ctx: &mut Ctx, cgpu: &Node, v: &Node, path: &str) {
    let Some(s) = v.as_str() else { return };
    let r = split_image(s);
    if r.host.is_some() || r.tag.is_some() || r.digest.is_some() {
        let mut parts = Vec::new();
        if let Some(h) = r.host {
            parts.push(format!("the registry host `{h}`"));
        }
        if let Some(t) = r.tag {
            parts.push(format!("the tag `{t}`"));
        }
        if let Some(d) = r.digest {
            parts.push(format!("the digest `{d}`"));
        }
        let tag_entry = cgpu.entry("tag");
        let tag_node_ok = tag_entry.is_none_or(|te| ctx.editable(&te.value).is_ok());
        let finding = ctx.at(
            RuleId::ImageReference,
            v,
            path.to_string(),
            format!(
                "`image` holds {}; the chart adds the registry and the tag itself",
                parts.join(" and ")
            ),
        );
        let tag_free = match tag_entry.map(|e| &e.value) {
            None => true,
            Some(t) => t.as_str() == Some("latest"),
        };
        if r.digest.is_none() && tag_free && cgpu.style == Style::Block {
            let mut edits = vec![Edit::replace(v, render_string(r.path, v.style))];
            if let Some(t) = r.tag {
                match tag_entry {
                    Some(te) => {
                        edits.push(Edit::replace(&te.value, render_string(t, te.value.style)))
                    }
                    None => {
                        let key_start = cgpu
                            .entry("image")
                            .map_or(v.span.start, |e| e.key_span.start);
                        edits.push(Edit::insert_line_after(
                            &v.src,
                            v.span.end,
                            key_start,
                            &format!("tag: {}", render_string(t, Style::Plain)),
                        ));
                    }
                }
            }
            let finding = finding.help(match r.tag {
                Some(t) => format!("set `image: {}` and `tag: {t}`", r.path),
                None => format!("set `image: {}`", r.path),
            });
            if tag_node_ok {
                // The rendered image changes (the original doubles the host or the tag, which
                // the API server accepts and only the kubelet fails to pull).
                let mut sets = vec![("cgpu.image".to_string(), serde_json::json!(r.path))];
                let mut line = format!("cgpu.image becomes \"{}\"", r.path);
                if let Some(t) = r.tag {
                    sets.push(("cgpu.tag".to_string(), serde_json::json!(t)));
                    line.push_str(&format!(" and cgpu.tag \"{t}\""));
                }
                let image = format!("<registry>/{}:{}", r.path, r.tag.unwrap_or("<tag>"));
                finding.fix(v, edits).unsafe_fix(
                    format!(
                        "{line}: the next upgrade rolls the installer DaemonSets onto the image {image}"
                    ),
                    sets,
                );
            }
        }
    }
    if r.path != EXPECTED_IMAGE && !r.path.is_empty() {
        ctx.at(
            RuleId::ImageName,
            v,
            path.to_string(),
            format!("`image` is `{}`, not {EXPECTED_IMAGE} (a mirror?)", r.path),
        );
    }
}

fn tag(ctx: &mut Ctx, v: &Node, path: &str, finance_key: bool) {
    let Some(s) = v.as_str() else { return };
    check_tag(ctx, v, path, s, finance_key, false);
}

fn unknown_key(ctx: &mut Ctx, cgpu: &Node, e: &crate::yaml::Entry) {
    let close: Vec<&str> = KNOWN_KEYS
        .iter()
        .copied()
        .filter(|k| {
            k.eq_ignore_ascii_case(&e.key)
                || edit_distance(&k.to_ascii_lowercase(), &e.key.to_ascii_lowercase()) <= 2
        })
        .collect();
    let path = child("/cgpu", &e.key);
    let src = e.value.src.clone();
    let msg = match close.as_slice() {
        [one] => format!("unknown key `{}` in cgpu; did you mean `{one}`?", e.key),
        [] => format!(
            "unknown key `{}` in cgpu; known keys: {}",
            e.key,
            KNOWN_KEYS.join(", ")
        ),
        many => format!(
            "unknown key `{}` in cgpu; did you mean one of {}?",
            e.key,
            many.join(", ")
        ),
    };
    let finding = ctx.report(RuleId::UnknownKey, &src, e.key_span.clone(), path, msg);
    if let [one] = close.as_slice() {
        let finding = finding.help(format!(
            "rename it to `{one}`; the chart ignores `{}`",
            e.key
        ));
        if cgpu.entry(one).is_some() {
            finding.fix_note(format!("not renamed automatically: `{one}` is already set"));
        } else if e.merged || e.value.via_alias.is_some() {
            finding.fix_note("not renamed automatically: the key comes from a merged anchor");
        } else {
            // A key is not a value node: the checks above are `editable`'s for a key.
            let finding = finding.edits(vec![crate::diag::Edit {
                src,
                range: e.key_span.clone(),
                replacement: one.to_string(),
            }]);
            // The chart ignores the misspelt key: the rename makes its value live.
            let value = e.value.to_json();
            let effect = upgrade_effect(one, &value, None);
            becomes(finding, one, value, effect);
        }
    }
}

/// Mark `finding`'s fix unsafe: `cgpu.KEY` becomes `value` (as Helm reads it), with `effect`.
fn becomes(finding: crate::rules::Finding, key: &str, value: serde_json::Value, effect: String) {
    finding.unsafe_fix(
        format!("cgpu.{key} becomes {value}: {effect}"),
        vec![(format!("cgpu.{key}"), value)],
    );
}

/// What the next upgrade does when `cgpu.KEY` becomes `value`, as the chart renders it; `was`
/// is the node whose text it renders now, if any.
fn upgrade_effect(key: &str, value: &serde_json::Value, was: Option<&Node>) -> String {
    let truthy = match value {
        serde_json::Value::Null | serde_json::Value::Bool(false) => false,
        serde_json::Value::String(s) => !s.is_empty(),
        serde_json::Value::Number(n) => n.as_f64() != Some(0.0),
        serde_json::Value::Array(a) => !a.is_empty(),
        serde_json::Value::Object(m) => !m.is_empty(),
        _ => true,
    };
    match key {
        "enabled" if truthy => "the next upgrade installs the cgpu-installer and cgpu-core-installer DaemonSets where the chart default or another values file turned them off".into(),
        "enabled" => "the next upgrade removes the cgpu-installer and cgpu-core-installer DaemonSets".into(),
        "policy" => {
            let to = match value {
                serde_json::Value::Number(n) => n.as_f64().map(crate::helm::json::go_sprint_float64),
                serde_json::Value::String(s) => Some(s.clone()),
                _ => None,
            };
            let now = was
                .and_then(|w| w.scalar())
                .and_then(crate::helm::json::sprint)
                .map(|s| format!(" (now {s:?})"))
                .unwrap_or_default();
            match to {
                Some(to) => format!(
                    "the next upgrade sets POLICY {to:?} on the installers{now}, a policy change that needs node reboots (`cgpu-lint checklist`)"
                ),
                None => "the next upgrade changes POLICY on the installers".into(),
            }
        }
        "image" | "tag" => "the next upgrade rolls the installer DaemonSets onto another image".into(),
        "financeCloudImageTag" => "the installer image of finance-cloud regions changes at the next upgrade".into(),
        "imagePullPolicy" => "the installer DaemonSets' imagePullPolicy changes at the next upgrade".into(),
        "nodeSelector" => "the next upgrade makes the cgpu-installer select nodes by these labels too: its pods leave the nodes without them".into(),
        _ => "the chart's region check follows it from the next upgrade".into(),
    }
}

/// `cgpu-missing` for a file without a cgpu key; `message` and `help` say what the file is.
pub fn missing(
    ctx: &mut Ctx,
    src: &std::sync::Arc<crate::yaml::Source>,
    span: std::ops::Range<usize>,
    message: String,
    help: Option<String>,
) {
    let require = ctx.opts.require_cgpu;
    let message = if require {
        let what = message
            .trim_end_matches(", skipped")
            .trim_end_matches(": skipped");
        format!("{what}; --require-cgpu makes a file without a `cgpu:` block an error")
    } else {
        message
    };
    let mut finding = ctx.report(RuleId::CgpuMissing, src, span, "", message);
    if let Some(h) = help {
        finding = finding.help(h);
    }
    if require {
        finding.severity(Severity::Error);
    }
}

/// Levenshtein distance on characters, for "did you mean".
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
