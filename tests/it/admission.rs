//! The admission policy `generate admission-policy` writes is proven to agree with
//! `check` by execution. The policy's CEL runs in kube-cel (the Kubernetes CEL libraries, pinned
//! in Cargo.toml) through `admission::eval`, on every installer object of tests/fixtures and on a
//! seeded set of generated DaemonSets; `check` runs through the library's pipeline on the same
//! object. For each object the rules the errors policy denies must be exactly the covered rules
//! check reports as errors, the rules the warnings policy warns about exactly the covered rules it
//! reports as warnings, each policy message must be one of check's messages for that rule, and no
//! expression may fail to evaluate. A disagreement prints the object and both verdicts.
//!
//! `ADMISSION_CASES` (default 3000) sizes the generated set, `ADMISSION_SEED` (default 24) seeds it.

#[cfg(feature = "tools")]
use crate::common;
use crate::common::Rng;

use std::collections::BTreeSet;
use std::sync::Arc;

use cgpu_lint::admission::eval::{PolicySet, Request};
use cgpu_lint::admission::{self, Action};
use cgpu_lint::catalogue::Severity;
use cgpu_lint::lint::{Settings, lint_file};
use cgpu_lint::yaml::Source;
use serde_json::{Value as Json, json};

fn policy(action: Action, minor: u32) -> (String, PolicySet) {
    let text = admission::generate(&admission::Request {
        action,
        kube_minor: minor,
        include_gitops: false,
        params: false,
    });
    let set = admission::eval::load_text("policy.yaml", &text)
        .unwrap_or_else(|e| panic!("the generated policy does not load:\n{}", e.join("\n")));
    (text, set)
}

/// Covered rules by the severity check gives them.
fn covered(sev: Severity) -> BTreeSet<&'static str> {
    admission::checks()
        .iter()
        .filter(|c| c.severity == sev)
        .map(|c| c.rule.name())
        .collect()
}

struct Verdict {
    errors: BTreeSet<String>,
    warnings: BTreeSet<String>,
    messages: Vec<(String, String)>,
}

/// What check says about one object: covered rules by severity, and every message.
fn check_verdict(findings: &[cgpu_lint::diag::Diagnostic]) -> Verdict {
    let (e, w) = (covered(Severity::Error), covered(Severity::Warning));
    let mut v = Verdict {
        errors: BTreeSet::new(),
        warnings: BTreeSet::new(),
        messages: Vec::new(),
    };
    for (name, severity, message) in findings.iter().flat_map(pieces) {
        match severity {
            Severity::Error if e.contains(name) => {
                v.errors.insert(name.to_string());
            }
            Severity::Warning if w.contains(name) => {
                v.warnings.insert(name.to_string());
            }
            _ => continue,
        }
        v.messages.push((name.to_string(), message));
    }
    v
}

/// The findings one diagnostic holds: check reports one finding per token, so a second rule on
/// the same token is appended as `; also RULE: message` (lint.rs). A merged rule has its
/// catalogue severity, but installer-image-tag's digest-only finding, which is a warning.
fn pieces(d: &cgpu_lint::diag::Diagnostic) -> Vec<(&'static str, Severity, String)> {
    let mut out = Vec::new();
    let mut parts = d.message.split("; also ");
    out.push((
        d.rule.name(),
        d.severity,
        parts.next().unwrap_or("").to_string(),
    ));
    for p in parts {
        let rule = p
            .split_once(": ")
            .and_then(|(r, _)| cgpu_lint::catalogue::find(r));
        match rule {
            Some(r) => {
                let msg = p[r.name.len() + 2..].to_string();
                let sev = if msg.contains("is pinned by digest only") {
                    Severity::Warning
                } else {
                    r.severity
                };
                out.push((r.name, sev, msg));
            }
            // Not a merge: the message itself says "; also ".
            None => {
                let last = out.last_mut().unwrap();
                last.2 = format!("{}; also {p}", last.2);
            }
        }
    }
    out
}

fn policy_verdict(set: &PolicySet, object: &Json) -> Result<Verdict, String> {
    let ns = object
        .pointer("/metadata/namespace")
        .and_then(Json::as_str)
        .unwrap_or("kube-system");
    let out = set.evaluate(&Request {
        object,
        old_object: None,
        operation: "CREATE",
        namespace: ns,
    });
    let mut v = Verdict {
        errors: BTreeSet::new(),
        warnings: BTreeSet::new(),
        messages: Vec::new(),
    };
    for d in &out.decisions {
        if d.evaluation_error {
            return Err(format!("{}: {}", d.policy, d.message));
        }
        let rule = d.rule.clone().unwrap_or_default();
        let msg = d
            .message
            .strip_prefix(&format!("{rule}: "))
            .unwrap_or(&d.message)
            .to_string();
        if d.policy == admission::ERRORS_POLICY {
            v.errors.insert(rule.clone());
        } else {
            v.warnings.insert(rule.clone());
        }
        v.messages.push((rule, msg));
    }
    if out.matched.len() != 2 {
        return Err(format!("matched {:?}, not both policies", out.matched));
    }
    Ok(v)
}

/// Compare; `Err` with both verdicts on a disagreement.
fn agree(
    set: &PolicySet,
    object: &Json,
    findings: &[cgpu_lint::diag::Diagnostic],
) -> Result<(), String> {
    let c = check_verdict(findings);
    let p = policy_verdict(set, object)?;
    let mut problems = Vec::new();
    if c.errors != p.errors {
        problems.push(format!(
            "errors: check {:?}, policy denies {:?}",
            c.errors, p.errors
        ));
    }
    if c.warnings != p.warnings {
        problems.push(format!(
            "warnings: check {:?}, policy warns {:?}",
            c.warnings, p.warnings
        ));
    }
    for (rule, msg) in &p.messages {
        if !c.messages.iter().any(|(r, m)| r == rule && m == msg) {
            let theirs: Vec<&String> = c
                .messages
                .iter()
                .filter(|(r, _)| r == rule)
                .map(|(_, m)| m)
                .collect();
            problems.push(format!(
                "{rule}: the policy says {msg:?}, check says {theirs:?}"
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

fn check_json(object: &Json) -> Vec<cgpu_lint::diag::Diagnostic> {
    let text = serde_json::to_string_pretty(object).unwrap();
    lint_file(&Source::new("object.json", text), &Settings::default())
}

// ---------------------------------------------------------------------------------------------
// The fixtures.

fn fixtures() -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("daemonset-") || n.starts_with("helm-template-")
        })
        .collect();
    out.sort();
    out
}

#[test]
fn the_policy_agrees_with_check_on_every_installer_fixture() {
    let (_, set) = policy(Action::Deny, 30);
    let mut objects = 0;
    let mut refused = 0;
    for path in fixtures() {
        let text = std::fs::read_to_string(&path).unwrap();
        let src: Arc<Source> = Source::new(path.to_string_lossy(), text);
        let findings = lint_file(&src, &Settings::default());
        for o in admission::objects(&src).into_iter().filter(|o| o.installer) {
            let (doc, pointer, object) = (o.document, o.pointer, o.json);
            objects += 1;
            let mine: Vec<_> = findings
                .iter()
                .filter(|d| {
                    d.document == doc
                        && (d.path == pointer || d.path.starts_with(&format!("{pointer}/")))
                })
                .cloned()
                .collect();
            match admission::as_admitted(&object) {
                Err(why) => {
                    refused += 1;
                    // The API server refuses it before admission: check must say so with one
                    // of the rules the policy leaves to the API server.
                    assert!(
                        mine.iter().any(|d| d.severity == Severity::Error
                            && admission::coverage(d.rule)
                                .is_some_and(|c| c.contains("the API server itself refuses"))),
                        "{}{pointer}: refused before admission ({why}) but check reports no such error",
                        path.display()
                    );
                }
                Ok(admitted) => {
                    if let Err(e) = agree(&set, &admitted, &mine) {
                        panic!(
                            "{} document {doc} {pointer}:\n{e}\nobject: {}",
                            path.display(),
                            serde_json::to_string_pretty(&admitted).unwrap()
                        );
                    }
                }
            }
        }
    }
    assert!(
        objects >= 8,
        "only {objects} installer objects in the fixtures"
    );
    assert!(
        refused >= 1,
        "the unquoted-POLICY fixture is refused by the API server"
    );
}

// ---------------------------------------------------------------------------------------------
// Generated DaemonSets.

const POLICY_VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "4",
    "5",
    "6",
    "7",
    "9",
    "01",
    "00",
    " 1",
    "1 ",
    "-1",
    "1.0",
    "10",
    "+1",
    "preemptive",
    "fair-share",
    "١",
    "\u{2003}2",
    "true",
];

const HOSTS: &[&str] = &[
    "",
    "registry-vpc.cn-hangzhou.aliyuncs.com",
    "registry.cn-beijing.aliyuncs.com",
    "registry-cn-shanghai-vpc.ack.aliyuncs.com",
    "registry-ap-southeast-1.ack.aliyuncs.com",
    "registry-vpc.cn-shanghai-finance-1.aliyuncs.com",
    "registry-vpc.cn-hangzhou-pub.aliyuncs.com",
    "registry-vpc.xx-newregion-9.aliyuncs.com",
    "registry-vpc.cn_hangzhou.aliyuncs.com",
    "registry-vpc.CN-hangzhou.aliyuncs.com",
    "registry.hangzhou.aliyuncs.com",
    "registry-vpc.a.b.aliyuncs.com",
    "registry..aliyuncs.com",
    "registry-.ack.aliyuncs.com",
    "registry-vpc.ack.aliyuncs.com",
    "registry.ack.aliyuncs.com",
    "registry--vpc.ack.aliyuncs.com",
    "registry-vpc.aliyuncs.com",
    "cr.cn-hangzhou.aliyuncs.com",
    "docker.io",
    "localhost",
    "localhost:5000",
    "my-mirror.example.com:443",
    "10.0.0.1:5000",
];

const PATHS: &[&str] = &["acs/cgpu-installer", "cgpu-installer", "a/b/cgpu-installer"];

const TAGS: &[&str] = &[
    "",
    "latest",
    " ",
    "v1.5.10-2b9e7d4-aliyun",
    "v1.5.10",
    "1.5.10",
    "v1.0.6-abc1234-aliyun",
    "1.0.6",
    "v1.0.5-4b4d9a1-aliyun",
    "1.0.5",
    "v1.0.3-2a1c3e9-aliyun",
    "0.9.9",
    "v1.5.7-0d41c2a-aliyun",
    "1.5.7",
    "1.5.8",
    "v1.4.99",
    "v1.0.7-fin",
    "v1.5.20-3c9d1e7a-fin",
    "v1.5.3-8d3fc1b-aliyun-fin",
    "v1.5.3-xyz1234-aliyun",
    "v1.5.3-8d3-aliyun",
    "vv1.5.3",
    "V1.5.3",
    "01.5.3",
    "1.05.3",
    "1.5",
    "1.5.3.4",
    "v1.5.3_aliyun",
    "1.5.3-",
    "1.5.3-a_b",
    "2.0.0",
    "v10.0.0-abcdef0-aliyun",
    "1.0.6:x",
    "9999999999999999999.0.0",
];

/// A tag from the list or composed around the thresholds.
fn tag(r: &mut Rng) -> String {
    if r.chance(60) {
        return r.pick(TAGS).to_string();
    }
    let v = if r.chance(50) { "v" } else { "" };
    let core = format!(
        "{}.{}.{}",
        r.pick(&[0, 1, 1, 1, 2]),
        r.pick(&[0, 0, 4, 5, 5, 6]),
        r.pick(&[0, 3, 5, 6, 7, 8, 10])
    );
    let suffix = r.pick(&[
        "",
        "-8d3fc1b-aliyun",
        "-fin",
        "-abc",
        "-0123456789abcdef-fin",
        "-DEADBEEF-aliyun",
    ]);
    format!("{v}{core}{suffix}")
}

fn image(r: &mut Rng) -> Option<String> {
    if r.chance(3) {
        return None;
    }
    let host = r.pick(HOSTS);
    let mut s = if host.is_empty() {
        r.pick(PATHS).to_string()
    } else {
        format!("{host}/{}", r.pick(PATHS))
    };
    if r.chance(85) {
        s.push(':');
        s.push_str(&tag(r));
    }
    if r.chance(15) {
        s.push_str("@sha256:2b9e7d4f2b9e7d4f2b9e7d4f2b9e7d4f2b9e7d4f2b9e7d4f2b9e7d4f2b9e7d4f");
    }
    Some(s)
}

fn env_entry(r: &mut Rng) -> Json {
    match r.below(10) {
        0..=5 => json!({"name": "POLICY", "value": r.pick(POLICY_VALUES)}),
        6 => json!({"name": "POLICY"}),
        7 => {
            json!({"name": "POLICY", "valueFrom": {"configMapKeyRef": {"name": "cgpu", "key": "policy"}}})
        }
        8 => {
            json!({"name": r.pick(&["ALIYUN_COM_GPU_MEM_IDX", "ALIYUN_COM_GPU_SCHD_WEIGHT", "CGPU_DISABLE"]), "value": "1"})
        }
        _ => {
            json!({"name": r.pick(&["NODE_NAME", "policy", "POLICY_FILE", "LOG_LEVEL"]), "value": "x"})
        }
    }
}

fn container(r: &mut Rng, name: &str) -> Json {
    let mut c = json!({"name": name});
    if let Some(i) = image(r) {
        c["image"] = json!(i);
    }
    if !r.chance(15) {
        let n = r.pick(&[0, 1, 1, 1, 2, 3]);
        let env: Vec<Json> = (0..n).map(|_| env_entry(r)).collect();
        if !env.is_empty() || r.chance(50) {
            c["env"] = json!(env);
        }
    }
    c
}

fn daemonset(r: &mut Rng) -> Json {
    let name = r.pick(&["cgpu-installer", "cgpu-installer", "cgpu-core-installer"]);
    let main_name = if r.chance(80) { name } else { "installer" };
    let mut containers = Vec::new();
    if r.chance(20) {
        containers.push(container(r, "sidecar"));
    }
    containers.push(container(r, main_name));
    if r.chance(20) {
        containers.push(container(r, "exporter"));
    }
    let mut spec = json!({"containers": containers});
    if r.chance(20) {
        let n = if r.chance(10) { name } else { "init" };
        spec["initContainers"] = json!([container(r, n)]);
    }
    match r.below(8) {
        0 => {}
        1 => spec["nodeSelector"] = json!({}),
        2 => spec["nodeSelector"] = json!({"cgpu": "true"}),
        3 => spec["nodeSelector"] = json!({"cgpu": r.pick(&["false", "True"])}),
        4 => {
            spec["nodeSelector"] =
                json!({"ack.node.gpu.schedule": r.pick(&["share", "core_mem", "default", "cgpu"])})
        }
        5 => {
            spec["nodeSelector"] =
                json!({"ack.node.gpu.schedule": "cgpu", "kubernetes.io/os": "linux"})
        }
        _ => {
            spec["nodeSelector"] = json!({"ack.node.gpu.schedule": if name == "cgpu-installer" { "cgpu" } else { "core_mem" }})
        }
    }
    if r.chance(50) {
        spec["priorityClassName"] = json!("system-node-critical");
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"name": name}},
            "template": {"metadata": {"labels": {"name": name}}, "spec": spec}
        }
    })
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn the_policy_agrees_with_check_on_generated_daemonsets() {
    let started = std::time::Instant::now();
    let cases = env_usize("ADMISSION_CASES", 3000);
    let seed = env_usize("ADMISSION_SEED", 24) as u64;
    let (_, set) = policy(Action::Deny, 30);
    let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut seen_errors = BTreeSet::new();
    let mut seen_warnings = BTreeSet::new();
    let mut clean = 0;
    for i in 0..cases {
        let object = daemonset(&mut r);
        let findings = check_json(&object);
        if let Err(e) = agree(&set, &object, &findings) {
            panic!(
                "case {i} (ADMISSION_SEED={seed}):\n{e}\nobject: {}\ncheck: {:#?}",
                serde_json::to_string_pretty(&object).unwrap(),
                findings
                    .iter()
                    .map(|d| format!("{} {}: {}", d.severity.as_str(), d.rule.name(), d.message))
                    .collect::<Vec<_>>()
            );
        }
        let v = check_verdict(&findings);
        if v.errors.is_empty() {
            clean += 1;
        }
        seen_errors.extend(v.errors);
        seen_warnings.extend(v.warnings);
    }
    eprintln!(
        "{cases} generated DaemonSets ({clean} admitted by the errors policy) in {:.2?}",
        started.elapsed()
    );
    // The generator reaches every covered rule, and both verdicts.
    let want_e: BTreeSet<String> = covered(Severity::Error)
        .iter()
        .map(|s| s.to_string())
        .collect();
    let want_w: BTreeSet<String> = covered(Severity::Warning)
        .iter()
        .map(|s| s.to_string())
        .collect();
    if cases >= 1000 {
        assert_eq!(seen_errors, want_e, "error rules the generated set reached");
        assert_eq!(
            seen_warnings, want_w,
            "warning rules the generated set reached"
        );
        assert!(
            clean > cases / 20 && clean < cases - cases / 20,
            "{clean} of {cases} admitted"
        );
    }
}

/// The errors a covered rule check reports on an object, as rule → messages.
fn error_messages(
    findings: &[cgpu_lint::diag::Diagnostic],
) -> std::collections::BTreeMap<String, BTreeSet<String>> {
    let v = check_verdict(findings);
    let mut out: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for (rule, msg) in v.messages {
        if v.errors.contains(&rule) {
            out.entry(rule).or_default().insert(msg);
        }
    }
    out
}

/// An UPDATE from `old` to `new`, against check on both: the errors policy denies exactly the
/// covered rules check reports as errors on `new` with a message it did not report on `old`
/// (ratcheting: an unchanged bad value does not deny), with one of check's messages for `new`;
/// the warnings policy warns exactly what check warns about on `new`. Returns the rules denied.
fn agree_on_update(set: &PolicySet, old: &Json, new: &Json) -> Result<BTreeSet<String>, String> {
    let (old_f, new_f) = (check_json(old), check_json(new));
    let (was, is) = (error_messages(&old_f), error_messages(&new_f));
    let want: BTreeSet<String> = is
        .iter()
        .filter(|(rule, msgs)| !was.get(*rule).is_some_and(|o| msgs.is_subset(o)))
        .map(|(r, _)| r.clone())
        .collect();
    let out = set.evaluate(&Request {
        object: new,
        old_object: Some(old),
        operation: "UPDATE",
        namespace: "kube-system",
    });
    if out.matched.len() != 2 {
        return Err(format!("matched {:?}, not both policies", out.matched));
    }
    let mut denied = BTreeSet::new();
    let mut warned = BTreeSet::new();
    for d in &out.decisions {
        if d.evaluation_error {
            return Err(format!("{}: {}", d.policy, d.message));
        }
        let rule = d.rule.clone().unwrap_or_default();
        let msg = d
            .message
            .strip_prefix(&format!("{rule}: "))
            .unwrap_or(&d.message);
        if d.policy == admission::ERRORS_POLICY {
            if !is.get(&rule).is_some_and(|m| m.contains(msg)) {
                return Err(format!(
                    "{rule}: the policy says {msg:?}, check says {:?}",
                    is.get(&rule)
                ));
            }
            denied.insert(rule);
        } else {
            warned.insert(rule);
        }
    }
    let mut problems = Vec::new();
    if denied != want {
        problems.push(format!(
            "UPDATE errors: check (new errors, old {was:?}, new {is:?}) wants {want:?}, the policy denies {denied:?}"
        ));
    }
    let warnings = check_verdict(&new_f).warnings;
    if warned != warnings {
        problems.push(format!(
            "UPDATE warnings: check {warnings:?}, policy {warned:?}"
        ));
    }
    if problems.is_empty() {
        Ok(denied)
    } else {
        Err(problems.join("\n"))
    }
}

/// The new object of a generated UPDATE: only metadata changed (what a controller adding a
/// finalizer or a label does), one container's image or env replaced, or another DaemonSet of
/// the same name.
fn updated(r: &mut Rng, old: &Json) -> (Json, &'static str) {
    let mut new = old.clone();
    match r.below(4) {
        0 => {
            new["metadata"]["labels"] = json!({"team": "gpu"});
            new["metadata"]["finalizers"] = json!(["example.com/keep"]);
            (new, "metadata")
        }
        1 => {
            let c = &mut new["spec"]["template"]["spec"]["containers"];
            let n = c.as_array().map_or(0, Vec::len);
            let i = r.below(n.max(1));
            match image(r) {
                Some(img) => c[i]["image"] = json!(img),
                None => {
                    if let Some(m) = c[i].as_object_mut() {
                        m.remove("image");
                    }
                }
            }
            (new, "image")
        }
        2 => {
            let c = &mut new["spec"]["template"]["spec"]["containers"];
            let n = c.as_array().map_or(0, Vec::len);
            let i = r.below(n.max(1));
            let k = r.pick(&[0, 1, 1, 2]);
            let env: Vec<Json> = (0..k).map(|_| env_entry(r)).collect();
            c[i]["env"] = json!(env);
            (new, "env")
        }
        _ => {
            let mut other = daemonset(r);
            other["metadata"]["name"] = old["metadata"]["name"].clone();
            (other, "other")
        }
    }
}

/// Ratcheting, proven on generated UPDATEs (see `agree_on_update`). An update that
/// changes only metadata is never denied, whatever the object already carries.
#[test]
fn on_update_the_policy_denies_only_new_or_changed_violations() {
    let started = std::time::Instant::now();
    let cases = env_usize("ADMISSION_CASES", 3000) / 2;
    let seed = env_usize("ADMISSION_SEED", 24) as u64;
    let (_, set) = policy(Action::Deny, 30);
    let mut r = Rng((seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x0ba5_e01d) | 1);
    let (mut ratcheted, mut denied, mut metadata_bad) = (0, 0, 0);
    for i in 0..cases {
        let old = daemonset(&mut r);
        let (new, how) = updated(&mut r, &old);
        let show = |e: &str| {
            format!(
                "case {i} (ADMISSION_SEED={seed}, {how}):\n{e}\nold: {}\nnew: {}",
                serde_json::to_string_pretty(&old).unwrap(),
                serde_json::to_string_pretty(&new).unwrap()
            )
        };
        let got = agree_on_update(&set, &old, &new).unwrap_or_else(|e| panic!("{}", show(&e)));
        let new_errors = check_verdict(&check_json(&new)).errors;
        if how == "metadata" {
            assert!(
                got.is_empty(),
                "{}",
                show("a metadata-only update was denied")
            );
            if !new_errors.is_empty() {
                metadata_bad += 1;
            }
        }
        if got.len() < new_errors.len() {
            ratcheted += 1;
        }
        if !got.is_empty() {
            denied += 1;
        }
    }
    eprintln!(
        "{cases} generated UPDATEs ({denied} denied, {ratcheted} with a violation ratcheted, {metadata_bad} metadata-only updates of a bad object) in {:.2?}",
        started.elapsed()
    );
    if cases >= 500 {
        assert!(
            ratcheted > cases / 10 && denied > cases / 10,
            "{ratcheted} ratcheted, {denied} denied"
        );
        assert!(metadata_bad > cases / 20, "{metadata_bad}");
    }
}

#[test]
fn the_policy_for_1_29_is_v1beta1_and_evaluates_alike() {
    let (text, set) = policy(Action::Warn, 29);
    assert!(text.contains("apiVersion: admissionregistration.k8s.io/v1beta1"));
    assert!(!text.contains("apiVersion: admissionregistration.k8s.io/v1\n"));
    assert!(text.contains("validationActions: [Warn]"));
    let mut r = Rng(29);
    for _ in 0..200 {
        let object = daemonset(&mut r);
        agree(&set, &object, &check_json(&object)).unwrap();
    }
}

#[test]
fn objects_the_binding_does_not_select_are_not_evaluated() {
    let (_, set) = policy(Action::Deny, 30);
    let bad = json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "cgpu-installer", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [{"name": "cgpu-installer", "image": "x:latest",
            "env": [{"name": "POLICY", "value": "7"}]}]}}}
    });
    for (object, ns) in [
        (bad.clone(), "default"),
        (
            {
                let mut o = bad.clone();
                o["metadata"]["name"] = json!("other");
                o
            },
            "kube-system",
        ),
        (
            {
                let mut o = bad.clone();
                o["kind"] = json!("Deployment");
                o
            },
            "kube-system",
        ),
    ] {
        let out = set.evaluate(&Request {
            object: &object,
            old_object: None,
            operation: "CREATE",
            namespace: ns,
        });
        assert!(
            out.matched.is_empty() && out.decisions.is_empty(),
            "{object}"
        );
    }
    let out = set.evaluate(&Request {
        object: &bad,
        old_object: None,
        operation: "UPDATE",
        namespace: "kube-system",
    });
    assert!(out.denied());
}

#[test]
fn golden_policies() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    for (file, action, minor, gitops) in [
        ("admission-policy.yaml", Action::Deny, 30, false),
        ("admission-policy-warn-1.29.yaml", Action::Warn, 29, false),
        ("admission-policy-gitops.yaml", Action::Deny, 30, true),
    ] {
        let text = admission::generate(&admission::Request {
            action,
            kube_minor: minor,
            include_gitops: gitops,
            params: false,
        });
        let path = dir.join(file);
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::write(&path, &text).unwrap();
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            text == want,
            "{file} differs from the generated policy (UPDATE_SNAPSHOTS=1 to accept)"
        );
    }
}

#[test]
fn a_policy_that_does_not_compile_is_refused_with_its_line_and_column() {
    let text = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: x}\nspec:\n  validations:\n  - expression: \"object.spec.((\"\n";
    let Err(e) = admission::eval::load_text("p.yaml", text) else {
        panic!("loaded");
    };
    assert!(
        e[0].starts_with("p.yaml:6:17: the validation's expression does not compile"),
        "{e:?}"
    );
    let deep = format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {{name: x}}\nspec:\n  validations:\n  - expression: \"{}1{}\"\n",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    let Err(e) = admission::eval::load_text("p.yaml", &deep) else {
        panic!("loaded");
    };
    assert!(e[0].contains("nests 5000 brackets deep"), "{e:?}");
}

#[test]
fn explain_says_whether_the_policy_covers_a_rule() {
    let out = |rule: &str| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_cgpu-lint"))
            .args(["explain", rule])
            .output()
            .unwrap();
        String::from_utf8(o.stdout).unwrap()
    };
    assert!(out("tag-too-old").contains("Admission policy: covered by `cgpu-lint generate admission-policy`: the error (cgpu-lint-installer-errors) policy"));
    assert!(out("installer-policy-unquoted").contains("the API server itself refuses"));
    assert!(out("cluster-policy-mismatch").contains("a policy sees one"));
    assert!(!out("unknown-key").contains("Admission policy"));
    assert!(out("policy-out-of-range").contains(
        "Admission policy: covered by `cgpu-lint generate admission-policy --include-gitops`: cgpu-lint-gitops-values-errors"
    ));
    assert!(
        out("tag-too-old")
            .contains("; covered by `cgpu-lint generate admission-policy --include-gitops`")
    );
    assert!(!out("policy-quoted").contains("Admission policy"));
}

/// The generated YAML is valid against the Kubernetes OpenAPI schema of every version
/// `--kube-version` offers that kubernetes-validate (PyPI, pinned in scripts/install-test-tools)
/// ships: 1.28 to 1.37, strict (an unknown field is an error). A field the schema does not have
/// fails, so the check can fail.
#[cfg(feature = "tools")]
#[test]
fn the_policy_passes_the_kubernetes_schema_of_every_version_offered() {
    let tool = common::venv_tool("kubernetes-validate");
    let dir = tempfile::tempdir().unwrap();
    let run = |minor: u32, text: &str| {
        let f = dir
            .path()
            .join(format!("policy-1.{minor}-{}.yaml", text.len()));
        std::fs::write(&f, text).unwrap();
        let out = std::process::Command::new(&tool)
            .args(["--strict", "-k", &format!("1.{minor}.0")])
            .arg(&f)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let handles: Vec<_> = (28..=37u32)
        .map(|minor| {
            // With --include-gitops: the gitops policy is a ValidatingAdmissionPolicy too, so
            // the same schema judges it (the HelmRelease/Application CRDs it matches are not in
            // the Kubernetes schema, and nothing here validates against them).
            let text = admission::generate(&admission::Request {
                action: Action::Deny,
                kube_minor: minor,
                include_gitops: true,
                // With --params on every other version: the ConfigMap, paramKind, paramRef.
                params: minor % 2 == 0,
            });
            (minor, text)
        })
        .collect();
    std::thread::scope(|s| {
        let jobs: Vec<_> = handles
            .iter()
            .map(|(minor, text)| (minor, s.spawn(|| run(*minor, text))))
            .collect();
        for (minor, j) in jobs {
            let (ok, out) = j.join().unwrap();
            assert!(ok, "1.{minor}: {out}");
            assert_eq!(
                out.matches("passed for resource").count(),
                if minor % 2 == 0 { 7 } else { 6 },
                "1.{minor}: {out}"
            );
            assert!(
                !out.contains("WARN") && !out.contains("ERROR"),
                "1.{minor}: {out}"
            );
        }
    });
    let bad = admission::generate(&admission::Request {
        action: Action::Deny,
        kube_minor: 30,
        include_gitops: false,
        params: false,
    })
    .replacen(
        "    reason: Invalid\n",
        "    reason: Invalid\n    severity: error\n",
        1,
    );
    let (ok, out) = run(30, &bad);
    assert!(!ok && out.contains("'severity' was unexpected"), "{out}");
}

/// `check --admission-policy` on policy files that are broken in every way: an error with a
/// location (exit 2) or verdicts, never a panic.
#[test]
fn hostile_policy_files_end_in_a_message_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let ds = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/daemonset-cgpu-installer-minimal.yaml");
    let head = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: p}\n";
    let all = "matchConstraints: {resourceRules: [{apiGroups: ['*'], apiVersions: ['*'], operations: ['*'], resources: ['*']}]}";
    let binding = "---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {policyName: p, validationActions: [Deny]}\n";
    let cases: Vec<(String, i32, &str)> = vec![
        (String::new(), 2, "p.yaml:1:1: no ValidatingAdmissionPolicy"),
        ("a: [\n".into(), 2, "--admission-policy: p.yaml:1:"),
        (format!("{head}spec: 5\n"), 0, "policy `p` has no binding"),
        (
            format!("{head}spec: {{validations: [{{expression: 5}}, 7], variables: x}}\n"),
            2,
            "p.yaml:4:22: a validation without an expression",
        ),
        (
            format!("{head}spec: {{validations: [{{expression: 'a.(('}}]}}\n"),
            2,
            "p.yaml:4:35: the validation's expression does not compile",
        ),
        (
            format!(
                "{head}spec: {{{all}, validations: [{{expression: 'object.nope == 1'}}, {{expression: '1'}}, {{expression: 'false', messageExpression: '1/0'}}]}}\n{binding}"
            ),
            1,
            "Deny p: expression 'object.nope == 1' resulted in error: no such key: nope",
        ),
        (
            format!(
                "{head}spec: {{{all}, paramKind: {{kind: ConfigMap}}, validations: [{{expression: 'false'}}]}}\n{binding}"
            ),
            0,
            "not evaluated p: it takes params",
        ),
        (
            format!(
                "{head}spec: {{{all}, validations: [{{expression: \"{}true{}\"}}]}}\n",
                "(".repeat(100),
                ")".repeat(100)
            ),
            2,
            "nests 100 brackets deep",
        ),
        ("\u{0}\u{1}\u{2}".into(), 2, "p.yaml:"),
    ];
    for (text, code, want) in cases {
        let f = dir.path().join("p.yaml");
        std::fs::write(&f, &text).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_cgpu-lint"))
            .current_dir(dir.path())
            .args(["check", "-q", "--no-config", "--admission-policy", "p.yaml"])
            .arg(&ds)
            .output()
            .unwrap();
        let all_out = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(code), "{text:?}: {all_out}");
        assert!(
            all_out.contains(want),
            "{text:?}: want {want:?} in {all_out}"
        );
        assert!(!all_out.contains("panicked"), "{text:?}: {all_out}");
    }
}

// ---------------------------------------------------------------------------------------------
// --include-gitops: Flux HelmReleases and Argo CD Applications of the chart.

fn gitops_policy() -> PolicySet {
    let text = admission::generate(&admission::Request {
        action: Action::Deny,
        kube_minor: 30,
        include_gitops: true,
        params: false,
    });
    admission::eval::load_text("policy.yaml", &text)
        .unwrap_or_else(|e| panic!("the generated policy does not load:\n{}", e.join("\n")))
}

fn gitops_covered() -> BTreeSet<&'static str> {
    admission::gitops::checks()
        .iter()
        .map(|c| c.rule.name())
        .collect()
}

/// Check's covered errors and messages for one gitops object, its label (`Flux HelmRelease
/// `gpu`: `) taken off.
fn gitops_check(object: &Json) -> (BTreeSet<String>, Vec<(String, String)>) {
    let covered = gitops_covered();
    let mut rules = BTreeSet::new();
    let mut messages = Vec::new();
    for d in check_json(object) {
        for (name, severity, message) in pieces(&d) {
            if severity != Severity::Error || !covered.contains(name) {
                continue;
            }
            // The label: the object, then the parameter a value came from.
            let message = message
                .split_once("`): ")
                .filter(|(label, _)| label.contains(" (parameter `"))
                .or_else(|| message.split_once("`: "))
                .map_or(message.as_str(), |(_, m)| m)
                .to_string();
            rules.insert(name.to_string());
            messages.push((name.to_string(), message));
        }
    }
    (rules, messages)
}

/// The gitops policy's denials (rule, message); `Err` on an evaluation error (also one its
/// `failurePolicy: Ignore` drops) or when the policy does not evaluate the object.
fn gitops_verdict(set: &PolicySet, object: &Json) -> Result<Vec<(String, String)>, String> {
    match gitops_evaluated(set, object)? {
        Some(v) => Ok(v),
        None => Err("the gitops policy did not evaluate it (matchConditions)".into()),
    }
}

/// `None` when the gitops policy's matchConditions leave the object out.
fn gitops_evaluated(
    set: &PolicySet,
    object: &Json,
) -> Result<Option<Vec<(String, String)>>, String> {
    let admitted = admission::as_admitted(object)?;
    let ns = object
        .pointer("/metadata/namespace")
        .and_then(Json::as_str)
        .unwrap_or("default");
    let out = set.evaluate(&Request {
        object: &admitted,
        old_object: None,
        operation: "CREATE",
        namespace: ns,
    });
    if let Some((p, e)) = out.ignored.first() {
        return Err(format!("{p}: an error failurePolicy Ignore drops: {e}"));
    }
    if !out
        .matched
        .iter()
        .any(|m| m.0 == admission::gitops::GITOPS_POLICY)
    {
        if !out.decisions.is_empty() {
            return Err(format!("not matched, yet decided: {:?}", out.decisions));
        }
        return Ok(None);
    }
    let mut v = Vec::new();
    for d in &out.decisions {
        assert_eq!(d.policy, admission::gitops::GITOPS_POLICY, "{}", d.message);
        if d.evaluation_error {
            return Err(format!("{}: {}", d.policy, d.message));
        }
        let rule = d.rule.clone().unwrap_or_default();
        let msg = d
            .message
            .strip_prefix(&format!("{rule}: "))
            .unwrap_or(&d.message)
            .to_string();
        v.push((rule, msg));
    }
    Ok(Some(v))
}

const FLOAT_TO_HELM: &str = "is a float to Helm, which holds every number as a float64";

fn gitops_value(r: &mut Rng, key: &str) -> Json {
    match key {
        "enabled" | "checkRegions" => match r.below(3) {
            0 => json!(r.chance(50)),
            _ => json!(r.pick(&[
                "true", "false", "False", "no", "off", "n", "yes", "on", " false", "", "x"
            ])),
        },
        "policy" => match r.below(4) {
            0 => json!(r.pick(&[-1i64, 0, 1, 2, 3, 5, 6, 7, 100, -100])),
            1 => json!(r.pick(&[
                "0",
                "3",
                "5",
                "6",
                "7",
                "12",
                "02",
                "00",
                "-1",
                " 3",
                "3 ",
                "fair",
                "Fair-Share",
                "preemptive",
                "native",
                "weight",
                "x",
                "",
                "1.5",
                "9999999999999999999",
            ])),
            2 => json!(r.pick(&[0.0f64, 2.0, 5.0, 7.0, -1.0, 2.5, 0.5, -3.5, 6.0])),
            _ => json!(r.chance(50)),
        },
        "tag" | "financeCloudImageTag" => {
            if r.chance(5) {
                json!(1.5)
            } else {
                json!(tag(r))
            }
        }
        "image" => json!(r.pick(&["acs/cgpu-installer", "mirror/cgpu-installer"])),
        _ => json!(r.pick(&["IfNotPresent", "Always", "always"])),
    }
}

fn gitops_block(r: &mut Rng) -> Json {
    let mut m = serde_json::Map::new();
    for key in [
        "enabled",
        "policy",
        "tag",
        "financeCloudImageTag",
        "checkRegions",
        "image",
        "imagePullPolicy",
    ] {
        if r.chance(if key == "policy" || key == "tag" {
            70
        } else {
            25
        }) {
            m.insert(key.to_string(), gitops_value(r, key));
        }
    }
    json!({ "cgpu": m })
}

/// A chart reference: mostly the chart, sometimes another or a name that only contains it.
fn chart_ref(r: &mut Rng, path: bool, names: &mut bool) -> String {
    let good: &[&str] = if path {
        &[
            "ack-ai-installer",
            "charts/ack-ai-installer",
            "charts/ack-ai-installer/",
        ]
    } else {
        &["ack-ai-installer"]
    };
    if r.chance(80) {
        *names = true;
        r.pick(good).to_string()
    } else {
        r.pick(&[
            "other",
            "ack-ai-installer-x",
            "charts/other",
            "my-ack-ai-installer",
        ])
        .to_string()
    }
}

/// A HelmRelease or an Application; whether its values are a `values: |` string somewhere, and
/// whether it names the chart (as docs/gitops.md says a release of the chart is recognised).
fn gitops_object(r: &mut Rng) -> (Json, bool, bool) {
    let mut names = false;
    if r.chance(50) {
        let chart = if r.chance(80) {
            json!({ "spec": { "chart": chart_ref(r, true, &mut names), "sourceRef": { "kind": "HelmRepository", "name": "aliyun" } } })
        } else {
            Json::Null
        };
        let mut spec = json!({ "interval": "10m" });
        if chart.is_null() {
            spec["chartRef"] =
                json!({ "kind": "OCIRepository", "name": chart_ref(r, false, &mut names) });
        } else {
            spec["chart"] = chart;
        }
        if r.chance(90) {
            spec["values"] = gitops_block(r);
        }
        let version = r.pick(&["v2", "v2", "v2beta2", "v2beta1"]);
        let o = json!({
            "apiVersion": format!("helm.toolkit.fluxcd.io/{version}"),
            "kind": "HelmRelease",
            "metadata": { "name": "gpu", "namespace": "flux-system" },
            "spec": spec,
        });
        return (o, false, names);
    }
    let mut string_values = false;
    let mut source = |r: &mut Rng| {
        let mut s = json!({ "repoURL": "https://example.com/charts", "targetRevision": "1.0.0" });
        if r.chance(80) {
            s["chart"] = json!(chart_ref(r, false, &mut names));
        } else {
            s["path"] = json!(chart_ref(r, true, &mut names));
        }
        let block = gitops_block(r);
        match r.below(10) {
            0 => {}
            1 => {
                s["helm"] = json!({ "values": serde_yaml_ng_text(&block) });
                string_values = true;
            }
            _ => s["helm"] = json!({ "valuesObject": block }),
        }
        // Not beside a `values` string: check does not apply parameters over a one-line
        // quoted values string yet (it judges the string alone), so the two would differ there
        // for check's reason, not the policy's.
        if r.chance(40) && s.pointer("/helm/values").is_none() {
            if s.get("helm").is_none() {
                s["helm"] = json!({});
            }
            s["helm"]["parameters"] =
                Json::Array((0..1 + r.below(4)).map(|_| parameter(r)).collect());
        }
        s
    };
    let mut spec = json!({ "project": "default", "destination": { "namespace": "kube-system", "server": "https://kubernetes.default.svc" } });
    if r.chance(70) {
        spec["source"] = source(r);
    } else {
        let n = 1 + r.below(2);
        spec["sources"] = Json::Array((0..n).map(|_| source(r)).collect());
    }
    let o = json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": { "name": "gpu", "namespace": "argocd" },
        "spec": spec,
    });
    (o, string_values, names)
}

/// An Argo CD `helm.parameters` entry: mostly a judged key, its value a string as `--set`
/// reads it (numbers around int64's bounds, booleans and `null` in any case), sometimes
/// `forceString`, sometimes without a value (not passed).
fn parameter(r: &mut Rng) -> Json {
    let name = r.pick(&[
        "cgpu.policy",
        "cgpu.policy",
        "cgpu.tag",
        "cgpu.enabled",
        "cgpu.checkRegions",
        "cgpu.financeCloudImageTag",
        "cgpu.image",
        "other.policy",
    ]);
    let value = match r.below(3) {
        0 => json!(r.pick(&[
            "7",
            "3",
            "0",
            "00",
            "07",
            "-1",
            "+5",
            "+7",
            "-0",
            "true",
            "False",
            "NULL",
            "null",
            "fair",
            "",
            "1.5",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "+0000000000000000000003",
        ])),
        1 => json!(tag(r)),
        _ => json!(r.pick(&["1.0.5", "v1.5.10-2b9e7d4-aliyun", "latest", "2"])),
    };
    let mut p = json!({ "name": name });
    if r.chance(95) {
        p["value"] = value;
    }
    if r.chance(25) {
        p["forceString"] = json!(r.chance(70));
    }
    p
}

/// The values as a `values: |` string (JSON is YAML).
fn serde_yaml_ng_text(v: &Json) -> String {
    serde_json::to_string_pretty(v).unwrap() + "\n"
}

#[test]
fn the_gitops_policy_agrees_with_check_on_generated_releases_and_applications() {
    let started = std::time::Instant::now();
    let cases = env_usize("ADMISSION_CASES", 3000) / 2;
    let seed = env_usize("ADMISSION_SEED", 24) as u64;
    let set = gitops_policy();
    let mut r = Rng((seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x005e_ed0f_6170) | 1);
    let mut seen = BTreeSet::new();
    let (mut denied, mut strings, mut other_charts) = (0, 0, 0);
    for i in 0..cases {
        let (object, string_values, names_chart) = gitops_object(&mut r);
        let (rules, messages) = gitops_check(&object);
        let verdict = gitops_evaluated(&set, &object);
        let show = || {
            format!(
                "case {i} (ADMISSION_SEED={seed}):\nobject: {}\ncheck: {messages:?}\npolicy: {verdict:?}",
                serde_json::to_string_pretty(&object).unwrap()
            )
        };
        let Ok(p) = &verdict else {
            panic!("{}", show())
        };
        if !names_chart {
            // Another chart's release is never evaluated (matchConditions), and check does
            // not read it either.
            other_charts += 1;
            assert!(p.is_none() && rules.is_empty(), "{}", show());
            continue;
        }
        let Some(p) = p else {
            panic!("the chart's object is not evaluated\n{}", show())
        };
        if string_values {
            // A `values: |` string is not covered: the policy never denies on it; what it
            // judges (a valuesObject of another source) is still compared below only when
            // there is no string (check reports inside the string).
            strings += 1;
            assert!(
                p.iter().all(|(rule, _)| rules.contains(rule)),
                "the policy denied what check does not report\n{}",
                show()
            );
            continue;
        }
        let denied_rules: BTreeSet<String> = p.iter().map(|(r, _)| r.clone()).collect();
        assert_eq!(denied_rules, rules, "{}", show());
        for (rule, msg) in p {
            assert!(
                messages.iter().any(|(r, m)| r == rule
                    && (m == msg
                        // A policy of 1e15 or more: check names it as written (a parameter's
                        // quotes too) and as Go prints the float; CEL sees neither.
                        || (msg.contains(FLOAT_TO_HELM) && m.contains(FLOAT_TO_HELM)))),
                "{rule}: the policy says {msg:?}\n{}",
                show()
            );
        }
        if !p.is_empty() {
            denied += 1;
        }
        seen.extend(denied_rules);
    }
    eprintln!(
        "{cases} generated HelmReleases/Applications ({denied} denied, {strings} with a values string, {other_charts} of other charts) in {:.2?}",
        started.elapsed()
    );
    if cases >= 500 {
        let want: BTreeSet<String> = gitops_covered().iter().map(|s| s.to_string()).collect();
        assert_eq!(seen, want, "rules the generated set reached");
        assert!(
            denied > cases / 20 && denied < cases - cases / 20,
            "{denied} of {cases} denied"
        );
        assert!(strings > 0 && other_charts > 0);
    }
}

/// The gitops examples: the HelmRelease's `policy: 7` is denied for the rule check reports; the
/// Application's `values: |` string is not judged (the policy admits it, documented).
#[test]
fn the_gitops_policy_on_the_gitops_examples() {
    let set = gitops_policy();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/gitops");
    for (file, want) in [
        ("helmrelease.yaml", vec!["policy-out-of-range"]),
        ("application.yaml", vec![]),
        (
            "argocd-parameters.yaml",
            vec!["policy-out-of-range", "string-boolean"],
        ),
    ] {
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let src = Source::new(path.display().to_string(), text);
        let findings = lint_file(&src, &Settings::default());
        let covered = gitops_covered();
        for o in admission::objects(&src) {
            if o.kind != "HelmRelease" && o.kind != "Application" {
                continue;
            }
            let denied: BTreeSet<String> = gitops_verdict(&set, &o.json)
                .unwrap()
                .into_iter()
                .map(|(r, _)| r)
                .collect();
            let reported: BTreeSet<String> = findings
                .iter()
                .filter(|d| d.document == o.document)
                .flat_map(pieces)
                .filter(|(n, s, _)| *s == Severity::Error && covered.contains(n))
                .map(|(n, _, _)| n.to_string())
                .collect();
            let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
            assert_eq!(denied, want, "{file}: the policy");
            if file != "application.yaml" {
                assert_eq!(reported, want, "{file}: check");
            }
        }
    }
}

/// An Application whose source sets `cgpu.policy` through `helm.parameters` over `valuesObject`.
fn application_with_parameters(values_object: Option<Json>, parameters: Json) -> Json {
    let mut helm = json!({ "parameters": parameters });
    if let Some(v) = values_object {
        helm["valuesObject"] = v;
    }
    json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": { "name": "gpu", "namespace": "argocd" },
        "spec": {
            "project": "default",
            "destination": { "namespace": "kube-system", "server": "https://kubernetes.default.svc" },
            "source": { "repoURL": "https://example.com/charts", "chart": "ack-ai-installer", "targetRevision": "1.8.0", "helm": helm },
        },
    })
}

/// Argo CD passes `helm.parameters` after the values, as `--set` (`forceString`: `--set-string`),
/// so a parameter's value is the one the chart renders: the policy and check judge that one.
#[test]
fn the_gitops_policy_applies_argo_cd_parameters_over_values_object() {
    let set = gitops_policy();
    let out_of_range = (
        "policy-out-of-range".to_string(),
        "policy 7 does not exist; cGPU policies are 0–5".to_string(),
    );
    // `--set cgpu.policy=7` is the integer 7.
    let o = application_with_parameters(None, json!([{"name": "cgpu.policy", "value": "7"}]));
    assert_eq!(
        gitops_verdict(&set, &o).unwrap(),
        vec![out_of_range.clone()]
    );
    assert_eq!(gitops_check(&o).1, vec![out_of_range.clone()]);
    // The parameter overrides valuesObject's 7; the last parameter of a name wins.
    for params in [
        json!([{"name": "cgpu.policy", "value": "3"}]),
        json!([{"name": "cgpu.policy", "value": "7"}, {"name": "cgpu.policy", "value": "3"}]),
    ] {
        let o = application_with_parameters(Some(json!({"cgpu": {"policy": 7}})), params);
        assert_eq!(gitops_verdict(&set, &o).unwrap(), vec![]);
        assert_eq!(gitops_check(&o).1, vec![]);
    }
    // valuesObject's 3, a parameter's 7 after it: denied.
    let o = application_with_parameters(
        Some(json!({"cgpu": {"policy": 3}})),
        json!([{"name": "cgpu.policy", "value": "7"}]),
    );
    assert_eq!(
        gitops_verdict(&set, &o).unwrap(),
        vec![out_of_range.clone()]
    );
    assert_eq!(gitops_check(&o).1, vec![out_of_range]);
    // forceString: the string "2" (`--set-string`), a valid policy either way: both admit it;
    // `null` removes the key (not judged); `--set` of "true" is a boolean.
    for (values, params) in [
        (
            7,
            json!([{"name": "cgpu.policy", "value": "2", "forceString": true}]),
        ),
        (7, json!([{"name": "cgpu.policy", "value": "null"}])),
        (3, json!([{"name": "cgpu.enabled", "value": "true"}])),
    ] {
        let o = application_with_parameters(Some(json!({"cgpu": {"policy": values}})), params);
        assert_eq!(gitops_verdict(&set, &o).unwrap(), vec![], "{o}");
        assert_eq!(gitops_check(&o).1, vec![], "{o}");
    }
    // forceString "false" for `enabled` is the string: string-boolean in both.
    let o = application_with_parameters(
        None,
        json!([{"name": "cgpu.enabled", "value": "false", "forceString": true}]),
    );
    let denied = gitops_verdict(&set, &o).unwrap();
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert_eq!(denied[0].0, "string-boolean");
    assert_eq!(gitops_check(&o).1, denied);
}

/// The chart is selected in matchConditions, so another team's HelmRelease or
/// Application, of any shape its CRD admits, is never evaluated; every HelmRelease version
/// Flux serves (v2, v2beta2, v2beta1) is matched by name.
#[test]
fn the_gitops_policy_evaluates_only_the_charts_objects_in_every_version() {
    let set = gitops_policy();
    let bad = json!({"cgpu": {"policy": 7}});
    for version in ["v2", "v2beta2", "v2beta1"] {
        let hr = json!({"apiVersion": format!("helm.toolkit.fluxcd.io/{version}"), "kind": "HelmRelease",
            "metadata": {"name": "gpu", "namespace": "flux-system"},
            "spec": {"chart": {"spec": {"chart": "ack-ai-installer"}}, "values": bad}});
        let v = gitops_verdict(&set, &hr).unwrap();
        assert_eq!(v.len(), 1, "{version}: {v:?}");
        assert_eq!(v[0].0, "policy-out-of-range", "{version}");
    }
    // Not the chart's, or shapes a validation could trip on: never evaluated, never denied.
    let others = [
        json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": "x"},
            "spec": {"chart": {"spec": {"chart": "nginx"}}, "values": bad}}),
        json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": "x"},
            "spec": {"chart": {"spec": {}}, "values": {"cgpu": 5}}}),
        json!({"apiVersion": "helm.toolkit.fluxcd.io/v2beta1", "kind": "HelmRelease", "metadata": {"name": "x"},
            "spec": {"values": bad}}),
        json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": "x"}}),
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "x"},
            "spec": {"source": {"repoURL": "r", "path": "apps/web", "helm": {"valuesObject": bad}}}}),
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "x"},
            "spec": {"sources": [{"repoURL": "r"}, {"repoURL": "r", "chart": "redis", "helm": {"valuesObject": 3}}]}}),
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "x"},
            "spec": {"project": "default"}}),
    ];
    for o in others {
        assert_eq!(gitops_evaluated(&set, &o), Ok(None), "{o}");
    }
}

/// matchConditions as the API server decides them: a false one skips the policy even when
/// another fails to evaluate; otherwise an error is failurePolicy's: Fail denies (the binding's
/// actions), Ignore admits and is listed as ignored.
#[test]
fn match_conditions_false_wins_and_an_error_follows_failure_policy() {
    let doc = |fp: &str, conds: &str| {
        format!(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {{name: p}}\nspec:\n  failurePolicy: {fp}\n  matchConstraints: {{resourceRules: [{{apiGroups: ['*'], apiVersions: ['*'], operations: ['*'], resources: ['*']}}]}}\n  matchConditions: [{conds}]\n  validations: [{{expression: 'false', message: 'denied'}}]\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {{name: b}}\nspec: {{policyName: p, validationActions: [Deny]}}\n"
        )
    };
    let error = "{name: e, expression: 'object.nope == 1'}";
    let no = "{name: f, expression: 'false'}";
    let yes = "{name: t, expression: 'true'}";
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let eval = |fp: &str, conds: String| {
        let set = admission::eval::load_text("p.yaml", &doc(fp, &conds)).unwrap();
        set.evaluate(&Request {
            object: &object,
            old_object: None,
            operation: "CREATE",
            namespace: "default",
        })
    };
    for fp in ["Fail", "Ignore"] {
        for conds in [format!("{error}, {no}"), format!("{no}, {error}")] {
            let out = eval(fp, conds);
            assert!(
                out.decisions.is_empty() && out.ignored.is_empty() && out.matched.is_empty(),
                "{fp}: {out:?}"
            );
        }
    }
    let out = eval("Fail", format!("{yes}, {error}"));
    assert!(out.denied(), "{out:?}");
    assert!(
        out.decisions[0]
            .message
            .starts_with("expression 'object.nope == 1' resulted in error: no such key: nope"),
        "{out:?}"
    );
    let out = eval("Ignore", format!("{yes}, {error}"));
    assert!(!out.denied() && out.matched.is_empty(), "{out:?}");
    assert_eq!(out.ignored.len(), 1, "{out:?}");
    assert!(eval("Ignore", yes.to_string()).denied());
}

/// Each policy's failurePolicy is the one the header explains.
#[test]
fn each_policy_has_the_failure_policy_its_header_explains() {
    let text = admission::generate(&admission::Request {
        action: Action::Deny,
        kube_minor: 30,
        include_gitops: true,
        params: false,
    });
    let docs: Vec<&str> = text.split("\n---\n").collect();
    for (name, want) in [
        (admission::ERRORS_POLICY, "Fail"),
        (admission::WARNINGS_POLICY, "Fail"),
        (admission::gitops::GITOPS_POLICY, "Ignore"),
    ] {
        let doc = docs
            .iter()
            .find(|d| {
                d.contains("kind: ValidatingAdmissionPolicy\n")
                    && d.contains(&format!("name: {name}\n"))
            })
            .unwrap();
        assert!(doc.contains(&format!("failurePolicy: {want}\n")), "{name}");
        assert!(doc.contains("matchConditions:\n"), "{name}");
        let (fp, why) = admission::failure_policy(name);
        assert_eq!(fp, want);
        let words: String = why.split_whitespace().take(6).collect::<Vec<_>>().join(" ");
        let header: String = docs[0]
            .split_whitespace()
            .filter(|w| *w != "#")
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            header.contains(&format!("failurePolicy {want}: {words}")),
            "{name}: {words}"
        );
    }
}

/// Ratcheting in the gitops policy, on generated UPDATEs of HelmReleases and
/// Applications: it denies exactly the covered rules check reports as errors on the new object
/// with a message check did not report on the old one; a metadata-only update is never denied.
#[test]
fn the_gitops_policy_ratchets_on_update() {
    let cases = env_usize("ADMISSION_CASES", 3000) / 2;
    let seed = env_usize("ADMISSION_SEED", 24) as u64;
    let set = gitops_policy();
    let mut r = Rng((seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x0072_a7c4) | 1);
    let (mut compared, mut ratcheted, mut denied) = (0, 0, 0);
    for i in 0..cases {
        let (old, old_strings, _) = gitops_object(&mut r);
        let (new, new_strings, names_chart, how) = match r.below(3) {
            0 => {
                let mut n = old.clone();
                n["metadata"]["finalizers"] = json!(["finalizers.fluxcd.io"]);
                n["metadata"]["labels"] = json!({"team": "gpu"});
                let names = gitops_check_names(&set, &n);
                (n, old_strings, names, "metadata")
            }
            1 => {
                let mut n = old.clone();
                if n["kind"] == "HelmRelease" {
                    n["spec"]["values"] = gitops_block(&mut r);
                } else if n["spec"]["source"].is_object() {
                    n["spec"]["source"]["helm"] = json!({"valuesObject": gitops_block(&mut r)});
                }
                let names = gitops_check_names(&set, &n);
                let strings = n["kind"] == "Application"
                    && serde_json::to_string(&n).unwrap().contains("\"values\":");
                (n, strings, names, "values")
            }
            _ => {
                let (mut n, s, names) = gitops_object(&mut r);
                n["kind"] = old["kind"].clone();
                n["apiVersion"] = old["apiVersion"].clone();
                let names = names && gitops_check_names(&set, &n);
                (n, s, names, "other")
            }
        };
        if !names_chart || old_strings || new_strings {
            continue;
        }
        let show = |e: &str| {
            format!(
                "case {i} (ADMISSION_SEED={seed}, {how}):\n{e}\nold: {}\nnew: {}",
                serde_json::to_string_pretty(&old).unwrap(),
                serde_json::to_string_pretty(&new).unwrap()
            )
        };
        let msgs = |o: &Json| {
            let mut m: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
            for (rule, msg) in gitops_check(o).1 {
                m.entry(rule).or_default().insert(msg);
            }
            m
        };
        let (was, is) = (msgs(&old), msgs(&new));
        let want: BTreeSet<String> = is
            .iter()
            .filter(|(rule, m)| !was.get(*rule).is_some_and(|o| m.is_subset(o)))
            .map(|(r, _)| r.clone())
            .collect();
        let out = set.evaluate(&Request {
            object: &new,
            old_object: Some(&old),
            operation: "UPDATE",
            namespace: "flux-system",
        });
        assert!(
            out.ignored.is_empty(),
            "{}",
            show(&format!("{:?}", out.ignored))
        );
        let got: BTreeSet<String> = out
            .decisions
            .iter()
            .filter_map(|d| d.rule.clone())
            .collect();
        assert_eq!(got, want, "{}", show(&format!("old {was:?}\nnew {is:?}")));
        if how == "metadata" {
            assert!(
                got.is_empty(),
                "{}",
                show("a metadata-only update was denied")
            );
        }
        compared += 1;
        if got.len() < is.len() {
            ratcheted += 1;
        }
        if !got.is_empty() {
            denied += 1;
        }
    }
    eprintln!("{compared} gitops UPDATEs compared ({denied} denied, {ratcheted} ratcheted)");
    if cases >= 500 {
        assert!(compared > cases / 3 && ratcheted > cases / 20 && denied > cases / 20);
    }
}

/// Whether the gitops policy evaluates the object (its matchCondition selects the chart).
fn gitops_check_names(set: &PolicySet, o: &Json) -> bool {
    matches!(gitops_evaluated(set, o), Ok(Some(_)))
}

/// `check --admission-policy --old FILE`: an input object with an object of the same kind,
/// namespace and name in FILE is admitted as an UPDATE of it: a label added to an installer
/// that already has `POLICY: "7"` is admitted, a changed bad value is denied; without `--old`
/// the same object is a CREATE and denied.
#[test]
fn check_admits_an_update_against_the_old_object() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        admission::generate(&admission::Request {
            action: Action::Deny,
            kube_minor: 30,
            include_gitops: false,
            params: false,
        }),
    )
    .unwrap();
    let ds = |labels: &str, policy: &str| {
        format!(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: cgpu-installer\n  namespace: kube-system\n{labels}spec:\n  selector: {{matchLabels: {{name: cgpu-installer}}}}\n  template:\n    metadata: {{labels: {{name: cgpu-installer}}}}\n    spec:\n      nodeSelector: {{ack.node.gpu.schedule: cgpu}}\n      containers:\n      - name: cgpu-installer\n        image: registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun\n        env:\n        - {{name: POLICY, value: \"{policy}\"}}\n"
        )
    };
    let write = |name: &str, text: String| {
        let f = dir.path().join(name);
        std::fs::write(&f, text).unwrap();
        f
    };
    let old = write("live.yaml", ds("", "7"));
    let relabelled = write("relabelled.yaml", ds("  labels: {team: gpu}\n", "7"));
    let changed = write("changed.yaml", ds("", "8"));
    let run = |file: &std::path::Path, with_old: bool| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_cgpu-lint"));
        cmd.args(["check", "-q", "--no-config", "--admission-policy"])
            .arg(&policy);
        if with_old {
            cmd.arg("--old").arg(&old);
        }
        let out = cmd.arg(file).output().unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let out = run(&relabelled, true);
    assert!(
        out.contains("DaemonSet cgpu-installer in kube-system (UPDATE): admitted"),
        "{out}"
    );
    assert!(out.contains("1 of 1 objects matched, 0 denied"), "{out}");
    let out = run(&changed, true);
    assert!(
        out.contains("(UPDATE): denied")
            && out.contains("Deny cgpu-lint-installer-errors: installer-policy-invalid: POLICY \"8\" is not one of"),
        "{out}"
    );
    let out = run(&relabelled, false);
    assert!(out.contains("in kube-system: denied"), "{out}");
}

/// Every generated object carries `app.kubernetes.io/managed-by: cgpu-lint` and the
/// tool's version, and the header names the prune command with them.
#[test]
fn every_generated_object_is_labelled_with_the_tool_and_its_version() {
    for (gitops, minor) in [(false, 30), (true, 30), (true, 29)] {
        let text = admission::generate(&admission::Request {
            action: Action::Deny,
            kube_minor: minor,
            include_gitops: gitops,
            params: false,
        });
        let src = Source::new("policy.yaml", text.clone());
        let objects = admission::objects(&src);
        assert_eq!(objects.len(), if gitops { 6 } else { 4 });
        for o in &objects {
            let labels = &o.json["metadata"]["labels"];
            assert_eq!(
                labels["app.kubernetes.io/managed-by"], "cgpu-lint",
                "{}",
                o.name
            );
            assert_eq!(
                labels["app.kubernetes.io/version"],
                env!("CARGO_PKG_VERSION"),
                "{}",
                o.name
            );
        }
        let api = if minor >= 30 { "v1" } else { "v1beta1" };
        let header: String = text
            .lines()
            .take_while(|l| l.starts_with('#'))
            .flat_map(|l| l.trim_start_matches('#').split_whitespace())
            .filter(|w| *w != "\\")
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            header.contains(&format!("kubectl apply --prune -l app.kubernetes.io/managed-by=cgpu-lint --prune-allowlist=admissionregistration.k8s.io/{api}/ValidatingAdmissionPolicy --prune-allowlist=admissionregistration.k8s.io/{api}/ValidatingAdmissionPolicyBinding -f THIS_FILE")),
            "{header}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Type-clean against the apps/v1 DaemonSet schema.

/// The schema lists an operand reads: for the API server's type checker each is its own list
/// type (named by its path), so `_+_` of two of them has no overload.
const SCHEMA_LISTS: &[&str] = &[
    "object.spec.template.spec.initContainers",
    "object.spec.template.spec.containers",
    "oldObject.spec.template.spec.initContainers",
    "oldObject.spec.template.spec.containers",
    "object.spec.source",
    "object.spec.sources",
    "oldObject.spec.source",
    "oldObject.spec.sources",
];

/// Every `a + b` of `expr` (at any depth, outside string literals) whose operands read two
/// different schema lists, neither through `dyn(…)`. This is the checker's `found no matching
/// overload for '_+_'` for list types; it is not a CEL type checker (see
/// docs/admission-policy.md).
fn mixed_list_sums(expr: &str) -> Vec<String> {
    // Code with the literals blanked, so quotes and brackets in them do not count.
    let mut code = String::new();
    let mut in_lit = false;
    let mut esc = false;
    for c in expr.chars() {
        if in_lit {
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '\'' {
                in_lit = false;
            }
            code.push(if c == '\'' && !in_lit { '\'' } else { '_' });
        } else {
            if c == '\'' {
                in_lit = true;
            }
            code.push(c);
        }
    }
    let b = code.as_bytes();
    let mut out = Vec::new();
    // Each group: the text between a bracket and its match (and the whole expression).
    let mut starts = vec![0usize];
    let mut groups = Vec::new();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'(' | b'[' | b'{' => starts.push(i + 1),
            b')' | b']' | b'}' => {
                if let Some(s) = starts.pop() {
                    groups.push((s, i));
                }
            }
            _ => {}
        }
    }
    groups.push((0, b.len()));
    for (s, e) in groups {
        // Split the group at its own depth on `+`, `?`, `:`, `,`, `&&`, `||`.
        let mut depth = 0;
        let mut operands: Vec<(usize, usize, bool)> = Vec::new(); // (start, end, after_plus)
        let mut start = s;
        let mut after_plus = false;
        let mut i = s;
        while i < e {
            let c = b[i];
            match c {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                _ if depth == 0 && matches!(c, b'+' | b'?' | b':' | b',' | b'&' | b'|') => {
                    operands.push((start, i, after_plus));
                    after_plus = c == b'+';
                    start = i + 1;
                }
                _ => {}
            }
            i += 1;
        }
        operands.push((start, e, after_plus));
        let reads = |(s, e, _): (usize, usize, bool)| -> Option<&'static str> {
            let t = code[s..e].trim();
            if t.starts_with("dyn(") {
                return None;
            }
            SCHEMA_LISTS
                .iter()
                .filter(|p| {
                    t.match_indices(**p).any(|(at, _)| {
                        let next = t[at + p.len()..].chars().next();
                        !next.is_some_and(|c| c.is_ascii_alphanumeric())
                    })
                })
                .max_by_key(|p| p.len())
                .copied()
        };
        for w in operands.windows(2) {
            if !w[1].2 {
                continue;
            }
            if let (Some(a), Some(c)) = (reads(w[0]), reads(w[1]))
                && a != c
            {
                out.push(format!("{a} + {c} in `{}`", expr));
            }
        }
    }
    out
}

#[test]
fn no_expression_adds_two_schema_list_types() {
    // The check can fail: the `containers` variable as it was once written (two list types added).
    let before = "(has(object.spec.template.spec.initContainers) ? object.spec.template.spec.initContainers : []) + object.spec.template.spec.containers";
    assert_eq!(mixed_list_sums(before).len(), 1, "{before}");
    assert!(mixed_list_sums("'a + b' + object.spec.template.spec.containers[0].name").is_empty());
    let text = admission::generate(&admission::Request {
        action: Action::Deny,
        kube_minor: 30,
        include_gitops: true,
        params: false,
    });
    let src = Source::new("policy.yaml", text);
    let mut exprs = 0;
    let mut problems = Vec::new();
    for o in admission::objects(&src) {
        let spec = &o.json["spec"];
        for key in ["matchConditions", "variables", "validations"] {
            for item in spec[key].as_array().into_iter().flatten() {
                for field in ["expression", "messageExpression"] {
                    if let Some(e) = item[field].as_str() {
                        exprs += 1;
                        problems.extend(mixed_list_sums(e));
                    }
                }
            }
        }
    }
    assert!(exprs > 80, "{exprs} expressions");
    assert!(problems.is_empty(), "{problems:#?}");
}

// ---------------------------------------------------------------------------------------------
// --params.

fn params_policy(data: Option<&str>) -> PolicySet {
    let mut text = admission::generate(&admission::Request {
        action: Action::Deny,
        kube_minor: 30,
        include_gitops: false,
        params: true,
    });
    if let Some(d) = data {
        let start = text.find("\ndata:\n").unwrap() + 7;
        let end = start + text[start..].find("---").unwrap();
        text.replace_range(start..end, d);
    }
    admission::eval::load_text("policy.yaml", &text)
        .unwrap_or_else(|e| panic!("the generated policy does not load:\n{}", e.join("\n")))
}

/// With the ConfigMap as generated (the tool's facts), the params policies decide as check.
#[test]
fn the_params_policy_with_its_generated_configmap_agrees_with_check() {
    let set = params_policy(None);
    let mut r = Rng(36);
    for i in 0..env_usize("ADMISSION_CASES", 3000) / 5 {
        let object = daemonset(&mut r);
        if let Err(e) = agree(&set, &object, &check_json(&object)) {
            panic!("case {i}:\n{e}\nobject: {object:#}");
        }
        let old = daemonset(&mut r);
        let (new, how) = updated(&mut r, &old);
        if let Err(e) = agree_on_update(&set, &old, &new) {
            panic!("update {i} ({how}):\n{e}\nold: {old:#}\nnew: {new:#}");
        }
    }
}

/// An admin edits the ConfigMap: the minimum version, the allowed regions and an extra registry
/// change the verdicts without regenerating; a missing ConfigMap denies (parameterNotFoundAction:
/// Deny).
#[test]
fn the_params_configmap_changes_the_verdicts() {
    let ds = |image: &str| {
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "cgpu-installer", "namespace": "kube-system"},
            "spec": {"template": {"spec": {"nodeSelector": {"ack.node.gpu.schedule": "cgpu"},
                "containers": [{"name": "cgpu-installer", "image": image,
                    "env": [{"name": "POLICY", "value": "2"}]}]}}}})
    };
    let eval = |set: &PolicySet, o: &Json| {
        let out = set.evaluate(&Request {
            object: o,
            old_object: None,
            operation: "CREATE",
            namespace: "kube-system",
        });
        out.decisions
            .iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
    };
    let good = "registry-vpc.cn-beijing.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun";
    let old = "registry-vpc.cn-beijing.aliyuncs.com/acs/cgpu-installer:v1.5.8-2b9e7d4-aliyun";
    let mirror = "my-mirror.example.com:443/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun";
    let defaults = params_policy(None);
    assert!(eval(&defaults, &ds(good)).is_empty());
    assert!(
        eval(&defaults, &ds(old))
            .iter()
            .all(|m| !m.starts_with("tag-too-old"))
    );
    assert!(
        eval(&defaults, &ds(mirror))
            .iter()
            .any(|m| m.starts_with("registry-host"))
    );
    let edited = params_policy(Some(
        "  allowedRegions: \"cn-hangzhou, cn-shanghai\"\n  minVersion: v1.5.9\n  registries: my-mirror.example.com:443\n",
    ));
    let m = eval(&edited, &ds(old));
    assert!(
        m.contains(
            &"tag-too-old: cGPU 1.5.8 is older than 1.5.9: the policy setting is not supported"
                .to_string()
        ),
        "{m:?}"
    );
    assert!(
        eval(&edited, &ds(mirror)).is_empty(),
        "{:?}",
        eval(&edited, &ds(mirror))
    );
    let m = eval(&edited, &ds(good));
    assert_eq!(
        m,
        vec![
            "region-unknown: region `cn-beijing` in registry host `registry-vpc.cn-beijing.aliyuncs.com` is not a region id cgpu-lint knows"
        ],
    );
    // Version components compare as numbers: 1.10.0 is not older than 1.9.0.
    let nine = params_policy(Some("  minVersion: \"1.9.0\"\n"));
    let ten = "registry-vpc.cn-beijing.aliyuncs.com/acs/cgpu-installer:v1.10.0-2b9e7d4-aliyun";
    assert!(
        eval(&nine, &ds(ten)).is_empty(),
        "{:?}",
        eval(&nine, &ds(ten))
    );
    // No ConfigMap in the file: parameterNotFoundAction Deny.
    let text = admission::generate(&admission::Request {
        action: Action::Deny,
        kube_minor: 30,
        include_gitops: false,
        params: true,
    })
    .replace(
        "name: cgpu-lint-params\n  namespace",
        "name: other\n  namespace",
    );
    let set = admission::eval::load_text("p.yaml", &text).unwrap();
    let m = eval(&set, &ds(good));
    assert!(
        m.iter().any(|m| m == "no ConfigMap kube-system/cgpu-lint-params (paramRef, parameterNotFoundAction: Deny) in the policy file"),
        "{m:?}"
    );
}

/// The size guard. An installer with 20,000 env entries (the API server's cost grows
/// quadratically with them in the unguarded policy) is denied by the guard alone, and nothing
/// else is evaluated on it; at the limit the policies judge as check does.
#[test]
fn the_size_guard_denies_what_no_installer_has_and_judges_nothing_else() {
    let (text, set) = policy(Action::Deny, 30);
    assert!(text.contains(&admission::size_guard_message()));
    let ds = |n: usize, policy: &str| {
        let mut env: Vec<Json> = (0..n.saturating_sub(1))
            .map(|i| json!({"name": format!("E{i}"), "value": "x"}))
            .collect();
        env.push(json!({"name": "POLICY", "value": policy}));
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "cgpu-installer", "namespace": "kube-system"},
            "spec": {"template": {"spec": {"nodeSelector": {"ack.node.gpu.schedule": "cgpu"},
                "containers": [{"name": "cgpu-installer",
                    "image": "registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun",
                    "env": env}]}}}})
    };
    let started = std::time::Instant::now();
    let big = ds(20_000, "7");
    let out = set.evaluate(&Request {
        object: &big,
        old_object: Some(&big),
        operation: "UPDATE",
        namespace: "kube-system",
    });
    eprintln!("20,000 env entries evaluated in {:.2?}", started.elapsed());
    let messages: Vec<&str> = out.decisions.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(messages, vec![admission::size_guard_message().as_str()]);
    assert!(out.denied() && !out.decisions[0].evaluation_error);
    // At the limit: judged, and as check judges it.
    let at = ds(admission::MAX_ENV, "7");
    agree(&set, &at, &check_json(&at)).unwrap();
    let out = set.evaluate(&Request {
        object: &at,
        old_object: None,
        operation: "CREATE",
        namespace: "kube-system",
    });
    assert!(
        out.decisions
            .iter()
            .any(|d| d.rule.as_deref() == Some("installer-policy-invalid")),
        "{:?}",
        out.decisions
    );
    let too_many = ds(admission::MAX_ENV + 1, "2");
    let out = set.evaluate(&Request {
        object: &too_many,
        old_object: None,
        operation: "CREATE",
        namespace: "kube-system",
    });
    assert_eq!(out.decisions.len(), 1, "{:?}", out.decisions);
    assert_eq!(out.decisions[0].message, admission::size_guard_message());
}

/// The API server binds a policy's variables lazily: a variable is evaluated when an expression
/// reads it, and its error is that expression's error, worded as the API server words it
/// (scripts/admission-oracle holds these words to k8s.io/apiserver's); a variable nobody reads
/// costs nothing. A matchCondition may read the variables too.
#[test]
fn variables_are_evaluated_lazily_and_their_errors_worded_as_the_api_server_words_them() {
    let policy = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: p}\nspec:\n  matchConstraints: {resourceRules: [{apiGroups: ['*'], apiVersions: ['*'], operations: ['*'], resources: ['*']}]}\n  matchConditions: [{name: m, expression: 'variables.good == 1'}]\n  variables:\n  - {name: bad, expression: 'object.data.nope == 1'}\n  - {name: dep, expression: 'variables.bad ? 1 : 2'}\n  - {name: good, expression: 'size(object.data)'}\n  - {name: unread, expression: '1 / 0 == 1'}\n  validations:\n  - {expression: 'variables.bad', message: 'r1: bad'}\n  - {expression: 'variables.dep == 1', message: 'r2: dep'}\n  - {expression: 'variables.good == 1 || variables.bad', message: 'r3: good'}\n  - {expression: 'variables.good == 2', messageExpression: \"'  r4: ' + string(variables.good) + '  '\"}\n  - {expression: 'variables.good == 2', message: 'r5: fallback', messageExpression: \"'two\\\\nlines'\"}\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {policyName: p, validationActions: [Deny]}\n";
    let set = admission::eval::load_text("p.yaml", policy).unwrap();
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "x"}});
    let out = set.evaluate(&Request {
        object: &object,
        old_object: None,
        operation: "CREATE",
        namespace: "default",
    });
    let messages: Vec<&str> = out.decisions.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            r#"expression 'variables.bad' resulted in error: composited variable "bad" fails to evaluate: no such key: nope"#,
            r#"expression 'variables.dep == 1' resulted in error: composited variable "dep" fails to evaluate: composited variable "bad" fails to evaluate: no such key: nope"#,
            "r4: 1",
            "r5: fallback",
        ],
        "{out:?}"
    );
    assert_eq!(
        out.decisions
            .iter()
            .map(|d| d.evaluation_error)
            .collect::<Vec<_>>(),
        [true, true, false, false]
    );
}

/// tests/fuzz-regressions: a DaemonSet whose container has no name and whose image has no tag.
/// The API server holds the container with `name: ""` (the Go type's zero value), so its
/// variables evaluate and the errors policy denies with installer-image-tag's message, as
/// check reports; no expression fails.
#[test]
fn a_container_without_a_name_is_judged_as_the_api_server_holds_it() {
    let (_, set) = policy(Action::Deny, 30);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz-regressions/fix-implicit-null-label-value.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let src = Source::new(path.display().to_string(), text);
    let findings = lint_file(&src, &Settings::default());
    let objects: Vec<_> = admission::objects(&src)
        .into_iter()
        .filter(|o| o.installer)
        .collect();
    assert_eq!(objects.len(), 2);
    let o = &objects[0];
    let admitted = admission::as_admitted(&o.json).unwrap();
    assert_eq!(
        admitted["spec"]["template"]["spec"]["containers"][0]["name"],
        ""
    );
    let mine: Vec<_> = findings
        .iter()
        .filter(|d| d.document == o.document)
        .cloned()
        .collect();
    agree(&set, &admitted, &mine).unwrap();
    let out = set.evaluate(&Request {
        object: &admitted,
        old_object: None,
        operation: "CREATE",
        namespace: "kube-system",
    });
    assert!(out.denied());
    assert!(
        out.decisions.iter().any(|d| d.message
            == "installer-image-tag: image `registry-vpc.apl` has no tag: it is `latest`, an unknown cGPU version"),
        "{out:?}"
    );
}

/// Where both CEL engines fail, the error is the one cel-go reports (scripts/admission-oracle
/// checked each against k8s.io/apiserver): the first operand's of `||` and `&&`, a function
/// argument's own (not "Missing argument or target"), "no such overload" for operand types no
/// operator takes. A DaemonSet without containers is held with `containers: null`, as there.
#[test]
fn evaluation_errors_are_the_ones_the_api_server_reports() {
    let policy = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: p}\nspec:\n  matchConstraints: {resourceRules: [{apiGroups: ['*'], apiVersions: ['*'], operations: ['*'], resources: ['*']}]}\n  validations:\n  - {expression: \"object.data.nope == 'x' || object.data.nope2 == 'x'\"}\n  - {expression: \"object.data.nope == 'x' && object.data.nope2 == 'x'\"}\n  - {expression: \"size(object.data.nope) == 0\"}\n  - {expression: \"string(object.data.nope) == ''\"}\n  - {expression: \"dyn([]) + dyn(object.data.a) == []\"}\n  - {expression: \"[1, 2].exists(x, object.data[string(x)] == 'y')\"}\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {policyName: p, validationActions: [Deny]}\n";
    let set = admission::eval::load_text("p.yaml", policy).unwrap();
    let object = json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "c"}, "data": {"a": "x"}});
    let out = set.evaluate(&Request {
        object: &object,
        old_object: None,
        operation: "CREATE",
        namespace: "default",
    });
    let errors: Vec<&str> = out
        .decisions
        .iter()
        .map(|d| d.message.split_once(" resulted in error: ").unwrap().1)
        .collect();
    assert_eq!(
        errors,
        [
            "no such key: nope",
            "no such key: nope",
            "no such key: nope",
            "no such key: nope",
            "no such overload",
            "no such key: 1",
        ]
    );
    let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "cgpu-installer"}, "spec": {}});
    assert_eq!(
        admission::as_admitted(&ds).unwrap()["spec"]["template"]["spec"],
        json!({"containers": null})
    );
}
