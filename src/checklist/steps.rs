//! The steps the three printers share: the per-node sequence, the preflight checks, the
//! kubectl commands and the header, built once from the [`Checklist`].

use super::model::{Action, Branch, Checklist, Other, OtherKind, Step, Strategy, Target, core};
use super::shell;

pub const NSENTER: &str = "nsenter -t 1 -i -p -n -u -m --";

/// The annotation that records "this run cordoned the node" (kured keeps the same fact, the
/// node's `unschedulable` before its drain, in its lock annotation): only such a node is
/// uncordoned, and a re-run after a stop knows the cordon is its own.
pub const CORDON_MARK: &str = "cgpu-lint/cordoned";

/// The cluster lock: one `coordination.k8s.io/v1` Lease in kube-system for every cgpu-lint
/// rollout of a cluster (docs/runbook.md, "The cluster lock").
pub const LEASE_NAME: &str = "cgpu-lint-restarts";

/// Read the node's cGPU state in one exec (run by `sh -c` in the node's namespaces): `no-module`
/// when the module is not loaded, else `version X.Y.Z` and one `/proc/cgpu_km/<gpu>/policy N`
/// line per GPU. A file that cannot be read fails the command (fail closed).
pub const READ_STATE: &str = r#"set -e; if [ ! -e /proc/cgpu_km/version ]; then echo no-module; exit 0; fi; v=$(cat /proc/cgpu_km/version); echo "version $v"; for f in /proc/cgpu_km/[0-9]*/policy; do [ -e "$f" ] || continue; p=$(cat "$f"); echo "$f $p"; done"#;

/// Timeouts (seconds) of the waits; the shell script takes overrides from the environment.
pub const REBOOT_TIMEOUT: u32 = 900;
pub const READY_TIMEOUT: u32 = 900;
pub const POD_TIMEOUT: u32 = 600;
pub const POLICY_TIMEOUT: u32 = 600;
pub const POLL_INTERVAL: u32 = 10;

/// The start of every kubectl command of the plan: `kubectl --context C [--kubeconfig K]`,
/// the one place it is built (the shell script builds the same words from the same fields).
pub fn kubectl_argv(list: &Checklist) -> Vec<String> {
    let id = &list.options.identity;
    let mut argv = vec!["kubectl".to_string()];
    if let Some(c) = &id.context {
        argv.extend(["--context".into(), c.clone()]);
    }
    if let Some(k) = &id.kubeconfig {
        argv.extend(["--kubeconfig".into(), k.clone()]);
    }
    argv
}

/// [`kubectl_argv`] as shell words, for the commands markdown and JSON show.
pub fn kubectl_prefix(list: &Checklist) -> String {
    kubectl_argv(list)
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if i == 0 || w.starts_with("--") {
                w.clone()
            } else {
                shell::quote(w)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `-l` of the installer's pods: the DaemonSet's own selector.
pub fn selector_text(sel: &[(String, String)]) -> String {
    sel.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn pod_of(list: &Checklist, label: &str, node: &str) -> String {
    format!(
        "$({} -n kube-system get pod -l {label} --field-selector spec.nodeName={node} -o jsonpath='{{.items[0].metadata.name}}')",
        kubectl_prefix(list)
    )
}

fn read_state_command(list: &Checklist, label: &str, node: &str) -> String {
    format!(
        "{} -n kube-system exec {} -- {NSENTER} sh -c '{READ_STATE}'",
        kubectl_prefix(list),
        pod_of(list, label, node)
    )
}

/// What "converted" means on a node: every GPU at the target policy (and the target module
/// version on an upgrade).
pub fn target_text(list: &Checklist) -> String {
    let p = list.desired.policy;
    match target_version(list) {
        Some(v) => format!("every GPU shows policy {p} and the module version is {v}"),
        None => format!("every GPU shows policy {p}"),
    }
}

/// The target of a GPU-sharing node the run only verifies (core_mem, legacy, skipped): the
/// cluster's one policy. Another installer (cgpu-core-installer) may run another version, so
/// the version is not part of it.
pub fn policy_target_text(list: &Checklist) -> String {
    format!("every GPU shows policy {}", list.desired.policy)
}

/// The cGPU version a node at the target runs: the DaemonSet's after the change, whenever the
/// plan knows it (a node whose module runs another version, loaded by an older or a drifted
/// installer, is not at the target even when its policy is). The one definition the markdown,
/// JSON and the script judge by.
pub fn target_version(list: &Checklist) -> Option<&semver::Version> {
    core(&list.desired)
}

/// The fields the script reads from a node in one call (`read_node`), `|`-separated, in order.
pub const NODE_FIELDS: [&str; 8] = [
    "uid",
    "provider_id",
    "ready",
    "unschedulable",
    "cordon_mark",
    "boot_id",
    "nvidia_upgrade_state",
    "kured_reboot_in_progress",
];

/// The fields the script reads from each installer pod of a node (`installer_pod`), one line
/// per pod, `|`-separated, in order.
pub const POD_FIELDS: [&str; 5] = ["name", "deletion_timestamp", "policy", "image", "ready"];

/// The NVIDIA GPU Operator's driver upgrade state of a node (a label): set and not
/// `upgrade-done`, the operator is cordoning, draining or restarting the node itself.
pub const NVIDIA_UPGRADE_STATE: &str = "nvidia.com/gpu-driver-upgrade-state";

/// kured's node annotation while it reboots the node.
pub const KURED_IN_PROGRESS: &str = "weave.works/kured-reboot-in-progress";

/// A label or annotation key inside a kubectl JSONPath (`.` escaped).
fn jsonpath_key(key: &str) -> String {
    key.replace('.', "\\.")
}

/// `-o` of the script's node read (`read_node`), as kubectl receives it.
pub fn node_jsonpath() -> String {
    format!(
        "jsonpath={{.metadata.uid}}|{{.spec.providerID}}|{{.status.conditions[?(@.type==\"Ready\")].status}}|{{.spec.unschedulable}}|{{.metadata.annotations.{CORDON_MARK}}}|{{.status.nodeInfo.bootID}}|{{.metadata.labels.{NVIDIA_UPGRADE_STATE}}}|{{.metadata.annotations.{KURED_IN_PROGRESS}}}",
        NVIDIA_UPGRADE_STATE = jsonpath_key(NVIDIA_UPGRADE_STATE),
        KURED_IN_PROGRESS = jsonpath_key(KURED_IN_PROGRESS)
    )
}

/// `-o` of the script's installer-pod listing (`installer_pod`), as kubectl receives it.
pub const POD_JSONPATH: &str = r#"jsonpath={range .items[*]}{.metadata.name}{"|"}{.metadata.deletionTimestamp}{"|"}{.spec.containers[0].env[?(@.name=="POLICY")].value}{"|"}{.spec.containers[0].image}{"|"}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}"#;

/// The exact commands of the script for node `t` (JSON `actions`), built from
/// [`kubectl_argv`] like every kubectl call of the script.
struct Argv<'a> {
    list: &'a Checklist,
    t: &'a Target,
    sel: String,
}

impl Argv<'_> {
    fn k(&self, words: &[&str]) -> Vec<String> {
        let mut v = kubectl_argv(self.list);
        v.extend(words.iter().map(|w| w.to_string()));
        v
    }

    fn fields(names: &[&str]) -> serde_json::Value {
        serde_json::json!(names)
    }

    /// `read_node`: the node's identity, Ready, cordon, mark and boot id in one read.
    fn check_node(&self, action: &'static str) -> Action {
        let mut equal = serde_json::Map::new();
        if let Some(u) = &self.t.uid {
            equal.insert("uid".into(), u.clone().into());
        }
        if let Some(p) = &self.t.provider_id {
            equal.insert("provider_id".into(), p.clone().into());
        }
        Action {
            action,
            argv: Some(self.k(&["get", "node", &self.t.name, "-o", &node_jsonpath()])),
            expect: serde_json::json!({
                "exit": 0, "split": "|", "fields": Self::fields(&NODE_FIELDS), "equal": equal
            }),
            only_if: None,
        }
    }

    fn pods(&self) -> Vec<String> {
        let field = format!("spec.nodeName={}", self.t.name);
        self.k(&[
            "-n",
            "kube-system",
            "get",
            "pod",
            "-l",
            &self.sel,
            "--field-selector",
            &field,
            "-o",
            POD_JSONPATH,
        ])
    }

    /// `installer_pod`: the node's installer pod that is not being deleted, recorded as `{pod}`.
    fn find_pod(&self) -> Action {
        Action {
            action: "find-installer-pod",
            argv: Some(self.pods()),
            expect: serde_json::json!({
                "exit": 0, "split": "|", "fields": Self::fields(&POD_FIELDS),
                "where": {"deletion_timestamp": ""}, "record": {"pod": "name"}
            }),
            only_if: None,
        }
    }

    fn exec_read_state(&self) -> Vec<String> {
        let mut v = self.k(&["-n", "kube-system", "exec", "{pod}", "--"]);
        v.extend(NSENTER.split(' ').map(str::to_string));
        v.extend(["sh".into(), "-c".into(), READ_STATE.into()]);
        v
    }

    fn delete_pod(&self, action: &'static str, only_if: Option<&'static str>) -> Action {
        Action {
            action,
            argv: Some(self.k(&["-n", "kube-system", "delete", "pod", "{pod}", "--wait=true"])),
            expect: serde_json::json!({"exit": 0}),
            only_if,
        }
    }

    fn target(&self) -> serde_json::Value {
        let list = self.list;
        let version = match target_version(list) {
            Some(v) => serde_json::Value::from(v.to_string()),
            None => serde_json::Value::Null,
        };
        serde_json::json!({"policy_files": list.desired.policy, "version": version})
    }

    fn wait_pod(&self) -> Action {
        Action {
            action: "wait-installer-pod",
            argv: Some(self.pods()),
            expect: serde_json::json!({
                "split": "|", "fields": Self::fields(&POD_FIELDS),
                "where": {"deletion_timestamp": ""},
                "equal": {"ready": "True", "policy": self.list.desired.policy.to_string(), "image": "{ds_image}"},
                "repeat": {"timeout_s": POD_TIMEOUT, "poll_s": POLL_INTERVAL}
            }),
            only_if: None,
        }
    }

    fn wait_policy(&self) -> Action {
        let mut expect = self.target();
        expect["repeat"] =
            serde_json::json!({"timeout_s": POLICY_TIMEOUT, "poll_s": POLL_INTERVAL});
        Action {
            action: "wait-policy",
            argv: Some(self.exec_read_state()),
            expect,
            only_if: None,
        }
    }

    fn uncordon(&self) -> Vec<Action> {
        let n = &self.t.name;
        let unmark = format!("{CORDON_MARK}-");
        vec![
            Action {
                action: "uncordon",
                argv: Some(self.k(&["uncordon", n])),
                expect: serde_json::json!({"exit": 0}),
                only_if: Some("marked"),
            },
            Action {
                action: "unmark",
                argv: Some(self.k(&["annotate", "node", n, &unmark])),
                expect: serde_json::json!({"exit": 0}),
                only_if: Some("marked"),
            },
        ]
    }
}

/// The per-node steps, in order: read the state, decide, then the steps of each branch
/// (markdown and JSON print them; `cgpu-lint rollout` takes the same steps, step ids included,
/// with the decision made at run time).
pub fn steps(list: &Checklist, t: &Target) -> Vec<Step> {
    let sel = selector_text(&list.pod_selector);
    let mut b = NodeSteps {
        list,
        t,
        n: &t.name,
        k: kubectl_prefix(list),
        target: target_text(list),
        a: Argv {
            list,
            t,
            sel: sel.clone(),
        },
        sel,
        out: Vec::new(),
    };
    b.read_and_decide();
    b.no_module();
    b.take_down();
    b.bring_up();
    b.out
}

/// The steps of one node, built branch by branch (the order is the printers' order: read and
/// decide, then each branch's steps).
struct NodeSteps<'a> {
    list: &'a Checklist,
    t: &'a Target,
    n: &'a str,
    /// The kubectl prefix of the plan (`kubectl --context …`).
    k: String,
    target: String,
    sel: String,
    a: Argv<'a>,
    out: Vec<Step>,
}

impl NodeSteps<'_> {
    fn push(&mut self, branch: Branch, mut s: Step, actions: Vec<Action>) {
        s.branch = branch;
        s.actions = actions;
        self.out.push(s);
    }

    fn uncordon_mark(&self) -> String {
        let (k, n) = (&self.k, self.n);
        format!("{k} uncordon {n} && {k} annotate node {n} {CORDON_MARK}-")
    }

    fn wait_pod(&self, s: &str) -> Step {
        let (k, n, sel) = (&self.k, self.n, &self.sel);
        Step::new(
            "wait-installer-pod",
            format!(
                "{s}wait for the node's installer pod to be Ready (it loads the module with the new POLICY)"
            ),
            Some(format!(
                "{k} -n kube-system wait --for=condition=Ready pod -l {sel} --field-selector spec.nodeName={n} --timeout={POD_TIMEOUT}s"
            )),
        )
    }

    fn wait_policy(&self, s: &str) -> Step {
        Step::new(
            "wait-policy",
            format!(
                "{s}read the state again every {POLL_INTERVAL} s, at most {} min, until {}",
                POLICY_TIMEOUT / 60,
                self.target
            ),
            Some(read_state_command(self.list, &self.sel, self.n)),
        )
    }

    /// Every node: read the state, then the decision (and, for a node an earlier run cordoned,
    /// the uncordon when it is at the target).
    fn read_and_decide(&mut self) {
        let (list, t, n) = (self.list, self.t, self.n);
        let read = Step::new(
            "read-state",
            "read the node's cGPU state through its installer pod (module version, every /proc/cgpu_km/<gpu>/policy)".into(),
            Some(read_state_command(list, &self.sel, n)),
        );
        let actions = vec![
            self.a.check_node("check-node"),
            self.a.find_pod(),
            Action {
                action: "read-state",
                argv: Some(self.a.exec_read_state()),
                expect: serde_json::json!({"exit": 0}),
                only_if: None,
            },
        ];
        self.push(Branch::Always, read, actions);
        let decide = Step::new(
            "decide",
            format!(
                "decide from what it shows: {} → at the target, nothing to do{}; `no-module` → module not loaded: restart the installer pod only (no cordon, no drain, no reboot); the module loaded and not at the target → cordon, drain, reboot; nothing readable → stop here (never reboot blind)",
                self.target,
                if t.ours {
                    " but undo the cordon an earlier checklist run left"
                } else {
                    ""
                }
            ),
            None,
        );
        let expect = self.a.target();
        self.push(
            Branch::Always,
            decide,
            vec![Action {
                action: "decide",
                argv: None,
                expect,
                only_if: None,
            }],
        );
        if t.ours {
            let step = Step::new(
                "uncordon",
                format!(
                    "at the target: uncordon it (an earlier checklist run cordoned it: annotation {CORDON_MARK}) and drop the annotation"
                ),
                Some(self.uncordon_mark()),
            );
            let actions = self.a.uncordon();
            self.push(Branch::AtTarget, step, actions);
        }
    }

    /// The module is not loaded: restart the installer pod only.
    fn no_module(&mut self) {
        let (list, n, k) = (self.list, self.n, self.k.clone());
        let p = list.desired.policy;
        let restart = Step::new(
            "restart-installer-pod",
            format!(
                "module not loaded: delete the node's installer pod; the DaemonSet recreates it and it loads the module with POLICY \"{p}\" (no drain, no reboot)"
            ),
            Some(format!(
                "{k} -n kube-system delete pod {}",
                pod_of(list, &self.sel, n)
            )),
        );
        let actions = vec![
            self.a.check_node("check-node"),
            self.a.find_pod(),
            self.a.delete_pod("restart-installer-pod", None),
        ];
        self.push(Branch::NoModule, restart, actions);
        let (step, actions) = (
            self.wait_pod("module not loaded: "),
            vec![self.a.wait_pod()],
        );
        self.push(Branch::NoModule, step, actions);
        let (step, actions) = (
            self.wait_policy("module not loaded: "),
            vec![self.a.find_pod(), self.a.wait_policy()],
        );
        self.push(Branch::NoModule, step, actions);
        if self.t.ours {
            let step = Step::new(
                "uncordon",
                format!(
                    "module not loaded: uncordon it (an earlier checklist run cordoned it: annotation {CORDON_MARK}) and drop the annotation"
                ),
                Some(self.uncordon_mark()),
            );
            let actions = self.a.uncordon();
            self.push(Branch::NoModule, step, actions);
        }
    }

    /// Differs: cordon, drain, renew the installer pod, record the boot id, reboot.
    fn take_down(&mut self) {
        let (list, t, n, k, a) = (self.list, self.t, self.n, self.k.clone(), &self.a);
        let sel = &self.sel;
        let p = list.desired.policy;
        let timeout = &list.options.drain_timeout;
        let mut steps: Vec<(Step, Vec<Action>)> = Vec::new();
        let mut push = |_: Branch, s: Step, actions: Vec<Action>| steps.push((s, actions));
        let mark = format!("{CORDON_MARK}=true");
        let cordon_actions = vec![
            a.check_node("check-node"),
            Action {
                action: "mark",
                argv: Some(a.k(&["annotate", "node", n, &mark, "--overwrite"])),
                expect: serde_json::json!({"exit": 0}),
                only_if: Some("schedulable"),
            },
            Action {
                action: "cordon",
                argv: Some(a.k(&["cordon", n])),
                expect: serde_json::json!({"exit": 0}),
                only_if: Some("schedulable"),
            },
        ];
        push(
            Branch::Differs,
            if t.was_cordoned {
                Step::new(
                    "cordon",
                    "differs: already cordoned before this change: leave it so (no annotation: this run will not uncordon it)".into(),
                    None,
                )
            } else {
                Step::new(
                    "cordon",
                    format!(
                        "differs: record that this run cordons it (annotation {CORDON_MARK}), then cordon"
                    ),
                    Some(format!(
                        "{k} annotate node {n} {CORDON_MARK}=true --overwrite && {k} cordon {n}"
                    )),
                )
            },
            cordon_actions,
        );
        let drain_timeout = format!("--timeout={timeout}");
        push(
            Branch::Differs,
            Step::new(
                "drain",
                format!(
                    "differs: drain (a PodDisruptionBudget that blocks it stops the node here after {timeout})"
                ),
                Some(format!(
                    "{k} drain {n} --ignore-daemonsets --delete-emptydir-data --timeout={timeout}"
                )),
            ),
            vec![Action {
                action: "drain",
                argv: Some(a.k(&[
                    "drain",
                    n,
                    "--ignore-daemonsets",
                    "--delete-emptydir-data",
                    &drain_timeout,
                ])),
                expect: serde_json::json!({"exit": 0}),
                only_if: None,
            }],
        );
        let delete = Some(format!(
            "{k} -n kube-system delete pod {}",
            pod_of(list, sel, n)
        ));
        let renew_title = match list.strategy {
            Some(Strategy::OnDelete) => format!(
                "differs: updateStrategy OnDelete: delete the node's installer pod so that the DaemonSet recreates it with POLICY \"{p}\" (a reboot would bring the old pod, and the old policy, back)"
            ),
            Some(Strategy::RollingUpdate) => "differs: if the node's installer pod's POLICY or image is not the DaemonSet's (the rollout has not replaced it), delete it so that the DaemonSet recreates it (a reboot would bring the old pod back)".into(),
            None => "differs: if the node's installer pod's POLICY or image is not the DaemonSet's (always so with updateStrategy OnDelete), delete it so that the DaemonSet recreates it with the new POLICY".into(),
        };
        push(
            Branch::Differs,
            Step::new("renew-installer-pod", renew_title, delete),
            vec![
                a.find_pod(),
                a.delete_pod("renew-installer-pod", Some("pod-differs")),
            ],
        );
        let mut record = a.check_node("record-boot-id");
        record.expect["record"] = serde_json::json!({"boot_id": "boot_id"});
        push(
            Branch::Differs,
            Step::new(
                "record-boot-id",
                "differs: record the node's boot id".into(),
                Some(format!(
                    "BOOT_ID=$({k} get node {n} -o jsonpath='{{.status.nodeInfo.bootID}}')"
                )),
            ),
            vec![record],
        );
        let reboot = match (&t.instance_id, &t.region) {
            (Some(id), Some(r)) => Some(format!(
                "aliyun ecs RebootInstance --RegionId {r} --InstanceId {id}"
            )),
            (Some(id), None) => Some(format!("aliyun ecs RebootInstance --InstanceId {id}")),
            _ => None,
        };
        let reboot_argv = match (&t.instance_id, &t.region) {
            (Some(id), Some(r)) => Some(
                [
                    "aliyun",
                    "ecs",
                    "RebootInstance",
                    "--RegionId",
                    r,
                    "--InstanceId",
                    id,
                ]
                .map(str::to_string)
                .to_vec(),
            ),
            _ => None,
        };
        push(
            Branch::Differs,
            Step::new(
                "reboot",
                format!(
                    "differs: reboot it (only the instance the node's live spec.providerID names); RebootInstance only starts the restart{}",
                    if reboot.is_none() {
                        " (no ECS instance id: reboot it from the console or with `sudo reboot` on the node)"
                    } else {
                        ""
                    }
                ),
                reboot,
            ),
            vec![Action {
                action: "reboot",
                argv: reboot_argv,
                expect: serde_json::json!({"exit": 0}),
                only_if: None,
            }],
        );
        for (s, actions) in steps {
            self.push(Branch::Differs, s, actions);
        }
    }

    /// Differs, after the reboot: wait for the new boot id, the node, its installer pod and the
    /// policy files; uncordon what this run cordoned.
    fn bring_up(&mut self) {
        let (t, n, k) = (self.t, self.n, self.k.clone());
        let mut steps: Vec<(Step, Vec<Action>)> = Vec::new();
        {
            let a = &self.a;
            let mut push = |_: Branch, s: Step, actions: Vec<Action>| steps.push((s, actions));
            let mut wait_boot = a.check_node("wait-boot-id");
            wait_boot.expect["not_equal"] = serde_json::json!({"boot_id": "{boot_id}"});
            wait_boot.expect["repeat"] =
                serde_json::json!({"timeout_s": REBOOT_TIMEOUT, "poll_s": POLL_INTERVAL});
            push(
                Branch::Differs,
                Step::new(
                    "wait-boot-id",
                    format!(
                        "differs: wait until the boot id differs from the one recorded (the node is still Ready right after the call; only a new boot id proves the restart), at most {} min",
                        REBOOT_TIMEOUT / 60
                    ),
                    Some(format!(
                        "timeout {REBOOT_TIMEOUT}s sh -c 'while [ \"$({k} get node {n} -o jsonpath={{.status.nodeInfo.bootID}})\" = \"$0\" ]; do sleep {POLL_INTERVAL}; done' \"$BOOT_ID\""
                    )),
                ),
                vec![wait_boot],
            );
            let node_ref = format!("node/{n}");
            let ready_timeout = format!("--timeout={READY_TIMEOUT}s");
            push(
                Branch::Differs,
                Step::new(
                    "wait-node-ready",
                    "differs: wait for the node to be Ready".into(),
                    Some(format!(
                        "{k} wait --for=condition=Ready node/{n} --timeout={READY_TIMEOUT}s"
                    )),
                ),
                vec![Action {
                    action: "wait-node-ready",
                    argv: Some(a.k(&["wait", "--for=condition=Ready", &node_ref, &ready_timeout])),
                    expect: serde_json::json!({"exit": 0}),
                    only_if: None,
                }],
            );
            push(
                Branch::Differs,
                self.wait_pod("differs: "),
                vec![a.wait_pod()],
            );
            push(
                Branch::Differs,
                self.wait_policy("differs: "),
                vec![a.find_pod(), a.wait_policy()],
            );
            push(
                Branch::Differs,
                if t.was_cordoned {
                    Step::new(
                    "uncordon",
                    "differs: leave it cordoned: it was cordoned before this change (uncordon it when that reason is resolved)".into(),
                    None,
                )
                } else {
                    Step::new(
                        "uncordon",
                        format!(
                            "differs: uncordon it (this run cordoned it: annotation {CORDON_MARK}) and drop the annotation"
                        ),
                        Some(format!(
                            "{k} uncordon {n} && {k} annotate node {n} {CORDON_MARK}-"
                        )),
                    )
                },
                {
                    let mut v = vec![a.check_node("check-node")];
                    v.extend(a.uncordon());
                    v
                },
            );
        }
        for (s, actions) in steps {
            self.push(Branch::Differs, s, actions);
        }
    }
}

/// Checks before the first node, in order.
pub fn preflight(list: &Checklist) -> Vec<Step> {
    let p = list.desired.policy;
    let k = kubectl_prefix(list);
    let sel = selector_text(&list.pod_selector);
    let step = Step::new;
    let apply = match list.desired_label.strip_prefix("--policy") {
        Some(_) => {
            let tag = match (&list.tag_change, &list.desired.tag) {
                (Some(_), Some(t)) => format!(" --set cgpu.tag={t}"),
                _ => String::new(),
            };
            format!("helm upgrade … --reuse-values --set cgpu.policy={p}{tag}")
        }
        None => format!("helm upgrade … -f {}", list.desired_label),
    };
    let mut out = vec![
        step(
            "owners",
            "tell the owners of GPU workloads on these nodes; stop GPU applications that cannot move".into(),
            None,
        ),
        step(
            "apply",
            format!("apply the desired values so that cgpu-installer carries POLICY \"{p}\""),
            Some(apply),
        ),
    ];
    let health = match list.strategy {
        Some(Strategy::OnDelete) =>
            "installer DaemonSet healthy: every cgpu-installer pod on a Ready node is Ready (updateStrategy OnDelete: the pods keep the old POLICY until each node's step deletes them; `kubectl rollout status` does not work with OnDelete); do not start while it is not"
        .to_string(),
        Some(Strategy::RollingUpdate) => format!(
            "installer DaemonSet healthy: every cgpu-installer pod on a Ready node is Ready and carries POLICY \"{p}\" (the rollout of the change is finished); do not start while it is not"
        ),
        None => format!(
            "installer DaemonSet healthy: every cgpu-installer pod on a Ready node is Ready and, with updateStrategy RollingUpdate, carries POLICY \"{p}\" (with OnDelete they keep the old one until each node's step deletes them, and `kubectl rollout status` does not work); do not start while it is not"
        ),
    };
    out.push(step(
        "installer-health",
        health,
        Some(format!("{k} -n kube-system get ds cgpu-installer -o wide && {k} -n kube-system get pod -l {sel} -o wide")),
    ));
    let planned = &list.planned;
    let image = match (&planned.image, &planned.version) {
        (Some(i), Some(v)) => format!(" and the image `{i}` (cGPU {v})"),
        (None, Some(v)) => format!(" and an image of cGPU {v}"),
        _ => String::new(),
    };
    out.push(step(
        "installer-as-planned",
        format!(
            "the installer DaemonSet runs what this plan is for: POLICY \"{p}\"{image}; anything else (a `helm upgrade` since the plan that set another tag, or fell back to the chart default's): plan again, never restart nodes into it"
        ),
        Some(format!(
            "{k} -n kube-system get ds cgpu-installer -o jsonpath='{{.spec.template.spec.containers[0].image}}'"
        )),
    ));
    out.push(step(
        "cluster-lock",
        format!(
            "one rollout at a time: no other run holds the cluster lock, the Lease kube-system/{LEASE_NAME} (the script takes it before its first change and releases it at every stop; NotFound: free)"
        ),
        Some(format!("{k} -n kube-system get lease {LEASE_NAME}")),
    ));
    out.push(step(
        "other-actors",
        format!(
            "other actors: no node of the plan in an NVIDIA GPU Operator driver upgrade ({NVIDIA_UPGRADE_STATE} set, other than upgrade-done) or under kured's reboot lock (weave.works/kured-node-lock on its DaemonSet); the script leaves such a node alone"
        ),
        Some(format!("{k} get nodes -L {NVIDIA_UPGRADE_STATE}")),
    ));
    out.push(step(
        "pdb",
        "PodDisruptionBudgets with ALLOWED DISRUPTIONS 0 block a drain: settle them with their owners first".into(),
        Some(format!("{k} get pdb -A")),
    ));
    out.push(step(
        "capacity",
        "room for the evicted GPU pods: the free aliyun.com/gpu-mem (allocatable minus requests) of the nodes that stay up must cover what the pods of the nodes restarted at once request, or they stay Pending".into(),
        Some(format!("{k} describe nodes | grep -E '^Name:|aliyun.com/gpu-mem'")),
    ));
    let mut by_region: Vec<(Option<&str>, Vec<&str>)> = Vec::new();
    for t in &list.nodes {
        let Some(id) = t.instance_id.as_deref() else {
            continue;
        };
        let r = t.region.as_deref();
        match by_region.iter_mut().find(|(x, _)| *x == r) {
            Some((_, ids)) => ids.push(id),
            None => by_region.push((r, vec![id])),
        }
    }
    for (r, ids) in by_region {
        let region = r.map(|r| format!(" --RegionId {r}")).unwrap_or_default();
        out.push(step(
            "ecs-permission",
            "ECS permission: a dry run of the reboot must answer DryRunOperation (the request would succeed); anything else (Forbidden.RAM, an unknown instance) is to fix first".into(),
            Some(format!(
                "for i in {}; do aliyun ecs RebootInstance{region} --InstanceId \"$i\" --DryRun true; done",
                ids.join(" ")
            )),
        ));
    }
    out.push(step(
        "auto-repair",
        "ACK managed node pools: auto repair acts on a node that stays NotReady past its threshold (180 s for KubeletNotReady) and may drain, restart and uncordon it on its own; switch it off for these node pools during the window".into(),
        None,
    ));
    out.push(step(
        "autoscaler",
        "cluster autoscaler: a drained node looks empty and may be removed; pause scale-down for the window or annotate the nodes cluster-autoscaler.kubernetes.io/scale-down-disabled=true".into(),
        None,
    ));
    out
}

/// The pods to read a node the run does not restart through: a node cgpu-installer runs on
/// (cordoned before the change) by the DaemonSet's own selector when the plan read it; another
/// installer's node by both installers' usual label.
fn verify_selector(list: &Checklist, o: &Other) -> String {
    if o.kind == OtherKind::Skipped && !list.pod_selector.is_empty() {
        return selector_text(&list.pod_selector);
    }
    "'name in (cgpu-installer,cgpu-core-installer)'".into()
}

/// How to check a GPU-sharing node that the run does not restart.
pub fn verify_step(list: &Checklist, o: &Other) -> Step {
    Step::new(
        "verify",
        format!(
            "read its policy files through its installer pod (cgpu-installer or cgpu-core-installer): blocking until {}; no installer pod there: check by hand (`kubectl debug node/{} -it --image=<an image with sh>` shares the host's PID namespace: `cat /proc/cgpu_km/*/policy`)",
            policy_target_text(list),
            o.name
        ),
        Some(read_state_command(list, &verify_selector(list, o), &o.name)),
    )
}

/// The header every format shows: the cluster, context, API server, identity, when it was
/// planned, and how many nodes may restart.
pub fn header_lines(list: &Checklist) -> Vec<String> {
    let id = &list.options.identity;
    let mut out = Vec::new();
    out.push(format!(
        "Cluster: context {} · API server {} · identity {}",
        id.context.as_deref().unwrap_or("(none: kubectl's default)"),
        id.server.as_deref().unwrap_or("unknown"),
        match (&id.cluster_uid, &id.unread) {
            (Some(u), _) => format!("kube-system UID {u}"),
            (None, Some(why)) => format!(
                "kube-system UID not read when planning ({why}): the launcher pins the context only"
            ),
            (None, None) =>
                "kube-system UID not pinned (planned from files): the launcher pins the context only".into(),
        }
    ));
    if let Some(k) = &id.kubeconfig {
        out.push(format!("Kubeconfig: {k}"));
    }
    if let Some(t) = &id.planned_at {
        out.push(format!("Planned: {t}"));
    }
    if list.nodes_given {
        out.push(format!(
            "{} of {} nodes running cgpu-installer may restart (each only if its own state differs from the target)",
            list.nodes.len(),
            list.installer_nodes
        ));
    }
    out
}
