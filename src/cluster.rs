//! Reading a live cluster, read-only, through `kubectl`.
//!
//! Cluster mode changes only where the bytes come from. Per kubeconfig context it runs
//!
//! ```text
//! kubectl get daemonsets.v1.apps cgpu-installer cgpu-core-installer -n kube-system -o json \
//!     --ignore-not-found --show-managed-fields
//! kubectl get daemonsets.v1.apps -n kube-system -o json --chunk-size 500
//! kubectl get nodes -o json --chunk-size 500
//! # with --pods (Options::pods) also:
//! kubectl get pods --all-namespaces --field-selector=status.phase!=Succeeded,status.phase!=Failed \
//!     -o json --chunk-size 500
//! ```
//!
//! (GET and paged LIST requests only, all at once; `rollout` writes through [`Options::run_input`]) and turns every object into its own
//! in-memory [`Source`] named `CONTEXT:Kind/namespace/name`, whose text is what
//! `kubectl get KIND NAME -o json` prints for that object. Of the DaemonSets listed in
//! kube-system only the GPU device plugins are kept (HAMi's `hami-device-plugin` or
//! `RELEASE-hami-device-plugin`, ACK's `ack-nvidia-device-plugin`): `hami-device-plugin-conflict`
//! reads their nodeSelectors, as it does from files. A user who may only GET the two installers
//! (a Role with `resourceNames`) gets the check anyway, with one warning: the LIST is forbidden,
//! so the plugins are judged by node labels only. Of the pods listed (`check --cluster --pods`)
//! only those `pods-per-gpu` counts are kept (the predicate the command passes); a user who
//! may not list pods cluster-wide gets the rest checked, with one warning. The commands hand those sources to the
//! pipeline (`check --cluster`) and to the checklist, exactly as files; this module only reads.
//!
//! Why kubectl and not a Rust client: the kubeconfig is then read *exactly* as kubectl reads it
//! (several `KUBECONFIG` files, current-context, client certificates, tokens, exec credential
//! plugins such as ACK's, `insecure-skip-tls-verify`, proxies, the in-cluster service account),
//! by kubectl itself; and the crate builds no HTTP/TLS stack (kube-rs with rustls doubles the cold build).

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::Arc;

use serde_json::Value;

use crate::yaml::Source;

mod error;
use error::last_line;
pub use error::{ClusterError, Target, classify};

/// Objects per LIST page (`kubectl --chunk-size`).
pub const CHUNK_SIZE: u32 = 500;

/// Where and how to read.
#[derive(Debug, Clone)]
pub struct Options {
    pub kubectl: String,
    pub kubeconfig: Option<String>,
    pub contexts: Vec<String>,
    pub all_contexts: bool,
    /// kubectl's `--request-timeout` syntax, checked by [`check_timeout`].
    pub request_timeout: String,
    /// Also list the unfinished pods of all namespaces and keep those this accepts, for
    /// `pods-per-gpu` (`check --cluster --pods` passes the rule's own predicate,
    /// `rules::nodes::counts_a_pod`; this reader stays below the rules). `None`, the default:
    /// every pod of a large cluster, and `list pods` cluster-wide, are not asked for.
    pub pods: Option<fn(&Arc<Source>) -> bool>,
}

/// The pods LIST's field selector: the API server leaves out the finished pods, which
/// `pods-per-gpu` does not count either.
pub const UNFINISHED_PODS: &str = "status.phase!=Succeeded,status.phase!=Failed";

/// kubectl's `--request-timeout`: `0`, an integer of seconds, or a Go duration with units
/// (`1m30s`, `500ms`). Checked here so a typo fails before any cluster is asked.
pub fn check_timeout(t: &str) -> Result<(), ClusterError> {
    parse_timeout(t).map(|_| ())
}

/// [`check_timeout`], returning the duration (`None` for no limit).
pub fn parse_timeout(t: &str) -> Result<Option<std::time::Duration>, ClusterError> {
    let bad = || ClusterError::BadTimeout(t.to_string());
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        let secs: u64 = t.parse().map_err(|_| bad())?;
        return Ok((secs > 0).then(|| std::time::Duration::from_secs(secs)));
    }
    let mut rest = t;
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let num: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let (unit, secs) = [
            ("ns", 1e-9),
            ("us", 1e-6),
            ("µs", 1e-6),
            ("ms", 1e-3),
            ("s", 1.0),
            ("m", 60.0),
            ("h", 3600.0),
        ]
        .into_iter()
        .filter(|(u, _)| rest.starts_with(u))
        .max_by_key(|(u, _)| u.len())
        .ok_or_else(bad)?;
        total += num * secs;
        rest = &rest[unit.len()..];
    }
    Ok((total > 0.0).then(|| std::time::Duration::from_secs_f64(total)))
}

/// In a pod without a kubeconfig, kubectl falls back to the service account only when no
/// connection flag is given: client-go's `DeferredLoadingClientConfig` takes a config with any
/// override (`--request-timeout` included) for a real one and dials localhost:8080. So for the
/// in-cluster target the limit is not passed to kubectl; each kubectl call is stopped after
/// this many times the request timeout instead (discovery and a few pages of nodes).
pub const IN_CLUSTER_DEADLINE_FACTOR: u32 = 10;

impl Options {
    fn base_args(&self) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(k) = &self.kubeconfig {
            a.push(format!("--kubeconfig={k}"));
        }
        a
    }

    fn spawn_error(&self, e: &std::io::Error) -> ClusterError {
        ClusterError::NoKubectl {
            kubectl: self.kubectl.clone(),
            message: if e.kind() == std::io::ErrorKind::NotFound {
                "not found".into()
            } else {
                e.to_string()
            },
        }
    }

    /// The clusters to read, from the kubeconfig as kubectl merges it (`kubectl config view`).
    /// A named context that does not exist is an error of its own, so the others still run.
    pub fn targets(&self) -> Result<Vec<Result<Target, ClusterError>>, ClusterError> {
        check_timeout(&self.request_timeout)?;
        let out = Command::new(&self.kubectl)
            .args(self.base_args())
            .args(["config", "view", "-o", "json"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| self.spawn_error(&e))?;
        if !out.status.success() {
            return Err(ClusterError::Kubeconfig(last_line(&out.stderr)));
        }
        let view: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
            ClusterError::Kubeconfig(format!(
                "`kubectl config view -o json` printed no JSON: {e}"
            ))
        })?;
        let contexts: Vec<(String, Option<String>)> = view["contexts"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .filter_map(|c| {
                        let name = c["name"].as_str()?.to_string();
                        let cluster = c["context"]["cluster"].as_str();
                        let server = view["clusters"].as_array().and_then(|cl| {
                            cl.iter()
                                .find(|x| x["name"].as_str() == cluster)
                                .and_then(|x| x["cluster"]["server"].as_str())
                                .map(str::to_string)
                        });
                        Some((name, server))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let target = |name: &str| -> Result<Target, ClusterError> {
            match contexts.iter().find(|(n, _)| n == name) {
                Some((n, server)) => Ok(Target {
                    label: n.clone(),
                    context: Some(n.clone()),
                    server: server.clone(),
                }),
                None => Err(ClusterError::ContextNotFound {
                    context: name.to_string(),
                    known: if contexts.is_empty() {
                        "no contexts".into()
                    } else {
                        contexts
                            .iter()
                            .map(|(n, _)| n.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    },
                }),
            }
        };
        if self.all_contexts {
            if contexts.is_empty() {
                return Err(ClusterError::Kubeconfig(match self.missing_kubeconfig() {
                    Some(missing) => format!("--all-contexts: {missing}"),
                    None => "--all-contexts: the kubeconfig has no contexts".into(),
                }));
            }
            return Ok(contexts.iter().map(|(n, _)| target(n)).collect());
        }
        if !self.contexts.is_empty() {
            return Ok(self.contexts.iter().map(|n| target(n)).collect());
        }
        match view["current-context"].as_str().filter(|c| !c.is_empty()) {
            Some(current) => Ok(vec![target(current)]),
            // No kubeconfig in a pod: kubectl uses the service account, as client-go does.
            None if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() => Ok(vec![Ok(Target {
                label: "in-cluster".into(),
                context: None,
                server: None,
            })]),
            None => Err(ClusterError::Kubeconfig(match self.missing_kubeconfig() {
                Some(missing) => format!(
                    "{missing}, so there is no current-context: give --kubeconfig FILE or fix KUBECONFIG"
                ),
                None => "no current-context and not running in a pod: give --context NAME, --all-contexts or --kubeconfig FILE".into(),
            })),
        }
    }

    /// The files `KUBECONFIG` names that do not exist, in words (kubectl skips them silently).
    fn missing_kubeconfig(&self) -> Option<String> {
        let list = std::env::var_os("KUBECONFIG").filter(|_| self.kubeconfig.is_none())?;
        let missing: Vec<String> = std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty() && !p.exists())
            .map(|p| p.display().to_string())
            .collect();
        let verb = if missing.len() == 1 { "does" } else { "do" };
        let names = missing.join(", ");
        (!missing.is_empty()).then(|| format!("KUBECONFIG names {names}, which {verb} not exist"))
    }

    /// Read one cluster: the installer DaemonSets, the GPU device plugin DaemonSets of
    /// kube-system and the nodes, as one source per object.
    pub fn fetch(&self, target: &Target) -> Result<Fetched, ClusterError> {
        let mut common = self.base_args();
        let mut deadline = None;
        match &target.context {
            Some(c) => {
                common.push(format!("--context={c}"));
                common.push(format!("--request-timeout={}", self.request_timeout));
            }
            None => {
                deadline = parse_timeout(&self.request_timeout)?
                    .map(|d| Deadline::after(d * IN_CLUSTER_DEADLINE_FACTOR));
            }
        }
        let mut ds_args = common.clone();
        ds_args.extend(
            [
                "get",
                "daemonsets.v1.apps",
                crate::cgpu::INSTALLER_NAMES[0],
                crate::cgpu::INSTALLER_NAMES[1],
                "--namespace=kube-system",
                "--output=json",
                "--ignore-not-found",
                "--show-managed-fields",
            ]
            .map(String::from),
        );
        let mut list_args = common.clone();
        list_args.extend(
            [
                "get",
                "daemonsets.v1.apps",
                "--namespace=kube-system",
                "--output=json",
                &format!("--chunk-size={CHUNK_SIZE}"),
            ]
            .map(String::from),
        );
        let mut node_args = common.clone();
        node_args.extend(
            [
                "get",
                "nodes",
                "--output=json",
                &format!("--chunk-size={CHUNK_SIZE}"),
            ]
            .map(String::from),
        );
        let mut pod_args = common;
        pod_args.extend(
            [
                "get",
                "pods",
                "--all-namespaces",
                &format!("--field-selector={UNFINISHED_PODS}"),
                "--output=json",
                &format!("--chunk-size={CHUNK_SIZE}"),
            ]
            .map(String::from),
        );
        // The requests at once: each is mostly waiting on the API server. Each is waited
        // for before a failure is reported, so no kubectl of a failed cluster runs on.
        // One deadline for all (in a pod): they run at once, so the wait is one limit, not
        // three or four; a kubectl that cannot be started stops the ones that were.
        let mut ds = self.start_with(&ds_args, false)?;
        let mut list = self
            .start_with(&list_args, false)
            .inspect_err(|_| stop([&mut ds]))?;
        let mut nodes = self
            .start_with(&node_args, false)
            .inspect_err(|_| stop([&mut ds, &mut list]))?;
        let pods = if self.pods.is_some() {
            Some(
                self.start_with(&pod_args, false)
                    .inspect_err(|_| stop([&mut ds, &mut list, &mut nodes]))?,
            )
        } else {
            None
        };
        let ds = self.finish(target, ds, deadline);
        let list = self.finish(target, list, deadline);
        let nodes = self.finish(target, nodes, deadline);
        let pods = pods.map(|p| self.finish(target, p, deadline));
        let installers = objects(target, &ds?)?;
        let nodes = objects(target, &nodes?)?;
        // Listing the DaemonSets is what a user who may only GET the installers cannot do: the
        // cluster is checked anyway, the plugins judged by the node labels they select by.
        let mut warnings = Vec::new();
        let device_plugins = match list {
            Ok(out) => objects(target, &out)?
                .into_iter()
                .filter(is_device_plugin)
                .collect(),
            Err(ClusterError::Forbidden { .. }) => {
                warnings.push(format!(
                    "cluster {}: cannot list daemonsets in kube-system (403 Forbidden); HAMi and ACK device plugins judged by node labels only",
                    target.label
                ));
                Vec::new()
            }
            Err(e) => return Err(e),
        };
        // Listing the pods of all namespaces is the widest right asked for: without it the
        // cluster is checked anyway, without pods-per-gpu.
        let pods = match pods {
            None => None,
            Some(Ok(out)) => Some(objects(target, &out)?),
            Some(Err(ClusterError::Forbidden { .. })) => {
                warnings.push(format!(
                    "cluster {}: cannot list pods (403 Forbidden); pods-per-gpu not checked",
                    target.label
                ));
                None
            }
            Some(Err(e)) => return Err(e),
        };
        let gpu_sharing = nodes.iter().filter(|n| gpu_sharing(n)).count();
        let to_sources = |objs: Vec<Value>| -> Vec<Arc<Source>> {
            objs.iter()
                .map(|o| Source::new(source_name(&target.label, o), kubectl_json(o)))
                .collect()
        };
        // Each pod its own source, kept when the rule counts it (its predicate, on the text the
        // pipeline reads); one at a time, so the text of the pods left out is not all held.
        let pods = pods.zip(self.pods).map(|(pods, keep)| {
            let kept = pods
                .iter()
                .map(|o| Source::new(source_name(&target.label, o), kubectl_json(o)))
                .filter(keep)
                .collect();
            (pods.len(), kept)
        });
        Ok(Fetched {
            target: target.clone(),
            installers: to_sources(installers),
            device_plugins: to_sources(device_plugins),
            warnings,
            pods_listed: pods.as_ref().map(|(listed, _)| *listed),
            pods: pods.map(|(_, kept)| kept).unwrap_or_default(),
            node_count: nodes.len(),
            gpu_sharing,
            nodes: to_sources(nodes),
        })
    }

    /// `metadata.uid` of the kube-system namespace, the cluster's identity (a GET; the reason
    /// in one line when it cannot be read).
    pub fn namespace_uid(&self, target: &Target) -> Result<String, String> {
        let mut args = self.base_args();
        if let Some(c) = &target.context {
            args.push(format!("--context={c}"));
            args.push(format!("--request-timeout={}", self.request_timeout));
        }
        args.extend(
            [
                "get",
                "namespace",
                "kube-system",
                "--output=jsonpath={.metadata.uid}",
            ]
            .map(String::from),
        );
        let child = self.start_with(&args, false).map_err(|e| e.to_string())?;
        let deadline = match &target.context {
            Some(_) => None,
            None => parse_timeout(&self.request_timeout)
                .map_err(|e| e.to_string())?
                .map(|d| Deadline::after(d * IN_CLUSTER_DEADLINE_FACTOR)),
        };
        let out = self
            .finish(target, child, deadline)
            .map_err(|e| e.to_string())?;
        let uid = String::from_utf8_lossy(&out).trim().to_string();
        if uid.is_empty() {
            return Err("the kube-system namespace has no metadata.uid".into());
        }
        Ok(uid)
    }

    /// One kubectl call against `target` with its context and `--request-timeout` (in a pod,
    /// the in-cluster deadline instead), stopped at `until` at the latest: its stdout, or the
    /// error classified as [`classify`] does (a 403 is [`ClusterError::Forbidden`]).
    pub fn run(
        &self,
        target: &Target,
        args: &[String],
        until: Option<std::time::Instant>,
    ) -> Result<Vec<u8>, ClusterError> {
        self.run_input(target, args, None, until)
    }

    /// [`Options::run`] with `input` on stdin (`-f -`): the rollout's writes.
    pub fn run_input(
        &self,
        target: &Target,
        args: &[String],
        input: Option<&[u8]>,
        until: Option<std::time::Instant>,
    ) -> Result<Vec<u8>, ClusterError> {
        let mut all = self.base_args();
        let mut deadline = None;
        match &target.context {
            Some(c) => {
                all.push(format!("--context={c}"));
                all.push(format!("--request-timeout={}", self.request_timeout));
            }
            None => {
                deadline = parse_timeout(&self.request_timeout)?
                    .map(|d| Deadline::after(d * IN_CLUSTER_DEADLINE_FACTOR));
            }
        }
        all.extend(args.iter().cloned());
        if let Some(at) = until {
            let now = std::time::Instant::now();
            let limit = at.saturating_duration_since(now);
            if deadline.is_none_or(|d| at < d.at) {
                deadline = Some(Deadline { at, limit });
            }
        }
        let mut child = self.start_with(&all, input.is_some())?;
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            // kubectl reads all of it first; a failed write shows as kubectl's own failure.
            let _ = std::io::Write::write_all(&mut stdin, bytes);
        }
        self.finish(target, child, deadline)
    }

    fn start_with(
        &self,
        args: &[String],
        input: bool,
    ) -> Result<std::process::Child, ClusterError> {
        Command::new(&self.kubectl)
            .args(args)
            .stdin(if input { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| self.spawn_error(&e))
    }

    fn finish(
        &self,
        target: &Target,
        mut child: std::process::Child,
        deadline: Option<Deadline>,
    ) -> Result<Vec<u8>, ClusterError> {
        // Both pipes are drained on threads, so neither can fill up and block kubectl.
        fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = pipe.read_to_end(&mut buf);
                buf
            })
        }
        let err_reader = drain(child.stderr.take().expect("piped"));
        let out_reader = drain(child.stdout.take().expect("piped"));
        let status = match deadline {
            None => child.wait().map_err(|e| self.spawn_error(&e))?,
            Some(Deadline { at, limit }) => loop {
                if let Some(st) = child.try_wait().map_err(|e| self.spawn_error(&e))? {
                    break st;
                }
                if std::time::Instant::now() > at {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(ClusterError::Timeout {
                        context: target.label.clone(),
                        server: "the API server".into(),
                        timeout: self.request_timeout.clone(),
                        detail: format!(
                            "kubectl still ran after {limit:?}, {IN_CLUSTER_DEADLINE_FACTOR} times the limit (in a pod without a kubeconfig kubectl cannot take --request-timeout)"
                        ),
                    });
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            },
        };
        let stdout = out_reader.join().unwrap_or_default();
        let stderr = err_reader.join().unwrap_or_default();
        if status.success() {
            Ok(stdout)
        } else {
            Err(classify(target, &self.request_timeout, &stderr))
        }
    }
}

/// When kubectl must have answered (in a pod, where it cannot take `--request-timeout`): the
/// instant, and the limit it was set from (for the message).
#[derive(Debug, Clone, Copy)]
struct Deadline {
    at: std::time::Instant,
    limit: std::time::Duration,
}

impl Deadline {
    fn after(limit: std::time::Duration) -> Deadline {
        Deadline {
            at: std::time::Instant::now() + limit,
            limit,
        }
    }
}

/// Kill and reap kubectl processes whose answer is no longer wanted.
fn stop<const N: usize>(children: [&mut std::process::Child; N]) {
    for c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// One cluster's objects.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub target: Target,
    /// cgpu-installer and cgpu-core-installer, those that exist.
    pub installers: Vec<Arc<Source>>,
    /// The GPU device plugin DaemonSets of kube-system (HAMi's, ACK's), in the API server's
    /// order; empty when there are none or they could not be listed (see `warnings`).
    pub device_plugins: Vec<Arc<Source>>,
    /// What could not be read without failing the cluster, one line each (without the
    /// `cgpu-lint: warning: ` the commands print before it on stderr).
    pub warnings: Vec<String>,
    /// One source per node, in the API server's order.
    pub nodes: Vec<Arc<Source>>,
    /// With [`Options::pods`]: the pods `pods-per-gpu` counts, one source each, in the API
    /// server's order (empty without --pods, or when the LIST was forbidden).
    pub pods: Vec<Arc<Source>>,
    /// How many unfinished pods were listed (`None`: not asked, or not allowed).
    pub pods_listed: Option<usize>,
    pub node_count: usize,
    /// Nodes labelled for cGPU isolation (`ack.node.gpu.schedule` cgpu or core_mem, or the
    /// legacy `cgpu=true`).
    pub gpu_sharing: usize,
}

impl Fetched {
    /// Everything the lint pipeline gets for this cluster. Without any installer, the empty
    /// answer for the DaemonSets comes first, so the cluster's `cgpu-missing` names it.
    pub fn sources(&self) -> Vec<Arc<Source>> {
        let mut out = Vec::with_capacity(self.objects() + 1);
        if self.installers.is_empty() {
            out.push(Source::new(
                format!("{}:DaemonSet/kube-system", self.target.label),
                String::new(),
            ));
        }
        out.extend(self.daemonsets());
        out.extend(self.nodes.iter().cloned());
        out.extend(self.pods.iter().cloned());
        out
    }

    /// The DaemonSets read: the installers, then the device plugins.
    pub fn daemonsets(&self) -> Vec<Arc<Source>> {
        let mut out = self.installers.clone();
        out.extend(self.device_plugins.iter().cloned());
        out
    }

    /// How many objects were read.
    pub fn objects(&self) -> usize {
        self.installers.len() + self.device_plugins.len() + self.nodes.len() + self.pods.len()
    }
}

/// `CONTEXT:Kind/namespace/name` (or `CONTEXT:Kind/name` for a cluster-scoped object).
pub fn source_name(context: &str, obj: &Value) -> String {
    let kind = obj["kind"].as_str().unwrap_or("Object");
    let name = obj["metadata"]["name"].as_str().unwrap_or("");
    match obj["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{context}:{kind}/{ns}/{name}"),
        None => format!("{context}:{kind}/{name}"),
    }
}

/// An object as `kubectl get KIND NAME -o json` prints it: keys sorted, four-space indent, a
/// final newline.
pub fn kubectl_json(obj: &Value) -> String {
    use serde::Serialize;
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    obj.serialize(&mut ser).expect("a JSON value serializes");
    buf.push(b'\n');
    String::from_utf8(buf).expect("serde_json writes UTF-8")
}

/// The objects of kubectl's JSON output: a List's items, one object, or nothing
/// (`--ignore-not-found` prints nothing when no object exists).
fn objects(target: &Target, out: &[u8]) -> Result<Vec<Value>, ClusterError> {
    if out.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let v: Value = serde_json::from_slice(out).map_err(|e| ClusterError::BadOutput {
        context: target.label.clone(),
        detail: e.to_string(),
    })?;
    let is_list = v["kind"].as_str().is_some_and(|k| k.ends_with("List"));
    Ok(match v {
        Value::Object(mut m) if is_list => match m.remove("items") {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        },
        other => vec![other],
    })
}

/// A GPU device plugin DaemonSet `hami-device-plugin-conflict` reads: HAMi's or ACK's.
fn is_device_plugin(ds: &Value) -> bool {
    ds["metadata"]["name"].as_str().is_some_and(|n| {
        crate::cgpu::is_hami_device_plugin(n) || n == crate::cgpu::ACK_DEVICE_PLUGIN
    })
}

fn gpu_sharing(node: &Value) -> bool {
    let labels = &node["metadata"]["labels"];
    matches!(
        labels[crate::cgpu::SCHEDULE_LABEL].as_str(),
        Some("cgpu" | "core_mem")
    ) || labels[crate::cgpu::LEGACY_LABEL].as_str() == Some("true")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> Target {
        Target {
            label: "prod".into(),
            context: Some("prod".into()),
            server: Some("https://10.0.0.1:6443".into()),
        }
    }

    #[test]
    fn timeouts_in_kubectl_syntax() {
        for ok in ["0", "30", "5s", "1m", "1h", "1m30s", "500ms", "1.5s"] {
            assert_eq!(check_timeout(ok), Ok(()), "{ok}");
        }
        for bad in ["", "5x", "s", "-1s", "1 m", "5S", "1d"] {
            assert!(check_timeout(bad).is_err(), "{bad}");
        }
        let d = |s: &str| parse_timeout(s).unwrap();
        assert_eq!(d("0"), None);
        assert_eq!(d("30"), Some(std::time::Duration::from_secs(30)));
        assert_eq!(d("1m30s"), Some(std::time::Duration::from_secs(90)));
        assert_eq!(d("250ms"), Some(std::time::Duration::from_millis(250)));
    }

    #[test]
    fn client_go_messages_are_classified() {
        let c = |s: &str| classify(&t(), "30s", s.as_bytes());
        assert!(matches!(
            c("error: You must be logged in to the server (Unauthorized)\n"),
            ClusterError::Unauthorized { .. }
        ));
        assert!(matches!(
            c(
                "Unable to connect to the server: tls: failed to verify certificate: x509: certificate signed by unknown authority"
            ),
            ClusterError::Tls { .. }
        ));
        assert!(matches!(
            c(
                "The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?"
            ),
            ClusterError::Unreachable { .. }
        ));
        assert!(matches!(
            c("Unable to connect to the server: context deadline exceeded"),
            ClusterError::Timeout { .. }
        ));
        let e = c(
            "Error from server (Forbidden): nodes is forbidden: User \"cgpu-audit\" cannot list resource \"nodes\" in API group \"\" at the cluster scope",
        );
        assert_eq!(
            e.to_string(),
            "cluster prod: 403 Forbidden: user \"cgpu-audit\" may not list nodes (cluster scope); cgpu-lint needs get and list on nodes and on daemonsets in kube-system (see the ClusterRole in docs/cluster.md)"
        );
        let e = c(
            "Error from server (Forbidden): daemonsets.apps \"cgpu-installer\" is forbidden: User \"system:serviceaccount:ops:audit\" cannot get resource \"daemonsets\" in API group \"apps\" in the namespace \"kube-system\"",
        );
        assert!(
            e.to_string().contains(
                "user \"system:serviceaccount:ops:audit\" may not get daemonsets.apps in namespace kube-system"
            ),
            "{e}"
        );
    }

    #[test]
    fn objects_are_printed_as_kubectl_prints_them() {
        let v: Value =
            serde_json::from_str(r#"{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}"#)
                .unwrap();
        assert_eq!(
            kubectl_json(&v),
            "{\n    \"apiVersion\": \"v1\",\n    \"kind\": \"Node\",\n    \"metadata\": {\n        \"name\": \"n1\"\n    }\n}\n"
        );
        assert_eq!(source_name("prod", &v), "prod:Node/n1");
    }
}
