//! `cgpu-lint rollout`'s flags (clap only).

use clap::{Args, ValueEnum};

use super::shared::{ClusterArgs, ConfigArgs, HelmArg, parse_duration, policy_parser};

#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["desired", "policy"])))]
pub struct RolloutArgs {
    /// The cluster (one context): required, the rollout acts on the live nodes
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The desired values file, read as the upgrade applies it
    #[arg(long, value_name = "VALUES")]
    pub desired: Option<String>,
    /// The desired policy, instead of a values file
    #[arg(long, value_name = "N", value_parser = policy_parser())]
    pub policy: Option<u8>,
    /// The image tag the installer must deploy (default: the one it deploys now); the run
    /// stops before any change while it deploys another
    #[arg(long, value_name = "TAG")]
    pub tag: Option<String>,
    /// Read the values file as this Helm does
    #[arg(long, value_enum, value_name = "3|4")]
    pub helm: Option<HelmArg>,
    /// After the canary, at most N nodes down at a time (nodes a run left cordoned count)
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_unavailable: u32,
    /// Layer --desired over the values deployed now, as `helm upgrade --reuse-values` does
    #[arg(long, conflicts_with = "policy")]
    pub reuse_values: bool,
    /// Restart a node into an older cGPU than its module runs (refused otherwise)
    #[arg(long)]
    pub allow_downgrade: bool,
    /// Also restart nodes cordoned before the run (they stay cordoned)
    #[arg(long)]
    pub include_cordoned: bool,
    /// How long a node's pods may take to leave it (a PodDisruptionBudget holds them)
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub drain_timeout: String,
    /// How long a rebooted node may take to come back with a new boot id
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = parse_duration)]
    pub reboot_timeout: String,
    /// How long each other wait may take (Ready, the installer pod, the policy files)
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub wait_timeout: String,
    /// How often a waiting run observes again
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub poll_interval: String,
    /// How long the cluster lock holds without a renewal (renewed every third of it)
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub lease_duration: String,
    /// Ask no confirmation
    #[arg(long)]
    pub yes: bool,
    /// Print each node's verdict and the actions it would take now; change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Take the cluster lock from a holder that ran on this host and whose process is gone
    #[arg(long)]
    pub break_lock: bool,
    /// Take the cluster lock even from a run that still renews it (it stops before its next
    /// change)
    #[arg(long)]
    pub force_break_lock: bool,
    /// The kube-system namespace UID the cluster must have (a plan pins it): another cluster
    /// changes nothing
    #[arg(long, value_name = "UID")]
    pub cluster_uid: Option<String>,
    /// Read at most this many nodes' modules at a time
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub parallel: usize,
    /// The Alibaba Cloud CLI that reboots the ECS instances
    #[arg(long, value_name = "PATH", default_value = "aliyun")]
    pub aliyun: String,
    /// How a node is rebooted: `ecs` (the aliyun CLI: RebootInstance of the instance the
    /// node's providerID names) or `node` (a short-lived privileged pod on the node runs
    /// `systemctl reboot`, as kured does: no cloud credentials)
    #[arg(long, value_enum, value_name = "HOW", default_value = "ecs")]
    pub reboot_via: RebootViaArg,
    /// When another run holds the cluster lock, wait this long for it to end or expire
    /// instead of stopping (a Job's replacement pod waits for its predecessor's Lease)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub wait_for_lock: Option<String>,
    /// The Job this run is (`NAMESPACE/NAME`), recorded in the cluster lock so that `status`
    /// names it
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub job: Option<String>,
    /// How the next steps name the command that runs this again (a launcher sets its own path)
    #[arg(long, value_name = "COMMAND", hide = true)]
    pub rerun_as: Option<String>,
    /// Report only these rules (comma-separated or repeated)
    #[arg(long, value_delimiter = ',', value_name = "RULE")]
    pub select: Vec<String>,
    /// Do not report these rules (comma-separated or repeated)
    #[arg(long, value_delimiter = ',', value_name = "RULE")]
    pub ignore: Vec<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// `--reboot-via`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RebootViaArg {
    Ecs,
    Node,
}

/// `generate rollout-job`: the rollout as a Job in the cluster it changes.
#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["desired", "policy"])))]
pub struct RolloutJobArgs {
    /// The desired policy
    #[arg(long, value_name = "N", value_parser = policy_parser())]
    pub policy: Option<u8>,
    /// The desired values file (put in a ConfigMap the Job reads)
    #[arg(long, value_name = "VALUES")]
    pub desired: Option<String>,
    /// The image tag the installer must deploy
    #[arg(long, value_name = "TAG", requires = "policy")]
    pub tag: Option<String>,
    /// The cgpu-lint container image (cgpu-lint and kubectl)
    #[arg(long, value_name = "IMAGE")]
    pub image: String,
    /// The kube-system namespace UID the cluster must have (`kubectl get ns kube-system -o
    /// jsonpath='{.metadata.uid}'`): the Job changes no other cluster
    #[arg(long, value_name = "UID")]
    pub cluster_uid: Option<String>,
    /// After the canary, at most N nodes down at a time
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_unavailable: u32,
    /// Restart a node into an older cGPU than its module runs
    #[arg(long)]
    pub allow_downgrade: bool,
    /// Also restart nodes cordoned before the run (they stay cordoned)
    #[arg(long)]
    pub include_cordoned: bool,
    /// How a node is rebooted: `node` (a privileged pod on it, no cloud credentials) or `ecs`
    /// (the aliyun CLI in the image with the pod's RAM role)
    #[arg(long, value_enum, value_name = "HOW", default_value = "node")]
    pub reboot_via: RebootViaArg,
    /// How long a node's pods may take to leave it
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub drain_timeout: String,
    /// How long the cluster lock holds without a renewal: a replaced pod waits about this long
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = parse_duration)]
    pub lease_duration: String,
    /// The name of the Job, its ServiceAccount and roles
    #[arg(long, value_name = "NAME", default_value = "cgpu-lint-rollout")]
    pub name: String,
    /// Write to FILE instead of stdout
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<String>,
}
