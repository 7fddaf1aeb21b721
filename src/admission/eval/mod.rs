//! Offline evaluation of ValidatingAdmissionPolicies (admissionregistration.k8s.io v1 and
//! v1beta1) and their bindings with kube-cel, the Kubernetes CEL libraries on the `cel` crate.
//! This folder is the only one that names kube-cel or cel. It adds what the cel crate lacks and
//! the API server's cel-go has: `type()`, `dyn()` and a compiled-regex `matches` (`cel.rs`, the
//! CEL environment). `load.rs` reads the policies and bindings; `vars.rs` binds the variables;
//! this file matches a request against them and evaluates.
//!
//! What the API server does and this does too: matchConstraints and a binding's matchResources
//! (resourceRules with `*` and resourceNames, excludeResourceRules, namespaceSelector and
//! objectSelector with matchLabels and matchExpressions), matchConditions, `variables` bound
//! lazily (evaluated when first read, once per request; a variable that fails costs nothing
//! until read, and is then the reading expression's error), an evaluation error's message in
//! the API server's words (`expression '…' resulted in error: composited variable "main" fails
//! to evaluate: no such key: name`, cel-go's wording of the errors both engines have),
//! validations with message and messageExpression, failurePolicy (Fail: an
//! evaluation error rejects like a failed validation; Ignore: it is dropped, and listed in
//! `Outcome::ignored`), a false matchCondition winning over another's error, and the binding's
//! validationActions, params (the object a binding's paramRef names, among the file's other
//! objects; parameterNotFoundAction). What it cannot do offline: `authorizer` (no API server
//! to ask), a paramRef selector (reported, the policy is not evaluated), namespace labels other than
//! `kubernetes.io/metadata.name`, the runtime cost budget, and `has(variables.x)` of a variable
//! that fails (false here, the variable's error there). `scripts/admission-oracle` holds all
//! of it to the API server's own code.

mod cel;
mod load;
mod vars;

use std::collections::BTreeMap;
use std::sync::Arc;

use kube_cel::cel::{Context, Value};
use serde_json::Value as Json;

use crate::admission::expr::Action;
use cel::{map, string, type_name};
use load::{Match, Rule, Selector, string_map};
use vars::Variables;

pub use cel::json_to_cel;
pub use load::{LoadError, PolicySet, load_text};

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

impl PolicySet {
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
            // The variables are bound lazily for the whole request: the matchConditions may
            // read them too, as the API server compiles them in the same environment.
            let mut vars = Variables::new(&ctx, &p.variables);
            // matchConditions, as the API server decides them: one false skips the policy
            // (whatever errors the others had); otherwise the errors (all of them, as the API
            // server aggregates them) follow failurePolicy (Fail: the request is rejected by
            // the binding's actions; Ignore: skipped).
            let mut any_false = false;
            let mut errors = Vec::new();
            for (i, c) in p.conditions.iter().enumerate() {
                match vars.run(&c.program, &c.reads) {
                    Ok(Value::Bool(true)) => {}
                    Ok(Value::Bool(false)) => {
                        any_false = true;
                        break;
                    }
                    other => errors.push((i, failed(&c.expression, other))),
                }
            }
            if any_false {
                continue;
            }
            if let Some((i, _)) = errors.first() {
                let message = match errors.as_slice() {
                    [(_, one)] => one.clone(),
                    many => format!(
                        "[{}]",
                        many.iter()
                            .map(|(_, m)| m.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
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
            for v in &p.validations {
                let (message, error) = match vars.run(&v.program, &v.reads) {
                    Ok(Value::Bool(true)) => continue,
                    Ok(Value::Bool(false)) => {
                        // The API server's choice of message: the messageExpression's string,
                        // trimmed, unless it fails, is empty, spans lines or is too long; then
                        // `message`; then the expression.
                        let m = v
                            .message_program
                            .as_ref()
                            .and_then(|(mp, reads)| match vars.run(mp, reads) {
                                Ok(Value::String(s)) => Some(s.trim().to_string()),
                                _ => None,
                            })
                            .filter(|s| {
                                !s.is_empty() && !s.contains('\n') && s.len() <= MAX_MESSAGE_BYTES
                            })
                            .or_else(|| {
                                v.message
                                    .as_deref()
                                    .map(str::trim)
                                    .filter(|s| !s.is_empty())
                                    .map(str::to_string)
                            })
                            .unwrap_or_else(|| {
                                format!("failed expression: {}", v.expression.trim())
                            });
                        (m, false)
                    }
                    other => {
                        let message = failed(&v.expression, other);
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
        let labels = string_map(o.pointer("/metadata/labels"));
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

/// The longest messageExpression result the API server uses
/// (`celconfig.MaxEvaluatedMessageExpressionSizeBytes`).
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// What the API server says of an expression that did not give a boolean.
fn failed(expression: &str, result: Result<Value, String>) -> String {
    match result {
        Err(e) => format!("expression '{expression}' resulted in error: {e}"),
        Ok(v) => format!(
            "expression '{expression}' returned {} instead of a boolean",
            type_name(&v)
        ),
    }
}
