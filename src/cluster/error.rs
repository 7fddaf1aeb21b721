//! Which cluster a kubectl call went to, and why one failed: the error classes of a live
//! cluster (unreachable, TLS, 401, 403 naming verb and resource, timeout), sorted from what
//! client-go prints.

/// One cluster to read: a kubeconfig context, or kubectl's default (the in-cluster service
/// account when run in a pod without a kubeconfig).
#[derive(Debug, Clone)]
pub struct Target {
    /// How findings and messages name it: the context name, or `in-cluster`.
    pub label: String,
    /// `--context` for kubectl; `None`: kubectl's own default.
    pub context: Option<String>,
    /// The API server URL, when the kubeconfig names one (for messages).
    pub server: Option<String>,
}

/// Why a cluster (or every cluster) could not be read: one line, exit status 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    #[error(
        "cannot run `{kubectl}`: {message}; cgpu-lint reads clusters through kubectl: install it or give --kubectl PATH"
    )]
    NoKubectl { kubectl: String, message: String },
    #[error(
        "--request-timeout {0}: not a duration in kubectl's syntax (an integer of seconds, or 5s, 1m, 1h)"
    )]
    BadTimeout(String),
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
    #[error("context `{context}` not found in the kubeconfig (it has: {known})")]
    ContextNotFound { context: String, known: String },
    #[error("cluster {context}: API server {server} unreachable: {detail}")]
    Unreachable {
        context: String,
        server: String,
        detail: String,
    },
    #[error(
        "cluster {context}: TLS failure with {server}: {detail} (check the cluster's certificate-authority in the kubeconfig)"
    )]
    Tls {
        context: String,
        server: String,
        detail: String,
    },
    #[error(
        "cluster {context}: 401 Unauthorized: {server} rejected the kubeconfig's credentials (expired token or certificate, or the exec plugin's login)"
    )]
    Unauthorized { context: String, server: String },
    #[error(
        "cluster {context}: 403 Forbidden: {user} may not {verb} {resource}{scope}; cgpu-lint needs get and list on nodes and on daemonsets in kube-system (see the ClusterRole in docs/cluster.md)"
    )]
    Forbidden {
        context: String,
        user: String,
        verb: String,
        resource: String,
        scope: String,
    },
    #[error(
        "cluster {context}: timed out after {timeout} (--request-timeout) talking to {server}: {detail}"
    )]
    Timeout {
        context: String,
        server: String,
        timeout: String,
        detail: String,
    },
    #[error("cluster {context}: kubectl failed: {detail}")]
    Kubectl { context: String, detail: String },
    #[error("cluster {context}: kubectl printed something that is not JSON: {detail}")]
    BadOutput { context: String, detail: String },
}

pub(super) fn last_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("kubectl exited with an error and printed nothing")
        .to_string()
}

/// Sort kubectl's failure into the classes a user acts on differently (unreachable, TLS, 401,
/// 403 naming verb and resource, timeout), from what client-go prints.
pub fn classify(target: &Target, timeout: &str, stderr: &[u8]) -> ClusterError {
    let text = String::from_utf8_lossy(stderr);
    let last = last_line(stderr);
    let context = target.label.clone();
    let server = target
        .server
        .clone()
        .unwrap_or_else(|| "the API server".into());
    let detail = last
        .trim_start_matches("error: ")
        .trim_start_matches("Unable to connect to the server: ")
        .to_string();
    let has = |s: &str| last.contains(s);
    if text.contains("context was not found for specified context") {
        return ClusterError::ContextNotFound {
            context,
            known: "see `kubectl config get-contexts`".into(),
        };
    }
    if has("Error from server (Forbidden)") || has(" is forbidden: ") {
        return forbidden(context, &last);
    }
    if has("(Unauthorized)") || has("You must be logged in to the server") {
        return ClusterError::Unauthorized { context, server };
    }
    if has("Client.Timeout exceeded")
        || has("context deadline exceeded")
        || has("i/o timeout")
        || has("TLS handshake timeout")
        || has("Timeout: ")
        || has("(Timeout)")
    {
        return ClusterError::Timeout {
            context,
            server,
            timeout: timeout.to_string(),
            detail,
        };
    }
    if has("x509: ") || has("tls: ") || has("remote error: tls") || has("certificate") {
        return ClusterError::Tls {
            context,
            server,
            detail,
        };
    }
    if has("connection refused")
        || has("was refused")
        || has("no such host")
        || has("no route to host")
        || has("network is unreachable")
        || has("Unable to connect to the server")
        || has("connection reset")
        || has("EOF")
    {
        return ClusterError::Unreachable {
            context,
            server,
            detail,
        };
    }
    ClusterError::Kubectl { context, detail }
}

/// `… is forbidden: User "u" cannot list resource "nodes" in API group "" at the cluster scope`
/// (the RBAC authorizer's words) → who, which verb, which resource, where.
fn forbidden(context: String, line: &str) -> ClusterError {
    let between = |start: &str, end: &str| -> Option<String> {
        let i = line.find(start)? + start.len();
        let j = line[i..].find(end)? + i;
        Some(line[i..j].to_string())
    };
    let user = between("User \"", "\"").map_or_else(
        || "the kubeconfig's user".into(),
        |u| format!("user \"{u}\""),
    );
    let verb = between(" cannot ", " ").unwrap_or_else(|| "get or list".into());
    let resource = between(" resource \"", "\"").unwrap_or_else(|| "an object".into());
    let group = between(" in API group \"", "\"").unwrap_or_default();
    let resource = if group.is_empty() {
        resource
    } else {
        format!("{resource}.{group}")
    };
    let scope = match between(" in the namespace \"", "\"") {
        Some(ns) => format!(" in namespace {ns}"),
        None if line.contains("at the cluster scope") => " (cluster scope)".into(),
        None => String::new(),
    };
    ClusterError::Forbidden {
        context,
        user,
        verb,
        resource,
        scope,
    }
}
