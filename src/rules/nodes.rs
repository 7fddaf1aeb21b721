//! Nodes (`kubectl get nodes -o yaml|json`): a typed view of a Node object and the node rules
//! (virtual-node-cgpu, legacy-cgpu-label, driver-incompatible).

use semver::Version;

use crate::manifest::{Object, Objects, Toleration, scalar_text};
use crate::rules::{Ctx, child};
use crate::yaml::Node;

pub const SCHEDULE_LABEL: &str = "ack.node.gpu.schedule";
pub const REGION_LABEL: &str = "topology.kubernetes.io/region";
pub const DRIVER_LABEL: &str = "ack.aliyun.com/nvidia-driver-version";
pub const LEGACY_LABEL: &str = "cgpu";

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taint {
    pub key: String,
    pub value: Option<String>,
    pub effect: String,
}

impl std::fmt::Display for Taint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.value {
            Some(v) => write!(f, "{}={}:{}", self.key, v, self.effect),
            None => write!(f, "{}:{}", self.key, self.effect),
        }
    }
}

impl Taint {
    /// Does any of `tolerations` tolerate this taint?
    pub fn tolerated_by(&self, tolerations: &[Toleration]) -> bool {
        tolerations
            .iter()
            .any(|t| t.tolerates(&self.key, self.value.as_deref(), &self.effect))
    }
}

/// A `kind: Node` object.
#[derive(Debug, Clone, Copy)]
pub struct NodeView<'a> {
    pub obj: Object<'a>,
}

/// The Node objects of a document root (one Node, a `List` or a `NodeList`).
pub fn nodes_of<'o>(objects: &'o Objects<'_>) -> Vec<NodeView<'o>> {
    objects
        .iter()
        .filter(|o| o.kind == "Node")
        .map(|obj| NodeView { obj })
        .collect()
}

impl<'a> NodeView<'a> {
    pub fn name(&self) -> &'a str {
        self.obj.name
    }

    pub fn label_node(&self, key: &str) -> Option<&'a Node> {
        self.obj.node.get("metadata")?.get("labels")?.get(key)
    }

    pub fn label(&self, key: &str) -> Option<String> {
        self.label_node(key).and_then(scalar_text)
    }

    pub fn label_pointer(&self, key: &str) -> String {
        child(&format!("{}/metadata/labels", self.obj.pointer), key)
    }

    /// All labels as string pairs (non-string values by their text).
    pub fn labels(&self) -> Vec<(String, String)> {
        self.obj
            .node
            .get("metadata")
            .and_then(|m| m.get("labels"))
            .and_then(Node::as_map)
            .map(|m| {
                m.iter()
                    .filter_map(|e| Some((e.key.clone(), scalar_text(&e.value)?)))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn taints(&self) -> Vec<Taint> {
        let Some(list) = self.obj.node.pointer("/spec/taints").and_then(Node::as_seq) else {
            return Vec::new();
        };
        list.iter()
            .filter_map(|t| {
                let s = |k: &str| t.get(k).and_then(scalar_text);
                Some(Taint {
                    key: s("key")?,
                    value: s("value").filter(|v| !v.is_empty()),
                    effect: s("effect")?,
                })
            })
            .collect()
    }

    /// `spec.unschedulable: true` (cordoned).
    pub fn unschedulable(&self) -> bool {
        self.obj
            .node
            .pointer("/spec/unschedulable")
            .and_then(Node::scalar)
            .is_some_and(|s| matches!(s, crate::yaml::Scalar::Bool(true)))
    }

    /// The status of the Ready condition (`True`, `False`, `Unknown`), if reported.
    pub fn ready_status(&self) -> Option<String> {
        self.obj
            .node
            .pointer("/status/conditions")
            .and_then(Node::as_seq)?
            .iter()
            .find(|c| c.get("type").and_then(Node::as_str) == Some("Ready"))
            .and_then(|c| c.get("status"))
            .and_then(scalar_text)
    }

    pub fn is_ready(&self) -> bool {
        self.ready_status().as_deref() == Some("True")
    }

    pub fn provider_id(&self) -> Option<String> {
        self.obj
            .node
            .pointer("/spec/providerID")
            .and_then(scalar_text)
    }

    /// The ECS form of the provider id, `<region>.<instance-id>` with an `i-` instance id, split.
    /// The instance id is returned as written: the caller validates it before using it.
    pub fn ecs_instance(&self) -> Option<(String, String)> {
        let p = self.provider_id()?;
        let (region, id) = p.split_once('.')?;
        id.starts_with("i-")
            .then(|| (region.to_string(), id.to_string()))
    }

    /// A virtual (non-ECS) node: the virtual-kubelet label or taint, or a provider id that is not
    /// the ECS `<region>.i-…` form. A node without any provider id is not judged (test clusters,
    /// hand-written lists): only an explicit marker makes it virtual.
    pub fn is_virtual(&self) -> bool {
        self.label("type").as_deref() == Some("virtual-kubelet")
            || self.label("alibabacloud.com/virtual-node").as_deref() == Some("true")
            || self
                .taints()
                .iter()
                .any(|t| t.key == "virtual-kubelet.io/provider")
            || (self.provider_id().is_some() && self.ecs_instance().is_none())
    }

    pub fn region(&self) -> Option<String> {
        self.label(REGION_LABEL)
    }

    pub fn schedule(&self) -> Option<String> {
        self.label(SCHEDULE_LABEL)
    }

    /// Legacy dedicated-cluster label `cgpu=true`.
    pub fn legacy_cgpu(&self) -> bool {
        self.label(LEGACY_LABEL).as_deref() == Some("true")
    }

    /// Does a nodeSelector select this node?
    pub fn matches(&self, selector: &[(String, String)]) -> bool {
        selector
            .iter()
            .all(|(k, v)| self.label(k).as_deref() == Some(v.as_str()))
    }
}

/// Parse a driver version (`550.144.03`) into its numeric parts.
fn driver_parts(s: &str) -> Option<Vec<u64>> {
    let parts: Option<Vec<u64>> = s.trim().split('.').map(|p| p.parse().ok()).collect();
    parts.filter(|p| !p.is_empty())
}

/// Can cGPU `cgpu` run NVIDIA driver `driver` (domain.md §4, the cGPU FAQ matrix)?
/// `Some(false)` only where the matrix says so; `None` when the matrix does not say
/// (unknown cGPU range, an unparsable driver version).
pub fn driver_supported(cgpu: &Version, driver: &str) -> Option<bool> {
    let d = driver_parts(driver)?;
    let major = d[0];
    let at_most = |max: &[u64]| d.as_slice() <= max;
    let v = |a, b, c| Version::new(a, b, c);
    if *cgpu >= v(1, 5, 3) {
        // 460 … 575 supported; the FAQ says nothing about other series.
        return (460..=575).contains(&major).then_some(true);
    }
    if *cgpu >= v(1, 0, 5) {
        return Some(match major {
            460 => true,
            470 => at_most(&[470, 161, 3]),
            510 => at_most(&[510, 108, 3]),
            515 => at_most(&[515, 86, 1]),
            525 => at_most(&[525, 89, 3]),
            m if m >= 535 => false,
            m if m > 460 => false,
            _ => return None,
        });
    }
    if *cgpu >= v(0, 8, 13) {
        return Some(match major {
            460 => true,
            470 => at_most(&[470, 161, 3]),
            m if m >= 510 => false,
            m if m > 460 => false,
            _ => return None,
        });
    }
    None
}

/// The node rules over one node. `cgpu` is the cGPU version of the installer that selects the
/// node (the version that will run there, for the checklist); `installer_selector` is the
/// cgpu-installer's nodeSelector when an installer is known.
pub fn check(
    ctx: &mut Ctx,
    node: &NodeView,
    cgpu: Option<&Version>,
    installer_selector: Option<&[(String, String)]>,
) {
    let schedule = node.schedule();
    let isolating = matches!(schedule.as_deref(), Some("cgpu" | "core_mem"));
    if node.is_virtual() && (isolating || node.legacy_cgpu()) {
        let key = if isolating {
            SCHEDULE_LABEL
        } else {
            LEGACY_LABEL
        };
        let label = node.label_node(key).expect("label present");
        ctx.at(
            "virtual-node-cgpu",
            label,
            node.label_pointer(key),
            format!(
                "node `{}` is a virtual (non-ECS) node labelled {key}={}: cGPU memory isolation works only on ECS nodes and the installer does not run there",
                node.name(),
                scalar_text(label).unwrap_or_default()
            ),
        );
    }
    // An older ack-cgpu installer selects `cgpu: "true"` itself: there the label is how the
    // installer finds the node (domain.md §10), not something to relabel.
    let selected = installer_selector.is_some_and(|s| !s.is_empty() && node.matches(s));
    if node.legacy_cgpu()
        && schedule.is_none()
        && !selected
        && let Some(label) = node.label_node(LEGACY_LABEL)
    {
        let selecting = match installer_selector {
            Some(s) if !s.is_empty() => s
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(","),
            _ => format!("{SCHEDULE_LABEL}=cgpu"),
        };
        ctx.at(
            "legacy-cgpu-label",
            label,
            node.label_pointer(LEGACY_LABEL),
            format!(
                "node `{}` has the legacy label cgpu=true but no {SCHEDULE_LABEL}: cgpu-installer (selecting {selecting}) does not run there, yet cGPU may be active and must use the cluster's policy",
                node.name()
            ),
        );
    }
    if let (Some(cgpu), Some(label)) = (cgpu, node.label_node(DRIVER_LABEL))
        && let Some(driver) = scalar_text(label)
        && driver_supported(cgpu, &driver) == Some(false)
    {
        ctx.at(
            "driver-incompatible",
            label,
            node.label_pointer(DRIVER_LABEL),
            format!(
                "node `{}` runs NVIDIA driver {driver}, which cGPU {cgpu} does not support",
                node.name()
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_matrix() {
        let v = |s: &str| Version::parse(s).unwrap();
        let table = [
            ("1.5.3", "550.144.03", Some(true)),
            ("1.5.20", "575.51.03", Some(true)),
            ("1.5.3", "460.106.00", Some(true)),
            ("1.5.3", "590.1", None),
            ("1.5.2", "535.161.08", Some(false)),
            ("1.0.6", "470.161.03", Some(true)),
            ("1.0.6", "470.182.03", Some(false)),
            ("1.0.9", "525.89.03", Some(true)),
            ("1.0.9", "525.105.17", Some(false)),
            ("1.0.9", "515.86.01", Some(true)),
            ("1.0.9", "510.108.03", Some(true)),
            ("1.0.9", "510.47.03", Some(true)),
            ("1.0.3", "510.47.03", Some(false)),
            ("0.8.13", "460.91.03", Some(true)),
            ("0.8.13", "470.199.02", Some(false)),
            ("0.8.10", "470.199.02", None),
            ("1.5.3", "not-a-version", None),
        ];
        for (cgpu, driver, want) in table {
            assert_eq!(
                driver_supported(&v(cgpu), driver),
                want,
                "cGPU {cgpu} with driver {driver}"
            );
        }
    }
}
