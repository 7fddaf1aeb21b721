//! Lossless fixing: run the rules, splice the edits their findings carry into the original bytes,
//! check again, repeat until nothing fixable is left. Only the bytes of the offending scalars
//! change; comments, key order, quoting elsewhere, CRLF, a BOM and indentation are copied through.
//!
//! The fixing loop itself is [`lint::fix::lint_fix`], over the one pipeline. Fixing, `fix --diff` and
//! `fix --stdout` share everything and differ only in what they do
//! with [`Fixed::text`]; writing a file in place is [`write_in_place`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::lint;
use crate::lint::Filter;
use crate::rules::RuleOptions;
use crate::yaml::Source;

use crate::lint::fix::Fixed;

/// Fix `src` with these rule options and filter (no config), safe fixes only:
/// [`lint::fix::lint_fix`].
pub fn fix_source(src: &Arc<Source>, opts: &RuleOptions, filter: &Filter) -> Fixed {
    lint::fix::lint_fix(
        src,
        &lint::Settings::new(opts.clone(), filter.clone()),
        false,
    )
}

/// A unified diff of the fix (`--- a/PATH`, `+++ b/PATH`, 3 lines of context); empty when nothing
/// changed. With `color`, removed lines are red, added lines green and hunk headers cyan.
pub fn unified_diff(path: &str, before: &str, after: &str, color: bool) -> String {
    if before == after {
        return String::new();
    }
    // `a/` + an absolute path would read `a//tmp/x`; git writes `a/tmp/x`.
    let path = path
        .strip_prefix("./")
        .unwrap_or(path)
        .trim_start_matches('/');
    let diff = similar::TextDiff::from_lines(before, after);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    if !color {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let (body, eol) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let code = if body.starts_with("---") || body.starts_with("+++") {
            "1"
        } else if body.starts_with("@@") {
            "36"
        } else if body.starts_with('-') {
            "31"
        } else if body.starts_with('+') {
            "32"
        } else {
            ""
        };
        if code.is_empty() {
            out.push_str(line);
        } else {
            out.push_str(&format!("\x1b[{code}m{body}\x1b[0m{eol}"));
        }
    }
    out
}

/// Why a file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: the fixed text does not parse; the file was left as it was")]
    WouldNotParse { path: String },
}

/// Replace the contents of `path` with `text` atomically: a temporary file in the same folder,
/// written, given the original's permissions, fsynced, then renamed over the target. A symlink
/// is followed, so the link stays a link and its target gets the new text. An unchanged text is
/// not written at all (the mtime stays), and a text that does not parse is refused (unless the
/// file did not parse before either: `check --add-ignore` may write to a file with a syntax
/// error elsewhere).
pub fn write_in_place(path: &str, text: &str) -> Result<bool, WriteError> {
    let io = |source| WriteError::Io {
        path: path.to_string(),
        source,
    };
    let target: PathBuf = std::fs::canonicalize(path).map_err(io)?;
    let old = std::fs::read(&target).map_err(io)?;
    if old == text.as_bytes() {
        return Ok(false);
    }
    if !lint::fix::text_parses(path, text)
        && lint::fix::text_parses(path, &String::from_utf8_lossy(&old))
    {
        return Err(WriteError::WouldNotParse {
            path: path.to_string(),
        });
    }
    let meta = std::fs::metadata(&target).map_err(io)?;
    let dir = target.parent().unwrap_or(Path::new("."));
    let base = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (tmp, mut file) = create_temp(dir, &base).map_err(io)?;
    let written = (|| {
        file.write_all(text.as_bytes())?;
        file.set_permissions(meta.permissions())?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, &target)?;
        // Make the rename itself durable; not every platform can open a directory, so this is
        // best effort.
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(e));
    }
    Ok(true)
}

fn create_temp(dir: &Path, base: &str) -> std::io::Result<(PathBuf, std::fs::File)> {
    let pid = std::process::id();
    let mut n = 0u32;
    loop {
        let p = dir.join(format!(".{base}.cgpu-lint-{pid}-{n}.tmp"));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
        {
            Ok(f) => return Ok((p, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fix(text: &str) -> String {
        let src = Source::new("t.yaml", text.to_string());
        fix_source(&src, &RuleOptions::default(), &Filter::default()).text
    }

    #[test]
    fn crlf_and_comments_survive_a_fix() {
        let text = "# top\r\ncgpu:\r\n  policy: \"1\"   # keep\r\n  enabled: \"true\"\r\n";
        assert_eq!(
            fix(text),
            "# top\r\ncgpu:\r\n  policy: 1   # keep\r\n  enabled: true\r\n"
        );
    }

    #[test]
    fn an_indentless_node_selector_list_becomes_a_nested_map_keeping_comments() {
        let text = "cgpu:\n  nodeSelector:\n  # pools\n  - a=b   # one\n  - c=d\n  policy: 1\n";
        assert_eq!(
            fix(text),
            "cgpu:\n  nodeSelector:\n  # pools\n    a: b   # one\n    c: d\n  policy: 1\n"
        );
    }

    #[test]
    fn an_unsafe_fix_waits_for_unsafe_fixes() {
        let src = Source::new("t.yaml", "cgpu:\n  enabled: \"false\"\n".to_string());
        let settings = lint::Settings::default();
        let safe = lint::fix::lint_fix(&src, &settings, false);
        assert!(!safe.changed());
        let held = &safe.remaining[0];
        assert_eq!(
            held.fix_applicability(),
            Some(crate::diag::Applicability::Unsafe)
        );
        let all = lint::fix::lint_fix(&src, &settings, true);
        assert_eq!(all.text, "cgpu:\n  enabled: false\n");
        let c = all.applied[0].consequence.as_ref().expect("unsafe");
        assert_eq!(
            c.line,
            "cgpu.enabled becomes false: the next upgrade removes the cgpu-installer and cgpu-core-installer DaemonSets"
        );
        assert_eq!(
            c.sets,
            vec![("cgpu.enabled".into(), serde_json::json!(false))]
        );
    }

    #[test]
    fn nothing_to_fix_is_identity() {
        let text = "\u{feff}cgpu:\n  policy: 1\t# tab\n";
        assert_eq!(fix(text), text);
    }

    #[test]
    fn ignored_rules_are_not_fixed() {
        let src = Source::new("t.yaml", "cgpu:\n  policy: \"1\"\n".to_string());
        let filter = Filter {
            select: vec![],
            ignore: vec!["policy-quoted".into()],
        };
        let f = fix_source(&src, &RuleOptions::default(), &filter);
        assert!(!f.changed());
    }

    #[test]
    fn diff_has_git_style_headers() {
        let d = unified_diff("./v.yaml", "a: 1\n", "a: 2\n", false);
        assert!(d.starts_with("--- a/v.yaml\n+++ b/v.yaml\n@@ -1 +1 @@\n-a: 1\n+a: 2\n"));
    }
}
