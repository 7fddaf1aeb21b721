//! End to end with a real editor: Neovim's built-in LSP client (Neovim 0.7.2 from Debian, which
//! scripts/install-test-tools installs) runs `cgpu-lint server`, opens a fixture, waits for the
//! diagnostics, applies the quick fixes (or the fix-all action) and writes the buffer; the file
//! must then be byte for byte the `fix` golden file. The Lua side is tests/nvim/fix_with_lsp.lua.
//!
//! Without nvim these tests FAIL (they do not skip): CI runs scripts/install-test-tools first.

#[path = "../common/mod.rs"]
mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::FIX_GOLDEN as GOLDEN;

fn nvim() -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("nvim"))
            .find(|p| p.is_file())
    });
    let Some(nvim) = found else {
        panic!(
            "nvim (Neovim) is not installed, so the editor end-to-end test cannot run. \
             Run scripts/install-test-tools (it installs Debian's neovim package)."
        );
    };
    let v = Command::new(&nvim)
        .arg("--version")
        .output()
        .expect("nvim --version");
    let v = String::from_utf8_lossy(&v.stdout);
    assert!(v.starts_with("NVIM v0."), "unexpected nvim --version: {v}");
    nvim
}

/// Run the Lua driver on `files` in `mode`, in a fresh headless Neovim with no user config.
fn run_nvim(files: &[PathBuf], mode: &str) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/nvim/fix_with_lsp.lua");
    let list: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(nvim())
        .args(["--headless", "--clean", "-u", "NONE", "-i", "NONE", "-n"])
        .arg("-c")
        .arg(format!("luafile {}", script.display()))
        .env("CGPU_LINT_BIN", env!("CARGO_BIN_EXE_cgpu-lint"))
        .env("CGPU_LINT_FILES", list.join("\n"))
        .env("CGPU_LINT_MODE", mode)
        // Keep Neovim's state (LSP log, shada) out of the real home.
        .env("HOME", home.path())
        .env("XDG_STATE_HOME", home.path())
        .env("XDG_CACHE_HOME", home.path())
        .env("XDG_DATA_HOME", home.path())
        .current_dir(files[0].parent().unwrap())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start nvim");
    let deadline = Instant::now() + Duration::from_secs(300);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("nvim did not finish in 300 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        status.success(),
        "nvim exited {status}; stderr:\n{stderr}\nstdout:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

fn copy_fixtures(dir: &Path) -> Vec<PathBuf> {
    GOLDEN
        .iter()
        .map(|name| {
            let to = dir.join(format!("{name}.yaml"));
            std::fs::copy(fixtures().join(format!("{name}.yaml")), &to).unwrap();
            to
        })
        .collect()
}

fn assert_golden(files: &[PathBuf], mode: &str) {
    for (name, file) in GOLDEN.iter().zip(files) {
        let want =
            std::fs::read_to_string(fixtures().join("fixed").join(format!("{name}.yaml"))).unwrap();
        let got = std::fs::read_to_string(file).unwrap();
        assert_eq!(
            got, want,
            "{name}: Neovim ({mode}) wrote something else than `fix`"
        );
    }
}

#[test]
fn neovim_quick_fixes_give_the_fix_golden_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = copy_fixtures(dir.path());
    run_nvim(&files, "quickfix");
    assert_golden(&files, "quick fixes");
}

#[test]
fn neovim_fix_all_gives_the_fix_golden_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = copy_fixtures(dir.path());
    run_nvim(&files, "fixall");
    assert_golden(&files, "fix all");
}

/// Positions are UTF-16 code units (Neovim 0.7 offers no other encoding): a fix after an astral
/// character on the same line must land on the right bytes.
#[test]
fn neovim_quick_fix_after_astral_characters_on_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("values.yaml");
    std::fs::write(
        &f,
        "# 😀 é\ncgpu: {nodeSelector: {\"é😀\": x}, policy: \"1\", enabled: \"on\"}\n",
    )
    .unwrap();
    run_nvim(std::slice::from_ref(&f), "quickfix");
    // policy-quoted: unquote; string-boolean: "on" → true (both safe: the render is the same).
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        "# 😀 é\ncgpu: {nodeSelector: {\"é😀\": x}, policy: 1, enabled: true}\n"
    );
}
