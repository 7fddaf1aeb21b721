//! `cgpu-lint generate rollout-job`: what a cluster admin applies to run the rollout in the
//! cluster it changes. A ServiceAccount; a ClusterRole and a Role with exactly the verbs the
//! loop uses (no wildcard), each rule with its reason; their bindings; the desired values in a
//! ConfigMap when a values file is the goal; and a Job running `cgpu-lint rollout --yes` under
//! that account. The Job survives its pod: a pod that dies is replaced and the new one waits for
//! the dead one's Lease to expire (`--wait-for-lock`), then takes every node up where it stopped
//! (the reconciler keeps nothing outside the cluster); a run that stops (exit 1 or 2) fails the
//! Job at once (`podFailurePolicy`), as a terminal run would stop.

use serde_json::{Value, json};

use super::lease;
use crate::yaml::emit::{double_quoted, plain_is_safe};

/// What the Job is to do.
#[derive(Debug, Clone)]
pub struct JobSpec {
    pub name: String,
    pub image: String,
    /// `--policy N [--tag T]`, or the values file's text (mounted from a ConfigMap).
    pub policy: Option<u8>,
    pub tag: Option<String>,
    pub values: Option<String>,
    pub cluster_uid: Option<String>,
    pub max_unavailable: u32,
    pub allow_downgrade: bool,
    pub include_cordoned: bool,
    pub reboot_via_node: bool,
    pub drain_timeout: String,
    /// The Lease's duration: a replaced pod waits at most about this long for it.
    pub lease_duration: String,
}

/// The namespace everything goes in: the installers', the Lease's and the reboot pods'.
pub const NAMESPACE: &str = "kube-system";

fn rule(
    reason: &str,
    groups: &[&str],
    resources: &[&str],
    names: &[&str],
    verbs: &[&str],
) -> Value {
    let mut r = json!({
        "#": reason,
        "apiGroups": groups,
        "resources": resources,
        "verbs": verbs,
    });
    if !names.is_empty() {
        r["resourceNames"] = json!(names);
    }
    r
}

/// The cluster-wide rules the loop needs, each with why.
pub fn cluster_rules() -> Vec<Value> {
    vec![
        rule(
            "read the nodes, cordon, mark and uncordon them (a merge patch with the node's UID as a precondition)",
            &[""],
            &["nodes"],
            &[],
            &["get", "list", "patch"],
        ),
        rule(
            "the drain and the capacity check list every namespace's pods",
            &[""],
            &["pods"],
            &[],
            &["list"],
        ),
        rule(
            "evict a drained node's pods (PodDisruptionBudgets hold)",
            &[""],
            &["pods/eviction"],
            &[],
            &["create"],
        ),
        rule(
            "the installers (kube-system) and kured's lock (its DaemonSet, any namespace)",
            &["apps"],
            &["daemonsets"],
            &[],
            &["get", "list"],
        ),
        rule(
            "the cluster's identity: the kube-system namespace's UID",
            &[""],
            &["namespaces"],
            &["kube-system"],
            &["get"],
        ),
    ]
}

/// The kube-system rules: the installer pods, the lock, the reboot pods.
pub fn namespace_rules(reboot_via_node: bool) -> Vec<Value> {
    // kubectl reads the pod it execs into first.
    let mut pod_verbs = vec!["get", "delete"];
    if reboot_via_node {
        pod_verbs.insert(1, "create");
    }
    vec![
        rule(
            if reboot_via_node {
                "read an installer pod before exec into it, delete one from the old template (or to load the module), create and delete a node's reboot pod"
            } else {
                "read an installer pod before exec into it, delete one from the old template (or to load the module)"
            },
            &[""],
            &["pods"],
            &[],
            &pod_verbs,
        ),
        rule(
            "read each node's module through its installer pod (kubectl's exec over WebSocket is a get before Kubernetes 1.35, a create from 1.35)",
            &[""],
            &["pods/exec"],
            &[],
            &["get", "create"],
        ),
        rule(
            "take the cluster lock (create cannot be limited by name)",
            &["coordination.k8s.io"],
            &["leases"],
            &[],
            &["create"],
        ),
        rule(
            "read, renew and release the cluster lock",
            &["coordination.k8s.io"],
            &["leases"],
            &[lease::NAME],
            &["get", "update"],
        ),
    ]
}

/// The rules in `default`, where node Events go.
pub fn event_rules() -> Vec<Value> {
    vec![rule(
        "each action as an Event on its node (node Events live in default)",
        &[""],
        &["events"],
        &[],
        &["create"],
    )]
}

/// The Job's container arguments.
pub fn args(spec: &JobSpec) -> Vec<String> {
    let mut a: Vec<String> = vec!["rollout".into(), "--cluster".into(), "--yes".into()];
    match (&spec.values, spec.policy) {
        (Some(_), _) => a.extend(["--desired".into(), "/etc/cgpu-lint/values.yaml".into()]),
        (None, Some(p)) => a.extend(["--policy".into(), p.to_string()]),
        (None, None) => {}
    }
    if let Some(t) = &spec.tag {
        a.extend(["--tag".into(), t.clone()]);
    }
    if let Some(u) = &spec.cluster_uid {
        a.extend(["--cluster-uid".into(), u.clone()]);
    }
    a.extend(["--max-unavailable".into(), spec.max_unavailable.to_string()]);
    a.extend(["--drain-timeout".into(), spec.drain_timeout.clone()]);
    for (on, flag) in [
        (spec.allow_downgrade, "--allow-downgrade"),
        (spec.include_cordoned, "--include-cordoned"),
    ] {
        if on {
            a.push(flag.into());
        }
    }
    a.extend([
        "--reboot-via".into(),
        if spec.reboot_via_node { "node" } else { "ecs" }.into(),
        "--lease-duration".into(),
        spec.lease_duration.clone(),
        // A replaced pod waits for its predecessor's Lease: a few of its durations at most.
        "--wait-for-lock".into(),
        "30m".into(),
        "--job".into(),
        format!("{NAMESPACE}/{}", spec.name),
        "--no-config".into(),
    ]);
    a
}

/// Every object, in the order `kubectl apply -f` creates them.
pub fn objects(spec: &JobSpec) -> Vec<Value> {
    let name = &spec.name;
    let labels =
        json!({"app.kubernetes.io/name": "cgpu-lint", "app.kubernetes.io/component": "rollout"});
    let meta = |kind_name: &str, namespaced: bool| {
        let mut m = json!({"name": kind_name, "labels": labels});
        if namespaced {
            m["namespace"] = json!(NAMESPACE);
        }
        m
    };
    let subject = json!([{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}]);
    let mut out = vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(name, true)}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta(name, false), "rules": cluster_rules()}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta(name, false),
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}, "subjects": subject}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta(name, true), "rules": namespace_rules(spec.reboot_via_node)}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta(name, true),
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}, "subjects": subject}),
    ];
    let mut events = meta(&format!("{name}-events"), false);
    events["namespace"] = json!("default");
    out.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": events, "rules": event_rules()}));
    out.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": events,
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": format!("{name}-events")}, "subjects": subject}));
    let mut volumes = vec![json!({"name": "tmp", "emptyDir": {}})];
    let mut mounts = vec![json!({"name": "tmp", "mountPath": "/tmp"})];
    if let Some(values) = &spec.values {
        out.push(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(&format!("{name}-values"), true),
                        "data": {"values.yaml": values}}));
        volumes.push(json!({"name": "values", "configMap": {"name": format!("{name}-values")}}));
        mounts.push(json!({"name": "values", "mountPath": "/etc/cgpu-lint", "readOnly": true}));
    }
    // Never on a node the rollout drains: its own pod would be evicted from under it.
    let not_gpu_sharing = json!({"nodeSelectorTerms": [{"matchExpressions": [
        {"key": crate::cgpu::SCHEDULE_LABEL, "operator": "NotIn", "values": crate::cgpu::ISOLATING_SCHEDULES},
        {"key": crate::cgpu::LEGACY_LABEL, "operator": "NotIn", "values": [crate::cgpu::LEGACY_VALUE]},
    ]}]});
    out.push(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta(name, true),
        "spec": {
            "backoffLimit": 4,
            "podFailurePolicy": {"rules": [
                {"action": "FailJob", "onExitCodes": {"containerName": "rollout", "operator": "In", "values": [1, 2]}, "onPodConditions": []},
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            ]},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": name,
                    "restartPolicy": "Never",
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": not_gpu_sharing}},
                    "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                        "name": "rollout",
                        "image": spec.image,
                        "args": args(spec),
                        // kubectl's discovery cache.
                        "env": [{"name": "HOME", "value": "/tmp"}],
                        "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "capabilities": {"drop": ["ALL"]}},
                        "volumeMounts": mounts,
                    }],
                    "volumes": volumes,
                },
            },
        },
    }));
    out
}

/// A scalar as YAML: plain where that reads back the same, else double-quoted.
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) if plain_is_safe(s) => s.clone(),
        Value::String(s) => double_quoted(s),
        other => other.to_string(),
    }
}

/// Block-style YAML of a JSON value; keys named `#` become comments on the item they lead.
fn emit(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "#" {
                    continue;
                }
                match x {
                    Value::Object(o) if !o.is_empty() => {
                        out.push_str(&format!("{pad}{k}:\n"));
                        emit(x, indent + 2, out);
                    }
                    Value::Array(a) if !a.is_empty() => {
                        out.push_str(&format!("{pad}{k}:\n"));
                        emit(x, indent, out);
                    }
                    Value::Object(_) => out.push_str(&format!("{pad}{k}: {{}}\n")),
                    Value::Array(_) => out.push_str(&format!("{pad}{k}: []\n")),
                    _ => out.push_str(&format!("{pad}{k}: {}\n", scalar(x))),
                }
            }
        }
        Value::Array(a) => {
            for x in a {
                if let Some(why) = x.get("#").and_then(Value::as_str) {
                    out.push_str(&format!("{pad}# {why}\n"));
                }
                let mut item = String::new();
                match x {
                    Value::Object(_) | Value::Array(_) => emit(x, indent + 2, &mut item),
                    _ => item = format!("{pad}  {}\n", scalar(x)),
                }
                // The item's first line carries the dash.
                let body = item.get(indent + 2..).unwrap_or("");
                out.push_str(&format!("{pad}- {body}"));
            }
        }
        _ => out.push_str(&format!("{pad}{}\n", scalar(v))),
    }
}

/// The manifest: a header that says what it is and how to run, watch and stop it, then the
/// objects as YAML documents.
pub fn render(spec: &JobSpec) -> String {
    let name = &spec.name;
    let mut out = format!(
        "# cgpu-lint rollout as a Job in the cluster it changes (generated by {} {}).\n\
         #   kubectl apply -f THIS-FILE\n\
         #   kubectl -n {NAMESPACE} logs -f job/{name}    # the lines a terminal run prints\n\
         #   cgpu-lint status --cluster    # names the Job as the lock's holder\n\
         #   kubectl -n {NAMESPACE} delete job {name}    # stops it (its Lease expires after --lease-duration)\n\
         # The Job's exit status is the rollout's: complete = every GPU-sharing node shows the goal.\n",
        env!("CARGO_PKG_NAME"),
        env!("CARGO_PKG_VERSION")
    );
    if spec.reboot_via_node {
        out.push_str(&format!(
            "# Nodes are rebooted by a short-lived privileged pod (hostPID, nsenter, systemctl reboot) in\n\
             # {NAMESPACE}, only on the nodes the rollout restarts, deleted after: {NAMESPACE} must admit\n\
             # privileged pods (Pod Security level `privileged`, which kube-system has by default).\n"
        ));
    }
    for o in objects(spec) {
        out.push_str("---\n");
        emit(&o, 0, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> JobSpec {
        JobSpec {
            name: "cgpu-lint-rollout".into(),
            image: "registry.example.com/ops/cgpu-lint:0.1.0".into(),
            policy: Some(2),
            tag: Some("v1.5.10-3c9d1e7-aliyun".into()),
            values: None,
            cluster_uid: Some("d2b7c1f4-9a3e-4c6b-8e21-0f5a7c3d9b11".into()),
            max_unavailable: 2,
            allow_downgrade: false,
            include_cordoned: false,
            reboot_via_node: true,
            drain_timeout: "10m".into(),
            lease_duration: "1m".into(),
        }
    }

    /// The YAML reads back (through the crate's own Helm-exact reader) as the objects it was
    /// written from, comments aside.
    #[test]
    fn the_manifest_reads_back_as_its_objects() {
        let mut s = spec();
        s.values = Some("cgpu:\n  policy: 2   # trailing\n\ttab: \"x\"\n".into());
        let text = render(&s);
        let src = crate::yaml::Source::new("job.yaml", text.clone());
        let parsed = crate::yaml::parse(&src);
        let want: Vec<Value> = objects(&s)
            .into_iter()
            .map(|mut o| {
                strip_comments(&mut o);
                o
            })
            .collect();
        let got: Vec<Value> = parsed
            .documents
            .iter()
            .filter_map(|d| d.root.as_ref())
            .map(|r| r.to_json())
            .collect();
        assert_eq!(got, want, "{text}");
    }

    fn strip_comments(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("#");
                m.values_mut().for_each(strip_comments);
            }
            Value::Array(a) => a.iter_mut().for_each(strip_comments),
            _ => {}
        }
    }

    #[test]
    fn no_rule_is_a_wildcard_and_the_reboot_pod_verb_comes_only_with_it() {
        for r in cluster_rules()
            .iter()
            .chain(&namespace_rules(true))
            .chain(&event_rules())
        {
            for key in ["apiGroups", "resources", "verbs"] {
                assert!(!r[key].as_array().unwrap().iter().any(|x| x == "*"), "{r}");
            }
        }
        let creates = |node| {
            namespace_rules(node).iter().any(|r| {
                r["resources"] == json!(["pods"])
                    && r["verbs"].as_array().unwrap().iter().any(|v| v == "create")
            })
        };
        assert!(creates(true) && !creates(false));
    }
}
