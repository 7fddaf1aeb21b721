//! What real Helm hands a chart's templates: a copy of charts-fixtures/ack-ai-installer with a
//! probe template (each instance's `.Values` as JSON in a ConfigMap `probe-<chart name>`), the
//! renders read back, and a seeded generator (tests/helm/umbrella_oracle.rs, tests/helm/gitops_oracle.rs).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// The chart with the probe, under `dir` (base64, so no character is lost on the way).
pub fn probed_chart(dir: &Path) -> PathBuf {
    let chart = dir.join("ack-ai-installer");
    copy_dir(&root().join("charts-fixtures/ack-ai-installer"), &chart);
    std::fs::write(
        chart.join("templates/zz-probe.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe-{{ .Chart.Name }}\ndata:\n  values: {{ .Values | toJson | b64enc | quote }}\n",
    )
    .unwrap();
    chart
}

/// `helm template r CHART ARGS…` with real Helm `version` (homes under `home`): each probed
/// instance's values by chart name, or Helm's error.
pub fn helm_probes(
    version: u8,
    chart: &Path,
    args: &[String],
    home: &Path,
) -> Result<HashMap<String, serde_json::Value>, String> {
    let out = super::helm::helm_command(version, home)
        .args(["template", "r"])
        .arg(chart)
        .arg("--skip-schema-validation")
        .args(args)
        .output()
        .expect("run helm");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let src = cgpu_lint::yaml::Source::new("rendered", text);
    let parsed = cgpu_lint::yaml::parse(&src);
    let mut found = HashMap::new();
    for d in &parsed.documents {
        let Some(r) = &d.root else { continue };
        let name = r
            .pointer("/metadata/name")
            .and_then(|n| n.as_str())
            .unwrap_or("");
        if let Some(key) = name.strip_prefix("probe-") {
            let b64 = r.pointer("/data/values").and_then(|n| n.as_str()).unwrap();
            let bytes = cgpu_lint::yaml::resolve::decode_base64(b64).unwrap();
            found.insert(key.to_string(), serde_json::from_slice(&bytes).unwrap());
        }
    }
    Ok(found)
}
