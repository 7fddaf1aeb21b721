//! The flags several commands share: the cluster to read, the config file, `--helm`, and
//! kubectl's duration syntax.

use clap::{Args, ValueEnum};

use crate::cgpu;

#[derive(Debug, Clone, Args)]
pub struct ClusterArgs {
    /// Read the cgpu-installer and cgpu-core-installer DaemonSets, HAMi's and ACK's GPU device
    /// plugin DaemonSets (kube-system) and the nodes from the cluster through kubectl, read-only
    /// (get and list)
    #[arg(long)]
    pub cluster: bool,
    /// The kubeconfig (default: as kubectl finds it: KUBECONFIG, ~/.kube/config, or the pod's
    /// service account); checklist: passed on to every kubectl call of the script
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<String>,
    /// A kubeconfig context (repeatable; default: the current context); checklist: the context
    /// the script is pinned to (needed for --format shell when planned from files)
    #[arg(long = "context", value_name = "NAME")]
    pub contexts: Vec<String>,
    /// Every context of the kubeconfig, one cluster each
    #[arg(long, requires = "cluster", conflicts_with = "contexts")]
    pub all_contexts: bool,
    /// Limit for each request to the API server, in kubectl's syntax (5s, 1m; 0: none)
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub request_timeout: String,
    /// The kubectl to run
    #[arg(long, value_name = "PATH", default_value = "kubectl")]
    pub kubectl: String,
}

impl ClusterArgs {
    pub fn options(&self) -> crate::cluster::Options {
        crate::cluster::Options {
            kubectl: self.kubectl.clone(),
            kubeconfig: self.kubeconfig.clone(),
            contexts: self.contexts.clone(),
            all_contexts: self.all_contexts,
            request_timeout: self.request_timeout.clone(),
            pods: None,
        }
    }
}

#[derive(Debug, Clone, Default, Args)]
pub struct ConfigArgs {
    /// Read settings from this file instead of the nearest .cgpu-lint.toml upward from the
    /// working directory
    #[arg(long, value_name = "FILE", conflicts_with = "no_config")]
    pub config: Option<std::path::PathBuf>,
    /// Do not read any .cgpu-lint.toml
    #[arg(long)]
    pub no_config: bool,
}

/// `--helm 3|4`: which Helm reads the values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HelmArg {
    #[value(name = "3")]
    Three,
    #[value(name = "4")]
    Four,
}

impl HelmArg {
    pub fn version(self) -> crate::helm::Version {
        match self {
            HelmArg::Three => crate::helm::Version::Three,
            HelmArg::Four => crate::helm::Version::Four,
        }
    }
}

/// A Go duration as kubectl takes it (`90s`, `10m`, `1h30m`), written into commands.
pub(crate) fn parse_duration(s: &str) -> Result<String, String> {
    let mut rest = s;
    let mut parts = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let unit = ["ms", "s", "m", "h"]
            .into_iter()
            .find(|u| rest[digits..].starts_with(u));
        match unit {
            Some(u) if digits > 0 => rest = &rest[digits + u.len()..],
            _ => return Err(format!("`{s}` is not a duration such as 90s, 10m or 1h30m")),
        }
        parts += 1;
    }
    if parts == 0 {
        return Err("empty duration".into());
    }
    Ok(s.to_string())
}

/// `--policy N`: one of the policies cGPU knows, its range taken from [`cgpu::POLICIES`] so that
/// clap's error names the same range as the rules.
pub(crate) fn policy_parser() -> clap::builder::RangedI64ValueParser<u8> {
    clap::value_parser!(u8)
        .range(i64::from(*cgpu::POLICIES.start())..=i64::from(*cgpu::POLICIES.end()))
}
