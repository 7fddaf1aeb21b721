//! The command line's settings flags as [`Overrides`], resolved with `.cgpu-lint.toml` by
//! [`crate::config::resolve`] (the one place they meet).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::AppError;
use super::report::{Loaded, Report};
use crate::baseline::{Baseline, FILE_NAME};
use crate::cli::{ChecklistArgs, CommonArgs, ConfigArgs, HelmArg, PostRenderArgs};
use crate::config::{self, Overrides, Resolved};
use crate::lint::Settings;

/// The common flags as overrides of the config file.
pub(crate) fn overrides(c: &CommonArgs) -> Overrides {
    Overrides {
        config: c.config.clone(),
        no_config: c.no_config,
        select: c.select.clone(),
        ignore: c.ignore.clone(),
        region: c.region.clone(),
        require_cgpu: c.require_cgpu,
        deny_warnings: c.deny_warnings,
        helm: c.helm.map(crate::cli::HelmArg::version),
        format: c.format_given.then_some(c.format),
        extend_safe: c.extend_safe_fixes.clone(),
        extend_unsafe: c.extend_unsafe_fixes.clone(),
        from_editor: false,
        include_markdown: c.include_markdown,
    }
}

/// Overrides resolved with the config file found from the working directory.
pub(crate) fn resolve(o: &Overrides) -> Result<Resolved, AppError> {
    let cwd = std::env::current_dir().unwrap_or_default();
    Ok(config::resolve(o, &cwd)?)
}

/// A command with the common flags: its pipeline settings and how it reports.
pub(crate) fn resolve_common(c: &CommonArgs) -> Result<(Report, Settings), AppError> {
    let r = resolve(&overrides(c))?;
    let report = Report {
        format: r.format.unwrap_or(c.format),
        color: c.color,
        quiet: c.quiet,
        deny_warnings: r.deny_warnings,
        output: c.output.clone(),
        statistics: c.statistics,
        openreports: c.openreports,
        original_severities: c.original_severities,
        baseline: load(c)?,
    };
    super::report::check_statistics(&report)?;
    Ok((report, r.settings))
}

/// The flags of a command without the common flags (set, values): `--config`/`--no-config`
/// and `--helm`.
pub(crate) fn config_only(c: &ConfigArgs, helm: Option<HelmArg>) -> Overrides {
    Overrides {
        config: c.config.clone(),
        no_config: c.no_config,
        helm: helm.map(HelmArg::version),
        ..Overrides::default()
    }
}

/// `post-render`'s flags: the config file, the findings' select/ignore and the region.
pub(crate) fn postrender(a: &PostRenderArgs) -> Overrides {
    Overrides {
        select: a.select.clone(),
        ignore: a.ignore.clone(),
        region: a.region.clone(),
        ..config_only(&a.config, None)
    }
}

/// `checklist`'s flags: the config file, the findings' select/ignore and `--helm`.
pub(crate) fn checklist(a: &ChecklistArgs) -> Overrides {
    Overrides {
        select: a.select.clone(),
        ignore: a.ignore.clone(),
        ..config_only(&a.config, a.helm)
    }
}

/// `--helm` when given, else the `helm` of the config file `--config`/`--no-config` choose (read
/// only without `--helm`): for `values`.
pub(crate) fn helm_or(
    c: &ConfigArgs,
    given: Option<HelmArg>,
) -> Result<Option<crate::helm::Version>, AppError> {
    if let Some(h) = given {
        return Ok(Some(h.version()));
    }
    Ok(resolve(&config_only(c, None))?.settings.opts.helm)
}

/// The folder of the baseline file at `path` (relative to the working directory).
pub(super) fn dir_of(path: &Path) -> PathBuf {
    let abs = crate::paths::cwd().join(path);
    abs.parent()
        .map_or_else(crate::paths::cwd, Path::to_path_buf)
}

/// The baseline in force: `--baseline FILE` (which must exist), else `.cgpu-lint-baseline.json`
/// in the working directory when there is one; none with `--no-baseline`.
pub(super) fn load(c: &CommonArgs) -> Result<Option<Arc<Loaded>>, AppError> {
    if c.no_baseline {
        return Ok(None);
    }
    let (path, given) = match &c.baseline {
        Some(p) => (p.clone(), true),
        None => (PathBuf::from(FILE_NAME), false),
    };
    let text = match crate::spill::read_text_at_most(
        &path,
        crate::check::DEFAULT_MAX_FILE_SIZE,
        "--max-file-size's default",
    ) {
        Ok(t) => t,
        Err(e) if !given && e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(AppError::Usage(format!(
                "--baseline {}: {e}",
                path.display()
            )));
        }
    };
    let baseline = Baseline::parse(&path.to_string_lossy(), text).map_err(AppError::Usage)?;
    Ok(Some(Arc::new(Loaded {
        baseline,
        dir: dir_of(&path),
    })))
}
