//! Real Helm 3 and 4 (target/tools/helm3 and helm4, from scripts/install-test-tools), each run
//! with homes of its own under a directory the test owns: Helm 3 cannot read the plugins or
//! repositories Helm 4 writes, and neither may read the user's.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Helm `version` binary; a missing one fails with what to run.
pub fn helm_bin(version: u8) -> PathBuf {
    let bin = super::probe::root().join(format!("target/tools/helm{version}"));
    assert!(
        bin.is_file(),
        "{} is missing: run scripts/install-test-tools",
        bin.display()
    );
    bin
}

/// Make `home`'s data, plugin, config and cache directories.
pub fn make_homes(home: &Path) {
    for d in ["data/plugins", "config", "cache"] {
        std::fs::create_dir_all(home.join(d)).unwrap();
    }
}

/// A command running Helm `version` with its homes under `home` (made here when missing):
/// `HELM_DATA_HOME`, `HELM_PLUGINS` (`data/plugins`), `HELM_CONFIG_HOME`, `HELM_CACHE_HOME`.
pub fn helm_command(version: u8, home: &Path) -> Command {
    make_homes(home);
    let mut cmd = Command::new(helm_bin(version));
    cmd.env("HELM_DATA_HOME", home.join("data"))
        .env("HELM_PLUGINS", home.join("data/plugins"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_CACHE_HOME", home.join("cache"));
    cmd
}

/// What real Helm made of a set of values files: the values it hands the chart (as the probe
/// chart prints them, JSON), or its refusal.
pub enum HelmReading<'a> {
    Values(&'a str),
    Refused(&'a str),
}

/// cgpu-lint's reading of the same files held to Helm's.
pub struct Compared {
    /// Why they disagree, in words; `None` when they agree.
    pub problem: Option<String>,
    /// Both refuse and Helm's message names a line: (Helm's line, cgpu-lint's line in the same
    /// file, both messages). Measured, not asserted: go-yaml names some errors at the line of
    /// the construct they belong to.
    pub lines: Option<(usize, Option<usize>, String)>,
}

/// The one Helm-vs-ours comparison of the oracles: `BIN values --stack --no-config --helm V
/// EXTRA -- FILES` must print exactly Helm's values where Helm accepts (and `check` on the same
/// files must then report no yaml-syntax), and must fail with `file:line:column` where Helm
/// refuses. `extra` holds the `--set`-style flags, already joined (`--set=a=b`).
pub fn compare(
    bin: &Path,
    version: u8,
    helm: HelmReading,
    files: &[PathBuf],
    extra: &[String],
) -> Compared {
    let v = version.to_string();
    let run = |args: &[&str], extra: &[String]| -> super::Out {
        let mut cmd = Command::new(bin);
        cmd.args(args).args(extra).arg("--").args(files);
        super::Out::from(cmd.output().expect("run cgpu-lint"))
    };
    let ours = run(&["values", "--stack", "--no-config", "--helm", &v], extra);
    let mut lines = None;
    let problem = match helm {
        HelmReading::Values(json) if ours.code != 0 => Some(format!(
            "Helm accepts ({json}); cgpu-lint values fails: {}",
            ours.stderr.trim()
        )),
        HelmReading::Values(json) if ours.stdout.trim_end() != json => Some(format!(
            "values differ:\n      helm:      {json}\n      cgpu-lint: {}",
            ours.stdout.trim_end()
        )),
        HelmReading::Values(_) if files.is_empty() => None,
        HelmReading::Values(_) => {
            let c = run(
                &[
                    "check",
                    "--stack",
                    "--no-config",
                    "--format",
                    "json",
                    "--helm",
                    &v,
                ],
                &[],
            );
            c.stdout.contains("\"yaml-syntax\"").then(|| {
                format!(
                    "Helm accepts; cgpu-lint check reports yaml-syntax: {}",
                    c.stdout.trim()
                )
            })
        }
        HelmReading::Refused(why) => {
            let located: Vec<Option<usize>> = files
                .iter()
                .map(|f| our_line(&ours.stderr, &f.to_string_lossy()))
                .collect();
            if let Some((file, n)) = helm_line(why) {
                // Helm names the file unless the message was stored without it (one file).
                let i = files
                    .iter()
                    .position(|f| f.to_string_lossy() == file)
                    .or((files.len() == 1).then_some(0));
                let text = format!("{why} | {}", ours.stderr.trim());
                lines = Some((n, i.and_then(|i| located[i]), text));
            }
            if ours.code == 0 {
                Some(format!(
                    "Helm refuses ({why}); cgpu-lint values prints {}",
                    ours.stdout.trim_end()
                ))
            } else if !files.is_empty()
                && located.iter().all(Option::is_none)
                && (extra.is_empty() || !set_located(&ours.stderr))
            {
                Some(format!(
                    "both refuse, but cgpu-lint gives no file:line:column: {}",
                    ours.stderr.trim()
                ))
            } else {
                None
            }
        }
    };
    Compared { problem, lines }
}

/// The file (as Helm printed it, `FILE` when the name was taken out) and the line of Helm's
/// `failed to parse FILE: … yaml: line N:` message.
pub fn helm_line(why: &str) -> Option<(String, usize)> {
    let n = why
        .split("yaml: line ")
        .nth(1)?
        .split(':')
        .next()?
        .parse()
        .ok()?;
    let file = why
        .split("failed to parse ")
        .nth(1)
        .and_then(|r| r.split(": ").next())
        .unwrap_or("");
    Some((file.to_string(), n))
}

/// Does an error name a `--set` flag as its place (`--set a.b=1:1:1: …`, line and column within
/// the flag), as it does when the flag, not a file, is what Helm refuses?
fn set_located(stderr: &str) -> bool {
    stderr.lines().any(|l| {
        let l = l.strip_prefix("cgpu-lint: error: ").unwrap_or(l);
        let parts: Vec<&str> = l.split(':').collect();
        let num = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        l.starts_with("--set")
            && parts
                .windows(3)
                .any(|w| num(w[0]) && num(w[1]) && w[2].starts_with(' '))
    })
}

/// The 1-based line of cgpu-lint's first `FILE:L:C: ` for `file`.
pub fn our_line(stderr: &str, file: &str) -> Option<usize> {
    stderr.lines().find_map(|l| {
        let l = l.strip_prefix("cgpu-lint: error: ").unwrap_or(l);
        let rest = l.strip_prefix(file)?.strip_prefix(':')?;
        let (line, rest) = rest.split_once(':')?;
        let (col, rest) = rest.split_once(':')?;
        col.parse::<usize>().ok()?;
        rest.starts_with(' ').then_some(())?;
        line.parse().ok()
    })
}
