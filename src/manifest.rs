//! Kubernetes objects in a parsed document: a single object, a `kind: List` (what
//! `kubectl get -o yaml` prints for several objects), and the views the installer rules, the
//! post-renderer and the checklist share: the cgpu installers and nodes.

pub mod node;

use crate::yaml::node::child;
use crate::yaml::{Node, Scalar};

use crate::cgpu::{self, INSTALLER_NAMES};

/// One Kubernetes object and where it sits in its document.
#[derive(Debug, Clone, Copy)]
pub struct Object<'a> {
    pub node: &'a Node,
    /// JSON pointer of the object in its document (`""` at the root, `/items/3` in a List).
    pub pointer: &'a str,
    pub api_version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub namespace: Option<&'a str>,
}

/// Owned pointers for the objects of a document (so [`Object`] can borrow them).
pub struct Objects<'a> {
    items: Vec<(&'a Node, String)>,
}

impl<'a> Objects<'a> {
    /// The objects of a document root: the root itself, or the items of a List.
    pub fn of(root: &'a Node) -> Objects<'a> {
        let mut items = Vec::new();
        let kind = root.get("kind").and_then(Node::as_str).unwrap_or("");
        if kind.ends_with("List")
            && let Some(list) = root.get("items").and_then(Node::as_seq)
        {
            for (i, item) in list.iter().enumerate() {
                items.push((item, format!("/items/{i}")));
            }
        } else if root.get("apiVersion").is_some() && root.get("kind").is_some() {
            items.push((root, String::new()));
        }
        Objects { items }
    }

    pub fn iter(&self) -> impl Iterator<Item = Object<'_>> {
        self.items.iter().filter_map(|(node, pointer)| {
            let s = |k: &str| node.get(k).and_then(Node::as_str);
            let meta = node.get("metadata");
            Some(Object {
                node,
                pointer,
                api_version: s("apiVersion")?,
                kind: s("kind")?,
                name: meta
                    .and_then(|m| m.get("name"))
                    .and_then(Node::as_str)
                    .unwrap_or(""),
                namespace: meta.and_then(|m| m.get("namespace")).and_then(Node::as_str),
            })
        })
    }
}

impl<'a> Object<'a> {
    /// An apps/v1 DaemonSet named cgpu-installer or cgpu-core-installer.
    pub fn is_installer(&self) -> bool {
        self.kind == "DaemonSet"
            && self.api_version.starts_with("apps/")
            && INSTALLER_NAMES.contains(&self.name)
    }

    pub fn installer(&self) -> Option<Installer<'a>> {
        self.is_installer().then_some(Installer { obj: *self })
    }
}

/// A `POLICY` entry in a container's env.
#[derive(Debug, Clone)]
pub struct PolicyEnv<'a> {
    /// The env list item (`{name: POLICY, value: …}`).
    pub entry: &'a Node,
    pub entry_pointer: String,
    /// The `value` node, if any.
    pub value: Option<&'a Node>,
    pub value_pointer: String,
    pub value_from: bool,
}

#[derive(Debug, Clone)]
pub struct Toleration {
    pub key: Option<String>,
    pub operator: String,
    pub value: Option<String>,
    pub effect: Option<String>,
}

impl Toleration {
    /// Does this toleration tolerate a taint (Kubernetes `Toleration.ToleratesTaint`)?
    pub fn tolerates(&self, key: &str, value: Option<&str>, effect: &str) -> bool {
        if let Some(e) = &self.effect
            && !e.is_empty()
            && e != effect
        {
            return false;
        }
        match &self.key {
            Some(k) if !k.is_empty() && k != key => return false,
            None if self.operator != "Exists" => return false,
            _ => {}
        }
        match self.operator.as_str() {
            "Exists" => true,
            _ => self.value.as_deref().unwrap_or("") == value.unwrap_or(""),
        }
    }
}

/// The tolerations the DaemonSet controller adds to every DaemonSet pod.
pub fn daemonset_default_tolerations() -> Vec<Toleration> {
    let t = |key: &str, effect: &str| Toleration {
        key: Some(key.into()),
        operator: "Exists".into(),
        value: None,
        effect: Some(effect.into()),
    };
    vec![
        t("node.kubernetes.io/not-ready", "NoExecute"),
        t("node.kubernetes.io/unreachable", "NoExecute"),
        t("node.kubernetes.io/disk-pressure", "NoSchedule"),
        t("node.kubernetes.io/memory-pressure", "NoSchedule"),
        t("node.kubernetes.io/pid-pressure", "NoSchedule"),
        t("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
}

/// A cgpu installer DaemonSet.
#[derive(Debug, Clone, Copy)]
pub struct Installer<'a> {
    pub obj: Object<'a>,
}

impl<'a> Installer<'a> {
    pub fn name(&self) -> &'a str {
        self.obj.name
    }

    pub fn pod_spec_pointer(&self) -> String {
        format!("{}/spec/template/spec", self.obj.pointer)
    }

    pub fn pod_spec(&self) -> Option<&'a Node> {
        self.obj.node.pointer("/spec/template/spec")
    }

    /// Containers and initContainers with their pointers.
    pub fn containers(&self) -> Vec<(&'a Node, String)> {
        let mut out = Vec::new();
        let Some(spec) = self.pod_spec() else {
            return out;
        };
        for list in ["initContainers", "containers"] {
            if let Some(items) = spec.get(list).and_then(Node::as_seq) {
                for (i, c) in items.iter().enumerate() {
                    out.push((c, format!("{}/{list}/{i}", self.pod_spec_pointer())));
                }
            }
        }
        out
    }

    /// The installer's own container: the one named like the DaemonSet, else the first
    /// (regular) container.
    pub fn main_container(&self) -> Option<(&'a Node, String)> {
        let all = self.containers();
        all.iter()
            .find(|(c, _)| c.get("name").and_then(Node::as_str) == Some(self.obj.name))
            .or_else(|| all.iter().find(|(_, p)| p.contains("/containers/")))
            .cloned()
    }

    /// Every POLICY env entry of every container, in order (the kubelet gives a container the
    /// last entry of a name, so the last one is in force: [`Installer::policy`]).
    pub fn policy_envs(&self) -> Vec<PolicyEnv<'a>> {
        let mut out = Vec::new();
        for (c, cp) in self.containers() {
            let Some(env) = c.get("env").and_then(Node::as_seq) else {
                continue;
            };
            for (i, e) in env.iter().enumerate() {
                if e.get("name").and_then(Node::as_str) != Some(POLICY_ENV) {
                    continue;
                }
                let entry_pointer = format!("{cp}/env/{i}");
                out.push(PolicyEnv {
                    entry: e,
                    value: e.get("value"),
                    value_pointer: child(&entry_pointer, "value"),
                    entry_pointer,
                    value_from: e.get("valueFrom").is_some(),
                });
            }
        }
        out
    }

    /// The policy in force: the last POLICY entry's value read as a policy (a string or,
    /// leniently, an unquoted integer), `None` when missing, from valueFrom, or not a policy.
    pub fn policy(&self) -> Option<u8> {
        let last = self.policy_envs().pop()?;
        policy_of(last.value?)
    }

    /// The image reference of the main container and its pointer.
    pub fn image(&self) -> Option<(&'a Node, String)> {
        let (c, p) = self.main_container()?;
        Some((c.get("image")?, child(&p, "image")))
    }

    pub fn node_selector(&self) -> Option<&'a Node> {
        self.pod_spec()?.get("nodeSelector")
    }

    /// nodeSelector as string pairs (non-string values are skipped).
    pub fn node_selector_pairs(&self) -> Vec<(String, String)> {
        let Some(m) = self.node_selector().and_then(Node::as_map) else {
            return Vec::new();
        };
        m.iter()
            .filter_map(|e| Some((e.key.clone(), scalar_text(&e.value)?)))
            .collect()
    }

    /// Declared tolerations (not counting the DaemonSet controller's defaults).
    pub fn tolerations(&self) -> Vec<Toleration> {
        let Some(list) = self
            .pod_spec()
            .and_then(|s| s.get("tolerations"))
            .and_then(Node::as_seq)
        else {
            return Vec::new();
        };
        list.iter()
            .map(|t| {
                let s = |k: &str| t.get(k).and_then(scalar_text);
                Toleration {
                    key: s("key"),
                    operator: s("operator").unwrap_or_else(|| "Equal".into()),
                    value: s("value"),
                    effect: s("effect"),
                }
            })
            .collect()
    }
}

/// The env variable cgpu-installer reads its policy from. A container with several entries of
/// that name gets the last one (the kubelet's rule for repeated env names), which is what every
/// reader of it uses: [`Installer::policy`], and the rollout's observation of the DaemonSet and
/// its pods (`status` reads through it).
pub const POLICY_ENV: &str = "POLICY";

/// A POLICY value as a policy number: `"3"` or an unquoted 3.
pub fn policy_of(v: &Node) -> Option<u8> {
    cgpu::env_scalar_policy(v.scalar()?)
}

/// A scalar's text as Kubernetes would see it after quoting: strings as is, other scalars by
/// their source text.
pub fn scalar_text(n: &Node) -> Option<String> {
    match n.scalar()? {
        Scalar::Str(s) => Some(s.clone()),
        Scalar::Null => None,
        _ => Some(n.raw().to_string()),
    }
}
