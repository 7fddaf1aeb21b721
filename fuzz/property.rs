// The fuzz target's property, shared: fuzz/fuzz_targets/parse_check_fix.rs runs it on the
// fuzzer's bytes, and tests/it/fuzz_regressions.rs runs it on every saved input, so the target
// compiles (and holds) with every `cargo test`.
//
// parse → check → fix on arbitrary bytes: no panic; every finding points inside the file; when
// the input parses, the fixed text parses too and fixing it again changes nothing (fix is
// idempotent). Safe fixes and `--unsafe-fixes` both.

use cgpu_lint::catalogue::RuleId;
use cgpu_lint::diag::Diagnostic;
use cgpu_lint::lint::fix::lint_fix;
use cgpu_lint::lint::{Settings, lint_file};
use cgpu_lint::yaml::{Source, source::decode};

fn parses(diags: &[Diagnostic]) -> bool {
    !diags.iter().any(|d| d.rule == RuleId::YamlSyntax)
}

/// Panics (with the reason) when the property fails on `data`.
pub fn check_fix_property(data: &[u8]) {
    let src = match decode(data.to_vec()) {
        Ok(text) => Source::new("fuzz.yaml", text),
        Err((lossy, offset, message)) => Source::new_invalid("fuzz.yaml", lossy, offset, message),
    };
    let settings = Settings::default();
    let diags = lint_file(&src, &settings);
    for d in &diags {
        assert!(d.span.start <= d.span.end, "inverted span: {d:?}");
        assert!(d.span.end <= d.src.text.len(), "span past the end: {d:?}");
        let _ = (d.start(), d.end());
    }
    if src.invalid.is_some() || !parses(&diags) {
        return;
    }
    for unsafe_fixes in [false, true] {
        let fixed = lint_fix(&src, &settings, unsafe_fixes);
        assert!(
            fixed.refused.is_none(),
            "a fix broke the YAML: {:?}",
            fixed.refused
        );
        let again_src = Source::new("fuzz.yaml", fixed.text.clone());
        assert!(
            parses(&lint_file(&again_src, &settings)),
            "fixed output does not parse:\n{}",
            fixed.text
        );
        let again = lint_fix(&again_src, &settings, unsafe_fixes);
        assert_eq!(again.text, fixed.text, "fix is not idempotent");
    }
}
