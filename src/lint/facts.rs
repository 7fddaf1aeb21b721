//! What the inputs of one cluster say about it, read once before the rules run on each input:
//! the nodes' region, each installer's nodeSelector and cGPU version, the GPU device plugins,
//! and the nodes with more cGPU-sharing pods than the compatibility data allows per GPU.

use std::sync::Arc;

use semver::Version;

use crate::catalogue::RuleId;
use crate::cgpu;
use crate::manifest::Objects;
use crate::manifest::node::nodes_of;
use crate::rules::nodes::{self, NodeFacts};
use crate::yaml::{self, Node, Source};

/// A nodeSelector as label pairs.
pub(super) type Selector = Vec<(String, String)>;

/// What the inputs of one cluster say about it, for the rules on each of them.
#[derive(Debug, Default)]
pub(super) struct ClusterFacts {
    pub(super) region: Option<String>,
    pub(super) nodes: NodeFacts,
    /// Each installer's nodeSelector and the cGPU version its image runs: a node is checked
    /// against the version of the installer that selects it.
    pub(super) installers: Vec<(Selector, Option<Version>, String)>,
    /// Whether any input holds a values `cgpu:` block or an installer.
    pub(super) any_cgpu: bool,
    /// The nodes with more cGPU-sharing pods than the data allows per GPU (`pods-per-gpu`).
    pub(super) pods_over: Vec<nodes::PodsOver>,
}

/// Read the facts from parsed inputs: the nodes' region, the installers' selectors and the cGPU
/// version the installer (else the values) deploys.
pub(super) fn cluster_facts(parsed: &[(Arc<Source>, yaml::Parsed)]) -> ClusterFacts {
    let mut regions = std::collections::BTreeSet::new();
    let mut facts = ClusterFacts::default();
    let mut installer_version: Option<Version> = None;
    // The values' tags, in order: their version matters only to node checks, so they are parsed
    // only when some input holds nodes.
    let mut values_tags: Vec<&str> = Vec::new();
    let mut any_nodes = false;
    // The counted pods in input order: (file, document, pointer, node).
    let mut pods: Vec<(String, usize, String, String)> = Vec::new();
    let mut gpus: std::collections::BTreeMap<String, u64> = Default::default();
    for (src, p) in parsed {
        for doc in &p.documents {
            let Some(root) = &doc.root else { continue };
            if root.entry("cgpu").is_some() {
                facts.any_cgpu = true;
            }
            if let Some(tag) = root.pointer("/cgpu/tag").and_then(Node::as_str) {
                values_tags.push(tag);
            }
            let objects = Objects::of(root);
            let nodes = nodes_of(&objects);
            any_nodes |= !nodes.is_empty();
            regions.extend(nodes.iter().filter_map(|n| n.region()));
            for n in &nodes {
                nodes::count_pool_driver(&mut facts.nodes.pool_drivers, n);
            }
            for o in objects.iter() {
                if let Some(node) = nodes::sharing_pod_node(&o) {
                    pods.push((
                        src.name.clone(),
                        doc.index,
                        o.pointer.to_string(),
                        node.to_string(),
                    ));
                } else if o.kind == "Node"
                    && let Some(g) = nodes::node_gpus(&o)
                {
                    gpus.insert(o.name.to_string(), g);
                }
            }
            for o in objects.iter().filter(is_device_plugin) {
                let pairs = || crate::manifest::Installer { obj: o }.node_selector_pairs();
                if cgpu::is_hami_device_plugin(o.name) {
                    let hami = facts.nodes.device_plugins.hami.get_or_insert_with(Vec::new);
                    hami.push((o.name.to_string(), pairs()));
                } else if o.name == cgpu::ACK_DEVICE_PLUGIN {
                    let ack = facts.nodes.device_plugins.ack.get_or_insert_with(Vec::new);
                    ack.push((o.name.to_string(), pairs()));
                }
            }
            for inst in objects.iter().filter_map(|o| o.installer()) {
                facts.any_cgpu = true;
                let pairs = inst.node_selector_pairs();
                if cgpu::selects_legacy(&pairs) {
                    facts.nodes.legacy_installer = Some(true);
                } else if inst.name() == cgpu::INSTALLER {
                    facts.nodes.legacy_installer.get_or_insert(false);
                }
                let version = inst
                    .image()
                    .and_then(|(img, _)| img.as_str())
                    .and_then(|s| cgpu::split_image(s).tag)
                    .and_then(|tag| cgpu::parse_tag(tag).ok())
                    .map(|t| t.core);
                if let Some(v) = &version {
                    installer_version.get_or_insert(v.clone());
                }
                facts
                    .installers
                    .push((pairs, version, inst.name().to_string()));
            }
        }
    }
    facts.nodes.cgpu = match installer_version {
        Some(v) => Some(v),
        None if any_nodes => values_tags
            .iter()
            .find_map(|t| cgpu::parse_tag(t).ok())
            .map(|t| t.core),
        None => None,
    };
    // Only pods need the compatibility data (parsing it is most of a small check).
    if !pods.is_empty()
        && let Some(per_gpu) = crate::cgpu::compat::data()
            .issues
            .iter()
            .filter(|i| i.rules.iter().any(|r| r == RuleId::PodsPerGpu.name()))
            .find_map(|i| i.max_pods_per_gpu)
    {
        let mut per_node: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
        for (i, (_, _, _, node)) in pods.iter().enumerate() {
            per_node.entry(node).or_default().push(i);
        }
        for (node, list) in per_node {
            let gpus = gpus.get(node).copied();
            let limit = per_gpu.saturating_mul(gpus.unwrap_or(1));
            let Some(&first_over) = usize::try_from(limit).ok().and_then(|l| list.get(l)) else {
                continue;
            };
            let (file, document, pointer, _) = &pods[first_over];
            facts.pods_over.push(nodes::PodsOver {
                file: file.clone(),
                document: *document,
                pointer: pointer.clone(),
                node: node.to_string(),
                pods: list.len(),
                gpus,
                limit,
            });
        }
    }
    if regions.len() == 1 {
        facts.region = regions.into_iter().next();
    }
    facts
}

/// A GPU device plugin DaemonSet `hami-device-plugin-conflict` reads: HAMi's or ACK's.
pub(super) fn is_device_plugin(o: &crate::manifest::Object) -> bool {
    o.kind == "DaemonSet"
        && (cgpu::is_hami_device_plugin(o.name) || o.name == cgpu::ACK_DEVICE_PLUGIN)
}
