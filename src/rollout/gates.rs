//! The gates before any node is taken: the DaemonSet deploys the goal (and is what the run found
//! at its start), its own rollout is done, and the pods a drain evicts fit elsewhere.

use std::collections::{BTreeMap, BTreeSet};

use semver::Version;

use super::model::{Config, Goal, Next, Stop};
use super::observe::{InstallerObs, NodeObs, Observation, PodObs};
use crate::cgpu;
use crate::checklist::model::Strategy;

fn stop(message: String, next: Next) -> Option<Stop> {
    Some(Stop {
        node: None,
        step: "installer-policy",
        message,
        next,
    })
}

fn version(v: &str) -> Option<Version> {
    Version::parse(v.trim().trim_start_matches('v')).ok()
}

/// The DaemonSet against the goal and against what the run found at its start.
pub(super) fn installer_stop(
    inst: Option<&InstallerObs>,
    goal: &Goal,
    config: &Config,
) -> Option<Stop> {
    let Some(inst) = inst else {
        return stop(
            format!(
                "no {} DaemonSet in kube-system: cGPU is not installed, nothing to roll out",
                cgpu::INSTALLER
            ),
            Next::Apply,
        );
    };
    if let Some(pinned) = &config.pinned
        && pinned.fingerprint() != inst.fingerprint()
    {
        return stop(
            format!(
                "the {} DaemonSet changed during the run (generation {} -> {}: POLICY {} -> {}, image {} -> {}, updateStrategy {} -> {}): someone else is changing it; no node is restarted into it",
                inst.name,
                pinned.generation,
                inst.generation,
                pinned.policy.as_deref().unwrap_or("unset"),
                inst.policy.as_deref().unwrap_or("unset"),
                pinned.image,
                inst.image,
                pinned.strategy.as_str(),
                inst.strategy.as_str()
            ),
            Next::Replan,
        );
    }
    let want = goal.policy.to_string();
    let version_text = inst.version.as_deref().unwrap_or("unknown");
    if inst.policy.as_deref() != Some(want.as_str()) {
        return stop(
            format!(
                "{} has POLICY {} and {} (cGPU {version_text}), the goal is policy {want}: apply the desired values first",
                inst.name,
                inst.policy.as_deref().unwrap_or("unset"),
                inst.image
            ),
            Next::Apply,
        );
    }
    let tag = cgpu::split_image(&inst.image).tag.map(str::to_string);
    if let Some(t) = &goal.tag
        && tag.as_deref() != Some(t.as_str())
    {
        return stop(
            format!(
                "{} deploys {} (cGPU {version_text}), the goal is tag {t}: a helm upgrade set another image (a chart default?); no node is restarted into it",
                inst.name, inst.image
            ),
            Next::Replan,
        );
    }
    if let Some(v) = &goal.version
        && inst.version.as_deref().and_then(version).as_ref() != Some(v)
    {
        return stop(
            format!(
                "{} deploys {} (cGPU {version_text}), the goal is cGPU {v}: no node is restarted into it",
                inst.name, inst.image
            ),
            Next::Replan,
        );
    }
    if inst.pod_selector.is_none() {
        return stop(
            format!(
                "the {} DaemonSet selects its pods with matchExpressions: its pods cannot be found by a label selector; restart its nodes by hand",
                inst.name
            ),
            Next::OtherNodes,
        );
    }
    None
}

/// The installer's own rollout is done: on every Ready node it selects, one Ready pod from the
/// current template (RollingUpdate; under OnDelete old pods are expected).
pub(super) fn health(obs: &Observation, inst: &InstallerObs) -> Result<(), String> {
    if inst.strategy == Strategy::OnDelete {
        return Ok(());
    }
    let mut problems = Vec::new();
    for n in obs.nodes.iter().filter(|n| inst.selects(n) && n.ready) {
        match obs.installer_pod(&inst.name, &n.name) {
            None => problems.push(format!("no {} pod on {}", inst.name, n.name)),
            Some(p) if !matches_template(p, inst) => problems.push(format!(
                "pod {} on {} still runs POLICY {} and {} (the rollout is not finished)",
                p.name,
                n.name,
                p.policy.as_deref().unwrap_or("unset"),
                p.image
            )),
            Some(p) if !p.ready => {
                problems.push(format!("pod {} on {} is not Ready", p.name, n.name))
            }
            Some(_) => {}
        }
    }
    let not_ready: Vec<&str> = obs
        .nodes
        .iter()
        .filter(|n| inst.selects(n) && !n.ready)
        .map(|n| n.name.as_str())
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    let mut text = problems.join("; ");
    if !not_ready.is_empty() {
        text.push_str(&format!(
            "; the installer pods on the NotReady node(s) {} cannot become Ready and hold the rollout (maxUnavailable): bring them back or remove them from the pool",
            not_ready.join(", ")
        ));
    }
    Err(text)
}

pub(super) fn matches_template(p: &PodObs, inst: &InstallerObs) -> bool {
    p.policy == inst.policy && p.image == inst.image
}

/// The `aliyun.com/gpu-mem` the pods on the nodes to drain ask for must fit into what the other
/// Ready, schedulable nodes have free, or the evicted pods stay Pending.
pub(super) fn capacity(
    obs: &Observation,
    pods: &[PodObs],
    take: &[&NodeObs],
) -> Result<(), String> {
    let draining: BTreeSet<&str> = take.iter().map(|n| n.name.as_str()).collect();
    let mut used: BTreeMap<&str, u64> = BTreeMap::new();
    let mut need = 0u64;
    for p in pods.iter().filter(|p| !p.finished) {
        *used.entry(p.node.as_str()).or_default() += p.gpu_mem;
        if draining.contains(p.node.as_str())
            && p.owner.as_ref().is_none_or(|(k, _)| k != "DaemonSet")
        {
            need += p.gpu_mem;
        }
    }
    if need == 0 {
        return Ok(());
    }
    let free: u64 = obs
        .nodes
        .iter()
        .filter(|n| !draining.contains(n.name.as_str()) && !n.unschedulable && n.ready)
        .map(|n| {
            n.gpu_mem
                .saturating_sub(used.get(n.name.as_str()).copied().unwrap_or(0))
        })
        .sum();
    if need > free {
        let names: Vec<&str> = draining.into_iter().collect();
        return Err(format!(
            "the pods on {} request {need} of aliyun.com/gpu-mem and the other Ready, schedulable nodes have {free} free: evicted, they would stay Pending; free capacity or add nodes first",
            names.join(" ")
        ));
    }
    Ok(())
}
