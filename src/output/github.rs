//! `--format github`: GitHub Actions workflow commands, one per finding, which the runner turns
//! into annotations on the pull request's diff:
//! `::error file=F,line=L,col=C,endLine=…,endColumn=…,title=RULE::message`.
//! Errors are `error`, warnings `warning`, infos `notice`. The summary line follows as plain log
//! text.

use std::path::Path;

use crate::catalogue::Severity;
use crate::diag::{Diagnostic, Summary};
use crate::output::{ci_path, human::with_summary};

/// Escape a command's message (GitHub's `escapeData`).
fn data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escape a property value (GitHub's `escapeProperty`).
fn property(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

pub fn render(diags: &[Diagnostic], summary: Summary, cwd: Option<&Path>, quiet: bool) -> String {
    let mut out = String::new();
    for d in diags {
        let (s, e) = (d.start(), d.end());
        let command = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "notice",
        };
        let message = format!("{}\nhelp: {}", d.message, d.help);
        out.push_str(&format!(
            "::{command} file={file},line={line},col={col},endLine={end_line},endColumn={end_col},title={title}::{message}\n",
            file = property(&ci_path(d.file(), cwd)),
            line = s.line,
            col = s.column,
            end_line = e.line,
            end_col = e.column,
            title = property(d.rule.name()),
            message = data(&message),
        ));
    }
    with_summary(out, &summary, quiet)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_follow_the_actions_toolkit() {
        assert_eq!(data("50%\nx"), "50%25%0Ax");
        assert_eq!(property("a,b:c"), "a%2Cb%3Ac");
    }
}
