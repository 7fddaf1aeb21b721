//! Splicing edits into the original bytes. Everything outside an edit's range is copied through
//! untouched, so comments, quoting, CRLF, a BOM and indentation survive every fix.

use std::ops::Range;

use crate::diag::Edit;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EditError {
    #[error("edits overlap at bytes {0:?} and {1:?}")]
    Overlap(Range<usize>, Range<usize>),
    #[error("edit range {0:?} is outside the text or splits a character")]
    OutOfBounds(Range<usize>),
}

/// Apply non-overlapping edits to `text`, back to front. Identical edits (the same range and
/// replacement proposed twice) count once.
pub fn apply(text: &str, edits: &[&Edit]) -> Result<String, EditError> {
    let mut sorted: Vec<&Edit> = edits.to_vec();
    sorted.sort_by_key(|e| (e.range.start, e.range.end));
    sorted.dedup_by(|a, b| a.range == b.range && a.replacement == b.replacement);
    for w in sorted.windows(2) {
        let (a, b) = (&w[0].range, &w[1].range);
        // Two insertions at the same point, or a range that starts before the previous ends.
        if b.start < a.end || (a.start == b.start && (a.is_empty() || b.is_empty())) {
            return Err(EditError::Overlap(a.clone(), b.clone()));
        }
    }
    let mut out = text.to_string();
    for e in sorted.iter().rev() {
        let r = e.range.clone();
        if r.start > r.end
            || r.end > out.len()
            || !out.is_char_boundary(r.start)
            || !out.is_char_boundary(r.end)
        {
            return Err(EditError::OutOfBounds(r));
        }
        out.replace_range(r, &e.replacement);
    }
    Ok(out)
}

/// Pick a largest set of edit groups (one group = one finding's edits) that do not overlap,
/// keeping earlier groups first. Returns the indices of the groups taken.
pub fn compatible_groups(groups: &[Vec<&Edit>]) -> Vec<usize> {
    let mut taken: Vec<Range<usize>> = Vec::new();
    let mut chosen = Vec::new();
    'group: for (i, g) in groups.iter().enumerate() {
        for e in g {
            for t in &taken {
                let same_point = e.range.start == t.start && (e.range.is_empty() || t.is_empty());
                if (e.range.start < t.end && t.start < e.range.end) || same_point {
                    continue 'group;
                }
            }
        }
        taken.extend(g.iter().map(|e| e.range.clone()));
        chosen.push(i);
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::Source;

    fn edit(r: Range<usize>, s: &str) -> Edit {
        Edit {
            src: Source::new("t", String::new()),
            range: r,
            replacement: s.into(),
        }
    }

    #[test]
    fn applies_back_to_front_and_keeps_the_rest() {
        let text = "a: \"1\"  # keep\r\nb: On\r\n";
        let e1 = edit(3..6, "1");
        let e2 = edit(19..21, "true");
        assert_eq!(
            apply(text, &[&e2, &e1]).unwrap(),
            "a: 1  # keep\r\nb: true\r\n"
        );
    }

    #[test]
    fn overlapping_edits_are_refused() {
        let e1 = edit(0..4, "x");
        let e2 = edit(2..6, "y");
        assert!(matches!(
            apply("0123456789", &[&e1, &e2]),
            Err(EditError::Overlap(..))
        ));
    }

    #[test]
    fn no_edits_is_identity() {
        let text = "# c\r\n\u{feff}x: 'y'\t# tab\n";
        assert_eq!(apply(text, &[]).unwrap(), text);
    }

    #[test]
    fn compatible_groups_skip_conflicts() {
        let a = edit(0..2, "a");
        let b = edit(1..3, "b");
        let c = edit(5..6, "c");
        let groups = vec![vec![&a], vec![&b], vec![&c]];
        assert_eq!(compatible_groups(&groups), vec![0, 2]);
    }
}
