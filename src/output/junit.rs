//! `--format junit`: JUnit XML as GitLab, Jenkins and most CI test reports read it. One
//! `<testsuite>` per file with findings, one `<testcase>` per finding, named after the rule and
//! the position. Errors are `<failure>`s, and warnings too under `--deny-warnings` (the `type`
//! says which), so the report fails exactly when the exit status does; otherwise a warning, like
//! an info, is a passing testcase whose text is in `<system-out>` (infos never fail a run, and a
//! repository walk reports one for every YAML file that is not a values file). A run without
//! findings is one passing testcase, so the report is never empty. The XML is written by
//! quick-junit, the serializer cargo-nextest uses.

use std::path::Path;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::catalogue::Severity;
use crate::diag::{Diagnostic, Summary};
use crate::output::ci_path;

/// Does the finding fail the run (and so its testcase)?
fn fails(d: &Diagnostic, deny_warnings: bool) -> bool {
    d.severity == Severity::Error || (deny_warnings && d.severity == Severity::Warning)
}

fn testcase(d: &Diagnostic, file: &str, deny_warnings: bool) -> TestCase {
    let s = d.start();
    let text = format!(
        "{file}:{}:{}: {}[{}] document {} {}\n{}\nhelp: {}",
        s.line,
        s.column,
        d.severity.as_str(),
        d.rule,
        d.document,
        if d.path.is_empty() { "/" } else { &d.path },
        d.message,
        d.help
    );
    let status = if fails(d, deny_warnings) {
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
        status
            .set_message(d.message.as_str())
            .set_type(d.severity.as_str())
            .set_description(text.as_str());
        status
    } else {
        TestCaseStatus::success()
    };
    let mut case = TestCase::new(
        format!("{} at {}:{}:{}", d.rule, file, s.line, s.column),
        status,
    );
    case.set_classname(file);
    if !fails(d, deny_warnings) {
        case.set_system_out(text);
    }
    // GitLab and Jenkins link a testcase to the file by these attributes.
    case.extra.insert("file".into(), file.into());
    case.extra.insert("line".into(), s.line.to_string().into());
    case
}

pub fn render(
    diags: &[Diagnostic],
    summary: Summary,
    cwd: Option<&Path>,
    deny_warnings: bool,
) -> String {
    let mut report = Report::new("cgpu-lint");
    // Findings arrive sorted by file, so a suite is a run of equal file names.
    let mut suite: Option<TestSuite> = None;
    for d in diags {
        let file = ci_path(d.file(), cwd);
        if suite.as_ref().is_some_and(|s| s.name.as_str() != file) {
            report.add_test_suite(suite.take().expect("checked"));
        }
        suite
            .get_or_insert_with(|| TestSuite::new(file.as_str()))
            .add_test_case(testcase(d, &file, deny_warnings));
    }
    match suite {
        Some(s) => {
            report.add_test_suite(s);
        }
        None => {
            let checked = if summary.files == 1 {
                "1 file".to_string()
            } else {
                format!("{} files", summary.files)
            };
            let mut case = TestCase::new(
                format!("{checked} checked, no findings"),
                TestCaseStatus::success(),
            );
            case.set_classname("cgpu-lint");
            let mut s = TestSuite::new("cgpu-lint");
            s.add_test_case(case);
            report.add_test_suite(s);
        }
    }
    let mut out = report
        .to_string()
        .expect("a report built from strings serializes");
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped_and_control_characters_are_dropped() {
        let src = crate::yaml::Source::new("a<b>.yaml", "cgpu: {}\n".to_string());
        let d = Diagnostic {
            message: "a<b & \"c\"\u{1}".into(),
            src,
            ..Diagnostic::io_error("x", String::new())
        };
        let xml = render(&[d], Summary::default(), None, false);
        assert!(xml.contains("a&lt;b &amp; &quot;c&quot;"), "{xml}");
        assert!(!xml.contains('\u{1}'), "{xml}");
        assert!(xml.contains("name=\"a&lt;b&gt;.yaml\""), "{xml}");
    }
}
