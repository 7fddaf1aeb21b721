//! Finding a key among a mapping's entries while layering another mapping onto it
//! (`MergeMaps`, `coalesceValues`, `coalesceGlobals`, the duplicate keys of [`super::view`]),
//! in O(1) per key once there are many of them: a search through the entries for each key made
//! layering a mapping of n keys O(n²) (40,000 keys: 13.6 s for `values`).
//!
//! [`Finder`] answers exactly what `entries.iter().position(|e| e.key == key)` answers on the
//! entries as they would be with every removal done in place (`Vec::remove`): the first live
//! entry with that key. Removals are only marked while the index is in use and done in one
//! pass by [`Finder::finish`], which keeps the order of the entries left.

use std::collections::HashMap;

use crate::yaml::Entry;

/// Up to this many lookups, a linear search (no hashing, no allocation) is cheaper.
pub(super) const LINEAR_LOOKUPS: usize = 16;

const NONE: usize = usize::MAX;

pub(super) enum Finder {
    /// Search the entries; removals happen at once.
    Linear,
    Hashed(Index),
}

pub(super) struct Index {
    /// Each key's first entry not removed (or a removed one whose chain leads to it).
    first: HashMap<String, usize>,
    /// The next entry with the same key, in order; [`NONE`] at the end of a chain.
    next: Vec<usize>,
    removed: Vec<bool>,
    any_removed: bool,
}

impl Finder {
    /// A finder over `entries` for `lookups` keys to come: hashed when a linear search per key
    /// could cost more than indexing once.
    pub(super) fn new(entries: &[Entry], lookups: usize, linear: usize) -> Finder {
        if lookups <= linear {
            return Finder::Linear;
        }
        let mut first = HashMap::with_capacity(entries.len());
        let mut next = vec![NONE; entries.len()];
        for (i, e) in entries.iter().enumerate().rev() {
            if let Some(later) = first.insert(e.key.clone(), i) {
                next[i] = later;
            }
        }
        Finder::Hashed(Index {
            first,
            next,
            removed: vec![false; entries.len()],
            any_removed: false,
        })
    }

    /// The position of the first entry with `key` that is not removed.
    pub(super) fn find(&self, entries: &[Entry], key: &str) -> Option<usize> {
        match self {
            Finder::Linear => entries.iter().position(|e| e.key == key),
            Finder::Hashed(ix) => {
                let mut i = *ix.first.get(key)?;
                while ix.removed[i] {
                    i = ix.next[i];
                    if i == NONE {
                        return None;
                    }
                }
                Some(i)
            }
        }
    }

    /// Append `entry`, whose key [`Finder::find`] does not find.
    pub(super) fn push(&mut self, entries: &mut Vec<Entry>, entry: Entry) {
        if let Finder::Hashed(ix) = self {
            // Any earlier entry with this key is removed: the new one starts the chain.
            ix.first.insert(entry.key.clone(), entries.len());
            ix.next.push(NONE);
            ix.removed.push(false);
        }
        entries.push(entry);
    }

    /// Remove the entry at `i` (one [`Finder::find`] returned).
    pub(super) fn remove(&mut self, entries: &mut Vec<Entry>, i: usize) {
        match self {
            Finder::Linear => {
                entries.remove(i);
            }
            Finder::Hashed(ix) => {
                ix.removed[i] = true;
                ix.any_removed = true;
            }
        }
    }

    /// Do the removals marked.
    pub(super) fn finish(self, entries: &mut Vec<Entry>) {
        if let Finder::Hashed(ix) = self
            && ix.any_removed
        {
            let mut i = 0;
            entries.retain(|_| {
                i += 1;
                !ix.removed[i - 1]
            });
        }
    }
}
