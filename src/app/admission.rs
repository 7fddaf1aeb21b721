//! `cgpu-lint check --admission-policy FILE`: the objects of the inputs admitted offline by a
//! ValidatingAdmissionPolicy file (generated or written by hand), printed after check's report:
//! on stdout beside the human report, on stderr when stdout carries a machine format. With
//! `--old FILE`, an input object that has an object of the same kind, namespace and name there
//! is admitted as an UPDATE of it (`oldObject`), the others as a CREATE.

use super::{AppError, Streams};
use crate::admission::{self, eval};

/// The compiled policy file, and the objects of `--old` (what an input object updates).
pub(crate) struct Admission {
    set: eval::PolicySet,
    /// (kind, namespace, name) → the old object as the API server holds it.
    old: Vec<((String, String, String), serde_json::Value)>,
}

/// Read and compile the policy file and read `--old` (before check runs, so a broken policy
/// stops the run).
pub(crate) fn load(
    policy: &str,
    old: Option<&str>,
    max_file_size: u64,
) -> Result<Admission, AppError> {
    let src = crate::check::read_input(policy, max_file_size)
        .map_err(|e| AppError::Usage(format!("--admission-policy {policy}: {e}")))?;
    let set = eval::load_text(&src.name, &src.text)
        .map_err(|e| AppError::Usage(format!("--admission-policy: {}", e.join("\n"))))?;
    let mut olds = Vec::new();
    if let Some(file) = old {
        let src = crate::check::read_input(file, max_file_size)
            .map_err(|e| AppError::Usage(format!("--old {file}: {e}")))?;
        if let Some(e) = &crate::yaml::parse(&src).error {
            let lc = src.line_col(e.offset);
            return Err(AppError::Usage(format!(
                "--old {}:{}:{}: {}",
                src.name, lc.line, lc.column, e.message
            )));
        }
        for o in admission::objects(&src) {
            let ns = o.namespace.clone().unwrap_or_else(|| "kube-system".into());
            // An object the API server could not hold is no old object; drop what it drops.
            if let Ok(j) = admission::as_admitted(&o.json) {
                olds.push(((o.kind, ns, o.name), j));
            }
        }
    }
    Ok(Admission { set, old: olds })
}

/// Evaluate the policy on every object of `paths`; print one block per object a binding
/// matches. Returns whether any object would be denied.
pub(crate) fn run(
    s: &mut Streams,
    (policy, set): (&str, &Admission),
    paths: &[String],
    max_file_size: u64,
    human: bool,
) -> Result<bool, AppError> {
    let mut text = String::new();
    let denied = verdicts(&mut text, (policy, set), paths, max_file_size);
    if human {
        s.out.write_all(text.as_bytes())?;
    } else {
        s.err.write_all(text.as_bytes())?;
    }
    Ok(denied)
}

fn verdicts(
    w: &mut String,
    (policy, adm): (&str, &Admission),
    paths: &[String],
    max_file_size: u64,
) -> bool {
    use std::fmt::Write;
    let set = &adm.set;
    for note in set.unapplied() {
        let _ = writeln!(w, "{policy}: {note}");
    }
    let (files, _) = crate::check::expand_paths(paths);
    let mut objects = 0;
    let mut matched = 0;
    let mut denied = 0;
    for file in files {
        let Ok(src) = crate::check::read_input(&file, max_file_size) else {
            continue; // check's report already names it
        };
        for o in admission::objects(&src) {
            objects += 1;
            let lc = src.line_col(o.offset);
            let at = format!("{}:{}:{}", src.name, lc.line, lc.column);
            let ns = o.namespace.as_deref().unwrap_or("kube-system");
            let admitted = match admission::as_admitted(&o.json) {
                Ok(j) => j,
                Err(why) => {
                    if o.installer {
                        matched += 1;
                        denied += 1;
                        let _ = writeln!(
                            w,
                            "{at}: {} {}: refused by the API server before admission ({why})",
                            o.kind, o.name
                        );
                    }
                    continue;
                }
            };
            let key = (o.kind.clone(), ns.to_string(), o.name.clone());
            let old = adm.old.iter().find(|(k, _)| *k == key).map(|(_, j)| j);
            let operation = if old.is_some() { "UPDATE" } else { "CREATE" };
            let out = set.evaluate(&eval::Request {
                object: &admitted,
                old_object: old,
                operation,
                namespace: ns,
            });
            if out.matched.is_empty()
                && out.skipped.is_empty()
                && out.decisions.is_empty()
                && out.ignored.is_empty()
            {
                continue;
            }
            matched += 1;
            let verdict = if out.denied() {
                denied += 1;
                "denied"
            } else {
                "admitted"
            };
            let where_ = if o.namespace.is_some() {
                format!("in {ns}")
            } else {
                format!("(no namespace: as in {ns})")
            };
            let op = if adm.old.is_empty() {
                String::new()
            } else {
                format!(" ({operation})")
            };
            let _ = writeln!(w, "{at}: {} {} {where_}{op}: {verdict}", o.kind, o.name);
            for d in &out.decisions {
                let actions: Vec<&str> = d.actions.iter().map(|a| a.as_str()).collect();
                let _ = writeln!(w, "  {} {}: {}", actions.join(","), d.policy, d.message);
            }
            for (p, why) in &out.ignored {
                let _ = writeln!(w, "  ignored (failurePolicy: Ignore) {p}: {why}");
            }
            for (p, why) in &out.skipped {
                let _ = writeln!(w, "  not evaluated {p}: {why}");
            }
        }
    }
    let _ = writeln!(
        w,
        "admission policy {policy}: {matched} of {objects} objects matched, {denied} denied"
    );
    denied > 0
}
