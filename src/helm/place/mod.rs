//! Where the chart's values live when they are not a values file of their own: an
//! umbrella chart's values (the subchart's key), a Flux `HelmRelease` of the chart
//! (`spec.values`), an Argo CD `Application` of it (`helm.valuesObject`, or the `helm.values`
//! string read in place). [`targets`] finds them in a document, with the nodes the rules check;
//! [`releases`] computes what each release of the chart receives, the way Helm (and Flux or
//! Argo CD before it) layers them:
//!
//! - umbrella (Helm's `pkg/chartutil/coalesce.go`, checked with real Helm 3.18 and 4.2): the
//!   parent's values (its `-f` files over its values.yaml), then for each dependency of the
//!   chart the key `alias` (or `name`): it must be a mapping ("type mismatch on KEY"), it gets the
//!   parent's `global` over its own (`coalesceGlobals`), then the chart's defaults; a
//!   `condition` that resolves to a boolean, else the `tags`, may disable it;
//! - HelmRelease (helm-controller `ChartValuesFromReferences`; fluxcd.io, "Helm Releases",
//!   values references): each `valuesFrom` entry in order (a ConfigMap of the same file, its
//!   `valuesKey`, default `values.yaml`; `targetPath` set like `--set`), then `spec.values`, each
//!   merged over the last as Helm merges `-f` files;
//! - Application (argo-cd `ApplicationSourceHelm.ValuesYAML` and the repo server's
//!   `helmTemplate`; argo-cd.readthedocs.io, user guide "Helm": "parameters > valuesObject >
//!   values > valueFiles"): `valuesObject` when set, else the `values` string (never both: the
//!   object replaces the string), as the last `-f` file, then `parameters` as `--set`
//!   (`forceString`: `--set-string`).

mod appset;
mod find;
mod others;
mod release;
mod target;

pub use find::{disabled, parent_chart, strip_templated, targets};
pub use others::{Others, config_map_targets, names, other_charts};
pub use release::{
    Release, at_parameters, effective, release_values, releases, releases_among, source_folder,
    stack_parameters,
};
pub use target::{Dependency, Form, Layer, Param, Target, Values, ValuesRef};
