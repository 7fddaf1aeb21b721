//! cgpu-lint: checks, fixes and post-renders the cGPU settings of Alibaba Cloud ACK's
//! ack-ai-installer chart. Only the binary prints.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod add_ignore;
pub mod admission;
pub mod app;
pub(crate) mod baseline;
pub mod catalogue;
pub mod cgpu;
pub mod check;
pub mod checklist;
pub mod cli;
pub(crate) mod cluster;
pub(crate) mod config;
pub(crate) mod date;
pub mod diag;
pub mod edit;
pub mod fix;
pub(crate) mod generate;
pub(crate) mod helm;
pub mod lint;
pub(crate) mod manifest;
pub(crate) mod output;
pub(crate) mod paths;
pub(crate) mod postrender;
pub(crate) mod rollout;
pub mod rules;
pub mod server;
pub(crate) mod set;
pub(crate) mod spill;
pub(crate) mod status;
pub(crate) mod suppress;
pub(crate) mod whatif;
pub mod yaml;
