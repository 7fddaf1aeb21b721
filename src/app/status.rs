//! `cgpu-lint status --cluster`: each context's GPU-sharing nodes read by [`crate::status`],
//! printed as a table, JSON, or a finding per node that is not converged in the report formats.
//! Exit 1 when a node is not converged, 2 when a cluster cannot be read.

use super::report::{Report, print_checked};
use super::{AppError, Exit, Streams};
use crate::cli::{Color, StatusArgs, StatusFormat};
use crate::output::Format;
use crate::output::policyreport::Checked;
use crate::status::{self, ClusterStatus, Limits, Verdict};

pub(crate) fn run(s: &mut Streams, args: &StatusArgs) -> Result<Exit, AppError> {
    if !args.cluster.cluster {
        return Err(AppError::Usage(
            "status reads the live nodes: give --cluster (with --context or --all-contexts)".into(),
        ));
    }
    let timeout = crate::cluster::parse_timeout(&args.timeout)
        .map_err(|_| {
            AppError::Usage(format!(
                "--timeout {}: not a duration (30s, 2m)",
                args.timeout
            ))
        })?
        .unwrap_or(std::time::Duration::from_secs(24 * 3600));
    if args.parallel == 0 {
        return Err(AppError::Usage("--parallel must be at least 1".into()));
    }
    let limits = Limits {
        parallel: args.parallel,
        timeout,
    };
    let options = args.cluster.options();
    let mut clusters: Vec<ClusterStatus> = Vec::new();
    let mut diags = Vec::new();
    let mut sources = Vec::new();
    let mut trouble = false;
    for target in options.targets()? {
        match target.and_then(|t| options.fetch(&t)) {
            Ok(fetched) => {
                for w in &fetched.warnings {
                    writeln!(s.err, "cgpu-lint: warning: {w}")?;
                }
                let c = status::read(&options, &fetched, limits);
                diags.extend(status::findings(&c, &fetched));
                sources.extend(fetched.nodes.iter().cloned());
                clusters.push(c);
            }
            Err(e) => {
                writeln!(s.err, "cgpu-lint: error: {e}")?;
                trouble = true;
            }
        }
    }
    let report_format = match args.format {
        StatusFormat::Table | StatusFormat::Json => None,
        StatusFormat::Report(f) => Some(f),
    };
    match (args.format, report_format) {
        (StatusFormat::Json, _) => s.out.write_all(status::json(&clusters).as_bytes())?,
        (_, Some(format)) => {
            let c = Report {
                format,
                color: Color::Never,
                quiet: false,
                deny_warnings: false,
                output: None,
                statistics: false,
                openreports: false,
                original_severities: false,
                baseline: None,
            };
            let checked = if format == Format::Policyreport {
                Checked {
                    sources,
                    rules: vec![crate::catalogue::RuleId::NodeNotConverged],
                }
            } else {
                Checked::default()
            };
            let nodes = clusters.iter().map(|c| c.nodes.len()).sum();
            print_checked(
                s,
                &c,
                &mut diags,
                (nodes, crate::diag::Counted::Objects),
                0,
                &checked,
            )?;
        }
        _ => s.out.write_all(status::table(&clusters).as_bytes())?,
    }
    let unconverged = clusters
        .iter()
        .flat_map(|c| &c.nodes)
        .any(|n| n.verdict != Verdict::Converged);
    Ok(if trouble {
        Exit::Trouble
    } else if unconverged {
        Exit::Findings
    } else {
        Exit::Clean
    })
}
