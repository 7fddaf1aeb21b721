//! A values stack read lean (`check --stack`): each layer is read with
//! [`yaml::parse_lean`], which keeps only the root `cgpu` entry and checks and drops every other
//! entry as it ends, so memory holds the `cgpu` blocks instead of every layer's whole tree.
//!
//! The rules over a stack read only the coalesced `cgpu` entry and each layer's duplicate keys,
//! and under the conditions [`read`] checks both are what the whole reading gives: no `--set`,
//! every layer valid UTF-8 without a byte-order mark, one document (no `---` line: Helm 3's first
//! document and Helm 4's merged documents are then the same mapping, so the two Helms compute the
//! same values), no GitOps release (a layer that names the chart is read whole), nothing the lean
//! reading gives up on (aliases, root merge keys, a dropped value Helm would read differently)
//! and no refusal. Anything else gives `None` and the caller reads the stack the ordinary way;
//! a differential test holds the two readings to the same findings.

use std::sync::Arc;

use super::{
    Layers, chart_source, coalesce, empty_map, merge_maps, one_document_alike, root_mapping,
    view_unchanged,
};
use crate::yaml::{self, Node, Parsed, Source};

/// A stack read lean: each layer's lean parse (the `-f` files in order, then the chart's values)
/// and the coalesced values, which hold only the `cgpu` entry.
pub struct Stack {
    pub layers: Vec<(Arc<Source>, Parsed)>,
    pub values: Node,
}

/// The stack `layers` read lean, when that reading certainly gives the findings the whole
/// reading gives (see the module's text); `None` otherwise.
pub fn read(layers: &Layers) -> Option<Stack> {
    if !layers.sets.is_empty() {
        return None;
    }
    let chart = chart_source(layers);
    let mut parsed = Vec::with_capacity(layers.files.len() + 1);
    for (i, src) in layers.files.iter().chain([&chart]).enumerate() {
        // A `-f` file that names the chart may be a GitOps release ([`super::place::stack_layer`]).
        let file = i < layers.files.len();
        if !one_document_alike(src) || (file && src.text.contains(crate::cgpu::CHART)) {
            return None;
        }
        let lean = yaml::lean::Lean {
            keep: "cgpu",
            keep_required: false,
            give_up_on: &[],
            droppable: &view_unchanged,
        };
        let p = yaml::parse_lean(src, &lean)?;
        if p.error.is_some() || p.documents.len() > 1 {
            return None;
        }
        parsed.push((src.clone(), p));
    }
    let mut trees = parsed.iter().map(|(src, p)| {
        let root = p.documents.first().and_then(|d| d.root.clone());
        root_mapping(src, root).ok()
    });
    let chart_tree = trees.next_back()??;
    let base_src = Source::new("<values>", String::new());
    let mut values = empty_map(&base_src);
    for tree in trees {
        merge_maps(&mut values, tree?);
    }
    coalesce(&mut values, &chart_tree);
    Some(Stack {
        layers: parsed,
        values,
    })
}
