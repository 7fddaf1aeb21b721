//! The tests that run what a user installs around the binary: pre-commit building the hook, the
//! README's and docs' commands as written, the packages. Built with the `tools` feature only.

#[path = "../common/mod.rs"]
mod common;

mod packaging;
mod precommit;
mod readme;
