//! `cgpu-lint server` over stdio, driven as an editor drives it: JSON-RPC messages with
//! Content-Length framing to the real binary, answers read back from its stdout.

use crate::common;
use crate::common::*;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

// Generous: the machine running the tests may be busy, and debug builds are slow.
const WAIT: Duration = Duration::from_secs(90);

struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Value>,
    /// Messages read while waiting for something else.
    stash: Vec<Value>,
    next_id: i64,
}

fn uri(path: &Path) -> String {
    // The fixtures' paths are plain ASCII.
    format!("file://{}", path.display())
}

impl Client {
    /// Start the server and run the initialize handshake.
    fn start(root: &Path, capabilities: Value, options: Value) -> (Client, Value) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cgpu-lint"))
            .arg("server")
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the server");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut len = None;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(v) = line.strip_prefix("Content-Length: ") {
                        len = v.parse::<usize>().ok();
                    }
                }
                let mut body = vec![0; len.expect("Content-Length")];
                if r.read_exact(&mut body).is_err() {
                    return;
                }
                let v: Value = serde_json::from_slice(&body).expect("JSON from the server");
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        let mut c = Client {
            stdin: child.stdin.take(),
            child,
            rx,
            stash: Vec::new(),
            next_id: 1,
        };
        let init = c.request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": uri(root),
                "capabilities": capabilities,
                "initializationOptions": options,
            }),
        );
        c.notify("initialized", json!({}));
        (c, init)
    }

    fn send(&mut self, msg: Value) {
        let body = msg.to_string();
        let stdin = self.stdin.as_mut().expect("stdin open");
        write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        stdin.flush().unwrap();
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The whole response (result or error) to a request.
    fn request_raw(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait_for(|m| m["id"] == id && m.get("method").is_none())
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let r = self.request_raw(method, params);
        assert!(r.get("error").is_none(), "{method}: {r:#}");
        r["result"].clone()
    }

    fn wait_for(&mut self, want: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.stash.iter().position(&want) {
            return self.stash.remove(i);
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(m) if want(&m) => return m,
                Ok(m) => self.stash.push(m),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no answer in {WAIT:?}; got {:#?}", self.stash)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the server closed its stdout; got {:#?}", self.stash)
                }
            }
        }
    }

    /// The next publishDiagnostics for `uri` (with `version`, when given).
    fn diagnostics(&mut self, uri: &str, version: Option<i64>) -> Vec<Value> {
        let m = self.wait_for(|m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && version.is_none_or(|v| m["params"]["version"] == v)
        });
        m["params"]["diagnostics"].as_array().unwrap().clone()
    }

    fn open(&mut self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}}),
        );
    }

    /// shutdown, exit, and the exit status.
    fn finish(mut self) -> i32 {
        let r = self.request_raw("shutdown", Value::Null);
        assert_eq!(r["result"], Value::Null, "{r}");
        assert!(r.get("error").is_none(), "{r}");
        self.notify("exit", Value::Null);
        self.stdin = None;
        wait_exit(&mut self.child)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_exit(child: &mut Child) -> i32 {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code().unwrap_or(-1);
        }
        assert!(Instant::now() < deadline, "the server did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Client capabilities offering one position encoding.
fn encoding(e: &str) -> Value {
    json!({"general": {"positionEncodings": [e]}})
}

/// Apply LSP text edits whose positions count characters (UTF-32).
fn apply(text: &str, edits: &[Value]) -> String {
    let offset = |p: &Value| -> usize {
        let (line, ch) = (
            p["line"].as_u64().unwrap() as usize,
            p["character"].as_u64().unwrap() as usize,
        );
        let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
        let rest = &text[start..];
        start + rest.char_indices().nth(ch).map_or(rest.len(), |(i, _)| i)
    };
    let mut spans: Vec<(usize, usize, String)> = edits
        .iter()
        .map(|e| {
            (
                offset(&e["range"]["start"]),
                offset(&e["range"]["end"]),
                e["newText"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    spans.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut out = text.to_string();
    for (a, b, t) in spans {
        out.replace_range(a..b, &t);
    }
    out
}

fn all_fixtures() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        })
        .collect();
    v.sort();
    v
}

#[test]
fn initialize_negotiates_the_position_encoding_and_shutdown_exit_0() {
    let (c, init) = Client::start(&fixtures(), json!({}), Value::Null);
    let caps = &init["capabilities"];
    // No positionEncodings offered: UTF-16, the protocol's default.
    assert_eq!(caps["positionEncoding"], "utf-16");
    assert_eq!(caps["textDocumentSync"]["change"], 2, "incremental sync");
    assert_eq!(caps["hoverProvider"], true);
    assert!(caps["completionProvider"].is_object());
    assert_eq!(
        caps["codeActionProvider"]["codeActionKinds"],
        json!(["quickfix", "source.fixAll.cgpu-lint"])
    );
    assert_eq!(init["serverInfo"]["name"], "cgpu-lint");
    assert_eq!(c.finish(), 0);

    let (c, init) = Client::start(
        &fixtures(),
        json!({"general": {"positionEncodings": ["utf-32", "utf-16"]}}),
        Value::Null,
    );
    assert_eq!(init["capabilities"]["positionEncoding"], "utf-32");
    drop(c);
    let (c, init) = Client::start(&fixtures(), encoding("utf-8"), Value::Null);
    assert_eq!(init["capabilities"]["positionEncoding"], "utf-8");
    drop(c);
}

#[test]
fn exit_without_shutdown_is_status_1_and_requests_after_shutdown_are_refused() {
    let (mut c, _) = Client::start(&fixtures(), json!({}), Value::Null);
    c.notify("exit", Value::Null);
    c.stdin = None;
    assert_eq!(wait_exit(&mut c.child), 1);

    let (mut c, _) = Client::start(&fixtures(), json!({}), Value::Null);
    c.request("shutdown", Value::Null);
    let r = c.request_raw(
        "textDocument/hover",
        json!({"textDocument": {"uri": "file:///x.yaml"}, "position": {"line": 0, "character": 0}}),
    );
    assert_eq!(r["error"]["code"], -32600, "{r}");
    c.notify("exit", Value::Null);
    c.stdin = None;
    assert_eq!(wait_exit(&mut c.child), 0);
}

/// Open `path` in the server and require its diagnostics to equal `check --format json`'s
/// (rule, severity, range, message); the number compared.
fn assert_server_equals_check(c: &mut Client, path: &Path) -> usize {
    let severities = json!({"error": 1, "warning": 2, "info": 3});
    let text = std::fs::read_to_string(path).unwrap();
    let u = uri(path);
    c.open(&u, &text);
    let got = c.diagnostics(&u, Some(1));
    let run = check_json(&[path.to_str().unwrap()]);
    let key = |rule: &Value, sev: &Value, l: u64, col: u64, el: u64, ec: u64, msg: &str| {
        format!("{rule} {sev} {l}:{col}-{el}:{ec} {msg}")
    };
    let mut want: Vec<String> = run
        .diagnostics()
        .iter()
        .map(|d| {
            let n = |k: &str| d[k].as_u64().unwrap() - 1;
            let msg = format!(
                "{}\nhelp: {}",
                d["message"].as_str().unwrap(),
                d["help"].as_str().unwrap()
            );
            key(
                &d["rule"],
                &severities[d["severity"].as_str().unwrap()],
                n("line"),
                n("column"),
                n("end_line"),
                n("end_column"),
                &msg,
            )
        })
        .collect();
    let mut have: Vec<String> = got
        .iter()
        .map(|d| {
            let n = |p: &str, k: &str| d["range"][p][k].as_u64().unwrap();
            // A fix note (why no fix is offered) follows the help; `check --format json` has no such field.
            let msg = d["message"]
                .as_str()
                .unwrap()
                .split("\nnote: ")
                .next()
                .unwrap()
                .to_string();
            assert_eq!(d["source"], "cgpu-lint");
            key(
                &d["code"],
                &d["severity"],
                n("start", "line"),
                n("start", "character"),
                n("end", "line"),
                n("end", "character"),
                &msg,
            )
        })
        .collect();
    want.sort();
    have.sort();
    assert_eq!(have, want, "{}", path.display());
    want.len()
}

/// Every fixture: the server publishes exactly the findings `check --format json` prints for
/// the same bytes (rule, severity, range, message, help).
#[test]
fn diagnostics_equal_check_on_every_fixture() {
    let (mut c, _) = Client::start(&fixtures(), encoding("utf-32"), Value::Null);
    let mut compared = 0;
    for path in all_fixtures() {
        let u = uri(&path);
        compared += assert_server_equals_check(&mut c, &path);
        c.notify("textDocument/didClose", json!({"textDocument": {"uri": u}}));
        assert!(
            c.diagnostics(&u, None).is_empty(),
            "closing clears the diagnostics"
        );
    }
    assert!(compared > 50, "only {compared} findings compared");
    assert_eq!(c.finish(), 0);
}

/// A lone CR ends a line for the protocol (LSP: `\n`, `\r\n`, `\r`) and for YAML and Helm:
/// the server and `check` put a finding on the same line whatever the file's line breaks.
#[test]
fn diagnostics_equal_check_whatever_the_line_breaks() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, _) = Client::start(dir.path(), encoding("utf-16"), Value::Null);
    let text = "# prod{br}cgpu:{br}  enabled: \"false\"{br}  policy: 9{br}  tag: v1.0.5{br}";
    let mut compared = 0;
    for (i, br) in ["\n", "\r\n", "\r"].iter().enumerate() {
        let path = dir.path().join(format!("values-{i}.yaml"));
        std::fs::write(&path, text.replace("{br}", br)).unwrap();
        compared += assert_server_equals_check(&mut c, &path);
    }
    assert!(compared >= 9, "only {compared} findings compared");
    assert_eq!(c.finish(), 0);
}

#[test]
fn duplicate_keys_carry_the_first_occurrence_as_related_information() {
    let (mut c, _) = Client::start(&fixtures(), encoding("utf-32"), Value::Null);
    let path = fixtures().join("values-invalid-duplicate-keys.yaml");
    let u = uri(&path);
    c.open(&u, &std::fs::read_to_string(&path).unwrap());
    let diags = c.diagnostics(&u, Some(1));
    let dup: Vec<&Value> = diags
        .iter()
        .filter(|d| d["code"] == "duplicate-key")
        .collect();
    assert!(!dup.is_empty());
    for d in dup {
        let rel = d["relatedInformation"]
            .as_array()
            .expect("relatedInformation");
        assert_eq!(rel[0]["location"]["uri"], u.as_str());
        assert!(
            rel[0]["location"]["range"]["start"]["line"].as_u64()
                < d["range"]["start"]["line"].as_u64(),
            "{d:#}"
        );
    }
}

#[test]
fn did_change_is_debounced_and_publishes_the_new_findings_with_their_version() {
    let (mut c, _) = Client::start(&fixtures(), json!({}), json!({"debounceMs": 300}));
    let u = "file:///nowhere/values.yaml";
    c.open(u, "cgpu:\n  policy: \"1\"\n");
    let d = c.diagnostics(u, Some(1));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["code"], "policy-quoted");
    assert_eq!(d[0]["severity"], 3);
    assert_eq!(
        d[0]["range"],
        json!({"start": {"line": 1, "character": 10}, "end": {"line": 1, "character": 13}})
    );
    // Three quick edits (incremental): only the last version is linted and published.
    let edit = |c: &mut Client, version: i64, range: Value, text: &str| {
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": u, "version": version}, "contentChanges": [{"range": range, "text": text}]}),
        );
    };
    let r = |l: u32, a: u32, b: u32| json!({"start": {"line": l, "character": a}, "end": {"line": l, "character": b}});
    edit(&mut c, 2, r(1, 10, 13), "7");
    edit(&mut c, 3, r(1, 10, 11), "\"yes\"");
    edit(&mut c, 4, r(1, 10, 15), "preemptive");
    let d = c.diagnostics(u, None);
    let m = c
        .stash
        .iter()
        .chain(std::iter::once(&json!(null)))
        .filter(|m| m["method"] == "textDocument/publishDiagnostics")
        .count();
    assert_eq!(m, 0, "no diagnostics for the intermediate versions");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["code"], "policy-not-integer");
    assert!(
        d[0]["message"]
            .as_str()
            .unwrap()
            .contains("`preemptive` is a name")
    );
    // A whole-document change (no range) works too.
    c.notify("textDocument/didChange", json!({"textDocument": {"uri": u, "version": 5}, "contentChanges": [{"text": "cgpu:\n  policy: 1\n"}]}));
    assert!(c.diagnostics(u, Some(5)).is_empty());
}

/// Applying every quick fix one at a time (as a person would, re-reading the findings after each)
/// and applying the one "fix all" action both give the bytes of the `fix` golden files.
#[test]
fn quick_fixes_and_fix_all_equal_fix() {
    let golden = common::FIX_GOLDEN;
    let (mut c, _) = Client::start(&fixtures(), encoding("utf-32"), Value::Null);
    let whole =
        json!({"start": {"line": 0, "character": 0}, "end": {"line": 100000, "character": 0}});
    for name in golden {
        let path = fixtures().join(format!("{name}.yaml"));
        let want =
            std::fs::read_to_string(fixtures().join("fixed").join(format!("{name}.yaml"))).unwrap();
        let original = std::fs::read_to_string(&path).unwrap();
        let u = uri(&path);

        // source.fixAll.cgpu-lint in one go.
        c.open(&u, &original);
        let diags = c.diagnostics(&u, Some(1));
        let actions = c.request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": u}, "range": whole, "context": {"diagnostics": diags, "only": ["source.fixAll"]}}),
        );
        let actions = actions.as_array().unwrap();
        if want == original {
            // Only unsafe fixes (held back): nothing to fix all.
            assert!(actions.is_empty(), "{name}: {actions:#?}");
            c.notify("textDocument/didClose", json!({"textDocument": {"uri": u}}));
            c.diagnostics(&u, None);
            continue;
        }
        assert_eq!(actions.len(), 1, "{name}: {actions:#?}");
        assert_eq!(actions[0]["kind"], "source.fixAll.cgpu-lint");
        let edits = actions[0]["edit"]["changes"][&u].as_array().unwrap();
        assert_eq!(apply(&original, edits), want, "{name}: fix all");

        // Quick fixes, one per round, until none is offered.
        let mut text = original.clone();
        let mut version = 1;
        let mut diags = diags;
        for _ in 0..20 {
            let actions = c.request(
                "textDocument/codeAction",
                json!({"textDocument": {"uri": u}, "range": whole, "context": {"diagnostics": diags, "only": ["quickfix"]}}),
            );
            // An unsafe fix is offered as a quick fix too, labelled and not preferred; the
            // preferred (safe) ones one by one give what `fix` writes.
            let actions = actions.as_array().unwrap();
            for a in actions {
                let unsafe_title = a["title"].as_str().unwrap().contains("(unsafe fix: ");
                assert_eq!(a["isPreferred"] == false, unsafe_title, "{a:#}");
            }
            let Some(first) = actions.iter().find(|a| a["isPreferred"] == true).cloned() else {
                break;
            };
            assert_eq!(first["kind"], "quickfix");
            assert_eq!(first["diagnostics"].as_array().unwrap().len(), 1);
            text = apply(&text, first["edit"]["changes"][&u].as_array().unwrap());
            version += 1;
            c.notify("textDocument/didChange", json!({"textDocument": {"uri": u, "version": version}, "contentChanges": [{"text": text}]}));
            diags = c.diagnostics(&u, Some(version));
        }
        assert_eq!(text, want, "{name}: quick fixes one by one");
        c.notify("textDocument/didClose", json!({"textDocument": {"uri": u}}));
        c.diagnostics(&u, None);
    }
    assert_eq!(c.finish(), 0);
}

#[test]
fn quick_fixes_are_offered_only_in_the_requested_range() {
    let (mut c, _) = Client::start(&fixtures(), encoding("utf-32"), Value::Null);
    let u = "file:///nowhere/v.yaml";
    c.open(u, "cgpu:\n  policy: \"1\"\n  enabled: \"false\"\n");
    let diags = c.diagnostics(u, Some(1));
    assert_eq!(diags.len(), 2);
    let line2 = json!({"start": {"line": 2, "character": 12}, "end": {"line": 2, "character": 12}});
    let a = c.request("textDocument/codeAction", json!({"textDocument": {"uri": u}, "range": line2, "context": {"diagnostics": [], "only": ["quickfix"]}}));
    let a = a.as_array().unwrap();
    assert_eq!(a.len(), 1, "{a:#?}");
    assert_eq!(a[0]["diagnostics"][0]["code"], "string-boolean");
    assert_eq!(a[0]["edit"]["changes"][u][0]["newText"], "false");
}

fn hover_text(c: &mut Client, u: &str, line: u32, character: u32) -> Value {
    c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": u}, "position": {"line": line, "character": character}}),
    )
}

#[test]
fn hover_on_keys_policies_and_tags() {
    let (mut c, _) = Client::start(&fixtures(), json!({}), Value::Null);
    let u = "file:///nowhere/v.yaml";
    c.open(u, "# é😀\ncgpu:\n  policy: 2\n  imagePullPolicy: IfNotPresent\n  tag: v1.0.5-4b4d9a1-aliyun\n  financeCloudImageTag: v1.5.10-fin\n");
    c.diagnostics(u, Some(1));
    let h = hover_text(&mut c, u, 2, 4);
    assert_eq!(h["contents"]["kind"], "markdown");
    let v = h["contents"]["value"].as_str().unwrap();
    assert!(
        v.contains("cgpu.policy")
            && v.contains("Chart default: `1`")
            && v.contains("`2` weight-based preemptive"),
        "{v}"
    );
    assert_eq!(
        h["range"],
        json!({"start": {"line": 2, "character": 2}, "end": {"line": 2, "character": 8}})
    );
    let v = hover_text(&mut c, u, 2, 10)["contents"]["value"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        v.starts_with("**cGPU policy 2: weight-based preemptive**")
            && v.contains("ALIYUN_COM_GPU_SCHD_WEIGHT"),
        "{v}"
    );
    let v = hover_text(&mut c, u, 3, 4)["contents"]["value"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        v.contains("`Always`, `IfNotPresent`, `Never`")
            && v.contains("Chart default: `IfNotPresent`"),
        "{v}"
    );
    let v = hover_text(&mut c, u, 4, 10)["contents"]["value"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        v.contains("cGPU 1.0.5") && v.contains("older than 1.0.6") && v.contains("deadlock"),
        "{v}"
    );
    let v = hover_text(&mut c, u, 5, 30)["contents"]["value"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        v.contains("cGPU 1.5.10")
            && v.contains("finance-cloud build")
            && v.contains("No known advisory"),
        "{v}"
    );
    // Nothing to say on a comment.
    assert_eq!(hover_text(&mut c, u, 0, 1), Value::Null);
    // The installer DaemonSet: the image tag and the POLICY env value.
    let ds = fixtures().join("daemonset-cgpu-installer-minimal.yaml");
    let text = std::fs::read_to_string(&ds).unwrap();
    let du = uri(&ds);
    c.open(&du, &text);
    c.diagnostics(&du, Some(1));
    let (line, l) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("image:") && l.contains("cgpu-installer"))
        .unwrap();
    let v = hover_text(&mut c, &du, line as u32, (l.len() - 2) as u32)["contents"]["value"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(v.contains("**cGPU "), "{v}");
    // env POLICY's value, line 26 of the fixture: `          value: "2"`.
    let v = hover_text(&mut c, &du, 25, 19)["contents"]["value"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        v.starts_with("**cGPU policy 2: weight-based preemptive**"),
        "{v}"
    );
}

#[test]
fn completion_of_cgpu_keys_and_enumerated_values() {
    let (mut c, _) = Client::start(&fixtures(), json!({}), Value::Null);
    let u = "file:///nowhere/v.yaml";
    c.open(
        u,
        "cgpu:\n  policy: 1\n  imag\n  imagePullPolicy: \n  enabled: \n",
    );
    c.diagnostics(u, Some(1));
    let complete = |c: &mut Client, line: u32, character: u32| -> Vec<Value> {
        let r = c.request(
            "textDocument/completion",
            json!({"textDocument": {"uri": u}, "position": {"line": line, "character": character}}),
        );
        r.as_array().cloned().unwrap_or_default()
    };
    let keys = complete(&mut c, 2, 6);
    let labels: Vec<&str> = keys.iter().map(|i| i["label"].as_str().unwrap()).collect();
    assert!(
        labels.contains(&"image") && labels.contains(&"financeCloudImageTag"),
        "{labels:?}"
    );
    assert!(
        !labels.contains(&"policy") && !labels.contains(&"imagePullPolicy"),
        "keys already set are not offered: {labels:?}"
    );
    let image = keys.iter().find(|i| i["label"] == "image").unwrap();
    assert_eq!(image["textEdit"]["newText"], "image: ");
    assert_eq!(
        image["textEdit"]["range"],
        json!({"start": {"line": 2, "character": 2}, "end": {"line": 2, "character": 6}})
    );
    let labels = |v: Vec<Value>| {
        v.iter()
            .map(|i| i["label"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        labels(complete(&mut c, 3, 19)),
        ["Always", "IfNotPresent", "Never"]
    );
    assert_eq!(labels(complete(&mut c, 4, 11)), ["true", "false"]);
    assert_eq!(
        labels(complete(&mut c, 1, 10)),
        ["0", "1", "2", "3", "4", "5"]
    );
}

#[test]
fn unknown_documents_and_bad_params_are_error_responses() {
    let (mut c, _) = Client::start(&fixtures(), json!({}), Value::Null);
    let r = c.request_raw("textDocument/hover", json!({"textDocument": {"uri": "file:///never/opened.yaml"}, "position": {"line": 0, "character": 0}}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("not open"));
    let r = c.request_raw("textDocument/codeAction", json!({"nonsense": true}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let r = c.request_raw("workspace/symbol", json!({"query": ""}));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    assert_eq!(c.finish(), 0);
}

#[test]
fn malformed_and_huge_documents_neither_crash_nor_block() {
    let (mut c, _) = Client::start(&fixtures(), json!({}), Value::Null);
    let bad = "file:///nowhere/bad.yaml";
    c.open(bad, "cgpu: [\n  policy: {{ .Values.x }}\n\t- : :\n");
    let d = c.diagnostics(bad, Some(1));
    assert_eq!(d[0]["code"], "yaml-syntax");
    // Hover and completion inside broken YAML answer (null or candidates), never an error.
    let h = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": bad}, "position": {"line": 1, "character": 4}}),
    );
    assert!(h.is_null());
    // A deeply nested and a large document (about 2 MB; linting it takes seconds in a debug build).
    let deep = "file:///nowhere/deep.yaml";
    c.open(
        deep,
        &format!("cgpu: {}{}\n", "[".repeat(100_000), "]".repeat(100_000)),
    );
    let huge = "file:///nowhere/huge.yaml";
    let mut text = String::from("cgpu:\n  policy: \"1\"\nother:\n");
    while text.len() < 2_000_000 {
        text.push_str("  - {name: item, value: \"yes\", list: [1, 2, 3]}\n");
    }
    c.open(huge, &text);
    // The main thread keeps answering while the worker lints.
    let r = c.request_raw("textDocument/hover", json!({"textDocument": {"uri": "file:///not/open.yaml"}, "position": {"line": 0, "character": 0}}));
    assert!(r.get("error").is_some());
    assert_eq!(c.diagnostics(deep, Some(1))[0]["code"], "yaml-syntax");
    let d = c.diagnostics(huge, Some(1));
    assert!(d.iter().any(|d| d["code"] == "policy-quoted"), "{d:#?}");
    assert_eq!(c.finish(), 0);
}

#[test]
fn workspace_config_and_initialization_options() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(
        root.join(".cgpu-lint.toml"),
        "ignore = [\"policy-quoted\"]\n",
    )
    .unwrap();
    let text =
        "cgpu:\n  policy: \"1\"\n  financeCloudImageTag: v1.0.7-fin\n  checkRegions: \"true\"\n";
    let inside = root.join("values.yaml");
    std::fs::write(&inside, text).unwrap();
    let outside = dir.path().join("elsewhere.yaml");
    std::fs::write(&outside, text).unwrap();

    let (mut c, _) = Client::start(
        &root,
        encoding("utf-32"),
        json!({"region": "cn-shanghai-finance-1"}),
    );
    for path in [&inside, &outside] {
        let u = uri(path);
        c.open(&u, text);
        let mut codes: Vec<String> = c
            .diagnostics(&u, Some(1))
            .iter()
            .map(|d| d["code"].as_str().unwrap().to_string())
            .collect();
        codes.sort();
        // The config's ignore applies, the region (finance) makes the finance tag's deadlock count;
        // `check` run in the workspace with --region says the same.
        let run = bin()
            .current_dir(&root)
            .args([
                "check",
                "--format",
                "json",
                "--region",
                "cn-shanghai-finance-1",
                path.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let json: Value = serde_json::from_slice(&run.stdout).unwrap();
        let mut want: Vec<String> = json["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["rule"].as_str().unwrap().to_string())
            .collect();
        want.sort();
        assert_eq!(codes, want, "{}", path.display());
        assert_eq!(
            codes,
            ["string-boolean", "tag-known-deadlock"],
            "{}",
            path.display()
        );
        // Fix all = `fix` run in the workspace: the config's ignored rule (policy-quoted) is not
        // fixed, the string boolean is.
        let whole =
            json!({"start": {"line": 0, "character": 0}, "end": {"line": 99, "character": 0}});
        let a = c.request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": u}, "range": whole, "context": {"diagnostics": [], "only": ["source.fixAll.cgpu-lint"]}}),
        );
        let fixed = apply(text, a[0]["edit"]["changes"][&u].as_array().unwrap());
        let out = bin()
            .current_dir(&root)
            .args([
                "fix",
                "--stdout",
                "--region",
                "cn-shanghai-finance-1",
                path.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert_eq!(fixed, String::from_utf8(out.stdout).unwrap());
        assert!(
            fixed.contains("policy: \"1\"") && fixed.contains("checkRegions: true"),
            "{fixed}"
        );
    }
    assert_eq!(c.finish(), 0);
}

#[test]
fn a_values_stack_reports_where_the_value_was_set() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("base.yaml"),
        "cgpu:\n  policy: 1\n  tag: v1.5.20-3c9d1e7-aliyun\n",
    )
    .unwrap();
    let prod = "cgpu:\n  policy: 9\n";
    std::fs::write(root.join("prod.yaml"), prod).unwrap();
    let (mut c, _) = Client::start(
        root,
        encoding("utf-32"),
        json!({"stack": ["base.yaml", "prod.yaml"]}),
    );
    let u = uri(&root.join("prod.yaml"));
    c.open(&u, prod);
    let d = c.diagnostics(&u, Some(1));
    let codes: Vec<&str> = d.iter().map(|d| d["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["policy-out-of-range"], "{d:#?}");
    // On its own the stack's base has the deadlock tag of the chart defaults overridden: nothing
    // to report; `check --stack` agrees.
    let run = bin()
        .current_dir(root)
        .args([
            "check",
            "--format",
            "json",
            "--stack",
            "base.yaml",
            "prod.yaml",
        ])
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&run.stdout).unwrap();
    let rules: Vec<&str> = json["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["policy-out-of-range"]);
    // An edit in the editor (not yet saved) counts.
    c.notify("textDocument/didChange", json!({"textDocument": {"uri": u, "version": 2}, "contentChanges": [{"text": "cgpu:\n  policy: 2\n"}]}));
    let d = c.diagnostics(&u, Some(2));
    let codes: Vec<&str> = d.iter().map(|d| d["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["policy-weight-hint"]);
}

#[test]
fn an_edit_to_one_stack_member_refreshes_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let base = "cgpu:\n  policy: 1\n  tag: v1.5.3-8d3fc1b-aliyun\n";
    std::fs::write(root.join("base.yaml"), base).unwrap();
    std::fs::write(root.join("prod.yaml"), "cgpu:\n  policy: 1\n").unwrap();
    let (mut c, _) = Client::start(
        root,
        encoding("utf-32"),
        json!({"stack": ["base.yaml", "prod.yaml"]}),
    );
    let bu = uri(&root.join("base.yaml"));
    let pu = uri(&root.join("prod.yaml"));
    c.open(&bu, base);
    let codes = |d: Vec<Value>| {
        d.iter()
            .map(|d| d["code"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    // The base's tag is in force: its deadlock is reported in the base.
    assert_eq!(codes(c.diagnostics(&bu, Some(1))), ["tag-known-deadlock"]);
    c.open(&pu, "cgpu:\n  policy: 1\n");
    assert!(c.diagnostics(&pu, Some(1)).is_empty());
    // Opening a member re-lints the others.
    assert_eq!(codes(c.diagnostics(&bu, Some(1))), ["tag-known-deadlock"]);
    // prod overrides the tag (unsaved): the base's finding goes away.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": pu, "version": 2}, "contentChanges": [{"text": "cgpu:\n  policy: 1\n  tag: v1.5.20-3c9d1e7-aliyun\n"}]}),
    );
    assert!(c.diagnostics(&pu, Some(2)).is_empty());
    assert!(
        c.diagnostics(&bu, Some(1)).is_empty(),
        "the base is re-published without the overridden tag's finding"
    );
}

#[test]
fn a_document_over_max_file_size_is_not_checked_and_the_user_is_told() {
    let (mut c, _) = Client::start(&fixtures(), json!({}), json!({"maxFileSize": 100}));
    let u = "file:///nowhere/big.yaml";
    let text = format!("cgpu:\n  policy: \"1\"\n{}", "# padding\n".repeat(20));
    c.open(u, &text);
    let m = c.wait_for(|m| m["method"] == "window/showMessage");
    let msg = m["params"]["message"].as_str().unwrap();
    assert!(
        msg.contains("/nowhere/big.yaml")
            && msg.contains("100-byte limit")
            && msg.contains("not checked"),
        "{msg}"
    );
    assert!(c.diagnostics(u, Some(1)).is_empty());
    // A small one is checked as usual.
    c.open("file:///nowhere/small.yaml", "cgpu:\n  policy: \"1\"\n");
    assert_eq!(
        c.diagnostics("file:///nowhere/small.yaml", Some(1))[0]["code"],
        "policy-quoted"
    );
    assert_eq!(c.finish(), 0);
}

/// A UTF-16 position → byte offset, written independently of the server's.
fn utf16_offset(text: &str, line: usize, character: usize) -> usize {
    let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
    let mut units = 0;
    for (i, ch) in text[start..].char_indices() {
        if ch == '\n' || units >= character {
            return start + i;
        }
        units += ch.len_utf16();
    }
    text.len()
}

/// (line, character-column) of `check` (1-based, characters) → an LSP UTF-16 position.
fn utf16_position(text: &str, line: u64, column: u64) -> (u64, u64) {
    let l = text
        .split_inclusive('\n')
        .nth(line as usize - 1)
        .unwrap_or("");
    let units: usize = l
        .chars()
        .take(column as usize - 1)
        .map(char::len_utf16)
        .sum();
    (line - 1, units as u64)
}

/// Random incremental edits (UTF-16 ranges, multi-byte and astral text, CRLF, broken YAML) keep
/// the server's copy of the document and its findings equal to what `check` says about the same
/// bytes, after every edit.
#[test]
fn random_incremental_edits_match_check_after_every_edit() {
    let pieces = [
        "\"1\"",
        "yes",
        "On",
        "policy: ",
        "\n  ",
        "é",
        "😀",
        "\r\n",
        ": ",
        "- a=b\n",
        "{",
        "}",
        "[",
        "#",
        "  enabled: \"false\"\n",
        "tag: v1.5.3-8d3fc1b-aliyun",
        "'",
        "&a ",
        "*a",
        "polcy: 2\n",
        "",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: usize| -> usize {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let (mut c, _) = Client::start(&fixtures(), json!({}), json!({"debounceMs": 0}));
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("doc.yaml");
    let u = uri(&file);
    let severities = json!({"error": 1, "warning": 2, "info": 3});
    for name in [
        "values-warn-yaml11-scalars-nodeselector",
        "values-invalid-duplicate-keys",
        "values-warn-unknown-keys-typo",
    ] {
        let mut text = std::fs::read_to_string(fixtures().join(format!("{name}.yaml"))).unwrap();
        c.open(&u, &text);
        c.diagnostics(&u, Some(1));
        for version in 2..42 {
            let lines = text.split_inclusive('\n').count().max(1);
            let (l1, c1) = (next(lines), next(30));
            let (l2, c2) = if next(2) == 0 {
                (l1, c1 + next(6))
            } else {
                (l1 + next(3), next(30))
            };
            // Never between the \r and \n of a CRLF: no lone \r is made, whose line break
            // counts for LSP but not for `check`'s line numbers.
            let unsplit = |o: usize| {
                if o > 0 && text[..o].ends_with('\r') {
                    o - 1
                } else {
                    o
                }
            };
            let a = unsplit(utf16_offset(&text, l1, c1));
            let b = unsplit(utf16_offset(&text, l2, c2)).max(a);
            // The positions the server gets are those of the offsets (clamped to line ends).
            let pos = |o: usize| {
                let line = text[..o].matches('\n').count();
                let start = text[..o].rfind('\n').map_or(0, |i| i + 1);
                json!({"line": line, "character": text[start..o].encode_utf16().count()})
            };
            let insert = pieces[next(pieces.len())];
            let range = json!({"start": pos(a), "end": pos(b)});
            text.replace_range(a..b, insert);
            c.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": u, "version": version}, "contentChanges": [{"range": range, "text": insert}]}),
            );
            let got = c.diagnostics(&u, Some(version));
            std::fs::write(&file, &text).unwrap();
            let run = check_json(&[file.to_str().unwrap()]);
            let mut want: Vec<String> = run
                .diagnostics()
                .iter()
                .map(|d| {
                    let n = |k: &str| d[k].as_u64().unwrap();
                    let s = utf16_position(&text, n("line"), n("column"));
                    let e = utf16_position(&text, n("end_line"), n("end_column"));
                    format!(
                        "{} {} {s:?}-{e:?} {}",
                        d["rule"],
                        severities[d["severity"].as_str().unwrap()],
                        d["message"].as_str().unwrap()
                    )
                })
                .collect();
            let mut have: Vec<String> = got
                .iter()
                .map(|d| {
                    let p = |k: &str| {
                        (
                            d["range"][k]["line"].as_u64().unwrap(),
                            d["range"][k]["character"].as_u64().unwrap(),
                        )
                    };
                    let msg = d["message"]
                        .as_str()
                        .unwrap()
                        .split("\nhelp: ")
                        .next()
                        .unwrap();
                    format!(
                        "{} {} {:?}-{:?} {msg}",
                        d["code"],
                        d["severity"],
                        p("start"),
                        p("end")
                    )
                })
                .collect();
            want.sort();
            have.sort();
            assert_eq!(have, want, "{name} after edit {version}:\n{text}");
        }
        c.notify("textDocument/didClose", json!({"textDocument": {"uri": u}}));
        c.diagnostics(&u, None);
    }
    assert_eq!(c.finish(), 0);
}

/// The language server in an umbrella chart's values, a HelmRelease, an Application
/// (the `values: |` string too) and a helmfile: diagnostics equal `check`'s, hover at the nested
/// `cgpu:` block.
#[test]
fn gitops_forms_get_diagnostics_and_hover() {
    let (mut c, _) = Client::start(&fixtures(), encoding("utf-32"), Value::Null);
    let dir = fixtures().join("gitops");
    let mut compared = 0;
    for f in [
        "umbrella/values.yaml",
        "helmrelease.yaml",
        "application.yaml",
        "helmfile.yaml",
    ] {
        compared += assert_server_equals_check(&mut c, &dir.join(f));
    }
    assert!(compared >= 6, "only {compared} findings compared");
    // `policy: 7` under spec.values (line 31, 0-based 30) of the HelmRelease.
    let path = dir.join("helmrelease.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let line = text.lines().position(|l| l == "      policy: 7").unwrap() as u32;
    let v = hover_text(&mut c, &uri(&path), line, 8)["contents"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(v.contains("cgpu.policy"), "{v}");
    // Inside the ConfigMap's values string: `imagePullPolicy: always`.
    let line = text
        .lines()
        .position(|l| l.trim() == "imagePullPolicy: always")
        .unwrap() as u32;
    let v = hover_text(&mut c, &uri(&path), line, 8)["contents"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(v.contains("cgpu.imagePullPolicy"), "{v}");
    // An Application's `values: |` string.
    let u = "file:///nowhere/app.yaml";
    c.open(
        u,
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: gpu\nspec:\n  source:\n    chart: ack-ai-installer\n    helm:\n      values: |\n        cgpu:\n          policy: 2\n",
    );
    let d = c.diagnostics(u, Some(1));
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["code"], "policy-weight-hint");
    assert_eq!(d[0]["range"]["start"], json!({"line": 10, "character": 18}));
    let v = hover_text(&mut c, u, 10, 18)["contents"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        v.starts_with("**cGPU policy 2: weight-based preemptive**"),
        "{v}"
    );
}

/// The GitOps forms (Argo CD parameters over the values, an ApplicationSet's
/// template with a `values: |` string, a dead `values` string): the server publishes exactly
/// what `check` prints for the same bytes. (A finding in a values file that a helmfile or a
/// kustomization names belongs to that file: the editor shows it there, not on the release.)
#[test]
fn diagnostics_equal_check_on_the_gitops_forms() {
    let dir = fixtures().join("gitops-forms");
    let (mut c, _) = Client::start(&dir, encoding("utf-16"), Value::Null);
    let mut compared = 0;
    for name in [
        "application-parameters.yaml",
        "applicationset.yaml",
        "application-dead-values.yaml",
    ] {
        compared += assert_server_equals_check(&mut c, &dir.join(name));
    }
    assert!(compared >= 7, "only {compared} findings compared");
    assert_eq!(c.finish(), 0);
}

/// A Markdown document: the server publishes what `check` finds in its ```yaml
/// blocks, at the Markdown file's positions.
#[test]
fn a_markdown_document_gets_the_findings_of_its_yaml_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runbook.md");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/runbook.md"),
        &path,
    )
    .unwrap();
    let (mut c, _) = Client::start(dir.path(), encoding("utf-32"), Value::Null);
    assert_eq!(assert_server_equals_check(&mut c, &path), 2);
    assert_eq!(c.finish(), 0);
}

// The editor's fix-all follows `[fix] extend-safe` of the workspace's config
// and `extendUnsafeFixes` of the initializationOptions, as `fix` does with the config and
// `--extend-unsafe-fixes`.
#[test]
fn fix_all_follows_the_fix_classes_of_config_and_initialization_options() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(
        root.join(".cgpu-lint.toml"),
        "[fix]\nextend-safe = [\"string-boolean\"]\n",
    )
    .unwrap();
    let text = "cgpu:\n  enabled: \"false\"\n  policy: 3.0\n";
    let path = root.join("values.yaml");
    std::fs::write(&path, text).unwrap();
    let (mut c, _) = Client::start(
        &root,
        encoding("utf-16"),
        json!({"extendUnsafeFixes": ["policy-whole-float"]}),
    );
    let u = uri(&path);
    c.open(&u, text);
    c.diagnostics(&u, Some(1));
    let whole = json!({"start": {"line": 0, "character": 0}, "end": {"line": 99, "character": 0}});
    let a = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": u}, "range": whole, "context": {"diagnostics": [], "only": ["source.fixAll.cgpu-lint"]}}),
    );
    let fixed = apply(text, a[0]["edit"]["changes"][&u].as_array().unwrap());
    // The promoted string-boolean fix is applied, the demoted policy-whole-float one is not.
    assert_eq!(fixed, "cgpu:\n  enabled: false\n  policy: 3.0\n");
    let out = bin()
        .current_dir(&root)
        .args([
            "fix",
            "--stdout",
            "--extend-unsafe-fixes",
            "policy-whole-float",
            path.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(fixed, String::from_utf8(out.stdout).unwrap());
    assert_eq!(c.finish(), 0);
}
