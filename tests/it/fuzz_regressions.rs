//! Inputs the fuzzer (scripts/fuzz) found, kept as regression tests: check never panics, the
//! fixed output parses, and fixing twice equals fixing once.

use crate::common::*;

#[path = "../../fuzz/helm_values.rs"]
mod helm_values;
#[path = "../../fuzz/postrender_stream.rs"]
mod postrender_stream;
#[path = "../../fuzz/property.rs"]
mod property;
#[path = "../../fuzz/server_messages.rs"]
mod server_messages;
#[path = "../../fuzz/set_flags.rs"]
mod set_flags;

/// The files of `dir` (under the crate root) that are not folders; a missing folder is empty.
fn inputs(dir: &str) -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return Vec::new();
    };
    let mut v: Vec<_> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

/// Runs `property` on every input saved for `target` (tests/fuzz-regressions/TARGET/, where a
/// crash the fuzzer finds is dropped) and on its seed corpus (fuzz/corpus/TARGET/).
fn holds(target: &str, property: fn(&[u8])) -> usize {
    let mut n = 0;
    for dir in [
        format!("tests/fuzz-regressions/{target}"),
        format!("fuzz/corpus/{target}"),
    ] {
        for path in inputs(&dir) {
            let data = std::fs::read(&path).unwrap();
            let r = std::panic::catch_unwind(|| property(&data));
            assert!(
                r.is_ok(),
                "{}: the {target} fuzz property fails",
                path.display()
            );
            n += 1;
        }
    }
    n
}

#[test]
fn every_saved_helm_values_input_holds_its_fuzz_property() {
    let n = holds("helm_values", helm_values::helm_values_property);
    assert!(n >= 5, "{n} inputs");
}

#[test]
fn every_saved_set_flags_input_holds_its_fuzz_property() {
    let n = holds("set_flags", set_flags::set_flags_property);
    assert!(n >= 5, "{n} inputs");
}

#[test]
fn every_saved_postrender_stream_input_holds_its_fuzz_property() {
    let n = holds(
        "postrender_stream",
        postrender_stream::postrender_stream_property,
    );
    assert!(n >= 5, "{n} inputs");
}

#[test]
fn every_saved_server_messages_input_holds_its_fuzz_property() {
    let n = holds("server_messages", server_messages::server_messages_property);
    assert!(n >= 3, "{n} inputs");
}

/// The fuzz target's own property (fuzz/property.rs), in process, on every saved input and on
/// the fuzzer's seed corpus: this also keeps the fuzz target compiling with the library's API.
#[test]
fn every_fuzz_regression_and_corpus_input_holds_the_fuzz_property() {
    let mut n = 0;
    let dirs = ["tests/fuzz-regressions", "fuzz/corpus/parse_check_fix"];
    for path in dirs.iter().flat_map(|d| inputs(d)) {
        let data = std::fs::read(&path).unwrap();
        let r = std::panic::catch_unwind(|| property::check_fix_property(&data));
        assert!(r.is_ok(), "{}: the fuzz property fails", path.display());
        n += 1;
    }
    assert!(n > 27, "{n} inputs");
}

#[test]
fn every_fuzz_regression_input_fixes_idempotently() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            continue; // another target's saved inputs
        }
        n += 1;
        let once = bin().args(["fix", "--stdout"]).arg(&path).output().unwrap();
        let err = String::from_utf8_lossy(&once.stderr);
        assert!(!err.contains("panicked"), "{}: {err}", path.display());
        let fixed = once.stdout;
        let tmp = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(tmp.path(), &fixed).unwrap();
        let twice = bin()
            .args(["fix", "--stdout"])
            .arg(tmp.path())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&twice.stdout),
            String::from_utf8_lossy(&fixed),
            "{}: fix is not idempotent",
            path.display()
        );
        let r = check_json(&[tmp.path().to_str().unwrap()]);
        assert!(
            r.find("yaml-syntax").is_empty(),
            "{}: fixed output does not parse",
            path.display()
        );
    }
    assert!(n > 0);
}

#[test]
fn implicit_null_label_value_is_not_spliced_into_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v.yaml");
    std::fs::write(&p, "cgpu:\n  nodeSelector:\n    gpu-pool:\n").unwrap();
    let out = bin()
        .args(["fix", "--stdout", p.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "cgpu:\n  nodeSelector:\n    gpu-pool:\n"
    );
}
