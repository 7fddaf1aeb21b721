//! The cGPU compatibility data (`compat.toml`, embedded at build time): the NVIDIA driver
//! matrix, the support each version added (cgroup v2, operating systems, instance families), the
//! instance families per version range, the distributions that use cgroup v2 by default, the
//! known issues and the GPU-sharing stacks that conflict. Every entry names its source; the
//! sources carry their address and the date they were read. `cgpu-lint compat` prints the data,
//! `explain` names the entries a rule uses, the node rules read it.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use semver::Version;
use serde::{Deserialize, Serialize};

/// The data file as written.
pub const TEXT: &str = include_str!("compat.toml");

/// The data, parsed once. The file is part of the binary and `tests::the_file_parses` holds it
/// to parse, so this cannot fail at run time.
pub fn data() -> &'static Compat {
    static DATA: LazyLock<Compat> =
        LazyLock::new(|| parse(TEXT).expect("src/cgpu/compat.toml parses (unit-tested)"));
    &DATA
}

/// Parse a compatibility file; the error carries TOML's line and column.
pub fn parse(text: &str) -> Result<Compat, String> {
    toml::from_str(text).map_err(|e| e.to_string())
}

/// A cGPU version (`1.5.3`) in the data.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(try_from = "String")]
pub struct Ver(pub Version);

impl TryFrom<String> for Ver {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Version::parse(&s)
            .map(Ver)
            .map_err(|e| format!("`{s}` is not a version MAJOR.MINOR.PATCH: {e}"))
    }
}

impl Serialize for Ver {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl std::fmt::Display for Ver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Compat {
    pub meta: Meta,
    #[serde(rename = "source")]
    pub sources: Vec<Source>,
    #[serde(rename = "driver")]
    pub drivers: Vec<DriverRow>,
    #[serde(default)]
    pub support: Vec<Support>,
    #[serde(default)]
    pub cgroup_v2: Vec<CgroupV2>,
    #[serde(default)]
    pub kernel: Vec<Kernel>,
    #[serde(default)]
    pub families: Vec<Families>,
    #[serde(rename = "issue", default)]
    pub issues: Vec<Issue>,
    #[serde(rename = "conflict", default)]
    pub conflicts: Vec<Conflict>,
    #[serde(default)]
    pub kubelet: Vec<Kubelet>,
    #[serde(default)]
    pub driver_list: Vec<DriverList>,
    #[serde(default)]
    pub family_needs: Vec<FamilyNeeds>,
    #[serde(default)]
    pub schedule: Vec<Schedule>,
    #[serde(default)]
    pub pool_drift: Vec<PoolDrift>,
    #[serde(default)]
    pub numbering: Vec<Numbering>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// The newest cGPU version any source lists.
    pub newest: Ver,
    /// The date of the newest source page.
    pub date: String,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    pub id: String,
    pub title: String,
    pub url: Option<String>,
    /// The date the page gives for its last update.
    pub updated: Option<String>,
    /// The date the page was read.
    pub read: String,
}

/// What a driver series the row does not list means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unlisted {
    Supported,
    Unsupported,
    Unknown,
}

/// A table's entry: `id` first, the fields given, then the `source`, `rules` and `note` every
/// entry ends with (in this order, which is the order they serialize in); unknown fields refused.
macro_rules! entry {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $field:ident: $ty:ty,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Deserialize, Serialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            pub id: String,
            $($(#[$fm])* pub $field: $ty,)*
            pub source: String,
            pub rules: Vec<String>,
            pub note: Option<String>,
        }
    };
}

entry! {
    DriverRow {
        from: Ver,
        to: Ver,
        /// The supported series (first number of the driver version), ascending.
        series: Vec<u64>,
        /// A series capped at a last version (series → the last supported driver version).
        #[serde(default)]
        max: BTreeMap<String, String>,
        /// The first series the source calls unsupported (`535+ unsupported`).
        unsupported_from: Option<u64>,
        /// A series between the lowest and the highest listed one that the row does not list.
        between: Unlisted,
        /// A series above the highest listed one.
        above: Unlisted,
    }
}

entry! {
    Support {
        /// The first version with the support.
        since: Ver,
        /// `cgroup`, `os`, `family` or `driver`.
        kind: String,
        value: String,
        /// `value` is the start of the name (`gn8` for gn8is, gn8v...), not all of it.
        #[serde(default)]
        prefix: bool,
        text: String,
    }
}

entry! {
    CgroupV2 {
        /// The distribution's name as `status.nodeInfo.osImage` starts with it.
        os: String,
        /// Its first release with cgroup v2 by default (`21.10`, `11`).
        since: String,
    }
}

entry! {
    Kernel {
        /// The first kernel release (`5.8`) with what the entry needs.
        from: String,
        text: String,
    }
}

impl Kernel {
    /// Is `kernel_version` (`5.15.0-113-generic`, `5.10.134-16.3.al8.x86_64`) older than `from`?
    /// `None` when either does not start with a release number.
    pub fn predates(&self, kernel_version: &str) -> Option<bool> {
        Some(release(kernel_version.trim())? < release(&self.from)?)
    }
}

entry! {
    Families {
        from: Ver,
        to: Ver,
        families: Vec<String>,
    }
}

entry! {
    Issue {
        /// The first version with the issue (every version before `to` when absent).
        from: Option<Ver>,
        /// The last version with the issue (every version when absent).
        to: Option<Ver>,
        /// What fixes it: a cGPU version, or a component and its version.
        fixed: Option<String>,
        /// Only on nodes with a driver of this series or later.
        driver_from: Option<u64>,
        /// Only on nodes whose `status.nodeInfo.osImage` names this (any case).
        os: Option<String>,
        /// At most this many pods share one GPU (read by `pods-per-gpu`).
        max_pods_per_gpu: Option<u64>,
        text: String,
    }
}

entry! {
    Conflict {
        stack: String,
        with: String,
        text: String,
        remedy: String,
    }
}

entry! {
    /// What a node needs from its kubelet version on (`status.nodeInfo.kubeletVersion`).
    Kubelet {
        /// The first Kubernetes release (`1.35`) the entry concerns.
        from: String,
        /// The [`Support`] entry a node of this kubelet needs (its `since` is the first cGPU
        /// version that can run there); none: the entry states what no source settles.
        needs: Option<String>,
        text: String,
    }
}

impl Kubelet {
    /// Is `kubelet_version` (`v1.35.1-aliyun.1`) at or past `from`? `None` when either does not
    /// start with a release number.
    pub fn covers(&self, kubelet_version: &str) -> Option<bool> {
        Some(kubernetes_release(kubelet_version)? >= release(&self.from)?)
    }
}

/// A Kubernetes version's `major.minor` (`v1.35.1-aliyun.1` → (1, 35)).
pub fn kubernetes_release(version: &str) -> Option<(u64, u64)> {
    let v = version.trim();
    release(v.strip_prefix(['v', 'V']).unwrap_or(v))
}

entry! {
    /// ACK's list of NVIDIA drivers: supported, and incompatible with the latest OS images.
    DriverList {
        /// The date the list gives.
        date: String,
        /// The driver of new GPU nodes.
        default: String,
        supported: Vec<String>,
        /// The versions "incompatible with the latest operating systems".
        incompatible: Vec<String>,
        text: String,
    }
}

impl DriverList {
    /// Does the list call `driver` incompatible with the latest operating systems?
    pub fn is_incompatible(&self, driver: &str) -> bool {
        let d = driver_parts(driver);
        d.is_some() && self.incompatible.iter().any(|i| driver_parts(i) == d)
    }
}

entry! {
    /// Instance families that need a driver and a cGPU version.
    FamilyNeeds {
        families: Vec<String>,
        /// The driver version the families need (ACK's default for them).
        driver: String,
        /// The first cGPU version that supports the families.
        since: Ver,
        text: String,
    }
}

entry! {
    /// An `ack.node.gpu.schedule` value that hands the node to something other than cGPU.
    Schedule {
        value: String,
        text: String,
    }
}

entry! {
    /// The GPU nodes of one node pool (by `label`) running different drivers.
    PoolDrift {
        /// The node pool label.
        label: String,
        text: String,
        remedy: String,
    }
}

entry! {
    /// Another GPU-sharing stack's policy numbers.
    Numbering {
        stack: String,
        /// Its policies' names, its 0 first.
        policies: Vec<String>,
        text: String,
    }
}

/// One entry of any table, as `explain` and the schema test see it.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    pub id: &'a str,
    /// One line: what the entry says.
    pub summary: &'a str,
    pub source: &'a str,
    pub rules: &'a [String],
    pub note: Option<&'a str>,
}

/// A driver version's numeric parts (`550.144.03` → [550, 144, 3]).
pub fn driver_parts(s: &str) -> Option<Vec<u64>> {
    let parts: Option<Vec<u64>> = s.trim().split('.').map(|p| p.parse().ok()).collect();
    parts.filter(|p| !p.is_empty())
}

impl Compat {
    pub fn source(&self, id: &str) -> Option<&Source> {
        self.sources.iter().find(|s| s.id == id)
    }

    /// The first cGPU version with the policy setting (`[[support]]` of kind `policy`). The
    /// embedded file has it (`tests::the_file_parses`).
    pub fn min_policy_version(&self) -> &Version {
        &self
            .support
            .iter()
            .find(|s| s.kind == "policy")
            .expect("compat.toml has a policy support entry (unit-tested)")
            .since
            .0
    }

    /// The deadlock entry (`issue-deadlock`): its last version and its fix.
    fn deadlock(&self) -> &Issue {
        self.issues
            .iter()
            .find(|i| i.id == "issue-deadlock")
            .expect("compat.toml has issue-deadlock (unit-tested)")
    }

    /// The last cGPU version with the known kernel-driver deadlock.
    pub fn last_deadlock_version(&self) -> &Version {
        &self
            .deadlock()
            .to
            .as_ref()
            .expect("issue-deadlock has `to` (unit-tested)")
            .0
    }

    /// Is `v` newer than every version the data knows?
    pub fn is_newer(&self, v: &Version) -> bool {
        *v > self.meta.newest.0
    }

    /// The driver row that speaks for `v`: the last row starting at or below it (a version
    /// between two rows reads the row below it); none below the first row or past the newest
    /// version of the data.
    pub fn driver_row(&self, v: &Version) -> Option<&DriverRow> {
        if self.is_newer(v) {
            return None;
        }
        self.drivers.iter().rev().find(|r| r.from.0 <= *v)
    }

    /// Can cGPU `v` run NVIDIA driver `driver`? `None` where the data does not say.
    pub fn driver_supported(&self, v: &Version, driver: &str) -> Option<bool> {
        let d = driver_parts(driver)?;
        let row = self.driver_row(v)?;
        let major = d[0];
        let (&lowest, &highest) = (row.series.first()?, row.series.last()?);
        if row.series.contains(&major) {
            return Some(match row.max.get(&major.to_string()) {
                Some(max) => driver_parts(max).is_some_and(|m| d <= m),
                None => true,
            });
        }
        let verdict = if major < lowest {
            Unlisted::Unknown
        } else if row.unsupported_from.is_some_and(|u| major >= u) {
            Unlisted::Unsupported
        } else if major > highest {
            row.above
        } else {
            row.between
        };
        match verdict {
            Unlisted::Supported => Some(true),
            Unlisted::Unsupported => Some(false),
            Unlisted::Unknown => None,
        }
    }

    /// The support entries of `kind` that `v` predates: the node needs a newer cGPU for them.
    pub fn missing_support<'a>(
        &'a self,
        kind: &'a str,
        v: &'a Version,
    ) -> impl Iterator<Item = &'a Support> + 'a {
        self.support
            .iter()
            .filter(move |s| s.kind == kind && *v < s.since.0)
    }

    /// The kernel requirements a rule reads (by its kebab-case name).
    pub fn kernel_for<'a>(&'a self, rule: &'a str) -> impl Iterator<Item = &'a Kernel> + 'a {
        self.kernel
            .iter()
            .filter(move |k| k.rules.iter().any(|r| r == rule))
    }

    /// The instance-family row covering `v`, if the data has one.
    pub fn families_at(&self, v: &Version) -> Option<&Families> {
        self.families
            .iter()
            .find(|f| f.from.0 <= *v && *v <= f.to.0)
    }

    /// The known issues of version `v`.
    pub fn issues_at<'a>(&'a self, v: &'a Version) -> impl Iterator<Item = &'a Issue> + 'a {
        self.issues.iter().filter(move |i| i.covers(v))
    }

    /// The cgroup v2 entry of the distribution `os_image` names, when it is at or past the
    /// release that made cgroup v2 its default.
    pub fn cgroup_v2_default(&self, os_image: &str) -> Option<&CgroupV2> {
        self.cgroup_v2.iter().find(|c| {
            os_image
                .strip_prefix(c.os.as_str())
                .and_then(|rest| release(rest.trim_start()))
                .zip(release(&c.since))
                .is_some_and(|(have, since)| have >= since)
        })
    }

    /// Every entry of every table.
    pub fn entries(&self) -> Vec<Entry<'_>> {
        let mut out = Vec::new();
        for r in &self.drivers {
            out.push(Entry {
                id: &r.id,
                summary: "",
                source: &r.source,
                rules: &r.rules,
                note: r.note.as_deref(),
            });
        }
        for s in &self.support {
            out.push(Entry {
                id: &s.id,
                summary: &s.text,
                source: &s.source,
                rules: &s.rules,
                note: s.note.as_deref(),
            });
        }
        for c in &self.cgroup_v2 {
            out.push(Entry {
                id: &c.id,
                summary: &c.os,
                source: &c.source,
                rules: &c.rules,
                note: c.note.as_deref(),
            });
        }
        for k in &self.kernel {
            out.push(Entry {
                id: &k.id,
                summary: &k.text,
                source: &k.source,
                rules: &k.rules,
                note: k.note.as_deref(),
            });
        }
        for f in &self.families {
            out.push(Entry {
                id: &f.id,
                summary: "",
                source: &f.source,
                rules: &f.rules,
                note: f.note.as_deref(),
            });
        }
        for i in &self.issues {
            out.push(Entry {
                id: &i.id,
                summary: &i.text,
                source: &i.source,
                rules: &i.rules,
                note: i.note.as_deref(),
            });
        }
        for c in &self.conflicts {
            out.push(Entry {
                id: &c.id,
                summary: &c.text,
                source: &c.source,
                rules: &c.rules,
                note: c.note.as_deref(),
            });
        }
        macro_rules! texts {
            ($($table:ident),*) => {$(
                for e in &self.$table {
                    out.push(Entry {
                        id: &e.id,
                        summary: &e.text,
                        source: &e.source,
                        rules: &e.rules,
                        note: e.note.as_deref(),
                    });
                }
            )*};
        }
        texts!(
            kubelet,
            driver_list,
            family_needs,
            schedule,
            pool_drift,
            numbering
        );
        out
    }

    /// The kubelet entries a rule reads (by its kebab-case name).
    pub fn kubelet_for<'a>(&'a self, rule: &'a str) -> impl Iterator<Item = &'a Kubelet> + 'a {
        self.kubelet
            .iter()
            .filter(move |k| k.rules.iter().any(|r| r == rule))
    }

    /// A support entry by id.
    pub fn support_entry(&self, id: &str) -> Option<&Support> {
        self.support.iter().find(|s| s.id == id)
    }

    /// The entries a rule uses (by its kebab-case name).
    pub fn entries_for(&self, rule: &str) -> Vec<Entry<'_>> {
        self.entries()
            .into_iter()
            .filter(|e| e.rules.iter().any(|r| r == rule))
            .collect()
    }

    /// One line on a driver row: the series, each with its cap, then the first unsupported one.
    pub fn driver_text(row: &DriverRow) -> String {
        let series: Vec<String> = row
            .series
            .iter()
            .map(|s| match row.max.get(&s.to_string()) {
                Some(m) => format!("{s} ≤ {m}"),
                None => s.to_string(),
            })
            .collect();
        let mut text = series.join(", ");
        if let Some(u) = row.unsupported_from {
            text.push_str(&format!("; {u}+ unsupported"));
        }
        text
    }
}

impl Support {
    /// Does `name` (an instance family, an OS, a driver series) fall under this entry?
    pub fn matches(&self, name: &str) -> bool {
        if self.prefix {
            name.starts_with(self.value.as_str())
        } else {
            name == self.value
        }
    }
}

impl Issue {
    /// Does the issue concern a node with this driver and OS image (`None`: not known)? An issue
    /// with a condition needs the node to meet it; one without concerns every node.
    pub fn concerns(&self, driver: Option<&str>, os_image: Option<&str>) -> bool {
        let driver_ok = self
            .driver_from
            .is_none_or(|from| driver.and_then(driver_parts).is_some_and(|d| d[0] >= from));
        let os_ok = self.os.as_deref().is_none_or(|os| {
            os_image.is_some_and(|i| i.to_lowercase().contains(&os.to_lowercase()))
        });
        driver_ok && os_ok
    }

    /// The node condition in words (` (with driver 535 and later)`), or nothing.
    pub fn when_text(&self) -> String {
        match (self.driver_from, &self.os) {
            (Some(d), Some(os)) => format!(" (with driver {d} and later, on {os})"),
            (Some(d), None) => format!(" (with driver {d} and later)"),
            (None, Some(os)) => format!(" (on {os})"),
            (None, None) => String::new(),
        }
    }

    /// Does version `v` have the issue?
    pub fn covers(&self, v: &Version) -> bool {
        self.from.as_ref().is_none_or(|f| f.0 <= *v) && self.to.as_ref().is_none_or(|t| *v <= t.0)
    }

    /// The versions as words: `≤ 1.5.7`, `1.5.3–1.5.11`, `every version`.
    pub fn range_text(&self) -> String {
        match (&self.from, &self.to) {
            (Some(f), Some(t)) => format!("{f}–{t}"),
            (None, Some(t)) => format!("≤ {t}"),
            (Some(f), None) => format!("≥ {f}"),
            (None, None) => "every version".into(),
        }
    }
}

/// A release number's leading `major[.minor]` (`22.04.3 LTS` → (22, 4)).
fn release(s: &str) -> Option<(u64, u64)> {
    let word = s.split(|c: char| !c.is_ascii_digit() && c != '.').next()?;
    let mut parts = word.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

#[cfg(test)]
mod tests;
