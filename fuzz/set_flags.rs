// The set_flags target's property, shared with tests/it/fuzz_regressions.rs (which runs it on
// tests/fuzz-regressions/set_flags/ and fuzz/corpus/set_flags/): the bytes (lossy UTF-8, as a
// shell argument would reach us) as a `--set`, `--set-string` and `--set-json` argument, under
// Helm 3 and Helm 4 reading: no panic; a located refusal or a values tree.

/// Panics (with the reason) when the property fails on `data`.
pub fn set_flags_property(data: &[u8]) {
    let arg = String::from_utf8_lossy(data);
    for kind in 0..3 {
        for helm4 in [false, true] {
            cgpu_lint::app::fuzz::set_flag(kind, &arg, helm4);
        }
    }
}
