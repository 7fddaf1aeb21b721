//! The embedded JSON Schema of the `cgpu:` block (`cgpu-lint schema`), and the `wrong-type`
//! findings it decides, in the project's words.

use crate::catalogue::RuleId;
use std::sync::OnceLock;

use crate::cgpu::{
    self as version, EXPECTED_IMAGE, POLICY_RANGE_TEXT, POLICY_TITLES, PULL_POLICIES,
    RECOMMENDED_VERSION, env_policy, policy_number,
};
use crate::rules::Ctx;
use crate::yaml::emit::double_quoted;
use crate::yaml::{Node, Scalar, Value};

pub fn schema_text() -> &'static str {
    include_str!("../../schemas/ack-ai-installer-values.schema.json")
}

pub fn schema() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| {
        let schema: serde_json::Value =
            serde_json::from_str(schema_text()).expect("the embedded schema is JSON");
        jsonschema::validator_for(&schema).expect("the embedded schema compiles")
    })
}

/// Let the JSON Schema decide types: any schema error that no rule has already reported at the
/// same place becomes a `wrong-type` finding, so each problem is reported once.
pub(crate) fn schema_findings(ctx: &mut Ctx, root: &Node, before: usize) {
    let instance = serde_json::json!({ "cgpu": root.get("cgpu").map(Node::to_json) });
    // Only an error covers a schema error: a `yaml11-scalar` warning on the same value must
    // not hide that the value Helm reads has the wrong type (`policy: yes` is a boolean).
    // The one warning that does is `unknown-key`: it is the schema's additionalProperties
    // error, reported key by key with a suggestion (a typo is a warning).
    let reported: Vec<String> = ctx.out[before..]
        .iter()
        .filter(|d| d.severity == crate::catalogue::Severity::Error || d.rule == RuleId::UnknownKey)
        .map(|d| d.path.clone())
        .collect();
    // Compiling the 2020-12 schema is most of the start-up of a one-file check; a block that
    // plainly satisfies it (the common case) does not need the validator, nor does one whose
    // other keys all have a finding already (every schema error would be covered: see
    // `uncovered_keys_decide`). `surely_valid` only ever answers yes for blocks the schema
    // accepts (a property test holds it to that).
    if surely_valid(&without_reported_keys(&instance["cgpu"], &reported)) {
        return;
    }
    let validator = schema();
    if validator.is_valid(&instance) {
        return;
    }
    let mut extra = Vec::new();
    for err in validator.iter_errors(&instance) {
        let path = err.instance_path().as_str().to_string();
        if covered(&reported, &path) || extra.contains(&path) {
            continue;
        }
        extra.push(path);
    }
    // The schema says which value is wrong; the words are ours (never a schema
    // library's), built from the key and the value as Helm reads it.
    for path in extra {
        let Some(node) = root.pointer(&path) else {
            continue;
        };
        let (message, help) = wrong_type(&path, node);
        ctx.at(RuleId::WrongType, node, path, message).help(help);
    }
}

/// Is a schema error at `path` covered by a finding at one of `reported`: the same value, one
/// inside it or the one holding it?
fn covered(reported: &[String], path: &str) -> bool {
    reported.iter().any(|p| {
        p == path || p.starts_with(&format!("{path}/")) || path.starts_with(&format!("{p}/"))
    })
}

/// The `cgpu` block without the keys that have a finding at them (`/cgpu/KEY` in `reported`):
/// each key's schema errors lie at or under its path, or (an unknown key's) at `/cgpu`, all of
/// them covered by that finding.
fn without_reported_keys(cgpu: &serde_json::Value, reported: &[String]) -> serde_json::Value {
    let mut rest = cgpu.clone();
    if let Some(map) = rest.as_object_mut() {
        map.retain(|k, _| {
            let p = format!("/cgpu/{}", crate::yaml::node::escape_pointer(k));
            !reported.contains(&p)
        });
    }
    rest
}

/// A value as Helm reads it, in words: `empty`, `the boolean true`, `the number 3`, `the
/// string "x"`, `a list [2]`.
pub fn as_helm_reads(node: &Node) -> String {
    let raw = node.raw();
    let shown = |what: &str| {
        if raw.len() <= 40 && !raw.contains('\n') {
            format!("{what} `{raw}`")
        } else {
            what.to_string()
        }
    };
    match &node.value {
        Value::Scalar(Scalar::Null) => "empty".into(),
        Value::Scalar(Scalar::Bool(b)) => format!("the boolean {b}"),
        Value::Scalar(Scalar::Int(i)) => format!("the number {i}"),
        Value::Scalar(s @ Scalar::Float(_)) => {
            format!("the number {}", s.canonical().unwrap_or_default())
        }
        Value::Scalar(Scalar::Str(s)) => format!("the string {}", double_quoted(s)),
        Value::Seq(_) => shown("a list"),
        Value::Map(_) => shown("a mapping"),
    }
}

/// What a cgpu key takes, and what to write.
fn takes(key: &str) -> (String, String) {
    let (takes, write) = match key {
        "enabled" | "checkRegions" => ("true or false".into(), format!("`{key}: true`")),
        "image" => (
            "the repository path of the installer image".into(),
            format!("`image: {EXPECTED_IMAGE}`"),
        ),
        "tag" => (
            "an image tag of ACK's form, v<version>-<sha>-aliyun".into(),
            format!("a released tag, cGPU {RECOMMENDED_VERSION} or later"),
        ),
        "financeCloudImageTag" => (
            "a finance-cloud (-fin) image tag".into(),
            format!("`financeCloudImageTag: {}`", version::DEFAULT_FINANCE_TAG),
        ),
        "imagePullPolicy" => (
            "Always, IfNotPresent or Never".into(),
            "`imagePullPolicy: IfNotPresent`".into(),
        ),
        "policy" => (
            format!("a number {POLICY_RANGE_TEXT}"),
            format!(
                "`policy: {}` ({}), or another of {POLICY_RANGE_TEXT}",
                version::CHART_DEFAULT_POLICY,
                POLICY_TITLES[version::CHART_DEFAULT_POLICY as usize]
            ),
        ),
        "nodeSelector" => (
            "a map of label key to string value".into(),
            "`nodeSelector: {ack.node.gpu.schedule: cgpu}`".into(),
        ),
        _ => (
            "another type".into(),
            "the type `cgpu-lint schema` gives".into(),
        ),
    };
    (takes, write)
}

/// The `wrong-type` message and help for the value at `path`, in the project's words.
fn wrong_type(path: &str, node: &Node) -> (String, String) {
    let mut segments = path.trim_start_matches('/').split('/');
    let key = segments.nth(1).unwrap_or("cgpu");
    let name = path.trim_start_matches('/').replace('/', ".");
    let (takes, example) = takes(key);
    if matches!(node.scalar(), Some(Scalar::Null)) {
        return (
            format!(
                "`{name}` is empty: Helm deletes the chart's default for it, and the chart gets no value where it needs {takes}"
            ),
            format!("write {example}, or delete the line to keep the chart's default"),
        );
    }
    (
        format!(
            "`{name}` is {} to Helm; it takes {takes}",
            as_helm_reads(node)
        ),
        format!("write {example}"),
    )
}

/// A conservative stand-in for the schema: true only when every key of the block is one the
/// schema knows and its value has the schema's type and shape. Anything unusual answers false
/// and goes to the real validator.
pub fn surely_valid(cgpu: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    let Some(map) = cgpu.as_object() else {
        return false;
    };
    let tag_ok = |v: &J| v.as_str().is_some_and(|t| version::parse_tag(t).is_ok());
    map.iter().all(|(k, v)| match k.as_str() {
        "enabled" | "checkRegions" => v.is_boolean(),
        "image" => v.is_string(),
        "tag" | "financeCloudImageTag" => tag_ok(v),
        "imagePullPolicy" => v.as_str().is_some_and(|p| PULL_POLICIES.contains(&p)),
        "policy" => match v {
            J::Number(n) => n
                .as_u64()
                .is_some_and(|n| policy_number(i128::from(n)).is_some()),
            J::String(s) => env_policy(s).is_some(),
            _ => false,
        },
        "nodeSelector" => match v {
            J::Null => true,
            J::Object(m) => m
                .values()
                .all(|x| x.as_str().is_some_and(|s| s.chars().count() <= 63)),
            _ => false,
        },
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cgpu::KNOWN_KEYS;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = serde_json::Value> {
        use serde_json::json;
        prop_oneof![
            Just(json!(null)),
            any::<bool>().prop_map(|b| json!(b)),
            (-3i64..9).prop_map(|n| json!(n)),
            Just(json!(1.5)),
            Just(json!(2.0)),
            prop::sample::select(vec![
                "",
                "1",
                "5",
                "6",
                "01",
                " 1",
                "latest",
                "v1.5.3-8d3fc1b-aliyun",
                "1.0.6-0123456",
                "v1.5",
                "Always",
                "always",
                "IfNotPresent",
                "Never",
                "acs/cgpu-installer",
                "cgpu",
            ])
            .prop_map(|s| json!(s)),
            Just(json!({"ack.node.gpu.schedule": "cgpu"})),
            Just(json!({"a": true})),
            Just(json!({"a": "x".repeat(64)})),
            Just(json!([1, 2])),
        ]
    }

    fn block() -> impl Strategy<Value = serde_json::Value> {
        let mut all: Vec<&'static str> = KNOWN_KEYS.to_vec();
        all.push("polcy");
        let keys = prop::sample::subsequence(all, 0..9);
        (keys, prop::collection::vec(value(), 9)).prop_map(|(keys, values)| {
            serde_json::Value::Object(
                keys.into_iter()
                    .zip(values)
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// The fast path may only skip the validator for blocks the schema accepts.
        #[test]
        fn surely_valid_implies_the_schema_accepts(cgpu in block()) {
            if surely_valid(&cgpu) {
                let instance = serde_json::json!({ "cgpu": cgpu });
                prop_assert!(schema().is_valid(&instance), "{instance}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Skipping the validator when the keys without a finding are surely valid loses no
        /// finding: every schema error then lies where a finding covers it.
        #[test]
        fn uncovered_keys_decide(cgpu in block(), mask in any::<u16>()) {
            let keys: Vec<&String> = cgpu.as_object().unwrap().keys().collect();
            let reported: Vec<String> = keys
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, k)| format!("/cgpu/{k}"))
                .collect();
            if surely_valid(&without_reported_keys(&cgpu, &reported)) {
                let instance = serde_json::json!({ "cgpu": cgpu });
                for err in schema().iter_errors(&instance) {
                    let path = err.instance_path().as_str().to_string();
                    prop_assert!(covered(&reported, &path), "{path} in {instance}");
                }
            }
        }
    }

    #[test]
    fn the_documented_defaults_take_the_fast_path() {
        let defaults = serde_json::json!({
            "enabled": true, "image": "acs/cgpu-installer", "tag": "v1.5.3-8d3fc1b-aliyun",
            "financeCloudImageTag": "v1.0.7-fin", "imagePullPolicy": "IfNotPresent",
            "policy": 1, "nodeSelector": {}, "checkRegions": true
        });
        assert!(surely_valid(&defaults));
        assert!(!surely_valid(&serde_json::json!({"policy": 7})));
    }
}
