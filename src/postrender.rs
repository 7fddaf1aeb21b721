//! The Helm post-renderer: a rendered stream in, the same stream out.
//!
//! Helm 3 hands us `---` + `# Source:` documents (hooks are not post-rendered); Helm 4 hands us
//! every document, hooks included, each annotated `postrenderer.helm.sh/postrender-filename`, and
//! rebuilds its `# Source:` headers from those annotations afterwards, so they must survive. Both
//! are served the same way: the stream is split into documents line by line, and a document is
//! parsed only when its bytes mention an installer name. Every other byte is copied as read, so
//! memory stays at one document (plus the installer documents, which findings point into).

use std::io::{self, BufRead, Write};
use std::sync::Arc;

use crate::check::{self, Filter};
use crate::diag::{Diagnostic, Edit};
use crate::edit;
use crate::manifest::{INSTALLER_NAMES, Objects};
use crate::rules::installer::{self, InstallerPolicy};
use crate::rules::{Ctx, RuleOptions};
use crate::yaml::{self, Source};

/// How findings name the stream.
const STDIN: &str = "-";

/// Documents that start after this many lines are not padded to stream line numbers.
pub const MAX_PAD_LINES: usize = 100_000;

/// What to do to the installers.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Set POLICY to this on every installer.
    pub policy: Option<u8>,
    /// Apply the safe fixes.
    pub fix: bool,
    /// The cluster region: rewrite registry hosts to it, and check against it.
    pub region: Option<String>,
    pub filter: Filter,
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
}

/// `---` (alone, or followed by a space, a comment or content) or `...` at column 0.
fn marker(line: &[u8], m: &[u8]) -> bool {
    line.starts_with(m)
        && matches!(
            line.get(3),
            None | Some(b' ' | b'\t' | b'\r' | b'\n' | b'#')
        )
}

/// Does a chunk hold anything but blank and comment lines?
fn has_content(chunk: &[u8]) -> bool {
    chunk.split(|b| *b == b'\n').any(|l| {
        let t = l.trim_ascii();
        !t.is_empty() && !t.starts_with(b"#") && !marker(l, b"---")
    })
}

/// The cheap pre-filter that keeps post-render near `cat` speed: only a document whose bytes
/// mention an installer name is parsed; every other document is copied through unread.
fn mentions_installer(chunk: &[u8]) -> bool {
    use std::sync::OnceLock;
    static FINDERS: OnceLock<Vec<memchr::memmem::Finder<'static>>> = OnceLock::new();
    FINDERS
        .get_or_init(|| {
            INSTALLER_NAMES
                .iter()
                .map(|n| memchr::memmem::Finder::new(n.as_bytes()))
                .collect()
        })
        .iter()
        .any(|f| f.find(chunk).is_some())
}

struct Run<'a> {
    opts: &'a Options,
    rule_opts: RuleOptions,
    outcome: Outcome,
    policies: Vec<(String, InstallerPolicy)>,
    /// Lines before the current chunk, so findings carry the stream's line numbers.
    lines_before: usize,
    /// Bytes of the stream before the current chunk.
    offset: u64,
}

/// Post-render `input` into `out`. Findings are returned, not printed; the caller decides
/// whether `out` reaches Helm.
pub fn run(mut input: impl BufRead, out: &mut impl Write, opts: &Options) -> io::Result<Outcome> {
    let mut r = Run {
        opts,
        rule_opts: RuleOptions {
            region: opts.region.clone(),
            ..RuleOptions::default()
        },
        outcome: Outcome::default(),
        policies: Vec::new(),
        lines_before: 0,
        offset: 0,
    };
    // Lines are read straight onto the end of the current document's bytes (no per-line copy);
    // the document ends at a `---` line (which starts the next one) or after a `...` line.
    let mut chunk: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut newlines = 0usize;
    loop {
        let start = chunk.len();
        let n = input.read_until(b'\n', &mut chunk)?;
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
    let found = check::policy_mismatches(&r.rule_opts, &r.policies);
    r.outcome
        .diagnostics
        .extend(found.into_iter().filter(|d| opts.filter.allows(d.rule)));
    Ok(r.outcome)
}

impl Run<'_> {
    /// One document (or the comments before the first): `newlines` is how many lines it ends.
    fn chunk(&mut self, chunk: &[u8], newlines: usize, out: &mut impl Write) -> io::Result<()> {
        let is_doc = chunk.starts_with(b"---") || has_content(chunk);
        if is_doc {
            self.outcome.documents += 1;
        }
        if is_doc && mentions_installer(chunk) {
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
                    for mut d in check::check_source(&src, &self.rule_opts) {
                        d.document = self.outcome.documents;
                        self.outcome.diagnostics.push(d);
                    }
                    out.write_all(chunk)?;
                }
            }
        } else {
            out.write_all(chunk)?;
        }
        self.lines_before += newlines;
        self.offset += chunk.len() as u64;
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
                if self.opts.fix {
                    let mut ctx = Ctx::new(&self.rule_opts, document, &doc.alias_uses);
                    installer::check(&mut ctx, &inst);
                    for d in ctx.out {
                        if !d.edits.is_empty() && self.opts.filter.allows(d.rule) {
                            let what =
                                format!("document {document}: fixed {}: {}", d.rule, d.message);
                            groups.push((d.edits, what));
                        }
                    }
                }
                if let Some(region) = &self.opts.region
                    && let Some((v, _)) = inst.image()
                    && let Some(s) = v.as_str()
                    && let Some(new) = installer::rewrite_image(s, false, Some(region))
                {
                    let edit = crate::rules::replace(v, crate::rules::render_string(&new, v.style));
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
        let (diags, policies) = check::check_source_with_policies(&src, &self.rule_opts);
        for mut d in diags {
            if d.rule == "cgpu-missing" || !self.opts.filter.allows(d.rule) {
                continue;
            }
            d.document = document;
            self.outcome.diagnostics.push(d);
        }
        for mut p in policies {
            p.document = document;
            self.policies.push((STDIN.into(), p));
        }
        src.text[pad..].to_string()
    }
}
