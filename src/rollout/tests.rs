//! The decision core as a table and by properties over generated observations: whatever the
//! cluster shows, the actions keep the rollout's invariants.

use std::collections::BTreeMap;

use proptest::prelude::*;
use semver::Version;

use super::decide::{Action, Config, Goal, Kind, Memory, Next, decide};
use super::observe::{
    BOOT_BEFORE, CORDON_MARK, InstallerObs, KURED_REBOOTING, Module, NVIDIA_UPGRADE, NodeObs,
    Observation, PodObs, REBOOT_AT, STATE, State,
};
use crate::checklist::model::Strategy as UpdateStrategy;

const IMAGE: &str =
    "registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-3c9d1e7-aliyun";
const NOW: i64 = 1_796_650_000;

fn goal() -> Goal {
    Goal {
        policy: 2,
        version: Some(Version::new(1, 5, 10)),
        tag: Some("v1.5.10-3c9d1e7-aliyun".into()),
    }
}

fn config(max: usize) -> Config {
    Config {
        max_unavailable: max,
        include_cordoned: false,
        allow_downgrade: false,
        reboot_timeout: 900,
        ready_timeout: 600,
        pod_timeout: 600,
        policy_timeout: 600,
        drain_timeout: 600,
        pinned: None,
        reboot_via: super::decide::RebootVia::Ecs,
    }
}

fn installer(name: &str, schedule: &str, policy: &str) -> InstallerObs {
    InstallerObs {
        name: name.into(),
        policy: Some(policy.into()),
        image: IMAGE.into(),
        version: Some("1.5.10".into()),
        strategy: UpdateStrategy::OnDelete,
        pod_selector: Some(vec![("name".into(), name.into())]),
        node_selector: vec![("ack.node.gpu.schedule".into(), schedule.into())],
        generation: 3,
    }
}

/// One node as the generator draws it.
#[derive(Debug, Clone)]
struct Spec {
    /// 0 no module, 1 the old policy, 2 at the goal, 3 a newer cGPU at the old policy,
    /// 4 unreadable, 5 no installer pod.
    module: u8,
    ready: bool,
    unschedulable: bool,
    marked: bool,
    /// 0 none, 1 cordoned, 2 rebooting (same boot, recent), 3 rebooting (boot changed),
    /// 4 done for this goal, 5 rebooting (same boot, long ago).
    state: u8,
    pods: u8,
    pod_current: bool,
    pod_ready: bool,
    /// 0 none, 1 NVIDIA upgrade, 2 kured's lock, 3 kured rebooting.
    actor: u8,
    core: bool,
    provider_ok: bool,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        (
            0u8..6,
            any::<bool>(),
            prop::bool::weighted(0.2),
            prop::bool::weighted(0.3),
        ),
        (
            0u8..6,
            0u8..3,
            prop::bool::weighted(0.8),
            prop::bool::weighted(0.8),
        ),
        (
            prop::bool::weighted(0.8).prop_map(|b| if b { 0 } else { 1 }),
            0u8..4,
            prop::bool::weighted(0.15),
            prop::bool::weighted(0.9),
        ),
    )
        .prop_map(
            |(
                (module, ready, unschedulable, marked),
                (state, pods, pod_current, pod_ready),
                (a, actor, core, provider_ok),
            )| Spec {
                module,
                ready: ready || module == 2,
                unschedulable: unschedulable || marked,
                marked,
                state,
                pods,
                pod_current,
                pod_ready,
                actor: if a == 0 { 0 } else { actor },
                core,
                provider_ok,
            },
        )
}

fn build(specs: &[Spec]) -> Observation {
    let mut obs = Observation {
        now: NOW,
        installers: vec![
            installer("cgpu-installer", "cgpu", "2"),
            installer("cgpu-core-installer", "core_mem", "2"),
        ],
        pods: Some(Vec::new()),
        ..Default::default()
    };
    for (i, s) in specs.iter().enumerate() {
        let name = format!("cn-hangzhou.10.0.1.{}", 11 + i);
        let mut n = NodeObs {
            name: name.clone(),
            uid: format!("uid-{i}"),
            provider_id: Some(if s.provider_ok {
                format!("cn-hangzhou.i-bp1aaaaaaaaaaaaa{i:02}")
            } else {
                "cn-hangzhou".into()
            }),
            ready: s.ready,
            unschedulable: s.unschedulable,
            boot_id: format!("boot-{i}-b"),
            gpu_mem: 100,
            ..Default::default()
        };
        n.labels.insert(
            "ack.node.gpu.schedule".into(),
            if s.core { "core_mem" } else { "cgpu" }.into(),
        );
        if s.marked {
            n.annotations.insert(CORDON_MARK.into(), "true".into());
        }
        match s.state {
            1 => {
                n.annotations.insert(STATE.into(), "cordoned".into());
            }
            2 | 3 | 5 => {
                n.annotations
                    .insert(STATE.into(), "rebooting into policy 2".into());
                let before = if s.state == 3 {
                    format!("boot-{i}-a")
                } else {
                    n.boot_id.clone()
                };
                n.annotations.insert(BOOT_BEFORE.into(), before);
                let at = if s.state == 5 { NOW - 5000 } else { NOW - 10 };
                n.annotations
                    .insert(REBOOT_AT.into(), crate::date::rfc3339(at));
            }
            4 => {
                n.annotations.insert(STATE.into(), goal().done_state());
            }
            _ => {}
        }
        match s.actor {
            1 => {
                n.labels
                    .insert(NVIDIA_UPGRADE.into(), "upgrade-required".into());
            }
            2 => {
                obs.kured.insert(name.clone());
            }
            3 => {
                n.annotations.insert(KURED_REBOOTING.into(), "1".into());
            }
            _ => {}
        }
        let inst = if s.core {
            "cgpu-core-installer"
        } else {
            "cgpu-installer"
        };
        if s.module != 5 {
            obs.installer_pods
                .entry(inst.into())
                .or_default()
                .push(PodObs {
                    namespace: "kube-system".into(),
                    name: format!("{inst}-{i}"),
                    uid: format!("pod-{i}"),
                    node: name.clone(),
                    owner: Some(("DaemonSet".into(), inst.into())),
                    ready: s.pod_ready,
                    policy: Some(if s.pod_current { "2" } else { "1" }.into()),
                    image: IMAGE.into(),
                    ..Default::default()
                });
            let state = match s.module {
                0 => Ok(State::NoModule),
                1 => Ok(State::Loaded(Module {
                    version: "1.5.10".into(),
                    gpus: vec![("0".into(), "1".into())],
                })),
                2 => Ok(State::Loaded(Module {
                    version: "1.5.10".into(),
                    gpus: vec![("0".into(), "2".into()), ("1".into(), "2".into())],
                })),
                3 => Ok(State::Loaded(Module {
                    version: "1.5.11".into(),
                    gpus: vec![("0".into(), "1".into())],
                })),
                _ => Err("exec failed".to_string()),
            };
            if s.ready || s.module == 2 {
                obs.modules.insert(name.clone(), state);
            }
        }
        for p in 0..s.pods {
            obs.pods.as_mut().unwrap().push(PodObs {
                namespace: "default".into(),
                name: format!("w-{i}-{p}"),
                uid: format!("w-{i}-{p}"),
                node: name.clone(),
                owner: Some(("ReplicaSet".into(), "w".into())),
                gpu_mem: 1,
                ..Default::default()
            });
        }
        obs.nodes.push(n);
    }
    obs
}

/// Nodes a run has in flight (cordoned by it, not finished).
fn in_flight(obs: &Observation) -> usize {
    obs.gpu_sharing()
        .filter(|n| super::decide::phase(n).is_some())
        .count()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn every_decision_keeps_the_invariants(
        specs in prop::collection::vec(spec(), 1..8),
        max in 1usize..4,
        include_cordoned in any::<bool>(),
        allow_downgrade in any::<bool>(),
    ) {
        let obs = build(&specs);
        let mut c = config(max);
        c.include_cordoned = include_cordoned;
        c.allow_downgrade = allow_downgrade;
        let d = decide(&obs, &goal(), &c, &Memory::default());
        let verdict: BTreeMap<&str, Kind> = d.nodes.iter().map(|v| (v.name.as_str(), v.verdict)).collect();
        let node = |name: &str| obs.nodes.iter().find(|n| n.name == name).unwrap();
        // A stop acts on nothing.
        if d.stop.is_some() {
            prop_assert!(d.actions.is_empty(), "{:?}", d.actions);
        }
        // Never more down than the budget, counting what is down already.
        let cordons: Vec<&Action> = d.actions.iter().filter(|a| matches!(a, Action::Cordon { .. }) && super::decide::phase(node(a.node())).is_none()).collect();
        let cap = if d.canary { 1 } else { max };
        prop_assert!(in_flight(&obs) + cordons.len() <= cap.max(in_flight(&obs)), "{} in flight, cordons {:?}, cap {cap}", in_flight(&obs), cordons);
        for a in &d.actions {
            let n = node(a.node());
            let k = verdict[a.node()];
            // Never touch a converged node, but to finish it.
            if k == Kind::Converged {
                prop_assert!(matches!(a, Action::Finish { .. }), "{a:?} on a converged node");
            }
            // Only this installer's nodes, none another actor holds, none refused.
            prop_assert!(!matches!(k, Kind::Held | Kind::NotOurs | Kind::RefusedDowngrade | Kind::Unreadable), "{a:?} on a node judged {k:?}");
            prop_assert!(!specs[obs.nodes.iter().position(|x| x.name == n.name).unwrap()].core, "{a:?} on a core_mem node");
            match a {
                Action::Finish { uncordon, .. } => {
                    // Only uncordon what it cordoned.
                    prop_assert_eq!(*uncordon, n.annotations.contains_key(CORDON_MARK));
                    prop_assert_eq!(k, Kind::Converged);
                }
                Action::Reboot { instance, region, .. } => {
                    // Only the instance the live providerID names, a node cordoned and drained.
                    let (r, i) = n.instance().unwrap_or(("", ""));
                    prop_assert_eq!((region.as_str(), instance.as_str()), (r, i));
                    prop_assert!(n.unschedulable && obs.evictable(&n.name).is_empty(), "reboot of {} not drained", n.name);
                    prop_assert!(n.ready || super::decide::phase(n) == Some(super::decide::Phase::Rebooting));
                    // Never into an older cGPU than it runs, unless allowed.
                    if let Some(Ok(State::Loaded(m))) = obs.modules.get(&n.name) {
                        let have = Version::parse(&m.version).unwrap();
                        prop_assert!(have <= Version::new(1, 5, 10) || allow_downgrade, "reboot from {have}");
                    }
                }
                Action::Cordon { mark, .. } => {
                    prop_assert!(n.ready, "cordon of a NotReady node");
                    prop_assert_eq!(*mark, !n.unschedulable);
                    if n.unschedulable && super::decide::phase(n).is_none() {
                        prop_assert!(include_cordoned);
                    }
                    if let Some(Ok(State::Loaded(m))) = obs.modules.get(&n.name) {
                        prop_assert!(Version::parse(&m.version).unwrap() <= Version::new(1, 5, 10) || allow_downgrade);
                    }
                }
                Action::Evict { .. } => prop_assert!(n.unschedulable, "evict from a schedulable node"),
                Action::DeletePod { .. } => {}
            }
        }
        // Done only when every node shows the goal and none is in flight.
        if d.done {
            prop_assert!(d.nodes.iter().all(|v| v.verdict == Kind::Converged && v.phase.is_none()));
        }
    }
}

#[test]
fn a_downgrade_of_the_daemonset_is_refused_on_the_nodes_that_run_newer() {
    // A `helm upgrade` without --reuse-values put the chart default (1.5.3) in the DaemonSet;
    // the nodes run 1.5.10 with the old policy. The goal is what the DaemonSet deploys.
    let mut obs = build(&[Spec {
        module: 1,
        ready: true,
        unschedulable: false,
        marked: false,
        state: 0,
        pods: 0,
        pod_current: true,
        pod_ready: true,
        actor: 0,
        core: false,
        provider_ok: true,
    }]);
    obs.installers[0].image = IMAGE.replace("v1.5.10-3c9d1e7", "v1.5.3-8d3fc1b");
    obs.installers[0].version = Some("1.5.3".into());
    let mut g = goal();
    g.version = Some(Version::new(1, 5, 3));
    g.tag = Some("v1.5.3-8d3fc1b-aliyun".into());
    let d = decide(&obs, &g, &config(1), &Memory::default());
    assert!(d.actions.is_empty(), "{:?}", d.actions);
    assert_eq!(
        d.nodes[0].verdict,
        Kind::RefusedDowngrade,
        "{:?}",
        d.nodes[0]
    );
    let stop = d.stop.unwrap();
    assert_eq!((stop.step, stop.next), ("downgrade", Next::Downgrade));
    let mut c = config(1);
    c.allow_downgrade = true;
    let d = decide(&obs, &g, &c, &Memory::default());
    assert!(
        matches!(d.actions[..], [Action::Cordon { .. }]),
        "{:?}",
        d.actions
    );
}

#[test]
fn a_daemonset_that_deploys_another_tag_stops_before_any_change() {
    let mut obs = build(&[Spec {
        module: 1,
        ready: true,
        unschedulable: false,
        marked: false,
        state: 0,
        pods: 1,
        pod_current: true,
        pod_ready: true,
        actor: 0,
        core: false,
        provider_ok: true,
    }]);
    obs.installers[0].image = IMAGE.replace("v1.5.10-3c9d1e7", "v1.5.3-8d3fc1b");
    let d = decide(&obs, &goal(), &config(1), &Memory::default());
    assert!(d.actions.is_empty());
    let stop = d.stop.unwrap();
    assert_eq!(stop.step, "installer-policy");
    assert!(stop.message.contains("v1.5.3-8d3fc1b"), "{}", stop.message);
    // And the DaemonSet changing during the run (the pin) stops it too.
    let mut obs = build(&[Spec {
        module: 1,
        ready: true,
        unschedulable: false,
        marked: false,
        state: 0,
        pods: 0,
        pod_current: true,
        pod_ready: true,
        actor: 0,
        core: false,
        provider_ok: true,
    }]);
    let mut c = config(1);
    let mut pinned = obs.installers[0].clone();
    pinned.strategy = UpdateStrategy::RollingUpdate;
    c.pinned = Some(pinned);
    let d = decide(&obs, &goal(), &c, &Memory::default());
    assert_eq!(d.stop.unwrap().next, Next::Replan);
    obs.installers[0].policy = Some("1".into());
    let d = decide(&obs, &goal(), &config(1), &Memory::default());
    assert_eq!(d.stop.unwrap().next, Next::Apply);
}

#[test]
fn a_node_in_flight_is_taken_up_where_it_stopped() {
    let base = Spec {
        module: 1,
        ready: true,
        unschedulable: true,
        marked: true,
        state: 1,
        pods: 2,
        pod_current: true,
        pod_ready: true,
        actor: 0,
        core: false,
        provider_ok: true,
    };
    // Cordoned with pods: they are evicted, and nothing else goes down (the canary's budget).
    let fresh = Spec {
        marked: false,
        unschedulable: false,
        state: 0,
        pods: 0,
        ..base.clone()
    };
    let obs = build(&[base.clone(), fresh.clone()]);
    let d = decide(&obs, &goal(), &config(3), &Memory::default());
    assert_eq!(d.actions.len(), 2, "{:?}", d.actions);
    assert!(d.actions.iter().all(|a| matches!(a, Action::Evict { .. })));
    // Drained, its installer pod from the old template: deleted first, then rebooted.
    let obs = build(&[Spec {
        pods: 0,
        pod_current: false,
        ..base.clone()
    }]);
    let d = decide(&obs, &goal(), &config(1), &Memory::default());
    assert!(
        matches!(d.actions[..], [Action::DeletePod { .. }]),
        "{:?}",
        d.actions
    );
    let obs = build(&[Spec {
        pods: 0,
        ..base.clone()
    }]);
    let d = decide(&obs, &goal(), &config(1), &Memory::default());
    assert!(
        matches!(d.actions[..], [Action::Reboot { .. }]),
        "{:?}",
        d.actions
    );
    // Its reboot asked for a moment ago (by a run killed since): waited for, never asked twice.
    let obs = build(&[Spec {
        pods: 0,
        state: 2,
        ..base.clone()
    }]);
    let d = decide(&obs, &goal(), &config(1), &Memory::default());
    assert!(d.actions.is_empty(), "{:?}", d.actions);
    assert_eq!(d.waiting.len(), 1);
    // Asked long ago and the boot id never changed: asked again by a later run; the run that
    // asked stops instead.
    let obs = build(&[Spec {
        pods: 0,
        state: 5,
        ..base.clone()
    }]);
    let d = decide(&obs, &goal(), &config(1), &Memory::default());
    assert!(
        matches!(d.actions[..], [Action::Reboot { .. }]),
        "{:?}",
        d.actions
    );
    let mut m = Memory::default();
    m.rebooted.insert(obs.nodes[0].name.clone());
    let d = decide(&obs, &goal(), &config(1), &m);
    assert_eq!(d.stop.unwrap().step, "wait-boot-id");
    // Back at the goal: finished (uncordoned, as it carries the mark); then the next one.
    let obs = build(&[
        Spec {
            module: 2,
            pods: 0,
            state: 3,
            ..base.clone()
        },
        fresh,
    ]);
    let d = decide(&obs, &goal(), &config(1), &Memory::default());
    assert!(
        matches!(d.actions[..], [Action::Finish { uncordon: true, .. }]),
        "{:?}",
        d.actions
    );
    assert!(!d.done);
}

#[test]
fn nothing_safe_left_names_the_nodes_and_the_next_step() {
    let down = Spec {
        module: 1,
        ready: false,
        unschedulable: false,
        marked: false,
        state: 0,
        pods: 0,
        pod_current: true,
        pod_ready: true,
        actor: 0,
        core: false,
        provider_ok: true,
    };
    let held = Spec {
        ready: true,
        actor: 1,
        ..down.clone()
    };
    let obs = build(&[down, held]);
    let d = decide(&obs, &goal(), &config(1), &Memory::default());
    assert!(d.actions.is_empty());
    let s = d.stop.unwrap();
    assert_eq!(s.next, Next::WaitNodes);
    assert!(
        s.message.contains("10.0.1.11") && s.message.contains("10.0.1.12"),
        "{}",
        s.message
    );
    // No GPU-sharing node at all: done, said plainly by the front ends.
    let d = decide(&build(&[]), &goal(), &config(1), &Memory::default());
    assert!(d.done && d.nodes.is_empty());
}

/// A module as drawn for the agreement property: a version written in any of the ways a tag or
/// /proc shows it, and GPUs at policies 1 and 2.
fn module() -> impl Strategy<Value = Module> {
    (
        prop::sample::select(vec![
            "1.5.10",
            "v1.5.10",
            " 1.5.10",
            "1.5.9",
            "1.5.11",
            "1.5.10-rc1",
            "x",
        ]),
        prop::collection::vec(prop::sample::select(vec!["1", "2"]), 1..4),
    )
        .prop_map(|(v, ps)| Module {
            version: v.into(),
            gpus: ps
                .into_iter()
                .enumerate()
                .map(|(g, p)| (g.to_string(), p.to_string()))
                .collect(),
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// `status` and `rollout` read the same node alike: converged for one iff for the other,
    /// with the goal the DaemonSet asks (policy 2, cGPU 1.5.10).
    #[test]
    fn status_and_rollout_judge_a_module_alike(m in module(), tag_v in prop::sample::select(vec!["1.5.10", "v1.5.10"])) {
        let mut obs = build(&[Spec {
            module: 2,
            ready: true,
            unschedulable: false,
            marked: false,
            state: 0,
            pods: 0,
            pod_current: true,
            pod_ready: true,
            actor: 0,
            core: false,
            provider_ok: true,
        }]);
        let node = obs.nodes[0].name.clone();
        obs.modules.insert(node, Ok(State::Loaded(m.clone())));
        let mut g = goal();
        g.tag = None;
        let d = decide(&obs, &g, &config(1), &Memory::default());
        let rollout = d.nodes[0].verdict;
        let asks = crate::status::Asks::new("cgpu-installer", Some("2"), Some(tag_v));
        let status = crate::status::judge(&asks, Some("2"), &State::Loaded(m.clone()));
        prop_assert_eq!(
            rollout == Kind::Converged,
            status == crate::status::Verdict::Converged,
            "{:?}: rollout {:?}, status {:?}", m, rollout, status
        );
    }
}
