//! The schemas of the suites that measure a store by its layout rather than by the users
//! table: dbbench (db_bench's key-value benchmarks), keys (key types) and sysbench (sysbench's
//! tables). A schema is a store's table layout, with the name the canister gives it in each
//! of those suites; [`SchemaStore`] is a schema in a journal mode.

use std::fmt;

use super::{same, JournalMode, StoreKind, ROWS};

/// A layout of a store in the schema suites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schema {
    /// The records' `store`.
    pub record: &'static str,
    /// After the store's label and journal mode in tables and plots (`SQLite WAL rowid`);
    /// empty for a store with one layout.
    pub label: &'static str,
    /// As db_bench's header names it (after `SQLite WAL, ` for a store with journal modes).
    pub described: &'static str,
    /// Per suite that measures it (`--suite` name), the name the canister's methods of that
    /// suite take (`dbbench_write`'s `store`, ...).
    pub canister: &'static [(&'static str, &'static str)],
    /// Its palette slot when not its store's (see `StoreDef::colour`).
    pub colour: Option<usize>,
}

impl Schema {
    /// The schema a record's `store` names, with its store.
    pub fn of_record(record: &str) -> Option<(StoreKind, &'static Schema)> {
        every().find(|(_, s)| s.record == record)
    }

    /// The name `suite`'s canister methods give it, if `suite` measures it.
    pub fn canister_name(&self, suite: &str) -> Option<&'static str> {
        self.canister
            .iter()
            .find(|(s, _)| *s == suite)
            .map(|&(_, name)| name)
    }

    /// Its label, of `kind` in journal mode `journal_mode` (a record's column).
    pub fn label_of(&self, kind: StoreKind, journal_mode: &str) -> String {
        let mut label = kind.label().to_string();
        if kind.def().journal_modes {
            label = format!("{label} {journal_mode}");
        }
        if !self.label.is_empty() {
            label = format!("{label} {}", self.label);
        }
        label
    }
}

/// Every schema with its store, in table order.
fn every() -> impl Iterator<Item = (StoreKind, &'static Schema)> {
    StoreKind::every().flat_map(|k| k.def().schemas.iter().map(move |s| (k, s)))
}

/// The place among every schema of the one whose records name it `record`; a name the
/// table does not have stops the build.
const fn named(record: &str) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < ROWS.len() {
        let mut j = 0;
        while j < ROWS[i].schemas.len() {
            if same(ROWS[i].schemas[j].record, record) {
                return n;
            }
            n += 1;
            j += 1;
        }
        i += 1;
    }
    panic!("no schema of that record name in the table")
}

/// A schema measured in a journal mode (for a store that has them): a store of dbbench,
/// keys or sysbench.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SchemaStore {
    /// The schema's place among every schema of the table.
    schema: usize,
    mode: Option<JournalMode>,
}

#[allow(non_upper_case_globals, non_snake_case)]
impl SchemaStore {
    /// The StableBTreeMap (db_bench's `StableBTreeMap<[u8; 16], Vec<u8>>`).
    pub const BTree: SchemaStore = SchemaStore {
        schema: named("btree"),
        mode: None,
    };

    /// SQLite's rowid table in journal mode `mode`.
    pub const fn SqliteRowid(mode: JournalMode) -> SchemaStore {
        SchemaStore {
            schema: named("sqlite"),
            mode: Some(mode),
        }
    }

    /// SQLite's `WITHOUT ROWID` table in journal mode `mode`.
    pub const fn SqliteWithoutRowid(mode: JournalMode) -> SchemaStore {
        SchemaStore {
            schema: named("sqlite_without_rowid"),
            mode: Some(mode),
        }
    }

    /// The schemas `suite` measures of the stores `kinds`, in table order, a schema of a
    /// store with journal modes once per mode of `modes` (in their order).
    pub fn of_suite(suite: &str, kinds: &[StoreKind], modes: &[JournalMode]) -> Vec<SchemaStore> {
        let mut out = Vec::new();
        for (i, (kind, schema)) in every().enumerate() {
            if !kinds.contains(&kind) || schema.canister_name(suite).is_none() {
                continue;
            }
            match kind.def().journal_modes {
                true => out.extend(modes.iter().map(|&m| SchemaStore {
                    schema: i,
                    mode: Some(m),
                })),
                false => out.push(SchemaStore {
                    schema: i,
                    mode: None,
                }),
            }
        }
        out
    }

    /// The schema store a record names (its `store` and `journal_mode`), back as a value;
    /// `None` for a schema or journal mode this version does not know.
    pub fn of_record(store: &str, journal_mode: &str) -> Option<SchemaStore> {
        let (i, (kind, _)) = every().enumerate().find(|(_, (_, s))| s.record == store)?;
        let mode = match kind.def().journal_modes {
            true => Some(JournalMode::from_name(journal_mode)?),
            false => None,
        };
        Some(SchemaStore { schema: i, mode })
    }

    /// The schema and its store.
    fn parts(self) -> (StoreKind, &'static Schema) {
        every().nth(self.schema).expect("a schema of the table")
    }

    pub fn schema(self) -> &'static Schema {
        self.parts().1
    }

    pub fn store_kind(self) -> StoreKind {
        self.parts().0
    }

    pub fn journal_mode(self) -> Option<JournalMode> {
        self.mode
    }

    /// The records' `journal_mode`: the mode, or empty.
    pub fn journal_column(self) -> String {
        self.mode.map(|m| m.to_string()).unwrap_or_default()
    }

    /// The results' `store`.
    pub fn record(self) -> &'static str {
        self.schema().record
    }

    /// The name `suite`'s canister methods give it.
    pub fn canister_name(self, suite: &str) -> &'static str {
        self.schema()
            .canister_name(suite)
            .expect("a schema store of a suite that measures it")
    }

    /// As db_bench's header names it: `SQLite WAL, rowid table`.
    pub fn described(self) -> String {
        let (kind, schema) = self.parts();
        match self.mode {
            Some(m) => format!("{} {m}, {}", kind.label(), schema.described),
            None => schema.described.to_string(),
        }
    }

    /// In tables and plots: `SQLite WAL WITHOUT ROWID`, `StableBTreeMap`.
    pub fn label(self) -> String {
        let (kind, schema) = self.parts();
        schema.label_of(kind, &self.journal_column())
    }

    /// In narrow tables: a store without journal modes by its short label (`BTreeMap`).
    pub fn short_label(self) -> String {
        let kind = self.store_kind();
        match kind.def().journal_modes {
            true => self.label(),
            false => kind.def().short_label.to_string(),
        }
    }
}

impl fmt::Debug for SchemaStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.record())?;
        match self.mode {
            Some(m) => write!(f, " {m}"),
            None => Ok(()),
        }
    }
}
