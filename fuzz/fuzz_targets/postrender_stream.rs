//! The property is fuzz/postrender_stream.rs (shared with tests/it/fuzz_regressions.rs, which runs it on every
//! saved input).
#![no_main]

use libfuzzer_sys::fuzz_target;

include!("../postrender_stream.rs");

fuzz_target!(|data: &[u8]| postrender_stream_property(data));
