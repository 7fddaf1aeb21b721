//! `cgpu-lint rollout`'s flags (clap only).

use clap::Args;

use super::shared::{ClusterArgs, ConfigArgs, HelmArg, parse_duration};

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
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(0..=5))]
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
