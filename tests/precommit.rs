//! The pre-commit hooks of .pre-commit-hooks.yaml, run end to end by real pre-commit (installed
//! into target/venv by scripts/install-test-tools; a missing pre-commit fails the test).
//!
//! `pre-commit try-repo REPO` clones REPO at HEAD and builds the hook with
//! `cargo install --path .`, a release build. On a working tree with uncommitted changes it adds
//! modified tracked files but not new ones, which would test a half-committed crate; so the test
//! first commits a snapshot of the working tree (tracked and new files, minus what .gitignore
//! excludes) into a repository under target/tmp and runs try-repo on that: what is tested is
//! exactly the checkout, committed or not (in CI the two are the same).
//!
//! try-repo keeps its store in a throwaway directory, so the build is cached through
//! CARGO_TARGET_DIR (target/pre-commit-target) instead: only the first run builds the
//! dependencies (minutes); later runs rebuild just this crate. PRE_COMMIT_HOME
//! (target/pre-commit-home) keeps pre-commit's own files out of the user's home.

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
fn snapshot_of_this_repo() -> tempfile::TempDir {
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
    let tmp = root().join("target/tmp");
    std::fs::create_dir_all(&tmp).unwrap();
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

/// `pre-commit try-repo REPO HOOK --files values.yaml` in `dir`.
fn try_repo(repo: &Path, dir: &Path, hook: &str) -> Output {
    Command::new(pre_commit())
        .current_dir(dir)
        .args(["try-repo", &repo.to_string_lossy(), hook])
        .args(["--files", "values.yaml", "--color", "never"])
        .env("PRE_COMMIT_HOME", root().join("target/pre-commit-home"))
        .env("CARGO_TARGET_DIR", root().join("target/pre-commit-target"))
        // Keep the nested cargo from inheriting this test run's cargo settings.
        .env_remove("CARGO_MAKEFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .expect("pre-commit runs")
}

fn show(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
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

/// One test for all check-hook runs: they share the (slow, first-time) build.
#[test]
fn precommit_check_hook_fails_on_a_bad_file_and_passes_on_good_ones() {
    let this = snapshot_of_this_repo();
    let bad = repo_with(BAD);
    let out = try_repo(this.path(), bad.path(), "cgpu-lint");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Failed"), "{}", show(&out));
    assert!(stdout.contains("policy-out-of-range"), "{}", show(&out));

    let good = repo_with(GOOD);
    let out = try_repo(this.path(), good.path(), "cgpu-lint");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Passed"));

    let other = repo_with(NOT_VALUES);
    let out = try_repo(this.path(), other.path(), "cgpu-lint");
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
    let this = snapshot_of_this_repo();
    let dir = repo_with(fixable);
    let out = try_repo(this.path(), dir.path(), "cgpu-lint-fix");
    // pre-commit's convention: a hook that changed a file fails.
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let fixed = std::fs::read_to_string(dir.path().join("values.yaml")).unwrap();
    assert!(
        fixed.contains("imagePullPolicy: Always   # fix corrects the case"),
        "{fixed}"
    );
    assert!(fixed.contains("policy: 2\n"), "{fixed}");
    git(dir.path(), &["add", "values.yaml"]);
    let out = try_repo(this.path(), dir.path(), "cgpu-lint-fix");
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
assert set(hooks) == {"cgpu-lint", "cgpu-lint-fix"}, hooks
assert hooks["cgpu-lint"]["entry"] == "cgpu-lint check"
assert hooks["cgpu-lint-fix"]["entry"] == "cgpu-lint fix"
for h in hooks.values():
    assert h["language"] == "rust" and h["types"] == ["yaml"], h
    assert h["files"] == hooks["cgpu-lint"]["files"]
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
