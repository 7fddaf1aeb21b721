//! parse → check → fix on arbitrary bytes; the property is fuzz/property.rs (shared with
//! tests/it/fuzz_regressions.rs, which runs it on every saved input).
#![no_main]

use libfuzzer_sys::fuzz_target;

include!("../property.rs");

fuzz_target!(|data: &[u8]| check_fix_property(data));
