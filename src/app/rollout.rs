//! `cgpu-lint rollout`: the goal from the desired values (read as the upgrade applies them, the
//! same planning `checklist --cluster` does, with its blocking findings), then the reconciler
//! (`crate::rollout`) on the one cluster. Exit 0: every GPU-sharing node shows the goal (or, with
//! --dry-run, nothing blocks); 1: the run stopped (the next step is printed); 2: the cluster
//! could not be read or the arguments are wrong.

use std::io::BufRead;

use super::{AppError, Exit, Streams};
use crate::checklist::shell::quote;
use crate::cli::{ChecklistArgs, RolloutArgs};
use crate::rollout::decide::{Config, Goal, RebootVia};
use crate::rollout::lease::Takeover;
use crate::rollout::run::{Ended, Rollout, run as run_loop};

fn secs(flag: &str, value: &str) -> Result<i64, AppError> {
    match crate::cluster::parse_timeout(value) {
        Ok(Some(d)) if d.as_secs() > 0 => Ok(d.as_secs() as i64),
        _ => Err(AppError::Usage(format!(
            "--{flag} {value}: a duration of at least one second (90s, 10m)"
        ))),
    }
}

/// The words that run this again (or plan again), each quoted for a shell.
fn command(args: &RolloutArgs, verb: &str) -> String {
    let mut w: Vec<String> = vec!["cgpu-lint".into(), verb.into(), "--cluster".into()];
    for c in &args.cluster.contexts {
        w.extend(["--context".into(), quote(c)]);
    }
    if let Some(k) = &args.cluster.kubeconfig {
        w.extend(["--kubeconfig".into(), quote(k)]);
    }
    match (&args.desired, args.policy) {
        (Some(d), _) => w.extend(["--desired".into(), quote(d)]),
        (None, Some(p)) => w.extend(["--policy".into(), p.to_string()]),
        _ => {}
    }
    if let Some(t) = &args.tag {
        w.extend(["--tag".into(), quote(t)]);
    }
    if args.max_unavailable != 1 {
        w.extend(["--max-unavailable".into(), args.max_unavailable.to_string()]);
    }
    for (on, flag) in [
        (args.allow_downgrade, "--allow-downgrade"),
        (args.include_cordoned, "--include-cordoned"),
        (args.reuse_values, "--reuse-values"),
    ] {
        if on {
            w.push(flag.into());
        }
    }
    if verb == "checklist" {
        w.extend([
            "--format".into(),
            "shell".into(),
            ">".into(),
            "checklist.sh".into(),
        ]);
    } else if args.yes {
        w.push("--yes".into());
    }
    w.join(" ")
}

pub(crate) fn run(
    s: &mut Streams,
    args: &RolloutArgs,
    input: &mut dyn BufRead,
) -> Result<Exit, AppError> {
    if args.cluster.all_contexts || args.cluster.contexts.len() > 1 {
        return Err(AppError::Usage(
            "rollout acts on one cluster: give at most one --context".into(),
        ));
    }
    if args.parallel == 0 {
        return Err(AppError::Usage("--parallel must be at least 1".into()));
    }
    if args.tag.is_some() && args.desired.is_some() {
        return Err(AppError::Usage(
            "--tag goes with --policy (a values file names its own tag)".into(),
        ));
    }
    let (drain, reboot, wait) = (
        secs("drain-timeout", &args.drain_timeout)?,
        secs("reboot-timeout", &args.reboot_timeout)?,
        secs("wait-timeout", &args.wait_timeout)?,
    );
    let lease_seconds = secs("lease-duration", &args.lease_duration)?.max(3);
    let poll = crate::cluster::parse_timeout(&args.poll_interval)
        .ok()
        .flatten()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            AppError::Usage(format!(
                "--poll-interval {}: not a duration",
                args.poll_interval
            ))
        })?;
    // The goal and the blocking findings: the plan `checklist --cluster` makes.
    let mut cluster = args.cluster.clone();
    cluster.cluster = true;
    let plan_args = ChecklistArgs {
        current: None,
        desired: args.desired.clone(),
        policy: args.policy,
        tag: args.tag.clone(),
        nodes: None,
        cluster,
        format: crate::checklist::ChecklistFormat::Markdown,
        yes: args.yes,
        helm: args.helm,
        max_unavailable: args.max_unavailable,
        reuse_values: args.reuse_values,
        allow_downgrade: args.allow_downgrade,
        include_cordoned: args.include_cordoned,
        drain_timeout: args.drain_timeout.clone(),
        select: args.select.clone(),
        ignore: args.ignore.clone(),
        config: args.config.clone(),
    };
    let list = super::checklist::plan(s, &plan_args)?;
    let options = plan_args.cluster.options();
    let target = options
        .targets()?
        .into_iter()
        .next()
        .expect("one target without --all-contexts")?;
    if list.disabled {
        writeln!(
            s.err,
            "cgpu-lint: the desired values turn cGPU off (enabled: false): there is nothing to restart; `cgpu-lint checklist --cluster` prints what the upgrade removes"
        )?;
        return Ok(Exit::Findings);
    }
    let goal = Goal {
        policy: list.desired.policy,
        version: crate::checklist::steps::target_version(&list).cloned(),
        tag: list.desired.tag.clone(),
    };
    // The installer's own rollout in progress is not a finding against the goal here: the
    // reconciler waits for it (and a pod it deleted itself is recreated in a moment).
    let blocking = list
        .blocking
        .iter()
        .filter(|d| d.rule.to_string() != "rollout-incomplete")
        .map(|d| {
            let lc = d.start();
            format!(
                "{} {}:{}:{}: {}",
                d.rule,
                d.file(),
                lc.line,
                lc.column,
                d.message
            )
        })
        .collect();
    let takeover = if args.force_break_lock {
        Takeover::Force
    } else if args.break_lock {
        Takeover::DeadHolder
    } else {
        Takeover::Expired
    };
    let r = Rollout {
        options: &options,
        target: &target,
        goal,
        config: Config {
            max_unavailable: args.max_unavailable as usize,
            include_cordoned: args.include_cordoned,
            allow_downgrade: args.allow_downgrade,
            reboot_timeout: reboot,
            ready_timeout: wait,
            pod_timeout: wait,
            policy_timeout: wait,
            drain_timeout: drain,
            pinned: None,
            reboot_via: match args.reboot_via {
                crate::cli::RebootViaArg::Ecs => RebootVia::Ecs,
                crate::cli::RebootViaArg::Node => RebootVia::Node,
            },
        },
        yes: args.yes,
        dry_run: args.dry_run,
        takeover,
        cluster_uid: args.cluster_uid.clone(),
        lease_seconds,
        poll,
        parallel: args.parallel,
        aliyun: args.aliyun.clone(),
        wait_for_lock: match &args.wait_for_lock {
            Some(d) => Some(secs("wait-for-lock", d)?),
            None => None,
        },
        job: args.job.clone(),
        rerun: args
            .rerun_as
            .clone()
            .unwrap_or_else(|| command(args, "rollout")),
        replan: command(args, "checklist"),
        blocking,
    };
    let ended = run_loop(&r, s.out, s.err, input);
    Ok(match ended {
        Ended::Done => Exit::Clean,
        Ended::Stopped => Exit::Findings,
        Ended::Trouble => Exit::Trouble,
    })
}
