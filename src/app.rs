//! The commands, writing to the streams they are given (only `main` touches the process).

use std::io::{IsTerminal, Write};

use crate::check::{self, Filter, InputError};
use crate::cli::{CheckArgs, ChecklistArgs, Color, CommonArgs, RulesArgs, RulesFormat};
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
    Checklist(#[from] crate::checklist::ChecklistError),
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
    /// Whether `out` is the process's stdout, so large outputs may be copied to it by the
    /// kernel (sendfile/splice) instead of through `out`.
    pub out_is_stdout: bool,
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
        helm: c.helm.map(crate::cli::HelmArg::version),
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
    let mut opts = rule_options(c);
    if opts.region.is_none()
        && let Some(nodes) = &args.nodes
    {
        opts.region = region_from_nodes(nodes, c.max_file_size)?;
    }
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
            c.helm.map(crate::cli::HelmArg::version),
        )
    } else {
        check::check_paths(&paths, &opts, &filter, c.max_file_size)
    };
    if args.same_cluster {
        report.diagnostics.extend(check::same_cluster_mismatches(
            &paths,
            &opts,
            &filter,
            c.max_file_size,
        ));
    }
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

/// The cluster region from a nodes file: the one `topology.kubernetes.io/region` its nodes carry.
pub fn region_from_nodes(path: &str, max_size: u64) -> Result<Option<String>, AppError> {
    let src = check::read_input(path, max_size)?;
    let parsed = crate::yaml::parse(&src);
    let mut regions = std::collections::BTreeSet::new();
    for doc in &parsed.documents {
        if let Some(root) = &doc.root {
            let objects = crate::manifest::Objects::of(root);
            regions.extend(
                crate::rules::nodes::nodes_of(&objects)
                    .iter()
                    .filter_map(|n| n.region()),
            );
        }
    }
    match regions.len() {
        0 => Ok(None),
        1 => Ok(regions.into_iter().next()),
        _ => Err(AppError::Usage(format!(
            "--nodes {path}: the nodes are in several regions ({}); give --region",
            regions.into_iter().collect::<Vec<_>>().join(", ")
        ))),
    }
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

/// `post-render`: stdin → stdout through a [`crate::spill::Spill`] buffer, so that a failed render writes
/// nothing to stdout (Helm 3 would print a partial stream; Helm 4 would try to parse it).
pub fn post_render(
    s: &mut Streams,
    args: &crate::cli::PostRenderArgs,
    input: impl std::io::BufRead,
    seekable: Option<std::fs::File>,
) -> Result<Exit, AppError> {
    use crate::cli::{FailOn, TtyMode};
    validate_rule_names(&args.ignore)?;
    let opts = crate::postrender::Options {
        policy: args.policy,
        fix: args.fix,
        region: args.region.clone(),
        filter: Filter {
            select: Vec::new(),
            ignore: args.ignore.clone(),
        },
    };
    // A regular file on stdin (`post-render < rendered.yaml`) is read twice instead of being
    // held: pass 1 checks and computes the edited documents, pass 2 lets the kernel copy
    // everything between them (copy_file_range/sendfile). A pipe (Helm) is held in a Spill.
    let mut held = crate::spill::Spill::new();
    let mut outcome = match &seekable {
        Some(file) => {
            use std::io::Seek;
            let start = (&*file).stream_position()?;
            let reader = std::io::BufReader::with_capacity(1 << 20, file);
            let mut o = crate::postrender::run(reader, &mut std::io::sink(), &opts)?;
            for (range, _) in &mut o.replacements {
                *range = range.start + start..range.end + start;
            }
            (&*file).seek(std::io::SeekFrom::Start(start))?;
            o
        }
        None => crate::postrender::run(input, &mut held, &opts)?,
    };
    held.flush()?;
    outcome
        .diagnostics
        .sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    let summary = Summary::of(1, &outcome.diagnostics);
    let failed = match args.fail_on {
        FailOn::Error => summary.errors > 0,
        FailOn::Warning => summary.errors + summary.warnings > 0,
        FailOn::Never => false,
    };
    let mut text = String::new();
    for c in &outcome.changes {
        text.push_str(&format!("cgpu-lint post-render: {c}\n"));
    }
    for d in &outcome.diagnostics {
        text.push_str(&output::human::render_one(d, false));
        text.push('\n');
    }
    text.push_str(&format!(
        "cgpu-lint post-render: {} documents, {} installer DaemonSets: {} errors, {} warnings, {} infos; {}\n",
        outcome.documents,
        outcome.installers,
        summary.errors,
        summary.warnings,
        summary.infos,
        if failed {
            "render refused, nothing written to stdout"
        } else {
            "stream written to stdout"
        }
    ));
    s.err.write_all(text.as_bytes())?;
    if let Some(path) = &args.report {
        std::fs::write(path, &text)
            .map_err(|e| AppError::Usage(format!("--report {path}: {e}")))?;
    }
    if failed {
        let to_tty = match args.tty {
            TtyMode::Always => true,
            TtyMode::Never => false,
            TtyMode::Auto => std::env::var_os("HELM_PLUGIN_NAME").is_some(),
        };
        if to_tty {
            tty_summary(&outcome.diagnostics, summary, args.report.as_deref());
        }
        return Ok(Exit::Findings);
    }
    if let Some(file) = &seekable {
        s.out.flush()?;
        if s.out_is_stdout {
            splice_edits(file, &outcome.replacements, &mut std::io::stdout().lock())?;
        } else {
            splice_edits(file, &outcome.replacements, &mut s.out)?;
        }
    } else if s.out_is_stdout {
        // Concrete types let std copy the spilled tail with copy_file_range/sendfile/splice.
        s.out.flush()?;
        held.drain_into(&mut std::io::stdout().lock())?;
    } else {
        held.drain_into_dyn(s.out)?;
    }
    Ok(Exit::Clean)
}

/// Pass 2 of a seekable post-render: copy `file` from its current position to `out`, with each
/// replaced range (absolute offsets, in order) written from memory instead.
fn splice_edits<W: Write + ?Sized>(
    file: &std::fs::File,
    replacements: &[(std::ops::Range<u64>, Vec<u8>)],
    out: &mut W,
) -> std::io::Result<()> {
    use std::io::{Read, Seek};
    let mut f = file;
    let mut pos = f.stream_position()?;
    for (range, bytes) in replacements {
        std::io::copy(&mut f.take(range.start - pos), out)?;
        out.write_all(bytes)?;
        pos = f.seek(std::io::SeekFrom::Start(range.end))?;
    }
    std::io::copy(&mut f, out)?;
    Ok(())
}

/// Helm 4 discards a plugin's stderr; the controlling terminal, when there is one, is the only
/// way to reach the person who ran `helm`. Best effort: no terminal, no message.
fn tty_summary(diags: &[Diagnostic], summary: Summary, report: Option<&str>) {
    let Ok(mut tty) = std::fs::OpenOptions::new().write(true).open("/dev/tty") else {
        return;
    };
    let mut text = format!(
        "cgpu-lint post-render: render refused: {} error(s), {} warning(s)\n",
        summary.errors, summary.warnings
    );
    for d in diags.iter().filter(|d| d.severity != Severity::Info) {
        let at = d.start();
        text.push_str(&format!(
            "  {}[{}] document {} line {}: {}\n",
            d.severity.as_str(),
            d.rule,
            d.document,
            at.line,
            d.message
        ));
    }
    match report {
        Some(r) => text.push_str(&format!("  full report: {r}\n")),
        None => text.push_str(
            "  full report: add --post-renderer-args=--report --post-renderer-args=FILE\n",
        ),
    }
    let _ = tty.write_all(text.as_bytes());
}

pub fn checklist(s: &mut Streams, args: &ChecklistArgs) -> Result<Exit, AppError> {
    use crate::checklist::{self, Desired};
    let desired = match (&args.desired, args.policy) {
        (Some(path), _) => Desired::Values(path),
        (None, Some(policy)) => Desired::Policy {
            policy,
            tag: args.tag.as_deref(),
        },
        (None, None) => {
            return Err(AppError::Usage(
                "give --desired VALUES or --policy N".into(),
            ));
        }
    };
    let list = checklist::build_with(
        &args.current,
        &desired,
        args.nodes.as_deref(),
        args.helm.map(crate::cli::HelmArg::version),
    )?;
    let text = checklist::render(&list, args.format, args.yes)?;
    s.out.write_all(text.as_bytes())?;
    Ok(if list.has_errors() {
        Exit::Findings
    } else {
        Exit::Clean
    })
}

/// Render findings into a byte buffer (for `fix --diff`/`--stdout`, whose report goes to stderr).
fn report_to(
    err: &mut dyn Write,
    c: &CommonArgs,
    diags: &mut [Diagnostic],
    files: usize,
) -> Result<(), AppError> {
    let mut buf = Vec::new();
    let mut sink = std::io::sink();
    let mut inner = Streams {
        out_is_stdout: false,
        out: &mut buf,
        err: &mut sink,
        out_is_terminal: false,
    };
    let mut c = c.clone();
    c.color = Color::Never;
    print_report(&mut inner, &c, diags, files)?;
    err.write_all(&buf)?;
    Ok(())
}

/// `cgpu-lint fix`: apply every safe fix in place (or show it with --diff / --stdout), then
/// report what is left for a person. Exit 1 when a file changed (or would), as pre-commit expects.
pub fn fix(s: &mut Streams, args: &crate::cli::FixArgs) -> Result<Exit, AppError> {
    let (c, config) = with_config(&args.common)?;
    let c = &c;
    let filter = filter(c)?;
    let opts = rule_options(c);
    let paths = if args.paths.is_empty() {
        vec![".".to_string()]
    } else {
        args.paths.clone()
    };
    let (files, walk_errors) = check::expand_paths(&paths);
    if args.stdout && files.len() != 1 {
        return Err(AppError::Usage(format!(
            "--stdout prints one corrected file; {} inputs were given",
            files.len()
        )));
    }
    let color = use_color(c.color, s.out_is_terminal);
    let mut trouble = !walk_errors.is_empty();
    for e in &walk_errors {
        writeln!(s.err, "cgpu-lint: error: {e}")?;
    }
    let mut changed = false;
    let mut remaining = Vec::new();
    for p in &files {
        let src = match check::read_input(p, c.max_file_size) {
            Ok(src) => src,
            Err(e) => {
                writeln!(s.err, "cgpu-lint: error: {e}")?;
                trouble = true;
                continue;
            }
        };
        // per-file-ignores of the config: those rules are neither fixed nor reported here.
        let mut file_filter = filter.clone();
        if let Some(config) = &config {
            file_filter.ignore.extend(
                crate::rules::catalogue::RULES
                    .iter()
                    .filter(|r| !config.allows(p, r.name))
                    .map(|r| r.name.to_string()),
            );
        }
        let fixed = crate::fix::fix_source(&src, &opts, &file_filter);
        if let Some(why) = &fixed.refused {
            writeln!(s.err, "cgpu-lint: {p}: {why}")?;
        }
        changed |= fixed.changed();
        if args.stdout || (p == "-" && !args.diff) {
            s.out.write_all(fixed.text.as_bytes())?;
        } else if args.diff {
            let d = crate::fix::unified_diff(p, &src.text, &fixed.text, color);
            s.out.write_all(d.as_bytes())?;
        } else if fixed.changed() {
            match crate::fix::write_in_place(p, &fixed.text, &opts) {
                Ok(_) => {
                    let mut rules: Vec<&str> = Vec::new();
                    for a in &fixed.applied {
                        if !rules.contains(&a.rule) {
                            rules.push(a.rule);
                        }
                    }
                    writeln!(
                        s.err,
                        "cgpu-lint: fixed {p}: {} finding{} ({})",
                        fixed.applied.len(),
                        if fixed.applied.len() == 1 { "" } else { "s" },
                        rules.join(", ")
                    )?;
                }
                Err(e) => {
                    writeln!(s.err, "cgpu-lint: error: {e}")?;
                    trouble = true;
                }
            }
        }
        remaining.extend(fixed.remaining);
    }
    if args.stdout || args.diff {
        if !(c.quiet && remaining.is_empty()) {
            report_to(s.err, c, &mut remaining, files.len())?;
        }
    } else {
        print_report(s, c, &mut remaining, files.len())?;
    }
    let mut exit = verdict(&remaining, c.deny_warnings);
    if changed && !args.stdout {
        exit = exit.worst(Exit::Findings);
    }
    Ok(if trouble { Exit::Trouble } else { exit })
}

/// `cgpu-lint set KEY=VALUE... PATH`.
pub fn set(s: &mut Streams, args: &crate::cli::SetArgs) -> Result<Exit, AppError> {
    use crate::set::{Assignment, SetError};
    let (path, pairs) = args.args.split_last().expect("clap requires two arguments");
    let assignments = pairs
        .iter()
        .map(|p| Assignment::parse(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| AppError::Usage(e.to_string()))?;
    let src = check::read_input(path, check::DEFAULT_MAX_FILE_SIZE)?;
    let opts = RuleOptions {
        helm: args.helm.map(crate::cli::HelmArg::version),
        ..RuleOptions::default()
    };
    let outcome = match crate::set::set(&src, &assignments, &opts) {
        Ok(o) => o,
        Err(SetError::Usage(m)) => return Err(AppError::Usage(m)),
        Err(e) => {
            writeln!(s.err, "cgpu-lint: {path}: {e}")?;
            return Ok(Exit::Findings);
        }
    };
    for d in &outcome.notes {
        writeln!(
            s.err,
            "cgpu-lint: {}: {} at {}:{}: {}",
            d.severity.as_str(),
            d.rule,
            path,
            d.start().line,
            d.message
        )?;
    }
    if args.stdout || path == "-" {
        s.out.write_all(outcome.text.as_bytes())?;
    } else if args.diff {
        let color = use_color(args.color, s.out_is_terminal);
        let d = crate::fix::unified_diff(path, &src.text, &outcome.text, color);
        s.out.write_all(d.as_bytes())?;
    } else if outcome.text == src.text {
        writeln!(s.err, "cgpu-lint: {path}: already set, nothing to change")?;
    } else {
        crate::fix::write_in_place(path, &outcome.text, &opts)
            .map_err(|e| AppError::Usage(e.to_string()))?;
        writeln!(s.err, "cgpu-lint: {path}: set {}", pairs.join(" "))?;
    }
    Ok(Exit::Clean)
}

/// `cgpu-lint generate` and `cgpu-lint generate patch`.
pub fn generate(s: &mut Streams, args: &crate::cli::GenerateArgs) -> Result<Exit, AppError> {
    use crate::generate::{self as g, GenerateError};
    let result = match &args.patch {
        Some(crate::cli::GenerateCommand::Patch(p)) => g::patch(&g::PatchRequest {
            policy: p.policy,
            tag: p.tag.clone(),
            region: p.region.clone(),
        }),
        None => {
            let node_selector = args
                .node_selector
                .iter()
                .map(|l| g::parse_label(l))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| AppError::Usage(e.to_string()))?;
            g::values(&g::ValuesRequest {
                policy: args.policy,
                tag: args.tag.clone(),
                pull_policy: args.pull_policy.clone(),
                node_selector,
                finance_tag: args.finance_tag.clone(),
                check_regions: args.check_regions,
            })
        }
    };
    let generated = match result {
        Ok(g) => g,
        Err(GenerateError::Usage(m)) => return Err(AppError::Usage(m)),
        Err(e) => {
            writeln!(s.err, "cgpu-lint: {e}")?;
            return Ok(Exit::Findings);
        }
    };
    for d in &generated.notes {
        let hint = if d.rule == "tag-known-deadlock" && args.tag.is_none() && args.patch.is_none() {
            " (the chart's documented default tag; pass --tag v1.5.10 or later)"
        } else {
            ""
        };
        writeln!(
            s.err,
            "cgpu-lint: {}: {}: {}{hint}",
            d.severity.as_str(),
            d.rule,
            d.message
        )?;
    }
    match (&args.output, &args.patch) {
        (Some(file), None) => std::fs::write(file, &generated.text)
            .map_err(|e| AppError::Usage(format!("{file}: {e}")))?,
        _ => s.out.write_all(generated.text.as_bytes())?,
    }
    Ok(Exit::Clean)
}
