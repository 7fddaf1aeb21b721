//! The Helm post-renderer: a rendered stream in, the same stream out.
//!
//! Helm 3 hands us `---` + `# Source:` documents (hooks are not post-rendered); Helm 4 hands us
//! every document, hooks included, each annotated `postrenderer.helm.sh/postrender-filename`, and
//! rebuilds its `# Source:` headers from those annotations afterwards, so they must survive. Both
//! are served the same way: the stream is split into documents by a byte search for the `---`
//! and `...` lines, and a document is parsed only when its bytes mention an installer name (or
//! could spell one without writing it: an escape, a `!!binary` tag). Every other byte is copied
//! as read, in large writes, so memory stays at one document and one block (plus the installer
//! documents, which findings point into). A regular file on stdin is mapped and searched in
//! place ([`run_bytes`]): its bytes are never copied into the process.

use std::io::{self, BufRead, Write};
use std::sync::Arc;

use crate::diag::{Diagnostic, Edit};
use crate::edit;
use crate::lint;
use crate::manifest::Objects;
use crate::rules::installer;
use crate::yaml::{self, Source, emit};

mod scan;
mod split;

use split::{
    Splitter, has_content, marker, may_spell_installer, mentions_installer, origin_of, read_line,
    spells_installer,
};

pub(crate) use split::STDIN;

/// Documents that start after this many lines are not padded to stream line numbers.
pub const MAX_PAD_LINES: usize = 100_000;

/// What to do to the installers.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Set POLICY to this on every installer.
    pub policy: Option<u8>,
    /// Apply the safe fixes.
    pub fix: bool,
    /// `--unsafe-fixes`: with `fix`, the unsafe fixes too.
    pub unsafe_fixes: bool,
    /// The cluster region: rewrite registry hosts to it (and check against it: set it in
    /// `settings.opts.region` too).
    pub region: Option<String>,
    /// What the pipeline reports: rule options, --select/--ignore, `.cgpu-lint.toml`.
    pub settings: lint::Settings,
    /// Parse every document that does not name an installer to see whether it is one, instead
    /// of only those whose bytes could spell a name without writing it
    /// ([`may_spell_installer`]): the oracle the byte filter is tested against.
    #[doc(hidden)]
    pub parse_every_document: bool,
}

/// What a run found and changed.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Findings on the installers as written to the output.
    pub diagnostics: Vec<Diagnostic>,
    /// One line per change made (`document 3: cgpu-core-installer POLICY "5" → "0"`).
    pub changes: Vec<String>,
    /// Documents in the stream.
    pub documents: usize,
    /// Installer DaemonSets found.
    pub installers: usize,
    /// The documents whose output differs from their input: (byte range in the stream, new
    /// bytes), in stream order. With a seekable input this is all a second pass needs.
    pub replacements: Vec<(std::ops::Range<u64>, Vec<u8>)>,
    /// Where each checked document comes from, for findings to name the template.
    pub origins: Vec<Origin>,
}

/// A rendered document's template and where its text starts in the stream.
#[derive(Debug, Clone)]
pub struct Origin {
    /// 1-based number of the document in the stream.
    pub document: usize,
    /// The chart template that rendered it: Helm 3's `# Source:` comment, Helm 4's
    /// `postrenderer.helm.sh/postrender-filename` annotation.
    pub template: Option<String>,
    /// The stream line of the document's first line of content (after `---` and `# Source:`).
    pub first_line: usize,
}

impl Outcome {
    /// `TEMPLATE, line N of the document` for a finding on a checked document whose lines are
    /// the stream's, when the template is known.
    pub fn template_of(&self, d: &Diagnostic) -> Option<String> {
        let o = self.origins.iter().find(|o| o.document == d.document)?;
        let template = o.template.as_deref()?;
        let line = d.start().line;
        if d.src.name != STDIN || line < o.first_line {
            return Some(crate::output::escape_controls(template).into_owned());
        }
        Some(format!(
            "{}, line {} of the document",
            crate::output::escape_controls(template),
            line - o.first_line + 1
        ))
    }
}

struct Run<'a> {
    opts: &'a Options,
    outcome: Outcome,
    /// The installer documents as written to the output (and documents that mention an
    /// installer but do not parse), with their number in the stream: one cluster for the pipeline.
    docs: Vec<(Arc<Source>, usize)>,
    /// Lines before the current chunk, so findings carry the stream's line numbers.
    lines_before: usize,
    /// Bytes of the stream before the current chunk.
    offset: u64,
}

/// How many `\n` bytes `bytes` holds, 255 bytes per byte-wide count (which vectorises; a count
/// per byte into a `usize` does not, and was a sixth of post-render's time).
fn count_newlines(bytes: &[u8]) -> usize {
    bytes
        .chunks(255)
        .map(|c| c.iter().fold(0u8, |n, &b| n + u8::from(b == b'\n')) as usize)
        .sum()
}

/// Bytes read from a stream at a time (a document longer than this is held whole).
const BLOCK: usize = 256 * 1024;

impl<'a> Run<'a> {
    fn new(opts: &'a Options) -> Run<'a> {
        Run {
            opts,
            outcome: Outcome::default(),
            docs: Vec::new(),
            lines_before: 0,
            offset: 0,
        }
    }

    /// The complete chunks at the start of `buf` (all of it at the end of the input): each
    /// checked when it names an installer, and everything else written to `out` in as few writes
    /// as the installer documents allow. Returns how many bytes were used; the rest starts an
    /// unfinished chunk.
    fn blocks(
        &mut self,
        buf: &[u8],
        eof: bool,
        split: &mut Splitter,
        out: &mut impl Write,
    ) -> io::Result<usize> {
        let mut pos = 0;
        let mut copied = 0;
        while pos < buf.len() {
            let end = match split.end(buf, pos, eof) {
                Some(end) => end,
                // At the end of the input every question has an answer; never wait for more.
                None if eof => buf.len(),
                None => break,
            };
            let flagged = split.may_need_parsing(buf, pos, end);
            split.next_chunk();
            let chunk = &buf[pos..end];
            if self.is_document(chunk) {
                self.outcome.documents += 1;
                if self.must_check(chunk, flagged) {
                    out.write_all(&buf[copied..pos])?;
                    copied = end;
                    self.checked(chunk, out)?;
                }
            }
            // Only a document starting within MAX_PAD_LINES lines needs the exact count.
            if self.lines_before <= MAX_PAD_LINES {
                self.lines_before += count_newlines(chunk);
            }
            self.offset += chunk.len() as u64;
            pos = end;
        }
        out.write_all(&buf[copied..pos])?;
        Ok(pos)
    }

    /// The installers of one stream are one cluster: their policies must agree.
    fn finish(mut self) -> Outcome {
        let srcs: Vec<Arc<Source>> = self.docs.iter().map(|(s, _)| s.clone()).collect();
        let mut found = lint::lint_cluster(&srcs, &self.opts.settings);
        for d in &mut found {
            if let Some((_, n)) = self.docs.iter().find(|(s, _)| Arc::ptr_eq(s, &d.src)) {
                d.document = *n;
            }
        }
        self.outcome.diagnostics = found;
        self.outcome
    }
}

/// Post-render `input` into `out`. Findings are returned, not printed; the caller decides
/// whether `out` reaches Helm. The input is read in blocks of [`BLOCK`] bytes.
pub fn run(input: impl io::Read, out: &mut impl Write, opts: &Options) -> io::Result<Outcome> {
    run_in_blocks(input, out, opts, BLOCK)
}

/// [`run`] reading `block` bytes at a time (tests cut the stream anywhere).
fn run_in_blocks(
    mut input: impl io::Read,
    out: &mut impl Write,
    opts: &Options,
    block: usize,
) -> io::Result<Outcome> {
    use io::Read;
    let mut r = Run::new(opts);
    let mut split = Splitter::default();
    let mut buf: Vec<u8> = Vec::with_capacity(2 * block);
    let mut eof = false;
    while !eof || !buf.is_empty() {
        if !eof {
            let n = match (&mut input).take(block as u64).read_to_end(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            eof = n == 0;
        }
        let used = r.blocks(&buf, eof, &mut split, out)?;
        buf.drain(..used);
        split.shift(used);
    }
    Ok(r.finish())
}

/// Bytes of a mapped stream searched at a time (its pages are mapped ahead of the search and
/// released behind it, so that its resident pages stay about two windows).
const WINDOW: usize = 2 * 1024 * 1024;

/// [`run`] over a stream held whole (a mapped file): searched in place, never copied, a window
/// at a time. Before each window `pages(new, keep)` is told which bytes come next (`new`) and
/// from where on bytes are still needed (`keep`).
pub fn run_bytes(
    input: &[u8],
    out: &mut impl Write,
    opts: &Options,
    pages: impl FnMut(std::ops::Range<usize>, usize),
) -> io::Result<Outcome> {
    run_bytes_in_windows(input, out, opts, WINDOW, pages)
}

fn run_bytes_in_windows(
    input: &[u8],
    out: &mut impl Write,
    opts: &Options,
    window: usize,
    mut pages: impl FnMut(std::ops::Range<usize>, usize),
) -> io::Result<Outcome> {
    let mut r = Run::new(opts);
    let mut split = Splitter::default();
    // `input[base..end]`: the unfinished chunk and the bytes searched after it.
    let (mut base, mut end) = (0, 0);
    while base < input.len() {
        let next = (end + window).min(input.len());
        pages(end..next, base);
        end = next;
        let eof = end == input.len();
        let used = r.blocks(&input[base..end], eof, &mut split, out)?;
        base += used;
        split.shift(used);
    }
    Ok(r.finish())
}

/// The engine as it split the stream before the byte scans: line by line, each line checked for a
/// marker. Kept as the oracle [`run`] is tested against (tests/it/postrender.rs, the fuzz target).
#[doc(hidden)]
pub fn run_by_lines(
    mut input: impl BufRead,
    out: &mut impl Write,
    opts: &Options,
) -> io::Result<Outcome> {
    let mut r = Run::new(opts);
    // Lines are read straight onto the end of the current document's bytes (no per-line copy);
    // the document ends at a `---` line (which starts the next one) or after a `...` line.
    let mut chunk: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut newlines = 0usize;
    loop {
        let start = chunk.len();
        let n = read_line(&mut input, &mut chunk)?;
        if n == 0 {
            break;
        }
        let ends_line = chunk.last() == Some(&b'\n');
        if start > 0 && marker(&chunk[start..], b"---") {
            r.chunk(&chunk[..start], newlines, out)?;
            chunk.drain(..start);
            newlines = 0;
        }
        newlines += usize::from(ends_line);
        if marker(&chunk[chunk.len() - n..], b"...") {
            r.chunk(&chunk, newlines, out)?;
            chunk.clear();
            newlines = 0;
        }
    }
    if !chunk.is_empty() {
        r.chunk(&chunk, newlines, out)?;
    }
    Ok(r.finish())
}

impl Run<'_> {
    /// One document (or the comments before the first): `newlines` is how many lines it ends.
    fn chunk(&mut self, chunk: &[u8], newlines: usize, out: &mut impl Write) -> io::Result<()> {
        if self.is_document(chunk) {
            self.outcome.documents += 1;
            if self.must_check(chunk, scan::may_need_parsing(chunk)) {
                self.checked(chunk, out)?;
            } else {
                out.write_all(chunk)?;
            }
        } else {
            out.write_all(chunk)?;
        }
        self.lines_before += newlines;
        self.offset += chunk.len() as u64;
        Ok(())
    }

    /// A chunk is a document when it starts with `---` or holds anything but comments.
    fn is_document(&self, chunk: &[u8]) -> bool {
        chunk.starts_with(b"---") || has_content(chunk)
    }

    /// Does the document need parsing: it names an installer, or its bytes could spell one
    /// another way and parsing finds one. `flagged`: what [`scan::may_need_parsing`] says of it
    /// (nearly every document of a big stream fails it, before the exact tests).
    fn must_check(&self, chunk: &[u8], flagged: bool) -> bool {
        if !self.opts.parse_every_document && !flagged {
            return false;
        }
        mentions_installer(chunk)
            || ((self.opts.parse_every_document || may_spell_installer(chunk))
                && spells_installer(chunk))
    }

    /// Check (and edit) a document that [`Run::must_check`] selected; write what Helm gets.
    fn checked(&mut self, chunk: &[u8], out: &mut impl Write) -> io::Result<()> {
        match std::str::from_utf8(chunk) {
            Ok(text) => {
                let edited = self.installer_doc(text);
                out.write_all(edited.as_bytes())?;
                if edited.as_bytes() != chunk {
                    let range = self.offset..self.offset + chunk.len() as u64;
                    self.outcome.replacements.push((range, edited.into_bytes()));
                }
            }
            Err(_) => {
                // Passed through as read; Helm will refuse it, but say where it is.
                let (lossy, at, message) = match yaml::source::decode(chunk.to_vec()) {
                    Err(e) => e,
                    Ok(_) => unreachable!("from_utf8 failed"),
                };
                let src = Source::new_invalid(STDIN, lossy, at, message);
                self.docs.push((src, self.outcome.documents));
                out.write_all(chunk)?;
            }
        }
        Ok(())
    }

    /// A source for `text` that starts at the chunk's line in the stream (blank lines pad the
    /// front; only installer documents are built this way), so findings carry the stream's line
    /// numbers. Padding costs about 10 bytes per line before the document, held as long as the
    /// findings are: past [`MAX_PAD_LINES`] the document is not padded and its source is named
    /// `<stdin document N>`, lines counted from the document's first line.
    fn source(&self, text: &str) -> (Arc<Source>, usize) {
        if self.lines_before > MAX_PAD_LINES {
            let name = format!("<stdin document {}>", self.outcome.documents);
            return (Source::new(name, text.to_string()), 0);
        }
        // Keep the document's own line ending first, so inserted lines match it.
        let crlf = text
            .find('\n')
            .is_some_and(|i| i > 0 && text.as_bytes()[i - 1] == b'\r');
        let pad = if crlf { "\r\n" } else { "\n" }.repeat(self.lines_before);
        (Source::new(STDIN, format!("{pad}{text}")), pad.len())
    }

    /// Edit one document that mentions an installer and check the result. Returns its text.
    fn installer_doc(&mut self, text: &str) -> String {
        let document = self.outcome.documents;
        let (src, pad) = self.source(text);
        let parsed = yaml::parse(&src);
        let mut groups: Vec<(Vec<Edit>, String)> = Vec::new();
        let installers_before = self.outcome.installers;
        for doc in &parsed.documents {
            let Some(root) = &doc.root else { continue };
            let objects = Objects::of(root);
            self.outcome.installers += objects.iter().filter(|o| o.is_installer()).count();
            for inst in objects.iter().filter_map(|o| o.installer()) {
                if let Some(n) = self.opts.policy {
                    let edits = installer::set_policy_edits(&inst, n);
                    if !edits.is_empty() {
                        let from = inst
                            .policy_envs()
                            .last()
                            .and_then(|e| e.value.map(|v| v.raw().to_string()))
                            .unwrap_or_else(|| "(missing)".into());
                        let what = format!(
                            "document {document}: {} POLICY {from} → \"{n}\"",
                            inst.name()
                        );
                        groups.push((edits, what));
                    }
                }
            }
        }
        if self.opts.fix && self.outcome.installers > installers_before {
            // The pipeline's findings on this document (suppressions and filters applied), for
            // the edits they carry.
            for d in lint::lint_file(&src, &self.opts.settings) {
                if d.fix_applies(self.opts.unsafe_fixes)
                    && d.edits.iter().all(|e| Arc::ptr_eq(&e.src, &src))
                {
                    let mut what = format!("fixed {}", crate::output::brief(&d));
                    if let Some(c) = &d.consequence {
                        let class = if d.fixable() {
                            "unsafe fix made safe by `[fix] extend-safe`"
                        } else {
                            "unsafe fix"
                        };
                        what.push_str(&format!(" ({class}: {})", c.line));
                    }
                    groups.push((d.edits, what));
                }
            }
        }
        // Then the region rewrite (a fix that switched the endpoint already carries the region).
        for doc in &parsed.documents {
            let Some(root) = &doc.root else { continue };
            let objects = Objects::of(root);
            for inst in objects.iter().filter_map(|o| o.installer()) {
                if let Some(region) = &self.opts.region
                    && let Some((v, _)) = inst.image()
                    && let Some(s) = v.as_str()
                    && let Some(new) = crate::cgpu::rewrite_image(s, false, Some(region))
                {
                    let edit = Edit::replace(v, emit::render_string(&new, v.style));
                    groups.push((
                        vec![edit],
                        format!("document {document}: image {s} → {new}"),
                    ));
                }
            }
        }
        let edited = if groups.is_empty() {
            None
        } else {
            let refs: Vec<Vec<&Edit>> = groups.iter().map(|(g, _)| g.iter().collect()).collect();
            let chosen = edit::compatible_groups(&refs);
            let edits: Vec<&Edit> = chosen.iter().flat_map(|i| refs[*i].clone()).collect();
            match edit::apply(&src.text, &edits) {
                Ok(t) => {
                    for i in chosen {
                        self.outcome.changes.push(groups[i].1.clone());
                    }
                    Some(t)
                }
                Err(_) => None,
            }
        };
        // Check what Helm will get: the edited document.
        let src = match edited {
            Some(t) => Source::new(src.name.clone(), t),
            None => src,
        };
        let parsed = yaml::parse(&src);
        let installer_doc = parsed.error.is_some()
            || parsed
                .documents
                .iter()
                .filter_map(|d| d.root.as_ref())
                .any(installer::has_installer);
        if installer_doc {
            self.docs.push((src.clone(), document));
            let root = parsed.documents.iter().find_map(|d| d.root.as_ref());
            let (template, skipped) = origin_of(&src.text[pad..], root);
            let first = if src.name == STDIN {
                self.lines_before
            } else {
                0
            };
            self.outcome.origins.push(Origin {
                document,
                template,
                first_line: first + skipped + 1,
            });
        }
        src.text[pad..].to_string()
    }
}

/// Pass 2 of a seekable post-render: copy `file` from its current position to `out`, with each
/// replaced range (absolute offsets, in order) written from memory instead.
pub(crate) fn splice_edits<W: Write + ?Sized>(
    file: &std::fs::File,
    replacements: &[(std::ops::Range<u64>, Vec<u8>)],
    out: &mut W,
) -> io::Result<()> {
    use std::io::{Read, Seek};
    let mut f = file;
    let mut pos = f.stream_position()?;
    for (range, bytes) in replacements {
        io::copy(&mut f.take(range.start - pos), out)?;
        out.write_all(bytes)?;
        pos = f.seek(io::SeekFrom::Start(range.end))?;
    }
    io::copy(&mut f, out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_name_the_template_and_the_line_in_its_document() {
        let ds = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: cgpu-installer\nANNOTATIONS  namespace: kube-system\nspec:\n  template:\n    spec:\n      containers:\n      - name: cgpu-installer\n        image: registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun\n        env:\n        - name: POLICY\n          value: \"7\"\n";
        let cm = "---\n# Source: c/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\n";
        // Helm 3: `# Source:` after `---`; Helm 4: the annotation. POLICY is line 14 of the
        // DaemonSet (15 with Helm 4's two annotation lines).
        let helm3 = format!(
            "{cm}---\n# Source: c/templates/cgpu/ds.yaml\n{}",
            ds.replace("ANNOTATIONS", "")
        );
        let helm4 = format!(
            "{cm}---\n{}",
            ds.replace("ANNOTATIONS", "  annotations:\n    postrenderer.helm.sh/postrender-filename: c/templates/cgpu/ds.yaml\n")
        );
        for (stream, line) in [(helm3, 14), (helm4, 16)] {
            let opts = Options {
                policy: None,
                fix: false,
                unsafe_fixes: false,
                region: None,
                settings: lint::Settings::default(),
                parse_every_document: false,
            };
            let outcome = run(stream.as_bytes(), &mut Vec::new(), &opts).unwrap();
            let d = outcome
                .diagnostics
                .iter()
                .find(|d| d.rule == crate::catalogue::RuleId::InstallerPolicyInvalid)
                .expect("a POLICY finding");
            assert_eq!(
                outcome.template_of(d).as_deref(),
                Some(format!("c/templates/cgpu/ds.yaml, line {line} of the document").as_str()),
                "{stream}"
            );
        }
    }

    #[test]
    fn read_line_reads_as_read_until_does() {
        let text = b"a\n\n---\nlong line that spans buffers\nno newline at the end";
        for cap in [1, 2, 3, 7, 64] {
            let mut ours = io::BufReader::with_capacity(cap, &text[..]);
            let mut std = io::BufReader::with_capacity(cap, &text[..]);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            loop {
                let n = read_line(&mut ours, &mut a).unwrap();
                assert_eq!(n, std.read_until(b'\n', &mut b).unwrap());
                assert_eq!(a, b, "capacity {cap}");
                if n == 0 {
                    break;
                }
            }
        }
    }

    #[test]
    fn installer_mentions_and_markers() {
        assert!(mentions_installer(b"name: cgpu-installer\n"));
        assert!(mentions_installer(b"name: cgpu-core-installer\n"));
        assert!(!mentions_installer(b"name: other-installer\n"));
        assert!(!mentions_installer(b"name: cgpu-install\n"));
        assert!(marker(b"---", b"---") && marker(b"--- #c\n", b"---"));
        assert!(marker(b"...\r\n", b"...") && !marker(b"----\n", b"---"));
        assert!(!marker(b"--", b"---") && !marker(b"", b"---"));
    }

    /// Pieces of a rendered stream: installers written plainly, in flow style, with escapes and
    /// `!!binary`, other kinds, `---` and `...` lines that are and are not markers, `---` in a
    /// block scalar, comments, a document that does not parse.
    const PIECES: [&str; 18] = [
        "---\n# Source: c/templates/cgpu/ds.yaml\napiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: cgpu-installer\n  namespace: kube-system\nspec:\n  template:\n    spec:\n      containers:\n      - name: cgpu-installer\n        image: registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun\n        env:\n        - name: POLICY\n          value: \"7\"\n",
        "---\napiVersion: apps/v1\nkind: \"DaemonSet\"\nmetadata: {name: \"cgpu\\x2dcore-installer\", namespace: kube-system}\nspec:\n  template:\n    spec:\n      containers:\n      - {name: x, image: \"registry.cn-beijing.aliyuncs.com/acs/cgpu-installer:v1.5.3-8d3fc1b-aliyun\", env: [{name: POLICY, value: 2}]}\n",
        "---\n{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: cgpu-installer}}\n",
        "---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: \"cgpu-\\\n    installer\"\n",
        "---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: !!binary Y2dwdS1pbnN0YWxsZXI=\n",
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  script: |\n    echo a\n    ---\n    echo b\n",
        "apiVersion: v1\nkind: ConfigMap\ndata:\n  x: |\n    a\n---\n  y: 1\n",
        "# a comment only\n",
        "...\n",
        "--- # a comment after the marker\nkind: Service\n",
        "----\nnot: a marker\n",
        "...x\n",
        "--- \n\n",
        "---\nkind: DaemonSet\nmetadata: {name: cgpu-installer\n",
        "---\nkind: Secret\ndata: {a: \"50%\", b: \"\\\\d\"}\n",
        "---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: other-installer\n",
        "---",
        "key: no newline at the end",
    ];

    fn stream() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        (prop::collection::vec(0..PIECES.len(), 0..12), any::<bool>()).prop_map(|(ps, crlf)| {
            let text: String = ps.iter().map(|&i| PIECES[i]).collect();
            if crlf {
                text.replace('\n', "\r\n").into_bytes()
            } else {
                text.into_bytes()
            }
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

        /// The byte search, read in blocks of any size or held whole, writes and finds what the
        /// line reader does; the byte filter selects what parsing every document selects.
        #[test]
        fn the_byte_search_agrees_with_the_line_reader_and_the_full_parse(data in stream()) {
            let plain = Options::default();
            let fixing = Options {
                policy: Some(1),
                fix: true,
                unsafe_fixes: true,
                region: Some("cn-hangzhou".into()),
                ..Options::default()
            };
            for opts in [plain, fixing] {
                let mut want = Vec::new();
                let oracle = format!("{:?}", run_by_lines(&data[..], &mut want, &opts).unwrap());
                for block in [1, 2, 3, 5, 64, BLOCK] {
                    let mut out = Vec::new();
                    let got = run_in_blocks(&data[..], &mut out, &opts, block).unwrap();
                    proptest::prop_assert_eq!(&out, &want, "block {}", block);
                    proptest::prop_assert_eq!(format!("{got:?}"), oracle.clone(), "block {}", block);
                }
                for window in [1, 3, 64, WINDOW] {
                    let mut out = Vec::new();
                    let mut kept = 0;
                    let got = run_bytes_in_windows(&data, &mut out, &opts, window, |new, keep| {
                        assert!(keep >= kept && keep <= new.start, "{keep} {new:?}");
                        kept = keep;
                    })
                    .unwrap();
                    proptest::prop_assert_eq!(&out, &want, "window {}", window);
                    proptest::prop_assert_eq!(format!("{got:?}"), oracle.clone(), "window {}", window);
                }
                let every = Options { parse_every_document: true, ..opts.clone() };
                let mut out = Vec::new();
                let got = run_bytes(&data, &mut out, &every, |_, _| {}).unwrap();
                proptest::prop_assert_eq!(&out, &want);
                proptest::prop_assert_eq!(format!("{got:?}"), oracle);
            }
        }
    }

    /// The installers spelled without their names' bytes are found (the line reader once
    /// passed them over unread).
    #[test]
    fn installers_spelled_with_escapes_are_checked() {
        for piece in [PIECES[1], PIECES[3], PIECES[4]] {
            let outcome = run(piece.as_bytes(), &mut Vec::new(), &Options::default()).unwrap();
            assert_eq!(outcome.installers, 1, "{piece}");
        }
    }
}
