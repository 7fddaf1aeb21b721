//! Moved: cGPU tags and version thresholds live in [`crate::cgpu`], the one home of cGPU facts.

pub use crate::cgpu::{
    LAST_DEADLOCK_VERSION, MIN_POLICY_VERSION, RECOMMENDED_VERSION, Tag, TagError, parse_tag,
};
