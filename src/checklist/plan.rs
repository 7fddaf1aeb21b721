//! Planning: the two sides and the nodes made into a [`Checklist`], the desired values gated
//! as the upgrade applies them, and the findings that block the plan.

use crate::catalogue::RuleId;
use std::sync::Arc;

use super::model::{Checklist, ChecklistError, Desired, Inputs, Options, Origin, Planned, Step};
use super::read::{Current, DesiredSide, read_current, read_desired, read_nodes};
use super::steps::kubectl_prefix;
use crate::catalogue::Severity;
use crate::cgpu::{parse_tag, split_image};
use crate::diag::Diagnostic;
use crate::lint;
use crate::rules::{Ctx, NodeContext, RuleOptions};
use std::collections::HashMap;

/// Build the checklist from files.
pub fn build(
    current_path: &str,
    desired: &Desired,
    nodes_path: Option<&str>,
    options: &Options,
) -> Result<Checklist, ChecklistError> {
    let current = Inputs::file(current_path)?;
    let nodes = nodes_path.map(Inputs::file).transpose()?;
    build_from(&current, desired, nodes.as_ref(), options)
}

/// Build the checklist from inputs read anywhere (files, or a cluster's objects).
pub fn build_from(
    current_input: &Inputs,
    desired: &Desired,
    nodes_input: Option<&Inputs>,
    options: &Options,
) -> Result<Checklist, ChecklistError> {
    let current_path = current_input.label.as_str();
    let nodes_path = nodes_input.map(|n| n.label.as_str());
    let current = read_current(current_input)?;
    let desired_side = read_desired(desired, &current, options)?;
    let desired_settings = desired_side.settings.clone();
    let cur = &current.settings;
    let policy_change =
        (cur.policy != desired_settings.policy).then_some((cur.policy, desired_settings.policy));
    let (mut tag_change, mut build_change) = (None, None);
    if let (Some(a), Some(b)) = (&cur.tag, &desired_settings.tag)
        && a != b
    {
        let pair = Some((a.clone(), b.clone()));
        match (&cur.version, &desired_settings.version) {
            (Some(x), Some(y)) if x.core == y.core => build_change = pair,
            _ => tag_change = pair,
        }
    }
    let mut placement = current.placement.clone();
    if let Some(sel) = &desired_side.selector {
        placement.selector = sel.clone();
    }
    let mut plan_notes = Vec::new();
    if current.policy_assumed {
        plan_notes.push(format!(
            "cgpu-installer sets no POLICY: the plan assumes {} (the chart's documented default); the per-node state read decides anyway",
            crate::cgpu::CHART_DEFAULT_POLICY
        ));
    }
    let mut list = Checklist {
        current: current.settings.clone(),
        desired: desired_settings,
        policy_change,
        tag_change,
        build_change,
        placement,
        nodes_given: nodes_path.is_some(),
        nodes: Vec::new(),
        other_nodes: Vec::new(),
        diagnostics: Vec::new(),
        core_policy: current.core_policy,
        current_path: current_path.to_string(),
        desired_label: match desired {
            Desired::Values(p) | Desired::ValuesAs(p, _) => p.to_string(),
            Desired::Policy { policy, tag } => match tag {
                Some(t) => format!("--policy {policy} --tag {t}"),
                None => format!("--policy {policy}"),
            },
        },
        nodes_path: nodes_path.map(str::to_string),
        options: options.clone(),
        strategy: current.strategy,
        blocking: Vec::new(),
        plan_notes,
        not_ready_now: Vec::new(),
        error_findings: false,
        pod_selector: current
            .pod_selector
            .clone()
            .unwrap_or_else(|| vec![("name".into(), "cgpu-installer".into())]),
        installer_nodes: 0,
        upgrade: desired_side.keys.clone(),
        disabled: desired_side.disabled,
        removal: Vec::new(),
        planned: Planned::default(),
    };
    list.planned = planned(&list, &current);
    if list.disabled {
        // Nothing moves towards the desired policy or tag: the installer goes away and the
        // loaded modules keep what they run.
        list.desired = list.current.clone();
        list.policy_change = None;
        list.tag_change = None;
        list.build_change = None;
        // Nothing is awaited either: a node outside the run blocks nothing in a removal.
        for o in &mut list.other_nodes {
            for cut in ["; verified at the end (blocking", "; blocking until"] {
                if let Some(i) = o.reason.find(cut) {
                    o.reason.truncate(i);
                }
            }
        }
    }
    let mut srcs = current.srcs.clone();
    srcs.extend(desired_side.src.clone());
    let mut region = None;
    if let Some(nodes) = nodes_input {
        region = read_nodes(&mut list, nodes, &current.placement.selector)?;
        srcs.extend(nodes.sources.iter().cloned());
    }
    let region = region.or_else(|| options.settings.opts.region.clone());
    // Every finding comes from the one pipeline, over the inputs as one cluster. The node rules
    // read the installer as it will be after the change.
    let mut settings = options.settings.clone();
    settings.opts = RuleOptions {
        region,
        require_cgpu: false,
        helm: None,
        nodes: NodeContext {
            cgpu: list
                .desired
                .version
                .as_ref()
                .or(list.current.version.as_ref())
                .map(|t| t.core.clone()),
            selector: Some(list.placement.selector.clone()),
        },
    };
    list.diagnostics = lint::lint_cluster(&srcs, &settings);
    if list.disabled {
        list.removal = removal(&mut list);
    } else {
        let gate = gate(&mut list, &desired_side, &settings);
        list.diagnostics.extend(gate);
    }
    let unsafe_findings = blockers(&list, &current, &desired_side);
    list.error_findings = unsafe_findings
        .iter()
        .any(|d| d.severity == Severity::Error);
    // Nothing to restart, nothing to block (the findings are still listed, and errors still
    // fail the run).
    if list.reboot_required() {
        list.blocking = unsafe_findings.clone();
    }
    if list
        .diagnostics
        .iter()
        .any(|d| d.rule == RuleId::RolloutIncomplete)
        && !unsafe_findings
            .iter()
            .any(|d| d.rule == RuleId::RolloutIncomplete)
    {
        list.plan_notes.push(format!(
            "rollout-incomplete is explained by the NotReady node(s) {}: the run skips them and is not done until they show the target",
            list.not_ready_now.join(", ")
        ));
    }
    Ok(list)
}

/// What the DaemonSet runs after the change: the live image with the path and tag the upgrade
/// sets (the registry host is the chart's choice and stays), the desired version, and the live
/// update strategy, pod selector and generation.
fn planned(list: &Checklist, current: &Current) -> Planned {
    let after = |key: &str| {
        list.upgrade
            .iter()
            .find(|k| k.key == key)
            .and_then(|k| k.after.clone())
    };
    let image = current.image.as_deref().and_then(|live| {
        let r = split_image(live);
        if r.digest.is_some() {
            return None;
        }
        let path = after("cgpu.image").unwrap_or_else(|| r.path.to_string());
        let tag = list.desired.tag.clone().or(r.tag.map(str::to_string))?;
        Some(match r.host {
            Some(h) => format!("{h}/{path}:{tag}"),
            None => format!("{path}:{tag}"),
        })
    });
    Planned {
        image,
        live_image: current.image.clone(),
        version: list.desired.version.as_ref().map(|t| t.core.to_string()),
        strategy: current.strategy,
        selector: current.pod_selector.clone(),
        generation: current.generation,
    }
}

/// The desired values read as the upgrade applies them: a key that falls back to a
/// chart default other than the live value (`upgrade-default-fallback`), a downgrade
/// (`upgrade-downgrade`, unless `--allow-downgrade`), and the findings of a target tag that
/// comes from the chart defaults (as `check --stack` reports them: the desired file alone
/// does not hold it).
fn gate(list: &mut Checklist, desired: &DesiredSide, settings: &lint::Settings) -> Vec<Diagnostic> {
    let root = &desired.root;
    let file = root.src.name.clone();
    let cgpu = root.get("cgpu").unwrap_or(root);
    let no_aliases = HashMap::new();
    let mut ctx = Ctx::new(&settings.opts, 1, &no_aliases);
    let version = |t: &str| {
        parse_tag(t)
            .ok()
            .map_or(String::new(), |v| format!(" ({})", v.core))
    };
    for k in &list.upgrade {
        let name = k.key.trim_start_matches("cgpu.");
        if k.from != Origin::ChartDefault
            || !k.changes()
            || !["policy", "tag", "image", "imagePullPolicy", "nodeSelector"].contains(&name)
        {
            continue;
        }
        let (live, after) = (
            k.live.clone().unwrap_or_default(),
            k.after.clone().unwrap_or_else(|| "nothing".into()),
        );
        let (lv, av) = if name == "tag" {
            (version(&live), version(&after))
        } else {
            (String::new(), String::new())
        };
        ctx.at(
            RuleId::UpgradeDefaultFallback,
            cgpu,
            "/cgpu",
            format!(
                "{key} is not set in {file}: `helm upgrade -f {file}` without --reuse-values falls back to the chart default `{after}`{av}, replacing the live `{live}`{lv}",
                key = k.key
            ),
        )
        .help(format!(
            "pass --reuse-values (to `helm upgrade` and to `cgpu-lint checklist`) to keep the deployed values, or pin `{name}: {live}` under `cgpu:` in {file}"
        ));
    }
    if let (Some(a), Some(b)) = (&list.current.version, &list.desired.version)
        && b.core < a.core
    {
        let (from, to) = (
            list.current.tag.clone().unwrap_or_default(),
            list.desired.tag.clone().unwrap_or_default(),
        );
        if list.options.allow_downgrade {
            list.plan_notes.push(format!(
                "a downgrade of cGPU, {} (`{from}`) → {} (`{to}`), planned because --allow-downgrade was given",
                a.core, b.core
            ));
        } else {
            let at = cgpu.get("tag").unwrap_or(cgpu);
            let path = if cgpu.get("tag").is_some() {
                "/cgpu/tag"
            } else {
                "/cgpu"
            };
            ctx.at(
                RuleId::UpgradeDowngrade,
                at,
                path,
                format!(
                    "the upgrade takes cGPU down from {} (`{from}`, live) to {} (`{to}`)",
                    a.core, b.core
                ),
            )
            .help(format!(
                "pin the live tag (`tag: {from}`) in the desired values, or pass --allow-downgrade when the downgrade is intended"
            ));
        }
    }
    // Suppressed and filtered as the pipeline does it (inline `# cgpu-lint: ignore[…]`,
    // --select/--ignore, per-file ignores).
    let found = std::mem::take(&mut ctx.out);
    let mut out = lint::suppress_and_filter(std::slice::from_ref(&root.src), found, settings);
    // The target tag from the chart defaults: its findings as `check --stack` gives them.
    if list
        .upgrade
        .iter()
        .any(|k| k.key == "cgpu.tag" && k.from == Origin::ChartDefault)
        && let Some(src) = desired.src.clone()
    {
        let defaults = crate::cgpu::chart_defaults();
        let found = lint::lint_stack(&[defaults.clone(), src], settings);
        out.extend(
            found
                .into_iter()
                .filter(|d| Arc::ptr_eq(&d.src, &defaults) && d.path.starts_with("/cgpu/tag")),
        );
    }
    out
}

/// `enabled: false`: the upgrade deletes the installer DaemonSet; nothing restarts. What stays
/// on the nodes, and how to see it.
fn removal(list: &mut Checklist) -> Vec<Step> {
    let running: Vec<String> = list.nodes.drain(..).map(|t| t.name).collect();
    for o in &mut list.other_nodes {
        o.verify = false;
    }
    let p = list.current.policy;
    let mut steps = vec![
        Step::new("cgpu-disabled", "The desired values turn cGPU off (`cgpu.enabled` is false as the chart's `if` reads it): the upgrade deletes the cgpu-installer DaemonSet; no node is cordoned, drained or rebooted by this plan".into(), None),
        Step::new("module-stays", format!(
                "The cgpu kernel module already loaded on every node {} stays and keeps its policy ({p}) until that node reboots; after a reboot no installer loads it again (no GPU memory isolation there)",
                if running.is_empty() {
                    "that runs it".to_string()
                } else {
                    format!("that runs it ({})", running.join(", "))
                }
            ), None),
        Step::new("verify-removed", "After `helm upgrade`: the installer DaemonSet is gone (expect `NotFound`)".into(), Some(format!("{} get ds cgpu-installer -n kube-system", kubectl_prefix(list)))),
        Step::new("verify-module", format!(
                "On a node that has not rebooted: the module still shows the old policy (expect {p} on every GPU)"
            ), Some("cat /proc/cgpu_km/*/policy".into())),
    ];
    if list.core_policy.is_some() {
        steps.push(Step::new("core-installer", "cgpu-core-installer is part of the input: check whether the same upgrade removes it too (core_mem nodes)".into(), Some("kubectl get ds cgpu-core-installer -n kube-system".into())));
    }
    steps
}

/// Findings that make the plan unsafe. Every error is one, with one exception: `tag-too-old`
/// on the live DaemonSet when the change installs another tag (that tag is checked on the
/// desired side). `rollout-incomplete` (an info for `check`) is one too: a DaemonSet that is
/// not healthy must not be the base of a node-by-node restart, unless every pod missing is
/// on a NotReady node of the list (which the run skips).
fn blockers(list: &Checklist, current: &Current, desired: &DesiredSide) -> Vec<Diagnostic> {
    let not_ready = list.not_ready_now.len() as u64;
    let from_current = |d: &Diagnostic| current.srcs.iter().any(|s| Arc::ptr_eq(&d.src, s));
    list.diagnostics
        .iter()
        .filter(|d| match d.rule {
            RuleId::TagTooOld if from_current(d) => {
                !desired.tag_given
                    || list.desired.version.as_ref().map(|t| &t.core)
                        == list.current.version.as_ref().map(|t| &t.core)
            }
            RuleId::RolloutIncomplete => match current.status {
                Some((want, ready)) => want.saturating_sub(ready) > not_ready,
                None => true,
            },
            _ => d.severity == Severity::Error,
        })
        .cloned()
        .collect()
}
