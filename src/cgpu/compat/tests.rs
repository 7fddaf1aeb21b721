//! The compatibility data's unit tests (a file of their own: compat.rs stays under 900 lines).

use super::*;

fn v(s: &str) -> Version {
    Version::parse(s).unwrap()
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && s.bytes()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

#[test]
fn the_file_parses() {
    parse(TEXT).unwrap();
    assert!(!data().drivers.is_empty());
}

#[test]
fn every_entry_has_a_dated_source() {
    let d = data();
    assert!(is_date(&d.meta.date), "{}", d.meta.date);
    let mut ids = std::collections::HashSet::new();
    for s in &d.sources {
        assert!(ids.insert(s.id.as_str()), "source {} twice", s.id);
        assert!(is_date(&s.read), "source {} read {:?}", s.id, s.read);
        if let Some(u) = &s.updated {
            assert!(is_date(u), "source {} updated {u:?}", s.id);
        }
        if let Some(u) = &s.url {
            assert!(u.starts_with("https://"), "{u}");
        }
    }
    let mut entry_ids = std::collections::HashSet::new();
    for e in d.entries() {
        assert!(entry_ids.insert(e.id), "entry {} twice", e.id);
        assert!(
            d.source(e.source).is_some(),
            "entry {} names source {:?}, which the file does not have",
            e.id,
            e.source
        );
    }
    // The newest date among the sources is the data's date.
    let newest = d
        .sources
        .iter()
        .filter_map(|s| s.updated.as_deref())
        .filter(|u| *u <= d.meta.date.as_str())
        .max();
    assert_eq!(newest, Some("2026-03-31"));
}

#[test]
fn ranges_do_not_overlap_inconsistently() {
    let d = data();
    // Driver rows: ascending, each `from` ≤ `to`, no two rows claiming one version.
    for r in &d.drivers {
        assert!(r.from <= r.to, "{}", r.id);
        assert!(r.to <= d.meta.newest, "{} ends past meta.newest", r.id);
        assert!(
            r.series.windows(2).all(|w| w[0] < w[1]),
            "{}: series ascending",
            r.id
        );
        for (s, m) in &r.max {
            let series: u64 = s.parse().unwrap();
            assert!(r.series.contains(&series), "{}: max for unlisted {s}", r.id);
            assert_eq!(driver_parts(m).unwrap()[0], series, "{}: {m}", r.id);
        }
        if let Some(u) = r.unsupported_from {
            assert!(r.series.iter().all(|s| *s < u), "{}: lists {u}+", r.id);
        }
    }
    for w in d.drivers.windows(2) {
        assert!(w[0].to < w[1].from, "{} overlaps {}", w[0].id, w[1].id);
    }
    for w in d.families.windows(2) {
        assert!(w[0].to < w[1].from, "{} overlaps {}", w[0].id, w[1].id);
    }
    for f in &d.families {
        assert!(f.from <= f.to, "{}", f.id);
    }
    for i in &d.issues {
        if let (Some(f), Some(t)) = (&i.from, &i.to) {
            assert!(f <= t, "{}", i.id);
        }
        // An issue fixed in a cGPU version ends before it.
        if let (Some(t), Some(fixed)) = (&i.to, i.fixed.as_deref())
            && let Ok(fixed) = Version::parse(fixed)
        {
            assert!(t.0 < fixed, "{}: ends at {t}, fixed in {fixed}", i.id);
        }
    }
    for s in &d.support {
        assert!(
            ["cgroup", "os", "family", "driver", "policy"].contains(&s.kind.as_str()),
            "{}",
            s.id
        );
        assert!(s.since <= d.meta.newest, "{}", s.id);
    }
}

#[test]
fn the_build_time_versions_are_the_data() {
    // build.rs reads these out of compat.toml with a line scan, for the catalogue's static
    // texts; the parser must read the same versions.
    let d = data();
    assert_eq!(
        d.min_policy_version().to_string(),
        env!("CGPU_MIN_POLICY_VERSION")
    );
    assert_eq!(
        d.last_deadlock_version().to_string(),
        env!("CGPU_LAST_DEADLOCK_VERSION")
    );
    assert_eq!(
        d.deadlock().fixed.as_deref(),
        Some(env!("CGPU_RECOMMENDED_VERSION"))
    );
    assert_eq!(d.meta.newest.to_string(), env!("CGPU_NEWEST_VERSION"));
    assert_eq!(super::super::min_policy_version(), d.min_policy_version());
    assert_eq!(
        super::super::last_deadlock_version(),
        d.last_deadlock_version()
    );
    assert!(!super::super::newer_than_data(&d.meta.newest.0));
    assert!(super::super::newer_than_data(&v("1.5.21")));
    assert_eq!(super::super::RECOMMENDED_VERSION, "1.5.10");
    assert_eq!(d.min_policy_version(), &v("1.0.6"));
    assert_eq!(d.last_deadlock_version(), &v("1.5.7"));
}

#[test]
fn lookups() {
    let d = data();
    assert_eq!(d.driver_row(&v("1.0.4")).unwrap().id, "driver-0.8.13");
    assert_eq!(d.driver_row(&v("1.5.20")).unwrap().id, "driver-1.5.3");
    assert!(d.driver_row(&v("1.5.21")).is_none());
    assert!(d.driver_row(&v("0.8.12")).is_none());
    assert!(d.is_newer(&v("1.5.21")));
    assert!(!d.is_newer(&v("1.5.20")));
    let ids = |v: &Version| d.issues_at(v).map(|i| i.id.clone()).collect::<Vec<_>>();
    assert_eq!(
        ids(&v("1.5.7")),
        [
            "issue-deadlock",
            "issue-isolation-535",
            "issue-containeros-first-pod",
            "issue-pods-per-gpu"
        ]
    );
    assert_eq!(
        ids(&v("1.5.12")),
        ["issue-containeros-first-pod", "issue-pods-per-gpu"]
    );
    assert_eq!(ids(&v("1.5.19")), ["issue-pods-per-gpu"]);
    assert!(d.families_at(&v("1.5.18")).is_none());
    assert!(
        d.families_at(&v("1.5.19"))
            .unwrap()
            .families
            .contains(&"ebmgn9t".to_string())
    );
    let cg = |s: &str| d.cgroup_v2_default(s).map(|c| c.id.as_str());
    assert_eq!(cg("Ubuntu 22.04.3 LTS"), Some("cgroup-v2-ubuntu"));
    assert_eq!(cg("Ubuntu 21.10"), Some("cgroup-v2-ubuntu"));
    assert_eq!(cg("Ubuntu 20.04.6 LTS"), None);
    assert_eq!(
        cg("Debian GNU/Linux 12 (bookworm)"),
        Some("cgroup-v2-debian")
    );
    assert_eq!(cg("Debian GNU/Linux 10 (buster)"), None);
    assert_eq!(
        cg("Alibaba Cloud Linux 3.2104 U10 (OpenAnolis Edition)"),
        None
    );
    assert_eq!(
        d.missing_support("os", &v("1.5.8"))
            .map(|s| s.id.as_str())
            .collect::<Vec<_>>(),
        ["support-ubuntu-22.04"]
    );
    assert_eq!(d.missing_support("os", &v("1.5.9")).count(), 0);
    // Kubernetes: cgroup v2 needs Linux 5.8 or later.
    let k = d.kernel_for("node-cgroup-v2").next().unwrap();
    assert_eq!(k.predates("4.19.0-26-amd64"), Some(true));
    assert_eq!(k.predates("5.4.0-150-generic"), Some(true));
    assert_eq!(k.predates("5.8.0-63-generic"), Some(false));
    assert_eq!(k.predates("5.10.134-16.3.al8.x86_64"), Some(false));
    assert_eq!(k.predates("6.1.0-21-cloud-amd64"), Some(false));
    assert_eq!(k.predates("unknown"), None);
}

#[test]
fn the_facts_of_2026() {
    let d = data();
    // Kubernetes 1.35 needs cgroup v2, whose support has an entry; 1.36 is unknown for cGPU.
    let k = |id: &str| d.kubelet.iter().find(|k| k.id == id).unwrap();
    let v135 = k("kubelet-1.35-cgroup-v2");
    assert_eq!(v135.covers("v1.35.0-aliyun.1"), Some(true));
    assert_eq!(v135.covers("v1.36.2-aliyun.1"), Some(true));
    assert_eq!(v135.covers("v1.34.3-aliyun.1"), Some(false));
    assert_eq!(v135.covers("v1.4.0"), Some(false));
    assert_eq!(v135.covers("unknown"), None);
    let needs = d.support_entry(v135.needs.as_deref().unwrap()).unwrap();
    assert_eq!(
        (needs.kind.as_str(), needs.since.to_string()),
        ("cgroup", "1.5.9".into())
    );
    assert!(k("kubelet-1.36-containerd-2").needs.is_none());
    // Every `needs` names a support entry.
    for k in &d.kubelet {
        if let Some(n) = &k.needs {
            assert!(d.support_entry(n).is_some(), "{}: needs {n}", k.id);
        }
    }
    // ACK's driver list: 13 incompatible, the default among the supported, no version on both.
    let l = &d.driver_list[0];
    assert_eq!(l.incompatible.len(), 13);
    assert!(l.supported.contains(&l.default));
    assert!(l.supported.iter().all(|s| !l.is_incompatible(s)));
    assert!(l.is_incompatible("470.82.01") && l.is_incompatible(" 535.129.03"));
    assert!(!l.is_incompatible("535.161.07") && !l.is_incompatible("535.129"));
    for v in l.supported.iter().chain(&l.incompatible) {
        assert!(driver_parts(v).is_some(), "{v}");
    }
    let f = &d.family_needs[0];
    assert!(f.since <= d.meta.newest);
    assert!(l.supported.contains(&f.driver));
}

#[test]
fn a_bad_file_is_refused_with_its_position() {
    let bad = TEXT.replacen("newest = \"1.5.20\"", "newest = \"1.5\"", 1);
    let e = parse(&bad).unwrap_err();
    assert!(e.contains("line"), "{e}");
    assert!(e.contains("not a version"), "{e}");
    let unknown = format!("{TEXT}\n[[driver]]\nid = \"x\"\nfrom = \"1.0.0\"\n");
    assert!(parse(&unknown).is_err());
}
