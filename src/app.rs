//! The commands, writing to the streams they are given (only `main` touches the process).

use std::io::{IsTerminal, Write};

use crate::check::{self, Filter, InputError};
use crate::cli::{CheckArgs, Color, CommonArgs, RulesArgs, RulesFormat};
use crate::diag::{Diagnostic, Severity, Summary};
use crate::output::{self, Format};
use crate::rules::{RuleOptions, catalogue};

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
    Config(#[from] crate::config::ConfigError),
    #[error("writing output: {0}")]
    Io(#[from] std::io::Error),
}

pub struct Streams<'a> {
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
    /// Whether stdout is a terminal (for --color auto).
    pub out_is_terminal: bool,
}

pub fn use_color(choice: Color, is_terminal: bool) -> bool {
    match choice {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    }
}

pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

fn validate_rule_names(names: &[String]) -> Result<(), AppError> {
    for n in names {
        if n != "all" && catalogue::find(n).is_none() {
            return Err(AppError::Usage(format!(
                "unknown rule `{n}` (see `cgpu-lint rules`)"
            )));
        }
    }
    Ok(())
}

pub fn rule_options(c: &CommonArgs) -> RuleOptions {
    RuleOptions {
        region: c.region.clone(),
        require_cgpu: c.require_cgpu,
    }
}

pub fn filter(c: &CommonArgs) -> Result<Filter, AppError> {
    validate_rule_names(&c.select)?;
    validate_rule_names(&c.ignore)?;
    Ok(Filter {
        select: c.select.clone(),
        ignore: c.ignore.clone(),
    })
}

/// The exit status findings call for.
pub fn verdict(diags: &[Diagnostic], deny_warnings: bool) -> Exit {
    let fails = diags.iter().any(|d| {
        d.severity == Severity::Error || (deny_warnings && d.severity == Severity::Warning)
    });
    if fails { Exit::Findings } else { Exit::Clean }
}

/// Print findings in the chosen format.
pub fn print_report(
    s: &mut Streams,
    c: &CommonArgs,
    diags: &mut [Diagnostic],
    files: usize,
) -> Result<(), AppError> {
    diags.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    let summary = Summary::of(files, diags);
    // CI formats report paths relative to the working directory (the repository root in CI).
    let cwd = std::env::current_dir().ok();
    let text = match c.format {
        Format::Human => output::human::render(
            diags,
            summary,
            use_color(c.color, s.out_is_terminal),
            c.quiet,
        ),
        Format::Json => output::json::render(diags, summary),
        Format::Sarif => output::sarif::render(diags, cwd.as_deref()),
        Format::Github => output::github::render(diags, summary, cwd.as_deref(), c.quiet),
        Format::Junit => output::junit::render(diags, summary, cwd.as_deref()),
    };
    s.out.write_all(text.as_bytes())?;
    Ok(())
}

/// The common flags with `.cgpu-lint.toml` (or `--config FILE`) filled in, and the config that
/// was read (its per-file-ignores apply to the findings: [`crate::config::Loaded::retain`]).
pub fn with_config(
    c: &CommonArgs,
) -> Result<(CommonArgs, Option<crate::config::Loaded>), AppError> {
    let loaded = crate::config::for_command(c)?;
    let merged = loaded.as_ref().map_or_else(|| c.clone(), |l| l.merge(c));
    Ok((merged, loaded))
}

pub fn check(s: &mut Streams, args: &CheckArgs) -> Result<Exit, AppError> {
    let (c, config) = with_config(&args.common)?;
    let c = &c;
    let filter = filter(c)?;
    let opts = rule_options(c);
    let paths = if args.paths.is_empty() {
        vec![".".to_string()]
    } else {
        args.paths.clone()
    };
    let mut report = if args.stack {
        check::check_stack(
            &paths,
            args.chart_values.as_deref(),
            &opts,
            &filter,
            c.max_file_size,
        )
    } else {
        check::check_paths(&paths, &opts, &filter, c.max_file_size)
    };
    if let Some(config) = &config {
        config.retain(&mut report.diagnostics);
    }
    for e in &report.errors {
        writeln!(s.err, "cgpu-lint: error: {e}")?;
    }
    print_report(s, c, &mut report.diagnostics, report.files)?;
    let exit = verdict(&report.diagnostics, c.deny_warnings);
    Ok(if report.errors.is_empty() {
        exit
    } else {
        Exit::Trouble
    })
}

pub fn schema(s: &mut Streams) -> Result<Exit, AppError> {
    s.out
        .write_all(crate::rules::values::schema_text().as_bytes())?;
    Ok(Exit::Clean)
}

pub fn rules(s: &mut Streams, args: &RulesArgs) -> Result<Exit, AppError> {
    let text = match args.format {
        RulesFormat::Markdown => catalogue::markdown_table(),
        RulesFormat::Json => {
            let list: Vec<serde_json::Value> = catalogue::RULES
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "name": r.name,
                        "severity": r.severity,
                        "group": r.group.title(),
                        "summary": r.summary,
                        "fix": r.fix,
                        "help": r.help,
                    })
                })
                .collect();
            serde_json::to_string_pretty(&list).expect("json") + "\n"
        }
        RulesFormat::Human => {
            let width = catalogue::RULES
                .iter()
                .map(|r| r.name.len())
                .max()
                .unwrap_or(0);
            let mut out = String::new();
            for r in catalogue::RULES {
                out.push_str(&format!(
                    "{:width$}  {:7}  {}{}\n",
                    r.name,
                    r.severity.as_str(),
                    r.summary,
                    if r.fix.is_some() { " [fix]" } else { "" },
                ));
            }
            out
        }
    };
    s.out.write_all(text.as_bytes())?;
    Ok(Exit::Clean)
}

pub fn explain(s: &mut Streams, name: &str) -> Result<Exit, AppError> {
    let Some(r) = catalogue::find(name) else {
        return Err(AppError::Usage(format!(
            "unknown rule `{name}` (see `cgpu-lint rules`)"
        )));
    };
    let text = format!(
        "{name} ({sev}, {group})\n\n{summary}\n\n{expl}\n\nFix: {fix}\nHelp shown with findings: {help}\n",
        name = r.name,
        sev = r.severity.as_str(),
        group = r.group.title(),
        summary = r.summary,
        expl = r.explanation,
        fix = r
            .fix
            .map_or("none; the finding is left for a person.".to_string(), |f| {
                format!("`cgpu-lint fix` does this on its own: {f}.")
            }),
        help = r.help,
    );
    s.out.write_all(text.as_bytes())?;
    Ok(Exit::Clean)
}
