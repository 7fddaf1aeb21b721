//! The CEL environment of the offline evaluation: the functions the `cel` crate lacks and the API
//! server's cel-go has (`type()`, `dyn()`, and `matches` with its compiled regexes kept),
//! compiling and running one expression (too deep a nesting refused, a panic of the engine an
//! error; `&&`, `||` and a function's failed argument evaluated as cel-go evaluates them), and
//! JSON as CEL values. Imports no file of its folder.

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::KubeCelExt;
use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue, operators};
use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::{Context, ExecutionError, FunctionContext, Program, Value};
use serde_json::Value as Json;

/// A named expression (a matchCondition or a variable), compiled.
pub(super) struct Compiled {
    pub(super) name: String,
    pub(super) expression: String,
    pub(super) program: Code,
    pub(super) reads: Reads,
}

/// A compiled expression, ready to run: the cel crate's syntax tree with `&&` and `||` made calls
/// of `@and` and `@or` (cel-go's evaluation of them, see [`logical`]).
pub(super) struct Code(IdedExpr);

/// The policy variables an expression reads (`variables.NAME`, `has(variables.NAME)`,
/// `variables['NAME']`), or `None` when it uses `variables` otherwise (the whole map), so that
/// any of them may be read.
pub(super) type Reads = Option<Vec<String>>;

/// Which variables `program` reads, from its syntax tree: the cel crate resolves a whole
/// identifier (`variables`) from its context, so the variables have to be known before it runs
/// for them to be evaluated only when read, as the API server's lazy map does.
pub(super) fn variable_reads(program: &Code) -> Reads {
    fn walk(e: &IdedExpr, out: &mut Vec<String>, whole: &mut bool) {
        match &e.expr {
            Expr::Select(s) => match &s.operand.expr {
                Expr::Ident(id) if id == "variables" => out.push(s.field.clone()),
                _ => walk(&s.operand, out, whole),
            },
            Expr::Call(c) => {
                if c.func_name == operators::INDEX
                    && c.args.len() == 2
                    && matches!(&c.args[0].expr, Expr::Ident(id) if id == "variables")
                    && let Expr::Literal(LiteralValue::String(name)) = &c.args[1].expr
                {
                    out.push(name.to_string());
                    return;
                }
                if let Some(t) = &c.target {
                    walk(t, out, whole);
                }
                for a in &c.args {
                    walk(a, out, whole);
                }
            }
            Expr::Ident(id) => *whole |= id == "variables",
            Expr::Comprehension(c) => {
                for x in [
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                ] {
                    walk(x, out, whole);
                }
            }
            Expr::List(l) => l.elements.iter().for_each(|x| walk(x, out, whole)),
            Expr::Map(m) => m.entries.iter().for_each(|x| entry(&x.expr, out, whole)),
            Expr::Struct(s) => s.entries.iter().for_each(|x| entry(&x.expr, out, whole)),
            _ => {}
        }
    }
    fn entry(e: &EntryExpr, out: &mut Vec<String>, whole: &mut bool) {
        match e {
            EntryExpr::MapEntry(m) => {
                walk(&m.key, out, whole);
                walk(&m.value, out, whole);
            }
            EntryExpr::StructField(f) => walk(&f.value, out, whole),
        }
    }
    let mut out = Vec::new();
    let mut whole = false;
    walk(&program.0, &mut out, &mut whole);
    out.sort();
    out.dedup();
    (!whole).then_some(out)
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
fn dyn_of(ftx: &FunctionContext) -> Result<Value, ExecutionError> {
    target(ftx)
}

/// The value a function is called on (`x.f()`) or with (`f(x)`), its error kept: the cel crate's
/// extractor turns a failed argument into "Missing argument or target", where cel-go keeps the
/// argument's error (`size(object.nope)`: "no such key: nope").
fn target(ftx: &FunctionContext) -> Result<Value, ExecutionError> {
    match (&ftx.this, ftx.args.first()) {
        (Some(this), _) => Ok(this.clone()),
        (None, Some(arg)) => ftx.ptx.resolve(arg),
        (None, None) => Err(ExecutionError::missing_argument_or_target()),
    }
}

/// `size(x)` and `string(x)` with `x`'s error kept (see [`target`]), then the cel crate's own.
fn size_of(ftx: &FunctionContext) -> Result<i64, ExecutionError> {
    let v = target(ftx)?;
    kube_cel::cel::functions::size(ftx, kube_cel::cel::extractors::This(v))
}

fn string_of(ftx: &FunctionContext) -> Result<Value, ExecutionError> {
    let v = target(ftx)?;
    kube_cel::cel::functions::string(ftx, kube_cel::cel::extractors::This(v))
}

/// `a || b` (`or`) and `a && b` as cel-go evaluates them: a true (false) operand decides,
/// whichever fails; otherwise the first operand's error (the cel crate's is the last's), or
/// "no such overload" for an operand that is not a boolean.
fn logical(ftx: &FunctionContext, or: bool) -> Result<Value, ExecutionError> {
    let mut error = None;
    for arg in ftx.args {
        match ftx.ptx.resolve(arg) {
            Ok(Value::Bool(b)) if b == or => return Ok(Value::Bool(or)),
            Ok(Value::Bool(_)) => {}
            Ok(_) => {
                error.get_or_insert(ExecutionError::NoSuchOverload);
            }
            Err(e) => {
                error.get_or_insert(e);
            }
        }
    }
    error.map_or(Ok(Value::Bool(!or)), Err)
}

fn logical_or(ftx: &FunctionContext) -> Result<Value, ExecutionError> {
    logical(ftx, true)
}

fn logical_and(ftx: &FunctionContext) -> Result<Value, ExecutionError> {
    logical(ftx, false)
}

/// `&&` and `||` as calls of `@and` and `@or`, everywhere in the tree (the comprehensions of
/// `exists` and `all` included, whose steps they are).
fn rewrite(e: &mut IdedExpr) {
    match &mut e.expr {
        Expr::Call(c) => {
            if c.args.len() == 2 {
                if c.func_name == operators::LOGICAL_OR {
                    c.func_name = "@or".into();
                } else if c.func_name == operators::LOGICAL_AND {
                    c.func_name = "@and".into();
                }
            }
            if let Some(t) = &mut c.target {
                rewrite(t);
            }
            c.args.iter_mut().for_each(rewrite);
        }
        Expr::Select(s) => rewrite(&mut s.operand),
        Expr::Comprehension(c) => {
            for x in [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ] {
                rewrite(x);
            }
        }
        Expr::List(l) => l.elements.iter_mut().for_each(rewrite),
        Expr::Map(m) => m.entries.iter_mut().for_each(|x| match &mut x.expr {
            EntryExpr::MapEntry(m) => {
                rewrite(&mut m.key);
                rewrite(&mut m.value);
            }
            EntryExpr::StructField(f) => rewrite(&mut f.value),
        }),
        Expr::Struct(s) => s.entries.iter_mut().for_each(|x| {
            if let EntryExpr::StructField(f) = &mut x.expr {
                rewrite(&mut f.value);
            }
        }),
        _ => {}
    }
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

pub(super) fn functions() -> Context<'static> {
    let mut ctx = Context::default();
    ctx.register_all();
    ctx.add_function("matches", matches);
    ctx.add_function("type", type_of);
    ctx.add_function("dyn", dyn_of);
    ctx.add_function("size", size_of);
    ctx.add_function("string", string_of);
    ctx.add_function("@or", logical_or);
    ctx.add_function("@and", logical_and);
    for t in TYPE_NAMES {
        ctx.add_variable_from_value(*t, Value::String(Arc::new(t.to_string())));
    }
    ctx
}

/// Compile one CEL expression, refusing what could exhaust the parser (deep nesting) and
/// catching a panic of the engine as an error.
pub(super) fn compile(expr: &str) -> Result<Code, String> {
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
        Ok(Ok(p)) => {
            let mut e = p.expression().clone();
            rewrite(&mut e);
            Ok(Code(e))
        }
        Ok(Err(e)) => Err(format!("does not compile: {}", one_line(&e.to_string()))),
        Err(_) => Err("does not compile (the CEL parser gave up)".into()),
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(super) fn type_name(v: &Value) -> &'static str {
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

/// Why an expression could not be evaluated: the message, and the key of a failed lookup (a
/// variable that failed is absent from `variables`, so reading it fails as a missing key).
pub(super) struct Failure {
    pub(super) message: String,
    pub(super) missing_key: Option<String>,
}

pub(super) fn run(p: &Code, ctx: &Context) -> Result<Value, Failure> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ctx.resolve(&p.0))) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(Failure {
            missing_key: match &e {
                ExecutionError::NoSuchKey(k) => Some(k.to_string()),
                _ => None,
            },
            message: cel_go_words(&e),
        }),
        Err(_) => Err(Failure {
            message: "the CEL engine failed".into(),
            missing_key: None,
        }),
    }
}

/// An error in the words of cel-go, the API server's CEL, where both engines fail the same way
/// (what the API server prints is then what `check --admission-policy` prints); the cel crate's
/// own words otherwise.
fn cel_go_words(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::NoSuchOverload | ExecutionError::UnsupportedBinaryOperator(..) => {
            "no such overload".into()
        }
        ExecutionError::DivisionByZero(_) => "division by zero".into(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".into(),
        ExecutionError::Overflow(_, Value::Int(_), Value::Int(_)) => "integer overflow".into(),
        ExecutionError::IndexOutOfBounds(Value::Int(i)) => format!("index out of bounds: {i}"),
        other => one_line(&other.to_string()),
    }
}

pub(super) fn key(s: &str) -> Key {
    Key::String(Arc::new(s.to_string()))
}

pub(super) fn map(entries: Vec<(&str, Value)>) -> Value {
    let m: HashMap<Key, Value> = entries.into_iter().map(|(k, v)| (key(k), v)).collect();
    Value::Map(Map { map: Arc::new(m) })
}

pub(super) fn string(s: &str) -> Value {
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
