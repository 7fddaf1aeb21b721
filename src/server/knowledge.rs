//! Hover and completion: what the cgpu keys, the policy numbers and the image tags mean. Every fact
//! comes from where the rules take it (the cGPU model module [`crate::cgpu`]: chart defaults,
//! policy tables, version thresholds; the values schema: key descriptions and types); this module
//! only phrases them.

use std::sync::OnceLock;

use crate::cgpu::{
    KNOWN_KEYS, POLICY_EFFECTS, POLICY_NAMES, POLICY_TITLES, PULL_POLICIES, RECOMMENDED_VERSION,
    last_deadlock_version, min_policy_version, parse_tag, split_image,
};
use crate::yaml::{self, Entry, Node, Scalar, Source, Value};

/// The schema's entry for one cgpu key.
fn schema_key(key: &str) -> Option<&'static serde_json::Value> {
    static SCHEMA: OnceLock<serde_json::Value> = OnceLock::new();
    let schema = SCHEMA.get_or_init(|| {
        serde_json::from_str(crate::rules::schema::schema_text()).unwrap_or_default()
    });
    schema
        .pointer("/properties/cgpu/properties")?
        .get(key)
        .filter(|v| v.is_object())
}

/// What the key does (the schema's description).
pub fn key_description(key: &str) -> Option<&'static str> {
    schema_key(key)?.get("description")?.as_str()
}

/// The chart default of a cgpu key, as written in the chart's values.
pub fn chart_default(key: &str) -> Option<String> {
    static DEFAULTS: OnceLock<Vec<(String, String)>> = OnceLock::new();
    let defaults = DEFAULTS.get_or_init(|| {
        let src = crate::cgpu::chart_defaults();
        let parsed = yaml::parse(&src);
        let mut out = Vec::new();
        if let Some(cgpu) = parsed
            .documents
            .iter()
            .find_map(|d| d.root.as_ref()?.get("cgpu").cloned())
        {
            for e in cgpu.as_map().unwrap_or_default() {
                out.push((e.key.clone(), src.text[e.value.span.clone()].to_string()));
            }
        }
        out
    });
    defaults
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

/// The values a key accepts, in words.
pub fn allowed_values(key: &str) -> Option<String> {
    if key == "policy" {
        let list: Vec<String> = POLICY_TITLES
            .iter()
            .enumerate()
            .map(|(i, t)| format!("`{i}` {t}"))
            .collect();
        return Some(list.join(", "));
    }
    let s = schema_key(key)?;
    if let Some(e) = s.get("enum").and_then(|e| e.as_array()) {
        let list: Vec<String> = e.iter().map(|v| format!("`{}`", v_str(v))).collect();
        return Some(format!("exactly {} (case matters)", list.join(", ")));
    }
    let types: Vec<&str> = match s.get("type") {
        Some(serde_json::Value::String(t)) => vec![t.as_str()],
        Some(serde_json::Value::Array(a)) => a.iter().filter_map(|t| t.as_str()).collect(),
        _ => vec![],
    };
    let mut words = Vec::new();
    for t in types {
        words.push(match t {
            "boolean" => "`true` or `false` (unquoted)".to_string(),
            "string" => match s.get("pattern").and_then(|p| p.as_str()) {
                Some(p) => format!("a string matching `{p}`"),
                None => "a string".to_string(),
            },
            "object" => "a mapping (label key → string value)".to_string(),
            "null" => "null".to_string(),
            other => other.to_string(),
        });
    }
    (!words.is_empty()).then(|| words.join(", or "))
}

fn v_str(v: &serde_json::Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// Markdown for hovering a cgpu key.
pub fn key_hover(key: &str) -> Option<String> {
    if !KNOWN_KEYS.contains(&key) {
        return None;
    }
    let mut out = format!("**`cgpu.{key}`**");
    if let Some(d) = key_description(key) {
        out.push_str(&format!("\n\n{d}"));
    }
    if let Some(a) = allowed_values(key) {
        out.push_str(&format!("\n\nAllowed: {a}"));
    }
    match chart_default(key) {
        Some(d) => out.push_str(&format!("\n\nChart default: `{d}`")),
        None => out.push_str("\n\nChart default: none"),
    }
    if key == "policy" {
        for n in &crate::cgpu::compat::data().numbering {
            out.push_str(&format!("\n\n⚠ {} (entry {})", n.text, n.id));
        }
    }
    Some(out)
}

/// How the other stacks of the compatibility data number policy `i` (`[[numbering]]`), for
/// a policy's hover.
fn other_numbering(i: usize) -> String {
    let mut out = String::new();
    for n in &crate::cgpu::compat::data().numbering {
        let theirs = match n.policies.get(i) {
            Some(p) => format!("its {i} is {p}"),
            None => format!("it has no {i}"),
        };
        let native = n
            .policies
            .iter()
            .position(|p| p == "native")
            .map(|p| format!(", its native is {p}"))
            .unwrap_or_default();
        out.push_str(&format!(
            "\n\nNot {}'s numbering: {theirs}{native} (entry {}).",
            n.stack, n.id
        ));
    }
    out
}

/// The policy number a scalar means, if it names one (a number, a quoted digit or a documented
/// policy name).
pub fn policy_number(s: &Scalar) -> Option<i128> {
    match s {
        Scalar::Int(i) => Some(*i),
        Scalar::Str(t) => t.trim().parse().ok().or_else(|| {
            POLICY_NAMES
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(t.trim()))
                .map(|&(_, n)| n)
        }),
        _ => None,
    }
}

/// Markdown for hovering a policy value.
pub fn policy_hover(n: i128) -> String {
    match usize::try_from(n).ok().filter(|&i| i < POLICY_TITLES.len()) {
        Some(i) => format!(
            "**cGPU policy {i}: {}**\n\n{}{}",
            POLICY_TITLES[i],
            POLICY_EFFECTS[i],
            other_numbering(i)
        ),
        None => format!(
            "**{n} is not a cGPU policy**\n\nPolicies are 0–{}.",
            POLICY_TITLES.len() - 1
        ),
    }
}

/// Markdown for hovering an image tag: the cGPU version it means and any advisory.
pub fn tag_hover(tag: &str) -> String {
    let t = match parse_tag(tag) {
        Ok(t) => t,
        Err(e) => return format!("**`{tag}`**\n\n{}", e.message(tag)),
    };
    let mut out = format!("**cGPU {}**", t.core);
    if let Some(s) = &t.suffix {
        out.push_str(&format!(
            " (build `{s}`{})",
            if t.is_finance() {
                ", a finance-cloud build"
            } else {
                ""
            }
        ));
    }
    let mut notes = Vec::new();
    let (min_policy, last_deadlock) = (min_policy_version(), last_deadlock_version());
    if t.core < *min_policy {
        notes.push(format!(
            "older than {min_policy}: the policy setting is not supported"
        ));
    }
    if t.core <= *last_deadlock {
        notes.push(format!(
            "has the known kernel-driver deadlock of versions ≤ {last_deadlock}; upgrade to ≥ {RECOMMENDED_VERSION}"
        ));
    }
    if notes.is_empty() {
        out.push_str("\n\nNo known advisory.");
    } else {
        for n in notes {
            out.push_str(&format!("\n\n⚠ {n}"));
        }
    }
    out.push_str(&compat_hover(&t.core));
    out
}

/// What the compatibility data says about a cGPU version, for the tag's hover.
fn compat_hover(v: &semver::Version) -> String {
    let data = crate::cgpu::compat::data();
    if data.is_newer(v) {
        return format!(
            "\n\nNewer than the compatibility data of {} (newest version {}): nothing is known about it yet.",
            data.meta.date, data.meta.newest
        );
    }
    let mut out = format!(
        "\n\nCompatibility (data of {}; `cgpu-lint compat --tag {v}`):",
        data.meta.date
    );
    if let Some(row) = data.driver_row(v) {
        out.push_str(&format!(
            "\n- NVIDIA drivers: {}",
            crate::cgpu::compat::Compat::driver_text(row)
        ));
    }
    for s in data.support.iter().filter(|s| *v < s.since.0) {
        out.push_str(&format!("\n- lacks {} (from cGPU {})", s.text, s.since));
    }
    for i in data
        .issues_at(v)
        .filter(|i| i.driver_from.is_some() || i.os.is_some())
    {
        out.push_str(&format!("\n- known issue{}: {}", i.when_text(), i.text));
    }
    out
}

/// The hover text for byte `offset` of `src`, or `None`.
pub fn hover(
    src: &std::sync::Arc<Source>,
    offset: usize,
) -> Option<(String, std::ops::Range<usize>)> {
    let parsed = yaml::parse(src);
    let doc = parsed
        .documents
        .iter()
        .find(|d| d.span.start <= offset && offset <= d.span.end)?;
    let root = doc.root.as_ref()?;
    // The chain of map entries from the root to the innermost one holding `offset`.
    let mut chain: Vec<(&Node, &Entry)> = Vec::new();
    let mut node = root;
    loop {
        let next = match &node.value {
            Value::Map(entries) => entries
                .iter()
                .filter(|e| !e.merged && e.value.via_alias.is_none())
                .find(|e| within(&e.key_span, offset) || within(&e.value.span, offset))
                .map(|e| {
                    chain.push((node, e));
                    &e.value
                }),
            Value::Seq(items) => items.iter().find(|n| within(&n.span, offset)),
            Value::Scalar(_) => None,
        };
        match next {
            Some(n) if !std::ptr::eq(n, node) => node = n,
            _ => break,
        }
    }
    // A `values: |` string (an Argo CD Application's, a ConfigMap's) is read in place: its
    // offsets are the file's, so the hover is the string's own.
    if let Value::Scalar(_) = &node.value
        && within(&node.span, offset)
        && let Ok(inner) = yaml::embedded::literal_source(node)
    {
        return hover(&inner, offset);
    }
    let &(parent, entry) = chain.last()?;
    let on_key = within(&entry.key_span, offset);
    // The values block: `cgpu.<key>` at the top of a document, or at the top of the values a
    // release of the chart gets (an umbrella's subchart key, a HelmRelease's spec.values, an
    // Application's valuesObject, a helmfile release's inline values).
    let values_root = |n: &Node| {
        std::ptr::eq(n, root)
            || {
                let deps = crate::helm::place::parent_chart(&src.name).map(|(_, d)| d);
                crate::helm::place::targets(root, deps.as_deref())
                .iter()
                .any(|t| matches!(&t.values, crate::helm::place::Values::Node(v) if v.span == n.span))
            }
    };
    let k = chain.len().saturating_sub(2);
    if chain.len() >= 2 && chain[k].1.key == "cgpu" && values_root(chain[k].0) {
        if on_key {
            return key_hover(&entry.key).map(|h| (h, entry.key_span.clone()));
        }
        let v = &entry.value;
        let scalar = v.scalar()?;
        return match entry.key.as_str() {
            "policy" => policy_number(scalar).map(|n| (policy_hover(n), v.span.clone())),
            "tag" | "financeCloudImageTag" => v.as_str().map(|t| (tag_hover(t), v.span.clone())),
            key => key_hover(key).map(|h| (h, v.span.clone())),
        };
    }
    if on_key {
        return None;
    }
    let v = &entry.value;
    match entry.key.as_str() {
        // An installer container's image: its tag is the cGPU version deployed.
        "image" => {
            let s = v.as_str()?;
            let r = split_image(s);
            if !r.path.ends_with("cgpu-installer") {
                return None;
            }
            Some((tag_hover(r.tag?), v.span.clone()))
        }
        // env: - name: POLICY  value: "1"
        "value"
            if parent.get("name").and_then(Node::as_str) == Some(crate::manifest::POLICY_ENV) =>
        {
            policy_number(v.scalar()?).map(|n| (policy_hover(n), v.span.clone()))
        }
        _ => None,
    }
}

fn within(span: &std::ops::Range<usize>, offset: usize) -> bool {
    span.start <= offset && offset <= span.end && span.start < span.end
}

/// One completion candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub label: String,
    /// Text to insert in place of `replace`.
    pub insert: String,
    pub detail: String,
    pub documentation: Option<String>,
    pub is_key: bool,
}

/// Completion candidates at byte `offset` of `src`, and the byte range they replace. Works on the
/// text as typed (the document need not parse): a line inside the top-level `cgpu:` block that
/// holds only a partial key gets the cgpu keys; `policy:`, `enabled:`, `checkRegions:` there and
/// `imagePullPolicy:` anywhere get their values.
pub fn complete(src: &Source, offset: usize) -> Option<(Vec<Candidate>, std::ops::Range<usize>)> {
    let mut offset = offset.min(src.text.len());
    while !src.text.is_char_boundary(offset) {
        offset -= 1;
    }
    let line = src.line_col(offset).line;
    let start = src.line_start(line);
    let prefix = &src.text[start..offset];
    let indent = prefix.len() - prefix.trim_start_matches(' ').len();
    let rest = &prefix[indent..];
    let in_cgpu = indent > 0 && parent_is_cgpu(src, line, indent);
    if let Some((key, value)) = rest.split_once(':') {
        let key = key.trim();
        let typed = value.trim_start();
        if typed.contains([' ', '#', '"', '\'']) {
            return None;
        }
        let replace = offset - typed.len()..offset;
        let values: Vec<Candidate> = match key {
            "imagePullPolicy" => PULL_POLICIES
                .iter()
                .map(|p| value_candidate(p, "Kubernetes image pull policy", None))
                .collect(),
            "policy" if in_cgpu => POLICY_TITLES
                .iter()
                .enumerate()
                .map(|(i, t)| value_candidate(&i.to_string(), t, Some(policy_hover(i as i128))))
                .collect(),
            "enabled" | "checkRegions" if in_cgpu => ["true", "false"]
                .iter()
                .map(|b| value_candidate(b, "boolean (unquoted)", None))
                .collect(),
            _ => return None,
        };
        return Some((values, replace));
    }
    if !in_cgpu || !rest.chars().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    let present = sibling_keys(src, line, indent);
    let keys = KNOWN_KEYS
        .iter()
        .filter(|k| !present.iter().any(|p| p == *k))
        .map(|k| Candidate {
            label: k.to_string(),
            insert: format!("{k}: "),
            detail: key_description(k).unwrap_or_default().to_string(),
            documentation: key_hover(k),
            is_key: true,
        })
        .collect();
    Some((keys, offset - rest.len()..offset))
}

fn value_candidate(v: &str, detail: &str, documentation: Option<String>) -> Candidate {
    Candidate {
        label: v.to_string(),
        insert: v.to_string(),
        detail: detail.to_string(),
        documentation,
        is_key: false,
    }
}

/// Whether the nearest line above `line` indented less than `indent` (ignoring blank and comment
/// lines) is a top-level `cgpu:`.
fn parent_is_cgpu(src: &Source, line: usize, indent: usize) -> bool {
    for l in (1..line).rev() {
        let t = src.line_text(l);
        let body = t.trim_start_matches(' ');
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let ind = t.len() - body.len();
        if ind < indent {
            let head = body.split('#').next().unwrap_or_default().trim_end();
            return ind == 0 && head == "cgpu:";
        }
    }
    false
}

/// The keys already written at `indent` in the block around `line`.
fn sibling_keys(src: &Source, line: usize, indent: usize) -> Vec<String> {
    let mut keys = Vec::new();
    let key_of = |l: usize| -> Option<Option<String>> {
        let t = src.line_text(l);
        let body = t.trim_start_matches(' ');
        if body.is_empty() || body.starts_with('#') {
            return Some(None);
        }
        let ind = t.len() - body.len();
        if ind < indent {
            return None;
        }
        if ind > indent {
            return Some(None);
        }
        Some(body.split_once(':').map(|(k, _)| k.trim().to_string()))
    };
    for l in (1..line).rev() {
        match key_of(l) {
            None => break,
            Some(Some(k)) => keys.push(k),
            Some(None) => {}
        }
    }
    for l in line + 1..=src.line_count() {
        match key_of(l) {
            None => break,
            Some(Some(k)) => keys.push(k),
            Some(None) => {}
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, marker: &str) -> (std::sync::Arc<Source>, usize) {
        let i = text.find(marker).unwrap();
        let t = text.replacen(marker, "", 1);
        (Source::new("t", t), i)
    }

    #[test]
    fn key_hover_says_what_allowed_and_default() {
        let h = key_hover("imagePullPolicy").unwrap();
        assert!(h.contains("`Always`, `IfNotPresent`, `Never`"), "{h}");
        assert!(h.contains("Chart default: `IfNotPresent`"), "{h}");
        let h = key_hover("policy").unwrap();
        assert!(
            h.contains("`1` preemptive") && h.contains("Chart default: `1`"),
            "{h}"
        );
        assert!(key_hover("polcy").is_none());
    }

    #[test]
    fn hover_finds_keys_policies_and_tags() {
        let (s, o) = at("cgpu:\n  pol|icy: 2\n", "|");
        assert!(hover(&s, o).unwrap().0.starts_with("**`cgpu.policy`**"));
        let (s, o) = at("cgpu:\n  policy: \"|2\"\n", "|");
        assert!(hover(&s, o).unwrap().0.contains("weight-based"));
        let (s, o) = at("cgpu:\n  tag: v1.5.|3-8d3fc1b-aliyun\n", "|");
        let h = hover(&s, o).unwrap().0;
        assert!(h.contains("cGPU 1.5.3") && h.contains("deadlock"), "{h}");
        // The compatibility data's row: 1.5.3 lacks the 1.5.9 support for Ubuntu 22.04.
        assert!(
            h.contains("lacks Ubuntu 22.04 support (from cGPU 1.5.9)") && h.contains("575"),
            "{h}"
        );
        let (s, o) = at("cgpu:\n  tag: v1.5.|21-8d3fc1b-aliyun\n", "|");
        let h = hover(&s, o).unwrap().0;
        assert!(h.contains("Newer than the compatibility data of"), "{h}");
        // Huawei CCE's xGPU numbers its policies differently (compat.toml, numbering-huawei-xgpu):
        // its 0 is native, cGPU's 0 fair share.
        let (s, o) = at("cgpu:\n  policy: |0\n", "|");
        let h = hover(&s, o).unwrap().0;
        assert!(
            h.contains("fair share")
                && h.contains("Not Huawei CCE xGPU's numbering: its 0 is native"),
            "{h}"
        );
        let (s, o) = at("cgpu:\n  pol|icy: 0\n", "|");
        let h = hover(&s, o).unwrap().0;
        assert!(h.contains("xGPU numbers its policies 0 native"), "{h}");
        let (s, o) = at("other:\n  policy: |2\n", "|");
        assert!(hover(&s, o).is_none());
    }

    #[test]
    fn completion_of_keys_and_values() {
        let (s, o) = at("cgpu:\n  policy: 1\n  im|\n", "|");
        let (c, r) = complete(&s, o).unwrap();
        assert_eq!(r, o - 2..o);
        let labels: Vec<&str> = c.iter().map(|c| c.label.as_str()).collect();
        assert!(labels.contains(&"imagePullPolicy") && !labels.contains(&"policy"));
        let (s, o) = at("cgpu:\n  policy: |\n", "|");
        let (c, _) = complete(&s, o).unwrap();
        assert_eq!(c.len(), 6);
        let (s, o) = at("cgpu:\n  enabled: fa|\n", "|");
        let (c, r) = complete(&s, o).unwrap();
        assert_eq!((c.len(), r), (2, o - 2..o));
        let (s, o) = at("x:\n  policy: |\n", "|");
        assert!(complete(&s, o).is_none());
    }
}
