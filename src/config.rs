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
//!
//! [fix]
//! extend-safe = ["string-boolean"]    # `fix` applies this rule's (unsafe) fix too
//! extend-unsafe = ["duplicate-key"]   # only `fix --unsafe-fixes` applies this rule's fix
//! ```
//!
//! A key the file does not know is an error that names it: a misspelt `ignore` would otherwise
//! silently turn a suppression off.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::GlobBuilder;
use serde::Deserialize;

use crate::catalogue;
use crate::helm;
use crate::lint::Filter;
use crate::lint::{PerFileIgnores, Settings};
use crate::output::Format;
use crate::rules::RuleOptions;

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
    /// `[fix]`: rules whose fixes change class.
    #[serde(default)]
    pub fix: FixConfig,
}

/// The `[fix]` table (ruff's `extend-safe-fixes`/`extend-unsafe-fixes`).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FixConfig {
    /// Rules whose fixes `fix` applies without `--unsafe-fixes`.
    pub extend_safe: Option<Vec<String>>,
    /// Rules whose fixes only `fix --unsafe-fixes` applies.
    pub extend_unsafe: Option<Vec<String>>,
}

/// A config file, read and checked.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    per_file: PerFileIgnores,
    /// Where it was read from, as named (`--config FILE`) or found.
    pub path: PathBuf,
    /// Its text, for the line of a key (`check --show-settings`).
    text: String,
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

/// The rules of a `[fix]` list: each known, each with a fix to change the class of. `Err`
/// names the first that is not.
fn fix_rules(rules: &[String]) -> Result<Vec<catalogue::RuleId>, String> {
    rules
        .iter()
        .map(|r| match catalogue::find(r) {
            None => Err(format!("unknown rule `{r}` (see `cgpu-lint rules`)")),
            Some(info) if info.fix.is_none() => Err(format!(
                "rule `{r}` has no fix (see the fix column of `cgpu-lint rules`)"
            )),
            Some(info) => Ok(info.id),
        })
        .collect()
}

/// Read and check the config file at `path`.
pub fn load(path: &Path) -> Result<Loaded, ConfigError> {
    let display = path.display().to_string();
    let text = crate::spill::read_text_at_most(
        path,
        crate::check::DEFAULT_MAX_FILE_SIZE,
        "--max-file-size's default",
    )
    .map_err(|source| ConfigError::Read {
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
    for (key, rules) in [
        ("fix.extend-safe", &config.fix.extend_safe),
        ("fix.extend-unsafe", &config.fix.extend_unsafe),
    ] {
        fix_rules(rules.as_deref().unwrap_or_default()).map_err(|e| ConfigError::Invalid {
            path: display.clone(),
            message: format!("`{key}`: {e}"),
        })?;
    }
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
            pattern,
            glob.compile_matcher(),
            !pattern.contains('/'),
            rules.clone(),
        );
    }
    Ok(Loaded {
        config,
        per_file,
        path: path.to_path_buf(),
        text,
    })
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
    /// `--extend-safe-fixes`: adds to the file's `[fix] extend-safe`.
    pub extend_safe: Vec<String>,
    /// `--extend-unsafe-fixes`: adds to the file's `[fix] extend-unsafe`.
    pub extend_unsafe: Vec<String>,
    /// The overrides are the editor's initializationOptions, not flags (how an origin is named).
    pub from_editor: bool,
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
    /// The config file that applied and how it was found (`None`: none did).
    pub config_file: Option<(PathBuf, String)>,
    /// That file as read (its `[per-file-ignores]` for one file: `check --show-settings`).
    pub file: Option<Loaded>,
    /// Where each setting came from, by its config key (`select`, `fix.extend-safe`, …): flags
    /// (`--select`), editor options (`initializationOptions.select`) and the file's lines
    /// (`PATH:LINE`); a key not here (or with no origin) is the default.
    pub origins: BTreeMap<&'static str, Vec<String>>,
}

/// The 1-based line of `key` in the TOML `text`, inside `[table]` (`None`: at the top).
fn key_line(text: &str, table: Option<&str>, key: &str) -> Option<usize> {
    let mut current: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(h) = t.strip_prefix('[') {
            current = Some(
                h.trim_end_matches(|c: char| c != ']')
                    .trim_end_matches(']')
                    .trim()
                    .to_string(),
            );
            continue;
        }
        let k = t
            .split('=')
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches(|c| c == '"' || c == '\'');
        let dotted = table.map(|tb| format!("{tb}.{key}"));
        let here = match (table, current.as_deref()) {
            (None, None) => k == key,
            (Some(tb), Some(c)) => c == tb && k == key,
            (Some(_), None) => Some(k) == dotted.as_deref(),
            (None, Some(_)) => false,
        };
        if here && t.contains('=') {
            return Some(i + 1);
        }
    }
    None
}

impl Loaded {
    /// `PATH:LINE` of a key of the file (`PATH` when the line cannot be told).
    pub fn origin(&self, table: Option<&str>, key: &str) -> String {
        match key_line(&self.text, table, key) {
            Some(l) => format!("{}:{l}", self.path.display()),
            None => self.path.display().to_string(),
        }
    }

    /// The `[per-file-ignores]` patterns that match `file` (a path as given on the command
    /// line), each with its rules and origin: the matching the pipeline itself does.
    pub fn per_file_matches(&self, file: &str) -> Vec<(String, Vec<String>, String)> {
        self.per_file
            .matching(file)
            .into_iter()
            .map(|(pattern, rules)| {
                let origin = self.origin(Some("per-file-ignores"), pattern);
                (pattern.to_string(), rules.to_vec(), origin)
            })
            .collect()
    }
}

impl Overrides {
    /// These overrides without the lists that name rules (select, ignore, extend-safe,
    /// extend-unsafe): what can still be used when one of them names a rule that does not exist.
    pub fn without_rule_lists(&self) -> Overrides {
        Overrides {
            select: Vec::new(),
            ignore: Vec::new(),
            extend_safe: Vec::new(),
            extend_unsafe: Vec::new(),
            ..self.clone()
        }
    }

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

    /// How the config file that applies is found, in words (`check --show-settings`).
    fn how_found(&self, base: &Path) -> String {
        if self.config.is_some() {
            if self.from_editor {
                "named by initializationOptions.config".into()
            } else {
                "named by --config".into()
            }
        } else {
            format!("the nearest {FILE_NAME} upward from {}", base.display())
        }
    }

    /// The name of a setting's flag or editor option, as an origin.
    fn flag(&self, flag: &str, option: &str) -> String {
        if self.from_editor {
            format!("initializationOptions.{option}")
        } else {
            flag.to_string()
        }
    }
}

/// The overrides over the config file that applies (found from `base`, the working directory
/// of a command): the one way flags or editor options meet `.cgpu-lint.toml`.
pub fn resolve(o: &Overrides, base: &Path) -> Result<Resolved, ConfigError> {
    let file = o.config_file(base)?;
    let mut r = resolve_with(o, file.as_ref())?;
    if let Some(l) = &file {
        r.config_file = Some((l.path.clone(), o.how_found(base)));
    }
    Ok(r)
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
    let mut origins: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    // `key` came from the flag (`given`) and/or the file (`in_file`).
    let mut note = |key: &'static str, given: Option<String>, in_file: bool| {
        let mut v = Vec::new();
        v.extend(given);
        if in_file && let Some(l) = file {
            let (table, k) = match key.split_once('.') {
                Some((t, k)) => (Some(t), k),
                None => (None, key),
            };
            v.push(l.origin(table, k));
        }
        if !v.is_empty() {
            origins.insert(key, v);
        }
    };
    let mut filter = Filter {
        select: o.select.clone(),
        ignore: o.ignore.clone(),
    };
    if filter.select.is_empty() {
        filter.select = f.and_then(|f| f.select.clone()).unwrap_or_default();
        note("select", None, f.is_some_and(|f| f.select.is_some()));
    } else {
        note("select", Some(o.flag("--select", "select")), false);
    }
    for r in f.and_then(|f| f.ignore.as_ref()).into_iter().flatten() {
        if !filter.ignore.contains(r) {
            filter.ignore.push(r.clone());
        }
    }
    note(
        "ignore",
        (!o.ignore.is_empty()).then(|| o.flag("--ignore", "ignore")),
        f.is_some_and(|f| f.ignore.is_some()),
    );
    let region = o.region.clone().or_else(|| f?.region.clone());
    note(
        "region",
        o.region.as_ref().map(|_| o.flag("--region", "region")),
        o.region.is_none() && f.is_some_and(|f| f.region.is_some()),
    );
    let file_require = f.and_then(|f| f.require_cgpu).unwrap_or(false);
    note(
        "require-cgpu",
        o.require_cgpu
            .then(|| o.flag("--require-cgpu", "requireCgpu")),
        !o.require_cgpu && f.is_some_and(|f| f.require_cgpu.is_some()),
    );
    let helm = o.helm.or_else(|| file?.helm());
    note(
        "helm",
        o.helm.map(|_| o.flag("--helm", "helm")),
        o.helm.is_none() && f.is_some_and(|f| f.helm.is_some()),
    );
    let deny_warnings = o.deny_warnings || f.and_then(|f| f.deny_warnings).unwrap_or(false);
    note(
        "deny-warnings",
        o.deny_warnings
            .then(|| o.flag("--deny-warnings", "denyWarnings")),
        !o.deny_warnings && f.is_some_and(|f| f.deny_warnings.is_some()),
    );
    let format = o.format.or_else(|| f?.format);
    note(
        "format",
        o.format.map(|_| o.flag("--format", "format")),
        o.format.is_none() && f.is_some_and(|f| f.format.is_some()),
    );
    note(
        "include-markdown",
        o.include_markdown
            .then(|| o.flag("--include-markdown", "includeMarkdown")),
        !o.include_markdown && f.is_some_and(|f| f.include_markdown.is_some()),
    );
    // `[fix]`: the flags add to the file's lists.
    let mut fix_classes = crate::lint::FixClasses::default();
    for (key, given, flag, option, in_file, out) in [
        (
            "fix.extend-safe",
            &o.extend_safe,
            "--extend-safe-fixes",
            "extendSafeFixes",
            f.and_then(|f| f.fix.extend_safe.as_ref()),
            &mut fix_classes.extend_safe,
        ),
        (
            "fix.extend-unsafe",
            &o.extend_unsafe,
            "--extend-unsafe-fixes",
            "extendUnsafeFixes",
            f.and_then(|f| f.fix.extend_unsafe.as_ref()),
            &mut fix_classes.extend_unsafe,
        ),
    ] {
        let flag_name = o.flag(flag, option);
        let given_ids = fix_rules(given).map_err(|e| ConfigError::Invalid {
            path: flag_name.clone(),
            message: e,
        })?;
        let file_ids = fix_rules(in_file.map(Vec::as_slice).unwrap_or_default())
            .expect("checked when the file was read");
        for id in given_ids.into_iter().chain(file_ids) {
            if !out.contains(&id) {
                out.push(id);
            }
        }
        note(
            key,
            (!given.is_empty()).then_some(flag_name),
            in_file.is_some(),
        );
    }
    let opts = RuleOptions {
        region,
        require_cgpu: o.require_cgpu || file_require,
        helm,
        ..RuleOptions::default()
    };
    Ok(Resolved {
        settings: Settings {
            opts,
            filter,
            per_file_ignores: file
                .filter(|l| !l.per_file.is_empty())
                .map(|l| Arc::new(l.per_file.clone())),
            fix_classes,
            include_markdown: o.include_markdown
                || f.and_then(|f| f.include_markdown).unwrap_or(false),
        },
        deny_warnings,
        format,
        config_file: file.map(|l| (l.path.clone(), "read".to_string())),
        file: file.cloned(),
        origins,
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
    fn key_lines_are_found_in_tables_dotted_and_quoted() {
        let text = "# c\nignore = [\"a\"]\nfix.extend-unsafe = []\n[per-file-ignores]\n'x/*.yaml' = []\n\"y\" = []\n[fix]\n  extend-safe = [\"b\"]\n";
        assert_eq!(key_line(text, None, "ignore"), Some(2));
        assert_eq!(key_line(text, Some("fix"), "extend-unsafe"), Some(3));
        assert_eq!(
            key_line(text, Some("per-file-ignores"), "x/*.yaml"),
            Some(5)
        );
        assert_eq!(key_line(text, Some("per-file-ignores"), "y"), Some(6));
        assert_eq!(key_line(text, Some("fix"), "extend-safe"), Some(8));
        // A key of another table, or none at all.
        assert_eq!(key_line(text, None, "extend-safe"), None);
        assert_eq!(key_line(text, None, "region"), None);
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
