//! cGPU image tags. The suffix of `v1.5.3-8d3fc1b-aliyun` is a build flavour (git SHA and vendor
//! marker), not a SemVer pre-release: strict SemVer would sort `1.0.6-abc-aliyun` below 1.0.6 and
//! `VersionReq::matches` would refuse `1.5.3-8d3fc1b-aliyun` for `>=1.0.6`, both wrong for cGPU.
//! So: strip one leading `v`, compare (major, minor, patch) numerically, keep the suffix aside.

use semver::Version;

/// The minimum cGPU version that supports the policy setting.
pub const MIN_POLICY_VERSION: Version = Version::new(1, 0, 6);
/// The last version with the known kernel-driver deadlock.
pub const LAST_DEADLOCK_VERSION: Version = Version::new(1, 5, 7);
/// The version the FAQ recommends upgrading to.
pub const RECOMMENDED_VERSION: &str = "1.5.10";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    /// The version core only; never carries a pre-release.
    pub core: Version,
    /// Everything after the first `-` of the tag (`8d3fc1b-aliyun`, `fin`), if any.
    pub suffix: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagError {
    Empty,
    Latest,
    Malformed,
}

impl TagError {
    pub fn message(&self, tag: &str) -> String {
        match self {
            TagError::Empty => "the tag is empty".into(),
            TagError::Latest => {
                "the tag is `latest`: the cGPU version cannot be known and changes under you".into()
            }
            TagError::Malformed => {
                format!("`{tag}` is not a cGPU tag of the form v?MAJOR.MINOR.PATCH[-suffix]")
            }
        }
    }
}

impl Tag {
    /// A finance-cloud build (`-fin`).
    pub fn is_finance(&self) -> bool {
        self.suffix
            .as_deref()
            .is_some_and(|s| s == "fin" || s.ends_with("-fin"))
    }
}

fn number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

/// Parse `v?MAJOR.MINOR.PATCH[-suffix]`, suffix `[0-9A-Za-z.-]+`.
pub fn parse_tag(tag: &str) -> Result<Tag, TagError> {
    if tag.trim().is_empty() {
        return Err(TagError::Empty);
    }
    if tag == "latest" {
        return Err(TagError::Latest);
    }
    let body = tag.strip_prefix('v').unwrap_or(tag);
    let (core, suffix) = match body.split_once('-') {
        Some((c, s)) => (c, Some(s)),
        None => (body, None),
    };
    if let Some(s) = suffix
        && (s.is_empty()
            || !s
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-'))
    {
        return Err(TagError::Malformed);
    }
    let mut parts = core.split('.');
    let (Some(a), Some(b), Some(c), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TagError::Malformed);
    };
    let (Some(a), Some(b), Some(c)) = (number(a), number(b), number(c)) else {
        return Err(TagError::Malformed);
    };
    Ok(Tag {
        core: Version::new(a, b, c),
        suffix: suffix.map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn core(t: &str) -> Version {
        parse_tag(t).unwrap().core
    }

    #[test]
    fn the_version_table() {
        // (tag, parses, too old for policies (< 1.0.6), known deadlock (<= 1.5.7))
        let table = [
            ("1.0.5", true, true, true),
            ("v1.0.5-4b4d9a1-aliyun", true, true, true),
            ("1.0.6-abc-aliyun", true, false, true),
            ("v1.0.6-abc1234-aliyun", true, false, true),
            ("1.0.6-0123456", true, false, true),
            ("v1.0.6-0a93c4e-aliyun", true, false, true),
            ("v1.5.3-8d3fc1b-aliyun", true, false, true),
            ("1.0.7-fin", true, false, true),
            ("1.5.7", true, false, true),
            ("v1.5.7-0d41c2a-aliyun", true, false, true),
            ("1.5.8", true, false, false),
            ("1.5.10", true, false, false),
            ("v1.5.20-3c9d1e7-aliyun", true, false, false),
            ("latest", false, false, false),
            ("", false, false, false),
            ("1.5", false, false, false),
            ("v1.5.3_aliyun", false, false, false),
            ("vv1.5.3", false, false, false),
            ("01.5.3", false, false, false),
            ("1.5.3-", false, false, false),
        ];
        for (tag, parses, too_old, deadlock) in table {
            let parsed = parse_tag(tag);
            assert_eq!(parsed.is_ok(), parses, "{tag:?} parses");
            if let Ok(t) = parsed {
                assert_eq!(t.core < MIN_POLICY_VERSION, too_old, "{tag} too old");
                assert_eq!(t.core <= LAST_DEADLOCK_VERSION, deadlock, "{tag} deadlock");
            }
        }
    }

    #[test]
    fn suffix_is_a_flavour_not_a_prerelease() {
        assert_eq!(core("v1.0.6-abc-aliyun"), Version::new(1, 0, 6));
        assert!(core("v1.0.6-abc-aliyun") >= MIN_POLICY_VERSION);
        assert!(parse_tag("v1.0.7-fin").unwrap().is_finance());
        assert!(!parse_tag("v1.5.3-8d3fc1b-aliyun").unwrap().is_finance());
        assert_eq!(parse_tag("latest"), Err(TagError::Latest));
    }
}
