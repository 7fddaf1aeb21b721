//! `check --cluster`'s reading and linting: each kubeconfig context read by the kubectl reader
//! ([`crate::cluster`]) and its objects linted as one cluster by the pipeline.

use crate::cluster::{ClusterError, Fetched, Options, Target};
use crate::lint;

/// One context of `check --cluster`: its label and its objects with their findings, or why it
/// could not be read.
pub(crate) struct ContextOutcome {
    pub(crate) label: String,
    pub(crate) result: Result<(Fetched, Vec<crate::diag::Diagnostic>), ClusterError>,
}

/// Read each context's objects (a few contexts at a time, in parallel: kubectl does the waiting)
/// and lint each cluster with [`lint::lint_cluster`], as if its objects were files.
pub(crate) fn lint_contexts(
    options: &Options,
    settings: &lint::Settings,
) -> Result<Vec<ContextOutcome>, ClusterError> {
    let targets = options.targets()?;
    let label_of = |t: &Result<Target, ClusterError>| match t {
        Ok(t) => t.label.clone(),
        Err(ClusterError::ContextNotFound { context, .. }) => context.clone(),
        Err(_) => String::new(),
    };
    let mut outcomes = Vec::new();
    for chunk in targets.chunks(8) {
        let done: Vec<ContextOutcome> = std::thread::scope(|scope| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|t| {
                    scope.spawn(move || ContextOutcome {
                        label: label_of(t),
                        result: t.clone().and_then(|t| {
                            let fetched = options.fetch(&t)?;
                            let diags = lint::lint_cluster(&fetched.sources(), settings);
                            Ok((fetched, diags))
                        }),
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a cluster thread panicked"))
                .collect()
        });
        outcomes.extend(done);
    }
    Ok(outcomes)
}
