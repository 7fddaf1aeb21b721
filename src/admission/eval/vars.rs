//! A policy's `variables` bound as the API server binds them: lazily. A variable is evaluated
//! when an expression first reads it, once per request; one that fails costs nothing until read,
//! and then its error is the reading expression's error, worded as the API server words it
//! (`composited variable "main" fails to evaluate: no such key: name`, nested through the
//! variables that read it). The cel crate resolves whole identifiers, so the variables an
//! expression reads are taken from its syntax tree (`cel::variable_reads`) and evaluated before
//! it runs. Imports `cel.rs` of its folder.

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel::objects::Map;
use kube_cel::cel::{Context, Value};

use super::cel::{Code, Compiled, Reads, key, run};

/// The variables of one policy for one request: each evaluated at most once.
pub(super) struct Variables<'a, 'f> {
    defs: &'a [Compiled],
    base: &'a Context<'f>,
    /// By variable: its value, or its error as an expression reading it fails with.
    done: Vec<Option<Result<Value, String>>>,
}

impl<'a, 'f> Variables<'a, 'f> {
    pub(super) fn new(base: &'a Context<'f>, defs: &'a [Compiled]) -> Self {
        Variables {
            defs,
            base,
            done: vec![None; defs.len()],
        }
    }

    /// Evaluate a policy expression (a matchCondition, a validation, a messageExpression) that
    /// reads `reads`, every variable visible.
    pub(super) fn run(&mut self, program: &Code, reads: &Reads) -> Result<Value, String> {
        self.run_before(program, reads, self.defs.len())
    }

    /// Evaluate `program` with the variables before `visible` that it reads: a variable sees only
    /// the variables declared before it, as the API server compiles them in order.
    fn run_before(
        &mut self,
        program: &Code,
        reads: &Reads,
        visible: usize,
    ) -> Result<Value, String> {
        let wanted: Vec<usize> = (0..visible)
            .filter(|&i| {
                reads
                    .as_ref()
                    .is_none_or(|names| names.contains(&self.defs[i].name))
            })
            .collect();
        let mut bound = HashMap::new();
        let mut failed: HashMap<&str, String> = HashMap::new();
        for &i in &wanted {
            self.evaluate(i);
            let name = self.defs[i].name.as_str();
            match &self.done[i] {
                Some(Ok(v)) => {
                    bound.insert(key(name), v.clone());
                }
                Some(Err(e)) => {
                    failed.insert(name, e.clone());
                }
                None => {}
            }
        }
        let mut ctx = self.base.new_inner_scope();
        ctx.add_variable_from_value(
            "variables",
            Value::Map(Map {
                map: Arc::new(bound),
            }),
        );
        run(program, &ctx).map_err(|f| {
            // A failed variable is absent from the map: reading it fails as a missing key,
            // and that is the variable's error.
            match f.missing_key.as_deref().and_then(|k| failed.get(k)) {
                Some(e) => e.clone(),
                None => f.message,
            }
        })
    }

    fn evaluate(&mut self, i: usize) {
        if self.done[i].is_some() {
            return;
        }
        let defs = self.defs;
        let v = &defs[i];
        let result = self
            .run_before(&v.program, &v.reads, i)
            .map_err(|e| format!("composited variable \"{}\" fails to evaluate: {e}", v.name));
        self.done[i] = Some(result);
    }
}

#[cfg(test)]
mod tests {
    use super::super::cel::{compile, functions, variable_reads};
    use super::*;

    fn var(name: &str, expression: &str) -> Compiled {
        let program = compile(expression).unwrap();
        Compiled {
            name: name.into(),
            expression: expression.into(),
            reads: variable_reads(&program),
            program,
        }
    }

    fn eval(defs: &[Compiled], expression: &str) -> Result<Value, String> {
        let f = functions();
        let mut base = f.new_inner_scope();
        base.add_variable_from_value(
            "object",
            crate::admission::eval::json_to_cel(&serde_json::json!({"a": 1, "l": []})),
        );
        let mut vars = Variables::new(&base, defs);
        let p = compile(expression).unwrap();
        vars.run(&p, &variable_reads(&p))
    }

    #[test]
    fn an_expression_reading_a_failed_variable_gets_its_error() {
        let defs = [var("bad", "object.nope == 1"), var("good", "object.a")];
        assert_eq!(
            eval(&defs, "variables.bad"),
            Err(r#"composited variable "bad" fails to evaluate: no such key: nope"#.into())
        );
        // Read through another variable, the error says both, innermost last.
        let defs = [
            var("bad", "object.l[0]"),
            var("dep", "variables.bad + 1"),
            var("dep2", "variables['dep'] > 0"),
        ];
        assert_eq!(
            eval(&defs, "variables.dep2"),
            Err(concat!(
                r#"composited variable "dep2" fails to evaluate: "#,
                r#"composited variable "dep" fails to evaluate: "#,
                r#"composited variable "bad" fails to evaluate: index out of bounds: 0"#
            )
            .into())
        );
    }

    #[test]
    fn a_failed_variable_nobody_reads_costs_nothing() {
        let defs = [var("bad", "object.nope"), var("good", "object.a + 1")];
        assert_eq!(eval(&defs, "variables.good == 2"), Ok(Value::Bool(true)));
        // Not even evaluated.
        let f = functions();
        let mut base = f.new_inner_scope();
        base.add_variable_from_value(
            "object",
            crate::admission::eval::json_to_cel(&serde_json::json!({"a": 1})),
        );
        let mut vars = Variables::new(&base, &defs);
        let p = compile("variables.good == 2").unwrap();
        assert_eq!(vars.run(&p, &variable_reads(&p)), Ok(Value::Bool(true)));
        assert!(vars.done[0].is_none(), "{:?}", vars.done[0]);
        // Read only where the evaluation reaches it.
        assert_eq!(
            eval(&defs, "variables.good == 2 || variables.bad"),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            eval(&defs, "variables.good == 3 ? variables.bad : 'ok'"),
            Ok(Value::String(Arc::new("ok".into())))
        );
    }

    #[test]
    fn a_variable_is_evaluated_once_and_sees_only_those_before_it() {
        let defs = [var("early", "variables.late"), var("late", "1")];
        assert_eq!(
            eval(&defs, "variables.early"),
            Err(r#"composited variable "early" fails to evaluate: no such key: late"#.into())
        );
        assert_eq!(eval(&defs, "variables.late"), Ok(Value::Int(1)));
        let f = functions();
        let base = f.new_inner_scope();
        let defs = [var("x", "1")];
        let mut vars = Variables::new(&base, &defs);
        let p = compile("variables.x").unwrap();
        assert_eq!(vars.run(&p, &variable_reads(&p)), Ok(Value::Int(1)));
        assert!(matches!(vars.done[0], Some(Ok(Value::Int(1)))));
    }

    #[test]
    fn the_variables_an_expression_reads_come_from_its_syntax_tree() {
        let reads = |e: &str| variable_reads(&compile(e).unwrap());
        assert_eq!(
            reads("has(variables.a) && variables['b'].exists(x, x == variables.c.d)"),
            Some(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(reads("object.variables.x == 1"), Some(vec![]));
        assert_eq!(reads("size(variables) > 0"), None);
    }
}
