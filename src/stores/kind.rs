//! The values that name a row of the table: [`StoreKind`] (a store, as `--stores` names
//! it) and [`Store`] (a store as a scenario measures it: with its journal mode, for a store
//! that has them). Both are the table's position, so they compare, sort and hash in table
//! order.
//!
//! The constants `StoreKind::Heap`, `Store::BTree`, ... and the function `Store::Sqlite` keep
//! the names of the enums these replaced, for the code that builds a particular store's
//! value (tests, and the suites designed around one store).

use std::fmt;

use clap::builder::PossibleValue;
use clap::ValueEnum;

use super::{same, Encoding, JournalMode, OnUpgrade, SelectedBy, StoreDef, ROWS, TABLE};
use crate::bench_canister::Module;

/// A store of the table.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StoreKind(usize);

/// The number of `--stores` values.
const STORES_VALUES: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < ROWS.len() {
        if matches!(ROWS[i].selected_by, SelectedBy::Stores { .. }) {
            n += 1;
        }
        i += 1;
    }
    n
};

#[allow(non_upper_case_globals)]
impl StoreKind {
    pub const Heap: StoreKind = StoreKind::named("heap");
    pub const Btree: StoreKind = StoreKind::named("btree");
    pub const Sqlite: StoreKind = StoreKind::named("sqlite");
    pub const SqliteVfs: StoreKind = StoreKind::named("sqlite-vfs");

    /// The `--stores` values, in table order (its default: every one).
    pub const ALL: [StoreKind; STORES_VALUES] = {
        let mut all = [StoreKind(0); STORES_VALUES];
        let (mut i, mut n) = (0, 0);
        while i < ROWS.len() {
            if matches!(ROWS[i].selected_by, SelectedBy::Stores { .. }) {
                all[n] = StoreKind(i);
                n += 1;
            }
            i += 1;
        }
        all
    };

    /// The row called `name`; a name the table does not have stops the build.
    pub const fn named(name: &str) -> StoreKind {
        let mut i = 0;
        while i < ROWS.len() {
            if same(ROWS[i].name, name) {
                return StoreKind(i);
            }
            i += 1;
        }
        panic!("no store of that name in the table")
    }

    /// Every row of the table, `--stores` values and tune variants.
    pub fn every() -> impl Iterator<Item = StoreKind> {
        (0..TABLE.len()).map(StoreKind)
    }

    /// Its row.
    pub fn def(self) -> &'static StoreDef {
        &TABLE[self.0]
    }

    /// `heap`, `btree`, `sqlite`: the `--stores` value.
    pub fn name(self) -> &'static str {
        self.def().name
    }

    /// Its Candid method stem (`add_users_{stem}`), as the canister's methods name it.
    pub fn stem(self) -> &'static str {
        self.def().stem
    }

    /// The `--stores` value, as before it had a table (the name).
    pub fn as_str(self) -> &'static str {
        self.name()
    }

    pub fn label(self) -> &'static str {
        self.def().label
    }

    pub fn module(self) -> Module {
        self.def().module
    }

    /// What its binding fixes of the SQLite `setting` (a pragma's name), if it does.
    pub fn fixed(self, setting: &str) -> Option<&'static super::Fixed> {
        self.def().fixed.iter().find(|f| f.setting == setting)
    }

    /// The suites that measure it (`--suite` names): its row's, then the cache suite, whose
    /// sweep is of a page cache, for a store that keeps one.
    pub fn suites(self) -> impl Iterator<Item = &'static str> {
        let def = self.def();
        def.suites
            .iter()
            .copied()
            .chain(def.page_cache.then_some("cache"))
    }

    /// Whether `suite` measures it.
    pub fn measured_by(self, suite: &str) -> bool {
        self.suites().any(|s| s == suite)
    }

    /// The default module's store it is a variant of (a tune variant's), else itself.
    pub fn base(self) -> StoreKind {
        match self.def().variant_of {
            Some(name) => super::find(name).expect("a variant names a store of the table"),
            None => self,
        }
    }

    /// The encodings its rows are serialized in on upgrade (none: it upgrades in place).
    pub fn encodings(self) -> &'static [Encoding] {
        match self.def().on_upgrade {
            OnUpgrade::Serialized(encodings) => encodings,
            OnUpgrade::InPlace | OnUpgrade::ByRuntime => &[],
        }
    }

    /// Whether an upgrade serializes its rows (its work then grows with them), in encodings
    /// of the canister's or the runtime's one.
    pub fn saved_on_upgrade(self) -> bool {
        self.def().on_upgrade != OnUpgrade::InPlace
    }

    /// The stores a run measures of it: one per journal mode of `modes` (in SQLite's order)
    /// for a store with journal modes, else the store itself.
    pub fn stores(self, modes: &[JournalMode]) -> Vec<Store> {
        if !self.def().journal_modes {
            return vec![Store::new(self, None)];
        }
        JournalMode::ALL
            .into_iter()
            .filter(|m| modes.contains(m))
            .map(|m| Store::new(self, Some(m)))
            .collect()
    }
}

impl fmt::Display for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Debug for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `--stores`: the table's `--stores` rows, each with its help line and the suites that
/// measure it.
impl ValueEnum for StoreKind {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        match self.def().selected_by {
            SelectedBy::Stores { help } => Some(PossibleValue::new(self.name()).help(format!(
                "{help}; measured by {}",
                self.suites().collect::<Vec<_>>().join(", ")
            ))),
            SelectedBy::TuneVariants => None,
        }
    }
}

/// A store as a scenario measures it: a row of the table, in a journal mode for a store
/// that has them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Store {
    kind: StoreKind,
    mode: Option<JournalMode>,
}

#[allow(non_upper_case_globals, non_snake_case)]
impl Store {
    pub const Heap: Store = Store::new(StoreKind::Heap, None);
    pub const BTree: Store = Store::new(StoreKind::Btree, None);
    /// SQLite on ic-sqlite-vfs (no journal modes: its binding keeps the journal in memory).
    pub const SqliteVfs: Store = Store::new(StoreKind::SqliteVfs, None);

    /// SQLite in journal mode `mode`.
    pub const fn Sqlite(mode: JournalMode) -> Store {
        Store::new(StoreKind::Sqlite, Some(mode))
    }

    /// `kind` in journal mode `mode` (`None` for a store without journal modes).
    pub const fn new(kind: StoreKind, mode: Option<JournalMode>) -> Store {
        Store { kind, mode }
    }

    /// Column label in tables and plots: `StableBTreeMap`, `SQLite WAL`.
    pub fn label(self) -> String {
        match self.mode {
            Some(m) => format!("{} {m}", self.kind.label()),
            None => self.kind.label().to_string(),
        }
    }

    /// For narrow tables: `Heap`, `BTreeMap`, `WAL` (the heading says which store is by
    /// journal mode).
    pub fn short_label(self) -> String {
        match self.mode {
            Some(m) => m.as_str().to_string(),
            None => self.kind.def().short_label.to_string(),
        }
    }

    /// `heap`, `btree`, `sqlite`, `sqlite-vfs`: the records' `store` (the `--stores` name;
    /// the canister's method names take [`Store::stem`]).
    pub fn kind(self) -> &'static str {
        self.kind.def().record
    }

    /// Its Candid method stem.
    pub fn stem(self) -> &'static str {
        self.kind.stem()
    }

    pub fn store_kind(self) -> StoreKind {
        self.kind
    }

    pub fn journal_mode(self) -> Option<JournalMode> {
        self.mode
    }

    /// The records' `journal_mode`: the mode, or empty.
    pub fn journal_column(self) -> String {
        self.mode.map(|m| m.to_string()).unwrap_or_default()
    }

    /// Its palette slot: its row's, one more per journal mode before its own.
    pub fn colour(self) -> Option<usize> {
        let first = self.kind.def().colour?;
        let mode = self
            .mode
            .and_then(|m| JournalMode::ALL.iter().position(|&j| j == m));
        Some(first + mode.unwrap_or(0))
    }

    /// Its place among every store and mode of the table, in table order: the order of
    /// table columns.
    pub fn rank(self) -> usize {
        let before: usize = StoreKind::every()
            .take_while(|&k| k != self.kind)
            .map(|k| k.stores(&JournalMode::ALL).len())
            .sum();
        let mode = self
            .mode
            .and_then(|m| JournalMode::ALL.iter().position(|&j| j == m));
        before + mode.unwrap_or(0)
    }
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.mode {
            Some(m) => write!(f, "{} {m}", self.kind.name()),
            None => f.write_str(self.kind.name()),
        }
    }
}
