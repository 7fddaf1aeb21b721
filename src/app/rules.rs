//! `cgpu-lint rules`, `explain` and `schema`: what the tool knows, printed.

use super::{AppError, Exit, Streams};
use crate::cli::{RulesArgs, RulesFormat};
use crate::output;
use crate::rules::catalogue;

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
