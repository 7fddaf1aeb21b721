//! `cgpu-lint rules`, `explain`, `compat` and `schema`: what the tool knows, printed.

use super::{AppError, Exit, Streams};
use crate::catalogue;
use crate::cli::{CompatArgs, CompatFormat, RulesArgs, RulesFormat};
use crate::output;

pub(crate) fn schema(s: &mut Streams) -> Result<Exit, AppError> {
    s.out
        .write_all(crate::rules::schema::schema_text().as_bytes())?;
    Ok(Exit::Clean)
}

pub(crate) fn list(s: &mut Streams, args: &RulesArgs) -> Result<Exit, AppError> {
    let text = match args.format {
        RulesFormat::Markdown => output::rules::markdown_table(),
        RulesFormat::Json => output::rules::json_list(),
        RulesFormat::Human => output::rules::human_list(),
    };
    s.out.write_all(text.as_bytes())?;
    Ok(Exit::Clean)
}

pub(crate) fn explain(s: &mut Streams, name: &str) -> Result<Exit, AppError> {
    let Some(r) = catalogue::find(name) else {
        return Err(AppError::Usage(format!(
            "unknown rule `{name}` (see `cgpu-lint rules`)"
        )));
    };
    let mut text = output::rules::explain(r);
    if let Some(c) = crate::admission::coverage(r.id) {
        text.push_str(&format!("Admission policy: {c}.\n"));
    }
    s.out.write_all(text.as_bytes())?;
    Ok(Exit::Clean)
}

pub(crate) fn compat(s: &mut Streams, args: &CompatArgs) -> Result<Exit, AppError> {
    if args.nodes.is_some() || args.cluster.cluster {
        return super::whatif::run(s, args);
    }
    if let Some(flag) = [
        ("--kubernetes", args.kubernetes.is_some()),
        ("--driver", args.driver.is_some()),
        ("--os-image", args.os_image.is_some()),
        ("--all-contexts", args.cluster.all_contexts),
        ("--context", !args.cluster.contexts.is_empty()),
        ("--kubeconfig", args.cluster.kubeconfig.is_some()),
    ]
    .into_iter()
    .find_map(|(f, given)| given.then_some(f))
    {
        return Err(AppError::Usage(format!(
            "{flag} is for the what-if: give --nodes FILE or --cluster too"
        )));
    }
    let data = crate::cgpu::compat::data();
    let text = match &args.tag {
        None => match args.format {
            CompatFormat::Human => output::compat::human_table(data),
            CompatFormat::Json => output::compat::json_table(data),
        },
        Some(tag) => {
            let image_tag = crate::cgpu::split_image(tag).tag.unwrap_or(tag);
            let parsed = crate::cgpu::parse_tag(image_tag)
                .map_err(|e| AppError::Usage(format!("--tag {tag}: {}", e.message(image_tag))))?;
            match args.format {
                CompatFormat::Human => output::compat::human_version(data, tag, &parsed.core),
                CompatFormat::Json => output::compat::json_version(data, tag, &parsed.core),
            }
        }
    };
    s.out.write_all(text.as_bytes())?;
    Ok(Exit::Clean)
}
