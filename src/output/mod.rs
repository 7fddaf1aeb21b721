//! One printer per output format, all reading the same [`crate::diag::Diagnostic`]s.

pub mod human;
pub mod json;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Human,
    Json,
}
