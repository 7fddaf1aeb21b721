//! `cgpu-lint post-render` on its own (the Helm end-to-end runs are in helm_e2e.rs): byte
//! identity, exactly-the-POLICY-bytes edits, failure semantics, --report, and a long stream.

use crate::common;
use crate::common::*;

use std::path::PathBuf;

fn post_render(input: &[u8], args: &[&str]) -> std::process::Output {
    bin()
        .arg("post-render")
        .args(args)
        .write_stdin(input.to_vec())
        .output()
        .expect("run")
}

fn streams() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![
        root.join("tests/fixtures/helm-template-rendered-stream.yaml"),
        root.join("tests/fixtures/helm-template-rendered-core-mismatch-helm4.yaml"),
        root.join("tests/fixtures/daemonset-cgpu-installer-live-kubectl-get.yaml"),
        root.join("tests/fixtures/daemonset-list-kubectl-get-both-installers.yaml"),
    ];
    let mut real: Vec<PathBuf> = std::fs::read_dir(root.join("charts-fixtures/streams"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    real.sort();
    assert!(real.len() >= 2, "the captured Helm 3 and Helm 4 streams");
    out.extend(real);
    out
}

#[test]
fn every_stream_passes_through_byte_for_byte() {
    for f in streams() {
        let input = std::fs::read(&f).unwrap();
        // --fail-on never: the Helm 4 mismatch fixture has an error but must still pass through.
        let out = post_render(&input, &["--fail-on", "never"]);
        assert_eq!(out.status.code(), Some(0), "{}", f.display());
        assert!(out.stdout == input, "{} changed", f.display());
    }
}

#[test]
fn byte_identity_survives_crlf_comments_and_markers() {
    let input = b"# leading comment\r\n---\r\n# Source: x/templates/a.yaml\r\n# only a comment\r\n---   # trailing\r\napiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: a\r\ndata:\r\n  k: |\r\n    ---\r\n    not a marker\r\n...\r\n--- \r\napiVersion: v1\r\nkind: ServiceAccount\r\nmetadata:\r\n  name: cgpu-installer\r\n";
    let out = post_render(input, &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, input.to_vec());
}

/// The bytes that differ between two outputs, as (offset, before, after) runs.
fn changed_runs(a: &[u8], b: &[u8]) -> Vec<(String, String)> {
    assert_eq!(
        a.len(),
        b.len(),
        "same length when a one-digit value changes"
    );
    let mut runs = Vec::new();
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            // Report the whole line around the change.
            let start = a[..i]
                .iter()
                .rposition(|c| *c == b'\n')
                .map_or(0, |p| p + 1);
            let end = a[i..]
                .iter()
                .position(|c| *c == b'\n')
                .map_or(a.len(), |p| i + p);
            runs.push((
                String::from_utf8_lossy(&a[start..end]).into_owned(),
                String::from_utf8_lossy(&b[start..end]).into_owned(),
            ));
            i = end;
        }
        i += 1;
    }
    runs
}

#[test]
fn policy_0_on_the_helm4_mismatch_changes_only_the_core_installers_5() {
    let input = std::fs::read(fixture("helm-template-rendered-core-mismatch-helm4.yaml")).unwrap();
    let out = post_render(&input, &["--policy", "0"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        changed_runs(&input, &out.stdout),
        vec![(
            "          value: \"5\"".to_string(),
            "          value: \"0\"".to_string()
        )]
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cgpu-core-installer POLICY \"5\" → \"0\""),
        "{stderr}"
    );
}

#[test]
fn policy_changes_exactly_the_policy_values_in_both_real_streams() {
    for name in ["helm3-real-stdin.yaml", "helm4-real-stdin.yaml"] {
        let f = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("charts-fixtures/streams")
            .join(name);
        let input = std::fs::read(&f).unwrap();
        let out = post_render(&input, &["--policy", "3"]);
        assert_eq!(out.status.code(), Some(0));
        let runs = changed_runs(&input, &out.stdout);
        assert_eq!(
            runs.len(),
            2,
            "{name}: both installers, nothing else: {runs:?}"
        );
        for (before, after) in runs {
            assert!(before.trim_start().starts_with("value: \""), "{before}");
            assert_eq!(after.trim(), "value: \"3\"");
        }
        // The ConfigMap's policy key and every annotation are untouched.
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(
            text.matches("postrenderer.helm.sh/postrender-filename")
                .count(),
            String::from_utf8_lossy(&input)
                .matches("postrenderer.helm.sh/postrender-filename")
                .count()
        );
    }
}

#[test]
fn policy_unquoted_int_is_quoted_and_missing_policy_is_added() {
    let input = std::fs::read(fixture("daemonset-invalid-policy-unquoted-int.yaml")).unwrap();
    let out = post_render(&input, &["--policy", "1"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.ends_with("        - name: POLICY\n          value: \"1\"\n"),
        "{text}"
    );

    let input = std::fs::read(fixture(
        "daemonset-invalid-old-version-public-registry-no-policy.yaml",
    ))
    .unwrap();
    // tag-too-old (1.0.3) is an error: --fail-on never to see the output.
    let out = post_render(&input, &["--policy", "2", "--fail-on", "never"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let original = String::from_utf8(input).unwrap();
    assert_eq!(
        text,
        format!("{original}        - name: POLICY\n          value: \"2\"\n")
    );
    let r = check_json_stdin(&text);
    assert!(r.find("installer-policy-missing").is_empty());
}

fn check_json_stdin(text: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("out.yaml");
    std::fs::write(&p, text).unwrap();
    check_json(&[&p.to_string_lossy()])
}

#[test]
fn fix_quotes_unquoted_policy_and_switches_to_the_vpc_endpoint() {
    let input = std::fs::read(fixture("daemonset-invalid-policy-unquoted-int.yaml")).unwrap();
    // Without --fix the unquoted int is an error: refused, nothing on stdout.
    let out = post_render(&input, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("installer-policy-unquoted"));
    let out = post_render(&input, &["--fix"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.ends_with("          value: \"3\"\n"));

    let input = std::fs::read(fixture(
        "daemonset-invalid-old-version-public-registry-no-policy.yaml",
    ))
    .unwrap();
    // The endpoint switch changes the image (every installer pod restarts): an unsafe fix, so
    // --fix alone keeps the public endpoint and --unsafe-fixes switches it, naming the change.
    let out = post_render(&input, &["--fix", "--fail-on", "never"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "image: registry.cn-beijing.aliyuncs.com/acs/cgpu-installer:v1.0.3-2a1c3e9-aliyun\n"
        ),
        "{text}"
    );
    let out = post_render(
        &input,
        &[
            "--fix",
            "--unsafe-fixes",
            "--fail-on",
            "never",
            "--region",
            "cn-hangzhou",
        ],
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(
        "image: registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.0.3-2a1c3e9-aliyun\n"
    ));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("(unsafe fix: the image becomes "),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn region_rewrites_the_registry_region_of_both_installers() {
    let input = std::fs::read(fixture("helm-template-rendered-stream.yaml")).unwrap();
    let out = post_render(&input, &["--region", "cn-beijing"]);
    assert_eq!(out.status.code(), Some(0));
    let a = String::from_utf8(input).unwrap();
    let b = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        b,
        a.replace(
            "registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:",
            "registry-vpc.cn-beijing.aliyuncs.com/acs/cgpu-installer:"
        )
    );
    // Other images (the device plugins) keep their region: only the installers are ours.
    assert!(b.contains("registry-vpc.cn-hangzhou.aliyuncs.com/acs/k8s-gpushare-plugin"));
}

#[test]
fn fail_on_decides_and_a_failure_writes_nothing_to_stdout() {
    let input = std::fs::read(fixture("helm-template-rendered-core-mismatch-helm4.yaml")).unwrap();
    let out = post_render(&input, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error[cluster-policy-mismatch]"),
        "{stderr}"
    );
    assert!(stderr.contains("render refused"));

    // Warnings only (KP on 1.5.3): passes by default, fails with --fail-on warning.
    let input = std::fs::read(fixture("helm-template-rendered-stream.yaml")).unwrap();
    assert_eq!(post_render(&input, &[]).status.code(), Some(0));
    let out = post_render(&input, &["--fail-on", "warning"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let out = post_render(
        &input,
        &["--fail-on", "warning", "--ignore", "tag-known-deadlock"],
    );
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn report_file_gets_the_findings() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("cgpu-lint-report.txt");
    let input = std::fs::read(fixture("helm-template-rendered-core-mismatch-helm4.yaml")).unwrap();
    let out = post_render(
        &input,
        &["--report", &report.to_string_lossy(), "--tty", "never"],
    );
    assert_eq!(out.status.code(), Some(1));
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("cluster-policy-mismatch"), "{text}");
    assert_eq!(text, String::from_utf8_lossy(&out.stderr));
}

#[test]
fn policy_out_of_range_is_a_usage_error() {
    let out = post_render(b"", &["--policy", "9"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn a_stream_of_ten_thousand_documents_goes_through() {
    let mut input = String::new();
    for i in 0..10_000 {
        input.push_str(&format!(
            "---\n# Source: big/templates/cm-{i}.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\ndata:\n  k: \"{i}\"\n"
        ));
    }
    let ds = std::fs::read_to_string(fixture("daemonset-cgpu-installer-minimal.yaml")).unwrap();
    input.push_str("---\n");
    input.push_str(&ds);
    let out = post_render(input.as_bytes(), &["--policy", "4"]);
    assert_eq!(out.status.code(), Some(0));
    let expected = input.replace("          value: \"2\"", "          value: \"4\"");
    assert!(out.stdout == expected.as_bytes());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("10001 documents, 1 installer DaemonSet: 0 errors, 0 warnings, 1 info"),
        "{stderr}"
    );
    // Findings carry the stream's line numbers.
    assert!(stderr.contains("-:80005:"), "{stderr}");
}

#[test]
fn policy_added_to_a_crlf_document_uses_crlf() {
    let ds = std::fs::read_to_string(fixture(
        "daemonset-invalid-old-version-public-registry-no-policy.yaml",
    ))
    .unwrap();
    let input = format!(
        "apiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: a\r\n---\r\n{}",
        ds.replace('\n', "\r\n")
    );
    let out = post_render(input.as_bytes(), &["--policy", "1", "--fail-on", "never"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text,
        format!("{input}        - name: POLICY\r\n          value: \"1\"\r\n")
    );
}

#[test]
fn an_installer_document_that_is_not_utf8_is_reported_and_passed_through() {
    let mut input = b"---\napiVersion: v1\nkind: ConfigMap\ndata:\n  k: \xff\n---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: cgpu-installer\n  labels: {x: \"\xfe\"}\n".to_vec();
    let out = post_render(&input, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("yaml-syntax"));
    let out = post_render(&input, &["--fail-on", "never"]);
    assert_eq!(out.stdout, std::mem::take(&mut input));
}

#[test]
fn past_100000_lines_findings_count_lines_from_their_document() {
    let mut input = String::new();
    for i in 0..13_000 {
        input.push_str(&format!(
            "---\n# Source: big/templates/cm-{i}.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\ndata:\n  k: \"{i}\"\n"
        ));
    }
    input.push_str("---\n");
    input.push_str(
        &std::fs::read_to_string(fixture("daemonset-cgpu-installer-minimal.yaml")).unwrap(),
    );
    let out = post_render(input.as_bytes(), &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout == input.as_bytes());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("<stdin document 13001>:5:9: info[priority-class]"),
        "{stderr}"
    );
}

/// `post-render < FILE` takes the two-pass path (check, then kernel copy around the edits): it
/// must give the same bytes as the piped path, and write nothing when the render is refused.
#[test]
fn regular_file_on_stdin_gives_the_same_bytes_as_a_pipe() {
    let fixture = common::fixture("helm-template-rendered-core-mismatch-helm4.yaml");
    let original = std::fs::read(&fixture).unwrap();
    let run = |args: &[&str], piped: bool| {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("cgpu-lint"));
        cmd.arg("post-render").args(args);
        if piped {
            let out = assert_cmd::Command::from_std(cmd)
                .write_stdin(original.clone())
                .output()
                .unwrap();
            (out.status.code(), out.stdout)
        } else {
            cmd.stdin(std::fs::File::open(&fixture).unwrap());
            let out = cmd.output().unwrap();
            (out.status.code(), out.stdout)
        }
    };
    let file = run(&["--policy", "0"], false);
    let pipe = run(&["--policy", "0"], true);
    assert_eq!(file, pipe);
    assert_eq!(file.0, Some(0));
    let want =
        String::from_utf8(original.clone())
            .unwrap()
            .replacen("value: \"5\"", "value: \"0\"", 1);
    assert_eq!(String::from_utf8(file.1).unwrap(), want);
    // cgpu-installer 0 vs core 5: refused, nothing on stdout, either way.
    assert_eq!(run(&[], false), (Some(1), Vec::new()));
    assert_eq!(run(&[], true), (Some(1), Vec::new()));
}
