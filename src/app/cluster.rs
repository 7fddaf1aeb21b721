//! `cgpu-lint check --cluster`: each kubeconfig context read by the kubectl reader
//! ([`crate::cluster`]), its objects linted as one cluster by the pipeline, and the printing:
//! the findings through the report, then one summary line per cluster.

use super::report::{Report, print_checked, verdict};
use super::{AppError, Exit, Streams};
use crate::catalogue::Severity;
use crate::cluster::{ClusterError, Fetched, Options, Target};
use crate::lint;
use crate::output::Format;

/// One context of `check --cluster`: its label and its objects with their findings, or why it
/// could not be read.
pub(crate) struct ContextOutcome {
    pub(crate) label: String,
    pub(crate) result: Result<(Fetched, Vec<crate::diag::Diagnostic>), ClusterError>,
}

/// Read each context's objects (a few contexts at a time, in parallel: kubectl does the waiting)
/// and lint each cluster with [`lint::lint_cluster`], as if its objects were files.
pub(crate) fn lint_contexts(
    options: &Options,
    settings: &lint::Settings,
) -> Result<Vec<ContextOutcome>, ClusterError> {
    let targets = options.targets()?;
    let label_of = |t: &Result<Target, ClusterError>| match t {
        Ok(t) => t.label.clone(),
        Err(ClusterError::ContextNotFound { context, .. }) => context.clone(),
        Err(_) => String::new(),
    };
    let mut outcomes = Vec::new();
    for chunk in targets.chunks(8) {
        let done: Vec<ContextOutcome> = std::thread::scope(|scope| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|t| {
                    scope.spawn(move || ContextOutcome {
                        label: label_of(t),
                        result: t.clone().and_then(|t| {
                            let fetched = options.fetch(&t)?;
                            let diags = lint::lint_cluster(&fetched.sources(), settings);
                            Ok((fetched, diags))
                        }),
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a cluster thread panicked"))
                .collect()
        });
        outcomes.extend(done);
    }
    Ok(outcomes)
}

/// `check --cluster`: every context's objects linted as a cluster
/// ([`lint_contexts`]). A context that cannot be read is one error line and exit
/// status 2; the others go on.
pub(crate) fn check_cluster(
    s: &mut Streams,
    c: &Report,
    settings: &crate::lint::Settings,
    options: &Options,
) -> Result<Exit, AppError> {
    let outcomes = lint_contexts(options, settings)?;
    let mut diags = Vec::new();
    let mut lines = Vec::new();
    let mut objects = 0;
    let mut trouble = false;
    let mut read = Vec::new();
    let mut sources = Vec::new();
    for o in outcomes {
        match o.result {
            Ok((fetched, d)) => {
                for w in &fetched.warnings {
                    writeln!(s.err, "cgpu-lint: warning: {w}")?;
                }
                read.push(format!("{}:", o.label));
                let count = |sev| d.iter().filter(|x| x.severity == sev).count();
                lines.push(summary_line(
                    &fetched,
                    count(Severity::Error),
                    count(Severity::Warning),
                ));
                objects += fetched.objects();
                sources.extend(fetched.sources());
                diags.extend(d);
            }
            Err(e) => {
                writeln!(s.err, "cgpu-lint: error: {e}")?;
                lines.push(format!("cluster {}: not read (error above)", o.label));
                trouble = true;
            }
        }
    }
    // A baseline entry of a context that was read names one of its objects.
    let baselined = super::baseline::hide(c, &mut diags, &|_, f| {
        read.iter().any(|l| f.starts_with(l.as_str()))
    });
    let checked = super::report::checked(c, sources, settings);
    print_checked(
        s,
        c,
        &mut diags,
        (objects, crate::diag::Counted::Objects),
        baselined,
        &checked,
    )?;
    // One line per cluster under the human report (on stderr beside an --output file).
    if lines.len() > 1 && !c.quiet && !c.statistics {
        if c.output.is_some() {
            for l in &lines {
                writeln!(s.err, "{l}")?;
            }
        } else if c.format == Format::Human {
            for l in &lines {
                writeln!(s.out, "{l}")?;
            }
        }
    }
    let exit = verdict(&diags, c.deny_warnings);
    Ok(if trouble { Exit::Trouble } else { exit })
}

/// What the per-cluster summary line says about a cluster's cGPU settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Facts {
    /// POLICY of cgpu-installer and cgpu-core-installer, when set.
    pub policies: Vec<(String, Option<u8>)>,
    /// The cGPU version of cgpu-installer's image (else the core installer's).
    pub version: Option<String>,
}

/// Read the facts of a cluster's installers (the typed view the rules use).
fn facts(fetched: &Fetched) -> Facts {
    let mut f = Facts::default();
    for src in &fetched.installers {
        let parsed = crate::yaml::parse(src);
        for root in parsed.documents.iter().filter_map(|d| d.root.as_ref()) {
            for obj in crate::manifest::Objects::of(root).iter() {
                let Some(inst) = obj.installer() else {
                    continue;
                };
                f.policies.push((inst.name().to_string(), inst.policy()));
                let version = inst
                    .image()
                    .and_then(|(n, _)| n.as_str().map(str::to_string))
                    .and_then(|i| crate::cgpu::split_image(&i).tag.map(str::to_string))
                    .and_then(|t| crate::cgpu::parse_tag(&t).ok())
                    .map(|t| t.core.to_string());
                if f.version.is_none() || inst.name() == crate::cgpu::INSTALLER_NAMES[0] {
                    f.version = version.or(f.version.take());
                }
            }
        }
    }
    f.policies.sort();
    f
}

/// `cluster prod: policy 1, cGPU 1.5.3, 1,556 GPU-sharing of 2,000 nodes: 0 errors, 2 warnings`
/// (with --pods `…of 2,000 nodes, 212 pods requesting GPU shares: …`)
fn summary_line(fetched: &Fetched, errors: usize, warnings: usize) -> String {
    let f = facts(fetched);
    let policy = match f.policies.as_slice() {
        [] => "cGPU not installed".to_string(),
        ps => {
            let mut distinct: Vec<String> = ps
                .iter()
                .map(|(_, p)| p.map_or("unset".into(), |p| p.to_string()))
                .collect();
            distinct.dedup();
            if distinct.len() == 1 {
                format!("policy {}", distinct[0])
            } else {
                format!(
                    "policies differ ({})",
                    ps.iter()
                        .map(|(n, p)| format!(
                            "{n} {}",
                            p.map_or("unset".into(), |p| p.to_string())
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        }
    };
    let version = f
        .version
        .map_or_else(|| "cGPU version unknown".into(), |v| format!("cGPU {v}"));
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    // With --pods: the pods pods-per-gpu counted (not said when they were not listed).
    let pods = match fetched.pods_listed {
        Some(_) => format!(
            ", {} requesting GPU shares",
            plural(fetched.pods.len(), "pod")
        ),
        None => String::new(),
    };
    format!(
        "cluster {}: {policy}, {version}, {} GPU-sharing of {}{pods}: {}, {}",
        fetched.target.label,
        fetched.gpu_sharing,
        plural(fetched.node_count, "node"),
        plural(errors, "error"),
        plural(warnings, "warning"),
    )
}
