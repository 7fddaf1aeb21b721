//! The actions, one API call (or one ECS call) each, each behind the fence: what the decision
//! core asked for, done to the node it named, and recorded as an Event on it.

use serde_json::{Value, json};

use super::decide::{Action, Memory, Next, RebootVia, Stop};
use super::lease;
use super::observe::{self, BOOT_BEFORE, CORDON_MARK, REBOOT_AT, STATE};
use super::run::Ctx;
use crate::cluster::ClusterError;

impl Ctx<'_, '_> {
    /// Record an action where Kubernetes users look: an Event on the node.
    fn event(&mut self, node: &str, uid: &str, reason: &str, message: &str) {
        let now = crate::date::rfc3339(crate::date::now_secs());
        let holder = self
            .lock
            .as_ref()
            .map(|l| l.identity.holder.clone())
            .unwrap_or_default();
        let ev = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": format!("{node}.cgpu-lint."), "namespace": "default"},
            "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid},
            "reason": reason,
            "message": message,
            "type": "Normal",
            "source": {"component": "cgpu-lint", "host": lease::hostname()},
            "reportingComponent": "cgpu-lint",
            "reportingInstance": holder,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        });
        let args: Vec<String> = ["create", "--validate=false", "-f", "-", "-o", "name"]
            .map(String::from)
            .to_vec();
        let body = serde_json::to_vec(&ev).unwrap_or_default();
        if let Err(e) = self.kubectl(&args, Some(&body))
            && !self.events_failed
        {
            self.events_failed = true;
            self.warn(&format!(
                "cannot record Events on the nodes ({e}); the run goes on (the node annotation {STATE} still shows each node's state)"
            ));
        }
    }

    fn fence(&mut self) -> Result<(), Stop> {
        let Some(lock) = &self.lock else {
            return Ok(());
        };
        lock.fence().map_err(|why| Stop {
            node: None,
            step: "cluster-lock",
            message: format!(
                "this run lost the cluster lock (lease kube-system/{}): {why}; it stops before its next change",
                lease::NAME
            ),
            next: Next::Resume,
        })
    }

    fn patch_node(&self, node: &str, uid: &str, patch: Value) -> Result<(), ClusterError> {
        let mut patch = patch;
        // The UID as a precondition: a node replaced since the observation (same name) is not
        // the one decided on, and the API server refuses the patch.
        patch["metadata"]["uid"] = json!(uid);
        let args: Vec<String> = vec![
            "patch".into(),
            "node".into(),
            node.into(),
            "--type=merge".into(),
            "-p".into(),
            patch.to_string(),
        ];
        self.kubectl(&args, None).map(|_| ())
    }

    /// One action, behind the fence. Ok(false): not done, observe again (the world moved).
    pub(super) fn act(&mut self, a: &Action, memory: &mut Memory) -> Result<bool, Stop> {
        let node = a.node().to_string();
        let fail = |step: &'static str, e: String| Stop {
            node: Some(node.clone()),
            step,
            message: format!("{node}: {e}"),
            next: Next::Resume,
        };
        self.fence()?;
        let goal = self.r.goal.text();
        match a {
            Action::Cordon { uid, mark, .. } => {
                let mut annotations = json!({ STATE: "cordoned" });
                if *mark {
                    annotations[CORDON_MARK] = json!("true");
                }
                let mut patch = json!({"metadata": {"annotations": annotations}});
                if *mark {
                    patch["spec"] = json!({"unschedulable": true});
                }
                self.changed = true;
                if let Err(e) = self.patch_node(&node, uid, patch) {
                    return self.moved(&node, "cordon", e);
                }
                self.say(&format!("--> {node}: cordon: {}", a.text()));
                self.event(
                    &node,
                    uid,
                    "CgpuRolloutCordoned",
                    &format!("cgpu-lint cordoned the node to restart it into {goal}"),
                );
            }
            Action::Evict {
                namespace,
                pod,
                uid,
                ..
            } => {
                let body = json!({
                    "apiVersion": "policy/v1",
                    "kind": "Eviction",
                    "metadata": {"name": pod, "namespace": namespace},
                    "deleteOptions": {"preconditions": {"uid": uid}},
                });
                let args: Vec<String> = vec![
                    "create".into(),
                    "--raw".into(),
                    format!("/api/v1/namespaces/{namespace}/pods/{pod}/eviction"),
                    "-f".into(),
                    "-".into(),
                ];
                self.changed = true;
                match self.kubectl(&args, Some(body.to_string().as_bytes())) {
                    Ok(_) => self.say(&format!("--> {node}: drain: evicted pod {namespace}/{pod}")),
                    Err(e)
                        if e.to_string().contains("429")
                            || e.to_string().contains("disruption budget")
                            || e.to_string().contains("TooManyRequests") =>
                    {
                        self.say(&format!("--> {node}: drain: pod {namespace}/{pod} not evicted yet (a PodDisruptionBudget allows no disruption now): tried again until the drain timeout"));
                    }
                    Err(e)
                        if e.to_string().contains("NotFound")
                            || e.to_string().contains("not found")
                            || e.to_string().contains("Precondition") => {}
                    Err(e) => {
                        return Err(fail(
                            "drain",
                            format!("evicting pod {namespace}/{pod} failed: {e}"),
                        ));
                    }
                }
            }
            Action::DeletePod {
                pod, uid: _, why, ..
            } => {
                self.installer_unchanged(&node)?;
                let args: Vec<String> = ["-n", "kube-system", "delete", "pod", pod, "--wait=false"]
                    .map(String::from)
                    .to_vec();
                self.changed = true;
                match self.kubectl(&args, None) {
                    Ok(_) => {}
                    Err(e)
                        if e.to_string().contains("NotFound")
                            || e.to_string().contains("not found") =>
                    {
                        return Ok(false);
                    }
                    Err(e) => {
                        return Err(fail(
                            "delete-installer-pod",
                            format!("deleting installer pod {pod} failed: {e}"),
                        ));
                    }
                }
                if why.starts_with("the module is not loaded") {
                    memory.restarted.insert(node.clone());
                }
                self.say(&format!("--> {node}: delete-installer-pod: {pod} ({why})"));
                let uid = self.uid_of(&node);
                self.event(
                    &node,
                    &uid,
                    "CgpuRolloutInstallerPodDeleted",
                    &format!("cgpu-lint deleted installer pod {pod}: {why}"),
                );
            }
            Action::Reboot {
                uid,
                boot_id,
                provider_id,
                region,
                instance,
                ..
            } => {
                // The node once more, right before: the same node (UID), the same instance
                // (its live providerID), the same boot, still cordoned.
                let args: Vec<String> = ["get", "node", &node, "-o", "json"]
                    .map(String::from)
                    .to_vec();
                let live = match self.kubectl(&args, None) {
                    Ok(bytes) => serde_json::from_slice::<Value>(&bytes)
                        .map(|v| observe::node_from(&v))
                        .ok(),
                    Err(_) => None,
                };
                let Some(live) = live else {
                    return Ok(false);
                };
                if live.uid != *uid
                    || live.provider_id.as_deref().unwrap_or("") != provider_id
                    || live.boot_id != *boot_id
                    || !live.unschedulable
                {
                    return Ok(false);
                }
                if instance.is_empty() {
                    return Err(fail("reboot", "no ECS instance to reboot it by".into()));
                }
                let now = crate::date::now_secs();
                let patch = json!({"metadata": {"annotations": {
                    STATE: format!("rebooting into {goal}"),
                    BOOT_BEFORE: boot_id,
                    REBOOT_AT: crate::date::rfc3339(now),
                }}});
                self.changed = true;
                if let Err(e) = self.patch_node(&node, uid, patch) {
                    return self.moved(&node, "reboot", e);
                }
                // Once more after the patch, right before the call: a node deleted or
                // replaced in between is not rebooted by its old instance.
                let again = match self.kubectl(&args, None) {
                    Ok(bytes) => serde_json::from_slice::<Value>(&bytes)
                        .map(|v| observe::node_from(&v))
                        .ok(),
                    Err(_) => None,
                };
                if again.is_none_or(|n| {
                    n.uid != *uid || n.provider_id.as_deref().unwrap_or("") != provider_id
                }) {
                    return Ok(false);
                }
                self.installer_unchanged(&node)?;
                self.fence()?;
                memory.rebooted.insert(node.clone());
                if self.r.config.reboot_via == RebootVia::Node {
                    return self.reboot_pod(&node, uid, boot_id).map(|()| true);
                }
                let out = std::process::Command::new(&self.r.aliyun)
                    .args([
                        "ecs",
                        "RebootInstance",
                        "--RegionId",
                        region,
                        "--InstanceId",
                        instance,
                    ])
                    .stdin(std::process::Stdio::null())
                    .output();
                match out {
                    Ok(o) if o.status.success() => {}
                    Ok(o) => {
                        let text = String::from_utf8_lossy(&o.stderr).trim().replace('\n', " ");
                        return Err(fail(
                            "reboot",
                            format!(
                                "RebootInstance of {instance} ({region}) failed: {text}; the node stays cordoned and drained"
                            ),
                        ));
                    }
                    Err(e) => {
                        return Err(fail(
                            "reboot",
                            format!(
                                "cannot run `{}` (the Alibaba Cloud CLI): {e}",
                                self.r.aliyun
                            ),
                        ));
                    }
                }
                self.say(&format!(
                    "--> {node}: reboot: ECS instance {instance} ({region}), boot id {boot_id}"
                ));
                self.event(&node, uid, "CgpuRolloutRebooting", &format!("cgpu-lint rebooted ECS instance {instance} to load {goal} (boot id before: {boot_id})"));
            }
            Action::Finish { uid, uncordon, .. } => {
                let mut patch = json!({"metadata": {"annotations": {
                    STATE: self.r.goal.done_state(),
                    BOOT_BEFORE: null,
                    REBOOT_AT: null,
                    CORDON_MARK: null,
                }}});
                if *uncordon {
                    patch["spec"] = json!({"unschedulable": null});
                }
                self.changed = true;
                if let Err(e) = self.patch_node(&node, uid, patch) {
                    return self.moved(&node, "uncordon", e);
                }
                if self.r.config.reboot_via == RebootVia::Node {
                    // Its reboot pod, ended with the reboot, goes too.
                    let sel = format!("app.kubernetes.io/component=reboot,cgpu-lint/node={node}");
                    let args: Vec<String> = [
                        "-n",
                        "kube-system",
                        "delete",
                        "pods",
                        "-l",
                        &sel,
                        "--wait=false",
                    ]
                    .map(String::from)
                    .to_vec();
                    if let Err(e) = self.kubectl(&args, None) {
                        self.warn(&format!(
                            "{node}: its reboot pod could not be deleted ({e}); delete it by hand"
                        ));
                    }
                }
                let what = if *uncordon {
                    "verified and uncordoned"
                } else {
                    "verified (left cordoned, as it was before the run)"
                };
                self.say(&format!("--> {node}: uncordon: {what}: {goal}"));
                self.event(
                    &node,
                    uid,
                    "CgpuRolloutDone",
                    &format!("cgpu-lint {what} the node: it shows {goal}"),
                );
            }
        }
        Ok(true)
    }

    /// The DaemonSet once more, right before a change whose outcome it decides (a reboot, an
    /// installer pod's deletion): a change since the run's start (a rollback, a second
    /// `helm upgrade`) stops the run before the call.
    fn installer_unchanged(&mut self, node: &str) -> Result<(), Stop> {
        let Some(pinned) = &self.pinned else {
            return Ok(());
        };
        let args: Vec<String> = [
            "-n",
            "kube-system",
            "get",
            "daemonsets.v1.apps",
            crate::cgpu::INSTALLER,
            "-o",
            "json",
        ]
        .map(String::from)
        .to_vec();
        let now = self
            .kubectl(&args, None)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .map(|v| observe::installer_from(&v));
        match now {
            Some(i) if i.fingerprint() == pinned.fingerprint() => Ok(()),
            other => Err(Stop {
                node: Some(node.to_string()),
                step: "installer-policy",
                message: format!(
                    "{node}: the {} DaemonSet changed during the run ({}), right before this node's restart: someone else is changing it; no node is restarted into it",
                    crate::cgpu::INSTALLER,
                    match other {
                        Some(i) => format!(
                            "POLICY {} -> {}, image {} -> {}",
                            pinned.policy.as_deref().unwrap_or("unset"),
                            i.policy.as_deref().unwrap_or("unset"),
                            pinned.image,
                            i.image
                        ),
                        None => "it could not be read again".into(),
                    }
                ),
                next: Next::Replan,
            }),
        }
    }

    /// Reboot a node from inside, as kured does: a privileged pod on it enters the host's
    /// namespaces and runs `systemctl reboot`. Its name comes from the node and the boot id, so
    /// a run killed after creating it and the run after it make one pod, one reboot.
    fn reboot_pod(&mut self, node: &str, uid: &str, boot_id: &str) -> Result<(), Stop> {
        let hash = |s: &str| {
            let mut h: u32 = 0x811c_9dc5;
            for b in s.bytes() {
                h ^= u32::from(b);
                h = h.wrapping_mul(0x0100_0193);
            }
            format!("{h:08x}")
        };
        let name = format!("cgpu-lint-reboot-{}-{}", hash(node), hash(boot_id));
        let pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "kube-system",
                "labels": {
                    "app.kubernetes.io/name": "cgpu-lint",
                    "app.kubernetes.io/component": "reboot",
                    "cgpu-lint/node": node,
                },
            },
            "spec": {
                "nodeName": node,
                "hostPID": true,
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 0,
                "tolerations": [{"operator": "Exists"}],
                "containers": [{
                    "name": "reboot",
                    "image": self.reboot_image,
                    "command": ["nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "--", "systemctl", "reboot"],
                    "securityContext": {"privileged": true},
                }],
            },
        });
        let args: Vec<String> = ["create", "--validate=false", "-f", "-", "-o", "name"]
            .map(String::from)
            .to_vec();
        match self.kubectl(&args, Some(pod.to_string().as_bytes())) {
            Ok(_) => {}
            Err(e)
                if e.to_string().contains("AlreadyExists")
                    || e.to_string().contains("already exists") =>
            {
                self.say(&format!("--> {node}: reboot: its reboot pod {name} exists already (an earlier run made it): waiting for the reboot"));
                return Ok(());
            }
            Err(e) => {
                return Err(Stop {
                    node: Some(node.to_string()),
                    step: "reboot",
                    message: format!(
                        "{node}: creating its reboot pod failed: {e}; the node stays cordoned and drained (kube-system must admit a privileged pod: docs/runbook.md, \"Run it in the cluster\")"
                    ),
                    next: Next::Resume,
                });
            }
        }
        self.say(&format!("--> {node}: reboot: pod kube-system/{name} on the node runs systemctl reboot (boot id {boot_id})"));
        self.event(node, uid, "CgpuRolloutRebooting", &format!("cgpu-lint rebooted the node from pod kube-system/{name} to load {} (boot id before: {boot_id})", self.r.goal.text()));
        Ok(())
    }

    fn uid_of(&self, node: &str) -> String {
        let args: Vec<String> = ["get", "node", node, "-o", "jsonpath={.metadata.uid}"]
            .map(String::from)
            .to_vec();
        self.kubectl(&args, None)
            .map(|b| String::from_utf8_lossy(&b).trim().to_string())
            .unwrap_or_default()
    }

    /// A write the API server refused because the node moved (another UID, deleted): observe
    /// again; anything else stops.
    fn moved(&mut self, node: &str, step: &'static str, e: ClusterError) -> Result<bool, Stop> {
        let text = e.to_string();
        if [
            "Precondition",
            "precondition",
            "NotFound",
            "not found",
            "Conflict",
            "UID",
        ]
        .iter()
        .any(|w| text.contains(w))
        {
            self.say(&format!(
                "--> {node}: {step}: the node changed since it was read ({text}): read again"
            ));
            return Ok(false);
        }
        Err(Stop {
            node: Some(node.to_string()),
            step,
            message: format!("{node}: {text}"),
            next: Next::Resume,
        })
    }
}
