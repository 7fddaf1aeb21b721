//! Conversion between cgpu-lint's and the protocol's terms: URIs and paths, findings as LSP
//! diagnostics, edits.

use std::path::PathBuf;

use lsp_types as lsp;

use crate::catalogue::Severity;

/// The local path of a `file:` URI (percent-decoded); `None` for other schemes.
pub fn uri_to_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    use std::os::unix::ffi::OsStringExt;
    Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
}

/// A `file:` URI for a local absolute path.
#[cfg(test)]
pub fn path_to_uri(path: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The name a document's findings carry: its path for a `file:` URI (so per-file-ignores match
/// as they do for `check`), else the URI.
pub(super) fn source_name(uri: &str) -> String {
    uri_to_path(uri).map_or_else(|| uri.to_string(), |p| p.to_string_lossy().into_owned())
}

pub(super) fn severity(s: Severity) -> lsp::DiagnosticSeverity {
    match s {
        Severity::Error => lsp::DiagnosticSeverity::ERROR,
        Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        Severity::Info => lsp::DiagnosticSeverity::INFORMATION,
    }
}

/// One replacement that turns `before` into `after`: the bytes between their common prefix and
/// common suffix (on character boundaries).
pub fn minimal_edit(before: &str, after: &str) -> (std::ops::Range<usize>, String) {
    let mut pre = before
        .bytes()
        .zip(after.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    while !before.is_char_boundary(pre) || !after.is_char_boundary(pre) {
        pre -= 1;
    }
    let max_suf = before.len().min(after.len()) - pre;
    let mut suf = before
        .bytes()
        .rev()
        .zip(after.bytes().rev())
        .take(max_suf)
        .take_while(|(a, b)| a == b)
        .count();
    while !before.is_char_boundary(before.len() - suf) || !after.is_char_boundary(after.len() - suf)
    {
        suf -= 1;
    }
    (
        pre..before.len() - suf,
        after[pre..after.len() - suf].to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    pub(super) fn minimal_edit_spans_the_change_only() {
        let (r, t) = minimal_edit("a: \"1\"\nb: x\n", "a: 1\nb: x\n");
        assert_eq!((r, t.as_str()), (3..6, "1"));
        let (r, t) = minimal_edit("aé", "aè");
        assert_eq!((r, t.as_str()), (1..3, "è"));
        let (r, t) = minimal_edit("same", "same");
        assert_eq!((r, t.as_str()), (4..4, ""));
    }

    #[test]
    pub(super) fn file_uris_round_trip() {
        let p = Path::new("/tmp/a b/värde.yaml");
        let u = path_to_uri(p);
        assert_eq!(u, "file:///tmp/a%20b/v%C3%A4rde.yaml");
        assert_eq!(uri_to_path(&u).unwrap(), p);
        assert!(uri_to_path("untitled:Untitled-1").is_none());
    }
}
