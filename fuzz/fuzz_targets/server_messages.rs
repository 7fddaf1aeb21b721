//! The property is fuzz/server_messages.rs (shared with tests/it/fuzz_regressions.rs, which runs it on every
//! saved input).
#![no_main]

use libfuzzer_sys::fuzz_target;

include!("../server_messages.rs");

fuzz_target!(|data: &[u8]| server_messages_property(data));
