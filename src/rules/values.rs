//! Rules for the `cgpu:` block of ack-ai-installer values (spec §3.1).

use crate::rules::catalogue::RuleId;
use std::sync::OnceLock;

use crate::cgpu::is_finance_region as cgpu_is_finance_region;
pub use crate::cgpu::{
    self as version, EXPECTED_IMAGE, KNOWN_KEYS, LAST_DEADLOCK_VERSION, MIN_POLICY_VERSION,
    POLICY_EFFECTS, POLICY_NAMES, POLICY_TITLES, PULL_POLICIES, RECOMMENDED_VERSION, split_image,
};
use crate::rules::catalogue::Severity;
use crate::rules::{
    Ctx, double_quoted, edit_distance, insert_line_after, k8s, render_string, replace,
};
use crate::yaml::resolve::{self, yaml11_disagreement};
use crate::yaml::tree::child;
use crate::yaml::{Node, Scalar, Style, Value};

pub fn schema_text() -> &'static str {
    include_str!("../../schemas/ack-ai-installer-values.schema.json")
}

pub fn schema() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| {
        let schema: serde_json::Value =
            serde_json::from_str(schema_text()).expect("the embedded schema is JSON");
        jsonschema::validator_for(&schema).expect("the embedded schema compiles")
    })
}

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

/// Let the JSON Schema decide types: any schema error that no rule has already reported at the
/// same place becomes a `wrong-type` finding, so each problem is reported once.
fn schema_findings(ctx: &mut Ctx, root: &Node, before: usize) {
    let instance = serde_json::json!({ "cgpu": root.get("cgpu").map(Node::to_json) });
    // Compiling the 2020-12 schema is most of the start-up of a one-file check; a block that
    // plainly satisfies it (the common case) does not need the validator. `surely_valid` only
    // ever answers yes for blocks the schema accepts (a property test holds it to that).
    if surely_valid(&instance["cgpu"]) {
        return;
    }
    let validator = schema();
    if validator.is_valid(&instance) {
        return;
    }
    let mut extra = Vec::new();
    for err in validator.iter_errors(&instance) {
        let path = err.instance_path().as_str().to_string();
        // Only an error covers a schema error: a `yaml11-scalar` warning on the same value must
        // not hide that the value Helm reads has the wrong type (`policy: yes` is a boolean).
        // The one warning that does is `unknown-key`: it is the schema's additionalProperties
        // error, reported key by key with a suggestion (a typo is a warning, spec §3.1).
        let covered = ctx.out[before..].iter().any(|d| {
            (d.severity == crate::rules::catalogue::Severity::Error || d.rule == RuleId::UnknownKey)
                && (d.path == path
                    || d.path.starts_with(&format!("{path}/"))
                    || path.starts_with(&format!("{}/", d.path)))
        }) || extra.contains(&path);
        if covered {
            continue;
        }
        extra.push(path);
    }
    // The schema says which value is wrong; the words are ours (spec §4: never a schema
    // library's), built from the key and the value as Helm reads it.
    for path in extra {
        let Some(node) = root.pointer(&path) else {
            continue;
        };
        let (message, help) = wrong_type(&path, node);
        ctx.at(RuleId::WrongType, node, path, message).help(help);
    }
}

/// A value as Helm reads it, in words: `empty`, `the boolean true`, `the number 3`, `the
/// string "x"`, `a list [2]`.
pub fn as_helm_reads(node: &Node) -> String {
    let raw = node.raw();
    let shown = |what: &str| {
        if raw.len() <= 40 && !raw.contains('\n') {
            format!("{what} `{raw}`")
        } else {
            what.to_string()
        }
    };
    match &node.value {
        Value::Scalar(Scalar::Null) => "empty".into(),
        Value::Scalar(Scalar::Bool(b)) => format!("the boolean {b}"),
        Value::Scalar(Scalar::Int(i)) => format!("the number {i}"),
        Value::Scalar(s @ Scalar::Float(_)) => {
            format!("the number {}", s.canonical().unwrap_or_default())
        }
        Value::Scalar(Scalar::Str(s)) => format!("the string {}", double_quoted(s)),
        Value::Seq(_) => shown("a list"),
        Value::Map(_) => shown("a mapping"),
    }
}

/// What a cgpu key takes, and what to write.
fn takes(key: &str) -> (String, String) {
    let (takes, write) = match key {
        "enabled" | "checkRegions" => ("true or false".into(), format!("`{key}: true`")),
        "image" => (
            "the repository path of the installer image".into(),
            format!("`image: {EXPECTED_IMAGE}`"),
        ),
        "tag" => (
            "an image tag of ACK's form, v<version>-<sha>-aliyun".into(),
            format!("a released tag, cGPU {RECOMMENDED_VERSION} or later"),
        ),
        "financeCloudImageTag" => (
            "a finance-cloud (-fin) image tag".into(),
            format!("`financeCloudImageTag: {}`", version::DEFAULT_FINANCE_TAG),
        ),
        "imagePullPolicy" => (
            "Always, IfNotPresent or Never".into(),
            "`imagePullPolicy: IfNotPresent`".into(),
        ),
        "policy" => (
            "a number 0–5".into(),
            format!(
                "`policy: {}` ({}), or another of 0–5",
                version::CHART_DEFAULT_POLICY,
                POLICY_TITLES[version::CHART_DEFAULT_POLICY as usize]
            ),
        ),
        "nodeSelector" => (
            "a map of label key to string value".into(),
            "`nodeSelector: {ack.node.gpu.schedule: cgpu}`".into(),
        ),
        _ => (
            "another type".into(),
            "the type `cgpu-lint schema` gives".into(),
        ),
    };
    (takes, write)
}

/// The `wrong-type` message and help for the value at `path`, in the project's words.
fn wrong_type(path: &str, node: &Node) -> (String, String) {
    let mut segments = path.trim_start_matches('/').split('/');
    let key = segments.nth(1).unwrap_or("cgpu");
    let name = path.trim_start_matches('/').replace('/', ".");
    let (takes, example) = takes(key);
    if matches!(node.scalar(), Some(Scalar::Null)) {
        return (
            format!(
                "`{name}` is empty: Helm deletes the chart's default for it, and the chart gets no value where it needs {takes}"
            ),
            format!("write {example}, or delete the line to keep the chart's default"),
        );
    }
    (
        format!(
            "`{name}` is {} to Helm; it takes {takes}",
            as_helm_reads(node)
        ),
        format!("write {example}"),
    )
}

/// A conservative stand-in for the schema: true only when every key of the block is one the
/// schema knows and its value has the schema's type and shape. Anything unusual answers false
/// and goes to the real validator.
pub fn surely_valid(cgpu: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    let Some(map) = cgpu.as_object() else {
        return false;
    };
    let tag_ok = |v: &J| v.as_str().is_some_and(|t| version::parse_tag(t).is_ok());
    map.iter().all(|(k, v)| match k.as_str() {
        "enabled" | "checkRegions" => v.is_boolean(),
        "image" => v.is_string(),
        "tag" | "financeCloudImageTag" => tag_ok(v),
        "imagePullPolicy" => v.as_str().is_some_and(|p| PULL_POLICIES.contains(&p)),
        "policy" => match v {
            J::Number(n) => n.as_u64().is_some_and(|n| n <= 5),
            J::String(s) => {
                s.len() == 1 && s.as_bytes()[0].is_ascii_digit() && s.as_bytes()[0] <= b'5'
            }
            _ => false,
        },
        "nodeSelector" => match v {
            J::Null => true,
            J::Object(m) => m
                .values()
                .all(|x| x.as_str().is_some_and(|s| s.chars().count() <= 63)),
            _ => false,
        },
        _ => false,
    })
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

/// `yaml11-scalar` on one value; with `fixable` the finding rewrites it to Helm's reading.
pub fn yaml11(ctx: &mut Ctx, v: &Node, path: &str, fixable: bool) {
    if v.style != Style::Plain {
        return;
    }
    let Value::Scalar(s) = &v.value else { return };
    let raw = v.raw();
    if !yaml11_disagreement(raw) {
        return;
    }
    let helm_reads = format!(
        "the {} {}",
        s.type_name(),
        s.canonical().unwrap_or_default()
    );
    let message = match resolve::yaml12(raw) {
        Scalar::Str(_) => format!(
            "`{raw}` is {helm_reads} to Helm (YAML 1.1) but the string \"{raw}\" to a YAML 1.2 reader"
        ),
        o if o == *s => format!(
            "`{raw}` has a leading zero: Helm reads it as octal ({helm_reads}), other tools as decimal"
        ),
        o => format!(
            "`{raw}` is {helm_reads} to Helm (YAML 1.1) but the {} {} to a YAML 1.2 reader",
            o.type_name(),
            o.canonical().unwrap_or_default()
        ),
    };
    let canonical = s.canonical();
    let finding = ctx.at(RuleId::Yaml11Scalar, v, path.to_string(), message);
    if fixable && let Some(c) = canonical {
        finding
            .help(format!("write `{c}`, which every reader types alike"))
            .fix(v, vec![replace(v, c)]);
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
                .fix(v, vec![replace(v, b.to_string())]);
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

fn policy(ctx: &mut Ctx, v: &Node, path: &str) {
    let number = match v.scalar() {
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
                    .fix(v, vec![replace(v, n.to_string())]);
            }
            Some(n)
        }
        Some(Scalar::Float(_)) => {
            ctx.at(
                RuleId::PolicyNotInteger,
                v,
                path.to_string(),
                format!(
                    "policy `{}` is a float; cGPU policies are the integers 0–5",
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
                    .help(if (0..=5).contains(&n) {
                        format!("write `policy: {n}` ({})", POLICY_TITLES[n as usize])
                    } else {
                        RuleId::PolicyOutOfRange.info().help.to_string()
                    });
                    return;
                }
                if (0..=5).contains(&n) {
                    let finding = ctx.at(
                        RuleId::PolicyQuoted,
                        v,
                        path.to_string(),
                        format!(
                            "policy {} is a quoted string; the documented form is the number {n}",
                            v.raw()
                        ),
                    );
                    let finding = finding.fix(v, vec![replace(v, n.to_string())]);
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
                        None => format!("policy `{s}` is not a number 0–5"),
                    },
                );
                if let Some(n) = named {
                    let finding = finding
                        .help(format!(
                            "write `policy: {n}` ({})",
                            POLICY_TITLES[n as usize]
                        ))
                        .fix(v, vec![replace(v, n.to_string())]);
                    let effect = upgrade_effect("policy", &serde_json::json!(n), Some(v));
                    becomes(finding, "policy", serde_json::json!(n), effect);
                }
                None
            }
        }
        _ => None,
    };
    let Some(n) = number else { return };
    if !(0..=5).contains(&n) {
        ctx.at(
            RuleId::PolicyOutOfRange,
            v,
            path.to_string(),
            format!("policy {n} does not exist; cGPU policies are 0–5"),
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
            let mut edits = vec![replace(v, render_string(r.path, v.style))];
            if let Some(t) = r.tag {
                match tag_entry {
                    Some(te) => edits.push(replace(&te.value, render_string(t, te.value.style))),
                    None => {
                        let key_start = cgpu
                            .entry("image")
                            .map_or(v.span.start, |e| e.key_span.start);
                        edits.push(insert_line_after(
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

/// The tag rules, shared by values and by the installer DaemonSet's image tag.
pub fn check_tag(
    ctx: &mut Ctx,
    v: &Node,
    path: &str,
    tag: &str,
    finance_key: bool,
    in_image: bool,
) {
    let key = if finance_key {
        "financeCloudImageTag"
    } else {
        "tag"
    };
    let parsed = match version::parse_tag(tag) {
        Ok(t) => t,
        Err(e) => {
            if in_image {
                ctx.at(
                    RuleId::InstallerImageTag,
                    v,
                    path.to_string(),
                    format!("image {}", e.message(tag)),
                );
            } else {
                ctx.at(
                    RuleId::TagInvalid,
                    v,
                    path.to_string(),
                    format!("`{key}`: {}", e.message(tag)),
                );
            }
            return;
        }
    };
    let core = &parsed.core;
    if !version::is_ack_form(tag) {
        ctx.at(
            RuleId::TagForm,
            v,
            path.to_string(),
            format!(
                "{} `{tag}` is not of ACK's form {}",
                if in_image { "image tag" } else { key },
                version::ACK_TAG_FORM
            ),
        );
    }
    if *core < MIN_POLICY_VERSION {
        ctx.at(
            RuleId::TagTooOld,
            v,
            path.to_string(),
            format!("cGPU {core} is older than {MIN_POLICY_VERSION}: the policy setting is not supported"),
        );
    }
    let finance_region = ctx
        .opts
        .region
        .as_deref()
        .is_some_and(cgpu_is_finance_region);
    if *core <= LAST_DEADLOCK_VERSION && (!finance_key || finance_region) {
        ctx.at(
            RuleId::TagKnownDeadlock,
            v,
            path.to_string(),
            format!(
                "cGPU {core} has the known kernel-driver deadlock of versions ≤ {LAST_DEADLOCK_VERSION}; upgrade to ≥ {RECOMMENDED_VERSION}"
            ),
        );
    }
    if in_image {
        // The installer's image is the tag actually deployed: a finance-cloud (-fin) build in a
        // region known not to be a finance region is pulled where it was not built for. (The
        // reverse is not reported: whether finance regions may run a standard build is not
        // documented.)
        if let Some(region) = ctx.opts.region.clone()
            && !finance_region
            && parsed.is_finance()
        {
            ctx.at(
                RuleId::TagFlavour,
                v,
                path.to_string(),
                format!("image tag `{tag}` is a finance-cloud (-fin) build, but {region} is not a finance region"),
            );
        }
    } else {
        if finance_key && !parsed.is_finance() {
            ctx.at(
                RuleId::TagFlavour,
                v,
                path.to_string(),
                format!("financeCloudImageTag `{tag}` is not a finance-cloud (-fin) build"),
            );
        } else if !finance_key && parsed.is_finance() {
            ctx.at(
                RuleId::TagFlavour,
                v,
                path.to_string(),
                format!("tag `{tag}` is a finance-cloud (-fin) build; it belongs in financeCloudImageTag"),
            );
        }
    }
}

pub fn pull_policy(ctx: &mut Ctx, v: &Node, path: &str) {
    let Some(s) = v.as_str() else { return };
    if PULL_POLICIES.contains(&s) {
        return;
    }
    let fixed = PULL_POLICIES
        .iter()
        .find(|p| p.eq_ignore_ascii_case(s.trim()));
    let finding = ctx.at(
        RuleId::PullPolicy,
        v,
        path.to_string(),
        match fixed {
            Some(p) => format!("imagePullPolicy `{s}` must be spelled exactly `{p}`"),
            None => format!("imagePullPolicy `{s}` is not Always, IfNotPresent or Never"),
        },
    );
    if let Some(p) = fixed {
        finding
            .help(format!("write `{p}`"))
            .fix(v, vec![replace(v, render_string(p, v.style))]);
    }
}

/// nodeSelector of the values block, or of the installer's pod spec.
pub fn node_selector(ctx: &mut Ctx, v: &Node, path: &str) {
    match &v.value {
        Value::Map(entries) => {
            for e in entries {
                let p = child(path, &e.key);
                if let Err(why) = k8s::label_key(&e.key) {
                    let src = e.value.src.clone();
                    ctx.report(
                        RuleId::LabelKey,
                        &src,
                        e.key_span.clone(),
                        p.clone(),
                        format!("label key `{}`: {why}", e.key),
                    );
                }
                label_value(ctx, &e.value, &p);
                if e.key == "ack.node.gpu.schedule"
                    && let Some(s) = e.value.as_str()
                    && s != "cgpu"
                {
                    ctx.at(
                        RuleId::ScheduleLabel,
                        &e.value,
                        p.clone(),
                        format!("ack.node.gpu.schedule is `{s}`: the cgpu-installer is meant for nodes labelled `cgpu`"),
                    );
                }
            }
        }
        Value::Scalar(Scalar::Null) => {}
        Value::Seq(items) => {
            let finding = ctx.at(
                RuleId::NodeSelectorType,
                v,
                path.to_string(),
                "nodeSelector is a list; Kubernetes needs a map of label key to value",
            );
            if let Some(edits) = list_to_map(v, items) {
                finding.fix(v, edits);
            }
        }
        _ => {
            ctx.at(
                RuleId::NodeSelectorType,
                v,
                path.to_string(),
                format!(
                    "nodeSelector is a {}; Kubernetes needs a map of label key to value",
                    v.type_name()
                ),
            );
        }
    }
}

fn label_value(ctx: &mut Ctx, v: &Node, path: &str) {
    match v.scalar() {
        Some(Scalar::Str(s)) => {
            if let Err(why) = k8s::label_value(s) {
                ctx.at(
                    RuleId::LabelValue,
                    v,
                    path.to_string(),
                    format!("label value `{s}`: {why}"),
                );
            }
        }
        Some(other) => {
            let raw = v.raw();
            // `~` is "the null", `yes` "the boolean true", `010` "the integer 8".
            let read = match other.canonical() {
                _ if *other == Scalar::Null => "empty (null)".to_string(),
                Some(c) if c != other.type_name() => format!("the {} {c}", other.type_name()),
                _ => format!("the {}", other.type_name()),
            };
            // What a YAML 1.2 reader (an editor, another linter) makes of the same text.
            let elsewhere = match (v.style, yaml11_disagreement(raw), resolve::yaml12(raw)) {
                (Style::Plain, true, Scalar::Str(_)) => {
                    format!(" (a YAML 1.2 reader sees the string \"{raw}\")")
                }
                _ => String::new(),
            };
            // In values the chart renders the selector, so the chart decides: a template that
            // quotes the value selects the label `true`, one that does not hands the API server
            // a boolean, which it refuses. A DaemonSet's own nodeSelector goes to the API server
            // as written.
            let outcome = if path.starts_with("/cgpu/") {
                "what the installer then selects depends on how the chart renders it (quoted: the label it prints; unquoted: a value the API server refuses)"
            } else {
                "the API server refuses a nodeSelector value that is not a string"
            };
            let finding = ctx.at(
                RuleId::LabelValueType,
                v,
                path.to_string(),
                format!(
                    "label value `{raw}` is read by Helm as {read}{elsewhere}, not a string: {outcome}"
                ),
            );
            // The fix writes the string Helm reads (`yes` is "true", `010` is "8"): what a chart
            // that quotes the value renders today, so the fix keeps that render (issue 20).
            if v.style == Style::Plain
                && let Some(text) = crate::helm::json::sprint(other)
                && k8s::label_value(&text).is_ok()
            {
                finding
                    .help(if text == raw {
                        format!("quote it: \"{raw}\"")
                    } else {
                        format!(
                            "write \"{text}\", the string Helm reads today (\"{raw}\" would select nodes labelled {raw} instead)"
                        )
                    })
                    .fix(v, vec![replace(v, format!("\"{text}\""))]);
            }
        }
        None => {
            ctx.at(
                RuleId::LabelValueType,
                v,
                path.to_string(),
                format!("label value is a {}, not a string", v.type_name()),
            );
        }
    }
}

/// `- a=b` items → `a: b` lines (block) or `{a: b}` (flow), when every item is `key=value`.
/// A block list is rewritten item by item (`- a=b` → `a: b`), so comments between and after the
/// items stay where they are.
fn list_to_map(seq: &Node, items: &[Node]) -> Option<Vec<crate::diag::Edit>> {
    if items.is_empty() {
        return Some(vec![replace(seq, "{}")]);
    }
    let mut pairs = Vec::new();
    for it in items {
        let s = it.as_str()?;
        let (k, val) = s.split_once('=')?;
        let (k, val) = (k.trim(), val.trim());
        if k8s::label_key(k).is_err() {
            return None;
        }
        pairs.push(format!(
            "{}: {}",
            render_string(k, Style::Plain),
            render_string(val, Style::Plain)
        ));
    }
    if seq.style == Style::Flow {
        return Some(vec![replace(seq, format!("{{{}}}", pairs.join(", ")))]);
    }
    let src = &seq.src;
    // An indentless list (`nodeSelector:` then `- a=b` in the same column) must move two columns
    // right, or its entries would become siblings of `nodeSelector`. The key is on the nearest
    // line above that holds more than a comment.
    let first_line = src.line_col(seq.span.start).line;
    let indent_of = |l: usize| src.line_text(l).chars().take_while(|c| *c == ' ').count();
    let key_indent = (1..first_line).rev().find_map(|l| {
        let t = src.line_text(l).trim_start();
        (!t.is_empty() && !t.starts_with('#')).then(|| indent_of(l))
    });
    let shift = if key_indent.is_some_and(|k| indent_of(first_line) <= k) {
        "  "
    } else {
        ""
    };
    let mut edits = Vec::new();
    for (it, pair) in items.iter().zip(pairs) {
        // The item's `-` indicator: the only text between the start of its line and the item.
        let lc = src.line_col(it.span.start);
        let line_start = src.line_start(lc.line);
        let before = &src.text[line_start..it.span.start];
        let dash = before.trim_end();
        if !dash.ends_with('-') || dash[..dash.len() - 1].chars().any(|c| c != ' ') {
            return None;
        }
        let dash_at = line_start + dash.len() - 1;
        edits.push(crate::diag::Edit {
            src: src.clone(),
            range: dash_at..it.span.end,
            replacement: format!("{shift}{pair}"),
        });
    }
    Some(edits)
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = serde_json::Value> {
        use serde_json::json;
        prop_oneof![
            Just(json!(null)),
            any::<bool>().prop_map(|b| json!(b)),
            (-3i64..9).prop_map(|n| json!(n)),
            Just(json!(1.5)),
            Just(json!(2.0)),
            prop::sample::select(vec![
                "",
                "1",
                "5",
                "6",
                "01",
                " 1",
                "latest",
                "v1.5.3-8d3fc1b-aliyun",
                "1.0.6-0123456",
                "v1.5",
                "Always",
                "always",
                "IfNotPresent",
                "Never",
                "acs/cgpu-installer",
                "cgpu",
            ])
            .prop_map(|s| json!(s)),
            Just(json!({"ack.node.gpu.schedule": "cgpu"})),
            Just(json!({"a": true})),
            Just(json!({"a": "x".repeat(64)})),
            Just(json!([1, 2])),
        ]
    }

    fn block() -> impl Strategy<Value = serde_json::Value> {
        let mut all: Vec<&'static str> = KNOWN_KEYS.to_vec();
        all.push("polcy");
        let keys = prop::sample::subsequence(all, 0..9);
        (keys, prop::collection::vec(value(), 9)).prop_map(|(keys, values)| {
            serde_json::Value::Object(
                keys.into_iter()
                    .zip(values)
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// The fast path may only skip the validator for blocks the schema accepts.
        #[test]
        fn surely_valid_implies_the_schema_accepts(cgpu in block()) {
            if surely_valid(&cgpu) {
                let instance = serde_json::json!({ "cgpu": cgpu });
                prop_assert!(schema().is_valid(&instance), "{instance}");
            }
        }
    }

    #[test]
    fn the_documented_defaults_take_the_fast_path() {
        let defaults = serde_json::json!({
            "enabled": true, "image": "acs/cgpu-installer", "tag": "v1.5.3-8d3fc1b-aliyun",
            "financeCloudImageTag": "v1.0.7-fin", "imagePullPolicy": "IfNotPresent",
            "policy": 1, "nodeSelector": {}, "checkRegions": true
        });
        assert!(surely_valid(&defaults));
        assert!(!surely_valid(&serde_json::json!({"policy": 7})));
    }
}
