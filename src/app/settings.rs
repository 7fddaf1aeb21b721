//! The settings of a command from its flags and `.cgpu-lint.toml`.

use super::AppError;
use crate::cli::CommonArgs;
use crate::lint::Filter;
use crate::rules::{RuleOptions, catalogue};

fn validate_rule_names(names: &[String]) -> Result<(), AppError> {
    for n in names {
        if n != "all" && catalogue::find(n).is_none() {
            return Err(AppError::Usage(format!(
                "unknown rule `{n}` (see `cgpu-lint rules`)"
            )));
        }
    }
    Ok(())
}

pub(crate) fn rule_options(c: &CommonArgs) -> RuleOptions {
    RuleOptions {
        region: c.region.clone(),
        require_cgpu: c.require_cgpu,
        helm: c.helm.map(crate::cli::HelmArg::version),
        ..RuleOptions::default()
    }
}

pub(crate) fn filter(c: &CommonArgs) -> Result<Filter, AppError> {
    filter_with(&c.select, &c.ignore, None)
}

/// `--select/--ignore` checked against the catalogue, with the config file's (for the commands
/// without the common flags, whose config is not merged into them beforehand).
pub(crate) fn filter_with(
    select: &[String],
    ignore: &[String],
    config: Option<&crate::config::Loaded>,
) -> Result<Filter, AppError> {
    validate_rule_names(select)?;
    validate_rule_names(ignore)?;
    let filter = Filter {
        select: select.to_vec(),
        ignore: ignore.to_vec(),
    };
    Ok(match config {
        Some(l) => l.merge_filter(&filter),
        None => filter,
    })
}

/// The common flags with `.cgpu-lint.toml` (or `--config FILE`) filled in, and the config that
/// was read (its per-file-ignores apply to the findings: [`crate::config::Loaded::retain`]).
pub(crate) fn with_config(
    c: &CommonArgs,
) -> Result<(CommonArgs, Option<crate::config::Loaded>), AppError> {
    let loaded = crate::config::for_command(c)?;
    let merged = loaded.as_ref().map_or_else(|| c.clone(), |l| l.merge(c));
    Ok((merged, loaded))
}

/// The pipeline settings of a command: rule options, filters, and the config for its
/// per-file-ignores.
pub(crate) fn settings(
    c: &CommonArgs,
    config: Option<crate::config::Loaded>,
) -> Result<crate::lint::Settings, AppError> {
    Ok(crate::lint::Settings {
        opts: rule_options(c),
        filter: filter(c)?,
        config: config.map(std::sync::Arc::new),
    })
}
