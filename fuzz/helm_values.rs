// The helm_values target's property, shared with tests/it/fuzz_regressions.rs (which runs it on
// tests/fuzz-regressions/helm_values/ and fuzz/corpus/helm_values/): `values` on arbitrary bytes,
// as a `-f` file and as the chart's values.yaml, under Helm 3 and Helm 4 reading: no panic; a
// refusal located inside the input, or a values tree whose nodes point inside their sources.

/// Panics (with the reason) when the property fails on `data`.
pub fn helm_values_property(data: &[u8]) {
    for helm4 in [false, true] {
        cgpu_lint::app::fuzz::helm_values(data, helm4);
    }
}
