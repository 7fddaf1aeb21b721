//! `.cgpu-lint.toml`: project settings, found by walking up from the working directory (or named
//! with `--config FILE`). The command line wins over the file: `--select` replaces the file's
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
//!
//! [per-file-ignores]
//! "legacy/*.yaml" = ["tag-known-deadlock", "tag-too-old"]
//! ```
//!
//! A key the file does not know is an error that names it: a misspelt `ignore` would otherwise
//! silently turn a suppression off.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;

use crate::cli::CommonArgs;
use crate::diag::Diagnostic;
use crate::output::Format;
use crate::rules::catalogue;

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
    /// glob (relative to the config file's folder) → rules not reported in matching files
    #[serde(default)]
    pub per_file_ignores: BTreeMap<String, Vec<String>>,
}

/// A config file, read and checked.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub path: PathBuf,
    /// The folder per-file-ignores patterns are relative to.
    pub dir: PathBuf,
    pub config: Config,
    per_file: Vec<(GlobMatcher, bool, Vec<String>)>,
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
    let mut per_file = Vec::new();
    for (pattern, rules) in &config.per_file_ignores {
        check_rules(path, &format!("per-file-ignores.\"{pattern}\""), rules)?;
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ConfigError::Invalid {
                path: display.clone(),
                message: format!("per-file-ignores: bad pattern `{pattern}`: {e}"),
            })?;
        per_file.push((
            glob.compile_matcher(),
            !pattern.contains('/'),
            rules.clone(),
        ));
    }
    let dir = absolute(path)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    Ok(Loaded {
        path: path.to_path_buf(),
        dir,
        config,
        per_file,
    })
}

/// `path` made absolute against the working directory, `.` and `..` resolved lexically.
fn absolute(path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

impl Loaded {
    /// Whether `rule` may be reported in `file` (a path as given on the command line).
    pub fn allows(&self, file: &str, rule: &str) -> bool {
        if self.per_file.is_empty() || file == "-" {
            return true;
        }
        let abs = absolute(Path::new(file));
        let rel = abs.strip_prefix(&self.dir).unwrap_or(&abs);
        let name = abs.file_name().map(Path::new);
        !self.per_file.iter().any(|(glob, basename, rules)| {
            let hit = glob.is_match(rel) || (*basename && name.is_some_and(|n| glob.is_match(n)));
            hit && rules.iter().any(|r| r == rule || r == "all")
        })
    }

    /// Drop the findings that per-file-ignores hides.
    pub fn retain(&self, diags: &mut Vec<Diagnostic>) {
        diags.retain(|d| self.allows(d.file(), d.rule.name()));
    }

    /// The common flags with this file filled in where the command line left them unset.
    /// The file's `helm = 3|4`.
    pub fn helm(&self) -> Option<crate::cli::HelmArg> {
        match self.config.helm {
            Some(3) => Some(crate::cli::HelmArg::Three),
            Some(4) => Some(crate::cli::HelmArg::Four),
            _ => None,
        }
    }

    /// `--select/--ignore` with the file's: the command line's select wins, ignores add up (as
    /// [`Loaded::merge`] does for the common flags). For commands without the common flags.
    pub fn merge_filter(&self, filter: &crate::lint::Filter) -> crate::lint::Filter {
        let f = &self.config;
        let mut out = filter.clone();
        if out.select.is_empty() {
            out.select = f.select.clone().unwrap_or_default();
        }
        for r in f.ignore.iter().flatten() {
            if !out.ignore.contains(r) {
                out.ignore.push(r.clone());
            }
        }
        out
    }

    pub fn merge(&self, c: &CommonArgs) -> CommonArgs {
        let f = &self.config;
        let mut out = c.clone();
        let filter = self.merge_filter(&crate::lint::Filter {
            select: c.select.clone(),
            ignore: c.ignore.clone(),
        });
        (out.select, out.ignore) = (filter.select, filter.ignore);
        out.deny_warnings |= f.deny_warnings.unwrap_or(false);
        out.require_cgpu |= f.require_cgpu.unwrap_or(false);
        if out.region.is_none() {
            out.region = f.region.clone();
        }
        if out.helm.is_none() {
            out.helm = self.helm();
        }
        if !c.format_given
            && let Some(format) = f.format
        {
            out.format = format;
        }
        out
    }
}

/// The config that applies to a command: `--config FILE`, else none with `--no-config`, else the
/// nearest `.cgpu-lint.toml` upward from the working directory.
pub fn for_command(c: &CommonArgs) -> Result<Option<Loaded>, ConfigError> {
    find(c.config.as_deref(), c.no_config)
}

/// `--config FILE`, else none with `--no-config`, else the nearest `.cgpu-lint.toml` upward from
/// the working directory (for commands without the common flags: post-render, set).
pub fn find(config: Option<&Path>, no_config: bool) -> Result<Option<Loaded>, ConfigError> {
    if let Some(path) = config {
        return load(path).map(Some);
    }
    if no_config {
        return Ok(None);
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    discover(&cwd).map(|p| load(&p)).transpose()
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
