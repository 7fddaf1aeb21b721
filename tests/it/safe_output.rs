//! Every byte the human formats print is safe to show: values and file
//! names full of control, bidi and invisible characters come out escaped, on the lines they
//! belong to, while JSON keeps the exact strings; a huge value is cut with its length named;
//! `fix -` writes only the file to stdout; a missing path is an io-error that is not a checked
//! file; messages read as sentences (no doubled words, nouns in the number of their count).

use crate::common;
use crate::common::bin;
use proptest::prelude::*;

/// What must not reach a terminal raw: C0 but tab and newline, DEL, C1, and the bidi
/// and invisible format characters. Written here from the spec, not from the code.
fn is_hazard(c: char) -> bool {
    matches!(c as u32,
        0..=0x08 | 0x0b..=0x1f | 0x7f..=0x9f
        | 0x061c | 0x200e | 0x200f | 0x202a..=0x202e | 0x2066..=0x2069 | 0xfeff)
}

const HAZARDS: &[char] = &[
    '\u{0}', '\u{1}', '\u{7}', '\u{8}', '\u{b}', '\u{c}', '\r', '\u{1b}', '\u{1f}', '\u{7f}',
    '\u{80}', '\u{85}', '\u{9b}', '\u{9f}', '\u{61c}', '\u{200e}', '\u{200f}', '\u{202a}',
    '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
    '\u{feff}', '\n', '\t',
];

/// A string of ordinary and hazardous characters (no `/`, `:` or `@`, which would make an image
/// reference of it, nor a backtick).
fn hostile() -> impl Strategy<Value = String> {
    let ordinary = prop::sample::select(vec!['a', 'Z', '0', '-', '.', '_', ' ', 'é', '中', '✓']);
    let hazard = prop::sample::select(HAZARDS.to_vec());
    prop::collection::vec(prop_oneof![ordinary, hazard], 1..24)
        .prop_map(|v| v.into_iter().collect::<String>())
}

/// `s` as a YAML double-quoted scalar: ASCII, every other character a `\u`/`\U` escape.
fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(c),
            c if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// The characters of `s` that YAML allows raw in a comment (go-yaml refuses C0 and C1 there):
/// the bidi and invisible ones stay, for the snippet to show.
fn printable(s: &str) -> String {
    s.chars()
        .filter(|&c| {
            c == ' '
                || (c > ' '
                    && c != '\u{7f}'
                    && !('\u{80}'..'\u{a0}').contains(&c)
                    && c != '\u{feff}')
        })
        .collect()
}

/// Is `out` (a human report) safe: no hazard raw, and no line that a CI runner would read as a
/// GitHub workflow command.
fn assert_safe(out: &str, what: &str) {
    if let Some(c) = out.chars().find(|&c| is_hazard(c)) {
        panic!("{what}: U+{:04X} raw in\n{out}", c as u32);
    }
    if let Some(l) = out.lines().find(|l| l.trim_start().starts_with("::")) {
        panic!("{what}: a line reads as a workflow command: {l:?}\n{out}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A hostile value in a message, a help and a snippet; a hostile file name in the locator
    /// and the snippet's header. JSON keeps both exactly.
    #[test]
    fn hostile_values_and_file_names_are_escaped_for_people_and_exact_for_machines(
        value in hostile(),
        name in hostile(),
    ) {
        let value = format!("{value}\n::warning file=x::v");
        let name = format!("f{}\n::warning file=x::n.yaml", name.replace('\0', "0"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(&name),
            format!("cgpu:\n  imagePullPolicy: {}\n  # {}\n  tag: {}\n", quoted(&value),
                printable(&value), quoted(&value)),
        ).unwrap();
        for args in [
            vec!["check", "--no-config", "--color", "never"],
            vec!["check", "--no-config", "--color", "always"],
            vec!["check", "--no-config", "--statistics"],
            vec!["fix", "--no-config", "--diff"],
        ] {
            let out = bin().current_dir(dir.path()).args(&args).arg(&name).output().unwrap();
            prop_assert_eq!(out.status.code(), Some(1), "{:?}", args);
            let stdout = String::from_utf8(out.stdout).unwrap();
            let stderr = String::from_utf8(out.stderr).unwrap();
            // With colour the report's own SGR sequences (ESC [ … m) are the only escapes.
            let plain = |s: &str| {
                let mut t = String::new();
                let mut rest = s;
                while let Some(i) = rest.find("\u{1b}[") {
                    t.push_str(&rest[..i]);
                    let tail = &rest[i + 2..];
                    let end = tail.find('m').map_or(tail.len(), |e| e + 1);
                    prop_assert!(tail[..end.saturating_sub(1)].bytes().all(|b| b.is_ascii_digit() || b == b';'));
                    rest = &tail[end..];
                }
                t.push_str(rest);
                Ok(t)
            };
            if args[0] == "check" {
                assert_safe(&plain(&stdout)?, &format!("{args:?} stdout"));
            }
            assert_safe(&plain(&stderr)?, &format!("{args:?} stderr"));
        }
        let out = bin().current_dir(dir.path())
            .args(["check", "--no-config", "--format", "json"]).arg(&name).output().unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let diags = report["diagnostics"].as_array().unwrap();
        prop_assert!(diags.iter().all(|d| d["file"] == name.as_str()), "{report}");
        prop_assert!(
            diags.iter().any(|d| d["message"].as_str().unwrap().contains(&value)),
            "the exact value in a message: {report}"
        );
    }

    /// A value far over the bound is shown cut, with its length, in every human place it
    /// appears; JSON has it whole.
    #[test]
    fn a_huge_value_is_cut_with_its_length_named(n in 5_000usize..400_000, c in prop::sample::select(vec!['a', 'é', '中'])) {
        let tag: String = std::iter::repeat_n(c, n).collect();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v.yaml");
        std::fs::write(&p, format!("cgpu:\n  tag: {tag}\n  image: {tag}\n")).unwrap();
        let out = bin().args(["check", "--no-config", "--color", "never"]).arg(&p).output().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        prop_assert!(stdout.len() < 20_000, "{} bytes of report for a value of {n}", stdout.len());
        prop_assert!(stdout.contains(&format!("({n} characters)")), "{stdout}");
        let out = bin().args(["check", "--no-config", "--format", "json"]).arg(&p).output().unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        prop_assert!(report["diagnostics"].as_array().unwrap().iter()
            .any(|d| d["message"].as_str().unwrap().contains(&tag)));
    }
}

/// `fix -` writes the fixed file to stdout and nothing else (`fix - <in >out`); the report goes
/// to stderr, as with `--stdout`.
#[test]
fn fix_from_stdin_writes_only_the_file_to_stdout() {
    let input = "cgpu:\n  enabled: \"true\"\n  policy: \"5\"\n  tag: latest\n";
    let run = |args: &[&str]| {
        let out = bin().args(args).write_stdin(input).output().unwrap();
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (dash, dash_err) = run(&["fix", "--no-config", "-"]);
    let (stdout, _) = run(&["fix", "--no-config", "--stdout", "-"]);
    assert_eq!(
        dash, stdout,
        "`fix -` and `fix --stdout -` write the same file"
    );
    assert_ne!(dash, input, "something was fixed");
    assert!(dash.starts_with("cgpu:\n"), "{dash}");
    assert!(!dash.contains("checked:"), "{dash}");
    assert!(dash_err.contains("tag-invalid"), "{dash_err}");
    assert!(dash_err.contains("1 file checked: 1 error"), "{dash_err}");
}

/// A path that is not there is an io-error with help about the path, placed at no line, and
/// not a file checked.
#[test]
fn a_missing_path_is_an_io_error_not_a_file_checked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ok.yaml"), "cgpu:\n  policy: 5\n").unwrap();
    for args in [
        vec![
            "check",
            "--no-config",
            "--color",
            "never",
            "ok.yaml",
            "missing.yaml",
        ],
        vec!["check", "--no-config", "--stack", "ok.yaml", "missing.yaml"],
        vec![
            "fix",
            "--no-config",
            "--color",
            "never",
            "ok.yaml",
            "missing.yaml",
        ],
    ] {
        let out = bin().current_dir(dir.path()).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(
            stdout.lines().any(|l| l == "missing.yaml: error[io-error]"),
            "{stdout}"
        );
        assert!(!stdout.contains("missing.yaml:1:1"), "{stdout}");
        assert!(!stdout.contains("max-file-size"), "{stdout}");
        assert!(
            stdout.contains("no file or directory has this name"),
            "{stdout}"
        );
        assert!(stdout.contains("1 file checked: 1 error"), "{stdout}");
    }
}

/// The stderr line of a command that stops on a path (`values`, `check`) shows the path escaped.
#[test]
fn an_error_line_naming_a_hostile_path_is_escaped() {
    let name = "x\u{202e}\u{1b}]0;t\u{7}\n::warning file=x::y.yaml";
    for cmd in ["values", "check", "fix"] {
        let out = bin().args([cmd, "--no-config", name]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_safe(&stderr, cmd);
        assert!(
            stderr.contains("x\\u{202e}\\x1b]0;t\\x07\\n::warning"),
            "{cmd}: {stderr}"
        );
        if cmd != "values" {
            assert_safe(&String::from_utf8(out.stdout).unwrap(), cmd);
        }
    }
}

/// Two equal words in a row ("the the", "image image"), outside backticks (a value may repeat
/// a word).
fn doubled_word(text: &str) -> Option<String> {
    // A value between backticks stands for one word that repeats nothing.
    let prose: String = text
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("value{i}")
            } else {
                part.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ");
    let words: Vec<&str> = prose
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .find(|w| w[0].eq_ignore_ascii_case(w[1]) && w[0].chars().any(char::is_alphabetic))
        .map(|w| format!("{} {}", w[0], w[1]))
}

#[test]
fn the_catalogue_has_no_doubled_words() {
    for r in cgpu_lint::catalogue::RULES {
        let mut texts = vec![r.summary, r.help, r.explanation];
        if let Some(f) = &r.fix {
            texts.extend([f.what, f.why]);
        }
        for t in texts {
            assert_eq!(doubled_word(t), None, "{}: {t}", r.name);
        }
    }
}

/// The messages of every fixture, in every rule they raise, read without doubled words, and
/// the summary line's nouns agree with their counts.
#[test]
fn messages_and_summary_lines_read_as_sentences() {
    let fixtures = common::fixtures();
    let out = bin()
        .current_dir(&fixtures)
        .args(["check", "--no-config", "--format", "json", "."])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let diags = report["diagnostics"].as_array().unwrap();
    assert!(diags.len() > 50, "{}", diags.len());
    for d in diags {
        for key in ["message", "help"] {
            let t = d[key].as_str().unwrap();
            assert_eq!(doubled_word(t), None, "{}: {t}", d["rule"]);
        }
    }
    // Summary lines: a count of one takes the singular, any other the plural.
    let noun =
        regex::Regex::new(r"\b(\d+) (file|error|warning|info|document|installer DaemonSet)(s?)\b")
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("one.yaml"),
        "cgpu:\n  tag: latest\n  policy: 5\n",
    )
    .unwrap();
    let ds =
        std::fs::read_to_string(fixtures.join("daemonset-cgpu-installer-minimal.yaml")).unwrap();
    let mut lines = Vec::new();
    for (args, stdin) in [
        (vec!["check", "--no-config", "one.yaml"], None),
        (vec!["check", "--no-config", "one.yaml", "one.yaml"], None),
        (
            vec!["check", "--no-config", "--statistics", "one.yaml"],
            None,
        ),
        (vec!["post-render", "--no-config"], Some(ds.clone())),
        (
            vec!["post-render", "--no-config"],
            Some(format!("{ds}\n---\n{ds}")),
        ),
    ] {
        let mut cmd = bin();
        cmd.current_dir(dir.path()).args(&args);
        if let Some(s) = stdin {
            cmd.write_stdin(s);
        }
        let out = cmd.output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        lines.extend(
            text.lines()
                .filter(|l| l.contains(" checked: ") || l.starts_with("cgpu-lint post-render: "))
                .map(str::to_string),
        );
    }
    assert!(lines.len() >= 5, "{lines:?}");
    let mut seen = 0;
    for l in &lines {
        for c in noun.captures_iter(l) {
            seen += 1;
            let one = &c[1] == "1";
            assert_eq!(one, c[3].is_empty(), "{l}");
        }
    }
    assert!(seen >= 20, "{lines:?}");
}
