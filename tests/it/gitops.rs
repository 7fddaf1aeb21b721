//! Values where platform teams keep them: an umbrella chart's values, a
//! Flux HelmRelease, an Argo CD Application (valuesObject, the `values: |` string, sources[]).
//! Every position is computed here from the bytes of the file (the offset of the text the
//! finding is about), never copied from what cgpu-lint printed; the layering of `values` follows
//! the documented semantics:
//!
//! - Flux, <https://fluxcd.io/flux/components/helm/helmreleases/#values-references> and
//!   helm-controller's `ChartValuesFromReferences`: `valuesFrom` merged in order, `spec.values`
//!   merged last (it wins);
//! - Argo CD, <https://argo-cd.readthedocs.io/en/release-3.4/user-guide/helm/> ("Order of
//!   precedence is parameters > valuesObject > values > valueFiles") and argo-cd's
//!   `ApplicationSourceHelm.ValuesYAML` (valuesObject, when set, is used instead of the `values`
//!   string), `parameters` as `--set` (`forceString` as `--set-string`).

use crate::common::*;

use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    fixtures().join("gitops")
}

/// 1-based line and column (in characters) of byte `offset`, counting `\n`, `\r\n` and a lone
/// `\r` as line breaks.
fn line_col(text: &str, offset: usize) -> (u64, u64) {
    let before = &text[..offset];
    let mut line = 1;
    let mut start = 0;
    let b = before.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'\n' || (c == b'\r' && b.get(i + 1) != Some(&b'\n')) {
            line += 1;
            start = i + 1;
        }
    }
    (line, before[start..].chars().count() as u64 + 1)
}

/// The offset of `needle` after the first occurrence of `after` in `text`.
fn offset_of(text: &str, after: &str, needle: &str) -> usize {
    let from = text
        .find(after)
        .unwrap_or_else(|| panic!("{after:?} not in the file"))
        + after.len();
    from + text[from..].find(needle).unwrap()
}

fn check(path: &Path) -> (Option<i32>, Vec<serde_json::Value>) {
    let run = check_json(&["--no-config", &path.to_string_lossy()]);
    (Some(run.code), run.diagnostics().clone())
}

fn find<'a>(diags: &'a [serde_json::Value], rule: &str) -> Vec<&'a serde_json::Value> {
    diags.iter().filter(|d| d["rule"] == rule).collect()
}

fn at(d: &serde_json::Value) -> (u64, u64) {
    (d["line"].as_u64().unwrap(), d["column"].as_u64().unwrap())
}

fn values(args: &[&str]) -> Vec<serde_json::Value> {
    let out = bin().arg("values").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn umbrella_values_are_checked_under_the_alias_at_their_place() {
    let path = dir().join("umbrella/values.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let (code, diags) = check(&path);
    assert_eq!(code, Some(1), "{diags:#?}");
    let sb = find(&diags, "string-boolean");
    assert_eq!(sb.len(), 1, "{diags:#?}");
    assert_eq!(
        at(sb[0]),
        line_col(&text, offset_of(&text, "enabled: ", "\"false\""))
    );
    assert_eq!(sb[0]["path"], "/gpu/cgpu/enabled");
    let range = find(&diags, "policy-out-of-range");
    // Only the subchart's policy: `ingress-nginx:` is another chart's key.
    assert_eq!(range.len(), 1, "{diags:#?}");
    assert_eq!(at(range[0]), line_col(&text, offset_of(&text, "gpu:", "7")));
}

#[test]
fn a_disabled_subchart_is_not_checked_and_the_fallback_key_is() {
    // `gpu.enabled: false` is the dependency's condition: Helm renders nothing of it.
    let (code, diags) = check(&dir().join("umbrella/values-off.yaml"));
    assert_eq!(code, Some(0), "{diags:#?}");
    assert!(find(&diags, "policy-out-of-range").is_empty(), "{diags:#?}");
    // Without a Chart.yaml beside it, the key `ack-ai-installer` is the subchart's.
    let path = dir().join("no-chart-yaml/values.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let (code, diags) = check(&path);
    assert_eq!(code, Some(1), "{diags:#?}");
    let tag = find(&diags, "tag-invalid");
    assert_eq!(tag.len(), 1, "{diags:#?}");
    assert_eq!(
        at(tag[0]),
        line_col(&text, offset_of(&text, "tag: ", "latest"))
    );
    assert_eq!(tag[0]["path"], "/ack-ai-installer/cgpu/tag");
}

#[test]
fn umbrella_values_print_what_the_subchart_gets() {
    let path = dir().join("umbrella/values.yaml");
    let v = values(&["--helm", "3", path.to_str().unwrap()]);
    assert_eq!(v.len(), 1);
    // The parent's global reaches the subchart; its cgpu block is the alias's.
    assert_eq!(v[0]["global"]["region"], "cn-beijing");
    assert_eq!(v[0]["cgpu"]["policy"], 7);
    assert_eq!(v[0]["cgpu"]["enabled"], "false");
    // The chart's defaults under them.
    assert_eq!(v[0]["cgpu"]["imagePullPolicy"], "IfNotPresent");
}

#[test]
fn helm_release_of_the_chart_is_checked_and_another_charts_is_skipped() {
    let path = dir().join("helmrelease.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let (code, diags) = check(&path);
    assert_eq!(code, Some(1), "{diags:#?}");
    let range = find(&diags, "policy-out-of-range");
    // `web` (ingress-nginx) sets policy 9: not the chart's release, not read.
    assert_eq!(range.len(), 1, "{diags:#?}");
    assert_eq!(
        at(range[0]),
        line_col(
            &text,
            offset_of(&text, "  values:\n    cgpu:\n      policy: ", "7")
        )
    );
    assert_eq!(range[0]["path"], "/spec/values/cgpu/policy");
    assert_eq!(range[0]["document"], 2);
    assert!(
        range[0]["message"]
            .as_str()
            .unwrap()
            .contains("HelmRelease `gpu`"),
        "{diags:#?}"
    );
    // valuesFrom (the ConfigMap of the same file) first, spec.values over it.
    let v = values(&["--helm", "3", path.to_str().unwrap()]);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0]["cgpu"]["policy"], 7);
    assert_eq!(v[0]["cgpu"]["tag"], "v1.5.10-2b9e7d4-aliyun");
}

#[test]
fn application_value_object_wins_over_the_string_and_parameters_over_both() {
    let path = dir().join("application.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let (code, diags) = check(&path);
    assert_eq!(code, Some(1), "{diags:#?}");
    let pp = find(&diags, "pull-policy");
    assert_eq!(pp.len(), 1, "{diags:#?}");
    assert_eq!(
        at(pp[0]),
        line_col(&text, offset_of(&text, "imagePullPolicy: ", "always"))
    );
    assert_eq!(
        pp[0]["path"],
        "/spec/sources/1/helm/valuesObject/cgpu/imagePullPolicy"
    );
    // The `values` string is not what Argo CD passes (valuesObject is set), and `web` is
    // another chart's Application: neither policy 9 is reported.
    assert!(find(&diags, "policy-out-of-range").is_empty(), "{diags:#?}");
    let v = values(&["--helm", "3", path.to_str().unwrap()]);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0]["cgpu"]["policy"], 4, "parameters are --set");
    assert_eq!(v[0]["cgpu"]["tag"], "v1.5.20-aaaa-aliyun");
    assert_eq!(v[0]["cgpu"]["imagePullPolicy"], "always");
}

/// The `values: |` string in a CRLF file with tabs around: positions inside the string are the
/// file's, and a fix changes the token alone.
#[test]
fn positions_and_fixes_inside_the_values_string() {
    let text = "apiVersion: argoproj.io/v1alpha1\r\nkind: Application\r\nmetadata:\r\n  name: gpu\t# tab\r\nspec:\r\n  source:\r\n    chart: ack-ai-installer\r\n    helm:\r\n      values: |\r\n        # the values, as a string\r\n        cgpu:\r\n          enabled: \"false\"\r\n          policy:\t7\r\n          tag: v1.5.10-2b9e7d4-aliyun\t\r\n      releaseName: gpu\r\n";
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("app.yaml");
    std::fs::write(&path, text).unwrap();
    let (code, diags) = check(&path);
    assert_eq!(code, Some(1), "{diags:#?}");
    let sb = find(&diags, "string-boolean");
    assert_eq!(sb.len(), 1, "{diags:#?}");
    assert_eq!(
        at(sb[0]),
        line_col(text, offset_of(text, "enabled: ", "\"false\""))
    );
    assert_eq!(at(sb[0]), (12, 20));
    let range = find(&diags, "policy-out-of-range");
    assert_eq!(
        at(range[0]),
        line_col(text, offset_of(text, "policy:\t", "7"))
    );
    assert_eq!(range[0]["path"], "/spec/source/helm/values/cgpu/policy");
    // The unsafe fix of `"false"` changes those seven bytes to `false` and nothing else.
    let out = bin()
        .args(["fix", "--unsafe-fixes", "--stdout", "--no-config"])
        .arg(&path)
        .output()
        .unwrap();
    let fixed = String::from_utf8(out.stdout).unwrap();
    let off = offset_of(text, "enabled: ", "\"false\"");
    let want = format!("{}false{}", &text[..off], &text[off + 7..]);
    assert_eq!(fixed, want);
    // The string's YAML is checked like a file: what Helm cannot read is reported inside it.
    let broken = text.replace("policy:\t7", "policy: [7");
    std::fs::write(&path, &broken).unwrap();
    let (code, diags) = check(&path);
    assert_eq!(code, Some(1), "{diags:#?}");
    let syntax = find(&diags, "yaml-syntax");
    assert_eq!(syntax.len(), 1, "{diags:#?}");
    let (line, _) = at(syntax[0]);
    assert!((13..=15).contains(&line), "{diags:#?}");
}

#[test]
fn a_string_that_cannot_be_read_in_place_says_so() {
    let text = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: gpu\nspec:\n  source:\n    chart: ack-ai-installer\n    helm:\n      values: >\n        cgpu:\n          policy: 7\n";
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("app.yaml");
    std::fs::write(&path, text).unwrap();
    let (code, diags) = check(&path);
    assert_eq!(code, Some(0), "{diags:#?}");
    let info = find(&diags, "cgpu-missing");
    assert_eq!(info.len(), 1, "{diags:#?}");
    assert!(
        info[0]["message"].as_str().unwrap().contains("folded"),
        "{diags:#?}"
    );
}

#[test]
fn a_gitops_repository_walked_from_its_root_reports_only_the_charts_releases() {
    let (code, diags) = check(&dir());
    assert_eq!(code, Some(1));
    for d in &diags {
        let msg = d["message"].as_str().unwrap();
        assert!(
            !msg.contains("policy 9"),
            "another chart's value read: {d:#}"
        );
    }
}

#[test]
fn a_config_map_of_values_from_is_checked_inside_its_string() {
    let path = dir().join("helmrelease.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let (_, diags) = check(&path);
    let pp = find(&diags, "pull-policy");
    assert_eq!(pp.len(), 1, "{diags:#?}");
    assert_eq!(
        at(pp[0]),
        line_col(&text, offset_of(&text, "imagePullPolicy: ", "always"))
    );
    assert_eq!(pp[0]["path"], "/data/values.yaml/cgpu/imagePullPolicy");
    assert_eq!(pp[0]["document"], 1);
    assert!(
        pp[0]["message"]
            .as_str()
            .unwrap()
            .contains("valuesFrom ConfigMap `gpu-base`"),
        "{diags:#?}"
    );
}

/// helmfile passes a release's `values:` entries as `--values` in order (an inline mapping as a
/// file of its own, a string as the file it names, relative to the helmfile), then `set:` as
/// `--set` (helmfile's `pkg/state/state.go`, `namespaceAndValuesFlags`).
#[test]
fn helmfile_releases_of_the_chart_are_checked_and_shown() {
    let path = dir().join("helmfile.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let (code, diags) = check(&path);
    assert_eq!(code, Some(1), "{diags:#?}");
    let range = find(&diags, "policy-out-of-range");
    // `web` is ingress-nginx: its policy 9 is not read.
    assert_eq!(range.len(), 1, "{diags:#?}");
    assert_eq!(
        at(range[0]),
        line_col(&text, offset_of(&text, "policy: ", "7"))
    );
    assert_eq!(range[0]["path"], "/releases/0/values/1/cgpu/policy");
    let sb = find(&diags, "string-boolean");
    assert_eq!(
        at(sb[0]),
        line_col(&text, offset_of(&text, "enabled: ", "\"false\""))
    );
    let v = values(&["--helm", "3", path.to_str().unwrap()]);
    assert_eq!(v.len(), 1);
    // values/gpu-common.yaml, then the inline entry over it, then `set`.
    assert_eq!(v[0]["cgpu"]["policy"], 7);
    assert_eq!(v[0]["cgpu"]["enabled"], "false");
    assert_eq!(v[0]["cgpu"]["tag"], "v1.5.20-aaaa-aliyun");
}

/// `set` edits a release's block in place: the value's bytes alone, inside a CRLF `values: |`
/// string too (a new key on a line of its own with the string's indentation and line ending), and
/// an error rule refuses the value with the file untouched.
#[test]
fn set_changes_a_releases_block_in_place() {
    let tmp = tempfile::tempdir().unwrap();
    let hr = tmp.path().join("helmrelease.yaml");
    let text = std::fs::read_to_string(dir().join("helmrelease.yaml")).unwrap();
    std::fs::write(&hr, &text).unwrap();
    let out = bin().args(["set", "policy=3"]).arg(&hr).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let off = offset_of(&text, "  values:\n    cgpu:\n      policy: ", "7");
    let want = format!("{}3{}", &text[..off], &text[off + 1..]);
    assert_eq!(std::fs::read_to_string(&hr).unwrap(), want);
    let out = bin().args(["set", "policy=9"]).arg(&hr).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refused policy=9: policy-out-of-range"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&hr).unwrap(), want);

    let text = "apiVersion: argoproj.io/v1alpha1\r\nkind: Application\r\nmetadata:\r\n  name: gpu\r\nspec:\r\n  source:\r\n    chart: ack-ai-installer\r\n    helm:\r\n      values: |\r\n        cgpu:\r\n          policy:\t1\r\n      releaseName: gpu\r\n";
    let app = tmp.path().join("app.yaml");
    std::fs::write(&app, text).unwrap();
    let out = bin()
        .args(["set", "policy=3", "checkRegions=false"])
        .arg(&app)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let want = text.replace(
        "policy:\t1\r\n",
        "policy:\t3\r\n          checkRegions: false\r\n",
    );
    assert_eq!(std::fs::read_to_string(&app).unwrap(), want);
}

/// Flux merges every valuesFrom entry before spec.values (fluxcd.io, values references): an
/// entry whose ConfigMap or Secret is not in the file gives `values-from-unchecked` (info) at the
/// entry, naming kind, name and valuesKey; a ConfigMap of the same file gives none.
#[test]
fn values_from_entries_not_among_the_inputs_are_named_in_an_info() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: gpu\nspec:\n  chart:\n    spec:\n      chart: ack-ai-installer\n  valuesFrom:\n    - kind: ConfigMap\n      name: gpu-base\n    - kind: Secret\n      name: gpu-secret\n      valuesKey: extra.yaml\n      optional: true\n    - kind: ConfigMap\n      name: gpu-here\n  values:\n    cgpu:\n      policy: 2\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gpu-here\ndata:\n  values.yaml: |\n    cgpu:\n      policy: 1\n";
    let hr = tmp.path().join("hr.yaml");
    std::fs::write(&hr, text).unwrap();
    let (code, diags) = check(&hr);
    assert_eq!(code, Some(0), "{diags:?}");
    let found = find(&diags, "values-from-unchecked");
    assert_eq!(found.len(), 2, "{diags:?}");
    assert!(found.iter().all(|d| d["severity"] == "info"), "{found:?}");
    let first = offset_of(text, "  valuesFrom:\n    - ", "kind: ConfigMap");
    assert_eq!(at(found[0]), line_col(text, first));
    let m = found[0]["message"].as_str().unwrap();
    assert!(
        m.contains("ConfigMap `gpu-base`") && m.contains("valuesKey `values.yaml`"),
        "{m}"
    );
    assert!(
        m.contains("not checked") && m.contains("before `spec.values`"),
        "{m}"
    );
    assert!(!m.contains("optional"), "{m}");
    let second = offset_of(text, "name: gpu-base\n    - ", "kind: Secret");
    assert_eq!(at(found[1]), line_col(text, second));
    let m = found[1]["message"].as_str().unwrap();
    assert!(
        m.contains("Secret `gpu-secret`") && m.contains("valuesKey `extra.yaml`"),
        "{m}"
    );
    assert!(m.contains("optional"), "{m}");
    assert!(
        !diags
            .iter()
            .any(|d| d["message"].as_str().unwrap().contains("gpu-here")
                && d["rule"] == "values-from-unchecked"),
        "{diags:?}"
    );
}
