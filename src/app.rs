//! The commands, writing to the streams they are given (only `main` touches the process).

use crate::rules::catalogue::RuleId;
use std::io::{IsTerminal, Write};

use crate::check::{self, Filter, InputError};
use crate::cli::{CheckArgs, ChecklistArgs, Color, CommonArgs, RulesArgs, RulesFormat};
use crate::diag::{Diagnostic, Summary};
use crate::output::{self, Format};
use crate::rules::catalogue::Severity;
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
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterError),
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
    /// Whether stdin is a pipe (`check` without paths then refuses: the post-renderer slip).
    pub in_is_pipe: bool,
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

/// Is stdin a pipe (what Helm hands a post-renderer)?
pub fn stdin_is_pipe() -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata("/dev/stdin").is_ok_and(|m| m.file_type().is_fifo())
    }
    #[cfg(not(unix))]
    {
        false
    }
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
        ..RuleOptions::default()
    }
}

pub fn filter(c: &CommonArgs) -> Result<Filter, AppError> {
    filter_with(&c.select, &c.ignore, None)
}

/// `--select/--ignore` checked against the catalogue, with the config file's (for the commands
/// without the common flags, whose config is not merged into them beforehand).
fn filter_with(
    select: &[String],
    ignore: &[String],
    config: Option<&crate::config::Loaded>,
) -> Result<Filter, AppError> {
    validate_rule_names(select)?;
    validate_rule_names(ignore)?;
    let filter = Filter {
        select: select.to_vec(),
        ignore: ignore.to_vec(),
    };
    Ok(match config {
        Some(l) => l.merge_filter(&filter),
        None => filter,
    })
}

/// The exit status findings call for.
pub fn verdict(diags: &[Diagnostic], deny_warnings: bool) -> Exit {
    let fails = diags.iter().any(|d| {
        d.severity == Severity::Error || (deny_warnings && d.severity == Severity::Warning)
    });
    if fails { Exit::Findings } else { Exit::Clean }
}

/// Print findings in the chosen format; `files` inputs were checked (objects with
/// `Counted::Objects`).
pub fn print_report(
    s: &mut Streams,
    c: &CommonArgs,
    diags: &mut [Diagnostic],
    files: usize,
    counted: crate::diag::Counted,
) -> Result<(), AppError> {
    diags.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    let summary = Summary {
        counted,
        ..Summary::of(files, diags)
    };
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
        Format::Junit => output::junit::render(diags, summary, cwd.as_deref(), c.deny_warnings),
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

/// The pipeline settings of a command: rule options, filters, and the config for its
/// per-file-ignores.
pub fn settings(
    c: &CommonArgs,
    config: Option<crate::config::Loaded>,
) -> Result<crate::lint::Settings, AppError> {
    Ok(crate::lint::Settings {
        opts: rule_options(c),
        filter: filter(c)?,
        config: config.map(std::sync::Arc::new),
    })
}

pub fn check(s: &mut Streams, args: &CheckArgs) -> Result<Exit, AppError> {
    let (c, config) = with_config(&args.common)?;
    let c = &c;
    let settings = settings(c, config)?;
    if !args.cluster.cluster
        && (args.cluster.kubeconfig.is_some() || !args.cluster.contexts.is_empty())
    {
        return Err(AppError::Usage(
            "--kubeconfig and --context read a live cluster: give --cluster too".into(),
        ));
    }
    if args.cluster.cluster {
        return check_cluster(s, c, &settings, &args.cluster);
    }
    let mut paths = if args.paths.is_empty() {
        // `helm … --post-renderer cgpu-lint --post-renderer-args check`: Helm pipes the
        // rendered manifest in and takes whatever comes out as the manifest. Checking the
        // working directory instead would hand Helm "0 files checked…" and exit 0.
        if s.in_is_pipe {
            return Err(AppError::Usage(
                "check was given no path and stdin is a pipe: as a Helm post-renderer use `cgpu-lint post-render`; to check what is piped in, `cgpu-lint check -`; to check this directory, `cgpu-lint check .`".into(),
            ));
        }
        vec![".".to_string()]
    } else {
        args.paths.clone()
    };
    let mut report = if args.stack {
        check::check_stack(
            &paths,
            args.chart_values.as_deref(),
            &settings,
            c.max_file_size,
        )
    } else if args.nodes.is_some() || args.same_cluster {
        // The inputs (and the nodes) describe one cluster: the node rules run on the nodes with
        // what the installers say, the installers are checked against the nodes' region, and
        // their policies must agree.
        if let Some(nodes) = &args.nodes {
            let src = check::read_input(nodes, c.max_file_size)?;
            if settings.opts.region.is_none()
                && let Err(regions) = crate::lint::nodes_region(&[src])
            {
                return Err(AppError::Usage(format!(
                    "--nodes {nodes}: the nodes are in several regions ({}); give --region",
                    regions.join(", ")
                )));
            }
            paths.push(nodes.clone());
        }
        check::check_cluster(&paths, &settings, c.max_file_size)
    } else {
        check::check_paths(&paths, &settings, c.max_file_size)
    };
    for e in &report.errors {
        input_error(s, e, &mut report.diagnostics)?;
    }
    print_report(
        s,
        c,
        &mut report.diagnostics,
        report.files,
        crate::diag::Counted::Files,
    )?;
    let exit = verdict(&report.diagnostics, c.deny_warnings);
    Ok(if report.errors.is_empty() {
        exit
    } else {
        Exit::Trouble
    })
}

/// One cluster's outcome in `check --cluster`.
/// `check --cluster`: every context's objects linted as a cluster
/// ([`crate::cluster::lint_contexts`]). A context that cannot be read is one error line and exit
/// status 2; the others go on.
fn check_cluster(
    s: &mut Streams,
    c: &CommonArgs,
    settings: &crate::lint::Settings,
    args: &crate::cli::ClusterArgs,
) -> Result<Exit, AppError> {
    let outcomes = crate::cluster::lint_contexts(&args.options(), settings)?;
    let mut diags = Vec::new();
    let mut lines = Vec::new();
    let mut objects = 0;
    let mut trouble = false;
    for o in outcomes {
        match o.result {
            Ok((fetched, d)) => {
                let count = |sev| d.iter().filter(|x| x.severity == sev).count();
                lines.push(crate::cluster::summary_line(
                    &fetched,
                    count(Severity::Error),
                    count(Severity::Warning),
                ));
                objects += fetched.installers.len() + fetched.nodes.len();
                diags.extend(d);
            }
            Err(e) => {
                writeln!(s.err, "cgpu-lint: error: {e}")?;
                lines.push(format!("cluster {}: not read (error above)", o.label));
                trouble = true;
            }
        }
    }
    print_report(s, c, &mut diags, objects, crate::diag::Counted::Objects)?;
    if c.format == Format::Human && lines.len() > 1 && !c.quiet {
        for l in &lines {
            writeln!(s.out, "{l}")?;
        }
    }
    let exit = verdict(&diags, c.deny_warnings);
    Ok(if trouble { Exit::Trouble } else { exit })
}

/// An input that could not be read: a line on stderr (so a CI log shows it beside a redirected
/// report) and an `io-error` finding in the report, in every format (the run exits 2).
fn input_error(
    s: &mut Streams,
    e: &InputError,
    diags: &mut Vec<Diagnostic>,
) -> Result<(), AppError> {
    writeln!(s.err, "cgpu-lint: error: {e}")?;
    diags.push(e.to_diagnostic());
    Ok(())
}

pub fn schema(s: &mut Streams) -> Result<Exit, AppError> {
    s.out
        .write_all(crate::rules::values::schema_text().as_bytes())?;
    Ok(Exit::Clean)
}

pub fn rules(s: &mut Streams, args: &RulesArgs) -> Result<Exit, AppError> {
    let text = match args.format {
        RulesFormat::Markdown => output::rules::markdown_table(),
        RulesFormat::Json => output::rules::json_list(),
        RulesFormat::Human => output::rules::human_list(),
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
    let text = output::rules::explain(r);
    s.out.write_all(text.as_bytes())?;
    Ok(Exit::Clean)
}

/// `post-render`: the settings from the command line and `.cgpu-lint.toml`; the stream handling
/// is [`crate::postrender::serve`].
pub fn post_render(
    s: &mut Streams,
    args: &crate::cli::PostRenderArgs,
    input: impl std::io::BufRead,
    seekable: Option<std::fs::File>,
) -> Result<Exit, AppError> {
    let config = args.config.load()?;
    let filter = filter_with(&args.select, &args.ignore, config.as_ref())?;
    let mut region = args.region.clone();
    if let Some(l) = &config {
        region = region.or_else(|| l.config.region.clone());
    }
    let opts = crate::postrender::Options {
        policy: args.policy,
        fix: args.fix,
        unsafe_fixes: args.unsafe_fixes,
        region: args.region.clone(),
        settings: crate::lint::Settings {
            opts: RuleOptions {
                region,
                require_cgpu: false,
                ..RuleOptions::default()
            },
            filter,
            config: config.map(std::sync::Arc::new),
        },
    };
    crate::postrender::serve(s, args, &opts, input, seekable)
}

pub fn checklist(s: &mut Streams, args: &ChecklistArgs) -> Result<Exit, AppError> {
    use crate::checklist::{self, Desired};
    let config = args.config.load()?;
    let filter = filter_with(&args.select, &args.ignore, config.as_ref())?;
    // `--helm`, else the config's `helm`.
    let helm = args.helm.or_else(|| config.as_ref()?.helm());
    let desired = match (&args.desired, args.policy) {
        (Some(path), _) => match helm {
            Some(h) => Desired::ValuesAs(path, h.version()),
            None => Desired::Values(path),
        },
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
    let mut options = checklist::Options {
        max_unavailable: args.max_unavailable,
        include_cordoned: args.include_cordoned,
        reuse_values: args.reuse_values,
        allow_downgrade: args.allow_downgrade,
        drain_timeout: args.drain_timeout.clone(),
        filter,
        config: config.map(std::sync::Arc::new),
        identity: checklist::Identity {
            context: args.cluster.contexts.first().cloned(),
            kubeconfig: args.cluster.kubeconfig.clone(),
            planned_at: Some(checklist::planning_time()),
            ..Default::default()
        },
    };
    if !args.cluster.cluster && args.cluster.contexts.len() > 1 {
        return Err(AppError::Usage(
            "checklist plans one cluster: give at most one --context".into(),
        ));
    }
    let list = if args.cluster.cluster {
        let cluster = args.cluster.options();
        if cluster.all_contexts || cluster.contexts.len() > 1 {
            return Err(AppError::Usage(
                "checklist --cluster plans one cluster: give at most one --context".into(),
            ));
        }
        let target = cluster
            .targets()?
            .into_iter()
            .next()
            .expect("one target without --all-contexts")?;
        let fetched = cluster.fetch(&target)?;
        options.identity.context = target.context.clone();
        options.identity.server = target.server.clone();
        match cluster.namespace_uid(&target) {
            Ok(uid) => options.identity.cluster_uid = Some(uid),
            Err(why) => options.identity.unread = Some(why),
        }
        if !fetched.installers.iter().any(|src| {
            src.name.ends_with(&format!(
                ":DaemonSet/kube-system/{}",
                crate::cluster::INSTALLERS[0]
            ))
        }) {
            return Err(AppError::Usage(format!(
                "cluster {}: no cgpu-installer DaemonSet in kube-system: cGPU is not installed there, nothing to plan",
                target.label
            )));
        }
        let current = checklist::Inputs {
            label: format!("{}:DaemonSet/kube-system", target.label),
            sources: fetched.installers.clone(),
        };
        let nodes = checklist::Inputs {
            label: format!("{}:nodes", target.label),
            sources: fetched.nodes.clone(),
        };
        checklist::build_from(&current, &desired, Some(&nodes), &options)?
    } else {
        let current = args.current.as_deref().expect("clap requires --current");
        checklist::build(current, &desired, args.nodes.as_deref(), &options)?
    };
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
        in_is_pipe: false,
    };
    let mut c = c.clone();
    c.color = Color::Never;
    print_report(&mut inner, &c, diags, files, crate::diag::Counted::Files)?;
    err.write_all(&buf)?;
    Ok(())
}

/// One line per unsafe fix applied (`--unsafe-fixes`): what changes at the next upgrade.
fn unsafe_applied(
    s: &mut Streams,
    path: &str,
    applied: &[crate::lint::Applied],
) -> Result<(), AppError> {
    for a in applied {
        if let Some(c) = &a.consequence {
            writeln!(
                s.err,
                "cgpu-lint: {path}:{}: unsafe fix ({}): {}",
                a.line, a.rule, c.line
            )?;
        }
    }
    Ok(())
}

/// `cgpu-lint fix`: apply every safe fix in place (or show it with --diff / --stdout), then
/// report what is left for a person. Exit 1 when a file changed (or would), as pre-commit expects.
pub fn fix(s: &mut Streams, args: &crate::cli::FixArgs) -> Result<Exit, AppError> {
    let (c, config) = with_config(&args.common)?;
    let c = &c;
    let settings = settings(c, config)?;
    let opts = &settings.opts;
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
    let mut remaining = Vec::new();
    for e in &walk_errors {
        input_error(s, e, &mut remaining)?;
    }
    let mut changed = false;
    for p in &files {
        let src = match check::read_input(p, c.max_file_size) {
            Ok(src) => src,
            Err(e) => {
                input_error(s, &e, &mut remaining)?;
                trouble = true;
                continue;
            }
        };
        let fixed = crate::lint::lint_fix(&src, &settings, args.unsafe_fixes);
        if let Some(why) = &fixed.refused {
            writeln!(s.err, "cgpu-lint: {p}: {why}")?;
        }
        changed |= fixed.changed();
        if args.stdout || (p == "-" && !args.diff) {
            s.out.write_all(fixed.text.as_bytes())?;
            unsafe_applied(s, p, &fixed.applied)?;
        } else if args.diff {
            let d = crate::fix::unified_diff(p, &src.text, &fixed.text, color);
            s.out.write_all(d.as_bytes())?;
            unsafe_applied(s, p, &fixed.applied)?;
        } else if fixed.changed() {
            match crate::fix::write_in_place(p, &fixed.text, opts) {
                Ok(_) => {
                    let mut rules: Vec<&str> = Vec::new();
                    for a in &fixed.applied {
                        if !rules.contains(&a.rule.name()) {
                            rules.push(a.rule.name());
                        }
                    }
                    writeln!(
                        s.err,
                        "cgpu-lint: fixed {p}: {} finding{} ({})",
                        fixed.applied.len(),
                        if fixed.applied.len() == 1 { "" } else { "s" },
                        rules.join(", ")
                    )?;
                    unsafe_applied(s, p, &fixed.applied)?;
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
        print_report(
            s,
            c,
            &mut remaining,
            files.len(),
            crate::diag::Counted::Files,
        )?;
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
    let (path, pairs) = (&args.path, &args.pairs);
    let assignments = pairs
        .iter()
        .map(|p| Assignment::parse(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| AppError::Usage(e.to_string()))?;
    let src = check::read_input(path, check::DEFAULT_MAX_FILE_SIZE)?;
    let opts = RuleOptions {
        helm: args
            .config
            .helm_or(args.helm)?
            .map(crate::cli::HelmArg::version),
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
        writeln!(s.err, "{}", crate::output::brief(d))?;
    }
    if outcome.documents > 1 {
        writeln!(
            s.err,
            "cgpu-lint: {path}: warning: the file holds {} YAML documents and set changes document {} only; Helm 3 reads only the first document, Helm 4 merges them all",
            outcome.documents, outcome.document
        )?;
    }
    // Like `fix` (pre-commit's convention): 1 when the file changed or `--diff` shows a change.
    let changes = outcome.text != src.text;
    if args.stdout || path == "-" {
        s.out.write_all(outcome.text.as_bytes())?;
        return Ok(Exit::Clean);
    } else if args.diff {
        let color = use_color(args.color, s.out_is_terminal);
        let d = crate::fix::unified_diff(path, &src.text, &outcome.text, color);
        s.out.write_all(d.as_bytes())?;
    } else if !changes {
        writeln!(s.err, "cgpu-lint: {path}: already set, nothing to change")?;
    } else {
        crate::fix::write_in_place(path, &outcome.text, &opts)
            .map_err(|e| AppError::Usage(e.to_string()))?;
        writeln!(
            s.err,
            "cgpu-lint: {path}: set {} in document {}",
            pairs.join(" "),
            outcome.document
        )?;
    }
    Ok(if changes { Exit::Findings } else { Exit::Clean })
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
    // The notes point into the generated text: name it after where it goes (`-`: stdout).
    let written = crate::yaml::Source::new(
        match (&args.output, &args.patch) {
            (Some(file), None) => file.as_str(),
            _ => "-",
        },
        generated.text.clone(),
    );
    for d in &generated.notes {
        let d = &Diagnostic {
            src: written.clone(),
            ..d.clone()
        };
        let hint =
            if d.rule == RuleId::TagKnownDeadlock && args.tag.is_none() && args.patch.is_none() {
                format!(
                    " (the chart's documented default tag; pass --tag v{} or later)",
                    crate::cgpu::RECOMMENDED_VERSION
                )
            } else {
                String::new()
            };
        writeln!(s.err, "{}{hint}", crate::output::brief(d))?;
    }
    match (&args.output, &args.patch) {
        (Some(file), None) => std::fs::write(file, &generated.text)
            .map_err(|e| AppError::Usage(format!("{file}: {e}")))?,
        _ => s.out.write_all(generated.text.as_bytes())?,
    }
    Ok(Exit::Clean)
}
