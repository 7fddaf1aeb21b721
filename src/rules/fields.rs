//! Checks of single fields that the `cgpu:` block and the cgpu-installer DaemonSet share: the
//! image tag, imagePullPolicy, nodeSelector and its labels, and YAML 1.1 scalars.

use crate::catalogue::RuleId;

use crate::cgpu::is_finance_region as cgpu_is_finance_region;
use crate::cgpu::{
    self as version, PULL_POLICIES, RECOMMENDED_VERSION, last_deadlock_version, min_policy_version,
};
use crate::diag::Edit;
use crate::rules::{Ctx, k8s};
use crate::yaml::emit::render_string;
use crate::yaml::node::child;
use crate::yaml::resolve::{self, yaml11_disagreement};
use crate::yaml::{Node, Scalar, Style, Value};

/// `yaml11-scalar` on one value; with `fixable` the finding rewrites it to Helm's reading.
pub fn yaml11(ctx: &mut Ctx, v: &Node, path: &str, fixable: bool) {
    if v.style != Style::Plain {
        return;
    }
    let Value::Scalar(s) = &v.value else { return };
    let raw = v.raw();
    // A tagged scalar (`!!str yes`, `!foo yes`) is read by its tag, by every reader alike.
    if !yaml11_disagreement(raw) || tagged(v) {
        return;
    }
    let helm_reads = match s {
        Scalar::Str(text) => format!("the string \"{text}\""),
        s => format!(
            "the {} {}",
            s.type_name(),
            s.canonical().unwrap_or_default()
        ),
    };
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
            .fix(v, vec![Edit::replace(v, c)]);
    }
}

/// Is the scalar `v` written with a tag (`!!str yes`, `!!str &a yes`, `!foo yes`)? The span of a
/// scalar starts after its properties, so the tag is the token before it (or before its anchor).
fn tagged(v: &Node) -> bool {
    let before = &v.src.text[..v.span.start.min(v.src.text.len())];
    let mut tokens = before.trim_end().rsplit([' ', '\t', '\n', '\r']);
    match tokens.next() {
        Some(t) if t.starts_with('!') => true,
        Some(t) if t.starts_with('&') => tokens
            .find(|t| !t.is_empty())
            .is_some_and(|t| t.starts_with('!')),
        _ => false,
    }
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
                    e.about(crate::cgpu::IMAGE_TAG, tag),
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
    let min_policy = min_policy_version();
    if core < min_policy {
        ctx.at(
            RuleId::TagTooOld,
            v,
            path.to_string(),
            format!("cGPU {core} is older than {min_policy}: the policy setting is not supported"),
        );
    }
    let finance_region = ctx
        .opts
        .region
        .as_deref()
        .is_some_and(cgpu_is_finance_region);
    let last_deadlock = last_deadlock_version();
    if core <= last_deadlock && (!finance_key || finance_region) {
        ctx.at(
            RuleId::TagKnownDeadlock,
            v,
            path.to_string(),
            format!(
                "cGPU {core} has the known kernel-driver deadlock of versions ≤ {last_deadlock}; upgrade to ≥ {RECOMMENDED_VERSION}"
            ),
        );
    }
    if version::newer_than_data(core) {
        let data = crate::cgpu::compat::data();
        ctx.at(
            RuleId::TagNewerThanData,
            v,
            path.to_string(),
            format!(
                "cGPU {core} is newer than the compatibility data of {} (newest version {}): the node checks know nothing about it yet, which is not an error",
                data.meta.date, data.meta.newest
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
            .fix(v, vec![Edit::replace(v, render_string(p, v.style))]);
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
            // that quotes the value renders today, so the fix keeps that render (a safe fix never changes what Helm renders).
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
                    .fix(v, vec![Edit::replace(v, format!("\"{text}\""))]);
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
        return Some(vec![Edit::replace(seq, "{}")]);
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
        return Some(vec![Edit::replace(
            seq,
            format!("{{{}}}", pairs.join(", ")),
        )]);
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
