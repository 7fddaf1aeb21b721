//! The oracle: real Helm 3.18 and Helm 4.2 (target/tools, installed by scripts/install-test-tools)
//! read every generated values case through charts-fixtures/helm-probe, whose template prints
//! `.Values` as JSON (base64, so nothing is lost) and `kindOf`/`hasKey` per cgpu key. For each
//! case and each Helm version the runner checks:
//!
//! (a) `cgpu-lint values --helm V --stack …` prints Helm's JSON byte for byte;
//! (b) Helm refuses the values ⇔ `cgpu-lint values` fails with `file:line:column:`;
//! (c) Helm accepts ⇒ `cgpu-lint check --stack` reports no `yaml-syntax`.
//!
//! Cases come from a deterministic generator (no randomness: the same cases every run), by
//! class. Speed: cases that are one value under one cgpu key are run in batches (one values file
//! holding many of them under keys c0, c1, …); a batch either agrees as a whole, byte for byte,
//! or its cases are run one by one. Helm runs in worker threads (`ORACLE_THREADS`, default 3).
//! Size: `ORACLE_EVERY=N` runs the first case of every class and each N-th after it, plus the
//! known disagreements (default 3; `scripts/test --full` runs every case, `ORACLE_EVERY=1`).
//!
//! The only disagreements allowed are the deliberate limits in [`LIMITS`], each named, and the
//! cases listed in tests/helm_oracle_known.txt (disagreements found and not fixed yet: the list
//! must shrink, never grow; a listed case that agrees fails the test until it is removed).
//! A summary (cases per class, agreement) is printed and written to
//! target/helm-oracle-report.txt.

use crate::common::helm::{HelmReading, compare};
use crate::common::{self, Out};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The binary under test, copied once so that a rebuild during a long run cannot swap it.
fn lint_bin() -> PathBuf {
    static COPY: std::sync::OnceLock<(tempfile::TempDir, PathBuf)> = std::sync::OnceLock::new();
    COPY.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let to = dir.path().join("cgpu-lint");
        std::fs::copy(env!("CARGO_BIN_EXE_cgpu-lint"), &to).unwrap();
        (dir, to)
    })
    .1
    .clone()
}

// ---------------------------------------------------------------------------------------------
// Cases

#[derive(Clone, Debug)]
struct Case {
    id: String,
    class: &'static str,
    /// `-f` files in order (bytes: some cases are not UTF-8).
    files: Vec<Vec<u8>>,
    /// (flag, argument)
    sets: Vec<(&'static str, String)>,
    /// Set when the case is `cgpu:\n  KEY: VALUE\n` and may run in a batch: (KEY, VALUE).
    fragment: Option<(String, String)>,
}

/// A deliberate limit: a case Helm reads and cgpu-lint refuses (or the reverse) on purpose.
struct Limit {
    class: &'static str,
    why: &'static str,
}

const LIMITS: &[Limit] = &[
    Limit {
        class: "limit-utf8",
        why: "cgpu-lint reads UTF-8 only; Helm (go-yaml) also reads UTF-16 with a byte-order mark",
    },
    Limit {
        class: "limit-depth",
        why: "cgpu-lint refuses nesting deeper than 256 levels; go-yaml v2.4 (Helm's) stops at 10,000",
    },
    Limit {
        class: "limit-alias",
        why: "cgpu-lint refuses alias expansion past 100,000 nodes; go-yaml v2 expands on (a billion-laughs file exhausts Helm's memory)",
    },
    Limit {
        class: "limit-collision",
        why: "two keys that become one string (`1:` and `\"1\":`): Helm keeps one of them at random (Go map order); cgpu-lint refuses the file",
    },
];

fn scalar_spellings() -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for b in [
        "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off",
        "OFF", "true", "True", "TRUE", "false", "False", "FALSE", "yEs", "tRUE", "oN", "nO",
        "fAlse",
    ] {
        v.push(b.into());
    }
    for n in ["~", "null", "Null", "NULL", "nULL", "", "~x", "null1"] {
        v.push(n.into());
    }
    for i in [
        "0",
        "1",
        "3",
        "-1",
        "+1",
        "+3",
        "-0",
        "00",
        "01",
        "03",
        "07",
        "08",
        "09",
        "010",
        "017",
        "018",
        "0x1F",
        "0X1f",
        "-0x1F",
        "+0x1F",
        "0x",
        "0xG",
        "0o17",
        "0O17",
        "0o8",
        "0b101",
        "0B11",
        "-0b101",
        "0b2",
        "1_000",
        "1__0",
        "_1",
        "1_",
        "+1_0",
        "0_7",
        "0x_1F",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "18446744073709551615",
        "18446744073709551616",
        "+18446744073709551615",
        "99999999999999999999",
        "0777777777777777777777",
        "0x7FFFFFFFFFFFFFFF",
        "0xFFFFFFFFFFFFFFFF",
        "0x10000000000000000",
        "1,000",
        "1 000",
        "٣",
    ] {
        v.push(i.into());
    }
    for f in [
        "3.0",
        "3.",
        "3e0",
        "3E0",
        "3e+0",
        "3.0e0",
        "3.5",
        "0.5",
        ".5",
        "-.5",
        "+.5",
        "1.",
        "-1.",
        "1e3",
        "1E3",
        "1e-3",
        "1e+3",
        "1.5e3",
        "1e999",
        "-1e999",
        "1e-999",
        "1e308",
        "1.8e308",
        "4.9e-324",
        "2e-324",
        "1e21",
        "1e20",
        "1e-6",
        "1e-7",
        "123456789.123456789",
        "0.1",
        "0.30000000000000004",
        "1_000.5",
        "1_0.5_0",
        "1.5_",
        "._5",
        ".inf",
        ".Inf",
        ".INF",
        "+.inf",
        "-.inf",
        "-.Inf",
        ".iNf",
        "inf",
        "Infinity",
        ".nan",
        ".NaN",
        ".NAN",
        "nan",
        "NaN",
        "0x1p3",
        "0x1.8p1",
        "1e",
        "1e+",
        "e3",
        ".",
        "..5",
        "1.2.3",
        "3.0.0",
        "09.5",
        "08.0",
        "-08",
        "+08e1",
        "1e3_0",
        "6.02e23",
        "-0.0",
        "0.0",
        "-0",
        "1.0e-7",
        "5e-324",
    ] {
        v.push(f.into());
    }
    for s in [
        "v1.5.3",
        "v1.5.7-8d3fc1b-aliyun",
        "1.5.3",
        "1-2",
        "1:2",
        "1:30",
        "190:20:30",
        "12:00",
        "2001-12-14",
        "2001-12-14t21:59:43.10-05:00",
        "2001-12-14 21:59:43.10",
        "2001-1-2",
        "2001-13-45",
        "1999-99-99",
        "-",
        "--",
        "-a",
        "+",
        "+a",
        ".a",
        "a b",
        "preemptive",
        "IfNotPresent",
        "Always",
        "<<",
        "=",
        "!",
        "&",
        "%x",
        "@x",
        "`x",
        "a#b",
        "a #b",
        "é",
        "日本",
        "x: y",
        "[a]",
        "{a: b}",
        "'q'",
        "\"d\"",
        "a\\b",
        "\\/",
        "1e3x",
        "0x1Fg",
        "0b",
        "0o",
        "true1",
        "yes!",
        "Yes.",
        "0.",
        "-.",
        "+.",
        "-.e1",
    ] {
        v.push(s.into());
    }
    v
}

/// How a spelling is written in YAML: plain (when it can be), single- and double-quoted.
fn written_forms(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let plain_ok = !s.is_empty()
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.starts_with([
            '[', '{', '\'', '"', '!', '&', '*', '%', '@', '`', '|', '>', '#',
        ])
        && !s.starts_with("- ")
        && s != "?"
        && !s.starts_with("? ");
    if plain_ok || s.is_empty() {
        out.push(s.to_string());
    }
    out.push(format!("'{}'", s.replace('\'', "''")));
    out.push(format!(
        "\"{}\"",
        s.replace('\\', "\\\\").replace('"', "\\\"")
    ));
    out
}

fn frag_case(class: &'static str, n: &mut usize, key: &str, value: &str) -> Case {
    *n += 1;
    Case {
        id: format!("{class}/{n:04}"),
        class,
        files: vec![format!("cgpu:\n  {key}: {value}\n").into_bytes()],
        sets: Vec::new(),
        fragment: Some((key.to_string(), value.to_string())),
    }
}

fn file_case(class: &'static str, n: &mut usize, files: Vec<Vec<u8>>) -> Case {
    *n += 1;
    Case {
        id: format!("{class}/{n:04}"),
        class,
        files,
        sets: Vec::new(),
        fragment: None,
    }
}

fn generate() -> Vec<Case> {
    let mut cases = Vec::new();

    // Scalar spellings, under the keys of each type.
    let mut n = 0;
    for s in scalar_spellings() {
        let forms = written_forms(&s);
        for (i, w) in forms.iter().enumerate() {
            // Plain forms under three keys; quoted forms (always strings) under one.
            let keys: &[&str] = if i == 0 && forms.len() == 3 {
                &["policy", "enabled", "image"]
            } else {
                &["tag"]
            };
            for k in keys {
                cases.push(frag_case("scalar", &mut n, k, w));
            }
        }
    }

    // Tags.
    let mut n = 0;
    let tags = [
        "!!str",
        "!!int",
        "!!float",
        "!!bool",
        "!!null",
        "!!binary",
        "!!timestamp",
        "!foo",
        "!",
        "!!map",
        "!!seq",
        "!!merge",
        "!<tag:yaml.org,2002:int>",
        "!<tag:yaml.org,2002:str>",
        "!!set",
        "!!omap",
        "!e!x",
    ];
    let tagged_values = [
        "1",
        "abc",
        "",
        "3.0",
        "true",
        "false",
        "~",
        "null",
        "2001-12-14",
        "aGVsbG8=",
        "\"1\"",
        "'true'",
        "0x1F",
        "08",
        "1e999",
        ".inf",
        "aGVsbG8",
        "/w==",
        "//79",
        "\"aGVs\\nbG8=\"",
        "18446744073709551615",
        "yes",
        "-",
        "1_000",
    ];
    for t in tags {
        for v in tagged_values {
            cases.push(frag_case("tag", &mut n, "policy", &format!("{t} {v}")));
        }
    }
    for t in ["!!map", "!!seq", "!!str", "!foo", "!!omap", "!!set"] {
        for v in ["{a: 1}", "[1, 2]", "{}", "[]"] {
            cases.push(frag_case(
                "tag",
                &mut n,
                "nodeSelector",
                &format!("{t} {v}"),
            ));
        }
    }
    cases.push(file_case(
        "tag",
        &mut n,
        vec![b"%TAG !e! tag:example.com,2000:\n---\ncgpu:\n  policy: !e!x 3\n".to_vec()],
    ));
    cases.push(file_case(
        "tag",
        &mut n,
        vec![b"%TAG !! tag:example.com,2000:\n---\ncgpu:\n  policy: !!int 3\n".to_vec()],
    ));

    // Merge keys.
    let mut n = 0;
    let merges = [
        "base: &b {policy: 2, tag: x}\ncgpu:\n  <<: *b\n",
        "base: &b {policy: 2, tag: x}\ncgpu:\n  <<: *b\n  policy: 3\n",
        "base: &b {policy: 2, tag: x}\ncgpu:\n  policy: 3\n  <<: *b\n",
        "a: &a {policy: 1}\nb: &b {policy: 2, image: i}\ncgpu:\n  <<: [*a, *b]\n",
        "a: &a {policy: 1}\nb: &b {policy: 2, image: i}\ncgpu:\n  <<: [*b, *a]\n",
        "cgpu:\n  <<: {policy: 4}\n",
        "cgpu:\n  <<: [{policy: 4}, {policy: 5, tag: t}]\n",
        "cgpu:\n  !!str <<: {policy: 4}\n",
        "cgpu:\n  \"<<\": {policy: 4}\n",
        "cgpu:\n  '<<': x\n",
        "cgpu:\n  !!merge <<: {policy: 4}\n",
        "l: &l [1, 2]\ncgpu:\n  <<: *l\n",
        // A list of mappings behind an alias: Helm refuses it, merges it written in place.
        "l: &l [{policy: 1}, {tag: t}]\ncgpu:\n  <<: *l\n",
        "cgpu:\n  <<: [1, 2]\n",
        "cgpu:\n  <<: 3\n",
        "cgpu:\n  <<: ~\n",
        "cgpu:\n  <<: x\n",
        "s: &s x\ncgpu:\n  <<: *s\n",
        "a: &a {policy: 1}\ncgpu:\n  <<: [*a, [1]]\n",
        "a: &a {policy: 1}\ncgpu:\n  <<: *a\n  <<: {policy: 2}\n",
        "a: &a {nodeSelector: {x: 1}}\ncgpu:\n  <<: *a\n  nodeSelector: {y: 2}\n",
        "a: &a {x: &x {y: 1}}\ncgpu:\n  nodeSelector:\n    <<: *x\n",
        "<<: {cgpu: {policy: 2}}\n",
        "<<: {cgpu: {policy: 2}}\ncgpu: {tag: t}\n",
        "cgpu: &c\n  policy: 2\nother:\n  <<: *c\n",
        "cgpu:\n  <<:\n  - {policy: 2}\n  - {tag: t}\n",
        "cgpu:\n  << : {policy: 4}\n",
        "cgpu: {<<: {policy: 4}, tag: a}\n",
        "x: &x {a: 1}\ny: &y {<<: *x, b: 2}\ncgpu:\n  nodeSelector: {<<: *y, c: 3}\n",
    ];
    for m in merges {
        cases.push(file_case("merge", &mut n, vec![m.as_bytes().to_vec()]));
    }

    // -f layering with nulls.
    let mut n = 0;
    let layer_files = [
        "cgpu: null\n",
        "cgpu: ~\n",
        "cgpu: {}\n",
        "cgpu: {policy: 3}\n",
        "cgpu: {tag: null}\n",
        "cgpu: {policy: null, tag: t}\n",
        "~\n",
        "",
        "# only a comment\n",
        "cgpu: {nodeSelector: {pool: null}}\n",
        "cgpu: {nodeSelector: null}\n",
        "cgpu: {nodeSelector: {a: b}}\n",
        "cgpu: 5\n",
        "cgpu: [1]\n",
        "other: x\n",
        "other: null\n",
        "cgpu: {nodeSelector: x}\n",
        "cgpu: {newKey: null}\n",
        "cgpu: {enabled: false, policy: 2.0}\n",
    ];
    for a in layer_files {
        for b in layer_files {
            cases.push(file_case(
                "layering",
                &mut n,
                vec![a.as_bytes().to_vec(), b.as_bytes().to_vec()],
            ));
        }
    }
    for (a, b, c) in [
        (0, 3, 4),
        (3, 0, 3),
        (9, 10, 11),
        (11, 10, 9),
        (3, 6, 4),
        (12, 2, 3),
        (13, 3, 0),
        (4, 3, 0),
    ] {
        cases.push(file_case(
            "layering",
            &mut n,
            vec![
                layer_files[a].as_bytes().to_vec(),
                layer_files[b].as_bytes().to_vec(),
                layer_files[c].as_bytes().to_vec(),
            ],
        ));
    }

    // Multi-document files.
    let mut n = 0;
    let docs = [
        "",
        "# comment\n",
        "cgpu: {policy: 3}\n",
        "cgpu: {policy: 9}\n",
        "~\n",
        "[1]\n",
        "x: 1\n",
        "cgpu: {tag: null}\n",
        "cgpu: null\n",
        "cgpu: {nodeSelector: {a: b}}\n",
        "x\n",
    ];
    let seps = ["---\n", "--- # c\n", "---  \n"];
    for (si, sep) in seps.iter().enumerate() {
        for a in docs {
            for b in docs {
                if si > 0 && (a.len() + b.len()) % 3 != 0 {
                    continue;
                }
                cases.push(file_case(
                    "multi-document",
                    &mut n,
                    vec![format!("{a}{sep}{b}").into_bytes()],
                ));
            }
        }
    }
    for text in [
        "---\ncgpu: {policy: 3}\n",
        "---\n---\ncgpu: {policy: 3}\n",
        "cgpu: {policy: 3}\n...\n",
        "cgpu: {policy: 3}\n...\n---\ncgpu: {policy: 4}\n",
        "cgpu: {policy: 3}\n--- {a: 1}\n",
        "--- cgpu\n",
        "--- {cgpu: {policy: 2}}\n",
        "cgpu: {policy: 3}\n----\n",
        "cgpu: {policy: 3}\n---\n[\n",
        "cgpu: {policy: 3}\n---\n: x\n",
        "cgpu:\n  tag: |\n    a\n---\ncgpu: {policy: 4}\n",
        "%YAML 1.1\n---\ncgpu: {policy: 3}\n",
        "%YAML 1.2\n---\ncgpu: {policy: 3}\n",
        "%YAML 1.1\n---\ncgpu: {policy: 3}\n---\ncgpu: {tag: t}\n",
        "cgpu: {policy: 3}\n---\n\u{feff}cgpu: {tag: t}\n",
        "cgpu: {policy: 3}\n---\ncgpu: {policy: 3}\n---\ncgpu: {image: i}\n",
        "cgpu: {policy: 3}\n--- \n---\n",
        "cgpu:\n  policy: 3\n---\ncgpu:\n  nodeSelector:\n    a: b\n---\ncgpu:\n  nodeSelector:\n    c: d\n",
    ] {
        cases.push(file_case(
            "multi-document",
            &mut n,
            vec![text.as_bytes().to_vec()],
        ));
    }

    // Key stringification and collisions (under nodeSelector).
    let mut n = 0;
    let keys = [
        "yes",
        "no",
        "on",
        "Off",
        "y",
        "true",
        "True",
        "0x1F",
        "31",
        "\"31\"",
        "'31'",
        "017",
        "15",
        "0o17",
        "1.5",
        "1.50",
        "1e3",
        "1000",
        "1e6",
        "1000000.0",
        "0.1",
        "3.14159265358979",
        "1e-5",
        "-0",
        "0",
        "-1",
        "+1",
        "9223372036854775807",
        "9223372036854775808",
        "18446744073709551615",
        ".inf",
        "-.inf",
        ".nan",
        "~",
        "null",
        "\"\"",
        "2001-12-14",
        "1_000",
        "08",
        "'yes'",
        "1e999",
        "123456789",
        "1234567.0",
        "0.000012345",
        "16777217.0",
        "-1.5",
        "+.5",
    ];
    for k in keys {
        cases.push(file_case(
            "keys",
            &mut n,
            vec![format!("cgpu:\n  nodeSelector:\n    {k}: v\n").into_bytes()],
        ));
    }
    let pair_keys = [
        "yes", "true", "\"true\"", "0x1F", "31", "\"31\"", "1.5", "1.50", "1e3", "1000", "1000.0",
        "\"1000\"", "~", "017", "15",
    ];
    let mut nc = 0;
    for (i, a) in pair_keys.iter().enumerate() {
        for b in &pair_keys[i + 1..] {
            let text = format!("cgpu:\n  nodeSelector:\n    {a}: first\n    {b}: second\n");
            let class = if collides(a, b) {
                "limit-collision"
            } else {
                "keys"
            };
            let counter = if class == "keys" { &mut n } else { &mut nc };
            cases.push(file_case(class, counter, vec![text.into_bytes()]));
        }
    }
    for k in ["[a, b]", "{a: 1}", "? [a]", "? {a: 1}"] {
        let text = if k.starts_with('?') {
            format!("cgpu:\n  nodeSelector:\n    {k}\n    : v\n")
        } else {
            format!("cgpu:\n  nodeSelector: {{{k}: v}}\n")
        };
        cases.push(file_case("keys", &mut n, vec![text.into_bytes()]));
    }

    // Bytes and constructs.
    let mut n = 0;
    let texts: Vec<Vec<u8>> = vec![
        b"cgpu:\n  tag: a\xc2\x85b\n".to_vec(),
        "cgpu:\n  tag: a\u{2028}b\n".into(),
        "cgpu:\n  tag: a\u{2029}b\n".into(),
        "cgpu:\n  tag: \"a\u{2028}b\"\n".into(),
        "cgpu:\n  tag: a\u{85}\n".into(),
        "cgpu:\n  tag: \"\\/\"\n".into(),
        "cgpu:\n  tag: \"\\x41\\u00e9\\U0001F600\"\n".into(),
        "cgpu:\n  tag: \"\\e\\a\\0\\N\\_\\L\\P\"\n".into(),
        "cgpu:\n  tag: \"\\q\"\n".into(),
        "cgpu:\n  tag: \"\\\n   x\"\n".into(),
        "cgpu:\n \tpolicy: 1\n".into(),
        "cgpu:\n  policy:\t1\n".into(),
        "cgpu:\n\tpolicy: 1\n".into(),
        "cgpu: {policy:\t1}\n".into(),
        "cgpu:\n  policy: 1\t\n".into(),
        "cgpu:\n  policy: 1 \t# c\n".into(),
        "cgpu:\n  policy: -\n".into(),
        "cgpu:\n  policy: - \n".into(),
        "cgpu:\n  policy: -1\n".into(),
        "cgpu:\n  tag: -x\n".into(),
        "\u{feff}cgpu:\n  policy: 2\n".into(),
        "\u{feff}\u{feff}cgpu:\n  policy: 2\n".into(),
        "cgpu:\r\n  policy: 2\r\n".into(),
        "cgpu:\r  policy: 2\r".into(),
        "cgpu:\n  policy: 2".into(),
        "cgpu:\n  tag: a\u{1}b\n".into(),
        "cgpu:\n  tag: \"a\u{1}b\"\n".into(),
        "cgpu:\n  tag: \"a\\u0001b\"\n".into(),
        "cgpu:\n  tag: \"<a&b>\"\n".into(),
        "cgpu:\n  tag: a\u{7f}b\n".into(),
        "cgpu:\n  tag: a\u{a0}b\n".into(),
        "cgpu:\n  tag: a\u{fffe}b\n".into(),
        "cgpu:\n  tag: \"\\uD800\"\n".into(),
        "cgpu:\n  tag: \"\\ud83d\\ude00\"\n".into(),
        "cgpu:\n  tag: |\n    a\n    b\n".into(),
        "cgpu:\n  tag: |-\n    a\n".into(),
        "cgpu:\n  tag: |+\n    a\n\n".into(),
        "cgpu:\n  tag: >\n    a\n    b\n\n    c\n".into(),
        "cgpu:\n  tag: |2\n     a\n".into(),
        "cgpu:\n  tag: >-\n\n    a\n".into(),
        "cgpu:\n  tag: a\n    b\n".into(),
        "cgpu:\n  tag: 'a\n\n    b'\n".into(),
        "cgpu:\n  tag: \"a\n    b\"\n".into(),
        "cgpu: {policy: 3,}\n".into(),
        "cgpu: {policy: 3, , tag: a}\n".into(),
        "cgpu: {policy}\n".into(),
        "cgpu: {? policy : 3}\n".into(),
        "cgpu: [a, b,]\n".into(),
        "cgpu:\n  policy: 3\n  policy: 4\n".into(),
        "cgpu:\n  policy: &p 3\n  tag: *p\n".into(),
        "cgpu:\n  policy: *p\n".into(),
        "cgpu:\n  policy: &p\n  tag: *p\n".into(),
        "cgpu: &a\n  policy: 3\n  x: *a\n".into(),
        "cgpu:\n  policy: 3 # comment\n".into(),
        "cgpu:\n  policy: 3# not a comment\n".into(),
        "cgpu:\n  tag: a:b\n".into(),
        "cgpu:\n  tag: a: b\n".into(),
        "cgpu:\n  tag: 'a'b\n".into(),
        "cgpu:\n  tag: `a\n".into(),
        "cgpu:\n  tag: @a\n".into(),
        "cgpu:\n  tag: %a\n".into(),
        "cgpu:\n- a\n".into(),
        "- cgpu\n".into(),
        "cgpu\n".into(),
        "3\n".into(),
        "\"cgpu\"\n".into(),
        "{}\n".into(),
        "[]\n".into(),
        "cgpu: {\n".into(),
        "cgpu: ]\n".into(),
        "cgpu:\n  policy: 3\n bad: 1\n".into(),
        "cgpu:\n    policy: 3\n  tag: x\n".into(),
        b"cgpu:\n  tag: \xff\n".to_vec(),
        b"cgpu:\n  tag: a\x00b\n".to_vec(),
        "cgpu:\n  tag: \"a\\0b\"\n".into(),
        "%YAML 1.1\ncgpu: {policy: 3}\n".into(),
        "%YAML 1.1\n---\ncgpu: {policy: 3}\n".into(),
        "%YAML 2.0\n---\ncgpu: {policy: 3}\n".into(),
        "%FOO bar\n---\ncgpu: {policy: 3}\n".into(),
        "%YAML 1.1\n%YAML 1.1\n---\ncgpu: {policy: 3}\n".into(),
        "cgpu:\n  ? policy\n  : 3\n".into(),
        "cgpu:\n  ? policy\n".into(),
        "? cgpu\n: {policy: 3}\n".into(),
        "cgpu: !!map\n  policy: 3\n".into(),
        "cgpu:\n  nodeSelector:\n    a: [1, {b: c}]\n".into(),
        "cgpu:\n  nodeSelector: {a: 1.5, b: [yes, ~]}\n".into(),
        "cgpu: {\"policy\": 3, 'tag': \"t\"}\n".into(),
        "{\"cgpu\": {\"policy\": 3}}\n".into(),
        "cgpu: {policy: 3}  # trailing\n# end\n".into(),
        "cgpu:\n  tag: \"\"\n".into(),
        "cgpu:\n  tag: ''\n".into(),
        "cgpu:\n  tag:\n".into(),
        "cgpu:\n  tag:    \n".into(),
        "cgpu:\n  nodeSelector:\n".into(),
        "cgpu:\n  \"a\\u0000b\": 1\n".into(),
        "cgpu:\n  nodeSelector:\n    \"<k>\": v\n".into(),
        "cgpu:\n  nodeSelector:\n    é: v\n    e: w\n    Z: x\n    \"\": y\n".into(),
        "cgpu:\n  tag: !!binary |\n    aGVs\n    bG8=\n".into(),
        "cgpu:\n  tag: !!binary gICA\n".into(),
    ];
    for t in texts {
        cases.push(file_case("bytes", &mut n, vec![t]));
    }

    // --set, --set-string, --set-json.
    let mut n = 0;
    let set_values = [
        "1",
        "0",
        "01",
        "-1",
        "+1",
        "1.5",
        "3.0",
        "1e3",
        "true",
        "TRUE",
        "tRuE",
        "false",
        "null",
        "NULL",
        "yes",
        "",
        "x",
        "9223372036854775807",
        "9223372036854775808",
        "0x1F",
        "{a,b}",
        "{1,2}",
        "{}",
        "a\\,b",
        "v1.5.3",
    ];
    for v in set_values {
        for flag in ["--set", "--set-string"] {
            let mut c = file_case("set", &mut n, vec![]);
            c.sets.push((flag, format!("cgpu.policy={v}")));
            cases.push(c);
        }
    }
    for arg in [
        "cgpu.policy=2,cgpu.tag=t",
        "cgpu.nodeSelector.pool=a",
        "cgpu.nodeSelector.a\\.b/c=x",
        "cgpu.nodeSelector=null",
        "cgpu=null",
        "cgpu.tag=null",
        "cgpu.tag",
        "cgpu.tag=a,",
        "cgpu.tag=a,b",
        "cgpu.x[0]=a",
        "cgpu.x[1]=a",
        "cgpu.x[0].y=1",
        "cgpu.x[0].y=1,cgpu.x[0].z=2",
        "cgpu.x[0][1]=a",
        "cgpu.x[-1]=a",
        "cgpu.x[a]=1",
        "cgpu.x[0]",
        "cgpu..x=1",
        "cgpu.=1",
        "=1",
        "cgpu.policy.x=1",
        "cgpu.policy[0]=1",
        "cgpu.nodeSelector={}",
        "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.aa.bb.cc.dd.ee=1",
        "cgpu.tag=a=b",
        "cgpu.tag=\\{x}",
        "cgpu.tag={x",
        "cgpu.x={a,{b}",
        "cgpu.policy=2 ",
        " cgpu.policy=2",
        "cgpu.x[65537]=1",
    ] {
        for flag in ["--set", "--set-string"] {
            let mut c = file_case("set", &mut n, vec![]);
            c.sets.push((flag, arg.to_string()));
            cases.push(c);
        }
    }
    for arg in [
        "cgpu.policy=3",
        "cgpu.policy=3.0",
        "cgpu.policy=\"3\"",
        "cgpu.nodeSelector={\"a\":\"b\"}",
        "cgpu.nodeSelector={\"a\":1e3}",
        "cgpu={\"policy\":2}",
        "cgpu.policy=null",
        "cgpu.policy=",
        "cgpu.policy=[1,2]",
        "cgpu.policy=tru",
        "cgpu.policy=1,cgpu.tag=\"t\"",
        "cgpu.x[0]={\"a\":1}",
        "{\"cgpu\":{\"policy\":4}}",
        " {\"cgpu\":{\"tag\":null}}",
        "{\"cgpu\":{\"policy\":4}",
        "cgpu.policy=1e400",
        "cgpu.policy=12345678901234567890",
        "cgpu.policy= 5",
    ] {
        let mut c = file_case("set", &mut n, vec![]);
        c.sets.push(("--set-json", arg.to_string()));
        cases.push(c);
    }
    // Order: files, then every --set-json, --set, --set-string.
    for (file, sets) in [
        (
            "cgpu: {policy: 2}\n",
            vec![
                ("--set-string", "cgpu.policy=4"),
                ("--set", "cgpu.policy=3"),
            ],
        ),
        (
            "cgpu: {policy: 2}\n",
            vec![("--set", "cgpu.policy=3"), ("--set-json", "cgpu.policy=5")],
        ),
        (
            "cgpu: {nodeSelector: {a: b}}\n",
            vec![("--set", "cgpu.nodeSelector.c=d")],
        ),
        (
            "cgpu: {nodeSelector: {a: b}}\n",
            vec![("--set", "cgpu.nodeSelector=null")],
        ),
        ("cgpu: {tag: x}\n", vec![("--set", "cgpu.tag.y=1")]),
        ("cgpu: x\n", vec![("--set", "cgpu.policy=1")]),
        ("cgpu: {x: [1, 2]}\n", vec![("--set", "cgpu.x[3]=1")]),
        ("cgpu: {x: [{a: 1}]}\n", vec![("--set", "cgpu.x[0].b=2")]),
        ("cgpu: {x: 5}\n", vec![("--set", "cgpu.x[0]=2")]),
        (
            "cgpu: {policy: 2}\n",
            vec![("--set-json", "{\"cgpu\":{\"tag\":\"t\"}}")],
        ),
    ] {
        let mut c = file_case("set", &mut n, vec![file.as_bytes().to_vec()]);
        c.sets = sets.into_iter().map(|(f, a)| (f, a.to_string())).collect();
        cases.push(c);
    }

    // Deliberate limits.
    let mut n = 0;
    let mut utf16 = vec![0xff, 0xfe];
    for u in "cgpu:\n  policy: 2\n".encode_utf16() {
        utf16.extend_from_slice(&u.to_le_bytes());
    }
    cases.push(file_case("limit-utf8", &mut n, vec![utf16]));
    let mut n = 0;
    let deep = format!(
        "cgpu:\n  nodeSelector: {}1{}\n",
        "[".repeat(300),
        "]".repeat(300)
    );
    cases.push(file_case("limit-depth", &mut n, vec![deep.into_bytes()]));
    let mut n = 0;
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..6 {
        bomb.push_str(&format!(
            "a{i}: &a{i} [{}]\n",
            vec![format!("*a{}", i - 1); 10].join(", ")
        ));
    }
    cases.push(file_case("limit-alias", &mut n, vec![bomb.into_bytes()]));

    cases
}

/// Do two keys become one string for Helm while being different keys to go-yaml?
fn collides(a: &str, b: &str) -> bool {
    let norm = |k: &str| -> (String, &'static str) {
        let k = k.trim_matches(|c| c == '"' || c == '\'');
        match k {
            "yes" | "true" | "True" => ("true".into(), "bool"),
            "~" => ("null".into(), "null"),
            "0x1F" | "31" => ("31".into(), "int"),
            "017" | "15" => ("15".into(), "int"),
            "1.5" | "1.50" => ("1.5".into(), "float"),
            "1e3" | "1000.0" => ("1000".into(), "float"),
            "1000" => ("1000".into(), "int"),
            _ => (k.into(), "str"),
        }
    };
    let quoted = |k: &str| k.starts_with(['"', '\'']);
    let (sa, ta) = norm(a);
    let (sb, tb) = norm(b);
    let ta = if quoted(a) { "str" } else { ta };
    let tb = if quoted(b) { "str" } else { tb };
    sa == sb && ta != tb
}

// ---------------------------------------------------------------------------------------------
// Running

struct Helm {
    version: u8,
    home: tempfile::TempDir,
}

#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Values(String, String),
    Refused(String),
}

impl Helm {
    fn new(version: u8) -> Helm {
        common::helm::helm_bin(version);
        let home = tempfile::tempdir().unwrap();
        Helm { version, home }
    }

    fn template(&self, files: &[PathBuf], sets: &[(&str, String)]) -> Outcome {
        let chart = root().join("charts-fixtures/helm-probe");
        let mut cmd = common::helm::helm_command(self.version, self.home.path());
        cmd.arg("template").arg("r").arg(&chart);
        for f in files {
            cmd.arg("-f").arg(f);
        }
        for (flag, arg) in sets {
            cmd.arg(flag).arg(arg);
        }
        let out = cmd.output().expect("run helm");
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Outcome::Refused(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        let field = |name: &str| -> String {
            let line = stdout
                .lines()
                .find_map(|l| l.trim().strip_prefix(&format!("{name}: ")))
                .unwrap_or_else(|| panic!("no {name} in the probe output:\n{stdout}"));
            let b64 = line.trim_matches('"');
            String::from_utf8(common::base64(b64)).expect("Helm's JSON is UTF-8")
        };
        Outcome::Values(field("values"), field("kinds"))
    }
}

/// The binary (its copy) run with `args`.
fn lint(args: &[String]) -> Out {
    Out::from(
        Command::new(lint_bin())
            .args(args)
            .output()
            .expect("run cgpu-lint"),
    )
}

/// The `--set`-style flags of a case, joined as `cgpu-lint values` takes them.
fn set_args(sets: &[(&str, String)]) -> Vec<String> {
    sets.iter()
        .map(|(flag, arg)| format!("{flag}={arg}"))
        .collect()
}

#[derive(Debug)]
struct Verdict {
    id: String,
    class: &'static str,
    version: u8,
    problem: Option<String>,
    /// Both refuse: the line Helm's `yaml: line N:` names and the line cgpu-lint reports, when
    /// both name one in the same file (measured, not asserted: go-yaml reports some errors at
    /// the line of the construct they belong to).
    lines: Option<(usize, Option<usize>, String)>,
}

fn write_files(dir: &Path, tag: &str, files: &[Vec<u8>]) -> Vec<PathBuf> {
    files
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            let p = dir.join(format!("{tag}-{i}.yaml"));
            std::fs::write(&p, bytes).unwrap();
            p
        })
        .collect()
}

fn judge_one(case: &Case, helm: &Helm, dir: &Path) -> Verdict {
    let tag = case.id.replace('/', "-");
    let files = write_files(dir, &format!("{tag}-h{}", helm.version), &case.files);
    let h = helm.template(&files, &case.sets);
    let reading = match &h {
        Outcome::Values(json, _) => HelmReading::Values(json),
        Outcome::Refused(why) => HelmReading::Refused(why),
    };
    let c = compare(
        &lint_bin(),
        helm.version,
        reading,
        &files,
        &set_args(&case.sets),
    );
    for f in files {
        let _ = std::fs::remove_file(f);
    }
    Verdict {
        id: case.id.clone(),
        class: case.class,
        version: helm.version,
        problem: c.problem,
        lines: c.lines,
    }
}

/// Run fragment cases as one file; Some(verdicts) when the whole batch agrees.
fn judge_batch(batch: &[&Case], helm: &Helm, dir: &Path, n: usize) -> Option<Vec<Verdict>> {
    let mut text = String::new();
    for (i, c) in batch.iter().enumerate() {
        let (k, v) = c.fragment.as_ref().unwrap();
        text.push_str(&format!("c{i}:\n  {k}: {v}\n"));
    }
    let files = write_files(
        dir,
        &format!("batch{n}-h{}", helm.version),
        &[text.into_bytes()],
    );
    let h = helm.template(&files, &[]);
    let Outcome::Values(json, _) = h else {
        return None;
    };
    let c = compare(
        &lint_bin(),
        helm.version,
        HelmReading::Values(&json),
        &files,
        &[],
    );
    if c.problem.is_some() {
        return None;
    }
    let _ = std::fs::remove_file(&files[0]);
    Some(
        batch
            .iter()
            .map(|c| Verdict {
                id: c.id.clone(),
                class: c.class,
                version: helm.version,
                problem: None,
                lines: None,
            })
            .collect(),
    )
}

/// A batch that agrees as a whole, else its halves, down to single cases.
fn judge_group(
    batch: &[&Case],
    helm: &Helm,
    dir: &Path,
    thread: usize,
    n: &mut usize,
    split: &Mutex<usize>,
) -> Vec<Verdict> {
    if batch.len() == 1 {
        return vec![judge_one(batch[0], helm, dir)];
    }
    *n += 1;
    if let Some(v) = judge_batch(batch, helm, dir, thread * 100_000 + *n) {
        return v;
    }
    *split.lock().unwrap() += 1;
    let (a, b) = batch.split_at(batch.len() / 2);
    let mut out = judge_group(a, helm, dir, thread, n, split);
    out.extend(judge_group(b, helm, dir, thread, n, split));
    out
}

enum Job {
    Batch(Vec<usize>),
    One(usize),
}

#[test]
fn helm_reads_values_as_cgpu_lint_says() {
    let started = std::time::Instant::now();
    let cases = Arc::new(generate());
    let ids: BTreeSet<&str> = cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids.len(), cases.len(), "case ids are unique");
    assert!(cases.len() >= 2000, "only {} cases", cases.len());

    // The known list is read first: its cases always run.
    let known_text =
        std::fs::read_to_string(root().join("tests/helm_oracle_known.txt")).unwrap_or_default();
    let known: BTreeSet<String> = known_text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    // ORACLE_EVERY=N runs the first case of each class and every N-th after it (default 3;
    // `scripts/test --full` sets 1: every case), plus the known disagreements.
    let every: usize = std::env::var("ORACLE_EVERY")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n >= 1)
        .unwrap_or(3);
    let mut seen_in_class: BTreeMap<&str, usize> = BTreeMap::new();
    let selected: Vec<usize> = (0..cases.len())
        .filter(|&i| {
            let nth = seen_in_class.entry(cases[i].class).or_default();
            *nth += 1;
            (*nth - 1).is_multiple_of(every)
                || [3, 4]
                    .iter()
                    .any(|v| known.contains(&format!("{}@{v}", cases[i].id)))
        })
        .collect();

    let mut jobs = Vec::new();
    let fragments: Vec<usize> = selected
        .iter()
        .copied()
        .filter(|&i| cases[i].fragment.is_some())
        .collect();
    for chunk in fragments.chunks(32) {
        jobs.push(Job::Batch(chunk.to_vec()));
    }
    for &i in &selected {
        if cases[i].fragment.is_none() {
            jobs.push(Job::One(i));
        }
    }
    let mut all_jobs = Vec::new();
    for v in [3u8, 4] {
        for j in &jobs {
            all_jobs.push((
                v,
                match j {
                    Job::Batch(b) => Job::Batch(b.clone()),
                    Job::One(i) => Job::One(*i),
                },
            ));
        }
    }
    let queue = Arc::new(Mutex::new(all_jobs));
    let verdicts = Arc::new(Mutex::new(Vec::new()));
    let batches_split = Arc::new(Mutex::new(0usize));
    let threads: usize = std::env::var("ORACLE_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let mut handles = Vec::new();
    for t in 0..threads {
        let queue = queue.clone();
        let verdicts = verdicts.clone();
        let cases = cases.clone();
        let dir = dir.clone();
        let split = batches_split.clone();
        handles.push(std::thread::spawn(move || {
            let helms = [Helm::new(3), Helm::new(4)];
            let mut n = 0;
            loop {
                let Some((v, job)) = queue.lock().unwrap().pop() else {
                    break;
                };
                let helm = &helms[usize::from(v - 3)];
                let out: Vec<Verdict> = match job {
                    Job::One(i) => vec![judge_one(&cases[i], helm, dir.path())],
                    Job::Batch(b) => {
                        let batch: Vec<&Case> = b.iter().map(|&i| &cases[i]).collect();
                        judge_group(&batch, helm, dir.path(), t, &mut n, &split)
                    }
                };
                verdicts.lock().unwrap().extend(out);
            }
        }));
    }
    for h in handles {
        h.join().expect("worker");
    }
    let verdicts = std::mem::take(&mut *verdicts.lock().unwrap());

    // Summary per class.
    let limit_classes: BTreeSet<&str> = LIMITS.iter().map(|l| l.class).collect();
    let mut per_class: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    let mut new_problems = Vec::new();
    let mut fixed_known = BTreeSet::new();
    let mut disagreeing_known = BTreeSet::new();
    for v in &verdicts {
        let e = per_class.entry(v.class).or_default();
        e.0 += 1;
        let key = format!("{}@{}", v.id, v.version);
        match &v.problem {
            None => {
                e.1 += 1;
                if known.contains(&key) {
                    fixed_known.insert(key);
                }
            }
            Some(p) => {
                if limit_classes.contains(v.class) {
                    e.2 += 1;
                } else if known.contains(&key) {
                    disagreeing_known.insert(key);
                } else {
                    new_problems.push(format!("{key}: {p}"));
                }
            }
        }
    }
    let mut report = format!(
        "helm oracle: {} of {} cases (ORACLE_EVERY={every}) x 2 Helm versions = {} verdicts in {:.0?} ({} threads, {} batches split)\n",
        selected.len(),
        cases.len(),
        verdicts.len(),
        started.elapsed(),
        threads,
        batches_split.lock().unwrap()
    );
    report.push_str("class              cases  verdicts  agree  limit\n");
    let mut case_count: BTreeMap<&str, usize> = BTreeMap::new();
    for &i in &selected {
        *case_count.entry(cases[i].class).or_default() += 1;
    }
    let (mut total, mut agree) = (0, 0);
    for (class, (n, ok, lim)) in &per_class {
        report.push_str(&format!(
            "{class:<18} {:>5}  {n:>8}  {ok:>5}  {lim:>5}\n",
            case_count[class]
        ));
        total += n;
        agree += ok;
    }
    report.push_str(&format!(
        "agreement: {agree}/{total} verdicts ({:.2}%); known disagreements still open: {}\n",
        100.0 * agree as f64 / total as f64,
        disagreeing_known.len()
    ));
    for l in LIMITS {
        report.push_str(&format!("limit {}: {}\n", l.class, l.why));
    }
    // Where both refuse: does cgpu-lint name the line Helm names?
    let measured: Vec<&Verdict> = verdicts.iter().filter(|v| v.lines.is_some()).collect();
    let differ: Vec<String> = measured
        .iter()
        .filter_map(|v| {
            let (h, o, text) = v.lines.as_ref().unwrap();
            (Some(*h) != *o).then(|| {
                format!(
                    "{}@{}: helm line {h}, cgpu-lint line {o:?}: {text}",
                    v.id, v.version
                )
            })
        })
        .collect();
    report.push_str(&format!(
        "refusal lines: {}/{} name the line Helm's error names (the others: target/helm-oracle-lines.txt)\n",
        measured.len() - differ.len(),
        measured.len()
    ));
    let _ = std::fs::write(
        root().join("target/helm-oracle-lines.txt"),
        differ.join("\n"),
    );
    let _ = std::fs::write(root().join("target/helm-oracle-report.txt"), &report);
    let mut problems_text = new_problems.join("\n");
    if !problems_text.is_empty() {
        let _ = std::fs::write(
            root().join("target/helm-oracle-problems.txt"),
            &problems_text,
        );
        problems_text.truncate(20_000);
    }
    eprintln!("{report}");
    assert!(
        new_problems.is_empty(),
        "{} disagreements with Helm (all in target/helm-oracle-problems.txt):\n{problems_text}",
        new_problems.len()
    );
    assert!(
        fixed_known.is_empty(),
        "these cases agree now; remove them from tests/helm_oracle_known.txt: {fixed_known:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Findings: one reading for every rule

/// Rules about the spelling of a value, not about the value Helm reads: the source and a file
/// written from Helm's values differ for them by design. Everything else must agree.
const SPELLING_RULES: &[(&str, &str)] = &[
    (
        "yaml11-scalar",
        "a plain scalar YAML 1.1 (Helm) and YAML 1.2 read differently: the canonical file is JSON, which every reader types alike",
    ),
    (
        "policy-whole-float",
        "`policy: 3.0`: Helm's values have one number type, and its JSON writes 3.0 as 3",
    ),
    (
        "duplicate-key",
        "a key written twice in the source: Helm keeps the last, and the canonical file has one",
    ),
];

/// The rules a JSON report names per file, as (file, JSON pointer, rule): each finding's rule and
/// each rule folded into it on the same token ("…; also RULE: …").
fn findings_by_file(report: &str) -> BTreeMap<String, BTreeSet<(String, String)>> {
    let json: serde_json::Value = serde_json::from_str(report).expect("check's JSON");
    let mut out: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    for d in json["diagnostics"].as_array().unwrap() {
        let file = d["file"].as_str().unwrap().to_string();
        let path = d["path"].as_str().unwrap().to_string();
        let mut rules = vec![d["rule"].as_str().unwrap().to_string()];
        let message = d["message"].as_str().unwrap();
        for part in message.split("; also ").skip(1) {
            if let Some((rule, _)) = part.split_once(": ")
                && rule
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            {
                rules.push(rule.to_string());
            }
        }
        let set = out.entry(file).or_default();
        for r in rules {
            if !SPELLING_RULES.iter().any(|(s, _)| *s == r) {
                set.insert((path.clone(), r));
            }
        }
    }
    out
}

/// One case of the findings comparison: a values file whose one root key is `cgpu`, and for a
/// one-key case the key (Helm deleting it, for `null`, is written back as `KEY: null`).
struct Reading {
    id: String,
    text: String,
    key: Option<String>,
}

/// Helm's value of each case's `cgpu` (read under `c{i}`, away from the chart's defaults), or
/// None where Helm refuses it; batches that Helm refuses are halved down to single cases.
fn helm_cgpu_values(
    batch: &[&Reading],
    helm: &Helm,
    dir: &Path,
    n: &mut usize,
) -> Vec<Option<serde_json::Value>> {
    *n += 1;
    let mut text = String::new();
    for (i, c) in batch.iter().enumerate() {
        let body = c.text.strip_prefix("cgpu:").expect("a cgpu case");
        text.push_str(&format!("c{i}:{body}"));
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    let files = write_files(
        dir,
        &format!("findings{n}-h{}", helm.version),
        &[text.into_bytes()],
    );
    let h = helm.template(&files, &[]);
    let _ = std::fs::remove_file(&files[0]);
    match h {
        Outcome::Values(json, _) => {
            let values: serde_json::Value = serde_json::from_str(&json).unwrap();
            batch
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let v = values
                        .get(format!("c{i}"))
                        .cloned()
                        .unwrap_or(serde_json::Value::Null);
                    Some(match &c.key {
                        Some(k) => {
                            let mut m = serde_json::Map::new();
                            m.insert(
                                k.clone(),
                                v.get(k).cloned().unwrap_or(serde_json::Value::Null),
                            );
                            serde_json::Value::Object(m)
                        }
                        None => v,
                    })
                })
                .collect()
        }
        Outcome::Refused(_) if batch.len() == 1 => vec![None],
        Outcome::Refused(_) => {
            let (a, b) = batch.split_at(batch.len() / 2);
            let mut out = helm_cgpu_values(a, helm, dir, n);
            out.extend(helm_cgpu_values(b, helm, dir, n));
            out
        }
    }
}

/// Cases of more than one key, for the rules that read several (the findings classes): `enabled`
/// in every spelling Helm reads as false beside another setting, in block and flow style; an
/// anchor defined twice whose alias another key uses.
fn multi_key_readings() -> Vec<Reading> {
    let mut out = Vec::new();
    let falses = [
        "false",
        "no",
        "n",
        "N",
        "No",
        "NO",
        "off",
        "Off",
        "OFF",
        "\"false\"",
        "!!bool false",
        "0",
        "~",
    ];
    let others = ["policy: 3", "tag: v1.5.20", "image: mirror/cgpu-installer"];
    for f in falses {
        for o in others {
            let (ok, ov) = o.split_once(": ").unwrap();
            out.push(format!("cgpu:\n  enabled: {f}\n  {o}\n"));
            out.push(format!("cgpu: {{{ok}: {ov}, enabled: {f}}}\n"));
        }
    }
    for (first, second) in [("3", "9"), ("9", "3"), ("v1.5.20", "7"), ("yes", "x")] {
        for (k1, k2, user) in [
            ("p", "policy", "image"),
            ("p", "tag", "policy"),
            ("x", "image", "tag"),
            ("p", "policy", "enabled"),
        ] {
            out.push(format!(
                "cgpu:\n  {k1}: &a {first}\n  {k2}: &a {second}\n  {user}: *a\n"
            ));
        }
    }
    out.into_iter()
        .enumerate()
        .map(|(i, text)| Reading {
            id: format!("multi/{i:04}"),
            text,
            key: None,
        })
        .collect()
}

/// Every generated one-key case and the [`multi_key_readings`] Helm reads: `check` on the source
/// and `check` on Helm's value of its `cgpu` written back as a canonical (JSON) file report the
/// same rules at the same pointers, but the [`SPELLING_RULES`]. The figures go to
/// target/helm-oracle-findings.txt.
#[test]
fn findings_on_the_source_equal_findings_on_helms_values() {
    let cases = generate();
    let every: usize = std::env::var("ORACLE_EVERY")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n >= 1)
        .unwrap_or(3);
    let mut readings: Vec<Reading> = cases
        .iter()
        .filter(|c| c.fragment.is_some())
        .enumerate()
        .filter(|(i, _)| i.is_multiple_of(every))
        .map(|(_, c)| {
            let (k, v) = c.fragment.as_ref().unwrap();
            Reading {
                id: c.id.clone(),
                text: format!("cgpu:\n  {k}: {v}\n"),
                key: Some(k.clone()),
            }
        })
        .collect();
    let one_key = readings.len();
    readings.extend(multi_key_readings());
    assert!(one_key >= 300, "only {one_key} cases");
    let dir = tempfile::tempdir().unwrap();
    let mut report = String::new();
    let mut problems = Vec::new();
    let (mut compared, mut agreed, mut refused) = (0, 0, 0);
    let mut excepted: BTreeMap<&str, usize> = BTreeMap::new();
    for version in [3u8, 4] {
        let helm = Helm::new(version);
        let mut n = 0;
        let refs: Vec<&Reading> = readings.iter().collect();
        for chunk in refs.chunks(64) {
            let values = helm_cgpu_values(chunk, &helm, dir.path(), &mut n);
            let (mut sources, mut canon) = (Vec::new(), Vec::new());
            let mut pairs = Vec::new();
            for (i, (c, v)) in chunk.iter().zip(values).enumerate() {
                let Some(v) = v else {
                    refused += 1;
                    continue;
                };
                let s = dir.path().join(format!("s{n}-{i}.yaml"));
                let w = dir.path().join(format!("w{n}-{i}.yaml"));
                std::fs::write(&s, &c.text).unwrap();
                std::fs::write(&w, format!("{}\n", serde_json::json!({ "cgpu": v }))).unwrap();
                sources.push(s.to_string_lossy().into_owned());
                canon.push(w.to_string_lossy().into_owned());
                pairs.push((*c, s, w, v));
            }
            if pairs.is_empty() {
                continue;
            }
            let check = |files: &[String]| {
                let mut args: Vec<String> = [
                    "check",
                    "--no-config",
                    "--format",
                    "json",
                    "--helm",
                    &version.to_string(),
                    "--",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                args.extend(files.iter().cloned());
                lint(&args).stdout
            };
            let raw_src = check(&sources);
            // Which spelling rules the sources raised (for the figures).
            for (r, _) in SPELLING_RULES {
                *excepted.entry(r).or_default() +=
                    raw_src.matches(&format!("\"rule\": \"{r}\"")).count()
                        + raw_src.matches(&format!("; also {r}: ")).count();
            }
            let on_source = findings_by_file(&raw_src);
            let on_values = findings_by_file(&check(&canon));
            for (c, s, w, v) in pairs {
                compared += 1;
                let a = on_source
                    .get(&*s.to_string_lossy())
                    .cloned()
                    .unwrap_or_default();
                let b = on_values
                    .get(&*w.to_string_lossy())
                    .cloned()
                    .unwrap_or_default();
                if a == b {
                    agreed += 1;
                } else {
                    problems.push(format!(
                        "{}@{version}: {:?} (Helm's cgpu: {v}): source {a:?}, Helm's values {b:?}",
                        c.id, c.text
                    ));
                }
            }
        }
    }
    report.push_str(&format!(
        "findings oracle: {} cases ({one_key} one-key, ORACLE_EVERY={every}; {} of several keys) x 2 Helm versions: {compared} compared, {agreed} agree, {} differ, {refused} refused by Helm (not compared)\n",
        readings.len(),
        readings.len() - one_key,
        compared - agreed
    ));
    for (r, why) in SPELLING_RULES {
        report.push_str(&format!(
            "excepted {r} ({} on the sources): {why}\n",
            excepted.get(r).copied().unwrap_or(0)
        ));
    }
    for p in &problems {
        report.push_str(&format!("differs: {p}\n"));
    }
    let _ = std::fs::write(root().join("target/helm-oracle-findings.txt"), &report);
    eprintln!("{}", report.lines().take(40).collect::<Vec<_>>().join("\n"));
    assert!(
        problems.is_empty(),
        "{} cases whose findings depend on the spelling (target/helm-oracle-findings.txt):\n{}",
        problems.len(),
        problems
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// UTF-16

/// `text` in UTF-16 (`le`: little-endian), with or without the byte-order mark.
fn utf16(text: &str, le: bool, bom: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let units = std::iter::once(0xfeff)
        .filter(|_| bom)
        .chain(text.encode_utf16());
    for u in units {
        out.extend(if le { u.to_le_bytes() } else { u.to_be_bytes() });
    }
    out
}

/// A values file in UTF-16 with a byte-order mark is read as go-yaml's reader reads it: Helm 3
/// decodes both byte orders, Helm 4 refuses little-endian ones; without the mark neither reads
/// it. `cgpu-lint values` agrees with each Helm on every case (accepts with Helm's JSON, or
/// refuses), and `check` places findings in characters of the decoded text, as for UTF-8.
#[test]
fn utf16_with_a_bom_is_read_as_helm_reads_it() {
    // Generated: one-key cases of the generator, and non-ASCII values (an astral character is a
    // surrogate pair in UTF-16) before a finding on the same line.
    let mut texts: Vec<String> = generate()
        .iter()
        .filter_map(|c| c.fragment.as_ref())
        .step_by(37)
        .take(12)
        .map(|(k, v)| format!("cgpu:\n  {k}: {v}\n"))
        .collect();
    for (i, value) in ["é", "中文", "😀", "a😀b🚀", "\u{10ffff}x"]
        .iter()
        .enumerate()
    {
        texts.push(format!("cgpu: {{image: \"{value}\", policy: 9}}\n"));
        texts.push(format!(
            "# {value}\ncgpu:\n  image: {value}{i}\n  policy: 9\n"
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let helms = [Helm::new(3), Helm::new(4)];
    let mut problems = Vec::new();
    let (mut compared, mut accepted) = (0, BTreeMap::<(u8, &str), usize>::new());
    for (i, text) in texts.iter().enumerate() {
        for (form, bytes) in [
            ("le", utf16(text, true, true)),
            ("be", utf16(text, false, true)),
            ("le-nobom", utf16(text, true, false)),
        ] {
            let files = write_files(dir.path(), &format!("u{i}-{form}"), &[bytes]);
            for helm in &helms {
                compared += 1;
                let h = helm.template(&files, &[]);
                let reading = match &h {
                    Outcome::Values(json, _) => {
                        *accepted.entry((helm.version, form)).or_default() += 1;
                        HelmReading::Values(json)
                    }
                    Outcome::Refused(why) => HelmReading::Refused(why),
                };
                if let Some(p) = compare(&lint_bin(), helm.version, reading, &files, &[]).problem {
                    problems.push(format!("{text:?} {form} Helm {}: {p}", helm.version));
                }
            }
            // Positions: `policy: 9` is found where the decoded text has it, in characters.
            if form != "le-nobom" && text.contains("policy: 9") {
                let out = lint(&[
                    "check".into(),
                    "--no-config".into(),
                    "--format".into(),
                    "json".into(),
                    files[0].to_string_lossy().into_owned(),
                ]);
                let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
                let d = report["diagnostics"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|d| d["rule"] == "policy-out-of-range")
                    .unwrap_or_else(|| panic!("{text:?} {form}: {report}"));
                let at = text.find("policy: 9").unwrap() + "policy: ".len();
                let line = text[..at].matches('\n').count() + 1;
                let column = text[..at].rsplit('\n').next().unwrap().chars().count() + 1;
                assert_eq!(
                    (
                        d["line"].as_u64().unwrap() as usize,
                        d["column"].as_u64().unwrap() as usize
                    ),
                    (line, column),
                    "{text:?} {form}"
                );
            }
        }
    }
    eprintln!("utf-16: {compared} readings compared; Helm accepted (version, form): {accepted:?}");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // What Helm does, measured here: both read big-endian, only Helm 3 little-endian, and
    // neither a file without the mark.
    let n = texts.len();
    assert!(
        accepted.get(&(3, "le")).copied().unwrap_or(0) >= n - 2,
        "{accepted:?}"
    );
    assert_eq!(accepted.get(&(4, "le")), None, "{accepted:?}");
    assert_eq!(accepted.get(&(3, "le-nobom")), None, "{accepted:?}");
}
