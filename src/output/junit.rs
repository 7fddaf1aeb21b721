//! `--format junit`: JUnit XML as GitLab, Jenkins and most CI test reports read it. One
//! `<testsuite>` per file with findings, one `<testcase>` per finding, named after the rule and
//! the position. Errors and warnings are `<failure>`s (the `type` says which); an info is a
//! passing testcase whose text is in `<system-out>`, because infos never fail a run and a
//! repository walk reports one for every YAML file that is not a values file. A run without
//! findings is one passing testcase, so the report is never empty.

use std::fmt::Write as _;
use std::path::Path;

use crate::diag::{Diagnostic, Severity, Summary};
use crate::output::ci_path;

/// Escape text for an XML attribute or element, dropping characters XML 1.0 cannot hold.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

fn fails(d: &Diagnostic) -> bool {
    d.severity != Severity::Info
}

pub fn render(diags: &[Diagnostic], summary: Summary, cwd: Option<&Path>) -> String {
    // Findings arrive sorted by file, so a suite is a run of equal file names.
    let mut suites: Vec<(String, Vec<&Diagnostic>)> = Vec::new();
    for d in diags {
        let file = ci_path(d.file(), cwd);
        match suites.last_mut() {
            Some((f, ds)) if *f == file => ds.push(d),
            _ => suites.push((file, vec![d])),
        }
    }
    let failures = diags.iter().filter(|d| fails(d)).count();
    let tests = diags.len().max(1);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"cgpu-lint\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">"
    );
    if suites.is_empty() {
        let _ = writeln!(
            out,
            "  <testsuite name=\"cgpu-lint\" tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"0\">\n    \
<testcase name=\"{n} checked, no findings\" classname=\"cgpu-lint\"/>\n  </testsuite>",
            n = if summary.files == 1 {
                "1 file".to_string()
            } else {
                format!("{} files", summary.files)
            }
        );
    }
    for (file, ds) in &suites {
        let f = ds.iter().filter(|d| fails(d)).count();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{name}\" tests=\"{n}\" failures=\"{f}\" errors=\"0\" skipped=\"0\">",
            name = xml(file),
            n = ds.len(),
        );
        for d in ds {
            let s = d.start();
            let name = format!("{} at {}:{}:{}", d.rule, file, s.line, s.column);
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
            let _ = write!(
                out,
                "    <testcase name=\"{name}\" classname=\"{class}\" file=\"{file}\" line=\"{line}\">",
                name = xml(&name),
                class = xml(file),
                file = xml(file),
                line = s.line,
            );
            if fails(d) {
                let _ = write!(
                    out,
                    "\n      <failure message=\"{msg}\" type=\"{ty}\">{text}</failure>\n    ",
                    msg = xml(&d.message),
                    ty = d.severity.as_str(),
                    text = xml(&text),
                );
            } else {
                let _ = write!(
                    out,
                    "\n      <system-out>{text}</system-out>\n    ",
                    text = xml(&text)
                );
            }
            out.push_str("</testcase>\n");
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escapes_markup_and_drops_control_characters() {
        assert_eq!(xml("a<b & \"c\"\u{1}"), "a&lt;b &amp; &quot;c&quot;");
    }
}
