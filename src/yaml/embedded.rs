//! YAML held in a literal block string (an Argo CD Application's `helm.values: |`, a ConfigMap's
//! `values.yaml: |`) read in place: [`literal_source`] makes a source of the same length as the
//! file in which every byte outside the string's content is a space (line breaks kept) and the
//! content lines stand as written. The YAML inside then parses as the string does (only its
//! indentation differs, by the same number of spaces on every line), and every span in it is a
//! span of the file: line and column are the file's, and an edit splices the file's bytes.

use std::sync::Arc;

use super::{Node, Scalar, Source, Style};

/// The content of a literal block string as a source with the file's offsets (named as the
/// file), or why it cannot be read in place.
pub fn literal_source(node: &Node) -> Result<Arc<Source>, String> {
    match node.style {
        Style::Literal => {}
        Style::Folded => {
            return Err(
                "a folded string (`>`): its lines are joined, so positions inside it cannot be given; write it as `|`"
                    .into(),
            );
        }
        _ => {
            return Err(
                "a one-line string: write the values as a literal block (`|`) or as valuesObject to have them checked"
                    .into(),
            );
        }
    }
    let Some(Scalar::Str(decoded)) = node.scalar() else {
        return Err("the block string is not a string".into());
    };
    let src = &node.src;
    let text = &src.text;
    // A block scalar's span starts at its header (`|`, chomping, perhaps a comment).
    let header_line = src.line_col(node.span.start).line;
    let header = src.line_text(header_line);
    let indicators = header
        .char_indices()
        .rev()
        .filter(|&(_, c)| c == '|')
        .map(|(i, _)| header[i + 1..].split('#').next().unwrap_or("").trim())
        .find(|rest| {
            rest.chars()
                .all(|c| c.is_ascii_digit() || c == '+' || c == '-')
        });
    let Some(indicators) = indicators else {
        return Err("the block string's header (`|`) was not found".into());
    };
    if indicators.chars().any(|c| c.is_ascii_digit()) {
        return Err(
            "a block string with an indentation indicator (`|2`): positions inside it are not mapped"
                .into(),
        );
    }
    let mut indent: Option<usize> = None;
    let first = header_line + 1;
    let mut last = header_line;
    for line in first..=src.line_count() {
        let t = src.line_text(line);
        if t.bytes().all(|b| b == b' ') {
            continue;
        }
        let n = t.bytes().take_while(|&b| b == b' ').count();
        match indent {
            None if n == 0 => break,
            None => indent = Some(n),
            Some(i) if n < i => break,
            Some(_) => {}
        }
        last = line;
    }
    let Some(indent) = indent else {
        return Err("an empty block string".into());
    };
    let start = src.line_start(first);
    let end = src.line_start(last) + src.line_text(last).len();
    let mut rebuilt = String::new();
    for line in first..=last {
        let t = src.line_text(line);
        let cut = t.bytes().take(indent).take_while(|&b| b == b' ').count();
        let t = &t[cut..];
        if t.starts_with("---") || t.starts_with("...") || t.starts_with('%') {
            return Err(
                "the string holds a document marker or directive at the start of a line: positions inside it are not mapped"
                    .into(),
            );
        }
        rebuilt.push_str(t);
        rebuilt.push('\n');
    }
    if rebuilt.trim_end_matches('\n') != decoded.trim_end_matches('\n') {
        return Err("the block string's lines do not read back as its text: positions inside it are not mapped".into());
    }
    let mut out = String::with_capacity(text.len());
    for (i, ch) in text.char_indices() {
        if (start..end).contains(&i) || ch == '\n' || ch == '\r' {
            out.push(ch);
        } else {
            for _ in 0..ch.len_utf8() {
                out.push(' ');
            }
        }
    }
    let inner = Source::new(src.name.clone(), out);
    // The same YAML, read in place and read as the string: anything indentation could change
    // (it should not) is caught here rather than reported at a wrong place.
    let as_string = Source::new(src.name.clone(), decoded.clone());
    if !reads_alike(&inner, &as_string) {
        return Err(
            "the YAML in the block string reads differently in place: positions inside it are not mapped"
                .into(),
        );
    }
    Ok(inner)
}

/// Do two texts read as the same YAML (the same documents, values and verdict)? A text read in
/// place, its surroundings blanked, against the same text read on its own: anything its
/// indentation could change is caught before a finding is placed by it.
pub fn reads_alike(a: &Arc<Source>, b: &Arc<Source>) -> bool {
    let json = |p: &super::Parsed| {
        (
            p.error.is_some(),
            p.documents
                .iter()
                .map(|d| d.root.as_ref().map(Node::to_json))
                .collect::<Vec<_>>(),
        )
    };
    json(&super::parse(a)) == json(&super::parse(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string_node(text: &str, pointer: &str) -> (Arc<Source>, Node) {
        let src = Source::new("f.yaml", text.to_string());
        let parsed = crate::yaml::parse(&src);
        let root = parsed.documents[0].root.clone().unwrap();
        let node = root.pointer(pointer).unwrap().clone();
        (src, node)
    }

    #[test]
    fn the_string_keeps_the_files_offsets() {
        let text = "a:\r\n  x: \"é\"\t# tab\r\n  values: |\r\n    cgpu:\r\n      policy:\t7\r\n\r\n      tag: v1\r\n  b: 1\r\n";
        let (src, node) = string_node(text, "/a/values");
        let inner = literal_source(&node).unwrap();
        assert_eq!(inner.text.len(), text.len());
        // The content lines are the file's, everything else is blank.
        let start = text.find("    cgpu").unwrap();
        let end = text.find("  b: 1").unwrap();
        assert_eq!(&inner.text[start..end], &text[start..end]);
        assert!(inner.text[..start].bytes().all(|b| b" \r\n".contains(&b)));
        assert!(inner.text[end..].bytes().all(|b| b" \r\n".contains(&b)));
        let parsed = crate::yaml::parse(&inner);
        let policy = parsed.first_at("/cgpu/policy");
        assert_eq!(policy.span.start, text.find('7').unwrap());
        assert_eq!(
            inner.line_col(policy.span.start),
            src.line_col(policy.span.start)
        );
    }

    #[test]
    fn strings_that_cannot_be_read_in_place() {
        for (text, why) in [
            ("v: >\n  cgpu: {}\n", "folded"),
            ("v: \"cgpu: {}\"\n", "one-line"),
            ("v: |2\n    cgpu: {}\n", "indentation indicator"),
            ("v: |\n  cgpu: {}\n  ---\n  cgpu: {}\n", "document marker"),
        ] {
            let (_, node) = string_node(text, "/v");
            let err = literal_source(&node).unwrap_err();
            assert!(err.contains(why), "{text:?}: {err}");
        }
        // A header with chomping and a comment is fine.
        let (_, node) = string_node("v: |- # values\n  cgpu:\n    policy: 1\n", "/v");
        assert!(literal_source(&node).is_ok());
    }
}
