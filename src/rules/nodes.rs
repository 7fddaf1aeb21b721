//! The node rules (virtual-node-cgpu, legacy-cgpu-label, driver-incompatible) over the Node
//! objects of [`crate::manifest::node`].

use crate::rules::catalogue::RuleId;
use semver::Version;

use crate::cgpu::driver_supported;

use crate::manifest::node::NodeView;
use crate::manifest::scalar_text;
use crate::rules::Ctx;

use crate::cgpu::{DRIVER_LABEL, ISOLATING_SCHEDULES, LEGACY_LABEL, SCHEDULE_LABEL};

/// What the rest of the cluster says, for the node rules.
#[derive(Debug, Clone, Default)]
pub struct NodeFacts {
    /// The cGPU version the installer deploys, when known (for `driver-incompatible`).
    pub cgpu: Option<Version>,
    /// Whether the cluster's cgpu-installer selects the legacy `cgpu: "true"` nodes
    /// (`Some(true)`), ACK Pro's `ack.node.gpu.schedule=cgpu` ones (`Some(false)`), or is not
    /// among the inputs (`None`).
    pub legacy_installer: Option<bool>,
}

/// Does cGPU isolate GPUs on this node (the FAQ: `ack.node.gpu.schedule` cgpu or core_mem, or
/// the legacy `cgpu=true`)?
pub fn isolating(node: &NodeView) -> bool {
    node.schedule()
        .is_some_and(|s| ISOLATING_SCHEDULES.contains(&s.as_str()))
        || node.legacy_cgpu()
}

/// The node rules over one node.
pub fn check(ctx: &mut Ctx, node: &NodeView, facts: &NodeFacts) {
    let schedule = node.schedule();
    let isolating_schedule = schedule
        .as_deref()
        .is_some_and(|s| ISOLATING_SCHEDULES.contains(&s));
    if node.is_virtual() && (isolating_schedule || node.legacy_cgpu()) {
        let key = if isolating_schedule {
            SCHEDULE_LABEL
        } else {
            LEGACY_LABEL
        };
        let label = node.label_node(key).expect("label present");
        ctx.at(
            RuleId::VirtualNodeCgpu,
            label,
            node.label_pointer(key),
            format!(
                "node `{}` is a virtual (non-ECS) node labelled {key}={}: cGPU memory isolation works only on ECS nodes and the installer does not run there",
                node.name(),
                scalar_text(label).unwrap_or_default()
            ),
        );
    }
    // Where the cluster's installer is the legacy ack-cgpu one (it selects cgpu=true), the
    // legacy label is exactly where it runs: nothing to relabel.
    if node.legacy_cgpu()
        && schedule.is_none()
        && facts.legacy_installer != Some(true)
        && let Some(label) = node.label_node(LEGACY_LABEL)
    {
        let message = match facts.legacy_installer {
            Some(_) => format!(
                "node `{}` has the legacy label cgpu=true but no {SCHEDULE_LABEL}: cgpu-installer (selecting {SCHEDULE_LABEL}=cgpu) does not run there, yet cGPU may be active and must use the cluster's policy",
                node.name()
            ),
            None => format!(
                "node `{}` has the legacy label cgpu=true but no {SCHEDULE_LABEL}: ACK Pro's cgpu-installer (selecting {SCHEDULE_LABEL}=cgpu) does not run there, unless this cluster still runs the legacy ack-cgpu installer (selecting cgpu=true); cGPU may be active and must use the cluster's policy",
                node.name()
            ),
        };
        ctx.at(
            RuleId::LegacyCgpuLabel,
            label,
            node.label_pointer(LEGACY_LABEL),
            message,
        );
    }
    if let (Some(cgpu), Some(label)) = (&facts.cgpu, node.label_node(DRIVER_LABEL))
        && isolating(node)
        && let Some(driver) = scalar_text(label)
        && driver_supported(cgpu, &driver) == Some(false)
    {
        ctx.at(
            RuleId::DriverIncompatible,
            label,
            node.label_pointer(DRIVER_LABEL),
            format!(
                "node `{}` runs NVIDIA driver {driver}, which cGPU {cgpu} does not support",
                node.name()
            ),
        );
    }
}
