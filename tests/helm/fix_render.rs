//! Real Helm proves "safe": every fix golden, every fixture and a generated set of
//! values files (every fixable finding, alone and mixed; seeded) are rendered through
//! charts-fixtures/ack-ai-installer with real Helm 3 and Helm 4 before and after `cgpu-lint fix`.
//!
//! - Default `fix` (safe fixes only): the rendered manifests are byte-identical, or the original
//!   is refused (Helm fails to render it, or the API server would refuse what it renders: the
//!   model in [`refusal`]) and then the fixed one renders.
//! - `fix --unsafe-fixes`: the render of the result is exactly the render of the safe result with
//!   the values each unsafe fix names (`cgpu.enabled becomes false` → `--set-json
//!   cgpu.enabled=false`), and each message names those keys.
//!
//! Manifests among the fixtures (DaemonSets, rendered streams, node lists) are not rendered: the
//! fixed manifest must equal the original unless the API server refuses the original.
//!
//! The chart is rendered with `--skip-schema-validation`: its values.schema.json is cgpu-lint's
//! own schema (generated for the tests), not the public chart's, which reads values through its
//! templates only; with the schema Helm refuses almost every case before rendering and the test
//! would prove nothing.
//!
//! Size: `CGPU_FIX_RENDER_CASES` generated files (default 60; `scripts/test --full` runs 200),
//! `CGPU_FIX_RENDER_SEED` (default 20), `CGPU_FIX_RENDER_JOBS` parallel Helm processes (default
//! 6). The case count and wall time are printed (`cargo test --test fix_render -- --nocapture`).

use crate::common::*;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cgpu_lint::yaml::{Node, Scalar, Source, Value};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What Helm made of a values file: the manifests, or the error it stopped with.
type Render = Result<String, String>;

/// A render's inputs: the Helm version, the values text, the `--set-json` arguments.
type RenderKey = (u8, String, Vec<String>);

/// Real Helm 3 and 4 with homes of their own, and a cache of renders.
struct Helm {
    home: tempfile::TempDir,
    cache: Mutex<HashMap<RenderKey, Arc<Render>>>,
    renders: std::sync::atomic::AtomicUsize,
}

impl Helm {
    fn new() -> Helm {
        for v in [3, 4] {
            helm::helm_bin(v);
        }
        Helm {
            home: tempfile::tempdir().unwrap(),
            cache: Mutex::new(HashMap::new()),
            renders: Default::default(),
        }
    }

    /// `helm template` of the chart with `text` as the one values file, then `--set-json` each
    /// of `sets` in order.
    fn render(&self, version: u8, text: &str, sets: &[String]) -> Arc<Render> {
        let key = (version, text.to_string(), sets.to_vec());
        if let Some(r) = self.cache.lock().unwrap().get(&key) {
            return r.clone();
        }
        let n = self
            .renders
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = self.home.path().join(format!("h{version}"));
        let values = self.home.path().join(format!("values-{n}.yaml"));
        std::fs::write(&values, text).unwrap();
        let mut cmd = helm::helm_command(version, &d);
        cmd.args(["template", "r"])
            .arg(root().join("charts-fixtures/ack-ai-installer"))
            .arg("--skip-schema-validation")
            .arg("-f")
            .arg(&values);
        for s in sets {
            cmd.arg("--set-json").arg(s);
        }
        let out = cmd.output().expect("run helm");
        let _ = std::fs::remove_file(&values);
        let r = Arc::new(if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            // The values file's temporary name is not part of the reason.
            let err =
                String::from_utf8_lossy(&out.stderr).replace(&*values.to_string_lossy(), "VALUES");
            Err(err)
        });
        self.cache.lock().unwrap().insert(key, r.clone());
        r
    }
}

// ---------- what the API server refuses ----------

/// Why the API server would refuse these manifests (Kubernetes core types and validation), or
/// `None`. Only what a fix of cgpu-lint can turn around is modelled: a number or boolean where a
/// string is needed (EnvVar.value, nodeSelector values, ConfigMap data), an imagePullPolicy
/// outside Always/IfNotPresent/Never (supportedPullPolicies), a nodeSelector that is not a map,
/// a label value that breaks label syntax.
fn refusal(manifests: &str) -> Option<String> {
    let src = Source::new("rendered.yaml", manifests.to_string());
    let parsed = cgpu_lint::yaml::parse(&src);
    if let Some(e) = &parsed.error {
        return Some(format!("does not parse: {}", e.message));
    }
    for doc in &parsed.documents {
        if let Some(root) = &doc.root
            && let Some(why) = refused_node(root, root.get("kind").and_then(Node::as_str))
        {
            return Some(why);
        }
    }
    None
}

fn label_value_ok(s: &str) -> bool {
    let ok = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    s.is_empty()
        || (s.len() <= 63
            && s.chars().all(ok)
            && s.starts_with(|c: char| c.is_ascii_alphanumeric())
            && s.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

fn refused_node(node: &Node, kind: Option<&str>) -> Option<String> {
    match &node.value {
        Value::Map(entries) => {
            let kind = node.get("kind").and_then(Node::as_str).or(kind);
            for e in entries {
                let v = &e.value;
                match e.key.as_str() {
                    "imagePullPolicy" => match v.as_str() {
                        Some("Always" | "IfNotPresent" | "Never") => {}
                        _ => return Some(format!("imagePullPolicy {}", v.raw())),
                    },
                    "env" => {
                        for item in v.as_seq().unwrap_or_default() {
                            if let Some(val) = item.get("value")
                                && !matches!(val.scalar(), Some(Scalar::Str(_) | Scalar::Null))
                            {
                                return Some(format!("EnvVar.value {}", val.raw()));
                            }
                        }
                    }
                    "nodeSelector" => match &v.value {
                        Value::Map(sel) => {
                            for s in sel {
                                match s.value.scalar() {
                                    Some(Scalar::Str(t)) if label_value_ok(t) => {}
                                    Some(Scalar::Null) => {}
                                    _ => {
                                        return Some(format!(
                                            "nodeSelector {}: {}",
                                            s.key,
                                            s.value.raw()
                                        ));
                                    }
                                }
                            }
                        }
                        Value::Scalar(Scalar::Null) => {}
                        _ => return Some("nodeSelector is not a map".into()),
                    },
                    "data" if kind == Some("ConfigMap") => {
                        for d in v.as_map().unwrap_or_default() {
                            if !matches!(d.value.scalar(), Some(Scalar::Str(_))) {
                                return Some(format!(
                                    "ConfigMap data {}: {}",
                                    d.key,
                                    d.value.raw()
                                ));
                            }
                        }
                    }
                    _ => {}
                }
                if let Some(why) = refused_node(v, kind) {
                    return Some(why);
                }
            }
            None
        }
        Value::Seq(items) => items.iter().find_map(|i| refused_node(i, kind)),
        Value::Scalar(_) => None,
    }
}

/// Helm failed, or the API server would refuse what it rendered.
fn refused(r: &Render) -> Option<String> {
    match r {
        Err(e) => Some(format!("Helm refuses: {}", e.trim())),
        Ok(m) => refusal(m),
    }
}

// ---------- the generated values files ----------

/// Lines of a `cgpu:` block, one group per key; each entry is one or more lines (two spaces in)
/// that give some fixable finding (and a few that give none, as neighbours).
fn snippets() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        (
            "enabled",
            vec![
                "enabled: \"true\"",
                "enabled: \"false\"",
                "enabled: \"yes\"",
                "enabled: \"no\"",
                "enabled: \"True\"",
                "enabled: 'off'",
                "enabled: On",
                "enabled: yes",
                "enabled: n",
                "enabled: true",
            ],
        ),
        (
            "checkRegions",
            vec![
                "checkRegions: \"true\"",
                "checkRegions: \"false\"",
                "checkRegions: \"yes\"",
                "checkRegions: ' true'",
                "checkRegions: off",
                "checkRegions: Y",
                "checkRegions: false",
            ],
        ),
        (
            "policy",
            vec![
                "policy: \"1\"",
                "policy: \"0\"",
                "policy: '5'",
                "policy: \"02\"",
                "policy: \"00\"",
                "policy: 3.0",
                "policy: 2.",
                "policy: 1e0",
                "policy: -0.0",
                "policy: 03",
                "policy: 04   # octal",
                "policy: preemptive",
                "policy: fair-share",
                "policy: Weighted",
                "policy: \"soft\"",
                "policy: 2",
            ],
        ),
        (
            "imagePullPolicy",
            vec![
                "imagePullPolicy: always",
                "imagePullPolicy: ifnotpresent",
                "imagePullPolicy: \"never\"",
                "imagePullPolicy: 'ALWAYS'",
                "imagePullPolicy: Always",
            ],
        ),
        (
            "image",
            vec![
                "image: acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun",
                "image: registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer",
                "image: registry.cn-beijing.aliyuncs.com/acs/cgpu-installer:v1.5.12-77ac0de-aliyun",
                "image: acs/cgpu-installer",
            ],
        ),
        (
            "tag",
            vec![
                "tag: latest",
                "tag: v1.5.10-2b9e7d4-aliyun",
                "tag: \"v1.5.12-77ac0de-aliyun\"",
            ],
        ),
        (
            "nodeSelector",
            vec![
                "nodeSelector:\n    gpu-pool: yes",
                "nodeSelector:\n    gpu-pool: no\n    tier: 2",
                "nodeSelector:\n    tier: 010",
                "nodeSelector:\n    ratio: 1.5\n    zone: a",
                "nodeSelector:\n    big: 1e3",
                "nodeSelector:\n    big: 1234567",
                "nodeSelector:\n    on: on",
                "nodeSelector:\n    dedicated: true",
                "nodeSelector: {gpu-pool: Off}",
                "nodeSelector: [\"gpu-pool=a\", \"tier=b\"]",
                "nodeSelector:\n  - gpu-pool=a   # a list\n  - zone = b",
                "nodeSelector: []",
                "nodeSelector:\n    ack.node.gpu.schedule: cgpu",
            ],
        ),
        (
            "typo",
            vec![
                "polcy: 4",
                "polcy: 1",
                "Policy: \"02\"",
                "nodeSelecter:\n    gpu-pool: a",
                "nodeselector: {zone: b}",
                "enable: false",
                "Enabled: true",
                "imagepullpolicy: Never",
                "checkRegion: false",
                "tags: v1.5.12-77ac0de-aliyun",
                "imagePullPolicies: Always",
            ],
        ),
    ]
}

/// `n` values files: the first ones hold one fixable snippet each (every snippet alone), the rest
/// two to six of them mixed (one per key).
fn generate(n: usize, seed: u64) -> Vec<(String, String)> {
    let groups = snippets();
    let mut out = Vec::new();
    let alone: Vec<&str> = groups.iter().flat_map(|(_, s)| s.iter().copied()).collect();
    let mut rng = Rng::seeded(seed);
    let heads = [
        "",
        "# generated\n",
        "global:\n  region: cn-beijing\n",
        "other:\n  keep: yes\n",
    ];
    for i in 0..n {
        let mut lines: Vec<&str> = Vec::new();
        if i < alone.len() {
            lines.push(alone[i]);
        } else {
            let mut keys: Vec<usize> = (0..groups.len()).collect();
            let k = 2 + rng.below(5);
            for _ in 0..k.min(keys.len()) {
                let g = keys.swap_remove(rng.below(keys.len()));
                lines.push(rng.pick(&groups[g].1));
            }
        }
        let mut text = rng.pick(&heads).to_string();
        text.push_str("cgpu:\n");
        for l in lines {
            text.push_str("  ");
            text.push_str(l);
            text.push('\n');
        }
        if rng.below(4) == 0 {
            text = text.replace('\n', "\r\n");
        }
        out.push((format!("gen-{i:04}.yaml"), text));
    }
    out
}

// ---------- the check ----------

struct Case {
    name: String,
    original: String,
    /// `cgpu-lint fix` (default) and `fix --unsafe-fixes`, from the binary.
    safe: String,
    unsafe_: String,
    /// The unsafe fixes applied by `--unsafe-fixes`, in order: (rule, message line, sets).
    consequences: Vec<(String, String, Vec<String>)>,
}

/// Copy the cases into two folders, run the binary's `fix` over each (one call per folder), and
/// read the results back; the consequences come from the library's `lint_fix`, whose text must
/// be the binary's.
fn fix_all(files: &[(String, String)]) -> Vec<Case> {
    let dir = tempfile::tempdir().unwrap();
    let run = |sub: &str, extra: &[&str]| -> Vec<String> {
        let d = dir.path().join(sub);
        std::fs::create_dir_all(&d).unwrap();
        for (name, text) in files {
            std::fs::write(d.join(name), text).unwrap();
        }
        let out = bin()
            .current_dir(dir.path())
            .arg("fix")
            .args(extra)
            .arg("--no-config")
            .arg("--quiet")
            .arg(sub)
            .output()
            .unwrap();
        assert!(
            out.status.code() != Some(2),
            "fix {extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        files
            .iter()
            .map(|(name, _)| std::fs::read_to_string(d.join(name)).unwrap())
            .collect()
    };
    let safe = run("safe", &[]);
    let unsafe_ = run("unsafe", &["--unsafe-fixes"]);
    files
        .iter()
        .zip(safe.into_iter().zip(unsafe_))
        .map(|((name, original), (safe, unsafe_))| {
            let src = Source::new(name.clone(), original.clone());
            // Each fix's applicability is the one its catalogue entry states.
            for d in cgpu_lint::lint::lint_file(&src, &Default::default()) {
                use cgpu_lint::catalogue::FixClass as C;
                use cgpu_lint::diag::Applicability as A;
                let class = d.rule.info().fix.map(|f| f.class);
                match (d.fix_applicability(), class) {
                    (None, _) | (Some(_), Some(C::Depends)) => {}
                    (Some(A::Safe), Some(C::Safe)) | (Some(A::Unsafe), Some(C::Unsafe)) => {}
                    (a, c) => panic!("{name}: {} fix is {a:?}, the catalogue says {c:?}", d.rule),
                }
            }
            let fixed = cgpu_lint::lint::fix::lint_fix(&src, &Default::default(), true);
            assert_eq!(fixed.text, unsafe_, "{name}: library and binary disagree");
            let consequences = fixed
                .applied
                .iter()
                .filter_map(|a| {
                    let c = a.consequence.as_ref()?;
                    let sets = c.sets.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    Some((a.rule.name().to_string(), c.line.clone(), sets))
                })
                .collect();
            Case {
                name: name.clone(),
                original: original.clone(),
                safe,
                unsafe_,
                consequences,
            }
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    cases: usize,
    safe_changed: usize,
    identical: usize,
    refused_original: usize,
    unsafe_checked: usize,
    unsafe_render_changed: usize,
    failures: Vec<String>,
}

fn check_values_case(helm: &Helm, case: &Case, tally: &Mutex<Tally>) {
    let mut failures = Vec::new();
    let (mut identical, mut refused_original, mut unsafe_checked, mut unsafe_changed) =
        (0, 0, 0, 0);
    let multi_doc = case.original.contains("\n---");
    for v in [3u8, 4] {
        if case.safe != case.original {
            let o = helm.render(v, &case.original, &[]);
            let f = helm.render(v, &case.safe, &[]);
            match refused(&o) {
                None if *f == *o => identical += 1,
                None => failures.push(format!(
                    "{} (Helm {v}): the default fix changed the render\n--- original\n{}\n--- fixed\n{}\n--- render before\n{}\n--- render after\n{}",
                    case.name,
                    case.original,
                    case.safe,
                    o.as_ref().as_ref().unwrap(),
                    match &*f { Ok(t) | Err(t) => t },
                )),
                Some(why) => {
                    refused_original += 1;
                    // The fixed one renders, unless Helm stops for the same reason as before
                    // (a problem no fix touches).
                    if let (Err(after), Err(before)) = (&*f, &*o)
                        && after != before
                    {
                        failures.push(format!(
                            "{} (Helm {v}): the original is refused ({why}) and the fixed one fails otherwise: {after}",
                            case.name
                        ));
                    }
                }
            }
        }
        if case.consequences.is_empty() || (v == 3 && multi_doc) {
            continue;
        }
        let sets: Vec<String> = case
            .consequences
            .iter()
            .flat_map(|(_, _, s)| s.clone())
            .collect();
        if sets.is_empty() {
            continue;
        }
        unsafe_checked += 1;
        let u = helm.render(v, &case.unsafe_, &[]);
        let named = helm.render(v, &case.safe, &sets);
        if *u != *named {
            failures.push(format!(
                "{} (Helm {v}): --unsafe-fixes changed more than its messages name ({:?})\n--- unsafe\n{}\n--- render\n{}\n--- safe + named\n{}",
                case.name,
                case.consequences,
                case.unsafe_,
                match &*u { Ok(t) | Err(t) => t },
                match &*named { Ok(t) | Err(t) => t },
            ));
        }
        if *u != *helm.render(v, &case.safe, &[]) {
            unsafe_changed += 1;
        }
    }
    for (rule, line, sets) in &case.consequences {
        for s in sets {
            let key = s.split('=').next().unwrap();
            if !line.contains(key) {
                failures.push(format!(
                    "{}: the {rule} message does not name {key}: {line}",
                    case.name
                ));
            }
        }
    }
    let mut t = tally.lock().unwrap();
    t.cases += 1;
    t.safe_changed += usize::from(case.safe != case.original);
    t.identical += identical;
    t.refused_original += refused_original;
    t.unsafe_checked += unsafe_checked;
    t.unsafe_render_changed += unsafe_changed;
    t.failures.extend(failures);
}

/// A manifest (DaemonSet, stream, node list): the default fix leaves it as it is unless the API
/// server refuses the original.
fn check_manifest_case(case: &Case, tally: &Mutex<Tally>) {
    let mut t = tally.lock().unwrap();
    t.cases += 1;
    if case.safe == case.original {
        return;
    }
    t.safe_changed += 1;
    match refusal(&case.original) {
        Some(_) => t.refused_original += 1,
        None => t.failures.push(format!(
            "{}: the default fix changed a manifest the API server accepts\n--- original\n{}\n--- fixed\n{}",
            case.name, case.original, case.safe
        )),
    }
}

fn run_cases(label: &str, files: Vec<(String, String)>) {
    let start = std::time::Instant::now();
    let helm = Helm::new();
    let cases = fix_all(&files);
    let tally = Mutex::new(Tally::default());
    let queue = Mutex::new(cases.iter());
    let jobs = env_usize("CGPU_FIX_RENDER_JOBS", 6).max(1);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                loop {
                    let Some(case) = queue.lock().unwrap().next() else {
                        break;
                    };
                    if is_values(&case.original) {
                        check_values_case(&helm, case, &tally);
                    } else {
                        check_manifest_case(case, &tally);
                    }
                }
            });
        }
    });
    let t = tally.into_inner().unwrap();
    println!(
        "{label}: {} cases, {} changed by the default fix ({} renders byte-identical, {} with a refused original), {} unsafe checks ({} changed the render), {} helm runs, {:.1} s",
        t.cases,
        t.safe_changed,
        t.identical,
        t.refused_original,
        t.unsafe_checked,
        t.unsafe_render_changed,
        helm.renders.load(std::sync::atomic::Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    );
    assert!(
        t.failures.is_empty(),
        "{} failures:\n\n{}",
        t.failures.len(),
        t.failures.join("\n\n")
    );
}

/// A values file (a top-level `cgpu` key in some document), as opposed to a manifest.
fn is_values(text: &str) -> bool {
    let src = Source::new("x.yaml", text.to_string());
    cgpu_lint::yaml::parse(&src)
        .documents
        .iter()
        .any(|d| d.root.as_ref().is_some_and(|r| r.entry("cgpu").is_some()))
}

fn read_fixtures(dir: &Path) -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") || n.ends_with(".json"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(&n)).unwrap();
            (n, text)
        })
        .collect()
}

#[test]
fn fix_goldens_and_fixtures_keep_the_render_with_real_helm() {
    // Every fixture, the fix goldens among them.
    let files = read_fixtures(&fixtures());
    for g in FIX_GOLDEN {
        assert!(files.iter().any(|(n, _)| *n == format!("{g}.yaml")), "{g}");
    }
    run_cases("fixtures", files);
}

#[test]
fn generated_values_keep_the_render_with_real_helm() {
    let n = env_usize("CGPU_FIX_RENDER_CASES", 60);
    let seed = env_usize("CGPU_FIX_RENDER_SEED", 20) as u64;
    run_cases(&format!("generated (seed {seed})"), generate(n, seed));
}

#[test]
fn the_refusal_model_refuses_what_the_api_server_refuses() {
    let ds = |body: &str| {
        format!("apiVersion: apps/v1\nkind: DaemonSet\nspec:\n  template:\n    spec:\n{body}")
    };
    assert_eq!(refusal(&ds("      nodeSelector: {a: b}\n")), None);
    assert!(refusal(&ds("      nodeSelector: {a: true}\n")).is_some());
    assert!(refusal(&ds("      nodeSelector: {a: \"x y\"}\n")).is_some());
    assert!(refusal(&ds("      nodeSelector: [a]\n")).is_some());
    assert!(
        refusal(&ds(
            "      containers:\n      - name: c\n        imagePullPolicy: always\n"
        ))
        .is_some()
    );
    assert!(
        refusal(&ds(
            "      containers:\n      - name: c\n        env:\n        - {name: POLICY, value: 1}\n"
        ))
        .is_some()
    );
    assert_eq!(
        refusal(&ds(
            "      containers:\n      - name: c\n        env:\n        - {name: POLICY, value: \"1\"}\n"
        )),
        None
    );
    assert!(refusal("kind: ConfigMap\ndata:\n  a: 1\n").is_some());
}
