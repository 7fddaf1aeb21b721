//! Entry points for the fuzz targets (fuzz/fuzz_targets/, their properties in fuzz/*.rs, which
//! tests/it/fuzz_regressions.rs also runs on every saved input). Each drives one reader or engine
//! the way its command does and panics, with the reason, when the property fails; a panic in the
//! code under test is a find too (the language server's entry is `server::fuzz`). Not a stable
//! API: only the fuzz crate and its tests call it.

use std::sync::Arc;

use crate::helm::{self, Layers, Refusal, SetKind, Version};
use crate::yaml::Source;

fn version(helm4: bool) -> Version {
    if helm4 { Version::Four } else { Version::Three }
}

fn located(r: &Refusal, what: &str) {
    assert!(
        r.offset <= r.src.text.len(),
        "{what}: refusal offset {} past the end ({} bytes): {r}",
        r.offset,
        r.src.text.len()
    );
    // The message renders with a line and column (this is what the CLI prints).
    let _ = r.to_string();
}

fn source(name: &str, data: &[u8]) -> Arc<Source> {
    match crate::yaml::source::decode(data.to_vec()) {
        Ok(text) => Source::new(name, text),
        Err((lossy, offset, message)) => Source::new_invalid(name, lossy, offset, message),
    }
}

/// `cgpu-lint values -f DATA` (and `--chart-values DATA`) under Helm 3 or Helm 4 reading: a
/// located refusal or a values tree whose nodes all point inside their sources.
pub fn helm_values(data: &[u8], helm4: bool) {
    let v = version(helm4);
    let src = source("fuzz.yaml", data);
    for layers in [
        Layers {
            chart: None,
            files: vec![src.clone()],
            sets: Vec::new(),
        },
        Layers {
            chart: Some(src.clone()),
            files: Vec::new(),
            sets: Vec::new(),
        },
    ] {
        if let Some(releases) = helm::place::releases(&layers, v) {
            if let Err(r) = releases {
                located(&r, "releases");
            }
            continue;
        }
        match helm::place::effective(&layers, v) {
            Err(r) => located(&r, "values"),
            Ok(tree) => {
                inside(&tree);
                let _ = helm::json::to_string(&tree);
            }
        }
    }
}

fn inside(node: &crate::yaml::Node) {
    assert!(
        node.span.start <= node.span.end && node.span.end <= node.src.text.len(),
        "node span {:?} outside {} ({} bytes)",
        node.span,
        node.src.name,
        node.src.text.len()
    );
    match &node.value {
        crate::yaml::Value::Map(entries) => entries.iter().for_each(|e| inside(&e.value)),
        crate::yaml::Value::Seq(items) => items.iter().for_each(inside),
        _ => {}
    }
}

/// One `--set` (`kind` 0), `--set-string` (1) or `--set-json` (2) argument applied over the
/// chart defaults under Helm 3 or 4 reading: a located refusal or a values tree.
pub fn set_flag(kind: u8, arg: &str, helm4: bool) {
    let kind = match kind % 3 {
        0 => SetKind::Set,
        1 => SetKind::String,
        _ => SetKind::Json,
    };
    let layers = Layers {
        chart: None,
        files: Vec::new(),
        sets: vec![(kind, arg.to_string())],
    };
    match helm::place::effective(&layers, version(helm4)) {
        Err(r) => located(&r, kind.flag()),
        Ok(tree) => {
            inside(&tree);
            let _ = helm::json::to_string(&tree);
        }
    }
}

/// The post-render engine on an arbitrary stream, checking only and with `--fix
/// --unsafe-fixes --policy 1 --region`: an I/O error or an outcome whose findings and
/// replacements lie inside the stream. When nothing is replaced, checking copies the stream.
pub fn postrender(data: &[u8]) {
    let plain = crate::postrender::Options::default();
    let fixing = crate::postrender::Options {
        policy: Some(1),
        fix: true,
        unsafe_fixes: true,
        region: Some("cn-hangzhou".into()),
        ..Default::default()
    };
    for opts in [&plain, &fixing] {
        let mut out = Vec::new();
        let Ok(outcome) = crate::postrender::run(data, &mut out, opts) else {
            continue;
        };
        for (range, _) in &outcome.replacements {
            assert!(
                range.start <= range.end && range.end <= data.len() as u64,
                "replacement {range:?} outside the {}-byte stream",
                data.len()
            );
        }
        for d in &outcome.diagnostics {
            assert!(
                d.span.start <= d.span.end && d.span.end <= d.src.text.len(),
                "finding span outside its document: {d:?}"
            );
            let _ = (d.start(), d.end());
        }
        if !opts.fix && outcome.replacements.is_empty() {
            assert_eq!(out, data, "checking changed a stream it did not fix");
        }
        // The byte search splits and selects as the line reader does, and as parsing every
        // document would select.
        let mut by_lines = Vec::new();
        let oracle = crate::postrender::run_by_lines(data, &mut by_lines, opts).ok();
        assert_eq!(by_lines, out, "the line reader wrote another stream");
        assert_eq!(
            oracle.map(|o| format!("{o:?}")),
            Some(format!("{outcome:?}")),
            "the line reader found otherwise"
        );
        let mut all = Vec::new();
        let every = crate::postrender::Options {
            parse_every_document: true,
            ..opts.clone()
        };
        let oracle = crate::postrender::run(data, &mut all, &every).ok();
        assert_eq!(all, out, "parsing every document wrote another stream");
        assert_eq!(
            oracle.map(|o| format!("{o:?}")),
            Some(format!("{outcome:?}")),
            "parsing every document found otherwise"
        );
    }
}
