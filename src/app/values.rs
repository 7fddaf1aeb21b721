//! `cgpu-lint values`: the values a chart's templates get, as JSON.

use std::sync::Arc;

use super::{AppError, Exit, Streams};
use crate::check::read_input;
use crate::cli::ValuesArgs;
use crate::helm::{self, Layers, SetKind, Version, json};
use crate::yaml::{Node, Source, Value};

pub(crate) fn run(s: &mut Streams, args: &ValuesArgs) -> Result<Exit, AppError> {
    let chart = match &args.chart_values {
        Some(p) => Some(read_input(p, args.max_file_size)?),
        None => None,
    };
    let mut files = Vec::new();
    for f in &args.files {
        files.push(read_input(f, args.max_file_size)?);
    }
    let mut sets = Vec::new();
    for (kind, list) in [
        (SetKind::Set, &args.set),
        (SetKind::String, &args.set_string),
        (SetKind::Json, &args.set_json),
    ] {
        sets.extend(list.iter().map(|a| (kind, a.clone())));
    }
    let stacks: Vec<Vec<Arc<Source>>> = if args.stack || files.len() <= 1 {
        vec![files]
    } else {
        files.into_iter().map(|f| vec![f]).collect()
    };
    let versions: Vec<Version> = match super::settings::helm_or(&args.config, args.helm)? {
        Some(h) => vec![h],
        None => Version::BOTH.to_vec(),
    };
    for stack in stacks {
        let layers = Layers {
            chart: chart.clone(),
            files: stack,
            sets: sets.clone(),
        };
        let mut printed: Option<(Version, String)> = None;
        for &v in &versions {
            let tree = helm::effective(&layers, v).map_err(|r| {
                AppError::Usage(if versions.len() > 1 {
                    format!("{r} ({} reading)", v.name())
                } else {
                    r.to_string()
                })
            })?;
            let text = if args.origins {
                let mut origins = String::from("{");
                let mut first = true;
                if let Some(cgpu) = tree.get("cgpu") {
                    origins_of(cgpu, "/cgpu", &mut origins, &mut first);
                }
                origins.push('}');
                format!(
                    "{{\"origins\":{origins},\"values\":{}}}",
                    json::to_string(&tree)
                )
            } else {
                json::to_string(&tree)
            };
            match &printed {
                None => printed = Some((v, text)),
                Some((pv, ptext)) if *ptext != text => {
                    return Err(AppError::Usage(format!(
                        "{} and {} read these values differently:\n  {}: {ptext}\n  {}: {text}\nchoose one with --helm 3 or --helm 4",
                        pv.name(),
                        v.name(),
                        pv.name(),
                        v.name()
                    )));
                }
                Some(_) => {}
            }
        }
        if let Some((_, text)) = printed {
            writeln!(s.out, "{text}")?;
        }
    }
    Ok(Exit::Clean)
}

fn origins_of(node: &Node, pointer: &str, out: &mut String, first: &mut bool) {
    match &node.value {
        Value::Map(entries) if !entries.is_empty() => {
            let mut sorted: Vec<_> = entries.iter().collect();
            sorted.sort_by(|a, b| a.key.cmp(&b.key));
            for e in sorted {
                let p = format!("{pointer}/{}", crate::yaml::node::escape_pointer(&e.key));
                origins_of(&e.value, &p, out, first);
            }
        }
        _ => {
            if !*first {
                out.push(',');
            }
            *first = false;
            json::string(pointer, out);
            out.push(':');
            let line = node.src.line_col(node.span.start).line;
            json::string(&format!("{}:{line}", node.src.name), out);
        }
    }
}
