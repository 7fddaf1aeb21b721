//! `.cgpu-lint.toml`: project settings, found by walking up from the working directory (or named
//! with `--config FILE`), and [`resolve`]: the one place where a front end's [`Overrides`] (the
//! command line's flags, the editor's initializationOptions) meet the file, giving the
//! pipeline's [`Settings`] (as ruff_workspace's `Configuration` takes its CLI or editor
//! transformer, and ripgrep's low-level args become its high-level ones in one conversion).
//! The command line wins over the file: `--select` replaces the file's
//! `select`, `--ignore` adds to its `ignore`, `--format` and `--region` replace, and
//! `--deny-warnings`/`--require-cgpu` can only switch on.
//!
//! ```toml
//! select = ["all"]
//! ignore = ["image-name"]
//! deny-warnings = true
//! region = "cn-hangzhou"
//! format = "human"
//! helm = 4          # read values as Helm 4 does (default: as both Helm 3 and Helm 4 do)
//! include-markdown = true  # directory walks read *.md too (their ```yaml blocks)
//!
//! [per-file-ignores]
//! "legacy/*.yaml" = ["tag-known-deadlock", "tag-too-old"]
//! ```
//!
//! A key the file does not know is an error that names it: a misspelt `ignore` would otherwise
//! silently turn a suppression off.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::GlobBuilder;
use serde::Deserialize;

use crate::helm;
use crate::lint::Filter;
use crate::lint::{PerFileIgnores, Settings};
use crate::output::Format;
use crate::rules::{RuleOptions, catalogue};

pub const FILE_NAME: &str = ".cgpu-lint.toml";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    /// A rule named by a flag or an editor option that the catalogue does not know.
    #[error("unknown rule `{0}` (see `cgpu-lint rules`)")]
    UnknownRule(String),
}

/// The file as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Config {
    pub select: Option<Vec<String>>,
    pub ignore: Option<Vec<String>>,
    pub deny_warnings: Option<bool>,
    pub require_cgpu: Option<bool>,
    pub region: Option<String>,
    pub format: Option<Format>,
    /// Read values as this Helm reads them: 3 or 4 (default: both)
    pub helm: Option<u8>,
    /// Directory walks read Markdown files (*.md, *.markdown) too
    pub include_markdown: Option<bool>,
    /// glob (relative to the config file's folder) → rules not reported in matching files
    #[serde(default)]
    pub per_file_ignores: BTreeMap<String, Vec<String>>,
}

/// A config file, read and checked.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    per_file: PerFileIgnores,
}

/// The nearest `.cgpu-lint.toml` in `start` or one of its parents.
pub fn discover(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|d| d.join(FILE_NAME))
        .find(|p| p.is_file())
}

fn check_rules(path: &Path, key: &str, rules: &[String]) -> Result<(), ConfigError> {
    for r in rules {
        if r != "all" && catalogue::find(r).is_none() {
            return Err(ConfigError::Invalid {
                path: path.display().to_string(),
                message: format!("`{key}`: unknown rule `{r}` (see `cgpu-lint rules`)"),
            });
        }
    }
    Ok(())
}

/// Read and check the config file at `path`.
pub fn load(path: &Path) -> Result<Loaded, ConfigError> {
    let display = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: display.clone(),
        source,
    })?;
    let config: Config = toml::from_str(&text).map_err(|e| ConfigError::Invalid {
        path: display.clone(),
        message: e.to_string().trim_end().to_string(),
    })?;
    if let Some(h) = config.helm
        && h != 3
        && h != 4
    {
        return Err(ConfigError::Invalid {
            path: display.clone(),
            message: format!("`helm`: {h} is not a Helm version cgpu-lint knows; write 3 or 4"),
        });
    }
    check_rules(path, "select", config.select.as_deref().unwrap_or_default())?;
    check_rules(path, "ignore", config.ignore.as_deref().unwrap_or_default())?;
    let mut per_file = PerFileIgnores::new(path);
    for (pattern, rules) in &config.per_file_ignores {
        check_rules(path, &format!("per-file-ignores.\"{pattern}\""), rules)?;
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ConfigError::Invalid {
                path: display.clone(),
                message: format!("per-file-ignores: bad pattern `{pattern}`: {e}"),
            })?;
        per_file.push(
            glob.compile_matcher(),
            !pattern.contains('/'),
            rules.clone(),
        );
    }
    Ok(Loaded { config, per_file })
}

impl Loaded {
    /// The file's `helm = 3|4`.
    pub fn helm(&self) -> Option<helm::Version> {
        match self.config.helm {
            Some(3) => Some(helm::Version::Three),
            Some(4) => Some(helm::Version::Four),
            _ => None,
        }
    }
}

/// What a front end sets over `.cgpu-lint.toml`: the command line's flags (app/) or the editor's
/// initializationOptions (server/), as plain data. Empty, `false` and `None` mean "not given".
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--config FILE` (as given: relative to the working directory).
    pub config: Option<PathBuf>,
    /// `--no-config`.
    pub no_config: bool,
    /// `--select`: replaces the file's `select`.
    pub select: Vec<String>,
    /// `--ignore`: adds to the file's `ignore`.
    pub ignore: Vec<String>,
    /// `--region`: replaces the file's.
    pub region: Option<String>,
    /// `--require-cgpu`: can only switch it on.
    pub require_cgpu: bool,
    /// `--deny-warnings`: can only switch it on.
    pub deny_warnings: bool,
    /// `--helm 3|4`: replaces the file's.
    pub helm: Option<helm::Version>,
    /// `--format`, when it was on the command line: replaces the file's.
    pub format: Option<Format>,
    /// `--include-markdown`: can only switch it on.
    pub include_markdown: bool,
}

/// Overrides resolved with `.cgpu-lint.toml`: the pipeline's settings, and what the front end
/// reads for its report.
#[derive(Debug, Clone, Default)]
pub struct Resolved {
    pub settings: Settings,
    pub deny_warnings: bool,
    /// The format given or the file's (`None`: neither; the front end's default applies).
    pub format: Option<Format>,
}

impl Overrides {
    /// The config file that applies: `--config FILE`, else none with `--no-config`, else the
    /// nearest `.cgpu-lint.toml` in `base` or above it.
    pub fn config_file(&self, base: &Path) -> Result<Option<Loaded>, ConfigError> {
        if let Some(path) = &self.config {
            return load(path).map(Some);
        }
        if self.no_config {
            return Ok(None);
        }
        discover(base).map(|p| load(&p)).transpose()
    }
}

/// The overrides over the config file that applies (found from `base`, the working directory
/// of a command): the one way flags or editor options meet `.cgpu-lint.toml`.
pub fn resolve(o: &Overrides, base: &Path) -> Result<Resolved, ConfigError> {
    let file = o.config_file(base)?;
    resolve_with(o, file.as_ref())
}

/// The overrides over `file` (already read): the command line or the editor wins, `--select`
/// replaces the file's `select`, `--ignore` adds to its `ignore`, booleans only switch on.
pub fn resolve_with(o: &Overrides, file: Option<&Loaded>) -> Result<Resolved, ConfigError> {
    for r in o.select.iter().chain(&o.ignore) {
        if r != "all" && catalogue::find(r).is_none() {
            return Err(ConfigError::UnknownRule(r.clone()));
        }
    }
    let f = file.map(|l| &l.config);
    let mut filter = Filter {
        select: o.select.clone(),
        ignore: o.ignore.clone(),
    };
    if filter.select.is_empty() {
        filter.select = f.and_then(|f| f.select.clone()).unwrap_or_default();
    }
    for r in f.and_then(|f| f.ignore.as_ref()).into_iter().flatten() {
        if !filter.ignore.contains(r) {
            filter.ignore.push(r.clone());
        }
    }
    let opts = RuleOptions {
        region: o.region.clone().or_else(|| f?.region.clone()),
        require_cgpu: o.require_cgpu || f.and_then(|f| f.require_cgpu).unwrap_or(false),
        helm: o.helm.or_else(|| file?.helm()),
        ..RuleOptions::default()
    };
    Ok(Resolved {
        settings: Settings {
            opts,
            filter,
            per_file_ignores: file
                .filter(|l| !l.per_file.is_empty())
                .map(|l| Arc::new(l.per_file.clone())),
            include_markdown: o.include_markdown
                || f.and_then(|f| f.include_markdown).unwrap_or(false),
        },
        deny_warnings: o.deny_warnings || f.and_then(|f| f.deny_warnings).unwrap_or(false),
        format: o.format.or_else(|| f?.format),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_named() {
        let e = toml::from_str::<Config>("ignroe = [\"x\"]\n").unwrap_err();
        assert!(e.to_string().contains("ignroe"), "{e}");
        let e =
            toml::from_str::<Config>("[per-file-ignores]\n\"a\" = [\"x\"]\n[extra]\n").unwrap_err();
        assert!(e.to_string().contains("extra"), "{e}");
    }

    #[test]
    fn kebab_case_keys_and_formats_parse() {
        let c: Config = toml::from_str(
            "deny-warnings = true\nformat = \"sarif\"\n[per-file-ignores]\n\"legacy/*.yaml\" = [\"tag-too-old\"]\n",
        )
        .unwrap();
        assert_eq!(c.deny_warnings, Some(true));
        assert_eq!(c.format, Some(Format::Sarif));
        assert_eq!(c.per_file_ignores["legacy/*.yaml"], vec!["tag-too-old"]);
    }
}
