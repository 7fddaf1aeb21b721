//! `cgpu-lint generate admission-policy`: two ValidatingAdmissionPolicies (the installer rules
//! that are errors, and those that are warnings) and their bindings, written from the rule
//! catalogue and the cGPU facts of `crate::cgpu`. Every expression restates, in CEL, what the
//! rule in `rules::installer` decides on one object as the API server holds it (typed JSON that
//! has passed decoding and core validation); `tests/it/admission.rs` proves the two agree by
//! running the CEL with kube-cel (`eval`) beside `check`.

pub mod eval;
mod expr;
pub mod gitops;
mod installer;
mod objects;

pub use expr::{Action, Check, VERSION_LABEL, old_name, old_variables, on_old};
pub use installer::{
    MAX_CONTAINERS, MAX_ENV, MAX_IMAGE, checks, checks_for, size_guard_message, variables,
    variables_for,
};
pub use objects::{Object, as_admitted, objects};

use crate::catalogue::{RuleId, Severity};
use crate::cgpu::{INSTALLER_NAMES, KNOWN_REGIONS, min_policy_version};
use expr::{lit, q};

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// The action of the errors policy's binding (the warnings policy's is Warn, or Audit when
    /// this is Audit).
    pub action: Action,
    /// The Kubernetes minor version (1.MINOR): v1 from 1.30, v1beta1 for 1.28 and 1.29.
    pub kube_minor: u32,
    /// Also the policy for Flux HelmReleases and Argo CD Applications of the chart
    /// (`--include-gitops`, [`gitops`]).
    pub include_gitops: bool,
    /// `--params`: the installer policies read the allowed regions, the minimum cGPU version and
    /// extra registry hosts from a ConfigMap ([`PARAMS_CONFIGMAP`]) written with them.
    pub params: bool,
}

/// The ConfigMap (in kube-system) the installer policies read with `--params`.
pub const PARAMS_CONFIGMAP: &str = "cgpu-lint-params";

/// The oldest Kubernetes minor with `variables` in ValidatingAdmissionPolicy (v1beta1).
pub const OLDEST_MINOR: u32 = 28;
/// The first Kubernetes minor with admissionregistration.k8s.io/v1 policies.
pub const V1_MINOR: u32 = 30;

/// Parse `--kube-version` (`1.30`, `v1.31.2`) into its minor version.
pub fn parse_kube_version(s: &str) -> Result<u32, String> {
    let t = s.trim().trim_start_matches('v');
    let mut parts = t.split('.');
    let (Some("1"), Some(minor)) = (parts.next(), parts.next()) else {
        return Err(format!(
            "--kube-version `{s}` is not 1.MINOR (such as 1.30)"
        ));
    };
    let minor: u32 = minor
        .parse()
        .map_err(|_| format!("--kube-version `{s}` is not 1.MINOR (such as 1.30)"))?;
    if minor < OLDEST_MINOR {
        return Err(format!(
            "--kube-version {s}: ValidatingAdmissionPolicy has `variables` from Kubernetes 1.{OLDEST_MINOR} (v1beta1); this policy needs them"
        ));
    }
    Ok(minor)
}

/// The label every generated object carries (`kubectl apply --prune -l` finds stale ones).
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by=cgpu-lint";

/// `kubectl apply --prune` of the generated file: only objects labelled [`MANAGED_BY`] of the
/// generated kinds (`--prune-allowlist`; kubectl's default list has neither policies nor
/// bindings) that `file` does not hold are deleted.
pub fn prune_command(api: &str, file: &str, params: bool) -> String {
    let mut kinds = vec![
        format!("{api}/ValidatingAdmissionPolicy"),
        format!("{api}/ValidatingAdmissionPolicyBinding"),
    ];
    if params {
        kinds.push("core/v1/ConfigMap".into());
    }
    let allow: Vec<String> = kinds
        .iter()
        .map(|k| format!("--prune-allowlist={k}"))
        .collect();
    format!(
        "kubectl apply --prune -l {MANAGED_BY} {} -f {file}",
        allow.join(" ")
    )
}

/// The policy (and binding) names.
pub const ERRORS_POLICY: &str = "cgpu-lint-installer-errors";
pub const WARNINGS_POLICY: &str = "cgpu-lint-installer-warnings";

/// Why a rule of the installer group is, or is not, in the policy (for the header and
/// `explain`).
pub fn coverage(rule: RuleId) -> Option<String> {
    use RuleId::*;
    let covered: Vec<Severity> = checks()
        .iter()
        .filter(|c| c.rule == rule)
        .map(|c| c.severity)
        .collect();
    let gitops = gitops::covers(rule).then(|| {
        format!(
            "covered by `cgpu-lint generate admission-policy --include-gitops`: {} denies it in the `cgpu:` block of a Flux HelmRelease's spec.values and an Argo CD Application's helm.valuesObject with its helm.parameters applied (not in a `values: |` string, a value file or valuesFrom)",
            gitops::GITOPS_POLICY
        )
    });
    if !covered.is_empty() {
        let names: Vec<String> = covered
            .iter()
            .map(|s| {
                format!(
                    "{} ({})",
                    s.as_str(),
                    if *s == Severity::Error {
                        ERRORS_POLICY
                    } else {
                        WARNINGS_POLICY
                    }
                )
            })
            .collect();
        let text = format!(
            "covered by `cgpu-lint generate admission-policy`: the {} policy denies or warns as check reports it",
            names.join(" and ")
        );
        return Some(match gitops {
            Some(g) => format!("{text}; {g}"),
            None => text,
        });
    }
    if gitops.is_some() {
        return gitops;
    }
    let why = match rule {
        InstallerPolicyUnquoted
        | PullPolicy
        | LabelKey
        | LabelValue
        | LabelValueType
        | NodeSelectorType => {
            "the API server itself refuses such an object (decoding or core validation) before any admission policy runs"
        }
        Yaml11Scalar | DuplicateKey | YamlSyntax => {
            "it is about the YAML text, which the API server never sees (it gets the parsed object)"
        }
        ClusterPolicyMismatch => {
            "it compares two objects (cgpu-installer and cgpu-core-installer), and a policy sees one"
        }
        RegionMismatch | TagFlavour => {
            "it needs the cluster's region (--region or --nodes), which the policy does not know"
        }
        InstallerNamespace => "the policy matches the installers in kube-system only",
        PriorityClass | RolloutIncomplete | PolicyDrift => {
            "an info: status and managedFields are the server's, and the policy reports errors and warnings only"
        }
        UpgradeDefaultFallback | UpgradeDowngrade => {
            "it compares the live release with the desired values (`checklist`)"
        }
        _ => return None,
    };
    Some(format!(
        "not in `cgpu-lint generate admission-policy`: {why}"
    ))
}

fn rule_list(sev: Severity) -> Vec<&'static str> {
    let mut out: Vec<&str> = checks()
        .iter()
        .filter(|c| c.severity == sev)
        .map(|c| {
            if c.rule == RuleId::InstallerImageTag && sev == Severity::Warning {
                "installer-image-tag (pinned by digest only)"
            } else {
                c.rule.name()
            }
        })
        .collect();
    out.dedup();
    out
}

fn header(req: &Request, api: &str) -> String {
    let mut h = String::new();
    let wrap = |h: &mut String, lead: &str, text: &str| {
        let mut line = lead.to_string();
        for w in text.split(' ') {
            if line.len() + w.len() + 1 > 98 && line.trim() != "#" {
                h.push_str(line.trim_end());
                h.push('\n');
                line = "#     ".to_string();
            }
            line.push_str(w);
            line.push(' ');
        }
        h.push_str(line.trim_end());
        h.push('\n');
    };
    h.push_str(
        "# ValidatingAdmissionPolicies for the cGPU installer DaemonSets (cgpu-installer and\n",
    );
    h.push_str("# cgpu-core-installer in kube-system), generated by `cgpu-lint generate admission-policy`\n");
    h.push_str("# from its rule catalogue. Each validation is one rule; its message starts with the rule id\n");
    h.push_str("# and says what `cgpu-lint check` says. Try it offline first:\n");
    h.push_str("#   cgpu-lint check --admission-policy THIS_FILE daemonset.yaml\n");
    wrap(
        &mut h,
        "# ",
        &format!(
            "Every object is labelled {MANAGED_BY} and app.kubernetes.io/version={}; apply it with prune, so that the objects of an older version this file no longer has are deleted:",
            env!("CARGO_PKG_VERSION"),
        ),
    );
    let prune = prune_command(api, "THIS_FILE", req.params);
    let mut parts = prune.split(" --prune-allowlist=");
    h.push_str(&format!("#   {} \\\n", parts.next().unwrap_or_default()));
    let rest: Vec<&str> = parts.collect();
    for (i, p) in rest.iter().enumerate() {
        let end = if i + 1 < rest.len() { " \\" } else { "" };
        h.push_str(&format!("#     --prune-allowlist={p}{end}\n"));
    }
    if req.params {
        wrap(
            &mut h,
            "# ",
            &format!(
                "Params: the installer policies read allowedRegions (region-unknown), minVersion (tag-too-old, installer-policy-missing) and registries (hosts registry-host accepts, such as a mirror) from the ConfigMap kube-system/{PARAMS_CONFIGMAP} below (paramKind; each binding's paramRef, parameterNotFoundAction: Deny, so without it the installers are refused); change a value with `kubectl edit configmap {PARAMS_CONFIGMAP} -n kube-system`, no regeneration. minVersion must be MAJOR.MINOR.PATCH. The gitops policy does not read it."
            ),
        );
    }
    h.push_str(&format!(
        "# {ERRORS_POLICY} (binding: {}):\n",
        req.action.as_str()
    ));
    wrap(&mut h, "#   ", &rule_list(Severity::Error).join(", "));
    let fp = |h: &mut String, policy: &str| {
        let (v, why) = failure_policy(policy);
        wrap(h, "#   ", &format!("failurePolicy {v}: {why}."));
    };
    fp(&mut h, ERRORS_POLICY);
    h.push_str(&format!(
        "# {WARNINGS_POLICY} (binding: {}):\n",
        warn_action(req.action).as_str()
    ));
    wrap(&mut h, "#   ", &rule_list(Severity::Warning).join(", "));
    fp(&mut h, WARNINGS_POLICY);
    if req.include_gitops {
        h.push_str(&format!(
            "# {} (binding: {}):\n",
            gitops::GITOPS_POLICY,
            req.action.as_str()
        ));
        wrap(
            &mut h,
            "#   ",
            &format!(
                "for Flux HelmReleases (helm.toolkit.fluxcd.io {}) and Argo CD Applications (argoproj.io v1alpha1) of the ack-ai-installer chart, on the cgpu block of spec.values and of each chart source's helm.valuesObject; the chart is selected in matchConditions (`{}`), so another chart's object is never evaluated:",
                gitops::HELMRELEASE_VERSIONS.join(", "),
                gitops::CHART_CONDITION
            ),
        );
        let names: Vec<&str> = gitops::checks().iter().map(|c| c.rule.name()).collect();
        wrap(&mut h, "#   ", &names.join(", "));
        wrap(
            &mut h,
            "#   ",
            &format!(
                "failurePolicy {}: {}.",
                failure_policy(gitops::GITOPS_POLICY).0,
                failure_policy(gitops::GITOPS_POLICY).1
            ),
        );
        wrap(
            &mut h,
            "#   ",
            "Argo CD helm.parameters named cgpu.enabled, cgpu.checkRegions, cgpu.policy, cgpu.tag or cgpu.financeCloudImageTag are applied over the valuesObject as Argo CD renders them: after it, the last of one name winning, the value typed as `--set` types it (\"7\" is 7, \"true\" a boolean, \"null\" removes the key), a forceString one as `--set-string` (a string) after every other. Not seen by it: an Argo CD `values: |` string and value files (CEL cannot parse YAML; a key they set is judged only when a parameter sets it), a parameter that reaches the block under another name (`cgpu` itself, an escaped dot, an index), Flux valuesFrom (not in the object), and the other values rules (check's only); check those in CI with `cgpu-lint check`.",
        );
    }
    h.push_str("# Not decided here:\n");
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for r in crate::catalogue::RULES {
        if checks().iter().any(|c| c.rule == r.id) {
            continue;
        }
        let Some(text) = coverage(r.id) else {
            continue;
        };
        if gitops::covers(r.id) {
            // A values rule: the gitops policy's, listed above when it is generated.
            continue;
        }
        let why = text
            .strip_prefix("not in `cgpu-lint generate admission-policy`: ")
            .unwrap_or(&text)
            .to_string();
        match groups.iter_mut().find(|(w, _)| *w == why) {
            Some((_, names)) => names.push(r.name),
            None => groups.push((why, vec![r.name])),
        }
    }
    for (why, names) in groups {
        wrap(&mut h, "#   ", &format!("{}: {why}.", names.join(", ")));
    }
    wrap(
        &mut h,
        "# ",
        "A version number of 20 digits or more in the image tag reads as malformed here (check reads numbers up to 2^64).",
    );
    wrap(
        &mut h,
        "# ",
        &format!(
            "Cost bound: the installer policies' cost grows with the containers and env entries; a size guard (variable `small`) stops both at more than {MAX_CONTAINERS} containers, {MAX_ENV} env entries in a container or an image reference of more than {MAX_IMAGE} characters, which no installer DaemonSet has: {ERRORS_POLICY} denies it (size-guard, not a check rule; not ratcheted) and judges nothing else. The gitops policy has no guard: past the API server's cost budget its failurePolicy Ignore admits."
        ),
    );
    if api.ends_with("v1beta1") {
        wrap(
            &mut h,
            "# ",
            &format!(
                "Kubernetes 1.{}: {api} is off by default; the API server needs --runtime-config={api}=true and the ValidatingAdmissionPolicy feature gate.",
                req.kube_minor
            ),
        );
    }
    h
}

fn warn_action(a: Action) -> Action {
    if a == Action::Audit {
        Action::Audit
    } else {
        Action::Warn
    }
}

/// The failurePolicy of each policy, and why (for the header and docs/admission-policy.md).
pub fn failure_policy(policy: &str) -> (&'static str, &'static str) {
    if policy == gitops::GITOPS_POLICY {
        gitops::FAILURE_POLICY
    } else if policy == WARNINGS_POLICY {
        (
            "Fail",
            "its binding only warns (or audits), so an expression that cannot be evaluated is shown as a warning, never a denial",
        )
    } else {
        (
            "Fail",
            "it matches only the two installer DaemonSets by name in kube-system (matchConstraints, no CEL), and an installer the policy cannot judge is refused",
        )
    }
}

/// The matchCondition that selects the installer DaemonSets (total: never an error).
pub fn installer_condition() -> (&'static str, String) {
    (
        "cgpu-installer-daemonset",
        format!(
            "has(object.metadata.name) && object.metadata.name in [{}]",
            INSTALLER_NAMES
                .iter()
                .map(|n| lit(n))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
}

fn policy_doc(name: &str, api: &str, sev: Severity, params: bool) -> String {
    let (cond, cond_expr) = installer_condition();
    let mut s = format!(
        "---\napiVersion: {api}\nkind: ValidatingAdmissionPolicy\nmetadata:\n  name: {name}\n  labels:\n    app.kubernetes.io/managed-by: cgpu-lint\n    app.kubernetes.io/version: {VERSION_LABEL}\nspec:\n  failurePolicy: {}\n  matchConstraints:\n    resourceRules:\n    - apiGroups: [\"apps\"]\n      apiVersions: [\"v1\"]\n      operations: [\"CREATE\", \"UPDATE\"]\n      resources: [\"daemonsets\"]\n      resourceNames: [{}]\n    namespaceSelector:\n      matchLabels:\n        kubernetes.io/metadata.name: kube-system\n{}  matchConditions:\n  - name: {cond}\n    expression: {}\n  variables:\n",
        failure_policy(name).0,
        INSTALLER_NAMES
            .iter()
            .map(|n| q(n))
            .collect::<Vec<_>>()
            .join(", "),
        if params {
            "  paramKind:\n    apiVersion: v1\n    kind: ConfigMap\n"
        } else {
            ""
        },
        q(&cond_expr),
    );
    let vars = variables_for(params);
    for (n, e) in &vars {
        s.push_str(&format!("  - name: {n}\n    expression: {}\n", q(e)));
    }
    if sev == Severity::Error {
        for (n, e) in old_variables(&vars) {
            s.push_str(&format!("  - name: {n}\n    expression: {}\n", q(&e)));
        }
    }
    s.push_str("  validations:\n");
    if sev == Severity::Error {
        s.push_str(&format!(
            "  - expression: \"variables.small\"\n    message: {}\n    reason: Invalid\n",
            q(&size_guard_message())
        ));
    }
    for c in checks_for(params).into_iter().filter(|c| c.severity == sev) {
        let r = c.rule.info();
        // Past the size guard nothing else is judged; an old object past it ratchets nothing.
        let expression = if c.ratchet.is_empty() {
            format!("!variables.small || ({})", c.expression)
        } else {
            format!(
                "!variables.small || ({} || (request.operation == 'UPDATE' && variables.oldSmall && {}))",
                c.expression, c.ratchet
            )
        };
        s.push_str(&format!(
            "  - expression: {}\n    message: {}\n    messageExpression: {}\n    reason: Invalid\n",
            q(&expression),
            q(&format!("{}: {}", r.name, r.summary)),
            q(&format!(
                "{} + ({})",
                lit(&format!("{}: ", r.name)),
                c.message_expression
            )),
        ));
    }
    s
}

fn binding_doc(name: &str, api: &str, action: Action, params: bool) -> String {
    let param_ref = if params {
        format!(
            "  paramRef:\n    name: {PARAMS_CONFIGMAP}\n    namespace: kube-system\n    parameterNotFoundAction: Deny\n"
        )
    } else {
        String::new()
    };
    format!(
        "---\napiVersion: {api}\nkind: ValidatingAdmissionPolicyBinding\nmetadata:\n  name: {name}\n  labels:\n    app.kubernetes.io/managed-by: cgpu-lint\n    app.kubernetes.io/version: {VERSION_LABEL}\nspec:\n  policyName: {name}\n  validationActions: [{}]\n{param_ref}",
        action.as_str()
    )
}

/// The params ConfigMap, with the tool's facts as its values.
fn params_doc() -> String {
    format!(
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {PARAMS_CONFIGMAP}\n  namespace: kube-system\n  labels:\n    app.kubernetes.io/managed-by: cgpu-lint\n    app.kubernetes.io/version: {VERSION_LABEL}\ndata:\n  # Region ids (comma-separated) region-unknown accepts in a registry host (also with -pub).\n  allowedRegions: {}\n  # The oldest cGPU (MAJOR.MINOR.PATCH) with the policy setting: older is tag-too-old.\n  minVersion: {}\n  # Registry hosts (comma-separated) registry-host accepts besides ACK's, such as a mirror.\n  registries: \"\"\n",
        q(&KNOWN_REGIONS.join(",")),
        q(&min_policy_version().to_string())
    )
}

/// The policies and bindings as one YAML stream, for `kubectl apply -f`.
pub fn generate(req: &Request) -> String {
    let api = if req.kube_minor >= V1_MINOR {
        "admissionregistration.k8s.io/v1"
    } else {
        "admissionregistration.k8s.io/v1beta1"
    };
    let mut out = header(req, api);
    if req.params {
        out.push_str(&params_doc());
    }
    out.push_str(&policy_doc(ERRORS_POLICY, api, Severity::Error, req.params));
    out.push_str(&binding_doc(ERRORS_POLICY, api, req.action, req.params));
    out.push_str(&policy_doc(
        WARNINGS_POLICY,
        api,
        Severity::Warning,
        req.params,
    ));
    out.push_str(&binding_doc(
        WARNINGS_POLICY,
        api,
        warn_action(req.action),
        req.params,
    ));
    if req.include_gitops {
        out.push_str(&gitops::documents(api, req.action));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_has_the_catalogue_severity_but_the_digest_warning() {
        for c in checks() {
            let digest = c.rule == RuleId::InstallerImageTag && c.severity == Severity::Warning;
            assert!(
                digest || c.rule.info().severity == c.severity,
                "{}",
                c.rule.name()
            );
        }
    }

    #[test]
    fn kube_versions() {
        assert_eq!(parse_kube_version("1.30"), Ok(30));
        assert_eq!(parse_kube_version("v1.31.2"), Ok(31));
        assert!(parse_kube_version("1.27").is_err());
        assert!(parse_kube_version("2.0").is_err());
    }
}
