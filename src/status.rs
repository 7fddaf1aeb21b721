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
use crate::checklist::steps::{NSENTER, READ_STATE};
use crate::cluster::{ClusterError, Fetched, Options, Target};
use crate::diag::Diagnostic;
use crate::rollout::observe::NodeObs;
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

/// What an installer DaemonSet asks of the nodes it selects.
#[derive(Debug, Clone, Serialize)]
pub struct Asks {
    pub installer: String,
    /// Its POLICY (`None`: not set).
    pub policy: Option<String>,
    /// The cGPU version of its image tag.
    pub version: Option<String>,
    #[serde(skip)]
    node_selector: Vec<(String, String)>,
    #[serde(skip)]
    pod_selector: String,
}

impl Asks {
    /// An installer that asks `policy` and cGPU `version`, selecting no node in particular.
    #[cfg(test)]
    pub(crate) fn new(installer: &str, policy: Option<&str>, version: Option<&str>) -> Asks {
        Asks {
            installer: installer.into(),
            policy: policy.map(str::to_string),
            version: version.map(str::to_string),
            node_selector: Vec::new(),
            pod_selector: String::new(),
        }
    }
}

pub use crate::rollout::observe::{Module, State, parse_state};
use crate::rollout::observe::{env_policy, pairs};

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

fn parse(src: &Source) -> Option<Value> {
    serde_json::from_str(&src.text).ok()
}

fn installers(fetched: &Fetched) -> Vec<Asks> {
    let mut out = Vec::new();
    for ds in fetched.installers.iter().filter_map(|s| parse(s)) {
        let spec = &ds["spec"]["template"]["spec"];
        let container = &spec["containers"][0];
        let version = container["image"]
            .as_str()
            .and_then(|i| cgpu::split_image(i).tag)
            .and_then(|t| cgpu::parse_tag(t).ok())
            .map(|t| t.core.to_string());
        let sel: Vec<String> = pairs(&ds["spec"]["selector"]["matchLabels"])
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        out.push(Asks {
            installer: ds["metadata"]["name"].as_str().unwrap_or("").to_string(),
            policy: env_policy(container),
            version,
            node_selector: pairs(&spec["nodeSelector"]),
            pod_selector: sel.join(","),
        });
    }
    out
}

fn selects(a: &Asks, labels: &std::collections::BTreeMap<String, String>) -> bool {
    !a.node_selector.is_empty()
        && a.node_selector
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
}

/// The installer pods of each installer, by node: (pod name, POLICY) of the first pod that is
/// not being deleted, or why there is none.
type Pods = BTreeMap<(String, String), Result<(String, Option<String>), String>>;

fn list_pods(options: &Options, target: &Target, asks: &[Asks], until: Instant) -> Pods {
    let mut out = Pods::new();
    for a in asks {
        if a.pod_selector.is_empty() {
            out.insert(
                (a.installer.clone(), String::new()),
                Err(format!(
                    "{} has no spec.selector.matchLabels to find its pods by",
                    a.installer
                )),
            );
            continue;
        }
        let args: Vec<String> = [
            "-n",
            "kube-system",
            "get",
            "pods",
            "-l",
            &a.pod_selector,
            "-o",
            "json",
        ]
        .map(String::from)
        .to_vec();
        let listed = options
            .run(target, &args, Some(until))
            .map_err(|e| match e {
                ClusterError::Forbidden { .. } => "no list pods in kube-system".to_string(),
                e => format!("its installer pods could not be listed: {e}"),
            })
            .and_then(|bytes| {
                serde_json::from_slice::<Value>(&bytes)
                    .map_err(|e| format!("kubectl printed something that is not JSON: {e}"))
            });
        let items = match listed {
            Ok(v) => v["items"].as_array().cloned().unwrap_or_default(),
            Err(why) => {
                out.insert((a.installer.clone(), String::new()), Err(why));
                continue;
            }
        };
        for p in &items {
            // The DaemonSet's own pods only (its selector could match another's).
            let owned = p["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|o| {
                    o.iter()
                        .any(|r| r["kind"] == "DaemonSet" && r["name"] == a.installer.as_str())
                });
            let Some(node) = p["spec"]["nodeName"].as_str().filter(|_| owned) else {
                continue;
            };
            let name = p["metadata"]["name"].as_str().unwrap_or("").to_string();
            let key = (a.installer.clone(), node.to_string());
            if p["metadata"]
                .get("deletionTimestamp")
                .is_some_and(|d| !d.is_null())
            {
                out.entry(key).or_insert_with(|| {
                    Err(format!(
                        "no installer pod on the node: {name} is being deleted"
                    ))
                });
                continue;
            }
            let policy = env_policy(&p["spec"]["containers"][0]);
            if !matches!(out.get(&key), Some(Ok(_))) {
                out.insert(key, Ok((name, policy)));
            }
        }
    }
    out
}

/// READ_STATE through the pod, as the runbook runs it.
fn read_state(
    options: &Options,
    target: &Target,
    pod: &str,
    until: Instant,
) -> Result<State, String> {
    let mut args: Vec<String> = ["-n", "kube-system", "exec", pod, "--"]
        .map(String::from)
        .to_vec();
    args.extend(NSENTER.split(' ').map(str::to_string));
    args.extend(["sh".into(), "-c".into(), READ_STATE.into()]);
    match options.run(target, &args, Some(until)) {
        Ok(out) => parse_state(&String::from_utf8_lossy(&out)),
        Err(ClusterError::Forbidden { .. }) => Err("no pods/exec".into()),
        Err(_) if Instant::now() >= until => Err("not read before the deadline (--timeout)".into()),
        Err(ClusterError::Kubectl { detail, .. }) => Err(format!("exec in {pod} failed: {detail}")),
        Err(e) => Err(format!("exec in {pod} failed: {e}")),
    }
}

/// Read every GPU-sharing node of one cluster.
pub fn read(options: &Options, fetched: &Fetched, limits: Limits) -> ClusterStatus {
    let start = Instant::now();
    let until = start + limits.timeout;
    let target = &fetched.target;
    let asks = installers(fetched);
    // The GPU-sharing nodes: those an installer selects, and those labelled for cGPU.
    let mut nodes: Vec<(NodeObs, Option<Asks>)> = Vec::new();
    for n in fetched.nodes.iter().filter_map(|s| parse(s)) {
        let obs = crate::rollout::observe::node_from(&n);
        match asks.iter().find(|a| selects(a, &obs.labels)) {
            Some(a) => nodes.push((obs, Some(a.clone()))),
            None if obs.isolating() => nodes.push((obs, None)),
            None => {}
        }
    }
    let reader = crate::rollout::observe::Reader {
        options,
        target,
        parallel: 1,
    };
    let lock = crate::rollout::observe::read_lease(&reader, crate::rollout::lease::NAME)
        .ok()
        .flatten()
        .filter(|l| !l.holder.is_empty())
        .map(|l| crate::rollout::lease::describe(&l, crate::date::now_millis()));
    let pods = list_pods(options, target, &asks, until);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<NodeStatus>>> = Mutex::new(vec![None; nodes.len()]);
    let workers = limits.parallel.clamp(1, 64).min(nodes.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some((node, asks)) = nodes.get(i) else {
                        break;
                    };
                    let status = one(options, target, node, asks.as_ref(), &pods, until);
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
        installers: asks,
        nodes,
        node_count: fetched.node_count,
        lock,
        context: target.context.clone(),
    }
}

fn one(
    options: &Options,
    target: &Target,
    node: &NodeObs,
    asks: Option<&Asks>,
    pods: &Pods,
    until: Instant,
) -> NodeStatus {
    use crate::rollout::decide::{Phase, phase};
    let name = node.name.as_str();
    let s = NodeStatus {
        name: name.to_string(),
        asks: asks.cloned(),
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
    let mut s = one_read(options, target, name, asks, pods, until, s);
    // A NotReady node is named so, not by the exec's error alone.
    if !node.ready
        && let Verdict::Unreadable(why) = &s.verdict
    {
        s.verdict = Verdict::Unreadable(format!("NotReady: {why}"));
    }
    s
}

#[allow(clippy::too_many_arguments)]
fn one_read(
    options: &Options,
    target: &Target,
    name: &str,
    asks: Option<&Asks>,
    pods: &Pods,
    until: Instant,
    mut s: NodeStatus,
) -> NodeStatus {
    let Some(asks) = asks else {
        s.verdict =
            Verdict::Unreadable("it is labelled for cGPU, but no cgpu-installer selects it".into());
        return s;
    };
    if Instant::now() >= until {
        s.verdict = Verdict::Unreadable("not read before the deadline (--timeout)".into());
        return s;
    }
    let pod = pods
        .get(&(asks.installer.clone(), name.to_string()))
        .or_else(|| pods.get(&(asks.installer.clone(), String::new())));
    let (pod, pod_policy) = match pod {
        Some(Ok(p)) => p.clone(),
        Some(Err(why)) => {
            s.verdict = Verdict::Unreadable(why.clone());
            return s;
        }
        None => {
            s.verdict = Verdict::Unreadable(format!("no {} pod on the node", asks.installer));
            return s;
        }
    };
    s.pod = Some(pod.clone());
    s.pod_policy = pod_policy.clone();
    s.verdict = match read_state(options, target, &pod, until) {
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

    /// A container with two POLICY entries runs the last (the kubelet's rule), the value
    /// `check` reads too: status and check must not name different policies for one DaemonSet.
    #[test]
    fn the_last_policy_entry_is_the_one_in_force_as_check_reads_it() {
        let json = r#"{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"cgpu-installer"},"spec":{"template":{"spec":{"containers":[{"name":"cgpu-installer","image":"x","env":[{"name":"POLICY","value":"1"},{"name":"OTHER","value":"4"},{"name":"POLICY","value":"2"}]}]}}}}"#;
        let v: Value = serde_json::from_str(json).unwrap();
        let container = &v["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(env_policy(container).as_deref(), Some("2"));
        let src = Source::new("ds.json", json.to_string());
        let parsed = crate::yaml::parse(&src);
        let root = parsed.documents[0].root.as_ref().unwrap();
        let objects = crate::manifest::Objects::of(root);
        let installer = objects.iter().find_map(|o| o.installer()).unwrap();
        assert_eq!(installer.policy(), Some(2));
    }

    fn asks(policy: &str, version: &str) -> Asks {
        Asks {
            installer: "cgpu-installer".into(),
            policy: Some(policy.into()),
            version: Some(version.into()),
            node_selector: vec![],
            pod_selector: String::new(),
        }
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
