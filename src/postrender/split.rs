//! The stream split: where each document ends, and which documents name an installer.

use std::io::{self, BufRead};

use crate::cgpu::INSTALLER_NAMES;
use crate::rules::installer;
use crate::yaml::{self, Source};

/// How findings name the stream.
pub(crate) const STDIN: &str = "-";

/// Helm 4's annotation naming a post-rendered document's template.
const FILENAME_ANNOTATION: &str = "postrenderer.helm.sh/postrender-filename";

/// The template a document names, and how many lines (`---`, `# Source:`) precede its content.
pub(super) fn origin_of(text: &str, root: Option<&yaml::Node>) -> (Option<String>, usize) {
    let mut skipped = 0;
    let mut template = None;
    for line in text.lines() {
        let t = line.trim_end();
        if skipped == 0 && t.starts_with("---") && t[3..].trim().is_empty() {
            skipped += 1;
        } else if let Some(name) = t.strip_prefix("# Source: ") {
            template = Some(name.trim().to_string());
            skipped += 1;
            break;
        } else {
            break;
        }
    }
    if template.is_none() {
        template = root
            .and_then(|r| r.pointer("/metadata/annotations"))
            .and_then(|a| a.get(FILENAME_ANNOTATION))
            .and_then(yaml::Node::as_str)
            .map(str::to_string);
    }
    (template, skipped)
}

/// `---` (alone, or followed by a space, a comment or content) or `...` at column 0.
pub(super) fn marker(line: &[u8], m: &[u8; 3]) -> bool {
    // A fixed-size compare, inlined (a slice `starts_with` calls memcmp for three bytes, once
    // per line of the stream).
    line.first_chunk::<3>() == Some(m)
        && matches!(
            line.get(3),
            None | Some(b' ' | b'\t' | b'\r' | b'\n' | b'#')
        )
}

/// Does a chunk hold anything but blank and comment lines?
pub(super) fn has_content(chunk: &[u8]) -> bool {
    chunk.split(|b| *b == b'\n').any(|l| {
        let t = l.trim_ascii();
        !t.is_empty() && !t.starts_with(b"#") && !marker(l, b"---")
    })
}

/// The cheap pre-filter that keeps post-render near `cat` speed: only a document whose bytes
/// mention an installer name is parsed; every other document is copied through unread.
pub(super) fn mentions_installer(chunk: &[u8]) -> bool {
    use memchr::memmem::Finder;
    use std::sync::OnceLock;
    /// The names' longest common suffix (`-installer`), then each name: a document without the
    /// suffix (nearly all of a big stream) is passed over in one search instead of one per name.
    static FINDERS: OnceLock<(Finder<'static>, Vec<Finder<'static>>)> = OnceLock::new();
    let (common, names) = FINDERS.get_or_init(|| {
        let first = INSTALLER_NAMES[0].as_bytes();
        let len = (0..=first.len())
            .rev()
            .find(|&n| {
                let tail = &first[first.len() - n..];
                INSTALLER_NAMES.iter().all(|s| s.as_bytes().ends_with(tail))
            })
            .unwrap_or(0);
        let names = INSTALLER_NAMES.iter().map(|n| Finder::new(n.as_bytes()));
        (Finder::new(&first[first.len() - len..]), names.collect())
    });
    common.find(chunk).is_some() && names.iter().any(|f| f.find(chunk).is_some())
}

/// Could the document's bytes spell an installer's name or `DaemonSet` without writing it out?
/// Only a double-quoted escape (`"cgpu\x2dinstaller"`, a `\` line continuation), a `!!binary`
/// scalar (a tag: `!`) or a tag spelled with `%` escapes can (folding a plain, single-quoted or
/// block scalar over lines adds a space; an alias repeats text written in the same document).
/// Such a document is parsed to find out ([`spells_installer`]).
pub(super) fn may_spell_installer(chunk: &[u8]) -> bool {
    memchr::memchr3(b'\\', b'%', b'!', chunk).is_some()
}

/// Does a document that does not name an installer read as one (parsed whole; a document that
/// does not parse is not one: only a named installer's document is reported when broken)?
pub(super) fn spells_installer(chunk: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(chunk) else {
        return false;
    };
    let parsed = yaml::parse(&Source::new(STDIN, text.to_string()));
    parsed
        .documents
        .iter()
        .filter_map(|d| d.root.as_ref())
        .any(installer::has_installer)
}

/// Finds where each chunk (document) ends, as the line reader ([`super::run_by_lines`]) splits: before
/// the next `---` line, or after a `...` line (the chunk's first line included); the end of the
/// input at its end. One vectorised scan over the bytes for a line that starts with `-` or `.`
/// ([`super::scan::line_start`]), which then is or is not a marker; the same pass tells whether
/// the chunk may need parsing ([`Splitter::may_need_parsing`]).
#[derive(Default)]
pub(super) struct Splitter {
    /// Every line start of the current chunk before this has been looked at.
    resume: usize,
    /// The current chunk's bytes from its start to this have been through the prefilter's test...
    checked: usize,
    /// ...and this says whether one of them (or a byte after them) may need parsing.
    trigger: bool,
}

impl Splitter {
    /// The next chunk starts at `pos`.
    pub(super) fn next_chunk(&mut self) {
        self.resume = 0;
    }

    /// The first `by` bytes of the buffer are gone.
    pub(super) fn shift(&mut self, by: usize) {
        self.resume = self.resume.saturating_sub(by);
        self.checked = self.checked.saturating_sub(by);
    }

    /// Could the chunk `buf[pos..end]` that [`Splitter::end`] just ended need parsing
    /// ([`super::scan::may_need_parsing`], a superset of what the exact tests find)? The bytes
    /// the search for its end tested already are not tested again.
    pub(super) fn may_need_parsing(&self, buf: &[u8], pos: usize, end: usize) -> bool {
        self.trigger || super::scan::may_need_parsing(&buf[self.checked.clamp(pos, end)..end])
    }

    /// Where the chunk that starts at `pos` ends; `None` when `buf` ends before that is known
    /// (more input is needed; the search resumes where it stopped).
    pub(super) fn end(&mut self, buf: &[u8], pos: usize, eof: bool) -> Option<usize> {
        // The end of the line at `q`, or None when it is not in `buf` yet.
        let line_end = |q: usize| match memchr::memchr(b'\n', &buf[q..]) {
            Some(i) => Some(q + i + 1),
            None if eof => Some(buf.len()),
            None => None,
        };
        // Is the line at `q` a marker `m`? None: undecided until more input comes.
        let is_marker = |q: usize, m: &[u8; 3]| -> Option<bool> {
            if buf.len() < q + 4 && !eof {
                return None;
            }
            Some(marker(&buf[q..], m))
        };
        if self.resume <= pos {
            // A chunk's first search: nothing of it has been tested yet.
            self.checked = pos;
            self.trigger = false;
            match is_marker(pos, b"...") {
                None => return None,
                Some(true) => return line_end(pos),
                Some(false) => {}
            }
        }
        // Line starts after `from` (a `\n` at `from - 1` or later), or after `pos`'s own line.
        let from = self.resume.max(pos);
        let mut at = from.saturating_sub(1).max(pos);
        loop {
            let found = super::scan::line_start(buf, at);
            // The prefilter's answer for the bytes the search passed over, when they follow on
            // from those tested before (a search resumed near the end of `buf` may skip some:
            // `may_need_parsing` tests them).
            if at <= self.checked {
                self.checked = self.checked.max(found.checked);
            }
            self.trigger |= found.trigger;
            let Some(q) = found.at else {
                if eof {
                    return Some(buf.len());
                }
                // A `\n` may end `buf`: look at its last bytes again.
                self.resume = buf.len().saturating_sub(3).max(pos + 1);
                return None;
            };
            let dashes = buf[q] == b'-';
            match is_marker(q, if dashes { b"---" } else { b"..." }) {
                None => {
                    self.resume = q;
                    return None;
                }
                // A `---` line starts the next chunk.
                Some(true) if dashes => return Some(q),
                // A `...` line ends this one after it.
                Some(true) => {
                    let end = line_end(q);
                    if end.is_none() {
                        self.resume = q;
                    }
                    return end;
                }
                Some(false) => at = q,
            }
        }
    }
}

/// `BufRead::read_until(b'\n')` with the memchr crate's vectorised search (the standard
/// library's portable one is most of the cost of reading a big stream).
pub(super) fn read_line(input: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<usize> {
    let mut read = 0;
    loop {
        let (done, used) = {
            let available = match input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            match memchr::memchr(b'\n', available) {
                Some(i) => {
                    buf.extend_from_slice(&available[..=i]);
                    (true, i + 1)
                }
                None => {
                    buf.extend_from_slice(available);
                    (false, available.len())
                }
            }
        };
        input.consume(used);
        read += used;
        if done || used == 0 {
            return Ok(read);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::postrender::scan::{SUFFIX, may_need_parsing};
    use proptest::prelude::*;

    /// The chunks of `input` and what [`Splitter::may_need_parsing`] says of each, searched a
    /// `window` of bytes at a time as `run_bytes` searches them (the bytes of an unfinished
    /// chunk searched again with more after them).
    fn flagged_chunks(input: &[u8], window: usize) -> Vec<(std::ops::Range<usize>, bool)> {
        let mut split = Splitter::default();
        let mut out = Vec::new();
        let (mut base, mut end) = (0, 0);
        while base < input.len() {
            end = (end + window).min(input.len());
            let eof = end == input.len();
            let buf = &input[base..end];
            let mut pos = 0;
            while pos < buf.len() {
                let e = match split.end(buf, pos, eof) {
                    Some(e) => e,
                    None if eof => buf.len(),
                    None => break,
                };
                out.push((base + pos..base + e, split.may_need_parsing(buf, pos, e)));
                split.next_chunk();
                pos = e;
            }
            base += pos;
            split.shift(pos);
        }
        out
    }

    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            prop::sample::select(b"\n-.\\%!irx \r#".to_vec()).prop_map(|b| vec![b]),
            Just(SUFFIX.to_vec()),
            Just(b"\n---\n".to_vec()),
            Just(b"\n...\n".to_vec()),
            Just(vec![b'x'; 40]),
            Just(b"\n- item\n".to_vec()),
        ];
        prop::collection::vec(piece, 0..60).prop_map(|p| p.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// The search for a chunk's end answers the prefilter for every chunk, searched whole or
        /// a few bytes at a time: it never passes over a chunk the prefilter would flag (the
        /// chunks themselves are the same whatever the window).
        #[test]
        fn every_chunk_the_prefilter_flags_is_flagged(buf in bytes()) {
            let whole = flagged_chunks(&buf, usize::MAX / 2);
            for window in [1, 2, 3, 7, 33, 41, 64, 100, usize::MAX / 2] {
                let got = flagged_chunks(&buf, window);
                let ranges: Vec<_> = got.iter().map(|(r, _)| r.clone()).collect();
                let want: Vec<_> = whole.iter().map(|(r, _)| r.clone()).collect();
                prop_assert_eq!(ranges, want, "window {}", window);
                for (r, flagged) in got {
                    prop_assert!(
                        flagged || !may_need_parsing(&buf[r.clone()]),
                        "window {} chunk {:?}",
                        window,
                        r
                    );
                }
            }
        }
    }
}
