//! An ApplicationSet's `list` generators rendered as Argo CD's applicationset controller renders
//! them, so that each element is checked as the Application it makes.
//!
//! - argo-cd `applicationset/generators/list.go` (`GenerateParams`): each element of
//!   `list.elements` is one set of params. Without `goTemplate`, every value must be a string
//!   (else "error parsing value as string": the generator fails), and a `values:` mapping of
//!   strings becomes the params `values.KEY`; with `goTemplate: true` the element is the data as
//!   its JSON has it (numbers, booleans, nested mappings).
//! - `applicationset/utils/utils.go` (`deeplyReplace`, `Replace`): every string of the template
//!   is replaced, map keys too; `valuesObject` (a RawExtension) as JSON, its strings replaced and
//!   marshalled back (a string stays a string). Without `goTemplate` (fasttemplate), a string is
//!   rendered only when one of its lines holds `{{…}}`; each `{{ tag }}` (trimmed) that names a
//!   param becomes its string, any other stays as written, and a `{{` no `}}` closes makes the
//!   template fail. With `goTemplate`, Go's text/template with sprig: only the plain `{{.key}}`
//!   (`{{ .values.key }}`) forms are rendered here, a value as Go's `fmt` prints it; a string
//!   with anything else is left as written (and named as not checked).
//! - An error anywhere fails the whole ApplicationSet (`GenerateApplications`): Argo CD
//!   generates none of its Applications.
//!
//! Other generators (matrix, merge, git, clusters, …), `elementsYaml`, a generator's own
//! `template`, a `selector` and `templatePatch` are not rendered: the template is then read as
//! written, what its generators fill in left out.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use super::target::{Element, Values};
use crate::yaml::embedded::{literal_map, quoted_source};
use crate::yaml::{Entry, Node, Scalar, Source, Style, Value};

/// What an ApplicationSet's generators make of its template, as far as it is rendered here.
pub(super) enum Expansion {
    /// Not rendered: the template is read as written, what the generators fill in left out;
    /// why they are not rendered here.
    AsWritten(String),
    /// Argo CD generates none of the Applications: where, and why.
    Fails(Vec<(Node, String)>),
    /// What each element renders, in order.
    Rendered(Vec<Rendered>),
}

/// One element's Application: the template's `spec` as the element renders it.
pub(super) struct Rendered {
    pub spec: Node,
    pub element: Arc<Element>,
    /// The `helm.values` strings the element fills in, by their pointer under `spec`
    /// (`/source/helm/values`), read with their positions in the file.
    strings: Vec<(String, Values)>,
}

impl Rendered {
    /// The values of the `helm.values` string at `pointer` under `spec`, when the element
    /// filled something in there.
    pub fn values_at(&self, pointer: &str) -> Option<Values> {
        self.strings
            .iter()
            .find(|(p, _)| p == pointer)
            .map(|(_, v)| v.clone())
    }
}

/// What `Replace` does to one string: the parts it replaces, in order (their byte ranges in the
/// string, the text each becomes, and the span in the file of the element's value it came from
/// whole); `None` when the string stays as written; `Err` when Argo CD fails.
type Parts = Result<Option<Vec<Part>>, String>;
type Part = crate::yaml::embedded::Replacement;

/// A param of a fasttemplate element: its string, and the value node it came from.
struct Param<'a> {
    text: &'a str,
    node: &'a Node,
}

enum Params<'a> {
    /// fasttemplate: the params by name.
    Fast(HashMap<String, Param<'a>>),
    /// Go templates: the element (a mapping), and `missingkey=error`.
    Go(&'a Node, bool),
    /// An element without entries: Argo CD renders nothing (`RenderTemplateParams` returns
    /// the template when there are no params).
    Nothing,
}

/// The ApplicationSet `root`'s Applications, as its generators make them.
pub(super) fn expand(root: &Node) -> Expansion {
    let Some(spec) = root.get("spec") else {
        return Expansion::AsWritten(String::new());
    };
    let Some(template) = spec.pointer("/template/spec") else {
        return Expansion::AsWritten(String::new());
    };
    if spec.get("templatePatch").is_some_and(|p| !is_null(p)) {
        return Expansion::AsWritten("its `templatePatch` is not applied here".into());
    }
    let go = matches!(
        spec.get("goTemplate").and_then(Node::scalar),
        Some(Scalar::Bool(true))
    );
    let missing_error = spec
        .get("goTemplateOptions")
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .any(|o| o.as_str() == Some("missingkey=error"));
    let mut elements: Vec<&Node> = Vec::new();
    for generator in spec
        .get("generators")
        .and_then(Node::as_seq)
        .unwrap_or_default()
    {
        let Some(entries) = generator.as_map() else {
            return Expansion::AsWritten(String::new());
        };
        if let Some(other) = entries.iter().find(|e| e.key != "list") {
            return Expansion::AsWritten(if other.key == "selector" {
                "a generator's `selector` is not applied here".into()
            } else {
                format!(
                    "its `{}` generator is not rendered here (only `list` generators with literal elements are)",
                    other.key
                )
            });
        }
        let Some(list) = generator.get("list") else {
            continue;
        };
        if list.get("elementsYaml").is_some_and(|y| !is_null(y)) {
            return Expansion::AsWritten(
                "a list generator's `elementsYaml` is not rendered here".into(),
            );
        }
        if list.get("template").is_some_and(|t| !is_null(t)) {
            return Expansion::AsWritten(
                "a list generator's own `template` is not rendered here".into(),
            );
        }
        elements.extend(
            list.get("elements")
                .and_then(Node::as_seq)
                .unwrap_or_default(),
        );
    }
    if elements.is_empty() {
        return Expansion::AsWritten("its generators have no list element".into());
    }
    let name = root.pointer("/spec/template/metadata/name");
    let mut fails = Vec::new();
    let mut out = Vec::new();
    for (k, e) in elements.into_iter().enumerate() {
        let mut element = Element {
            index: k + 1,
            first: first_entry(e),
            application: None,
            go,
            rendered: Vec::new(),
            spans: Vec::new(),
        };
        let Some(entries) = e.as_map() else {
            fails.push((
                e.clone(),
                format!(
                    "the list generator's {} is a {}, not a mapping: Argo CD cannot read it (\"error unmarshling list element\")",
                    element.describe(),
                    e.type_name()
                ),
            ));
            continue;
        };
        let params = if entries.is_empty() {
            Params::Nothing
        } else if go {
            Params::Go(e, missing_error)
        } else {
            match fast_params(entries) {
                Ok(p) => Params::Fast(p),
                Err(refused) => {
                    fails.extend(refused.into_iter().map(|(n, why)| {
                        (
                            n,
                            format!("the list generator's {}: {why}", element.describe()),
                        )
                    }));
                    continue;
                }
            }
        };
        let mut r = Renderer {
            params,
            element: &mut element,
            fails: Vec::new(),
            skip: values_strings(template, false)
                .into_iter()
                .map(|(_, n)| n.span.clone())
                .collect(),
        };
        let spec = r.node(template);
        let strings = values_strings(template, true)
            .into_iter()
            .filter_map(|(p, n)| {
                let rendered = spec.pointer(&p)?.clone();
                r.values_string(n, rendered).map(|v| (p, v))
            })
            .collect();
        let application = name.and_then(|n| match n.as_str() {
            Some(s) => match r.parts(s) {
                Ok(Some(parts)) => Some(apply(s, &parts)),
                Ok(None) => Some(s.to_string()),
                Err(_) => None,
            },
            None => None,
        });
        let failed = std::mem::take(&mut r.fails);
        element.application = application.filter(|a| !a.contains("{{"));
        if !failed.is_empty() {
            let what = element.describe();
            fails.extend(failed.into_iter().map(|(n, why)| {
                (
                    n,
                    format!("rendered with the list generator's {what}: {why}"),
                )
            }));
            continue;
        }
        out.push(Rendered {
            spec,
            element: Arc::new(element),
            strings,
        });
    }
    if fails.is_empty() {
        Expansion::Rendered(out)
    } else {
        for (_, why) in &mut fails {
            why.push_str(", so Argo CD generates none of the ApplicationSet's Applications");
        }
        Expansion::Fails(fails)
    }
}

fn is_null(n: &Node) -> bool {
    matches!(n.value, Value::Scalar(Scalar::Null))
}

/// An element's first entry with a one-line scalar value, as written (`cluster: prod`).
fn first_entry(e: &Node) -> Option<String> {
    e.as_map()?.iter().find_map(|en| {
        let raw = en.value.raw();
        (en.value.scalar().is_some() && !raw.contains(['\n', '\r']) && raw.chars().count() <= 60)
            .then(|| format!("{}: {raw}", en.key))
    })
}

/// The params of an element without `goTemplate` (`list.go`): each value a string, a `values`
/// mapping of strings as `values.KEY`; else every value Argo CD refuses, and why.
fn fast_params(entries: &[Entry]) -> Result<HashMap<String, Param<'_>>, Vec<(Node, String)>> {
    let mut params = HashMap::new();
    let mut refused = Vec::new();
    let not_string = |n: &Node, key: &str| {
        format!(
            "`{key}` is {}, not a string: without `goTemplate: true` Argo CD's list generator takes only strings (\"error parsing value as string\")",
            what_value(n)
        )
    };
    for e in entries {
        if e.key == "values" {
            let Some(values) = e.value.as_map() else {
                refused.push((
                    e.value.clone(),
                    format!(
                        "`values` is {}, not a mapping (\"error parsing values map\")",
                        what_value(&e.value)
                    ),
                ));
                continue;
            };
            for v in values {
                match v.value.as_str() {
                    Some(text) => {
                        params.insert(
                            format!("values.{}", v.key),
                            Param {
                                text,
                                node: &v.value,
                            },
                        );
                    }
                    None => refused.push((
                        v.value.clone(),
                        not_string(&v.value, &format!("values.{}", v.key)),
                    )),
                }
            }
            continue;
        }
        match e.value.as_str() {
            Some(text) => {
                params.insert(
                    e.key.clone(),
                    Param {
                        text,
                        node: &e.value,
                    },
                );
            }
            None => refused.push((e.value.clone(), not_string(&e.value, &e.key))),
        }
    }
    if refused.is_empty() {
        Ok(params)
    } else {
        Err(refused)
    }
}

/// "a number (2)", "a boolean (true)", "null", "a mapping".
fn what_value(n: &Node) -> String {
    match &n.value {
        Value::Scalar(Scalar::Null) => "null".into(),
        Value::Scalar(_) => format!("{} ({})", article(n.type_name()), n.raw().trim()),
        _ => article(n.type_name()),
    }
}

fn article(what: &str) -> String {
    if what.starts_with(['a', 'e', 'i', 'o', 'u']) {
        format!("an {what}")
    } else {
        format!("a {what}")
    }
}

/// The `helm.values` strings of a template's sources (`read`: those Argo CD reads, not a string
/// beside `valuesObject`): their pointer under the template's `spec`, and their node.
fn values_strings(template: &Node, read: bool) -> Vec<(String, &Node)> {
    let mut helms = Vec::new();
    if let Some(h) = template.pointer("/source/helm") {
        helms.push(("/source/helm".to_string(), h));
    }
    for (i, s) in template
        .get("sources")
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        if let Some(h) = s.get("helm") {
            helms.push((format!("/sources/{i}/helm"), h));
        }
    }
    helms
        .into_iter()
        .filter(|(_, h)| !read || h.get("valuesObject").is_none_or(is_null))
        .filter_map(|(at, h)| {
            let v = h.get("values")?;
            matches!(v.value, Value::Scalar(Scalar::Str(_))).then(|| (format!("{at}/values"), v))
        })
        .collect()
}

/// `s` with `parts` replaced.
fn apply(s: &str, parts: &[Part]) -> String {
    let mut out = String::with_capacity(s.len());
    let mut from = 0;
    for (r, text, _) in parts {
        out.push_str(&s[from..r.start]);
        out.push_str(text);
        from = r.end;
    }
    out.push_str(&s[from..]);
    out
}

struct Renderer<'a, 'e> {
    params: Params<'a>,
    element: &'e mut Element,
    /// What makes Argo CD fail: the node and why.
    fails: Vec<(Node, String)>,
    /// The `helm.values` strings (by span): rendered, but what they hold is placed by
    /// [`Renderer::values_string`].
    skip: Vec<Range<usize>>,
}

impl Renderer<'_, '_> {
    /// What `Replace` does to the string `s`.
    fn parts(&self, s: &str) -> Parts {
        match &self.params {
            Params::Nothing => Ok(None),
            Params::Fast(params) => fast(s, params),
            Params::Go(data, missing_error) => go(s, data, *missing_error),
        }
    }

    /// `n` with every string filled in (`deeplyReplace`).
    fn node(&mut self, n: &Node) -> Node {
        let value = match &n.value {
            Value::Scalar(Scalar::Str(s)) => return self.string(n, s),
            Value::Scalar(_) => return n.clone(),
            Value::Seq(items) => Value::Seq(items.iter().map(|i| self.node(i)).collect()),
            Value::Map(entries) => Value::Map(entries.iter().map(|e| self.entry(e)).collect()),
        };
        Node {
            value,
            span: n.span.clone(),
            style: n.style,
            src: n.src.clone(),
            via_alias: n.via_alias,
            alias_at: n.alias_at.clone(),
            refused: n.refused.clone(),
        }
    }

    /// An entry with its key filled in too ("Keys can be templated as well as values").
    fn entry(&mut self, e: &Entry) -> Entry {
        let mut key = e.key.clone();
        if e.key.contains("{{") {
            match self.parts(&e.key) {
                Ok(Some(parts)) => {
                    key = apply(&e.key, &parts);
                    self.element.spans.push(e.key_span.clone());
                    self.element
                        .spans
                        .extend(parts.into_iter().filter_map(|p| p.2));
                }
                Ok(None) => {}
                Err(why) => self
                    .fails
                    .push((e.value.clone(), format!("the key `{}`: {why}", e.key))),
            }
        }
        Entry {
            key,
            key_span: e.key_span.clone(),
            key_style: e.key_style,
            value: self.node(&e.value),
            merged: e.merged,
            key_kind: e.key_kind.clone(),
        }
    }

    /// A string filled in: a node of its own source, the string as Argo CD hands it on
    /// (quoted, so that the rules read and quote it as a string), which findings place at the
    /// element's value when the string was one tag, else at the template's string.
    fn string(&mut self, n: &Node, s: &str) -> Node {
        let parts = match self.parts(s) {
            Ok(Some(parts)) => parts,
            Ok(None) => return n.clone(),
            Err(why) => {
                self.fails.push((n.clone(), why));
                return n.clone();
            }
        };
        let text = apply(s, &parts);
        let at = match parts.as_slice() {
            [(r, _, Some(from))] if *r == (0..s.len()) => from.clone(),
            _ => n.span.clone(),
        };
        let src = Source::new(
            format!("<element {} of the ApplicationSet>", self.element.index),
            crate::yaml::emit::double_quoted(&text),
        );
        self.element.rendered.push((src.clone(), at.clone()));
        if !self.skip.contains(&n.span) {
            self.element.spans.push(n.span.clone());
            self.element.spans.push(at);
            self.element
                .spans
                .extend(parts.into_iter().filter_map(|p| p.2));
        }
        Node {
            value: Value::Scalar(Scalar::Str(text)),
            span: 0..src.text.len(),
            style: Style::DoubleQuoted,
            src,
            via_alias: None,
            alias_at: None,
            refused: None,
        }
    }

    /// A `helm.values` string the element fills in, read as Helm reads the text Argo CD hands
    /// it, with the file position of every byte: the template's where it is as written, the
    /// element's value where one tag was one YAML value. `None` when nothing is filled in.
    fn values_string(&mut self, template: &Node, rendered: Node) -> Option<Values> {
        let Some(Scalar::Str(s)) = template.scalar() else {
            return None;
        };
        let parts = self.parts(s).ok()??;
        let read = match template.style {
            Style::DoubleQuoted | Style::SingleQuoted => quoted_source(template),
            _ => literal_map(template),
        };
        let q = match read {
            Ok(q) => q,
            Err(why) => return Some(Values::Unmapped(rendered, why)),
        };
        let mut replaced = Vec::new();
        for (r, text, from) in &parts {
            if let Some(tag) = q.file_span(r.clone()) {
                self.element.spans.push(tag);
            }
            if let Some(at) = from {
                self.element.spans.push(at.clone());
            }
            replaced.push((r.clone(), text.clone(), from.clone()));
        }
        Some(Values::Quoted(
            template.clone(),
            Arc::new(q.replaced(&replaced)),
        ))
    }
}

/// fasttemplate's `ExecuteFuncString` as Argo CD calls it (`Replace`, `useGoTemplate` false).
fn fast(s: &str, params: &HashMap<String, Param>) -> Parts {
    // `isTemplatedRegex` (`.*{{.*}}.*`): `.` stops at a line break.
    if !s
        .split('\n')
        .any(|l| l.find("{{").is_some_and(|i| l[i + 2..].contains("}}")))
    {
        return Ok(None);
    }
    let mut parts = Vec::new();
    let mut i = 0;
    while let Some(a) = s[i..].find("{{") {
        let open = i + a;
        let Some(b) = s[open + 2..].find("}}") else {
            return Err(format!(
                "`{}` opens a tag with `{{{{` that no `}}}}` closes: Argo CD cannot parse the template (\"Cannot find end tag\")",
                s.trim()
            ));
        };
        let close = open + 2 + b + 2;
        let tag = s[open + 2..open + 2 + b].trim();
        if let Some(p) = params.get(tag).filter(|_| !tag.is_empty()) {
            parts.push((open..close, p.text.to_string(), Some(p.node.span.clone())));
        }
        i = close;
    }
    Ok((!parts.is_empty()).then_some(parts))
}

/// text/template on the element, for the plain field forms (`{{.key}}`, `{{ .values.key }}`)
/// alone: any other action leaves the string as written.
fn go(s: &str, data: &Node, missing_error: bool) -> Parts {
    if !s.contains("{{") {
        return Ok(None);
    }
    let mut parts = Vec::new();
    let mut i = 0;
    while let Some(a) = s[i..].find("{{") {
        let open = i + a;
        let Some(b) = s[open + 2..].find("}}") else {
            return Err(format!(
                "`{}` opens an action with `{{{{` that no `}}}}` closes: Argo CD cannot parse the template (\"unclosed action\")",
                s.trim()
            ));
        };
        let close = open + 2 + b + 2;
        let Some(path) = field_path(&s[open + 2..open + 2 + b]) else {
            return Ok(None);
        };
        match lookup(data, &path) {
            Lookup::Value(node) => {
                let Some(text) = go_print(node) else {
                    return Ok(None);
                };
                parts.push((open..close, text, Some(node.span.clone())));
            }
            Lookup::Missing if missing_error => {
                return Err(format!(
                    "it has no `{}`, and `goTemplateOptions` holds `missingkey=error` (\"no entry for key\")",
                    path.join(".")
                ));
            }
            Lookup::Missing => parts.push((open..close, "<no value>".to_string(), None)),
            Lookup::Fails(why) => return Err(why),
        }
        i = close;
    }
    Ok(Some(parts))
}

/// What a field chain finds in the element (text/template's `evalField` on the JSON data).
enum Lookup<'a> {
    /// A value.
    Value(&'a Node),
    /// No entry for a key (Go prints `<no value>`, or fails with `missingkey=error`).
    Missing,
    /// A field of a null or of what is no mapping: the template fails.
    Fails(String),
}

fn lookup<'a>(data: &'a Node, path: &[&str]) -> Lookup<'a> {
    let mut node = data;
    let mut at: Vec<&str> = Vec::new();
    for key in path {
        if node.as_map().is_none() {
            let what = at.join(".");
            return Lookup::Fails(match node.value {
                Value::Scalar(Scalar::Null) => format!(
                    "`{what}` is null, so `.{what}.{key}` fails (\"nil pointer evaluating interface {{}}.{key}\")"
                ),
                _ => format!(
                    "`{what}` is {}, which has no field `{key}` (\"can't evaluate field {key}\")",
                    what_value(node)
                ),
            });
        }
        match node.get(key) {
            Some(n) => node = n,
            None => return Lookup::Missing,
        }
        at.push(key);
    }
    Lookup::Value(node)
}

/// The keys of a plain field chain (` .values.policy ` → `values`, `policy`).
fn field_path(action: &str) -> Option<Vec<&str>> {
    let chain = action
        .trim_matches([' ', '\t', '\r', '\n'])
        .strip_prefix('.')?;
    let keys: Vec<&str> = chain.split('.').collect();
    keys.iter()
        .all(|k| {
            let mut c = k.chars();
            c.next().is_some_and(|f| f.is_alphabetic() || f == '_')
                && c.all(|c| c.is_alphanumeric() || c == '_')
        })
        .then_some(keys)
}

/// A JSON value as Go's `fmt` prints it in a template (numbers are float64); `None` for a
/// mapping or a list (printed in Go's own syntax, not rendered here).
fn go_print(n: &Node) -> Option<String> {
    match n.scalar()? {
        Scalar::Str(s) => Some(s.clone()),
        Scalar::Bool(b) => Some(b.to_string()),
        Scalar::Null => Some("<no value>".into()),
        Scalar::Int(i) => Some(go_float(*i as f64)),
        Scalar::Float(f) if f.is_finite() => Some(go_float(*f)),
        _ => None,
    }
}

/// A float64 as Go's `%v` prints it (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest
/// digits, with an exponent below 1e-4 and from 1e6 on (`1e+06`, `1.234567e+06`).
fn go_float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let e = format!("{f:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let body = if !(-4..6).contains(&exp) {
        let m = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    } else if exp < 0 {
        format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
    } else {
        let point = exp as usize + 1;
        if digits.len() <= point {
            format!("{digits}{}", "0".repeat(point - digits.len()))
        } else {
            format!("{}.{}", &digits[..point], &digits[point..])
        }
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn element(text: &str) -> Node {
        let src = Source::new("e.yaml", text.to_string());
        crate::yaml::parse(&src).documents[0].root.clone().unwrap()
    }

    /// What fasttemplate makes of `s` with the element's params.
    fn fast_text(s: &str, e: &Node) -> Result<String, String> {
        let params = fast_params(e.as_map().unwrap()).unwrap();
        Ok(match fast(s, &params)? {
            Some(parts) => apply(s, &parts),
            None => s.to_string(),
        })
    }

    // fasttemplate as Argo CD calls it: the tag trimmed, an unknown or empty tag kept as
    // written (spaces too), `values.KEY`, a string rendered only when one of its lines holds
    // `{{…}}` (a tag over two lines alone is text), and a `{{` no `}}` closes is an error.
    #[test]
    fn fasttemplate_replaces_known_tags_and_keeps_the_rest() {
        let e = element("cluster: prod\npolicy: \"2\"\nvalues:\n  pull: Always\n");
        for (s, want) in [
            ("{{cluster}}", "prod"),
            ("{{ cluster }}-{{policy}}", "prod-2"),
            ("{{ unknown }} {{}} {{ }}", "{{ unknown }} {{}} {{ }}"),
            ("{{values.pull}}", "Always"),
            ("{{ .cluster }}", "{{ .cluster }}"),
            ("a {{\ncluster}}", "a {{\ncluster}}"),
            // Rendered (its first line holds a tag), the second tag spans a line break.
            ("{{cluster}}\n{{\npolicy}}", "prod\n2"),
            ("{{cluster {{policy}}", "{{cluster {{policy}}"),
            ("no tag", "no tag"),
        ] {
            assert_eq!(fast_text(s, &e).as_deref(), Ok(want), "{s:?}");
        }
        assert!(fast_text("{{cluster}} {{", &e).is_err());
        // Without a line holding `{{…}}` the string is not parsed: no error.
        assert_eq!(fast_text("a {{", &e).as_deref(), Ok("a {{"));
    }

    // list.go without goTemplate: a value that is not a string, or `values` that is not a
    // mapping of strings, is refused, each at its node.
    #[test]
    fn fasttemplate_params_are_strings() {
        let e = element("a: x\nb: 2\nc: null\nd: [x]\nvalues:\n  e: \"1\"\n  f: true\n");
        let refused = fast_params(e.as_map().unwrap()).err().unwrap();
        let keys: Vec<&str> = refused.iter().map(|(n, _)| n.raw()).collect();
        assert_eq!(keys, ["2", "null", "[x]", "true"]);
        let e = element("values: x\n");
        assert!(fast_params(e.as_map().unwrap()).is_err());
    }

    // text/template's plain field forms on the element's JSON: strings as they are, numbers as
    // Go's %v prints a float64, booleans, a missing key (at any depth) `<no value>` (or an error
    // with missingkey=error), a field of a string or a null an error; any other action leaves
    // the string as written.
    #[test]
    fn go_templates_render_the_plain_field_forms() {
        let e = element(
            "cluster: prod\npolicy: 2\nratio: 0.5\nbig: 1000000\non: true\nnothing: null\nvalues:\n  tag: v1\nlist: [1]\n",
        );
        let text =
            |s: &str, strict: bool| go(s, &e, strict).map(|p| p.map(|parts| apply(s, &parts)));
        for (s, want) in [
            ("{{.cluster}}", "prod"),
            ("{{ .policy }}/{{.ratio}}", "2/0.5"),
            ("{{.big}}", "1e+06"),
            ("{{.on}}", "true"),
            ("{{.nothing}}", "<no value>"),
            ("{{.values.tag}}", "v1"),
            ("{{.missing}}", "<no value>"),
            ("{{.missing.key}}", "<no value>"),
            ("{{.values.missing}}", "<no value>"),
        ] {
            assert_eq!(text(s, false), Ok(Some(want.to_string())), "{s:?}");
        }
        for s in [
            "{{.cluster | upper}}",
            "{{ index . \"cluster\" }}",
            "{{- .cluster }}",
            "{{.list}}",
            "{{.values}}",
            "{{.}}",
            "no action",
        ] {
            assert_eq!(text(s, false), Ok(None), "{s:?}");
        }
        assert!(text("{{.missing}}", true).is_err());
        assert!(text("{{.missing.key}}", true).is_err());
        // A field of a string or of a null fails whatever the options.
        assert!(text("{{.cluster.key}}", false).is_err());
        assert!(text("{{.nothing.key}}", false).is_err());
        assert!(text("{{.cluster}} {{", false).is_err());
    }

    #[test]
    fn floats_print_as_go_prints_them() {
        for (f, want) in [
            (2.0, "2"),
            (-3.0, "-3"),
            (0.5, "0.5"),
            (123456.0, "123456"),
            (999999.0, "999999"),
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (1e21, "1e+21"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (0.0, "0"),
        ] {
            assert_eq!(go_float(f), want, "{f}");
        }
    }
}
