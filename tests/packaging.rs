//! Installing without a Rust toolchain (issue 26): the wheel (pyproject.toml, scripts/build-wheel),
//! installed into a fresh venv and run through uvx, and the crate's package (`cargo package
//! --list`) and metadata.
//!
//! The wheel is built once for the whole binary (`wheel()`), by scripts/build-wheel with maturin
//! from target/venv, with the cheap release profile and the target dir of the pre-commit hook
//! builds (`common::hook_build_env`): what is tested is the packaging, which the optimisation
//! level does not change. Everything installed from it runs without cargo or rustc
//! (`without_rust`: PATH holds neither, and the test proves it), pip offline (`PIP_NO_INDEX`) with
//! the wheel served from a folder (`PIP_FIND_LINKS`). The tools (maturin, uv in target/venv; the
//! setuptools wheel in target/wheelhouse) come from scripts/install-test-tools; a missing one
//! fails. What a run leaves is in target/tmp/packaging-run, emptied when the next run starts.

mod common;

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

fn show(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}\n{}", show(&out));
    out
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
