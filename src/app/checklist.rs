//! `cgpu-lint checklist`: the reboot runbook, from files or a live cluster.

use super::{AppError, Exit, Streams};
use crate::cli::ChecklistArgs;

pub(crate) fn run(s: &mut Streams, args: &ChecklistArgs) -> Result<Exit, AppError> {
    let list = plan(s, args)?;
    let text = crate::checklist::render(&list, args.format, args.yes)?;
    s.out.write_all(text.as_bytes())?;
    Ok(if list.has_errors() {
        Exit::Findings
    } else {
        Exit::Clean
    })
}

/// The plan, from files or (`--cluster`) from the live cluster: `rollout` takes its goal and
/// the findings that block it from here too.
pub(crate) fn plan(
    s: &mut Streams,
    args: &ChecklistArgs,
) -> Result<crate::checklist::model::Checklist, AppError> {
    use crate::checklist;
    use crate::checklist::model::{self, Desired};
    // The findings' select/ignore and per-file-ignores, the config's region (the fallback when
    // the nodes give none), and `--helm`, else the config's `helm`.
    let settings = super::settings::resolve(&super::settings::checklist(args))?.settings;
    let helm = settings.opts.helm;
    let desired = match (&args.desired, args.policy) {
        (Some(path), _) => match helm {
            Some(h) => Desired::ValuesAs(path, h),
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
    let mut options = model::Options {
        max_unavailable: args.max_unavailable,
        include_cordoned: args.include_cordoned,
        reuse_values: args.reuse_values,
        allow_downgrade: args.allow_downgrade,
        drain_timeout: args.drain_timeout.clone(),
        settings,
        identity: model::Identity {
            context: args.cluster.contexts.first().cloned(),
            kubeconfig: args.cluster.kubeconfig.clone(),
            planned_at: Some(model::planning_time()),
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
        for w in &fetched.warnings {
            writeln!(s.err, "cgpu-lint: warning: {w}")?;
        }
        options.identity.context = target.context.clone();
        options.identity.server = target.server.clone();
        match cluster.namespace_uid(&target) {
            Ok(uid) => options.identity.cluster_uid = Some(uid),
            Err(why) => options.identity.unread = Some(why),
        }
        if !fetched.installers.iter().any(|src| {
            src.name.ends_with(&format!(
                ":DaemonSet/kube-system/{}",
                crate::cgpu::INSTALLER_NAMES[0]
            ))
        }) {
            return Err(AppError::Usage(format!(
                "cluster {}: no cgpu-installer DaemonSet in kube-system: cGPU is not installed there, nothing to plan",
                target.label
            )));
        }
        let current = model::Inputs {
            label: format!("{}:DaemonSet/kube-system", target.label),
            // The device plugins too, as `kubectl get ds -n kube-system -o yaml` gives them
            // to --current: the node rules read their nodeSelectors.
            sources: fetched.daemonsets(),
        };
        let nodes = model::Inputs {
            label: format!("{}:nodes", target.label),
            sources: fetched.nodes.clone(),
        };
        checklist::plan::build_from(&current, &desired, Some(&nodes), &options)?
    } else {
        let current = args.current.as_deref().expect("clap requires --current");
        checklist::plan::build(current, &desired, args.nodes.as_deref(), &options)?
    };
    Ok(list)
}
