//! `cgpu-lint post-render`: the settings, stdin and stdout, the report (stderr, `--report`, the
//! terminal) and the exit status; reading the stream, the findings and the edits are the
//! post-render engine's ([`crate::postrender`]).

use std::io::{self, BufRead, Write};

use super::{AppError, Exit, Streams};
use crate::catalogue::Severity;
use crate::cgpu::INSTALLER_NAMES;
use crate::cli::{FailOn, PostRenderArgs, TtyMode};
use crate::diag::Summary;
use crate::output::Format;
use crate::postrender::{Options, Outcome, splice_edits};

/// `post-render`: the settings from the command line and `.cgpu-lint.toml`, then [`serve`].
pub(crate) fn run(
    s: &mut Streams,
    args: &PostRenderArgs,
    input: impl std::io::BufRead,
    seekable: Option<std::fs::File>,
) -> Result<Exit, AppError> {
    let mut settings = super::settings::resolve(&super::settings::postrender(args))?.settings;
    // A rendered manifest is read as Kubernetes objects: the file's `require-cgpu` and `helm`
    // (about values files) do not apply.
    settings.opts.require_cgpu = false;
    settings.opts.helm = None;
    let opts = crate::postrender::Options {
        policy: args.policy,
        fix: args.fix,
        unsafe_fixes: args.unsafe_fixes,
        region: args.region.clone(),
        settings,
        parse_every_document: false,
    };
    serve(s, args, &opts, input, seekable)
}

/// `post-render` as a command: stdin → stdout through a [`crate::spill::Spill`] buffer, so that a
/// failed render writes nothing to stdout (Helm 3 would print a partial stream; Helm 4 would try
/// to parse it). The report goes to stderr, `--report FILE` and, on failure under Helm 4, the
/// terminal.
fn serve(
    s: &mut Streams,
    args: &PostRenderArgs,
    opts: &Options,
    input: impl BufRead,
    seekable: Option<std::fs::File>,
) -> Result<Exit, AppError> {
    // A regular file on stdin (`post-render < rendered.yaml`) is read twice instead of being
    // held: pass 1 checks and computes the edited documents, pass 2 lets the kernel copy
    // everything between them (copy_file_range/sendfile). A pipe (Helm) is held in a Spill.
    let mut held = crate::spill::Spill::new();
    let mut outcome = match &seekable {
        Some(file) => {
            use std::io::Seek;
            let start = (&*file).stream_position()?;
            // Searched in place where it can be mapped (pass 1 then copies nothing).
            let mapped = crate::spill::Mapped::new(file)
                .filter(|m| usize::try_from(start).is_ok_and(|s| s <= m.bytes().len()));
            let mut o = match &mapped {
                Some(m) => {
                    let start = start as usize;
                    crate::postrender::run_bytes(
                        &m.bytes()[start..],
                        &mut io::sink(),
                        opts,
                        |new, keep| {
                            m.done_before(start + keep);
                            m.ahead(start + new.start..start + new.end);
                        },
                    )?
                }
                None => crate::postrender::run(file, &mut io::sink(), opts)?,
            };
            drop(mapped);
            for (range, _) in &mut o.replacements {
                *range = range.start + start..range.end + start;
            }
            (&*file).seek(io::SeekFrom::Start(start))?;
            o
        }
        None => {
            crate::spill::widen_pipe(std::os::fd::AsFd::as_fd(&io::stdin()));
            crate::postrender::run(input, &mut held, opts)?
        }
    };
    held.flush()?;
    outcome
        .diagnostics
        .sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    let summary = Summary::of(1, &outcome.diagnostics);
    // `--policy N` on a stream without an installer would "succeed" while setting nothing, and
    // Helm 3 hides our stderr when the render succeeds: refuse instead.
    let missing_installer =
        (opts.policy.is_some() || args.require_installer) && outcome.installers == 0;
    let failed = missing_installer
        || match args.fail_on {
            FailOn::Error => summary.errors > 0,
            FailOn::Warning => summary.errors + summary.warnings > 0,
            FailOn::Never => false,
        };
    let verdict = if failed {
        "render refused, nothing written to stdout"
    } else {
        "stream written to stdout"
    };
    let no_installer = missing_installer.then(|| {
        format!(
            "the stream holds no {} DaemonSet, so {} (is cgpu.enabled false, or is this another chart?)",
            INSTALLER_NAMES.join(" or "),
            match opts.policy {
                Some(n) => format!("--policy {n} has nothing to set"),
                None => "--require-installer fails".into(),
            }
        )
    });
    let text = match args.format {
        Format::Json => crate::output::json::render(&outcome.diagnostics, summary),
        Format::Rdjson => crate::output::rdjson::render(&outcome.diagnostics, None),
        Format::Azure => crate::output::azure::render(&outcome.diagnostics, summary, None, false),
        _ => {
            let mut text = String::new();
            for c in &outcome.changes {
                text.push_str(&format!("cgpu-lint post-render: {c}\n"));
            }
            // A new POLICY acts on a node only once its loaded cGPU module restarts:
            // the upgrade alone changes nothing on a running node.
            if let Some(n) = opts.policy
                && !outcome.changes.is_empty()
            {
                text.push_str(&format!(
                    "cgpu-lint post-render: nodes whose cGPU module is loaded keep their policy until restarted: plan the reboots with `cgpu-lint checklist --cluster --policy {n}`\n"
                ));
            }
            for d in &outcome.diagnostics {
                let report = crate::output::human::render_one(d, false);
                // The template beside the stream position, under the first line.
                match (outcome.template_of(d), report.split_once('\n')) {
                    (Some(t), Some((head, body))) => {
                        text.push_str(&format!("{head}\n  template: {t}\n{body}"));
                    }
                    _ => text.push_str(&report),
                }
                text.push('\n');
            }
            if let Some(why) = &no_installer {
                text.push_str(&format!("cgpu-lint post-render: error: {why}\n"));
            }
            use crate::output::count;
            text.push_str(&format!(
                "cgpu-lint post-render: {}, {}: {}, {}, {}; {verdict}\n",
                count(outcome.documents, "document"),
                count(outcome.installers, "installer DaemonSet"),
                count(summary.errors, "error"),
                count(summary.warnings, "warning"),
                count(summary.infos, "info"),
            ));
            text
        }
    };
    s.err.write_all(text.as_bytes())?;
    if let Some(why) = &no_installer
        && matches!(args.format, Format::Json | Format::Rdjson | Format::Azure)
    {
        writeln!(s.err, "cgpu-lint post-render: error: {why}; {verdict}")?;
    }
    if let Some(path) = &args.report {
        std::fs::write(path, &text)
            .map_err(|e| AppError::Usage(format!("--report {path}: {e}")))?;
    }
    if failed {
        let to_tty = match args.tty {
            TtyMode::Always => true,
            TtyMode::Never => false,
            TtyMode::Auto => std::env::var_os("HELM_PLUGIN_NAME").is_some(),
        };
        if to_tty {
            tty_summary(
                &outcome,
                summary,
                no_installer.as_deref(),
                args.report.as_deref(),
            );
        }
        return Ok(if missing_installer {
            Exit::Trouble
        } else {
            Exit::Findings
        });
    }
    if let Some(file) = &seekable {
        s.out.flush()?;
        if s.out_is_stdout {
            splice_edits(file, &outcome.replacements, &mut io::stdout().lock())?;
        } else {
            splice_edits(file, &outcome.replacements, &mut s.out)?;
        }
    } else if s.out_is_stdout {
        // Straight to the file descriptor, not through stdout's line buffer (which wrote the
        // spilled tail 8 KiB at a time, two writes each): `drain_into` sends the tail with
        // sendfile, into Helm's pipe (widened first) or a file.
        s.out.flush()?;
        io::stdout().lock().flush()?;
        let mut out =
            std::fs::File::from(std::os::fd::AsFd::as_fd(&io::stdout()).try_clone_to_owned()?);
        crate::spill::widen_pipe(std::os::fd::AsFd::as_fd(&out));
        held.drain_into(&mut out)?;
    } else {
        held.drain_into_dyn(s.out)?;
    }
    Ok(Exit::Clean)
}

/// Helm 4 discards a plugin's stderr; the controlling terminal, when there is one, is the only
/// way to reach the person who ran `helm`. Best effort: no terminal, no message.
fn tty_summary(
    outcome: &Outcome,
    summary: Summary,
    no_installer: Option<&str>,
    report: Option<&str>,
) {
    let Ok(mut tty) = std::fs::OpenOptions::new().write(true).open("/dev/tty") else {
        return;
    };
    let _ = tty.write_all(tty_text(outcome, summary, no_installer, report).as_bytes());
}

/// The terminal summary: the counts, then each error and warning as one brief line.
fn tty_text(
    outcome: &Outcome,
    summary: Summary,
    no_installer: Option<&str>,
    report: Option<&str>,
) -> String {
    let mut text = format!(
        "cgpu-lint post-render: render refused: {} error(s), {} warning(s)\n",
        summary.errors, summary.warnings
    );
    if let Some(why) = no_installer {
        text.push_str(&format!("  {why}\n"));
    }
    for d in outcome
        .diagnostics
        .iter()
        .filter(|d| d.severity != Severity::Info)
    {
        text.push_str(&format!("  {}", crate::output::brief(d)));
        if let Some(t) = outcome.template_of(d) {
            text.push_str(&format!(" (template {t})"));
        }
        text.push('\n');
    }
    match report {
        Some(r) => text.push_str(&format!("  full report: {r}\n")),
        None => text.push_str(
            "  full report: add --post-renderer-args=--report --post-renderer-args=FILE\n",
        ),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint;
    use crate::postrender::STDIN;
    use crate::yaml::Source;

    #[test]
    fn the_terminal_summary_lists_errors_and_warnings_as_brief_lines() {
        let stream = "---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: cgpu-installer\n  namespace: kube-system\nspec:\n  template:\n    spec:\n      containers:\n      - name: cgpu-installer\n        image: registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.10-2b9e7d4-aliyun\n        env:\n        - name: POLICY\n          value: 2\n";
        let src = Source::new(STDIN, stream.to_string());
        let diags = lint::lint_file(&src, &lint::Settings::default());
        let summary = Summary::of(1, &diags);
        let outcome = Outcome {
            diagnostics: diags.clone(),
            ..Outcome::default()
        };
        let text = tty_text(&outcome, summary, None, Some("report.txt"));
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("cgpu-lint post-render: render refused: "),
            "{text}"
        );
        // `value: 2` is on line 15; the 2 is at column 18 (EnvVar.value must be a string, so
        // Kubernetes refuses the int).
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("  -:15:18: error[installer-policy-unquoted] POLICY ")),
            "{text}"
        );
        let finding_lines = &lines[1..lines.len() - 1];
        assert_eq!(
            finding_lines.len(),
            diags
                .iter()
                .filter(|d| d.severity != Severity::Info)
                .count()
        );
        for (l, d) in finding_lines
            .iter()
            .zip(diags.iter().filter(|d| d.severity != Severity::Info))
        {
            assert_eq!(*l, format!("  {}", crate::output::brief(d)));
        }
        assert_eq!(lines[lines.len() - 1], "  full report: report.txt");
    }
}
