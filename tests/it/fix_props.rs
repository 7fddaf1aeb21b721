//! Property tests of the edit engine and `fix`: bytes outside the edits never change, fixing is
//! idempotent, and a fixed file parses with no fixable finding left. The generated files mix
//! comments (with tabs), CRLF, a BOM, quoting styles, flow maps, anchors, aliases and merge keys.

use std::sync::Arc;

use proptest::prelude::*;

use cgpu_lint::catalogue::RuleId;
use cgpu_lint::diag::Edit;
use cgpu_lint::edit;
use cgpu_lint::fix::fix_source;
use cgpu_lint::lint::Filter;
use cgpu_lint::lint::{Settings, lint_file};
use cgpu_lint::rules::RuleOptions;
use cgpu_lint::yaml::emit::render_string;
use cgpu_lint::yaml::{self, Node, Source, Value};

const ENABLED: &[&str] = &["true", "On", "\"false\"", "'true'", "yes", "n", "~"];
const POLICY: &[&str] = &[
    "1",
    "\"1\"",
    "03",
    "preemptive",
    "'2'",
    "9",
    "1.5",
    "0x2",
    "\"fixed\"",
];
const PULL: &[&str] = &[
    "IfNotPresent",
    "ifnotpresent",
    "\"always\"",
    "'NEVER'",
    "*pp",
];
const IMAGE: &[&str] = &[
    "acs/cgpu-installer",
    "registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun",
    "\"acs/cgpu-installer:v1.5.3\"",
    "'acs/cgpu-installer@sha256:abc'",
];
const TAG: &[&str] = &[
    "v1.5.10-2b9e7d4-aliyun",
    "latest",
    "\"v1.5.3-8d3fc1b-aliyun\"",
    "'v1.0.6'",
];
const SELECTOR: &[&str] = &[
    "{}",
    "{a: b, gpu: yes}",
    "[ack.node.gpu.schedule=cgpu, pool=a]",
    "BLOCKMAP",
    "BLOCKLIST",
    "INDENTLESS",
    "*sel",
];
const CHECK: &[&str] = &["true", "\"true\"", "n", "'off'", "Off"];
const TYPO: &[&str] = &[
    "",
    "polcy: 2",
    "checkregion: true",
    "nodeselector: {a: b}",
    "foo: bar",
];
const COMMENTS: &[&str] = &["", "  # note", "\t# tab\tcomment", "   #"];

#[derive(Debug, Clone)]
struct Spec {
    crlf: bool,
    bom: bool,
    order: Vec<usize>,
    picks: Vec<usize>,
    comments: Vec<usize>,
    merge: bool,
    trailing_newline: bool,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        any::<bool>(),
        any::<bool>(),
        Just((0..8).collect::<Vec<usize>>()).prop_shuffle(),
        prop::collection::vec(0usize..100, 8),
        prop::collection::vec(0usize..100, 12),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(crlf, bom, order, picks, comments, merge, trailing_newline)| Spec {
                crlf,
                bom,
                order,
                picks,
                comments,
                merge,
                trailing_newline,
            },
        )
}

fn pick<'a>(list: &[&'a str], i: usize) -> &'a str {
    list[i % list.len()]
}

fn render(s: &Spec) -> String {
    let c = |i: usize| pick(COMMENTS, s.comments[i]);
    let mut lines: Vec<String> = Vec::new();
    lines.push(format!("# generated values{}", c(0)));
    // The anchor is sometimes used twice: then a fix through it must be withheld.
    let shared = if s.picks[7].is_multiple_of(2) {
        "Always"
    } else {
        "ifnotpresent"
    };
    lines.push(format!("shared: &pp {shared}{}", c(1)));
    if s.picks[7].is_multiple_of(3) {
        lines.push("again: *pp".to_string());
    }
    lines.push("labels: &sel".to_string());
    lines.push(format!("  ack.node.gpu.schedule: cgpu{}", c(2)));
    if s.merge {
        lines.push("defaults: &d {policy: \"1\", checkRegions: 'true'}".to_string());
    }
    lines.push(format!("cgpu:{}", c(3)));
    if s.merge {
        lines.push("  <<: *d".to_string());
    }
    for (n, &k) in s.order.iter().enumerate() {
        let p = s.picks[k];
        let cm = c(4 + n);
        let line = match k {
            0 => format!("  enabled: {}{cm}", pick(ENABLED, p)),
            1 => format!("  policy: {}{cm}", pick(POLICY, p)),
            2 => format!("  imagePullPolicy: {}{cm}", pick(PULL, p)),
            3 => format!("  image: {}{cm}", pick(IMAGE, p)),
            4 => format!("  tag: {}{cm}", pick(TAG, p)),
            5 => match pick(SELECTOR, p) {
                "BLOCKMAP" => format!("  nodeSelector:{cm}\n    gpu-pool: no\n    tier: 2{cm}"),
                "BLOCKLIST" => {
                    format!("  nodeSelector:\n    - ack.node.gpu.schedule=cgpu{cm}\n    - pool=a")
                }
                "INDENTLESS" => format!("  nodeSelector:{cm}\n  # pools\n  - pool=a{cm}"),
                other => format!("  nodeSelector: {other}{cm}"),
            },
            6 => format!("  checkRegions: {}{cm}", pick(CHECK, p)),
            _ => match pick(TYPO, p) {
                "" => continue,
                t => format!("  {t}{cm}"),
            },
        };
        lines.push(line);
    }
    lines.push(format!("other: {{x: 'y', z: \"w\"}}{}", c(11)));
    let eol = if s.crlf { "\r\n" } else { "\n" };
    // Multi-line entries were joined with \n; give them the file's line ending too.
    let mut text = lines.join("\n").replace('\n', eol);
    if s.trailing_newline {
        text.push_str(eol);
    }
    if s.bom {
        text.insert(0, '\u{feff}');
    }
    text
}

fn scalars<'a>(n: &'a Node, out: &mut Vec<&'a Node>) {
    match &n.value {
        Value::Map(es) => es.iter().for_each(|e| scalars(&e.value, out)),
        Value::Seq(items) => items.iter().for_each(|i| scalars(i, out)),
        Value::Scalar(_) => {
            if n.via_alias.is_none() && !n.span.is_empty() {
                out.push(n)
            }
        }
    }
}

fn opts() -> RuleOptions {
    RuleOptions::default()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn no_edits_leave_the_bytes_identical(s in spec()) {
        let text = render(&s);
        let src = Source::new("p.yaml", text.clone());
        let parsed = yaml::parse(&src);
        prop_assert!(parsed.error.is_none(), "generator made invalid YAML: {:?}\n{text}", parsed.error);
        prop_assert_eq!(edit::apply(&src.text, &[]).unwrap(), text);
    }

    #[test]
    fn bytes_outside_random_edits_never_change(s in spec(), chosen in prop::collection::vec(any::<bool>(), 40), words in prop::collection::vec("[a-z0-9 '\"#:]{0,8}", 40)) {
        let text = render(&s);
        let src = Source::new("p.yaml", text.clone());
        let parsed = yaml::parse(&src);
        let mut nodes = Vec::new();
        for d in &parsed.documents {
            if let Some(r) = &d.root { scalars(r, &mut nodes); }
        }
        nodes.sort_by_key(|n| n.span.start);
        nodes.dedup_by_key(|n| n.span.start);
        let edits: Vec<Edit> = nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| chosen[i % chosen.len()])
            .map(|(i, n)| Edit {
                src: src.clone(),
                range: n.span.clone(),
                replacement: render_string(&words[i % words.len()], n.style),
            })
            .collect();
        let refs: Vec<&Edit> = edits.iter().collect();
        let out = edit::apply(&text, &refs).unwrap();
        // Walk the edits in order: the text between them is copied byte for byte.
        let (mut i, mut o) = (0usize, 0usize);
        for e in &edits {
            let gap = e.range.start - i;
            prop_assert_eq!(&out.as_bytes()[o..o + gap], &text.as_bytes()[i..e.range.start]);
            o += gap + e.replacement.len();
            prop_assert_eq!(&out[o - e.replacement.len()..o], e.replacement.as_str());
            i = e.range.end;
        }
        prop_assert_eq!(&out.as_bytes()[o..], &text.as_bytes()[i..]);
        // A string rendered in the node's style parses back.
        let after = lint_file(&Source::new("p.yaml", out.clone()), &Settings { opts: opts(), ..Default::default() });
        prop_assert!(!after.iter().any(|d| d.rule == RuleId::YamlSyntax), "{out}");
    }

    #[test]
    fn fix_is_idempotent_and_leaves_nothing_fixable(s in spec()) {
        let text = render(&s);
        let src = Source::new("p.yaml", text.clone());
        let once = fix_source(&src, &opts(), &Filter::default());
        prop_assert!(once.refused.is_none(), "{:?}\n{text}", once.refused);
        let src2: Arc<Source> = Source::new("p.yaml", once.text.clone());
        let twice = fix_source(&src2, &opts(), &Filter::default());
        prop_assert_eq!(&twice.text, &once.text, "fix twice != fix once\ninput:\n{}", text);
        let left = lint_file(&src2, &Settings { opts: opts(), ..Default::default() });
        prop_assert!(!left.iter().any(|d| d.rule == RuleId::YamlSyntax), "{}", once.text);
        let fixable: Vec<_> = left.iter().filter(|d| d.fixable()).map(|d| (d.rule, d.message.clone())).collect();
        prop_assert!(fixable.is_empty(), "still fixable: {:?}\ninput:\n{}\noutput:\n{}", fixable, text, once.text);
        // Lines the fix did not touch keep their bytes, line endings included.
        prop_assert_eq!(text.matches("\r\n").count(), once.text.matches("\r\n").count());
        prop_assert_eq!(text.starts_with('\u{feff}'), once.text.starts_with('\u{feff}'));
        // No comment is lost.
        prop_assert!(text.matches('#').count() <= once.text.matches('#').count(), "{}", once.text);
    }
}
