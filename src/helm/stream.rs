//! The effective values of one plain values file, as `values` prints them, without its tree: the file is read call by call ([`yaml::visit`]) and each collection is
//! written as Helm's JSON as soon as it ends (a mapping's entries sorted by key), its text
//! appended to its parent's, so memory holds the JSON text and one small record per entry of an
//! open or large mapping instead of a [`Node`] per value (~180 bytes each). Only the root
//! entries the chart's defaults also hold are built as nodes, to be coalesced as
//! [`super::coalesce`] does.
//!
//! It answers only where the result is certainly the one [`super::place::effective`] gives (held by a
//! differential test on every YAML file of the repository): one file, no `--set`, one document
//! read the same by Helm 3 and Helm 4, no anchor, alias, merge key, complex or typed key,
//! duplicate key, value Helm refuses (`view` unchanged), nothing a GitOps or umbrella reading
//! or a Kubernetes object would take; anything else (and any error) gives `None`, and the
//! caller reads the file the ordinary way.

use std::collections::HashSet;
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::sync::Arc;

use super::{Refusal, Version, json, place, read_file, string_entry};
use crate::yaml::{self, Entry, Node, Scalar, Source, Value, Visitor};

/// A collection's JSON text above this size is kept where it is instead of being copied into
/// its parent's (the parent then refers to it).
const INLINE_MAX: usize = 1 << 16;

/// Root keys that make a file something else than plain values for `values` (a Kubernetes
/// object, a GitOps release, a helmfile, an umbrella chart's values).
const NOT_PLAIN: [&str; 5] = [
    "apiVersion",
    "kind",
    "helmCharts",
    "releases",
    crate::cgpu::CHART,
];

/// A value's JSON: text in its collection's buffer, or a large collection kept apart.
#[derive(Clone, Copy)]
enum Val {
    Text(u32, u32),
    Block(u32),
}

/// One entry (its key's text in the buffer; empty for a list item) and its value.
#[derive(Clone, Copy)]
struct Rec {
    key: (u32, u32),
    val: Val,
}

/// A collection whose JSON is written as it is read.
struct JsonFrame {
    is_map: bool,
    buf: String,
    recs: Vec<Rec>,
    /// A mapping's key whose value is awaited.
    key: Option<(u32, u32)>,
    /// A child is a [`Block`]: this collection becomes one too.
    has_block: bool,
    /// A list's items so far (a list's text is its items', written in order with their
    /// commas; only its blocks have records, at the byte where each goes).
    items: usize,
}

impl JsonFrame {
    /// A value starts: a mapping's key, or a list item's place (after its comma).
    fn value_start(&mut self) -> Option<(u32, u32)> {
        if self.is_map {
            return self.key.take();
        }
        if self.items > 0 {
            self.buf.push(',');
        }
        self.items += 1;
        span(self.buf.len(), self.buf.len())
    }

    /// The value started at `key` is `val`.
    fn value_end(&mut self, key: (u32, u32), val: Val) {
        if self.is_map || matches!(val, Val::Block(_)) {
            self.recs.push(Rec { key, val });
        }
    }
}

/// A collection built as nodes (under a root key the chart's defaults hold).
struct NodeFrame {
    is_map: bool,
    items: Vec<Node>,
    entries: Vec<Entry>,
    key: Option<String>,
}

enum Frame {
    Json(JsonFrame),
    Node(NodeFrame),
}

/// A large collection's JSON, entries sorted.
struct Block {
    is_map: bool,
    buf: String,
    recs: Vec<Rec>,
}

struct Reader<'a> {
    src: &'a Arc<Source>,
    chart_keys: &'a HashSet<String>,
    frames: Vec<Frame>,
    blocks: Vec<Block>,
    /// The root entry being read is one of the chart's keys: its value is built as a node.
    keep: Option<String>,
    kept: Vec<Entry>,
    root: Option<u32>,
}

/// A key Helm reads as the same string: a string scalar, not `<<`, nothing refused.
fn plain_key(node: &Node) -> Option<String> {
    match &node.value {
        Value::Scalar(Scalar::Str(s)) if node.refused.is_none() && s != "<<" => Some(s.clone()),
        _ => None,
    }
}

/// A value `view` hands back as it is.
fn plain_value(node: &Node) -> bool {
    node.refused.is_none()
        && !matches!(&node.value, Value::Scalar(Scalar::Float(f)) if !f.is_finite())
}

fn span(start: usize, end: usize) -> Option<(u32, u32)> {
    Some((u32::try_from(start).ok()?, u32::try_from(end).ok()?))
}

impl Reader<'_> {
    /// A value built as a node is complete: an entry or item of its node frame, or the value
    /// of a root key the chart's defaults hold.
    fn attach_node(&mut self, node: Node) -> ControlFlow<()> {
        let root_level = self.frames.len() == 1;
        match self.frames.last_mut() {
            Some(Frame::Node(f)) => {
                if f.is_map {
                    let Some(key) = f.key.take() else {
                        return ControlFlow::Break(());
                    };
                    f.entries.push(string_entry(key, node));
                } else {
                    f.items.push(node);
                }
                ControlFlow::Continue(())
            }
            Some(Frame::Json(_)) if root_level => {
                let Some(key) = self.keep.take() else {
                    return ControlFlow::Break(());
                };
                if self.kept.iter().any(|e| e.key == key) {
                    return ControlFlow::Break(());
                }
                self.kept.push(string_entry(key, node));
                ControlFlow::Continue(())
            }
            _ => ControlFlow::Break(()),
        }
    }
}

impl Visitor for Reader<'_> {
    fn scalar(&mut self, node: Node) -> ControlFlow<()> {
        let int64 = super::json::is_int64_source(self.src);
        let root_level = self.frames.len() == 1;
        match self.frames.last_mut() {
            None => ControlFlow::Break(()),
            Some(Frame::Node(f)) => {
                if f.is_map && f.key.is_none() {
                    let Some(key) = plain_key(&node) else {
                        return ControlFlow::Break(());
                    };
                    f.key = Some(key);
                    return ControlFlow::Continue(());
                }
                if !plain_value(&node) {
                    return ControlFlow::Break(());
                }
                self.attach_node(node)
            }
            Some(Frame::Json(_)) if root_level && self.keep.is_some() => {
                if !plain_value(&node) {
                    return ControlFlow::Break(());
                }
                self.attach_node(node)
            }
            Some(Frame::Json(f)) => {
                if f.is_map && f.key.is_none() {
                    let Some(key) = plain_key(&node) else {
                        return ControlFlow::Break(());
                    };
                    if root_level && self.chart_keys.contains(&key) {
                        self.keep = Some(key);
                        // The key is held aside; the frame waits for no value of its own.
                        return ControlFlow::Continue(());
                    }
                    let start = f.buf.len();
                    f.buf.push_str(&key);
                    f.key = span(start, f.buf.len());
                    return if f.key.is_some() {
                        ControlFlow::Continue(())
                    } else {
                        ControlFlow::Break(())
                    };
                }
                if !plain_value(&node) {
                    return ControlFlow::Break(());
                }
                let Value::Scalar(s) = &node.value else {
                    return ControlFlow::Break(());
                };
                let Some(key) = f.value_start() else {
                    return ControlFlow::Break(());
                };
                let start = f.buf.len();
                json::scalar(s, int64, &mut f.buf);
                let Some((a, b)) = span(start, f.buf.len()) else {
                    return ControlFlow::Break(());
                };
                f.value_end(key, Val::Text(a, b));
                ControlFlow::Continue(())
            }
        }
    }

    fn start(&mut self, is_map: bool) -> ControlFlow<()> {
        let as_node = match self.frames.last() {
            None if !is_map => return ControlFlow::Break(()),
            None => false,
            Some(Frame::Node(f)) => {
                if f.is_map && f.key.is_none() {
                    return ControlFlow::Break(());
                }
                true
            }
            Some(Frame::Json(f)) => {
                if self.frames.len() == 1 && self.keep.is_some() {
                    true
                } else if f.is_map && f.key.is_none() {
                    return ControlFlow::Break(());
                } else {
                    false
                }
            }
        };
        self.frames.push(if as_node {
            Frame::Node(NodeFrame {
                is_map,
                items: Vec::new(),
                entries: Vec::new(),
                key: None,
            })
        } else {
            Frame::Json(JsonFrame {
                is_map,
                buf: String::new(),
                recs: Vec::new(),
                key: None,
                has_block: false,
                items: 0,
            })
        });
        ControlFlow::Continue(())
    }

    fn end(&mut self) -> ControlFlow<()> {
        match self.frames.pop() {
            None => ControlFlow::Break(()),
            Some(Frame::Node(f)) => {
                if f.key.is_some() {
                    return ControlFlow::Break(());
                }
                let value = if f.is_map {
                    // A key twice (checked here, in n log n: `cgpu` may be large too).
                    let mut keys: Vec<&str> = f.entries.iter().map(|e| e.key.as_str()).collect();
                    keys.sort_unstable();
                    if keys.windows(2).any(|w| w[0] == w[1]) {
                        return ControlFlow::Break(());
                    }
                    Value::Map(f.entries)
                } else {
                    Value::Seq(f.items)
                };
                self.attach_node(Node::synthetic(value, self.src))
            }
            Some(Frame::Json(mut f)) => {
                if f.key.is_some() {
                    return ControlFlow::Break(());
                }
                if f.is_map {
                    let buf = &f.buf;
                    let text = |k: (u32, u32)| &buf.as_bytes()[k.0 as usize..k.1 as usize];
                    f.recs.sort_by(|a, b| text(a.key).cmp(text(b.key)));
                    if f.recs.windows(2).any(|w| text(w[0].key) == text(w[1].key)) {
                        return ControlFlow::Break(());
                    }
                }
                let is_root = self.frames.is_empty();
                let keep_apart = is_root || f.has_block || f.buf.len() > INLINE_MAX;
                let val = if keep_apart {
                    let Ok(i) = u32::try_from(self.blocks.len()) else {
                        return ControlFlow::Break(());
                    };
                    f.buf.shrink_to_fit();
                    f.recs.shrink_to_fit();
                    self.blocks.push(Block {
                        is_map: f.is_map,
                        buf: f.buf,
                        recs: f.recs,
                    });
                    if is_root {
                        self.root = Some(i);
                        return ControlFlow::Continue(());
                    }
                    None
                } else {
                    Some(f)
                };
                let Some(Frame::Json(parent)) = self.frames.last_mut() else {
                    return ControlFlow::Break(());
                };
                let Some(key) = parent.value_start() else {
                    return ControlFlow::Break(());
                };
                let val = match val {
                    None => {
                        parent.has_block = true;
                        Val::Block(self.blocks.len() as u32 - 1)
                    }
                    Some(child) => {
                        let start = parent.buf.len();
                        let mut sink = StringSink(&mut parent.buf);
                        let block = Block {
                            is_map: child.is_map,
                            buf: child.buf,
                            recs: child.recs,
                        };
                        // Text only: writing a String cannot fail.
                        let _ = write_block(&block, &[], &mut sink);
                        let Some((a, b)) = span(start, parent.buf.len()) else {
                            return ControlFlow::Break(());
                        };
                        Val::Text(a, b)
                    }
                };
                parent.value_end(key, val);
                ControlFlow::Continue(())
            }
        }
    }
}

/// `io::Write` into a String (only whole UTF-8 texts are written to it).
struct StringSink<'a>(&'a mut String);

impl Write for StringSink<'_> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0
            .push_str(std::str::from_utf8(b).map_err(io::Error::other)?);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn write_val(v: Val, buf: &str, blocks: &[Block], out: &mut dyn Write) -> io::Result<()> {
    match v {
        Val::Text(a, b) => out.write_all(&buf.as_bytes()[a as usize..b as usize]),
        Val::Block(i) => write_block(&blocks[i as usize], blocks, out),
    }
}

fn write_block(b: &Block, blocks: &[Block], out: &mut dyn Write) -> io::Result<()> {
    if !b.is_map {
        out.write_all(b"[")?;
        let mut at = 0;
        for r in &b.recs {
            let to = r.key.0 as usize;
            out.write_all(&b.buf.as_bytes()[at..to])?;
            write_val(r.val, &b.buf, blocks, out)?;
            at = to;
        }
        out.write_all(&b.buf.as_bytes()[at..])?;
        return out.write_all(b"]");
    }
    out.write_all(b"{")?;
    let mut key = String::new();
    for (i, r) in b.recs.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        key.clear();
        json::string(&b.buf[r.key.0 as usize..r.key.1 as usize], &mut key);
        key.push(':');
        out.write_all(key.as_bytes())?;
        write_val(r.val, &b.buf, blocks, out)?;
    }
    out.write_all(b"}")
}

/// The values of one file, ready to be written.
pub struct Values {
    blocks: Vec<Block>,
    root: u32,
    /// The root entries the chart's defaults coalesced (the user's under them, or the chart's
    /// alone), as JSON, sorted by key.
    coalesced: Vec<(String, String)>,
}

impl Values {
    /// The values as one line of JSON (what [`json::to_string`] writes of
    /// [`super::place::effective`]'s tree), without the newline.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        let root = &self.blocks[self.root as usize];
        let key_of = |r: &Rec| &root.buf[r.key.0 as usize..r.key.1 as usize];
        let mut recs = root.recs.iter().peekable();
        let mut others = self.coalesced.iter().peekable();
        let mut first = true;
        let mut key = String::new();
        out.write_all(b"{")?;
        loop {
            let from_file = match (recs.peek(), others.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(r), Some((k, _))) => key_of(r).as_bytes() < k.as_bytes(),
            };
            if !first {
                out.write_all(b",")?;
            }
            first = false;
            key.clear();
            if from_file {
                let r = recs.next().expect("peeked");
                json::string(key_of(r), &mut key);
                key.push(':');
                out.write_all(key.as_bytes())?;
                write_val(r.val, &root.buf, &self.blocks, out)?;
            } else {
                let (k, v) = others.next().expect("peeked");
                json::string(k, &mut key);
                key.push(':');
                out.write_all(key.as_bytes())?;
                out.write_all(v.as_bytes())?;
            }
        }
        out.write_all(b"}")
    }
}

/// The effective values of `file` under the chart's defaults `chart`, as every version in
/// `versions` reads them, when this reading certainly gives what [`super::place::effective`] gives
/// (see the module's text), or the node budget's refusal; `None` otherwise.
pub fn values(
    chart: &Arc<Source>,
    file: &Arc<Source>,
    versions: &[Version],
) -> Option<Result<Values, Refusal>> {
    if !super::one_document_alike(file) || !file.text.ends_with('\n') {
        return None;
    }
    let charts: Vec<Node> = versions
        .iter()
        .map(|&v| read_file(chart, v).ok())
        .collect::<Option<_>>()?;
    let chart_keys: HashSet<String> = charts
        .iter()
        .flat_map(|c| c.as_map().unwrap_or_default().iter().map(|e| e.key.clone()))
        .collect();
    let mut r = Reader {
        src: file,
        chart_keys: &chart_keys,
        frames: Vec::new(),
        blocks: Vec::new(),
        keep: None,
        kept: Vec::new(),
        root: None,
    };
    let parsed = yaml::visit(file, &mut r)?;
    if let Some(e) = parsed.error {
        // The node budget, met in the one document read: the refusal the tree's reading gives
        // after building the nodes before it (both count the same nodes). Anything else (and,
        // defensively, a second document, which the `---` test above already rules out) is left
        // to that reading, which places it.
        return (e.own_limit && e.document <= 1)
            .then(|| Err(super::refuse(file, e.offset, e.message)));
    }
    if !r.frames.is_empty() || r.keep.is_some() {
        return None;
    }
    let root = r.root?;
    let block = &r.blocks[root as usize];
    let mut keys = block
        .recs
        .iter()
        .map(|x| &block.buf[x.key.0 as usize..x.key.1 as usize])
        .chain(r.kept.iter().map(|e| e.key.as_str()));
    let has_cgpu = keys.clone().any(|k| k == "cgpu");
    if keys.any(|k| NOT_PLAIN.contains(&k))
        || (!has_cgpu && place::parent_chart(&file.name).is_some())
    {
        return None;
    }
    let user = Node::synthetic(Value::Map(r.kept), file);
    let mut coalesced: Option<Vec<(String, String)>> = None;
    for chart in &charts {
        let mut u = user.clone();
        super::coalesce(&mut u, chart);
        let mut entries: Vec<(String, String)> = u
            .as_map()
            .unwrap_or_default()
            .iter()
            .map(|e| (e.key.clone(), json::to_string(&e.value)))
            .collect();
        entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        match &coalesced {
            Some(c) if *c != entries => return None,
            _ => coalesced = Some(entries),
        }
    }
    Some(Ok(Values {
        blocks: r.blocks,
        root,
        coalesced: coalesced?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::helm::Layers;
    use crate::helm::place::effective;

    /// What `values` printed before this reading (the oracle): [`effective`]'s tree as JSON.
    fn old(chart: &Option<Arc<Source>>, file: &Arc<Source>, v: Version) -> Option<String> {
        let layers = Layers {
            chart: chart.clone(),
            files: vec![file.clone()],
            sets: Vec::new(),
        };
        assert!(
            place::releases_among(&layers, None, v).is_none(),
            "{}: read as a release",
            file.name
        );
        effective(&layers, v).ok().map(|t| json::to_string(&t))
    }

    fn new(
        chart: &Option<Arc<Source>>,
        file: &Arc<Source>,
        versions: &[Version],
    ) -> Option<String> {
        let chart = chart
            .clone()
            .unwrap_or_else(|| super::super::chart_source(&Layers::default()));
        let v = values(&chart, file, versions)?.ok()?;
        let mut out = Vec::new();
        v.write(&mut out).unwrap();
        Some(String::from_utf8(out).unwrap())
    }

    fn texts() -> Vec<(String, String)> {
        let mut texts: Vec<(String, String)> = [
            "cgpu:\n  policy: 3\n  tag: null\nbig:\n  k1: {name: n1, value: \"v1\", list: [a, b, 1]}\n  k0: {name: n0, value: \"v0\", list: [a, b, 0]}\n",
            "z: 1\na: [1, 2.5, 1e300, -0, 0x1F, yes, ~, '<&>', \"\\u2028\\t\"]\nm: {}\nl: []\nn: [[], {}, [{}]]\n",
            "cgpu: null\nx: {b: 1, a: 2, b: 3}\n",
            "cgpu: 3\n",
            "cgpu:\n  enabled: false\n  nodeSelector: {a: b}\n",
            "a: &x 1\nb: *x\n",
            "m:\n  <<: {a: 1}\n",
            "? [a]\n: 1\n",
            "m: {yes: a}\n",
            "m: {1: a}\n",
            "m: .nan\n",
            "m: !!int abc\n",
            "a: 1\n---\na: 2\n",
            "a: 1\n...\n",
            "a: 1",
            "- 1\n",
            "~\n",
            "",
            "a: [\n",
            "kind: Foo\napiVersion: v1\n",
            "ack-ai-installer: {cgpu: {policy: 1}}\n",
            "a:\n  b:\n    c: |\n      text\n    d: >-\n      folded\n      more\n  \"é\": 'x'\n",
        ]
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("case{i}.yaml"), t.to_string()))
        .collect();
        // Large enough to keep collections apart (blocks), nested and at the root.
        let mut big = String::from("cgpu:\n  policy: 2\nbig:\n");
        let mut top = String::new();
        for i in (0..1500).rev() {
            big.push_str(&format!(
                "  k{i}: {{name: n{i}, value: \"v{i}\", list: [a, b, {i}], m: {{x: [{{z: {i}}}]}}}}\n"
            ));
            top.push_str(&format!(
                "k{i}:\n  name: n{i}\n  list:\n    - {i}\n    - [x]\n"
            ));
        }
        big.push_str("seq:\n");
        for i in 0..1500 {
            big.push_str(&format!("  - {{a: {i}, b: [{i}, {i}]}}\n"));
        }
        let mut nested = String::from("outer:\n  x: 1\n  in:\n");
        for line in big.lines() {
            nested.push_str(&format!("    {line}\n"));
        }
        texts.push(("nested.yaml".into(), nested));
        // A list holding large collections between small items.
        let mut listed = String::from("l:\n  - 1\n  -\n");
        for line in big.lines() {
            listed.push_str(&format!("    {line}\n"));
        }
        listed.push_str("  - [2]\n  -\n");
        for line in big.lines() {
            listed.push_str(&format!("    {line}\n"));
        }
        texts.push(("listed.yaml".into(), listed));
        texts.push(("big.yaml".into(), big));
        texts.push(("top.yaml".into(), top));
        texts.extend(crate::yaml::repository_yaml_files());
        texts
    }

    /// Wherever the streamed reading answers, its JSON is byte for byte what `values` printed
    /// from the tree, for each Helm version and both together, with the documented defaults
    /// and with the chart fixture's values.yaml; it answers for most of the files.
    #[test]
    fn streamed_values_are_the_trees_json() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let chart_text =
            std::fs::read_to_string(root.join("charts-fixtures/ack-ai-installer/values.yaml"))
                .unwrap();
        let charts = [None, Some(Source::new("chart/values.yaml", chart_text))];
        let (mut answered, mut total) = (0, 0);
        let mut generated = vec![
            "nested.yaml".to_string(),
            "big.yaml".into(),
            "top.yaml".into(),
        ];
        for (name, text) in texts() {
            let file = Source::new(name.clone(), text);
            for chart in &charts {
                total += 1;
                for versions in [
                    &[Version::Three][..],
                    &[Version::Four][..],
                    &Version::BOTH[..],
                ] {
                    let Some(got) = new(chart, &file, versions) else {
                        continue;
                    };
                    if versions.len() == 2 {
                        answered += 1;
                    }
                    generated.retain(|g| *g != name);
                    for &v in versions {
                        let want = old(chart, &file, v);
                        assert_eq!(Some(&got), want.as_ref(), "{name} {v:?}");
                    }
                }
            }
        }
        // Many of the files are manifests, GitOps releases or broken on purpose: left to the tree.
        assert!(answered > 100, "{answered} of {total} answered");
        assert!(generated.is_empty(), "not answered: {generated:?}");
    }

    /// Over the node budget it refuses where, and as, the tree's reading refuses.
    #[test]
    fn the_node_budget_refuses_as_the_tree_does() {
        let chart = super::super::chart_source(&Layers::default());
        for (text, budget) in [
            ("a: [1, 2, 3]\nb: {c: [4, 5]}\n", 5),
            ("cgpu: {policy: 1, tag: x}\nb: 1\n", 4),
            ("x: [a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a]\n", 10),
        ] {
            let mut file = Source::new("t.yaml", text.to_string());
            Arc::get_mut(&mut file).unwrap().node_budget = budget;
            for v in Version::BOTH {
                let layers = Layers {
                    chart: None,
                    files: vec![file.clone()],
                    sets: Vec::new(),
                };
                let old = effective(&layers, v).expect_err("refused");
                let Some(Err(new)) = values(&chart, &file, &[v]) else {
                    panic!("{text:?}: not refused");
                };
                assert_eq!(new.to_string(), old.to_string(), "{text:?}");
                assert!(old.message.contains("node budget"), "{}", old.message);
            }
        }
    }

    /// The shapes it must leave to the tree.
    #[test]
    fn gives_up_where_the_tree_is_needed() {
        let chart = super::super::chart_source(&Layers::default());
        for text in [
            "a: &x 1\nb: *x\n",
            "m:\n  <<: {a: 1}\n",
            "? [a]\n: 1\n",
            "m: {yes: a}\n",
            "m: .nan\n",
            "m: !!int abc\n",
            "x: {b: 1, b: 2}\n",
            "cgpu: {a: 1, a: 2}\n",
            "cgpu:\n  n: {b: [1], a: 1, b: 2}\n",
            "a: 1\n---\na: 2\n",
            "a: 1",
            "- 1\n",
            "a: [\n",
            "kind: Foo\napiVersion: v1\n",
            "releases: []\n",
            "ack-ai-installer: {}\n",
        ] {
            let file = Source::new("t.yaml", text.to_string());
            assert!(values(&chart, &file, &Version::BOTH).is_none(), "{text:?}");
        }
    }
}
