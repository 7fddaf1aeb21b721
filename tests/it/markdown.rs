//! Markdown: the fenced ```yaml/```yml blocks of README.md and docs/*.md that mention
//! cGPU are checked through the pipeline with positions in the Markdown file, `fix` edits them in
//! place, `<!-- cgpu-lint: ignore -->` opts a block out, and directory walks read Markdown only
//! with `--include-markdown` (or `include-markdown = true`). The layout is a copy of a small
//! platform repository built in a temporary folder; every expected position is computed here from
//! the bytes (the token's offset in the Markdown text → line and column in characters).

use std::process::Output;

use crate::common::{printed as text, run_in as run};

const README: &str = "# Platform GPU sharing\n\nCopy this into your values file:\n\n```yaml\n# ack-ai-installer values for the GPU-sharing node pool\ncgpu:\n  enabled: \"false\"     # a quoted string: the chart's `if` reads it as true\n  tag: v1.5.10-2b9e7d4-aliyun\n  policy: 9\n```\n\nAnd run `helm upgrade`. Shell, not checked:\n\n```sh\ncgpu:\n  policy: 9\n```\n";

const RUNBOOK: &str = "# Runbook: change the cGPU policy\r\n\r\n1. Write the new values (CRLF file, block in a list item):\r\n\r\n   ```yml title=\"values.yaml\"\r\n   cgpu:\r\n     enabled: true\r\n     tag: v1.5.10-2b9e7d4-aliyun\r\n     policy: \"1\"\r\n   ```\r\n\r\n2. What it was before (kept for history, not checked):\r\n\r\n   <!-- cgpu-lint: ignore -->\r\n   ```yaml\r\n   cgpu:\r\n     policy: 7\r\n   ```\r\n\r\n3. The installer as it runs:\r\n\r\n~~~yaml\r\napiVersion: apps/v1\r\nkind: DaemonSet\r\nmetadata:\r\n  name: cgpu-installer\r\n  namespace: kube-system\r\nspec:\r\n  template:\r\n    spec:\r\n      nodeSelector:\r\n        ack.node.gpu.schedule: cgpu\r\n      containers:\r\n      - name: cgpu-installer\r\n        image: registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun\r\n        env:\r\n        - name: POLICY\r\n          value: 3\r\n~~~\r\n\r\nA Deployment, not about cGPU:\r\n\r\n```yaml\r\napiVersion: apps/v1\r\nkind: Deployment\r\n```\r\n\r\nA broken one:\r\n\r\n```yaml\r\ncgpu:\r\n  policy: [1\r\n```\r\n";

const VALUES: &str = "cgpu:\n  enabled: true\n  tag: v1.5.10-2b9e7d4-aliyun\n  policy: 8\n";

const HELMRELEASE: &str = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: gpu\n  namespace: kube-system\nspec:\n  chart:\n    spec:\n      chart: ack-ai-installer\n      sourceRef:\n        kind: HelmRepository\n        name: aliyun\n  values:\n    cgpu:\n      policy: 7\n";

/// The repository: README.md, docs/runbook.md, docs/notes.md (nothing to check), a values file
/// and a HelmRelease.
fn repo() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::create_dir_all(d.join("docs")).unwrap();
    std::fs::create_dir_all(d.join("clusters/prod")).unwrap();
    std::fs::write(d.join("README.md"), README).unwrap();
    std::fs::write(d.join("docs/runbook.md"), RUNBOOK).unwrap();
    std::fs::write(
        d.join("docs/notes.md"),
        "# Notes\n\n```yaml\nkind: ConfigMap\n```\n",
    )
    .unwrap();
    std::fs::write(d.join("clusters/prod/values.yaml"), VALUES).unwrap();
    std::fs::write(d.join("clusters/prod/helmrelease.yaml"), HELMRELEASE).unwrap();
    tmp
}

/// Line and column (1-based, characters) of the `nth` occurrence of `needle` in `text`, at
/// `skip` bytes into it: computed from the bytes, not by cgpu-lint.
fn position(text: &str, needle: &str, nth: usize, skip: usize) -> (u64, u64) {
    let at = text
        .match_indices(needle)
        .nth(nth)
        .unwrap_or_else(|| panic!("{needle:?}"))
        .0
        + skip;
    let line = text[..at].matches('\n').count() + 1;
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    (line as u64, (text[start..at].chars().count() + 1) as u64)
}

/// (file, rule, line, column) of every finding of a JSON report.
fn findings(o: &Output) -> Vec<(String, String, u64, u64)> {
    let json: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)));
    json["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["file"].as_str().unwrap().to_string(),
                d["rule"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap(),
                d["column"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn has(found: &[(String, String, u64, u64)], file: &str, rule: &str, at: (u64, u64)) -> bool {
    found
        .iter()
        .any(|f| f.0 == file && f.1 == rule && (f.2, f.3) == at)
}

#[test]
fn blocks_are_checked_with_positions_in_the_markdown_file() {
    let tmp = repo();
    let o = run(
        tmp.path(),
        &[
            "check",
            "--no-config",
            "--include-markdown",
            "--format",
            "json",
            "README.md",
            "docs/",
        ],
    );
    let found = findings(&o);
    let expect = [
        (
            "README.md",
            "string-boolean",
            position(README, "\"false\"", 0, 0),
        ),
        (
            "README.md",
            "policy-out-of-range",
            position(README, "policy: 9", 0, 8),
        ),
        (
            "docs/runbook.md",
            "policy-quoted",
            position(RUNBOOK, "\"1\"", 0, 0),
        ),
        (
            "docs/runbook.md",
            "installer-policy-unquoted",
            position(RUNBOOK, "value: 3", 0, 7),
        ),
        (
            "docs/runbook.md",
            "yaml-syntax",
            // go-yaml stops at the end of the flow sequence that never closes: the fence line.
            position(RUNBOOK, "  policy: [1\r\n```", 0, 14),
        ),
    ];
    for (file, rule, at) in expect {
        assert!(
            has(&found, file, rule, at),
            "{file} {rule} at {at:?} not in {found:#?}"
        );
    }
    // Not checked: the ```sh block, the opted-out block (policy 7), the Deployment.
    let opted_out = position(RUNBOOK, "policy: 7", 0, 8);
    assert!(
        !found
            .iter()
            .any(|f| f.0 == "README.md" && f.2 > position(README, "```sh", 0, 0).0),
        "{found:#?}"
    );
    assert!(
        !found
            .iter()
            .any(|f| f.0 == "docs/runbook.md" && (f.2, f.3) == opted_out),
        "{found:#?}"
    );
    // docs/notes.md has nothing to check: an info, as for a YAML file without cgpu.
    assert!(
        found
            .iter()
            .any(|f| f.0 == "docs/notes.md" && f.1 == "cgpu-missing" && (f.2, f.3) == (1, 1)),
        "{found:#?}"
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

#[test]
fn a_markdown_file_with_nothing_to_check_is_treated_as_a_yaml_file_without_cgpu() {
    let tmp = repo();
    let md = run(tmp.path(), &["check", "--no-config", "docs/notes.md"]);
    std::fs::write(tmp.path().join("cm.yaml"), "kind: ConfigMap\n").unwrap();
    let yaml = run(tmp.path(), &["check", "--no-config", "cm.yaml"]);
    assert_eq!(md.status.code(), yaml.status.code());
    assert_eq!(md.status.code(), Some(0));
    assert!(text(&md).contains("info[cgpu-missing]"), "{}", text(&md));
    assert!(text(&md).ends_with("1 file checked: 0 errors, 0 warnings, 1 info\n"));
    // --require-cgpu makes both errors.
    let md = run(
        tmp.path(),
        &["check", "--no-config", "--require-cgpu", "docs/notes.md"],
    );
    let yaml = run(
        tmp.path(),
        &["check", "--no-config", "--require-cgpu", "cm.yaml"],
    );
    assert_eq!(md.status.code(), Some(1));
    assert_eq!(yaml.status.code(), Some(1));
}

#[test]
fn walks_read_markdown_only_when_asked() {
    let tmp = repo();
    let files = |args: &[&str]| -> Vec<String> {
        let mut a = vec!["check", "--format", "json"];
        a.extend_from_slice(args);
        let mut f: Vec<String> = findings(&run(tmp.path(), &a))
            .into_iter()
            .map(|f| f.0)
            .collect();
        f.sort();
        f.dedup();
        f
    };
    let without = files(&["--no-config", "."]);
    assert!(!without.iter().any(|f| f.ends_with(".md")), "{without:?}");
    assert!(
        without.iter().any(|f| f.ends_with("values.yaml")),
        "{without:?}"
    );
    let with = files(&["--no-config", "--include-markdown", "."]);
    assert!(with.contains(&"./README.md".to_string()), "{with:?}");
    assert!(with.contains(&"./docs/runbook.md".to_string()), "{with:?}");
    // The config file's key does the same.
    std::fs::write(
        tmp.path().join(".cgpu-lint.toml"),
        "include-markdown = true\n",
    )
    .unwrap();
    let by_config = files(&["."]);
    assert_eq!(by_config, with);
    std::fs::write(
        tmp.path().join(".cgpu-lint.toml"),
        "include-markdown = false\n",
    )
    .unwrap();
    assert_eq!(files(&["."]), without);
    // A named Markdown file is always read.
    assert_eq!(files(&["--no-config", "README.md"]), ["README.md"]);
    // A folder of Markdown alone holds nothing to check without the flag, and says so.
    let o = run(tmp.path(), &["check", "--no-config", "docs"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("docs: the directory holds no *.yaml or *.yml file to check, only Markdown (a typo in the path? --include-markdown"),
        "{}",
        text(&o)
    );
}

/// The Markdown file's lines outside its fenced blocks (fence lines included), found here by a
/// scanner of this test's own, and the lines inside them.
fn outside_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        match &fence {
            None => {
                if t.starts_with("```") || t.starts_with("~~~") {
                    fence = Some(t[..3].to_string());
                }
                out.push(line.to_string());
            }
            Some(f) => {
                if t.starts_with(f.as_str()) {
                    fence = None;
                    out.push(line.to_string());
                }
            }
        }
    }
    out
}

#[test]
fn fix_changes_the_blocks_only_and_keeps_every_other_byte() {
    let tmp = repo();
    let o = run(
        tmp.path(),
        &["fix", "--no-config", "README.md", "docs/runbook.md"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let runbook = std::fs::read_to_string(tmp.path().join("docs/runbook.md")).unwrap();
    assert_ne!(runbook, RUNBOOK);
    assert_eq!(
        runbook,
        RUNBOOK
            .replace("policy: \"1\"", "policy: 1")
            .replace("value: 3", "value: \"3\"")
    );
    assert_eq!(outside_blocks(&runbook), outside_blocks(RUNBOOK));
    let readme = std::fs::read_to_string(tmp.path().join("README.md")).unwrap();
    assert_eq!(outside_blocks(&readme), outside_blocks(README));
    // The block checked again: the fixed finding is gone.
    let o = run(
        tmp.path(),
        &[
            "check",
            "--no-config",
            "--format",
            "json",
            "docs/runbook.md",
        ],
    );
    assert!(!findings(&o).iter().any(|f| f.1 == "policy-quoted"));
}

#[test]
fn add_ignore_writes_inside_the_blocks_and_the_check_is_clean_after() {
    let tmp = repo();
    let o = run(
        tmp.path(),
        &[
            "check",
            "--no-config",
            "--add-ignore=copied from the old runbook",
            "README.md",
            "docs/runbook.md",
        ],
    );
    let out = text(&o);
    // The broken block's syntax error cannot be ignored.
    let (l, c) = position(RUNBOOK, "  policy: [1\r\n```", 0, 14);
    assert!(
        out.contains(&format!(
            "docs/runbook.md:{l}:{c}: yaml-syntax: not ignorable"
        )),
        "{out}"
    );
    assert_eq!(o.status.code(), Some(1), "{out}");
    let readme = std::fs::read_to_string(tmp.path().join("README.md")).unwrap();
    assert_eq!(outside_blocks(&readme), outside_blocks(README));
    assert!(readme.contains(
        "  policy: 9 # cgpu-lint: ignore[policy-out-of-range] -- copied from the old runbook\n"
    ));
    let runbook = std::fs::read_to_string(tmp.path().join("docs/runbook.md")).unwrap();
    assert_eq!(outside_blocks(&runbook), outside_blocks(RUNBOOK));
    let o = run(
        tmp.path(),
        &[
            "check",
            "--no-config",
            "--format",
            "json",
            "README.md",
            "docs/runbook.md",
        ],
    );
    let left: Vec<_> = findings(&o)
        .into_iter()
        .filter(|f| !matches!(f.1.as_str(), "policy-quoted" | "priority-class"))
        .collect();
    assert_eq!(left.len(), 1, "{left:#?}");
    assert_eq!(left[0].1, "yaml-syntax");
}

#[test]
fn an_ignore_comment_inside_a_block_is_read_and_reported_unused_there() {
    let tmp = repo();
    let text_md = "```yaml\ncgpu:\n  # cgpu-lint: ignore[policy-out-of-range]\n  policy: 9\n  tag: v1.5.10-2b9e7d4-aliyun # cgpu-lint: ignore[tag-invalid]\n```\n";
    std::fs::write(tmp.path().join("x.md"), text_md).unwrap();
    let o = run(
        tmp.path(),
        &["check", "--no-config", "--format", "json", "x.md"],
    );
    let found = findings(&o);
    assert!(
        !found.iter().any(|f| f.1 == "policy-out-of-range"),
        "{found:#?}"
    );
    let unused = position(text_md, "tag-invalid]", 0, 0);
    assert!(has(&found, "x.md", "unused-ignore", unused), "{found:#?}");
}

/// Every prefix of the runbook (a fence cut anywhere, a block left open, a CRLF split) through
/// the pipeline and `--add-ignore`'s engine: no panic, every finding inside the text, and the
/// text `add_ignores` returns keeps every byte outside the blocks.
#[test]
fn every_prefix_of_a_markdown_file_is_read_without_panic() {
    use cgpu_lint::add_ignore::{Options, add_ignores, wanted};
    use cgpu_lint::lint::{Settings, lint_file};
    use cgpu_lint::yaml::Source;
    let settings = Settings::default();
    let mut cut = 0;
    for (at, _) in RUNBOOK.char_indices().chain([(RUNBOOK.len(), ' ')]) {
        let text = &RUNBOOK[..at];
        let src = Source::new("docs/runbook.md", text.to_string());
        let found = lint_file(&src, &settings);
        for d in &found {
            assert!(d.span.end <= text.len(), "{at}: {d:?}");
        }
        let targets: Vec<_> = found.iter().filter(|d| wanted(d)).collect();
        if let Ok(a) = add_ignores(&src, &targets, &settings, &Options::default()) {
            assert_eq!(outside_blocks(&a.text), outside_blocks(text), "{at}");
            cut += 1;
        }
    }
    assert!(cut > RUNBOOK.len() / 2, "{cut}");
}

/// A finding's document counts the YAML documents of the blocks checked before it, so the
/// findings of two blocks (and their baseline entries) are told apart.
#[test]
fn documents_are_counted_across_the_blocks() {
    let tmp = repo();
    let o = run(
        tmp.path(),
        &[
            "check",
            "--no-config",
            "--format",
            "json",
            "docs/runbook.md",
        ],
    );
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let doc = |rule: &str| {
        json["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["rule"] == rule)
            .unwrap_or_else(|| panic!("{rule}: {json}"))["document"]
            .as_u64()
            .unwrap()
    };
    // The values block, the DaemonSet (the opted-out block and the Deployment are not
    // checked), the broken block.
    assert_eq!(doc("policy-quoted"), 1);
    assert_eq!(doc("installer-policy-unquoted"), 2);
    assert_eq!(doc("yaml-syntax"), 3);
}
