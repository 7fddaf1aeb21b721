//! Rules for the cgpu-installer and cgpu-core-installer DaemonSets: a manifest, a
//! live `kubectl get -o yaml` object, an item of a `kind: List`, or a document of a rendered
//! stream. Findings point into the document with JSON pointers (`/items/0/spec/...` in a List).

use crate::catalogue::RuleId;
use std::collections::BTreeSet;

use crate::cgpu::{
    self, RegistryHost, env_policy, env_policy_normalised, parse_registry_host, policy_number,
    region_known, region_well_formed, rewrite_image, split_image,
};
use crate::diag::Edit;
use crate::manifest::{Installer, Object, Objects};
use crate::rules::Ctx;
use crate::rules::fields::{check_tag, node_selector, pull_policy};
use crate::yaml::emit::render_string;
use crate::yaml::node::child;
use crate::yaml::{Node, Scalar, Style, Value};

/// The policy one installer uses, for `cluster-policy-mismatch`.
#[derive(Debug, Clone)]
pub struct InstallerPolicy {
    pub name: String,
    pub policy: u8,
    /// The POLICY value node (for the finding's span) and its pointer.
    pub node: Node,
    pub pointer: String,
    pub document: usize,
}

/// Check every installer DaemonSet among the objects of a document root. Returns the policies
/// found, for the cross-installer check.
pub fn check_document(ctx: &mut Ctx, root: &Node) -> Vec<InstallerPolicy> {
    let objects = Objects::of(root);
    let mut out = Vec::new();
    for obj in objects.iter() {
        if let Some(inst) = obj.installer() {
            check(ctx, &inst);
            if let Some(p) = inst.policy()
                && let Some(last) = inst.policy_envs().pop()
                && let Some(v) = last.value
            {
                out.push(InstallerPolicy {
                    name: inst.name().to_string(),
                    policy: p,
                    node: v.clone(),
                    pointer: last.value_pointer.clone(),
                    document: ctx.document,
                });
            }
        }
    }
    out
}

/// Does this document hold a cgpu installer DaemonSet?
pub fn has_installer(root: &Node) -> bool {
    Objects::of(root).iter().any(|o| o.is_installer())
}

/// The span used for findings about the object as a whole: its `metadata.name` value.
fn name_node<'a>(obj: &Object<'a>) -> &'a Node {
    obj.node
        .pointer("/metadata/name")
        .or_else(|| obj.node.get("kind"))
        .unwrap_or(obj.node)
}

/// The installers live in kube-system. A rendered stream may leave the namespace out (Helm's
/// `-n` supplies it), so only an explicit other namespace is reported.
fn namespace(ctx: &mut Ctx, inst: &Installer) {
    if let Some(ns) = inst.obj.namespace
        && ns != "kube-system"
        && let Some(node) = inst.obj.node.pointer("/metadata/namespace")
    {
        ctx.at(
            RuleId::InstallerNamespace,
            node,
            format!("{}/metadata/namespace", inst.obj.pointer),
            format!(
                "{} is in namespace `{ns}`; ACK runs it in kube-system",
                inst.name()
            ),
        );
    }
}

/// The installer rules on one installer.
pub fn check(ctx: &mut Ctx, inst: &Installer) {
    namespace(ctx, inst);
    policy_env(ctx, inst);
    image(ctx, inst);
    if let Some((c, cp)) = inst.main_container()
        && let Some(pp) = c.get("imagePullPolicy")
    {
        pull_policy(ctx, pp, &child(&cp, "imagePullPolicy"));
    }
    yaml11_fields(ctx, inst);
    selector(ctx, inst);
    workload_env(ctx, inst);
    priority_class(ctx, inst);
    rollout(ctx, inst);
    drift(ctx, inst);
}

/// The yaml-* rules apply to the DaemonSet's fields too (kubectl and Helm read YAML 1.1): the
/// scalars a person writes by hand here. nodeSelector values are left to `label-value-type`,
/// whose quoting fix is the right one for them.
fn yaml11_fields(ctx: &mut Ctx, inst: &Installer) {
    let spec = inst.pod_spec_pointer();
    if let Some(pod) = inst.pod_spec() {
        if let Some(v) = pod.get("hostPID") {
            crate::rules::fields::yaml11(ctx, v, &child(&spec, "hostPID"), true);
        }
        if let Some(sel) = pod.get("nodeSelector").and_then(Node::as_map) {
            // label-value-type owns the values that are not strings, and says how they read.
            for e in sel.iter().filter(|e| e.value.as_str().is_some()) {
                let p = child(&child(&spec, "nodeSelector"), &e.key);
                crate::rules::fields::yaml11(ctx, &e.value, &p, false);
            }
        }
    }
    for (c, cp) in inst.containers() {
        if let Some(v) = c.get("imagePullPolicy") {
            crate::rules::fields::yaml11(ctx, v, &child(&cp, "imagePullPolicy"), true);
        }
        if let Some(v) = c.pointer("/securityContext/privileged") {
            crate::rules::fields::yaml11(ctx, v, &format!("{cp}/securityContext/privileged"), true);
        }
    }
}

fn policy_env(ctx: &mut Ctx, inst: &Installer) {
    let envs = inst.policy_envs();
    if envs.is_empty() {
        let (node, path) = match inst.main_container() {
            Some((c, p)) => (c.get("name").unwrap_or(c), p),
            None => (name_node(&inst.obj), inst.pod_spec_pointer()),
        };
        // An installer too old for policies cannot take POLICY: say so instead of advising to
        // add it (tag-too-old reports the version on the image).
        let version = inst
            .image()
            .and_then(|(v, _)| v.as_str())
            .and_then(|s| split_image(s).tag)
            .and_then(|t| cgpu::parse_tag(t).ok())
            .map(|t| t.core);
        let message = match version {
            Some(v) if v < *cgpu::min_policy_version() => format!(
                "{} sets no POLICY env, and its cGPU {v} is older than {} and has no policy setting: upgrade the image first (tag-too-old), then set POLICY",
                inst.name(),
                cgpu::min_policy_version()
            ),
            _ => cgpu::policy_missing_message(inst.name()),
        };
        ctx.at(RuleId::InstallerPolicyMissing, node, path, message);
        return;
    }
    for (i, e) in envs.iter().enumerate() {
        if i > 0 {
            let node = e.entry.get("name").unwrap_or(e.entry);
            ctx.at(
                RuleId::InstallerPolicyDuplicate,
                node,
                e.entry_pointer.clone(),
                format!(
                    "POLICY is set {} times on {}; the kubelet uses the last one",
                    envs.len(),
                    inst.name()
                ),
            )
            .related(envs[0].entry.span.clone(), "first POLICY here");
        }
        if e.value_from {
            let node = e.entry.get("valueFrom").unwrap_or(e.entry);
            ctx.at(
                RuleId::InstallerPolicyValuefrom,
                node,
                child(&e.entry_pointer, "valueFrom"),
                "POLICY comes from valueFrom: the policy cannot be checked here",
            );
            continue;
        }
        let Some(v) = e.value else {
            let node = e.entry.get("name").unwrap_or(e.entry);
            ctx.at(
                RuleId::InstallerPolicyInvalid,
                node,
                e.entry_pointer.clone(),
                "POLICY has no value",
            );
            continue;
        };
        policy_value(ctx, v, &e.value_pointer);
    }
}

/// The text of a quoted POLICY value, keeping single quotes when the file used them.
pub fn quoted_policy(n: u8, style: Style) -> String {
    match style {
        Style::SingleQuoted => format!("'{n}'"),
        _ => format!("\"{n}\""),
    }
}

fn policy_value(ctx: &mut Ctx, v: &Node, path: &str) {
    match &v.value {
        Value::Scalar(Scalar::Str(s)) => {
            if env_policy(s).is_some() {
                return;
            }
            let finding = ctx.at(
                RuleId::InstallerPolicyInvalid,
                v,
                path.to_string(),
                format!("POLICY {} is not one of \"0\" … \"5\"", v.raw()),
            );
            if let Some(n) = env_policy_normalised(s) {
                // The API server takes any string: the installer pods get another POLICY.
                finding
                    .help(format!("write \"{n}\""))
                    .fix(v, vec![Edit::replace(v, quoted_policy(n, v.style))])
                    .unsafe_fix(
                        format!(
                            "POLICY becomes \"{n}\" (now {}): the installer pods restart with it, a policy change that needs node reboots (`cgpu-lint checklist`)",
                            v.raw()
                        ),
                        Vec::new(),
                    );
            }
        }
        Value::Scalar(Scalar::Null) => {
            // `value:` with nothing (or `~`): the API server takes it as an empty string.
            ctx.at(
                RuleId::InstallerPolicyInvalid,
                v,
                path.to_string(),
                "POLICY has no value (the installer gets an empty string), not one of \"0\" … \"5\""
                    .to_string(),
            );
        }
        Value::Scalar(sc) => {
            let raw = v.raw();
            let n = match sc {
                Scalar::Int(i) => policy_number(*i),
                _ => None,
            };
            match n {
                Some(n) => {
                    ctx.at(
                        RuleId::InstallerPolicyUnquoted,
                        v,
                        path.to_string(),
                        format!(
                            "POLICY `value: {raw}` is a YAML {}: EnvVar.value must be a string, the API server rejects it",
                            sc.type_name()
                        ),
                    )
                    .help(format!("write value: \"{n}\""))
                    .fix(v, vec![Edit::replace(v, quoted_policy(n, Style::DoubleQuoted))]);
                }
                // One finding for the token: not a policy, and not a string either.
                None => {
                    ctx.at(
                        RuleId::InstallerPolicyInvalid,
                        v,
                        path.to_string(),
                        format!(
                            "POLICY {raw} is not one of \"0\" … \"5\", and as a YAML {} not even a string: the API server rejects it",
                            sc.type_name()
                        ),
                    );
                }
            }
        }
        _ => {
            ctx.at(
                RuleId::InstallerPolicyInvalid,
                v,
                path.to_string(),
                format!("POLICY is a {}, not a string \"0\" … \"5\"", v.type_name()),
            );
        }
    }
}

fn image(ctx: &mut Ctx, inst: &Installer) {
    let Some((v, path)) = inst.image() else {
        return;
    };
    let Some(s) = v.as_str() else { return };
    let r = split_image(s);
    match r.tag {
        None if r.digest.is_some() => {
            // A digest pins the image, but which cGPU version it holds cannot be
            // read from it: a warning, not the error of a missing tag.
            ctx.at(
                RuleId::InstallerImageTag,
                v,
                path.clone(),
                format!(
                    "image `{s}` is pinned by digest only: the cGPU version (and whether it supports policies) cannot be checked"
                ),
            )
            .severity(crate::catalogue::Severity::Warning);
        }
        None => {
            ctx.at(
                RuleId::InstallerImageTag,
                v,
                path.clone(),
                format!("image `{s}` has no tag: it is `latest`, an unknown cGPU version"),
            );
        }
        Some(t) => {
            let before = ctx.out.len();
            check_tag(ctx, v, &path, t, false, true);
            // Point the tag findings at the tag inside the image reference, not the whole value.
            let raw = v.raw();
            if let Some(i) = raw.rfind(&format!(":{t}")) {
                let start = v.span.start + i + 1;
                for d in &mut ctx.out[before..] {
                    d.span = start..start + t.len();
                }
            }
        }
    }
    let Some(host) = r.host else {
        ctx.at(
            RuleId::RegistryHost,
            v,
            path,
            format!("image `{s}` names no registry host (Docker Hub?), not an ACK registry"),
        );
        return;
    };
    let Some(h) = parse_registry_host(host) else {
        ctx.report(
            RuleId::RegistryHost,
            &v.src,
            part_span(v, s, host),
            path,
            format!("registry host `{host}` is neither registry-vpc.<region>.aliyuncs.com nor registry-<region>-vpc.ack.aliyuncs.com (a mirror?)"),
        );
        return;
    };
    let well_formed = region_well_formed(h.region);
    // Each finding points at its own part of the reference: the host, the region in it.
    let host_span = part_span(v, s, host);
    let region_span = part_span(v, s, h.region);
    if !well_formed {
        ctx.report(
            RuleId::RegionInvalid,
            &v.src,
            region_span.clone(),
            path.clone(),
            format!(
                "`{}` in registry host `{host}` is not a region id",
                h.region
            ),
        );
    } else if !region_known(h.region) {
        ctx.report(
            RuleId::RegionUnknown,
            &v.src,
            region_span.clone(),
            path.clone(),
            format!(
                "region `{}` in registry host `{host}` is not a region id cgpu-lint knows",
                h.region
            ),
        );
    }
    let target = ctx
        .opts
        .region
        .clone()
        .filter(|t| t != h.region && region_well_formed(t));
    // When both the endpoint and the region are wrong, both findings carry the same combined
    // rewrite, so applying either gives the right host.
    let combined = rewrite_image(s, true, target.as_deref());
    if !h.vpc {
        let finding = ctx.report(
            RuleId::RegistryPublicEndpoint,
            &v.src,
            host_span.clone(),
            path.clone(),
            format!(
                "`{host}` is the public endpoint; inside the cluster pull from `{}`",
                RegistryHost::render(h.form, h.region, true)
            ),
        );
        if let Some(new) = &combined {
            finding
                .help(format!("use `{new}`"))
                .fix(v, vec![Edit::replace(v, render_string(new, v.style))])
                .unsafe_fix(image_changes(new), Vec::new());
        }
    }
    if let Some(t) = &ctx.opts.region
        && t != h.region
    {
        let finding = ctx.report(
            RuleId::RegionMismatch,
            &v.src,
            region_span.clone(),
            path.clone(),
            format!(
                "the image comes from region `{}` but the cluster is in `{t}`",
                h.region
            ),
        );
        if let Some(new) = &combined
            && target.is_some()
        {
            finding
                .help(format!("use `{new}`"))
                .fix(v, vec![Edit::replace(v, render_string(new, v.style))])
                .unsafe_fix(image_changes(new), Vec::new());
        }
    }
}

/// The consequence of a fix that rewrites the installer's image.
fn image_changes(new: &str) -> String {
    format!(
        "the image becomes {new}: the pod template changes and every installer pod restarts, pulling it from there"
    )
}

/// The span of `part` (a slice of `value`, the string `v` holds) in the file: the part's own
/// text when the scalar is written without escapes (plain, or quoted as it is), else all of `v`.
fn part_span(v: &Node, value: &str, part: &str) -> std::ops::Range<usize> {
    let raw = v.raw();
    let body = if raw == value {
        Some(0)
    } else if raw.len() == value.len() + 2 && raw.get(1..raw.len() - 1) == Some(value) {
        Some(1)
    } else {
        None
    };
    let at = (part.as_ptr() as usize).checked_sub(value.as_ptr() as usize);
    match (body, at) {
        (Some(b), Some(at)) if at + part.len() <= value.len() => {
            let start = v.span.start + b + at;
            start..start + part.len()
        }
        _ => v.span.clone(),
    }
}

fn selector(ctx: &mut Ctx, inst: &Installer) {
    let sel = inst.node_selector();
    let path = child(&inst.pod_spec_pointer(), "nodeSelector");
    let core = inst.name() == cgpu::CORE_INSTALLER;
    if let Some(sel) = sel {
        let before = ctx.out.len();
        node_selector(ctx, sel, &path);
        if core {
            // The core installer is meant for core_mem nodes: `schedule-label` is about cgpu.
            let mut i = before;
            while i < ctx.out.len() {
                if ctx.out[i].rule == RuleId::ScheduleLabel {
                    ctx.out.remove(i);
                } else {
                    i += 1;
                }
            }
        }
    }
    let pairs = inst.node_selector_pairs();
    if cgpu::product_of(inst.name(), &pairs).is_none() {
        let node = sel.unwrap_or_else(|| name_node(&inst.obj));
        ctx.at(
            RuleId::InstallerSelector,
            node,
            path,
            format!(
                "{}'s nodeSelector has neither ack.node.gpu.schedule: {} nor legacy cgpu: \"true\"",
                inst.name(),
                if core { "core_mem" } else { "cgpu" }
            ),
        );
    }
}

fn workload_env(ctx: &mut Ctx, inst: &Installer) {
    for (c, cp) in inst.containers() {
        let Some(env) = c.get("env").and_then(Node::as_seq) else {
            continue;
        };
        for (i, e) in env.iter().enumerate() {
            let Some(name_node) = e.get("name") else {
                continue;
            };
            let Some(name) = name_node.as_str() else {
                continue;
            };
            if name.starts_with("ALIYUN_COM_GPU_") || name == "CGPU_DISABLE" {
                ctx.at(
                    RuleId::WorkloadEnvOnInstaller,
                    name_node,
                    format!("{cp}/env/{i}/name"),
                    format!(
                        "{name} is read by cGPU in workload containers; on {} it does nothing",
                        inst.name()
                    ),
                );
            }
        }
    }
}

fn priority_class(ctx: &mut Ctx, inst: &Installer) {
    let path = child(&inst.pod_spec_pointer(), "priorityClassName");
    match inst.pod_spec().and_then(|s| s.get("priorityClassName")) {
        Some(v) if v.as_str() == Some("system-node-critical") => {}
        Some(v) => {
            ctx.at(
                RuleId::PriorityClass,
                v,
                path,
                format!(
                    "priorityClassName is `{}`, not system-node-critical",
                    v.raw()
                ),
            );
        }
        None => {
            ctx.at(
                RuleId::PriorityClass,
                name_node(&inst.obj),
                path,
                format!(
                    "{} has no priorityClassName: system-node-critical",
                    inst.name()
                ),
            );
        }
    }
}

fn int_of(n: &Node) -> Option<i128> {
    match n.scalar()? {
        Scalar::Int(i) => Some(*i),
        _ => None,
    }
}

fn rollout(ctx: &mut Ctx, inst: &Installer) {
    let Some(status) = inst.obj.node.get("status") else {
        return;
    };
    let (Some(ready_node), Some(desired)) = (
        status.get("numberReady"),
        status.get("desiredNumberScheduled").and_then(int_of),
    ) else {
        return;
    };
    let Some(ready) = int_of(ready_node) else {
        return;
    };
    if ready != desired {
        ctx.at(
            RuleId::RolloutIncomplete,
            ready_node,
            format!("{}/status/numberReady", inst.obj.pointer),
            format!("{ready} of {desired} {} pods are ready", inst.name()),
        );
    }
}

/// Did this managedFields entry write POLICY's value? Its fieldsV1 holds
/// f:spec/f:template/f:spec/f:containers|f:initContainers/k:{…}/f:env/k:{"name":"POLICY"}/f:value.
fn writes_policy(fields: &Node) -> bool {
    let Some(spec) = fields.pointer("/f:spec/f:template/f:spec") else {
        return false;
    };
    ["f:containers", "f:initContainers"]
        .iter()
        .filter_map(|k| spec.get(k).and_then(Node::as_map))
        .flatten()
        .filter_map(|c| c.value.get("f:env").and_then(Node::as_map))
        .flatten()
        .any(|e| {
            e.key.starts_with("k:")
                && e.key.contains("\"POLICY\"")
                && e.value.get("f:value").is_some()
        })
}

fn drift(ctx: &mut Ctx, inst: &Installer) {
    let Some(mf) = inst
        .obj
        .node
        .pointer("/metadata/managedFields")
        .and_then(Node::as_seq)
    else {
        return;
    };
    let writers: BTreeSet<(usize, String)> = mf
        .iter()
        .enumerate()
        .filter_map(|(i, m)| {
            let manager = m.get("manager")?.as_str()?;
            let fields = m.get("fieldsV1")?;
            (!manager.starts_with("helm") && writes_policy(fields))
                .then(|| (i, manager.to_string()))
        })
        .collect();
    for (i, manager) in writers {
        let node = mf[i].get("manager").expect("filtered on manager");
        ctx.at(
            RuleId::PolicyDrift,
            node,
            format!("{}/metadata/managedFields/{i}/manager", inst.obj.pointer),
            format!("POLICY was last written by `{manager}`, not by Helm: the next helm upgrade sets it back"),
        );
    }
}

/// `cluster-policy-mismatch` over the policies of one cluster's installers: every installer whose
/// policy differs from the reference (the first cgpu-installer, else the first installer) gets a
/// finding. `sources` names the input of each policy for the message.
pub fn mismatches(policies: &[(String, InstallerPolicy)]) -> Vec<(usize, String)> {
    let Some(reference) = policies
        .iter()
        .position(|(_, p)| p.name == cgpu::INSTALLER)
        .or((!policies.is_empty()).then_some(0))
    else {
        return Vec::new();
    };
    let (rf, rp) = &policies[reference];
    policies
        .iter()
        .enumerate()
        .filter(|(_, (_, p))| p.policy != rp.policy)
        .map(|(i, (file, p))| {
            (
                i,
                format!(
                    "{} uses policy {} but {} uses {} ({}line {}): all GPU-sharing nodes of a cluster must use one policy",
                    p.name,
                    p.policy,
                    rp.name,
                    rp.policy,
                    if file == rf { String::new() } else { format!("{rf} ") },
                    rp.node.src.line_col(rp.node.span.start).line
                ),
            )
        })
        .collect()
}

/// The edits that set POLICY to `n` on an installer: every POLICY value (valueFrom entries are
/// left alone), or a new env entry on the main container when there is none.
pub fn set_policy_edits(inst: &Installer, n: u8) -> Vec<Edit> {
    let envs = inst.policy_envs();
    if !envs.is_empty() {
        return envs
            .iter()
            .filter_map(|e| {
                let v = e.value?;
                let text = quoted_policy(n, v.style);
                (v.raw() != text).then(|| Edit::replace(v, text))
            })
            .collect();
    }
    let Some((c, _)) = inst.main_container() else {
        return Vec::new();
    };
    add_policy_env(c, n).into_iter().collect()
}

/// Add `- name: POLICY / value: "n"` to a container's env (creating `env:` when missing).
fn add_policy_env(c: &Node, n: u8) -> Option<Edit> {
    let src = &c.src;
    let eol = src.line_ending();
    let indent_at = |offset: usize| -> String {
        let col = src.line_col(offset).column;
        " ".repeat(col.saturating_sub(1))
    };
    let insert_after = |end: usize| -> usize {
        let line = src.line_col(end).line;
        if line >= src.line_count() {
            src.text.len()
        } else {
            src.line_start(line + 1)
        }
    };
    let lead = |at: usize| {
        if at == src.text.len() && !src.text.ends_with('\n') {
            eol
        } else {
            ""
        }
    };
    match c.entry("env") {
        Some(env) => match &env.value.value {
            Value::Seq(items) if env.value.style == Style::Block && !items.is_empty() => {
                let last = items.last().expect("non-empty");
                // The `- ` of an item sits two columns before its content.
                let dash = indent_at(items[0].span.start);
                let dash = dash[..dash.len().saturating_sub(2)].to_string();
                let at = insert_after(last.span.end);
                Some(Edit {
                    src: src.clone(),
                    range: at..at,
                    replacement: format!(
                        "{}{dash}- name: POLICY{eol}{dash}  value: \"{n}\"{eol}",
                        lead(at)
                    ),
                })
            }
            Value::Seq(items) if !items.is_empty() => {
                let end = env.value.span.end.saturating_sub(1);
                Some(Edit {
                    src: src.clone(),
                    range: end..end,
                    replacement: format!(", {{name: POLICY, value: \"{n}\"}}"),
                })
            }
            _ => Some(Edit::replace(
                &env.value,
                format!("[{{name: POLICY, value: \"{n}\"}}]"),
            )),
        },
        None => {
            let first_key = c.as_map()?.first()?;
            let ind = indent_at(first_key.key_span.start);
            if c.style != Style::Block {
                return None;
            }
            let at = insert_after(c.span.end);
            Some(Edit {
                src: src.clone(),
                range: at..at,
                replacement: format!(
                    "{}{ind}env:{eol}{ind}- name: POLICY{eol}{ind}  value: \"{n}\"{eol}",
                    lead(at)
                ),
            })
        }
    }
}
