//! The command line, declared once for parsing, completions and the man page.

use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::checklist::ChecklistFormat;

mod rollout_args;
mod shared;
use crate::output::Format;
pub use rollout_args::{RebootViaArg, RolloutArgs, RolloutJobArgs};
pub use shared::{ClusterArgs, ConfigArgs, HelmArg};
use shared::{parse_duration, policy_parser};

/// `--format` of check and post-render as clap reads it: the printers' [`Format`] itself, whose
/// names and help are data of `output` (only the front end knows clap).
impl ValueEnum for Format {
    fn value_variants<'a>() -> &'a [Self] {
        &Format::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let v = clap::builder::PossibleValue::new(self.name());
        Some(match self.help() {
            Some(h) => v.help(h),
            None => v,
        })
    }
}

/// `checklist --format` as clap reads it; parsing yields [`ChecklistFormat`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ChecklistFormatArg {
    Markdown,
    Json,
    Shell,
}

impl ChecklistFormatArg {
    fn parser() -> impl TypedValueParser<Value = ChecklistFormat> {
        clap::builder::EnumValueParser::<ChecklistFormatArg>::new().map(|f| match f {
            ChecklistFormatArg::Markdown => ChecklistFormat::Markdown,
            ChecklistFormatArg::Json => ChecklistFormat::Json,
            ChecklistFormatArg::Shell => ChecklistFormat::Shell,
        })
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "cgpu-lint",
    version,
    about = "Check, fix and post-render the cGPU settings of ACK's ack-ai-installer chart",
    long_about = "Check, fix and post-render the cGPU settings of Alibaba Cloud ACK's ack-ai-installer \
chart: the `cgpu:` values block and the cgpu-installer DaemonSet.\n\nExit status: 0 no error \
(warnings allowed unless --deny-warnings); 1 an error finding, or `fix`/`set` changed a file (or \
would, with --diff); 2 the tool could not do its job (a bad argument, a file it could not read)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Parse the process arguments like `Cli::try_parse`, and note which common flags came from
    /// the command line (so that `.cgpu-lint.toml` fills in only the others).
    pub fn parse_args() -> Result<Cli, clap::Error> {
        Self::parse_args_from(std::env::args_os())
    }

    pub fn parse_args_from<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::{CommandFactory, FromArgMatches, parser::ValueSource};
        let mut matches = Cli::command().try_get_matches_from(args)?;
        // Read before the matches are taken apart (which drops value sources), so that the
        // matches need not be cloned.
        let format_given = matches.subcommand().is_some_and(|(_, sub)| {
            sub.ids().any(|id| id.as_str() == "format")
                && sub.value_source("format") == Some(ValueSource::CommandLine)
        });
        let mut cli = Cli::from_arg_matches_mut(&mut matches)?;
        if let Some(common) = cli.command.common_mut() {
            common.format_given = format_given;
        }
        Ok(cli)
    }
}

impl Cli {
    /// The whole command tree for completions and the man page. The subcommands' arguments are
    /// deferred (built when a subcommand is), but the `help` subcommand's tree is copied from
    /// the subcommands before they are built: a subcommand with subcommands of its own is built
    /// out here so that `help generate patch` is in the tree.
    pub fn command_tree() -> clap::Command {
        use clap::CommandFactory;
        Cli::command().mut_subcommands(|sub| match sub.get_name() {
            "generate" => GenerateArgs::augment_args(sub).defer(|g| g),
            _ => sub,
        })
    }
}

impl Command {
    /// The common flags of a command that has them.
    pub fn common_mut(&mut self) -> Option<&mut CommonArgs> {
        match self {
            Command::Check(a) => Some(&mut a.common),
            Command::Fix(a) => Some(&mut a.common),
            Command::Baseline(a) => Some(&mut a.common),
            _ => None,
        }
    }
}

// `defer`: a subcommand's arguments are built only when it is the one invoked (help, completions
// and the man page build the whole tree), so a run does not pay for every other subcommand's
// flags at startup. (A plain comment: a doc comment here would become the program's about.)
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Validate values files, DaemonSets and rendered streams; directories are walked for *.yaml/*.yml
    Check(CheckArgs),
    /// Helm post-renderer (Helm 3 --post-renderer, Helm 4 postrenderer/v1 plugin): rendered
    /// stream on stdin, the same stream on stdout, findings on stderr (and --report / the terminal)
    PostRender(PostRenderArgs),
    /// Print the node-reboot checklist a policy change or cGPU upgrade needs
    Checklist(ChecklistArgs),
    /// Apply the safe fixes in place (exit 1 when a file changed); --diff or --stdout write nothing
    Fix(FixArgs),
    /// Record today's findings in .cgpu-lint-baseline.json (file, JSON pointer, rule, value hash;
    /// never the line): check and fix then report only new ones
    Baseline(BaselineArgs),
    /// Set cgpu keys (KEY=VALUE) without touching anything else; refuses values the rules reject
    Set(SetArgs),
    /// Print a complete, commented values file, or (`generate patch`) the kubectl change for a live cluster
    Generate(GenerateArgs),
    /// Print the values as Helm hands them to the chart's templates (JSON, the whole tree)
    Values(ValuesArgs),
    /// Print the JSON Schema of the values
    Schema,
    /// List the rule catalogue
    Rules(RulesArgs),
    /// Print the cGPU compatibility data (drivers, OS, cgroup v2, instance families, known
    /// issues), or what it says about one tag; with --nodes or --cluster, what an upgrade
    /// breaks on each node
    Compat(CompatArgs),
    /// Restart the GPU-sharing nodes into the desired policy and cGPU version, as a reconciler:
    /// observe, decide each node from what it shows, take the next safe step under the cluster
    /// lock, observe again, until every node shows the goal (--dry-run: say what it would do)
    Rollout(RolloutArgs),
    /// What each GPU-sharing node runs now (the loaded cGPU module's version and each GPU's
    /// policy, read through its installer pod) against what the installer asks: converged,
    /// needs a restart, no module, unreadable
    Status(StatusArgs),
    /// Explain one rule in full
    Explain {
        /// A rule name, as `cgpu-lint rules` lists them
        rule: String,
    },
    /// Language server (LSP 3.17) on stdin/stdout: findings, quick fixes, hover and completion in
    /// the editor
    Server,
    /// Print shell completions
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or with --out write one page per subcommand into DIR
    Man {
        /// Write cgpu-lint.1 and cgpu-lint-SUBCOMMAND.1 (each with its flags) into DIR
        #[arg(long, value_name = "DIR")]
        out: Option<std::path::PathBuf>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// Output format
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// Write the report (in --format) to FILE instead of stdout; stderr then shows the human
    /// report when it is a terminal, else the summary line
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// With --format policyreport: openreports.io/v1alpha1 Report and ClusterReport instead of
    /// wgpolicyk8s.io/v1alpha2 PolicyReport and ClusterPolicyReport
    #[arg(long)]
    pub openreports: bool,
    /// With --format policyreport: only the severities earlier wgpolicyk8s.io/v1alpha2 CRDs
    /// accept (high, medium, low: an info finding is written low); without it, info findings
    /// are `info`, which the CRD wg-policy-prototypes publishes now accepts
    #[arg(long, conflicts_with = "openreports")]
    pub original_severities: bool,
    /// Count the findings per rule (and how many `fix` fixes) instead of listing them; with
    /// --output FILE the counts go to stderr and the report to FILE
    #[arg(long)]
    pub statistics: bool,
    /// The cluster's region id (cn-hangzhou); enables region and finance-tag checks
    #[arg(long, value_name = "REGION")]
    pub region: Option<String>,
    /// Fail (exit 1) on warnings too
    #[arg(long)]
    pub deny_warnings: bool,
    /// Report only these rules (comma-separated or repeated)
    #[arg(long, value_delimiter = ',', value_name = "RULE")]
    pub select: Vec<String>,
    /// Do not report these rules (comma-separated or repeated)
    #[arg(long, value_delimiter = ',', value_name = "RULE")]
    pub ignore: Vec<String>,
    /// Treat these rules' fixes as safe: `fix` applies them without --unsafe-fixes (adds to
    /// the config's `[fix] extend-safe`; see docs/changing-values.md for what each changes)
    #[arg(long, value_delimiter = ',', value_name = "RULE")]
    pub extend_safe_fixes: Vec<String>,
    /// Treat these rules' fixes as unsafe: only --unsafe-fixes applies them (adds to the
    /// config's `[fix] extend-unsafe`)
    #[arg(long, value_delimiter = ',', value_name = "RULE")]
    pub extend_unsafe_fixes: Vec<String>,
    /// A file without a cgpu block is an error, not a skipped file
    #[arg(long)]
    pub require_cgpu: bool,
    /// Colour in human output (NO_COLOR is respected with auto)
    #[arg(long, value_enum, default_value = "auto")]
    pub color: Color,
    /// Print findings only, no summary line unless something failed
    #[arg(long, short)]
    pub quiet: bool,
    /// Largest input file in bytes
    #[arg(long, value_name = "BYTES", default_value_t = crate::check::DEFAULT_MAX_FILE_SIZE)]
    pub max_file_size: u64,
    /// Read settings from this file instead of the nearest .cgpu-lint.toml upward from the
    /// working directory
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Do not read any .cgpu-lint.toml
    #[arg(long, conflicts_with = "config")]
    pub no_config: bool,
    /// Read values as this Helm reads them (default: both Helm 3 and Helm 4)
    #[arg(long, value_enum, value_name = "3|4")]
    pub helm: Option<HelmArg>,
    /// The baseline to hide recorded findings with (default: .cgpu-lint-baseline.json in the
    /// working directory, when it exists); for `baseline`, the file to write
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<std::path::PathBuf>,
    /// Report every finding, even those the baseline records
    #[arg(long, conflicts_with = "baseline")]
    pub no_baseline: bool,
    /// Directory walks read Markdown files (*.md, *.markdown) too: their fenced ```yaml blocks
    /// that mention cGPU (a Markdown file named on the command line always is)
    #[arg(long)]
    pub include_markdown: bool,
    /// Whether --format was on the command line (set by [`Cli::parse_args`]); a config file's
    /// `format` applies only when it was not.
    #[arg(skip)]
    pub format_given: bool,
}

// `--cluster`: read the live cluster through kubectl. (A plain comment: with the
// subcommands deferred, a doc comment here would become the about of `check` and `checklist`.)
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Files, directories, or - for stdin (default: the current directory)
    #[arg(value_name = "PATH", conflicts_with = "cluster")]
    pub paths: Vec<String>,
    #[command(flatten)]
    pub common: CommonArgs,
    /// Treat the files as one Helm values stack, in order (helm -f a -f b), over the chart defaults
    #[arg(long, conflicts_with = "cluster")]
    pub stack: bool,
    /// With --stack: the chart's values.yaml to layer on instead of the documented defaults
    #[arg(long, value_name = "FILE", requires = "stack")]
    pub chart_values: Option<String>,
    /// Nodes (`kubectl get nodes -o yaml|json`): the cluster region is their
    /// topology.kubernetes.io/region label when --region is not given
    #[arg(long, value_name = "FILE", conflicts_with = "cluster")]
    pub nodes: Option<String>,
    /// The inputs describe one cluster: every installer in them must use the same policy
    #[arg(long, conflicts_with = "cluster")]
    pub same_cluster: bool,
    /// Check only the files whose bytes name the chart (`ack-ai-installer`): HelmReleases,
    /// Applications, ApplicationSets, helmfiles, kustomizations of it; the other files are not
    /// reported (their ConfigMaps and Secrets still feed Flux's valuesFrom). The GitOps
    /// pre-commit hook passes every YAML file this way
    #[arg(long, conflicts_with_all = ["cluster", "stack", "nodes", "same_cluster"])]
    pub gitops: bool,
    /// Also admit every object of the inputs offline with this ValidatingAdmissionPolicy file
    /// (`generate admission-policy`, or your own) and print its verdicts after check's
    #[arg(long, value_name = "FILE", conflicts_with_all = ["cluster", "stack"])]
    pub admission_policy: Option<String>,
    /// With --admission-policy: the objects as they are in the cluster (`kubectl get -o yaml`);
    /// an input object of the same kind, namespace and name is admitted as an UPDATE of it
    #[arg(long, value_name = "FILE", requires = "admission_policy")]
    pub old: Option<String>,
    /// Print the settings that apply to the one PATH (a file) once .cgpu-lint.toml, its
    /// per-file-ignores, the flags and the baseline are layered, each with where it came from
    /// (default, FILE:LINE of the config, a flag); --format json for JSON. Checks nothing
    #[arg(long, conflicts_with_all = ["cluster", "show_files", "stack", "gitops"])]
    pub show_settings: bool,
    /// Print each file a walk of the PATHs would check, and each file or folder it skips with
    /// why (.gitignore, not YAML, chart metadata or templates, …; with --gitops, the files the
    /// GitOps hook leaves out); --format json for JSON. Checks nothing
    #[arg(long, conflicts_with_all = ["cluster", "stack"])]
    pub show_files: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// With --cluster: also list the unfinished pods of all namespaces (needs list pods
    /// cluster-wide) and count those requesting aliyun.com/gpu-mem or gpu-core.percentage per
    /// node (pods-per-gpu)
    #[arg(long, requires = "cluster")]
    pub pods: bool,
    /// Write `# cgpu-lint: ignore[rule] -- REASON` for each error and warning reported (after
    /// the config, per-file ignores and the baseline) where the suppression reads it, instead
    /// of reporting them (ruff's --add-noqa)
    #[arg(long, value_name = "REASON", num_args = 0..=1, require_equals = true,
          default_missing_value = "", conflicts_with_all = ["cluster", "admission_policy"])]
    pub add_ignore: Option<String>,
    /// With --add-ignore: the ignores hide their findings up to this day (YYYY-MM-DD, UTC)
    #[arg(long, value_name = "DATE", requires = "add_ignore")]
    pub until: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TtyMode {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Args)]
pub struct PostRenderArgs {
    /// Set POLICY to N on cgpu-installer and cgpu-core-installer (adds the env entry if missing)
    #[arg(long, value_name = "N", value_parser = policy_parser())]
    pub policy: Option<u8>,
    /// Apply the safe fixes to the installers
    #[arg(long)]
    pub fix: bool,
    /// With --fix: also the unsafe fixes (each names what changes at the next upgrade)
    #[arg(long, requires = "fix")]
    pub unsafe_fixes: bool,
    /// The cluster's region: rewrite the installers' registry region to it
    #[arg(long, value_name = "REGION")]
    pub region: Option<String>,
    /// Which findings fail the render (nothing is written to stdout then)
    #[arg(long, value_enum, default_value = "error")]
    pub fail_on: FailOn,
    /// Also write the findings to FILE (Helm 4 discards a plugin's stderr)
    #[arg(long, value_name = "FILE")]
    pub report: Option<String>,
    /// Write a failure summary to the controlling terminal (/dev/tty): auto = only when run as a
    /// Helm 4 plugin (HELM_PLUGIN_NAME is set), whose stderr Helm discards
    #[arg(long, value_enum, default_value = "auto")]
    pub tty: TtyMode,
    /// Do not report these rules (comma-separated or repeated)
    #[arg(long, value_delimiter = ',', value_name = "RULE")]
    pub ignore: Vec<String>,
    /// Report only these rules (comma-separated or repeated)
    #[arg(long, value_delimiter = ',', value_name = "RULE")]
    pub select: Vec<String>,
    /// Format of the report on stderr and in --report (json: the `check --format json` document)
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// Fail (nothing written to stdout) when the stream holds no cgpu-installer or
    /// cgpu-core-installer DaemonSet; implied by --policy
    #[arg(long)]
    pub require_installer: bool,
    #[command(flatten)]
    pub config: ConfigArgs,
}

// `--config FILE` / `--no-config`, for the commands without the common flags. (A plain comment:
// a doc comment on a flattened struct can become the about of the commands that flatten it.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RulesFormat {
    Human,
    Markdown,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompatFormat {
    Human,
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct CompatArgs {
    /// A cGPU image tag or version (v1.5.10-8d3fc1b-aliyun, 1.5.10): print its row only; with
    /// --nodes or --cluster, the tag the what-if deploys
    #[arg(long, value_name = "TAG")]
    pub tag: Option<String>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: CompatFormat,
    /// What-if: the nodes (`kubectl get nodes -o yaml|json`) the node rules run on, as they
    /// are and as they would be after --kubernetes, --tag, --driver, --os-image
    #[arg(long, value_name = "FILE", conflicts_with = "cluster")]
    pub nodes: Option<String>,
    /// With --nodes: values files or installer DaemonSets that say which cGPU version runs now
    #[arg(value_name = "PATH", requires = "nodes")]
    pub inputs: Vec<String>,
    /// What-if: the Kubernetes release the nodes' kubelets will run (1.35, v1.35.1-aliyun.1)
    #[arg(long, value_name = "VERSION")]
    pub kubernetes: Option<String>,
    /// What-if: the NVIDIA driver of the GPU nodes (those with a driver label)
    #[arg(long, value_name = "VERSION")]
    pub driver: Option<String>,
    /// What-if: the nodes' operating system image (status.nodeInfo.osImage)
    #[arg(long, value_name = "TEXT")]
    pub os_image: Option<String>,
    /// What-if: a --tag older than what the nodes run is a downgrade (exit 1 without this flag)
    #[arg(long, requires = "tag")]
    pub allow_downgrade: bool,
    /// With --cluster: the installers, device plugins and nodes come from the cluster
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `status --format`: the node table, the nodes' states as JSON, or a report format (one
/// node-not-converged finding per node that is not converged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusFormat {
    Table,
    Json,
    Report(Format),
}

impl ValueEnum for StatusFormat {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: std::sync::OnceLock<Vec<StatusFormat>> = std::sync::OnceLock::new();
        ALL.get_or_init(|| {
            [StatusFormat::Table, StatusFormat::Json]
                .into_iter()
                .chain(
                    Format::ALL
                        .into_iter()
                        .filter(|f| !matches!(f, Format::Human | Format::Json))
                        .map(StatusFormat::Report),
                )
                .collect()
        })
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        match self {
            StatusFormat::Table => Some(clap::builder::PossibleValue::new("table")),
            StatusFormat::Json => Some(clap::builder::PossibleValue::new("json")),
            StatusFormat::Report(f) => Some(clap::builder::PossibleValue::new(f.name())),
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    /// The installers and nodes come from the cluster (required: status reads live nodes)
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// `table` and `json` give each node's state; the report formats give a finding
    /// (node-not-converged) per node that is not converged
    #[arg(long, value_enum, default_value = "table")]
    pub format: StatusFormat,
    /// Read at most this many nodes at a time
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub parallel: usize,
    /// Every node is read within this time (kubectl's duration syntax), or is reported
    /// unreadable
    #[arg(long, value_name = "DURATION", default_value = "2m")]
    pub timeout: String,
}

#[derive(Debug, Clone, Args)]
pub struct RulesArgs {
    #[arg(long, value_enum, default_value = "human")]
    pub format: RulesFormat,
}

#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["desired", "policy"])))]
pub struct ChecklistArgs {
    /// The live DaemonSet (`kubectl get ds cgpu-installer -n kube-system -o yaml|json`) or the
    /// values deployed now
    #[arg(
        long,
        value_name = "LIVE",
        required_unless_present = "cluster",
        conflicts_with = "cluster"
    )]
    pub current: Option<String>,
    /// The desired values file
    #[arg(long, value_name = "VALUES")]
    pub desired: Option<String>,
    /// The desired policy, instead of a values file
    #[arg(long, value_name = "N", value_parser = policy_parser())]
    pub policy: Option<u8>,
    /// With --policy: the desired image tag (default: the current one)
    #[arg(long, value_name = "TAG", requires = "policy")]
    pub tag: Option<String>,
    /// The cluster's nodes (`kubectl get nodes -o yaml|json`: a List, a NodeList or one Node)
    #[arg(long, value_name = "NODES", conflicts_with = "cluster")]
    pub nodes: Option<String>,
    /// With --cluster: the current state and the nodes come from the cluster (one context)
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Output format
    #[arg(long, value_parser = ChecklistFormatArg::parser(), default_value = "markdown")]
    pub format: ChecklistFormat,
    /// Shell format: the script asks no confirmation (the script also takes --yes itself)
    #[arg(long)]
    pub yes: bool,
    /// Read values files as this Helm does (3: first document only; 4: every document merged).
    /// Default: the first document with a cgpu key
    #[arg(long, value_enum, value_name = "3|4")]
    pub helm: Option<HelmArg>,
    /// After the canary, restart at most N nodes at a time
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_unavailable: u32,
    /// Layer --desired over the values deployed now (the --current values file, or the settings
    /// the DaemonSet runs), as `helm upgrade --reuse-values` does; without it the desired values
    /// are layered over the chart defaults alone, as `helm upgrade -f VALUES` does
    #[arg(long, conflicts_with = "policy")]
    pub reuse_values: bool,
    /// Plan a lower cGPU version than the live one (blocked otherwise: upgrade-downgrade)
    #[arg(long)]
    pub allow_downgrade: bool,
    /// Also restart nodes that were cordoned before the change (they stay cordoned)
    #[arg(long)]
    pub include_cordoned: bool,
    /// `kubectl drain --timeout`: a drain blocked (by a PodDisruptionBudget) stops the run
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub drain_timeout: String,
    /// Report only these rules (comma-separated or repeated)
    #[arg(long, value_delimiter = ',', value_name = "RULE")]
    pub select: Vec<String>,
    /// Do not report these rules (comma-separated or repeated)
    #[arg(long, value_delimiter = ',', value_name = "RULE")]
    pub ignore: Vec<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Debug, Clone, Args)]
pub struct FixArgs {
    /// Files, directories, or - for stdin (default: the current directory)
    #[arg(value_name = "PATH")]
    pub paths: Vec<String>,
    #[command(flatten)]
    pub common: CommonArgs,
    /// Print a unified diff of the fixes and write nothing (exit 1 when there would be changes)
    #[arg(long, conflicts_with = "stdout")]
    pub diff: bool,
    /// Print the corrected file (one input) on stdout and write nothing
    #[arg(long)]
    pub stdout: bool,
    /// Also apply the unsafe fixes: those that change what the chart renders (each names what
    /// changes at the next upgrade)
    #[arg(long)]
    pub unsafe_fixes: bool,
}

#[derive(Debug, Clone, Args)]
pub struct BaselineArgs {
    /// Files, directories, or - for stdin (default: the current directory)
    #[arg(value_name = "PATH")]
    pub paths: Vec<String>,
    #[command(flatten)]
    pub common: CommonArgs,
    /// The entries hide their findings up to this day (YYYY-MM-DD, UTC) and expire after it
    #[arg(long, value_name = "DATE", value_parser = parse_date)]
    pub until: Option<String>,
    /// Drop the entries of the existing baseline that match no finding any more, and add none
    #[arg(long)]
    pub prune: bool,
}

/// A date `YYYY-MM-DD`.
fn parse_date(s: &str) -> Result<String, String> {
    if crate::suppress::valid_date(s) {
        Ok(s.to_string())
    } else {
        Err(format!("`{s}` is not a date YYYY-MM-DD"))
    }
}

#[derive(Debug, Clone, Args)]
pub struct SetArgs {
    /// What to set: policy=2 tag=v1.5.10-… nodeSelector.ack.node.gpu.schedule=cgpu
    #[arg(value_name = "KEY=VALUE", required = true, num_args = 1..)]
    pub pairs: Vec<String>,
    /// The values file to change (- for stdin, printed on stdout)
    #[arg(value_name = "PATH", required = true)]
    pub path: String,
    /// Print a unified diff and write nothing
    #[arg(long, conflicts_with = "stdout")]
    pub diff: bool,
    /// Print the changed file on stdout and write nothing
    #[arg(long)]
    pub stdout: bool,
    /// Colour in the diff (NO_COLOR is respected with auto)
    #[arg(long, value_enum, default_value = "auto")]
    pub color: Color,
    /// Check the result as this Helm reads values (default: both Helm 3 and Helm 4)
    #[arg(long, value_enum, value_name = "3|4")]
    pub helm: Option<HelmArg>,
    /// In a file of several releases of the chart (HelmReleases, Applications, helmfile
    /// releases, kustomize entries, subcharts): the one to change, by name (default: the first)
    #[arg(long, value_name = "NAME")]
    pub release: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Debug, Clone, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct GenerateArgs {
    #[command(subcommand)]
    pub patch: Option<GenerateCommand>,
    /// Scheduling policy 0-5 (0 fair share, 1 preemptive, 2 weight-based, 3 fixed, 4 soft, 5 native)
    #[arg(long, value_name = "N", default_value_t = crate::cgpu::CHART_DEFAULT_POLICY, value_parser = policy_parser())]
    pub policy: u8,
    /// cGPU installer image tag (default: the chart's documented default, which has the 1.5.7 deadlock)
    #[arg(long, value_name = "TAG")]
    pub tag: Option<String>,
    /// imagePullPolicy
    #[arg(long, value_name = "POLICY", default_value = "IfNotPresent")]
    pub pull_policy: String,
    /// A nodeSelector label, KEY=VALUE (repeatable)
    #[arg(long, value_name = "KEY=VALUE")]
    pub node_selector: Vec<String>,
    /// financeCloudImageTag (a -fin build, used in finance-cloud regions)
    #[arg(long, value_name = "TAG")]
    pub finance_tag: Option<String>,
    /// checkRegions
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub check_regions: bool,
    /// Write to FILE instead of stdout
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<String>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum GenerateCommand {
    /// The kubectl command and strategic-merge patch for a cluster where cGPU is already installed
    Patch(PatchArgs),
    /// ValidatingAdmissionPolicies and bindings that stop a bad installer DaemonSet at the API
    /// server (kubectl edit, apply), from the rule catalogue
    AdmissionPolicy(AdmissionPolicyArgs),
    /// A ServiceAccount, minimal roles and a Job that run `cgpu-lint rollout` in the cluster it
    /// changes (no terminal, no laptop credentials)
    RolloutJob(RolloutJobArgs),
}

#[derive(Debug, Clone, Args)]
pub struct AdmissionPolicyArgs {
    /// What the binding of the errors policy does: deny the request, warn (kubectl prints it) or
    /// audit (the audit log only); the warnings policy warns (audits with audit)
    #[arg(long, value_enum, default_value = "deny")]
    pub action: AdmissionAction,
    /// The cluster's Kubernetes version: admissionregistration.k8s.io/v1 from 1.30, v1beta1 for
    /// 1.28 and 1.29
    #[arg(long, value_name = "1.MINOR", default_value = "1.30")]
    pub kube_version: String,
    /// Also a policy for the Flux HelmReleases and Argo CD Applications of the chart: the values
    /// rules on the cgpu block of spec.values / helm.valuesObject
    #[arg(long)]
    pub include_gitops: bool,
    /// Also a ConfigMap (kube-system/cgpu-lint-params: allowedRegions, minVersion, registries)
    /// the installer policies read as params, so a value changes without regenerating
    #[arg(long)]
    pub params: bool,
    /// Write to FILE instead of stdout
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AdmissionAction {
    Deny,
    Warn,
    Audit,
}

#[derive(Debug, Clone, Args)]
pub struct PatchArgs {
    /// The new scheduling policy, 0-5
    #[arg(long, value_name = "N", value_parser = policy_parser())]
    pub policy: u8,
    /// Also change the installer image to this tag (needs --region for the registry host)
    #[arg(long, value_name = "TAG", requires = "region")]
    pub tag: Option<String>,
    /// The cluster's region id (cn-hangzhou), for the registry-vpc host of the image
    #[arg(long, value_name = "REGION")]
    pub region: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct ValuesArgs {
    /// Values files (`helm -f`), or - for stdin; none: the chart's defaults and the set flags
    #[arg(value_name = "FILE")]
    pub files: Vec<String>,
    /// The files are one stack, in order (helm -f a -f b): print one tree; without it each file
    /// is printed on its own line as its own install
    #[arg(long)]
    pub stack: bool,
    /// The chart's values.yaml under the files, instead of the documented defaults
    #[arg(long, value_name = "FILE")]
    pub chart_values: Option<String>,
    /// As `helm --set` (repeatable; typed as Helm types it)
    #[arg(long = "set", value_name = "K=V")]
    pub set: Vec<String>,
    /// As `helm --set-string` (repeatable)
    #[arg(long = "set-string", value_name = "K=V")]
    pub set_string: Vec<String>,
    /// As `helm --set-json` (repeatable)
    #[arg(long = "set-json", value_name = "K=JSON")]
    pub set_json: Vec<String>,
    /// Which Helm reads the values (default: both, which must agree)
    #[arg(long, value_enum, value_name = "3|4")]
    pub helm: Option<HelmArg>,
    /// Print {"origins": {pointer: "file:line"}, "values": …}: where each cgpu leaf was set
    #[arg(long)]
    pub origins: bool,
    /// Largest input file in bytes
    #[arg(long, value_name = "BYTES", default_value_t = crate::check::DEFAULT_MAX_FILE_SIZE)]
    pub max_file_size: u64,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Completions list `help SUB NESTED` for every nested subcommand: [`Cli::command_tree`] must
    /// build out each subcommand that has subcommands of its own.
    #[test]
    fn command_tree_has_every_nested_subcommand_under_help() {
        let mut tree = Cli::command_tree();
        tree.build();
        let help = tree.find_subcommand("help").expect("a help subcommand");
        for sub in tree.get_subcommands().filter(|s| s.get_name() != "help") {
            for nested in sub.get_subcommands().filter(|s| s.get_name() != "help") {
                let listed = help
                    .find_subcommand(sub.get_name())
                    .and_then(|h| h.find_subcommand(nested.get_name()));
                assert!(
                    listed.is_some(),
                    "`help {} {}` is missing: build `{}` out in Cli::command_tree",
                    sub.get_name(),
                    nested.get_name(),
                    sub.get_name()
                );
            }
        }
    }
}
