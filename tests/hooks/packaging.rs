//! Installing without a Rust toolchain: the wheel (pyproject.toml, scripts/build-wheel),
//! the pre-commit mirror (packaging/pre-commit-mirror/, scripts/pre-commit-mirror), the GitHub
//! Action (action.yml), the release workflow (.github/workflows/release.yml,
//! scripts/release-check), the container recipe (Containerfile) and the crate's package
//! (`cargo package --list`).
//!
//! The wheel is built once for the whole binary (`wheel()`), by scripts/build-wheel with maturin
//! from target/venv, with the cheap release profile and the target dir of the pre-commit hook
//! builds (`common::hook_build_env`): what is tested is the packaging, which the optimisation
//! level does not change. Everything installed from it runs without cargo or rustc
//! (`without_rust`: PATH holds neither, and the test proves it), pip offline (`PIP_NO_INDEX`) with
//! the wheel served from a folder (`PIP_FIND_LINKS`). The tools (maturin, actionlint, hadolint,
//! pre-commit, check-jsonschema in target/venv; the setuptools wheel pip needs to install the
//! mirror, in target/wheelhouse) come from scripts/install-test-tools; a missing one fails.
//! What a run leaves is in target/tmp/packaging-run, emptied when the next run starts.

use crate::common::{self, show};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn tool(name: &str) -> PathBuf {
    let p = root().join("target/venv/bin").join(name);
    assert!(
        p.exists(),
        "{} is missing: run scripts/install-test-tools",
        p.display()
    );
    p
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}\n{}", show(&out));
    out
}

fn git(dir: &Path, args: &[&str]) -> String {
    stdout(&run_ok(
        Command::new("git")
            .current_dir(dir)
            .args(["-c", "user.email=test@example.com", "-c", "user.name=test"])
            .args(args),
    ))
}

/// This run's folder; statics are never dropped, so it is emptied when the next run starts.
fn run_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = root().join("target/tmp/packaging-run");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
}

/// A new empty folder of this run (each test names its own).
fn fresh(name: &str) -> PathBuf {
    let dir = run_dir().join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The wheel scripts/build-wheel builds, once for the whole binary.
fn wheel() -> &'static PathBuf {
    static WHEEL: OnceLock<PathBuf> = OnceLock::new();
    WHEEL.get_or_init(|| {
        let out_dir = fresh("wheel");
        let started = std::time::Instant::now();
        let mut cmd = Command::new(root().join("scripts/build-wheel"));
        cmd.arg("--out").arg(&out_dir);
        common::hook_build_env(&mut cmd);
        run_ok(&mut cmd);
        eprintln!(
            "packaging: scripts/build-wheel took {:.1?}",
            started.elapsed()
        );
        let wheels: Vec<PathBuf> = std::fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "whl"))
            .collect();
        assert_eq!(
            wheels.len(),
            1,
            "one wheel in {}: {wheels:?}",
            out_dir.display()
        );
        let name = wheels[0]
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            name.starts_with(&format!("cgpu_lint-{VERSION}-py3-none-")),
            "{name}"
        );
        wheels[0].clone()
    })
}

/// A folder to serve with PIP_FIND_LINKS: the wheel, and the setuptools wheel pip needs to
/// install the pre-commit mirror's (empty) package offline.
fn wheelhouse(name: &str) -> PathBuf {
    let dir = fresh(name);
    let wheel = wheel();
    std::fs::copy(wheel, dir.join(wheel.file_name().unwrap())).unwrap();
    let extra = root().join("target/wheelhouse");
    let mut setuptools = false;
    for entry in std::fs::read_dir(&extra).unwrap_or_else(|_| {
        panic!(
            "{} is missing: run scripts/install-test-tools",
            extra.display()
        )
    }) {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        setuptools |= file.starts_with("setuptools-");
        std::fs::copy(&path, dir.join(&file)).unwrap();
    }
    assert!(setuptools, "no setuptools wheel in {}", extra.display());
    dir
}

/// PATH without any folder that holds cargo or rustc, checked with `command -v`.
fn path_without_rust() -> &'static String {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        let path = std::env::var("PATH").unwrap_or_default();
        let kept: Vec<&str> = path
            .split(':')
            .filter(|d| {
                !d.is_empty()
                    && !Path::new(d).join("cargo").exists()
                    && !Path::new(d).join("rustc").exists()
            })
            .collect();
        let kept = kept.join(":");
        let out = Command::new("/bin/sh")
            .args(["-c", "command -v cargo; command -v rustc; command -v git"])
            .env("PATH", &kept)
            .output()
            .unwrap();
        let found = stdout(&out);
        assert!(
            !found.contains("cargo") && !found.contains("rustc") && found.contains("git"),
            "PATH={kept}: {found}"
        );
        kept
    })
}

/// No Rust toolchain for `cmd`, and pip offline with `links` as its only source.
fn without_rust<'a>(cmd: &'a mut Command, links: Option<&Path>) -> &'a mut Command {
    cmd.env("PATH", path_without_rust());
    for var in [
        "CARGO",
        "CARGO_HOME",
        "CARGO_TARGET_DIR",
        "RUSTC",
        "RUSTUP_HOME",
        "RUSTUP_TOOLCHAIN",
    ] {
        cmd.env_remove(var);
    }
    if let Some(links) = links {
        cmd.env("PIP_NO_INDEX", "1")
            .env("PIP_FIND_LINKS", links)
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1");
    }
    cmd
}

/// A YAML file as JSON, read by PyYAML (target/venv, installed with pre-commit).
fn yaml_json(path: &Path) -> serde_json::Value {
    let out = run_ok(
        Command::new(tool("python"))
            .args([
                "-c",
                "import sys, yaml, json; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
            ])
            .arg(path),
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn cargo_toml() -> toml::Table {
    toml::from_str(&std::fs::read_to_string(root().join("Cargo.toml")).unwrap()).unwrap()
}

fn package_str(key: &str) -> String {
    cargo_toml()["package"][key]
        .as_str()
        .unwrap_or_else(|| panic!("Cargo.toml: package.{key}"))
        .to_string()
}

/// A folder holding examples/values.yaml as `values/values.yaml` (its `enabled: "false"` is a
/// string-boolean error at 3:12, README.md "Check a values file").
fn values_folder(name: &str) -> PathBuf {
    let dir = fresh(name);
    std::fs::create_dir_all(dir.join("values")).unwrap();
    std::fs::copy(
        root().join("examples/values.yaml"),
        dir.join("values/values.yaml"),
    )
    .unwrap();
    dir
}

/// The wheel's METADATA and its file names (Python's zipfile).
fn wheel_contents(wheel: &Path) -> (String, Vec<String>) {
    let script = "import sys, zipfile\n\
        z = zipfile.ZipFile(sys.argv[1])\n\
        names = z.namelist()\n\
        meta = [n for n in names if n.endswith('.dist-info/METADATA')]\n\
        print('\\n'.join(names))\n\
        print('---METADATA---')\n\
        print(z.read(meta[0]).decode())\n";
    let out = run_ok(Command::new(tool("python")).args(["-c", script]).arg(wheel));
    let text = stdout(&out);
    let (names, meta) = text.split_once("---METADATA---\n").unwrap();
    (
        meta.to_string(),
        names.lines().map(str::to_string).collect(),
    )
}

#[test]
fn the_wheel_carries_the_binary_and_the_crate_metadata() {
    let (meta, names) = wheel_contents(wheel());
    let data = format!("cgpu_lint-{VERSION}.data/");
    let info = format!("cgpu_lint-{VERSION}.dist-info/");
    assert!(
        names.contains(&format!("{data}scripts/cgpu-lint")),
        "{names:?}"
    );
    for name in &names {
        assert!(
            name.starts_with(&info) || *name == format!("{data}scripts/cgpu-lint"),
            "unexpected file {name} in the wheel"
        );
    }
    for license in ["LICENSE-MIT", "LICENSE-APACHE"] {
        assert!(
            names.contains(&format!("{info}licenses/{license}")),
            "{names:?}"
        );
    }
    let (head, body) = meta
        .split_once("\n\n")
        .expect("METADATA headers, then the description");
    let fields: Vec<(&str, &str)> = head.lines().filter_map(|l| l.split_once(": ")).collect();
    let field = |k: &str| -> Vec<&str> {
        fields
            .iter()
            .filter(|(n, _)| *n == k)
            .map(|(_, v)| *v)
            .collect()
    };
    assert_eq!(field("Name"), ["cgpu-lint"], "{meta}");
    assert_eq!(field("Version"), [VERSION], "{meta}");
    assert_eq!(
        field("Summary"),
        [package_str("description").as_str()],
        "{meta}"
    );
    assert_eq!(
        field("License-Expression"),
        [package_str("license").as_str()],
        "{meta}"
    );
    assert!(
        field("Project-URL")
            .iter()
            .any(|u| u.ends_with(&package_str("repository"))),
        "{meta}"
    );
    assert!(
        field("Description-Content-Type")[0].starts_with("text/markdown"),
        "{meta}"
    );
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert_eq!(
        body.trim_end(),
        readme.trim_end(),
        "the description is README.md"
    );
}

#[test]
fn the_wheel_installs_into_a_fresh_venv_and_runs_without_a_toolchain() {
    let venv = fresh("wheel-venv");
    run_ok(
        Command::new(tool("python"))
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv),
    );
    let links = wheelhouse("wheel-links");
    run_ok(
        without_rust(&mut Command::new(tool("python")), Some(&links))
            .args(["-m", "pip", "--python"])
            .arg(venv.join("bin/python"))
            .args(["install", "--quiet", "--no-deps", "--only-binary", ":all:"])
            .arg(format!("cgpu-lint=={VERSION}")),
    );
    let installed = venv.join("bin/cgpu-lint");
    let out = run_ok(without_rust(&mut Command::new(&installed), None).arg("--version"));
    assert_eq!(stdout(&out), format!("cgpu-lint {VERSION}\n"));
    // A check from the installed entry point: the README's example error, and exactly what this
    // build prints for the same file.
    let dir = values_folder("wheel-check");
    let out = without_rust(&mut Command::new(&installed), None)
        .current_dir(&dir)
        .args(["check", "values/values.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        stdout(&out).starts_with("values/values.yaml:3:12: error[string-boolean]"),
        "{}",
        show(&out)
    );
    let here = Command::new(env!("CARGO_BIN_EXE_cgpu-lint"))
        .current_dir(&dir)
        .args(["check", "values/values.yaml"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out), stdout(&here));
}

/// `uvx --from WHEEL cgpu-lint` (uv from target/venv, offline, its own cache): the wheel runs
/// without being installed, as `pipx run` does.
#[test]
fn uvx_runs_the_wheel_without_installing_it() {
    let cache = fresh("uv-cache");
    let out = run_ok(
        without_rust(&mut Command::new(tool("uvx")), None)
            .args(["--offline", "--from"])
            .arg(wheel())
            .args(["cgpu-lint", "--version"])
            .env("UV_CACHE_DIR", &cache)
            .env("UV_NO_CONFIG", "1")
            .env("UV_PYTHON_DOWNLOADS", "never"),
    );
    assert_eq!(stdout(&out), format!("cgpu-lint {VERSION}\n"));
}

/// The hooks of a .pre-commit-hooks.yaml by id.
fn hooks(path: &Path) -> BTreeMap<String, serde_json::Value> {
    yaml_json(path)
        .as_array()
        .expect("a list of hooks")
        .iter()
        .map(|h| (h["id"].as_str().unwrap().to_string(), h.clone()))
        .collect()
}

#[test]
fn the_pre_commit_mirror_has_the_hooks_of_this_repository_in_python() {
    let mirror = fresh("mirror-template");
    run_ok(Command::new(root().join("scripts/pre-commit-mirror")).arg(&mirror));
    for file in [".pre-commit-hooks.yaml", "pyproject.toml", "README.md"] {
        let text = std::fs::read_to_string(mirror.join(file)).unwrap();
        assert!(!text.contains("@VERSION@"), "{file}: {text}");
        assert!(text.contains(VERSION), "{file} names {VERSION}: {text}");
    }
    let ours = hooks(&root().join(".pre-commit-hooks.yaml"));
    let theirs = hooks(&mirror.join(".pre-commit-hooks.yaml"));
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    for (id, hook) in &ours {
        let mut expected = hook.as_object().unwrap().clone();
        expected.insert("language".into(), "python".into());
        expected.insert(
            "additional_dependencies".into(),
            serde_json::json!([format!("cgpu-lint=={VERSION}")]),
        );
        assert_eq!(
            theirs[id].as_object().unwrap(),
            &expected,
            "hook {id}: the mirror's differs from .pre-commit-hooks.yaml beyond language and additional_dependencies"
        );
    }
    run_ok(
        Command::new(tool("pre-commit"))
            .arg("validate-manifest")
            .arg(mirror.join(".pre-commit-hooks.yaml")),
    );
    // A version given on the command line wins over Cargo.toml's.
    let other = fresh("mirror-template-other");
    run_ok(
        Command::new(root().join("scripts/pre-commit-mirror"))
            .arg(&other)
            .arg("9.8.7"),
    );
    let text = std::fs::read_to_string(other.join(".pre-commit-hooks.yaml")).unwrap();
    assert!(text.contains("cgpu-lint==9.8.7"), "{text}");
}

const BAD: &str = "cgpu:\n  enabled: true\n  tag: v1.5.10-8d3fc1b-aliyun\n  policy: 7\n";
const GOOD: &str = "cgpu:\n  enabled: true\n  tag: v1.5.10-8d3fc1b-aliyun\n  policy: 2\n";
const FIXABLE: &str =
    "cgpu:\n  tag: v1.5.10-8d3fc1b-aliyun\n  imagePullPolicy: always\n  policy: \"2\"\n";

/// Real pre-commit runs the mirror's hooks, generated from the template and committed as the
/// release process publishes it, from the wheel served locally, with no cargo or rustc on PATH.
#[test]
fn pre_commit_runs_the_mirror_hooks_from_the_wheel_without_a_toolchain() {
    let mirror = fresh("mirror");
    run_ok(Command::new(root().join("scripts/pre-commit-mirror")).arg(&mirror));
    git(&mirror, &["init", "-q"]);
    git(&mirror, &["add", "-A"]);
    git(&mirror, &["commit", "-q", "-m", "mirror"]);
    let rev = git(&mirror, &["rev-parse", "HEAD"]).trim().to_string();
    let links = wheelhouse("mirror-links");
    let store = fresh("mirror-store");
    let run = |label: &str, content: &str, hook: &str| -> (Output, String) {
        let repo = fresh(&format!("mirror-repo-{label}"));
        git(&repo, &["init", "-q"]);
        std::fs::write(repo.join("values.yaml"), content).unwrap();
        std::fs::write(
            repo.join(".pre-commit-config.yaml"),
            format!(
                "repos:\n- repo: {}\n  rev: {rev}\n  hooks:\n  - id: {hook}\n",
                mirror.display()
            ),
        )
        .unwrap();
        git(&repo, &["add", "-A"]);
        let out = without_rust(&mut Command::new(tool("pre-commit")), Some(&links))
            .current_dir(&repo)
            .args(["run", hook, "--files", "values.yaml", "--color", "never"])
            .env("PRE_COMMIT_HOME", &store)
            .output()
            .unwrap();
        let after = std::fs::read_to_string(repo.join("values.yaml")).unwrap();
        (out, after)
    };
    let (out, _) = run("bad", BAD, "cgpu-lint");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(stdout(&out).contains("Failed"), "{}", show(&out));
    assert!(
        stdout(&out).contains("values.yaml:4:11: error[policy-out-of-range]"),
        "{}",
        show(&out)
    );
    let (out, _) = run("good", GOOD, "cgpu-lint");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(stdout(&out).contains("Passed"), "{}", show(&out));
    let (out, fixed) = run("fix", FIXABLE, "cgpu-lint-fix");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(fixed.contains("imagePullPolicy: Always\n"), "{fixed}");
    assert!(fixed.contains("policy: 2\n"), "{fixed}");
    // The hook's cgpu-lint is the wheel's, in pre-commit's Python environment.
    let envs: Vec<PathBuf> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|repo| std::fs::read_dir(&repo).ok())
        .flatten()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("py_env-")
                && p.join("bin/cgpu-lint").is_file()
        })
        .collect();
    assert_eq!(
        envs.len(),
        1,
        "one Python environment with cgpu-lint: {envs:?}"
    );
}

/// The value of a context path (`inputs.paths`, `steps.sarif.outputs.file`,
/// `github.action_repository`): a step output not written is empty, anything else unknown panics.
fn lookup(ctx: &BTreeMap<String, String>, path: &str, expr: &str) -> String {
    match ctx.get(path) {
        Some(v) => v.clone(),
        None if path.starts_with("steps.") => String::new(),
        None => panic!("unsupported `{path}` in `{expr}`"),
    }
}

/// A GitHub expression of the forms action.yml uses in `if:` (`a == 'x'`, `a != ''`, joined by
/// `&&`).
fn condition(expr: &str, ctx: &BTreeMap<String, String>) -> bool {
    expr.split("&&").all(|term| {
        let (lhs, op, rhs) = if let Some((l, r)) = term.split_once("==") {
            (l, true, r)
        } else if let Some((l, r)) = term.split_once("!=") {
            (l, false, r)
        } else {
            panic!("unsupported condition `{expr}`")
        };
        let rhs = rhs.trim().trim_matches('\'');
        (lookup(ctx, lhs.trim(), expr) == rhs) == op
    })
}

/// Every `${{ PATH }}` of `text` replaced by its value.
fn substitute(text: &str, ctx: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${{") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find("}}").expect("closing }}") + at;
        out.push_str(&lookup(ctx, rest[at + 3..end].trim(), text));
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

struct ActionRun {
    /// Each step's name, and its output when it ran.
    steps: Vec<(String, Option<Output>)>,
    /// The `with:` of the `uses:` step that ran, expressions replaced.
    uploads: Vec<serde_json::Map<String, serde_json::Value>>,
}

/// How the runner calls the Action.
struct Runner<'a> {
    /// The folder PIP_FIND_LINKS serves (pip offline).
    links: &'a Path,
    /// The GITHUB_PATH an earlier run's install step wrote: the install step is skipped.
    installed: Option<&'a str>,
    /// `github.action_repository` in the steps' `env:` (actions/runner#2473: empty inside `run:`).
    action_repository: &'a str,
    /// GITHUB_ACTION_PATH, where the runner unpacked the Action.
    action_path: PathBuf,
    /// A folder put first on PATH (stand-ins for tools).
    bin: Option<&'a Path>,
}

impl<'a> Runner<'a> {
    fn new(links: &'a Path) -> Self {
        Runner {
            links,
            installed: None,
            action_repository: "OWNER/cgpu-lint",
            action_path: root(),
            bin: None,
        }
    }
}

/// The Action's steps, run as the runner runs a composite action: `bash --noprofile --norc -eo
/// pipefail` for each `run:` with its `env:`, `if:` evaluated, GITHUB_OUTPUT read back as the
/// step's outputs, GITHUB_PATH prepended to PATH for the later steps; a `uses:` step is not run,
/// its inputs are recorded. Stops after the first failing step, as the runner does.
fn run_action(work: &Path, with: &[(&str, String)], runner: &Runner) -> ActionRun {
    let action = yaml_json(&root().join("action.yml"));
    let mut ctx: BTreeMap<String, String> = action["inputs"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            (
                format!("inputs.{k}"),
                v["default"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    for (k, v) in with {
        let key = format!("inputs.{k}");
        assert!(ctx.contains_key(&key), "action.yml has no input {k}");
        ctx.insert(key, v.clone());
    }
    ctx.insert(
        "github.action_repository".into(),
        runner.action_repository.into(),
    );
    let temp = work.join("runner-temp");
    std::fs::create_dir_all(&temp).unwrap();
    let github_path = work.join("github_path");
    std::fs::write(&github_path, runner.installed.unwrap_or("")).unwrap();
    let mut run = ActionRun {
        steps: Vec::new(),
        uploads: Vec::new(),
    };
    for step in action["runs"]["steps"].as_array().unwrap() {
        let name = step["name"].as_str().unwrap_or("").to_string();
        if runner.installed.is_some() && step["id"] == "install" {
            run.steps.push((name, None));
            continue;
        }
        if let Some(cond) = step["if"].as_str()
            && !condition(cond, &ctx)
        {
            run.steps.push((name, None));
            continue;
        }
        if let Some(uses) = step["uses"].as_str() {
            let mut with = step["with"].as_object().cloned().unwrap_or_default();
            for v in with.values_mut() {
                *v = substitute(v.as_str().unwrap(), &ctx).into();
            }
            with.insert("uses".into(), uses.into());
            run.uploads.push(with);
            run.steps.push((name, None));
            continue;
        }
        assert_eq!(step["shell"], "bash", "step {name}");
        let output_file = work.join(format!("github_output-{}", run.steps.len()));
        std::fs::write(&output_file, "").unwrap();
        let mut path: Vec<String> = runner
            .bin
            .map(|b| b.to_string_lossy().into_owned())
            .into_iter()
            .collect();
        path.extend(
            std::fs::read_to_string(&github_path)
                .unwrap()
                .lines()
                .rev()
                .map(str::to_string),
        );
        path.push(path_without_rust().clone());
        let mut cmd = Command::new("bash");
        without_rust(&mut cmd, Some(runner.links))
            .current_dir(work)
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c"])
            .arg(step["run"].as_str().unwrap())
            .env("PATH", path.join(":"))
            .env("RUNNER_TEMP", &temp)
            .env("GITHUB_OUTPUT", &output_file)
            .env("GITHUB_PATH", &github_path)
            .env("GITHUB_ACTION_PATH", &runner.action_path)
            // Empty in a composite action's steps (actions/runner#2525).
            .env("GITHUB_ACTION_REPOSITORY", "");
        for (k, v) in step["env"].as_object().into_iter().flatten() {
            cmd.env(k, substitute(v.as_str().unwrap(), &ctx));
        }
        let out = cmd.output().unwrap();
        if let Some(id) = step["id"].as_str() {
            for line in std::fs::read_to_string(&output_file).unwrap().lines() {
                let (k, v) = line.split_once('=').expect("KEY=VALUE in GITHUB_OUTPUT");
                ctx.insert(format!("steps.{id}.outputs.{k}"), v.to_string());
            }
        }
        let failed = !out.status.success();
        run.steps.push((name, Some(out)));
        if failed {
            break;
        }
    }
    run
}

/// SHA256SUMS of the files of `dir`, as `sha256sum` writes it (the release workflow's command).
fn sha256sums(dir: &Path) -> PathBuf {
    let out = run_ok(
        Command::new("sh")
            .current_dir(dir)
            .args(["-c", "sha256sum -- *.whl"]),
    );
    let sums = dir.parent().unwrap().join(format!(
        "{}.SHA256SUMS",
        dir.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&sums, &out.stdout).unwrap();
    sums
}

#[test]
fn the_action_installs_the_pinned_wheel_checked_and_annotates() {
    let action = yaml_json(&root().join("action.yml"));
    assert_eq!(action["runs"]["using"], "composite");
    assert_eq!(
        action["inputs"]["version"]["default"], VERSION,
        "action.yml installs the version of Cargo.toml"
    );
    for input in ["paths", "args", "version", "checksums", "sarif"] {
        assert!(action["inputs"][input].is_object(), "input {input}");
    }
    let links = wheelhouse("action-links");
    let sums = sha256sums(&links);
    let url = format!("file://{}", sums.display());

    let work = values_folder("action");
    let run = run_action(
        &work,
        &[("paths", "values/".into()), ("checksums", url.clone())],
        &Runner::new(&links),
    );
    let ran: Vec<(&str, Option<i32>)> = run
        .steps
        .iter()
        .map(|(n, o)| (n.as_str(), o.as_ref().and_then(|o| o.status.code())))
        .collect();
    assert_eq!(run.steps.len(), 4, "{ran:?}");
    let [install, sarif, annotate] = [0, 1, 3].map(|i| run.steps[i].1.as_ref());
    let install = install.expect("the install step ran");
    assert!(install.status.success(), "{}", show(install));
    assert!(
        stdout(install).contains(&format!("cgpu-lint {VERSION}")),
        "{}",
        show(install)
    );
    let sarif = sarif.expect("the SARIF step ran");
    assert!(sarif.status.success(), "{}", show(sarif));
    assert_eq!(run.uploads.len(), 1, "{ran:?}");
    let upload = &run.uploads[0];
    assert!(
        upload["uses"]
            .as_str()
            .unwrap()
            .starts_with("github/codeql-action/upload-sarif@"),
        "{upload:?}"
    );
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(upload["sarif_file"].as_str().unwrap()).unwrap(),
    )
    .unwrap();
    assert_eq!(report["version"], "2.1.0");
    assert!(!report["runs"][0]["results"].as_array().unwrap().is_empty());
    let annotate = annotate.expect("the annotation step ran");
    assert_eq!(
        annotate.status.code(),
        Some(1),
        "{ran:?}\n{}",
        show(annotate)
    );
    assert!(
        stdout(annotate).starts_with("::error file=values/values.yaml,line=3,col=12,"),
        "{}",
        show(annotate)
    );

    // No SARIF, and a path that does not exist: no upload, and the check exits 2 (cgpu-lint as
    // installed above).
    let installed = std::fs::read_to_string(work.join("github_path")).unwrap();
    assert!(installed.ends_with("/venv/bin\n"), "{installed}");
    let work = values_folder("action-missing");
    let run = run_action(
        &work,
        &[
            ("paths", "no-such-folder/".into()),
            ("checksums", url),
            ("sarif", "false".into()),
        ],
        &Runner {
            installed: Some(&installed),
            ..Runner::new(&links)
        },
    );
    assert!(run.uploads.is_empty());
    assert!(run.steps[1].1.is_none(), "the SARIF step is skipped");
    assert_eq!(run.steps.len(), 4);
    let last = run.steps.last().unwrap().1.as_ref().unwrap();
    assert_eq!(last.status.code(), Some(2), "{}", show(last));

    // A wheel that does not match the release's SHA256SUMS is not installed.
    let bad = links.parent().unwrap().join("bad.SHA256SUMS");
    let text = std::fs::read_to_string(&sums).unwrap();
    let flipped: String = text
        .lines()
        .map(|l| {
            if l.contains("cgpu_lint-") {
                let first = if l.starts_with('0') { '1' } else { '0' };
                format!("{first}{}\n", &l[1..])
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    std::fs::write(&bad, flipped).unwrap();
    let work = values_folder("action-bad-sum");
    let run = run_action(
        &work,
        &[("checksums", format!("file://{}", bad.display()))],
        &Runner::new(&links),
    );
    assert_eq!(run.steps.len(), 1, "stops at the install step");
    let install = run.steps[0].1.as_ref().unwrap();
    assert!(!install.status.success(), "{}", show(install));
    assert!(
        String::from_utf8_lossy(&install.stderr).contains("DO NOT MATCH THE HASHES"),
        "{}",
        show(install)
    );
    assert_eq!(
        std::fs::read_to_string(work.join("github_path")).unwrap(),
        ""
    );
}

/// With no `checksums` input the Action takes the SHA256SUMS of its own release: from
/// `github.action_repository`, else from the folder the runner unpacked it to; neither known is
/// an error that names the input. (A stand-in `curl` records the URL and fails.)
#[test]
fn the_action_takes_the_checksums_of_its_own_release() {
    let bin = fresh("action-default-bin");
    let record = bin.join("curl-args");
    std::fs::write(
        bin.join("curl"),
        format!("#!/bin/sh\necho \"$@\" > {}\nexit 22\n", record.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(bin.join("curl"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let links = fresh("action-default-links");
    let unpacked = PathBuf::from(format!(
        "/home/runner/work/_actions/from-path/cgpu-lint/v{VERSION}"
    ));
    for (repository, action_path, expected) in [
        ("acme/cgpu-lint", root(), Some("acme/cgpu-lint")),
        ("", unpacked, Some("from-path/cgpu-lint")),
        ("", root(), None),
    ] {
        let _ = std::fs::remove_file(&record);
        let work = values_folder("action-default");
        let run = run_action(
            &work,
            &[],
            &Runner {
                action_repository: repository,
                action_path,
                bin: Some(&bin),
                ..Runner::new(&links)
            },
        );
        assert_eq!(run.steps.len(), 1, "stops at the install step");
        let install = run.steps[0].1.as_ref().unwrap();
        match expected {
            Some(repo) => {
                assert_eq!(install.status.code(), Some(22), "{}", show(install));
                let args = std::fs::read_to_string(&record).unwrap();
                assert!(
                    args.contains(&format!(
                        "https://github.com/{repo}/releases/download/v{VERSION}/SHA256SUMS"
                    )),
                    "{args}"
                );
            }
            None => {
                assert_eq!(install.status.code(), Some(2), "{}", show(install));
                assert!(!record.exists());
                assert!(
                    stdout(install).contains("set the checksums input"),
                    "{}",
                    show(install)
                );
            }
        }
    }
}

/// A checkout-like folder for actionlint: action.yml, the workflows, and `extra` workflows.
fn lint_tree(name: &str, extra: &[(&str, String)]) -> PathBuf {
    let dir = fresh(name);
    git(&dir, &["init", "-q"]);
    std::fs::create_dir_all(dir.join(".github/workflows")).unwrap();
    std::fs::copy(root().join("action.yml"), dir.join("action.yml")).unwrap();
    for entry in std::fs::read_dir(root().join(".github/workflows")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(
            &path,
            dir.join(".github/workflows")
                .join(path.file_name().unwrap()),
        )
        .unwrap();
    }
    for (file, text) in extra {
        std::fs::write(dir.join(".github/workflows").join(file), text).unwrap();
    }
    dir
}

/// The first YAML block after `heading` in docs/ci.md.
fn docs_ci_block(heading: &str) -> String {
    let doc = std::fs::read_to_string(root().join("docs/ci.md")).unwrap();
    let at = doc
        .find(heading)
        .unwrap_or_else(|| panic!("docs/ci.md: {heading}"));
    let start = at + doc[at..].find("```yaml\n").unwrap() + 8;
    let end = start + doc[start..].find("```").unwrap();
    doc[start..end].to_string()
}

/// The GitHub job of docs/ci.md, with the Action taken from this checkout (`uses: ./`).
fn docs_job_using_this_action() -> String {
    let job = docs_ci_block("\n## GitHub Actions\n");
    let pinned = format!("OWNER/cgpu-lint@v{VERSION}");
    assert!(
        job.contains(&pinned),
        "docs/ci.md's job uses {pinned}:\n{job}"
    );
    job.replace(&pinned, "./")
}

#[test]
fn actionlint_passes_the_action_the_release_workflow_and_the_docs_job() {
    let actionlint = tool("actionlint");
    let dir = lint_tree(
        "actionlint",
        &[
            ("docs-job.yml", docs_job_using_this_action()),
            ("docs-source.yml", docs_ci_block("\n### From source\n")),
        ],
    );
    let out = Command::new(&actionlint)
        .current_dir(&dir)
        .args(["-oneline", "-no-color", "-shellcheck=", "-pyflakes="])
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "{}",
        show(&out)
    );
    // It reads the Action's inputs: an input the Action lacks is an error.
    let wrong = docs_job_using_this_action().replace("paths:", "pathz:");
    let dir = lint_tree("actionlint-wrong", &[("docs-job.yml", wrong)]);
    let out = Command::new(&actionlint)
        .current_dir(&dir)
        .args(["-oneline", "-no-color", "-shellcheck=", "-pyflakes="])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        stdout(&out).contains("input \"pathz\" is not defined"),
        "{}",
        show(&out)
    );
    // The schemas of action metadata and workflows (check-jsonschema's vendored copies).
    for (schema, file) in [
        ("vendor.github-actions", "action.yml"),
        ("vendor.github-workflows", ".github/workflows/release.yml"),
    ] {
        run_ok(
            Command::new(tool("check-jsonschema"))
                .args(["--builtin-schema", schema])
                .arg(root().join(file)),
        );
    }
}

#[test]
fn the_release_workflow_checks_the_version_and_builds_every_platform() {
    let out = run_ok(Command::new(root().join("scripts/release-check")).arg(format!("v{VERSION}")));
    assert_eq!(stdout(&out), format!("version={VERSION}\n"));
    for tag in ["v99.0.0".to_string(), VERSION.to_string()] {
        let out = Command::new(root().join("scripts/release-check"))
            .arg(&tag)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{tag}: {}", show(&out));
    }
    let workflow = yaml_json(&root().join(".github/workflows/release.yml"));
    let jobs = workflow["jobs"].as_object().unwrap();
    let runs: Vec<String> = jobs
        .values()
        .flat_map(|j| j["steps"].as_array().unwrap().iter())
        .filter_map(|s| s["run"].as_str().map(str::to_string))
        .collect();
    assert!(
        runs.iter()
            .any(|r| r.contains("scripts/release-check \"$GITHUB_REF_NAME\""))
    );
    assert!(
        runs.iter()
            .any(|r| r.contains("sha256sum -- * > SHA256SUMS"))
    );
    assert!(runs.iter().any(|r| r.contains("scripts/pre-commit-mirror")));
    let targets: Vec<&str> = jobs["wheels"]["strategy"]["matrix"]["include"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["target"].as_str().unwrap())
        .collect();
    for target in [
        "x86_64-unknown-linux-musl",
        "aarch64-unknown-linux-musl",
        "x86_64-unknown-linux-gnu",
        "aarch64-unknown-linux-gnu",
        "x86_64-apple-darwin",
        "aarch64-apple-darwin",
    ] {
        assert!(targets.contains(&target), "{target} in {targets:?}");
    }
}

#[test]
fn the_containerfile_passes_hadolint() {
    let out = Command::new(tool("hadolint"))
        .arg("--no-color")
        .arg(root().join("Containerfile"))
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "{}",
        show(&out)
    );
    let text = std::fs::read_to_string(root().join("Containerfile")).unwrap();
    let last_from = text.lines().rfind(|l| l.starts_with("FROM ")).unwrap();
    assert!(
        last_from.starts_with("FROM gcr.io/distroless/static"),
        "{last_from}"
    );
    assert!(text.contains("ENTRYPOINT [\"/usr/local/bin/cgpu-lint\"]"));
}

#[test]
fn cargo_package_lists_the_sources_and_no_large_file() {
    let out = run_ok(Command::new(env!("CARGO")).current_dir(root()).args([
        "package",
        "--list",
        "--locked",
        "--allow-dirty",
    ]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("warning"), "{stderr}");
    let files: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    for needed in [
        "Cargo.toml",
        "Cargo.lock",
        "README.md",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "src/main.rs",
        "src/lib.rs",
        // include_str! in src/rules/schema.rs
        "schemas/ack-ai-installer-values.schema.json",
        // reads src/cgpu/compat.toml for the catalogue's texts
        "build.rs",
        "src/cgpu/compat.toml",
    ] {
        assert!(files.iter().any(|f| f == needed), "{needed} in {files:?}");
    }
    for file in &files {
        assert!(
            !file.starts_with("target/") && !file.starts_with("fuzz/"),
            "{file}"
        );
        let path = root().join(file);
        if path.is_file() {
            let size = std::fs::metadata(&path).unwrap().len();
            assert!(size <= 1 << 20, "{file} is {size} bytes");
        }
    }
    let toml = cargo_toml();
    let package = toml["package"].as_table().unwrap();
    for key in [
        "description",
        "license",
        "repository",
        "readme",
        "rust-version",
    ] {
        assert!(
            package
                .get(key)
                .and_then(|v| v.as_str())
                .is_some_and(|v| !v.is_empty()),
            "Cargo.toml: package.{key}"
        );
    }
    let keywords = package["keywords"].as_array().unwrap();
    assert!(
        (1..=5).contains(&keywords.len()),
        "crates.io takes at most 5 keywords"
    );
    for k in keywords {
        let k = k.as_str().unwrap();
        assert!(
            k.len() <= 20
                && k.starts_with(|c: char| c.is_ascii_alphabetic())
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "keyword {k}"
        );
    }
    // crates.io's category slugs (https://crates.io/category_slugs), those that fit.
    for c in package["categories"].as_array().unwrap() {
        assert!(
            ["command-line-utilities", "development-tools", "config"]
                .contains(&c.as_str().unwrap()),
            "category {c}"
        );
    }
    // The Rust version the README and CONTRIBUTING name.
    let rust = package["rust-version"].as_str().unwrap();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("Rust {rust} or later")),
        "README names Rust {rust}"
    );
    let contributing = std::fs::read_to_string(root().join("CONTRIBUTING.md")).unwrap();
    assert!(
        contributing.contains(&format!("Rust ({rust}+)")),
        "CONTRIBUTING names Rust {rust}"
    );
    // The wheel states the same license.
    let pyproject: toml::Table =
        toml::from_str(&std::fs::read_to_string(root().join("pyproject.toml")).unwrap()).unwrap();
    assert_eq!(
        pyproject["project"]["license"].as_str(),
        package["license"].as_str()
    );
    assert_eq!(
        pyproject["project"]["name"].as_str(),
        package["name"].as_str()
    );
}

/// Every version the docs pin (the Action's tag, the mirror's `rev:`, the wheel, the release's
/// downloads, the image) is Cargo.toml's, so a release that bumps one bumps them all.
#[test]
fn the_docs_pin_the_current_version() {
    let mut files = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        files.push(entry.unwrap().path());
    }
    let mut seen = 0;
    for file in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "md"))
    {
        let text = std::fs::read_to_string(file).unwrap();
        for prefix in [
            "cgpu-lint@v",
            "cgpu-lint==",
            "rev: v",
            "/download/v",
            "cgpu-lint:",
            "cgpu-lint-",
        ] {
            for (at, _) in text.match_indices(prefix) {
                let rest = &text[at + prefix.len()..];
                let version: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.')
                    .collect();
                let version = version.trim_end_matches('.');
                if version.starts_with(|c: char| c.is_ascii_digit()) {
                    seen += 1;
                    assert_eq!(version, VERSION, "{}: `{prefix}{version}`", file.display());
                }
            }
        }
    }
    assert!(seen >= 5, "{seen} pinned versions in the docs");
}
