//! The pre-commit hooks of .pre-commit-hooks.yaml, run end to end by real pre-commit (installed
//! into target/venv by scripts/install-test-tools; a missing pre-commit fails the test).
//!
//! pre-commit clones the hook repository at a commit and builds the hook with
//! `cargo install --path .`, a release build. A working tree with uncommitted changes is not a
//! commit, so the test first commits a snapshot of the working tree (tracked and new files, minus
//! what .gitignore excludes) into a repository under target/tmp: what is tested is exactly the
//! checkout, committed or not (in CI the two are the same).
//!
//! Each run is `pre-commit run HOOK --files values.yaml -c CONFIG` in a fresh git repository,
//! CONFIG naming the snapshot and its commit: what `pre-commit try-repo` does, except that
//! try-repo installs the hook anew in a throwaway store on every call, a build of this crate
//! each time. Here the snapshot is one for the whole binary and so is the store,
//! target/tmp/precommit-run/store (PRE_COMMIT_HOME, which also keeps pre-commit's files out of
//! the user's home; emptied when the next run starts), so both hooks run from one install
//! (pre-commit locks its store while it installs). The build uses the cheap release profile and the target dir shared with the
//! README's pre-commit block (`common::hook_build_env`): only the first build of a target dir
//! compiles the dependencies.

use crate::common::{self, show};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn pre_commit() -> PathBuf {
    let p = root().join("target/venv/bin/pre-commit");
    assert!(
        p.exists(),
        "{} is missing: run scripts/install-test-tools",
        p.display()
    );
    p
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A fresh git repository holding `values.yaml` with `content`.
fn repo_with(content: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("cgpu-lint-precommit")
        .tempdir()
        .unwrap();
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["config", "user.email", "test@example.com"]);
    git(dir.path(), &["config", "user.name", "test"]);
    std::fs::write(dir.path().join("values.yaml"), content).unwrap();
    git(dir.path(), &["add", "values.yaml"]);
    dir
}

/// This repository's working tree, committed into a fresh repository under target/tmp.
fn snapshot_of_this_repo(tmp: &Path) -> tempfile::TempDir {
    let out = Command::new("git")
        .current_dir(root())
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output()
        .expect("git ls-files");
    assert!(out.status.success(), "git ls-files: {out:?}");
    let snap = tempfile::Builder::new()
        .prefix("cgpu-lint-snapshot")
        .tempdir_in(tmp)
        .unwrap();
    for name in out.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = String::from_utf8_lossy(name).into_owned();
        let from = root().join(&name);
        // A tracked file deleted in the working tree is not part of the snapshot.
        if from.is_file() {
            let to = snap.path().join(&name);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&from, &to).unwrap();
        }
    }
    git(snap.path(), &["init", "-q"]);
    git(snap.path(), &["add", "-A"]);
    git(
        snap.path(),
        &[
            "-c",
            "user.email=test@example.com",
            "-c",
            "user.name=test",
            "commit",
            "-q",
            "-m",
            "snapshot of the working tree",
        ],
    );
    snap
}

/// Where one run of this binary keeps the snapshot, the config files and pre-commit's store.
/// Statics are never dropped, so the directory is emptied when the next run starts instead.
fn run_dir() -> PathBuf {
    root().join("target/tmp/precommit-run")
}

/// The snapshot of this checkout the tests share, and a config file per hook naming it at its
/// commit (outside the test repositories, as try-repo writes its own).
fn this_repo() -> &'static (tempfile::TempDir, PathBuf) {
    static THIS: std::sync::OnceLock<(tempfile::TempDir, PathBuf)> = std::sync::OnceLock::new();
    THIS.get_or_init(|| {
        let _ = std::fs::remove_dir_all(run_dir());
        std::fs::create_dir_all(run_dir()).unwrap();
        let snap = snapshot_of_this_repo(&run_dir());
        let out = Command::new("git")
            .current_dir(snap.path())
            .args(["rev-parse", "HEAD"])
            .output()
            .expect("git rev-parse");
        assert!(out.status.success(), "git rev-parse: {out:?}");
        let rev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let configs = snap.path().with_extension("configs");
        std::fs::create_dir_all(&configs).unwrap();
        for hook in [
            "cgpu-lint",
            "cgpu-lint-fix",
            "cgpu-lint-gitops",
            "cgpu-lint-markdown",
        ] {
            std::fs::write(
                configs.join(format!("{hook}.yaml")),
                format!(
                    "repos:\n- repo: {}\n  rev: {rev}\n  hooks:\n  - id: {hook}\n",
                    snap.path().display()
                ),
            )
            .unwrap();
        }
        (snap, configs)
    })
}

/// `pre-commit run HOOK --files values.yaml` in `dir`, the hook from this checkout's snapshot.
fn run_hook(dir: &Path, hook: &str) -> Output {
    let config = this_repo().1.join(format!("{hook}.yaml"));
    let mut cmd = Command::new(pre_commit());
    cmd.current_dir(dir)
        .args(["run", hook, "-c", &config.to_string_lossy()])
        .args(["--files", "values.yaml", "--color", "never"])
        .env("PRE_COMMIT_HOME", run_dir().join("store"));
    common::hook_build_env(&mut cmd);
    cmd.output().expect("pre-commit runs")
}

const BAD: &str = "\
# ack-ai-installer values for the production GPU cluster
cgpu:
  enabled: true
  tag: v1.5.10-8d3fc1b-aliyun
  policy: 7        # there is no policy 7
";

const GOOD: &str = "\
# ack-ai-installer values for the production GPU cluster
cgpu:
  enabled: true
  tag: v1.5.10-8d3fc1b-aliyun
  policy: 2
";

const NOT_VALUES: &str = "\
# another chart's values: no cgpu block, skipped quietly
replicaCount: 2
";

/// One test for all check-hook runs.
#[test]
fn precommit_check_hook_fails_on_a_bad_file_and_passes_on_good_ones() {
    let bad = repo_with(BAD);
    let out = run_hook(bad.path(), "cgpu-lint");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Failed"), "{}", show(&out));
    assert!(stdout.contains("policy-out-of-range"), "{}", show(&out));

    let good = repo_with(GOOD);
    let out = run_hook(good.path(), "cgpu-lint");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Passed"));

    let other = repo_with(NOT_VALUES);
    let out = run_hook(other.path(), "cgpu-lint");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}

#[test]
fn precommit_fix_hook_rewrites_then_passes() {
    let fixable = "\
cgpu:
  tag: v1.5.10-8d3fc1b-aliyun
  imagePullPolicy: always   # fix corrects the case
  policy: \"2\"
";
    let dir = repo_with(fixable);
    let out = run_hook(dir.path(), "cgpu-lint-fix");
    // pre-commit's convention: a hook that changed a file fails.
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let fixed = std::fs::read_to_string(dir.path().join("values.yaml")).unwrap();
    assert!(
        fixed.contains("imagePullPolicy: Always   # fix corrects the case"),
        "{fixed}"
    );
    assert!(fixed.contains("policy: 2\n"), "{fixed}");
    git(dir.path(), &["add", "values.yaml"]);
    let out = run_hook(dir.path(), "cgpu-lint-fix");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("values.yaml")).unwrap(),
        fixed
    );
}

/// pre-commit accepts the manifest, and its `files` pattern (a Python regex, so checked with
/// Python's `re`) takes the usual values-file names and leaves other YAML alone.
#[test]
fn precommit_manifest_is_valid_and_picks_values_files() {
    let manifest = root().join(".pre-commit-hooks.yaml");
    let out = Command::new(pre_commit())
        .arg("validate-manifest")
        .arg(&manifest)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let script = r#"
import re, sys, yaml
hooks = {h["id"]: h for h in yaml.safe_load(open(sys.argv[1]))}
assert set(hooks) == {"cgpu-lint", "cgpu-lint-fix", "cgpu-lint-gitops", "cgpu-lint-markdown"}, hooks
assert hooks["cgpu-lint"]["entry"] == "cgpu-lint check"
assert hooks["cgpu-lint-fix"]["entry"] == "cgpu-lint fix"
assert hooks["cgpu-lint-gitops"]["entry"] == "cgpu-lint check --gitops"
assert hooks["cgpu-lint-markdown"]["entry"] == "cgpu-lint check"
assert "files" not in hooks["cgpu-lint-gitops"], "the GitOps hook selects by content"
assert "files" not in hooks["cgpu-lint-markdown"], "every Markdown file: blocks are found by content"
assert hooks["cgpu-lint-gitops"]["require_serial"] is True, "one run sees every file"
for id, h in hooks.items():
    types = ["markdown"] if id == "cgpu-lint-markdown" else ["yaml"]
    assert h["language"] == "rust" and h["types"] == types, h
for id in ("cgpu-lint", "cgpu-lint-fix"):
    assert hooks[id]["files"] == hooks["cgpu-lint"]["files"]
files = re.compile(hooks["cgpu-lint"]["files"])
yes = ["values.yaml", "values-prod.yaml", "values.prod.yml", "prod-values.yaml",
       "charts/ack/prod_values.yml", "values/prod.yaml", "deploy/values/eu/a.yaml",
       "cgpu-installer.yaml", "k8s/ack-ai-installer.yaml"]
no = ["values.json", "docker-compose.yaml", ".github/workflows/ci.yml", "myvaluesx.yaml",
      "values.yaml.bak", "chart/templates/deployment.yaml"]
bad = [f for f in yes if not files.search(f)] + [f for f in no if files.search(f)]
assert not bad, bad
"#;
    let out = Command::new(root().join("target/venv/bin/python"))
        .args(["-c", script])
        .arg(&manifest)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
}

/// Copy a fixture tree into `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// The GitOps hook, run by real pre-commit with `--all-files` on a repository holding every form
/// (tests/fixtures/gitops-forms: Argo CD Applications with parameters and valueFiles, an
/// ApplicationSet, a helmfile with set:/setString: and a values file, a kustomization with
/// helmCharts, a Flux HelmRelease whose valuesFrom objects are in other files), under names the
/// first hook's pattern does not take, beside YAML of other tools: it finds the releases by
/// content and fails on the classic mistakes in each form, at their line.
#[test]
fn precommit_gitops_hook_finds_every_form_by_content() {
    let dir = tempfile::Builder::new()
        .prefix("cgpu-lint-precommit-gitops")
        .tempdir()
        .unwrap();
    git(dir.path(), &["init", "-q"]);
    copy_tree(
        &root().join("tests/fixtures/gitops-forms"),
        &dir.path().join("deploy"),
    );
    std::fs::write(
        dir.path().join("docker-compose.yml"),
        "services:\n  web:\n    image: nginx\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join(".github/workflows")).unwrap();
    std::fs::write(
        dir.path().join(".github/workflows/ci.yml"),
        "on: push\njobs: {}\n",
    )
    .unwrap();
    git(dir.path(), &["add", "-A"]);
    let config = this_repo().1.join("cgpu-lint-gitops.yaml");
    let mut cmd = Command::new(pre_commit());
    cmd.current_dir(dir.path())
        .args(["run", "cgpu-lint-gitops", "-c", &config.to_string_lossy()])
        .args(["--all-files", "--color", "never"])
        .env("PRE_COMMIT_HOME", run_dir().join("store"));
    common::hook_build_env(&mut cmd);
    let out = cmd.output().expect("pre-commit runs");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Each form's classic mistake, at its file and line (from the fixtures' bytes).
    let at = |file: &str, after: &[&str], needle: &str| -> String {
        let text =
            std::fs::read_to_string(root().join("tests/fixtures/gitops-forms").join(file)).unwrap();
        let mut from = 0;
        for a in after {
            from += text[from..].find(a).unwrap() + a.len();
        }
        let offset = from + text[from..].find(needle).unwrap();
        let line = text[..offset].matches('\n').count() + 1;
        let col = offset - text[..offset].rfind('\n').map_or(0, |i| i + 1) + 1;
        format!("deploy/{file}:{line}:{col}: ")
    };
    for (file, after, needle, rule) in [
        (
            "application-parameters.yaml",
            &["name: cgpu.enabled", "value: "][..],
            "\"false\"",
            "string-boolean",
        ),
        (
            "application-parameters.yaml",
            &["name: cgpu.tag", "value: "][..],
            "latest",
            "tag-invalid",
        ),
        (
            "helmfile.yaml",
            &["- name: gpu\n", "set:", "value: "][..],
            "7",
            "policy-out-of-range",
        ),
        ("values/gpu.yaml", &["tag: "][..], "1.0.5", "tag-too-old"),
        (
            "applicationset.yaml",
            &["values: |", "policy: "][..],
            "7",
            "policy-out-of-range",
        ),
        (
            "kustomize/kustomization.yaml",
            &["name: ack-ai-installer", "enabled: "][..],
            "\"false\"",
            "string-boolean",
        ),
        (
            "flux/configmaps.yaml",
            &["policy: "][..],
            "7",
            "policy-out-of-range",
        ),
        (
            "flux/secret.yaml",
            &["gpu.yaml: "][..],
            "Y2dwdT",
            "string-boolean",
        ),
    ] {
        let place = at(file, after, needle);
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&place) && l.contains(rule)),
            "{rule} at {place}: {}",
            show(&out)
        );
    }
    // The other tools' YAML is not named.
    assert!(!stdout.contains("docker-compose"), "{}", show(&out));
    assert!(!stdout.contains("ci.yml"), "{}", show(&out));
}

/// The Markdown hook: real pre-commit hands it the repository's Markdown files (`types:
/// [markdown]`), a runbook's copied `cgpu:` block with a mistake fails the commit at its line in
/// the .md, other Markdown passes, and YAML files are not its business.
#[test]
fn precommit_markdown_hook_checks_the_blocks_of_runbooks() {
    let dir = repo_with(BAD);
    let runbook = "# Switching the GPU-sharing policy\n\nCopy this into the values file:\n\n```yaml\ncgpu:\n  enabled: \"false\"\n  policy: 2\n```\n";
    std::fs::create_dir_all(dir.path().join("docs")).unwrap();
    std::fs::write(dir.path().join("docs/runbook.md"), runbook).unwrap();
    std::fs::write(
        dir.path().join("README.md"),
        "# Platform\n\nNothing about GPUs.\n",
    )
    .unwrap();
    git(dir.path(), &["add", "-A"]);
    let config = this_repo().1.join("cgpu-lint-markdown.yaml");
    let run = |dir: &Path| {
        let mut cmd = Command::new(pre_commit());
        cmd.current_dir(dir)
            .args(["run", "cgpu-lint-markdown", "-c", &config.to_string_lossy()])
            .args(["--all-files", "--color", "never"])
            .env("PRE_COMMIT_HOME", run_dir().join("store"));
        common::hook_build_env(&mut cmd);
        cmd.output().expect("pre-commit runs")
    };
    let out = run(dir.path());
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Line 7, column 12 of the .md: `"false"` (from the bytes above).
    let offset = runbook.find("\"false\"").unwrap();
    let line = runbook[..offset].matches('\n').count() + 1;
    let col = offset - runbook[..offset].rfind('\n').unwrap();
    assert!(
        stdout.contains(&format!(
            "docs/runbook.md:{line}:{col}: error[string-boolean]"
        )),
        "{}",
        show(&out)
    );
    // The values file's policy 7 is the YAML hook's: not reported here.
    assert!(!stdout.contains("policy-out-of-range"), "{}", show(&out));

    let fixed = runbook.replace("\"false\"", "false");
    std::fs::write(dir.path().join("docs/runbook.md"), fixed).unwrap();
    git(dir.path(), &["add", "-A"]);
    let out = run(dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}
