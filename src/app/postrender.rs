//! `cgpu-lint post-render`: the settings; the stream handling is the post-render engine's.

use super::settings::filter_with;
use super::{AppError, Exit, Streams};
use crate::rules::RuleOptions;

/// `post-render`: the settings from the command line and `.cgpu-lint.toml`; the stream handling
/// is [`crate::postrender::serve`].
pub(crate) fn run(
    s: &mut Streams,
    args: &crate::cli::PostRenderArgs,
    input: impl std::io::BufRead,
    seekable: Option<std::fs::File>,
) -> Result<Exit, AppError> {
    let config = args.config.load()?;
    let filter = filter_with(&args.select, &args.ignore, config.as_ref())?;
    let mut region = args.region.clone();
    if let Some(l) = &config {
        region = region.or_else(|| l.config.region.clone());
    }
    let opts = crate::postrender::Options {
        policy: args.policy,
        fix: args.fix,
        unsafe_fixes: args.unsafe_fixes,
        region: args.region.clone(),
        settings: crate::lint::Settings {
            opts: RuleOptions {
                region,
                require_cgpu: false,
                ..RuleOptions::default()
            },
            filter,
            config: config.map(std::sync::Arc::new),
        },
    };
    crate::postrender::serve(s, args, &opts, input, seekable)
}
