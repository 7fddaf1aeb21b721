//! The node rules (virtual-node-cgpu, legacy-cgpu-label, driver-incompatible, and from the
//! compatibility data node-os-unsupported, node-cgroup-v2, node-family-unsupported,
//! node-known-issue, hami-device-plugin-conflict, node-kubelet-cgroup-v2, node-containerd-2,
//! node-driver-outdated, node-family-needs, installer-selects-exclusive-node,
//! node-pool-driver-drift) over the Node objects of [`crate::manifest::node`], and pods-per-gpu
//! over the Pods among the inputs.

use crate::catalogue::RuleId;
use semver::Version;

use crate::cgpu::{compat, driver_supported};

use crate::manifest::node::NodeView;
use crate::manifest::scalar_text;
use crate::rules::Ctx;

use crate::cgpu::{
    ACK_DEVICE_PLUGIN, HAMI_NODE_LABEL, ISOLATING_SCHEDULES, LEGACY_LABEL, SCHEDULE_DEFAULT,
    SCHEDULE_DISABLED, SCHEDULE_LABEL,
};

/// What the rest of the cluster says, for the node rules.
#[derive(Debug, Clone, Default)]
pub struct NodeFacts {
    /// The cGPU version the installer deploys, when known (for `driver-incompatible`).
    pub cgpu: Option<Version>,
    /// Whether the cluster's cgpu-installer selects the legacy `cgpu: "true"` nodes
    /// (`Some(true)`), ACK Pro's `ack.node.gpu.schedule=cgpu` ones (`Some(false)`), or is not
    /// among the inputs (`None`).
    pub legacy_installer: Option<bool>,
    /// The GPU device plugins among the inputs (for `hami-device-plugin-conflict`).
    pub device_plugins: DevicePlugins,
    /// The installer among the inputs that selects this node: its name and its nodeSelector
    /// as `k=v,…` (for `installer-selects-exclusive-node`).
    pub selected_by: Option<(String, String)>,
    /// The GPU nodes' drivers per node pool, over every input: pool id → driver → nodes (for
    /// `node-pool-driver-drift`).
    pub pool_drivers: PoolDrivers,
}

/// Node pool id → NVIDIA driver → how many of the pool's nodes run it.
pub type PoolDrivers =
    std::collections::BTreeMap<String, std::collections::BTreeMap<String, usize>>;

/// The node pool label of the data's `[[pool_drift]]` entry that a rule reads.
fn pool_label() -> Option<&'static compat::PoolDrift> {
    compat::data()
        .pool_drift
        .iter()
        .find(|p| uses(&p.rules, RuleId::NodePoolDriverDrift))
}

/// Count a node's driver under its node pool (nothing for a node without either).
pub fn count_pool_driver(pools: &mut PoolDrivers, node: &NodeView) {
    let Some(entry) = pool_label() else { return };
    if let (Some(pool), Some(d)) = (node.label(&entry.label), node.driver()) {
        *pools
            .entry(pool)
            .or_default()
            .entry(d.version.trim().to_string())
            .or_default() += 1;
    }
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
    if let (Some(cgpu), Some(d)) = (&facts.cgpu, node.driver())
        && isolating(node)
        && driver_supported(cgpu, &d.version) == Some(false)
    {
        let driver = &d.version;
        ctx.at(
            RuleId::DriverIncompatible,
            d.at,
            d.pointer,
            format!(
                "node `{}` runs NVIDIA driver {driver}, which cGPU {cgpu} does not support",
                node.name()
            ),
        );
    }
}

/// A DaemonSet's name and nodeSelector.
pub type Plugin = (String, Vec<(String, String)>);

/// The GPU device plugins among the inputs, for `hami-device-plugin-conflict`: their names and
/// nodeSelectors. `None`: no such DaemonSet among the inputs, so the labels the plugins select by
/// (HAMi's guide) stand in for it.
#[derive(Debug, Clone, Default)]
pub struct DevicePlugins {
    pub hami: Option<Vec<Plugin>>,
    pub ack: Option<Vec<Plugin>>,
}

/// The rules that read the compatibility data ([`crate::cgpu::compat`]) for one node: its
/// operating system, cgroup v2, instance family and known issues against the cGPU version of the
/// installer that selects it (the planned one under `checklist`), and the HAMi conflict.
pub fn check_compat(ctx: &mut Ctx, node: &NodeView, facts: &NodeFacts) {
    hami_conflict(ctx, node, &facts.device_plugins);
    exclusive_node(ctx, node, facts.selected_by.as_ref());
    pool_drift(ctx, node, &facts.pool_drivers);
    let data = compat::data();
    if isolating(node) {
        driver_outdated(ctx, node, data);
    }
    let Some(cgpu) = &facts.cgpu else { return };
    if !isolating(node) {
        return;
    }
    // A version newer than the data: nothing is known about it, which is not an error.
    if data.is_newer(cgpu) {
        return;
    }
    let kubelet_needs_v2 = kubelet(ctx, node, cgpu, data);
    family_needs(ctx, node, cgpu, data);
    let os = node.os_image();
    let mut os_reported = false;
    if let Some((os_node, image)) = &os {
        for s in data
            .missing_support("os", cgpu)
            .filter(|s| uses(&s.rules, RuleId::NodeOsUnsupported) && s.matches(image))
        {
            os_reported = true;
            ctx.at(
                RuleId::NodeOsUnsupported,
                os_node,
                node.os_image_pointer(),
                format!(
                    "node `{}` runs {image}: cGPU {cgpu} predates {} (added in cGPU {}, entry {}); upgrade cGPU to {} or later",
                    node.name(),
                    s.text,
                    s.since,
                    s.id,
                    s.since
                ),
            );
        }
        // A kernel older than cgroup v2 needs runs cgroup v1 whatever the distribution says.
        let kernel = node.kernel_version();
        let old_kernel = kernel.as_deref().and_then(|k| {
            data.kernel_for(RuleId::NodeCgroupV2.name())
                .find(|e| e.predates(k) == Some(true))
        });
        if !os_reported
            && !kubelet_needs_v2
            && old_kernel.is_none()
            && let Some(c) = data.cgroup_v2_default(image)
            && let Some(s) = data
                .missing_support("cgroup", cgpu)
                .find(|s| uses(&s.rules, RuleId::NodeCgroupV2))
        {
            let kernel = kernel
                .map(|k| format!(" with kernel {k}"))
                .unwrap_or_default();
            ctx.at(
                RuleId::NodeCgroupV2,
                os_node,
                node.os_image_pointer(),
                format!(
                    "node `{}` runs {image}{kernel}, which uses cgroup v2 by default ({} {} and later, entry {}): cGPU {cgpu} predates {} (added in cGPU {}, entry {})",
                    node.name(),
                    c.os,
                    c.since,
                    c.id,
                    s.text,
                    s.since,
                    s.id
                ),
            );
        }
    }
    family(ctx, node, cgpu, data);
    known_issues(ctx, node, cgpu, data, os.as_ref().map(|(_, i)| i.as_str()));
}

fn uses(rules: &[String], rule: RuleId) -> bool {
    rules.iter().any(|r| r == rule.name())
}

/// `node-kubelet-cgroup-v2` and `node-containerd-2`: what the node's kubelet release needs.
/// Returns whether the node was found to need cgroup v2 support that `cgpu` predates.
fn kubelet(ctx: &mut Ctx, node: &NodeView, cgpu: &Version, data: &compat::Compat) -> bool {
    // A virtual node's "kubelet" has no cgroups and runs no cGPU (virtual-node-cgpu says so).
    if node.is_virtual() {
        return false;
    }
    let Some((at, version, pointer)) = node.kubelet_version() else {
        return false;
    };
    let mut needs_v2 = false;
    for k in data
        .kubelet
        .iter()
        .filter(|k| k.covers(&version) == Some(true))
    {
        let needs = k.needs.as_deref().and_then(|id| data.support_entry(id));
        if uses(&k.rules, RuleId::NodeKubeletCgroupV2)
            && let Some(s) = needs
            && *cgpu < s.since.0
        {
            needs_v2 = true;
            ctx.at(
                RuleId::NodeKubeletCgroupV2,
                at,
                pointer.clone(),
                format!(
                    "node `{}` runs kubelet {version} (Kubernetes {} and later: {}; entry {}, source {}): cGPU {cgpu} predates {} (added in cGPU {}, entry {}); upgrade cGPU to {} or later before Kubernetes {}",
                    node.name(),
                    k.from,
                    k.text,
                    k.id,
                    k.source,
                    s.text,
                    s.since,
                    s.id,
                    s.since,
                    k.from
                ),
            );
        } else if uses(&k.rules, RuleId::NodeContainerd2) && needs.is_none() {
            ctx.at(
                RuleId::NodeContainerd2,
                at,
                pointer.clone(),
                format!(
                    "node `{}` runs kubelet {version} with cGPU {cgpu}: {} (Kubernetes {} and later, entry {}, source {})",
                    node.name(),
                    k.text,
                    k.from,
                    k.id,
                    k.source
                ),
            );
        }
    }
    needs_v2
}

/// `node-driver-outdated`: a driver ACK's list calls incompatible with the latest OS images.
fn driver_outdated(ctx: &mut Ctx, node: &NodeView, data: &compat::Compat) {
    let Some(d) = node.driver() else { return };
    for list in data
        .driver_list
        .iter()
        .filter(|l| uses(&l.rules, RuleId::NodeDriverOutdated) && l.is_incompatible(&d.version))
    {
        ctx.at(
            RuleId::NodeDriverOutdated,
            d.at,
            d.pointer.clone(),
            format!(
                "node `{}` runs NVIDIA driver {}, which ACK's driver list of {} calls \"{}\" (entry {}, source {}); the list's default driver is {}",
                node.name(),
                d.version,
                list.date,
                list.text,
                list.id,
                list.source,
                list.default
            ),
        );
    }
}

/// `node-family-needs`: an instance family that needs a newer cGPU (an error) or the driver ACK
/// names for it (a warning).
fn family_needs(ctx: &mut Ctx, node: &NodeView, cgpu: &Version, data: &compat::Compat) {
    let Some((key, instance_type)) = node.instance_type() else {
        return;
    };
    let Some(family) = crate::cgpu::instance_family(&instance_type) else {
        return;
    };
    for e in data.family_needs.iter().filter(|e| {
        uses(&e.rules, RuleId::NodeFamilyNeeds) && e.families.iter().any(|f| f == family)
    }) {
        if *cgpu < e.since.0
            && let Some(label) = node.label_node(key)
        {
            ctx.at(
                RuleId::NodeFamilyNeeds,
                label,
                node.label_pointer(key),
                format!(
                    "node `{}` is an {instance_type} ({family}): cGPU {cgpu} predates the family's support (cGPU {} or later: {}; entry {}, source {}); upgrade cGPU to {} or later",
                    node.name(),
                    e.since,
                    e.text,
                    e.id,
                    e.source,
                    e.since
                ),
            );
        }
        if let Some(d) = node.driver()
            && let (Some(have), Some(want)) = (
                compat::driver_parts(&d.version),
                compat::driver_parts(&e.driver),
            )
            && have < want
        {
            ctx.at(
                RuleId::NodeFamilyNeeds,
                d.at,
                d.pointer.clone(),
                format!(
                    "node `{}` is an {instance_type} ({family}) with NVIDIA driver {}: {} (entry {}, source {}); give its node pool driver {}",
                    node.name(),
                    d.version,
                    e.text,
                    e.id,
                    e.source,
                    e.driver
                ),
            )
            .severity(crate::catalogue::Severity::Warning);
        }
    }
}

/// `installer-selects-exclusive-node`: an installer selects a node whose
/// `ack.node.gpu.schedule` hands its GPUs to something else (MIG, DRA).
fn exclusive_node(ctx: &mut Ctx, node: &NodeView, selected_by: Option<&(String, String)>) {
    let Some((installer, selector)) = selected_by else {
        return;
    };
    let Some(schedule) = node.schedule() else {
        return;
    };
    let Some(at) = node.label_node(SCHEDULE_LABEL) else {
        return;
    };
    for s in compat::data()
        .schedule
        .iter()
        .filter(|s| uses(&s.rules, RuleId::InstallerSelectsExclusiveNode) && s.value == schedule)
    {
        ctx.at(
            RuleId::InstallerSelectsExclusiveNode,
            at,
            node.label_pointer(SCHEDULE_LABEL),
            format!(
                "node `{}` is labelled {SCHEDULE_LABEL}={} ({}; entry {}, source {}), yet {installer} selects it (nodeSelector {selector}): cGPU's module would be installed on GPUs another component owns",
                node.name(),
                s.value,
                s.text,
                s.id,
                s.source
            ),
        );
    }
}

/// `node-pool-driver-drift`: this GPU node's driver is not its pool's most common one.
fn pool_drift(ctx: &mut Ctx, node: &NodeView, pools: &PoolDrivers) {
    let Some(entry) = pool_label() else { return };
    let (Some(pool), Some(d)) = (node.label(&entry.label), node.driver()) else {
        return;
    };
    let Some(drivers) = pools.get(&pool).filter(|m| m.len() > 1) else {
        return;
    };
    let mine = d.version.trim();
    // The pool's reference: the driver most of its nodes run, the newest one on a tie.
    let Some((reference, _)) = drivers
        .iter()
        .max_by_key(|(v, n)| (**n, compat::driver_parts(v).unwrap_or_default()))
    else {
        return;
    };
    if reference == mine {
        return;
    }
    let mut counted: Vec<(&String, &usize)> = drivers.iter().collect();
    counted.sort_by_key(|(v, n)| (std::cmp::Reverse(**n), compat::driver_parts(v)));
    let list: Vec<String> = counted
        .iter()
        .map(|(v, n)| format!("{v} ({n} node{})", if **n == 1 { "" } else { "s" }))
        .collect();
    ctx.at(
        RuleId::NodePoolDriverDrift,
        d.at,
        d.pointer.clone(),
        format!(
            "node `{}` of node pool `{pool}` runs NVIDIA driver {mine}, while most of the pool's GPU nodes run {reference} (the pool's drivers: {}): \"{}\" (entry {}, source {}); {}",
            node.name(),
            list.join(", "),
            entry.text,
            entry.id,
            entry.source,
            entry.remedy
        ),
    );
}

fn family(ctx: &mut Ctx, node: &NodeView, cgpu: &Version, data: &compat::Compat) {
    let Some((key, instance_type)) = node.instance_type() else {
        return;
    };
    let Some(family) = crate::cgpu::instance_family(&instance_type) else {
        return;
    };
    let Some(label) = node.label_node(key) else {
        return;
    };
    let missing: Vec<_> = data
        .missing_support("family", cgpu)
        .filter(|s| uses(&s.rules, RuleId::NodeFamilyUnsupported) && s.matches(family))
        .collect();
    for s in &missing {
        ctx.at(
            RuleId::NodeFamilyUnsupported,
            label,
            node.label_pointer(key),
            format!(
                "node `{}` is an {instance_type} ({family}): cGPU {cgpu} predates {} (added in cGPU {}, entry {}); upgrade cGPU to {} or later",
                node.name(),
                s.text,
                s.since,
                s.id,
                s.since
            ),
        );
    }
    if missing.is_empty()
        && let Some(row) = data.families_at(cgpu)
        && uses(&row.rules, RuleId::NodeFamilyUnsupported)
        && !row.families.iter().any(|f| f == family)
    {
        ctx.at(
            RuleId::NodeFamilyUnsupported,
            label,
            node.label_pointer(key),
            format!(
                "node `{}` is an {instance_type}: the cGPU FAQ does not list the {family} family among those cGPU {}–{} supports (entry {})",
                node.name(),
                row.from,
                row.to,
                row.id
            ),
        )
        .severity(crate::catalogue::Severity::Warning);
    }
}

fn known_issues(
    ctx: &mut Ctx,
    node: &NodeView,
    cgpu: &Version,
    data: &compat::Compat,
    os_image: Option<&str>,
) {
    let node_driver = node.driver();
    let driver = node_driver.as_ref().map(|d| d.version.clone());
    for i in data
        .issues_at(cgpu)
        .filter(|i| uses(&i.rules, RuleId::NodeKnownIssue))
        .filter(|i| i.concerns(driver.as_deref(), os_image))
        // A driver the version cannot run at all is driver-incompatible already.
        .filter(|i| {
            i.driver_from.is_none()
                || driver
                    .as_deref()
                    .is_none_or(|d| driver_supported(cgpu, d) != Some(false))
        })
    {
        // Point at what makes the issue this node's: the driver label, else the OS image.
        let (at, pointer) = match (i.driver_from, &node_driver, node.os_image()) {
            (Some(_), Some(d), _) => (d.at, d.pointer.clone()),
            (_, _, Some((n, _))) => (n, node.os_image_pointer()),
            _ => continue,
        };
        let what = match (&driver, i.driver_from, os_image, &i.os) {
            (Some(d), Some(_), _, _) => format!("runs NVIDIA driver {d}"),
            (_, _, Some(os), Some(_)) => format!("runs {os}"),
            _ => continue,
        };
        let fixed = i
            .fixed
            .as_deref()
            .filter(|f| !i.text.contains(f))
            .map(|f| format!("; fixed in {f}"))
            .unwrap_or_default();
        ctx.at(
            RuleId::NodeKnownIssue,
            at,
            pointer,
            format!(
                "node `{}` {what} with cGPU {cgpu}: {} (entry {}{fixed})",
                node.name(),
                i.text,
                i.id
            ),
        );
    }
    // The matrix supports the driver; the release notes add that series later.
    if let (Some(d), Some(nd)) = (&driver, &node_driver)
        && driver_supported(cgpu, d) == Some(true)
        && let Some(major) = compat::driver_parts(d).map(|p| p[0])
    {
        for s in data.missing_support("driver", cgpu).filter(|s| {
            uses(&s.rules, RuleId::NodeKnownIssue)
                && s.value.parse::<u64>().is_ok_and(|from| major >= from)
        }) {
            ctx.at(
                RuleId::NodeKnownIssue,
                nd.at,
                nd.pointer.clone(),
                format!(
                    "node `{}` runs NVIDIA driver {d} with cGPU {cgpu}: the cGPU FAQ's matrix supports it, but the ack-cgpu release notes add {} only in cGPU {} (entry {}); the sources disagree",
                    node.name(),
                    s.text,
                    s.since,
                    s.id
                ),
            );
        }
    }
}

/// HAMi's device plugin and ACK's on one node (HAMi's ACK guide).
fn hami_conflict(ctx: &mut Ctx, node: &NodeView, plugins: &DevicePlugins) {
    // Which plugin selects the node, and why: a DaemonSet's nodeSelector among the inputs, else
    // the label the plugin selects by.
    let selected = |ds: &Option<Vec<Plugin>>, label: (&str, &str)| -> Option<String> {
        match ds {
            Some(ds) => ds
                .iter()
                .find(|(_, sel)| !sel.is_empty() && node.matches(sel))
                .map(|(name, sel)| {
                    let sel: Vec<String> = sel.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    format!("DaemonSet {name} selects {}", sel.join(","))
                }),
            None => (node.label(label.0).as_deref() == Some(label.1))
                .then(|| format!("{}={}", label.0, label.1)),
        }
    };
    let Some(hami) = selected(&plugins.hami, HAMI_NODE_LABEL) else {
        return;
    };
    let schedule = node.schedule();
    let ack = selected(&plugins.ack, (SCHEDULE_LABEL, SCHEDULE_DEFAULT));
    let conflict = compat::data()
        .conflicts
        .iter()
        .find(|c| uses(&c.rules, RuleId::HamiDevicePluginConflict));
    let (words, entry) = conflict.map_or(("", ""), |c| (c.text.as_str(), c.id.as_str()));
    // Point at the schedule label when there is one, else at a label HAMi selects by.
    let key = match &schedule {
        Some(_) => SCHEDULE_LABEL.to_string(),
        None => plugins
            .hami
            .iter()
            .flatten()
            .flat_map(|(_, sel)| sel.iter().map(|(k, _)| k.clone()))
            .find(|k| node.label_node(k).is_some())
            .unwrap_or_else(|| HAMI_NODE_LABEL.0.to_string()),
    };
    let Some(at) = node.label_node(&key) else {
        return;
    };
    if let Some(ack) = ack {
        ctx.at(
            RuleId::HamiDevicePluginConflict,
            at,
            node.label_pointer(&key),
            format!(
                "node `{}`: HAMi's device plugin ({hami}) and ACK's {ACK_DEVICE_PLUGIN} ({ack}) both select it, and both register nvidia.com/gpu: \"{words}\" (HAMi's ACK guide, entry {entry}); label the node {SCHEDULE_LABEL}={SCHEDULE_DISABLED}",
                node.name(),
            ),
        );
    } else if let Some(s) = schedule
        .as_deref()
        .filter(|s| *s != SCHEDULE_DISABLED && *s != SCHEDULE_DEFAULT)
    {
        ctx.at(
            RuleId::HamiDevicePluginConflict,
            at,
            node.label_pointer(&key),
            format!(
                "node `{}`: HAMi's device plugin ({hami}) selects it while it runs ACK's GPU sharing ({SCHEDULE_LABEL}={s}); HAMi's ACK guide was verified without ACK's shared GPU scheduling components and labels HAMi's nodes {SCHEDULE_LABEL}={SCHEDULE_DISABLED}",
                node.name()
            ),
        )
        .severity(crate::catalogue::Severity::Warning);
    }
}

/// A node with more cGPU-sharing pods than allowed, and the first pod past the limit.
#[derive(Debug)]
pub struct PodsOver {
    pub file: String,
    pub document: usize,
    /// The pod's JSON pointer in its document.
    pub pointer: String,
    pub node: String,
    pub pods: usize,
    /// The node's GPU count, when the node is among the inputs with one.
    pub gpus: Option<u64>,
    pub limit: u64,
}

/// A pod counted by `pods-per-gpu`: on a node, running or pending, requesting a share resource.
pub fn sharing_pod_node<'a>(o: &crate::manifest::Object<'a>) -> Option<&'a str> {
    if o.kind != "Pod" {
        return None;
    }
    let node = o
        .node
        .pointer("/spec/nodeName")
        .and_then(crate::yaml::Node::as_str)?;
    if matches!(
        o.node
            .pointer("/status/phase")
            .and_then(crate::yaml::Node::as_str),
        Some("Succeeded" | "Failed")
    ) {
        return None;
    }
    let containers = o
        .node
        .pointer("/spec/containers")
        .and_then(crate::yaml::Node::as_seq)?;
    let shares = containers.iter().any(|c| {
        ["requests", "limits"].iter().any(|k| {
            c.get("resources").and_then(|r| r.get(k)).is_some_and(|m| {
                crate::cgpu::SHARE_RESOURCES
                    .iter()
                    .any(|r| m.get(r).is_some())
            })
        })
    });
    shares.then_some(node)
}

/// Whether an input holds a pod `pods-per-gpu` counts ([`sharing_pod_node`] over its parsed
/// text): how `check --cluster --pods` keeps, of the pods listed, only those the rule reads.
pub fn counts_a_pod(src: &std::sync::Arc<crate::yaml::Source>) -> bool {
    // A counted pod names a share resource: most pods are left out without being parsed.
    if !crate::cgpu::SHARE_RESOURCES
        .iter()
        .any(|r| src.text.contains(r))
    {
        return false;
    }
    let parsed = crate::yaml::parse(src);
    parsed
        .documents
        .iter()
        .filter_map(|d| d.root.as_ref())
        .any(|root| {
            crate::manifest::Objects::of(root)
                .iter()
                .any(|o| sharing_pod_node(&o).is_some())
        })
}

/// A node's GPU count from its status.allocatable (`None`: not there, or zero).
pub fn node_gpus(o: &crate::manifest::Object<'_>) -> Option<u64> {
    crate::cgpu::GPU_COUNT_RESOURCES.iter().find_map(|r| {
        let n = o.node.get("status")?.get("allocatable")?.get(r)?;
        crate::manifest::scalar_text(n)?
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|g| *g > 0)
    })
}

/// `pods-per-gpu` on the first pod past the limit, with the data entry's words.
pub fn pods_per_gpu(ctx: &mut Ctx, root: &crate::yaml::Node, over: &PodsOver) {
    let Some(pod) = root.pointer(&over.pointer) else {
        return;
    };
    let at = pod.pointer("/spec/nodeName").unwrap_or(pod);
    let Some(entry) = crate::cgpu::compat::data()
        .issues
        .iter()
        .find(|i| i.rules.iter().any(|r| r == RuleId::PodsPerGpu.name()))
    else {
        return;
    };
    let per = match over.gpus {
        Some(g) => format!("{g} GPU(s), so at most {}", over.limit),
        None => format!(
            "an unknown GPU count (the node and its status.allocatable aliyun.com/gpu-count are not among the inputs), counted as one GPU, so at most {}",
            over.limit
        ),
    };
    ctx.at(
        RuleId::PodsPerGpu,
        at,
        format!("{}/spec/nodeName", over.pointer),
        format!(
            "{} pods that request a cGPU share resource run on node `{}`, which has {per}: {} (entry {}, source {}); this pod is the first past the limit",
            over.pods, over.node, entry.text, entry.id, entry.source
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A pod as `check --cluster --pods` makes its source: kubectl's JSON of the object.
    fn counts(pod: &Value) -> bool {
        counts_a_pod(&crate::yaml::Source::new(
            "prod:Pod/inference/p",
            crate::cluster::kubectl_json(pod),
        ))
    }

    fn pod(resources: Value, phase: &str) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "inference"},
            "spec": {"nodeName": "n1", "containers": [{"name": "m", "resources": resources}]},
            "status": {"phase": phase},
        })
    }

    /// `check --cluster --pods` keeps exactly the pods `sharing_pod_node` counts; the text
    /// search before parsing only saves work.
    #[test]
    fn counts_a_pod_is_the_rules_predicate() {
        let mem = json!({"limits": {"aliyun.com/gpu-mem": "2"}});
        assert!(counts(&pod(mem.clone(), "Running")));
        let core = json!({"requests": {"aliyun.com/gpu-core.percentage": "30"}});
        assert!(counts(&pod(core, "Pending")));
        assert!(!counts(&pod(mem.clone(), "Succeeded")));
        assert!(!counts(&pod(mem.clone(), "Failed")));
        assert!(!counts(&pod(
            json!({"limits": {"nvidia.com/gpu": "1"}}),
            "Running"
        )));
        // The resource's name elsewhere (an annotation) is no request.
        let mut annotated = pod(json!({}), "Running");
        annotated["metadata"]["annotations"] = json!({"note": "aliyun.com/gpu-mem"});
        assert!(!counts(&annotated));
        // Not on a node yet.
        let mut queued = pod(mem, "Pending");
        queued["spec"].as_object_mut().unwrap().remove("nodeName");
        assert!(!counts(&queued));
    }
}
