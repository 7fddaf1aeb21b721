//! The loop around the decision core: observe, decide, ask before a new batch, act one call at
//! a time (each behind the fence), record, observe again; until every GPU-sharing node is
//! observed at the goal and none is left cordoned (done), or nothing safe is left (a stop with
//! the one next step that fits). It reads and writes through kubectl (the user's kubeconfig,
//! contexts and credential plugins, as every other command) and reboots through the aliyun CLI.

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::decide::{Action, Config, Decision, Goal, Kind, Memory, Next, Stop, decide};
use super::lease::{self, Identity, Lock, LockError, Takeover};
use super::observe::{self, CORDON_MARK, ModuleCache, Observation, Reader, Wants};
use crate::cluster::{ClusterError, Options, Target};

/// Everything one run needs.
pub struct Rollout<'a> {
    pub options: &'a Options,
    pub target: &'a Target,
    pub goal: Goal,
    pub config: Config,
    pub yes: bool,
    pub dry_run: bool,
    pub takeover: Takeover,
    /// The kube-system namespace UID the run must find (a plan's pin).
    pub cluster_uid: Option<String>,
    pub lease_seconds: i64,
    pub poll: Duration,
    pub parallel: usize,
    pub aliyun: String,
    /// Seconds to wait for a Lease another run holds (`None`: stop at once).
    pub wait_for_lock: Option<i64>,
    /// The Job this run is, for the Lease.
    pub job: Option<String>,
    /// The command that runs this again, as the user typed it (for the next steps).
    pub rerun: String,
    /// The command that plans again.
    pub replan: String,
    /// Findings on the desired values that make any change unsafe.
    pub blocking: Vec<String>,
}

/// How a run ended: the process's exit status and nothing else (what happened was printed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Done,
    Stopped,
    /// The cluster could not be read or written at all.
    Trouble,
}

pub(super) struct Ctx<'a, 'b> {
    pub(super) r: &'a Rollout<'b>,
    pub(super) out: &'a mut dyn Write,
    pub(super) err: &'a mut dyn Write,
    pub(super) input: &'a mut dyn BufRead,
    pub(super) lock: Option<Arc<Lock>>,
    pub(super) changed: bool,
    pub(super) asked: bool,
    pub(super) events_failed: bool,
    /// The image a node's reboot pod runs: the installer's own (it has nsenter, and the node
    /// has pulled it already).
    pub(super) reboot_image: String,
    /// The cgpu-installer DaemonSet as the run found it: read again right before a reboot or
    /// an installer pod's deletion.
    pub(super) pinned: Option<super::observe::InstallerObs>,
}

impl Ctx<'_, '_> {
    pub(super) fn kubectl(
        &self,
        args: &[String],
        input: Option<&[u8]>,
    ) -> Result<Vec<u8>, ClusterError> {
        self.r.options.run_input(self.r.target, args, input, None)
    }

    pub(super) fn say(&mut self, line: &str) {
        let _ = writeln!(self.out, "{}", crate::output::escape_controls(line));
        let _ = self.out.flush();
    }

    pub(super) fn warn(&mut self, line: &str) {
        let _ = writeln!(
            self.err,
            "warning: {}",
            crate::output::escape_controls(line)
        );
    }

    fn next_line(&self, next: Next) -> String {
        let rerun = &self.r.rerun;
        match next {
            Next::Resume => format!(
                "Next: fix the cause, then run: {rerun}\n(every node is decided again from what it shows: nodes at the goal are not touched, a node in flight is taken up where it stopped)"
            ),
            Next::Apply => format!(
                "Next: apply the desired values first (helm upgrade), wait until the cgpu-installer rollout is done (every installer pod Ready), then run: {rerun}"
            ),
            Next::Replan => format!(
                "Next: plan again from the cluster as it is now and review it: {}",
                self.r.replan
            ),
            Next::WaitNodes => format!(
                "Next: when the nodes above are Ready again and no other actor works on them, run: {rerun}"
            ),
            Next::Downgrade => format!(
                "Next: to restart them into the older cGPU anyway, run: {rerun} --allow-downgrade; or keep their version (helm upgrade with the tag they run) and plan again: {}",
                self.r.replan
            ),
            Next::OtherNodes => format!(
                "Next: the nodes above are not this run's to restart: set their installer (cgpu-core-installer) to POLICY {} and restart them the same way, or plan again with --include-cordoned for nodes cordoned before the run: {}",
                self.r.goal.policy, self.r.replan
            ),
        }
    }

    /// Print a stop: where, why, what was changed, the next step.
    fn stop(&mut self, s: &Stop) -> Ended {
        let at = match &s.node {
            Some(n) => format!("STOPPED at node {n}, step {}", s.step),
            None if !self.changed => format!("STOPPED before any node, step {}", s.step),
            None => format!("STOPPED at step {}", s.step),
        };
        let mut text = format!("\n{at}: {}\n", s.message);
        if self.changed {
            text.push_str(&format!("Nothing after that step ran. A node this run cordoned keeps its cordon and the annotation {CORDON_MARK} until a later run finishes it.\n"));
        } else {
            text.push_str("Nothing was changed in the cluster by this run.\n");
        }
        text.push_str(&self.next_line(s.next));
        let _ = writeln!(self.err, "{}", crate::output::escape_controls(&text));
        Ended::Stopped
    }

    fn confirm(&mut self, question: &str) -> bool {
        if self.r.yes {
            return true;
        }
        let _ = write!(self.out, "{question} [y/N] ");
        let _ = self.out.flush();
        let mut answer = String::new();
        if self.input.read_line(&mut answer).is_err() {
            return false;
        }
        matches!(answer.trim(), "y" | "Y" | "yes" | "Yes" | "YES")
    }
}

/// The verdicts as lines (dry run, and before a batch).
pub fn verdict_lines(d: &Decision) -> Vec<String> {
    d.nodes
        .iter()
        .map(|v| {
            let phase = match v.phase {
                Some(p) => format!(
                    " [in flight: {}]",
                    serde_json::to_value(p)
                        .ok()
                        .and_then(|x| x.as_str().map(str::to_string))
                        .unwrap_or_default()
                ),
                None => String::new(),
            };
            format!("{}: {}{phase}: {}", v.name, v.verdict.word(), v.why)
        })
        .collect()
}

/// How this run reads the cluster.
fn reader<'a>(r: &Rollout<'a>) -> Reader<'a> {
    Reader {
        options: r.options,
        target: r.target,
        parallel: r.parallel,
    }
}

fn observe_once(
    r: &Rollout,
    cache: &mut ModuleCache,
    pods: bool,
) -> Result<Observation, ClusterError> {
    let reader = reader(r);
    let wants = Wants {
        pods,
        lease: Some(lease::NAME),
    };
    let until = Instant::now() + Duration::from_secs(120);
    observe::read(&reader, &wants, cache, until)
}

/// Whether the decision needs the pods of every namespace (a drain or a capacity check).
fn needs_pods(obs: &Observation, d: &Decision) -> bool {
    obs.pods.is_none()
        && (d
            .nodes
            .iter()
            .any(|v| v.phase.is_some() || v.verdict == Kind::NeedsRestart)
            || d.actions.iter().any(|a| matches!(a, Action::Cordon { .. })))
}

/// Run the loop. Everything is printed as it happens; the result is how it ended.
pub fn run(
    r: &Rollout,
    out: &mut dyn Write,
    err: &mut dyn Write,
    input: &mut dyn BufRead,
) -> Ended {
    let mut cx = Ctx {
        r,
        out,
        err,
        input,
        lock: None,
        changed: false,
        asked: false,
        events_failed: false,
        reboot_image: String::new(),
        pinned: None,
    };
    let ended = run_inner(&mut cx);
    if let Some(lock) = cx.lock.take() {
        let what = lock.release();
        cx.say(&format!("cluster lock: {what}"));
    }
    ended
}

fn trouble(cx: &mut Ctx, e: &ClusterError) -> Ended {
    let _ = writeln!(
        cx.err,
        "cgpu-lint: error: {}",
        crate::output::escape_controls(&e.to_string())
    );
    if cx.changed {
        let _ = writeln!(cx.err, "{}", cx.next_line(Next::Resume));
    }
    Ended::Trouble
}

fn run_inner(cx: &mut Ctx) -> Ended {
    let r = cx.r;
    // The cluster is the one the plan is for.
    let uid = match r.options.namespace_uid(r.target) {
        Ok(u) => u,
        Err(why) => {
            let _ = writeln!(
                cx.err,
                "cgpu-lint: error: cluster {}: cannot read the kube-system namespace (the cluster's identity): {why}",
                r.target.label
            );
            return Ended::Trouble;
        }
    };
    if let Some(want) = &r.cluster_uid
        && *want != uid
    {
        return cx.stop(&Stop {
            node: None,
            step: "cluster-identity",
            message: format!(
                "context {} is another cluster: kube-system UID {uid}, the plan is for {want}; nothing was changed",
                r.target.label
            ),
            next: Next::Replan,
        });
    }
    cx.say(&format!(
        "cluster {} ({}): kube-system UID {uid}; goal: every GPU-sharing node of cgpu-installer at {}",
        r.target.label,
        r.target.server.as_deref().unwrap_or("the API server"),
        r.goal.text()
    ));
    if !r.blocking.is_empty() {
        let mut message =
            String::from("the desired values are unsafe until these findings are fixed:");
        for b in &r.blocking {
            message.push_str("\n  ");
            message.push_str(b);
        }
        return cx.stop(&Stop {
            node: None,
            step: "blocking-findings",
            message,
            next: Next::Replan,
        });
    }
    let mut cache = ModuleCache::new();
    let mut memory = Memory::default();
    let mut config = r.config.clone();
    let mut pods = false;
    let mut last_waits: BTreeSet<(String, String)> = BTreeSet::new();
    let mut canary_name: Option<String> = None;
    loop {
        let mut obs = match observe_once(r, &mut cache, pods) {
            Ok(o) => o,
            Err(e) => return trouble(cx, &e),
        };
        if config.pinned.is_none() && !r.dry_run {
            config.pinned = obs.installer(crate::cgpu::INSTALLER).cloned();
            cx.pinned = config.pinned.clone();
        }
        if let Some(i) = obs.installer(crate::cgpu::INSTALLER) {
            cx.reboot_image = i.image.clone();
        }
        let mut d = decide(&obs, &r.goal, &config, &memory);
        if needs_pods(&obs, &d) && d.stop.is_none() {
            // From now on every observation lists the pods; this one gets them added and is
            // decided again.
            pods = true;
            match observe::read_pods(&reader(r)) {
                Ok(all) => obs.pods = Some(all),
                Err(e) => return trouble(cx, &e),
            }
            d = decide(&obs, &r.goal, &config, &memory);
        }
        memory.note_waits(&d, obs.now);
        if r.dry_run {
            return dry_run(cx, &obs, &d);
        }
        if let Some(s) = d.stop.take() {
            if d.nodes.is_empty() && s.step == "done-check" {
                break;
            }
            return cx.stop(&s);
        }
        if d.done {
            break;
        }
        if !d.actions.is_empty() && cx.lock.is_none() {
            match take_lock(cx) {
                Ok(()) => continue,
                Err(ended) => return ended,
            }
        }
        // A new batch (or this process's first change): ask once, before its first change.
        if !d.actions.is_empty() && (!d.batch.is_empty() || !cx.asked) {
            let title = if !d.batch.is_empty() && d.canary {
                "canary (the first node that needs a restart; check its GPU workloads after it)"
                    .to_string()
            } else if let Some(c) = canary_name.take().filter(|_| !d.batch.is_empty()) {
                format!("batch (the canary {c} is done: check its GPU workloads before you go on)")
            } else if !d.batch.is_empty() {
                "batch".into()
            } else {
                "resume (nodes a run left in flight)".into()
            };
            cx.say(&format!("== {title}:"));
            for v in d.nodes.iter().filter(|v| {
                d.batch.contains(&v.name)
                    || (v.phase.is_some() && d.actions.iter().any(|a| a.node() == v.name))
            }) {
                let steps: Vec<String> = d
                    .actions
                    .iter()
                    .filter(|a| a.node() == v.name)
                    .map(Action::text)
                    .collect();
                cx.say(&format!(
                    "   {}: {}: {}; now: {}",
                    v.name,
                    v.verdict.word(),
                    v.why,
                    steps.join(", ")
                ));
            }
            for a in d.actions.iter().filter(|a| {
                !d.nodes
                    .iter()
                    .any(|v| v.name == a.node() && (d.batch.contains(&v.name) || v.phase.is_some()))
            }) {
                cx.say(&format!("   {}: {}", a.node(), a.text()));
            }
            let n: BTreeSet<&str> = d.actions.iter().map(Action::node).collect();
            if !cx.confirm(&format!("Go ahead with these {} node(s)?", n.len())) {
                return cx.stop(&Stop {
                    node: None,
                    step: "confirm",
                    message: "declined: nothing in this batch was changed".into(),
                    next: Next::Resume,
                });
            }
            cx.asked = true;
            if d.canary && d.batch.len() == 1 {
                canary_name = Some(d.batch[0].clone());
            }
            if let Some(lock) = &cx.lock
                && !lock.grace.is_zero()
            {
                std::thread::sleep(lock.grace);
            }
        }
        let mut acted = false;
        for a in &d.actions {
            match cx.act(a, &mut memory) {
                Ok(true) => acted = true,
                Ok(false) => break,
                Err(s) => return cx.stop(&s),
            }
        }
        // Waits: said once each, then quietly polled.
        let now: BTreeSet<(String, String)> = d
            .waiting
            .iter()
            .map(|w| (w.node.clone(), w.why.clone()))
            .collect();
        for w in &d.waiting {
            if !last_waits.contains(&(w.node.clone(), w.why.clone())) {
                let who = if w.node.is_empty() {
                    "cluster"
                } else {
                    &w.node
                };
                cx.say(&format!(
                    "... {who}: {}: waiting for {}",
                    w.kind.step(),
                    w.why
                ));
            }
        }
        last_waits = now;
        if !acted {
            std::thread::sleep(r.poll);
        }
    }
    // Done: every GPU-sharing node observed at the goal, none in flight.
    let obs = match observe_once(r, &mut cache, false) {
        Ok(o) => o,
        Err(e) => return trouble(cx, &e),
    };
    let d = decide(&obs, &r.goal, &config, &memory);
    if d.nodes.is_empty() {
        cx.say("No GPU-sharing node in this cluster (none is selected by cgpu-installer or labelled for cGPU): nothing to restart.");
        return Ended::Done;
    }
    if !d.done {
        if let Some(s) = &d.stop {
            return cx.stop(s);
        }
        return cx.stop(&Stop {
            node: None,
            step: "done-check",
            message: "the last observation does not show every node at the goal".into(),
            next: Next::Resume,
        });
    }
    let main = d
        .nodes
        .iter()
        .filter(|v| v.installer.as_deref() == Some(crate::cgpu::INSTALLER))
        .count();
    let other = d.nodes.len() - main;
    let mut line = format!(
        "All {main} GPU-sharing node(s) of cgpu-installer show the goal ({})",
        r.goal.text()
    );
    if other > 0 {
        line.push_str(&format!(
            ", and the {other} node(s) of cgpu-core-installer show policy {} (their version is that installer's own)",
            r.goal.policy
        ));
    }
    line.push_str(": done.");
    cx.say(&line);
    Ended::Done
}

fn take_lock(cx: &mut Ctx) -> Result<(), Ended> {
    let r = cx.r;
    let identity = Identity::of_this_process(&r.goal.text(), r.job.as_deref());
    let started = Instant::now();
    let mut said = false;
    let taken = loop {
        match Lock::take(
            r.options,
            r.target,
            identity.clone(),
            r.lease_seconds,
            r.takeover,
        ) {
            // Waiting for the holder to end (or its Lease to expire), as a Job's replacement
            // pod does for the one it replaces.
            Err(LockError::Held { who, .. } | LockError::Raced(who))
                if r.wait_for_lock
                    .is_some_and(|w| started.elapsed().as_secs() < w as u64) =>
            {
                if !said {
                    cx.say(&format!(
                        "cluster lock: held by {who}; waiting for it to end or expire (--wait-for-lock)"
                    ));
                    said = true;
                }
                std::thread::sleep(r.poll.max(Duration::from_secs(1)));
            }
            other => break other,
        }
    };
    match taken {
        Ok(lock) => {
            cx.say(&format!(
                "cluster lock: taken (lease kube-system/{}, holder {}, {}s, renewed while this run works and before each change)",
                lease::NAME,
                lock.identity.holder,
                lock.duration
            ));
            if !lock.grace.is_zero() {
                cx.say(&format!(
                    "cluster lock: taken from a run that still renewed it (--force-break-lock): waiting {}s before the first change, so that a call it had started ends first; it stops before its next change",
                    lock.grace.as_secs()
                ));
            }
            lock.keep();
            cx.lock = Some(lock);
            Ok(())
        }
        Err(LockError::Held { who, breakable }) => {
            let mut next = format!(
                "Next: wait until the other run ends and run this again: {}",
                r.rerun
            );
            if breakable {
                next.push_str(&format!(
                    "; its process is gone, so you may take the lock over now with: {} --break-lock",
                    r.rerun
                ));
            } else {
                next.push_str(&format!(
                    "; if you are sure it no longer acts (its host is gone), take it over with: {} --force-break-lock",
                    r.rerun
                ));
            }
            let _ = writeln!(
                cx.err,
                "\nSTOPPED before any node, step cluster-lock: another rollout holds the cluster lock (lease kube-system/{}): {}; this run changed nothing\n{next}",
                lease::NAME,
                crate::output::escape_controls(&who)
            );
            Err(Ended::Stopped)
        }
        Err(LockError::Raced(why)) => {
            let _ = writeln!(
                cx.err,
                "\nSTOPPED before any node, step cluster-lock: {why}\nNext: run this again: {}",
                r.rerun
            );
            Err(Ended::Stopped)
        }
        Err(LockError::Cluster(e)) => {
            let text = match &e {
                ClusterError::Forbidden { .. } => format!(
                    "{e}. The run needs, in kube-system, a Role with: apiGroups [coordination.k8s.io], resources [leases], verbs [get, create, update] (docs/runbook.md, \"The cluster lock\")"
                ),
                _ => e.to_string(),
            };
            let _ = writeln!(
                cx.err,
                "\nSTOPPED before any node, step cluster-lock: cannot take the cluster lock: {}\nNothing was changed in the cluster by this run.",
                crate::output::escape_controls(&text)
            );
            Err(Ended::Trouble)
        }
    }
}

fn dry_run(cx: &mut Ctx, obs: &Observation, d: &Decision) -> Ended {
    cx.say("dry run: nothing is changed");
    if let Some(l) = &obs.lease
        && !l.holder.is_empty()
    {
        cx.say(&format!(
            "cluster lock: held by {}",
            lease::describe(l, obs.now * 1000)
        ));
    }
    if d.nodes.is_empty() {
        cx.say("No GPU-sharing node in this cluster: nothing to restart.");
        return Ended::Done;
    }
    for line in verdict_lines(d) {
        cx.say(&format!("  {line}"));
    }
    if let Some(s) = &d.stop {
        cx.say(&format!(
            "would stop at {}, step {}: {}",
            s.node.as_deref().unwrap_or("the cluster"),
            s.step,
            s.message
        ));
        cx.say(&cx.next_line(s.next));
        return Ended::Stopped;
    }
    if d.done {
        cx.say(&format!(
            "every GPU-sharing node shows the goal ({}): nothing to do",
            cx.r.goal.text()
        ));
        return Ended::Done;
    }
    if d.actions.is_empty() {
        cx.say("now: nothing; waiting:");
    } else {
        cx.say("now (each behind the cluster lock, after one confirmation):");
        for a in &d.actions {
            cx.say(&format!("  {}: {}: {}", a.node(), a.step(), a.text()));
        }
    }
    for w in &d.waiting {
        cx.say(&format!(
            "  {}: waiting for {}",
            if w.node.is_empty() {
                "cluster"
            } else {
                &w.node
            },
            w.why
        ));
    }
    if d.canary {
        cx.say(
            "then, after the canary is back at the goal, up to --max-unavailable nodes at a time",
        );
    }
    Ended::Done
}
