//! What the cluster shows now: the one observation `rollout`, `status` and the plans decide
//! from. The types are data; `from_*` turn what kubectl prints (`-o json`) into them without
//! asking anything, so the decision core can be tested on observations made by hand or
//! generated; [`read`] is the only function here that talks to the cluster (GET and LIST, and
//! `pods/exec` of the runbook's read-only command on each node).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use crate::cgpu;
use crate::checklist::model::Strategy;
use crate::cluster::{ClusterError, Options, Target};

/// The annotation a run sets when it cordons a node (the node was schedulable before): only
/// such a node is uncordoned by a run. The name predates the reconciler: a node an earlier
/// version's script cordoned is finished the same way.
pub const CORDON_MARK: &str = "cgpu-lint/cordoned";
/// The node's rollout state, as `kubectl describe node` shows it: `cordoned`, `rebooting`,
/// `done` (with the target in words after a space).
pub const STATE: &str = "cgpu-lint/rollout";
/// The boot id the node had when its reboot was asked for.
pub const BOOT_BEFORE: &str = "cgpu-lint/boot-id-before-reboot";
/// When the reboot was asked for (RFC 3339).
pub const REBOOT_AT: &str = "cgpu-lint/reboot-requested-at";
/// The NVIDIA GPU Operator's driver upgrade state of a node (a label).
pub const NVIDIA_UPGRADE: &str = "nvidia.com/gpu-driver-upgrade-state";
/// kured's lock, on its DaemonSet: `{"nodeID":"…",…}`.
pub const KURED_LOCK: &str = "weave.works/kured-node-lock";
/// kured's mark on a node it is rebooting.
pub const KURED_REBOOTING: &str = "weave.works/kured-reboot-in-progress";
/// What a node's module is read with, through its installer pod: the host's namespaces.
pub const NSENTER: &str = crate::checklist::steps::NSENTER;
pub const READ_STATE: &str = crate::checklist::steps::READ_STATE;

/// One node as the API server shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NodeObs {
    pub name: String,
    pub uid: String,
    pub provider_id: Option<String>,
    pub ready: bool,
    pub unschedulable: bool,
    pub boot_id: String,
    #[serde(skip)]
    pub labels: BTreeMap<String, String>,
    #[serde(skip)]
    pub annotations: BTreeMap<String, String>,
    /// `aliyun.com/gpu-mem` allocatable.
    #[serde(skip)]
    pub gpu_mem: u64,
}

impl NodeObs {
    /// The node carries a GPU-sharing label (`ack.node.gpu.schedule` cgpu or core_mem, or the
    /// legacy `cgpu=true`).
    pub fn isolating(&self) -> bool {
        self.labels
            .get(cgpu::SCHEDULE_LABEL)
            .is_some_and(|s| cgpu::ISOLATING_SCHEDULES.contains(&s.as_str()))
            || self.labels.get(cgpu::LEGACY_LABEL).map(String::as_str) == Some(cgpu::LEGACY_VALUE)
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).map(String::as_str)
    }

    /// The ECS region and instance the live `spec.providerID` names (`cn-hangzhou.i-bp1…`).
    pub fn instance(&self) -> Option<(&str, &str)> {
        let p = self.provider_id.as_deref()?;
        let (region, instance) = p.split_once('.')?;
        let ok_region = !region.is_empty()
            && region
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        let ok_instance = instance.len() >= 10
            && instance.len() <= 42
            && instance.starts_with("i-")
            && instance[2..]
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        (ok_region && ok_instance).then_some((region, instance))
    }
}

/// What a change of an installer is judged by: POLICY, image, strategy, pod selector.
pub type Fingerprint = (
    Option<String>,
    String,
    Strategy,
    Option<Vec<(String, String)>>,
);

/// An installer DaemonSet (cgpu-installer or cgpu-core-installer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstallerObs {
    pub name: String,
    /// Its POLICY (the last entry of that name, the kubelet's rule).
    pub policy: Option<String>,
    pub image: String,
    /// The cGPU version of its image tag.
    pub version: Option<String>,
    #[serde(skip)]
    pub strategy: Strategy,
    /// `spec.selector.matchLabels` (`None`: it selects with matchExpressions, or not at all).
    #[serde(skip)]
    pub pod_selector: Option<Vec<(String, String)>>,
    #[serde(skip)]
    pub node_selector: Vec<(String, String)>,
    #[serde(skip)]
    pub generation: u64,
}

impl InstallerObs {
    pub fn selects(&self, node: &NodeObs) -> bool {
        !self.node_selector.is_empty()
            && self
                .node_selector
                .iter()
                .all(|(k, v)| node.labels.get(k) == Some(v))
    }

    /// `k=v,k=v` for `kubectl -l`.
    pub fn selector_text(&self) -> Option<String> {
        let sel = self.pod_selector.as_ref().filter(|s| !s.is_empty())?;
        Some(
            sel.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(","),
        )
    }

    /// What a change of the DaemonSet is judged by: POLICY, image, strategy, pod selector.
    pub fn fingerprint(&self) -> Fingerprint {
        (
            self.policy.clone(),
            self.image.clone(),
            self.strategy,
            self.pod_selector.clone(),
        )
    }
}

/// A pod: an installer pod, or a pod a drain evicts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodObs {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub node: String,
    /// The kind and name of its controller (`DaemonSet`, `ReplicaSet`, …).
    pub owner: Option<(String, String)>,
    pub deleting: bool,
    /// A static pod's mirror (the kubelet's; drain leaves it).
    pub mirror: bool,
    pub finished: bool,
    pub ready: bool,
    /// The first container's POLICY and image.
    pub policy: Option<String>,
    pub image: String,
    /// The `aliyun.com/gpu-mem` its containers ask for.
    pub gpu_mem: u64,
    /// One of this tool's own pods (a node's reboot pod): never evicted.
    pub ours: bool,
}

/// What a node's module runs: its version and each GPU's policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Module {
    pub version: String,
    /// (GPU index, policy), in the order /proc/cgpu_km lists them.
    pub gpus: Vec<(String, String)>,
}

impl Module {
    /// The GPUs whose policy is not `want`, as (GPU index, policy).
    pub fn gpus_off<'a>(&'a self, want: &'a str) -> impl Iterator<Item = &'a (String, String)> {
        self.gpus.iter().filter(move |(_, p)| p != want)
    }

    /// Does the module run cGPU `want`? Compared as versions (`v1.5.9` and `1.5.9` alike),
    /// as text when either is not one.
    pub fn runs_version(&self, want: &str) -> bool {
        let parse = |v: &str| semver::Version::parse(v.trim().trim_start_matches('v')).ok();
        match (parse(&self.version), parse(want)) {
            (Some(a), Some(b)) => a == b,
            _ => self.version.trim().trim_start_matches('v') == want.trim().trim_start_matches('v'),
        }
    }
}

/// The node's module as READ_STATE prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    NoModule,
    Loaded(Module),
}

/// The cluster lock as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseObs {
    pub holder: String,
    pub resource_version: String,
    /// `renewTime` and `acquireTime`, milliseconds since the epoch (`None`: absent or
    /// unreadable): a whole second would move the expiry by up to a second.
    pub renewed: Option<i64>,
    pub acquired: Option<i64>,
    pub duration: Option<i64>,
    pub user: Option<String>,
    pub host: Option<String>,
    pub pid: Option<u32>,
    /// The Job that holds it (`NAMESPACE/NAME`), when a Job runs the rollout.
    pub job: Option<String>,
}

impl LeaseObs {
    /// When it expires (milliseconds since the epoch).
    pub fn expires(&self) -> Option<i64> {
        Some(self.renewed? + self.duration? * 1000)
    }
}

/// Everything the decision reads, at one moment.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    /// Seconds since the epoch when it was read.
    pub now: i64,
    pub nodes: Vec<NodeObs>,
    pub installers: Vec<InstallerObs>,
    /// Installer pods of each installer (by its name), then every pod the drain looks at.
    pub installer_pods: BTreeMap<String, Vec<PodObs>>,
    /// The pods on the nodes this observation lists them for (`None`: not listed).
    pub pods: Option<Vec<PodObs>>,
    /// Each GPU-sharing node's module, or why it could not be read.
    pub modules: BTreeMap<String, Result<State, String>>,
    pub lease: Option<LeaseObs>,
    /// Nodes kured holds its reboot lock on.
    pub kured: BTreeSet<String>,
}

impl Observation {
    pub fn installer(&self, name: &str) -> Option<&InstallerObs> {
        self.installers.iter().find(|i| i.name == name)
    }

    /// The installer that selects a node (cgpu-installer first).
    pub fn installer_of(&self, node: &NodeObs) -> Option<&InstallerObs> {
        self.installers.iter().find(|i| i.selects(node))
    }

    /// The GPU-sharing nodes: those an installer selects, and those labelled for cGPU.
    pub fn gpu_sharing(&self) -> impl Iterator<Item = &NodeObs> {
        self.nodes
            .iter()
            .filter(|n| n.isolating() || self.installer_of(n).is_some())
    }

    /// The node's installer pod that is not being deleted (the first), from its installer.
    pub fn installer_pod(&self, installer: &str, node: &str) -> Option<&PodObs> {
        self.installer_pods
            .get(installer)?
            .iter()
            .find(|p| p.node == node && !p.deleting)
    }

    /// The node's pods a drain evicts: not finished, not a DaemonSet's, not a mirror pod.
    pub fn evictable(&self, node: &str) -> Vec<&PodObs> {
        self.pods
            .iter()
            .flatten()
            .filter(|p| p.node == node && !p.finished && !p.mirror && !p.ours)
            .filter(|p| p.owner.as_ref().is_none_or(|(k, _)| k != "DaemonSet"))
            .collect()
    }
}

// ---- reading kubectl's JSON -------------------------------------------------------------------

fn pairs(v: &Value) -> Vec<(String, String)> {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// The POLICY a container runs with: the last entry of that name, as for
/// [`crate::manifest::Installer::policy`] (the kubelet's rule), as written. What the installer
/// makes of that text is [`cgpu::env_policy`]'s to say; it is kept as text here because it is
/// compared with the text `/proc/cgpu_km` shows and quoted in messages as the DaemonSet has it.
pub fn env_policy(container: &Value) -> Option<String> {
    container["env"]
        .as_array()?
        .iter()
        .rfind(|e| e["name"] == crate::manifest::POLICY_ENV)
        .and_then(|e| e["value"].as_str().map(str::to_string))
}

fn condition(obj: &Value, kind: &str) -> bool {
    obj["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == kind && c["status"] == "True")
    })
}

fn quantity(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.trim().parse().unwrap_or(0),
        Value::Number(n) => n.as_u64().unwrap_or(0),
        _ => 0,
    }
}

/// The cGPU version of an image's tag (`…:v1.5.10-2b9e7d4-aliyun` → `1.5.10`).
pub fn image_version(image: &str) -> Option<String> {
    cgpu::split_image(image)
        .tag
        .and_then(|t| cgpu::parse_tag(t).ok())
        .map(|t| t.core.to_string())
}

pub fn node_from(v: &Value) -> NodeObs {
    let meta = &v["metadata"];
    NodeObs {
        name: text(&meta["name"]),
        uid: text(&meta["uid"]),
        provider_id: v["spec"]["providerID"].as_str().map(str::to_string),
        ready: condition(v, "Ready"),
        unschedulable: v["spec"]["unschedulable"] == true,
        boot_id: text(&v["status"]["nodeInfo"]["bootID"]),
        labels: pairs(&meta["labels"]).into_iter().collect(),
        annotations: pairs(&meta["annotations"]).into_iter().collect(),
        gpu_mem: quantity(&v["status"]["allocatable"]["aliyun.com/gpu-mem"]),
    }
}

pub fn installer_from(v: &Value) -> InstallerObs {
    let spec = &v["spec"]["template"]["spec"];
    let name = text(&v["metadata"]["name"]);
    let containers = spec["containers"].as_array().cloned().unwrap_or_default();
    let container = containers
        .iter()
        .find(|c| c["name"] == name.as_str())
        .or(containers.first())
        .cloned()
        .unwrap_or(Value::Null);
    let image = text(&container["image"]);
    let selector = &v["spec"]["selector"];
    let expressions = selector["matchExpressions"]
        .as_array()
        .is_some_and(|a| !a.is_empty());
    InstallerObs {
        version: image_version(&image),
        policy: env_policy(&container),
        image,
        strategy: if v["spec"]["updateStrategy"]["type"] == "OnDelete" {
            Strategy::OnDelete
        } else {
            Strategy::RollingUpdate
        },
        pod_selector: (!expressions).then(|| pairs(&selector["matchLabels"])),
        node_selector: pairs(&spec["nodeSelector"]),
        generation: v["metadata"]["generation"].as_u64().unwrap_or(0),
        name,
    }
}

/// The installers among DaemonSets: kube-system's cgpu-installer, then cgpu-core-installer,
/// those that exist (the order [`Observation::installer_of`] tries them in).
pub fn installers_from(daemonsets: &[Value]) -> Vec<InstallerObs> {
    cgpu::INSTALLER_NAMES
        .iter()
        .filter_map(|name| {
            daemonsets.iter().find(|d| {
                d["metadata"]["namespace"] == "kube-system" && d["metadata"]["name"] == *name
            })
        })
        .map(installer_from)
        .collect()
}

/// Is the pod one of the installer's own: in kube-system, its controller the installer's
/// DaemonSet (a label selector can match another's pods).
pub fn owns(inst: &InstallerObs, p: &PodObs) -> bool {
    p.namespace == "kube-system"
        && p.owner
            .as_ref()
            .is_some_and(|(k, n)| k == "DaemonSet" && n == &inst.name)
}

pub fn pod_from(v: &Value) -> PodObs {
    let meta = &v["metadata"];
    let containers = v["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let first = containers.first().cloned().unwrap_or(Value::Null);
    let owner = meta["ownerReferences"].as_array().and_then(|o| {
        let r = o.iter().find(|r| r["controller"] == true).or(o.first())?;
        Some((text(&r["kind"]), text(&r["name"])))
    });
    let phase = v["status"]["phase"].as_str().unwrap_or("");
    PodObs {
        namespace: text(&meta["namespace"]),
        name: text(&meta["name"]),
        uid: text(&meta["uid"]),
        node: text(&v["spec"]["nodeName"]),
        owner,
        deleting: meta.get("deletionTimestamp").is_some_and(|d| !d.is_null()),
        mirror: meta["annotations"]
            .get("kubernetes.io/config.mirror")
            .is_some(),
        finished: phase == "Succeeded" || phase == "Failed",
        ready: condition(v, "Ready"),
        policy: env_policy(&first),
        image: text(&first["image"]),
        ours: meta["labels"]["app.kubernetes.io/name"] == "cgpu-lint",
        gpu_mem: containers
            .iter()
            .map(|c| quantity(&c["resources"]["limits"]["aliyun.com/gpu-mem"]))
            .sum(),
    }
}

pub fn lease_from(v: &Value) -> LeaseObs {
    let a = &v["metadata"]["annotations"];
    let s = &v["spec"];
    LeaseObs {
        holder: text(&s["holderIdentity"]),
        resource_version: text(&v["metadata"]["resourceVersion"]),
        renewed: s["renewTime"].as_str().and_then(parse_time_millis),
        acquired: s["acquireTime"].as_str().and_then(parse_time_millis),
        duration: s["leaseDurationSeconds"].as_i64(),
        user: a["cgpu-lint/user"].as_str().map(str::to_string),
        host: a["cgpu-lint/host"].as_str().map(str::to_string),
        pid: a["cgpu-lint/pid"].as_str().and_then(|p| p.parse().ok()),
        job: a["cgpu-lint/job"].as_str().map(str::to_string),
    }
}

/// The nodes kured's DaemonSets hold their lock on (`weave.works/kured-node-lock`).
pub fn kured_from(daemonsets: &[Value]) -> BTreeSet<String> {
    daemonsets
        .iter()
        .filter_map(|d| d["metadata"]["annotations"][KURED_LOCK].as_str())
        .filter_map(|lock| serde_json::from_str::<Value>(lock).ok())
        .filter_map(|l| l["nodeID"].as_str().map(str::to_string))
        .filter(|n| !n.is_empty())
        .collect()
}

/// `2026-12-07T16:48:52Z`, with or without fractional seconds, as seconds since the epoch.
pub fn parse_time(s: &str) -> Option<i64> {
    parse_time_millis(s).map(|ms| ms.div_euclid(1000))
}

/// `2026-12-07T16:48:52.123456Z` (a MicroTime) or `2026-12-07T16:48:52Z`, as milliseconds since
/// the epoch (digits past the millisecond are dropped).
pub fn parse_time_millis(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || !s.ends_with('Z') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from civil (Howard Hinnant), the inverse of date::civil_from_days.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let frac = &s[19..s.len() - 1];
    let millis = match frac.strip_prefix('.') {
        None if frac.is_empty() => 0,
        Some(digits) if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) => {
            format!("{digits:0<3}")[..3].parse::<i64>().ok()?
        }
        _ => return None,
    };
    Some((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1000 + millis)
}

/// Parse READ_STATE's output: `no-module`, or `version V` and `/proc/cgpu_km/N/policy P` lines.
pub fn parse_state(text: &str) -> Result<State, String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines == ["no-module"] {
        return Ok(State::NoModule);
    }
    let mut version = None;
    let mut gpus = Vec::new();
    for l in &lines {
        if let Some(v) = l.strip_prefix("version ") {
            version = Some(v.trim().to_string());
        } else if let Some(rest) = l.strip_prefix("/proc/cgpu_km/")
            && let Some((gpu, policy)) = rest.split_once("/policy ")
            && !gpu.is_empty()
            && gpu.bytes().all(|b| b.is_ascii_digit())
        {
            gpus.push((gpu.to_string(), policy.trim().to_string()));
        } else {
            return Err(format!("unexpected output line `{l}`"));
        }
    }
    let Some(version) = version else {
        return Err("no module version in the output".into());
    };
    if gpus.is_empty() {
        return Err(format!("module {version} shows no GPU"));
    }
    Ok(State::Loaded(Module { version, gpus }))
}

// ---- reading the cluster ----------------------------------------------------------------------

/// How to read one cluster.
pub struct Reader<'a> {
    pub options: &'a Options,
    pub target: &'a Target,
    /// Nodes whose module is read at once.
    pub parallel: usize,
}

/// Loaded modules already read, by node: (boot id, installer pod uid and readiness) → module.
/// A loaded module changes only when the node reboots (and its installer loads it again), so a
/// later pass reads again only those nodes. "No module" is never kept: the installer loads it
/// whenever its pod starts.
pub type ModuleCache = BTreeMap<String, ((String, String), State)>;

/// What to read beyond the nodes, the DaemonSets and the installer pods.
#[derive(Debug, Clone, Default)]
pub struct Wants {
    /// List the pods of every namespace (the drain and the capacity gate need them).
    pub pods: bool,
    pub lease: Option<&'static str>,
}

fn list(
    reader: &Reader,
    args: &[&str],
    until: Option<Instant>,
) -> Result<Vec<Value>, ClusterError> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let out = reader.options.run(reader.target, &args, until)?;
    let v: Value = serde_json::from_slice(&out).map_err(|e| ClusterError::BadOutput {
        context: reader.target.label.clone(),
        detail: e.to_string(),
    })?;
    Ok(match v["items"].as_array() {
        Some(items) => items.clone(),
        None if v.is_object() && v.get("kind").is_some() => vec![v],
        None => Vec::new(),
    })
}

/// The Lease (`None`: there is none).
pub fn read_lease(reader: &Reader, name: &str) -> Result<Option<LeaseObs>, ClusterError> {
    let args = [
        "-n",
        "kube-system",
        "get",
        "leases.v1.coordination.k8s.io",
        name,
        "--ignore-not-found",
        "-o",
        "json",
    ];
    let out = reader
        .options
        .run(reader.target, &args.map(String::from), None)?;
    if out.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let v: Value = serde_json::from_slice(&out).map_err(|e| ClusterError::BadOutput {
        context: reader.target.label.clone(),
        detail: e.to_string(),
    })?;
    Ok(Some(lease_from(&v)))
}

/// Why a node's module was not read: the deadline passed first.
pub const LATE: &str = "not read before the deadline";

/// READ_STATE through the pod.
pub fn read_module(reader: &Reader, pod: &str, until: Instant) -> Result<State, String> {
    let mut args: Vec<String> = ["-n", "kube-system", "exec", pod, "--"]
        .map(String::from)
        .to_vec();
    args.extend(NSENTER.split(' ').map(str::to_string));
    args.extend(["sh".into(), "-c".into(), READ_STATE.into()]);
    match reader.options.run(reader.target, &args, Some(until)) {
        Ok(out) => parse_state(&String::from_utf8_lossy(&out)),
        Err(ClusterError::Forbidden { .. }) => Err("no pods/exec".into()),
        Err(_) if Instant::now() >= until => Err(LATE.into()),
        Err(ClusterError::Kubectl { detail, .. }) => Err(format!("exec in {pod} failed: {detail}")),
        Err(e) => Err(format!("exec in {pod} failed: {e}")),
    }
}

/// An installer's own pods, with one LIST by its pod selector, stopped at `until` at the latest
/// (none when it has no label selector to list them by: see [`InstallerObs::selector_text`]).
pub fn read_installer_pods(
    reader: &Reader,
    inst: &InstallerObs,
    until: Option<Instant>,
) -> Result<Vec<PodObs>, ClusterError> {
    let Some(sel) = inst.selector_text() else {
        return Ok(Vec::new());
    };
    Ok(list(
        reader,
        &["-n", "kube-system", "get", "pods", "-l", &sel, "-o", "json"],
        until,
    )?
    .iter()
    .map(pod_from)
    .filter(|p| owns(inst, p))
    .collect())
}

/// Every pod of the cluster, for a decision that found it needs them (a drain, the capacity
/// check) after an observation made without: one LIST added to that observation, rather than
/// the whole observation read again.
pub fn read_pods(reader: &Reader) -> Result<Vec<PodObs>, ClusterError> {
    let pods = list(
        reader,
        &[
            "get",
            "pods",
            "--all-namespaces",
            "-o",
            "json",
            "--chunk-size=500",
        ],
        None,
    )?;
    Ok(pods.iter().map(pod_from).collect())
}

/// One observation: each kind with one LIST (nodes; DaemonSets of every namespace, for the
/// installers and kured's lock; each installer's pods by its selector, or every pod when
/// `wants.pods`), the Lease, then the modules of the GPU-sharing nodes in parallel under one
/// deadline (`until`), read again only where the boot id or the installer pod changed.
pub fn read(
    reader: &Reader,
    wants: &Wants,
    cache: &mut ModuleCache,
    until: Instant,
) -> Result<Observation, ClusterError> {
    let now = crate::date::now_secs();
    let (nodes, daemonsets, lease, pods) = std::thread::scope(|s| {
        let nodes = s.spawn(|| {
            list(
                reader,
                &["get", "nodes", "-o", "json", "--chunk-size=500"],
                None,
            )
        });
        let ds = s.spawn(|| {
            list(
                reader,
                &[
                    "get",
                    "daemonsets.v1.apps",
                    "--all-namespaces",
                    "-o",
                    "json",
                    "--chunk-size=500",
                ],
                None,
            )
        });
        let lease = s.spawn(|| wants.lease.map(|l| read_lease(reader, l)).transpose());
        let pods = s.spawn(|| wants.pods.then(|| read_pods(reader)).transpose());
        (
            nodes.join().unwrap_or_else(|_| Ok(Vec::new())),
            ds.join().unwrap_or_else(|_| Ok(Vec::new())),
            lease.join().unwrap_or(Ok(None)),
            pods.join().unwrap_or(Ok(None)),
        )
    });
    let (nodes, daemonsets, lease, pods) = (nodes?, daemonsets?, lease?.flatten(), pods?);
    let mut obs = Observation {
        now,
        nodes: nodes.iter().map(node_from).collect(),
        kured: kured_from(&daemonsets),
        lease,
        ..Default::default()
    };
    obs.installers = installers_from(&daemonsets);
    let all_pods: Option<Vec<PodObs>> = pods;
    for inst in &obs.installers {
        let mine: Vec<PodObs> = match &all_pods {
            Some(all) => all.iter().filter(|p| owns(inst, p)).cloned().collect(),
            None => read_installer_pods(reader, inst, None)?,
        };
        obs.installer_pods.insert(inst.name.clone(), mine);
    }
    obs.pods = all_pods;
    // The modules: the Ready GPU-sharing nodes with an installer pod, a few at a time (an exec
    // on a NotReady node waits for a kubelet that does not answer).
    let jobs: Vec<(String, String, (String, String))> = obs
        .gpu_sharing()
        .filter(|n| n.ready)
        .filter_map(|n| {
            let inst = obs.installer_of(n)?;
            let pod = obs.installer_pod(&inst.name, &n.name)?;
            Some((
                n.name.clone(),
                pod.name.clone(),
                (n.boot_id.clone(), format!("{}/{}", pod.uid, pod.ready)),
            ))
        })
        .collect();
    let mut results: BTreeMap<String, Result<State, String>> = BTreeMap::new();
    let mut todo = Vec::new();
    for (node, pod, key) in jobs {
        match cache.get(&node) {
            Some((k, state)) if *k == key => {
                results.insert(node, Ok(state.clone()));
            }
            _ => todo.push((node, pod, key)),
        }
    }
    let next = AtomicUsize::new(0);
    type Read = (String, (String, String), Result<State, String>);
    let done: Mutex<Vec<Read>> = Mutex::new(Vec::new());
    let workers = reader.parallel.clamp(1, 64).min(todo.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some((node, pod, key)) = todo.get(i) else {
                        break;
                    };
                    let state = read_module(reader, pod, until);
                    if let Ok(mut d) = done.lock() {
                        d.push((node.clone(), key.clone(), state));
                    }
                }
            });
        }
    });
    for (node, key, state) in done.into_inner().unwrap_or_default() {
        match &state {
            Ok(st @ State::Loaded(_)) => {
                cache.insert(node.clone(), (key, st.clone()));
            }
            _ => {
                cache.remove(&node);
            }
        }
        results.insert(node, state);
    }
    obs.modules = results;
    Ok(obs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_as_the_api_server_writes_them() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_time("2026-12-07T16:48:52.123456Z"),
            Some(parse_time("2026-12-07T16:48:52Z").unwrap())
        );
        for secs in [0i64, 86_399, 951_782_400, 1_796_654_932, 4_102_444_800] {
            assert_eq!(parse_time(&crate::date::rfc3339(secs)), Some(secs));
        }
        assert_eq!(parse_time("2026-13-07T16:48:52Z"), None);
        assert_eq!(parse_time("yesterday"), None);
        assert_eq!(parse_time_millis("1970-01-01T00:00:01.5Z"), Some(1_500));
        assert_eq!(
            parse_time_millis("2026-12-07T16:48:52.123456Z"),
            Some(parse_time("2026-12-07T16:48:52Z").unwrap() * 1000 + 123)
        );
        assert_eq!(parse_time_millis("1970-01-01T00:00:01.Z"), None);
        assert_eq!(parse_time_millis("1970-01-01T00:00:01+08:00Z"), None);
        for ms in [0, 999, 1_796_672_840_850] {
            assert_eq!(parse_time_millis(&crate::date::rfc3339_micro(ms)), Some(ms));
        }
    }

    #[test]
    fn the_instance_is_what_the_live_provider_id_names() {
        let mut n = NodeObs {
            provider_id: Some("cn-hangzhou.i-bp1abcdefgh12345".into()),
            ..Default::default()
        };
        assert_eq!(n.instance(), Some(("cn-hangzhou", "i-bp1abcdefgh12345")));
        for bad in [
            "",
            "cn-hangzhou",
            "i-bp1abcdefgh12345",
            "cn-hangzhou.i-BP1",
            "x.i-bp1;reboot",
            "aws:///us-east-1a/i-0abc",
        ] {
            n.provider_id = Some(bad.into());
            assert_eq!(n.instance(), None, "{bad}");
        }
    }

    /// The installers are kube-system's, cgpu-installer first whatever order they were listed
    /// in: a node both select is cgpu-installer's for `rollout` and `status` alike.
    #[test]
    fn the_installers_are_kube_systems_in_the_order_they_are_tried() {
        let ds = |ns: &str, name: &str| serde_json::json!({"metadata": {"namespace": ns, "name": name}, "spec": {}});
        let listed = [
            ds("kube-system", "cgpu-core-installer"),
            ds("default", "cgpu-installer"),
            ds("kube-system", "kured"),
            ds("kube-system", "cgpu-installer"),
        ];
        let names: Vec<String> = installers_from(&listed)
            .into_iter()
            .map(|i| i.name)
            .collect();
        assert_eq!(names, ["cgpu-installer", "cgpu-core-installer"]);
        assert!(installers_from(&listed[1..3]).is_empty());
    }

    /// An installer's pod is one its DaemonSet controls: a pod the selector matches that
    /// another controller owns is not read as the node's installer pod.
    #[test]
    fn an_installer_owns_the_pods_its_daemonset_controls() {
        let inst = installer_from(&serde_json::json!({"metadata": {"name": "cgpu-installer"}}));
        let pod = |refs: Value| {
            pod_from(&serde_json::json!({
                "metadata": {"name": "p", "namespace": "kube-system", "ownerReferences": refs},
            }))
        };
        let ds = |name: &str, controller: bool| serde_json::json!({"kind": "DaemonSet", "name": name, "controller": controller});
        assert!(owns(
            &inst,
            &pod(serde_json::json!([ds("cgpu-installer", true)]))
        ));
        assert!(!owns(
            &inst,
            &pod(serde_json::json!([
                ds("cgpu-installer", false),
                ds("other", true)
            ]))
        ));
        assert!(!owns(
            &inst,
            &pod(serde_json::json!([ds("cgpu-core-installer", true)]))
        ));
        assert!(!owns(&inst, &pod(Value::Null)));
    }

    #[test]
    fn read_states_output_is_parsed_as_the_runbook_judges_it() {
        assert_eq!(parse_state("no-module\n"), Ok(State::NoModule));
        let s = parse_state("version 1.5.10\n/proc/cgpu_km/0/policy 2\n/proc/cgpu_km/1/policy 1\n")
            .unwrap();
        let State::Loaded(m) = &s else { panic!() };
        assert_eq!(m.version, "1.5.10");
        assert_eq!(m.gpus, [("0".into(), "2".into()), ("1".into(), "1".into())]);
        assert!(parse_state("version 1.5.10\n").is_err());
        assert!(parse_state("/proc/cgpu_km/0/policy 2\n").is_err());
        assert!(parse_state("Segmentation fault\n").is_err());
        assert!(parse_state("").is_err());
    }
}
