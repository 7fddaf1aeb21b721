//! `--format azure`: Azure Pipelines logging commands, one per finding, which the agent turns
//! into the run's errors and warnings (with the file and line in the summary and on the pull
//! request): `##vso[task.logissue type=error;sourcepath=F;linenumber=L;columnnumber=C;code=RULE;]message`.
//!
//! Azure has only `error` and `warning` issues: errors are `error`, warnings `warning`, and
//! infos `warning` too (as ruff's azure format does), with their message starting `info: ` so
//! a reader tells them apart. The summary line follows as plain log text.
//!
//! Escaping is the agent's (azure-pipelines-task-lib's `taskcommand.js`, which the agent's own
//! parser matches): in a property value `%` → `%AZP25`, CR → `%0D`, LF → `%0A`, `]` → `%5D`,
//! `;` → `%3B`; in the message `%`, CR and LF. Columns count characters, as in every format
//! but rdjson.

use std::path::Path;

use crate::catalogue::Severity;
use crate::diag::{Diagnostic, Summary};
use crate::output::{ci_path, human::with_summary};

/// Escape a command's message (task-lib's `escapedata`).
fn data(s: &str) -> String {
    s.replace('%', "%AZP25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escape a property value (task-lib's `escape`).
fn property(s: &str) -> String {
    data(s).replace(']', "%5D").replace(';', "%3B")
}

pub fn render(diags: &[Diagnostic], summary: Summary, cwd: Option<&Path>, quiet: bool) -> String {
    let mut out = String::new();
    for d in diags {
        let s = d.start();
        let (kind, prefix) = match d.severity {
            Severity::Error => ("error", ""),
            Severity::Warning => ("warning", ""),
            Severity::Info => ("warning", "info: "),
        };
        let message = format!("{prefix}{}\nhelp: {}", d.message, d.help);
        out.push_str(&format!(
            "##vso[task.logissue type={kind};sourcepath={file};linenumber={line};columnnumber={col};code={code};]{message}\n",
            file = property(&ci_path(d.file(), cwd)),
            line = s.line,
            col = s.column,
            code = property(d.rule.name()),
            message = data(&message),
        ));
    }
    with_summary(out, &summary, quiet)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_follow_the_task_lib() {
        assert_eq!(data("50%\r\nx]"), "50%AZP25%0D%0Ax]");
        assert_eq!(property("a;b]c%"), "a%3Bb%5Dc%AZP25");
    }
}
