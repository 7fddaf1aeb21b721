//! CI integration: `.cgpu-lint.toml` (discovery, per-file ignores, unknown keys), inline
//! suppressions and `unused-ignore`, and the directory walk (.gitignore, symlinks, stable order).

use crate::common::*;

use std::path::Path;

const KP_157: &str = "\
# values pinned to the last release before the deadlock fix
cgpu:
  enabled: true
  tag: v1.5.7-8d3fc1b-aliyun
  policy: 1
";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `check --format json ARGS` run in `dir`.
fn check_in(dir: &Path, args: &[&str]) -> Run {
    let out = bin()
        .current_dir(dir)
        .args(["check", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        json: serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        }),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn files_of(run: &Run) -> Vec<String> {
    run.diagnostics()
        .iter()
        .map(|d| d["file"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn config_is_discovered_from_a_subfolder() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".cgpu-lint.toml"),
        "deny-warnings = true\nignore = [\"policy-weight-hint\"]\n",
    );
    write(&dir.path().join("clusters/prod/values.yaml"), KP_157);
    let sub = dir.path().join("clusters/prod");
    // The warning fails the run only because the config (two folders up) says deny-warnings.
    let run = check_in(&sub, &["values.yaml"]);
    expect_rules(&run, &[("tag-known-deadlock", 1)]);
    assert_eq!(run.code, 1, "{:#}", run.json);
    // --no-config skips it.
    let run = check_in(&sub, &["--no-config", "values.yaml"]);
    assert_eq!(run.code, 0);
}

#[test]
fn config_format_applies_unless_format_is_given() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join(".cgpu-lint.toml"), "format = \"github\"\n");
    write(&dir.path().join("values.yaml"), KP_157);
    let out = bin()
        .current_dir(dir.path())
        .args(["check", "values.yaml"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("::warning file=values.yaml,line=4,"),
        "{text}"
    );
    // An explicit --format wins over the file.
    let run = check_in(dir.path(), &["values.yaml"]);
    expect_rules(&run, &[("tag-known-deadlock", 1)]);
}

#[test]
fn explicit_config_file_and_region() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("ci/cgpu-lint.toml");
    write(&cfg, "select = [\"tag-known-deadlock\"]\n");
    write(&dir.path().join("values.yaml"), KP_157);
    let run = check_in(
        dir.path(),
        &["--config", &cfg.to_string_lossy(), "values.yaml"],
    );
    expect_rules(&run, &[("tag-known-deadlock", 1)]);
}

#[test]
fn per_file_ignores_apply_to_matching_paths_only() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".cgpu-lint.toml"),
        "[per-file-ignores]\n\"legacy/*.yaml\" = [\"tag-known-deadlock\"]\n",
    );
    write(&dir.path().join("legacy/old-values.yaml"), KP_157);
    write(&dir.path().join("current/values.yaml"), KP_157);
    let run = check_in(dir.path(), &["."]);
    assert_eq!(files_of(&run), vec!["./current/values.yaml"]);
    // Matched relative to the config file's folder, whatever the working directory.
    let run = check_in(&dir.path().join("legacy"), &["old-values.yaml"]);
    expect_rules(&run, &[]);
}

#[test]
fn unknown_config_key_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".cgpu-lint.toml"),
        "deny-warnings = true\nignroe = [\"image-name\"]\n",
    );
    write(&dir.path().join("values.yaml"), KP_157);
    let out = bin()
        .current_dir(dir.path())
        .args(["check", "values.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(".cgpu-lint.toml"), "{err}");
    assert!(err.contains("unknown field `ignroe`"), "{err}");
}

#[test]
fn unknown_rule_in_config_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".cgpu-lint.toml"),
        "[per-file-ignores]\n\"*.yaml\" = [\"tag-deadlock\"]\n",
    );
    let out = bin()
        .current_dir(dir.path())
        .args(["check", "."])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown rule `tag-deadlock`"));
}

#[test]
fn inline_ignore_on_the_line_and_on_the_line_above() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("values.yaml"),
        "\
cgpu:
  # the mirror keeps the old tag until the change window, see OPS-1234
  # cgpu-lint: ignore[tag-known-deadlock]
  tag: v1.5.7-8d3fc1b-aliyun
  imagePullPolicy: always  # cgpu-lint: ignore[pull-policy]
  policy: 9
",
    );
    let run = check_in(dir.path(), &["values.yaml"]);
    expect_rules(&run, &[("policy-out-of-range", 1)]);
}

#[test]
fn an_ignore_that_suppresses_nothing_is_unused_ignore() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("values.yaml"),
        "\
cgpu:
  tag: v1.5.10-8d3fc1b-aliyun  # cgpu-lint: ignore[tag-known-deadlock]
  policy: 1
",
    );
    let run = check_in(dir.path(), &["values.yaml"]);
    expect_rules(&run, &[("unused-ignore", 1)]);
    let d = run.find("unused-ignore")[0];
    assert_eq!(d["severity"], "info");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(2), Some(52))
    );
    // Info never fails the run, not even with --deny-warnings.
    assert_eq!(run.code, 0);
    let run = check_in(dir.path(), &["--deny-warnings", "values.yaml"]);
    assert_eq!(run.code, 0);
    let run = check_in(dir.path(), &["--ignore", "unused-ignore", "values.yaml"]);
    expect_rules(&run, &[]);
}

#[test]
fn ignore_file_suppresses_every_finding() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("values.yaml"),
        "# cgpu-lint: ignore-file\ncgpu:\n  policy: 9\n  tag: latest\n",
    );
    let run = check_in(dir.path(), &["values.yaml"]);
    expect_rules(&run, &[]);
    assert_eq!(run.code, 0);
}

#[test]
fn directory_walk_skips_gitignored_folders_and_non_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(&root.join(".gitignore"), "rendered/\n*.generated.yaml\n");
    write(&root.join("rendered/values.yaml"), "cgpu:\n  policy: 9\n");
    write(&root.join("a.generated.yaml"), "cgpu:\n  policy: 9\n");
    write(&root.join("notes.txt"), "cgpu:\n  policy: 9\n");
    write(&root.join("b/values.yml"), "cgpu:\n  policy: 8\n");
    write(&root.join("a/values.yaml"), "cgpu:\n  policy: 7\n");
    let run = check_in(root, &["."]);
    assert_eq!(files_of(&run), vec!["./a/values.yaml", "./b/values.yml"]);
    assert_eq!(run.json["summary"]["files"], 2);
    // A file given by name is checked even when .gitignore lists it.
    let run = check_in(root, &["rendered/values.yaml"]);
    expect_rules(&run, &[("policy-out-of-range", 1)]);
}

#[cfg(unix)]
#[test]
fn directory_walk_does_not_follow_a_symlink_loop() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(&root.join("values/values.yaml"), "cgpu:\n  policy: 9\n");
    std::os::unix::fs::symlink(root, root.join("values/loop")).unwrap();
    let run = check_in(root, &["values"]);
    assert_eq!(files_of(&run), vec!["values/values.yaml"]);
}

#[test]
fn parallel_check_reports_in_a_stable_sorted_order() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for i in (0..24).rev() {
        write(
            &root.join(format!("c{:02}/values.yaml", i)),
            "cgpu:\n  policy: 9\n  imagePullPolicy: always\n  tag: latest\n",
        );
    }
    let first = check_in(root, &["."]);
    let order: Vec<(String, u64)> = first
        .diagnostics()
        .iter()
        .map(|d| {
            (
                d["file"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted);
    assert_eq!(order.len(), 24 * 3);
    for _ in 0..3 {
        assert_eq!(check_in(root, &["."]).json, first.json);
    }
}

/// The examples of a config file and of suppressions (docs/configuration.md) work as it says.
#[test]
fn readme_config_and_suppression_examples_work() {
    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/configuration.md"
    ))
    .unwrap();
    let block = |section: &str, lang: &str| {
        let at = readme.find(section).expect(section);
        let start = at + readme[at..].find(&format!("```{lang}\n")).unwrap() + lang.len() + 4;
        let end = start + readme[start..].find("```").unwrap();
        readme[start..end].to_string()
    };
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("cfg.toml"),
        &block("\n## Configuration\n", "toml"),
    );
    write(
        &dir.path().join("values.yaml"),
        &block("\n## Suppressing findings\n", "yaml"),
    );
    let run = check_in(dir.path(), &["--config", "cfg.toml", "values.yaml"]);
    expect_rules(&run, &[]);
    assert_eq!(run.code, 0);
    let run = check_in(dir.path(), &["--no-config", "values.yaml"]);
    expect_rules(&run, &[]);
}

/// The CI jobs of docs/ci.md are valid GitHub workflow and GitLab CI files (checked with
/// check-jsonschema's vendored schemas, from target/venv: run scripts/install-test-tools).
#[cfg(feature = "tools")]
#[test]
fn readme_ci_jobs_match_the_github_and_gitlab_schemas() {
    let tool = venv_tool("check-jsonschema");
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/ci.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (section, schema, name) in [
        (
            "\n## GitHub Actions\n",
            "vendor.github-workflows",
            "cgpu-lint.yml",
        ),
        (
            "\n### From source\n",
            "vendor.github-workflows",
            "cgpu-lint-source.yml",
        ),
        ("\n## GitLab CI\n", "vendor.gitlab-ci", ".gitlab-ci.yml"),
        (
            "\n## reviewdog\n",
            "vendor.github-workflows",
            "cgpu-lint-reviewdog.yml",
        ),
        (
            "\n## Azure Pipelines\n",
            "vendor.azure-pipelines",
            "azure-pipelines.yml",
        ),
    ] {
        let at = readme.find(section).expect(section);
        let start = at + readme[at..].find("```yaml\n").unwrap() + 8;
        let end = start + readme[start..].find("```").unwrap();
        let file = dir.path().join(name);
        write(&file, &readme[start..end]);
        // Azure's schema holds patterns that are not valid ECMAScript in unicode mode.
        let regex = if schema == "vendor.azure-pipelines" {
            "nonunicode"
        } else {
            "default"
        };
        let out = std::process::Command::new(&tool)
            .args(["--regex-variant", regex, "--builtin-schema", schema])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{section}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A CI job of docs/ci.md as JSON (PyYAML from target/venv, installed with pre-commit).
#[cfg(feature = "tools")]
fn readme_job(section: &str) -> serde_json::Value {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/ci.md")).unwrap();
    let at = readme.find(section).expect(section);
    let start = at + readme[at..].find("```yaml\n").unwrap() + 8;
    let end = start + readme[start..].find("```").unwrap();
    let python =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/venv/bin/python");
    assert!(python.exists(), "run scripts/install-test-tools");
    let mut child = std::process::Command::new(python)
        .args([
            "-c",
            "import sys, yaml, json; print(json.dumps(yaml.safe_load(sys.stdin)))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&readme.as_bytes()[start..end])
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The shell variables a script uses (`$NAME`, `${NAME}`; not GitHub's `${{ … }}`).
#[cfg(feature = "tools")]
fn variables_of(script: &str) -> Vec<String> {
    let b = script.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' {
            let mut j = i + 1;
            if b.get(j) == Some(&b'{') {
                j += 1;
            }
            let s = j;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            if j > s && !b[s].is_ascii_digit() {
                out.push(script[s..j].to_string());
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(feature = "tools")]
fn run_script(dir: &Path, script: &str, env: &[(&str, String)]) -> std::process::Output {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = bin.join("cgpu-lint");
    if !link.exists() {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_cgpu-lint"), &link).unwrap();
    }
    let mut cmd = std::process::Command::new("bash");
    cmd.args(["-e", "-c", script]).current_dir(dir).env(
        "PATH",
        format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
    );
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// The GitHub job of docs/ci.md that builds from source: every variable its steps use is defined in the job, the SARIF step
/// reports `report=yes` whenever cgpu-lint wrote a report (findings, or a file it could not
/// read: an io-error result), and the annotation step fails with 1 on an error finding and 2
/// on an unreadable path.
#[cfg(feature = "tools")]
#[test]
fn readme_github_job_steps_run_as_written() {
    let job = &readme_job("\n### From source\n")["jobs"]["cgpu-lint"];
    let env: Vec<(String, String)> = job["env"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect();
    let steps = job["steps"].as_array().unwrap();
    let runs: Vec<&str> = steps.iter().filter_map(|s| s["run"].as_str()).collect();
    for script in &runs {
        for v in variables_of(script) {
            assert!(
                v == "GITHUB_OUTPUT" || env.iter().any(|(k, _)| *k == v),
                "${v} in `{script}` is not defined in the job's env"
            );
        }
    }
    // The resolve step gives the commit of the branch, for the cache key and `--rev`.
    let upstream = tempfile::tempdir().unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &[
            "-c",
            "user.email=a@b",
            "-c",
            "user.name=a",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
    ] {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(upstream.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    let rev_step = steps.iter().find(|s| s["id"] == "rev").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("github_output");
    let mut vars: Vec<(&str, String)> = env.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    vars.retain(|(k, _)| *k != "CGPU_LINT_GIT");
    vars.push((
        "CGPU_LINT_GIT",
        format!("file://{}", upstream.path().display()),
    ));
    vars.push(("GITHUB_OUTPUT", output.to_string_lossy().into_owned()));
    let out = run_script(dir.path(), rev_step["run"].as_str().unwrap(), &vars);
    assert!(out.status.success(), "{out:?}");
    let written = std::fs::read_to_string(&output).unwrap();
    let sha = written.trim().strip_prefix("sha=").expect("sha=…");
    assert!(
        sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
        "{written}"
    );
    let install = steps
        .iter()
        .filter_map(|s| s["run"].as_str())
        .find(|r| r.contains("cargo install"))
        .unwrap();
    assert!(
        install.contains("--rev \"${{ steps.rev.outputs.sha }}\""),
        "{install}"
    );
    let cache = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/cache"))
        })
        .unwrap();
    assert!(
        cache["with"]["key"]
            .as_str()
            .unwrap()
            .contains("steps.rev.outputs.sha")
    );
    // The checks run over the values files, not the whole repository (`check .` would give
    // every other YAML file a cgpu-missing info, as annotations and SARIF notes).
    for script in runs.iter().filter(|r| r.contains("cgpu-lint check")) {
        for line in script.lines().filter(|l| l.contains("cgpu-lint check")) {
            assert!(line.contains(" $VALUES"), "{line}");
            assert!(!line.contains(" . "), "{line}");
        }
    }
    let sarif_step = steps.iter().find(|s| s["id"] == "sarif").unwrap();
    let upload = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.contains("upload-sarif"))
        })
        .unwrap();
    assert_eq!(upload["if"], "steps.sarif.outputs.report == 'yes'");
    let annotate = runs.last().unwrap();
    for (values, annotate_code) in [("values/", 1), ("no-such-folder/", 2)] {
        let dir = tempfile::tempdir().unwrap();
        write(
            &dir.path().join("values/values.yaml"),
            &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/values.yaml"))
                .unwrap(),
        );
        let output = dir.path().join("github_output");
        let mut vars: Vec<(&str, String)> =
            env.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        vars.retain(|(k, _)| *k != "VALUES");
        vars.push(("VALUES", values.to_string()));
        vars.push(("GITHUB_OUTPUT", output.to_string_lossy().into_owned()));
        let out = run_script(dir.path(), sarif_step["run"].as_str().unwrap(), &vars);
        assert!(out.status.success(), "{out:?}");
        assert!(
            std::fs::read_to_string(&output)
                .unwrap()
                .contains("report=yes")
        );
        let sarif: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("cgpu-lint.sarif")).unwrap(),
        )
        .unwrap();
        assert!(!sarif["runs"][0]["results"].as_array().unwrap().is_empty());
        let out = run_script(dir.path(), annotate, &vars);
        assert_eq!(out.status.code(), Some(annotate_code), "{values}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("::error file="));
    }
}

/// The GitLab job of docs/ci.md defines every variable its script uses (GitLab's own CI_* aside)
/// and its check line writes the Code Quality report it uploads, with the example's error.
#[cfg(feature = "tools")]
#[test]
fn readme_gitlab_job_runs_as_written() {
    let job = &readme_job("\n## GitLab CI\n")["cgpu-lint"];
    let vars = job["variables"].as_object().unwrap();
    let script: Vec<&str> = job["script"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    for line in &script {
        for v in variables_of(line) {
            assert!(
                v.starts_with("CI_") || vars.contains_key(&v),
                "${v} in `{line}` is not in the job's variables"
            );
        }
    }
    for v in vars.values() {
        for inner in variables_of(v.as_str().unwrap()) {
            assert!(inner.starts_with("CI_"), "{inner}");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("values/values.yaml"),
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/values.yaml"))
            .unwrap(),
    );
    // A stand-in `cargo` that records its arguments and "installs" this build into
    // $CARGO_HOME/bin, as `cargo install` does (or leaves it when up to date).
    let fake = dir.path().join("fake-bin");
    std::fs::create_dir_all(&fake).unwrap();
    write(
        &fake.join("cargo"),
        &format!(
            "#!/bin/sh\nmkdir -p \"$CARGO_HOME/bin\"\necho \"$@\" > \"$CARGO_HOME/cargo-args\"\nln -sf {} \"$CARGO_HOME/bin/cgpu-lint\"\n",
            env!("CARGO_BIN_EXE_cgpu-lint")
        ),
    );
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(fake.join("cargo"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let env: Vec<(&str, String)> = vars
        .iter()
        .map(|(k, v)| {
            (
                k.as_str(),
                v.as_str()
                    .unwrap()
                    .replace("$CI_PROJECT_DIR", &dir.path().to_string_lossy()),
            )
        })
        .collect();
    let mut env = env;
    env.push((
        "PATH",
        format!("{}:{}", fake.display(), std::env::var("PATH").unwrap()),
    ));
    let out = run_script(dir.path(), &script.join("\n"), &env);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let args = std::fs::read_to_string(dir.path().join(".cargo/cargo-args")).unwrap();
    assert_eq!(
        args.trim(),
        format!(
            "install --locked --git {} --branch {} cgpu-lint",
            vars["CGPU_LINT_GIT"].as_str().unwrap(),
            vars["CGPU_LINT_BRANCH"].as_str().unwrap()
        )
    );
    // What the job caches is where cargo installs and records what it installed.
    let paths: Vec<&str> = job["cache"]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [".cargo/bin/", ".cargo/.crates.toml", ".cargo/.crates2.json"]
    );
    assert_eq!(vars["CARGO_HOME"], "$CI_PROJECT_DIR/.cargo");
    // The report the job uploads is the one its script writes, and it holds the example's error.
    let report = job["artifacts"]["reports"]["codequality"].as_str().unwrap();
    let issues: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(report)).unwrap()).unwrap();
    assert!(
        issues
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["severity"] == "major" && i["location"]["path"] == "values/values.yaml"),
        "{issues:#}"
    );
}

// ---- check --show-settings and --show-files ----

/// A repository with a config (ignore, per-file-ignores by path and by name, [fix]) and values
/// files whose findings the settings hide or keep.
fn settings_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(
        &p.join(".cgpu-lint.toml"),
        "# team settings\nignore = [\"image-name\"]\n\n[per-file-ignores]\n\"legacy/*.yaml\" = [\"string-boolean\", \"tag-known-deadlock\"]\n\"*-sandbox.yaml\" = [\"all\"]\n\n[fix]\nextend-safe = [\"string-boolean\"]\n",
    );
    let text = "cgpu:\n  enabled: \"false\"\n  image: mirror/cgpu-installer\n  tag: v1.5.7-8d3fc1b-aliyun\n  imagePullPolicy: always\n  policy: 9\n";
    for f in [
        "legacy/a.yaml",
        "b.yaml",
        "team/c-sandbox.yaml",
        "team/d.yaml",
    ] {
        write(&p.join(f), text);
    }
    dir
}

fn rules_of(run: &Run) -> std::collections::BTreeSet<String> {
    run.diagnostics()
        .iter()
        .map(|d| d["rule"].as_str().unwrap().to_string())
        .collect()
}

// What --show-settings says is not reported in a file is what check does not report there, and
// every other rule that fires on the file is reported: for each file and several flag sets
// (the config alone, --ignore and --select added, --no-config).
#[test]
fn show_settings_agrees_with_what_check_reports_on_the_file() {
    let dir = settings_repo();
    let p = dir.path();
    let flag_sets: [&[&str]; 4] = [
        &[],
        &["--ignore", "pull-policy"],
        &["--select", "string-boolean,policy-out-of-range,image-name"],
        &["--no-config"],
    ];
    let mut hidden_somewhere = 0;
    for file in [
        "legacy/a.yaml",
        "b.yaml",
        "team/c-sandbox.yaml",
        "team/d.yaml",
    ] {
        // Every rule that fires on the file, with no settings at all.
        let all = rules_of(&check_in(p, &["--no-config", file]));
        assert!(
            all.contains("string-boolean") && all.contains("image-name"),
            "{all:?}"
        );
        for flags in flag_sets {
            let mut args = flags.to_vec();
            args.extend(["--show-settings", file]);
            let shown = check_in(p, &args);
            assert_eq!(shown.code, 0, "{}", shown.stderr);
            let hidden: std::collections::BTreeSet<String> =
                shown.json["settings"]["rules-not-reported"]["value"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_string())
                    .collect();
            let mut args = flags.to_vec();
            args.push(file);
            let reported = rules_of(&check_in(p, &args));
            for r in &reported {
                assert!(
                    !hidden.contains(r),
                    "{file} {flags:?}: {r} shown as hidden, reported"
                );
            }
            for r in all.difference(&hidden) {
                assert!(
                    reported.contains(r),
                    "{file} {flags:?}: {r} not hidden, not reported"
                );
            }
            hidden_somewhere += all.intersection(&hidden).count();
        }
    }
    assert!(
        hidden_somewhere >= 10,
        "the settings hid {hidden_somewhere} rules"
    );
}

#[test]
fn show_settings_names_where_each_setting_came_from() {
    let dir = settings_repo();
    let p = dir.path();
    let run = check_in(
        p,
        &[
            "--region",
            "cn-hangzhou",
            "--show-settings",
            "legacy/a.yaml",
        ],
    );
    let s = &run.json["settings"];
    assert_eq!(s["config-file"]["value"], ".cgpu-lint.toml");
    // The config's lines: `ignore` is on line 2, the legacy pattern on 5, extend-safe on 9.
    assert_eq!(
        s["ignore"]["origin"],
        serde_json::json!([".cgpu-lint.toml:2"])
    );
    assert_eq!(
        s["per-file-ignores"]["value"],
        serde_json::json!({"legacy/*.yaml": ["string-boolean", "tag-known-deadlock"]})
    );
    assert_eq!(
        s["per-file-ignores"]["origin"],
        serde_json::json!([".cgpu-lint.toml:5"])
    );
    assert_eq!(
        s["fix.extend-safe"]["origin"],
        serde_json::json!([".cgpu-lint.toml:9"])
    );
    assert_eq!(s["region"]["value"], "cn-hangzhou");
    assert_eq!(s["region"]["origin"], serde_json::json!(["--region"]));
    assert_eq!(s["deny-warnings"]["origin"], serde_json::json!(["default"]));
    assert_eq!(s["format"]["origin"], serde_json::json!(["--format"]));
    // --ignore adds to the file's list: both are named.
    let run = check_in(p, &["--ignore", "pull-policy", "--show-settings", "b.yaml"]);
    assert_eq!(
        run.json["settings"]["ignore"]["origin"],
        serde_json::json!(["--ignore", ".cgpu-lint.toml:2"])
    );
    // A config named with --config.
    std::fs::rename(p.join(".cgpu-lint.toml"), p.join("team.toml")).unwrap();
    let run = check_in(p, &["--config", "team.toml", "--show-settings", "b.yaml"]);
    assert_eq!(
        run.json["settings"]["config-file"]["origin"],
        serde_json::json!(["named by --config"])
    );
    assert_eq!(
        run.json["settings"]["ignore"]["origin"],
        serde_json::json!(["team.toml:2"])
    );
    // The baseline: its file and how many of its entries are about this file.
    let out = bin()
        .current_dir(p)
        .args(["baseline", "--config", "team.toml", "b.yaml", "team/d.yaml"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.join(".cgpu-lint-baseline.json")).unwrap())
            .unwrap();
    let for_b = written["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["file"] == "b.yaml")
        .count();
    assert!(for_b >= 3, "{written:#}");
    let run = check_in(p, &["--config", "team.toml", "--show-settings", "b.yaml"]);
    assert_eq!(
        run.json["settings"]["baseline"]["value"]["entries_for_this_file"],
        for_b
    );
    // More than one path is refused.
    let out = bin()
        .current_dir(p)
        .args(["check", "--show-settings", "b.yaml", "team/d.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

// The settings of a path that is not there: an error naming it, exit 2 (a typo would otherwise
// show the defaults as if they applied).
#[test]
fn show_settings_of_a_missing_path_is_exit_2() {
    let dir = settings_repo();
    let out = bin()
        .current_dir(dir.path())
        .args(["check", "--show-settings", "no-such.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.trim_end(),
        "cgpu-lint: error: no-such.yaml: No such file or directory (os error 2)"
    );
}

// --show-files --gitops lists what the GitOps hook (`check --gitops`) checks: exactly the
// files whose findings it can report, the others skipped with why.
#[test]
fn show_files_with_gitops_lists_what_the_gitops_hook_checks() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let bad = "cgpu:\n  policy: 9\n";
    write(&p.join("values/a.yaml"), bad);
    write(
        &p.join("apps/gpu.yaml"),
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: gpu\nspec:\n  source:\n    chart: ack-ai-installer\n    repoURL: https://aliacs-app-catalog.oss-cn-hangzhou.aliyuncs.com/charts-incubator/\n    targetRevision: 1.12.6\n    helm:\n      valuesObject:\n        cgpu:\n          policy: 9\n",
    );
    write(
        &p.join("apps/other.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    );
    let shown = check_in(p, &["--show-files", "--gitops", "."]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let rows = shown.json["files"].as_array().unwrap();
    let checked: Vec<&str> = rows
        .iter()
        .filter(|r| r["checked"] == true)
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(checked, ["./apps/gpu.yaml"], "{rows:#?}");
    for skipped in ["./values/a.yaml", "./apps/other.yaml"] {
        let row = rows.iter().find(|r| r["path"] == skipped).unwrap();
        assert_eq!(row["checked"], false);
        assert!(
            row["reason"].as_str().unwrap().starts_with("--gitops: "),
            "{row}"
        );
    }
    // The hook itself: the same files, and the findings only there.
    let run = check_in(p, &["--gitops", "."]);
    assert_eq!(run.json["summary"]["files"], checked.len());
    assert!(
        run.diagnostics()
            .iter()
            .all(|d| d["file"] == "./apps/gpu.yaml"),
        "{:#}",
        run.json
    );
    // Without --gitops the walk checks all three.
    let all = check_in(p, &["--show-files", "."]);
    let n = all.json["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["checked"] == true)
        .count();
    assert_eq!(n, 3);
}

// --show-files lists what the walk checks (exactly the files check then reads) and what it
// skips, with the reason, from the same walk.
#[test]
fn show_files_lists_the_files_check_reads_and_why_others_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let bad = "cgpu:\n  policy: 9\n";
    write(&p.join(".gitignore"), "build/\n*.tmp.yaml\n");
    write(&p.join("values/a.yaml"), bad);
    write(&p.join("values/b.yml"), bad);
    write(&p.join("values/.hidden.yaml"), bad);
    write(&p.join("values/scratch.tmp.yaml"), bad);
    write(&p.join("build/out.yaml"), bad);
    write(&p.join("README.md"), "# x\n");
    write(&p.join("charts/gpu/Chart.yaml"), "name: gpu\n");
    write(&p.join("charts/gpu/values.yaml"), bad);
    write(
        &p.join("charts/gpu/templates/ds.yaml"),
        "x: {{ .Values }}\n",
    );
    std::os::unix::fs::symlink("a.yaml", p.join("values/link.yaml")).unwrap();
    let shown = check_in(p, &["--show-files", "."]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let rows = shown.json["files"].as_array().unwrap();
    let checked: std::collections::BTreeSet<String> = rows
        .iter()
        .filter(|r| r["checked"] == true)
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect();
    let reason = |path: &str| {
        rows.iter()
            .find(|r| r["path"] == path)
            .unwrap_or_else(|| panic!("{path} not listed: {rows:#?}"))["reason"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    assert!(reason("./build/").contains(".gitignore"));
    assert!(reason("./values/scratch.tmp.yaml").contains(".gitignore"));
    // Markdown is read by walks only with --include-markdown.
    assert!(reason("./README.md").contains("--include-markdown"));
    write(&p.join("notes.txt"), "x\n");
    let shown_txt = check_in(p, &["--show-files", "."]);
    let txt = shown_txt.json["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == "./notes.txt")
        .unwrap()["reason"]
        .clone();
    assert!(txt.as_str().unwrap().contains("not *.yaml"), "{txt}");
    let with_md = check_in(p, &["--show-files", "--include-markdown", "."]);
    assert!(
        with_md.json["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["path"] == "./README.md" && r["checked"] == true),
        "{}",
        with_md.json
    );
    assert!(reason("./charts/gpu/Chart.yaml").contains("chart metadata"));
    assert!(reason("./charts/gpu/templates/").contains("templates"));
    assert!(reason("./values/link.yaml").contains("symbolic link"));
    // What check reads: every file with a finding (each has one), and nothing else.
    let run = check_in(p, &["."]);
    let read: std::collections::BTreeSet<String> = files_of(&run).into_iter().collect();
    assert_eq!(checked, read);
    assert_eq!(run.json["summary"]["files"], checked.len());
    assert_eq!(checked.len(), 4, "{checked:?}");
    // Human: one line each.
    let out = bin()
        .current_dir(p)
        .args(["check", "--show-files", "values"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("check values/a.yaml\n"), "{text}");
    assert!(
        text.contains("skip  values/scratch.tmp.yaml: ignored by .gitignore"),
        "{text}"
    );
}
