//! The commands, writing to the streams they are given (only `main` touches the process):
//! the process contract (how a command ends, its errors, its streams), the dispatch, and one
//! file per command family.

use std::io::{BufRead, Write};

use crate::check::InputError;
use crate::cli::{Cli, Command};

mod add_ignore;
mod admission;
mod baseline;
mod check;
mod checklist;
mod cluster;
mod fix;
pub mod fuzz;
mod generate;
mod postrender;
mod report;
mod rollout;
mod rules;
mod set;
pub(crate) mod settings;
mod show;
mod status;
mod values;
mod whatif;

/// How a command ended, as an exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: nothing failed.
    Clean,
    /// 1: an error finding (or a warning with --deny-warnings), or a fix changed a file.
    Findings,
    /// 2: the tool could not do its job.
    Trouble,
}

impl Exit {
    pub fn code(self) -> u8 {
        match self {
            Exit::Clean => 0,
            Exit::Findings => 1,
            Exit::Trouble => 2,
        }
    }

    pub fn worst(self, other: Exit) -> Exit {
        if self.code() >= other.code() {
            self
        } else {
            other
        }
    }
}

/// Errors that end a command with status 2.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Checklist(#[from] crate::checklist::model::ChecklistError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterError),
    #[error("writing output: {0}")]
    Io(#[from] std::io::Error),
}

impl AppError {
    /// The error as the binary prints it on stderr: safe on a terminal and in a CI log (a
    /// value from a file cannot move the cursor, hide text or fake a line). An input's error (its path) is one line, every escape written out; the others keep
    /// their line breaks, with control, bidi and invisible characters escaped.
    pub fn shown(&self) -> String {
        let text = self.to_string();
        match self {
            AppError::Input(_) => crate::output::escape_line(&text).into_owned(),
            _ => crate::output::escape_controls(&text).into_owned(),
        }
    }
}

pub struct Streams<'a> {
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
    /// Whether stdout is a terminal (for --color auto).
    pub out_is_terminal: bool,
    /// Whether stderr is a terminal (`--output FILE` then shows the human report there).
    pub err_is_terminal: bool,
    /// Whether `out` is the process's stdout, so large outputs may be copied to it by the
    /// kernel (sendfile/splice) instead of through `out`.
    pub out_is_stdout: bool,
    /// Whether stdin is a pipe (`check` without paths then refuses: the post-renderer slip).
    pub in_is_pipe: bool,
}

/// Run a parsed command. `stdin` hands over the process's stdin (buffered, and as a file when
/// it is a regular one) for `post-render`, the one command that reads it as a stream.
pub fn run<R: BufRead>(
    command: &Command,
    s: &mut Streams,
    stdin: impl FnOnce() -> (R, Option<std::fs::File>),
) -> Result<Exit, AppError> {
    match command {
        Command::Check(args) => check::run(s, args),
        Command::PostRender(args) => {
            let (input, seekable) = stdin();
            postrender::run(s, args, input, seekable)
        }
        Command::Checklist(args) => checklist::run(s, args),
        Command::Fix(args) => fix::run(s, args),
        Command::Baseline(args) => baseline::run(s, args),
        Command::Set(args) => set::run(s, args),
        Command::Generate(args) => generate::run(s, args),
        Command::Values(args) => values::run(s, args),
        Command::Schema => rules::schema(s),
        Command::Rules(args) => rules::list(s, args),
        Command::Compat(args) => rules::compat(s, args),
        Command::Status(args) => status::run(s, args),
        Command::Rollout(args) => {
            let (mut input, _) = stdin();
            rollout::run(s, args, &mut input)
        }
        Command::Explain { rule } => rules::explain(s, rule),
        Command::Completions { shell } => {
            clap_complete::generate(*shell, &mut Cli::command_tree(), "cgpu-lint", s.out);
            Ok(Exit::Clean)
        }
        // `main` runs the server before taking the streams; nothing to do here.
        Command::Server => Ok(Exit::Clean),
        Command::Man { out: None } => {
            clap_mangen::Man::new(Cli::command_tree()).render(s.out)?;
            Ok(Exit::Clean)
        }
        Command::Man { out: Some(dir) } => {
            let failed = |e: std::io::Error| AppError::Usage(format!("{}: {e}", dir.display()));
            std::fs::create_dir_all(dir).map_err(failed)?;
            clap_mangen::generate_to(Cli::command_tree(), dir).map_err(failed)?;
            let mut pages: Vec<_> = std::fs::read_dir(dir)
                .map_err(failed)?
                .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                .filter(|n| n.starts_with("cgpu-lint") && n.ends_with(".1"))
                .collect();
            pages.sort();
            writeln!(
                s.err,
                "cgpu-lint: wrote {} man pages to {}",
                pages.len(),
                dir.display()
            )?;
            Ok(Exit::Clean)
        }
    }
}
