//! `cgpu-lint set KEY=VALUE... PATH`: change cgpu keys by editing only their bytes (or inserting
//! one line with the surrounding indentation and line ending), then check the result with the
//! same rules as `check` and refuse a value that an error rule rejects.

use crate::catalogue::RuleId;
use std::sync::Arc;

use crate::catalogue::Severity;
use crate::diag::{Diagnostic, Edit};
use crate::yaml::emit::render_string;
use crate::yaml::node::child;
use crate::yaml::{self, Node, Scalar, Source, Style, Value, resolve};

/// The keys `set` may change (plus `nodeSelector.<label key>`).
pub const SETTABLE: &[&str] = &[
    "policy",
    "tag",
    "imagePullPolicy",
    "enabled",
    "checkRegions",
    "image",
    "financeCloudImageTag",
];

#[derive(Debug, thiserror::Error)]
pub enum SetError {
    /// Bad command line (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The file's shape does not allow the change (exit 1, file untouched).
    #[error("{0}")]
    Cannot(String),
    /// An error rule rejects the new value (exit 1, file untouched).
    #[error("refused {assignment}: {rule}: {message}")]
    Rejected {
        assignment: String,
        rule: RuleId,
        message: String,
    },
}

/// One `KEY=VALUE`.
#[derive(Debug, Clone)]
pub struct Assignment {
    /// `["policy"]` or `["nodeSelector", "<label key>"]`.
    pub keys: Vec<String>,
    pub value: String,
    pub text: String,
}

impl Assignment {
    pub fn parse(s: &str) -> Result<Assignment, SetError> {
        let Some((k, v)) = s.split_once('=') else {
            return Err(SetError::Usage(format!(
                "`{s}` is not KEY=VALUE (keys: {}, nodeSelector.<label key>)",
                SETTABLE.join(", ")
            )));
        };
        let keys = if let Some(label) = k.strip_prefix("nodeSelector.") {
            if label.is_empty() {
                return Err(SetError::Usage("nodeSelector. needs a label key".into()));
            }
            vec!["nodeSelector".to_string(), label.to_string()]
        } else if SETTABLE.contains(&k) {
            vec![k.to_string()]
        } else {
            return Err(SetError::Usage(format!(
                "`{k}` cannot be set (keys: {}, nodeSelector.<label key>)",
                SETTABLE.join(", ")
            )));
        };
        Ok(Assignment {
            keys,
            value: v.to_string(),
            text: s.to_string(),
        })
    }

    /// JSON pointer of the key in the document.
    pub fn pointer(&self) -> String {
        self.keys
            .iter()
            .fold("/cgpu".to_string(), |p, k| child(&p, k))
    }

    /// The YAML text for the value. Numbers and booleans for `policy`, `enabled` and
    /// `checkRegions` are written plain (quotes dropped); everything else stays a string, in the
    /// quoting style the old value had when it had one.
    fn yaml(&self, old_style: Style) -> String {
        let typed = matches!(self.keys[0].as_str(), "policy" | "enabled" | "checkRegions");
        if typed {
            match resolve::helm(self.value.trim()) {
                Scalar::Int(i) => return i.to_string(),
                Scalar::Bool(b) => return b.to_string(),
                Scalar::Float(_) => return self.value.trim().to_string(),
                _ => {}
            }
        }
        let style = if old_style.is_quoted() {
            old_style
        } else {
            Style::Plain
        };
        render_string(&self.value, style)
    }
}

/// What `set` did to one file.
#[derive(Debug)]
pub struct SetOutcome {
    pub text: String,
    /// The 1-based document that was changed (the first with a `cgpu` block).
    pub document: usize,
    /// How many documents the file holds (more than one: Helm 3 and Helm 4 read it apart); 1
    /// when the block changed is a release's in a file of manifests.
    pub documents: usize,
    /// Warnings and infos at the keys set (errors refuse instead).
    pub notes: Vec<Diagnostic>,
}

/// Apply the assignments one after another to `src`, then check the result; in a file of
/// releases of the chart, to the one named `release` (`set --release NAME`: a HelmRelease's,
/// an Application's or an ApplicationSet's `metadata.name`, a helmfile release's `name`, a
/// kustomize entry's `releaseName`, an umbrella's subchart key), else the first.
pub fn set_release(
    src: &Arc<Source>,
    assignments: &[Assignment],
    settings: &crate::lint::Settings,
    release: Option<&str>,
) -> Result<SetOutcome, SetError> {
    if let Some(name) = release {
        let parsed = yaml::parse(src);
        if release_block(src, &parsed, Some(name)).is_none() {
            let names = release_names(src, &parsed);
            return Err(SetError::Cannot(if names.is_empty() {
                format!(
                    "no release of the chart with a `cgpu:` block to change is named `{name}`: this file has none"
                )
            } else {
                format!(
                    "no release of the chart with a `cgpu:` block is named `{name}`; this file has {}",
                    names.join(", ")
                )
            }));
        }
    }
    // The guards read every finding: a config that ignores yaml-syntax must not let `set` write
    // a file that does not parse. What is reported and refused below follows the settings, as
    // `check` reports the file.
    let unfiltered = crate::lint::Settings::new(settings.opts.clone(), Default::default());
    let before = crate::lint::lint_file(src, &unfiltered);
    if let Some(d) = before.iter().find(|d| d.rule == RuleId::YamlSyntax) {
        return Err(SetError::Cannot(format!(
            "{}: does not parse ({}); fix that first",
            src.name, d.message
        )));
    }
    let mut current = src.clone();
    for a in assignments {
        let edit = plan(&current, a, release)?;
        let text = crate::edit::apply(&current.text, &[&edit])
            .map_err(|e| SetError::Cannot(format!("internal error: {e}")))?;
        current = Source::new(src.name.clone(), text);
    }
    let after = crate::lint::lint_file(&current, &unfiltered);
    if let Some(d) = after.iter().find(|d| d.rule == RuleId::YamlSyntax) {
        return Err(SetError::Cannot(format!(
            "internal error: the change would not parse ({}); file left as it was",
            d.message
        )));
    }
    let after = crate::lint::lint_file(&current, settings);
    // The document that was changed: the first one with a cgpu block (see `plan`), else the
    // release of the chart whose block was changed, its findings under its pointer.
    let parsed = yaml::parse(&current);
    let (target, prefix) = match parsed
        .documents
        .iter()
        .find(|d| d.root.as_ref().and_then(|r| r.entry("cgpu")).is_some())
    {
        Some(d) => (d.index, String::new()),
        None => release_block(&current, &parsed, release)
            .map_or((1, String::new()), |b| (b.document, b.pointer)),
    };
    // A file of releases (HelmReleases, Applications) is not a multi-document values file.
    let documents = if prefix.is_empty() {
        parsed.documents.len().max(1)
    } else {
        1
    };
    let mut notes = Vec::new();
    for a in assignments {
        let p = format!("{prefix}{}", a.pointer());
        for d in after.iter().filter(|d| d.path == p && d.document == target) {
            if d.severity == Severity::Error {
                return Err(SetError::Rejected {
                    assignment: a.text.clone(),
                    rule: d.rule,
                    message: d.message.clone(),
                });
            }
            notes.push(d.clone());
        }
    }
    Ok(SetOutcome {
        text: current.text.clone(),
        document: target,
        documents,
        notes,
    })
}

/// Leading spaces of the line holding `offset`.
fn indent_at(src: &Source, offset: usize) -> usize {
    let line = src.line_col(offset).line;
    src.line_text(line)
        .chars()
        .take_while(|c| *c == ' ')
        .count()
}

/// Byte offset of the end of the last thing written for `node` in `src` (entries reached through
/// a merge key or an alias live elsewhere and are skipped).
fn content_end(node: &Node, src: &Arc<Source>) -> usize {
    let own = |n: &Node| Arc::ptr_eq(&n.src, src) && n.via_alias.is_none();
    match &node.value {
        Value::Map(entries) if node.style == Style::Block => entries
            .iter()
            .filter(|e| !e.merged && own(&e.value))
            .map(|e| e.key_span.end.max(content_end(&e.value, src)))
            .max()
            .unwrap_or(node.span.start),
        Value::Seq(items) if node.style == Style::Block => items
            .iter()
            .filter(|n| own(n))
            .map(|n| content_end(n, src))
            .max()
            .unwrap_or(node.span.start),
        _ => {
            // A block scalar's span ends after its line break; stay on its last line.
            let mut end = node.span.end;
            while end > node.span.start && matches!(src.text.as_bytes()[end - 1], b'\n' | b'\r') {
                end -= 1;
            }
            end
        }
    }
}

/// Insert `lines` (already indented after the first, which gets `indent`) on a new line after the
/// line holding `after`.
fn insert_after(src: &Arc<Source>, after: usize, indent: usize, body: &str) -> Edit {
    let eol = src.line_ending();
    let line = src.line_col(after).line;
    let pad = " ".repeat(indent);
    if line >= src.line_count() {
        // The last line has no line break.
        let at = src.text.len();
        Edit {
            src: src.clone(),
            range: at..at,
            replacement: format!("{eol}{pad}{body}"),
        }
    } else {
        let at = src.line_start(line + 1);
        Edit {
            src: src.clone(),
            range: at..at,
            replacement: format!("{pad}{body}{eol}"),
        }
    }
}

/// `key: value` text, or for a nested key `key:<eol><indent+2>sub: value`.
fn key_lines(keys: &[String], value: &str, indent: usize, eol: &str) -> String {
    let k = render_string(&keys[0], Style::Plain);
    if keys.len() == 1 {
        format!("{k}: {value}")
    } else {
        format!(
            "{k}:{eol}{}{}",
            " ".repeat(indent + 2),
            key_lines(&keys[1..], value, indent + 2, eol)
        )
    }
}

/// The one edit that makes `a` true in `src`.
fn plan(src: &Arc<Source>, a: &Assignment, release: Option<&str>) -> Result<Edit, SetError> {
    let parsed = yaml::parse(src);
    let eol = src.line_ending();
    let doc = parsed.documents.iter().find(|d| {
        release.is_none()
            && d.root
                .as_ref()
                .and_then(|r| r.entry("cgpu"))
                .is_some_and(|e| !e.merged)
    });
    let Some(doc) = doc else {
        // The cgpu block of a release of the chart (an umbrella's subchart key, a HelmRelease,
        // an Application, inside its `values: |` string too: that source has the file's
        // offsets, so the edit splices the file).
        if let Some(b) = release_block(src, &parsed, release) {
            overridden(src, &parsed, &b, a)?;
            return set_in(
                &b.src,
                &b.cgpu.value,
                b.cgpu.key_span.start,
                "cgpu",
                &a.keys,
                a,
            );
        }
        if let Some(t) = parsed.documents.iter().find_map(|d| {
            let deps = crate::helm::place::parent_chart(&src.name).map(|(_, d)| d);
            d.root.as_ref().and_then(|r| {
                crate::helm::place::targets(r, deps.as_deref())
                    .into_iter()
                    .next()
            })
        }) {
            return Err(SetError::Cannot(format!(
                "{}: {} has no `cgpu:` block to change; add one under {} first",
                src.name,
                t.label(),
                t.pointer
            )));
        }
        // No cgpu block: add one at the end of the file.
        if let Some(root) = parsed.documents.iter().find_map(|d| d.root.as_ref())
            && root.as_map().is_none()
        {
            return Err(SetError::Cannot(format!(
                "{}: the document is a {}, not a mapping of values",
                src.name,
                root.type_name()
            )));
        }
        let at = src.text.len();
        let lead = if src.text.is_empty() || src.text.ends_with('\n') {
            ""
        } else {
            eol
        };
        let mut keys = vec!["cgpu".to_string()];
        keys.extend(a.keys.iter().cloned());
        return Ok(Edit {
            src: src.clone(),
            range: at..at,
            replacement: format!(
                "{lead}{}{eol}",
                key_lines(&keys, &a.yaml(Style::Plain), 0, eol)
            ),
        });
    };
    let root = doc.root.as_ref().expect("found by root");
    let cgpu = root.entry("cgpu").expect("found by entry");
    set_in(src, &cgpu.value, cgpu.key_span.start, "cgpu", &a.keys, a)
}

/// A key an Argo CD parameter or a helmfile `set:`/`setString:` entry of the same release sets
/// (or a part of it, or a key above it) wins over the values block: changing the block would
/// change nothing, so `set` refuses and names the entry.
fn overridden(
    src: &Arc<Source>,
    parsed: &yaml::Parsed,
    b: &ReleaseBlock,
    a: &Assignment,
) -> Result<(), SetError> {
    use crate::helm::place;
    let Some(root) = parsed
        .documents
        .iter()
        .find(|d| d.index == b.document)
        .and_then(|d| d.root.as_ref())
    else {
        return Ok(());
    };
    let mut wanted = vec!["cgpu".to_string()];
    wanted.extend(a.keys.iter().cloned());
    // The template as written (an ApplicationSet's elements render it: `set` edits it).
    for t in place::targets(root, None)
        .into_iter()
        .filter(|t| t.element.is_none())
    {
        if !b.pointer.starts_with(&t.pointer) {
            continue;
        }
        for p in &t.parameters {
            let path = split_set_name(&p.name);
            let n = path.len().min(wanted.len());
            if path[..n] == wanted[..n] {
                let line = src.line_col(p.value.span.start).line;
                return Err(SetError::Cannot(format!(
                    "`{}` is set by the {} `{}` (line {line}), which the tool applies over the values: change its value there",
                    wanted.join("."),
                    p.what,
                    p.name
                )));
            }
        }
    }
    Ok(())
}

/// A `--set` name's keys (`a\.b.c` is `a.b`, `c`; an index `[0]` stays on its key).
fn split_set_name(name: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = name.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    out.last_mut().unwrap().push(n);
                }
            }
            '.' => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out
}

/// The `cgpu:` block of the first release of the chart in a file that has none at the root.
struct ReleaseBlock {
    document: usize,
    /// The release's values pointer (`/spec/values`).
    pointer: String,
    /// The file, or the `values: |` string read in place (the file's offsets).
    src: Arc<Source>,
    cgpu: crate::yaml::Entry,
}

/// Is `t` the release named `name` (a release of several sources is `name (spec/sources/2)`)?
fn named(t: &crate::helm::place::Target, name: Option<&str>) -> bool {
    name.is_none_or(|n| t.name == n || t.name.starts_with(&format!("{n} (")))
}

/// The names of the file's releases of the chart.
fn release_names(src: &Arc<Source>, parsed: &yaml::Parsed) -> Vec<String> {
    use crate::helm::place;
    let deps = place::parent_chart(&src.name).map(|(_, d)| d);
    let mut names: Vec<String> = Vec::new();
    for root in parsed.documents.iter().filter_map(|d| d.root.as_ref()) {
        for t in place::targets(root, deps.as_deref())
            .into_iter()
            .filter(|t| t.element.is_none())
        {
            let n = format!("`{}`", t.name);
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    names
}

fn release_block(
    src: &Arc<Source>,
    parsed: &yaml::Parsed,
    release: Option<&str>,
) -> Option<ReleaseBlock> {
    use crate::helm::place::{self, Values};
    let deps = place::parent_chart(&src.name).map(|(_, d)| d);
    for doc in &parsed.documents {
        let Some(root) = &doc.root else { continue };
        for t in place::targets(root, deps.as_deref()) {
            if !t.check
                || t.element.is_some()
                || !named(&t, release)
                || (t.form == place::Form::Umbrella && place::disabled(&t, root).is_some())
            {
                continue;
            }
            let (bsrc, cgpu) = match &t.values {
                Values::Node(n) => (src.clone(), n.entry("cgpu").cloned()),
                Values::Embedded(vsrc, p) => (
                    vsrc.clone(),
                    p.documents
                        .first()
                        .and_then(|d| d.root.as_ref())
                        .and_then(|r| r.entry("cgpu"))
                        .cloned(),
                ),
                _ => continue,
            };
            if let Some(cgpu) = cgpu.filter(|e| !e.merged) {
                return Some(ReleaseBlock {
                    document: doc.index,
                    pointer: t.pointer,
                    src: bsrc,
                    cgpu,
                });
            }
        }
    }
    None
}

/// Set `keys` inside `map` (the value of the key starting at `key_at`, named `name`).
fn set_in(
    src: &Arc<Source>,
    map: &Node,
    key_at: usize,
    name: &str,
    keys: &[String],
    a: &Assignment,
) -> Result<Edit, SetError> {
    let eol = src.line_ending();
    let child_indent = indent_at(src, key_at) + 2;
    match &map.value {
        Value::Scalar(Scalar::Null) if map.style == Style::Plain => {
            // `cgpu:` with nothing after it (or `~`): the new key goes on the next line.
            let body = key_lines(keys, &a.yaml(Style::Plain), child_indent, eol);
            if map.span.is_empty() {
                Ok(insert_after(src, key_at, child_indent, &body))
            } else {
                // `~` or `null`: replaced by a flow map holding the new key.
                Ok(Edit {
                    src: src.clone(),
                    range: map.span.clone(),
                    replacement: format!("{{{}}}", flow_pair(keys, &a.yaml(Style::Plain))),
                })
            }
        }
        Value::Map(entries) if map.style == Style::Block => {
            let own = entries
                .iter()
                .rev()
                .find(|e| e.key == keys[0] && !e.merged && Arc::ptr_eq(&e.value.src, src));
            match own {
                Some(e) if keys.len() > 1 => {
                    set_in(src, &e.value, e.key_span.start, &e.key, &keys[1..], a)
                }
                Some(e) => replace_scalar(src, &e.value, &e.key, a),
                None => {
                    let first = entries
                        .iter()
                        .find(|e| !e.merged && Arc::ptr_eq(&e.value.src, src));
                    let indent = first.map_or(child_indent, |e| indent_at(src, e.key_span.start));
                    let after = content_end(map, src).max(key_at);
                    let body = key_lines(keys, &a.yaml(Style::Plain), indent, eol);
                    Ok(insert_after(src, after, indent, &body))
                }
            }
        }
        Value::Map(entries) => {
            // A flow map: `{}` or `{a: b}`.
            if let Some(e) = entries.iter().rev().find(|e| e.key == keys[0] && !e.merged) {
                if keys.len() > 1 {
                    return set_in(src, &e.value, e.key_span.start, &e.key, &keys[1..], a);
                }
                return replace_scalar(src, &e.value, &e.key, a);
            }
            let text = &src.text[map.span.clone()];
            let Some(close) = text.rfind('}') else {
                return Err(SetError::Cannot(format!(
                    "`{name}` is not a plain flow map"
                )));
            };
            let close = map.span.start + close;
            let open = map.span.start + 1;
            let inner = &src.text[open..close];
            let pair = flow_pair(keys, &a.yaml(Style::Plain));
            if inner.trim().is_empty() {
                Ok(Edit {
                    src: src.clone(),
                    range: open..close,
                    replacement: pair,
                })
            } else {
                let trimmed = inner.trim_end();
                let at = open + trimmed.len();
                let sep = if trimmed.ends_with(',') { " " } else { ", " };
                Ok(Edit {
                    src: src.clone(),
                    range: at..at,
                    replacement: format!("{sep}{pair}"),
                })
            }
        }
        _ => Err(SetError::Cannot(format!(
            "`{name}` is a {}, not a mapping; run `cgpu-lint fix` or correct it first",
            map.type_name()
        ))),
    }
}

fn flow_pair(keys: &[String], value: &str) -> String {
    let k = render_string(&keys[0], Style::Plain);
    if keys.len() == 1 {
        format!("{k}: {value}")
    } else {
        format!("{k}: {{{}}}", flow_pair(&keys[1..], value))
    }
}

fn replace_scalar(
    src: &Arc<Source>,
    v: &Node,
    key: &str,
    a: &Assignment,
) -> Result<Edit, SetError> {
    if v.via_alias.is_some() {
        return Err(SetError::Cannot(format!(
            "`{key}` comes from an anchor (`*alias`); set it where the anchor is defined, or replace the alias"
        )));
    }
    let Value::Scalar(_) = &v.value else {
        return Err(SetError::Cannot(format!(
            "`{key}` is a {}, not a single value",
            v.type_name()
        )));
    };
    if matches!(v.style, Style::Literal | Style::Folded) {
        return Err(SetError::Cannot(format!(
            "`{key}` is a block scalar; edit it by hand"
        )));
    }
    // A label value is always a string; other keys keep their quoting when they stay strings.
    let text = a.yaml(v.style);
    if v.span.is_empty() {
        // `key:` with an empty (null) value: the span sits right after the colon.
        let lead = if src.text[..v.span.start].ends_with(':') {
            " "
        } else {
            ""
        };
        return Ok(Edit {
            src: src.clone(),
            range: v.span.clone(),
            replacement: format!("{lead}{text}"),
        });
    }
    Ok(Edit {
        src: src.clone(),
        range: v.span.clone(),
        replacement: text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, args: &[&str]) -> Result<String, SetError> {
        let src = Source::new("v.yaml", text.to_string());
        let a: Vec<Assignment> = args.iter().map(|s| Assignment::parse(s).unwrap()).collect();
        set_release(&src, &a, &crate::lint::Settings::default(), None).map(|o| o.text)
    }

    #[test]
    fn replaces_a_quoted_policy_with_a_plain_number() {
        assert_eq!(
            run("cgpu:\r\n  policy: \"1\"  # c\r\n", &["policy=2"]).unwrap(),
            "cgpu:\r\n  policy: 2  # c\r\n"
        );
    }

    #[test]
    fn keeps_the_quote_style_of_a_string() {
        assert_eq!(
            run(
                "cgpu:\n  tag: 'v1.5.3-8d3fc1b-aliyun'\n",
                &["tag=v1.5.10-2b9e7d4-aliyun"]
            )
            .unwrap(),
            "cgpu:\n  tag: 'v1.5.10-2b9e7d4-aliyun'\n"
        );
    }

    #[test]
    fn inserts_a_missing_key_with_sibling_indentation() {
        assert_eq!(
            run(
                "cgpu:\n    enabled: true\n    nodeSelector:\n      a: b\nother: 1\n",
                &["policy=3"]
            )
            .unwrap(),
            "cgpu:\n    enabled: true\n    nodeSelector:\n      a: b\n    policy: 3\nother: 1\n"
        );
    }

    #[test]
    fn creates_the_cgpu_block_when_absent() {
        assert_eq!(
            run(
                "global:\n  x: 1",
                &["nodeSelector.ack.node.gpu.schedule=cgpu"]
            )
            .unwrap(),
            "global:\n  x: 1\ncgpu:\n  nodeSelector:\n    ack.node.gpu.schedule: cgpu\n"
        );
    }

    #[test]
    fn inserts_inside_an_empty_flow_node_selector() {
        assert_eq!(
            run("cgpu:\n  nodeSelector: {}\n", &["nodeSelector.gpu-pool=no"]).unwrap(),
            "cgpu:\n  nodeSelector: {gpu-pool: \"no\"}\n"
        );
    }

    #[test]
    fn refuses_an_out_of_range_policy_with_the_rule_message() {
        let e = run("cgpu:\n  policy: 1\n", &["policy=9"]).unwrap_err();
        assert!(
            matches!(
                e,
                SetError::Rejected {
                    rule: RuleId::PolicyOutOfRange,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn in_a_multi_document_file_the_first_cgpu_document_is_changed_and_checked() {
        let text = "# comment-only document\n---\ncgpu:\n  policy: 1\n---\ncgpu:\n  policy: 2\n";
        assert_eq!(
            run(text, &["policy=0"]).unwrap(),
            "# comment-only document\n---\ncgpu:\n  policy: 0\n---\ncgpu:\n  policy: 2\n"
        );
        let e = run(text, &["policy=6"]).unwrap_err();
        assert!(matches!(e, SetError::Rejected { .. }), "{e}");
    }

    #[test]
    fn refuses_a_tag_too_old() {
        let e = run("cgpu:\n  tag: v1.5.10\n", &["tag=v1.0.5"]).unwrap_err();
        assert!(
            matches!(
                e,
                SetError::Rejected {
                    rule: RuleId::TagTooOld,
                    ..
                }
            ),
            "{e}"
        );
    }
}
