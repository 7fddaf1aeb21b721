//! Hostile inputs: each ends with exit 1 (a finding) or 2 (the tool could not read it) and a
//! clear message, never a panic.

use crate::common;
use crate::common::*;

fn run_on(bytes: &[u8]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("input.yaml");
    std::fs::write(&p, bytes).unwrap();
    let out = bin()
        .args(["check", "--color", "never", p.to_str().unwrap()])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_no_panic(stderr: &str) {
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
    assert!(!stderr.contains("RUST_BACKTRACE"), "panic: {stderr}");
}

#[test]
fn malformed_yaml() {
    for text in [
        "cgpu: [\n",
        "cgpu:\n  policy: 1\n bad-indent: 2\n",
        "cgpu: {policy: 1,,}\n",
        "cgpu:\n  - a\n  b: c\n",
        "\"unterminated\n",
        "cgpu: *nowhere\n",
        "cgpu: !!binary ~~~\n",
        "%YAML 9.9\n---\ncgpu: {}\n",
        ": : :\n",
        "cgpu:\n\tpolicy: 1\n",
    ] {
        let (code, out, err) = run_on(text.as_bytes());
        assert_no_panic(&err);
        assert!(code == 1 || code == 0, "{text:?}: exit {code}\n{out}{err}");
        if code == 1 {
            assert!(out.contains("input.yaml:"), "{text:?}: location in {out}");
        }
    }
}

#[test]
fn truncated_files_never_panic() {
    let full =
        std::fs::read(fixtures().join("values-valid-merge-keys-and-boundary-tag.yaml")).unwrap();
    for cut in 0..full.len() {
        let (code, _, err) = run_on(&full[..cut]);
        assert_no_panic(&err);
        assert!((0..=1).contains(&code), "cut at {cut}: exit {code}: {err}");
    }
}

#[test]
fn huge_scalar() {
    let mut s = String::from("cgpu:\n  tag: v1.5.20-");
    s.push_str(&"a".repeat(8 * 1024 * 1024));
    s.push('\n');
    let (code, _, err) = run_on(s.as_bytes());
    assert_no_panic(&err);
    assert_eq!(code, 0, "a long but valid suffix is a valid tag: {err}");
}

#[test]
fn ten_thousand_documents() {
    let mut s = String::new();
    for i in 0..10_000 {
        s.push_str(&format!("---\ncgpu:\n  policy: {}\n", i % 7));
    }
    let (code, out, err) = run_on(s.as_bytes());
    assert_no_panic(&err);
    assert_eq!(code, 1);
    // policy 6 appears in every 7th document
    assert_eq!(
        out.matches("error[policy-out-of-range]").count(),
        10_000 / 7
    );
}

#[test]
fn nul_bytes() {
    let (code, out, err) = run_on(b"cgpu:\n  policy: 1\0\n");
    assert_no_panic(&err);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("yaml-syntax"), "{out}");
}

#[test]
fn invalid_utf8() {
    let (code, out, err) = run_on(b"cgpu:\n  image: acs/\xc3\x28\n");
    assert_no_panic(&err);
    assert_eq!(code, 1);
    assert!(out.contains("input.yaml:2:14:"), "{out}");
}

#[test]
fn deep_nesting_in_both_styles() {
    let flow = "[".repeat(100_000);
    let mut block = String::new();
    for i in 0..5_000 {
        block.push_str(&" ".repeat(i));
        block.push_str("a:\n");
    }
    for text in [flow, block] {
        let (code, out, err) = run_on(text.as_bytes());
        assert_no_panic(&err);
        assert_eq!(code, 1, "{out}{err}");
        assert!(out.contains("yaml-syntax"));
    }
}

#[test]
fn alias_bombs() {
    // Billion laughs, and a quadratic blow-up through merge keys.
    let mut lol = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        lol.push_str(&format!(
            "a{i}: &a{i} [{}]\n",
            vec![format!("*a{}", i - 1); 10].join(", ")
        ));
    }
    lol.push_str("cgpu: {policy: 1}\n");
    let mut merge = String::from("m0: &m0 {k0: 0}\n");
    for i in 1..40 {
        merge.push_str(&format!(
            "m{i}: &m{i}\n  <<: [*m{}, *m{}]\n  k{i}: {i}\n",
            i - 1,
            i - 1
        ));
    }
    merge.push_str("cgpu: {policy: 1}\n");
    for text in [lol, merge] {
        let start = std::time::Instant::now();
        let (code, out, err) = run_on(text.as_bytes());
        assert_no_panic(&err);
        assert_eq!(code, 1, "{out}{err}");
        assert!(out.contains("alias expansion"), "{out}");
        assert!(start.elapsed().as_secs() < 10);
    }
}

#[test]
fn a_file_that_is_a_directory_named_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("values.yaml");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("inner.yaml"), "cgpu: {policy: 9}\n").unwrap();
    // Given explicitly, a directory is walked like any other directory.
    let out = bin().args(["check", d.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_no_panic(&String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_file_without_read_permission() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("secret.yaml");
    std::fs::write(&p, "cgpu: {policy: 1}\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).unwrap();
    let readable = std::fs::read(&p).is_ok(); // root reads it anyway
    let out = bin().args(["check", p.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_no_panic(&err);
    if readable {
        assert_eq!(out.status.code(), Some(0));
    } else {
        assert_eq!(out.status.code(), Some(2));
        assert!(
            err.contains("secret.yaml") && err.contains("ermission"),
            "{err}"
        );
    }
}

#[test]
fn a_path_through_a_file_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("file.yaml");
    std::fs::write(&f, "x: 1\n").unwrap();
    let bad = f.join("child.yaml");
    let out = bin()
        .args(["check", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("child.yaml"));
}

#[test]
fn a_file_over_the_size_limit_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.yaml");
    std::fs::write(&p, "cgpu: {policy: 1}\n# padding\n".repeat(100)).unwrap();
    let out = bin()
        .args(["check", "--max-file-size", "1000", p.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("limit"));
}

/// A file of tiny nodes is refused at the node that crosses the node budget (one node per 4 bytes
/// of --max-file-size: 250 here), by check and values alike, and read when the limit is the
/// default.
#[test]
fn a_file_over_the_node_budget_is_refused_at_the_crossing_node() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dense.yaml");
    // Nodes: root mapping, `cgpu`, its mapping, `policy`, `1`, `x`, the list: 7, then the
    // items; item k (from 1) is node 7 + k and sits at column 5 + 2 (k - 1) of line 2, so node
    // 251 is item 244, column 491.
    let text = format!("cgpu: {{policy: 1}}\nx: [{}a]\n", "a,".repeat(400));
    assert!(text.len() <= 1000);
    std::fs::write(&p, &text).unwrap();
    let path = p.to_str().unwrap();
    let out = bin()
        .args([
            "check",
            "--color",
            "never",
            "--no-config",
            "--max-file-size",
            "1000",
            path,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!("{path}:2:491")) && stdout.contains("node budget"),
        "{stdout}"
    );
    // The limit is cgpu-lint's: the help must not say Helm refuses the file (Helm reads it).
    assert!(
        stdout.contains("this limit is cgpu-lint's") && !stdout.contains("Helm would refuse"),
        "{stdout}"
    );
    let out = bin()
        .args([
            "values",
            "--no-config",
            "--helm",
            "3",
            "--max-file-size",
            "1000",
            path,
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("{path}:2:491")) && stderr.contains("more than 250 YAML nodes"),
        "{stderr}"
    );
    let out = bin()
        .args(["check", "--color", "never", "--no-config", path])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("node budget"),
        "the default limit's budget is far above this file"
    );
}

#[test]
fn odd_keys_and_values_in_the_cgpu_block() {
    for text in [
        "cgpu:\n  ? [a, b]\n  : 1\n",
        "cgpu:\n  nodeSelector:\n    ? {a: b}\n    : x\n",
        "cgpu:\n  nodeSelector:\n    1: 2\n    ~: x\n",
        "cgpu:\n  policy: !!str 1\n",
        "cgpu:\n  policy: 99999999999999999999999999\n",
        "cgpu:\n  policy: -0x8000000000000001\n",
        "cgpu:\n  policy: .nan\n",
        "cgpu:\n  image: '@'\n  tag: ''\n",
        "cgpu:\n  image: ':'\n",
        "cgpu:\n  nodeSelector: [=, a=, =b, '']\n",
        "cgpu: &c\n  policy: 1\nother: *c\n",
        "cgpu:\n  enabled: \"\"\n  checkRegions: []\n",
        "cgpu: 1\n---\ncgpu: []\n---\ncgpu: ~\n",
    ] {
        let (code, out, err) = run_on(text.as_bytes());
        assert_no_panic(&err);
        assert!(code == 0 || code == 1, "{text:?}: exit {code}\n{out}{err}");
    }
}

/// A values file in a pull request must not drive the reviewer's terminal: control
/// bytes (`ESC ] 0 ; … BEL` retitles it, `ESC [ 2 J` clears it) come out as `\x1b`, `\x07`, in
/// the snippet and in the messages, for the human report and post-render's one-line findings.
#[test]
fn control_bytes_from_a_file_never_reach_the_terminal_raw() {
    let dir = tempfile::tempdir().unwrap();
    let hostile = b"\x1b]0;pwned\x07\x1b[2J\x9b\x7f";
    let mut comment = b"cgpu:\n  # ".to_vec();
    comment.extend_from_slice(hostile);
    comment.extend_from_slice(b"\n  policy: 9\n");
    std::fs::write(dir.path().join("comment.yaml"), &comment).unwrap();
    // Inside a value that parses: a double-quoted escape decodes to ESC in the message.
    std::fs::write(
        dir.path().join("value.yaml"),
        "cgpu:\n  imagePullPolicy: \"x\\e]0;pwned\\a\\e[2J\"\n",
    )
    .unwrap();
    // Without colour nothing but tab and newline may be below 0x20 (nor DEL).
    let raw = |text: &[u8]| {
        text.iter()
            .any(|&b| (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f)
    };
    for color in ["never", "always"] {
        for file in ["comment.yaml", "value.yaml"] {
            let out = common::bin()
                .current_dir(dir.path())
                .args(["check", "--no-config", "--color", color, file])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            // With colour the report has its own SGR sequences (ESC [ … m), never ESC ] or a
            // clear-screen.
            assert!(
                !text.contains("\x1b]") && !text.contains("\x1b[2J"),
                "{text}"
            );
            assert!(
                !text.contains('\u{7}') && !text.contains('\u{9b}'),
                "{text}"
            );
            if color == "never" {
                assert!(!raw(&out.stdout), "{text}");
            }
            assert!(text.contains("\\x1b]0;pwned\\x07"), "{file}: {text}");
        }
    }
    // post-render's findings on stderr.
    let stream = "---\n# Source: x/templates/ds.yaml\napiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: cgpu-installer\n  namespace: kube-system\nspec:\n  template:\n    spec:\n      containers:\n      - name: cgpu-installer\n        image: \"registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun\"\n        imagePullPolicy: \"x\\e]0;pwned\\a\"\n        env:\n        - name: POLICY\n          value: \"1\"\n";
    let out = common::bin()
        .args(["post-render", "--no-config"])
        .write_stdin(stream)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("\x1b]") && !err.contains('\u{7}'), "{err}");
    assert!(err.contains("\\x1b]0;pwned\\x07"), "{err}");
}

/// `check PATH --max-file-size 1000` (and `values`), killed after 30 s: (exit status, stdout,
/// stderr). Reading without a limit never ends on `/dev/zero`.
fn bounded(cmd: &[&str], path: &str, stdin: Option<&[u8]>) -> (Option<i32>, String, String) {
    let mut c = bin();
    c.args(cmd)
        .args(["--max-file-size", "1000", path])
        .timeout(std::time::Duration::from_secs(30));
    if let Some(input) = stdin {
        c.write_stdin(input.to_vec());
    }
    let out = c.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The one stderr line of a refused input: it names the path once and the limit.
fn assert_limit_line(stderr: &str, path: &str) {
    assert_no_panic(stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert_eq!(
        lines[0],
        format!("cgpu-lint: error: {path}: over the 1000-byte limit (--max-file-size)")
    );
}

#[test]
fn a_device_named_on_the_command_line_is_read_under_the_limit() {
    let (code, _, err) = bounded(&["check", "--quiet"], "/dev/zero", None);
    assert_eq!(code, Some(2), "{err}");
    assert_limit_line(&err, "/dev/zero");
    let (code, _, err) = bounded(&["values"], "/dev/zero", None);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("/dev/zero: over the 1000-byte limit (--max-file-size)"),
        "{err}"
    );
}

#[test]
fn a_symlink_to_a_device_named_values_yaml_is_read_under_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("values.yaml");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let shown = link.to_str().unwrap();
    let (code, _, err) = bounded(&["check", "--quiet"], shown, None);
    assert_eq!(code, Some(2), "{err}");
    assert_limit_line(&err, shown);
}

#[test]
fn stdin_over_the_limit_is_refused_with_the_same_words() {
    let input = "cgpu: {policy: 1}\n# padding\n".repeat(100);
    let (code, _, err) = bounded(&["check", "--quiet"], "-", Some(input.as_bytes()));
    assert_eq!(code, Some(2), "{err}");
    assert_limit_line(&err, "-");
}

#[test]
fn a_fifo_named_explicitly_is_read_as_stdin_is() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("values.yaml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // Under the limit: checked (policy 9 is an error, exit 1).
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, "cgpu:\n  policy: 9\n").unwrap())
    };
    let (code, out, err) = bounded(&["check"], fifo.to_str().unwrap(), None);
    writer.join().unwrap();
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("policy-out-of-range"), "{out}");
    // Over it: refused while reading, the writer's pipe closed under it.
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
            let chunk = vec![b'#'; 4096];
            // Writes fail (EPIPE) once the reader has stopped.
            while f.write_all(&chunk).is_ok() {}
        })
    };
    let (code, _, err) = bounded(&["check", "--quiet"], fifo.to_str().unwrap(), None);
    writer.join().unwrap();
    assert_eq!(code, Some(2), "{err}");
    assert_limit_line(&err, fifo.to_str().unwrap());
}

#[test]
fn a_proc_file_states_no_size_and_is_read_under_the_limit() {
    // /proc files state a size of 0; /proc/self/maps of a running binary is several KB.
    let (code, _, err) = bounded(&["check", "--quiet"], "/proc/self/maps", None);
    assert_eq!(code, Some(2), "{err}");
    assert_limit_line(&err, "/proc/self/maps");
}

#[test]
fn an_unreadable_folder_is_named_once() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let closed = dir.path().join("closed");
    std::fs::create_dir(&closed).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o000)).unwrap();
    // Root reads any folder: run as nobody there (setpriv, util-linux), else as this user.
    let exe = std::env::var_os("CARGO_BIN_EXE_cgpu-lint")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_cgpu-lint").into());
    let root = std::fs::read_dir(&closed).is_ok();
    let mut cmd = if root {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&exe);
        c
    } else {
        std::process::Command::new(&exe)
    };
    let out = cmd
        .args(["check", "--quiet", "./closed"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_no_panic(&err);
    if root && err.contains("setpriv") {
        eprintln!("setpriv could not drop to nobody here: {err}");
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.matches("closed").count(), 1, "{err}");
    assert_eq!(
        err.trim_end(),
        "cgpu-lint: error: ./closed: Permission denied (os error 13)"
    );
}
