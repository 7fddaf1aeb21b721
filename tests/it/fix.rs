//! `fix`, `fix --diff`, `fix --stdout`, `set` and `generate` through the real binary.

use crate::common::*;

use std::os::unix::fs::PermissionsExt;

use crate::common::FIX_GOLDEN as GOLDEN;

fn expected(name: &str) -> String {
    std::fs::read_to_string(fixtures().join("fixed").join(format!("{name}.yaml"))).unwrap()
}

/// The hand-written output of `fix --unsafe-fixes`: `fixed-unsafe/NAME.yaml` where it differs
/// from the default fix, else `fixed/NAME.yaml`.
fn expected_unsafe(name: &str) -> String {
    let p = fixtures().join("fixed-unsafe").join(format!("{name}.yaml"));
    std::fs::read_to_string(p).unwrap_or_else(|_| expected(name))
}

#[test]
fn fix_unsafe_fixes_stdout_prints_the_hand_written_golden_bytes() {
    for name in GOLDEN {
        let out = bin()
            .args([
                "fix",
                "--unsafe-fixes",
                "--stdout",
                &fixture(&format!("{name}.yaml")),
            ])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            expected_unsafe(name),
            "fix --unsafe-fixes --stdout {name}"
        );
    }
}

#[test]
fn fix_stdout_prints_the_hand_written_golden_bytes() {
    for name in GOLDEN {
        let out = bin()
            .args(["fix", "--stdout", &fixture(&format!("{name}.yaml"))])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            expected(name),
            "fix --stdout {name}"
        );
    }
}

#[test]
fn golden_outputs_have_no_fixable_finding_left() {
    for name in GOLDEN {
        let path = fixtures().join("fixed").join(format!("{name}.yaml"));
        let run = check_json(&[path.to_str().unwrap()]);
        assert_eq!(run.json["summary"]["fixable"], 0, "{name}: {:#}", run.json);
    }
}

#[test]
fn fix_diff_is_a_unified_diff_and_exit_1() {
    // Run from the fixtures folder so the headers carry the path as given.
    let f = "values-invalid-image-pull-policy-case.yaml";
    let out = bin()
        .current_dir(fixtures())
        .args(["fix", "--diff", f])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let diff = String::from_utf8(out.stdout).unwrap();
    let want = format!(
        "--- a/{f}\n+++ b/{f}\n@@ -3,7 +3,7 @@\n   image: acs/cgpu-installer\n   tag: v1.5.3-8d3fc1b-aliyun\n   financeCloudImageTag: v1.0.7-fin\n-  imagePullPolicy: ifNotPresent   # must be exactly Always, IfNotPresent or Never\n+  imagePullPolicy: IfNotPresent   # must be exactly Always, IfNotPresent or Never\n   policy: 1\n   nodeSelector: {{}}\n   checkRegions: true\n"
    );
    assert_eq!(diff, want);
    assert!(
        !diff.contains('\x1b'),
        "no colour when stdout is not a terminal"
    );
}

#[test]
fn fix_diff_with_nothing_to_fix_is_empty_and_exit_0() {
    let out = bin()
        .args(["fix", "--diff", &fixture("values-valid-full-default.yaml")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
}

fn temp_copy(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::copy(fixtures().join(name), &p).unwrap();
    (dir, p)
}

#[test]
fn fix_in_place_writes_the_fix_keeps_the_mode_and_exits_1() {
    let (_d, p) = temp_copy("values-invalid-enabled-and-checkregions-strings.yaml");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = bin().arg("fix").arg(&p).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        expected("values-invalid-enabled-and-checkregions-strings")
    );
    let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    // No temporary file is left beside it.
    assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
    // Fixing again changes nothing; `enabled: "false"` is left (its fix is unsafe: it would
    // remove the DaemonSets), so the error keeps the exit at 1 and the summary says so.
    let again = bin().arg("fix").arg(&p).output().unwrap();
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        expected("values-invalid-enabled-and-checkregions-strings")
    );
    let report = String::from_utf8(again.stdout).unwrap();
    assert!(
        report.contains("1 hidden fix can be enabled with the `--unsafe-fixes` option."),
        "{report}"
    );
    assert_eq!(again.status.code(), Some(1));
    // With --unsafe-fixes it goes, and stderr names what the next upgrade does.
    let all = bin()
        .args(["fix", "--unsafe-fixes"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        expected_unsafe("values-invalid-enabled-and-checkregions-strings")
    );
    assert!(
        String::from_utf8_lossy(&all.stderr).contains(
            ":4: unsafe fix (string-boolean): cgpu.enabled becomes false: the next upgrade removes the cgpu-installer and cgpu-core-installer DaemonSets"
        ),
        "{}",
        String::from_utf8_lossy(&all.stderr)
    );
}

#[test]
fn fix_does_not_rewrite_an_unchanged_file() {
    let (_d, p) = temp_copy("values-valid-full-default.yaml");
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    let f = std::fs::File::options().write(true).open(&p).unwrap();
    f.set_modified(old).unwrap();
    drop(f);
    let out = bin().arg("fix").arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(std::fs::metadata(&p).unwrap().modified().unwrap(), old);
}

#[test]
fn fix_never_writes_a_file_that_does_not_parse() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("broken.yaml");
    let text = "cgpu:\n  policy: \"1\"\n  enabled: [unclosed\n";
    std::fs::write(&p, text).unwrap();
    let out = bin().arg("fix").arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "a syntax error is a finding");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), text);
}

#[test]
fn fix_writes_through_a_symlink_to_its_target() {
    let (d, target) = temp_copy("values-valid-policy-quoted-string.yaml");
    let link = d.path().join("link.yaml");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = bin().arg("fix").arg(&link).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        expected("values-valid-policy-quoted-string")
    );
}

#[test]
fn fix_select_limits_the_fixes() {
    let out = bin()
        .args([
            "fix",
            "--stdout",
            "--select",
            "yaml11-scalar",
            &fixture("values-warn-yaml11-scalars-nodeselector.yaml"),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("  enabled: true\n"));
    assert!(
        text.contains("    gpu-pool: no "),
        "label-value-type not selected"
    );
}

#[test]
fn fix_stdout_needs_exactly_one_input() {
    let out = bin()
        .args([
            "fix",
            "--stdout",
            &fixture("values-valid-full-default.yaml"),
            &fixture("values-valid-policy-quoted-string.yaml"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn set_changes_only_the_value_and_keeps_comments() {
    let (_d, p) = temp_copy("values-invalid-image-pull-policy-case.yaml");
    let out = bin()
        .arg("set")
        .args([
            "policy=2",
            "tag=v1.5.10-2b9e7d4-aliyun",
            "nodeSelector.ack.node.gpu.schedule=cgpu",
        ])
        .arg(&p)
        .output()
        .unwrap();
    // Like `fix`: exit 1 when the file changed (pre-commit's convention).
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&p).unwrap();
    let want =
        std::fs::read_to_string(fixtures().join("values-invalid-image-pull-policy-case.yaml"))
            .unwrap()
            .replace("  policy: 1\n", "  policy: 2\n")
            .replace(
                "  tag: v1.5.3-8d3fc1b-aliyun\n",
                "  tag: v1.5.10-2b9e7d4-aliyun\n",
            )
            .replace(
                "  nodeSelector: {}\n",
                "  nodeSelector: {ack.node.gpu.schedule: cgpu}\n",
            );
    assert_eq!(text, want);
    assert!(String::from_utf8_lossy(&out.stderr).contains("policy-weight-hint"));
}

#[test]
fn set_refuses_a_rejected_value_and_leaves_the_file() {
    for (arg, rule) in [
        ("policy=9", "policy-out-of-range"),
        ("tag=v1.0.5", "tag-too-old"),
    ] {
        let (_d, p) = temp_copy("values-valid-full-default.yaml");
        let before = std::fs::read(&p).unwrap();
        let out = bin().arg("set").arg(arg).arg(&p).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{arg}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(rule), "{arg}");
        assert_eq!(std::fs::read(&p).unwrap(), before, "{arg}");
    }
}

#[test]
fn set_unknown_key_is_exit_2() {
    let out = bin()
        .args(["set", "polcy=2", &fixture("values-valid-full-default.yaml")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn generate_checks_clean_and_warns_about_the_default_tag() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("values.yaml");
    let out = bin()
        .args([
            "generate",
            "--policy",
            "2",
            "--node-selector",
            "gpu-pool=no",
            "-o",
        ])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("tag-known-deadlock"));
    let run = check_json(&[p.to_str().unwrap()]);
    assert_eq!(run.code, 0);
    expect_rules(
        &run,
        &[("tag-known-deadlock", 1), ("policy-weight-hint", 1)],
    );
}

#[test]
fn generate_with_a_current_tag_has_no_finding() {
    let out = bin()
        .args(["generate", "--tag", "v1.5.10-2b9e7d4-aliyun"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("\ncgpu:\n"));
    assert!(text.contains("restarted"));
}

#[test]
fn generate_refuses_a_bad_policy() {
    let out = bin().args(["generate", "--policy", "7"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .starts_with("error: invalid value '7' for '--policy <N>': 7 is not in 0..=5"),
        "{out:?}"
    );
}

#[test]
fn generate_patch_prints_kubectl_and_the_patch() {
    let out = bin()
        .args([
            "generate",
            "patch",
            "--policy",
            "2",
            "--tag",
            "v1.5.10-2b9e7d4-aliyun",
            "--region",
            "cn-hangzhou",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("kubectl -n kube-system set env daemonset/cgpu-installer POLICY=2\n"));
    assert!(text.contains(
        "        image: registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun\n"
    ));
    assert!(text.contains("          value: \"2\"\n"));
    assert!(text.contains("cgpu-lint checklist"));
}

#[test]
fn fix_diff_is_coloured_only_when_asked_or_on_a_terminal() {
    let f = fixture("values-valid-policy-quoted-string.yaml");
    let out = bin()
        .args(["fix", "--diff", "--color", "always", &f])
        .output()
        .unwrap();
    let diff = String::from_utf8(out.stdout).unwrap();
    assert!(
        diff.contains("\x1b[31m-  policy: \"1\"\x1b[0m\n"),
        "{diff:?}"
    );
    assert!(diff.contains("\x1b[32m+  policy: 1\x1b[0m\n"), "{diff:?}");
}

/// `set` reads `.cgpu-lint.toml` as `check` does: a rule the config ignores is not among set's
/// notes (nor among check's findings), `--no-config` brings it back; and a config that ignores
/// yaml-syntax still cannot make set write into a file that does not parse.
#[test]
fn set_honours_the_config_as_check_does() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("v.yaml"),
        "cgpu:\n  enabled: true\n  policy: 1\n",
    )
    .unwrap();
    std::fs::write(
        d.path().join(".cgpu-lint.toml"),
        "ignore = [\"tag-form\", \"yaml-syntax\"]\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = bin().current_dir(d.path()).args(args).output().unwrap();
        // check reports on stdout, set's notes go to stderr: both are read.
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned()
                + &String::from_utf8_lossy(&out.stdout),
        )
    };
    let set = ["set", "--stdout", "tag=v1.5.9-abc-aliyun", "v.yaml"];
    let (code, err) = run(&set);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("tag-form"), "{err}");
    let mut no_config = set.to_vec();
    no_config.insert(1, "--no-config");
    let (code, err) = run(&no_config);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("warning[tag-form]"), "{err}");
    // check on the file set would write agrees: the config hides tag-form, --no-config shows it.
    std::fs::write(
        d.path().join("w.yaml"),
        "cgpu:\n  enabled: true\n  policy: 1\n  tag: v1.5.9-abc-aliyun\n",
    )
    .unwrap();
    assert!(!run(&["check", "w.yaml"]).1.contains("tag-form"));
    assert!(
        run(&["check", "--no-config", "w.yaml"])
            .1
            .contains("tag-form")
    );
    // yaml-syntax ignored by the config: set still refuses a file that does not parse.
    std::fs::write(d.path().join("b.yaml"), "cgpu:\n  policy: [1\n").unwrap();
    let (code, err) = run(&["set", "policy=2", "b.yaml"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("does not parse"), "{err}");
    assert_eq!(
        std::fs::read_to_string(d.path().join("b.yaml")).unwrap(),
        "cgpu:\n  policy: [1\n"
    );
}

#[test]
fn set_exits_like_fix() {
    // --diff: 1 when it would change the file, 0 when the value is already set; nothing written.
    let (_d, p) = temp_copy("values-valid-full-default.yaml");
    let before = std::fs::read(&p).unwrap();
    let code = |args: &[&str]| {
        bin()
            .arg("set")
            .args(args)
            .arg(&p)
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(code(&["--diff", "policy=2"]), Some(1));
    assert_eq!(std::fs::read(&p).unwrap(), before, "--diff wrote the file");
    assert_eq!(code(&["--stdout", "policy=2"]), Some(0));
    // In place: 1 after changing it, then 0 when it is already set.
    assert_eq!(code(&["policy=2"]), Some(1));
    assert_ne!(std::fs::read(&p).unwrap(), before);
    assert_eq!(code(&["policy=2"]), Some(0));
    assert_eq!(code(&["--diff", "policy=2"]), Some(0));
    // A refused value: 1, file untouched; an unreadable file: 2.
    let now = std::fs::read(&p).unwrap();
    assert_eq!(code(&["policy=9"]), Some(1));
    assert_eq!(std::fs::read(&p).unwrap(), now);
    let out = bin()
        .args(["set", "policy=2", "/nonexistent/values.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn set_usage_names_pairs_then_the_file() {
    let out = bin().args(["set", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("Usage: cgpu-lint set [OPTIONS] <KEY=VALUE>... <PATH>"),
        "{help}"
    );
}

/// A UTF-16 file (which Helm reads) is not rewritten in place: the fixed text is
/// UTF-8, so `fix` says so and leaves the bytes; `--stdout` prints the fixed UTF-8 text.
#[test]
fn a_utf16_file_is_not_rewritten_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v.yaml");
    let text = "cgpu:\n  policy: \"5\"\n";
    let bytes: Vec<u8> = [0xfeffu16]
        .into_iter()
        .chain(text.encode_utf16())
        .flat_map(u16::to_be_bytes)
        .collect();
    std::fs::write(&p, &bytes).unwrap();
    let out = bin().args(["fix", "--no-config"]).arg(&p).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not fixed in place: the file is UTF-16BE"),
        "{err}"
    );
    assert_eq!(std::fs::read(&p).unwrap(), bytes);
    let out = bin()
        .args(["fix", "--no-config", "--stdout"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "cgpu:\n  policy: 5\n"
    );
}

/// A scratch folder with `v.yaml` (`text`) and, when given, a `.cgpu-lint.toml`.
fn fix_class_dir(text: &str, config: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("v.yaml"), text).unwrap();
    if let Some(c) = config {
        std::fs::write(dir.path().join(".cgpu-lint.toml"), c).unwrap();
    }
    dir
}

fn run_in(dir: &std::path::Path, args: &[&str]) -> Out {
    bin().current_dir(dir).args(args).output().unwrap().into()
}

// `[fix] extend-safe` promotes a rule's unsafe fix, which `fix` then applies
//; without it `fix` leaves the value alone (`fix` applies safe fixes only).
// string-boolean's fix changes what the chart renders (cgpu.enabled "false" is true to a Go
// template; false removes the DaemonSets), so the default must keep it.
#[test]
fn extend_safe_makes_fix_apply_string_boolean_and_without_it_fix_does_not() {
    let text = "cgpu:\n  enabled: \"false\"\n";
    let plain = fix_class_dir(text, None);
    let out = run_in(plain.path(), &["fix", "--stdout", "v.yaml"]);
    assert_eq!(out.stdout, text, "{}", out.stderr);
    let run: serde_json::Value = serde_json::from_str(
        &run_in(plain.path(), &["check", "--format", "json", "v.yaml"]).stdout,
    )
    .unwrap();
    let d = &run["diagnostics"][0];
    assert_eq!(d["rule"], "string-boolean");
    assert_eq!(d["fixable"], false);
    assert_eq!(d["fix"]["applicability"], "unsafe");

    let promoted = fix_class_dir(text, Some("[fix]\nextend-safe = [\"string-boolean\"]\n"));
    let run: serde_json::Value = serde_json::from_str(
        &run_in(promoted.path(), &["check", "--format", "json", "v.yaml"]).stdout,
    )
    .unwrap();
    let d = &run["diagnostics"][0];
    assert_eq!(d["fixable"], true, "{run:#}");
    assert_eq!(d["fix"]["applicability"], "safe");
    assert_eq!(run["summary"]["fixable"], 1);
    // The render change is still named.
    assert!(
        d["fix"]["consequence"]
            .as_str()
            .unwrap()
            .contains("cgpu.enabled becomes false")
    );
    let human = run_in(promoted.path(), &["check", "--color", "never", "v.yaml"]);
    assert!(!human.stdout.contains("hidden fix"), "{}", human.stdout);
    let out = run_in(promoted.path(), &["fix", "v.yaml"]);
    assert_eq!(out.code, 1, "a file changed: {}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(promoted.path().join("v.yaml")).unwrap(),
        "cgpu:\n  enabled: false\n"
    );
    assert!(
        out.stderr
            .contains("unsafe fix made safe by `[fix] extend-safe` (string-boolean)"),
        "{}",
        out.stderr
    );
    // The flag does what the config key does.
    let flag = fix_class_dir(text, None);
    let out = run_in(
        flag.path(),
        &[
            "fix",
            "--stdout",
            "--extend-safe-fixes",
            "string-boolean",
            "v.yaml",
        ],
    );
    assert_eq!(out.stdout, "cgpu:\n  enabled: false\n", "{}", out.stderr);
}

// A safe fix demoted by `[fix] extend-unsafe` never runs by default: `fix` leaves it, check's
// JSON says unsafe and not fixable, the human summary counts it among the hidden fixes, SARIF
// has no `fixes` entry for it, and `fix --unsafe-fixes` still applies it.
#[test]
fn extend_unsafe_keeps_a_safe_fix_from_running_by_default() {
    let text = "cgpu:\n  policy: 3.0\n";
    let plain = fix_class_dir(text, None);
    let out = run_in(plain.path(), &["fix", "--stdout", "v.yaml"]);
    assert_eq!(
        out.stdout, "cgpu:\n  policy: 3\n",
        "the rule's own class is safe"
    );

    let demoted = fix_class_dir(
        text,
        Some("[fix]\nextend-unsafe = [\"policy-whole-float\"]\n"),
    );
    let out = run_in(demoted.path(), &["fix", "--stdout", "v.yaml"]);
    assert_eq!(out.stdout, text, "{}", out.stderr);
    let run: serde_json::Value = serde_json::from_str(
        &run_in(demoted.path(), &["check", "--format", "json", "v.yaml"]).stdout,
    )
    .unwrap();
    let d = &run["diagnostics"][0];
    assert_eq!(d["rule"], "policy-whole-float");
    assert_eq!(d["fixable"], false);
    assert_eq!(d["fix"]["applicability"], "unsafe");
    assert_eq!(run["summary"]["fixable"], 0);
    let human = run_in(demoted.path(), &["check", "--color", "never", "v.yaml"]);
    assert!(
        human
            .stdout
            .contains("1 hidden fix can be enabled with the `--unsafe-fixes` option."),
        "{}",
        human.stdout
    );
    let sarif: serde_json::Value = serde_json::from_str(
        &run_in(demoted.path(), &["check", "--format", "sarif", "v.yaml"]).stdout,
    )
    .unwrap();
    let r = &sarif["runs"][0]["results"][0];
    assert_eq!(r["properties"]["applicability"], "unsafe", "{r:#}");
    assert!(r.get("fixes").is_none(), "{r:#}");
    assert_eq!(
        r["properties"]["path"], "/cgpu/policy",
        "other properties kept"
    );
    let out = run_in(
        demoted.path(),
        &["fix", "--stdout", "--unsafe-fixes", "v.yaml"],
    );
    assert_eq!(out.stdout, "cgpu:\n  policy: 3\n");
    // post-render --fix reads the same settings: a demoted installer fix is not applied.
    let ds = std::fs::read(fixture("daemonset-invalid-policy-unquoted-int.yaml")).unwrap();
    let cfg = fix_class_dir(
        "",
        Some("[fix]\nextend-unsafe = [\"installer-policy-unquoted\"]\n"),
    );
    let pr = |dir: &std::path::Path| -> Vec<u8> {
        bin()
            .current_dir(dir)
            .args(["post-render", "--fix", "--fail-on", "never"])
            .write_stdin(ds.clone())
            .output()
            .unwrap()
            .stdout
    };
    assert_eq!(pr(cfg.path()), ds, "demoted: the stream passes unchanged");
    let fixed = pr(plain.path());
    assert_ne!(fixed, ds, "by default post-render --fix quotes POLICY");
    assert!(String::from_utf8(fixed).unwrap().contains("value: \"3\""));
}

#[test]
fn fix_class_lists_name_unknown_rules_and_rules_without_a_fix() {
    let dir = fix_class_dir(
        "cgpu: {}\n",
        Some("[fix]\nextend-safe = [\"no-such-rule\"]\n"),
    );
    let out = run_in(dir.path(), &["check", "v.yaml"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("`fix.extend-safe`: unknown rule `no-such-rule`"),
        "{}",
        out.stderr
    );
    let dir = fix_class_dir(
        "cgpu: {}\n",
        Some("[fix]\nextend-unsafe = [\"tag-too-old\"]\n"),
    );
    let out = run_in(dir.path(), &["check", "v.yaml"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("rule `tag-too-old` has no fix"),
        "{}",
        out.stderr
    );
    let out = run_in(
        dir.path(),
        &[
            "check",
            "--no-config",
            "--extend-safe-fixes",
            "nope",
            "v.yaml",
        ],
    );
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("--extend-safe-fixes: unknown rule `nope`"),
        "{}",
        out.stderr
    );
}

/// The byte offset of a 1-based line and a 1-based column counted in UTF-8 bytes.
fn byte_offset(text: &str, line: u64, column: u64) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line as usize - 1)
        .map(str::len)
        .sum();
    start + column as usize - 1
}

// JSON fixes carry their edits (ruff's `fix.edits`): on every fixture, each safe fix's edits
// are the replacements of rdjson's suggestions (which tests/it/formats.rs holds to `fix --stdout`),
// and applied to the file they give what `fix --stdout` prints when one round fixes it all.
#[test]
fn json_fixes_carry_the_edits_fix_applies() {
    let mut compared = 0;
    let mut names: Vec<_> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    for name in names {
        let path = fixture(&name);
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let run = |format: &str| -> serde_json::Value {
            let out = bin()
                .current_dir(fixtures())
                .args(["check", "--no-config", "--format", format, &name])
                .output()
                .unwrap();
            serde_json::from_slice(&out.stdout).unwrap()
        };
        let json = run("json");
        let rd = run("rdjson");
        let json_d = json["diagnostics"].as_array().unwrap();
        let rd_d = rd["diagnostics"].as_array().unwrap();
        assert_eq!(json_d.len(), rd_d.len(), "{name}");
        let mut all: Vec<(usize, usize, String)> = Vec::new();
        for (j, r) in json_d.iter().zip(rd_d) {
            assert_eq!(j["rule"], r["code"]["value"], "{name}");
            let edits: Vec<(usize, usize, String)> = j["fix"]["edits"]
                .as_array()
                .map(|es| {
                    es.iter()
                        .map(|e| {
                            assert_eq!(e["file"], name.as_str());
                            (
                                e["start"].as_u64().unwrap() as usize,
                                e["end"].as_u64().unwrap() as usize,
                                e["content"].as_str().unwrap().to_string(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            if j["fix"]["applicability"] != "safe" {
                // An unsafe fix is no suggestion, yet its edits are said.
                assert!(r["suggestions"].is_null(), "{name}: {r}");
                continue;
            }
            let suggested: Vec<(usize, usize, String)> = r["suggestions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    let at = |p: &serde_json::Value| {
                        byte_offset(
                            &text,
                            p["line"].as_u64().unwrap(),
                            p["column"].as_u64().unwrap(),
                        )
                    };
                    (
                        at(&s["range"]["start"]),
                        at(&s["range"]["end"]),
                        s["text"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            assert_eq!(edits, suggested, "{name}: {j:#}");
            for e in &edits {
                assert!(text.is_char_boundary(e.0) && text.is_char_boundary(e.1));
            }
            all.extend(edits);
            compared += 1;
        }
        // Applied bottom up (the edits of one file never overlap), they are `fix --stdout`'s
        // first round; a file that one round fixes prints exactly that.
        all.sort();
        all.dedup();
        if all.is_empty() || all.windows(2).any(|w| w[1].0 < w[0].1) {
            continue;
        }
        let mut fixed = text.clone();
        for (s, e, c) in all.iter().rev() {
            fixed.replace_range(*s..*e, c);
        }
        let again = bin()
            .args(["check", "--no-config", "--format", "json", "-"])
            .write_stdin(fixed.clone())
            .output()
            .unwrap();
        let again: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
        if again["summary"]["fixable"] == 0 {
            let out = bin()
                .current_dir(fixtures())
                .args(["fix", "--no-config", "--stdout", &name])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), fixed, "{name}");
        }
    }
    assert!(compared > 10, "{compared} safe fixes compared");
}
