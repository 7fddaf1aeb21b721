//! The rules on top of Helm's reading of values. Each expectation is what real Helm
//! 3.18/4.2 does with the same bytes (measured through charts-fixtures/helm-probe; the oracle in
//! tests/helm/helm_oracle.rs checks the reading itself over thousands of cases).

use crate::common::{bin, check_json};

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

fn values(args: &[&str]) -> (i32, String, String) {
    let out = bin().arg("values").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_yaml11_boolean_policy_is_a_type_error_and_not_rewritten_to_true() {
    // Helm reads `policy: yes` as the boolean true.
    let dir = tempfile::tempdir().unwrap();
    let f = write(&dir, "v.yaml", "cgpu:\n  policy: yes\n");
    let r = check_json(&["--no-config", &f]);
    assert_eq!(r.code, 1, "{:#}", r.json);
    // One finding for the token: the type error, carrying the YAML 1.1 reading, and no fix
    // (the yaml11 fix would write `policy: true`).
    let d = r.diagnostics();
    assert_eq!(d.len(), 1, "{:#}", r.json);
    assert_eq!(d[0]["rule"], "wrong-type");
    assert_eq!(d[0]["fixable"], false, "the fix would write `policy: true`");
    let m = d[0]["message"].as_str().unwrap();
    assert!(
        m.contains("the boolean true") && m.contains("YAML 1.2"),
        "{m}"
    );
}

#[test]
fn yaml11_image_08_is_a_float_to_helm_and_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(&dir, "v.yaml", "cgpu:\n  image: 08\n");
    let r = check_json(&["--no-config", &f]);
    assert_eq!(r.code, 1, "{:#}", r.json);
    let d = r.diagnostics();
    assert_eq!(d.len(), 1, "one finding for the token: {:#}", r.json);
    assert_eq!(d[0]["rule"], "wrong-type");
    assert_eq!(d[0]["fixable"], false);
}

#[test]
fn a_yaml11_boolean_for_enabled_is_still_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(&dir, "v.yaml", "cgpu:\n  enabled: yes\n");
    let r = check_json(&["--no-config", &f]);
    assert_eq!(r.find("yaml11-scalar")[0]["fixable"], true);
}

#[test]
fn whole_number_float_policy_is_a_warning_with_an_integer_fix() {
    let dir = tempfile::tempdir().unwrap();
    for spelling in ["3.0", "3.", "3e0"] {
        let f = write(&dir, "v.yaml", &format!("cgpu:\n  policy: {spelling}\n"));
        let r = check_json(&["--no-config", &f]);
        let w = r.find("policy-whole-float");
        assert_eq!(w.len(), 1, "{spelling}: {:#}", r.json);
        assert_eq!(w[0]["severity"], "warning");
        assert_eq!(w[0]["fixable"], true);
        assert!(r.find("policy-not-integer").is_empty());
        let out = bin()
            .args(["fix", "--no-config", "--stdout", &f])
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("policy: 3\n"),
            "{spelling}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let f = write(&dir, "v.yaml", "cgpu:\n  policy: 1.5\n");
    let r = check_json(&["--no-config", &f]);
    assert_eq!(r.find("policy-not-integer").len(), 1);
}

#[test]
fn a_local_tag_makes_enabled_the_truthy_string_false() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(&dir, "v.yaml", "cgpu:\n  enabled: !foo false\n");
    let r = check_json(&["--no-config", &f]);
    assert_eq!(r.find("string-boolean").len(), 1, "{:#}", r.json);
}

#[test]
fn stack_null_then_map_brings_the_defaults_back() {
    // Helm merges the -f files first, then coalesces the chart defaults: the default tag (with
    // its deadlock) comes back.
    let dir = tempfile::tempdir().unwrap();
    let a = write(&dir, "a.yaml", "cgpu: null\n");
    let b = write(&dir, "b.yaml", "cgpu:\n  policy: 3\n");
    let r = check_json(&["--no-config", "--stack", &a, &b]);
    assert_eq!(r.find("tag-known-deadlock").len(), 1, "{:#}", r.json);
    let (code, out, _) = values(&["--stack", &a, &b]);
    assert_eq!(code, 0);
    assert!(out.contains("\"policy\":3") && out.contains("\"tag\":\"v1.5.3-8d3fc1b-aliyun\""));
}

#[test]
fn a_values_file_that_is_only_null_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(&dir, "a.yaml", "cgpu:\n  policy: 2\n");
    let b = write(&dir, "b.yaml", "~\n");
    let (_, out, _) = values(&["--stack", &a, &b]);
    assert!(out.contains("\"policy\":2"), "{out}");
}

#[test]
fn multi_document_values_differ_between_helm_3_and_4() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        &dir,
        "v.yaml",
        "cgpu:\n  policy: 3\n---\ncgpu:\n  policy: 9\n",
    );
    let (_, out3, _) = values(&["--helm", "3", &f]);
    assert!(out3.contains("\"policy\":3"), "{out3}");
    let (_, out4, _) = values(&["--helm", "4", &f]);
    assert!(out4.contains("\"policy\":9"), "{out4}");
    let (code, _, err) = values(&[&f]);
    assert_eq!(code, 2, "without --helm the two readings must agree: {err}");
    let r = check_json(&["--no-config", &f]);
    assert_eq!(r.find("helm-versions-differ").len(), 1, "{:#}", r.json);
    let r = check_json(&["--no-config", "--stack", &f]);
    assert_eq!(r.find("helm-versions-differ").len(), 1, "{:#}", r.json);
    assert_eq!(r.find("policy-out-of-range").len(), 1, "{:#}", r.json);
    let r = check_json(&["--no-config", "--stack", "--helm", "3", &f]);
    assert!(r.find("policy-out-of-range").is_empty(), "{:#}", r.json);
}

#[test]
fn refusals_point_at_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(&dir, "v.yaml", "cgpu:\n  policy: !!int abc\n");
    let (code, _, err) = values(&[&f]);
    assert_eq!(code, 2);
    assert!(err.contains("v.yaml:2:17:"), "{err}");
    let r = check_json(&["--no-config", &f]);
    assert_eq!(r.find("yaml-syntax").len(), 1, "{:#}", r.json);
    // The same construct in a file that is not a values file stays a skipped file.
    let g = write(&dir, "playbook.yaml", "- hosts: all\n  port: !!int abc\n");
    let r = check_json(&["--no-config", &g]);
    assert!(r.find("yaml-syntax").is_empty(), "{:#}", r.json);
}

#[test]
fn set_flags_apply_in_helms_order() {
    let (code, out, err) = values(&[
        "--helm",
        "4",
        "--set-string",
        "cgpu.policy=4",
        "--set",
        "cgpu.policy=3",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("\"policy\":\"4\""),
        "--set-string comes last: {out}"
    );
}

#[test]
fn origins_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(&dir, "v.yaml", "cgpu:\n  image: x\n  policy: 2\n");
    let (_, out, _) = values(&["--origins", &f]);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["origins"]["/cgpu/policy"], format!("{f}:3"));
    assert_eq!(j["origins"]["/cgpu/tag"], "<chart defaults>:5");
}
