//! The fenced ```` ```yaml ```` / `~~~yml` blocks of a Markdown file (CommonMark's fenced code
//! blocks, in list items too), read in place the way [`super::embedded`] reads a `values: |`
//! string: [`block_source`] makes a source of the same length as the file in which every byte
//! outside the block's content lines is a space (line breaks kept). The YAML inside parses as
//! the block does, and every span in it is a span of the Markdown file: line and column are the
//! file's, and an edit splices the file's bytes inside the block only.
//!
//! Not read: fences inside block quotes (`> ```yaml`), indented code blocks, HTML blocks.

use std::ops::Range;
use std::sync::Arc;

use super::Source;

/// The HTML comment that opts the next block out: `<!-- cgpu-lint: ignore -->`.
pub const OPT_OUT: &str = "cgpu-lint: ignore";

/// Is this path a Markdown file (`.md`, `.markdown`, any case)?
pub fn is_markdown(name: &str) -> bool {
    std::path::Path::new(name)
        .extension()
        .and_then(|x| x.to_str())
        .is_some_and(|x| x.eq_ignore_ascii_case("md") || x.eq_ignore_ascii_case("markdown"))
}

/// One fenced YAML block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// 1-based line of the opening fence.
    pub fence_line: usize,
    /// Byte range of the content lines: from the first one's start to the last one's end,
    /// line break excluded (empty for a block without content).
    pub content: Range<usize>,
    /// The opening fence's column (0-based, in bytes): CommonMark removes up to this many
    /// spaces from each content line.
    pub indent: usize,
    /// `<!-- cgpu-lint: ignore -->` stands on the lines before the fence.
    pub opted_out: bool,
}

/// A line of the text: its start offset and its bytes without the line break.
fn lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut at = 0;
    for raw in text.split_inclusive('\n') {
        out.push((at, raw.trim_end_matches(['\n', '\r'])));
        at += raw.len();
    }
    out
}

fn leading_spaces(line: &str) -> usize {
    line.bytes().take_while(|&b| b == b' ').count()
}

/// The content column of a list item that starts at byte `s` of `line` (`- `, `* `, `+ `,
/// `1. `, `1) `), if one does.
fn list_content_column(line: &str, s: usize) -> Option<usize> {
    let rest = &line.as_bytes()[s..];
    let marker = match rest.first()? {
        b'-' | b'*' | b'+' => 1,
        b'0'..=b'9' => {
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits > 9 || !matches!(rest.get(digits), Some(b'.' | b')')) {
                return None;
            }
            digits + 1
        }
        _ => return None,
    };
    let after = &rest[marker..];
    if after.is_empty() {
        return Some(s + marker + 1);
    }
    let spaces = after.iter().take_while(|&&b| b == b' ').count();
    match spaces {
        0 => None,
        // Five or more spaces: an indented code block inside the item, one space is the gap.
        1..=4 if spaces < after.len() => Some(s + marker + spaces),
        _ => Some(s + marker + 1),
    }
}

/// An opening fence at byte `at` of `line`: its character, its length and whether its info
/// string names YAML (`yaml`, `yml`, `yaml title=x`, `{.yaml}`).
fn opening_fence(line: &str, at: usize) -> Option<(u8, usize, bool)> {
    let rest = &line[at..];
    let ch = *rest.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let len = rest.bytes().take_while(|&b| b == ch).count();
    if len < 3 {
        return None;
    }
    let info = rest[len..].trim();
    if ch == b'`' && info.contains('`') {
        return None;
    }
    let lang = info
        .split(|c: char| c.is_whitespace() || c == ',' || c == '{' || c == '}')
        .find(|w| !w.is_empty())
        .unwrap_or("")
        .trim_start_matches('.');
    let yaml = lang.eq_ignore_ascii_case("yaml") || lang.eq_ignore_ascii_case("yml");
    Some((ch, len, yaml))
}

/// Does `line` close a fence of `ch` × `len` opened in a container whose content column is
/// `base`?
fn closes(line: &str, base: usize, ch: u8, len: usize) -> bool {
    let s = leading_spaces(line);
    if s < base || s - base > 3 {
        return false;
    }
    let rest = &line[s..];
    let n = rest.bytes().take_while(|&b| b == ch).count();
    n >= len && rest[n..].bytes().all(|b| b == b' ' || b == b'\t')
}

/// Is `line` an HTML comment that opts the next block out?
fn is_opt_out(line: &str) -> bool {
    line.trim()
        .strip_prefix("<!--")
        .and_then(|l| l.strip_suffix("-->"))
        .is_some_and(|body| body.trim() == OPT_OUT)
}

/// The fenced YAML blocks of a Markdown text, in order.
pub fn yaml_blocks(text: &str) -> Vec<Block> {
    let lines = lines(text);
    let mut out = Vec::new();
    // The content column of the list item the lines are in (0: none).
    let mut list = 0usize;
    let mut i = 0;
    while i < lines.len() {
        let (_, line) = lines[i];
        let s = leading_spaces(line);
        if line[s..].is_empty() {
            i += 1;
            continue;
        }
        let mut base = list;
        if s < list {
            // A line less indented than the item's content ends the item (lazy continuation
            // lines of a paragraph are not told apart: they hold no fence).
            list = 0;
            base = 0;
        }
        let mut at = s;
        if s <= base + 3
            && let Some(w) = list_content_column(line, s)
        {
            list = w;
            base = w;
            at = w.min(line.len());
        }
        let fence = (at <= base + 3).then(|| opening_fence(line, at)).flatten();
        let Some((ch, len, yaml)) = fence else {
            i += 1;
            continue;
        };
        // The content runs to the closing fence, to a less indented line when in a list item,
        // or to the end of the text.
        let mut j = i + 1;
        while j < lines.len() {
            let l = lines[j].1;
            if closes(l, base, ch, len) {
                break;
            }
            if base > 0 && !l.trim().is_empty() && leading_spaces(l) < base {
                break;
            }
            j += 1;
        }
        if yaml {
            let content = if j > i + 1 {
                let (first, _) = lines[i + 1];
                let (last, last_text) = lines[j - 1];
                first..last + last_text.len()
            } else {
                let start = lines.get(i + 1).map_or(text.len(), |l| l.0);
                start..start
            };
            let opted_out = lines[..i]
                .iter()
                .rev()
                .map(|(_, l)| *l)
                .skip_while(|l| l.trim().is_empty())
                .take_while(|l| l.trim_start().starts_with("<!--"))
                .any(is_opt_out);
            out.push(Block {
                fence_line: i + 1,
                content,
                indent: at,
                opted_out,
            });
        }
        let closed = j < lines.len() && closes(lines[j].1, base, ch, len);
        i = if closed { j + 1 } else { j };
    }
    out
}

/// The block's content as a source with the file's offsets (named as the file), or why it
/// cannot be read in place (its lines are indented less than its fence, so CommonMark's reading
/// of it differs from the text in place).
pub fn block_source(src: &Source, block: &Block) -> Result<Arc<Source>, String> {
    let text = &src.text;
    let range = block.content.clone();
    let mut out = String::with_capacity(text.len());
    for (i, ch) in text.char_indices() {
        if range.contains(&i) || ch == '\n' || ch == '\r' {
            out.push(ch);
        } else {
            for _ in 0..ch.len_utf8() {
                out.push(' ');
            }
        }
    }
    let inner = Source::new(src.name.clone(), out);
    if block.indent == 0 {
        return Ok(inner);
    }
    // CommonMark's reading: up to `indent` spaces removed from each line.
    let mut stripped = String::new();
    for raw in text[range].split_inclusive('\n') {
        let cut = leading_spaces(raw).min(block.indent);
        stripped.push_str(&raw[cut..]);
    }
    let as_block = Source::new(src.name.clone(), stripped);
    if !super::embedded::reads_alike(&inner, &as_block) {
        return Err(format!(
            "the block's lines are indented less than its fence (column {}), so it reads differently in place: positions inside it are not mapped; indent every line at least as far as the fence",
            block.indent + 1
        ));
    }
    Ok(inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents(text: &str) -> Vec<&str> {
        yaml_blocks(text)
            .into_iter()
            .map(|b| &text[b.content])
            .collect()
    }

    #[test]
    fn backtick_and_tilde_fences_with_info_strings() {
        let text = "# T\n\n```yaml\na: 1\n```\n\n~~~yml title=\"x\"\nb: 2\n~~~\n\n```sh\nc: 3\n```\n\n````{.yaml}\nd: 4\n```\ne: 5\n````\n";
        assert_eq!(contents(text), ["a: 1", "b: 2", "d: 4\n```\ne: 5"]);
    }

    #[test]
    fn a_fence_in_a_list_item_and_an_unclosed_fence() {
        let text =
            "1. Set:\n\n   ```yaml\n   cgpu:\n     policy: 1\n   ```\n- x\n  ```yml\n  a: 1\n";
        let blocks = yaml_blocks(text);
        assert_eq!(blocks.len(), 2);
        assert_eq!(&text[blocks[0].content.clone()], "   cgpu:\n     policy: 1");
        assert_eq!(blocks[0].indent, 3);
        assert_eq!(blocks[0].fence_line, 3);
        assert_eq!(&text[blocks[1].content.clone()], "  a: 1");
    }

    #[test]
    fn four_spaces_at_the_top_level_are_not_a_fence() {
        assert!(yaml_blocks("para\n\n    ```yaml\n    a: 1\n    ```\n").is_empty());
    }

    #[test]
    fn the_opt_out_comment_before_a_fence() {
        let text = "<!-- cgpu-lint: ignore -->\n```yaml\na: 1\n```\n<!-- other -->\n\n```yaml\nb: 1\n```\n";
        let b = yaml_blocks(text);
        assert!(b[0].opted_out && !b[1].opted_out);
    }

    #[test]
    fn the_block_source_keeps_the_files_offsets() {
        let text = "x\r\n- item\r\n  ```yaml\r\n  cgpu:\r\n    policy: 7\r\n  ```\r\nafter é\r\n";
        let src = Source::new("r.md", text.to_string());
        let b = &yaml_blocks(text)[0];
        let inner = block_source(&src, b).unwrap();
        assert_eq!(inner.text.len(), text.len());
        let parsed = crate::yaml::parse(&inner);
        let policy = parsed.first_at("/cgpu/policy");
        assert_eq!(policy.span.start, text.find('7').unwrap());
        // A line indented less than the fence reads differently in place.
        let text = "- a\n\n    ```yaml\n    k:\n      - 1\n   j: 2\n    ```\n";
        let src = Source::new("r.md", text.to_string());
        let b = &yaml_blocks(text)[0];
        assert!(block_source(&src, b).is_err(), "{b:?}");
    }
}
