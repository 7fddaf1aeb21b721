//! The rule catalogue: the single place that names every rule. `rules`, `explain`, the rule
//! table of docs/rules.md, SARIF's `tool.driver.rules` and every finding's severity come from
//! here.

use crate::cgpu::{
    last_deadlock_literal, min_policy_literal, policy_range_literal, recommended_version,
};

pub mod sources;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Values,
    Installer,
    Nodes,
    Tool,
}

impl Group {
    pub fn title(self) -> &'static str {
        match self {
            Group::Values => "values (`cgpu:` block)",
            Group::Installer => "cgpu-installer DaemonSet",
            Group::Nodes => "nodes",
            Group::Tool => "the tool itself",
        }
    }
}

#[derive(Debug)]
pub struct Rule {
    pub id: RuleId,
    /// The kebab-case name users write (`--select`, `# cgpu-lint: ignore[…]`, config).
    pub name: &'static str,
    pub severity: Severity,
    pub group: Group,
    /// One line: what the rule finds.
    pub summary: &'static str,
    /// What `cgpu-lint fix` does on its own, if anything, and whether that keeps the render.
    pub fix: Option<FixInfo>,
    /// The default help line shown under a finding.
    pub help: &'static str,
    /// Shown by `explain`: why it matters, with the source of the fact.
    pub explanation: &'static str,
}

/// Whether a rule's fixes keep what the chart renders (see [`crate::diag::Applicability`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixClass {
    /// Every fix of the rule is safe.
    Safe,
    /// Every fix of the rule is unsafe (applied only with `--unsafe-fixes`).
    Unsafe,
    /// Safe or unsafe depending on the value: each fix says which.
    Depends,
}

impl FixClass {
    pub fn as_str(self) -> &'static str {
        match self {
            FixClass::Safe => "safe",
            FixClass::Unsafe => "unsafe",
            FixClass::Depends => "safe or unsafe",
        }
    }
}

/// A rule's fix in the catalogue.
#[derive(Debug, Clone, Copy)]
pub struct FixInfo {
    /// What the fix does.
    pub what: &'static str,
    pub class: FixClass,
    /// Why it has that class, from what Helm renders before and after.
    pub why: &'static str,
}

const fn fix_info(class: FixClass, what: &'static str, why: &'static str) -> Option<FixInfo> {
    Some(FixInfo { what, class, why })
}

/// A fix that keeps the render.
const fn safe(what: &'static str, why: &'static str) -> Option<FixInfo> {
    fix_info(FixClass::Safe, what, why)
}

/// A fix that changes the render.
const fn unsafe_fix(what: &'static str, why: &'static str) -> Option<FixInfo> {
    fix_info(FixClass::Unsafe, what, why)
}

/// A fix whose class depends on the value.
const fn depends(what: &'static str, why: &'static str) -> Option<FixInfo> {
    fix_info(FixClass::Depends, what, why)
}

/// Declares [`RuleId`] (one variant per rule, so a misspelt rule fails to compile) and
/// [`RULES`] (the catalogue, in the enum's order) from one list.
macro_rules! declare_rules {
    ($($id:ident: ($name:literal, $sev:ident, $group:ident, $summary:expr, fix: $fix:expr, help: $help:expr, $expl:expr)),* $(,)?) => {
        /// A rule, as the code names it. The kebab-case name users see is [`RuleId::name`].
        /// A rule the catalogue does not have is not a `RuleId`, so a misspelt rule does not
        /// compile:
        ///
        /// ```compile_fail
        /// let _ = cgpu_lint::catalogue::RuleId::TagToOld;
        /// ```
        ///
        /// ```
        /// assert_eq!(cgpu_lint::catalogue::RuleId::TagTooOld.name(), "tag-too-old");
        /// ```
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum RuleId {
            $($id),*
        }

        pub static RULES: &[Rule] = &[
            $(Rule {
                id: RuleId::$id,
                name: $name,
                severity: Severity::$sev,
                group: Group::$group,
                summary: $summary,
                fix: $fix,
                help: $help,
                explanation: $expl,
            }),*
        ];
    };
}

declare_rules! {
    YamlSyntax: ("yaml-syntax", Error, Values,
        "the file does not parse as YAML (or is neither UTF-8 nor UTF-16 with a byte-order mark, nests too deep, or expands aliases past the budget)",
        fix: None,
        help: "fix the YAML at the position shown; Helm would refuse this file too",
        "Helm reads values files with go-yaml. A file that does not parse stops `helm install` and \
`helm upgrade` before anything is rendered. cgpu-lint also refuses, as syntax errors, input that \
is neither UTF-8 nor UTF-16 with a byte-order mark (which go-yaml decodes), collections nested deeper than 256 levels, and aliases whose expansion would create \
more than 100,000 nodes (a \"billion laughs\" document)."),
    HelmVersionsDiffer: ("helm-versions-differ", Warning, Values,
        "a multi-document values file: Helm 3 reads only its first document, Helm 4 merges them all",
        fix: None,
        help: "keep one document per values file (or pin the Helm version with --helm 3|4 to check as that Helm reads it)",
        "Helm 3.18 reads a values file with `yaml.Unmarshal`, which stops after the first YAML \
document (`pkg/cli/values/options.go`); Helm 4.2 splits the file on `---` lines and merges every \
document (`pkg/chart/v2/loader.LoadValues`). The same file therefore installs different values \
with the two versions; cgpu-lint checks it as both read it and reports this warning."),
    DuplicateKey: ("duplicate-key", Error, Values,
        "a key appears twice in one mapping",
        fix: None,
        help: "delete one of the two entries; Helm silently keeps the last one",
        "go-yaml v2, which Helm uses, accepts a mapping with the same key twice and keeps the last \
value; strict YAML parsers (and most editors' schema tools) reject the file. Either way the first \
value is dead text that a reviewer may take for the real setting. The finding names both lines."),
    CgpuMissing: ("cgpu-missing", Info, Values,
        "no `cgpu` key: the file is not an ack-ai-installer values file and is skipped",
        fix: None,
        help: "add a `cgpu:` block, or ignore this file; with --require-cgpu this is an error",
        "A file without a top-level `cgpu` key (and without a cgpu-installer DaemonSet) is not \
something cgpu-lint knows how to check, so it is skipped. Under `--require-cgpu` the finding is \
an error, for repositories where every values file must configure cGPU."),
    ValuesFromUnchecked: ("values-from-unchecked", Info, Values,
        "a Flux HelmRelease `valuesFrom` entry whose ConfigMap or Secret is not among the inputs: its values are not checked",
        fix: None,
        help: "name the file that holds the ConfigMap or Secret as an input too (or put it in the HelmRelease's file) so it is checked",
        "Flux's helm-controller merges each `spec.valuesFrom` entry in order, then `spec.values` \
over them (fluxcd.io, Helm Releases, values references). A ConfigMap or Secret that is not in the \
same file as the HelmRelease lives in the cluster, not in the repository, so cgpu-lint cannot \
check its `cgpu:` keys: every key that `spec.values` does not set comes from it (with \
`targetPath`, that one value). An `optional: true` entry is skipped by Flux when the object or \
key does not exist. The finding names the kind, name and valuesKey."),
    ValuesNotRead: ("values-not-read", Info, Values,
        "values a GitOps tool hands the chart that cgpu-lint does not read (a value file it cannot find, a templated field), or that the tool itself ignores (an Argo CD `values` string beside `valuesObject`)",
        fix: None,
        help: "check those values another way (name the file as an input), or delete what the tool ignores",
        "Argo CD, helmfile, kustomize and ApplicationSets can take values from places a file in the \
repository does not hold: a `valueFiles` entry of another repository, an ApplicationSet field \
written as `{{…}}` that its generator fills in. cgpu-lint says which ones it did not read instead \
of staying silent. Argo CD passes `valuesObject` when it is set and ignores the `values` string \
beside it (argo-cd `ApplicationSourceHelm.ValuesYAML`), so settings in that string are dead text."),
    ValuesFileMissing: ("values-file-missing", Error, Values,
        "a helmfile release names a values file that does not exist (helmfile stops with an error)",
        fix: None,
        help: "create the file, fix the path (relative to the helmfile), or set `missingFileHandler: Warn`",
        "helmfile reads each string entry of a release's `values:` list as a file relative to the \
helmfile, and with the default `missingFileHandler: Error` it stops (`values file matching … does \
not exist in …`) before Helm runs. cgpu-lint reports it at the entry, with helmfile's message."),
    AppsetGeneratorFails: ("appset-generator-fails", Error, Values,
        "an ApplicationSet's list generator refuses an element (a value that is not a string, without goTemplate) or its template does not render: Argo CD makes none of its Applications",
        fix: None,
        help: "quote the element's value (`policy: \"2\"`) or set `goTemplate: true`; close every `{{`",
        "Argo CD's applicationset controller renders each element of a `list` generator into the \
template. Without `goTemplate`, every value of an element must be a string, and `values:` a \
mapping of strings (argo-cd `applicationset/generators/list.go`: \"error parsing value as \
string\"); a `{{` that no `}}` closes makes the template fail (\"Cannot find end tag\", with \
`goTemplate` \"unclosed action\"), and so does a missing key under `goTemplateOptions: \
[missingkey=error]`. Any such error stops the whole ApplicationSet: none of its Applications is \
generated or updated, so nothing is deployed from it until it is fixed. cgpu-lint reports it at \
the value or the template string, naming the element, and checks none of the ApplicationSet's \
Applications until then."),
    NotAMapping: ("not-a-mapping", Error, Values,
        "`cgpu` (or `nodeSelector` where a map is needed) is not a mapping",
        fix: None,
        help: "`cgpu` must be a mapping of settings such as `policy: 1`",
        "The chart reads `.Values.cgpu.enabled`, `.Values.cgpu.policy` and so on. When `cgpu` is a \
string, a list or null, the template fails to render (nil pointer evaluating ...) or, for null in \
an override file, Helm deletes the chart's whole default block."),
    UnknownKey: ("unknown-key", Warning, Values,
        "a key that the cgpu block does not have; names the closest known key",
        fix: unsafe_fix("rename the key when exactly one known key is close and that key is not set already",
            "the chart ignores the misspelt key, so the rename makes its value live: `polcy: 4` renders POLICY \"1\" (the chart default) before and \"4\" after, `nodeSelecter` → `nodeSelector` adds labels the installer selects nodes by (Helm 3.18 and 4.2 through charts-fixtures/ack-ai-installer)"),
        help: "the chart ignores unknown keys, so this setting has no effect",
        "The cgpu block has exactly these keys: enabled, image, tag, financeCloudImageTag, \
imagePullPolicy, policy, nodeSelector, checkRegions. Helm passes any other key to the templates \
unread, so a typo such as `polcy: 2` silently leaves the chart default policy (1) in force."),
    Yaml11Scalar: ("yaml11-scalar", Warning, Values,
        "a plain scalar that YAML 1.1 (Helm) and YAML 1.2 read differently (`yes`, `On`, `n`, `1_000`), or an integer with a leading zero",
        fix: safe("rewrite the scalar to the form Helm reads (`yes` → `true`, `01` → `1`)",
            "it writes the value Helm already reads, and only where that reading has the key's type: the render is byte-identical (Helm 3.18 and 4.2)"),
        help: "write the value the way Helm reads it, so every tool agrees",
        "Helm types plain scalars with YAML 1.1 rules (go-yaml v2): `yes`, `on`, `y` and their \
capitalised forms are booleans, `01` is octal, `1_000` is 1000. Editors, linters and most other \
tools use YAML 1.2, where those are strings or decimal numbers. cgpu-lint types every value as \
Helm does and warns where another reader would disagree."),
    StringBoolean: ("string-boolean", Error, Values,
        "`enabled` or `checkRegions` is a string such as \"false\"",
        fix: depends("unquote a true/false-like string to a boolean",
            "safe for a true-like string in `enabled` (the chart's `if` takes every non-empty string as true, so the render is unchanged) and for exactly \"true\"; unsafe otherwise: `enabled: \"false\"` renders the installer DaemonSets and `false` removes them at the next upgrade; `checkRegions` is quoted into the chart's ConfigMap (\"yes\" renders `yes`, `true` renders `true`) and the public chart most plausibly gates the installer on it"),
        help: "write an unquoted boolean: true or false",
        "A Go template tests `{{ if .Values.cgpu.enabled }}` for truthiness, and any non-empty \
string is true. A quoted \"false\" therefore ENABLES the installer. The value must be a real \
boolean."),
    WrongType: ("wrong-type", Error, Values,
        "a value of the wrong type (the JSON Schema decides)",
        fix: None,
        help: "see `cgpu-lint schema` for the type of each key",
        "Each cgpu key has one type in the values schema (`cgpu-lint schema`). A value of another \
type renders into the DaemonSet in a form the API server or the installer does not accept. Null \
is also reported: in a values file it deletes the chart's default for that key."),
    PolicyNotInteger: ("policy-not-integer", Error, Values,
        "`policy` is a float or a non-numeric string",
        fix: unsafe_fix("replace a documented policy name (fair-share, preemptive, weighted, fixed, soft, native) by its number",
            "`policy: preemptive` renders POLICY \"preemptive\", a string the API server accepts; the number renders POLICY \"1\": a policy change on the nodes"),
        help: "policy is a number: 0 fair share, 1 preemptive, 2 weight-based, 3 fixed, 4 soft, 5 native",
        concat!("The chart renders `policy` into the installer's POLICY environment variable, which cGPU \
reads as an integer ", policy_range_literal!(), ". A float such as 1.5 or a name such as `preemptive` is not a policy.")),
    PolicyWholeFloat: ("policy-whole-float", Warning, Values,
        "`policy` is a whole number written as a float (`3.0`, `3.`, `3e0`)",
        fix: safe("rewrite it as the integer (`3.0` → `3`)",
            "Helm holds every number as a float64, so `3.0` and `3` both render POLICY \"3\" (byte-identical with Helm 3.18 and 4.2); `-0.0`, which renders \"-0\", is not rewritten"),
        help: "write the policy as an integer",
        "Helm reads every number in a values file as a float64 (sigs.k8s.io/yaml converts YAML to \
JSON and back), so `policy: 3.0` renders as POLICY \"3\" exactly like `policy: 3`: the chart works. \
The float spelling still misleads a reader and fails a schema that asks for an integer, so \
cgpu-lint warns and rewrites it. A fraction such as 1.5 is `policy-not-integer`."),
    PolicyOutOfRange: ("policy-out-of-range", Error, Values,
        concat!("`policy` is an integer outside ", policy_range_literal!()),
        fix: None,
        help: "choose 0 fair share, 1 preemptive, 2 weight-based, 3 fixed, 4 soft or 5 native",
        "cGPU knows six scheduling policies, 0 to 5 (ACK: Configure a computing power allocation \
policy for GPU sharing). There is no safe guess for any other number."),
    PolicyQuoted: ("policy-quoted", Info, Values,
        "`policy: \"1\"`: a string holding a decimal integer",
        fix: depends("unquote it",
            "safe for a decimal without a leading zero (`\"1\"` and `1` both render POLICY \"1\"); unsafe with one: `\"02\"` renders POLICY \"02\" and `2` renders \"2\""),
        help: "write the policy as a number; the chart quotes it for the DaemonSet itself",
        "The documented form is an integer (`policy: 1`). A quoted decimal works, because the chart \
renders the value into an environment variable, but it is not the documented form."),
    PolicyWeightHint: ("policy-weight-hint", Info, Values,
        "policy 2 only acts through ALIYUN_COM_GPU_SCHD_WEIGHT > 1 on workloads",
        fix: None,
        help: "set ALIYUN_COM_GPU_SCHD_WEIGHT > 1 on the GPU-sharing workloads that should get more",
        "Weight-based preemptive scheduling (policy 2) is applied automatically only when \
containers set the environment variable ALIYUN_COM_GPU_SCHD_WEIGHT to more than 1; without \
weights it behaves like preemptive scheduling."),
    DisabledWithSettings: ("disabled-with-settings", Info, Values,
        "`enabled: false` while other cgpu keys are set",
        fix: None,
        help: "the other settings take effect only when enabled is true",
        "With `enabled: false` the chart renders no installer, so the policy, tag and other keys \
in the same block do nothing. That is fine for a staged change, but often a leftover."),
    ImageReference: ("image-reference", Error, Values,
        "a registry host, `:tag` or `@digest` inside `image`",
        fix: unsafe_fix("split `image` into the repository path and `tag` when `tag` is absent or `latest`",
            "the rendered image changes: `image: acs/cgpu-installer:v1.5.10` renders `…/acs/cgpu-installer:v1.5.10:v1.5.3-8d3fc1b-aliyun`, which the API server accepts (only the kubelet fails to pull it); after the split the DaemonSets get `…/acs/cgpu-installer:v1.5.10`, a new image at the next upgrade"),
        help: "`image` is the repository path only (acs/cgpu-installer); the tag goes in `tag`",
        "The chart builds the image reference from the region's registry, `image` and `tag`. A \
host or tag inside `image` produces a reference with two hosts or two tags, which no registry \
serves."),
    ImageName: ("image-name", Warning, Values,
        "`image` is not `acs/cgpu-installer` (a mirror?)",
        fix: None,
        help: "use acs/cgpu-installer unless you mirror the image on purpose",
        "ACK publishes the installer as acs/cgpu-installer in its regional registries. Another path \
is usually a private mirror, which then has to be kept in step with ACK's releases."),
    TagInvalid: ("tag-invalid", Error, Values,
        "a tag that is empty, `latest`, or not `v?MAJOR.MINOR.PATCH[-suffix]`",
        fix: None,
        help: concat!("use a released tag of ACK's form, v<version>-<sha>-aliyun, with cGPU ", recommended_version!(), " or later"),
        "cGPU tags look like v1.5.3-8d3fc1b-aliyun (standard) or v1.0.7-fin (finance cloud). \
`latest`, an empty tag or another shape cannot be checked against the minimum version, and \
`latest` changes under you."),
    TagTooOld: ("tag-too-old", Error, Values,
        concat!("the tag's version core is below ", min_policy_literal!(), ": the policy setting is unsupported"),
        fix: None,
        help: concat!("upgrade to cGPU ", recommended_version!(), " or later (at least ", min_policy_literal!(), " for policies)"),
        concat!("Configurable scheduling policies need cGPU ", min_policy_literal!(), " or later (ACK docs). Only the version \
core counts: one leading `v` is stripped and the suffix (-8d3fc1b-aliyun, -fin) is a build \
flavour, not a SemVer pre-release, so v", min_policy_literal!(), "-abc1234-aliyun IS ", min_policy_literal!(), " and passes.")),
    TagKnownDeadlock: ("tag-known-deadlock", Warning, Values,
        concat!("the tag's version core is ", last_deadlock_literal!(), " or lower: known kernel-driver deadlock"),
        fix: None,
        help: concat!("upgrade to cGPU ", recommended_version!(), " or later"),
        concat!("The cGPU FAQ reports a kernel-driver deadlock (kernel panic) in cGPU ", last_deadlock_literal!(), " and earlier and \
recommends ", recommended_version!(), " or later. This fires on the chart's documented default tag v1.5.3, on purpose. \
financeCloudImageTag is checked only when --region names a finance region.")),
    TagNewerThanData: ("tag-newer-than-data", Info, Values,
        "the tag's cGPU version is newer than the compatibility data",
        fix: None,
        help: "nothing to do; `cgpu-lint compat` shows the data and its date",
        "The compatibility data (src/cgpu/compat.toml, `cgpu-lint compat`) ends at the newest cGPU \
version its sources list (`cgpu-lint compat` prints it and the date of the data). A newer tag is \
not an error: the \
driver, OS, instance-family and known-issue checks know nothing about it and say nothing, and \
this note says why."),
    TagFlavour: ("tag-flavour", Warning, Values,
        "a `-fin` build in `tag`, or a non-`-fin` build in `financeCloudImageTag`",
        fix: None,
        help: "finance-cloud builds (-fin) belong in financeCloudImageTag, standard builds in tag",
        "The chart deploys financeCloudImageTag in finance-cloud regions and tag everywhere else. A \
finance build in the wrong key is pulled where it was not built for. On the installer DaemonSet \
the rule needs --region (or --nodes): a -fin image tag outside a finance region is reported."),
    TagForm: ("tag-form", Warning, Values,
        "a tag that is not of ACK's form, v<version>-<sha>-aliyun or v<version>-fin (`1.5.10`, `v1.5.10`)",
        fix: None,
        help: concat!("use the tag ACK publishes, e.g. v", recommended_version!(), "-<sha>-aliyun (the image's tag list in the region's registry names it)"),
        "Every cgpu-installer image ACK publishes is tagged `v` + the cGPU version + the short git \
SHA of the build + `-aliyun` (v1.5.3-8d3fc1b-aliyun), or `-fin` for the finance-cloud build \
(v1.0.7-fin); other ACK images follow the same convention. A tag such as `1.5.10` or `v1.5.10` is \
none of them: a typo, or a mirror that tags its own builds, so whether the image holds the cGPU \
version the tag names cannot be told from the tag. A warning, as a mirror may be on purpose."),
    PullPolicy: ("pull-policy", Error, Values,
        "imagePullPolicy is not exactly Always, IfNotPresent or Never",
        fix: safe("correct the case when it matches ignoring case",
            "the API server refuses every imagePullPolicy but Always, IfNotPresent and Never (supportedPullPolicies), so the original never installs; the fix writes the one it matches"),
        help: "use Always, IfNotPresent or Never (case matters)",
        "Kubernetes accepts exactly Always, IfNotPresent and Never (supportedPullPolicies in the \
core validation); `ifNotPresent` is rejected by the API server."),
    NodeSelectorType: ("node-selector-type", Error, Values,
        "nodeSelector is not a map (a list of `k=v`, a string)",
        fix: safe("turn a list of `k=v` strings into a map",
            "the chart cannot render a list (its `merge` needs a map: Helm refuses the values) and an empty list renders like `{}`; on a DaemonSet the API server refuses a list; the map is what the list meant"),
        help: "write nodeSelector as a map: `ack.node.gpu.schedule: cgpu`",
        "A Pod's nodeSelector is a map from label key to label value. A list or a string renders \
into a DaemonSet the API server rejects."),
    LabelKey: ("label-key", Error, Values,
        "a nodeSelector key that breaks Kubernetes label-key syntax",
        fix: None,
        help: "a label key is [prefix/]name: prefix a lower-case DNS subdomain (≤ 253), name ≤ 63 characters of [A-Za-z0-9-_.] starting and ending alphanumeric",
        "nodeSelector keys are validated as label keys (ValidateLabels in the Kubernetes core \
validation): an optional prefix that is a lower-case DNS-1123 subdomain of at most 253 \
characters, a `/`, and a name of at most 63 characters matching \
([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]."),
    LabelValue: ("label-value", Error, Values,
        "a nodeSelector value that breaks label-value syntax",
        fix: None,
        help: "a label value is at most 63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric, or empty",
        "Label values are at most 63 characters, may be empty, and otherwise match \
([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]: no spaces, no slashes."),
    LabelValueType: ("label-value-type", Error, Values,
        "a nodeSelector value that is a bool, number or null instead of a string",
        fix: safe("write the string Helm reads, quoted (`yes` → `\"true\"`, `2` → `\"2\"`)",
            "nodeSelector is map[string]string: the API server refuses a bool or a number, so the original never installs; the fix writes the value as Helm reads it, which a chart that quotes it renders alike"),
        help: "quote the value so it stays a string",
        "nodeSelector is map[string]string. `dedicated: true` or `tier: 2` (and YAML 1.1 words such \
as `no`) are not strings, and the API server rejects them (cannot unmarshal bool into ... of type \
string)."),
    ScheduleLabel: ("schedule-label", Warning, Values,
        "nodeSelector sets `ack.node.gpu.schedule` to anything but `cgpu`",
        fix: None,
        help: "the cgpu-installer runs on nodes labelled ack.node.gpu.schedule=cgpu",
        "ack.node.gpu.schedule=cgpu marks the nodes where cGPU shares GPUs with isolated memory. \
Other values (core_mem, share, default, topology, mps) belong to other components; selecting \
them keeps the installer off the nodes it is meant for."),
    // --- cgpu-installer DaemonSet ---
    InstallerNamespace: ("installer-namespace", Warning, Installer,
        "the installer DaemonSet is in a namespace other than kube-system",
        fix: None,
        help: "deploy cgpu-installer in kube-system",
        "ACK deploys cgpu-installer and cgpu-core-installer in kube-system, where the procedures \
(`kubectl edit daemonset cgpu-installer -n kube-system`) and the priority class \
system-node-critical expect them. A copy elsewhere is either a leftover or a second installer \
fighting the first over the same nodes. A manifest without a namespace (a rendered stream, whose \
namespace comes from `helm -n`) is not reported."),
    InstallerPolicyMissing: ("installer-policy-missing", Warning, Installer,
        "no POLICY env on the installer container",
        fix: None,
        help: "add env POLICY with the cluster's policy as a quoted string, e.g. \"1\"",
        "The scheduling policy is the POLICY environment variable of the cgpu-installer \
DaemonSet. Without it the installer's built-in default applies, which is not documented."),
    InstallerPolicyUnquoted: ("installer-policy-unquoted", Error, Installer,
        "POLICY `value: 1`: EnvVar.value must be a string",
        fix: safe("quote it",
            "the API server refuses a number in EnvVar.value (kubernetes#82296), so the original never installs; the quoted number is the same POLICY"),
        help: "quote the value: `value: \"1\"`",
        "EnvVar.value is a string; the API server rejects a number with \"cannot unmarshal number \
into Go struct field EnvVar...value of type string\" (kubernetes#82296)."),
    InstallerPolicyInvalid: ("installer-policy-invalid", Error, Installer,
        "POLICY is not one of \"0\" … \"5\"",
        fix: unsafe_fix(concat!("trim spaces or a leading zero when the number is then ", policy_range_literal!()),
            "the API server takes any string in EnvVar.value, so `\" 1\"` → `\"1\"` changes the POLICY the installer pods get: they restart with the new value"),
        help: "POLICY must be \"0\", \"1\", \"2\", \"3\", \"4\" or \"5\"",
        concat!("cGPU reads POLICY as one digit ", policy_range_literal!(), ". Spaces, a leading zero or another number are not a \
policy.")),
    InstallerPolicyDuplicate: ("installer-policy-duplicate", Error, Installer,
        "POLICY is set twice",
        fix: None,
        help: "keep one POLICY entry",
        "With two POLICY entries the kubelet uses the last one; a reviewer reading the first is \
misled, and a strategic-merge patch may update the wrong one."),
    InstallerPolicyValuefrom: ("installer-policy-valuefrom", Warning, Installer,
        "POLICY comes from valueFrom and cannot be checked",
        fix: None,
        help: "set POLICY with value: so it can be reviewed",
        "A POLICY read from a ConfigMap or Secret cannot be checked statically, and changing that \
object changes the policy without a rollout of the installer."),
    InstallerImageTag: ("installer-image-tag", Error, Installer,
        "the installer image has no tag, or `latest`",
        fix: None,
        help: "pin the image to a released cGPU tag",
        "Without a tag the image is `latest`: the cGPU version (and whether policies are supported) \
cannot be known, and it changes under the nodes. The tag rules of the values block apply to the \
image tag as well."),
    RegistryPublicEndpoint: ("registry-public-endpoint", Warning, Installer,
        "the image is pulled from a public registry endpoint instead of the `-vpc` one",
        fix: unsafe_fix("switch to the -vpc host of the same region",
            "the image reference changes (the same image from another endpoint): the DaemonSet's pod template changes and every installer pod restarts"),
        help: "use registry-vpc.<region>.aliyuncs.com inside the cluster's VPC",
        "ACK system images are pulled from registry-vpc.<region>.aliyuncs.com (or \
registry-<region>-vpc.ack.aliyuncs.com) inside the region's VPC; the public endpoint costs \
internet traffic and fails on nodes without public access."),
    RegistryHost: ("registry-host", Warning, Installer,
        "the image host is neither ACK registry form (a mirror?)",
        fix: None,
        help: "use registry-vpc.<region>.aliyuncs.com unless you mirror on purpose",
        "The installer image normally comes from registry-vpc.<region>.aliyuncs.com or \
registry-<region>-vpc.ack.aliyuncs.com."),
    RegionInvalid: ("region-invalid", Error, Installer,
        "the region in the registry host is not a region id",
        fix: None,
        help: "a region id looks like cn-hangzhou or ap-southeast-1",
        "Region ids are lower-case words joined by hyphens (cn-hangzhou, ap-southeast-1, \
cn-shanghai-finance-1). An underscore or upper case means the host does not exist."),
    RegionUnknown: ("region-unknown", Warning, Installer,
        "a well-formed region id that is not in the known list",
        fix: None,
        help: "check the region id; the known list may be stale",
        "cgpu-lint knows the Alibaba Cloud region ids of its release. Lists go stale, so an unknown \
but well-formed id is only a warning."),
    RegionMismatch: ("region-mismatch", Error, Installer,
        "the image's region differs from --region or from the nodes' region",
        fix: unsafe_fix("rewrite the region when the target region is known",
            "the image reference changes to another region's registry: the installer pods restart and pull from there"),
        help: "pull from the registry of the cluster's own region",
        "A -vpc registry endpoint is reachable only from its own region's VPC, so an image from \
another region fails to pull on every node."),
    InstallerSelector: ("installer-selector", Warning, Installer,
        "the installer's nodeSelector has neither ack.node.gpu.schedule: cgpu nor legacy cgpu: \"true\"",
        fix: None,
        help: "select ack.node.gpu.schedule: cgpu",
        "The installer must run exactly on the GPU-sharing nodes: those labelled \
ack.node.gpu.schedule=cgpu (or, on old dedicated clusters, cgpu=true)."),
    WorkloadEnvOnInstaller: ("workload-env-on-installer", Warning, Installer,
        "ALIYUN_COM_GPU_* or CGPU_DISABLE set on the installer, where they do nothing",
        fix: None,
        help: "set these variables on the GPU workloads instead",
        "ALIYUN_COM_GPU_MEM_*, ALIYUN_COM_GPU_SCHD_WEIGHT, CGPU_DISABLE and friends are read by \
cGPU inside workload containers. On the installer they have no effect."),
    ClusterPolicyMismatch: ("cluster-policy-mismatch", Error, Installer,
        "cgpu-installer and cgpu-core-installer (or inputs given as one cluster) use different policies",
        fix: None,
        help: "set one policy for every GPU-sharing installer of the cluster",
        "All GPU-sharing nodes of a cluster must use the same policy (ACK docs). The cgpu and \
core_mem installers, and every file given with --same-cluster, must agree."),
    RolloutIncomplete: ("rollout-incomplete", Info, Installer,
        "live status: numberReady differs from desiredNumberScheduled",
        fix: None,
        help: "wait for the rollout, or look at the installer pods that are not ready",
        "A live DaemonSet whose ready count is below the desired count has nodes where the \
installer has not (yet) run; a policy change there is not in effect."),
    PriorityClass: ("priority-class", Info, Installer,
        "no priorityClassName: system-node-critical",
        fix: None,
        help: "set priorityClassName: system-node-critical",
        "ACK recommends system-node-critical for the GPU-sharing DaemonSets so that they are not \
evicted under resource pressure."),
    PolicyDrift: ("policy-drift", Info, Installer,
        "managedFields show POLICY last written by kubectl edit, not by Helm",
        fix: None,
        help: "put the policy into the Helm values so the next upgrade does not undo it",
        "When POLICY was last written by `kubectl edit`, the Helm release and the cluster disagree; \
the next `helm upgrade` sets POLICY back to the values' policy, which is a policy change that \
needs node reboots."),
    UpgradeDefaultFallback: ("upgrade-default-fallback", Error, Installer,
        "checklist: a cgpu key the desired values leave out falls back to a chart default that differs from the live value",
        fix: None,
        help: "pass --reuse-values (to `helm upgrade` and to `cgpu-lint checklist`), or pin the key in the desired values",
        "`helm upgrade -f VALUES` without `--reuse-values` renders the chart's defaults plus VALUES: \
every cgpu key the file leaves out takes the chart's default, not the value deployed now. A \
desired file holding only `cgpu.policy: 2` on a cluster running cGPU 1.5.10 therefore also \
installs the chart's default tag (1.5.3, which has the known deadlock). `checklist` reads the \
desired values as the upgrade applies them and blocks the plan when a key falls back to a default \
that differs from what runs (the tag, the policy, the image, imagePullPolicy, the nodeSelector). \
Fix: `--reuse-values` (the deployed values stay under the file, as `helm upgrade --reuse-values` \
does), or set the key in the file (`tag: v1.5.10-…`)."),
    UpgradeDowngrade: ("upgrade-downgrade", Error, Installer,
        "checklist: the desired values take cGPU to a lower version than the live one",
        fix: None,
        help: "pin the live tag in the desired values, or pass --allow-downgrade when the downgrade is intended",
        "A lower cGPU version than the one the nodes run is rarely what a policy change means to do \
(it is usually a tag that fell back to the chart default), and older versions carry known \
problems (the kernel-driver deadlock up to 1.5.7, a narrower driver range before 1.5.3). \
`checklist` compares the version cores of the live and desired tags and blocks a downgrade unless \
`--allow-downgrade` is given; the target version's own findings (tag-known-deadlock, tag-too-old) \
are reported as `check` reports them."),
    // --- the tool itself ---
    UnusedIgnore: ("unused-ignore", Info, Tool,
        "a `# cgpu-lint: ignore[...]` comment that suppresses nothing",
        fix: None,
        help: "delete the comment, or correct the rule names in it",
        "An inline suppression (`# cgpu-lint: ignore[rule-a, rule-b]`) applies to findings that \
start on its own line or on the line below. When none of the named rules reports there (the value \
was fixed, the rule name is misspelt, or the comment drifted away from its line), the comment only \
hides future findings by accident, so it is reported. Rule names that are not in the catalogue are \
named in the message."),
    SuppressionExpired: ("suppression-expired", Warning, Tool,
        "an inline ignore or a baseline entry past its `until` date",
        fix: None,
        help: "fix what it hid, or give it a later date if the exception still holds",
        "`# cgpu-lint: ignore[rule] until=2027-01-31` and a baseline entry with `\"until\": \
\"2027-01-31\"` hide findings up to and including that day (UTC), as trivy's `.trivyignore` \
entries expire with `exp:`. From the day after, they hide nothing: the findings they hid are \
reported again, and so is the expired suppression itself, so that an exception granted for a \
quarter does not silently become permanent."),
    BaselineUnmatched: ("baseline-unmatched", Info, Tool,
        "a baseline entry that matches no finding any more",
        fix: None,
        help: "drop it with `cgpu-lint baseline --prune`",
        "`cgpu-lint baseline` records the findings of today (file, document, JSON pointer, rule \
and a hash of the offending text, never the line), and `check` then reports only the findings \
that are not in it. An entry whose file was checked but which matches no finding (the value \
was fixed or changed, the key moved) only hides a future finding by accident, so it is reported \
at its line in the baseline file, like an unused inline ignore; `baseline --prune` rewrites the \
file without such entries."),
    IoError: ("io-error", Error, Tool,
        "an input that could not be read: missing, unreadable, a directory where a file is needed, or over --max-file-size",
        fix: None,
        help: "check the path and its permissions, or raise --max-file-size",
        "When cgpu-lint cannot read an input it cannot say anything about it, so the run ends with \
exit status 2 (the tool could not do its job), not 0 or 1. The reason is also a finding on that \
file, in every output format (an `io-error` entry in JSON, a SARIF result, a JUnit failure, a \
GitHub annotation), so that a CI report never looks clean when a file was not checked. This \
finding is reported even under --select/--ignore and inline suppressions, which cannot apply to \
a file that was not read."),
    // --- nodes ---
    VirtualNodeCgpu: ("virtual-node-cgpu", Warning, Nodes,
        "a cgpu or core_mem label on a virtual (non-ECS) node",
        fix: None,
        help: "remove the label: memory isolation works only on ECS nodes",
        "ACK: memory isolation only works on ECS nodes; do not label virtual nodes with cgpu or \
core_mem. The installer cannot run there."),
    LegacyCgpuLabel: ("legacy-cgpu-label", Warning, Nodes,
        "a node with legacy cgpu=true but no ack.node.gpu.schedule",
        fix: None,
        help: "label the node ack.node.gpu.schedule=cgpu",
        "cgpu=true is the old dedicated-cluster label; ACK Pro selects ack.node.gpu.schedule=cgpu. \
Such a node may still run cGPU and must use the cluster's policy."),
    DriverIncompatible: ("driver-incompatible", Error, Nodes,
        "the cGPU version cannot run the node's NVIDIA driver",
        fix: None,
        help: "upgrade cGPU (1.5.3 or later supports drivers up to 575) or pin an older driver",
        "The cGPU FAQ's compatibility matrix says which NVIDIA driver series each cGPU range runs, \
some series only up to a last version; its rows are in the compatibility data (listed below, and \
by `cgpu-lint compat`). A node whose driver (ACK's ack.aliyun.com/nvidia-driver-version label, \
else the labels of NVIDIA's GPU Feature Discovery: nvidia.com/cuda.driver-version.full, or \
nvidia.com/cuda.driver.major, .minor and .rev) the matrix marks unsupported for the cGPU version of the installer that selects it is an error; a \
driver series or a cGPU version the matrix does not cover (one newer than the data) is not \
judged."),
    NodeOsUnsupported: ("node-os-unsupported", Error, Nodes,
        "the node's operating system (status.nodeInfo.osImage) is newer than the support of its cGPU version",
        fix: None,
        help: "upgrade cGPU to the version the message names (see `cgpu-lint compat`)",
        "ACK's \"Manage the shared GPU scheduling component\" page tells operators to upgrade cGPU \
when a node's GPU driver or operating system is incompatible with the installed version. The \
ack-cgpu release notes date the support of each operating system: Ubuntu 22.04 from cGPU 1.5.9 \
(ack-cgpu 1.5.2, 2024-11-05). A node whose status.nodeInfo.osImage names an operating system that \
the cGPU version of the installer selecting it predates is an error; the message names the first \
version that supports it. The entries are in the compatibility data (below, and `cgpu-lint \
compat`)."),
    NodeCgroupV2: ("node-cgroup-v2", Warning, Nodes,
        "the node's distribution uses cgroup v2 by default, which its cGPU version predates",
        fix: None,
        help: "upgrade cGPU to 1.5.9 or later, or boot the node with cgroup v1",
        "cGPU supports cgroup v2 from 1.5.9 (ack-cgpu 1.5.2, 2024-11-05). No field of a Node object \
shows the cgroup version; the distribution in status.nodeInfo.osImage is the clue: Kubernetes' \
\"About cgroup v2\" lists the distributions that use cgroup v2 by default (Ubuntu from 21.10, \
Debian from 11, Fedora from 31, RHEL from 9), and its Requirements need Linux 5.8 or later, so a \
node whose status.nodeInfo.kernelVersion is older runs cgroup v1 and is not reported. A node so \
booted with a cGPU version before 1.5.9 is a warning (it may have been booted with cgroup v1). Not \
reported where node-os-unsupported already is, nor where node-kubelet-cgroup-v2 is (a kubelet of \
Kubernetes 1.35 or later runs only on cgroup v2, which settles the guess)."),
    NodeFamilyUnsupported: ("node-family-unsupported", Error, Nodes,
        "the node's ECS instance family is one its cGPU version does not support",
        fix: None,
        help: "upgrade cGPU to the version the message names, or move the workloads to a supported family",
        "The instance family is read from the node.kubernetes.io/instance-type label \
(`ecs.gn7i-c8g1.2xlarge` → gn7i). The ack-cgpu release notes date the support of some families \
(ebmgn8ia from 1.5.9, the gn8X families from 1.5.7): an older cGPU version on such a node is an \
error naming the first version that supports it. The cGPU FAQ lists the families each cGPU range \
supports; for 1.5.19–1.5.20 a family outside its list is a warning. Only that row of the FAQ's \
table is in the data, so no family is judged for an older version."),
    NodeKnownIssue: ("node-known-issue", Warning, Nodes,
        "a known issue of the node's cGPU version applies to this node (its driver or OS)",
        fix: None,
        help: "upgrade cGPU (or the component) to the version the message names",
        "Known issues that depend on the node: cGPU before 1.5.12 with NVIDIA driver 535 or later \
(GPU memory isolation fails for some CUDA APIs; fixed in 1.5.12, ack-cgpu 1.6.0, 2025-07-24: the \
FAQ's matrix still lists 535+ as supported from 1.5.3, and both are true), cGPU up to 1.5.18 on \
ContainerOS (the first pod may fail to start; fixed by ack-ai-installer 1.12.6), and cGPU 1.5.3–1.5.6 \
with driver 550 or later (the FAQ's matrix supports it; the release notes add 550+ only in 1.5.7). \
The deadlock up to 1.5.7 is `tag-known-deadlock`, on the tag itself."),
    PodsPerGpu: ("pods-per-gpu", Warning, Nodes,
        "more pods that request a cGPU share resource run on one node than cGPU allows per GPU",
        fix: None,
        help: "spread the pods over more GPUs or nodes, or lower the replicas",
        "ACK's \"Manage the shared GPU scheduling component\" page: at most 20 pods share one GPU \
under cGPU. Where the inputs hold Pods (kubectl get pods -o yaml: a List of Pods, or single Pods), \
the pods with a spec.nodeName whose containers request or limit aliyun.com/gpu-mem or \
aliyun.com/gpu-core.percentage, and whose phase is not Succeeded or Failed, are counted per node. \
Where the node is among the inputs with status.allocatable aliyun.com/gpu-count (else \
nvidia.com/gpu), the limit is 20 times its GPU count; otherwise the node is taken to have one GPU \
and the message says so. The warning is on the first pod past the limit."),
    HamiDevicePluginConflict: ("hami-device-plugin-conflict", Error, Nodes,
        "HAMi's device plugin and ACK's GPU device plugin both select the node",
        fix: None,
        help: "label the node ack.node.gpu.schedule=disabled (HAMi's ACK guide), or uninstall the ack-nvidia-device-plugin add-on",
        "HAMi's ACK guide: ACK's ack-nvidia-device-plugin runs on nodes labelled \
ack.node.gpu.schedule=default and registers nvidia.com/gpu through the same kubelet socket as \
HAMi's device plugin (which selects gpu=on), so only one of them can be active on a node. \"If \
ACK's Device Plugin runs on a node alongside HAMi, the last plugin to register takes over \
nvidia.com/gpu ... New Pods start without errors, but HAMi's limits no longer apply.\" The guide \
labels HAMi's nodes ack.node.gpu.schedule=disabled and gpu=on. A node that HAMi's plugin selects \
(gpu=on, or the selector of a hami-device-plugin DaemonSet among the inputs) and ACK's plugin \
selects too (ack.node.gpu.schedule=default, or the selector of an ack-nvidia-device-plugin \
DaemonSet among the inputs) is an error. A node that HAMi selects while it carries one of ACK's \
GPU-sharing labels (cgpu, core_mem, share...) is a warning: the guide was verified without ACK's \
shared GPU scheduling components."),
    NodeKubeletCgroupV2: ("node-kubelet-cgroup-v2", Error, Nodes,
        "the node's kubelet (status.nodeInfo.kubeletVersion) needs cgroup v2, which its cGPU version predates",
        fix: None,
        help: "upgrade cGPU to the version the message names before the node's Kubernetes upgrade",
        "ACK's Kubernetes 1.35 release notes: \"cgroup v1 support removed: The kubelet refuses to \
start on nodes that use cgroup v1 ... Verify that your node operating system supports cgroup v2 \
before upgrading\". cGPU supports cgroup v2 from the version the compatibility data names \
(support-cgroup-v2, ack-cgpu release notes). So a GPU-sharing node whose \
status.nodeInfo.kubeletVersion is at or past the data's release, under an older cGPU version, is \
certain breakage, not a guess from the distribution: node-cgroup-v2 is not reported there. A \
virtual node (virtual-node-cgpu) has no cgroups of its own and is not judged. \
`cgpu-lint compat --nodes FILE --kubernetes 1.35` shows which nodes an upgrade would break."),
    NodeContainerd2: ("node-containerd-2", Info, Nodes,
        "the node's kubelet is a Kubernetes release that needs containerd 2, and no source says whether cGPU supports it",
        fix: None,
        help: "test cGPU on one node of the new release before the others (ACK: upgrade one node first, verify, then the rest)",
        "ACK's Kubernetes 1.35 release notes: \"Kubernetes 1.35 is the last version to support \
containerd 1.x. Upgrade containerd to 2.x before upgrading to Kubernetes 1.36\"; ACK 1.36 ships \
containerd 2. No public source says whether cGPU supports containerd 2: a GPU-sharing node on such \
a kubelet is reported as information (unknown, not an error)."),
    NodeDriverOutdated: ("node-driver-outdated", Warning, Nodes,
        "the node's NVIDIA driver is one ACK's driver list calls incompatible with the latest operating systems",
        fix: None,
        help: "move the node pool to a driver ACK's list supports (see `cgpu-lint compat`)",
        "ACK's list of NVIDIA driver versions names the supported drivers and those \"incompatible \
with the latest operating systems. Do not use them on new nodes\"; after an OS kernel upgrade the \
node's GPU driver may be unusable. A GPU-sharing node whose driver label (ACK's, else GPU Feature \
Discovery's) is on that second list is a warning naming the list's date. A driver on neither list \
is not judged."),
    NodeFamilyNeeds: ("node-family-needs", Error, Nodes,
        "the node's ECS instance family needs a newer cGPU version (an error) or the driver ACK names for it (a warning)",
        fix: None,
        help: "upgrade cGPU to the version the message names; give the node pool the driver ACK names for the family",
        "ACK's driver list gives the gn9t and ebmgn9t families their own default driver, and the \
cGPU FAQ lists ebmgn9t only in its newest row. A GPU-sharing node of such a family (from the \
node.kubernetes.io/instance-type label) under a cGPU version before the data's `since` is an \
error; one whose driver is older than the driver the data names is a warning (it is ACK's \
default for the family, not a stated minimum)."),
    InstallerSelectsExclusiveNode: ("installer-selects-exclusive-node", Error, Nodes,
        "a cgpu-installer's nodeSelector selects a node labelled ack.node.gpu.schedule=mig or =disabled",
        fix: None,
        help: "narrow the installer's nodeSelector (ack.node.gpu.schedule: cgpu), or relabel the node if it is meant for cGPU",
        "ACK's GPU label page: `ack.node.gpu.schedule: mig` is Dynamic MIG partitioning, and a mig \
node cannot be switched to another value; on ACK 1.34 and later `ack.node.gpu.schedule: disabled` \
keeps the default device plugin off so that NVIDIA's DRA driver owns the GPUs. A cgpu-installer \
among the inputs whose nodeSelector (a legacy `cgpu: \"true\"` one, or a custom label) still \
selects such a node would install cGPU's kernel module on GPUs another component owns."),
    NodeNotConverged: ("node-not-converged", Warning, Nodes,
        "`status --cluster`: a GPU-sharing node whose loaded cGPU module does not run what its installer asks (or cannot be read)",
        fix: None,
        help: "plan the restarts with `cgpu-lint checklist --cluster`",
        "ACK: the computing power allocation policy of cGPU takes effect only after the node \
restarts (the module keeps the policy it was loaded with); a new cGPU version likewise. `cgpu-lint \
status --cluster` reads each GPU-sharing node's module through its installer pod, with the same \
command the reboot runbook uses (`/proc/cgpu_km/version` and each GPU's `/proc/cgpu_km/N/policy`), \
and compares it with the POLICY and the image's cGPU version of the installer DaemonSet that \
selects the node. A node that needs a restart, whose module is not loaded, or that cannot be read \
(no installer pod, no pods/exec permission, the deadline passed) gets this finding, on its \
metadata.name, with the reason."),
    NodePoolDriverDrift: ("node-pool-driver-drift", Info, Nodes,
        "the GPU nodes of one node pool (alibabacloud.com/nodepool-id) run different NVIDIA drivers",
        fix: None,
        help: "specify the driver version of the node pool, then replace the nodes that differ",
        "ACK's driver list: \"ACK periodically updates the default driver version. Newly created \
GPU nodes may use a different driver version than existing nodes\"; it advises specifying a \
driver per node pool. Among the nodes of the inputs, the GPU nodes (those with a driver label) of \
one node pool are compared: each node whose driver is not the pool's most common one (the newest \
of those, on a tie) is reported, naming the drivers and how many nodes run each."),
}

impl RuleId {
    /// The rule's catalogue entry.
    pub fn info(self) -> &'static Rule {
        &RULES[self as usize]
    }

    /// The kebab-case name users see and write.
    pub fn name(self) -> &'static str {
        self.info().name
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

pub fn find(name: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_in_the_order_of_their_ids() {
        for (i, r) in RULES.iter().enumerate() {
            assert_eq!(r.id as usize, i, "{}", r.name);
            assert_eq!(r.id.info().name, r.name);
        }
        assert_eq!(RuleId::TagTooOld.name(), "tag-too-old");
    }

    #[test]
    fn names_are_unique_and_kebab_case() {
        let mut seen = std::collections::HashSet::new();
        for r in RULES {
            assert!(seen.insert(r.name), "duplicate rule {}", r.name);
            assert!(
                r.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '-' || c.is_ascii_digit())
            );
        }
    }
}
