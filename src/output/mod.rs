//! One printer per output format, all reading the same [`crate::diag::Diagnostic`]s.

pub mod compat;
pub mod github;
pub mod gitlab;
pub mod human;
pub mod json;
pub mod junit;
pub mod policyreport;
pub mod rules;
pub mod sarif;
pub mod statistics;

use std::path::{Component, Path};

use crate::diag::Diagnostic;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Human,
    Json,
    /// SARIF 2.1.0, for GitHub code scanning and other SARIF consumers
    Sarif,
    /// GitHub Actions workflow commands (annotations on the pull request)
    Github,
    /// JUnit XML, for GitLab and other CI test reports
    Junit,
    /// GitLab Code Quality (CodeClimate JSON), for the merge request widget
    Gitlab,
    /// Kubernetes PolicyReports (wgpolicyk8s.io/v1alpha2; openreports.io with --openreports),
    /// for Policy Reporter and `kubectl apply`
    Policyreport,
}

impl Format {
    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Human => "human",
            Format::Json => "json",
            Format::Sarif => "sarif",
            Format::Github => "github",
            Format::Junit => "junit",
            Format::Gitlab => "gitlab",
            Format::Policyreport => "policyreport",
        }
    }
}

/// A control character that must not reach a terminal raw (C0 but tab and newline, DEL, C1):
/// `ESC ] 0 ; … BEL` in a values file would retitle the reviewer's terminal, `ESC [ 2 J` clear it.
pub fn is_hazard(c: char) -> bool {
    matches!(c as u32, 0..=0x08 | 0x0b..=0x1f | 0x7f..=0x9f)
}

/// `s` with every [`is_hazard`] character written as `\xNN`: what the human formats print of
/// anything that comes from an input (messages, help, file names, snippets).
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(is_hazard) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_hazard(c) {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Where a finding is and what it is: `file:line:column: severity[rule]`. The first line of a
/// human report and every [`brief`] line start with it.
pub fn locator(d: &Diagnostic) -> String {
    let start = d.start();
    format!(
        "{}:{}:{}: {}[{}]",
        escape_controls(d.file()),
        start.line,
        start.column,
        d.severity.as_str(),
        d.rule
    )
}

/// One finding on one line, `file:line:column: severity[rule] message`: the form `set`,
/// `generate` and `post-render` (its changes and its terminal summary) print findings in, so
/// editors and CI logs link every one of them to its place.
pub fn brief(d: &Diagnostic) -> String {
    format!("{} {}", locator(d), escape_controls(&d.message))
}

/// A finding's file as CI systems want it: relative to the working directory when it lies under
/// it, without a leading `./`, with `/` separators. Anything else (stdin `-`, `<chart defaults>`,
/// a path outside the working directory) is kept as given.
pub fn ci_path(name: &str, cwd: Option<&Path>) -> String {
    let p = Path::new(name);
    let rel = match cwd {
        Some(cwd) if p.is_absolute() => p.strip_prefix(cwd).unwrap_or(p),
        _ => p,
    };
    let parts: Vec<String> = rel
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::RootDir => String::new(),
            other => other.as_os_str().to_string_lossy().into_owned(),
        })
        .collect();
    if parts.is_empty() {
        return name.to_string();
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_tab_and_newline_kept() {
        assert_eq!(
            escape_controls("a\u{1b}]0;pwned\u{7}b\tc\nd\u{7f}\u{9b}\r"),
            "a\\x1b]0;pwned\\x07b\tc\nd\\x7f\\x9b\\x0d"
        );
        assert!(matches!(
            escape_controls("plain ✓"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn ci_paths_are_relative_to_the_working_directory() {
        let cwd = Path::new("/repo");
        assert_eq!(ci_path("./values/a.yaml", Some(cwd)), "values/a.yaml");
        assert_eq!(ci_path("/repo/values/a.yaml", Some(cwd)), "values/a.yaml");
        assert_eq!(ci_path("/elsewhere/a.yaml", Some(cwd)), "/elsewhere/a.yaml");
        assert_eq!(ci_path("-", Some(cwd)), "-");
    }
}
