//! `cgpu-lint fix`.

use super::report::{input_error, print_report, report_to_stderr, use_color, verdict};
use super::settings::resolve_common;
use super::{AppError, Exit, Streams};
use crate::check;
use crate::output::escape_line as esc;

/// One line per unsafe fix applied (`--unsafe-fixes`): what changes at the next upgrade.
fn unsafe_applied(
    s: &mut Streams,
    path: &str,
    applied: &[crate::lint::fix::Applied],
) -> Result<(), AppError> {
    for a in applied {
        if let Some(c) = &a.consequence {
            writeln!(
                s.err,
                "cgpu-lint: {}:{}: {} ({}): {}",
                esc(path),
                a.line,
                if a.promoted {
                    "unsafe fix made safe by `[fix] extend-safe`"
                } else {
                    "unsafe fix"
                },
                a.rule,
                crate::output::shown_text(&c.line)
            )?;
        }
    }
    Ok(())
}

/// `cgpu-lint fix`: apply every safe fix in place (or show it with --diff / --stdout), then
/// report what is left for a person. Exit 1 when a file changed (or would), as pre-commit expects.
pub(crate) fn run(s: &mut Streams, args: &crate::cli::FixArgs) -> Result<Exit, AppError> {
    let (c, settings) = resolve_common(&args.common)?;
    let c = &c;
    let max_file_size = args.common.max_file_size;
    let paths = if args.paths.is_empty() {
        vec![".".to_string()]
    } else {
        args.paths.clone()
    };
    let (files, walk_errors) = check::expand_paths_with(&paths, settings.include_markdown);
    if args.stdout && files.len() != 1 {
        return Err(AppError::Usage(format!(
            "--stdout prints one corrected file; {} inputs were given",
            files.len()
        )));
    }
    let color = use_color(c.color, s.out_is_terminal);
    let mut trouble = !walk_errors.is_empty();
    let mut remaining = Vec::new();
    for e in &walk_errors {
        input_error(s, e, &mut remaining)?;
    }
    let mut changed = false;
    // Several files: Flux's valuesFrom objects may be in any of them, as for `check`.
    let mut read: Vec<(
        &String,
        Result<std::sync::Arc<crate::yaml::Source>, check::InputError>,
    )> = files
        .iter()
        .map(|p| (p, check::read_input(p, max_file_size)))
        .collect();
    let others = (files.len() > 1).then(|| {
        let srcs: Vec<_> = read
            .iter()
            .filter_map(|(_, r)| r.as_ref().ok().cloned())
            .collect();
        crate::helm::place::Others::of(&srcs)
    });
    for (p, result) in read.drain(..) {
        let src = match result {
            Ok(src) => src,
            Err(e) => {
                input_error(s, &e, &mut remaining)?;
                trouble = true;
                continue;
            }
        };
        let fixed =
            crate::lint::fix::lint_fix_among(&src, others.as_ref(), &settings, args.unsafe_fixes);
        if let Some(why) = &fixed.refused {
            writeln!(s.err, "cgpu-lint: {}: {why}", esc(p))?;
        }
        changed |= fixed.changed();
        if args.stdout || (p == "-" && !args.diff) {
            s.out.write_all(fixed.text.as_bytes())?;
            unsafe_applied(s, p, &fixed.applied)?;
        } else if args.diff {
            let d = crate::fix::unified_diff(p, &src.text, &fixed.text, color);
            s.out.write_all(d.as_bytes())?;
            unsafe_applied(s, p, &fixed.applied)?;
        } else if fixed.changed() && src.encoding != crate::yaml::source::Encoding::Utf8 {
            // The fixed text is UTF-8: writing it would change the file's encoding too.
            writeln!(
                s.err,
                "cgpu-lint: {}: not fixed in place: the file is {}; save it as UTF-8 for `fix` to edit it (or use --stdout)",
                esc(p),
                src.encoding.name()
            )?;
        } else if fixed.changed() {
            match crate::fix::write_in_place(p, &fixed.text) {
                Ok(_) => {
                    let mut rules: Vec<&str> = Vec::new();
                    for a in &fixed.applied {
                        if !rules.contains(&a.rule.name()) {
                            rules.push(a.rule.name());
                        }
                    }
                    writeln!(
                        s.err,
                        "cgpu-lint: fixed {}: {} finding{} ({})",
                        esc(p),
                        fixed.applied.len(),
                        if fixed.applied.len() == 1 { "" } else { "s" },
                        rules.join(", ")
                    )?;
                    unsafe_applied(s, p, &fixed.applied)?;
                }
                Err(e) => {
                    writeln!(s.err, "cgpu-lint: error: {}", esc(&e.to_string()))?;
                    trouble = true;
                }
            }
        }
        remaining.extend(fixed.remaining);
    }
    let baselined = super::baseline::hide(c, &mut remaining, &|dir, f| {
        super::baseline::under(dir, &paths, f)
    });
    // `fix -` writes the fixed text to stdout (`fix - <in >out`): the report goes to stderr, as
    // with --stdout and --diff, so that `out` is the file and nothing else.
    if args.stdout || args.diff || files.iter().any(|p| p == "-") {
        if !(c.quiet && remaining.is_empty()) {
            report_to_stderr(s, c, &mut remaining, files.len(), baselined)?;
        }
    } else {
        print_report(
            s,
            c,
            &mut remaining,
            files.len(),
            crate::diag::Counted::Files,
            baselined,
        )?;
    }
    let mut exit = verdict(&remaining, c.deny_warnings);
    if changed && !args.stdout {
        exit = exit.worst(Exit::Findings);
    }
    Ok(if trouble { Exit::Trouble } else { exit })
}
