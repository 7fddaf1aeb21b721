//! The installer policies' variables and validations: each check restates in CEL what a rule
//! of `rules::installer` decides on one installer DaemonSet, with the size guard that bounds
//! their cost. Imports only `expr.rs` of its folder.

use super::expr::{Check, NUM, list, lit, num_lt, same_violation, version_below, words};
use crate::catalogue::{RuleId, Severity};
use crate::cgpu::{
    self, CORE_INSTALLER, IMAGE_TAG, INSTALLER, KNOWN_REGIONS, LEGACY_LABEL, LEGACY_VALUE,
    SCHEDULE_LABEL, TagError, last_deadlock_version, min_policy_version,
};

/// The size guard: no installer DaemonSet has more containers (init and regular), env entries
/// in one container, or characters in an image reference. Past it the installer policies judge
/// nothing else (their cost grows with the env entries: the API server's cost budget would be
/// spent on an object built for it) and the errors policy denies.
pub const MAX_CONTAINERS: usize = 16;
pub const MAX_ENV: usize = 256;
pub const MAX_IMAGE: usize = 1024;

/// The size guard's validation message.
pub fn size_guard_message() -> String {
    format!(
        "size-guard: more than {MAX_CONTAINERS} containers, more than {MAX_ENV} env entries in a container, or an image reference longer than {MAX_IMAGE} characters: no cgpu installer DaemonSet has that, and the policy does not judge it further"
    )
}

/// The variables every validation reads, in order (each is total on an object the API server
/// admits: it never fails to evaluate), without params.
pub fn variables() -> Vec<(&'static str, String)> {
    variables_for(false)
}

/// A key of the params ConfigMap's data, or `default` when it has none.
fn param(key: &str, default: &str) -> String {
    format!(
        "has(params.data) && {k} in params.data ? params.data[{k}] : {default}",
        k = lit(key)
    )
}

/// The comma-separated list of a params key (entries trimmed, empty ones dropped).
fn param_list(key: &str, default: &str) -> String {
    format!(
        "({}).split(',').map(r, r.trim()).filter(r, r != '')",
        param(key, &lit(default))
    )
}

/// The variables, with `params` the ones that read the params ConfigMap.
pub fn variables_for(params: bool) -> Vec<(&'static str, String)> {
    let schedule = lit(SCHEDULE_LABEL);
    let mut vars = vec![
        (
            "containers",
            // dyn(): initContainers and containers are two list types for the API server's
            // type checker (one per schema path), and `_+_` has no overload for two list
            // types; as dyn the sum type-checks, and at run time dyn(x) is x.
            "(has(object.spec.template.spec.initContainers) ? dyn(object.spec.template.spec.initContainers) : dyn([])) + dyn(object.spec.template.spec.containers)".into(),
        ),
        (
            "small",
            format!(
                "size(variables.containers) <= {MAX_CONTAINERS} && variables.containers.all(c, (!has(c.env) || size(c.env) <= {MAX_ENV}) && (!has(c.image) || size(c.image) <= {MAX_IMAGE}))"
            ),
        ),
        (
            "main",
            "variables.containers.exists(c, c.name == object.metadata.name) ? variables.containers.filter(c, c.name == object.metadata.name)[0] : object.spec.template.spec.containers[0]".into(),
        ),
        (
            "policyCount",
            "variables.containers.map(c, has(c.env) ? c.env.filter(e, e.name == 'POLICY').size() : 0).sum()".into(),
        ),
        ("image", "has(variables.main.image) ? variables.main.image : ''".into()),
        ("digest", "variables.image.contains('@')".into()),
        ("ref", "variables.image.split('@')[0]".into()),
        (
            "host",
            "variables.ref.matches('^([^/]*[.:][^/]*|localhost)/') ? variables.ref.substring(0, variables.ref.indexOf('/')) : ''".into(),
        ),
        (
            "path",
            "variables.host == '' ? variables.ref : variables.ref.substring(size(variables.host) + 1)".into(),
        ),
        (
            "last",
            "variables.path.substring(variables.path.lastIndexOf('/') + 1)".into(),
        ),
        ("hasTag", "variables.last.contains(':')".into()),
        (
            "tag",
            "variables.hasTag ? variables.last.substring(variables.last.indexOf(':') + 1) : ''".into(),
        ),
        (
            "tagValid",
            format!("variables.hasTag && variables.tag.matches('^v?{NUM}[.]{NUM}[.]{NUM}(-[0-9A-Za-z.-]+)?$')"),
        ),
        (
            "core",
            "variables.tagValid ? (variables.tag.startsWith('v') ? variables.tag.substring(1) : variables.tag).split('-')[0] : ''".into(),
        ),
        (
            "tooOld",
            format!("variables.tagValid && variables.tag.matches('{}')", version_below(min_policy_version())),
        ),
    ];
    if params {
        let (c, m) = ("variables.coreParts", "variables.minParts");
        let tail = vars.len() - 1;
        vars.truncate(tail);
        vars.extend([
            (
                "minVersion",
                format!(
                    "has(params.data) && 'minVersion' in params.data ? (params.data['minVersion'].trim().startsWith('v') ? params.data['minVersion'].trim().substring(1) : params.data['minVersion'].trim()) : {}",
                    lit(&min_policy_version().to_string())
                ),
            ),
            ("minParts", "variables.minVersion.split('.')".into()),
            ("coreParts", "variables.tagValid ? variables.core.split('.') : ['0', '0', '0']".into()),
            (
                "tooOld",
                format!(
                    "variables.tagValid && ({} || ({c}[0] == {m}[0] && ({} || ({c}[1] == {m}[1] && {}))))",
                    num_lt(&format!("{c}[0]"), &format!("{m}[0]")),
                    num_lt(&format!("{c}[1]"), &format!("{m}[1]")),
                    num_lt(&format!("{c}[2]"), &format!("{m}[2]")),
                ),
            ),
        ]);
    }
    vars.extend([

        (
            "regForm",
            "variables.host.endsWith('.ack.aliyuncs.com') ? (variables.host.matches('^registry-.*[.]ack[.]aliyuncs[.]com$') ? 'ack' : '') : (variables.host.matches('^registry(-vpc)?[.][^.]*[.]aliyuncs[.]com$') ? 'acr' : '')".into(),
        ),
        (
            "regMid",
            "variables.regForm == 'ack' ? variables.host.substring(9, size(variables.host) - 17) : variables.regForm == 'acr' ? variables.host.split('.')[1] : ''".into(),
        ),
        (
            "vpc",
            "variables.regForm == 'ack' ? variables.regMid.endsWith('-vpc') : variables.host.startsWith('registry-vpc.')".into(),
        ),
        (
            "region",
            "variables.regForm == 'ack' && variables.vpc ? variables.regMid.substring(0, size(variables.regMid) - 4) : variables.regMid".into(),
        ),
        ("regionWellFormed", "variables.region.matches('^[a-z]+(-[a-z0-9]+)+$')".into()),
        (
            "knownRegions",
            if params {
                param_list("allowedRegions", &KNOWN_REGIONS.join(","))
            } else {
                list(KNOWN_REGIONS)
            },
        ),
        (
            "selector",
            "has(object.spec.template.spec.nodeSelector) ? object.spec.template.spec.nodeSelector : {}".into(),
        ),
        (
            "scheduleLabel",
            format!("{schedule} in variables.selector ? variables.selector[{schedule}] : ''"),
        ),
    ]);
    if params {
        vars.push(("registries", param_list("registries", "")));
    }
    vars
}

/// A POLICY entry that is not one of "0" … "5" (valueFrom entries are not judged).
const BAD_POLICY: &str = "e.name == 'POLICY' && !has(e.valueFrom) && !(has(e.value) && e.value in ['0', '1', '2', '3', '4', '5'])";

/// installer-policy-invalid's ratchet: every bad POLICY entry of the new object has a bad
/// entry of the same value (or the same lack of one) in the old object.
fn policy_invalid_ratchet() -> String {
    let bad_f = BAD_POLICY.replace("e.", "f.");
    format!(
        "variables.containers.all(c, !has(c.env) || c.env.all(e, !({BAD_POLICY}) || variables.oldContainers.exists(o, has(o.env) && o.env.exists(f, ({bad_f}) && has(f.value) == has(e.value) && (!has(e.value) || f.value == e.value)))))"
    )
}

/// The validations, errors first (without params).
pub fn checks() -> Vec<Check> {
    checks_for(false)
}

/// The validations, errors first; with `params` the minimum version and extra registries are
/// the params ConfigMap's.
pub fn checks_for(params: bool) -> Vec<Check> {
    use RuleId::*;
    // A message naming the minimum version: `\u{1}` in `text` is it.
    let min_words = |text: &str, exprs: &[&str]| {
        if !params {
            return words(
                &text.replace('\u{1}', &min_policy_version().to_string()),
                exprs,
            );
        }
        let mut ex: Vec<&str> = Vec::new();
        let mut it = exprs.iter();
        for ch in text.chars() {
            if ch == '\u{1}' {
                ex.push("variables.minVersion");
            } else if ch == '\0'
                && let Some(e) = it.next()
            {
                ex.push(e);
            }
        }
        words(&text.replace('\u{1}', "\0"), &ex)
    };
    let c = |rule, severity, expression: String, message_expression: String| Check {
        rule,
        severity,
        ratchet: if severity == Severity::Error {
            same_violation(&expression, &message_expression)
        } else {
            String::new()
        },
        expression,
        message_expression,
    };
    let workload = "e.name.startsWith('ALIYUN_COM_GPU_') || e.name == 'CGPU_DISABLE'";
    let vpc_host = "(variables.regForm == 'ack' ? 'registry-' + variables.region + '-vpc.ack.aliyuncs.com' : 'registry-vpc.' + variables.region + '.aliyuncs.com')";
    let mut invalid = c(
        InstallerPolicyInvalid,
        Severity::Error,
        format!("!variables.containers.exists(c, has(c.env) && c.env.exists(e, {BAD_POLICY}))"),
        format!(
            "variables.containers.filter(c, has(c.env) && c.env.exists(e, {BAD_POLICY}))[0].env.filter(e, {BAD_POLICY}).map(e, has(e.value) ? {} : 'POLICY has no value')[0]",
            words("POLICY \"\0\" is not one of \"0\" … \"5\"", &["e.value"])
        ),
    );
    invalid.ratchet = policy_invalid_ratchet();
    vec![
        invalid,
        c(
            InstallerPolicyDuplicate,
            Severity::Error,
            "variables.policyCount <= 1".into(),
            words(
                "POLICY is set \0 times on \0; the kubelet uses the last one",
                &["string(variables.policyCount)", "object.metadata.name"],
            ),
        ),
        c(
            InstallerImageTag,
            Severity::Error,
            "variables.image == '' || (variables.hasTag ? variables.tagValid : variables.digest)".into(),
            format!(
                "!variables.hasTag ? {} : variables.tag.trim() == '' ? {} : variables.tag == 'latest' ? {} : {}",
                words("image `\0` has no tag: it is `latest`, an unknown cGPU version", &["variables.image"]),
                lit(&TagError::Empty.about(IMAGE_TAG, "")),
                lit(&TagError::Latest.about(IMAGE_TAG, "")),
                words(&TagError::Malformed.about(IMAGE_TAG, "\0"), &["variables.tag"]),
            ),
        ),
        c(
            TagTooOld,
            Severity::Error,
            "!variables.tooOld".into(),
            min_words(
                "cGPU \0 is older than \u{1}: the policy setting is not supported",
                &["variables.core"],
            ),
        ),
        c(
            RegionInvalid,
            Severity::Error,
            "variables.regForm == '' || variables.regionWellFormed".into(),
            words(
                "`\0` in registry host `\0` is not a region id",
                &["variables.region", "variables.host"],
            ),
        ),
        c(
            InstallerPolicyMissing,
            Severity::Warning,
            "variables.policyCount > 0".into(),
            format!(
                "variables.tooOld ? {} : {}",
                min_words(
                    "\0 sets no POLICY env, and its cGPU \0 is older than \u{1} and has no policy setting: upgrade the image first (tag-too-old), then set POLICY",
                    &["object.metadata.name", "variables.core"],
                ),
                words(&cgpu::policy_missing_message("\0"), &["object.metadata.name"]),
            ),
        ),
        c(
            InstallerPolicyValuefrom,
            Severity::Warning,
            "!variables.containers.exists(c, has(c.env) && c.env.exists(e, e.name == 'POLICY' && has(e.valueFrom)))".into(),
            lit("POLICY comes from valueFrom: the policy cannot be checked here"),
        ),
        c(
            InstallerImageTag,
            Severity::Warning,
            "variables.image == '' || variables.hasTag || !variables.digest".into(),
            words(
                "image `\0` is pinned by digest only: the cGPU version (and whether it supports policies) cannot be checked",
                &["variables.image"],
            ),
        ),
        c(
            TagForm,
            Severity::Warning,
            format!("!variables.tagValid || variables.tag.matches('^v{NUM}[.]{NUM}[.]{NUM}-(fin|[0-9a-fA-F]{{7,40}}-(aliyun|fin))$')"),
            words(
                &format!("image tag `\0` is not of ACK's form {}", cgpu::ACK_TAG_FORM),
                &["variables.tag"],
            ),
        ),
        c(
            TagKnownDeadlock,
            Severity::Warning,
            format!(
                "!variables.tagValid || !variables.tag.matches('{}')",
                version_below(&semver::Version::new(
                    last_deadlock_version().major,
                    last_deadlock_version().minor,
                    last_deadlock_version().patch + 1
                ))
            ),
            words(
                &format!(
                    "cGPU \0 has the known kernel-driver deadlock of versions ≤ {}; upgrade to ≥ {}",
                    last_deadlock_version(),
                    cgpu::RECOMMENDED_VERSION
                ),
                &["variables.core"],
            ),
        ),
        c(
            RegistryHost,
            Severity::Warning,
            if params {
                "variables.image == '' || variables.regForm != '' || variables.host in variables.registries".into()
            } else {
                "variables.image == '' || variables.regForm != ''".into()
            },
            format!(
                "variables.host == '' ? {} : {}",
                words(
                    "image `\0` names no registry host (Docker Hub?), not an ACK registry",
                    &["variables.image"],
                ),
                words(
                    "registry host `\0` is neither registry-vpc.<region>.aliyuncs.com nor registry-<region>-vpc.ack.aliyuncs.com (a mirror?)",
                    &["variables.host"],
                ),
            ),
        ),
        c(
            RegistryPublicEndpoint,
            Severity::Warning,
            "variables.regForm == '' || variables.vpc".into(),
            words(
                "`\0` is the public endpoint; inside the cluster pull from `\0`",
                &["variables.host", vpc_host],
            ),
        ),
        c(
            RegionUnknown,
            Severity::Warning,
            "variables.regForm == '' || !variables.regionWellFormed || variables.region in variables.knownRegions || (variables.region.endsWith('-pub') && variables.region.substring(0, size(variables.region) - 4) in variables.knownRegions)".into(),
            words(
                "region `\0` in registry host `\0` is not a region id cgpu-lint knows",
                &["variables.region", "variables.host"],
            ),
        ),
        c(
            ScheduleLabel,
            Severity::Warning,
            format!(
                "object.metadata.name != {} || !({} in variables.selector) || variables.scheduleLabel == 'cgpu'",
                lit(INSTALLER),
                lit(SCHEDULE_LABEL)
            ),
            words(
                &format!("{SCHEDULE_LABEL} is `\0`: the cgpu-installer is meant for nodes labelled `cgpu`"),
                &["variables.scheduleLabel"],
            ),
        ),
        c(
            InstallerSelector,
            Severity::Warning,
            format!(
                "variables.scheduleLabel == (object.metadata.name == {} ? 'core_mem' : 'cgpu') || ({} in variables.selector && variables.selector[{}] == {})",
                lit(CORE_INSTALLER),
                lit(LEGACY_LABEL),
                lit(LEGACY_LABEL),
                lit(LEGACY_VALUE)
            ),
            words(
                &format!("\0's nodeSelector has neither {SCHEDULE_LABEL}: \0 nor legacy {LEGACY_LABEL}: \"{LEGACY_VALUE}\""),
                &[
                    "object.metadata.name",
                    &format!("(object.metadata.name == {} ? 'core_mem' : 'cgpu')", lit(CORE_INSTALLER)),
                ],
            ),
        ),
        c(
            WorkloadEnvOnInstaller,
            Severity::Warning,
            format!("!variables.containers.exists(c, has(c.env) && c.env.exists(e, {workload}))"),
            format!(
                "variables.containers.filter(c, has(c.env) && c.env.exists(e, {workload}))[0].env.filter(e, {workload}).map(e, {})[0]",
                words(
                    "\0 is read by cGPU in workload containers; on \0 it does nothing",
                    &["e.name", "object.metadata.name"],
                )
            ),
        ),
    ]
}
