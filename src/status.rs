//! `cgpu-lint status --cluster`: per GPU-sharing node, what the installer DaemonSet that selects
//! it asks (POLICY, the cGPU version of its image) and what the node runs, read through the
//! node's installer pod with the runbook's own command ([`crate::checklist::steps::NSENTER`] and
//! [`crate::checklist::steps::READ_STATE`]); the verdict: converged, needs a restart (why), no
//! module, unreadable (why). Reads with GET/LIST (the installers and nodes through
//! [`crate::cluster`], one LIST of each installer's pods) and `pods/exec`; nodes are read in
//! parallel, a few at a time, under one deadline.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::catalogue::RuleId;
use crate::cgpu;
use crate::cluster::{ClusterError, Fetched, Options};
use crate::diag::Diagnostic;
use crate::rollout::observe::{self, InstallerObs, NodeObs, Observation, Reader};
use crate::rules::{Ctx, RuleOptions};
use crate::yaml::Source;

/// How the nodes are read.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// At most this many nodes at a time.
    pub parallel: usize,
    /// Every node is read before this much time has passed, or is unreadable.
    pub timeout: Duration,
}

/// What an installer DaemonSet asks of the nodes it selects: its POLICY and cGPU version as the
/// rollout reads them ([`InstallerObs`]).
#[derive(Debug, Clone, Serialize)]
pub struct Asks {
    pub installer: String,
    /// Its POLICY (`None`: not set).
    pub policy: Option<String>,
    /// The cGPU version of its image tag.
    pub version: Option<String>,
}

impl Asks {
    /// An installer that asks `policy` and cGPU `version`.
    #[cfg(test)]
    pub(crate) fn new(installer: &str, policy: Option<&str>, version: Option<&str>) -> Asks {
        Asks {
            installer: installer.into(),
            policy: policy.map(str::to_string),
            version: version.map(str::to_string),
        }
    }

    /// What the installer the rollout observed asks.
    pub fn of(inst: &InstallerObs) -> Asks {
        Asks {
            installer: inst.name.clone(),
            policy: inst.policy.clone(),
            version: inst.version.clone(),
        }
    }
}

pub use crate::rollout::observe::{Module, State};

/// A node's verdict. In JSON: `"verdict"` (kebab-case) and `"why"`, always a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Converged,
    NeedsRestart(Vec<String>),
    NoModule,
    Unreadable(String),
}

impl Serialize for Verdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (word, why) = match self {
            Verdict::Converged => ("converged", String::new()),
            Verdict::NeedsRestart(w) => ("needs-restart", w.join("; ")),
            Verdict::NoModule => ("no-module", "the cGPU module is not loaded".into()),
            Verdict::Unreadable(w) => ("unreadable", w.clone()),
        };
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("verdict", word)?;
        m.serialize_entry("why", &why)?;
        m.end()
    }
}

impl Verdict {
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Converged => "converged",
            Verdict::NeedsRestart(_) => "needs a restart",
            Verdict::NoModule => "no module",
            Verdict::Unreadable(_) => "unreadable",
        }
    }

    /// The verdict with its reason, in words.
    pub fn text(&self) -> String {
        match self {
            Verdict::Converged => "converged".into(),
            Verdict::NeedsRestart(why) => format!("needs a restart: {}", why.join("; ")),
            Verdict::NoModule => {
                "no module: the cGPU module is not loaded; restart the installer pod only".into()
            }
            Verdict::Unreadable(why) => format!("unreadable ({why})"),
        }
    }
}

/// Judge a node's state against what its installer asks (and the POLICY its pod was made from).
pub fn judge(asks: &Asks, pod_policy: Option<&str>, state: &State) -> Verdict {
    let State::Loaded(m) = state else {
        return Verdict::NoModule;
    };
    let mut why = Vec::new();
    if let Some(want) = &asks.policy {
        let off: Vec<String> = m
            .gpus_off(want)
            .map(|(g, p)| format!("GPU {g} runs policy {p}"))
            .collect();
        if !off.is_empty() {
            why.push(format!(
                "{}, {} asks POLICY {want}",
                off.join(", "),
                asks.installer
            ));
        }
    }
    if let Some(want) = &asks.version
        && !m.runs_version(want)
    {
        why.push(format!(
            "the module is cGPU {}, {} deploys {want}",
            m.version, asks.installer
        ));
    }
    if !why.is_empty()
        && let (Some(want), Some(pod)) = (&asks.policy, pod_policy)
        && pod != want
    {
        why.push(format!(
            "its installer pod was made with POLICY {pod} (an OnDelete DaemonSet): it must be deleted too"
        ));
    }
    if why.is_empty() {
        Verdict::Converged
    } else {
        Verdict::NeedsRestart(why)
    }
}

/// One node's status.
#[derive(Debug, Clone, Serialize)]
pub struct NodeStatus {
    pub name: String,
    /// What the installer that selects it asks (`None`: a GPU-sharing label no installer
    /// selects).
    pub asks: Option<Asks>,
    /// The installer pod read through.
    pub pod: Option<String>,
    /// The pod's own POLICY.
    pub pod_policy: Option<String>,
    /// What the module runs, when it was read and loaded.
    pub module: Option<Module>,
    /// A rollout has it in flight (cordoned, rebooting, rebooted), from the node's annotations.
    pub in_flight: Option<String>,
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// One cluster's status.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterStatus {
    pub cluster: String,
    pub installers: Vec<Asks>,
    pub nodes: Vec<NodeStatus>,
    /// The node count of the cluster (GPU-sharing or not).
    pub node_count: usize,
    /// Who holds the rollout's cluster lock, in words (`None`: nobody).
    pub lock: Option<String>,
    /// The context, for the next command.
    #[serde(skip)]
    pub context: Option<String>,
}

/// The objects kubectl printed, as JSON.
fn values(sources: &[Arc<Source>]) -> Vec<Value> {
    sources
        .iter()
        .filter_map(|s| serde_json::from_str(&s.text).ok())
        .collect()
}

/// The nodes and installers fetched, read as the rollout reads them (its observation, without
/// pods or modules yet): one reading of a cluster, so `status` and `rollout` cannot disagree on
/// which nodes share GPUs, which installer selects each, or what it asks.
fn observation(fetched: &Fetched) -> Observation {
    Observation {
        nodes: values(&fetched.nodes)
            .iter()
            .map(observe::node_from)
            .collect(),
        installers: observe::installers_from(&values(&fetched.installers)),
        ..Default::default()
    }
}

/// Each installer's own pods into `obs`, one LIST each (as the rollout lists them), stopped at
/// `until`; by installer, why its pods are not known.
fn list_pods(reader: &Reader, obs: &mut Observation, until: Instant) -> BTreeMap<String, String> {
    let mut unlisted = BTreeMap::new();
    for inst in &obs.installers {
        let listed = match &inst.pod_selector {
            None => Err(format!(
                "{} selects its pods with matchExpressions: its pods cannot be found by a label selector",
                inst.name
            )),
            Some(sel) if sel.is_empty() => Err(format!(
                "{} has no spec.selector.matchLabels to find its pods by",
                inst.name
            )),
            Some(_) => {
                observe::read_installer_pods(reader, inst, Some(until)).map_err(|e| match e {
                    ClusterError::Forbidden { .. } => "no list pods in kube-system".to_string(),
                    ClusterError::BadOutput { detail, .. } => {
                        format!("kubectl printed something that is not JSON: {detail}")
                    }
                    e => format!("its installer pods could not be listed: {e}"),
                })
            }
        };
        match listed {
            Ok(pods) => {
                obs.installer_pods.insert(inst.name.clone(), pods);
            }
            Err(why) => {
                unlisted.insert(inst.name.clone(), why);
            }
        }
    }
    unlisted
}

/// The installer pod a node is read through, (pod name, its POLICY): the one the rollout
/// picks ([`Observation::installer_pod`]), or why there is none.
type Pod = Result<(String, Option<String>), String>;

fn pod_of(
    obs: &Observation,
    unlisted: &BTreeMap<String, String>,
    inst: &InstallerObs,
    node: &str,
) -> Pod {
    if let Some(why) = unlisted.get(&inst.name) {
        return Err(why.clone());
    }
    if let Some(p) = obs.installer_pod(&inst.name, node) {
        return Ok((p.name.clone(), p.policy.clone()));
    }
    let deleting = obs
        .installer_pods
        .get(&inst.name)
        .into_iter()
        .flatten()
        .find(|p| p.node == node);
    match deleting {
        Some(p) => Err(format!(
            "no installer pod on the node: {} is being deleted",
            p.name
        )),
        None => Err(format!("no {} pod on the node", inst.name)),
    }
}

/// READ_STATE through the pod, as the rollout reads it.
fn read_state(reader: &Reader, pod: &str, until: Instant) -> Result<State, String> {
    observe::read_module(reader, pod, until)
        .map_err(|why| if why == observe::LATE { late() } else { why })
}

/// A node not read in time, naming the flag that sets the time.
fn late() -> String {
    format!("{} (--timeout)", observe::LATE)
}

/// Read every GPU-sharing node of one cluster.
pub fn read(options: &Options, fetched: &Fetched, limits: Limits) -> ClusterStatus {
    let start = Instant::now();
    let until = start + limits.timeout;
    let target = &fetched.target;
    let reader = Reader {
        options,
        target,
        parallel: 1,
    };
    let mut obs = observation(fetched);
    let lock = observe::read_lease(&reader, crate::rollout::lease::NAME)
        .ok()
        .flatten()
        .filter(|l| !l.holder.is_empty())
        .map(|l| crate::rollout::lease::describe(&l, crate::date::now_millis()));
    let unlisted = list_pods(&reader, &mut obs, until);
    // The GPU-sharing nodes, each with what its installer asks and the pod it is read through.
    let nodes: Vec<(&NodeObs, Option<(Asks, Pod)>)> = obs
        .gpu_sharing()
        .map(|n| {
            let installer = obs
                .installer_of(n)
                .map(|i| (Asks::of(i), pod_of(&obs, &unlisted, i, &n.name)));
            (n, installer)
        })
        .collect();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<NodeStatus>>> = Mutex::new(vec![None; nodes.len()]);
    let workers = limits.parallel.clamp(1, 64).min(nodes.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some((node, installer)) = nodes.get(i) else {
                        break;
                    };
                    let status = one(&reader, node, installer.as_ref(), until);
                    if let Ok(mut r) = results.lock() {
                        r[i] = Some(status);
                    }
                }
            });
        }
    });
    let nodes = results
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect();
    ClusterStatus {
        cluster: target.label.clone(),
        installers: obs.installers.iter().map(Asks::of).collect(),
        nodes,
        node_count: fetched.node_count,
        lock,
        context: target.context.clone(),
    }
}

fn one(
    reader: &Reader,
    node: &NodeObs,
    installer: Option<&(Asks, Pod)>,
    until: Instant,
) -> NodeStatus {
    use crate::rollout::decide::{Phase, phase};
    let s = NodeStatus {
        name: node.name.clone(),
        asks: installer.map(|(a, _)| a.clone()),
        pod: None,
        pod_policy: None,
        module: None,
        in_flight: phase(node).map(|p| {
            match p {
                Phase::Cordoned => "cordoned by a rollout, not yet rebooted",
                Phase::Rebooting => {
                    "a rollout asked for its reboot; the boot id has not changed yet"
                }
                Phase::Rebooted => "rebooted by a rollout, not yet verified and uncordoned",
            }
            .to_string()
        }),
        verdict: Verdict::Unreadable(String::new()),
    };
    let mut s = one_read(reader, installer, until, s);
    // A NotReady node is named so, not by the exec's error alone.
    if !node.ready
        && let Verdict::Unreadable(why) = &s.verdict
    {
        s.verdict = Verdict::Unreadable(format!("NotReady: {why}"));
    }
    s
}

fn one_read(
    reader: &Reader,
    installer: Option<&(Asks, Pod)>,
    until: Instant,
    mut s: NodeStatus,
) -> NodeStatus {
    let Some((asks, pod)) = installer else {
        s.verdict =
            Verdict::Unreadable("it is labelled for cGPU, but no cgpu-installer selects it".into());
        return s;
    };
    if Instant::now() >= until {
        s.verdict = Verdict::Unreadable(late());
        return s;
    }
    let (pod, pod_policy) = match pod {
        Ok(p) => p.clone(),
        Err(why) => {
            s.verdict = Verdict::Unreadable(why.clone());
            return s;
        }
    };
    s.pod = Some(pod.clone());
    s.pod_policy = pod_policy.clone();
    s.verdict = match read_state(reader, &pod, until) {
        Ok(state) => {
            if let State::Loaded(m) = &state {
                s.module = Some(m.clone());
            }
            judge(asks, pod_policy.as_deref(), &state)
        }
        Err(why) => Verdict::Unreadable(why),
    };
    s
}

/// `7 of 9 nodes converged; 2 need a restart: a, b; run `cgpu-lint checklist --cluster``.
pub fn summary_line(c: &ClusterStatus) -> String {
    let of = |f: fn(&Verdict) -> bool| -> Vec<&str> {
        c.nodes
            .iter()
            .filter(|n| f(&n.verdict))
            .map(|n| n.name.as_str())
            .collect()
    };
    let converged = of(|v| matches!(v, Verdict::Converged)).len();
    let restart = of(|v| matches!(v, Verdict::NeedsRestart(_)));
    let no_module = of(|v| matches!(v, Verdict::NoModule));
    let unreadable = of(|v| matches!(v, Verdict::Unreadable(_)));
    let mut out = format!(
        "cluster {}: {converged} of {} GPU-sharing node{} converged",
        c.cluster,
        c.nodes.len(),
        if c.nodes.len() == 1 { "" } else { "s" }
    );
    let part = |out: &mut String, list: &[&str], one: &str, many: &str| {
        if !list.is_empty() {
            let verb = if list.len() == 1 { one } else { many };
            out.push_str(&format!("; {} {verb}: {}", list.len(), list.join(", ")));
        }
    };
    part(&mut out, &restart, "needs a restart", "need a restart");
    part(&mut out, &no_module, "has no module", "have no module");
    part(&mut out, &unreadable, "is unreadable", "are unreadable");
    if let Some(lock) = &c.lock {
        out.push_str(&format!("; a rollout holds the cluster lock: {lock}"));
    }
    let flying: Vec<&str> = c
        .nodes
        .iter()
        .filter(|n| n.in_flight.is_some())
        .map(|n| n.name.as_str())
        .collect();
    part(&mut out, &flying, "is in flight", "are in flight");
    if !restart.is_empty() || !no_module.is_empty() {
        let policy = c
            .installers
            .iter()
            .find(|a| a.installer == cgpu::INSTALLER)
            .and_then(|a| a.policy.clone())
            .unwrap_or_else(|| "N".into());
        let context = c
            .context
            .as_deref()
            .map(|x| {
                let plain = !x.is_empty()
                    && x.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._@/:+-".contains(c));
                let word = if plain {
                    x.to_string()
                } else {
                    crate::checklist::shell::quote(x)
                };
                format!(" --context {word}")
            })
            .unwrap_or_default();
        out.push_str(&format!(
            "; see what a rollout would do: `cgpu-lint rollout --cluster{context} --policy {policy} --dry-run`"
        ));
    }
    if c.nodes.is_empty() {
        return format!(
            "cluster {}: no GPU-sharing node (none of its {} nodes is selected by a cGPU installer or labelled for cGPU): nothing to converge",
            c.cluster, c.node_count
        );
    }
    out
}

/// What a node runs, in a few words (`1.5.10: GPU 0 policy 2, GPU 1 policy 2`).
fn runs(n: &NodeStatus) -> String {
    match (&n.module, &n.verdict) {
        (Some(m), _) => {
            let g: Vec<String> = m
                .gpus
                .iter()
                .map(|(g, p)| format!("GPU {g} policy {p}"))
                .collect();
            format!("cGPU {}: {}", m.version, g.join(", "))
        }
        (None, Verdict::NoModule) => "module not loaded".into(),
        _ => "-".into(),
    }
}

fn asks_text(a: &Option<Asks>) -> String {
    match a {
        Some(a) => format!(
            "{}: POLICY {}, cGPU {}",
            a.installer,
            a.policy.as_deref().unwrap_or("unset"),
            a.version.as_deref().unwrap_or("unknown")
        ),
        None => "no installer".into(),
    }
}

/// The clusters as a table, each with its summary line.
pub fn table(clusters: &[ClusterStatus]) -> String {
    use crate::output::escape_controls as esc;
    let mut out = String::new();
    for c in clusters {
        let rows: Vec<[String; 4]> = c
            .nodes
            .iter()
            .map(|n| {
                [
                    esc(&n.name).into_owned(),
                    asks_text(&n.asks),
                    runs(n),
                    esc(&match &n.in_flight {
                        Some(f) => format!("{} (in flight: {f})", n.verdict.text()),
                        None => n.verdict.text(),
                    })
                    .into_owned(),
                ]
            })
            .collect();
        let head = ["NODE", "ASKS", "RUNS", "VERDICT"].map(String::from);
        let mut width = [0usize; 3];
        for r in std::iter::once(&head).chain(&rows) {
            for (w, cell) in width.iter_mut().zip(r.iter()) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for r in std::iter::once(&head).chain(&rows) {
            let mut line = String::new();
            for (i, cell) in r.iter().enumerate() {
                if i < 3 {
                    let pad = width[i] - cell.chars().count();
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad + 2));
                } else {
                    line.push_str(cell);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out.push_str(&esc(&summary_line(c)));
        out.push('\n');
    }
    out
}

/// The clusters as JSON: `{"version": 1, "clusters": [{"cluster", "installers", "nodes",
/// "summary"}]}`.
pub fn json(clusters: &[ClusterStatus]) -> String {
    let list: Vec<Value> = clusters
        .iter()
        .map(|c| {
            let count = |w: &str| c.nodes.iter().filter(|n| n.verdict.word() == w).count();
            serde_json::json!({
                "cluster": c.cluster,
                "installers": c.installers,
                "nodes": c.nodes,
                "summary": {
                    "nodes": c.nodes.len(),
                    "converged": count("converged"),
                    "needs_restart": count("needs a restart"),
                    "no_module": count("no module"),
                    "unreadable": count("unreadable"),
                    "line": summary_line(c),
                },
            })
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&serde_json::json!({"version": 1, "clusters": list}))
        .unwrap_or_default();
    s.push('\n');
    s
}

/// One `node-not-converged` finding per node that is not converged, on the node's
/// `metadata.name` in the node object read from the cluster (so SARIF and policy reports carry
/// it like any finding on a cluster object).
pub fn findings(c: &ClusterStatus, fetched: &Fetched) -> Vec<Diagnostic> {
    let opts = RuleOptions::default();
    let aliases = Default::default();
    let mut ctx = Ctx::new(&opts, 1, &aliases);
    for n in c.nodes.iter().filter(|n| n.verdict != Verdict::Converged) {
        let name = format!("{}:Node/{}", c.cluster, n.name);
        let Some(src) = fetched.nodes.iter().find(|s| s.name == name) else {
            continue;
        };
        let span = name_span(src, &n.name);
        ctx.report(
            RuleId::NodeNotConverged,
            src,
            span,
            "/metadata/name",
            format!(
                "node `{}` ({}): {}; it runs {}",
                n.name,
                asks_text(&n.asks),
                n.verdict.text(),
                runs(n)
            ),
        );
    }
    ctx.out
}

/// The byte range of the node's name (with its quotes) in kubectl's JSON of it.
fn name_span(src: &Arc<Source>, name: &str) -> std::ops::Range<usize> {
    let quoted = serde_json::to_string(name).unwrap_or_default();
    let needle = format!("\"name\": {quoted}");
    let meta = src.text.find("\"metadata\"").unwrap_or(0);
    match src.text[meta..].find(&needle) {
        Some(i) => {
            let start = meta + i + needle.len() - quoted.len();
            start..start + quoted.len()
        }
        None => 0..0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rollout::observe::parse_state;

    /// A container with two POLICY entries runs the last (the kubelet's rule), the value
    /// `check` reads too: status and check must not name different policies for one DaemonSet.
    #[test]
    fn the_last_policy_entry_is_the_one_in_force_as_check_reads_it() {
        let json = r#"{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"cgpu-installer","namespace":"kube-system"},"spec":{"template":{"spec":{"containers":[{"name":"cgpu-installer","image":"x","env":[{"name":"POLICY","value":"1"},{"name":"OTHER","value":"4"},{"name":"POLICY","value":"2"}]}]}}}}"#;
        let obs = observation(&fetched(&[json], &[]));
        assert_eq!(Asks::of(&obs.installers[0]).policy.as_deref(), Some("2"));
        let src = Source::new("ds.json", json.to_string());
        let parsed = crate::yaml::parse(&src);
        let root = parsed.documents[0].root.as_ref().unwrap();
        let objects = crate::manifest::Objects::of(root);
        let installer = objects.iter().find_map(|o| o.installer()).unwrap();
        assert_eq!(installer.policy(), Some(2));
    }

    /// What the cluster reader fetched: the installers' and the nodes' JSON.
    fn fetched(installers: &[&str], nodes: &[Value]) -> Fetched {
        Fetched {
            target: crate::cluster::Target {
                label: "prod".into(),
                context: Some("prod".into()),
                server: None,
            },
            installers: installers
                .iter()
                .enumerate()
                .map(|(i, t)| Source::new(format!("prod:DaemonSet/{i}"), t.to_string()))
                .collect(),
            device_plugins: Vec::new(),
            warnings: Vec::new(),
            nodes: nodes
                .iter()
                .map(|n| {
                    let name = n["metadata"]["name"].as_str().unwrap_or_default();
                    Source::new(format!("prod:Node/{name}"), crate::cluster::kubectl_json(n))
                })
                .collect(),
            pods: Vec::new(),
            pods_listed: None,
            node_count: nodes.len(),
            gpu_sharing: 0,
        }
    }

    fn daemonset(name: &str, containers: Value) -> String {
        serde_json::json!({
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {
                "selector": {"matchLabels": {"name": name}},
                "template": {"spec": {
                    "nodeSelector": {"ack.node.gpu.schedule": "cgpu"},
                    "containers": containers,
                }},
            },
        })
        .to_string()
    }

    fn container(name: &str, policy: &str, tag: &str) -> Value {
        serde_json::json!({
            "name": name,
            "image": format!("registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:{tag}"),
            "env": [{"name": "POLICY", "value": policy}],
        })
    }

    fn gpu_node(name: &str) -> Value {
        serde_json::json!({
            "kind": "Node",
            "metadata": {"name": name, "labels": {"ack.node.gpu.schedule": "cgpu"}},
        })
    }

    /// A sidecar listed before the installer's container does not speak for the installer:
    /// status reads the container named like the DaemonSet, as the rollout's gates do, so it
    /// cannot call a node converged that the rollout would restart.
    #[test]
    fn status_asks_what_the_rollout_reads_from_the_installers_own_container() {
        let ds = daemonset(
            "cgpu-installer",
            serde_json::json!([
                container("log-shipper", "1", "v1.5.3-0000000-aliyun"),
                container("cgpu-installer", "2", "v1.5.10-3c9d1e7-aliyun"),
            ]),
        );
        let obs = observation(&fetched(&[&ds], &[gpu_node("n1")]));
        let n = obs.gpu_sharing().next().expect("n1 shares GPUs");
        let asks = Asks::of(obs.installer_of(n).unwrap());
        assert_eq!(asks.policy.as_deref(), Some("2"));
        assert_eq!(asks.version.as_deref(), Some("1.5.10"));
        // The rollout's reading of the same object.
        let rollout = observe::installer_from(&serde_json::from_str(&ds).unwrap());
        assert_eq!(
            (asks.policy, asks.version),
            (rollout.policy, rollout.version)
        );
    }

    /// cgpu-installer is tried first for a node both installers select, whatever order kubectl
    /// printed them in, as the rollout tries them.
    #[test]
    fn a_node_two_installers_select_is_cgpu_installers() {
        let tag = "v1.5.10-3c9d1e7-aliyun";
        let core = daemonset(
            "cgpu-core-installer",
            serde_json::json!([container("cgpu-core-installer", "3", tag)]),
        );
        let plain = daemonset(
            "cgpu-installer",
            serde_json::json!([container("cgpu-installer", "2", tag)]),
        );
        let obs = observation(&fetched(&[&core, &plain], &[gpu_node("n1")]));
        let names: Vec<&str> = obs.installers.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["cgpu-installer", "cgpu-core-installer"]);
        assert_eq!(
            obs.installer_of(&obs.nodes[0]).unwrap().name,
            "cgpu-installer"
        );
    }

    fn pod(name: &str, node: &str, owner: &str, deleting: bool) -> Value {
        let mut p = serde_json::json!({
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "kube-system",
                "ownerReferences": [{"kind": "DaemonSet", "name": owner, "controller": true}],
            },
            "spec": {
                "nodeName": node,
                "containers": [{"name": owner, "image": "x", "env": [{"name": "POLICY", "value": "2"}]}],
            },
        });
        if deleting {
            p["metadata"]["deletionTimestamp"] = "2026-12-07T16:48:52Z".into();
        }
        p
    }

    /// The pod a node is read through is the rollout's pick: the installer's own pod on the node
    /// that is not being deleted; a pod being deleted is named when it is the only one.
    #[test]
    fn a_node_is_read_through_the_pod_the_rollout_would_pick() {
        let tag = "v1.5.10-3c9d1e7-aliyun";
        let ds = daemonset(
            "cgpu-installer",
            serde_json::json!([container("cgpu-installer", "2", tag)]),
        );
        let mut obs = observation(&fetched(&[&ds], &[]));
        let inst = obs.installers[0].clone();
        let listed = [
            pod("old", "n1", "cgpu-installer", true),
            pod("other", "n1", "cgpu-core-installer", false),
            pod("new", "n1", "cgpu-installer", false),
            pod("gone", "n2", "cgpu-installer", true),
        ];
        let mine = listed
            .iter()
            .map(observe::pod_from)
            .filter(|p| observe::owns(&inst, p))
            .collect();
        obs.installer_pods.insert(inst.name.clone(), mine);
        let listed_all = BTreeMap::new();
        assert_eq!(
            pod_of(&obs, &listed_all, &inst, "n1"),
            Ok(("new".into(), Some("2".into())))
        );
        assert_eq!(
            pod_of(&obs, &listed_all, &inst, "n2"),
            Err("no installer pod on the node: gone is being deleted".into())
        );
        assert_eq!(
            pod_of(&obs, &listed_all, &inst, "n3"),
            Err("no cgpu-installer pod on the node".into())
        );
        let forbidden = BTreeMap::from([(inst.name.clone(), "no list pods in kube-system".into())]);
        assert_eq!(
            pod_of(&obs, &forbidden, &inst, "n1"),
            Err("no list pods in kube-system".into())
        );
    }

    fn asks(policy: &str, version: &str) -> Asks {
        Asks::new("cgpu-installer", Some(policy), Some(version))
    }

    #[test]
    fn a_node_is_judged_against_what_its_installer_asks() {
        // parse_state itself is tested with the observation (rollout::observe).
        let s = parse_state("version 1.5.10\n/proc/cgpu_km/0/policy 2\n/proc/cgpu_km/1/policy 1\n")
            .unwrap();
        let v = judge(&asks("2", "1.5.10"), Some("2"), &s);
        assert_eq!(
            v,
            Verdict::NeedsRestart(vec![
                "GPU 1 runs policy 1, cgpu-installer asks POLICY 2".into()
            ])
        );
        let ok = parse_state("version 1.5.10\n/proc/cgpu_km/0/policy 2\n").unwrap();
        assert_eq!(
            judge(&asks("2", "1.5.10"), Some("2"), &ok),
            Verdict::Converged
        );
        match judge(&asks("2", "1.5.19"), Some("1"), &ok) {
            Verdict::NeedsRestart(why) => {
                assert!(why[0].contains("cGPU 1.5.10, cgpu-installer deploys 1.5.19"));
                assert!(why[1].contains("made with POLICY 1"));
            }
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn the_finding_is_on_the_nodes_name() {
        let text = crate::cluster::kubectl_json(&serde_json::json!({
            "kind": "Node",
            "metadata": {"labels": {"name": "x"}, "name": "cn-hangzhou.10.0.1.11"},
        }));
        let src = Source::new("prod:Node/cn-hangzhou.10.0.1.11", text);
        let span = name_span(&src, "cn-hangzhou.10.0.1.11");
        assert_eq!(&src.text[span], "\"cn-hangzhou.10.0.1.11\"");
    }
}
