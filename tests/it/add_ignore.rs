//! `check --add-ignore` as a property over every fixture of tests/fixtures and a
//! seeded set of generated values files: in a copy, after `--add-ignore` the file checked again
//! reports no error or warning but those listed as not ignorable, `cgpu-lint values` prints the
//! same values (the comments change nothing Helm reads; real Helm 3 and 4 agree on a few
//! cases), the file's bytes are the old ones with only `# cgpu-lint: ignore[…]` text added
//! (CRLF kept), and a second run adds nothing. Also: reasons and dates as the suppression reads
//! them, a `values: |` string of a HelmRelease, a place no comment can go, the file's mode.

#[cfg(feature = "tools")]
use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::Rng;
use crate::common::probe::{copy_dir, env_usize, root};
use crate::common::{printed as text, run_in as run};

/// `check --add-ignore FILE` in `dir`, with no config and no baseline.
fn add_ignore(dir: &Path, file: &str) -> Output {
    run(
        dir,
        &[
            "check",
            "--no-config",
            "--no-baseline",
            "--add-ignore",
            file,
        ],
    )
}

/// The errors and warnings `check` reports for `file`, counted by rule.
fn failing(dir: &Path, file: &str) -> BTreeMap<String, usize> {
    let o = run(
        dir,
        &[
            "check",
            "--no-config",
            "--no-baseline",
            "--format",
            "json",
            file,
        ],
    );
    let json: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{file}: {e}: {}", text(&o)));
    let mut out = BTreeMap::new();
    for d in json["diagnostics"].as_array().unwrap() {
        if matches!(d["severity"].as_str(), Some("error" | "warning")) {
            *out.entry(d["rule"].as_str().unwrap().to_string())
                .or_insert(0) += 1;
        }
    }
    out
}

/// Is `after` `before` with only ignore text added: whole lines that are a directive (with the
/// next line's indentation), a directive appended to a line, or rule names added to a list?
fn only_ignores_added(before: &str, after: &str) -> Result<(), String> {
    let b: Vec<&str> = before.split_inclusive('\n').collect();
    let a: Vec<&str> = after.split_inclusive('\n').collect();
    let mut i = 0;
    for line in &a {
        if i < b.len() && *line == b[i] {
            i += 1;
            continue;
        }
        let body = line.trim_end_matches(['\r', '\n']);
        if i < b.len() {
            let old = b[i].trim_end_matches(['\r', '\n']);
            let same_eol = line[body.len()..] == b[i][old.len()..];
            if same_eol
                && let Some(rest) = body.strip_prefix(old)
                && (rest.starts_with(" # cgpu-lint: ignore[")
                    || rest.starts_with("# cgpu-lint: ignore["))
                && !rest[1..].contains('\n')
            {
                i += 1;
                continue;
            }
            // Names added inside an existing list: the line without them is the old one.
            if same_eol && old.contains("cgpu-lint: ignore[") {
                let open = old.find("cgpu-lint: ignore[").unwrap() + "cgpu-lint: ignore[".len();
                let close_old = open + old[open..].find(']').unwrap();
                if body.starts_with(&old[..close_old]) && body.ends_with(&old[close_old..]) {
                    i += 1;
                    continue;
                }
            }
        }
        // A directive line of its own, ended as the line it precedes.
        let t = body.trim_start_matches([' ', '\t']);
        let next_eol = b
            .get(i)
            .map(|l| &l[l.trim_end_matches(['\r', '\n']).len()..]);
        // Ended as the line it precedes (or with a line break before a last line without one).
        let eol = &line[body.len()..];
        if t.starts_with("# cgpu-lint: ignore[")
            && i < b.len()
            && (next_eol == Some(eol) || (next_eol == Some("") && eol.ends_with('\n')))
            && b[i].starts_with(&body[..body.len() - t.len()])
        {
            continue;
        }
        return Err(format!(
            "line {line:?} is neither old nor an ignore (old line {:?})",
            b.get(i)
        ));
    }
    if i != b.len() {
        return Err(format!("old lines from {} were lost", i + 1));
    }
    Ok(())
}

/// The property on one file of a folder: returns how many ignores were added.
fn property(dir: &Path, file: &str) -> usize {
    let path = dir.join(file);
    let before = std::fs::read(&path).unwrap();
    let failing_before = failing(dir, file);
    let values_args = ["values", "--no-config", file];
    let values_before = run(dir, &values_args);
    let o = add_ignore(dir, file);
    let out = text(&o);
    // `FILE:LINE:COL: RULE: not ignorable: WHY`
    let mut not_ignorable: BTreeMap<String, usize> = BTreeMap::new();
    for l in out.lines().filter(|l| l.contains(": not ignorable: ")) {
        let rule = l.split(": ").nth(1).unwrap().to_string();
        *not_ignorable.entry(rule).or_insert(0) += 1;
    }
    let code = o.status.code().unwrap();
    assert_eq!(
        code,
        if not_ignorable.is_empty() { 0 } else { 1 },
        "{file}: {out}"
    );
    let after = std::fs::read(&path).unwrap();
    let (bs, as_) = (
        String::from_utf8_lossy(&before),
        String::from_utf8_lossy(&after),
    );
    if let Err(e) = only_ignores_added(&bs, &as_) {
        panic!("{file}: {e}\n--- before\n{bs}\n--- after\n{as_}");
    }
    assert_eq!(
        failing(dir, file),
        not_ignorable,
        "{file}: what is left after --add-ignore (before: {failing_before:?})\n{out}\n{as_}"
    );
    let values_after = run(dir, &values_args);
    assert_eq!(
        (text(&values_before), values_before.status.code()),
        (text(&values_after), values_after.status.code()),
        "{file}: values changed\n{as_}"
    );
    // Idempotent.
    let again = add_ignore(dir, file);
    assert!(
        text(&again).contains("Added 0 ignores in 0 files"),
        "{file}: {}",
        text(&again)
    );
    assert_eq!(again.status.code().unwrap(), code, "{file}");
    assert_eq!(std::fs::read(&path).unwrap(), after, "{file}: second run");
    let added = out
        .lines()
        .find_map(|l| l.strip_prefix("Added "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{file}: no summary: {out}"));
    if failing_before.is_empty() {
        assert_eq!(added, 0, "{file}");
        assert_eq!(after, before, "{file}");
    }
    added
}

fn files_under(dir: &Path, rel: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir.join(rel)).unwrap() {
        let e = e.unwrap();
        let r = rel.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            files_under(dir, &r, out);
        } else if r
            .extension()
            .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
        {
            out.push(r.to_string_lossy().into_owned());
        }
    }
}

#[test]
fn every_fixture_with_findings_is_clean_after_add_ignore_and_reads_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fixtures");
    copy_dir(&root().join("tests/fixtures"), &dir);
    let mut files = Vec::new();
    files_under(&dir, Path::new(""), &mut files);
    files.sort();
    let (mut with, mut added) = (0, 0);
    for f in &files {
        let n = property(&dir, f);
        if n > 0 {
            with += 1;
            added += n;
        }
    }
    eprintln!(
        "{} fixtures, {with} with ignores added ({added} ignores)",
        files.len()
    );
    // The fixtures hold many findings: a run that adds nothing proves nothing.
    assert!(with >= 20, "only {with} fixtures got ignores");
}

/// A generated values file: the cgpu block in several layouts (block, flow over lines, comments
/// already there, directives already there, multi-line quoted strings, CRLF), values that break
/// rules or not.
fn generated(rng: &mut Rng) -> String {
    let policy = rng.pick(&["1", "9", "\"2\"", "03", "-1", "7"]);
    let enabled = rng.pick(&["true", "\"false\"", "On", "yes"]);
    let tag = rng.pick(&[
        "v1.5.10-2b9e7d4-aliyun",
        "latest",
        "v1",
        "v1.5.3-8d3fc1b-aliyun",
        "\"v1.5.3-8d3fc1b-\n    aliyun\"",
    ]);
    let label = rng.pick(&["cgpu", "no", "\"yes\""]);
    let comment = |rng: &mut Rng| {
        rng.pick(&[
            "",
            "  # ours",
            " # cgpu-lint: ignore[image-name]",
            " # a: b # c",
        ])
        .to_string()
    };
    let mut s = String::from("# generated\n");
    match rng.below(3) {
        0 => {
            s.push_str("cgpu:\n");
            s.push_str(&format!("  enabled: {enabled}{}\n", comment(rng)));
            s.push_str(&format!("  tag: {tag}{}\n", comment(rng)));
            s.push_str(&format!("  policy: {policy}{}\n", comment(rng)));
            s.push_str(&format!(
                "  nodeSelector:\n    ack.node.gpu.schedule: cgpu\n    pool: {label}{}\n",
                comment(rng)
            ));
        }
        1 => {
            s.push_str(&format!(
                "cgpu: {{enabled: {enabled}, tag: {tag},\n  policy: {policy},{}\n  nodeSelector: {{ack.node.gpu.schedule: cgpu, pool: {label}}}}}\n",
                comment(rng)
            ));
        }
        _ => {
            s.push_str(&format!(
                "other: |\n  kept: {policy}\ncgpu:\n  # cgpu-lint: ignore[tag-invalid]\n  tag: {tag}\n  enabled: {enabled}\n  policy: {policy}\n"
            ));
        }
    }
    if rng.chance(30) {
        s = s.replace('\n', "\r\n");
    }
    s
}

#[test]
fn generated_values_files_are_clean_after_add_ignore_and_read_the_same() {
    let cases = env_usize("CGPU_ADD_IGNORE_CASES", 40);
    let seed = env_usize("CGPU_ADD_IGNORE_SEED", 37) as u64;
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = Rng::seeded(seed);
    let mut added = 0;
    for i in 0..cases {
        let name = format!("case-{i}.yaml");
        std::fs::write(tmp.path().join(&name), generated(&mut rng)).unwrap();
        added += property(tmp.path(), &name);
    }
    eprintln!("{cases} generated cases (seed {seed}): {added} ignores added");
    assert!(added >= cases / 2, "{added}");
}

/// What real Helm 3 and 4 hand the chart from each file: the same after --add-ignore.
#[cfg(feature = "tools")]
#[test]
fn real_helm_reads_the_same_values_after_add_ignore() {
    if !common::helm::helm_bin(3).exists() {
        panic!("real Helm is missing: run scripts/install-test-tools");
    }
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    common::helm::make_homes(&home);
    let chart = common::probe::probed_chart(tmp.path());
    let files = [
        (
            "a.yaml",
            "cgpu:\r\n  enabled: true # ours\r\n  policy: 9\r\n  tag: \"v1.5.3-8d3fc1b-\r\n    aliyun\"\r\n",
        ),
        (
            "b.yaml",
            "cgpu: {enabled: true, tag: latest,\n  policy: 7,\n  nodeSelector: {pool: no}}\n",
        ),
        (
            "c.yaml",
            "cgpu:\n  enabled: On\n  checkRegions: n\n  policy: 03 # cgpu-lint: ignore[image-name]\n",
        ),
    ];
    for (name, body) in files {
        let path = tmp.path().join(name);
        std::fs::write(&path, body).unwrap();
        let args = vec!["-f".to_string(), path.to_string_lossy().into_owned()];
        let probe = |v| common::probe::helm_probes(v, &chart, &args, &home);
        let before = (probe(3), probe(4));
        let o = run(tmp.path(), &["check", "--no-config", "--add-ignore", name]);
        assert!(text(&o).contains("Added "), "{}", text(&o));
        assert_ne!(std::fs::read_to_string(&path).unwrap(), body, "{name}");
        assert_eq!((probe(3), probe(4)), before, "{name}");
    }
}

#[test]
fn reason_and_until_are_written_and_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("v.yaml");
    std::fs::write(&f, "cgpu:\n  enabled: true\n  policy: 9\n").unwrap();
    let o = run(
        tmp.path(),
        &[
            "check",
            "--no-config",
            "--add-ignore=vendor default, TICKET-7",
            "--until",
            "2999-12-31",
            "v.yaml",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(text(&o), "Added 1 ignore in 1 file\n");
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        "cgpu:\n  enabled: true\n  policy: 9 # cgpu-lint: ignore[policy-out-of-range] until=2999-12-31 -- vendor default, TICKET-7\n"
    );
    let o = run(tmp.path(), &["check", "--no-config", "v.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // A past day or a bad date is refused; --until needs --add-ignore.
    for args in [
        &["check", "--add-ignore", "--until", "2020-01-01", "v.yaml"][..],
        &["check", "--add-ignore", "--until", "2999-02-30", "v.yaml"],
        &["check", "--until", "2999-01-01", "v.yaml"],
        &["check", "--add-ignore", "-"],
    ] {
        let o = run(tmp.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
    }
}

#[test]
fn a_values_string_of_an_application_gets_the_comment_inside_its_yaml() {
    let tmp = tempfile::tempdir().unwrap();
    let body = "apiVersion: argoproj.io/v1alpha1\r\nkind: Application\r\nmetadata:\r\n  name: gpu\r\n  namespace: argocd\r\nspec:\r\n  source:\r\n    chart: ack-ai-installer\r\n    repoURL: https://example.com/charts\r\n    targetRevision: 1.12.6\r\n    helm:\r\n      values: |\r\n        cgpu:\r\n          enabled: true\r\n          policy: 9\r\n  destination:\r\n    namespace: kube-system\r\n";
    std::fs::write(tmp.path().join("hr.yaml"), body).unwrap();
    let before_failing = failing(tmp.path(), "hr.yaml");
    assert_eq!(before_failing.get("policy-out-of-range"), Some(&1));
    assert_eq!(property(tmp.path(), "hr.yaml"), 1);
    let after = std::fs::read_to_string(tmp.path().join("hr.yaml")).unwrap();
    assert_eq!(
        after,
        body.replace(
            "policy: 9\r\n",
            "policy: 9 # cgpu-lint: ignore[policy-out-of-range]\r\n"
        )
    );
}

#[test]
fn a_line_no_comment_can_go_on_is_reported_not_ignorable() {
    let tmp = tempfile::tempdir().unwrap();
    // Line 3 starts inside one quoted string and ends inside another: a comment at its end, or
    // on a line inserted above it, would be part of a string.
    let body =
        "cgpu:\n  enabled: true\n  nodeSelector: {a: \"p\n    q\", pool: no, b: \"r\n    s\"}\n";
    let at = body.find("no,").unwrap();
    let line = body[..at].matches('\n').count() + 1;
    let column = at - body[..at].rfind('\n').unwrap();
    std::fs::write(tmp.path().join("v.yaml"), body).unwrap();
    let o = run(
        tmp.path(),
        &["check", "--no-config", "--add-ignore", "v.yaml"],
    );
    let out = text(&o);
    assert!(
        out.contains(&format!(
            "v.yaml:{line}:{column}: label-value-type: not ignorable: "
        )),
        "{out}"
    );
    assert_eq!(o.status.code(), Some(1), "{out}");
    // The mapping's own finding (line 3) could take the line above it.
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("v.yaml")).unwrap(),
        body.replace(
            "  nodeSelector:",
            "  # cgpu-lint: ignore[label-value]\n  nodeSelector:"
        )
    );
    property(tmp.path(), "v.yaml");
}

#[cfg(unix)]
#[test]
fn the_files_mode_is_kept_and_the_baseline_is_respected() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let f: PathBuf = tmp.path().join("v.yaml");
    std::fs::write(&f, "cgpu:\n  enabled: true\n  policy: 9\n  tag: latest\n").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
    // The baseline records policy-out-of-range: only tag-invalid gets an ignore.
    let o = run(
        tmp.path(),
        &[
            "baseline",
            "--no-config",
            "--select",
            "policy-out-of-range",
            "v.yaml",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = run(
        tmp.path(),
        &["check", "--no-config", "--add-ignore", "v.yaml"],
    );
    assert_eq!(text(&o), "Added 1 ignore in 1 file\n");
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        "cgpu:\n  enabled: true\n  policy: 9\n  tag: latest # cgpu-lint: ignore[tag-invalid]\n"
    );
    assert_eq!(
        std::fs::metadata(&f).unwrap().permissions().mode() & 0o777,
        0o640
    );
}

/// Every prefix of a values file (cut inside a quoted string, a flow mapping, a CRLF pair, a
/// `values: |` string): the engine never panics, and what it writes is the old text with
/// ignores added.
#[test]
fn every_prefix_of_a_file_goes_through_the_engine_without_panic() {
    use cgpu_lint::add_ignore::{Options, add_ignores, wanted};
    use cgpu_lint::lint::{Settings, lint_file};
    use cgpu_lint::yaml::Source;
    let body = "cgpu:\r\n  enabled: On # ours\r\n  tag: \"v1.5.3-8d3fc1b-\r\n    aliyun\"\r\n  nodeSelector: {pool: no,\r\n    b: yes}\r\n  policy: 9 # cgpu-lint: ignore[image-name] -- x\r\n---\r\nkind: Application\r\napiVersion: argoproj.io/v1alpha1\r\nspec:\r\n  source:\r\n    chart: ack-ai-installer\r\n    helm:\r\n      values: |\r\n        cgpu:\r\n          policy: 7\r\n";
    let settings = Settings::default();
    let mut written = 0;
    for (at, _) in body.char_indices().chain([(body.len(), ' ')]) {
        let text = &body[..at];
        let src = Source::new("v.yaml", text.to_string());
        let found = lint_file(&src, &settings);
        let targets: Vec<_> = found.iter().filter(|d| wanted(d)).collect();
        let a = add_ignores(&src, &targets, &settings, &Options::default())
            .unwrap_or_else(|e| panic!("{at}: {e}"));
        if a.added > 0 {
            written += 1;
            if let Err(e) = only_ignores_added(text, &a.text) {
                panic!("{at}: {e}\n{}", a.text);
            }
        }
    }
    assert!(written > body.len() / 2, "{written}");
}

#[test]
fn an_ignore_merged_into_a_directive_keeps_both_reasons() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("v.yaml");
    // The directive on the pull-policy line ignores a rule that has no finding there; the new
    // ignore joins it (only the first `# cgpu-lint:` of a line is read).
    std::fs::write(
        &f,
        "cgpu:\n  imagePullPolicy: always  # cgpu-lint: ignore[policy-out-of-range] -- tracked in JIRA-1\n",
    )
    .unwrap();
    let o = run(
        tmp.path(),
        &["check", "--no-config", "--add-ignore=vendor bug", "v.yaml"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let after = std::fs::read_to_string(&f).unwrap();
    let line = after.lines().nth(1).unwrap();
    assert!(
        line.contains("ignore[policy-out-of-range, pull-policy]")
            && line.contains("tracked in JIRA-1")
            && line.contains("vendor bug"),
        "{after}"
    );
    let o = run(tmp.path(), &["check", "--no-config", "v.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // A directive without a reason gets ours; the same reason is not written twice.
    std::fs::write(
        &f,
        "cgpu:\n  imagePullPolicy: always  # cgpu-lint: ignore[policy-out-of-range]\n",
    )
    .unwrap();
    run(
        tmp.path(),
        &["check", "--no-config", "--add-ignore=vendor bug", "v.yaml"],
    );
    let after = std::fs::read_to_string(&f).unwrap();
    assert!(after.contains("] -- vendor bug\n"), "{after}");
    std::fs::write(
        &f,
        "cgpu:\n  imagePullPolicy: always  # cgpu-lint: ignore[policy-out-of-range] -- vendor bug\n",
    )
    .unwrap();
    run(
        tmp.path(),
        &["check", "--no-config", "--add-ignore=vendor bug", "v.yaml"],
    );
    let after = std::fs::read_to_string(&f).unwrap();
    assert_eq!(after.matches("vendor bug").count(), 1, "{after}");
}

#[test]
fn a_reason_with_a_control_character_is_refused_saying_why() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("v.yaml");
    let before = "cgpu:\n  policy: 9\n";
    std::fs::write(&f, before).unwrap();
    let o = run(
        tmp.path(),
        &["check", "--no-config", "--add-ignore=a\u{1}b", "v.yaml"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("control character U+0001") && !err.contains("no comment can go"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&f).unwrap(), before);
    // A tab is printable in YAML: written as given.
    let o = run(
        tmp.path(),
        &["check", "--no-config", "--add-ignore=a\tb", "v.yaml"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}
