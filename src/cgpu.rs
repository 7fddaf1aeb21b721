//! The cGPU model: every fact about ack-ai-installer, the cgpu installers, the nodes they run on
//! and the cGPU versions, in one place. Rules, the checklist, `generate` and `set` import these;
//! nothing else states them.
//!
//! Sources (public pages; docs/runbook.md, "Sources each step follows", lists them too):
//! - Policies, the ≥ 1.0.6 minimum, the one-policy-per-cluster rule and the reboot:
//!   "Configure a computing power allocation policy for GPU sharing",
//!   <https://www.alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/user-guide/configure-a-computing-power-allocation-policy-for-gpu-sharing-1>
//! - Versions, the ≤ 1.5.7 deadlock and the isolation labels: the cGPU FAQ,
//!   <https://www.alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/user-guide/usage-notes-for-memory-isolation-capability-of-cgpu>
//! - The compatibility data (drivers, operating systems, cgroup v2, instance families, known
//!   issues, conflicting GPU-sharing stacks), each entry with its source and the date it was
//!   read: `src/cgpu/compat.toml`, read by [`compat`].
//! - Node labels (`ack.node.gpu.schedule`): "Enable scheduling",
//!   <https://www.alibabacloud.com/help/doc-detail/191140.html>; the legacy ack-cgpu chart's
//!   `cgpu=true` selectors: ACK "Install ack-cgpu" (mirrored in roura356a/csk@8f13e75).
//! - Registry hosts: openyurtio/openyurt yurthub `imagecustomization` filter; region ids:
//!   aliyun/terraform-provider-alicloud `alicloud/connectivity/regions.go`.
//! - Region labels: Kubernetes well-known labels (`topology.kubernetes.io/region`, which replaced
//!   the deprecated `failure-domain.beta.kubernetes.io/region`),
//!   <https://kubernetes.io/docs/reference/labels-annotations-taints/>.

use std::ops::RangeInclusive;

use semver::Version;

use crate::yaml::Scalar;

pub mod compat;

/// The DaemonSet that installs cGPU on `ack.node.gpu.schedule=cgpu` nodes (ACK Pro), and on
/// `cgpu=true` nodes in the legacy ack-cgpu chart.
pub const INSTALLER: &str = "cgpu-installer";
/// The DaemonSet for `ack.node.gpu.schedule=core_mem` nodes (ACK Pro).
pub const CORE_INSTALLER: &str = "cgpu-core-installer";
/// The DaemonSets that carry the cGPU policy.
pub const INSTALLER_NAMES: [&str; 2] = [INSTALLER, CORE_INSTALLER];

/// ACK Pro's GPU scheduling label.
pub const SCHEDULE_LABEL: &str = "ack.node.gpu.schedule";
/// `ack.node.gpu.schedule` values with cGPU isolation (the FAQ: cgpu, core_mem).
pub const ISOLATING_SCHEDULES: [&str; 2] = ["cgpu", "core_mem"];
/// The legacy ack-cgpu chart's node label, `cgpu=true`.
pub const LEGACY_LABEL: &str = "cgpu";
pub const LEGACY_VALUE: &str = "true";

/// The label ACK uses to pin a node's NVIDIA driver version.
pub const DRIVER_LABEL: &str = "ack.aliyun.com/nvidia-driver-version";

/// The driver version NVIDIA's GPU Feature Discovery (the GPU operator's node labeller) puts on a
/// node, newer releases: `nvidia.com/cuda.driver-version.full` = `550.120`.
pub const GFD_DRIVER_FULL_LABEL: &str = "nvidia.com/cuda.driver-version.full";
/// GPU Feature Discovery's driver labels of every release: major, minor and revision
/// (`535`, `104`, `12`; the revision may be empty).
pub const GFD_DRIVER_PART_LABELS: [&str; 3] = [
    "nvidia.com/cuda.driver.major",
    "nvidia.com/cuda.driver.minor",
    "nvidia.com/cuda.driver.rev",
];

/// The node's ECS instance type (`ecs.gn7i-c8g1.2xlarge`): the current well-known label first,
/// then the deprecated beta label (Kubernetes well-known labels).
pub const INSTANCE_TYPE_LABELS: [&str; 2] = [
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
];

/// The instance family of an ECS instance type: `ecs.<family>.<size>` (EGS "Instance naming
/// conventions"), the family up to its first `-` (`ecs.gn7i-c8g1.2xlarge` → `gn7i`,
/// `ecs.ebmgn7e.32xlarge` → `ebmgn7e`). `None` for a type not of that form.
pub fn instance_family(instance_type: &str) -> Option<&str> {
    let mut parts = instance_type.split('.');
    let (Some("ecs"), Some(family), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
        return None;
    };
    let family = family.split('-').next().unwrap_or(family);
    (!family.is_empty()
        && family
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()))
    .then_some(family)
}

/// HAMi's device plugin selects nodes labelled `gpu=on` (HAMi's ACK guide).
pub const HAMI_NODE_LABEL: (&str, &str) = ("gpu", "on");
/// The `ack.node.gpu.schedule` value that keeps ACK's own device plugin off a node (ACK "Schedule
/// GPUs with DRA", as HAMi's ACK guide uses it).
pub const SCHEDULE_DISABLED: &str = "disabled";
/// ACK's ack-nvidia-device-plugin runs on nodes labelled `ack.node.gpu.schedule=default` (HAMi's
/// ACK guide; ACK "Enable scheduling": `default` is exclusive GPU scheduling).
pub const SCHEDULE_DEFAULT: &str = "default";
/// The extended resources a pod requests to share a GPU under cGPU: GPU memory (domain: the
/// gpushare device plugin's `aliyun.com/gpu-mem`) and core_mem's compute share.
pub const SHARE_RESOURCES: [&str; 2] = ["aliyun.com/gpu-mem", "aliyun.com/gpu-core.percentage"];

/// A node's GPU count in `status.allocatable`: the share device plugin's `aliyun.com/gpu-count`,
/// else NVIDIA's `nvidia.com/gpu`.
pub const GPU_COUNT_RESOURCES: [&str; 2] = ["aliyun.com/gpu-count", "nvidia.com/gpu"];

/// ACK's NVIDIA device plugin DaemonSet (kube-system).
pub const ACK_DEVICE_PLUGIN: &str = "ack-nvidia-device-plugin";
/// HAMi's device plugin DaemonSet: `hami-device-plugin` for a release named `hami`,
/// `<release>-hami-device-plugin` otherwise.
pub fn is_hami_device_plugin(name: &str) -> bool {
    name == "hami-device-plugin" || name.ends_with("-hami-device-plugin")
}

/// The node's region: the current well-known label first, then the deprecated beta label that
/// older clusters (ACK 1.16 and before) carry alone.
pub const REGION_LABELS: [&str; 2] = [
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/region",
];

/// Which installer a selector belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Product {
    /// ACK Pro's ack-ai-installer: `ack.node.gpu.schedule=cgpu` (or `core_mem` for the core
    /// installer).
    AckPro,
    /// The legacy ack-cgpu chart (dedicated clusters): `cgpu=true`.
    LegacyAckCgpu,
}

/// The label an installer selects, by product and DaemonSet name.
pub fn installer_label(product: Product, name: &str) -> (&'static str, &'static str) {
    match product {
        Product::AckPro if name == CORE_INSTALLER => (SCHEDULE_LABEL, "core_mem"),
        Product::AckPro => (SCHEDULE_LABEL, "cgpu"),
        Product::LegacyAckCgpu => (LEGACY_LABEL, LEGACY_VALUE),
    }
}

/// Does a nodeSelector select the legacy `cgpu=true` nodes?
pub fn selects_legacy(selector: &[(String, String)]) -> bool {
    selector
        .iter()
        .any(|(k, v)| k == LEGACY_LABEL && v == LEGACY_VALUE)
}

/// What an installer's own nodeSelector says about the product it comes from.
pub fn product_of(name: &str, selector: &[(String, String)]) -> Option<Product> {
    let (k, v) = installer_label(Product::AckPro, name);
    if selector.iter().any(|(a, b)| a == k && b == v) {
        Some(Product::AckPro)
    } else if selects_legacy(selector) {
        Some(Product::LegacyAckCgpu)
    } else {
        None
    }
}

/// The highest scheduling policy cGPU knows: 5, native (the policy page lists six, 0 to 5).
pub const MAX_POLICY: u8 = 5;
/// The scheduling policies cGPU knows, 0 fair share to 5 native. Every check of a policy's
/// range, every reading of one and clap's `--policy` take it from here.
pub const POLICIES: RangeInclusive<u8> = 0..=MAX_POLICY;
/// How many policies there are: the length of the tables indexed by a policy.
pub const POLICY_COUNT: usize = MAX_POLICY as usize + 1;
/// [`POLICIES`] as messages write it ("0–5"); a test holds it to the range.
pub const POLICY_RANGE_TEXT: &str = policy_range_literal!();

/// [`POLICY_RANGE_TEXT`] as a literal, for the catalogue's `concat!` texts.
macro_rules! policy_range_literal {
    () => {
        "0–5"
    };
}
pub(crate) use policy_range_literal;

/// `n` as a policy when it is one of [`POLICIES`]: the reading of a YAML integer.
pub fn policy_number(n: i128) -> Option<u8> {
    u8::try_from(n).ok().filter(|n| POLICIES.contains(n))
}

/// A POLICY env string as the installer reads it: exactly one digit of [`POLICIES`] (`"3"`;
/// not `" 3"`, `"03"` nor `"+3"`).
pub fn env_policy(s: &str) -> Option<u8> {
    match s.as_bytes() {
        [d] if d.is_ascii_digit() => policy_number(i128::from(d - b'0')),
        _ => None,
    }
}

/// A POLICY env string after trimming spaces and leading zeros (`" 1"`, `"01"` → 1): what it
/// was most likely meant to say, for a fix to offer. Digits only, so `"+1"` stays unread.
pub fn env_policy_normalised(s: &str) -> Option<u8> {
    let t = s.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let t = t.trim_start_matches('0');
    env_policy(if t.is_empty() { "0" } else { t })
}

/// A POLICY env value's scalar: a string by [`env_policy`] or, leniently, an unquoted integer
/// (which the API server refuses; the rules report it, readers still see the policy meant).
pub fn env_scalar_policy(v: &Scalar) -> Option<u8> {
    match v {
        Scalar::Str(s) => env_policy(s),
        Scalar::Int(i) => policy_number(*i),
        _ => None,
    }
}

/// `cgpu.policy` in a values file as the installer gets it: an integer, a whole float (Helm
/// holds every number as a float64: `3.0` renders as 3, but `-0.0` as "-0") or a string the
/// chart renders as it is, so only one that POLICY itself would be read from (`"1"`; not
/// `" 1"`, `"01"` or `"+1"`, which `check` reports). A plan and `check` read it alike.
pub fn values_policy(v: &Scalar) -> Option<u8> {
    let (low, high) = (f64::from(*POLICIES.start()), f64::from(*POLICIES.end()));
    match v {
        Scalar::Int(i) => policy_number(*i),
        Scalar::Float(f)
            if f.fract() == 0.0 && (low..=high).contains(f) && !f.is_sign_negative() =>
        {
            Some(*f as u8)
        }
        Scalar::Str(s) => env_policy(s),
        _ => None,
    }
}

/// The policy the chart documents (`cgpu.policy: 1`). A reboot plan assumes it for an installer
/// without a POLICY env: nobody has published the installer's built-in default (nor is it
/// in the chart's templates), but a DaemonSet rendered from the chart would have carried it; the assumption is
/// reported (installer-policy-missing) so a reader can check `/proc/cgpu_km/0/policy` on a node.
pub const CHART_DEFAULT_POLICY: u8 = 1;

/// The message for an installer without a POLICY env. No public source states what
/// the installer does without it, so neither `check` nor `checklist` may claim a default.
pub fn policy_missing_message(installer: &str) -> String {
    format!(
        "{installer} sets no POLICY env: no public source documents what the installer does without it (the chart's documented `policy: {CHART_DEFAULT_POLICY}` applies only through the values); set POLICY explicitly, or read /proc/cgpu_km/0/policy on a node"
    )
}

// ---------------------------------------------------------------------------------------------
// The chart (ack-ai-installer). Its values.yaml is not public; these defaults are the documented
// ones (the ACK "Configure a computing power allocation policy" page's values excerpt).

/// The chart's name: the subchart key of an umbrella chart's values, the chart a HelmRelease or
/// an Application names.
pub const CHART: &str = "ack-ai-installer";

/// The chart's documented default image tag (has `tag-known-deadlock`).
pub const DEFAULT_TAG: &str = "v1.5.3-8d3fc1b-aliyun";
/// The chart's documented default finance-cloud tag.
pub const DEFAULT_FINANCE_TAG: &str = "v1.0.7-fin";

/// The chart's documented defaults, as the bottom of a `--stack`.
pub const CHART_DEFAULTS: &str = "\
# ack-ai-installer chart defaults (documented), the base of every values stack
cgpu:
  enabled: true
  image: acs/cgpu-installer
  tag: v1.5.3-8d3fc1b-aliyun
  financeCloudImageTag: v1.0.7-fin
  imagePullPolicy: IfNotPresent
  policy: 1
  nodeSelector: {}
  checkRegions: true
";

/// [`CHART_DEFAULTS`] as the source every reading of the chart's defaults names
/// (`<chart defaults>`): the bottom of a stack, of a release's values, of a reboot plan and of
/// the editor's hover when no chart values.yaml is given.
pub fn chart_defaults() -> std::sync::Arc<crate::yaml::Source> {
    crate::yaml::Source::new("<chart defaults>", CHART_DEFAULTS.to_string())
}

pub const KNOWN_KEYS: &[&str] = &[
    "enabled",
    "image",
    "tag",
    "financeCloudImageTag",
    "imagePullPolicy",
    "policy",
    "nodeSelector",
    "checkRegions",
];

pub const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];

/// Documented policy names (and the aliases ACK's pages use) → number.
pub const POLICY_NAMES: &[(&str, i128)] = &[
    ("fair-share", 0),
    ("fair", 0),
    ("average", 0),
    ("preemptive", 1),
    ("weighted", 2),
    ("weight-based", 2),
    ("fixed", 3),
    ("soft", 4),
    ("weak", 4),
    ("native", 5),
];

pub const POLICY_TITLES: [&str; POLICY_COUNT] = [
    "fair share",
    "preemptive",
    "weight-based preemptive",
    "fixed percentage",
    "soft",
    "native",
];

/// What each policy does, one line each (ACK: Configure a computing power allocation policy for
/// GPU sharing). `generate` comments its values file with these; the language server's hover
/// and completion show them.
pub const POLICY_EFFECTS: [&str; POLICY_COUNT] = [
    "each container gets a fixed slice, 1/max instances",
    "each container gets 1/(containers running now)",
    "like 1, weighted by ALIYUN_COM_GPU_SCHD_WEIGHT (> 1) on workloads",
    "each container gets a fixed percentage",
    "a container may use idle GPU time beyond its share",
    "the NVIDIA driver's own time slicing",
];

pub const EXPECTED_IMAGE: &str = "acs/cgpu-installer";

// ---------------------------------------------------------------------------------------------
// Images and registries.

/// A container image reference split into its parts.
#[derive(Debug, PartialEq, Eq)]
pub struct ImageRef<'a> {
    pub host: Option<&'a str>,
    pub path: &'a str,
    pub tag: Option<&'a str>,
    pub digest: Option<&'a str>,
}

/// Split `host/path:tag@digest` the way container runtimes do: the first component is a host
/// when it has a `.` or `:` or is `localhost`, and there is a `/` after it.
pub fn split_image(s: &str) -> ImageRef<'_> {
    let (rest, digest) = match s.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (s, None),
    };
    let (host, rest) = match rest.split_once('/') {
        Some((first, after)) if first.contains(['.', ':']) || first == "localhost" => {
            (Some(first), after)
        }
        _ => (None, rest),
    };
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (path, tag) = match rest[last_slash..].find(':') {
        Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
        None => (rest, None),
    };
    ImageRef {
        host,
        path,
        tag,
        digest,
    }
}

/// Alibaba Cloud region ids known to this release (from terraform-provider-alicloud's
/// list, finance and gov regions, and the ids SDK endpoint maps add). Lists go stale, so an id
/// missing here is only `region-unknown`, a warning.
pub const KNOWN_REGIONS: &[&str] = &[
    "cn-hangzhou",
    "cn-qingdao",
    "cn-beijing",
    "cn-hongkong",
    "cn-shenzhen",
    "cn-shanghai",
    "cn-zhangjiakou",
    "cn-huhehaote",
    "cn-chengdu",
    "cn-heyuan",
    "cn-wulanchabu",
    "cn-guangzhou",
    "cn-nanjing",
    "cn-fuzhou",
    "cn-wuhan-lr",
    "ap-southeast-1",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-southeast-2",
    "ap-southeast-3",
    "ap-southeast-5",
    "ap-southeast-6",
    "ap-southeast-7",
    "ap-south-1",
    "us-west-1",
    "us-east-1",
    "me-east-1",
    "me-central-1",
    "eu-central-1",
    "eu-west-1",
    "rus-west-1",
    // finance clouds, and the internal aliases the SDKs use for them
    "cn-hangzhou-finance",
    "cn-beijing-finance-1",
    "cn-shanghai-finance-1",
    "cn-shenzhen-finance-1",
    "cn-hzfinance",
    "cn-hzjbp",
    "cn-szfinance",
    "cn-shenzhen-finance",
    // gov cloud
    "cn-north-2-gov-1",
];

/// Is `r` shaped like a region id: lower-case words joined by hyphens (`cn-hangzhou`,
/// `ap-southeast-1`, `cn-shanghai-finance-1`)? The first word is letters only.
pub fn region_well_formed(r: &str) -> bool {
    let mut parts = r.split('-');
    let first = parts.next().unwrap_or("");
    let rest: Vec<&str> = parts.collect();
    !first.is_empty()
        && first.bytes().all(|b| b.is_ascii_lowercase())
        && !rest.is_empty()
        && rest.iter().all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

pub fn region_known(r: &str) -> bool {
    KNOWN_REGIONS.contains(&r)
        || (r.ends_with("-pub") && KNOWN_REGIONS.contains(&&r[..r.len() - 4]))
}

/// The two ACK registry host families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostForm {
    /// `registry[-vpc].<r>.aliyuncs.com` (ACR)
    Acr,
    /// `registry-<r>[-vpc].ack.aliyuncs.com` (ACR EE "ack" registry)
    Ack,
}

/// An ACK registry host taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryHost<'a> {
    pub form: HostForm,
    pub region: &'a str,
    pub vpc: bool,
}

impl RegistryHost<'_> {
    pub fn render(form: HostForm, region: &str, vpc: bool) -> String {
        match (form, vpc) {
            (HostForm::Acr, true) => format!("registry-vpc.{region}.aliyuncs.com"),
            (HostForm::Acr, false) => format!("registry.{region}.aliyuncs.com"),
            (HostForm::Ack, true) => format!("registry-{region}-vpc.ack.aliyuncs.com"),
            (HostForm::Ack, false) => format!("registry-{region}.ack.aliyuncs.com"),
        }
    }
}

/// Parse `registry-vpc.<r>.aliyuncs.com`, `registry.<r>.aliyuncs.com`,
/// `registry-<r>-vpc.ack.aliyuncs.com` or `registry-<r>.ack.aliyuncs.com`. The region part is
/// returned as written (it may be malformed: that is `region-invalid`).
pub fn parse_registry_host(host: &str) -> Option<RegistryHost<'_>> {
    if let Some(mid) = host.strip_suffix(".ack.aliyuncs.com") {
        let r = mid.strip_prefix("registry-")?;
        return Some(match r.strip_suffix("-vpc") {
            Some(region) => RegistryHost {
                form: HostForm::Ack,
                region,
                vpc: true,
            },
            None => RegistryHost {
                form: HostForm::Ack,
                region: r,
                vpc: false,
            },
        });
    }
    let mid = host.strip_suffix(".aliyuncs.com")?;
    if let Some(region) = mid.strip_prefix("registry-vpc.") {
        return (!region.contains('.')).then_some(RegistryHost {
            form: HostForm::Acr,
            region,
            vpc: true,
        });
    }
    let region = mid.strip_prefix("registry.")?;
    (!region.contains('.')).then_some(RegistryHost {
        form: HostForm::Acr,
        region,
        vpc: false,
    })
}

/// The image with its registry host switched to the `-vpc` endpoint (`vpc`) and/or to another
/// region. `None` when the host is not an ACK registry host or nothing would change.
pub fn rewrite_image(image: &str, vpc: bool, region: Option<&str>) -> Option<String> {
    let r = split_image(image);
    let host = r.host?;
    let h = parse_registry_host(host)?;
    let new_host = RegistryHost::render(h.form, region.unwrap_or(h.region), vpc || h.vpc);
    (new_host != host).then(|| format!("{new_host}{}", &image[host.len()..]))
}

/// A finance-cloud region (`cn-shanghai-finance-1`, `cn-hzfinance`): where `financeCloudImageTag`
/// is deployed (terraform-provider-alicloud's region list).
pub fn is_finance_region(r: &str) -> bool {
    r.contains("finance")
}

// ---------------------------------------------------------------------------------------------
// Versions: the tag grammar and the thresholds (the cGPU FAQ); the driver matrix is in
// compat.toml.
// The suffix of `v1.5.3-8d3fc1b-aliyun` is a build flavour (git SHA and vendor marker), not a
// SemVer pre-release: strict SemVer would sort `1.0.6-abc-aliyun` below 1.0.6 and
// `VersionReq::matches` would refuse `1.5.3-8d3fc1b-aliyun` for `>=1.0.6`, both wrong for cGPU.
// So: strip one leading `v`, compare (major, minor, patch) numerically, keep the suffix aside.

/// The minimum cGPU version that supports the policy setting: the data's `support-policy` entry
/// (read by build.rs: every tag checked compares with it, and parsing the whole compatibility
/// file for it was a third of a one-file check).
pub fn min_policy_version() -> &'static Version {
    static V: std::sync::LazyLock<Version> =
        std::sync::LazyLock::new(|| build_time_version(env!("CGPU_MIN_POLICY_VERSION")));
    &V
}

/// The last version with the known kernel-driver deadlock: the data's `issue-deadlock` entry.
pub fn last_deadlock_version() -> &'static Version {
    static V: std::sync::LazyLock<Version> =
        std::sync::LazyLock::new(|| build_time_version(env!("CGPU_LAST_DEADLOCK_VERSION")));
    &V
}

/// Is `v` newer than every version the compatibility data knows (its `newest`)?
pub fn newer_than_data(v: &Version) -> bool {
    static V: std::sync::LazyLock<Version> =
        std::sync::LazyLock::new(|| build_time_version(env!("CGPU_NEWEST_VERSION")));
    *v > *V
}

/// A version build.rs checked to be MAJOR.MINOR.PATCH.
fn build_time_version(text: &str) -> Version {
    Version::parse(text).expect("build.rs writes MAJOR.MINOR.PATCH")
}

/// The cGPU version every piece of advice names (rules, help texts, `generate`, hover): the
/// cGPU FAQ's "upgrade to 1.5.10 or later" for the ≤ 1.5.7 deadlock (the data's
/// `issue-deadlock` entry, `fixed`), the one recommendation a public source states.
pub const RECOMMENDED_VERSION: &str = recommended_version!();

// The rule catalogue's texts are `&'static str` built with `concat!`, so they take the data's
// versions as literals: build.rs reads them out of compat.toml at build time, and
// `compat::tests::the_build_time_versions_are_the_data` holds them equal to the parsed data.

/// [`RECOMMENDED_VERSION`] as a literal, for `concat!`.
macro_rules! recommended_version {
    () => {
        env!("CGPU_RECOMMENDED_VERSION")
    };
}
pub(crate) use recommended_version;

/// [`min_policy_version`] as a literal, for `concat!`.
macro_rules! min_policy_literal {
    () => {
        env!("CGPU_MIN_POLICY_VERSION")
    };
}
pub(crate) use min_policy_literal;

/// [`last_deadlock_version`] as a literal, for `concat!`.
macro_rules! last_deadlock_literal {
    () => {
        env!("CGPU_LAST_DEADLOCK_VERSION")
    };
}
pub(crate) use last_deadlock_literal;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    /// The version core only; never carries a pre-release.
    pub core: Version,
    /// Everything after the first `-` of the tag (`8d3fc1b-aliyun`, `fin`), if any.
    pub suffix: Option<String>,
}

/// How a message names the tag of the installer's image ([`TagError::about`]).
pub const IMAGE_TAG: &str = "the image's tag";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagError {
    Empty,
    Latest,
    Malformed,
}

impl TagError {
    /// The problem said of `subject`, a noun phrase for the tag ("the image's tag"): "the
    /// image's tag is `latest`: …".
    pub fn about(&self, subject: &str, tag: &str) -> String {
        match self {
            TagError::Empty => format!("{subject} is empty"),
            TagError::Latest => format!(
                "{subject} is `latest`: the cGPU version cannot be known and changes under you"
            ),
            TagError::Malformed => format!(
                "{subject} `{tag}` is not a cGPU tag of the form v?MAJOR.MINOR.PATCH[-suffix]"
            ),
        }
    }

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

/// Is `tag` of the form ACK publishes cGPU installer images under: `v` + version +
/// `-<short git sha>-aliyun` (`v1.5.3-8d3fc1b-aliyun`), or the finance-cloud `-fin` build
/// (`v1.0.7-fin`, also with a sha before it). The brief's and the docs' tags, and the ACK
/// convention of other images (storage-operator `v1.18.8.0-81508da-aliyun`, gpushare-installer
/// `v1.0.0-2656995-aliyun`, as ACK's registry tags them).
pub fn is_ack_form(tag: &str) -> bool {
    let Some(body) = tag.strip_prefix('v') else {
        return false;
    };
    if body.starts_with('v') || parse_tag(body).is_err() {
        return false;
    }
    let Some((_, suffix)) = body.split_once('-') else {
        return false;
    };
    let sha = |s: &str| (7..=40).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit());
    match suffix.rsplit_once('-') {
        Some((h, "aliyun" | "fin")) => sha(h),
        None => suffix == "fin",
        _ => false,
    }
}

/// ACK's tag form in words, for messages.
pub const ACK_TAG_FORM: &str = "v<version>-<sha>-aliyun (or v<version>-fin in finance clouds)";

/// Can cGPU `cgpu` run NVIDIA driver `driver` (the FAQ's matrix, in [`compat`])?
/// `Some(false)` only where the matrix says so; `None` when the matrix does not say
/// (unknown cGPU range, a version newer than the data, an unparsable driver version).
pub fn driver_supported(cgpu: &Version, driver: &str) -> Option<bool> {
    compat::data().driver_supported(cgpu, driver)
}

#[cfg(test)]
mod tests;
