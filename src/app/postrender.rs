//! `cgpu-lint post-render`: the settings; the stream handling is the post-render engine's.

use super::{AppError, Exit, Streams};
use crate::config::Overrides;

/// `post-render`: the settings from the command line and `.cgpu-lint.toml`; the stream handling
/// is [`crate::postrender::serve`].
pub(crate) fn run(
    s: &mut Streams,
    args: &crate::cli::PostRenderArgs,
    input: impl std::io::BufRead,
    seekable: Option<std::fs::File>,
) -> Result<Exit, AppError> {
    let mut settings = super::settings::resolve(&Overrides {
        config: args.config.config.clone(),
        no_config: args.config.no_config,
        select: args.select.clone(),
        ignore: args.ignore.clone(),
        region: args.region.clone(),
        ..Overrides::default()
    })?
    .settings;
    // A rendered manifest is read as Kubernetes objects: the file's `require-cgpu` and `helm`
    // (about values files) do not apply.
    settings.opts.require_cgpu = false;
    settings.opts.helm = None;
    let opts = crate::postrender::Options {
        policy: args.policy,
        fix: args.fix,
        unsafe_fixes: args.unsafe_fixes,
        region: args.region.clone(),
        settings,
    };
    crate::postrender::serve(s, args, &opts, input, seekable)
}
