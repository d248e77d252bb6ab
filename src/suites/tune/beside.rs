//! The stores measured beside the SQLite search, each at its defaults and filled alone: the
//! default module's (`--stores`), the tune variant's (`--tune-variants`), and the
//! StableBTreeMap with the stores a reader compares it with at other value sizes
//! (`--tune-value-sizes`). Those records carry ` value_size=N` in the store column, so they
//! stay out of the search's tables and the decision table (a value size is the user's data,
//! not a setting) and have a table of their own (`document::by_value_size_table`).

use super::measure::Beside;
use super::{value_bound, variant_base, Config, Setting, SEARCHED};
use crate::report::ScenarioResult;
use crate::suites::pool::State;
use crate::suites::scenario::{Store, StoreKind};

/// A store measured beside the search.
#[derive(Clone, Copy)]
enum At {
    /// One of the default module's stores without settings (`--stores`).
    Default(Store),
    /// A store of the tune variant.
    Variant(StoreKind),
    /// The searched store at the canister's defaults (only at other value sizes: at the
    /// run's, the search measures it).
    SearchedDefaults,
}

/// The empty states of one other value size (`run::empty_at_value_sizes`).
pub(super) struct Sized {
    pub(super) size: u64,
    /// The default module's before SQLite is opened, where its other stores start alone.
    pub(super) alone: State,
    /// The default module's, as a run at that `--payload-size` starts (SQLite's defaults
    /// read).
    pub(super) default: State,
    /// The tune variant's, where a store of it with a bounded value is measured at that
    /// size.
    pub(super) bounded: Option<State>,
}

/// The record's `store` at `size`: its label at the run's payload size, then the size.
pub(super) fn with_size(store: &str, size: u64) -> String {
    format!("{store} value_size={size}")
}

/// The value size a record was measured at, when not the run's.
pub(super) fn value_size(r: &ScenarioResult) -> Option<u64> {
    r.store
        .split_whitespace()
        .find_map(|f| f.strip_prefix("value_size="))
        .and_then(|v| v.parse().ok())
}

impl Config {
    /// The stores measured at the other value size `size`: the default module's, the tune
    /// variant's with a bounded value type where the payload fits its bound, the searched
    /// store at its defaults. The variants without a bound (talc alone) are left out: talc
    /// moves where the module's statics fall, whatever the value size.
    fn stores_at(&self, size: u64) -> Vec<At> {
        let mut out: Vec<At> = self.others.iter().map(|&s| At::Default(s)).collect();
        out.extend(self.bounded_at_size(size).into_iter().map(At::Variant));
        out.push(At::SearchedDefaults);
        out
    }

    /// The variants with a bounded value type measured at the other value size `size`: those
    /// measured at all, up to their bound.
    fn bounded_at_size(&self, size: u64) -> Vec<StoreKind> {
        self.variants
            .iter()
            .copied()
            .filter(|&v| value_bound(v).is_some_and(|max| size <= max))
            .collect()
    }

    /// Whether a variant with a bounded value type is measured at the other value size
    /// `size`.
    pub(super) fn bounded_at(&self, size: u64) -> bool {
        !self.bounded_at_size(size).is_empty()
    }

    /// The shape of each store measured at the other value size `size` (for the memory
    /// estimate).
    pub(super) fn value_size_stores(&self, size: u64) -> Vec<Store> {
        let searched = self.users.stores.first().copied();
        self.stores_at(size)
            .into_iter()
            .filter_map(|at| match at {
                At::Default(store) => Some(store),
                At::Variant(v) => Some(variant_base(v)),
                At::SearchedDefaults => searched,
            })
            .collect()
    }

    /// Every store beside the search: first those at the run's payload size (the default
    /// module's from `alone`, each filled alone as the users suites fill it, SQLite at its
    /// defaults from `empty`, then the tune variant's from `variant`, when given), then
    /// every store at every other value size from that size's empty states (`sized`),
    /// sizes ascending. With how many are at the run's size.
    pub(super) fn besides<'a>(
        &self,
        defaults: Setting,
        alone: &'a State,
        empty: &'a State,
        variant: Option<&'a State>,
        sized: &'a [Sized],
    ) -> (Vec<Beside<'a>>, usize) {
        let beside = |at: At, size: Option<&'a Sized>| {
            let (alone, empty, variant) = match size {
                Some(s) => (&s.alone, &s.default, s.bounded.as_ref()),
                None => (alone, empty, variant),
            };
            let size = size.map(|s| s.size);
            let (store, method_store, record_store, label, start, sqlite) = match at {
                At::Default(store) => (
                    store,
                    store.kind(),
                    store.kind().to_string(),
                    store.label(),
                    alone,
                    None,
                ),
                At::Variant(v) => (
                    variant_base(v),
                    v.stem(),
                    v.def().record.to_string(),
                    v.label().to_string(),
                    variant?,
                    None,
                ),
                At::SearchedDefaults => (
                    Store::new(SEARCHED, Some(defaults.journal_mode)),
                    SEARCHED.stem(),
                    defaults.store_label(),
                    format!("{} at its defaults", SEARCHED.label()),
                    empty,
                    Some(defaults),
                ),
            };
            Some(Beside {
                store,
                method_store,
                record_store: size.map_or(record_store.clone(), |s| with_size(&record_store, s)),
                label: size.map_or(label.clone(), |s| format!("{label} with {s}-byte values")),
                start,
                sqlite,
            })
        };
        let mut out: Vec<Beside<'a>> = self
            .others
            .iter()
            .map(|&s| At::Default(s))
            .chain(self.variants.iter().map(|&v| At::Variant(v)))
            .filter_map(|at| beside(at, None))
            .collect();
        let at_run_size = out.len();
        for size in sized {
            out.extend(
                self.stores_at(size.size)
                    .into_iter()
                    .filter_map(|at| beside(at, Some(size))),
            );
        }
        (out, at_run_size)
    }
}
