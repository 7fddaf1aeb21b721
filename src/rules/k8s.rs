//! Kubernetes name and label syntax, as `k8s.io/apimachinery/pkg/util/validation` checks it.

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, the qualified-name / label-value character rule.
fn is_qualified_chars(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.')
}

/// A DNS-1123 label: lower-case alphanumerics and `-`, starting and ending alphanumeric, ≤ 63.
pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
}

/// A DNS-1123 subdomain: dot-separated DNS-1123 labels, ≤ 253 characters.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// Check a label key; on failure say why.
pub fn label_key(key: &str) -> Result<(), String> {
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                return Err("the prefix before '/' is empty".into());
            }
            if prefix.len() > 253 {
                return Err(format!(
                    "the prefix is {} characters long (at most 253)",
                    prefix.len()
                ));
            }
            if !is_dns1123_subdomain(prefix) {
                return Err(format!(
                    "the prefix `{prefix}` is not a lower-case DNS subdomain (a-z, 0-9, '-' and '.')"
                ));
            }
            *name
        }
        _ => return Err("a label key has at most one '/'".into()),
    };
    if name.is_empty() {
        return Err("the name part is empty".into());
    }
    if name.chars().count() > 63 {
        return Err(format!(
            "the name part is {} characters long (at most 63)",
            name.chars().count()
        ));
    }
    if !is_qualified_chars(name) {
        return Err(format!(
            "the name `{name}` must start and end with a letter or digit and hold only letters, digits, '-', '_' and '.'"
        ));
    }
    Ok(())
}

/// Check a label value; on failure say why.
pub fn label_value(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    if value.chars().count() > 63 {
        return Err(format!(
            "the value is {} characters long (at most 63)",
            value.chars().count()
        ));
    }
    if !is_qualified_chars(value) {
        return Err(
            "a label value must start and end with a letter or digit and hold only letters, digits, '-', '_' and '.'"
                .into(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_key_vectors() {
        for ok in [
            "ack.node.gpu.schedule",
            "alibabacloud.com/nodepool-id",
            "node.kubernetes.io/instance-type",
            "a",
            "A_b.c-D",
            "cgpu",
            &"a".repeat(63),
            &format!("{}/x", "a".repeat(63)),
        ] {
            assert!(
                label_key(ok).is_ok(),
                "{ok} should be valid: {:?}",
                label_key(ok)
            );
        }
        for bad in [
            "-gpu-pool",
            "gpu-pool-",
            "Example.COM/pool",
            "alibabacloud.com/",
            "/name",
            "a/b/c",
            &"a".repeat(64),
            "has space",
            "ünicode",
            &format!("{}/x", "a".repeat(254)),
        ] {
            assert!(label_key(bad).is_err(), "{bad} should be invalid");
        }
    }

    #[test]
    fn label_value_vectors() {
        for ok in ["", "cgpu", "a10", "A.b_c-1", &"x".repeat(63)] {
            assert!(label_value(ok).is_ok(), "{ok:?}");
        }
        for bad in ["ml platform", "-a", "a-", "a/b", &"x".repeat(64), "é"] {
            assert!(label_value(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn dns1123() {
        assert!(is_dns1123_subdomain("cn-hangzhou.192.168.10.21"));
        assert!(!is_dns1123_subdomain("node;rm -rf /"));
        assert!(!is_dns1123_subdomain("Node"));
    }
}
