//! Real Helm decides what a Flux HelmRelease or an Argo CD Application hands the chart (issue
//! 23): each generated release is laid out as Helm flags in the documented order and rendered by
//! Helm 3 and Helm 4 with a probe template added to a copy of charts-fixtures/ack-ai-installer;
//! `cgpu-lint values` on the release must print the same values.
//!
//! - HelmRelease (<https://fluxcd.io/flux/components/helm/helmreleases/#values-references>;
//!   helm-controller `ChartValuesFromReferences`: each `valuesFrom` entry merged in order, then
//!   `spec.values`, with `transform.MergeMaps`, which is Helm's own `-f` merge): `-f` each
//!   referenced ConfigMap's `data[valuesKey]` in list order, then `-f spec.values`.
//! - Application (<https://argo-cd.readthedocs.io/en/release-3.4/user-guide/helm/>: "parameters >
//!   valuesObject > values > valueFiles"; argo-cd `ValuesYAML`: valuesObject, when set, instead of
//!   the `values` string; the repo server passes each `valueFiles` entry (relative to the
//!   source's `path`) as `--values`, then the values as the last `--values`, then `parameters` as
//!   `--set`, `forceString` ones as `--set-string`): `-f` each value file, `-f
//!   valuesObject-or-values`, then the flags.
//!
//! - helmfile (`pkg/state/state.go`, `namespaceAndValuesFlags`: each `values:` entry as a
//!   `--values` file in order, an inline mapping written to a file of its own, then `set:` as
//!   `--set`): the same flags.
//!
//! Size: `CGPU_GITOPS_CASES` releases (default 40), `CGPU_GITOPS_SEED` (default 23),
//! `CGPU_GITOPS_JOBS` (default 2); the count and wall time are printed with `-- --nocapture`.

use crate::common::probe::*;
use crate::common::*;

use std::path::Path;

/// A values mapping at column 0 whose every value the chart's templates render.
fn values_text(rng: &mut Rng) -> String {
    let options: &[(&str, &[&str])] = &[
        ("policy", &["7", "2", "\"3\"", "null", "2.0"]),
        ("enabled", &["true", "false", "\"false\"", "yes"]),
        (
            "tag",
            &["null", "v1.5.10-2b9e7d4-aliyun", "\"v1.5.20-aa-aliyun\""],
        ),
        ("nodeSelector", &["{}", "{pool: gpu}", "null", "{a: null}"]),
        ("imagePullPolicy", &["always", "Never"]),
        ("extra", &["1", "{a: [1, 2]}"]),
    ];
    let mut s = String::from("cgpu:\n");
    let mut any = false;
    for (key, values) in options {
        if rng.chance(40) {
            s.push_str(&format!("  {key}: {}\n", rng.pick(values)));
            any = true;
        }
    }
    if !any {
        s.push_str("  policy: 4\n");
    }
    if rng.chance(25) {
        s.push_str("global:\n  region: cn-beijing\n");
    }
    s
}

fn indent(text: &str, by: usize) -> String {
    let pad = " ".repeat(by);
    text.lines().map(|l| format!("{pad}{l}\n")).collect()
}

/// One generated release: the file, the Helm flags that lay it out, what it is.
struct Case {
    file: String,
    /// Values files in order, then `--set`/`--set-string` flags.
    layers: Vec<String>,
    /// Files beside the release file (name, text).
    beside: Vec<(String, String)>,
    sets: Vec<(String, String)>,
    what: &'static str,
}

fn helm_release(rng: &mut Rng) -> Case {
    let mut file = String::new();
    let mut layers = Vec::new();
    let mut refs = String::new();
    let maps = rng.below(3);
    let mut order: Vec<usize> = (0..maps).collect();
    if maps == 2 && rng.chance(50) {
        order.reverse();
    }
    let mut data = Vec::new();
    for i in 0..maps {
        let key = if rng.chance(50) {
            "values.yaml"
        } else {
            "gpu.yaml"
        };
        let text = values_text(rng);
        file.push_str(&format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm{i}\ndata:\n  {key}: |\n{}---\n",
            indent(&text, 4)
        ));
        data.push((key, text));
    }
    for &i in &order {
        let (key, text) = &data[i];
        refs.push_str(&format!("    - kind: ConfigMap\n      name: cm{i}\n"));
        if *key != "values.yaml" {
            refs.push_str(&format!("      valuesKey: {key}\n"));
        }
        layers.push(text.clone());
    }
    file.push_str("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: gpu\nspec:\n  interval: 10m\n  chart:\n    spec:\n      chart: ack-ai-installer\n");
    if !refs.is_empty() {
        file.push_str("  valuesFrom:\n");
        file.push_str(&refs);
    }
    if rng.chance(80) {
        let text = values_text(rng);
        file.push_str("  values:\n");
        file.push_str(&indent(&text, 4));
        layers.push(text);
    }
    Case {
        file,
        layers,
        sets: Vec::new(),
        beside: Vec::new(),
        what: "HelmRelease",
    }
}

fn application(rng: &mut Rng) -> Case {
    let mut helm = String::new();
    let object = rng.chance(50).then(|| values_text(rng));
    let string = rng.chance(60).then(|| values_text(rng));
    if let Some(o) = &object {
        helm.push_str("      valuesObject:\n");
        helm.push_str(&indent(o, 8));
    }
    if let Some(s) = &string {
        helm.push_str("      values: |\n");
        helm.push_str(&indent(s, 8));
    }
    let mut sets = Vec::new();
    let names = [
        "cgpu.policy",
        "cgpu.tag",
        "cgpu.enabled",
        "cgpu.checkRegions",
    ];
    let mut params = String::new();
    // Argo CD's repo server puts each parameter into a map by name (`Set`, or `SetString` with
    // forceString), the last of one name winning, and passes `--set name=value` for each, the
    // value's commas escaped (`cleanSetParameters`), then `--set-string` for each.
    let mut set_map: Vec<(String, String)> = Vec::new();
    let mut string_map: Vec<(String, String)> = Vec::new();
    let mut chosen: Vec<&str> = names.iter().copied().filter(|_| rng.chance(30)).collect();
    if !chosen.is_empty() && rng.chance(25) {
        chosen.push(chosen[0]);
    }
    for name in chosen {
        let value = rng.pick(&["3", "v1.5.20-aa-aliyun", "false", "007", "null", "7", "a,b"]);
        let force = rng.chance(40);
        params.push_str(&format!(
            "        - name: {name}\n          value: \"{value}\"\n"
        ));
        if force {
            params.push_str("          forceString: true\n");
        }
        let map = if force { &mut string_map } else { &mut set_map };
        map.retain(|(n, _)| n != name);
        map.push((name.to_string(), value.replace(',', "\\,")));
    }
    for (flag, map) in [("--set", &set_map), ("--set-string", &string_map)] {
        for (name, value) in map {
            sets.push((flag.to_string(), format!("{name}={value}")));
        }
    }
    if !params.is_empty() {
        helm.push_str("      parameters:\n");
        helm.push_str(&params);
    }
    // A source in this repository (`path`): its valueFiles (relative to the path) come first.
    let mut layers = Vec::new();
    let mut beside = Vec::new();
    let source = if rng.chance(50) {
        let files = 1 + rng.below(2);
        helm.push_str("      valueFiles:\n");
        for n in 0..files {
            let text = values_text(rng);
            helm.push_str(&format!("        - vf{n}.yaml\n"));
            beside.push((format!("charts/ack-ai-installer/vf{n}.yaml"), text.clone()));
            layers.push(text);
        }
        "    path: charts/ack-ai-installer\n    repoURL: https://git.example.com/gitops.git\n"
    } else {
        "    chart: ack-ai-installer\n    repoURL: https://example.com/charts\n"
    };
    layers.extend(object.or(string));
    let mut file = format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: gpu\nspec:\n  source:\n{source}"
    );
    if !helm.is_empty() {
        file.push_str("    helm:\n");
        file.push_str(&helm);
    }
    Case {
        file,
        layers,
        sets,
        beside,
        what: "Application",
    }
}

fn helmfile(rng: &mut Rng) -> Case {
    let mut file = String::from(
        "repositories:\n  - name: aliyun\n    url: https://example.com/charts\nreleases:\n  - name: web\n    chart: ingress-nginx/ingress-nginx\n    values:\n      - cgpu: {policy: 9}\n  - name: gpu\n    namespace: kube-system\n    chart: aliyun/ack-ai-installer\n",
    );
    let mut layers = Vec::new();
    let mut beside = Vec::new();
    let entries = 1 + rng.below(3);
    file.push_str("    values:\n");
    for n in 0..entries {
        let text = values_text(rng);
        if rng.chance(50) {
            let name = format!("values-{n}.yaml");
            file.push_str(&format!("      - {name}\n"));
            beside.push((name, text.clone()));
        } else {
            // `- cgpu:` then the rest of the mapping under it.
            let body = indent(&text, 8);
            let (first, rest) = body.split_at(body.find('\n').unwrap() + 1);
            file.push_str(&format!("      - {}", first.trim_start()));
            file.push_str(rest);
        }
        layers.push(text);
    }
    // helmfile's setFlags then setStringFlags: `--set name=value` for each `set:` entry, then
    // `--set-string` for each `setString:` entry, `{`, `}` and `,` escaped with a backslash.
    let mut sets = Vec::new();
    for (key, flag) in [("set", "--set"), ("setString", "--set-string")] {
        if rng.chance(50) {
            file.push_str(&format!("    {key}:\n"));
            let mut any = false;
            for name in ["cgpu.policy", "cgpu.tag", "cgpu.enabled"] {
                if rng.chance(60) || (!any && name == "cgpu.enabled") {
                    any = true;
                    let value = rng.pick(&["3", "v1.5.20-aa-aliyun", "007", "false", "x,{y}"]);
                    file.push_str(&format!(
                        "      - name: {name}\n        value: \"{value}\"\n"
                    ));
                    let escaped = value
                        .replace('{', "\\{")
                        .replace('}', "\\}")
                        .replace(',', "\\,");
                    sets.push((flag.to_string(), format!("{name}={escaped}")));
                }
            }
        }
    }
    Case {
        file,
        layers,
        sets,
        beside,
        what: "helmfile",
    }
}

fn lint_values(version: u8, chart: &Path, file: &Path) -> Result<serde_json::Value, String> {
    let out = bin()
        .args(["values", "--helm", &version.to_string(), "--chart-values"])
        .arg(chart.join("values.yaml"))
        .arg(file)
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

#[test]
fn what_a_release_hands_the_chart_is_what_values_prints() {
    let started = std::time::Instant::now();
    let total = env_usize("CGPU_GITOPS_CASES", 40);
    let seed = env_usize("CGPU_GITOPS_SEED", 23) as u64;
    let jobs = env_usize("CGPU_GITOPS_JOBS", 2);
    let tmp = tempfile::tempdir().unwrap();
    let chart = probed_chart(tmp.path());
    let mut rng = Rng::seeded(seed);
    let cases: Vec<Case> = (0..total)
        .map(|i| match i % 3 {
            0 => helm_release(&mut rng),
            1 => application(&mut rng),
            _ => helmfile(&mut rng),
        })
        .collect();
    let failures = std::sync::Mutex::new(Vec::<String>::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(case) = cases.get(i) else { break };
                    let dir = tmp.path().join(format!("case{i}"));
                    std::fs::create_dir_all(&dir).unwrap();
                    let file = dir.join("release.yaml");
                    std::fs::write(&file, &case.file).unwrap();
                    for (name, text) in &case.beside {
                        let p = dir.join(name);
                        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                        std::fs::write(p, text).unwrap();
                    }
                    let mut args = Vec::new();
                    for (n, layer) in case.layers.iter().enumerate() {
                        let p = dir.join(format!("layer{n}.yaml"));
                        std::fs::write(&p, layer).unwrap();
                        args.push("-f".to_string());
                        args.push(p.to_string_lossy().into_owned());
                    }
                    for (flag, arg) in &case.sets {
                        args.push(flag.clone());
                        args.push(arg.clone());
                    }
                    for v in [3u8, 4] {
                        let want = helm_probes(v, &chart, &args, &dir.join("home"))
                            .map(|mut p| p.remove("ack-ai-installer"));
                        let got = lint_values(v, &chart, &file);
                        let same = match (&want, &got) {
                            (Ok(Some(w)), Ok(g)) => w == g,
                            (Err(_), Err(_)) => true,
                            _ => false,
                        };
                        if !same {
                            failures.lock().unwrap().push(format!(
                                "Helm {v}, {} case {i}:\n--- release.yaml\n{}--- helm {args:?}\n{want:?}\n--- cgpu-lint\n{got:?}",
                                case.what, case.file
                            ));
                        }
                    }
                }
            });
        }
    });
    println!(
        "gitops oracle: {} releases (HelmRelease, Application, helmfile), Helm 3 and 4, seed {seed}: {:.1} s",
        cases.len(),
        started.elapsed().as_secs_f64()
    );
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} renders differ; the first:\n{}",
        failures.len(),
        cases.len() * 2,
        failures[0]
    );
}

/// A values mapping the chart's values.schema.json accepts (kustomize runs `helm template`
/// without `--skip-schema-validation`).
fn valid_values_text(rng: &mut Rng) -> String {
    let options: &[(&str, &[&str])] = &[
        ("policy", &["0", "2", "3", "5"]),
        ("enabled", &["true", "false"]),
        ("tag", &["v1.5.10-2b9e7d4-aliyun", "v1.5.20-aa-aliyun"]),
        ("nodeSelector", &["{}", "{pool: gpu}", "{a: b, c: d}"]),
        ("imagePullPolicy", &["Always", "Never"]),
    ];
    let mut s = String::from("cgpu:\n");
    let mut any = false;
    for (key, values) in options {
        if rng.chance(45) {
            s.push_str(&format!("  {key}: {}\n", rng.pick(values)));
            any = true;
        }
    }
    if !any {
        s.push_str("  policy: 4\n");
    }
    s
}

/// kustomize's helm generator, run for real (`kubectl kustomize --enable-helm`, kubectl 1.33's
/// built-in kustomize, with real Helm 3 and the probed chart under `charts/`): generated
/// `helmCharts` entries with `valuesFile`, `valuesInline`, `valuesMerge` (override, merge,
/// replace, or unset) and `additionalValuesFiles`; `cgpu-lint values` on the kustomization must
/// print what the chart's templates got. Size: `CGPU_KUSTOMIZE_CASES` (default 24), seed
/// `CGPU_GITOPS_SEED`.
#[test]
fn what_kustomize_inflates_the_chart_with_is_what_values_prints() {
    let kubectl = root().join("target/tools/kubectl");
    let helm = root().join("target/tools/helm3");
    assert!(
        kubectl.is_file() && helm.is_file(),
        "scripts/install-test-tools installs kubectl and helm3 in target/tools"
    );
    let started = std::time::Instant::now();
    let total = env_usize("CGPU_KUSTOMIZE_CASES", 24);
    let seed = env_usize("CGPU_GITOPS_SEED", 23) as u64;
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = Rng::seeded(seed);
    let mut failures = Vec::new();
    for i in 0..total {
        let dir = tmp.path().join(format!("k{i}"));
        let chart = probed_chart(&dir.join("charts"));
        std::fs::create_dir_all(dir.join("values")).unwrap();
        let mut entry = String::from("  - name: ack-ai-installer\n    releaseName: gpu\n");
        if rng.chance(60) {
            std::fs::write(dir.join("values/base.yaml"), valid_values_text(&mut rng)).unwrap();
            entry.push_str("    valuesFile: values/base.yaml\n");
        }
        if rng.chance(75) {
            entry.push_str("    valuesInline:\n");
            entry.push_str(&indent(&valid_values_text(&mut rng), 6));
        }
        match rng.below(4) {
            0 => entry.push_str("    valuesMerge: merge\n"),
            1 => entry.push_str("    valuesMerge: replace\n"),
            2 => entry.push_str("    valuesMerge: override\n"),
            _ => {}
        }
        let extra = rng.below(3);
        if extra > 0 {
            entry.push_str("    additionalValuesFiles:\n");
            for n in 0..extra {
                let name = format!("values/extra{n}.yaml");
                std::fs::write(dir.join(&name), valid_values_text(&mut rng)).unwrap();
                entry.push_str(&format!("      - {name}\n"));
            }
        }
        let file = dir.join("kustomization.yaml");
        let text = format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nhelmCharts:\n{entry}"
        );
        std::fs::write(&file, &text).unwrap();
        let out = std::process::Command::new(&kubectl)
            .args(["kustomize", "--enable-helm", "--helm-command"])
            .arg(&helm)
            .arg(&dir)
            .env("HOME", dir.join("home"))
            .output()
            .unwrap();
        let want = if out.status.success() {
            let src = cgpu_lint::yaml::Source::new(
                "kustomized",
                String::from_utf8_lossy(&out.stdout).into_owned(),
            );
            let parsed = cgpu_lint::yaml::parse(&src);
            parsed.documents.iter().find_map(|d| {
                let r = d.root.as_ref()?;
                (r.pointer("/metadata/name")?.as_str()? == "probe-ack-ai-installer").then(|| {
                    let b64 = r.pointer("/data/values").and_then(|n| n.as_str()).unwrap();
                    let bytes = cgpu_lint::yaml::resolve::decode_base64(b64).unwrap();
                    serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()
                })
            })
        } else {
            None
        };
        let got = lint_values(3, &chart, &file);
        match (&want, &got) {
            (Some(w), Ok(g)) if w == g => {}
            _ => failures.push(format!(
                "case {i}:\n--- kustomization.yaml\n{text}--- kustomize\n{want:?}\n{}\n--- cgpu-lint\n{got:?}",
                String::from_utf8_lossy(&out.stderr)
            )),
        }
    }
    println!(
        "kustomize oracle: {total} helmCharts entries, seed {seed}: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} of {total} differ; the first:\n{}",
        failures.len(),
        failures[0]
    );
}
