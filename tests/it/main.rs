//! The hermetic integration tests: nothing but Rust and this repository (a plain `cargo test`).
//! The few that drive a validator installed by scripts/install-test-tools are behind the
//! `tools` feature, which scripts/test turns on; there they fail, never skip, without their tool.

#[path = "../common/mod.rs"]
mod common;

mod add_ignore;
mod admission;
mod baseline;
mod checklist;
mod checklist_gate;
mod ci;
mod cli;
mod cmd;
mod compat;
mod consistency;
mod fix;
mod fix_props;
mod formats;
mod fuzz_regressions;
mod gitops;
mod gitops_forms;
mod helm_reading;
mod hostile;
mod installer_fixtures;
mod layers;
mod markdown;
mod pipeline;
mod plain_messages;
// Every case validates against the policy-report CRDs with check-jsonschema (target/venv).
#[cfg(feature = "tools")]
mod policyreport;
mod postrender;
mod reports;
mod safe_output;
mod server;
mod snapshots;
mod tiers;
mod values_fixtures;
mod whatif;
