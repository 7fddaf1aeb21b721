//! The decision core: from one [`Observation`], the [`Goal`] and what this process did itself
//! ([`Memory`]), each GPU-sharing node's verdict and the next safe actions. Pure: it reads no
//! clock (the observation carries its time), asks nothing and changes nothing, so it is tested
//! as a table and by properties over generated observations (tests below), and `rollout`,
//! `status` and the plans cannot disagree about a node.
//!
//! Each node's progress lives on the node (annotations, as kured and the GPU Operator keep
//! theirs), never in the process: a run killed between any two calls leaves a cluster from
//! which the next run decides the same next step.

use semver::Version;

use super::observe::{
    BOOT_BEFORE, CORDON_MARK, KURED_REBOOTING, Module, NVIDIA_UPGRADE, NodeObs, Observation,
    REBOOT_AT, STATE, State,
};
use crate::cgpu;

use super::gates::{capacity, health, installer_stop, matches_template};
pub use super::model::*;

fn stop(node: Option<&str>, step: &'static str, message: String, next: Next) -> Option<Stop> {
    Some(Stop {
        node: node.map(str::to_string),
        step,
        message,
        next,
    })
}

/// The node is in flight: a run marked it, and has not finished it.
pub fn phase(node: &NodeObs) -> Option<Phase> {
    let state = node.annotation(STATE).unwrap_or("");
    let marked = node.annotation(CORDON_MARK).is_some();
    if state.starts_with("rebooting") {
        let before = node.annotation(BOOT_BEFORE).unwrap_or("");
        return Some(if !before.is_empty() && before != node.boot_id {
            Phase::Rebooted
        } else {
            Phase::Rebooting
        });
    }
    if marked || state == "cordoned" {
        return Some(Phase::Cordoned);
    }
    None
}

/// Another actor works on the node: the NVIDIA GPU Operator's driver upgrade, kured.
pub fn other_actor(obs: &Observation, node: &NodeObs) -> Option<String> {
    if let Some(s) = node.labels.get(NVIDIA_UPGRADE)
        && !s.is_empty()
        && s != "upgrade-done"
    {
        return Some(format!(
            "the NVIDIA GPU Operator is upgrading its driver ({NVIDIA_UPGRADE}={s})"
        ));
    }
    if obs.kured.contains(&node.name) {
        return Some("kured holds its reboot lock on it (weave.works/kured-node-lock)".into());
    }
    if node.annotation(KURED_REBOOTING).is_some() {
        return Some(format!("kured is rebooting it ({KURED_REBOOTING})"));
    }
    None
}

fn version(v: &str) -> Option<Version> {
    Version::parse(v.trim().trim_start_matches('v')).ok()
}

/// Why a module is not at the goal (empty: it is). `version`: also judge the version.
fn off_goal(m: &Module, goal: &Goal, judge_version: bool) -> Vec<String> {
    let want = goal.policy.to_string();
    let mut why = Vec::new();
    let off: Vec<String> = m
        .gpus_off(&want)
        .map(|(g, p)| format!("GPU {g} runs policy {p}"))
        .collect();
    if !off.is_empty() {
        why.push(format!("{} (the goal: policy {want})", off.join(", ")));
    }
    if judge_version
        && let Some(v) = &goal.version
        && !m.runs_version(&v.to_string())
    {
        why.push(format!("the module is cGPU {} (the goal: {v})", m.version));
    }
    why
}

/// The whole decision.
pub fn decide(obs: &Observation, goal: &Goal, config: &Config, memory: &Memory) -> Decision {
    let main = obs.installer(cgpu::INSTALLER);
    let mut d = Decision {
        nodes: Vec::new(),
        actions: Vec::new(),
        waiting: Vec::new(),
        stop: None,
        done: false,
        canary: true,
        batch: Vec::new(),
    };
    let done_state = goal.done_state();
    d.canary = !obs
        .nodes
        .iter()
        .any(|n| n.annotation(STATE) == Some(done_state.as_str()));
    let global = installer_stop(main, goal, config);
    // Nodes in flight first (they are down already), then the others in the API server's order.
    let mut order: Vec<&NodeObs> = obs.gpu_sharing().collect();
    order.sort_by_key(|n| phase(n).is_none());
    let mut candidates: Vec<&NodeObs> = Vec::new();
    let mut in_flight = 0usize;
    let mut node_stop: Option<Stop> = None;
    let timed_out = |node: &str, kind: WaitKind, limit: i64| -> bool {
        memory
            .waiting_since
            .get(&(node.to_string(), kind))
            .is_some_and(|since| obs.now - since > limit)
    };
    for n in order {
        let inst = obs.installer_of(n);
        let ph = phase(n);
        if ph.is_some() {
            in_flight += 1;
        }
        let module = match obs.modules.get(&n.name) {
            Some(Ok(State::Loaded(m))) => Some(m.clone()),
            _ => None,
        };
        let mut v = NodeVerdict {
            name: n.name.clone(),
            installer: inst.map(|i| i.name.clone()),
            verdict: Kind::Unreadable,
            why: String::new(),
            phase: ph,
            cordoned_by_us: n.annotation(CORDON_MARK).is_some(),
            module: module.clone(),
        };
        let set = |v: &mut NodeVerdict, k: Kind, why: String| {
            v.verdict = k;
            v.why = why;
        };
        let Some(inst) = inst else {
            set(
                &mut v,
                Kind::NotOurs,
                "it is labelled for cGPU, but no installer selects it".into(),
            );
            d.nodes.push(v);
            continue;
        };
        let pod = obs.installer_pod(&inst.name, &n.name);
        let read = obs.modules.get(&n.name);
        // Another installer's nodes (core_mem): only the policy is judged; this run does not
        // restart them.
        if inst.name != cgpu::INSTALLER {
            match read {
                Some(Ok(State::Loaded(m))) if off_goal(m, goal, false).is_empty() => set(
                    &mut v,
                    Kind::Converged,
                    format!(
                        "every GPU shows policy {} ({}; its own cGPU version)",
                        goal.policy, inst.name
                    ),
                ),
                Some(Ok(State::Loaded(m))) => set(
                    &mut v,
                    Kind::NotOurs,
                    format!(
                        "{}; {} asks POLICY {}: this run restarts only the nodes of {} (set {}'s POLICY to {} and restart them the same way)",
                        off_goal(m, goal, false).join("; "),
                        inst.name,
                        inst.policy.as_deref().unwrap_or("unset"),
                        cgpu::INSTALLER,
                        inst.name,
                        goal.policy
                    ),
                ),
                Some(Ok(State::NoModule)) => set(
                    &mut v,
                    Kind::NotOurs,
                    format!(
                        "no module loaded; {} loads it (this run does not restart its nodes)",
                        inst.name
                    ),
                ),
                Some(Err(e)) => set(
                    &mut v,
                    Kind::NotOurs,
                    format!("{} node, not read: {e}", inst.name),
                ),
                None if !n.ready => set(
                    &mut v,
                    Kind::NotOurs,
                    format!("{} node, NotReady", inst.name),
                ),
                None => set(
                    &mut v,
                    Kind::NotOurs,
                    format!("{} node, no {} pod on it", inst.name, inst.name),
                ),
            }
            d.nodes.push(v);
            continue;
        }
        let actor = other_actor(obs, n);
        // What the module runs against the goal.
        let judged: Result<Vec<String>, String> = match read {
            Some(Ok(State::Loaded(m))) => Ok(off_goal(m, goal, true)),
            Some(Ok(State::NoModule)) => Err("no-module".into()),
            Some(Err(e)) => Err(e.clone()),
            None if pod.is_none() => Err(format!("no {} pod on the node", inst.name)),
            None => Err("not read".into()),
        };
        let downgrade = module.as_ref().and_then(|m| {
            let (have, want) = (version(&m.version)?, goal.version.clone()?);
            (have > want && !config.allow_downgrade).then(|| {
                format!(
                    "the node runs cGPU {have}; the goal is cGPU {want}, older: a restart would downgrade it (--allow-downgrade restarts it anyway)"
                )
            })
        });
        match ph {
            // ---- in flight ----
            Some(phase) => {
                if let Some(a) = &actor {
                    set(
                        &mut v,
                        Kind::Held,
                        format!(
                            "{a}; it is in flight: nothing is done to it while the other actor works"
                        ),
                    );
                    d.nodes.push(v);
                    continue;
                }
                match &judged {
                    Ok(why) if why.is_empty() && n.ready => {
                        set(&mut v, Kind::Converged, goal.converged_text());
                        if pod.is_some_and(|p| p.ready && matches_template(p, inst)) {
                            d.actions.push(Action::Finish {
                                node: n.name.clone(),
                                uid: n.uid.clone(),
                                uncordon: n.annotation(CORDON_MARK).is_some(),
                            });
                        } else {
                            d.waiting.push(Wait {
                                node: n.name.clone(),
                                kind: WaitKind::InstallerPod,
                                why: format!("a Ready {} pod from the current template", inst.name),
                            });
                        }
                        d.nodes.push(v);
                        continue;
                    }
                    Ok(why) if !why.is_empty() => set(&mut v, Kind::NeedsRestart, why.join("; ")),
                    Err(e) if e == "no-module" => set(
                        &mut v,
                        Kind::NoModule,
                        "the cGPU module is not loaded".into(),
                    ),
                    Err(e) => set(
                        &mut v,
                        Kind::NeedsRestart,
                        format!("in flight; its module is not read ({e})"),
                    ),
                    Ok(_) => set(&mut v, Kind::Down, "in flight; NotReady".into()),
                }
                match phase {
                    Phase::Cordoned => {
                        if !n.ready {
                            set(&mut v, Kind::Down, "cordoned by a run and NotReady: it holds the budget until it is Ready again".into());
                            d.nodes.push(v);
                            continue;
                        }
                        if downgrade.is_some() && !matches!(judged, Ok(ref w) if w.is_empty()) {
                            set(
                                &mut v,
                                Kind::RefusedDowngrade,
                                downgrade.clone().unwrap_or_default(),
                            );
                            d.nodes.push(v);
                            continue;
                        }
                        if !n.unschedulable {
                            // Someone uncordoned it since: cordoned again before the drain.
                            d.actions.push(Action::Cordon {
                                node: n.name.clone(),
                                uid: n.uid.clone(),
                                mark: true,
                            });
                            d.nodes.push(v);
                            continue;
                        }
                        if let Err(e) = &judged
                            && e != "no-module"
                            && n.ready
                        {
                            // Unreadable before its reboot: nothing more is done to it.
                            set(&mut v, Kind::Unreadable, e.clone());
                            node_stop = node_stop.or(stop(Some(&n.name), "read-state", format!("{}: the cGPU state cannot be read ({e}); nothing more is done to it", n.name), Next::Resume));
                            d.nodes.push(v);
                            continue;
                        }
                        let late = timed_out(&n.name, WaitKind::Drain, config.drain_timeout);
                        if draining(obs, n, late, &mut d, &mut node_stop) {
                            d.nodes.push(v);
                            continue;
                        }
                        // Drained. Its installer pod must come from the current template, or
                        // the old one loads the old policy again after the reboot.
                        match pod {
                            Some(p) if !matches_template(p, inst) => {
                                d.actions.push(Action::DeletePod {
                                    node: n.name.clone(),
                                    pod: p.name.clone(),
                                    uid: p.uid.clone(),
                                    why: format!(
                                        "it runs POLICY {} and {}, the DaemonSet POLICY {} and {}",
                                        p.policy.as_deref().unwrap_or("unset"),
                                        p.image,
                                        inst.policy.as_deref().unwrap_or("unset"),
                                        inst.image
                                    ),
                                });
                                d.nodes.push(v);
                                continue;
                            }
                            None => {
                                if timed_out(&n.name, WaitKind::InstallerPod, config.pod_timeout) {
                                    node_stop = node_stop.or(stop(
                                        Some(&n.name),
                                        "wait-installer-pod",
                                        format!("{}: no {} pod on it", n.name, inst.name),
                                        Next::Resume,
                                    ));
                                } else {
                                    d.waiting.push(Wait {
                                        node: n.name.clone(),
                                        kind: WaitKind::InstallerPod,
                                        why: format!(
                                            "the DaemonSet to create its {} pod",
                                            inst.name
                                        ),
                                    });
                                }
                                d.nodes.push(v);
                                continue;
                            }
                            Some(_) => {}
                        }
                        if matches!(v.verdict, Kind::NoModule) {
                            // Drained with no module: the new pod loads it, no reboot.
                            let late = timed_out(&n.name, WaitKind::Policy, config.policy_timeout);
                            load(n, pod, memory, late, &mut d, &mut node_stop);
                            d.nodes.push(v);
                            continue;
                        }
                        d.actions.push(reboot(n, config.reboot_via, &mut node_stop));
                    }
                    Phase::Rebooting => {
                        let at = n.annotation(REBOOT_AT).and_then(super::observe::parse_time);
                        let age = at.map_or(i64::MAX, |t| obs.now - t);
                        if age <= config.reboot_timeout {
                            d.waiting.push(Wait {
                                node: n.name.clone(),
                                kind: WaitKind::Reboot,
                                why: format!("its boot id to change from {}", n.boot_id),
                            });
                        } else if memory.rebooted.contains(&n.name) {
                            node_stop = node_stop.or(stop(Some(&n.name), "wait-boot-id", format!("{}: the boot id is still {} after the reboot timeout: the reboot did not happen (check the instance in the ECS console); the node stays cordoned and drained", n.name, n.boot_id), Next::Resume));
                        } else if !n.ready {
                            set(&mut v, Kind::Down, "its reboot was asked for long ago, the boot id never changed, and it is NotReady: it holds the budget until it is Ready again".into());
                        } else if let Some(text) = downgrade.clone() {
                            set(&mut v, Kind::RefusedDowngrade, text);
                        } else {
                            // Asked by an earlier run long ago, and the node never went down.
                            again(
                                obs,
                                n,
                                config.reboot_via,
                                timed_out(&n.name, WaitKind::Drain, config.drain_timeout),
                                &mut d,
                                &mut node_stop,
                            );
                        }
                    }
                    Phase::Rebooted => {
                        let pod_ok = pod.is_some_and(|p| p.ready && matches_template(p, inst));
                        if !n.ready {
                            if timed_out(&n.name, WaitKind::Ready, config.ready_timeout) {
                                node_stop = node_stop.or(stop(
                                    Some(&n.name),
                                    "wait-node-ready",
                                    format!("{}: rebooted, not Ready within the timeout", n.name),
                                    Next::Resume,
                                ));
                            } else {
                                d.waiting.push(Wait {
                                    node: n.name.clone(),
                                    kind: WaitKind::Ready,
                                    why: "Ready".into(),
                                });
                            }
                        } else if !pod_ok {
                            if timed_out(&n.name, WaitKind::InstallerPod, config.pod_timeout) {
                                node_stop = node_stop.or(stop(Some(&n.name), "wait-installer-pod", format!("{}: no Ready {} pod with POLICY {} and {} within the timeout", n.name, inst.name, inst.policy.as_deref().unwrap_or("unset"), inst.image), Next::Resume));
                            } else {
                                d.waiting.push(Wait {
                                    node: n.name.clone(),
                                    kind: WaitKind::InstallerPod,
                                    why: format!(
                                        "a Ready {} pod with POLICY {} and {}",
                                        inst.name,
                                        inst.policy.as_deref().unwrap_or("unset"),
                                        inst.image
                                    ),
                                });
                            }
                        } else if timed_out(&n.name, WaitKind::Policy, config.policy_timeout) {
                            if memory.rebooted.contains(&n.name) {
                                node_stop = node_stop.or(stop(Some(&n.name), "wait-policy", format!("{}: rebooted, its installer pod is Ready, and it does not show the goal ({}): {}", n.name, goal.text(), v.why), Next::Resume));
                            } else if downgrade.is_some() {
                                set(
                                    &mut v,
                                    Kind::RefusedDowngrade,
                                    downgrade.clone().unwrap_or_default(),
                                );
                            } else {
                                // An earlier run rebooted it and it came back off the goal.
                                again(
                                    obs,
                                    n,
                                    config.reboot_via,
                                    timed_out(&n.name, WaitKind::Drain, config.drain_timeout),
                                    &mut d,
                                    &mut node_stop,
                                );
                            }
                        } else {
                            d.waiting.push(Wait {
                                node: n.name.clone(),
                                kind: WaitKind::Policy,
                                why: format!("it to show {}", goal.text()),
                            });
                        }
                    }
                }
                d.nodes.push(v);
            }
            // ---- not in flight ----
            None => {
                if !n.ready {
                    set(
                        &mut v,
                        Kind::Down,
                        "NotReady: not done until it is Ready again and shows the goal".into(),
                    );
                    d.nodes.push(v);
                    continue;
                }
                match &judged {
                    Ok(why) if why.is_empty() => {
                        set(&mut v, Kind::Converged, goal.converged_text());
                    }
                    Err(e) if e == "no-module" => {
                        set(&mut v, Kind::NoModule, "the cGPU module is not loaded: its installer pod is recreated and loads it (no drain, no reboot)".into());
                        if let Some(a) = &actor {
                            set(&mut v, Kind::Held, a.clone());
                        } else {
                            let late = timed_out(&n.name, WaitKind::Policy, config.policy_timeout);
                            load(n, pod, memory, late, &mut d, &mut node_stop);
                        }
                    }
                    // No installer pod, or one not Ready yet (the DaemonSet is replacing it):
                    // waited for; a Ready pod whose read fails stops the run.
                    Err(e)
                        if !pod.is_some_and(|p| p.ready)
                            && !timed_out(&n.name, WaitKind::InstallerPod, config.pod_timeout) =>
                    {
                        set(&mut v, Kind::Unreadable, e.clone());
                        d.waiting.push(Wait {
                            node: n.name.clone(),
                            kind: WaitKind::InstallerPod,
                            why: format!("a Ready {} pod to read the module through", inst.name),
                        });
                    }
                    Err(e) => {
                        set(&mut v, Kind::Unreadable, e.clone());
                        node_stop = node_stop.or(stop(Some(&n.name), "read-state", format!("{}: the cGPU state cannot be judged ({e}); nothing was changed on this node", n.name), Next::Resume));
                    }
                    Ok(why) => {
                        set(&mut v, Kind::NeedsRestart, why.join("; "));
                        if let Some(text) = downgrade {
                            set(&mut v, Kind::RefusedDowngrade, text);
                        } else if let Some(a) = &actor {
                            set(
                                &mut v,
                                Kind::Held,
                                format!("{a}: not taken while it works on the node"),
                            );
                        } else if n.unschedulable && !config.include_cordoned {
                            let why = format!(
                                "{}; cordoned before the run (by someone else): left alone (--include-cordoned restarts it too)",
                                v.why
                            );
                            set(&mut v, Kind::NotOurs, why);
                        } else {
                            candidates.push(n);
                        }
                    }
                }
                d.nodes.push(v);
            }
        }
    }
    d.done = d.nodes.iter().all(|v| v.verdict == Kind::Converged)
        && d.nodes.iter().all(|v| v.phase.is_none())
        && global.is_none();
    if let Some(s) = global {
        d.actions.clear();
        d.waiting.clear();
        d.stop = Some(s);
        return d;
    }
    if let Some(s) = node_stop {
        // A node that cannot go on stops the run before any further change.
        d.actions.clear();
        d.waiting.clear();
        d.stop = Some(s);
        return d;
    }
    // A goal older than what nodes run (a chart default in the DaemonSet, most often) blocks
    // every change but finishing the nodes already at the goal, until someone decides
    // (--allow-downgrade, or the tag they run).
    if d.nodes.iter().any(|v| v.verdict == Kind::RefusedDowngrade) {
        d.actions.retain(|a| matches!(a, Action::Finish { .. }));
        d.waiting.clear();
        if d.actions.is_empty() {
            d.stop = Some(stuck(&d));
        }
        return d;
    }
    // New nodes within the budget: the canary alone, then --max-unavailable, counting the
    // nodes in flight (down already).
    let cap = if d.canary {
        1
    } else {
        config.max_unavailable.max(1)
    };
    let room = cap.saturating_sub(in_flight);
    if !candidates.is_empty() && room > 0 {
        let main = main.expect("checked by installer_stop");
        match health(obs, main) {
            Err(problems) => {
                if timed_out("", WaitKind::Health, config.pod_timeout) {
                    d.stop = stop(
                        None,
                        "installer-health",
                        format!(
                            "the {} DaemonSet is not healthy: {problems}; do not restart nodes on top of it",
                            main.name
                        ),
                        Next::Resume,
                    );
                    d.actions.clear();
                    d.waiting.clear();
                    return d;
                }
                d.waiting.push(Wait {
                    node: String::new(),
                    kind: WaitKind::Health,
                    why: problems,
                });
            }
            Ok(()) => {
                let take: Vec<&NodeObs> = candidates.iter().take(room).copied().collect();
                if let Some(pods) = &obs.pods
                    && let Err(text) = capacity(obs, pods, &take)
                {
                    d.stop = stop(
                        Some(
                            &take
                                .iter()
                                .map(|n| n.name.as_str())
                                .collect::<Vec<_>>()
                                .join(" "),
                        ),
                        "capacity",
                        text,
                        Next::Resume,
                    );
                    d.actions.clear();
                    d.waiting.clear();
                    return d;
                }
                for n in take {
                    d.batch.push(n.name.clone());
                    d.actions.push(Action::Cordon {
                        node: n.name.clone(),
                        uid: n.uid.clone(),
                        mark: !n.unschedulable,
                    });
                }
            }
        }
    }
    if d.actions.is_empty() && d.waiting.is_empty() && !d.done {
        d.stop = Some(stuck(&d));
    }
    // Finishing first: it frees the budget; then the rest in the order decided.
    d.actions
        .sort_by_key(|a| !matches!(a, Action::Finish { .. }));
    d
}

/// No module loaded: its installer pod is deleted once (the new one loads the module), then
/// waited for; still none after the wait stops the run.
fn load(
    n: &NodeObs,
    pod: Option<&super::observe::PodObs>,
    memory: &Memory,
    late: bool,
    d: &mut Decision,
    node_stop: &mut Option<Stop>,
) {
    if let Some(p) = pod
        && !memory.restarted.contains(&n.name)
    {
        d.actions.push(Action::DeletePod {
            node: n.name.clone(),
            pod: p.name.clone(),
            uid: p.uid.clone(),
            why: "the module is not loaded: a new pod loads it".into(),
        });
    } else if late {
        if node_stop.is_none() {
            *node_stop = stop(
                Some(&n.name),
                "wait-policy",
                format!(
                    "{}: still no module loaded after its installer pod was restarted",
                    n.name
                ),
                Next::Resume,
            );
        }
    } else {
        d.waiting.push(Wait {
            node: n.name.clone(),
            kind: WaitKind::Policy,
            why: "the new installer pod to load the module".into(),
        });
    }
}

/// The drain of a cordoned node: each pod still on it evicted (one with no controller stops
/// the run: evicted, it would be gone for good), waited for until the drain timeout (`late`).
/// True while the node is not drained yet (or its pods were not listed).
fn draining(
    obs: &Observation,
    n: &NodeObs,
    late: bool,
    d: &mut Decision,
    node_stop: &mut Option<Stop>,
) -> bool {
    let Some(_) = &obs.pods else {
        // The loop lists the pods when a node is in flight.
        d.waiting.push(Wait {
            node: n.name.clone(),
            kind: WaitKind::Drain,
            why: "its pods to be listed".into(),
        });
        return true;
    };
    let pods = obs.evictable(&n.name);
    if pods.is_empty() {
        return false;
    }
    if late {
        let names: Vec<String> = pods
            .iter()
            .map(|p| format!("{}/{}", p.namespace, p.name))
            .collect();
        *node_stop = node_stop.take().or(stop(Some(&n.name), "drain", format!("{}: the drain did not finish within the drain timeout: {} still on it (a PodDisruptionBudget that allows no disruption?); the node stays cordoned", n.name, names.join(", ")), Next::Resume));
        return true;
    }
    for p in pods.iter().filter(|p| !p.deleting) {
        if p.owner.is_none() {
            *node_stop = node_stop.take().or(stop(Some(&n.name), "drain", format!("{}: pod {}/{} has no controller: evicted, it would be gone for good; move or delete it yourself, then run this again", n.name, p.namespace, p.name), Next::Resume));
            continue;
        }
        d.actions.push(Action::Evict {
            node: n.name.clone(),
            namespace: p.namespace.clone(),
            pod: p.name.clone(),
            uid: p.uid.clone(),
        });
    }
    d.waiting.push(Wait {
        node: n.name.clone(),
        kind: WaitKind::Drain,
        why: format!("{} pod(s) to leave the node", pods.len()),
    });
    true
}

/// A node to reboot once more: still cordoned (again, if someone uncordoned it since) and
/// drained first.
fn again(
    obs: &Observation,
    n: &NodeObs,
    via: RebootVia,
    late: bool,
    d: &mut Decision,
    node_stop: &mut Option<Stop>,
) {
    if !n.unschedulable {
        d.actions.push(Action::Cordon {
            node: n.name.clone(),
            uid: n.uid.clone(),
            mark: true,
        });
        return;
    }
    if draining(obs, n, late, d, node_stop) {
        return;
    }
    d.actions.push(reboot(n, via, node_stop));
}

fn reboot(n: &NodeObs, via: RebootVia, node_stop: &mut Option<Stop>) -> Action {
    let (region, instance) = n.instance().unwrap_or(("", ""));
    if via == RebootVia::Ecs && instance.is_empty() && node_stop.is_none() {
        *node_stop = stop(
            Some(&n.name),
            "reboot",
            format!(
                "{}: cordoned and drained; its spec.providerID '{}' names no ECS instance (<region>.<instance id>): reboot it yourself now (console or sudo reboot), then run this again: it finds the node at the goal and uncordons it",
                n.name,
                n.provider_id.as_deref().unwrap_or("")
            ),
            Next::Resume,
        );
    }
    Action::Reboot {
        node: n.name.clone(),
        uid: n.uid.clone(),
        boot_id: n.boot_id.clone(),
        provider_id: n.provider_id.clone().unwrap_or_default(),
        region: region.to_string(),
        instance: instance.to_string(),
    }
}

/// Nothing safe is left: the stop that names why, with the next step that fits.
fn stuck(d: &Decision) -> Stop {
    let of = |k: Kind| -> Vec<&NodeVerdict> { d.nodes.iter().filter(|v| v.verdict == k).collect() };
    let list = |vs: &[&NodeVerdict]| -> String {
        vs.iter()
            .map(|v| format!("{} ({})", v.name, v.why))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let downgrades = of(Kind::RefusedDowngrade);
    if !downgrades.is_empty() {
        return Stop {
            node: Some(downgrades[0].name.clone()),
            step: "downgrade",
            message: format!(
                "refused: a restart would downgrade cGPU on {}",
                list(&downgrades)
            ),
            next: Next::Downgrade,
        };
    }
    let waiting: Vec<&NodeVerdict> = d
        .nodes
        .iter()
        .filter(|v| matches!(v.verdict, Kind::Down | Kind::Held))
        .collect();
    let others = of(Kind::NotOurs);
    let mut parts = Vec::new();
    if !waiting.is_empty() {
        parts.push(format!("down or held: {}", list(&waiting)));
    }
    if !others.is_empty() {
        parts.push(format!("not restarted by this run: {}", list(&others)));
    }
    let first = waiting.first().or(others.first()).map(|v| v.name.clone());
    Stop {
        node: first,
        step: "done-check",
        message: format!(
            "the run did what it may, and not every GPU-sharing node shows the goal: {}",
            parts.join("; ")
        ),
        next: if waiting.is_empty() {
            Next::OtherNodes
        } else {
            Next::WaitNodes
        },
    }
}
