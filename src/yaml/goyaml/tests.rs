//! go-yaml v2's decisions as real Helm 3.18 reports them (`helm template … -f FILE` printed
//! `error converting YAML to JSON: yaml: MESSAGE` with these MESSAGEs, or accepted the file;
//! inputs from the YAML test suite, ids in the comments).

use super::{Error, Event, EventKind, Parser, ScalarStyle};

/// go-yaml's `Unmarshal`: events up to the first document's end.
fn first_document(text: &str) -> Result<Vec<Event>, Box<Error>> {
    let mut p = Parser::new(text.as_bytes());
    let mut out = Vec::new();
    while let Some(ev) = p.next_event() {
        let ev = ev?;
        let end = matches!(
            ev.kind,
            EventKind::DocumentEnd { .. } | EventKind::StreamEnd
        );
        out.push(ev);
        if end {
            break;
        }
    }
    Ok(out)
}

fn refusal(text: &str) -> String {
    match first_document(text) {
        Ok(_) => "accepted".into(),
        Err(e) => e.go_yaml_text(),
    }
}

#[test]
fn helm_refusals_word_for_word() {
    for (text, helm) in [
        // 4MUZ/00: a flow key and its `:` on different lines.
        (
            "{\"foo\"\n: \"bar\"}\n",
            "line 1: did not find expected ',' or '}'",
        ),
        // 5MUD
        (
            "---\n{ \"foo\"\n  :bar }\n",
            "line 2: did not find expected ',' or '}'",
        ),
        // 96NN/00: a tab in a block scalar's indentation.
        (
            "foo: |-\n \tbar\n",
            "line 2: found a tab character where an indentation space is expected",
        ),
        // DK95/04
        (
            "foo: 1\n\t\nbar: 2\n",
            "line 2: found a tab character that violates indentation",
        ),
        // Q5MG: a tab at the start of a block line.
        ("\t{}\n", "found character that cannot start any token"),
        // A2M4: a tab after `-` in the block context.
        (
            "? a\n: -\tb\n  -  -\tc\n     - d\n",
            "line 2: found character that cannot start any token",
        ),
        // HWV9, QT73: `...` opening the stream (libyaml 0.1 has no empty document there).
        ("...\n", "did not find expected node content"),
        (
            "# comment\n...\n",
            "line 1: did not find expected node content",
        ),
        // 58MP: `:x` in a flow mapping is no plain scalar.
        ("{x: :x}\n", "did not find expected node content"),
        // W5VH: an anchor name ends at the first character outside [0-9A-Za-z_-].
        (
            "a: &:@*!$\"<foo>: scalar a\nb: *:@*!$\"<foo>:\n",
            "did not find expected alphabetic or numeric character",
        ),
        // An empty key in a flow sequence (libyaml 0.1 skips the `]`).
        ("a: [? ]\n", "line 1: did not find expected ',' or ']'"),
        // NEL is a line break for go-yaml.
        ("a: x\u{85}y\n", "line 3: could not find expected ':'"),
        // A simple key is at most 1024 characters long.
        (
            &format!("{}: 1\n", "a".repeat(1100)),
            "mapping values are not allowed in this context",
        ),
        // The reader refuses a control character anywhere in the 512 bytes it decodes at once.
        (
            &format!("a: 1\n{}b: \u{1}\n", "c: 2\n".repeat(200)),
            "control characters are not allowed",
        ),
    ] {
        assert_eq!(refusal(text), helm, "{text:?}");
    }
}

#[test]
fn helm_acceptances() {
    for text in [
        // SU5Z, X4QW: a comment glued to a token.
        "key: \"value\"# invalid comment\n",
        "block: ># comment\n  scalar\n",
        // 3HFZ: Unmarshal stops at the first document's end.
        "---\nkey: value\n... invalid\n",
        // HRE5: `\'` in a double-quoted scalar.
        "---\ndouble: \"quoted \\' scalar\"\n",
        // 4ZYM, DK95/02: tabs after the indentation of quoted and block scalar lines.
        "plain: text\n  lines\nquoted: \"text\n  \tlines\"\nblock: |\n  text\n   \tlines\n",
        // RHX7: a directive after a document without `...`.
        "---\nkey: value\n%YAML 1.2\n---\n",
        // S98Z: less indented blank lines in a block scalar.
        "empty block scalar: >\n \n  \n   \n # comment\n",
        // MUS6/00
        "%YAML 1.1#...\n---\n",
    ] {
        assert_eq!(refusal(text), "accepted", "{text:?}");
    }
}

fn scalars(text: &str) -> Vec<(String, ScalarStyle, std::ops::Range<usize>)> {
    first_document(text)
        .unwrap()
        .into_iter()
        .filter_map(|ev| match ev.kind {
            EventKind::Scalar {
                value,
                style,
                value_start,
                ..
            } => Some((
                String::from_utf8(value).unwrap(),
                style,
                value_start.pos..ev.end.pos,
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn scalar_values_as_helm_reads_them() {
    // 4ABK, 652Z, Y2GN: Helm's values were {"omitted value:": null, "foo": "bar", "key": ":chor value"}.
    let s = scalars("{\nunquoted : \"separate\",\nhttp://foo.com,\nomitted value:,\n}\n");
    assert_eq!(s[4].0, "omitted value:");
    assert_eq!(scalars("{ ?foo: bar,\nbar: 42\n}\n")[0].0, "foo");
    assert_eq!(scalars("---\nkey: &an:chor value\n")[1].0, ":chor value");
    // HRE5
    assert_eq!(
        scalars("double: \"quoted \\' scalar\"\n")[1].0,
        "quoted ' scalar"
    );
}

#[test]
fn spans_are_byte_ranges_of_the_node_text() {
    let text = "é: \"x\"  # c\nb: &a 'y'\nc: |\n  line\n\n  more\nd:\ne: plain  text  \n";
    let s = scalars(text);
    let raw = |i: usize| &text[s[i].2.clone()];
    assert_eq!(raw(0), "é");
    assert_eq!(raw(1), "\"x\"", "a quoted scalar ends at its closing quote");
    assert_eq!(raw(3), "'y'", "the anchor is not the node's text");
    assert_eq!(
        raw(5),
        "|\n  line\n\n  more",
        "a block scalar ends with its last content line"
    );
    assert_eq!(
        (s[7].2.clone(), s[7].0.as_str()),
        (
            text.find("d:").unwrap() + 2..text.find("d:").unwrap() + 2,
            ""
        )
    );
    assert_eq!(raw(9), "plain  text");
}
