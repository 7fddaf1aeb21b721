//! File paths resolved lexically (symlinks are not followed, as editors and Helm's relative
//! `values:` paths do not): findings name `clusters/prod.yaml`, not
//! `charts/x/../../clusters/prod.yaml`.

use std::path::{Component, Path, PathBuf};

/// `p` with `.` and `a/..` taken out; a leading `..` of a relative path stays, and `/..` is `/`.
pub fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(c),
            },
            other => out.push(other),
        }
    }
    out
}

/// The working directory (empty when it cannot be read: relative paths then stay relative).
pub fn cwd() -> PathBuf {
    std::env::current_dir().unwrap_or_default()
}

/// `p` made absolute against the working directory, then [`lexical`].
pub fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        lexical(p)
    } else {
        lexical(&cwd().join(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_are_taken_out_lexically() {
        for (p, want) in [
            ("charts/x/../../clusters/prod.yaml", "clusters/prod.yaml"),
            ("./a/./b", "a/b"),
            ("../a/../../b", "../../b"),
            ("a/../..", ".."),
            ("/a/../../b", "/b"),
            ("/..", "/"),
            ("", ""),
        ] {
            assert_eq!(lexical(Path::new(p)), PathBuf::from(want), "{p}");
        }
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(absolute(Path::new("x/../y")), cwd.join("y"));
        assert_eq!(absolute(Path::new("/x/./y")), PathBuf::from("/x/y"));
    }
}
