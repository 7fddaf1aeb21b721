//! Reading inputs: one file, a directory (walked as `check` walks it), or stdin; the pipeline
//! runs over them in [`crate::lint::inputs`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::diag::Diagnostic;
use crate::yaml::{self, Source};

/// The largest values file or manifest `check` reads (post-render streams have no limit).
pub const DEFAULT_MAX_FILE_SIZE: u64 = 64 * 1024 * 1024;

/// A problem that stops the tool from doing its job on an input (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: is a directory; give it to `check`, which walks directories")]
    IsDirectory { path: String },
    #[error("{path}: {}over the {limit}-byte limit (--max-file-size)", size.map_or(String::new(), |s| format!("file is {s} bytes, ")))]
    TooLarge {
        path: String,
        /// The size a regular file states; none for what has no size to state (stdin, a
        /// device, a FIFO), whose reading stopped one byte past the limit.
        size: Option<u64>,
        limit: u64,
    },
    #[error("{path}: {message}")]
    Walk { path: String, message: String },
    #[error("{path}: the directory holds no *.yaml or *.yml file to check (a typo in the path?)")]
    NoYaml { path: String },
    #[error(
        "{path}: the directory holds no *.yaml or *.yml file to check, only Markdown (a typo in the path? --include-markdown reads Markdown's yaml blocks)"
    )]
    OnlyMarkdown { path: String },
}

impl InputError {
    /// The input the error is about.
    pub fn path(&self) -> &str {
        match self {
            InputError::Io { path, .. }
            | InputError::IsDirectory { path }
            | InputError::TooLarge { path, .. }
            | InputError::Walk { path, .. }
            | InputError::NoYaml { path }
            | InputError::OnlyMarkdown { path } => path,
        }
    }

    /// The error as an `io-error` finding on its input, so that every output format carries it.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let path = self.path();
        let full = self.to_string();
        let reason = full
            .strip_prefix(&format!("{path}: "))
            .unwrap_or(&full)
            .to_string();
        let mut d = Diagnostic::io_error(path, reason);
        d.help = self.help().to_string();
        d
    }

    /// What to do about it, for this kind of failure (the catalogue's help names them all).
    pub fn help(&self) -> &'static str {
        match self {
            InputError::Io { source, .. } => match source.kind() {
                std::io::ErrorKind::NotFound => {
                    "no file or directory has this name: check the path (a relative one is taken from the working directory)"
                }
                std::io::ErrorKind::PermissionDenied => {
                    "this user may not read the file: check its permissions"
                }
                std::io::ErrorKind::InvalidData => "the input is not text cgpu-lint can read",
                _ => "check the path and its permissions",
            },
            InputError::IsDirectory { .. } => "give the directory to `check`, which walks it",
            InputError::TooLarge { .. } => {
                "a values file is rarely this large: check it is the file meant, or raise --max-file-size"
            }
            InputError::Walk { .. } => "check the directory's permissions and links",
            InputError::NoYaml { .. } => {
                "check the path: name a file, or a directory holding *.yaml or *.yml files"
            }
            InputError::OnlyMarkdown { .. } => {
                "check the path; a directory walk reads Markdown only with --include-markdown (or include-markdown = true in .cgpu-lint.toml)"
            }
        }
    }
}

/// Read one input (a path or `-` for stdin) into a [`Source`].
pub fn read_input(path: &str, max_size: u64) -> Result<Arc<Source>, InputError> {
    let io = |source| InputError::Io {
        path: path.to_string(),
        source,
    };
    let too_large = |size| InputError::TooLarge {
        path: path.to_string(),
        size,
        limit: max_size,
    };
    // The limit holds while reading, whatever the input is: stdin, a device, a FIFO, a /proc
    // file or a symbolic link to one state no size (or a false one) beforehand.
    let read = if path == "-" {
        crate::spill::read_at_most(std::io::stdin().lock(), max_size).map_err(io)?
    } else {
        let meta = std::fs::metadata(path).map_err(io)?;
        if meta.is_dir() {
            return Err(InputError::IsDirectory {
                path: path.to_string(),
            });
        }
        if meta.is_file() && meta.len() > max_size {
            return Err(too_large(Some(meta.len())));
        }
        crate::spill::read_file_at_most(Path::new(path), max_size).map_err(io)?
    };
    let bytes = read.ok_or_else(|| too_large(None))?;
    let mut src = match yaml::source::decode_file(bytes) {
        Ok((text, encoding)) => {
            let mut src = Source::new(path, text);
            if let Some(s) = Arc::get_mut(&mut src) {
                s.encoding = encoding;
            }
            src
        }
        Err((lossy, offset, message)) => Source::new_invalid(path, lossy, offset, message),
    };
    if let Some(s) = Arc::get_mut(&mut src) {
        s.node_budget = yaml::source::node_budget(max_size);
    }
    Ok(src)
}

/// Why a walk did not check a file or folder (`check --show-files`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Skip {
    /// Left out by `.gitignore`, `.git/info/exclude` or `.ignore` (of the folder or a parent).
    Ignored,
    /// A `.git` folder.
    GitDir,
    /// A chart's `templates/` folder: Go templates, YAML only once rendered.
    ChartTemplates,
    /// Not named `*.yaml` or `*.yml`.
    NotYaml,
    /// A Markdown file, without `--include-markdown`.
    Markdown,
    /// A chart's `Chart.yaml` or `requirements.yaml`.
    ChartMetadata,
    /// Not a regular file (a symbolic link, which walks do not follow, a socket, …).
    NotAFile,
}

impl Skip {
    pub fn reason(&self) -> &'static str {
        match self {
            Skip::Ignored => "ignored by .gitignore, .git/info/exclude or .ignore",
            Skip::GitDir => "git's own .git",
            Skip::ChartTemplates => {
                "a chart's templates/ folder (Go templates, YAML only once rendered)"
            }
            Skip::NotYaml => "not *.yaml or *.yml",
            Skip::Markdown => "Markdown (read with --include-markdown)",
            Skip::ChartMetadata => "chart metadata (Chart.yaml, requirements.yaml)",
            Skip::NotAFile => "not a regular file (walks do not follow symbolic links)",
        }
    }
}

/// Expand directories into their `*.yaml`/`*.yml` files (honouring .gitignore), keep files and
/// `-` as given. Directory contents are sorted so reports are stable.
pub fn expand_paths(paths: &[String]) -> (Vec<String>, Vec<InputError>) {
    walk_paths(paths, false, None)
}

/// [`expand_paths`]; with `markdown`, directories give their `*.md`/`*.markdown` files too
/// (`--include-markdown`).
pub fn expand_paths_with(paths: &[String], markdown: bool) -> (Vec<String>, Vec<InputError>) {
    walk_paths(paths, markdown, None)
}

/// [`expand_paths_with`], also saying what the walk skipped and why when `skipped` is given
/// (the same walk: what `check --show-files` prints is what `check` does).
pub fn walk_paths(
    paths: &[String],
    markdown: bool,
    mut skipped: Option<&mut Vec<(PathBuf, Skip)>>,
) -> (Vec<String>, Vec<InputError>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        if p != "-" && Path::new(p).is_dir() {
            let mut found: Vec<PathBuf> = Vec::new();
            let walker = ignore::WalkBuilder::new(p)
                .hidden(false)
                .git_ignore(true)
                .git_global(false)
                .git_exclude(true)
                .require_git(false)
                .follow_links(false)
                .filter_entry(|e| e.file_name() != ".git" && !is_chart_templates_dir(e.path()))
                .build();
            let errors_before = errors.len();
            // With `skipped`: every entry the walk yields, and the folders it entered, so
            // that what it left out (its filters, the ignore files) can be named.
            let mut yielded: std::collections::HashSet<PathBuf> = Default::default();
            let mut dirs: Vec<PathBuf> = Vec::new();
            let mut markdown_seen = false;
            for entry in walker {
                match entry {
                    Ok(e) => {
                        let path = e.path();
                        let is_dir = e.file_type().is_some_and(|t| t.is_dir());
                        let skip = file_skip(&e, markdown);
                        markdown_seen |= skip == Some(Skip::Markdown);
                        if let Some(skips) = skipped.as_deref_mut() {
                            yielded.insert(path.to_path_buf());
                            if is_dir {
                                dirs.push(path.to_path_buf());
                            } else if let Some(why) = skip.clone() {
                                skips.push((path.to_path_buf(), why));
                            }
                        }
                        if skip.is_none() && !is_dir {
                            found.push(path.to_path_buf());
                        }
                    }
                    Err(err) => errors.push(walk_error(p, &err)),
                }
            }
            if let Some(skips) = skipped.as_deref_mut() {
                for dir in &dirs {
                    let Ok(children) = std::fs::read_dir(dir) else {
                        continue;
                    };
                    for child in children.flatten() {
                        let path = child.path();
                        if yielded.contains(&path) {
                            continue;
                        }
                        let why = if child.file_name() == ".git" {
                            Skip::GitDir
                        } else if is_chart_templates_dir(&path) {
                            Skip::ChartTemplates
                        } else {
                            Skip::Ignored
                        };
                        skips.push((path, why));
                    }
                }
            }
            // A directory named on the command line that holds nothing to check is a mistake
            // (a CI path typo must not pass green), unless the walk already said why.
            if found.is_empty() && errors.len() == errors_before {
                errors.push(if markdown_seen {
                    InputError::OnlyMarkdown { path: p.clone() }
                } else {
                    InputError::NoYaml { path: p.clone() }
                });
            }
            found.sort();
            out.extend(found.into_iter().map(|f| f.to_string_lossy().into_owned()));
        } else if p != "-"
            && let Err(source) = std::fs::metadata(p)
        {
            // A path that is not there is not a file checked: an error of its own.
            errors.push(InputError::Io {
                path: p.clone(),
                source,
            });
        } else {
            out.push(p.clone());
        }
    }
    if let Some(skips) = skipped {
        skips.sort();
    }
    (out, errors)
}

/// Why a walk does not check this entry (`None`: it is checked, or a folder it enters).
fn file_skip(e: &ignore::DirEntry, markdown: bool) -> Option<Skip> {
    let path = e.path();
    if e.file_type().is_some_and(|t| t.is_dir()) {
        return None;
    }
    let is_yaml = path
        .extension()
        .and_then(|x| x.to_str())
        .is_some_and(|x| x == "yaml" || x == "yml");
    let is_markdown = yaml::markdown::is_markdown(&path.to_string_lossy());
    if is_markdown && !markdown {
        Some(Skip::Markdown)
    } else if !is_yaml && !is_markdown {
        Some(Skip::NotYaml)
    } else if !e.file_type().is_some_and(|t| t.is_file()) {
        Some(Skip::NotAFile)
    } else if is_chart_metadata(path) {
        Some(Skip::ChartMetadata)
    } else {
        None
    }
}

/// A walk error on the path that failed (an unreadable subfolder, not the folder the walk
/// started from).
fn walk_error(root: &str, err: &ignore::Error) -> InputError {
    fn failed(err: &ignore::Error) -> Option<(&Path, String)> {
        match err {
            ignore::Error::WithPath { path, err } => {
                failed(err).or_else(|| Some((path.as_path(), err.to_string())))
            }
            ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
                failed(err)
            }
            ignore::Error::Loop { child, .. } => {
                Some((child.as_path(), "a symbolic link loop".to_string()))
            }
            _ => None,
        }
    }
    let (path, message) = match failed(err) {
        Some((path, message)) => (path.to_string_lossy().into_owned(), message),
        None => (root.to_string(), err.to_string()),
    };
    // The walker's I/O errors name the path themselves ("IO error for operation on PATH: …");
    // the error names it once, in front.
    let message = message
        .strip_prefix(&format!("IO error for operation on {path}: "))
        .map(str::to_string)
        .unwrap_or(message);
    InputError::Walk { path, message }
}

/// A chart's metadata, which a directory walk skips: `Chart.yaml` and Helm 2's
/// `requirements.yaml` (Chart.lock and requirements.lock are not named *.yaml anyway). Named on
/// the command line they are still read (and said to be chart metadata).
fn is_chart_metadata(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n == "Chart.yaml" || n == "requirements.yaml")
}

/// A chart's `templates/` folder (its parent holds `Chart.yaml`): Go templates, which are YAML
/// only after `helm template` renders them. Directory walks skip it.
fn is_chart_templates_dir(dir: &Path) -> bool {
    dir.file_name().is_some_and(|n| n == "templates")
        && dir.parent().is_some_and(|p| p.join("Chart.yaml").is_file())
}

/// Is this file inside a chart's `templates/` folder?
pub fn is_chart_template(path: &Path) -> bool {
    // A path without the word has no `templates` folder (and needs no walk over its parents).
    let bytes = path.as_os_str().as_encoded_bytes();
    memchr::memmem::find(bytes, b"templates").is_some()
        && path.ancestors().skip(1).any(is_chart_templates_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_node_budget_is_the_default_size_limit_s() {
        assert_eq!(
            yaml::source::DEFAULT_NODE_BUDGET,
            yaml::source::node_budget(DEFAULT_MAX_FILE_SIZE)
        );
    }

    #[test]
    fn a_walk_error_names_the_path_that_failed_not_the_root() {
        // What ignore reports for an unreadable subfolder (`ls` of it fails with EACCES).
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let err = ignore::Error::WithDepth {
            depth: 1,
            err: Box::new(ignore::Error::WithPath {
                path: PathBuf::from("./values/locked"),
                err: Box::new(ignore::Error::Io(denied)),
            }),
        };
        let e = walk_error(".", &err);
        assert_eq!(e.path(), "./values/locked");
        assert!(e.to_string().starts_with("./values/locked: "), "{e}");
        // Without a path in the error, the root is all there is to name.
        let e = walk_error(".", &ignore::Error::Io(std::io::Error::other("boom")));
        assert_eq!(e.path(), ".");
    }

    #[test]
    fn walks_skip_chart_metadata_only() {
        assert!(is_chart_metadata(Path::new("charts/gpu/Chart.yaml")));
        assert!(is_chart_metadata(Path::new("requirements.yaml")));
        assert!(!is_chart_metadata(Path::new("charts/gpu/values.yaml")));
        assert!(!is_chart_metadata(Path::new("chart.yaml")));
    }
}
