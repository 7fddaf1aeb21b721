//! The findings of the Applications an ApplicationSet's list generator elements render (see
//! `helm::place`'s `appset.rs`): each element's Application is checked as an Application, and
//! its findings are then said once where they are the template's own, or per element where an
//! element decides them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::diag::Diagnostic;
use crate::helm::place::Target;
use crate::yaml::Source;

/// A finding on a string an element rendered (its own source, which the rules read), moved to
/// where that string came from in the file: the element's value when the string was that one
/// value, else the template's string.
pub(super) fn place(d: &mut Diagnostic, t: &Target, src: &Arc<Source>) -> bool {
    let Some(at) = t.element.as_ref().and_then(|e| e.place(&d.src)) else {
        return false;
    };
    d.src = src.clone();
    d.span = at;
    // What a rule relates inside the rendered string has no place of its own in the file.
    d.related.clear();
    true
}

/// The findings of each element's Application (`groups`: the target and its findings), as they
/// are reported. A finding on what an element filled in (its value, a template string with a
/// tag it replaced) names the element and offers no fix: the value is the element's, or the
/// template's string serves every element. Any other finding is about the template's own text:
/// when every element's Application has it, it is said once, as the ApplicationSet's, with its
/// fix; when only some have it, it is said for each of them, without a fix (changing the
/// template changes every element's Application).
pub(super) fn merge(groups: Vec<(&Target, Vec<Diagnostic>)>, src: &Arc<Source>) -> Vec<Diagnostic> {
    // The elements of one release of the chart (a source of the template): by name and pointer.
    let mut releases: Vec<Vec<(&Target, Vec<Diagnostic>)>> = Vec::new();
    for (t, mut found) in groups {
        for d in &mut found {
            place(d, t, src);
        }
        match releases
            .iter_mut()
            .find(|r| r[0].0.name == t.name && r[0].0.pointer == t.pointer)
        {
            Some(r) => r.push((t, found)),
            None => releases.push(vec![(t, found)]),
        }
    }
    let mut out = Vec::new();
    for release in releases {
        let elements = release.len();
        let mut count: HashMap<String, usize> = HashMap::new();
        for (t, found) in &release {
            let own: HashSet<String> = found.iter().map(|d| key(t, d)).collect();
            for k in own {
                *count.entry(k).or_default() += 1;
            }
        }
        let mut said: HashSet<String> = HashSet::new();
        for (t, found) in release {
            let Some(e) = &t.element else { continue };
            let label = t.label();
            for mut d in found {
                let filled = Arc::ptr_eq(&d.src, src) && e.touches(&d.span);
                let k = key(t, &d);
                let everywhere = count.get(&k) == Some(&elements);
                if everywhere && (!filled || elements > 1) {
                    if !said.insert(k) {
                        continue;
                    }
                    let common = if filled {
                        format!("{} (every element)", t.template_label())
                    } else {
                        t.template_label()
                    };
                    d.message = d.message.replacen(&label, &common, 1);
                    if filled {
                        no_fix(&mut d, "the value is rendered from the list generator's elements; edit them (or the template) by hand".into());
                    }
                } else if filled {
                    no_fix(
                        &mut d,
                        format!(
                            "the value is rendered from the list generator's {}; edit it (or the template) by hand",
                            e.describe()
                        ),
                    );
                } else if !d.edits.is_empty() {
                    no_fix(
                        &mut d,
                        format!(
                            "the template serves every element, and this holds for the {} alone; edit by hand",
                            e.describe()
                        ),
                    );
                }
                out.push(d);
            }
        }
    }
    out
}

/// What makes two elements' findings the same: all but the element in the message.
fn key(t: &Target, d: &Diagnostic) -> String {
    let edits: Vec<String> = d
        .edits
        .iter()
        .map(|e| format!("{}:{:?}:{}", e.src.name, e.range, e.replacement))
        .collect();
    format!(
        "{}|{:?}|{}|{}|{:?}|{}|{}|{}",
        d.rule.name(),
        d.severity,
        d.src.name,
        d.document,
        d.span,
        d.path,
        d.message.replacen(&t.label(), &t.template_label(), 1),
        edits.join(";")
    )
}

/// The finding's fix held back, with why (a finding without one is left as it is).
fn no_fix(d: &mut Diagnostic, why: String) {
    if d.edits.is_empty() && d.consequence.is_none() {
        return;
    }
    d.edits.clear();
    d.consequence = None;
    d.fix_note = Some(format!("not fixed automatically: {why}"));
}
