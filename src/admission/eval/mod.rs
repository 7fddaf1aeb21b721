//! Offline evaluation of ValidatingAdmissionPolicies (admissionregistration.k8s.io v1 and
//! v1beta1) and their bindings with kube-cel, the Kubernetes CEL libraries on the `cel` crate.
//! This module is the only one that names kube-cel or cel. It adds what the cel crate lacks and
//! the API server's cel-go has: `type()`, `dyn()` and a compiled-regex `matches`.
//!
//! What the API server does and this does too: matchConstraints and a binding's matchResources
//! (resourceRules with `*` and resourceNames, excludeResourceRules, namespaceSelector and
//! objectSelector with matchLabels and matchExpressions), matchConditions, `variables` in order
//! (a variable that fails to evaluate fails only the expressions that use it, as the lazy
//! apiserver does), validations with message and messageExpression, failurePolicy (Fail: an
//! evaluation error rejects like a failed validation; Ignore: it is dropped, and listed in
//! `Outcome::ignored`), a false matchCondition winning over another's error, and the binding's
//! validationActions, params (the object a binding's paramRef names, among the file's other
//! objects; parameterNotFoundAction). What it cannot do offline: `authorizer` (no API server
//! to ask), a paramRef selector (reported, the policy is not evaluated), namespace labels other than
//! `kubernetes.io/metadata.name`, and the runtime cost budget.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kube_cel::KubeCelExt;
use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::{Context, Program, Value};
use serde_json::Value as Json;

use super::Action;
use crate::yaml::Source;

/// A problem in the policy file: the document (0-based) and the JSON pointer inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub document: usize,
    pub pointer: String,
    pub message: String,
}

/// One outcome of a failed validation (or of an expression that could not be evaluated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub policy: String,
    pub binding: String,
    pub actions: Vec<Action>,
    /// The rule id the message starts with (`installer-policy-invalid: …`), when it does.
    pub rule: Option<String>,
    pub message: String,
    /// The expression did not evaluate to a boolean (an error: failurePolicy decided).
    pub evaluation_error: bool,
    /// Where the validation is: document and pointer (`/spec/validations/3`).
    pub document: usize,
    pub pointer: String,
}

/// The request, as the API server would describe the admission of `object`.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub object: &'a Json,
    pub old_object: Option<&'a Json>,
    /// CREATE or UPDATE.
    pub operation: &'a str,
    /// The namespace the object is admitted in.
    pub namespace: &'a str,
}

/// The result of admitting one object.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The (policy, binding) pairs that matched the object.
    pub matched: Vec<(String, String)>,
    /// Policies that matched but cannot be evaluated offline, and why.
    pub skipped: Vec<(String, String)>,
    pub decisions: Vec<Decision>,
    /// Evaluation errors a policy's `failurePolicy: Ignore` dropped (policy, message): the
    /// API server admits as if the expression had passed.
    pub ignored: Vec<(String, String)>,
}

impl Outcome {
    /// Would the API server reject the request?
    pub fn denied(&self) -> bool {
        self.decisions
            .iter()
            .any(|d| d.actions.contains(&Action::Deny))
    }
}

#[derive(Debug, Clone, Default)]
struct Rule {
    groups: Vec<String>,
    versions: Vec<String>,
    operations: Vec<String>,
    resources: Vec<String>,
    names: Vec<String>,
}

#[derive(Debug, Clone, Default)]
struct Selector {
    labels: Vec<(String, String)>,
    /// key, operator (In, NotIn, Exists, DoesNotExist), values.
    exprs: Vec<(String, String, Vec<String>)>,
}

#[derive(Debug, Clone, Default)]
struct Match {
    rules: Vec<Rule>,
    exclude: Vec<Rule>,
    namespace_selector: Option<Selector>,
    object_selector: Option<Selector>,
}

struct Compiled {
    name: String,
    program: Program,
}

struct Validation {
    program: Program,
    expression: String,
    message: Option<String>,
    message_program: Option<Program>,
    pointer: String,
}

struct Policy {
    name: String,
    document: usize,
    fail_closed: bool,
    matching: Match,
    /// paramKind: (apiVersion, kind).
    params: Option<(String, String)>,
    conditions: Vec<Compiled>,
    variables: Vec<Compiled>,
    validations: Vec<Validation>,
}

struct Binding {
    name: String,
    policy: String,
    actions: Vec<Action>,
    matching: Option<Match>,
    param_ref: Option<ParamRef>,
}

/// A binding's paramRef (by name; a selector is not resolved offline).
struct ParamRef {
    name: Option<String>,
    namespace: Option<String>,
    selector: bool,
    deny_not_found: bool,
}

/// Policies and bindings read from one or more documents.
pub struct PolicySet {
    policies: Vec<Policy>,
    bindings: Vec<Binding>,
    /// The file's other objects: the params a binding's paramRef names are among them.
    objects: Vec<Json>,
    /// The CEL functions (the standard ones and the Kubernetes libraries), built once.
    functions: Context<'static>,
}

/// `matches` as the cel crate defines it (the regex crate's `is_match`, unanchored), with the
/// compiled expressions kept: the cel crate compiles the pattern on every call, which costs
/// more than everything else a policy does.
fn matches(
    ftx: &kube_cel::cel::FunctionContext,
    kube_cel::cel::extractors::This(this): kube_cel::cel::extractors::This<Arc<String>>,
    pattern: Arc<String>,
) -> Result<bool, kube_cel::cel::ExecutionError> {
    static CACHE: std::sync::OnceLock<std::sync::Mutex<HashMap<String, Arc<regex::Regex>>>> =
        std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let found = cache
        .lock()
        .ok()
        .and_then(|c| c.get(pattern.as_str()).cloned());
    let re = match found {
        Some(re) => re,
        None => {
            let re = Arc::new(
                regex::Regex::new(&pattern)
                    .map_err(|err| ftx.error(format!("'{pattern}' not a valid regex:\n{err}")))?,
            );
            if let Ok(mut c) = cache.lock() {
                if c.len() > 512 {
                    c.clear();
                }
                c.insert(pattern.to_string(), re.clone());
            }
            re
        }
    };
    Ok(re.is_match(&this))
}

/// CEL's `type(x)`, which the cel crate (0.13) lacks and the API server's cel-go has. Each
/// type is stood for by its name, and the type identifiers (`map`, `string`, …) are bound to the
/// same names in [`functions`], so `type(x) == map` is decided as cel-go decides it.
fn type_of(
    kube_cel::cel::extractors::This(this): kube_cel::cel::extractors::This<Value>,
) -> Arc<String> {
    Arc::new(
        match this {
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Function(..) => "function",
            Value::Int(_) => "int",
            Value::UInt(_) => "uint",
            Value::Float(_) => "double",
            Value::String(_) => "string",
            Value::Bytes(_) => "bytes",
            Value::Bool(_) => "bool",
            Value::Null => "null_type",
            _ => "opaque",
        }
        .to_string(),
    )
}

/// CEL's `dyn(x)`: `x` itself at run time (cel-go's checker types it as `dyn`), which the cel
/// crate lacks.
fn dyn_of(
    kube_cel::cel::extractors::This(this): kube_cel::cel::extractors::This<Value>,
) -> Result<Value, kube_cel::cel::ExecutionError> {
    Ok(this)
}

/// The type identifiers `type_of` answers with.
const TYPE_NAMES: &[&str] = &[
    "list",
    "map",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "null_type",
];

fn functions() -> Context<'static> {
    let mut ctx = Context::default();
    ctx.register_all();
    ctx.add_function("matches", matches);
    ctx.add_function("type", type_of);
    ctx.add_function("dyn", dyn_of);
    for t in TYPE_NAMES {
        ctx.add_variable_from_value(*t, Value::String(Arc::new(t.to_string())));
    }
    ctx
}

const GROUP: &str = "admissionregistration.k8s.io/";

/// Compile one CEL expression, refusing what could exhaust the parser (deep nesting) and
/// catching a panic of the engine as an error.
fn compile(expr: &str) -> Result<Program, String> {
    let mut depth = 0usize;
    let mut max = 0usize;
    for b in expr.bytes() {
        match b {
            b'(' | b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if max > 64 {
        return Err(format!("nests {max} brackets deep (at most 64 here)"));
    }
    if expr.len() > 64 * 1024 {
        return Err("is longer than 64 KiB".into());
    }
    match std::panic::catch_unwind(|| Program::compile(expr)) {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(e)) => Err(format!("does not compile: {}", one_line(&e.to_string()))),
        Err(_) => Err("does not compile (the CEL parser gave up)".into()),
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn strings(v: Option<&Json>) -> Vec<String> {
    v.and_then(Json::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn rules(v: Option<&Json>) -> Vec<Rule> {
    v.and_then(Json::as_array)
        .map(|a| {
            a.iter()
                .map(|r| Rule {
                    groups: strings(r.get("apiGroups")),
                    versions: strings(r.get("apiVersions")),
                    operations: strings(r.get("operations")),
                    resources: strings(r.get("resources")),
                    names: strings(r.get("resourceNames")),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn selector(v: Option<&Json>) -> Option<Selector> {
    let v = v?;
    let labels = v
        .get("matchLabels")
        .and_then(Json::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let exprs = v
        .get("matchExpressions")
        .and_then(Json::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|e| {
                    Some((
                        e.get("key")?.as_str()?.to_string(),
                        e.get("operator")?.as_str()?.to_string(),
                        strings(e.get("values")),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    Some(Selector { labels, exprs })
}

fn matching(v: Option<&Json>) -> Match {
    Match {
        rules: rules(v.and_then(|m| m.get("resourceRules"))),
        exclude: rules(v.and_then(|m| m.get("excludeResourceRules"))),
        namespace_selector: selector(v.and_then(|m| m.get("namespaceSelector"))),
        object_selector: selector(v.and_then(|m| m.get("objectSelector"))),
    }
}

fn compiled_list(
    spec: &Json,
    key: &str,
    document: usize,
    errors: &mut Vec<LoadError>,
) -> Vec<Compiled> {
    let mut out = Vec::new();
    for (i, item) in spec
        .get(key)
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let pointer = format!("/spec/{key}/{i}/expression");
        let name = item.get("name").and_then(Json::as_str).unwrap_or("");
        match item.get("expression").and_then(Json::as_str) {
            Some(expr) => match compile(expr) {
                Ok(program) => out.push(Compiled {
                    name: name.to_string(),
                    program,
                }),
                Err(e) => errors.push(LoadError {
                    document,
                    pointer,
                    message: format!("{key} `{name}`: the expression {e}"),
                }),
            },
            None => errors.push(LoadError {
                document,
                pointer: format!("/spec/{key}/{i}"),
                message: format!("{key} `{name}` has no expression"),
            }),
        }
    }
    out
}

impl PolicySet {
    /// Read the ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding objects among
    /// `documents` (other objects are ignored). Every expression is compiled here.
    pub fn load(documents: &[Json]) -> Result<PolicySet, Vec<LoadError>> {
        let mut errors = Vec::new();
        let mut policies = Vec::new();
        let mut bindings = Vec::new();
        let mut objects = Vec::new();
        for (document, doc) in documents.iter().enumerate() {
            let api = doc.get("apiVersion").and_then(Json::as_str).unwrap_or("");
            let kind = doc.get("kind").and_then(Json::as_str).unwrap_or("");
            if !api.starts_with(GROUP) {
                if doc.is_object() {
                    objects.push(doc.clone());
                }
                continue;
            }
            let name = doc
                .pointer("/metadata/name")
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_string();
            let empty = Json::Null;
            let spec = doc.get("spec").unwrap_or(&empty);
            match kind {
                "ValidatingAdmissionPolicy" => {
                    let conditions = compiled_list(spec, "matchConditions", document, &mut errors);
                    let variables = compiled_list(spec, "variables", document, &mut errors);
                    let mut validations = Vec::new();
                    for (i, v) in spec
                        .get("validations")
                        .and_then(Json::as_array)
                        .into_iter()
                        .flatten()
                        .enumerate()
                    {
                        let pointer = format!("/spec/validations/{i}");
                        let Some(expr) = v.get("expression").and_then(Json::as_str) else {
                            errors.push(LoadError {
                                document,
                                pointer,
                                message: "a validation without an expression".into(),
                            });
                            continue;
                        };
                        let program = match compile(expr) {
                            Ok(p) => p,
                            Err(e) => {
                                errors.push(LoadError {
                                    document,
                                    pointer: format!("{pointer}/expression"),
                                    message: format!("the validation's expression {e}"),
                                });
                                continue;
                            }
                        };
                        let message_program =
                            match v.get("messageExpression").and_then(Json::as_str) {
                                None => None,
                                Some(m) => match compile(m) {
                                    Ok(p) => Some(p),
                                    Err(e) => {
                                        errors.push(LoadError {
                                            document,
                                            pointer: format!("{pointer}/messageExpression"),
                                            message: format!("the messageExpression {e}"),
                                        });
                                        continue;
                                    }
                                },
                            };
                        validations.push(Validation {
                            program,
                            expression: expr.to_string(),
                            message: v.get("message").and_then(Json::as_str).map(str::to_string),
                            message_program,
                            pointer,
                        });
                    }
                    policies.push(Policy {
                        name,
                        document,
                        fail_closed: spec.get("failurePolicy").and_then(Json::as_str)
                            != Some("Ignore"),
                        matching: matching(spec.get("matchConstraints")),
                        params: spec.get("paramKind").map(|k| {
                            let s =
                                |f: &str| k.get(f).and_then(Json::as_str).unwrap_or("").to_string();
                            (s("apiVersion"), s("kind"))
                        }),
                        conditions,
                        variables,
                        validations,
                    });
                }
                "ValidatingAdmissionPolicyBinding" => {
                    let mut actions = Vec::new();
                    for a in strings(spec.get("validationActions")) {
                        actions.push(match a.as_str() {
                            "Deny" => Action::Deny,
                            "Warn" => Action::Warn,
                            "Audit" => Action::Audit,
                            other => {
                                errors.push(LoadError {
                                    document,
                                    pointer: "/spec/validationActions".into(),
                                    message: format!(
                                        "validationAction `{other}` is not Deny, Warn or Audit"
                                    ),
                                });
                                continue;
                            }
                        });
                    }
                    if actions.is_empty() {
                        errors.push(LoadError {
                            document,
                            pointer: "/spec".into(),
                            message: format!("binding `{name}` has no validationActions"),
                        });
                    }
                    bindings.push(Binding {
                        name,
                        policy: spec
                            .get("policyName")
                            .and_then(Json::as_str)
                            .unwrap_or("")
                            .to_string(),
                        actions,
                        matching: spec.get("matchResources").map(|m| matching(Some(m))),
                        param_ref: spec.get("paramRef").map(|r| {
                            let s = |f: &str| r.get(f).and_then(Json::as_str).map(str::to_string);
                            ParamRef {
                                name: s("name"),
                                namespace: s("namespace"),
                                selector: r.get("selector").is_some(),
                                deny_not_found: s("parameterNotFoundAction").as_deref()
                                    != Some("Allow"),
                            }
                        }),
                    });
                }
                _ => {}
            }
        }
        if errors.is_empty() {
            Ok(PolicySet {
                policies,
                bindings,
                objects,
                functions: functions(),
            })
        } else {
            Err(errors)
        }
    }

    /// How many policies and bindings were read.
    pub fn counts(&self) -> (usize, usize) {
        (self.policies.len(), self.bindings.len())
    }

    /// What the API server would never apply: policies no binding names, bindings naming a
    /// policy the file does not hold.
    pub fn unapplied(&self) -> Vec<String> {
        let mut out = Vec::new();
        for p in &self.policies {
            if !self.bindings.iter().any(|b| b.policy == p.name) {
                out.push(format!(
                    "policy `{}` has no binding in the file: the API server applies it to nothing",
                    p.name
                ));
            }
        }
        for b in &self.bindings {
            if !self.policies.iter().any(|p| p.name == b.policy) {
                out.push(format!(
                    "binding `{}` names policy `{}`, which is not in the file: not evaluated",
                    b.name, b.policy
                ));
            }
        }
        out
    }

    /// Admit one object: every binding whose policy matches it, every failed validation.
    pub fn evaluate(&self, req: &Request) -> Outcome {
        let mut out = Outcome::default();
        let attrs = Attributes::of(req);
        for b in &self.bindings {
            let Some(p) = self.policies.iter().find(|p| p.name == b.policy) else {
                continue;
            };
            if !p.matching.matches(&attrs, true)
                || !b.matching.as_ref().is_none_or(|m| m.matches(&attrs, false))
            {
                continue;
            }
            let params = match (&p.params, &b.param_ref) {
                (None, _) => Value::Null,
                (Some(_), None) => {
                    out.skipped.push((
                        p.name.clone(),
                        format!(
                            "it takes params (paramKind) and binding `{}` has no paramRef",
                            b.name
                        ),
                    ));
                    continue;
                }
                (Some(_), Some(r)) if r.selector || r.name.is_none() => {
                    out.skipped.push((
                        p.name.clone(),
                        "it takes params by a paramRef selector, which is not resolved offline"
                            .into(),
                    ));
                    continue;
                }
                (Some((api, kind)), Some(r)) => {
                    let ns = r.namespace.as_deref().unwrap_or(req.namespace);
                    let name = r.name.as_deref().unwrap_or("");
                    let found = self.objects.iter().find(|o| {
                        o.get("apiVersion").and_then(Json::as_str) == Some(api)
                            && o.get("kind").and_then(Json::as_str) == Some(kind)
                            && o.pointer("/metadata/name").and_then(Json::as_str) == Some(name)
                            && o.pointer("/metadata/namespace")
                                .and_then(Json::as_str)
                                .unwrap_or("default")
                                == ns
                    });
                    match found {
                        Some(o) => json_to_cel(o),
                        // Deny: "subject to the failurePolicy of the policy".
                        None if r.deny_not_found && !p.fail_closed => {
                            out.ignored.push((
                                p.name.clone(),
                                format!("no {kind} {ns}/{name} (paramRef) in the policy file"),
                            ));
                            continue;
                        }
                        None if r.deny_not_found => {
                            out.decisions.push(Decision {
                                policy: p.name.clone(),
                                binding: b.name.clone(),
                                actions: b.actions.clone(),
                                rule: None,
                                message: format!(
                                    "no {kind} {ns}/{name} (paramRef, parameterNotFoundAction: Deny) in the policy file"
                                ),
                                evaluation_error: true,
                                document: p.document,
                                pointer: "/spec/paramKind".into(),
                            });
                            continue;
                        }
                        None => continue,
                    }
                }
            };
            let ctx = base_context(&self.functions, req, &attrs, params);
            // matchConditions, as the API server decides them: one false skips the policy
            // (whatever errors the others had); otherwise an error follows failurePolicy
            // (Fail: the request is rejected by the binding's actions; Ignore: skipped).
            let mut any_false = false;
            let mut error = None;
            for (i, c) in p.conditions.iter().enumerate() {
                match run(&c.program, &ctx) {
                    Ok(Value::Bool(true)) => {}
                    Ok(Value::Bool(false)) => {
                        any_false = true;
                        break;
                    }
                    other => {
                        if error.is_none() {
                            error = Some((i, c.name.clone(), describe(&other)));
                        }
                    }
                }
            }
            if any_false {
                continue;
            }
            if let Some((i, name, why)) = error {
                let message = format!("matchCondition `{name}` could not be evaluated: {why}");
                if p.fail_closed {
                    out.decisions.push(Decision {
                        policy: p.name.clone(),
                        binding: b.name.clone(),
                        actions: b.actions.clone(),
                        rule: None,
                        message,
                        evaluation_error: true,
                        document: p.document,
                        pointer: format!("/spec/matchConditions/{i}/expression"),
                    });
                } else {
                    out.ignored.push((p.name.clone(), message));
                }
                continue;
            }
            out.matched.push((p.name.clone(), b.name.clone()));
            let ctx = with_variables(ctx, &p.variables);
            for v in &p.validations {
                let (message, error) = match run(&v.program, &ctx) {
                    Ok(Value::Bool(true)) => continue,
                    Ok(Value::Bool(false)) => {
                        let m = v
                            .message_program
                            .as_ref()
                            .and_then(|mp| match run(mp, &ctx) {
                                Ok(Value::String(s)) if !s.trim().is_empty() => Some(s.to_string()),
                                _ => None,
                            })
                            .or_else(|| v.message.clone())
                            .unwrap_or_else(|| format!("failed expression: {}", v.expression));
                        (m, false)
                    }
                    other => {
                        let message = format!(
                            "expression could not be evaluated ({}): {}",
                            describe(&other),
                            v.expression
                        );
                        if !p.fail_closed {
                            out.ignored.push((p.name.clone(), message));
                            continue;
                        }
                        (message, true)
                    }
                };
                let rule = rule_prefix(v.message.as_deref().unwrap_or(&message));
                out.decisions.push(Decision {
                    policy: p.name.clone(),
                    binding: b.name.clone(),
                    actions: b.actions.clone(),
                    rule,
                    message,
                    evaluation_error: error,
                    document: p.document,
                    pointer: v.pointer.clone(),
                });
            }
        }
        out
    }
}

/// `installer-policy-invalid: …` → `installer-policy-invalid`.
fn rule_prefix(message: &str) -> Option<String> {
    let (head, _) = message.split_once(": ")?;
    (!head.is_empty()
        && head
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'))
    .then(|| head.to_string())
}

fn describe(r: &Result<Value, String>) -> String {
    match r {
        Ok(v) => format!("returned {} instead of a boolean", type_name(v)),
        Err(e) => e.clone(),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::List(_) => "a list",
        Value::Map(_) => "a map",
        Value::Int(_) => "an int",
        Value::UInt(_) => "a uint",
        Value::Float(_) => "a double",
        Value::String(_) => "a string",
        Value::Bytes(_) => "bytes",
        Value::Bool(_) => "a bool",
        Value::Null => "null",
        _ => "a value",
    }
}

fn run(p: &Program, ctx: &Context) -> Result<Value, String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.execute(ctx))) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(one_line(&e.to_string())),
        Err(_) => Err("the CEL engine failed".into()),
    }
}

/// What matching looks at.
struct Attributes {
    group: String,
    version: String,
    resource: String,
    name: String,
    namespace: String,
    operation: String,
    kind: String,
    labels: BTreeMap<String, String>,
}

impl Attributes {
    fn of(req: &Request) -> Attributes {
        let o = req.object;
        let api = o.get("apiVersion").and_then(Json::as_str).unwrap_or("");
        let (group, version) = match api.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), api.to_string()),
        };
        let kind = o
            .get("kind")
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string();
        let labels = o
            .pointer("/metadata/labels")
            .and_then(Json::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        Attributes {
            group,
            version,
            resource: resource_of(&kind),
            name: o
                .pointer("/metadata/name")
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_string(),
            namespace: req.namespace.to_string(),
            operation: req.operation.to_string(),
            kind,
            labels,
        }
    }
}

/// The plural resource of a kind, as the API server names it for the built-in kinds.
fn resource_of(kind: &str) -> String {
    let k = kind.to_ascii_lowercase();
    if k.ends_with('s') || k.ends_with("ch") || k.ends_with('x') {
        format!("{k}es")
    } else if let Some(stem) = k.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{k}s")
    }
}

fn any_of(list: &[String], v: &str) -> bool {
    list.iter().any(|x| x == "*" || x == v)
}

impl Rule {
    fn matches(&self, a: &Attributes) -> bool {
        any_of(&self.groups, &a.group)
            && any_of(&self.versions, &a.version)
            && any_of(&self.operations, &a.operation)
            && any_of(&self.resources, &a.resource)
            && (self.names.is_empty() || self.names.contains(&a.name))
    }
}

impl Selector {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.labels.iter().all(|(k, v)| labels.get(k) == Some(v))
            && self.exprs.iter().all(|(k, op, vals)| match op.as_str() {
                "In" => labels.get(k).is_some_and(|v| vals.contains(v)),
                "NotIn" => labels.get(k).is_none_or(|v| !vals.contains(v)),
                "Exists" => labels.contains_key(k),
                "DoesNotExist" => !labels.contains_key(k),
                _ => false,
            })
    }
}

impl Match {
    /// `policy`: a policy's matchConstraints, whose resourceRules must match; a binding's
    /// matchResources without resourceRules does not constrain.
    fn matches(&self, a: &Attributes, policy: bool) -> bool {
        let ns_labels: BTreeMap<String, String> = [(
            "kubernetes.io/metadata.name".to_string(),
            a.namespace.clone(),
        )]
        .into();
        (if self.rules.is_empty() {
            !policy
        } else {
            self.rules.iter().any(|r| r.matches(a))
        }) && !self.exclude.iter().any(|r| r.matches(a))
            && self
                .namespace_selector
                .as_ref()
                .is_none_or(|s| s.matches(&ns_labels))
            && self
                .object_selector
                .as_ref()
                .is_none_or(|s| s.matches(&a.labels))
    }
}

fn key(s: &str) -> Key {
    Key::String(Arc::new(s.to_string()))
}

fn map(entries: Vec<(&str, Value)>) -> Value {
    let m: HashMap<Key, Value> = entries.into_iter().map(|(k, v)| (key(k), v)).collect();
    Value::Map(Map { map: Arc::new(m) })
}

fn string(s: &str) -> Value {
    Value::String(Arc::new(s.to_string()))
}

/// JSON as CEL: objects are maps, integers ints, other numbers doubles.
pub fn json_to_cel(v: &Json) -> Value {
    match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(u)) => Value::UInt(u),
            _ => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => string(s),
        Json::Array(a) => Value::List(Arc::new(a.iter().map(json_to_cel).collect())),
        Json::Object(o) => {
            let m: HashMap<Key, Value> = o.iter().map(|(k, v)| (key(k), json_to_cel(v))).collect();
            Value::Map(Map { map: Arc::new(m) })
        }
    }
}

fn base_context<'f>(
    functions: &'f Context<'static>,
    req: &Request,
    a: &Attributes,
    params: Value,
) -> Context<'f> {
    let mut ctx = functions.new_inner_scope();
    ctx.add_variable_from_value("params", params);
    ctx.add_variable_from_value("object", json_to_cel(req.object));
    ctx.add_variable_from_value("oldObject", req.old_object.map_or(Value::Null, json_to_cel));
    let gvk = map(vec![
        ("group", string(&a.group)),
        ("version", string(&a.version)),
        ("kind", string(&a.kind)),
    ]);
    let gvr = map(vec![
        ("group", string(&a.group)),
        ("version", string(&a.version)),
        ("resource", string(&a.resource)),
    ]);
    ctx.add_variable_from_value(
        "request",
        map(vec![
            ("operation", string(&a.operation)),
            ("name", string(&a.name)),
            ("namespace", string(&a.namespace)),
            ("dryRun", Value::Bool(true)),
            ("kind", gvk.clone()),
            ("requestKind", gvk),
            ("resource", gvr.clone()),
            ("requestResource", gvr),
            (
                "userInfo",
                map(vec![
                    ("username", string("cgpu-lint")),
                    ("groups", Value::List(Arc::new(Vec::new()))),
                ]),
            ),
        ]),
    );
    ctx.add_variable_from_value(
        "namespaceObject",
        map(vec![(
            "metadata",
            map(vec![
                ("name", string(&a.namespace)),
                (
                    "labels",
                    map(vec![("kubernetes.io/metadata.name", string(&a.namespace))]),
                ),
            ]),
        )]),
    );
    ctx
}

/// Bind `variables`, evaluating each in order; one that fails is left out, so only the
/// expressions that use it fail (with "no such key").
fn with_variables<'f>(mut ctx: Context<'f>, vars: &[Compiled]) -> Context<'f> {
    let mut bound: HashMap<Key, Value> = HashMap::new();
    for v in vars {
        ctx.add_variable_from_value(
            "variables",
            Value::Map(Map {
                map: Arc::new(bound.clone()),
            }),
        );
        if let Ok(value) = run(&v.program, &ctx) {
            bound.insert(key(&v.name), value);
        }
    }
    ctx.add_variable_from_value(
        "variables",
        Value::Map(Map {
            map: Arc::new(bound),
        }),
    );
    ctx
}

/// Read a policy file (a YAML stream, as `kubectl apply -f` takes it) and compile it. Errors
/// are `file:line:column: message`.
pub fn load_text(name: &str, text: &str) -> Result<PolicySet, Vec<String>> {
    let src = Source::new(name, text.to_string());
    let parsed = crate::yaml::parse(&src);
    let at = |offset: usize| {
        let lc = src.line_col(offset);
        format!("{name}:{}:{}", lc.line, lc.column)
    };
    if let Some(e) = &parsed.error {
        return Err(vec![format!("{}: {}", at(e.offset), e.message)]);
    }
    let roots: Vec<&crate::yaml::Node> = parsed
        .documents
        .iter()
        .filter_map(|d| d.root.as_ref())
        .collect();
    let docs: Vec<Json> = roots.iter().map(|r| r.to_json()).collect();
    let set = PolicySet::load(&docs).map_err(|errs| {
        errs.into_iter()
            .map(|e| {
                let root = roots[e.document];
                let offset = root.pointer(&e.pointer).unwrap_or(root).span.start;
                format!("{}: {}", at(offset), e.message)
            })
            .collect::<Vec<_>>()
    })?;
    if set.policies.is_empty() {
        return Err(vec![format!(
            "{}: no ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1 or v1beta1) in it",
            at(0)
        )]);
    }
    Ok(set)
}
