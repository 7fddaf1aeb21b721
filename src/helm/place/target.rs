use std::sync::Arc;

use crate::helm::SetKind;
use crate::yaml::{Node, Parsed, Source};

/// Which of the forms holds the values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Umbrella,
    HelmRelease,
    Application,
    ApplicationSet,
    Helmfile,
    Kustomize,
}

impl Form {
    pub fn describe(self) -> &'static str {
        match self {
            Form::Umbrella => "subchart",
            Form::HelmRelease => "Flux HelmRelease",
            Form::Application => "Argo CD Application",
            Form::ApplicationSet => "Argo CD ApplicationSet",
            Form::Helmfile => "helmfile release",
            Form::Kustomize => "kustomize helmCharts entry",
        }
    }
}

/// What a target holds where the chart's values are.
#[derive(Debug, Clone)]
pub enum Values {
    /// Nothing: the chart gets its defaults.
    Absent,
    /// A mapping of the document.
    Node(Node),
    /// Something other than a mapping where Helm needs one (the node, and what Helm does).
    NotAMap(Node, String),
    /// YAML inside a literal block string, read in place (see [`crate::yaml::embedded`]).
    Embedded(Arc<Source>, Arc<Parsed>),
    /// YAML inside a one-line quoted string, decoded with where each character is in the file
    /// (see [`crate::yaml::embedded::Quoted`]), or inside a string an ApplicationSet's generator
    /// filled in (a literal block too): the string's node and the decoded values.
    Quoted(Node, Arc<crate::yaml::embedded::Quoted>),
    /// A string that cannot be read in place: the node and why.
    Unmapped(Node, String),
    /// A Secret's base64 `data` value (the node) and its decoded text, read as a values file;
    /// findings point at the node.
    Decoded(Node, Arc<Source>),
}

/// A Flux `valuesFrom` entry.
#[derive(Debug, Clone)]
pub struct ValuesRef {
    pub kind: String,
    pub name: String,
    pub key: String,
    pub target_path: Option<String>,
    /// `optional: true`: Flux skips the entry when the object or key does not exist.
    pub optional: bool,
    /// The HelmRelease's namespace, where Flux looks the object up.
    pub namespace: Option<String>,
    /// The entry's bytes in the file.
    pub span: std::ops::Range<usize>,
}

/// The values of one release (or subchart instance) of the chart in a document.
#[derive(Debug, Clone)]
pub struct Target {
    pub form: Form,
    /// The subchart's key, or the release's `metadata.name`.
    pub name: String,
    /// JSON pointer (in the document) of the values the chart receives as its root.
    pub pointer: String,
    /// What `--set` writes before a key of these values from the top of the release (`gpu.`
    /// for an umbrella's subchart `gpu`).
    pub set_prefix: String,
    pub values: Values,
    /// An umbrella dependency's `condition` and `tags`.
    pub condition: Option<String>,
    pub tags: Vec<String>,
    /// Argo CD's `helm.parameters`, helmfile's `set:` and `setString:`: the Helm flags the tool
    /// passes, in the order Helm applies them.
    pub parameters: Vec<Param>,
    /// Flux's `spec.valuesFrom`, in order.
    pub values_from: Vec<ValuesRef>,
    /// A helmfile release's `values:` list in order: inline mappings, and files (paths relative
    /// to the helmfile).
    pub layers: Vec<Layer>,
    /// Where the values come from, when not the release itself (`valuesFrom ConfigMap `cm``).
    pub via: Option<String>,
    /// The rules check `values` (an inline helmfile entry, a ConfigMap of valuesFrom, every
    /// target but a helmfile release as a whole).
    pub check: bool,
    /// `values` prints what this target's release receives (not for a part of a release).
    pub release: bool,
    /// What the release's tool hands the chart that is not read here, or that the tool ignores:
    /// the node and what to say (`values-not-read`).
    pub unread: Vec<(Node, String)>,
    /// The list generator element an ApplicationSet's Application was rendered from: this
    /// target is that Application's release.
    pub element: Option<Arc<Element>>,
    /// An ApplicationSet's template whose list generator elements each make an Application: the
    /// targets rendered from them follow it and are checked instead (it stays for `set`, which
    /// edits the template as written).
    pub expanded: bool,
    /// Why Argo CD makes no Application of this ApplicationSet (its list generator refuses an
    /// element, a template does not render): where, and what to say.
    pub fails: Vec<(Node, String)>,
}

impl Target {
    /// How findings name the release: "Flux HelmRelease `gpu` (valuesFrom ConfigMap `base`)",
    /// "Argo CD ApplicationSet `gpu` (element 2, `cluster: prod`)".
    pub fn label(&self) -> String {
        match (&self.via, &self.element) {
            (Some(via), _) => format!("{} `{}` ({via})", self.form.describe(), self.name),
            (None, Some(e)) => format!("{} ({})", self.template_label(), e.describe()),
            (None, None) => self.template_label(),
        }
    }

    /// Whether what an ApplicationSet's generators fill in is left out of these values: the
    /// template as written, or an element's Go template where this module does not render it
    /// (fasttemplate hands a tag it has no param for on as written: that text is checked).
    pub fn strips_templates(&self) -> bool {
        self.form == Form::ApplicationSet && self.element.as_ref().is_none_or(|e| e.go)
    }

    /// How findings name what is common to every element of an ApplicationSet: the label
    /// without the element.
    pub fn template_label(&self) -> String {
        format!("{} `{}`", self.form.describe(), self.name)
    }
}

/// The list generator element an ApplicationSet's Application is rendered from, and where each
/// value rendering made is in the file.
#[derive(Debug)]
pub struct Element {
    /// 1-based, over the elements of the list generators in order.
    pub index: usize,
    /// Its first entry with a scalar value, as written (`cluster: prod`), to name it by.
    pub first: Option<String>,
    /// The Application's `metadata.name` as the element renders it, when nothing is left to fill.
    pub application: Option<String>,
    /// Rendered as a Go template (`goTemplate: true`).
    pub go: bool,
    /// Each rendered string: its own source (the value as Argo CD hands it on, quoted, which the
    /// rules read), and where findings on it point in the file.
    pub rendered: Vec<(Arc<Source>, std::ops::Range<usize>)>,
    /// The file's bytes rendering filled in or took a value from: the template's strings and
    /// tags it replaced, the element's values it used. A finding there is about this element.
    pub spans: Vec<std::ops::Range<usize>>,
}

impl Element {
    /// "element 2, `cluster: prod`".
    pub fn describe(&self) -> String {
        match &self.first {
            Some(f) => format!("element {}, `{f}`", self.index),
            None => format!("element {}", self.index),
        }
    }

    /// Where a finding on `src` points in the file, when `src` is one of the strings rendering
    /// made.
    pub fn place(&self, src: &Arc<Source>) -> Option<std::ops::Range<usize>> {
        self.rendered
            .iter()
            .find(|(s, _)| Arc::ptr_eq(s, src))
            .map(|(_, at)| at.clone())
    }

    /// Whether `span` (of the file) lies on what rendering filled in or took from the element.
    pub fn touches(&self, span: &std::ops::Range<usize>) -> bool {
        self.spans.iter().any(|s| {
            (span.start < s.end && s.start < span.end)
                || (span.is_empty() && s.contains(&span.start))
        })
    }
}

/// A `--set` or `--set-string` flag a tool passes to Helm for one entry of the release.
#[derive(Debug, Clone)]
pub struct Param {
    pub kind: SetKind,
    /// The entry's `name`.
    pub name: String,
    /// The flag's argument as the tool writes it (`name=value`, escaped as the tool escapes).
    pub arg: String,
    /// The entry's `value` (or `values`) node in the file: where findings about it point.
    pub value: Node,
    /// Its JSON pointer in the document (`/spec/source/helm/parameters/0/value`).
    pub pointer: String,
    /// How findings name the entry: `parameter`, `` `set:` entry``, `` `setString:` entry``.
    pub what: &'static str,
}

impl Param {
    /// The name of the source [`crate::helm::strvals::apply`] gives the values this flag sets.
    pub fn source_name(&self) -> String {
        format!("{} {}", self.kind.flag(), self.arg)
    }
}

/// Helm applies every `--set` before every `--set-string`, whatever their order on the command
/// line: the parameters in that order (stable within a kind).
pub(super) fn helm_order(params: &mut [Param]) {
    params.sort_by_key(|p| match p.kind {
        SetKind::Json => 0,
        SetKind::Set => 1,
        SetKind::String => 2,
    });
}

/// One entry of a helmfile release's `values:` list.
#[derive(Debug, Clone)]
pub enum Layer {
    /// An inline mapping and its pointer (`/releases/1/values/0`).
    Inline(Node, String),
    /// A file named by the entry (its string node, relative to the file that names it), and
    /// whether helmfile skips it when missing (`missingFileHandler` other than `Error`).
    File(Node, bool),
    /// The chart's own values.yaml (kustomize's `valuesMerge: merge` without a `valuesFile`).
    ChartDefaults,
    /// An Argo CD `valueFiles` entry (its string node), relative to the source's `path` (the
    /// second field) in the checked repository (see [`super::release::source_folder`]),
    /// whether a missing one is skipped (`ignoreMissingValueFiles`), and the path to read when
    /// it is not the entry's text (a `$ref/…` file of the same repository, from `path`'s folder).
    SourceFile(Node, String, bool, Option<String>),
}

impl Target {
    pub(super) fn new(form: Form, name: String, pointer: String, values: Values) -> Target {
        Target {
            form,
            name,
            pointer,
            set_prefix: String::new(),
            values,
            condition: None,
            tags: Vec::new(),
            parameters: Vec::new(),
            values_from: Vec::new(),
            layers: Vec::new(),
            via: None,
            check: true,
            release: true,
            unread: Vec::new(),
            element: None,
            expanded: false,
            fails: Vec::new(),
        }
    }
}

/// A dependency of a parent chart on the chart, from its Chart.yaml.
#[derive(Debug, Clone)]
pub struct Dependency {
    /// The key of its values in the parent's: `alias`, else `name`.
    pub key: String,
    pub condition: Option<String>,
    pub tags: Vec<String>,
}

pub(super) fn str_at<'a>(node: &'a Node, pointer: &str) -> Option<&'a str> {
    node.pointer(pointer).and_then(Node::as_str)
}
