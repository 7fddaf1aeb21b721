//! Values everywhere GitOps keeps them, part 2: Argo CD
//! `helm.parameters` (with `forceString`) over the Application's values, helmfile `set:` and
//! `setString:` over its `values:` list (inline mappings and files beside the helmfile),
//! ApplicationSet templates, kustomize `helmCharts[]`, and what is not read said as such.
//! Every position is computed here from the bytes of the file (the offset of the text the finding
//! is about), never copied from what cgpu-lint printed. The layering follows the tools' code:
//!
//! - Argo CD (<https://argo-cd.readthedocs.io/en/stable/user-guide/helm/>, "parameters >
//!   valuesObject > values > valueFiles"; `util/helm/cmd.go`: parameters as `--set`, with
//!   `forceString` as `--set-string`; `ValuesYAML`: valuesObject replaces the `values` string);
//! - helmfile (`pkg/state/state.go` `namespaceAndValuesFlags`: the `values:` entries as
//!   `--values` in order, then `setFlags` (`--set`), then `setStringFlags` (`--set-string`);
//!   a missing values file stops it: `values file matching "…" does not exist in "…"`).

use crate::common::*;

use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    fixtures().join("gitops-forms")
}

/// 1-based line and column (in characters) of byte `offset`.
fn line_col(text: &str, offset: usize) -> (u64, u64) {
    let before = &text[..offset];
    let line = before.matches('\n').count() as u64 + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() as u64 + 1)
}

/// The offset of `needle` after each of `after` in turn.
fn offset_of(text: &str, after: &[&str], needle: &str) -> usize {
    let mut from = 0;
    for a in after {
        from += text[from..]
            .find(a)
            .unwrap_or_else(|| panic!("{a:?} not in the file"))
            + a.len();
    }
    from + text[from..].find(needle).unwrap()
}

fn check(paths: &[&Path]) -> (Option<i32>, Vec<serde_json::Value>) {
    let paths: Vec<String> = paths
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let mut args = vec!["--no-config"];
    args.extend(paths.iter().map(String::as_str));
    let run = check_json(&args);
    (Some(run.code), run.diagnostics().clone())
}

fn at(d: &serde_json::Value) -> (u64, u64) {
    (d["line"].as_u64().unwrap(), d["column"].as_u64().unwrap())
}

/// The findings of `rule` in the file named `file`.
fn find<'a>(diags: &'a [serde_json::Value], file: &str, rule: &str) -> Vec<&'a serde_json::Value> {
    diags
        .iter()
        .filter(|d| d["rule"] == rule && d["file"].as_str().unwrap().ends_with(file))
        .collect()
}

/// Exactly one finding of `rule` in `file`, at `needle` after `after`.
fn expect_one(diags: &[serde_json::Value], file: &Path, rule: &str, after: &[&str], needle: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    let name = file.file_name().unwrap().to_str().unwrap();
    let found = find(diags, name, rule);
    assert_eq!(found.len(), 1, "{rule} in {name}: {diags:#?}");
    assert_eq!(
        at(found[0]),
        line_col(&text, offset_of(&text, after, needle)),
        "{rule} in {name}: {:#}",
        found[0]
    );
}

fn values(path: &Path) -> serde_json::Value {
    let out = bin()
        .args(["values", "--helm", "3"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn argo_cd_parameters_are_judged_over_the_values_at_their_value() {
    let path = dir().join("application-parameters.yaml");
    let (code, diags) = check(&[&path]);
    assert_eq!(code, Some(1), "{diags:#?}");
    let chart = ["chart: ack-ai-installer", "parameters:"];
    let enabled = [&chart[..], &["name: cgpu.enabled", "value: "]].concat();
    expect_one(&diags, &path, "string-boolean", &enabled, "\"false\"");
    let tag = [&chart[..], &["name: cgpu.tag", "value: "]].concat();
    expect_one(&diags, &path, "tag-invalid", &tag, "latest");
    let pull = [&chart[..], &["name: cgpu.imagePullPolicy", "value: "]].concat();
    expect_one(&diags, &path, "pull-policy", &pull, "always");
    let sb = &find(&diags, "application-parameters.yaml", "string-boolean")[0];
    assert_eq!(sb["path"], "/spec/sources/2/helm/parameters/1/value");
    assert!(
        sb["message"]
            .as_str()
            .unwrap()
            .contains("`enabled` is the string \"false\""),
        "{sb:#}"
    );
    // The parameter `cgpu.policy=3` wins over valuesObject's 7, and the other chart's
    // parameter `cgpu.policy=9` is not this chart's: no policy finding at all.
    assert!(
        find(&diags, "application-parameters.yaml", "policy-out-of-range").is_empty(),
        "{diags:#?}"
    );
    let v = values(&path);
    assert_eq!(v["cgpu"]["policy"], 3);
    assert_eq!(v["cgpu"]["enabled"], "false");
    assert_eq!(v["cgpu"]["tag"], "latest");
}

#[test]
fn a_values_string_beside_values_object_is_named_as_not_read() {
    let path = dir().join("application-dead-values.yaml");
    let (code, diags) = check(&[&path]);
    assert_eq!(code, Some(0), "{diags:#?}");
    expect_one(&diags, &path, "values-not-read", &["values: "], "|");
    assert!(
        find(
            &diags,
            "application-dead-values.yaml",
            "policy-out-of-range"
        )
        .is_empty(),
        "{diags:#?}"
    );
    assert_eq!(values(&path)["cgpu"]["policy"], 3);
}

#[test]
fn helmfile_values_files_inline_values_set_and_set_string_are_layered() {
    let path = dir().join("helmfile.yaml");
    let (code, diags) = check(&[&path]);
    assert_eq!(code, Some(1), "{diags:#?}");
    let gpu = ["- name: gpu\n"];
    let policy = [&gpu[..], &["set:", "value: "]].concat();
    expect_one(&diags, &path, "policy-out-of-range", &policy, "7");
    let regions = [&gpu[..], &["setString:", "value: "]].concat();
    expect_one(&diags, &path, "string-boolean", &regions, "\"false\"");
    // The inline entry's imagePullPolicy comes after the file's `Never`: it is the one judged.
    expect_one(&diags, &path, "pull-policy", &gpu, "always");
    // The file entry, read relative to the helmfile: its tag is judged in that file.
    let file = dir().join("values/gpu.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    let tag: Vec<_> = diags
        .iter()
        .filter(|d| d["file"].as_str().unwrap().ends_with("values/gpu.yaml"))
        .collect();
    assert_eq!(tag.len(), 1, "{diags:#?}");
    assert!(
        tag[0]["rule"].as_str().unwrap().starts_with("tag-"),
        "{diags:#?}"
    );
    assert_eq!(
        at(tag[0]),
        line_col(&text, offset_of(&text, &["tag: "], "1.0.5"))
    );
    // `web` is another chart's release: its `set:` is not read.
    assert_eq!(
        diags
            .iter()
            .filter(|d| d["rule"] == "policy-out-of-range")
            .count(),
        1,
        "{diags:#?}"
    );
    let v = values(&path);
    assert_eq!(v["cgpu"]["policy"], 7);
    assert_eq!(v["cgpu"]["checkRegions"], "false");
    assert_eq!(v["cgpu"]["tag"], "1.0.5");
    assert_eq!(v["cgpu"]["imagePullPolicy"], "always");
}

#[test]
fn a_missing_helmfile_values_file_is_an_error_as_in_helmfile() {
    let path = fixtures().join("gitops-missing/helmfile.yaml");
    let (code, diags) = check(&[&path]);
    assert_eq!(code, Some(1), "{diags:#?}");
    let text = std::fs::read_to_string(&path).unwrap();
    let missing = find(&diags, "helmfile.yaml", "values-file-missing");
    assert_eq!(missing.len(), 1, "{diags:#?}");
    assert_eq!(
        at(missing[0]),
        line_col(
            &text,
            offset_of(&text, &["- name: gpu\n"], "values/missing.yaml")
        )
    );
    assert!(
        missing[0]["message"]
            .as_str()
            .unwrap()
            .contains("values file matching \"values/missing.yaml\" does not exist in"),
        "{diags:#?}"
    );
    // `missingFileHandler: Warn`: helmfile skips the file and installs the rest.
    let range = find(&diags, "helmfile.yaml", "policy-out-of-range");
    assert_eq!(range.len(), 1, "{diags:#?}");
    assert_eq!(
        at(range[0]),
        line_col(&text, offset_of(&text, &["gpu-lenient", "policy: "], "7"))
    );
    // `values` refuses as helmfile does, naming the file.
    let out = bin()
        .args(["values", "--helm", "3"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("values/missing.yaml"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// An ApplicationSet whose generators are not rendered here (a cluster generator): its template
// is read as written, each field holding `{{…}}` left out and named, with why.
#[test]
fn an_application_set_template_is_read_as_an_application_and_its_templates_named() {
    let tmp = tempfile::tempdir().unwrap();
    let list = std::fs::read_to_string(dir().join("applicationset.yaml")).unwrap();
    let (head, rest) = list.split_once("  generators:\n").unwrap();
    let (_, template) = rest.split_once("  template:\n").unwrap();
    let text = format!("{head}  generators:\n    - clusters: {{}}\n  template:\n{template}");
    let path = tmp.path().join("applicationset.yaml");
    std::fs::write(&path, &text).unwrap();
    let (code, diags) = check(&[&path]);
    assert_eq!(code, Some(1), "{diags:#?}");
    expect_one(
        &diags,
        &path,
        "policy-out-of-range",
        &["values: |", "policy: "],
        "7",
    );
    expect_one(
        &diags,
        &path,
        "tag-invalid",
        &["name: cgpu.tag", "value: "],
        "latest",
    );
    let unread = find(&diags, "applicationset.yaml", "values-not-read");
    assert_eq!(unread.len(), 2, "{diags:#?}");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut places: Vec<_> = unread.iter().map(|d| at(d)).collect();
    places.sort();
    assert_eq!(
        places,
        vec![
            line_col(
                &text,
                offset_of(&text, &["values: |", "cluster: "], "'{{.cluster}}'")
            ),
            line_col(
                &text,
                offset_of(&text, &["name: cgpu.image", "value: "], "'{{.image}}'")
            ),
        ],
        "{diags:#?}"
    );
    assert!(
        unread.iter().any(|d| d["message"]
            .as_str()
            .unwrap()
            .contains("`cgpu.nodeSelector.cluster`")),
        "{diags:#?}"
    );
    assert!(
        unread.iter().all(|d| d["message"]
            .as_str()
            .unwrap()
            .contains("(its `clusters` generator is not rendered here")),
        "{diags:#?}"
    );
    // No finding about the templates themselves (a label value `{{.cluster}}`).
    assert!(
        find(&diags, "applicationset.yaml", "label-value").is_empty(),
        "{diags:#?}"
    );
}

#[test]
fn kustomize_helm_charts_are_layered_as_its_helm_generator_does() {
    let path = dir().join("kustomize/kustomization.yaml");
    let (code, diags) = check(&[&path]);
    assert_eq!(code, Some(1), "{diags:#?}");
    let chart = ["name: ack-ai-installer", "valuesInline:"];
    expect_one(&diags, &path, "string-boolean", &chart, "\"false\"");
    expect_one(
        &diags,
        &path,
        "policy-out-of-range",
        &[&chart[..], &["policy: "]].concat(),
        "7",
    );
    expect_one(&diags, &path, "tag-invalid", &chart, "latest");
    let sb = &find(&diags, "kustomization.yaml", "string-boolean")[0];
    assert_eq!(sb["path"], "/helmCharts/1/valuesInline/cgpu/enabled");
    // additionalValuesFiles come after valuesFile and valuesInline: `always` is judged there.
    let extra = dir().join("kustomize/values/extra.yaml");
    expect_one(
        &diags,
        &extra,
        "pull-policy",
        &["imagePullPolicy: "],
        "always",
    );
    // ingress-nginx is another chart: its policy 9 is not read.
    assert_eq!(
        diags
            .iter()
            .filter(|d| d["rule"] == "policy-out-of-range")
            .count(),
        1,
        "{diags:#?}"
    );
    let v = values(&path);
    assert_eq!(v["cgpu"]["policy"], 7);
    assert_eq!(v["cgpu"]["imagePullPolicy"], "always");
}

/// Argo CD's `valueFiles` of a source whose `path` is in this repository: read there, in order,
/// under `values` and the parameters; `ignoreMissingValueFiles` skips a missing one; a file of
/// another source (`$values/…`) is named as not read.
#[test]
fn argo_cd_value_files_are_read_relative_to_the_source_path() {
    let path = dir().join("argocd/apps/gpu.yaml");
    let prod = dir().join("charts/ack-ai-installer/values-prod.yaml");
    let (code, diags) = check(&[&path]);
    assert_eq!(code, Some(1), "{diags:#?}");
    let text = std::fs::read_to_string(&prod).unwrap();
    let tag: Vec<_> = diags
        .iter()
        .filter(|d| d["file"].as_str().unwrap().ends_with("values-prod.yaml"))
        .filter(|d| d["rule"].as_str().unwrap().starts_with("tag-"))
        .collect();
    assert_eq!(tag.len(), 1, "{diags:#?}");
    assert_eq!(
        at(tag[0]),
        line_col(&text, offset_of(&text, &["tag: "], "1.0.5"))
    );
    expect_one(&diags, &prod, "policy-quoted", &["policy: "], "\"2\"");
    // `values` sets imagePullPolicy over the file's `always`: not reported.
    assert!(
        diags.iter().all(|d| d["rule"] != "pull-policy"),
        "{diags:#?}"
    );
    expect_one(
        &diags,
        &path,
        "values-not-read",
        &["valueFiles:"],
        "$values/clusters/prod.yaml",
    );
    let v = values(&path);
    assert_eq!(v["cgpu"]["tag"], "1.0.5");
    assert_eq!(v["cgpu"]["imagePullPolicy"], "Always");
    // Without ignoreMissingValueFiles, the missing file stops Argo CD: an error at the entry.
    let tmp = tempfile::tempdir().unwrap();
    let apps = tmp.path().join("argocd/apps");
    std::fs::create_dir_all(&apps).unwrap();
    std::fs::create_dir_all(tmp.path().join("charts/ack-ai-installer")).unwrap();
    std::fs::copy(
        &prod,
        tmp.path().join("charts/ack-ai-installer/values-prod.yaml"),
    )
    .unwrap();
    let strict = std::fs::read_to_string(&path)
        .unwrap()
        .replace("      ignoreMissingValueFiles: true\n", "");
    let strict_path = apps.join("gpu.yaml");
    std::fs::write(&strict_path, &strict).unwrap();
    let (code, diags) = check(&[&strict_path]);
    assert_eq!(code, Some(1), "{diags:#?}");
    expect_one(
        &diags,
        &strict_path,
        "values-file-missing",
        &["valueFiles:"],
        "values-missing.yaml",
    );
    // A source path that is not here: the value file is named, not read, never silence.
    let elsewhere = strict.replace(
        "path: charts/ack-ai-installer",
        "path: elsewhere/ack-ai-installer",
    );
    std::fs::write(&strict_path, &elsewhere).unwrap();
    let (code, diags) = check(&[&strict_path]);
    assert_eq!(code, Some(0), "{diags:#?}");
    let unread = find(&diags, "gpu.yaml", "values-not-read");
    assert_eq!(unread.len(), 3, "{diags:#?}");
}

/// Flux's `valuesFrom` objects in other files of the same run: each ConfigMap's values checked
/// in place, a Secret's base64 `data` decoded (findings at the base64 string), `targetPath` set
/// like `--set`; without those files, each entry is named (`values-from-unchecked`).
#[test]
fn flux_values_from_objects_in_other_inputs_are_read() {
    let flux = dir().join("flux");
    let (release, cms, secret) = (
        flux.join("helmrelease.yaml"),
        flux.join("configmaps.yaml"),
        flux.join("secret.yaml"),
    );
    let (code, diags) = check(&[&release, &cms, &secret]);
    assert_eq!(code, Some(1), "{diags:#?}");
    expect_one(
        &diags,
        &cms,
        "policy-out-of-range",
        &["values.yaml: |", "policy: "],
        "7",
    );
    expect_one(
        &diags,
        &cms,
        "pull-policy",
        &["values.yaml: |", "imagePullPolicy: "],
        "always",
    );
    expect_one(&diags, &secret, "string-boolean", &["gpu.yaml: "], "Y2dwdT");
    assert!(
        find(&diags, "helmrelease.yaml", "values-from-unchecked").is_empty(),
        "{diags:#?}"
    );
    let out = bin()
        .args(["values", "--helm", "3"])
        .args([&release, &cms, &secret])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["cgpu"]["policy"], 7);
    assert_eq!(v["cgpu"]["enabled"], "false", "the Secret's base64 data");
    assert_eq!(v["cgpu"]["tag"], "latest", "targetPath cgpu.tag");
    assert_eq!(v["cgpu"]["imagePullPolicy"], "Always", "spec.values last");
    // `fix` on the same files finds what `check` finds: the ConfigMap's `always` is fixed.
    let out = bin()
        .args(["fix", "--diff", "--no-config"])
        .args([&release, &cms, &secret])
        .output()
        .unwrap();
    let diff = String::from_utf8_lossy(&out.stdout);
    assert!(
        diff.contains("-      imagePullPolicy: always\n+      imagePullPolicy: Always"),
        "{diff}"
    );
    // The release alone: three entries not among the inputs.
    let (code, diags) = check(&[&release]);
    assert_eq!(code, Some(0), "{diags:#?}");
    assert_eq!(
        find(&diags, "helmrelease.yaml", "values-from-unchecked").len(),
        3
    );
}

/// What is not read is said: `values` refuses Kubernetes objects (naming them) instead of
/// printing the chart's defaults beside their keys, and `cgpu-missing` names the chart a GitOps
/// document deploys instead.
#[test]
fn what_is_not_a_release_of_the_chart_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let web = tmp.path().join("web.yaml");
    std::fs::write(
        &web,
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: web\nspec:\n  chart:\n    spec:\n      chart: ingress-nginx\n  values:\n    cgpu: {policy: 7}\n",
    )
    .unwrap();
    let (code, diags) = check(&[&web]);
    assert_eq!(code, Some(0), "{diags:#?}");
    let missing = find(&diags, "web.yaml", "cgpu-missing");
    assert_eq!(missing.len(), 1, "{diags:#?}");
    assert!(
        missing[0]["message"]
            .as_str()
            .unwrap()
            .contains("Flux HelmRelease `web` deploys `ingress-nginx`"),
        "{diags:#?}"
    );
    for file in [&web, &dir().join("flux/configmaps.yaml")] {
        let out = bin()
            .args(["values", "--helm", "3"])
            .arg(file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("HelmRelease `web`") || err.contains("a ConfigMap `gpu-base`"),
            "{err}"
        );
    }
}

/// `set` changes the release's values block, and refuses a key a parameter or a `set:` entry
/// sets over it (the change would change nothing), naming the entry.
#[test]
fn set_refuses_a_key_that_a_parameter_or_set_entry_overrides() {
    for (file, what) in [
        ("helmfile.yaml", "`set:` entry `cgpu.policy`"),
        ("application-parameters.yaml", "parameter `cgpu.policy`"),
    ] {
        let path = dir().join(file);
        let out = bin()
            .args(["set", "--stdout", "policy=3"])
            .arg(&path)
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(0), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(what), "{file}: {err}");
    }
    // A key no entry sets: changed in the inline values (helmfile) or valuesInline (kustomize).
    let out = bin()
        .args(["set", "--stdout", "tag=v1.5.10-2b9e7d4-aliyun"])
        .arg(dir().join("kustomize/kustomization.yaml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let before = std::fs::read_to_string(dir().join("kustomize/kustomization.yaml")).unwrap();
    assert_eq!(
        text,
        before.replace("tag: latest", "tag: v1.5.10-2b9e7d4-aliyun")
    );
}

/// `set --release NAME` changes the named release of a file of several; an unknown name is
/// refused with the names there are; a value an error rule rejects is refused there too.
#[test]
fn set_release_changes_the_named_release() {
    let text = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: gpu-a\nspec:\n  chart:\n    spec:\n      chart: ack-ai-installer\n  values:\n    cgpu:\n      policy: 2\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: gpu-b\nspec:\n  chart:\n    spec:\n      chart: ack-ai-installer\n  values:\n    cgpu:\n      policy: 3\n";
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("releases.yaml");
    std::fs::write(&path, text).unwrap();
    let run = |args: &[&str]| bin().arg("set").args(args).arg(&path).output().unwrap();
    let out = run(&["--stdout", "--release", "gpu-b", "policy=4"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        text.replace("policy: 3", "policy: 4")
    );
    let out = run(&["--stdout", "policy=4"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        text.replace("policy: 2", "policy: 4"),
        "the first release without --release"
    );
    let out = run(&["--stdout", "--release", "nope", "policy=4"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("`gpu-a`, `gpu-b`"),
        "{out:?}"
    );
    let out = run(&["--stdout", "--release", "gpu-b", "policy=7"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("policy-out-of-range"),
        "{out:?}"
    );
}

/// `check --stack` and `values --stack`: a GitOps file in a stack is one layer, what its release
/// passes (parameters and `set:` entries included), over the files before it; findings about a
/// parameter's value point at it, without a fix.
#[test]
fn a_release_file_is_one_layer_of_a_stack() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base.yaml");
    std::fs::write(
        &base,
        "cgpu:\n  policy: 9\n  tag: v1.5.10-2b9e7d4-aliyun\n  imagePullPolicy: Never\n",
    )
    .unwrap();
    let app = dir().join("application-parameters.yaml");
    let out = bin()
        .args(["check", "--stack", "--format", "json", "--no-config"])
        .args([&base, &app])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let diags = json["diagnostics"].as_array().unwrap().clone();
    let chart = ["chart: ack-ai-installer", "parameters:"];
    let enabled = [&chart[..], &["name: cgpu.enabled", "value: "]].concat();
    expect_one(&diags, &app, "string-boolean", &enabled, "\"false\"");
    let pull = [&chart[..], &["name: cgpu.imagePullPolicy", "value: "]].concat();
    expect_one(&diags, &app, "pull-policy", &pull, "always");
    assert!(
        diags.iter().all(|d| d["fixable"] == false),
        "no edit of a parameter's value: {diags:#?}"
    );
    // The base's policy 9 is overridden by the parameter `cgpu.policy=3`.
    assert!(
        diags.iter().all(|d| d["rule"] != "policy-out-of-range"),
        "{diags:#?}"
    );
    let out = bin()
        .args(["values", "--stack", "--helm", "3"])
        .args([&base, &app])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["cgpu"]["policy"], 3);
    assert_eq!(v["cgpu"]["imagePullPolicy"], "always");
    assert_eq!(v["cgpu"]["enabled"], "false");
}

/// A `$ref/…` value file of a `ref:` source of the same repository (`repoURL` without `.git`)
/// is read from the repository's root; one of another repository is named as not read.
#[test]
fn argo_cd_ref_value_files_of_the_same_repository_are_read() {
    let path = dir().join("argocd/apps/gpu-ref.yaml");
    let (code, diags) = check(&[&path]);
    assert_eq!(code, Some(1), "{diags:#?}");
    let prod = dir().join("clusters/prod.yaml");
    expect_one(&diags, &prod, "policy-out-of-range", &["policy: "], "7");
    let found = find(&diags, "clusters/prod.yaml", "policy-out-of-range");
    assert!(
        !found[0]["file"].as_str().unwrap().contains(".."),
        "{:#}",
        found[0]
    );
    expect_one(
        &diags,
        &path,
        "values-not-read",
        &["valueFiles:"],
        "$other/prod.yaml",
    );
}

/// CRLF line ends: the parameter and `set:` findings are at the same line and column.
#[test]
fn positions_hold_with_crlf_line_ends() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, rule, after, needle) in [
        (
            "application-parameters.yaml",
            "string-boolean",
            &["chart: ack-ai-installer", "name: cgpu.enabled", "value: "][..],
            "\"false\"",
        ),
        (
            "helmfile.yaml",
            "policy-out-of-range",
            &["- name: gpu\r\n", "set:", "value: "][..],
            "7",
        ),
    ] {
        let text = std::fs::read_to_string(dir().join(name))
            .unwrap()
            .replace('\n', "\r\n");
        let path = tmp.path().join(name);
        std::fs::write(&path, &text).unwrap();
        std::fs::create_dir_all(tmp.path().join("values")).unwrap();
        std::fs::copy(
            dir().join("values/gpu.yaml"),
            tmp.path().join("values/gpu.yaml"),
        )
        .unwrap();
        let (_, diags) = check(&[&path]);
        expect_one(&diags, &path, rule, after, needle);
    }
}

/// What each tool passes that is not read here is named at its entry (`values-not-read`),
/// never silently left out: a helmfile `.gotmpl` values file, `secrets:`, a `set:` entry with
/// `file:`; Argo CD `fileParameters`; Flux's chart `valuesFiles`.
#[test]
fn what_the_tools_pass_and_is_not_read_is_named_at_its_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        (
            "helmfile.yaml",
            "releases:\n  - name: gpu\n    chart: aliyun/ack-ai-installer\n    values:\n      - values.yaml.gotmpl\n      - cgpu: {policy: 3}\n    secrets:\n      - secrets.yaml\n    set:\n      - name: cgpu.tag\n        file: tag.txt\n",
            vec!["values.yaml.gotmpl", "secrets.yaml", "tag.txt"],
        ),
        (
            "app.yaml",
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: gpu\nspec:\n  source:\n    chart: ack-ai-installer\n    repoURL: https://example.com/charts\n    helm:\n      fileParameters:\n        - name: cgpu.tag\n          path: tag.txt\n",
            vec!["name: cgpu.tag"],
        ),
        (
            "release.yaml",
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: gpu\nspec:\n  chart:\n    spec:\n      chart: ack-ai-installer\n      valuesFiles:\n        - values-prod.yaml\n",
            vec!["values-prod.yaml"],
        ),
    ];
    for (name, text, places) in cases {
        let path = tmp.path().join(name);
        std::fs::write(&path, text).unwrap();
        let (code, diags) = check(&[&path]);
        assert_eq!(code, Some(0), "{name}: {diags:#?}");
        let mut got: Vec<_> = find(&diags, name, "values-not-read")
            .iter()
            .map(|d| at(d))
            .collect();
        got.sort();
        let mut want: Vec<_> = places
            .iter()
            .map(|p| line_col(text, text.find(p).unwrap()))
            .collect();
        want.sort();
        assert_eq!(got, want, "{name}: {diags:#?}");
    }
}

// A helmfile release with a values file that is not there: helmfile stops (values-file-missing
// at the entry), and the release's other values (a file beside it, an inline map) are still
// checked, each finding at its own place.
#[test]
fn a_missing_values_file_does_not_hide_the_releases_other_findings() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    let helmfile = "releases:\n- name: gpu\n  namespace: kube-system\n  chart: aliyun/ack-ai-installer\n  values:\n  - missing.yaml\n  - present.yaml\n  - cgpu:\n      imagePullPolicy: always\n";
    std::fs::write(p.join("helmfile.yaml"), helmfile).unwrap();
    std::fs::write(p.join("present.yaml"), "cgpu:\n  policy: 9\n").unwrap();
    let (code, diags) = check(&[&p.join("helmfile.yaml")]);
    assert_eq!(code, Some(1));
    let got: std::collections::BTreeSet<(String, String, (u64, u64))> = diags
        .iter()
        .map(|d| {
            (
                std::path::Path::new(d["file"].as_str().unwrap())
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                d["rule"].as_str().unwrap().to_string(),
                (d["line"].as_u64().unwrap(), d["column"].as_u64().unwrap()),
            )
        })
        .collect();
    let want = std::collections::BTreeSet::from([
        (
            "helmfile.yaml".to_string(),
            "values-file-missing".to_string(),
            line_col(helmfile, offset_of(helmfile, &[], "missing.yaml")),
        ),
        (
            "helmfile.yaml".to_string(),
            "pull-policy".to_string(),
            line_col(
                helmfile,
                offset_of(helmfile, &["imagePullPolicy: "], "always"),
            ),
        ),
        (
            "present.yaml".to_string(),
            "policy-out-of-range".to_string(),
            (2, 11),
        ),
    ]);
    assert_eq!(got, want, "{diags:#?}");
}

// A values string on one line in double quotes (as kubectl prints a values string with
// trailing spaces) or single quotes is read as Argo CD reads it: each finding at its characters
// inside the quoted scalar, an escape (`\x37`, `\"`) whole, and the fix written escaped.
#[test]
fn a_one_line_quoted_values_string_is_checked_in_place() {
    let tmp = tempfile::tempdir().unwrap();
    let head = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: gpu\nspec:\n  source:\n    chart: ack-ai-installer\n    repoURL: https://example.com/charts\n    targetRevision: 1.12.6\n    helm:\n";
    let app = format!(
        "{head}      values: \"cgpu:\\n  imagePullPolicy: always  \\n  enabled: \\\"false\\\"\\n  policy: \\x37\\n  tag: latest\\n\"\n"
    );
    let f = tmp.path().join("app.yaml");
    std::fs::write(&f, &app).unwrap();
    let (code, diags) = check(&[&f]);
    assert_eq!(code, Some(1));
    let at = |rule: &str| -> ((u64, u64), (u64, u64)) {
        let d = diags
            .iter()
            .find(|d| d["rule"] == rule)
            .unwrap_or_else(|| panic!("{rule}: {diags:#?}"));
        (
            (d["line"].as_u64().unwrap(), d["column"].as_u64().unwrap()),
            (
                d["end_line"].as_u64().unwrap(),
                d["end_column"].as_u64().unwrap(),
            ),
        )
    };
    let span = |needle: &str| {
        let o = offset_of(&app, &["values: "], needle);
        (line_col(&app, o), line_col(&app, o + needle.len()))
    };
    assert_eq!(at("pull-policy"), span("always"));
    assert_eq!(at("string-boolean"), span("\\\"false\\\""));
    assert_eq!(at("policy-out-of-range"), span("\\x37"));
    assert_eq!(at("tag-invalid"), span("latest"));
    assert!(
        diags.iter().all(|d| d["rule"] != "cgpu-missing"),
        "{diags:#?}"
    );
    // The fixes splice the file's bytes, escaped for the double quotes.
    let out = bin()
        .args(["fix", "--stdout", "--unsafe-fixes", "--no-config"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        app.replace("always", "Always")
            .replace("\\\"false\\\"", "false")
    );
    // Single quotes: a flow mapping on one line, `''` a quote.
    let app = format!("{head}      values: '{{cgpu: {{policy: 7, tag: ''v1''}}}}'\n");
    std::fs::write(&f, &app).unwrap();
    let (_, diags) = check(&[&f]);
    let d = diags
        .iter()
        .find(|d| d["rule"] == "policy-out-of-range")
        .unwrap_or_else(|| panic!("{diags:#?}"));
    let o = offset_of(&app, &["policy: "], "7");
    assert_eq!(
        (d["line"].as_u64().unwrap(), d["column"].as_u64().unwrap()),
        line_col(&app, o)
    );
}

// `values` on an ApplicationSet whose generators are not rendered here (a git generator): what
// they fill in is no value; it is never printed as one (`"{{.policy}}"`) nor dropped to the
// chart's default in silence: stderr names the keys.
#[test]
fn values_of_an_application_set_name_the_templated_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let head = "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata:\n  name: gpu\nspec:\n  goTemplate: true\n  generators:\n  - git:\n      repoURL: https://example.com/gitops.git\n      files:\n      - path: clusters/*.json\n  template:\n    metadata:\n      name: 'gpu-{{cluster}}'\n    spec:\n      source:\n        chart: ack-ai-installer\n        repoURL: https://example.com/charts\n        targetRevision: 1.12.6\n        helm:\n";
    let empty = tmp.path().join("empty.yaml");
    std::fs::write(&empty, "{}\n").unwrap();
    let defaults = bin().arg("values").arg(&empty).output().unwrap();
    let defaults: serde_json::Value = serde_json::from_slice(&defaults.stdout).unwrap();
    for (what, helm) in [
        (
            "valuesObject",
            "          valuesObject:\n            cgpu:\n              policy: '{{.policy}}'\n              tag: '{{.tag}}'\n",
        ),
        (
            "values string",
            "          values: |\n            cgpu:\n              policy: '{{.policy}}'\n              tag: '{{.tag}}'\n",
        ),
        (
            "parameters",
            "          parameters:\n          - name: cgpu.policy\n            value: '{{.policy}}'\n          - name: cgpu.tag\n            value: '{{.tag}}'\n",
        ),
    ] {
        let f = tmp.path().join("appset.yaml");
        std::fs::write(&f, format!("{head}{helm}")).unwrap();
        let out = bin().arg("values").arg(&f).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{what}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains("{{"), "{what}: {stdout}");
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(v["cgpu"]["policy"], defaults["cgpu"]["policy"], "{what}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("release `gpu`: cgpu.policy, cgpu.tag are filled in by the ApplicationSet's generators"),
            "{what}: {err}"
        );
    }
}

/// Parameters beside a one-line quoted values string are layered over it as Argo CD renders
/// them (`check` used to ignore them there while `values` applied them): a parameter's value
/// is judged at the parameter, and the string's own values at their characters in the string.
#[test]
fn parameters_beside_a_one_line_values_string_are_layered_over_it() {
    let tmp = tempfile::tempdir().unwrap();
    let head = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: gpu\nspec:\n  source:\n    chart: ack-ai-installer\n    repoURL: https://example.com/charts\n    targetRevision: 1.12.6\n    helm:\n";
    let param = format!(
        "{head}      values: \"cgpu:\\n  policy: 2\\n\"\n      parameters:\n      - name: cgpu.policy\n        value: \"7\"\n"
    );
    let f = tmp.path().join("param.yaml");
    std::fs::write(&f, &param).unwrap();
    let (code, diags) = check(&[&f]);
    assert_eq!(code, Some(1), "{diags:#?}");
    expect_one(&diags, &f, "policy-out-of-range", &["value: "], "\"7\"");
    assert_eq!(values(&f)["cgpu"]["policy"], 7);
    let own = format!(
        "{head}      values: \"cgpu:\\n  policy: 9\\n\"\n      parameters:\n      - name: cgpu.imagePullPolicy\n        value: Always\n"
    );
    let g = tmp.path().join("own.yaml");
    std::fs::write(&g, &own).unwrap();
    let (code, diags) = check(&[&g]);
    assert_eq!(code, Some(1), "{diags:#?}");
    expect_one(
        &diags,
        &g,
        "policy-out-of-range",
        &["values: ", "policy: "],
        "9",
    );
}

/// The summary line and JSON's `summary.files` of `check ARGS` run in `dir`.
fn files_checked(dir: &Path, args: &[&str]) -> (usize, u64) {
    let human = run_in(dir, &[&["check", "--no-config"], args].concat());
    let text = String::from_utf8_lossy(&human.stdout);
    let line = text
        .lines()
        .find(|l| l.contains(" checked: "))
        .unwrap_or_else(|| panic!("no summary line: {}", printed(&human)));
    let n = line.split(' ').next().unwrap().parse().unwrap();
    let json = run_in(
        dir,
        &[&["check", "--no-config", "--format", "json"], args].concat(),
    );
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    (n, v["summary"]["files"].as_u64().unwrap())
}

// The summary counts every file a run read: the helmfile and each values file its releases
// read (one that does not exist is not read), Argo CD value files and kustomize's valuesFile
// and additionalValuesFiles, each once across the run (a file given and also read is one, and
// so is a file two helmfiles read); JSON's summary says the same.
#[test]
fn the_summary_counts_every_file_read_once() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    std::fs::create_dir(p.join("values")).unwrap();
    std::fs::write(p.join("values/a.yaml"), "cgpu:\n  policy: 1\n").unwrap();
    std::fs::write(
        p.join("values/b.yaml"),
        "cgpu:\n  imagePullPolicy: Always\n",
    )
    .unwrap();
    let release = "releases:\n- name: gpu\n  chart: aliyun/ack-ai-installer\n  missingFileHandler: Warn\n  values:\n  - values/a.yaml\n  - values/b.yaml\n  - values/missing.yaml\n";
    std::fs::write(p.join("helmfile.yaml"), release).unwrap();
    std::fs::write(
        p.join("other.yaml"),
        "releases:\n- name: gpu2\n  chart: aliyun/ack-ai-installer\n  values:\n  - values/a.yaml\n",
    )
    .unwrap();
    for (args, want) in [
        (&["helmfile.yaml"][..], 3),
        (&["helmfile.yaml", "values/a.yaml"][..], 3),
        (
            &["helmfile.yaml", "./values/b.yaml", "values/a.yaml"][..],
            3,
        ),
        (&["helmfile.yaml", "other.yaml"][..], 4),
        (&["other.yaml"][..], 2),
        (&["--same-cluster", "helmfile.yaml", "other.yaml"][..], 4),
    ] {
        assert_eq!(files_checked(p, args), (want, want as u64), "{args:?}");
    }
    let forms = dir();
    // valuesFile and one additionalValuesFiles entry.
    assert_eq!(
        files_checked(&forms, &["kustomize/kustomization.yaml"]),
        (3, 3)
    );
    // values-prod.yaml beside the chart's `path` (values-missing.yaml is skipped).
    assert_eq!(files_checked(&forms, &["argocd/apps/gpu.yaml"]), (2, 2));
    // A `$values/…` file of a `ref:` source of the same repository.
    assert_eq!(files_checked(&forms, &["argocd/apps/gpu-ref.yaml"]), (2, 2));
}

/// `values` of a file whose releases print one line each: the lines as JSON.
fn values_lines(path: &Path) -> Vec<serde_json::Value> {
    let out = bin()
        .args(["values", "--helm", "3"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The head of an ApplicationSet named `gpu` of the chart: `spec:` then `extra` (generators,
/// `goTemplate`), then the template down to `helm:`.
fn application_set(extra: &str, helm: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata:\n  name: gpu\nspec:\n{extra}  template:\n    metadata:\n      name: 'gpu-{{{{cluster}}}}'\n    spec:\n      project: default\n      destination:\n        server: https://kubernetes.default.svc\n        namespace: kube-system\n      source:\n        chart: ack-ai-installer\n        repoURL: https://example.com/charts\n        targetRevision: 1.12.6\n        helm:\n{helm}"
    )
}

/// Exactly one finding of `rule`, at `needle` after `after` in `text`; returned.
fn one_at<'a>(
    diags: &'a [serde_json::Value],
    text: &str,
    rule: &str,
    after: &[&str],
    needle: &str,
) -> &'a serde_json::Value {
    let found: Vec<_> = diags.iter().filter(|d| d["rule"] == rule).collect();
    assert_eq!(found.len(), 1, "{rule}: {diags:#?}");
    assert_eq!(
        at(found[0]),
        line_col(text, offset_of(text, after, needle)),
        "{rule}: {:#}",
        found[0]
    );
    found[0]
}

// Argo CD's list generator without `goTemplate` (applicationset/generators/list.go, utils.go
// `Replace` with fasttemplate): each element is an Application; its values are strings, its
// `values:` map is `values.KEY`; every string of the template has each `{{ tag }}` naming a
// param replaced, an unknown tag stays as written; valuesObject's strings stay strings. A value
// that came whole from one element is judged at that element's value, named and without a fix;
// what is the template's own and the same for every element is said once, with its fix.
#[test]
fn list_generator_elements_are_checked_as_the_applications_they_make() {
    let tmp = tempfile::tempdir().unwrap();
    let elements = "  generators:\n  - list:\n      elements:\n      - cluster: staging\n        policy: \"2\"\n        tag: v1.5.10-2b9e7d4-aliyun\n        values:\n          pull: Always\n      - cluster: prod\n        policy: \"7\"\n        tag: latest\n        values:\n          pull: always\n";
    let helm = "          valuesObject:\n            cgpu:\n              policy: '{{policy}}'\n              enabled: \"false\"\n              imagePullPolicy: '{{ values.pull }}'\n              nodeSelector:\n                cluster: '{{cluster}}'\n                pool: '{{pool}}'\n          parameters:\n          - name: cgpu.tag\n            value: '{{tag}}'\n";
    let text = application_set(elements, helm);
    let path = tmp.path().join("appset.yaml");
    std::fs::write(&path, &text).unwrap();
    let (code, diags) = check(&[&path]);
    assert_eq!(code, Some(1), "{diags:#?}");
    let staging = "(element 1, `cluster: staging`)";
    let prod = "(element 2, `cluster: prod`)";
    // valuesObject's `'{{policy}}'` hands Helm the string "2": a quoted policy, at the value.
    let d = one_at(
        &diags,
        &text,
        "policy-quoted",
        &["cluster: staging", "policy: "],
        "\"2\"",
    );
    assert!(d["message"].as_str().unwrap().contains(staging), "{d:#}");
    assert!(d["fix"].is_null(), "{d:#}");
    let d = one_at(
        &diags,
        &text,
        "policy-out-of-range",
        &["cluster: prod", "policy: "],
        "\"7\"",
    );
    assert!(d["message"].as_str().unwrap().contains(prod), "{d:#}");
    assert_eq!(
        d["path"],
        "/spec/template/spec/source/helm/valuesObject/cgpu/policy"
    );
    // `values.pull` of the second element, through `{{ values.pull }}` (the tag trimmed).
    let d = one_at(
        &diags,
        &text,
        "pull-policy",
        &["cluster: prod", "pull: "],
        "always",
    );
    assert!(d["message"].as_str().unwrap().contains(prod), "{d:#}");
    assert!(d["fix"].is_null(), "{d:#}");
    // A parameter's value from the element: at the element's value, named as the parameter.
    let d = one_at(
        &diags,
        &text,
        "tag-invalid",
        &["cluster: prod", "tag: "],
        "latest",
    );
    let m = d["message"].as_str().unwrap();
    assert!(
        m.contains(prod) && m.contains("(parameter `cgpu.tag`)"),
        "{m}"
    );
    assert_eq!(
        d["path"],
        "/spec/template/spec/source/helm/parameters/0/value"
    );
    // The template's own `enabled: "false"`: once, as the ApplicationSet's, with its fix.
    let d = one_at(&diags, &text, "string-boolean", &["enabled: "], "\"false\"");
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .starts_with("Argo CD ApplicationSet `gpu`: "),
        "{d:#}"
    );
    assert_eq!(d["fix"]["applicability"], "unsafe", "{d:#}");
    // `{{pool}}` names no param: Argo CD hands the text on, which is no label value.
    let d = one_at(&diags, &text, "label-value", &["pool: "], "'{{pool}}'");
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .starts_with("Argo CD ApplicationSet `gpu`: "),
        "{d:#}"
    );
    assert!(
        find(&diags, "appset.yaml", "values-not-read").is_empty(),
        "{diags:#?}"
    );
    // `values`: one line per Application, named as Argo CD names it.
    let lines = values_lines(&path);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert_eq!(lines[0]["name"], "gpu-staging");
    assert_eq!(lines[0]["element"], 1);
    let v = &lines[0]["values"]["cgpu"];
    assert_eq!(v["policy"], "2");
    assert_eq!(v["imagePullPolicy"], "Always");
    assert_eq!(v["tag"], "v1.5.10-2b9e7d4-aliyun");
    assert_eq!(v["enabled"], "false");
    assert_eq!(
        v["nodeSelector"],
        serde_json::json!({"cluster": "staging", "pool": "{{pool}}"})
    );
    assert_eq!(lines[1]["name"], "gpu-prod");
    assert_eq!(lines[1]["element"], 2);
    assert_eq!(lines[1]["values"]["cgpu"]["policy"], "7");
    assert_eq!(lines[1]["values"]["cgpu"]["tag"], "latest");
}

// A `values: |` string is replaced as text, and Helm then reads the YAML: `policy: {{policy}}`
// with the element's "7" is the number 7, judged at the element's value; a finding on the
// template's own text keeps its place in the block and its fix, which `fix` applies once; the
// elements' values are left alone. A one-line quoted string is read the same way.
#[test]
fn a_values_string_is_rendered_as_text_and_read_as_yaml() {
    let tmp = tempfile::tempdir().unwrap();
    let elements = "  generators:\n  - list:\n      elements:\n      - cluster: staging\n        policy: \"1\"\n      - cluster: prod\n        policy: \"7\"\n";
    let helm = "          values: |\n            cgpu:\n              policy: {{policy}}\n              imagePullPolicy: always\n              tag: 'v1.5.{{policy}}-2b9e7d4-aliyun'\n              nodeSelector:\n                cluster: {{cluster}}\n";
    let text = application_set(elements, helm);
    let path = tmp.path().join("appset.yaml");
    std::fs::write(&path, &text).unwrap();
    let (code, diags) = check(&[&path]);
    assert_eq!(code, Some(1), "{diags:#?}");
    let d = one_at(
        &diags,
        &text,
        "policy-out-of-range",
        &["cluster: prod", "policy: "],
        "\"7\"",
    );
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("(element 2, `cluster: prod`): policy 7 does not exist"),
        "{d:#}"
    );
    let d = one_at(
        &diags,
        &text,
        "pull-policy",
        &["values: |", "imagePullPolicy: "],
        "always",
    );
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .starts_with("Argo CD ApplicationSet `gpu`: "),
        "{d:#}"
    );
    // The tag is the template's text with an element's value inside: at the template's string,
    // naming the element (1.5.1 and 1.5.7 both have the deadlock: one finding on that token
    // says both elements'), without a fix.
    let d = one_at(
        &diags,
        &text,
        "tag-known-deadlock",
        &["tag: "],
        "'v1.5.{{policy}}",
    );
    let m = d["message"].as_str().unwrap();
    assert!(
        m.contains("(element 1, `cluster: staging`): cGPU 1.5.1")
            && m.contains("(element 2, `cluster: prod`): cGPU 1.5.7"),
        "{m}"
    );
    assert!(d["fix"].is_null(), "{d:#}");
    let out = bin()
        .args(["fix", "--no-config", "--stdout"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        text.replace("imagePullPolicy: always", "imagePullPolicy: Always")
    );
    let lines = values_lines(&path);
    assert_eq!(lines[1]["values"]["cgpu"]["policy"], 7);
    assert_eq!(lines[1]["values"]["cgpu"]["tag"], "v1.5.7-2b9e7d4-aliyun");
    assert_eq!(
        lines[0]["values"]["cgpu"]["nodeSelector"]["cluster"],
        "staging"
    );
    // The same values as a one-line double-quoted string.
    let quoted = application_set(
        elements,
        "          values: \"cgpu:\\n  policy: {{policy}}\\n  imagePullPolicy: always\\n\"\n",
    );
    std::fs::write(&path, &quoted).unwrap();
    let (_, diags) = check(&[&path]);
    one_at(
        &diags,
        &quoted,
        "policy-out-of-range",
        &["cluster: prod", "policy: "],
        "\"7\"",
    );
    one_at(&diags, &quoted, "pull-policy", &["values: "], "always");
}

// Without `goTemplate`, an element value that is not a string makes Argo CD's list generator
// fail ("error parsing value as string", list.go), and so does a `values:` that is not a
// mapping, and a `{{` no `}}` closes (fasttemplate): the ApplicationSet makes no Application.
// That is said at the value or the string, naming the element, and nothing else is checked.
#[test]
fn a_list_element_argo_cd_refuses_is_said_at_the_element() {
    let tmp = tempfile::tempdir().unwrap();
    let helm = "          valuesObject:\n            cgpu:\n              policy: '{{policy}}'\n              tag: latest\n";
    let path = tmp.path().join("appset.yaml");
    for (elements, after, needle) in [
        (
            "  generators:\n  - list:\n      elements:\n      - cluster: staging\n        policy: \"2\"\n      - cluster: prod\n        policy: 2\n",
            &["cluster: prod", "policy: "][..],
            "2",
        ),
        (
            "  generators:\n  - list:\n      elements:\n      - cluster: prod\n        values:\n          enabled: false\n",
            &["enabled: "][..],
            "false",
        ),
        (
            "  generators:\n  - list:\n      elements:\n      - cluster: prod\n        values: none\n",
            &["values: "][..],
            "none",
        ),
    ] {
        let text = application_set(elements, helm);
        std::fs::write(&path, &text).unwrap();
        let (code, diags) = check(&[&path]);
        assert_eq!(code, Some(1), "{diags:#?}");
        assert_eq!(diags.len(), 1, "{diags:#?}");
        let d = one_at(&diags, &text, "appset-generator-fails", after, needle);
        let m = d["message"].as_str().unwrap();
        assert!(m.contains("element") && m.contains("generates none"), "{m}");
        let out = bin().arg("values").arg(&path).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("generates none"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = application_set(
        "  generators:\n  - list:\n      elements:\n      - cluster: prod\n",
        "          valuesObject:\n            cgpu:\n              tag: '{{cluster}}-{{'\n",
    );
    std::fs::write(&path, &text).unwrap();
    let (_, diags) = check(&[&path]);
    one_at(
        &diags,
        &text,
        "appset-generator-fails",
        &["tag: "],
        "'{{cluster}}-{{'",
    );
}

// `goTemplate: true`: the element is the data as its JSON has it; `{{.key}}` prints a value as
// Go's fmt does (a number, a boolean), and valuesObject's `'{{.policy}}'` is still a string;
// `{{.values.tag}}` reads a nested mapping. A string with anything else (a function, a
// pipeline) is left out and named; `missingkey=error` and a missing key fail the whole
// ApplicationSet.
#[test]
fn go_template_list_elements_are_rendered_in_their_plain_form() {
    let tmp = tempfile::tempdir().unwrap();
    let elements = "  goTemplate: true\n  generators:\n  - list:\n      elements:\n      - cluster: staging\n        policy: 2\n        values:\n          tag: v1.5.10-2b9e7d4-aliyun\n      - cluster: prod\n        policy: 7\n        values:\n          tag: latest\n";
    let helm = "          valuesObject:\n            cgpu:\n              policy: '{{.policy}}'\n              nodeSelector:\n                cluster: '{{ .cluster | upper }}'\n          values: |\n            ignored: {{ .policy }}\n          parameters:\n          - name: cgpu.tag\n            value: '{{ .values.tag }}'\n";
    let text = application_set(elements, helm).replace("'gpu-{{cluster}}'", "'gpu-{{.cluster}}'");
    let path = tmp.path().join("appset.yaml");
    std::fs::write(&path, &text).unwrap();
    let (code, diags) = check(&[&path]);
    assert_eq!(code, Some(1), "{diags:#?}");
    // The number 7 printed into a string of valuesObject: the string "7".
    let d = one_at(
        &diags,
        &text,
        "policy-out-of-range",
        &["cluster: prod", "policy: "],
        "7",
    );
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("(element 2, `cluster: prod`)"),
        "{d:#}"
    );
    let d = one_at(
        &diags,
        &text,
        "policy-quoted",
        &["cluster: staging", "policy: "],
        "2",
    );
    assert!(
        d["message"].as_str().unwrap().contains("policy \"2\""),
        "{d:#}"
    );
    one_at(
        &diags,
        &text,
        "tag-invalid",
        &["cluster: prod", "tag: "],
        "latest",
    );
    // `| upper` is not rendered here: named once, not judged; so is the `values` string
    // beside valuesObject, which Argo CD does not read.
    let unread = find(&diags, "appset.yaml", "values-not-read");
    let mut places: Vec<_> = unread.iter().map(|d| at(d)).collect();
    places.sort();
    assert_eq!(
        places,
        vec![
            line_col(
                &text,
                offset_of(&text, &["cluster: "], "'{{ .cluster | upper }}'")
            ),
            line_col(&text, offset_of(&text, &["values: "], "|")),
        ],
        "{diags:#?}"
    );
    assert!(
        unread.iter().all(|d| d["message"]
            .as_str()
            .unwrap()
            .starts_with("Argo CD ApplicationSet `gpu`: ")),
        "{diags:#?}"
    );
    let lines = values_lines(&path);
    assert_eq!(lines[0]["name"], "gpu-staging");
    assert_eq!(lines[0]["values"]["cgpu"]["policy"], "2");
    assert_eq!(lines[1]["values"]["cgpu"]["policy"], "7");
    assert_eq!(lines[1]["values"]["cgpu"]["tag"], "latest");
    // valuesObject wins over the string, which Argo CD does not read.
    assert!(lines[1]["values"].get("ignored").is_none());
    // `missingkey=error`: an element without `policy` fails the template.
    let strict = text
        .replace(
            "  goTemplate: true\n",
            "  goTemplate: true\n  goTemplateOptions: [\"missingkey=error\"]\n",
        )
        .replace("        policy: 7\n", "");
    std::fs::write(&path, &strict).unwrap();
    let (_, diags) = check(&[&path]);
    // Each string that needs the key (Argo CD stops at the first it renders): the one in
    // valuesObject, and the one in the `values` string it renders too, unread as it is.
    let fails = find(&diags, "appset.yaml", "appset-generator-fails");
    let place = line_col(
        &strict,
        offset_of(&strict, &["valuesObject:", "policy: "], "'{{.policy}}'"),
    );
    let d = fails
        .iter()
        .find(|d| at(d) == place)
        .unwrap_or_else(|| panic!("{diags:#?}"));
    assert!(
        d["message"].as_str().unwrap().contains("element 2"),
        "{d:#}"
    );
    assert!(
        diags.iter().all(|d| d["rule"] == "appset-generator-fails"),
        "{diags:#?}"
    );
}

// The repository's ApplicationSet (goTemplate, a list generator, a `values: |` string and
// parameters): each element's Application is checked, the template's own mistakes once.
#[test]
fn the_application_sets_elements_are_its_applications() {
    let path = dir().join("applicationset.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let (code, diags) = check(&[&path]);
    assert_eq!(code, Some(1), "{diags:#?}");
    let d = one_at(
        &diags,
        &text,
        "image-reference",
        &["cluster: staging", "image: "],
        "acs/cgpu-installer:v1.5.10",
    );
    let m = d["message"].as_str().unwrap();
    assert!(
        m.starts_with(
            "Argo CD ApplicationSet `gpu-clusters` (element 2, `cluster: staging`) (parameter `cgpu.image`): "
        ),
        "{m}"
    );
    assert!(d["fix"].is_null(), "{d:#}");
    let d = one_at(
        &diags,
        &text,
        "policy-out-of-range",
        &["values: |", "policy: "],
        "7",
    );
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .starts_with("Argo CD ApplicationSet `gpu-clusters`: "),
        "{d:#}"
    );
    one_at(
        &diags,
        &text,
        "tag-invalid",
        &["name: cgpu.tag", "value: "],
        "latest",
    );
    assert_eq!(diags.len(), 3, "{diags:#?}");
    let lines = values_lines(&path);
    assert_eq!(
        lines
            .iter()
            .map(|l| (
                l["name"].as_str().unwrap(),
                l["values"]["cgpu"]["nodeSelector"]["cluster"]
                    .as_str()
                    .unwrap(),
                l["values"]["cgpu"]["image"].as_str().unwrap()
            ))
            .collect::<Vec<_>>(),
        [
            ("prod-gpu", "prod", "acs/cgpu-installer"),
            ("staging-gpu", "staging", "acs/cgpu-installer:v1.5.10")
        ]
    );
}
