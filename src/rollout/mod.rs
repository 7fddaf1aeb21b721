//! `cgpu-lint rollout`: the node restarts a policy change or a cGPU upgrade needs, as a
//! reconciler. [`observe`] reads what the cluster shows now (one LIST per kind, each node's
//! module through its installer pod); [`decide`] is the pure core that gives every
//! GPU-sharing node its verdict and the next safe actions within the budget; [`lease`] is the
//! cluster lock and the fence before each change; [`run`] is the loop that observes, decides,
//! asks, acts and records. `status` reads and judges through the same observation and core, and
//! `checklist --format shell` prints a launcher of this command: one implementation acts.

mod act;
pub mod decide;
mod gates;
pub mod job;
pub mod lease;
pub mod model;
pub mod observe;
pub mod run;

#[cfg(test)]
mod tests;
