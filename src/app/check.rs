//! `cgpu-lint check`: files, stacks, one cluster's files, and `--cluster`.

use super::report::Report;
use super::report::{input_error, print_report, verdict};
use super::settings::resolve_common;
use super::{AppError, Exit, Streams};
use crate::check;
use crate::cli::CheckArgs;
use crate::lint::inputs;
use crate::output::Format;
use crate::rules::catalogue::Severity;

pub(crate) fn run(s: &mut Streams, args: &CheckArgs) -> Result<Exit, AppError> {
    let (c, settings) = resolve_common(&args.common)?;
    let c = &c;
    let max_file_size = args.common.max_file_size;
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
        inputs::check_stack(
            &paths,
            args.chart_values.as_deref(),
            &settings,
            max_file_size,
        )
    } else if args.nodes.is_some() || args.same_cluster {
        // The inputs (and the nodes) describe one cluster: the node rules run on the nodes with
        // what the installers say, the installers are checked against the nodes' region, and
        // their policies must agree.
        if let Some(nodes) = &args.nodes {
            let src = check::read_input(nodes, max_file_size)?;
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
        inputs::check_cluster(&paths, &settings, max_file_size)
    } else {
        inputs::check_paths(&paths, &settings, max_file_size)
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
/// ([`super::cluster::lint_contexts`]). A context that cannot be read is one error line and exit
/// status 2; the others go on.
fn check_cluster(
    s: &mut Streams,
    c: &Report,
    settings: &crate::lint::Settings,
    args: &crate::cli::ClusterArgs,
) -> Result<Exit, AppError> {
    let outcomes = super::cluster::lint_contexts(&args.options(), settings)?;
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
