//! Writing CEL text, shared by the installer policies (`mod.rs`, `installer.rs`) and the gitops
//! policy (`gitops.rs`): string literals and messages, the old-object twins and ratchets, the
//! version regexes, YAML double quoting. A leaf of its folder: it imports no file of it.

use crate::catalogue::{RuleId, Severity};

/// What a binding does with a failed validation (`validationActions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    Deny,
    Warn,
    Audit,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Deny => "Deny",
            Action::Warn => "Warn",
            Action::Audit => "Audit",
        }
    }
}

/// The tool's version, the `app.kubernetes.io/version` label of every generated object (a
/// YAML string).
pub const VERSION_LABEL: &str = concat!("\"", env!("CARGO_PKG_VERSION"), "\"");

/// One validation: a rule, the severity `check` gives the finding it mirrors, the CEL that is
/// true when the object passes, and the message expression (check's words, with the value).
#[derive(Debug, Clone)]
pub struct Check {
    pub rule: RuleId,
    pub severity: Severity,
    pub expression: String,
    pub message_expression: String,
    /// Ratcheting (errors only; empty for warnings): CEL true on an UPDATE when every violation
    /// of the new object was already in `oldObject` with the same value, so the update is not
    /// denied for it.
    pub ratchet: String,
}

impl Check {
    /// The validation's expression as the policy writes it: ratcheted on UPDATE when it has a
    /// ratchet.
    pub fn policy_expression(&self) -> String {
        if self.ratchet.is_empty() {
            self.expression.clone()
        } else {
            format!(
                "{} || (request.operation == 'UPDATE' && {})",
                self.expression, self.ratchet
            )
        }
    }
}

/// Split CEL into code and single-quoted literals (as [`lit`] writes them): `(is_code, text)`.
fn segments(expr: &str) -> Vec<(bool, String)> {
    let mut out: Vec<(bool, String)> = Vec::new();
    let mut cur = String::new();
    let mut in_lit = false;
    let mut chars = expr.chars();
    while let Some(c) = chars.next() {
        if in_lit {
            cur.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            } else if c == '\'' {
                out.push((false, std::mem::take(&mut cur)));
                in_lit = false;
            }
        } else if c == '\'' {
            out.push((true, std::mem::take(&mut cur)));
            cur.push(c);
            in_lit = true;
        } else {
            cur.push(c);
        }
    }
    out.push((!in_lit, cur));
    out
}

/// Rewrite the code (not the literals) of `expr` with `f`.
pub(crate) fn rewrite_code(expr: &str, f: impl Fn(&str) -> String) -> String {
    segments(expr)
        .into_iter()
        .map(|(code, t)| if code { f(&t) } else { t })
        .collect()
}

/// The name of a variable's twin on the old object: `containers` → `oldContainers`.
pub fn old_name(name: &str) -> String {
    let mut c = name.chars();
    match c.next() {
        Some(f) => format!("old{}{}", f.to_ascii_uppercase(), c.as_str()),
        None => "old".into(),
    }
}

/// The same CEL on the old object: `object` → `oldObject`, `variables.x` → `variables.oldX`.
pub fn on_old(expr: &str) -> String {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(r"\bobject\b|\bvariables\.([A-Za-z_][A-Za-z0-9_]*)").expect("regex")
    });
    rewrite_code(expr, |code| {
        re.replace_all(code, |c: &regex::Captures| match c.get(1) {
            Some(v) => format!("variables.{}", old_name(v.as_str())),
            None => "oldObject".to_string(),
        })
        .into_owned()
    })
}

/// The variables' twins on `oldObject` (read only by ratchets, on UPDATE: the API server
/// evaluates a variable when an expression first reads it).
pub fn old_variables(vars: &[(&'static str, String)]) -> Vec<(String, String)> {
    vars.iter().map(|(n, e)| (old_name(n), on_old(e))).collect()
}

/// The default ratchet of an error check: the old object failed it too, with the same message
/// (every message names the bad value).
pub(super) fn same_violation(expression: &str, message: &str) -> String {
    format!(
        "!({}) && ({}) == ({})",
        on_old(expression),
        message,
        on_old(message)
    )
}

/// A CEL string literal.
pub(super) fn lit(s: &str) -> String {
    let mut out = String::from("'");
    for c in s.chars() {
        match c {
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A CEL list of string literals.
pub(super) fn list(items: &[&str]) -> String {
    format!(
        "[{}]",
        items.iter().map(|s| lit(s)).collect::<Vec<_>>().join(", ")
    )
}

/// A message built from `text`, a check message with NUL where `expr` goes, as CEL.
pub(super) fn words(text: &str, exprs: &[&str]) -> String {
    let mut parts = Vec::new();
    let mut exprs = exprs.iter();
    for (i, piece) in text.split('\0').enumerate() {
        if i > 0
            && let Some(e) = exprs.next()
        {
            parts.push(e.to_string());
        }
        if !piece.is_empty() {
            parts.push(lit(piece));
        }
    }
    parts.join(" + ")
}

/// Alternatives matching exactly the decimals 0 … n-1 (n small).
fn below(n: u64) -> Option<String> {
    (n > 0).then(|| {
        let alts: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        format!("({})", alts.join("|"))
    })
}

/// A regex on a valid tag (`tagValid`) true when its version core is below `v`.
pub(super) fn version_below(v: &semver::Version) -> String {
    let mut alts = Vec::new();
    if let Some(m) = below(v.major) {
        alts.push(format!("{m}[.][0-9]+[.][0-9]+"));
    }
    if let Some(m) = below(v.minor) {
        alts.push(format!("{}[.]{m}[.][0-9]+", v.major));
    }
    if let Some(p) = below(v.patch) {
        alts.push(format!("{}[.]{}[.]{p}", v.major, v.minor));
    }
    format!("^v?({})(-|$)", alts.join("|"))
}

/// A decimal without leading zeros, up to 19 digits (below 10^19, inside u64).
pub(super) const NUM: &str = "(0|[1-9][0-9]{0,18})";

/// `a < b` for decimals without leading zeros (as strings: no overflow at 19 digits).
pub(super) fn num_lt(a: &str, b: &str) -> String {
    format!("(size({a}) < size({b}) || (size({a}) == size({b}) && {a} < {b}))")
}

/// A YAML double-quoted scalar (JSON's string syntax is a subset of it).
pub(super) fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}
