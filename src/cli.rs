//! The command line, declared once for parsing, completions and the man page.

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::output::Format;

#[derive(Debug, Parser)]
#[command(
    name = "cgpu-lint",
    version,
    about = "Check, fix and post-render the cGPU settings of ACK's ack-ai-installer chart",
    long_about = "Check, fix and post-render the cGPU settings of Alibaba Cloud ACK's ack-ai-installer \
chart: the `cgpu:` values block and the cgpu-installer DaemonSet.\n\nExit status: 0 no error \
(warnings allowed unless --deny-warnings); 1 an error finding, or `fix` changed a file; 2 the tool \
could not do its job."
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
        let matches = Cli::command().try_get_matches_from(args)?;
        let mut cli = Cli::from_arg_matches(&matches)?;
        if let Some((_, sub)) = matches.subcommand()
            && let Some(common) = cli.command.common_mut()
        {
            common.format_given = sub.ids().any(|id| id.as_str() == "format")
                && sub.value_source("format") == Some(ValueSource::CommandLine);
        }
        Ok(cli)
    }
}

impl Command {
    /// The common flags of a command that has them.
    pub fn common_mut(&mut self) -> Option<&mut CommonArgs> {
        match self {
            Command::Check(a) => Some(&mut a.common),
            _ => None,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate values files, DaemonSets and rendered streams; directories are walked for *.yaml/*.yml
    Check(CheckArgs),
    /// Print the JSON Schema of the values
    Schema,
    /// List the rule catalogue
    Rules(RulesArgs),
    /// Explain one rule in full
    Explain {
        /// A rule name, as `cgpu-lint rules` lists them
        rule: String,
    },
    /// Print shell completions
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff)
    Man,
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
    /// Whether --format was on the command line (set by [`Cli::parse_args`]); a config file's
    /// `format` applies only when it was not.
    #[arg(skip)]
    pub format_given: bool,
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Files, directories, or - for stdin (default: the current directory)
    #[arg(value_name = "PATH")]
    pub paths: Vec<String>,
    #[command(flatten)]
    pub common: CommonArgs,
    /// Treat the files as one Helm values stack, in order (helm -f a -f b), over the chart defaults
    #[arg(long)]
    pub stack: bool,
    /// With --stack: the chart's values.yaml to layer on instead of the documented defaults
    #[arg(long, value_name = "FILE", requires = "stack")]
    pub chart_values: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RulesFormat {
    Human,
    Markdown,
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct RulesArgs {
    #[arg(long, value_enum, default_value = "human")]
    pub format: RulesFormat,
}
