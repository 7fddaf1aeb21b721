//! The property is fuzz/helm_values.rs (shared with tests/it/fuzz_regressions.rs, which runs it on every
//! saved input).
#![no_main]

use libfuzzer_sys::fuzz_target;

include!("../helm_values.rs");

fuzz_target!(|data: &[u8]| helm_values_property(data));
