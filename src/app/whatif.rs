//! `cgpu-lint compat --nodes FILE | --cluster` with `--kubernetes`, `--tag`, `--driver`,
//! `--os-image`: the upgrade what-if ([`crate::whatif`]) over files or each context read by the
//! kubectl reader, printed for people or as JSON. Exit 1 when the change breaks a node or
//! downgrades one without `--allow-downgrade`, 2 when no node's current version is known.

use super::{AppError, Exit, Streams};
use crate::cli::{CompatArgs, CompatFormat};
use crate::whatif::{self, Change, WhatIf};

pub(crate) fn run(s: &mut Streams, args: &CompatArgs) -> Result<Exit, AppError> {
    let change = Change {
        kubernetes: args.kubernetes.clone(),
        tag: args.tag.clone(),
        driver: args.driver.clone(),
        os_image: args.os_image.clone(),
    };
    change
        .validate()
        .map_err(|e| AppError::Usage(format!("compat --nodes/--cluster: {e}")))?;
    let settings = crate::lint::Settings::default();
    let mut answers: Vec<(Option<String>, WhatIf)> = Vec::new();
    let mut trouble = false;
    if let Some(nodes) = &args.nodes {
        let mut srcs = Vec::new();
        for p in args.inputs.iter().chain(std::iter::once(nodes)) {
            srcs.push(crate::check::read_input(
                p,
                crate::check::DEFAULT_MAX_FILE_SIZE,
            )?);
        }
        let w = whatif::what_if(&srcs, &change, &settings, args.allow_downgrade)
            .map_err(|e| AppError::Usage(e.to_string()))?;
        answers.push((None, w));
    } else {
        let options = args.cluster.options();
        for target in options.targets()? {
            let result = target.and_then(|t| Ok((t.label.clone(), options.fetch(&t)?)));
            match result {
                Ok((label, fetched)) => {
                    for w in &fetched.warnings {
                        writeln!(s.err, "cgpu-lint: warning: {w}")?;
                    }
                    match whatif::what_if(
                        &fetched.sources(),
                        &change,
                        &settings,
                        args.allow_downgrade,
                    ) {
                        Ok(w) => answers.push((Some(label), w)),
                        Err(e) => {
                            writeln!(s.err, "cgpu-lint: error: cluster {label}: {e}")?;
                            trouble = true;
                        }
                    }
                }
                Err(e) => {
                    writeln!(s.err, "cgpu-lint: error: {e}")?;
                    trouble = true;
                }
            }
        }
    }
    let text = match args.format {
        CompatFormat::Human => whatif::print::human(&answers),
        CompatFormat::Json => whatif::print::json(&answers),
    };
    s.out.write_all(text.as_bytes())?;
    // A break or a refused downgrade is a finding; a what-if that could not judge the nodes
    // that run cGPU (their version unknown) and found nothing is no answer, so it is trouble.
    Ok(if trouble {
        Exit::Trouble
    } else if answers
        .iter()
        .any(|(_, w)| w.breaks() > 0 || w.refused_downgrade())
    {
        Exit::Findings
    } else if answers.iter().any(|(_, w)| w.unknown() > 0) {
        Exit::Trouble
    } else {
        Exit::Clean
    })
}
