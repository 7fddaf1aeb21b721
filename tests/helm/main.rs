//! The tests that run real Helm 3 and 4 (target/tools, scripts/install-test-tools) as the oracle
//! of how values are read and rendered. Built with the `tools` feature only.

#[path = "../common/mod.rs"]
mod common;

mod fix_render;
mod gitops_oracle;
mod helm_e2e;
mod helm_oracle;
mod umbrella_oracle;
mod yaml_suite;
