//! The documentation's examples are tests. Every ```` ```console ```` block of README.md,
//! CONTRIBUTING.md, docs/*.md and docs/dev/*.md is run, command by command, by bash in a fresh folder holding a copy of
//! `examples/`, the stand-in chart as `./ack-ai-installer` and `./helm-plugin`, with `HOME` a new
//! empty folder and `cgpu-lint` (this build) on `PATH`. What each command prints (stdout and
//! stderr together) must equal the lines under it, where a line `...` stands for any number of
//! lines and `[..]` within a line for any text; a command that exits non-zero must be followed by `$ echo $?` showing the status.
//! Illustrations that cannot run here (a live cluster, a CI runner) are ```` ```sh ```` blocks.
//!
//! An HTML comment on the line before a block changes its set-up:
//! - `<!-- readme-test: helm -->`: real Helm 3.18 as `helm` and Helm 4.2 as `helm4` on `PATH`
//!   (target/tools, from scripts/install-test-tools), side by side as a user would have them;
//!   `<!-- readme-test: helm4-only -->`: Helm 4 alone, as `helm`;
//! - `<!-- readme-test: pre-commit -->`: the folder is a git repository whose
//!   `.pre-commit-config.yaml` is the block marked `<!-- readme-test: pre-commit-config -->`
//!   (in docs/ci.md; the one such block of any of these files), with `repo:` pointed at a
//!   snapshot of this checkout and `rev:` at its commit; real pre-commit (target/venv) on `PATH`. The hook is built by `cargo install` as
//!   pre-commit does it, with the build cached in target/pre-commit-target and the cheap release
//!   profile tests/hooks/precommit.rs uses (`common::hook_build_env`).
//!
//! Blocks are independent, so sections and pages can be added without touching this test.
//! Every relative link in these files must name an existing file, and an anchor in it must be
//! one of that file's headings.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pages of docs/, as paths relative to the repository root, sorted.
fn docs_pages() -> Vec<String> {
    let mut pages: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("a docs/ folder")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    pages.sort();
    pages
}

/// Every markdown file whose examples and links are tested.
fn doc_files() -> Vec<String> {
    let mut files = vec!["README.md".to_string(), "CONTRIBUTING.md".to_string()];
    files.extend(docs_pages());
    files.extend(dev_pages());
    files
}

/// The contributor pages of docs/dev/, as paths relative to the repository root, sorted.
fn dev_pages() -> Vec<String> {
    let mut pages: Vec<String> = std::fs::read_dir(root().join("docs/dev"))
        .expect("a docs/dev/ folder")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/dev/{n}"))
        .collect();
    pages.sort();
    pages
}

#[derive(Debug)]
struct Cmd {
    line: usize,
    text: String,
    expected: Vec<String>,
}

#[derive(Debug)]
struct Block {
    file: String,
    line: usize,
    directive: Option<String>,
    commands: Vec<Cmd>,
}

fn directive_of(line: &str) -> Option<String> {
    let rest = line.trim().strip_prefix("<!-- readme-test:")?;
    Some(rest.strip_suffix("-->")?.trim().to_string())
}

/// The ```` ```console ```` blocks of a markdown file.
fn console_blocks(file: &str) -> Vec<Block> {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let fence = lines[i].trim_start();
        if !fence.starts_with("```") {
            i += 1;
            continue;
        }
        let indent = lines[i].len() - fence.len();
        let ticks = fence.chars().take_while(|c| *c == '`').count();
        let info = fence[ticks..].trim();
        let start = i;
        i += 1;
        let mut body = Vec::new();
        while i < lines.len() {
            let l = lines[i].trim_start();
            if l.starts_with(&"`".repeat(ticks)) && l.trim_matches('`').is_empty() {
                break;
            }
            body.push((
                i + 1,
                lines[i].get(indent..).unwrap_or(lines[i].trim_start()),
            ));
            i += 1;
        }
        i += 1;
        if info != "console" {
            continue;
        }
        let directive = start.checked_sub(1).and_then(|p| directive_of(lines[p]));
        let mut commands: Vec<Cmd> = Vec::new();
        let mut continued = false;
        for (n, l) in body {
            if continued {
                let c = commands.last_mut().unwrap();
                c.text.push('\n');
                c.text.push_str(l);
                continued = l.ends_with('\\');
            } else if let Some(cmd) = l.strip_prefix("$ ") {
                commands.push(Cmd {
                    line: n,
                    text: cmd.to_string(),
                    expected: Vec::new(),
                });
                continued = cmd.ends_with('\\');
            } else {
                let c = commands
                    .last_mut()
                    .unwrap_or_else(|| panic!("{file}:{n}: output before the first `$ ` command"));
                c.expected.push(l.trim_end().to_string());
            }
        }
        for c in &mut commands {
            while c.expected.last().is_some_and(|l| l.is_empty()) {
                c.expected.pop();
            }
        }
        blocks.push(Block {
            file: file.to_string(),
            line: start + 1,
            directive,
            commands,
        });
    }
    blocks
}

/// Whether `actual` matches `expected`, where an expected line `...` matches any run of lines.
fn matches(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((e, rest)) if e == "..." => (0..=actual.len()).any(|k| matches(rest, &actual[k..])),
        Some((e, rest)) => actual
            .split_first()
            .is_some_and(|(a, arest)| line_matches(e, a) && matches(rest, arest)),
    }
}

/// One line, where `[..]` in the expected line stands for any text within the line.
fn line_matches(expected: &str, actual: &str) -> bool {
    let mut parts = expected.split("[..]");
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = actual.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for p in middle {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.email=test@example.com", "-c", "user.name=test"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// This checkout's working tree (tracked and new files, minus what .gitignore excludes),
/// committed into a fresh repository under target/tmp: what pre-commit clones.
fn snapshot_of_this_repo() -> (tempfile::TempDir, String) {
    let list = git(
        &root(),
        &["ls-files", "--cached", "--others", "--exclude-standard"],
    );
    let tmp = root().join("target/tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let snap = tempfile::Builder::new()
        .prefix("cgpu-lint-readme-snapshot")
        .tempdir_in(tmp)
        .unwrap();
    for name in list.lines() {
        let from = root().join(name);
        if from.is_file() {
            let to = snap.path().join(name);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&from, &to).unwrap();
        }
    }
    git(snap.path(), &["init", "-q"]);
    git(snap.path(), &["add", "-A"]);
    git(snap.path(), &["commit", "-q", "-m", "snapshot"]);
    let rev = git(snap.path(), &["rev-parse", "HEAD"]);
    (snap, rev)
}

/// The documentation's `.pre-commit-config.yaml`, pointed at `repo` and `rev`.
fn pre_commit_config(repo: &Path, rev: &str) -> String {
    let marker = "<!-- readme-test: pre-commit-config -->\n```yaml\n";
    let marked: Vec<String> = doc_files()
        .iter()
        .map(|f| std::fs::read_to_string(root().join(f)).unwrap())
        .filter(|t| t.contains(marker))
        .collect();
    assert_eq!(
        marked.len(),
        1,
        "exactly one file has a block marked <!-- readme-test: pre-commit-config -->"
    );
    let (_, after) = marked[0].split_once(marker).unwrap();
    let (yaml, _) = after.split_once("\n```").unwrap();
    let mut out = String::new();
    for l in yaml.lines() {
        let t = l.trim_start();
        let indent = &l[..l.len() - t.len()];
        if t.starts_with("- repo:") {
            out.push_str(&format!("{indent}- repo: {}\n", repo.display()));
        } else if t.starts_with("rev:") {
            out.push_str(&format!("{indent}rev: {rev}\n"));
        } else {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

fn tool(rel: &str) -> PathBuf {
    let p = root().join(rel);
    assert!(
        p.exists(),
        "{} is missing: run scripts/install-test-tools",
        p.display()
    );
    p
}

/// Run one block; a description of every difference.
fn run_block(block: &Block) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    // `<!-- readme-test: root -->`: the block runs where a clone's root would be, the copy of
    // examples/ as `examples/` in it (the README's first example, as a newcomer runs it).
    let from_root = block.directive.as_deref() == Some("root");
    let repo = tmp.path().join("repo");
    let work = if from_root {
        repo.join("examples")
    } else {
        tmp.path().join("work")
    };
    let home = tmp.path().join("home");
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    copy_dir(&root().join("examples"), &work);
    copy_dir(
        &root().join("charts-fixtures/ack-ai-installer"),
        &work.join("ack-ai-installer"),
    );
    copy_dir(&root().join("helm-plugin"), &work.join("helm-plugin"));
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_cgpu-lint"), bin.join("cgpu-lint")).unwrap();
    let mut path = vec![bin.clone()];
    let mut cmd = Command::new("bash");
    let real_home = std::env::var_os("HOME").map(PathBuf::from);
    match block.directive.as_deref() {
        None | Some("root") => {}
        Some("helm") => {
            std::os::unix::fs::symlink(tool("target/tools/helm3"), bin.join("helm")).unwrap();
            std::os::unix::fs::symlink(tool("target/tools/helm4"), bin.join("helm4")).unwrap();
        }
        Some("helm4-only") => {
            std::os::unix::fs::symlink(tool("target/tools/helm4"), bin.join("helm")).unwrap();
        }
        Some("pre-commit") => {
            let (snap, rev) = snapshot_of_this_repo();
            std::fs::write(
                work.join(".pre-commit-config.yaml"),
                pre_commit_config(snap.path(), &rev),
            )
            .unwrap();
            git(&work, &["init", "-q"]);
            git(&work, &["add", "-A"]);
            path.push(tool("target/venv/bin"));
            // The cheap release profile and target dir tests/hooks/precommit.rs builds the hook with.
            common::hook_build_env(&mut cmd);
            // The toolchain stays where it is installed; only HOME is new.
            if let Some(h) = &real_home {
                if std::env::var_os("CARGO_HOME").is_none() {
                    cmd.env("CARGO_HOME", h.join(".cargo"));
                }
                if std::env::var_os("RUSTUP_HOME").is_none() {
                    cmd.env("RUSTUP_HOME", h.join(".rustup"));
                }
            }
            std::mem::forget(snap); // removed with target/tmp; the test's tempdir holds the rest
        }
        Some(other) => panic!(
            "{}:{}: unknown readme-test directive `{other}`",
            block.file, block.line
        ),
    }
    for p in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        path.push(p);
    }
    let mut script = String::from("exec 2>&1\n");
    for c in &block.commands {
        script.push_str(&c.text);
        script.push_str("\n__s=$?; printf '\\036%d\\036\\n' \"$__s\"; (exit $__s)\n");
    }
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("HELM_") || k.starts_with("XDG_") || k.starts_with("PRE_COMMIT") {
            cmd.env_remove(&*k);
        }
    }
    let out = cmd
        .arg("-c")
        .arg(&script)
        .current_dir(if from_root { &repo } else { &work })
        .env("HOME", &home)
        .env("PATH", std::env::join_paths(path).unwrap())
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env("LC_ALL", "C.UTF-8")
        .output()
        .expect("bash runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut parts = text.split('\u{1e}');
    let mut problems = Vec::new();
    let mut statuses = Vec::new();
    for c in &block.commands {
        let output = parts.next().unwrap_or("");
        let status: i32 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(-1);
        statuses.push(status);
        let actual: Vec<String> = output
            .strip_prefix('\n')
            .unwrap_or(output)
            .lines()
            .map(|l| l.trim_end().to_string())
            .collect();
        let mut actual = actual;
        while actual.last().is_some_and(|l| l.is_empty()) {
            actual.pop();
        }
        if !matches(&c.expected, &actual) {
            problems.push(format!(
                "{}:{}: `{}` printed:\n{}\n--- the README says:\n{}\n",
                block.file,
                c.line,
                c.text,
                actual.join("\n"),
                c.expected.join("\n")
            ));
        }
    }
    for (i, c) in block.commands.iter().enumerate() {
        let shown = block
            .commands
            .get(i + 1)
            .is_some_and(|n| n.text.trim() == "echo $?");
        if statuses[i] != 0 && !shown {
            problems.push(format!(
                "{}:{}: `{}` exited {}: show it with `$ echo $?` below it",
                block.file, c.line, c.text, statuses[i]
            ));
        }
    }
    problems
}

fn run_file(file: &str, only: fn(&Block) -> bool) -> usize {
    run_files(&[file.to_string()], only)
}

/// Run the selected blocks of these files; how many there were.
fn run_files(files: &[String], only: fn(&Block) -> bool) -> usize {
    let blocks: Vec<Block> = files
        .iter()
        .flat_map(|f| console_blocks(f))
        .filter(only)
        .collect();
    let mut problems = Vec::new();
    for b in &blocks {
        assert!(
            !b.commands.is_empty(),
            "{}:{}: an empty console block",
            b.file,
            b.line
        );
        problems.extend(run_block(b));
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
    blocks.len()
}

#[test]
fn readme_console_examples_run_as_written() {
    let n = run_file("README.md", |b| {
        b.directive.is_none() || b.directive.as_deref() == Some("root")
    });
    assert!(n >= 3, "only {n} console blocks");
}

#[test]
fn docs_console_examples_run_as_written() {
    let n = run_files(&docs_pages(), |b| b.directive.is_none());
    assert!(n >= 8, "only {n} console blocks");
}

#[test]
fn readme_helm_examples_run_with_helm3_and_helm4_side_by_side() {
    let n = run_files(&doc_files(), |b| {
        matches!(b.directive.as_deref(), Some("helm" | "helm4-only"))
    });
    assert!(n >= 4, "only {n} helm blocks");
}

#[test]
fn readme_pre_commit_instructions_run_in_a_clean_home() {
    let n = run_files(&doc_files(), |b| {
        b.directive.as_deref() == Some("pre-commit")
    });
    assert_eq!(n, 1);
}

#[test]
fn contributing_console_examples_run_as_written() {
    run_file("CONTRIBUTING.md", |b| b.directive.is_none());
}

#[test]
fn dev_console_examples_run_as_written() {
    let n = run_files(&dev_pages(), |b| b.directive.is_none());
    assert!(n >= 2, "only {n} console blocks");
}

#[test]
fn the_matcher_needs_every_line_and_allows_elision() {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert!(matches(&s(&["a", "...", "d"]), &s(&["a", "b", "c", "d"])));
    assert!(matches(&s(&["a", "..."]), &s(&["a"])));
    assert!(!matches(&s(&["a", "b"]), &s(&["a", "c"])));
    assert!(!matches(&s(&["a"]), &s(&["a", "b"])));
    assert!(line_matches(
        "run [..]/cgpu-lint. out",
        "run /tmp/x/bin/cgpu-lint. out"
    ));
    assert!(line_matches("[..]", "anything"));
    assert!(!line_matches("a[..]b", "ac"));
    assert!(!line_matches("ab", "abc"));
}

/// What the README's Helm 4 set-up avoids: with the Helm 4 plugin in the default plugin folder
/// that Helm 3 shares, Helm 3 fails to load plugins and `helm plugin list` exits 1.
#[test]
fn helm3_breaks_when_the_helm4_plugin_is_in_the_shared_default_folder() {
    let home = tempfile::tempdir().unwrap();
    let plugins = home.path().join(".local/share/helm/plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::os::unix::fs::symlink(root().join("helm-plugin"), plugins.join("cgpu-lint")).unwrap();
    let mut cmd = Command::new(tool("target/tools/helm3"));
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("HELM_") || k.starts_with("XDG_") {
            cmd.env_remove(&*k);
        }
    }
    let out = cmd
        .args(["plugin", "list"])
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("failed to load plugins"),
        "{out:?}"
    );
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The lines of a markdown text outside fenced code blocks.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    for l in text.lines() {
        let t = l.trim_start();
        if t.starts_with("```") {
            let ticks: String = t.chars().take_while(|c| *c == '`').collect();
            match &fence {
                Some(f) if t.trim_end() == f.as_str() => fence = None,
                None => fence = Some(ticks),
                _ => {}
            }
            continue;
        }
        if fence.is_none() {
            out.push(l);
        }
    }
    out
}

/// The headings of a markdown file outside code blocks: (level, text).
fn headings(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for l in prose_lines(text) {
        if l.starts_with('#') {
            let level = l.chars().take_while(|c| *c == '#').count();
            out.push((level, l[level..].trim().to_string()));
        }
    }
    out
}

/// The anchors GitHub gives a markdown file's headings (a repeated heading gets `-1`, `-2`, …).
fn anchors(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, h) in headings(text) {
        let s = slug(&h);
        let n = out
            .iter()
            .filter(|a| {
                **a == s
                    || a.strip_prefix(&format!("{s}-"))
                        .is_some_and(|r| r.parse::<u32>().is_ok())
            })
            .count();
        out.push(if n == 0 { s } else { format!("{s}-{n}") });
    }
    out
}

/// The relative links of `file` (a path under `base`) outside code blocks and code spans that
/// name no existing file, or an anchor that is no heading of the markdown file they name.
fn broken_links(base: &Path, file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(base.join(file)).unwrap();
    let dir = Path::new(file).parent().unwrap_or(Path::new(""));
    let mut prose = String::new();
    for l in prose_lines(&text) {
        // Drop code spans: text between backticks on the line.
        for (i, part) in l.split('`').enumerate() {
            if i % 2 == 0 {
                prose.push_str(part);
            }
        }
        prose.push('\n');
    }
    let mut broken = Vec::new();
    for (at, _) in prose.match_indices("](") {
        let rest = &prose[at + 2..];
        let Some(end) = rest.find(')') else { continue };
        let target = &rest[..end];
        if target.starts_with("http://") || target.starts_with("https://") {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (target, None),
        };
        let named = if path.is_empty() {
            Path::new(file).to_path_buf()
        } else {
            dir.join(path)
        };
        let full = base.join(&named);
        if !full.exists() {
            broken.push(format!("{file}: link to missing {target}"));
            continue;
        }
        if let Some(anchor) = anchor {
            let is_md = named.extension().is_some_and(|e| e == "md");
            let text = if is_md {
                std::fs::read_to_string(&full).unwrap_or_default()
            } else {
                String::new()
            };
            if !anchors(&text).iter().any(|a| a == anchor) {
                broken.push(format!("{file}: link to {target}, which is no heading"));
            }
        }
    }
    broken
}

#[test]
fn links_resolve_to_files_and_headings() {
    let mut broken = Vec::new();
    for f in doc_files() {
        broken.extend(broken_links(&root(), &f));
    }
    assert!(broken.is_empty(), "\n{}", broken.join("\n"));
}

#[test]
fn the_link_check_finds_a_missing_file_and_a_missing_heading() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("docs")).unwrap();
    std::fs::write(
        dir.path().join("docs/a.md"),
        "# A page\n\n## Same\n\n## Same\n\n```sh\n[no](missing.md)\n```\n`[no](gone.md)`\n\
         [ok](#a-page) [ok](#same-1) [ok](../README.md#top) [ok](https://example.com/x)\n\
         [bad](#nothing) [bad](b.md) [bad](../README.md#bottom)\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("README.md"), "# Top\n").unwrap();
    assert_eq!(
        broken_links(dir.path(), "docs/a.md"),
        [
            "docs/a.md: link to #nothing, which is no heading",
            "docs/a.md: link to missing b.md",
            "docs/a.md: link to ../README.md#bottom, which is no heading",
        ]
    );
}

/// The README: what it is, install, a check with its output and exit status, the two newcomer
/// commands on the first screen; then the three jobs as recipes, the exit statuses, and links to
/// docs/, where every other section lives, each page reachable from the README.
#[test]
fn readme_first_screen_and_order_of_sections() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        text.lines().count() <= 300,
        "the README is at most 300 lines: {}",
        text.lines().count()
    );
    let h: Vec<String> = headings(&text)
        .into_iter()
        .filter(|(l, _)| *l == 2)
        .map(|(_, t)| t)
        .collect();
    assert_eq!(
        h,
        [
            "Install",
            "Check a values file",
            "Lint values in CI and pre-commit",
            "Guard `helm upgrade` as a post-renderer",
            "Change the policy on a running cluster",
            "Exit statuses",
            "Documentation",
            "Development",
        ]
    );
    let first_screen = &text[..text.find("## Lint values").unwrap()];
    assert!(first_screen.contains("cargo install --locked --git"));
    assert!(first_screen.contains("cargo install --locked --path ."));
    assert!(first_screen.contains("$ cgpu-lint check examples/values.yaml"));
    assert!(first_screen.contains("$ echo $?"));
    assert!(first_screen.contains("(#exit-statuses)"));
    assert!(first_screen.contains("scripts/test"));
    assert!(
        first_screen.lines().count() < 80,
        "the first screen is short"
    );
    let recipes =
        &text[text.find("## Lint values").unwrap()..text.find("## Exit statuses").unwrap()];
    for needle in [
        "--format github",
        "- id: cgpu-lint",
        "--post-renderer cgpu-lint",
        "generate patch",
        "checklist",
    ] {
        assert!(recipes.contains(needle), "the recipes show {needle}");
    }
    for page in docs_pages() {
        assert!(
            text.contains(&format!("]({page})")),
            "the README links to {page}"
        );
    }
    for gone in ["Performance", "Robustness", "Quick start", "Usage"] {
        assert!(
            !h.iter().any(|t| t == gone),
            "`## {gone}` belongs in CONTRIBUTING.md"
        );
    }
    let contributing = std::fs::read_to_string(root().join("CONTRIBUTING.md")).unwrap();
    assert!(
        contributing.lines().count() <= 250,
        "CONTRIBUTING.md is a short guide: {} lines",
        contributing.lines().count()
    );
    for (page, section) in [
        ("CONTRIBUTING.md", "## How to measure"),
        ("docs/dev/testing.md", "## Fuzzing and hostile inputs"),
        ("docs/dev/architecture.md", "## Code map"),
        ("docs/dev/architecture.md", "## Layers"),
    ] {
        let text = std::fs::read_to_string(root().join(page)).unwrap();
        assert!(text.contains(section), "{page}: {section}");
    }
    // One page per command or topic, with its title and the sub-headings other work names.
    for (page, title, subs) in [
        ("docs/check.md", "Checking files", &[][..]),
        (
            "docs/cluster.md",
            "Checking a live cluster",
            &["Permissions", "A daily audit as a CronJob", "Speed"][..],
        ),
        (
            "docs/changing-values.md",
            "Fixing and changing values",
            &["fix", "set", "generate", "generate patch"][..],
        ),
        (
            "docs/post-renderer.md",
            "Helm post-renderer",
            &["Helm 3", "Helm 4"][..],
        ),
        (
            "docs/runbook.md",
            "Node-reboot checklist",
            &[
                "The script",
                "JSON actions",
                "Sources each step follows",
                "Testing the script",
            ][..],
        ),
        (
            "docs/ci.md",
            "CI and pre-commit",
            &["GitHub Actions", "GitLab CI", "pre-commit"][..],
        ),
        (
            "docs/editors.md",
            "Editors",
            &["JSON Schema", "Language server"][..],
        ),
        (
            "docs/configuration.md",
            "Configuration and suppressions",
            &["Configuration", "Suppressing findings"][..],
        ),
        (
            "docs/output-formats.md",
            "Output formats",
            &["JSON output"][..],
        ),
        ("docs/rules.md", "Rules", &[][..]),
        (
            "docs/man-pages.md",
            "Man pages and shell completions",
            &[][..],
        ),
        (
            "docs/helm-yaml.md",
            "Reading YAML the way Helm does",
            &["What Helm will see: `cgpu-lint values`", "How exact is it"][..],
        ),
        ("docs/limits.md", "Limits", &[][..]),
        (
            "docs/install.md",
            "Installing",
            &[
                "Python wheel",
                "pre-commit",
                "GitHub Action",
                "Release binaries",
                "Container image",
                "From source",
            ][..],
        ),
    ] {
        let text = std::fs::read_to_string(root().join(page)).unwrap_or_else(|_| panic!("{page}"));
        let hs = headings(&text);
        assert_eq!(
            hs.first(),
            Some(&(1, title.to_string())),
            "{page} starts with `# {title}`"
        );
        assert_eq!(
            hs.iter().filter(|(l, _)| *l == 1).count(),
            1,
            "{page} has one title"
        );
        for sub in subs {
            assert!(
                hs.iter().any(|(_, t)| t == sub),
                "{page}: no heading `{sub}`"
            );
        }
    }
}

/// CONTRIBUTING's benchmark table says how many runs it was recorded with, and what the
/// script's default is, and both agree with scripts/bench.py.
#[test]
fn benchmark_run_counts_agree_with_the_script() {
    let text = std::fs::read_to_string(root().join("CONTRIBUTING.md")).unwrap();
    let script = std::fs::read_to_string(root().join("scripts/bench.py")).unwrap();
    let default = script
        .split_once("os.environ.get(\"RUNS\", \"")
        .and_then(|(_, r)| r.split_once('"'))
        .map(|(n, _)| n.to_string())
        .expect("RUNS default in scripts/bench.py");
    assert!(
        text.contains(&format!("the script's default is {default} runs each")),
        "CONTRIBUTING.md must state the default of {default} runs"
    );
    let recorded = text
        .split_once("`RUNS=")
        .and_then(|(_, r)| r.split_once(' '))
        .map(|(n, _)| n.to_string())
        .expect("the recorded RUNS");
    assert!(text.contains(&format!("{recorded} runs each, median")));
}

/// The editor modeline in docs/editors.md points, from a values file in examples/, at the schema
/// `cgpu-lint schema` prints (JSON Schema 2020-12, which yaml-language-server reads).
#[test]
fn readme_editor_modeline_points_at_the_schema() {
    let text = std::fs::read_to_string(root().join("docs/editors.md")).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("# yaml-language-server: $schema="))
        .expect("a modeline");
    let rel = line.trim_start_matches("# yaml-language-server: $schema=");
    let schema = std::fs::read_to_string(root().join("examples").join(rel)).unwrap();
    let printed = Command::new(env!("CARGO_BIN_EXE_cgpu-lint"))
        .arg("schema")
        .output()
        .unwrap()
        .stdout;
    assert_eq!(schema.as_bytes(), printed.as_slice());
    assert!(schema.contains("\"$schema\": \"https://json-schema.org/draft/2020-12/schema\""));
}

/// The README's first newcomer command, run literally from the repository root with cargo,
/// prints what the first-screen example shows (for `examples/values.yaml`) and exits 1.
#[test]
fn readme_newcomer_command_builds_and_runs_the_example() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let (_, after) = text
        .split_once("From a clone of this repository")
        .expect("the newcomer commands");
    let block = after.split_once("```sh\n").unwrap().1;
    let block = block.split_once("```").unwrap().0;
    let lines: Vec<&str> = block.lines().collect();
    assert_eq!(lines.len(), 2, "exactly two newcomer commands: {lines:?}");
    assert_eq!(lines[1], "scripts/test");
    assert!(lines[0].starts_with("cargo run --locked -- check examples/values.yaml"));
    let mut cmd = Command::new("sh");
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("CARGO_") && k != "CARGO_HOME" || k == "RUSTFLAGS" {
            cmd.env_remove(&*k);
        }
    }
    let out = cmd
        .args(["-c", lines[0]])
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let first = console_blocks("README.md")
        .into_iter()
        .flat_map(|b| b.commands)
        .find(|c| c.text == "cgpu-lint check examples/values.yaml")
        .expect("the first-screen example");
    // The newcomer's command and the README's example read the same file from the root.
    let printed: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim_end().to_string())
        .collect();
    assert!(
        matches(&first.expected, &printed),
        "{}\n---\n{}",
        printed.join("\n"),
        first.expected.join("\n")
    );
}
