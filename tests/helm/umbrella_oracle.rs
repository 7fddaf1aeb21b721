//! Real Helm decides what an umbrella chart's subchart receives: generated parent
//! charts with ack-ai-installer as a dependency (without alias, under aliases, with `condition`
//! and `tags`), generated parent values files (the subchart's key, `global:` in the parent and in
//! the subchart's key, nulls, quoted values, a parent values.yaml under the file) are rendered by
//! Helm 3 and Helm 4 with a probe template added to a copy of charts-fixtures/ack-ai-installer
//! (`.Values | toJson` of each instance); each instance's JSON must equal the line `cgpu-lint
//! values` prints for it, and an instance Helm does not render must be printed as disabled.
//!
//! Each generated parent chart holds several instances of the subchart (one without alias, the
//! others aliased), so one `helm template` per chart and Helm version renders many cases:
//! `CGPU_UMBRELLA_CASES` instances in all (default 240), `CGPU_UMBRELLA_SEED` (default 23). The
//! case count and wall time are printed with `-- --nocapture`.

use crate::common::probe::*;
use crate::common::*;

use std::path::Path;

/// One generated parent chart: its Chart.yaml, the parent's values.yaml (perhaps none) and the
/// values file checked, and the instance keys in dependency order.
struct Case {
    chart_yaml: String,
    parent_defaults: Option<String>,
    values: String,
    keys: Vec<String>,
}

/// A `cgpu:` block whose every value the chart's templates can render.
fn cgpu_block(rng: &mut Rng, indent: &str) -> String {
    let mut s = format!("{indent}cgpu:\n");
    let i = format!("{indent}  ");
    let options: &[(&str, &[&str])] = &[
        ("policy", &["7", "2", "\"3\"", "null", "2.0", "0"]),
        ("enabled", &["true", "false", "\"false\"", "null", "yes"]),
        (
            "tag",
            &["null", "v1.5.10-2b9e7d4-aliyun", "\"v1.5.20-aa-aliyun\""],
        ),
        ("nodeSelector", &["{}", "{pool: gpu}", "null", "{a: null}"]),
        ("image", &["acs/cgpu-installer", "mirror/cgpu"]),
        ("checkRegions", &["\"true\"", "false", "null"]),
        ("extra", &["1", "null", "{a: [1, 2]}"]),
    ];
    let mut any = false;
    for (key, values) in options {
        if rng.chance(45) {
            s.push_str(&format!("{i}{key}: {}\n", rng.pick(values)));
            any = true;
        }
    }
    // `cgpu:` alone is null: the chart's templates then fail on `.Values.cgpu.enabled`.
    if !any {
        s.push_str(&format!("{i}policy: 2\n"));
    }
    s
}

fn generate_case(rng: &mut Rng, instances: usize) -> Case {
    let mut chart_yaml =
        String::from("apiVersion: v2\nname: platform\nversion: 0.1.0\ndependencies:\n");
    let mut keys = Vec::new();
    let plain = rng.chance(50);
    for n in 0..instances {
        let key = if n == 0 && plain {
            "ack-ai-installer".to_string()
        } else {
            format!("gpu{n}")
        };
        chart_yaml.push_str("  - name: ack-ai-installer\n    version: 1.12.6\n");
        if key != "ack-ai-installer" {
            chart_yaml.push_str(&format!("    alias: {key}\n"));
        }
        match rng.below(5) {
            0 => chart_yaml.push_str(&format!("    condition: {key}.enabled\n")),
            1 => chart_yaml.push_str(&format!("    condition: {key}.on,{key}.enabled\n")),
            2 => chart_yaml.push_str("    condition: global.gpuOn\n"),
            _ => {}
        }
        if rng.chance(25) {
            chart_yaml.push_str(&format!("    tags: [{}]\n", rng.pick(&["t1", "t2"])));
        }
        keys.push(key);
    }
    let mut values = String::new();
    match rng.below(6) {
        0 => values.push_str("global:\n  region: cn-beijing\n  extra: {a: 1}\n"),
        1 => values.push_str("global:\n  region: null\n"),
        2 => values.push_str("global: 3\n"),
        3 => values.push_str("global:\n  region: {a: 1}\n  gpuOn: false\n"),
        4 => values.push_str("global:\n  gpuOn: \"false\"\n"),
        _ => {}
    }
    if rng.chance(30) {
        values.push_str(&format!(
            "tags:\n  t1: {}\n  t2: {}\n",
            rng.pick(&["true", "false"]),
            rng.pick(&["true", "false", "\"no\""])
        ));
    }
    for key in &keys {
        if rng.chance(15) {
            continue;
        }
        values.push_str(&format!("{key}:\n"));
        if rng.chance(35) {
            values.push_str(&format!(
                "  enabled: {}\n",
                rng.pick(&["true", "false", "\"false\""])
            ));
        }
        if rng.chance(15) {
            values.push_str(&format!("  on: {}\n", rng.pick(&["true", "false", "1"])));
        }
        match rng.below(5) {
            0 => values.push_str("  global:\n    region: us-west-1\n    own: x\n"),
            1 => values.push_str("  global:\n    region: null\n"),
            2 => values.push_str("  global:\n    region: {b: 2}\n"),
            _ => {}
        }
        if rng.chance(85) {
            values.push_str(&cgpu_block(rng, "  "));
        }
        if rng.chance(20) {
            values.push_str("  other: {x: 1}\n");
        }
    }
    if values.is_empty() {
        values.push_str("{}\n");
    }
    let parent_defaults = rng.chance(30).then(|| {
        let key = keys[rng.below(keys.len())].clone();
        format!(
            "{key}:\n  cgpu:\n    policy: 4\n    tag: v1.5.9-aaaa-aliyun\n  enabled: {}\nglobal:\n  region: cn-shanghai\n",
            rng.pick(&["true", "false"])
        )
    });
    Case {
        chart_yaml,
        parent_defaults,
        values,
        keys,
    }
}

/// Each instance's values as Helm renders them (None: not rendered), or Helm's error.
fn helm_instances(
    version: u8,
    dir: &Path,
    home: &Path,
    keys: &[String],
) -> Result<Vec<Option<serde_json::Value>>, String> {
    let args = vec![
        "-f".to_string(),
        dir.join("case.yaml").to_string_lossy().into_owned(),
    ];
    let mut found = helm_probes(version, dir, &args, home)?;
    Ok(keys.iter().map(|k| found.remove(k)).collect())
}

/// What `cgpu-lint values` prints for each instance (None: disabled), or its error.
fn lint_instances(
    version: u8,
    dir: &Path,
    chart: &Path,
    keys: &[String],
) -> Result<Vec<Option<serde_json::Value>>, String> {
    let out = bin()
        .args(["values", "--helm", &version.to_string(), "--chart-values"])
        .arg(chart.join("values.yaml"))
        .arg(dir.join("case.yaml"))
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let mut out = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let line = lines
            .get(i)
            .unwrap_or_else(|| panic!("no line {i} in {text}"));
        assert_eq!(line["name"], serde_json::json!(key), "{text}");
        out.push(line.get("values").cloned());
    }
    Ok(out)
}

#[test]
fn what_the_subchart_receives_is_what_values_prints() {
    let started = std::time::Instant::now();
    let total = env_usize("CGPU_UMBRELLA_CASES", 240);
    let seed = env_usize("CGPU_UMBRELLA_SEED", 23) as u64;
    let per_chart = 8;
    let tmp = tempfile::tempdir().unwrap();
    let chart = probed_chart(tmp.path());
    let mut rng = Rng::seeded(seed);
    let cases: Vec<Case> = (0..total.div_ceil(per_chart))
        .map(|_| generate_case(&mut rng, per_chart))
        .collect();
    let failures = std::sync::Mutex::new(Vec::<String>::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let jobs = env_usize("CGPU_UMBRELLA_JOBS", 2);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(case) = cases.get(i) else { break };
                    let dir = tmp.path().join(format!("platform{i}"));
                    std::fs::create_dir_all(dir.join("charts")).unwrap();
                    std::os::unix::fs::symlink(&chart, dir.join("charts/ack-ai-installer")).unwrap();
                    std::fs::write(dir.join("Chart.yaml"), &case.chart_yaml).unwrap();
                    if let Some(d) = &case.parent_defaults {
                        std::fs::write(dir.join("values.yaml"), d).unwrap();
                    }
                    std::fs::write(dir.join("case.yaml"), &case.values).unwrap();
                    let home = tmp.path().join(format!("home{i}"));
                    for v in [3u8, 4] {
                        let want = helm_instances(v, &dir, &home, &case.keys);
                        let got = lint_instances(v, &dir, &chart, &case.keys);
                        let diff = match (&want, &got) {
                            (Ok(w), Ok(g)) => case
                                .keys
                                .iter()
                                .zip(w.iter().zip(g))
                                .filter(|(_, (a, b))| a != b)
                                .map(|(k, (a, b))| {
                                    format!(
                                        "{k}:\n  helm:      {}\n  cgpu-lint: {}\n",
                                        a.as_ref().map_or("(not rendered)".into(), |j| j.to_string()),
                                        b.as_ref().map_or("(disabled)".into(), |j| j.to_string())
                                    )
                                })
                                .collect::<String>(),
                            (Err(_), Err(_)) => String::new(),
                            _ => format!("helm: {want:?}\ncgpu-lint: {got:?}\n"),
                        };
                        if !diff.is_empty() {
                            failures.lock().unwrap().push(format!(
                                "Helm {v}, chart {i}:\n--- Chart.yaml\n{}--- values.yaml\n{}\n--- case.yaml\n{}--- differences\n{diff}",
                                case.chart_yaml,
                                case.parent_defaults.as_deref().unwrap_or("(none)"),
                                case.values
                            ));
                        }
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    println!(
        "umbrella oracle: {} instances in {} charts, Helm 3 and 4, seed {seed}: {:.1} s",
        cases.len() * per_chart,
        cases.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} of {} charts differ; the first:\n{}",
        failures.len(),
        cases.len() * 2,
        failures[0]
    );
}

/// Helm refuses a subchart key that is not a mapping (`gpu1: null` too); so does `values`, and
/// `check` reports it where it is.
#[test]
fn a_subchart_key_that_is_not_a_mapping_is_refused_like_helm_does() {
    let tmp = tempfile::tempdir().unwrap();
    let chart = probed_chart(tmp.path());
    for bad in ["null", "5", "[1]"] {
        let dir = tmp.path().join(format!("p-{}", bad.len()));
        std::fs::create_dir_all(dir.join("charts")).unwrap();
        std::os::unix::fs::symlink(&chart, dir.join("charts/ack-ai-installer")).unwrap();
        std::fs::write(
            dir.join("Chart.yaml"),
            "apiVersion: v2\nname: p\nversion: 0.1.0\ndependencies:\n  - name: ack-ai-installer\n    version: 1.12.6\n    alias: gpu\n",
        )
        .unwrap();
        let text = format!("global: {{}}\ngpu: {bad}\n");
        std::fs::write(dir.join("case.yaml"), &text).unwrap();
        let keys = vec!["gpu".to_string()];
        for v in [3u8, 4] {
            let helm = helm_instances(v, &dir, &tmp.path().join("home"), &keys).unwrap_err();
            assert!(helm.contains("type mismatch on gpu"), "{helm}");
            let lint = lint_instances(v, &dir, &chart, &keys).unwrap_err();
            assert!(lint.contains("type mismatch on gpu"), "{lint}");
        }
        let out = bin()
            .args(["check", "--format", "json"])
            .arg(dir.join("case.yaml"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{bad}");
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let d = &json["diagnostics"][0];
        assert_eq!(d["rule"], "not-a-mapping", "{json}");
        // Line 2, the column after `gpu: `.
        assert_eq!(d["line"], 2, "{json}");
        assert_eq!(d["column"], 6, "{json}");
    }
}
