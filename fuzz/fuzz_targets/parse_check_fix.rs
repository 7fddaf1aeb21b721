//! parse → check (→ fix): no panic on any input.
#![no_main]

use libfuzzer_sys::fuzz_target;

use cgpu_lint::check::check_source;
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
        // Every finding points inside the file.
        assert!(d.span.start <= src.text.len() && d.span.end <= src.text.len());
        let _ = (d.start(), d.end());
    }
});
