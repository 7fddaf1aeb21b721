//! One printer per output format, all reading the same [`crate::diag::Diagnostic`]s.

pub mod azure;
pub mod compat;
pub mod github;
pub mod gitlab;
pub mod human;
pub mod json;
pub mod junit;
pub mod policyreport;
pub mod rdjson;
pub mod rules;
pub mod sarif;
pub mod statistics;

use std::path::{Component, Path};

use crate::diag::Diagnostic;

/// A report format (`--format`; `format` in .cgpu-lint.toml).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Human,
    Json,
    Sarif,
    Github,
    Junit,
    Gitlab,
    Policyreport,
    Rdjson,
    Azure,
}

impl Format {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Format; 9] = [
        Format::Human,
        Format::Json,
        Format::Sarif,
        Format::Github,
        Format::Junit,
        Format::Gitlab,
        Format::Policyreport,
        Format::Rdjson,
        Format::Azure,
    ];

    /// What the format is for, as `--help` says it.
    pub fn help(self) -> Option<&'static str> {
        Some(match self {
            Format::Human | Format::Json => return None,
            Format::Sarif => "SARIF 2.1.0, for GitHub code scanning and other SARIF consumers",
            Format::Github => "GitHub Actions workflow commands (annotations on the pull request)",
            Format::Junit => "JUnit XML, for GitLab and other CI test reports",
            Format::Gitlab => {
                "GitLab Code Quality (CodeClimate JSON), for the merge request widget"
            }
            Format::Policyreport => {
                "Kubernetes PolicyReports (wgpolicyk8s.io/v1alpha2; openreports.io with --openreports), for Policy Reporter and `kubectl apply`"
            }
            Format::Rdjson => "reviewdog's Diagnostic Format (rdjson), for `reviewdog -f=rdjson`",
            Format::Azure => "Azure Pipelines logging commands (`##vso[task.logissue …]`)",
        })
    }

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
            Format::Rdjson => "rdjson",
            Format::Azure => "azure",
        }
    }
}

/// A character that must not reach a terminal raw: C0 but tab and newline, DEL, C1 (`ESC ] 0 ;
/// … BEL` in a values file would retitle the reviewer's terminal, `ESC [ 2 J` clear it), and the
/// Unicode bidi and invisible format characters (U+061C, U+200E/F, U+202A–U+202E, U+2066–U+2069,
/// U+FEFF), which reorder or hide what a reviewer reads (CVE-2021-42574, "Trojan Source").
pub fn is_hazard(c: char) -> bool {
    matches!(c as u32, 0..=0x08 | 0x0b..=0x1f | 0x7f..=0x9f) || is_invisible(c)
}

/// The bidi and invisible format characters [`is_hazard`] names.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c as u32,
        0x061c | 0x200e | 0x200f | 0x202a..=0x202e | 0x2066..=0x2069 | 0xfeff
    )
}

/// How a hazardous character is shown: `\xNN` up to U+00FF, `\u{NNNN}` above.
pub fn escaped(c: char) -> String {
    if (c as u32) <= 0xff {
        format!("\\x{:02x}", c as u32)
    } else {
        format!("\\u{{{:04x}}}", c as u32)
    }
}

/// `s` with every [`is_hazard`] character written as [`escaped`]: what the human formats print
/// of a text that may span lines (status and what-if reports, a post-renderer's template name).
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    escape_with(s, is_hazard)
}

/// `s` as one line of a report: [`escape_controls`] and also tab and newline escaped (`\t`,
/// `\n`), for what comes from an input and is printed inside a line: a file name, a JSON
/// pointer, a message, a help. A file named `x\n::warning file=x::` must not start a CI log line
/// that GitHub reads as a workflow command.
pub fn escape_line(s: &str) -> std::borrow::Cow<'_, str> {
    escape_with(s, |c| is_hazard(c) || matches!(c, '\t' | '\n'))
}

fn escape_with(s: &str, hazard: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(&hazard) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '\t' if hazard(c) => out.push_str("\\t"),
            '\n' if hazard(c) => out.push_str("\\n"),
            c if hazard(c) => out.push_str(&escaped(c)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The longest quoted value (between backticks) a human message shows whole, in characters.
pub const VALUE_BOUND: usize = 200;
/// The longest message or help a human report shows whole, in characters.
pub const TEXT_BOUND: usize = 2000;

/// A message, help or note as a human report prints it: each value quoted between backticks that
/// is longer than [`VALUE_BOUND`] cut to its start and its length (`` `aaaa…` (20000000
/// characters) ``), the whole cut at [`TEXT_BOUND`] likewise, and then [`escape_line`]. A 20 MB
/// tag is then a line, not 60 MB of report. The machine formats keep the exact text.
pub fn shown_text(s: &str) -> String {
    let cut = cut_values(s);
    let cut = cut_whole(&cut, TEXT_BOUND);
    escape_line(&cut).into_owned()
}

fn cut_values(s: &str) -> std::borrow::Cow<'_, str> {
    if s.len() <= VALUE_BOUND {
        return std::borrow::Cow::Borrowed(s);
    }
    let parts: Vec<&str> = s.split('`').collect();
    if !parts
        .iter()
        .skip(1)
        .step_by(2)
        .any(|p| p.len() > VALUE_BOUND)
    {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(VALUE_BOUND * parts.len());
    // The length of the value cut last, written after its closing backtick.
    let mut pending: Option<usize> = None;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push('`');
        }
        if let Some(n) = pending.take() {
            out.push_str(&format!(" ({n} characters)"));
        }
        // An odd part lies between backticks.
        let n = if i % 2 == 1 { part.chars().count() } else { 0 };
        if n > VALUE_BOUND {
            out.extend(part.chars().take(VALUE_BOUND / 2));
            out.push('…');
            pending = Some(n);
        } else {
            out.push_str(part);
        }
    }
    if let Some(n) = pending {
        out.push_str(&format!(" ({n} characters)"));
    }
    std::borrow::Cow::Owned(out)
}

fn cut_whole(s: &str, bound: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= bound {
        return std::borrow::Cow::Borrowed(s);
    }
    let n = s.chars().count();
    if n <= bound {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out: String = s.chars().take(bound).collect();
    out.push_str(&format!("… ({n} characters)"));
    std::borrow::Cow::Owned(out)
}

/// `n` and the noun in the number `n` asks for: `1 error`, `2 errors`, `0 infos`,
/// `1 installer DaemonSet`, `3 installer DaemonSets` (every noun of a summary line takes `s`).
pub fn count(n: usize, singular: &str) -> String {
    if n == 1 {
        format!("1 {singular}")
    } else {
        format!("{n} {singular}s")
    }
}

/// Where a finding is and what it is: `file:line:column: severity[rule]`. The first line of a
/// human report and every [`brief`] line start with it.
pub fn locator(d: &Diagnostic) -> String {
    // An input that could not be read has no position: `file: error[io-error]`.
    if d.rule == crate::catalogue::RuleId::IoError {
        return format!(
            "{}: {}[{}]",
            escape_line(d.file()),
            d.severity.as_str(),
            d.rule
        );
    }
    let start = d.start();
    format!(
        "{}:{}:{}: {}[{}]",
        escape_line(d.file()),
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
    format!("{} {}", locator(d), shown_text(&d.message))
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
    fn bidi_and_invisible_characters_are_escaped_and_lines_kept_on_one_line() {
        for c in [
            '\u{61c}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202e}', '\u{2066}', '\u{2069}',
            '\u{feff}',
        ] {
            let text = format!("a{c}b");
            let shown = escape_line(&text);
            assert_eq!(shown, format!("a\\u{{{:04x}}}b", c as u32));
        }
        // A zero-width joiner and the letters of other scripts are text, not hazards.
        assert_eq!(escape_line("a\u{200d}b ✓ 中"), "a\u{200d}b ✓ 中");
        assert_eq!(
            escape_line("x\n::warning file=x::y\t"),
            "x\\n::warning file=x::y\\t"
        );
    }

    #[test]
    fn a_long_value_is_cut_with_its_length_named() {
        let long = "a".repeat(5000);
        let shown = shown_text(&format!("`tag`: `{long}` is not a cGPU tag; use `v1`"));
        assert_eq!(
            shown,
            format!(
                "`tag`: `{}…` (5000 characters) is not a cGPU tag; use `v1`",
                "a".repeat(VALUE_BOUND / 2)
            )
        );
        // A value at the bound is shown whole; an unclosed one is cut too.
        let at = "b".repeat(VALUE_BOUND);
        assert_eq!(shown_text(&format!("`{at}`")), format!("`{at}`"));
        assert!(shown_text(&format!("x `{long}")).ends_with("… (5000 characters)"));
        // Text without backticks is cut at the whole-text bound.
        let prose = "word ".repeat(1000);
        let cut = shown_text(&prose);
        assert!(cut.chars().count() < TEXT_BOUND + 40, "{}", cut.len());
        assert!(cut.ends_with("… (5000 characters)"), "{cut}");
    }

    #[test]
    fn counts_take_the_noun_in_their_number() {
        assert_eq!(count(0, "error"), "0 errors");
        assert_eq!(count(1, "error"), "1 error");
        assert_eq!(count(2, "installer DaemonSet"), "2 installer DaemonSets");
        assert_eq!(count(1, "installer DaemonSet"), "1 installer DaemonSet");
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
