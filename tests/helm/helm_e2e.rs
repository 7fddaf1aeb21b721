//! End-to-end runs with real Helm: Helm 3.18 (`--post-renderer <executable>`) and Helm 4.2
//! (`postrenderer/v1` plugin) over charts-fixtures/ack-ai-installer, and `helm lint` against the
//! chart's values.schema.json compared with `cgpu-lint check`.
//!
//! Helm is installed under target/tools by scripts/install-test-tools (scripts/test runs it
//! first). A missing Helm fails these tests: they are the proof that the post-renderer works.
//! Each Helm gets its own HELM_DATA_HOME/CONFIG/CACHE/PLUGINS: Helm 3 cannot read the Helm 4
//! plugin.yaml and complains on every command when it finds one in its plugin dir.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn chart() -> String {
    root()
        .join("charts-fixtures/ack-ai-installer")
        .to_string_lossy()
        .into_owned()
}

fn cgpu_lint() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_cgpu-lint"))
}

/// A Helm binary with its own homes in a temp dir.
struct Helm {
    version: u8,
    dir: tempfile::TempDir,
    path: String,
}

impl Helm {
    fn new(version: u8) -> Helm {
        common::helm::helm_bin(version);
        let dir = tempfile::tempdir().unwrap();
        common::helm::make_homes(dir.path());
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        // The binary on PATH as `cgpu-lint`, the way a user installs it.
        std::os::unix::fs::symlink(cgpu_lint(), dir.path().join("bin/cgpu-lint")).unwrap();
        if version == 4 {
            // `helm plugin install ./helm-plugin` would ignore HELM_PLUGINS (helm/helm#32646):
            // link the plugin dir in, as the README says.
            std::os::unix::fs::symlink(
                root().join("helm-plugin"),
                dir.path().join("data/plugins/cgpu-lint"),
            )
            .unwrap();
        }
        let path = format!(
            "{}:{}",
            dir.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Helm { version, dir, path }
    }

    fn run(&self, args: &[&str]) -> Output {
        common::helm::helm_command(self.version, self.dir.path())
            .args(args)
            .env("PATH", &self.path)
            .current_dir(root())
            .output()
            .expect("run helm")
    }

    fn template(&self, extra: &[&str]) -> Output {
        let chart = chart();
        let mut args = vec!["template", "r", chart.as_str()];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    fn report(&self) -> PathBuf {
        self.dir.path().join("cgpu-lint-report.txt")
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(o: &Output) -> String {
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

fn binary() -> String {
    cgpu_lint().to_string_lossy().into_owned()
}

// ---------- Helm 3 ----------

#[test]
fn helm3_post_render_passes_the_render_through_unchanged() {
    let h = Helm::new(3);
    let plain = ok(&h.template(&[]));
    let bin = binary();
    let post = ok(&h.template(&[
        "--post-renderer",
        &bin,
        "--post-renderer-args",
        "post-render",
    ]));
    assert_eq!(post, plain);
    assert_eq!(post.matches("value: \"1\"").count(), 2);
    // Helm 3 does not post-render hooks, but still prints them.
    assert!(post.contains("helm.sh/hook"));
}

#[test]
fn helm3_post_renderer_found_on_path_sets_policy() {
    let h = Helm::new(3);
    let out = ok(&h.template(&[
        "--post-renderer",
        "cgpu-lint",
        "--post-renderer-args",
        "post-render",
        "--post-renderer-args=--policy",
        "--post-renderer-args=3",
    ]));
    assert_eq!(out.matches("value: \"3\"").count(), 2, "{out}");
    assert!(!out.contains("value: \"1\""));
}

/// policy 9 is out of the schema's range, so Helm would refuse it before post-rendering:
/// --skip-schema-validation lets it reach cgpu-lint, whose stderr Helm 3 shows in its error.
#[test]
fn helm3_policy_9_with_skip_schema_validation_fails_with_our_rule_in_helms_error() {
    let h = Helm::new(3);
    let bin = binary();
    let o = h.template(&[
        "--skip-schema-validation",
        "--set",
        "cgpu.policy=9",
        "--post-renderer",
        &bin,
        "--post-renderer-args",
        "post-render",
    ]);
    assert_ne!(o.status.code(), Some(0));
    assert!(o.stdout.is_empty() || !text(&o.stdout).contains("kind: DaemonSet"));
    let err = text(&o.stderr);
    assert!(err.contains("error while running post render"), "{err}");
    assert!(err.contains("installer-policy-invalid"), "{err}");
}

/// With the schema on, policy 9 is Helm's own schema error; our post-renderer never runs.
#[test]
fn helm3_policy_9_is_rejected_by_the_chart_schema_before_post_rendering() {
    let h = Helm::new(3);
    let bin = binary();
    let o = h.template(&[
        "--set",
        "cgpu.policy=9",
        "--post-renderer",
        &bin,
        "--post-renderer-args",
        "post-render",
    ]);
    assert_ne!(o.status.code(), Some(0));
    let err = text(&o.stderr);
    assert!(
        err.contains("cgpu.policy: Must be less than or equal to 5"),
        "{err}"
    );
    assert!(!err.contains("installer-policy-invalid"));
}

/// A tag the schema allows (its pattern knows no versions) but our rules reject.
#[test]
fn helm3_schema_valid_old_tag_fails_in_the_post_renderer() {
    let h = Helm::new(3);
    let bin = binary();
    let o = h.template(&[
        "--set",
        "cgpu.tag=v1.0.3-2a1c3e9-aliyun",
        "--post-renderer",
        &bin,
        "--post-renderer-args",
        "post-render",
    ]);
    assert_ne!(o.status.code(), Some(0));
    let err = text(&o.stderr);
    assert!(err.contains("error[tag-too-old]"), "{err}");
}

// ---------- Helm 4 ----------

#[test]
fn helm4_plugin_is_valid_and_listed() {
    let h = Helm::new(4);
    let out = ok(&h.run(&["plugin", "list"]));
    let line = out
        .lines()
        .find(|l| l.starts_with("cgpu-lint"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("postrenderer/v1"), "{line}");
}

#[test]
fn helm4_plugin_passes_the_render_and_hooks_through_unchanged() {
    let h = Helm::new(4);
    let plain = ok(&h.template(&[]));
    let post = ok(&h.template(&["--post-renderer", "cgpu-lint"]));
    assert_eq!(post, plain);
    // Helm 4 post-renders hooks too; they come back, with their # Source: rebuilt from the
    // postrender-filename annotations we kept.
    assert!(post.contains("helm.sh/hook"));
    assert!(post.contains("# Source: ack-ai-installer/templates/hooks/check.yaml"));
    assert!(!post.contains("generated-by-postrender"));
}

#[test]
fn helm4_post_renderer_args_set_policy_3() {
    let h = Helm::new(4);
    let out = ok(&h.template(&[
        "--post-renderer",
        "cgpu-lint",
        "--post-renderer-args=--policy",
        "--post-renderer-args=3",
    ]));
    assert_eq!(out.matches("value: \"3\"").count(), 2, "{out}");
    assert!(!out.contains("value: \"1\""));
}

/// Helm 4 discards a plugin's stderr: the reason reaches the user through --report (and the
/// terminal, when there is one; none here).
#[test]
fn helm4_failed_render_reason_is_in_the_report_file() {
    let h = Helm::new(4);
    let report = h.report();
    let report_arg = format!("--post-renderer-args={}", report.display());
    let o = h.template(&[
        "--set",
        "cgpu.tag=v1.0.3-2a1c3e9-aliyun",
        "--post-renderer",
        "cgpu-lint",
        "--post-renderer-args=--report",
        &report_arg,
    ]);
    assert_ne!(o.status.code(), Some(0));
    let err = text(&o.stderr);
    assert!(
        err.contains("plugin \"cgpu-lint\" exited with error"),
        "{err}"
    );
    assert!(
        !err.contains("tag-too-old"),
        "Helm 4 started showing plugin stderr: {err}"
    );
    let r = std::fs::read_to_string(&report).expect("report written");
    assert!(r.contains("error[tag-too-old]"), "{r}");
    assert!(r.contains("render refused"));
}

/// policy 9 with the schema skipped: refused by us, reason in the report.
#[test]
fn helm4_policy_9_with_skip_schema_validation_is_refused_with_the_rule_in_the_report() {
    let h = Helm::new(4);
    let report = h.report();
    let report_arg = format!("--post-renderer-args={}", report.display());
    let o = h.template(&[
        "--skip-schema-validation",
        "--set",
        "cgpu.policy=9",
        "--post-renderer",
        "cgpu-lint",
        "--post-renderer-args=--report",
        &report_arg,
    ]);
    assert_ne!(o.status.code(), Some(0));
    let r = std::fs::read_to_string(&report).expect("report written");
    assert!(r.contains("installer-policy-invalid"), "{r}");
}

// ---------- helm lint with values.schema.json vs cgpu-lint check ----------

fn lint_fails(h: &Helm, values: &Path) -> bool {
    let chart = chart();
    let v = values.to_string_lossy().into_owned();
    let o = h.run(&["lint", &chart, "-f", &v]);
    o.status.code() != Some(0)
}

fn cgpu_lint_fails(values: &Path, extra: &[&str]) -> bool {
    let o = Command::new(cgpu_lint())
        .arg("check")
        .arg("--quiet")
        .args(extra)
        .arg(values)
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(2), "{}", text(&o.stderr));
    o.status.code() == Some(1)
}

#[test]
fn helm_lint_with_the_schema_and_cgpu_lint_agree_on_type_errors() {
    let fx = root().join("tests/fixtures");
    // (fixture, Helm's verdict = ours: fails)
    let cases = [
        ("values-invalid-policy-out-of-range.yaml", true),
        ("values-invalid-policy-non-integer.yaml", true),
        ("values-invalid-policy-name-string.yaml", true),
        ("values-invalid-image-pull-policy-case.yaml", true),
        ("values-invalid-enabled-and-checkregions-strings.yaml", true),
        ("values-invalid-nodeselector-not-a-map.yaml", true),
        ("values-warn-yaml11-scalars-nodeselector.yaml", true),
        ("values-valid-full-default.yaml", false),
        ("values-valid-policy-quoted-string.yaml", false),
        ("values-valid-finance-cluster.yaml", false),
        ("values-valid-merge-keys-and-boundary-tag.yaml", false),
        ("values-policy-change-target.yaml", false),
    ];
    let h3 = Helm::new(3);
    let h4 = Helm::new(4);
    for (f, fails) in cases {
        let p = fx.join(f);
        assert_eq!(lint_fails(&h3, &p), fails, "helm3 lint {f}");
        assert_eq!(lint_fails(&h4, &p), fails, "helm4 lint {f}");
        assert_eq!(cgpu_lint_fails(&p, &[]), fails, "cgpu-lint check {f}");
    }
    // A typo'd key: additionalProperties=false makes it a Helm error; for us it is an
    // unknown-key warning (with a suggestion), so they agree under --deny-warnings.
    let typo = fx.join("values-warn-unknown-keys-typo.yaml");
    assert!(lint_fails(&h3, &typo) && lint_fails(&h4, &typo));
    assert!(!cgpu_lint_fails(&typo, &[]));
    assert!(cgpu_lint_fails(
        &typo,
        &["--deny-warnings", "--ignore", "tag-known-deadlock"]
    ));
}

/// Where a schema cannot see the problem, only cgpu-lint fails: versions and duplicate keys.
#[test]
fn helm_lint_passes_what_only_cgpu_lint_can_see() {
    let fx = root().join("tests/fixtures");
    let h3 = Helm::new(3);
    for f in [
        "values-invalid-tag-too-old.yaml",
        "values-invalid-duplicate-keys.yaml",
    ] {
        let p = fx.join(f);
        assert!(!lint_fails(&h3, &p), "helm3 lint {f}");
        assert!(cgpu_lint_fails(&p, &[]), "cgpu-lint {f}");
    }
}

#[test]
fn chart_schema_is_our_schema() {
    let ours = std::fs::read(root().join("schemas/ack-ai-installer-values.schema.json")).unwrap();
    let chart =
        std::fs::read(root().join("charts-fixtures/ack-ai-installer/values.schema.json")).unwrap();
    assert!(
        ours == chart,
        "charts-fixtures/ack-ai-installer/values.schema.json differs from schemas/: copy it again"
    );
}

/// Line numbers: YAML's line breaks are `\n`, `\r\n` and a lone `\r`, and Helm's parse errors
/// count them so (go-yaml). For files Helm refuses, the line in Helm's `yaml: line N:` is the
/// line `cgpu-lint check` reports, whichever break the file uses.
#[test]
fn helm_and_cgpu_lint_name_the_same_line_whatever_the_line_break() {
    let h = Helm::new(3);
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        "cgpu:{br}  enabled: true{br}  policy: [1{br}",
        "# comment{br}cgpu:{br}  enabled: true{br}  tag: @x{br}",
        // A tab where indentation is expected: the parser meets it while scanning `true`, which
        // could continue on the next line; Helm, and cgpu-lint, point at the tab's line.
        "cgpu:{br}  enabled: true{br}\tpolicy: 1{br}",
        "cgpu:{br}  enabled: true{br}  \tpolicy: 1{br}",
    ];
    for (i, case) in cases.iter().enumerate() {
        for br in ["\n", "\r\n", "\r"] {
            let path = dir.path().join(format!("v{i}-{}.yaml", br.len()));
            std::fs::write(&path, case.replace("{br}", br)).unwrap();
            let p = path.to_string_lossy().into_owned();
            let o = h.template(&["-f", &p]);
            let err = text(&o.stderr);
            let helm_line: usize = err
                .split("yaml: line ")
                .nth(1)
                .and_then(|r| r.split(':').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("Helm accepted or gave no line: {err}"));
            let o = Command::new(cgpu_lint())
                .args(["check", "--no-config", "--format", "json", &p])
                .output()
                .unwrap();
            let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            let ours = report["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["rule"] == "yaml-syntax")
                .unwrap_or_else(|| panic!("no yaml-syntax: {report:#}"));
            assert_eq!(
                ours["line"].as_u64(),
                Some(helm_line as u64),
                "case {i}, break {br:?}: Helm says {err}; cgpu-lint {ours:#}"
            );
        }
    }
}
