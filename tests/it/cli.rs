//! The command line: catalogue commands, exit statuses, bad input.

use crate::common::*;

#[test]
fn readme_rule_table_matches_the_catalogue() {
    let out = bin()
        .args(["rules", "--format", "markdown"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).unwrap();
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/rules.md")).unwrap();
    let start = readme.find("<!-- rules-table:start").expect("start marker");
    let start = start + readme[start..].find("-->\n").unwrap() + 4;
    let end = readme.find("<!-- rules-table:end -->").expect("end marker");
    assert_eq!(
        &readme[start..end],
        table,
        "docs/rules.md rule table is stale: paste `cgpu-lint rules --format markdown` between the markers"
    );
}

#[test]
fn every_rule_has_an_explanation() {
    let out = bin().args(["rules", "--format", "json"]).output().unwrap();
    let rules: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(rules.len() >= 40);
    for r in rules {
        let name = r["name"].as_str().unwrap();
        let out = bin().args(["explain", name]).output().unwrap();
        assert!(out.status.success(), "explain {name}");
        assert!(String::from_utf8_lossy(&out.stdout).starts_with(name));
    }
}

#[test]
fn explain_unknown_rule_is_exit_2() {
    let out = bin().args(["explain", "no-such-rule"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown rule"));
}

/// `--pods` and `--all-contexts` read a live cluster: without `--cluster` (with or without
/// files) they are a usage error, not ignored; `checklist` has no `--pods`.
#[test]
fn cluster_only_flags_without_cluster_are_exit_2() {
    let file = fixture("pods-per-gpu.yaml");
    for flag in ["--pods", "--all-contexts"] {
        for args in [vec!["check", flag, &file], vec!["check", flag]] {
            let out = bin().args(&args).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{args:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("--cluster"), "{args:?}: {err}");
            assert!(out.stdout.is_empty(), "{args:?}");
        }
    }
    let out = bin()
        .args(["checklist", "--cluster", "--pods", "--policy", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unexpected argument '--pods'"));
}

#[test]
fn select_with_an_unknown_rule_is_exit_2() {
    let out = bin()
        .args([
            "check",
            "--select",
            "polcy-out-of-range",
            &fixture("values-valid-full-default.yaml"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn schema_is_json_schema_2020_12() {
    let out = bin().arg("schema").output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(v["properties"]["cgpu"]["additionalProperties"], false);
}

#[test]
fn unreadable_path_is_exit_2_with_the_path() {
    let out = bin()
        .args(["check", "/nonexistent/values.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/values.yaml"));
}

#[test]
fn syntax_error_is_a_finding_with_a_position() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.yaml");
    std::fs::write(&p, "cgpu:\n  policy: [1, 2\n  tag: x\n").unwrap();
    let r = check_json(&[p.to_str().unwrap()]);
    expect_rules(&r, &[("yaml-syntax", 1)]);
    assert_eq!(r.code, 1);
    assert!(r.diagnostics()[0]["line"].as_u64().unwrap() >= 2);
}

#[test]
fn invalid_utf8_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.yaml");
    std::fs::write(&p, b"cgpu:\n  policy: 1\n  tag: v1.5.\xff\n").unwrap();
    let r = check_json(&[p.to_str().unwrap()]);
    expect_rules(&r, &[("yaml-syntax", 1)]);
    assert_eq!(r.diagnostics()[0]["line"], 3);
    assert!(
        r.diagnostics()[0]["message"]
            .as_str()
            .unwrap()
            .contains("UTF-8")
    );
}

#[test]
fn billion_laughs_is_refused_quickly() {
    let mut s = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let prev = format!("*a{}", i - 1);
        s.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
    }
    s.push_str("cgpu:\n  policy: 1\n  x: *a9\n");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("lol.yaml");
    std::fs::write(&p, s).unwrap();
    let r = check_json(&[p.to_str().unwrap()]);
    expect_rules(&r, &[("yaml-syntax", 1)]);
    assert!(
        r.diagnostics()[0]["message"]
            .as_str()
            .unwrap()
            .contains("alias expansion")
    );
}

#[test]
fn deep_nesting_is_a_finding_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("deep.yaml");
    std::fs::write(&p, "[".repeat(100_000)).unwrap();
    let r = check_json(&[p.to_str().unwrap()]);
    expect_rules(&r, &[("yaml-syntax", 1)]);
    assert_eq!(r.code, 1);
}

#[test]
fn bom_and_crlf_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("crlf.yaml");
    std::fs::write(&p, "\u{feff}cgpu:\r\n  policy: 9\r\n").unwrap();
    let r = check_json(&[p.to_str().unwrap()]);
    expect_rules(&r, &[("policy-out-of-range", 1)]);
    let d = &r.diagnostics()[0];
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(2), Some(11))
    );
}

#[test]
fn directory_walk_takes_yaml_files_sorted() {
    let r = check_json(&[fixtures().to_str().unwrap()]);
    let files: Vec<&str> = r
        .diagnostics()
        .iter()
        .map(|d| d["file"].as_str().unwrap())
        .collect();
    let mut sorted = files.clone();
    sorted.sort();
    assert_eq!(files, sorted);
    assert!(r.json["summary"]["files"].as_u64().unwrap() >= 27);
}

#[test]
fn human_output_has_file_line_column_and_caret() {
    let out = bin()
        .args([
            "check",
            "--color",
            "never",
            &fixture("values-invalid-policy-out-of-range.yaml"),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("values-invalid-policy-out-of-range.yaml:7:11: error[policy-out-of-range]"),
        "{text}"
    );
    assert!(text.contains("policy: 6"), "{text}");
    assert!(text.contains('┬') || text.contains('^'), "{text}");
    assert!(text.contains("help:"), "{text}");
    assert!(
        !text.contains("\u{1b}["),
        "no colour when not a terminal: {text}"
    );
    assert!(
        text.contains("1 file checked: 1 error, 1 warning, 0 infos"),
        "{text}"
    );
}

#[test]
fn completions_and_man_page() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = bin().args(["completions", shell]).output().unwrap();
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).contains("cgpu-lint"));
    }
    let out = bin().arg("man").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(".TH"));
}

#[test]
fn stack_names_the_file_that_set_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.yaml");
    let b = dir.path().join("b.yaml");
    std::fs::write(&a, "cgpu:\n  policy: 2\n  tag: v1.5.20-3c9d1e7-aliyun\n").unwrap();
    std::fs::write(&b, "# prod\ncgpu:\n  policy: 7\n  tag: null\n").unwrap();
    let r = check_json(&["--stack", a.to_str().unwrap(), b.to_str().unwrap()]);
    // b's policy 7 wins; b's null deletes a's tag, so no tag finding comes from the defaults either.
    expect_rules(&r, &[("policy-out-of-range", 1)]);
    let d = &r.diagnostics()[0];
    assert!(d["file"].as_str().unwrap().ends_with("b.yaml"));
    assert_eq!(d["line"], 3);
    // Without an override the default tag's deadlock is reported against the chart defaults.
    let r = check_json(&["--stack", a.to_str().unwrap()]);
    let r2 = check_json(&["--stack", b.to_str().unwrap()]);
    assert!(r.find("tag-known-deadlock").is_empty());
    assert!(r2.find("tag-known-deadlock").is_empty());
    let c = dir.path().join("c.yaml");
    std::fs::write(&c, "cgpu:\n  policy: 3\n").unwrap();
    let r3 = check_json(&["--stack", c.to_str().unwrap()]);
    assert_eq!(r3.find("tag-known-deadlock")[0]["file"], "<chart defaults>");
}

/// A GitOps repository holds charts too: their templates are Go templates, not YAML, and must
/// not turn `check .` red.
#[test]
fn chart_templates_are_skipped_by_the_walk_and_named_as_templates_when_given() {
    let charts = concat!(env!("CARGO_MANIFEST_DIR"), "/charts-fixtures");
    let r = check_json(&[charts]);
    assert!(r.find("yaml-syntax").is_empty(), "{:#}", r.json);
    assert!(
        r.diagnostics()
            .iter()
            .all(|d| !d["file"].as_str().unwrap().contains("/templates/"))
    );
    let template = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/charts-fixtures/ack-ai-installer/templates/cgpu/daemonset.yaml"
    );
    let r = check_json(&["--require-cgpu", template]);
    expect_rules(&r, &[("cgpu-missing", 1)]);
    assert_eq!(r.diagnostics()[0]["severity"], "info");
    assert!(
        r.diagnostics()[0]["message"]
            .as_str()
            .unwrap()
            .contains("Helm chart template")
    );
    assert_eq!(r.code, 0);
}

#[test]
fn exit_2_carries_the_reason_into_every_format() {
    // A missing file and a file over --max-file-size: exit 2, and each format names the file
    // and the reason (an `io-error` finding), never a clean empty report.
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big-values.yaml");
    std::fs::write(&big, "cgpu:\n  policy: 1\n").unwrap();
    let cases: [(&str, &[&str]); 2] = [
        ("missing-values.yaml", &[]),
        ("big-values.yaml", &["--max-file-size", "4"]),
    ];
    for (file, extra) in cases {
        for format in ["human", "json", "sarif", "github", "junit"] {
            let out = bin()
                .current_dir(dir.path())
                .args(["check", "--format", format, file])
                .args(extra)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{file} {format}");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.contains("io-error"), "{file} {format}: {stdout}");
            assert!(stdout.contains(file), "{file} {format}: {stdout}");
            assert!(
                String::from_utf8_lossy(&out.stderr).contains(file),
                "{file} {format}: the reason is on stderr too"
            );
            match format {
                "json" => {
                    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
                    assert_eq!(v["summary"]["errors"], 1);
                    assert_eq!(v["diagnostics"][0]["rule"], "io-error");
                    assert_eq!(v["diagnostics"][0]["file"], file);
                }
                "sarif" => {
                    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
                    let run = &v["runs"][0];
                    assert_eq!(run["invocations"][0]["executionSuccessful"], false);
                    assert_eq!(run["results"][0]["ruleId"], "io-error");
                    assert_eq!(run["results"][0]["level"], "error");
                }
                "junit" => assert!(stdout.contains("<failure"), "{stdout}"),
                "github" => assert!(stdout.starts_with("::error file="), "{stdout}"),
                _ => assert!(stdout.contains("1 error"), "{stdout}"),
            }
        }
    }
    // The same for fix, and an io-error cannot be hidden by --ignore.
    let out = bin()
        .current_dir(dir.path())
        .args([
            "fix",
            "--format",
            "json",
            "--ignore",
            "io-error",
            "missing-values.yaml",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["diagnostics"][0]["rule"], "io-error");
}

#[test]
fn explain_names_a_public_source_for_every_rule() {
    let out = bin().args(["rules", "--format", "json"]).output().unwrap();
    let rules: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    for r in rules {
        let name = r["name"].as_str().unwrap();
        let sources = r["sources"].as_array().unwrap();
        assert!(
            sources
                .iter()
                .any(|s| s["url"].as_str().is_some_and(|u| u.starts_with("https://"))),
            "{name} has no source with an address"
        );
        let text =
            String::from_utf8(bin().args(["explain", name]).output().unwrap().stdout).unwrap();
        let (_, listed) = text.split_once("\nSources:\n").expect("a Sources section");
        for s in sources {
            assert!(listed.contains(s["title"].as_str().unwrap()), "{name}");
            if let Some(u) = s["url"].as_str() {
                assert!(listed.contains(u), "{name}: {u}");
            }
        }
    }
}

#[test]
fn man_out_writes_one_page_per_subcommand_with_its_flags() {
    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("man1"); // does not exist yet: created
    let out = bin().args(["man", "--out"]).arg(&man).output().unwrap();
    assert!(out.status.success());
    let main = std::fs::read_to_string(man.join("cgpu-lint.1")).unwrap();
    // Every subcommand the command line declares, including ones added later.
    let subs: Vec<String> = {
        use clap::CommandFactory;
        cgpu_lint::cli::Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect()
    };
    assert!(subs.len() >= 11, "{subs:?}");
    for sub in &subs {
        let page = man.join(format!("cgpu-lint-{sub}.1"));
        let text = std::fs::read_to_string(&page).unwrap_or_else(|_| panic!("{page:?}"));
        // The main page refers to it by that name, and the page has the subcommand's flags.
        assert!(main.contains(&format!("cgpu\\-lint\\-{}(1)", sub.replace('-', "\\-"))));
        assert!(text.contains(".SH OPTIONS"), "{sub}");
    }
    let check = std::fs::read_to_string(man.join("cgpu-lint-check.1")).unwrap();
    for flag in [
        "\\-\\-format",
        "\\-\\-deny\\-warnings",
        "\\-\\-stack",
        "\\-\\-add\\-ignore",
        "\\-\\-until",
        "\\-\\-include\\-markdown",
    ] {
        assert!(check.contains(flag), "check page lacks {flag}");
    }
    assert!(man.join("cgpu-lint-generate-patch.1").is_file());
}

#[test]
fn messages_read_well_for_null_and_empty_values() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("values.yaml"),
        "cgpu:\n  nodeSelector:\n    gpu-pool: ~\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("ds.yaml"),
        [
            "apiVersion: apps/v1",
            "kind: DaemonSet",
            "metadata:",
            "  name: cgpu-installer",
            "  namespace: kube-system",
            "spec:",
            "  template:",
            "    spec:",
            "      containers:",
            "      - name: cgpu-installer",
            "        image: registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun",
            "        env:",
            "        - name: POLICY",
            "          value:",
            "",
        ]
        .join("\n"),
    )
    .unwrap();
    let out = bin()
        .current_dir(dir.path())
        .args(["check", "--format", "json", "values.yaml", "ds.yaml"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let messages: Vec<&str> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert!(
        messages.contains(
            &"label value `~` is read by Helm as empty (null), not a string: what the installer then selects depends on how the chart renders it (quoted: the label it prints; unquoted: a value the API server refuses)"
        ),
        "{messages:?}"
    );
    let policy: Vec<_> = messages.iter().filter(|m| m.contains("POLICY")).collect();
    assert_eq!(
        policy.len(),
        1,
        "one finding for an empty POLICY: {policy:?}"
    );
    assert!(policy[0].starts_with("POLICY has no value"), "{policy:?}");
    for m in &messages {
        assert!(!m.contains("  "), "double space in {m:?}");
        assert!(!m.contains("null null"), "{m:?}");
    }
}

#[test]
fn schema_id_names_no_invented_address() {
    let out = bin().arg("schema").output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.get("$id").is_none(), "{:?}", v.get("$id"));
}

#[test]
fn exit_status_table_rows_for_the_other_commands() {
    // README "Exit statuses": generate refuses a value with 1; a policy outside the range is
    // clap's bad argument, 2, as are an unknown rule, an unwritable man folder or --report file,
    // and a usage error; --help is 0.
    let code = |args: &[&str]| bin().args(args).output().unwrap().status.code();
    assert_eq!(code(&["generate", "--policy", "9"]), Some(2));
    assert_eq!(code(&["generate", "--tag", "v1.0.3"]), Some(1));
    assert_eq!(code(&["generate", "patch", "--policy", "9"]), Some(2));
    assert_eq!(
        code(&[
            "generate",
            "patch",
            "--policy",
            "2",
            "--tag",
            "v1.0.3",
            "--region",
            "cn-hangzhou"
        ]),
        Some(1)
    );
    assert_eq!(code(&["explain", "no-such-rule"]), Some(2));
    assert_eq!(code(&["man", "--out", "/proc/no-such-folder"]), Some(2));
    assert_eq!(code(&["check", "--no-such-flag"]), Some(2));
    assert_eq!(code(&["set", "policy=2"]), Some(2));
    assert_eq!(code(&["--help"]), Some(0));
    let out = bin()
        .args(["post-render", "--report", "/proc/no-such-folder/report.txt"])
        .write_stdin(std::fs::read(fixture("helm-template-rendered-stream.yaml")).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

// Docs/changing-values.md says what each promotable rule's fix changes in
// the render, in the catalogue's own words (`rules --format json`, `applicability_reason`).
#[test]
fn changing_values_fix_class_table_is_the_catalogue() {
    let out = bin().args(["rules", "--format", "json"]).output().unwrap();
    let rules: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut table = String::from(
        "| rule | class | what `fix` does | what the render does after it |\n|---|---|---|---|\n",
    );
    for r in &rules {
        let class = r["applicability"].as_str().unwrap_or("");
        if class == "unsafe" || class == "safe or unsafe" {
            table.push_str(&format!(
                "| `{}` | {class} | {} | {} |\n",
                r["name"].as_str().unwrap(),
                r["fix"].as_str().unwrap(),
                r["applicability_reason"].as_str().unwrap(),
            ));
        }
    }
    assert!(table.contains("`string-boolean`"), "{table}");
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/changing-values.md"
    ))
    .unwrap();
    let start = doc.find("<!-- fix-classes:start").expect("start marker");
    let start = start + doc[start..].find("-->\n").unwrap() + 4;
    let end = doc.find("<!-- fix-classes:end -->").expect("end marker");
    assert_eq!(
        &doc[start..end],
        table,
        "docs/changing-values.md fix table is stale"
    );
}

/// Doc comments on clap args are help text written out by hand, so a `--policy` help that names
/// the range ("policy 0-5") is held here to `cgpu::POLICIES`; and every `--policy` (generate's
/// and generate patch's as rollout's) takes clap's range from there too, so a policy outside it
/// is refused as a bad argument before any command runs.
#[test]
fn policy_help_names_the_policy_range() {
    use clap::{CommandFactory, Parser};
    let policies = cgpu_lint::cgpu::POLICIES;
    let range = format!("{}-{}", policies.start(), policies.end());
    let (low, high) = (i64::from(*policies.start()), i64::from(*policies.end()));
    let mut named = Vec::new();
    let mut ranged = Vec::new();
    // Subcommands add their args when built (some are deferred).
    let mut root = cgpu_lint::cli::Cli::command();
    root.build();
    let mut stack = vec![(Vec::<String>::new(), root)];
    while let Some((path, cmd)) = stack.pop() {
        for arg in cmd.get_arguments().filter(|a| a.get_id() == "policy") {
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            // Any "N-M" of digits in the help is a range, and the range is the policies'.
            let written: Vec<&str> = help
                .split(|c: char| !(c.is_ascii_digit() || c == '-'))
                .filter(|w| w.contains('-') && w.starts_with(|c: char| c.is_ascii_digit()))
                .collect();
            for w in &written {
                assert_eq!(*w, range, "`{} --policy`: {help}", cmd.get_name());
            }
            if !written.is_empty() {
                named.push(cmd.get_name().to_string());
            }
            // clap's own range check: the value refused (another argument missing is not it).
            let refused = |n: i64| {
                let argv = std::iter::once("cgpu-lint".to_string())
                    .chain(path.iter().cloned())
                    .chain(["--policy".into(), n.to_string()]);
                cgpu_lint::cli::Cli::try_parse_from(argv)
                    .err()
                    .is_some_and(|e| e.kind() == clap::error::ErrorKind::ValueValidation)
            };
            assert!(
                !refused(low) && !refused(high) && refused(high + 1),
                "`{} --policy` does not take clap's range from cgpu::POLICIES",
                path.join(" ")
            );
            ranged.push(cmd.get_name().to_string());
        }
        for sub in cmd.get_subcommands() {
            let mut p = path.clone();
            p.push(sub.get_name().to_string());
            stack.push((p, sub.clone()));
        }
    }
    for cmd in ["generate", "patch"] {
        assert!(
            named.iter().any(|c| c == cmd),
            "`{cmd} --policy` names no range"
        );
    }
    for cmd in ["generate", "patch", "rollout", "rollout-job", "checklist"] {
        assert!(
            ranged.iter().any(|c| c == cmd),
            "`{cmd} --policy` is not range-checked"
        );
    }
    assert!(
        named.len() >= 2,
        "no --policy help names the range: {named:?}"
    );
    // What a user sees: clap's refusal, exit 2, as for rollout's.
    for args in [
        &["generate", "--policy"][..],
        &["generate", "patch", "--policy"],
        &["rollout", "--cluster", "--policy"],
    ] {
        let past = (high + 1).to_string();
        let out = bin().args(args).arg(&past).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "error: invalid value '{past}' for '--policy <N>': {past} is not in {}..={}\n\nFor more information, try '--help'.\n",
                policies.start(),
                policies.end()
            ),
            "{args:?}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
