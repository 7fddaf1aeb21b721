//! The property is fuzz/set_flags.rs (shared with tests/it/fuzz_regressions.rs, which runs it on every
//! saved input).
#![no_main]

use libfuzzer_sys::fuzz_target;

include!("../set_flags.rs");

fuzz_target!(|data: &[u8]| set_flags_property(data));
