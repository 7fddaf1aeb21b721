//! Reading ValidatingAdmissionPolicies and their bindings, and the file's other objects (where
//! a binding's paramRef finds its params): every expression is compiled here, once, and every
//! problem is reported with its document and JSON pointer. Imports `cel.rs` of its folder.

use std::collections::BTreeMap;

use kube_cel::cel::Context;
use serde_json::Value as Json;

use super::cel::{Code, Compiled, Reads, compile, functions, variable_reads};
use crate::admission::expr::Action;
use crate::yaml::Source;

/// A problem in the policy file: the document (0-based) and the JSON pointer inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub document: usize,
    pub pointer: String,
    pub message: String,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Rule {
    pub(super) groups: Vec<String>,
    pub(super) versions: Vec<String>,
    pub(super) operations: Vec<String>,
    pub(super) resources: Vec<String>,
    pub(super) names: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Selector {
    pub(super) labels: BTreeMap<String, String>,
    /// key, operator (In, NotIn, Exists, DoesNotExist), values.
    pub(super) exprs: Vec<(String, String, Vec<String>)>,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Match {
    pub(super) rules: Vec<Rule>,
    pub(super) exclude: Vec<Rule>,
    pub(super) namespace_selector: Option<Selector>,
    pub(super) object_selector: Option<Selector>,
}

pub(super) struct Validation {
    pub(super) program: Code,
    pub(super) reads: Reads,
    pub(super) expression: String,
    pub(super) message: Option<String>,
    pub(super) message_program: Option<(Code, Reads)>,
    pub(super) pointer: String,
}

pub(super) struct Policy {
    pub(super) name: String,
    pub(super) document: usize,
    pub(super) fail_closed: bool,
    pub(super) matching: Match,
    /// paramKind: (apiVersion, kind).
    pub(super) params: Option<(String, String)>,
    pub(super) conditions: Vec<Compiled>,
    pub(super) variables: Vec<Compiled>,
    pub(super) validations: Vec<Validation>,
}

pub(super) struct Binding {
    pub(super) name: String,
    pub(super) policy: String,
    pub(super) actions: Vec<Action>,
    pub(super) matching: Option<Match>,
    pub(super) param_ref: Option<ParamRef>,
}

/// A binding's paramRef (by name; a selector is not resolved offline).
pub(super) struct ParamRef {
    pub(super) name: Option<String>,
    pub(super) namespace: Option<String>,
    pub(super) selector: bool,
    pub(super) deny_not_found: bool,
}

/// Policies and bindings read from one or more documents.
pub struct PolicySet {
    pub(super) policies: Vec<Policy>,
    pub(super) bindings: Vec<Binding>,
    /// The file's other objects: the params a binding's paramRef names are among them.
    pub(super) objects: Vec<Json>,
    /// The CEL functions (the standard ones and the Kubernetes libraries), built once.
    pub(super) functions: Context<'static>,
}

const GROUP: &str = "admissionregistration.k8s.io/";

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

/// The string values of a JSON object, by key (other values are left out): a selector's
/// matchLabels, an object's labels.
pub(super) fn string_map(v: Option<&Json>) -> BTreeMap<String, String> {
    v.and_then(Json::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn selector(v: Option<&Json>) -> Option<Selector> {
    let v = v?;
    let labels = string_map(v.get("matchLabels"));
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
                    expression: expr.to_string(),
                    reads: variable_reads(&program),
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
                                    Ok(p) => {
                                        let reads = variable_reads(&p);
                                        Some((p, reads))
                                    }
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
                            reads: variable_reads(&program),
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
