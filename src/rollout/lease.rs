//! The cluster lock, and the fence before every change: one `coordination.k8s.io/v1` Lease in
//! kube-system for every cgpu-lint rollout of a cluster. Created atomically (AlreadyExists:
//! someone holds it), every write names the resourceVersion it read (a stale one is a 409
//! Conflict, so two runs can never both succeed), renewed by a keeper thread every third of its
//! duration, and renewed once more right before each change ([`Lock::fence`]): a run that lost
//! the Lease learns it before its next change, whoever took it and however. Released (holder
//! emptied, with the same guard) at every stop; a run killed without its stop leaves a Lease
//! that expires after its duration.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use super::observe::{LeaseObs, Reader, lease_from, read_lease};
use crate::cluster::{ClusterError, Options, Target};

/// The Lease's name: one for every cgpu-lint rollout of a cluster (the script's, too).
pub const NAME: &str = crate::checklist::steps::LEASE_NAME;

/// Who this run is, as the Lease and the messages name it.
#[derive(Debug, Clone)]
pub struct Identity {
    pub holder: String,
    pub user: String,
    pub host: String,
    pub pid: u32,
    /// What the run is for (the goal), for the one who finds the Lease.
    pub goal: String,
    /// The Job the run is (`NAMESPACE/NAME`), when it runs in one.
    pub job: Option<String>,
}

impl Identity {
    pub fn of_this_process(goal: &str, job: Option<&str>) -> Identity {
        let user = word(&std::env::var("USER").unwrap_or_else(|_| "unknown".into()));
        let host = word(&hostname());
        let pid = std::process::id();
        let mut nonce = [0u8; 6];
        if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
            use std::io::Read as _;
            let _ = f.read_exact(&mut nonce);
        }
        let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        Identity {
            holder: format!("{user}@{host}/pid-{pid}/{nonce}"),
            user,
            host,
            pid,
            goal: goal.to_string(),
            job: job.map(word),
        }
    }
}

/// A word safe in the Lease's JSON and in messages.
fn word(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._@:/+-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// How a Lease held by someone else may be taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takeover {
    /// Only a released or expired one.
    Expired,
    /// Also one whose holder ran on this host and its process is gone (`--break-lock`).
    DeadHolder,
    /// Any, even one a live run renews (`--force-break-lock`).
    Force,
}

/// Does process `pid` run on this host?
fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Who holds a Lease, in words (for the lock message); `now` in milliseconds since the epoch.
pub fn describe(l: &LeaseObs, now: i64) -> String {
    let secs = |ms: i64| crate::date::rfc3339(ms.div_euclid(1000));
    let when = |t: Option<i64>| t.map_or_else(|| "?".into(), secs);
    let mut s = format!(
        "{} (user {} on {}, pid {}) since {}, last renewed {} for {}s",
        if l.holder.is_empty() {
            "nobody"
        } else {
            &l.holder
        },
        l.user.as_deref().unwrap_or("?"),
        l.host.as_deref().unwrap_or("?"),
        l.pid.map_or_else(|| "?".into(), |p| p.to_string()),
        when(l.acquired),
        when(l.renewed),
        l.duration.map_or_else(|| "?".into(), |d| d.to_string())
    );
    match l.expires() {
        Some(e) if e > now => s.push_str(&format!("; it expires at {}", secs(e))),
        Some(e) => s.push_str(&format!("; it expired at {}", secs(e))),
        None => {}
    }
    let here = hostname();
    match (&l.host, l.pid) {
        (Some(h), Some(pid)) if word(&here) == *h => {
            if alive(pid) {
                s.push_str(&format!(
                    "; its process (pid {pid}) still runs on this host"
                ));
            } else {
                s.push_str(&format!(
                    "; its process (pid {pid}) no longer runs on this host"
                ));
            }
        }
        (Some(h), _) => s.push_str(&format!("; it runs on another host ({h})")),
        _ => {}
    }
    s
}

/// Why the lock could not be taken.
#[derive(Debug, Clone)]
pub enum LockError {
    /// Someone holds it; the words name them, and whether `--break-lock` would take it.
    Held {
        who: String,
        breakable: bool,
    },
    /// Another run took it first (a 409 on the takeover).
    Raced(String),
    Cluster(ClusterError),
}

/// Times in milliseconds since the epoch.
struct Held {
    rv: String,
    acquired: i64,
    renewed: i64,
    lost: Option<String>,
}

/// The lock this run holds.
pub struct Lock {
    options: Options,
    target: Target,
    pub identity: Identity,
    pub duration: i64,
    state: Mutex<Held>,
    stopping: AtomicBool,
    /// After taking over a Lease a live run renewed: wait this long before the first change,
    /// so that a call that run had already started ends first.
    pub grace: Duration,
}

fn is(e: &ClusterError, words: &[&str]) -> bool {
    let text = e.to_string();
    words.iter().any(|w| text.contains(w))
}

impl Lock {
    fn body(&self, rv: Option<&str>, holder: &str, acquired: i64, renewed: i64) -> Vec<u8> {
        let mut meta = json!({
            "name": NAME,
            "namespace": "kube-system",
            "labels": {"app.kubernetes.io/managed-by": "cgpu-lint"},
            "annotations": {
                "cgpu-lint/user": self.identity.user,
                "cgpu-lint/host": self.identity.host,
                "cgpu-lint/pid": self.identity.pid.to_string(),
                "cgpu-lint/goal": self.identity.goal,
            },
        });
        if let Some(job) = &self.identity.job {
            meta["annotations"]["cgpu-lint/job"] = json!(job);
        }
        if let Some(rv) = rv {
            meta["resourceVersion"] = json!(rv);
        }
        let v = json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": meta,
            "spec": {
                "holderIdentity": holder,
                "leaseDurationSeconds": self.duration,
                "acquireTime": crate::date::rfc3339_micro(acquired),
                "renewTime": crate::date::rfc3339_micro(renewed),
            },
        });
        serde_json::to_vec(&v).unwrap_or_default()
    }

    fn write(&self, verb: &str, body: &[u8]) -> Result<LeaseObs, ClusterError> {
        let args: Vec<String> = [verb, "--validate=false", "-f", "-", "-o", "json"]
            .map(String::from)
            .to_vec();
        let out = self
            .options
            .run_input(&self.target, &args, Some(body), None)?;
        let v: serde_json::Value =
            serde_json::from_slice(&out).map_err(|e| ClusterError::BadOutput {
                context: self.target.label.clone(),
                detail: e.to_string(),
            })?;
        Ok(lease_from(&v))
    }

    /// Take the lock: create it, or take over one that `how` allows.
    pub fn take(
        options: &Options,
        target: &Target,
        identity: Identity,
        duration: i64,
        how: Takeover,
    ) -> Result<Arc<Lock>, LockError> {
        let now = crate::date::now_millis();
        let mut lock = Lock {
            options: options.clone(),
            target: target.clone(),
            identity,
            duration,
            state: Mutex::new(Held {
                rv: String::new(),
                acquired: now,
                renewed: now,
                lost: None,
            }),
            stopping: AtomicBool::new(false),
            grace: Duration::ZERO,
        };
        let body = lock.body(None, &lock.identity.holder, now, now);
        match lock.write("create", &body) {
            Ok(l) => {
                lock.state.get_mut().map(|s| s.rv = l.resource_version).ok();
                return Ok(Arc::new(lock));
            }
            Err(e) if is(&e, &["AlreadyExists", "already exists"]) => {}
            Err(e) => return Err(LockError::Cluster(e)),
        }
        let reader = Reader {
            options,
            target,
            parallel: 1,
        };
        let Some(cur) = read_lease(&reader, NAME).map_err(LockError::Cluster)? else {
            return Err(LockError::Raced(
                "the lock was just released by another run: run this again".into(),
            ));
        };
        let live = !cur.holder.is_empty() && cur.expires().is_none_or(|e| now < e);
        let here = word(&hostname());
        let dead_here =
            cur.host.as_deref() == Some(here.as_str()) && cur.pid.is_some_and(|p| !alive(p));
        let allowed = !live
            || match how {
                Takeover::Expired => false,
                Takeover::DeadHolder => dead_here,
                Takeover::Force => true,
            };
        if !allowed {
            return Err(LockError::Held {
                who: describe(&cur, now),
                breakable: dead_here,
            });
        }
        if live && !dead_here {
            lock.grace = Duration::from_secs((duration / 3).clamp(1, 10) as u64);
        }
        let body = lock.body(Some(&cur.resource_version), &lock.identity.holder, now, now);
        match lock.write("replace", &body) {
            Ok(l) => {
                lock.state.get_mut().map(|s| s.rv = l.resource_version).ok();
                Ok(Arc::new(lock))
            }
            Err(e)
                if is(
                    &e,
                    &["Conflict", "NotFound", "not found", "has been modified"],
                ) =>
            {
                Err(LockError::Raced(format!(
                    "another run took the cluster lock first ({e}); this run changed nothing"
                )))
            }
            Err(e) => Err(LockError::Cluster(e)),
        }
    }

    /// Renew with the resourceVersion last written: Ok, or why the lock is lost (then it stays
    /// lost).
    fn renew(&self, state: &mut Held) -> Result<(), String> {
        if let Some(why) = &state.lost {
            return Err(why.clone());
        }
        let now = crate::date::now_millis();
        let body = self.body(Some(&state.rv), &self.identity.holder, state.acquired, now);
        match self.write("replace", &body) {
            Ok(l) => {
                state.rv = l.resource_version;
                state.renewed = now;
                Ok(())
            }
            Err(e)
                if is(
                    &e,
                    &["Conflict", "NotFound", "not found", "has been modified"],
                ) =>
            {
                let reader = Reader {
                    options: &self.options,
                    target: &self.target,
                    parallel: 1,
                };
                let who = match read_lease(&reader, NAME) {
                    Ok(Some(l)) if !l.holder.is_empty() => {
                        format!("it is held by {}", describe(&l, now))
                    }
                    Ok(_) => "it was released or deleted by someone else".into(),
                    Err(e) => format!("it could not be read again ({e})"),
                };
                let why = format!("another run took it: {who}");
                state.lost = Some(why.clone());
                Err(why)
            }
            Err(e) if now - state.renewed >= self.duration * 1000 => {
                let why = format!(
                    "not renewed for {}s ({e}): another run may hold it now",
                    self.duration
                );
                state.lost = Some(why.clone());
                Err(why)
            }
            Err(e) => Err(format!(
                "the renewal failed ({e}); not sure this run still holds it"
            )),
        }
    }

    /// Right before a change: prove this run still holds the lock (a guarded renew).
    pub fn fence(&self) -> Result<(), String> {
        let mut st = self
            .state
            .lock()
            .map_err(|_| "the lock's state is poisoned".to_string())?;
        self.renew(&mut st)
    }

    /// Renew when a third of the duration has passed (the keeper calls it every second).
    fn tick(&self) {
        if let Ok(mut st) = self.state.lock() {
            let now = crate::date::now_millis();
            if st.lost.is_none() && now - st.renewed >= (self.duration * 1000 / 3).max(1000) {
                let _ = self.renew(&mut st);
            }
        }
    }

    /// The keeper: renews in the background while the run waits (a drain, a reboot).
    pub fn keep(self: &Arc<Lock>) -> std::thread::JoinHandle<()> {
        let lock = Arc::clone(self);
        std::thread::spawn(move || {
            while !lock.stopping.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(250));
                if !lock.stopping.load(Ordering::SeqCst) {
                    lock.tick();
                }
            }
        })
    }

    /// At every stop: the holder emptied, guarded by the resourceVersion (only while this run
    /// still holds it). Returns what happened, in words.
    pub fn release(&self) -> String {
        self.stopping.store(true, Ordering::SeqCst);
        let Ok(st) = self.state.lock() else {
            return "the lock's state is poisoned; it expires by itself".into();
        };
        if let Some(why) = &st.lost {
            return format!("not released: this run lost it ({why})");
        }
        let now = crate::date::now_millis();
        let body = self.body(Some(&st.rv), "", st.acquired, now);
        match self.write("replace", &body) {
            Ok(_) => "released".into(),
            Err(e) => format!(
                "could not be released ({e}); it expires after {}s",
                self.duration
            ),
        }
    }
}
