//! parse → check → fix on arbitrary bytes. Properties: no panic; every finding points inside
//! the file; when the input parses, the fixed text parses too and fixing it again changes
//! nothing (fix is idempotent).
#![no_main]

use libfuzzer_sys::fuzz_target;

use cgpu_lint::check::{Filter, check_source};
use cgpu_lint::fix::fix_source;
use cgpu_lint::rules::RuleOptions;
use cgpu_lint::yaml::{Source, source::decode};

fuzz_target!(|data: &[u8]| {
    let src = match decode(data.to_vec()) {
        Ok(text) => Source::new("fuzz.yaml", text),
        Err((lossy, offset, message)) => Source::new_invalid("fuzz.yaml", lossy, offset, message),
    };
    let opts = RuleOptions::default();
    let diags = check_source(&src, &opts);
    for d in &diags {
        assert!(d.span.start <= d.span.end || d.span.end == 0, "inverted span");
        assert!(d.span.start <= src.text.len() && d.span.end <= src.text.len());
        let _ = (d.start(), d.end());
    }
    if src.invalid.is_some() || diags.iter().any(|d| d.rule == "yaml-syntax") {
        return;
    }
    let filter = Filter::default();
    let fixed = fix_source(&src, &opts, &filter);
    assert!(fixed.refused.is_none(), "a fix broke the YAML: {:?}", fixed.refused);
    let again_src = Source::new("fuzz.yaml", fixed.text.clone());
    assert!(
        !check_source(&again_src, &opts).iter().any(|d| d.rule == "yaml-syntax"),
        "fixed output does not parse"
    );
    let again = fix_source(&again_src, &opts, &filter);
    assert_eq!(again.text, fixed.text, "fix is not idempotent");
});
