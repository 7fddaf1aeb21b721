//! `cgpu-lint set`.

use super::report::use_color;
use super::{AppError, Exit, Streams};
use crate::check;

/// `cgpu-lint set KEY=VALUE... PATH`.
pub(crate) fn run(s: &mut Streams, args: &crate::cli::SetArgs) -> Result<Exit, AppError> {
    use crate::set::{Assignment, SetError};
    let (path, pairs) = (&args.path, &args.pairs);
    let assignments = pairs
        .iter()
        .map(|p| Assignment::parse(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| AppError::Usage(e.to_string()))?;
    let src = check::read_input(path, check::DEFAULT_MAX_FILE_SIZE)?;
    // The config file as `check` reads it (helm, region, require-cgpu, select/ignore and
    // per-file-ignores): what `set` reports and refuses is what `check` would report.
    let settings =
        super::settings::resolve(&super::settings::config_only(&args.config, args.helm))?.settings;
    let outcome =
        match crate::set::set_release(&src, &assignments, &settings, args.release.as_deref()) {
            Ok(o) => o,
            Err(SetError::Usage(m)) => return Err(AppError::Usage(m)),
            Err(e) => {
                writeln!(s.err, "cgpu-lint: {path}: {e}")?;
                return Ok(Exit::Findings);
            }
        };
    for d in &outcome.notes {
        writeln!(s.err, "{}", crate::output::brief(d))?;
    }
    if outcome.documents > 1 {
        writeln!(
            s.err,
            "cgpu-lint: {path}: warning: the file holds {} YAML documents and set changes document {} only; Helm 3 reads only the first document, Helm 4 merges them all",
            outcome.documents, outcome.document
        )?;
    }
    // Like `fix` (pre-commit's convention): 1 when the file changed or `--diff` shows a change.
    let changes = outcome.text != src.text;
    if args.stdout || path == "-" {
        s.out.write_all(outcome.text.as_bytes())?;
        return Ok(Exit::Clean);
    } else if args.diff {
        let color = use_color(args.color, s.out_is_terminal);
        let d = crate::fix::unified_diff(path, &src.text, &outcome.text, color);
        s.out.write_all(d.as_bytes())?;
    } else if !changes {
        writeln!(s.err, "cgpu-lint: {path}: already set, nothing to change")?;
    } else {
        crate::fix::write_in_place(path, &outcome.text)
            .map_err(|e| AppError::Usage(e.to_string()))?;
        writeln!(
            s.err,
            "cgpu-lint: {path}: set {} in document {}",
            pairs.join(" "),
            outcome.document
        )?;
    }
    Ok(if changes { Exit::Findings } else { Exit::Clean })
}
