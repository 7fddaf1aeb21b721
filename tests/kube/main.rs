//! The tests that drive real kubectl against the fake API server (tests/fake-apiserver, Python):
//! `status`, `--cluster`, the rollout and its Job. Built with the `tools` feature only.

#[path = "../common/mod.rs"]
mod common;

mod cluster;
mod rollout_job;
mod runbook_kubectl;
mod status;
