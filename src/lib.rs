//! cgpu-lint: checks, fixes and post-renders the cGPU settings of Alibaba Cloud ACK's
//! ack-ai-installer chart. Only the binary prints.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod app;
pub mod cgpu;
pub mod check;
pub mod checklist;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod diag;
pub mod edit;
pub mod fix;
pub mod generate;
pub mod helm;
pub mod lint;
pub mod manifest;
pub mod output;
pub mod postrender;
pub mod rules;
pub mod server;
pub mod set;
pub mod spill;
pub mod suppress;
pub mod yaml;
