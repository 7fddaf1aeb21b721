//! `generate admission-policy --include-gitops`: a ValidatingAdmissionPolicy for the Flux
//! HelmReleases (helm.toolkit.fluxcd.io v2, v2beta2, v2beta1) and Argo CD Applications (argoproj.io/v1alpha1) of
//! the ack-ai-installer chart. It judges the `cgpu:` block of `spec.values` (Flux) and of each
//! chart source's `helm.valuesObject` with its `helm.parameters` applied as Argo CD renders them
//! (Argo CD), the values `check` reads in place there (`helm::place`), for the values rules that
//! one block decides. A `values: |` string, value files and Flux `valuesFrom` are not seen (CEL
//! cannot parse YAML; `valuesFrom` is not in the object). `tests/it/admission.rs` proves it equal to
//! `check` by execution.

use super::expr::{
    Action, Check, NUM, VERSION_LABEL, lit, old_variables, on_old, q, rewrite_code, version_below,
    words,
};
use crate::catalogue::{RuleId, Severity};
use crate::cgpu::{
    CHART, MAX_POLICY, POLICIES, POLICY_NAMES, POLICY_RANGE_TEXT, TagError, min_policy_version,
};

/// The policy (and binding) name.
pub const GITOPS_POLICY: &str = "cgpu-lint-gitops-values-errors";

/// The policy's failurePolicy, and why (`admission::failure_policy` answers it for this policy).
pub const FAILURE_POLICY: (&str, &str) = (
    "Ignore",
    "it matches every team's HelmReleases and Applications; an expression that cannot be evaluated (an unforeseen shape, the cost budget) admits the object instead of refusing it, and CI's `cgpu-lint check` remains the gate",
);

/// The Flux HelmRelease versions matched, each named (the API server's `matchPolicy:
/// Equivalent` would also send a request of another served version, converted by the CRD to a
/// listed one; `check --admission-policy` matches the version as written).
pub const HELMRELEASE_VERSIONS: &[&str] = &["v2", "v2beta2", "v2beta1"];

/// The name of the matchCondition that selects the chart's objects.
pub const CHART_CONDITION: &str = "ack-ai-installer-chart";

/// `s` (an Argo CD source) names the chart: its `chart`, or the last segment of its `path`.
fn source_names_chart(s: &str) -> String {
    format!(
        "(has({s}.chart) ? {s}.chart == {} : (has({s}.path) && {s}.path.matches({})))",
        lit(CHART),
        chart_re()
    )
}

/// helm::place::chart_name: the last path segment, trailing slashes trimmed.
fn chart_re() -> String {
    lit(&format!("^(.*/)?{}/*$", CHART.replace('.', "[.]")))
}

/// The matchCondition: the object is a HelmRelease or an Application of the chart. Total on
/// every object the CRDs admit (each field is tested with `has` before it is read), so another
/// chart's object is never evaluated, whatever its shape.
pub fn chart_condition() -> String {
    let chart = lit(CHART);
    let chart_re = chart_re();
    format!(
        "has(object.spec) && (object.kind == 'HelmRelease' ? (has(object.spec.chart) && has(object.spec.chart.spec) && has(object.spec.chart.spec.chart) ? object.spec.chart.spec.chart.matches({chart_re}) : (has(object.spec.chartRef) && has(object.spec.chartRef.name) && object.spec.chartRef.name == {chart})) : ((has(object.spec.source) && {}) || (has(object.spec.sources) && object.spec.sources.exists(s, {}))))",
        source_names_chart("object.spec.source"),
        source_names_chart("s"),
    )
}

/// The keys of a `cgpu:` block the validations judge.
const JUDGED: [&str; 5] = [
    "enabled",
    "checkRegions",
    "policy",
    "tag",
    "financeCloudImageTag",
];

/// CEL that binds `e` to `x` in `body` (a one-element list mapped, CEL having no `let` in
/// every Kubernetes version the policy is generated for).
fn bind(e: &str, x: &str, body: &str) -> String {
    format!("[{e}].map({x}, {body})[0]")
}

/// The value `--set` gives the parameter string `x` (Helm's strvals `typedVal`, as
/// `helm::strvals` reads it): `true`/`false`/`null` in any ASCII case, `0`, an int64 without
/// a leading zero (a sign allowed), otherwise the string. `null` is CEL's null: the key is
/// then not judged, as Helm drops a null key.
fn set_typed(x: &str) -> String {
    format!(
        "({x}.lowerAscii() == 'true' ? dyn(true) : {x}.lowerAscii() == 'false' ? dyn(false) : {x}.lowerAscii() == 'null' ? dyn(null) : {x} == '0' ? dyn(0) : ({x}.matches('^[+-]?[0-9]+$') && !{x}.startsWith('0') && {}) ? dyn(int({x})) : dyn({x}))",
        bind(
            &format!("{x}.find('[1-9][0-9]*$')"),
            "d",
            &format!(
                "size(d) < 19 || (size(d) == 19 && d <= ({x}.startsWith('-') ? '9223372036854775808' : '9223372036854775807'))"
            )
        )
    )
}

/// The `cgpu:` block Argo CD renders for the source `s`, as far as the judged keys go: each
/// key the value of the last parameter named `cgpu.KEY` (one with `forceString: true` as
/// `--set-string`, after every `--set`, as Argo CD passes them), else the valuesObject's, else
/// null (not judged: a `values: |` string or a value file may set it).
fn argo_block(s: &str) -> String {
    let params = format!("(has({s}.helm) && has({s}.helm.parameters) ? {s}.helm.parameters : [])");
    let base = format!(
        "(has({s}.helm) && has({s}.helm.valuesObject) && type({s}.helm.valuesObject) == map && 'cgpu' in {s}.helm.valuesObject && type({s}.helm.valuesObject.cgpu) == map ? {s}.helm.valuesObject.cgpu : {{}})"
    );
    let forced = "(has(p.forceString) && p.forceString == true)";
    let keys: Vec<String> = JUDGED
        .iter()
        .map(|k| {
            let named = format!(
                "{params}.filter(p, p.name == {} && has(p.value) && type(p.value) == string)",
                lit(&format!("cgpu.{k}"))
            );
            // Candidates in the order Helm applies them: the last one is the value.
            let candidates = format!(
                "(('{k}' in c) ? [dyn(c.{k})] : []) + ps.filter(p, !{forced}).map(p, {}) + ps.filter(p, {forced}).map(p, dyn(p.value))",
                set_typed("p.value")
            );
            format!(
                "'{k}': {}",
                bind(
                    &named,
                    "ps",
                    &bind(
                        &candidates,
                        "l",
                        "size(l) == 0 ? dyn(null) : l[size(l) - 1]"
                    )
                )
            )
        })
        .collect();
    bind(&base, "c", &format!("{{'cgpu': {{{}}}}}", keys.join(", ")))
}

/// The variables, in order: `values` is every values map the object hands the chart (the
/// matchCondition has selected the chart's objects; an Argo CD source's is its `cgpu:` block
/// with the parameters applied), `blocks` their `cgpu` mappings.
pub fn variables() -> Vec<(&'static str, String)> {
    vec![
        (
            "values",
            format!(
                "object.kind == 'HelmRelease' ? (has(object.spec.values) ? [object.spec.values] : []) : dyn(has(object.spec.source) && {} ? [{}] : []) + dyn(has(object.spec.sources) ? object.spec.sources.filter(s, {}).map(s, {}) : [])",
                source_names_chart("object.spec.source"),
                argo_block("object.spec.source"),
                source_names_chart("s"),
                argo_block("s"),
            ),
        ),
        (
            "blocks",
            "variables.values.filter(v, type(v) == map && 'cgpu' in v && type(v.cgpu) == map).map(v, v.cgpu)".into(),
        ),
    ]
}

/// CEL about the block `b`, about the block `name` instead (code only, not literals).
fn block_as(expr: &str, name: &str) -> String {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| regex::Regex::new(r"\bb\b").expect("regex"));
    rewrite_code(expr, |code| re.replace_all(code, name).into_owned())
}

/// The ratchet of a rule whose violations are `parts` (each key's condition and message in
/// the block `b`): every violation of the new object's blocks is one of the old object's
/// blocks too, with the same message (the message names the value).
fn ratchet(parts: &[(String, String)]) -> String {
    let olds: Vec<String> = parts
        .iter()
        .map(|(c, m)| format!("(({}) && ({}) == msg)", block_as(c, "o"), block_as(m, "o")))
        .collect();
    parts
        .iter()
        .map(|(cond, msg)| {
            format!(
                "variables.blocks.all(b, !({cond}) || [{msg}].all(msg, variables.oldBlocks.exists(o, {})))",
                olds.join(" || ")
            )
        })
        .collect::<Vec<_>>()
        .join(" && ")
}

/// A valid tag (`check_tag`'s parse): the installer policy's `tagValid`, on `t`.
fn tag_valid(t: &str) -> String {
    format!(
        "{t}.matches('^v?{n}[.]{n}[.]{n}(-[0-9A-Za-z.-]+)?$')",
        n = NUM
    )
}

fn tag_core(t: &str) -> String {
    format!("({t}.startsWith('v') ? {t}.substring(1) : {t}).split('-')[0]")
}

/// The validations (all errors: the policy denies).
pub fn checks() -> Vec<Check> {
    use RuleId::*;
    // `parts`: each key's (condition, message) in the block `b`, for the ratchet.
    let c = |rule,
             (expression, message_expression): (String, String),
             parts: &[(String, String)]| Check {
        rule,
        severity: Severity::Error,
        expression,
        message_expression,
        ratchet: ratchet(parts),
    };
    let strbool = |k: &str| format!("('{k}' in b && type(b.{k}) == string)");
    let bool_msg = |k: &str| {
        format!(
            "(b.{k}.trim().lowerAscii() in ['false', 'no', 'off', 'n'] ? {} : {})",
            words(
                &format!(
                    "`{k}` is the string \"\0\": a Go template treats every non-empty string as true, so this does NOT turn it off"
                ),
                &[&format!("b.{k}")]
            ),
            words(
                &format!("`{k}` is the string \"\0\", not a boolean"),
                &[&format!("b.{k}")]
            ),
        )
    };
    // policy, by type: check's `values::policy`.
    let digits = "b.policy.matches('^[0-9]{1,19}$')";
    let whole = "(b.policy > -1e15 && b.policy < 1e15 && double(int(b.policy)) == b.policy)";
    // Helm holds every number as a float64: an integer from 1e15 on it renders as a float
    // (`rules::values::policy`); `--set` makes such integers of a parameter's digits.
    let huge = "(b.policy >= 1000000000000000 || b.policy <= -1000000000000000)";
    let not_integer = format!(
        "('policy' in b && ((type(b.policy) == string && !{digits}) || (type(b.policy) == double && !{whole}) || (type(b.policy) == int && {huge})))"
    );
    // The digit strings of the policies above 0 ("0" itself does not match the pattern).
    let policy_strings: Vec<String> = POLICIES.skip(1).map(|n| format!("'{n}'")).collect();
    let policy_strings = policy_strings.join(", ");
    let out_of_range = format!(
        "('policy' in b && ((type(b.policy) == int && !{huge} && (b.policy < 0 || b.policy > {MAX_POLICY})) || (type(b.policy) == string && b.policy.matches('^[1-9][0-9]{{0,18}}$') && !(b.policy in [{policy_strings}])) || (type(b.policy) == double && {whole} && (b.policy < 0.0 || b.policy > {MAX_POLICY}.0))))"
    );
    let names: Vec<String> = POLICY_NAMES
        .iter()
        .map(|(n, v)| format!("{}: {v}", lit(&n.to_ascii_lowercase())))
        .collect();
    let names = format!("{{{}}}", names.join(", "));
    let not_integer_msg = format!(
        "type(b.policy) == int ? {} : type(b.policy) == double ? {} : b.policy.trim().lowerAscii() in {names} ? {} : {}",
        words(
            &format!(
                "policy `\0` is a float to Helm, which holds every number as a float64; cGPU policies are the integers {POLICY_RANGE_TEXT}"
            ),
            &["string(b.policy)"]
        ),
        words(
            &format!("policy `\0` is a float; cGPU policies are the integers {POLICY_RANGE_TEXT}"),
            &["string(b.policy)"]
        ),
        words(
            "policy `\0` is a name; the chart needs its number, \0",
            &[
                "b.policy",
                &format!("string({names}[b.policy.trim().lowerAscii()])")
            ]
        ),
        words(
            &format!("policy `\0` is not a number {POLICY_RANGE_TEXT}"),
            &["b.policy"]
        ),
    );
    let out_of_range_msg = words(
        &format!("policy \0 does not exist; cGPU policies are {POLICY_RANGE_TEXT}"),
        &[
            "(type(b.policy) == string ? b.policy : type(b.policy) == int ? string(b.policy) : string(int(b.policy)))",
        ],
    );
    let tag_keys = ["tag", "financeCloudImageTag"];
    let bad_tag = |k: &str| {
        format!(
            "('{k}' in b && type(b.{k}) == string && !{})",
            tag_valid(&format!("b.{k}"))
        )
    };
    let old_tag = |k: &str| {
        format!(
            "('{k}' in b && type(b.{k}) == string && {} && b.{k}.matches('{}'))",
            tag_valid(&format!("b.{k}")),
            version_below(min_policy_version())
        )
    };
    let bad_tag_msg = |k: &str| {
        let t = format!("b.{k}");
        format!(
            "({t}.trim() == '' ? {} : {t} == 'latest' ? {} : {})",
            lit(&format!("`{k}`: {}", TagError::Empty.message(""))),
            lit(&format!("`{k}`: {}", TagError::Latest.message(""))),
            words(
                &format!("`{k}`: {}", TagError::Malformed.message("\0")),
                &[&t]
            ),
        )
    };
    let old_msg = |k: &str| {
        words(
            &format!(
                "cGPU \0 is older than {}: the policy setting is not supported",
                min_policy_version()
            ),
            &[&tag_core(&format!("b.{k}"))],
        )
    };
    // A violation in a block: the expression and the message.
    let any = |cond: String, msg: String| {
        (
            format!("!variables.blocks.exists(b, {cond})"),
            format!("variables.blocks.filter(b, {cond}).map(b, ({msg}))[0]"),
        )
    };
    let mut out = Vec::new();
    let v = any(
        format!("{} || {}", strbool("enabled"), strbool("checkRegions")),
        format!(
            "{} ? {} : {}",
            strbool("enabled"),
            bool_msg("enabled"),
            bool_msg("checkRegions")
        ),
    );
    let parts = ["enabled", "checkRegions"].map(|k| (strbool(k), bool_msg(k)));
    out.push(c(StringBoolean, v, &parts));
    let parts = [(not_integer.clone(), not_integer_msg.clone())];
    let v = any(not_integer, not_integer_msg);
    out.push(c(PolicyNotInteger, v, &parts));
    let parts = [(out_of_range.clone(), out_of_range_msg.clone())];
    let v = any(out_of_range, out_of_range_msg);
    out.push(c(PolicyOutOfRange, v, &parts));
    let v = any(
        tag_keys
            .iter()
            .map(|k| bad_tag(k))
            .collect::<Vec<_>>()
            .join(" || "),
        format!(
            "{} ? {} : {}",
            bad_tag("tag"),
            bad_tag_msg("tag"),
            bad_tag_msg("financeCloudImageTag")
        ),
    );
    let parts = tag_keys.map(|k| (bad_tag(k), bad_tag_msg(k)));
    out.push(c(TagInvalid, v, &parts));
    let v = any(
        tag_keys
            .iter()
            .map(|k| old_tag(k))
            .collect::<Vec<_>>()
            .join(" || "),
        format!(
            "{} ? {} : {}",
            old_tag("tag"),
            old_msg("tag"),
            old_msg("financeCloudImageTag")
        ),
    );
    let parts = tag_keys.map(|k| (old_tag(k), old_msg(k)));
    out.push(c(TagTooOld, v, &parts));
    out
}

/// Whether a values rule is in this policy (for the header and `explain`).
pub fn covers(rule: RuleId) -> bool {
    checks().iter().any(|c| c.rule == rule)
}

/// The policy and its binding.
pub fn documents(api: &str, action: Action) -> String {
    let mut s = format!(
        "---\napiVersion: {api}\nkind: ValidatingAdmissionPolicy\nmetadata:\n  name: {GITOPS_POLICY}\n  labels:\n    app.kubernetes.io/managed-by: cgpu-lint\n    app.kubernetes.io/version: {VERSION_LABEL}\nspec:\n  failurePolicy: {}\n  matchConstraints:\n    matchPolicy: Equivalent\n    resourceRules:\n    - apiGroups: [\"helm.toolkit.fluxcd.io\"]\n      apiVersions: [{}]\n      operations: [\"CREATE\", \"UPDATE\"]\n      resources: [\"helmreleases\"]\n    - apiGroups: [\"argoproj.io\"]\n      apiVersions: [\"v1alpha1\"]\n      operations: [\"CREATE\", \"UPDATE\"]\n      resources: [\"applications\"]\n  matchConditions:\n  - name: {CHART_CONDITION}\n    expression: {}\n  variables:\n",
        FAILURE_POLICY.0,
        HELMRELEASE_VERSIONS
            .iter()
            .map(|v| q(v))
            .collect::<Vec<_>>()
            .join(", "),
        q(&chart_condition()),
    );
    let vars = variables();
    for (n, e) in &vars {
        s.push_str(&format!("  - name: {n}\n    expression: {}\n", q(e)));
    }
    // The old object's blocks, for the ratchets: only when it was the chart's too.
    for (n, e) in old_variables(&vars) {
        let e = if n == "oldValues" {
            format!("({}) ? ({e}) : []", on_old(&chart_condition()))
        } else {
            e
        };
        s.push_str(&format!("  - name: {n}\n    expression: {}\n", q(&e)));
    }
    s.push_str("  validations:\n");
    for c in checks() {
        let r = c.rule.info();
        s.push_str(&format!(
            "  - expression: {}\n    message: {}\n    messageExpression: {}\n    reason: Invalid\n",
            q(&c.policy_expression()),
            q(&format!("{}: {}", r.name, r.summary)),
            q(&format!(
                "{} + ({})",
                lit(&format!("{}: ", r.name)),
                c.message_expression
            )),
        ));
    }
    s.push_str(&format!(
        "---\napiVersion: {api}\nkind: ValidatingAdmissionPolicyBinding\nmetadata:\n  name: {GITOPS_POLICY}\n  labels:\n    app.kubernetes.io/managed-by: cgpu-lint\n    app.kubernetes.io/version: {VERSION_LABEL}\nspec:\n  policyName: {GITOPS_POLICY}\n  validationActions: [{}]\n",
        action.as_str()
    ));
    s
}
