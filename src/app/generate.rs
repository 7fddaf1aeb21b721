//! `cgpu-lint generate`.

use super::{AppError, Exit, Streams};
use crate::catalogue::RuleId;
use crate::diag::Diagnostic;

/// `cgpu-lint generate` and `cgpu-lint generate patch`.
pub(crate) fn run(s: &mut Streams, args: &crate::cli::GenerateArgs) -> Result<Exit, AppError> {
    use crate::generate::{self as g, GenerateError};
    if let Some(crate::cli::GenerateCommand::AdmissionPolicy(a)) = &args.patch {
        return admission_policy(s, a);
    }
    if let Some(crate::cli::GenerateCommand::RolloutJob(a)) = &args.patch {
        return rollout_job(s, a);
    }
    let result = match &args.patch {
        Some(crate::cli::GenerateCommand::Patch(p)) => g::patch(&g::PatchRequest {
            policy: p.policy,
            tag: p.tag.clone(),
            region: p.region.clone(),
        }),
        Some(
            crate::cli::GenerateCommand::AdmissionPolicy(_)
            | crate::cli::GenerateCommand::RolloutJob(_),
        )
        | None => {
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

/// `cgpu-lint generate admission-policy`.
fn admission_policy(
    s: &mut Streams,
    args: &crate::cli::AdmissionPolicyArgs,
) -> Result<Exit, AppError> {
    use crate::admission::{self, Action};
    use crate::cli::AdmissionAction;
    let kube_minor = admission::parse_kube_version(&args.kube_version).map_err(AppError::Usage)?;
    let action = match args.action {
        AdmissionAction::Deny => Action::Deny,
        AdmissionAction::Warn => Action::Warn,
        AdmissionAction::Audit => Action::Audit,
    };
    let text = admission::generate(&admission::Request {
        action,
        kube_minor,
        include_gitops: args.include_gitops,
        params: args.params,
    });
    match &args.output {
        Some(file) => {
            std::fs::write(file, &text).map_err(|e| AppError::Usage(format!("{file}: {e}")))?
        }
        None => s.out.write_all(text.as_bytes())?,
    }
    Ok(Exit::Clean)
}

/// `generate rollout-job`: the manifest of the rollout as a Job (`crate::rollout::job`).
fn rollout_job(s: &mut Streams, a: &crate::cli::RolloutJobArgs) -> Result<Exit, AppError> {
    let values = match &a.desired {
        Some(path) => Some(
            crate::check::read_input(path, crate::check::DEFAULT_MAX_FILE_SIZE)
                .map(|src| src.text.clone())?,
        ),
        None => None,
    };
    let spec = crate::rollout::job::JobSpec {
        name: a.name.clone(),
        image: a.image.clone(),
        policy: a.policy,
        tag: a.tag.clone(),
        values,
        cluster_uid: a.cluster_uid.clone(),
        max_unavailable: a.max_unavailable,
        allow_downgrade: a.allow_downgrade,
        include_cordoned: a.include_cordoned,
        reboot_via_node: a.reboot_via == crate::cli::RebootViaArg::Node,
        drain_timeout: a.drain_timeout.clone(),
        lease_duration: a.lease_duration.clone(),
    };
    let text = crate::rollout::job::render(&spec);
    match &a.output {
        Some(file) => std::fs::write(file, text.as_bytes())
            .map_err(|e| AppError::Usage(format!("cannot write {file}: {e}")))?,
        None => s.out.write_all(text.as_bytes())?,
    }
    Ok(Exit::Clean)
}
