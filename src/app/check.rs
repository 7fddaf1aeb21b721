//! `cgpu-lint check`: files, stacks and one cluster's files (`--cluster` is `cluster.rs`).

use super::report::{input_error, print_checked, verdict};
use super::settings::resolve_common;
use super::{AppError, Exit, Streams};
use crate::check;
use crate::cli::CheckArgs;
use crate::lint::inputs;
use crate::output::Format;

pub(crate) fn run(s: &mut Streams, args: &CheckArgs) -> Result<Exit, AppError> {
    if args.show_settings {
        return super::show::settings(s, args);
    }
    if args.show_files {
        return super::show::files(s, args);
    }
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
    // clap's `requires = "cluster"` gives way when PATHs (which conflict with --cluster) are
    // given too, so these are checked here.
    if !args.cluster.cluster
        && let Some(flag) = [
            ("--pods", args.pods),
            ("--all-contexts", args.cluster.all_contexts),
        ]
        .into_iter()
        .find_map(|(f, given)| given.then_some(f))
    {
        return Err(AppError::Usage(format!(
            "{flag} reads a live cluster: give --cluster too"
        )));
    }
    if args.cluster.cluster {
        let mut options = args.cluster.options();
        options.pods = args
            .pods
            .then_some(crate::rules::nodes::counts_a_pod as fn(&_) -> bool);
        return super::cluster::check_cluster(s, c, &settings, &options);
    }
    if args.paths.iter().any(|p| p == "-") && args.admission_policy.is_some() {
        return Err(AppError::Usage(
            "--admission-policy reads the objects from files, not from stdin".into(),
        ));
    }
    if args.add_ignore.is_some() {
        super::add_ignore::usage(args)?;
    }
    // Read the policy first: a policy that does not load stops the run before any report.
    let admission = match &args.admission_policy {
        Some(p) => Some((
            p.as_str(),
            super::admission::load(p, args.old.as_deref(), max_file_size)?,
        )),
        None => None,
    };
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
    } else if args.gitops {
        inputs::check_gitops(&paths, &settings, max_file_size)
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
    let baselined = super::baseline::hide(c, &mut report.diagnostics, &|dir, f| {
        super::baseline::under(dir, &paths, f)
    });
    if let Some(reason) = &args.add_ignore {
        let trouble = !report.errors.is_empty();
        return super::add_ignore::run(s, &report.diagnostics, &settings, reason, args, trouble);
    }
    let checked = super::report::checked(c, std::mem::take(&mut report.sources), &settings);
    print_checked(
        s,
        c,
        &mut report.diagnostics,
        (report.files, crate::diag::Counted::Files),
        baselined,
        &checked,
    )?;
    let mut exit = verdict(&report.diagnostics, c.deny_warnings);
    if let Some((policy, set)) = &admission
        && super::admission::run(
            s,
            (policy, set),
            &paths,
            max_file_size,
            c.format == Format::Human,
        )?
        && exit == Exit::Clean
    {
        exit = Exit::Findings;
    }
    Ok(if report.errors.is_empty() {
        exit
    } else {
        Exit::Trouble
    })
}
