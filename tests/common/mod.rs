#![allow(dead_code)]
//! Helpers shared by the integration tests: run the real binary, read its JSON report.

pub mod apiserver;
pub mod helm;
pub mod policyreport;
pub mod probe;

use std::collections::BTreeMap;
use std::path::PathBuf;

use assert_cmd::Command;

/// Every fixable fixture, whose corrected bytes are tests/fixtures/fixed/NAME.yaml. The golden
/// files were written by hand from the rule table (its "fix" column); `fix`, the language
/// server's quick fixes and Neovim applying them must all produce them.
pub const FIX_GOLDEN: &[&str] = &[
    "values-valid-policy-quoted-string",
    "values-invalid-policy-name-string",
    "values-warn-yaml11-scalars-nodeselector",
    "values-invalid-image-with-registry-and-tag",
    "values-invalid-nodeselector-not-a-map",
    "values-invalid-image-pull-policy-case",
    "values-invalid-enabled-and-checkregions-strings",
    "values-warn-unknown-keys-typo",
    "values-multi-doc-two-clusters",
    "values-invalid-nodeselector-bad-keys",
];

/// The one seeded generator of the generated cases (xorshift64*): the same seed gives the same
/// cases on every machine, and a failure prints the seed that replays it. `Rng(state)` starts
/// from the state as given; `Rng::seeded` spreads a small seed (0, 1, 2 …) over the bits first.
/// The admission oracle (scripts/admission-oracle.d/generate.go) draws the same sequence.
pub struct Rng(pub u64);

impl Rng {
    pub fn seeded(seed: u64) -> Rng {
        Rng(seed.max(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn fixture(name: &str) -> String {
    fixtures().join(name).to_string_lossy().into_owned()
}

/// The environment of a `cargo install` that pre-commit runs to build this crate's hook
/// (tests/hooks/precommit.rs and the README's pre-commit block): one target dir shared by both, so the
/// dependencies are built once, and a cheap release profile in place of Cargo.toml's fat-LTO one
/// (`cargo install` honours `CARGO_PROFILE_RELEASE_*`): what the tests check is the hook's
/// behaviour, which the optimisation level does not change, and a cold fat-LTO build of the
/// dependencies plus one of this crate per hook install took ten minutes of the suite. The nested
/// cargo must not inherit this test run's own settings either.
pub fn hook_build_env(cmd: &mut std::process::Command) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    cmd.env("CARGO_TARGET_DIR", root.join("target/pre-commit-target"))
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "256")
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_INCREMENTAL", "false")
        .env_remove("CARGO_MAKEFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
}

/// A tool scripts/install-test-tools puts in target/venv/bin (check-jsonschema,
/// kubernetes-validate, …); a missing one fails with what to run.
pub fn venv_tool(name: &str) -> PathBuf {
    let tool = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/venv/bin")
        .join(name);
    assert!(
        tool.exists(),
        "{} is missing: run scripts/install-test-tools",
        tool.display()
    );
    tool
}

pub fn bin() -> Command {
    let mut c = Command::cargo_bin("cgpu-lint").expect("binary");
    c.env_remove("NO_COLOR");
    c
}

/// The binary run in `dir` with `args`, colour off (`NO_COLOR`), as a plain std process.
pub fn run_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_cgpu-lint"))
        .env("NO_COLOR", "1")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// Everything a run printed: stdout, then stderr.
pub fn printed(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A process's exit status and both its streams, for an assertion's message.
pub fn show(out: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// What a run of the binary printed, as text.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<std::process::Output> for Out {
    fn from(out: std::process::Output) -> Self {
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

pub struct Run {
    pub code: i32,
    pub json: serde_json::Value,
    pub stderr: String,
}

impl Run {
    pub fn diagnostics(&self) -> &Vec<serde_json::Value> {
        self.json["diagnostics"].as_array().expect("diagnostics")
    }

    /// rule → count
    pub fn rules(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for d in self.diagnostics() {
            *m.entry(d["rule"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
        m
    }

    pub fn find(&self, rule: &str) -> Vec<&serde_json::Value> {
        self.diagnostics()
            .iter()
            .filter(|d| d["rule"] == rule)
            .collect()
    }
}

/// `cgpu-lint check --format json ARGS...`
pub fn check_json(args: &[&str]) -> Run {
    let out = bin()
        .arg("check")
        .arg("--format")
        .arg("json")
        .args(args)
        .output()
        .expect("run");
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    Run {
        code: out.status.code().unwrap_or(-1),
        json,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn expect_rules(run: &Run, want: &[(&str, usize)]) {
    let want: BTreeMap<String, usize> = want.iter().map(|(r, n)| (r.to_string(), *n)).collect();
    assert_eq!(run.rules(), want, "report: {:#}", run.json);
}

/// Standard base64 (padding and whitespace allowed): what the probe templates of the Helm
/// oracles print the values as.
pub fn base64(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => 0,
        }
    };
    let bytes: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    let mut out = Vec::new();
    for chunk in bytes.chunks(4) {
        let pad = chunk.iter().filter(|&&b| b == b'=').count();
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= val(c) << (18 - 6 * i);
        }
        let three = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&three[..3 - pad]);
    }
    out
}
