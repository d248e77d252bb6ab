//! Scenarios are values: the matrix, the runner, the report and the tests share these
//! definitions, so every number traces back to one `Scenario` and one canister method.
//! The store and journal-mode enums are also the CLI's flag values (clap `ValueEnum`).

use std::fmt;
use std::str::FromStr;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// The stores of the benchmark canister, as `--stores` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ValueEnum)]
pub enum StoreKind {
    /// A `std::collections::BTreeMap` on the Wasm heap, saved to stable memory only across
    /// upgrades (seed003, lookups; the other suites have no heap store).
    Heap,
    /// ic-stable-structures' StableBTreeMap.
    Btree,
    /// SQLite (ic-rusqlite); each suite says in which journal modes or schemas.
    Sqlite,
}

impl StoreKind {
    pub const ALL: [StoreKind; 3] = [StoreKind::Heap, StoreKind::Btree, StoreKind::Sqlite];

    /// `heap`, `btree` or `sqlite`, as in the canister's method names.
    pub fn as_str(self) -> &'static str {
        match self {
            StoreKind::Heap => bench_types::names::HEAP,
            StoreKind::Btree => bench_types::names::BTREE,
            StoreKind::Sqlite => bench_types::names::SQLITE,
        }
    }
}

impl fmt::Display for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// SQLite journal modes (`PRAGMA journal_mode`), shared with the canister.
pub use bench_types::JournalMode;

/// Which store a scenario measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Store {
    /// `std::collections::BTreeMap<u64, String>` on the Wasm heap.
    Heap,
    /// ic-stable-structures' `StableBTreeMap<u64, String>`.
    BTree,
    /// SQLite (ic-rusqlite) in the given journal mode.
    Sqlite(JournalMode),
}

impl Store {
    /// Column label in tables and plots.
    pub fn label(self) -> String {
        match self {
            Store::Heap => "heap BTreeMap".to_string(),
            Store::BTree => "StableBTreeMap".to_string(),
            Store::Sqlite(m) => format!("SQLite {m}"),
        }
    }
    /// `heap`, `btree` or `sqlite`, as in the canister's method names.
    pub fn kind(self) -> &'static str {
        self.store_kind().as_str()
    }
    pub fn store_kind(self) -> StoreKind {
        match self {
            Store::Heap => StoreKind::Heap,
            Store::BTree => StoreKind::Btree,
            Store::Sqlite(_) => StoreKind::Sqlite,
        }
    }
    pub fn journal_mode(self) -> Option<JournalMode> {
        match self {
            Store::Heap | Store::BTree => None,
            Store::Sqlite(m) => Some(m),
        }
    }
}

/// Where new rows go relative to the prefilled ids 0, 10, 20, ..., 10 (rows - 1).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Position {
    /// Between existing ids around the middle of the key range (seed 003's case).
    Middle,
    /// After the largest id.
    End,
    /// Ids drawn uniformly over the whole range with a fixed seed (absent ones for inserts,
    /// present ones for reads), sent in draw order.
    Random,
    /// The same draw as `Random`, sent in ascending order (seed 001's sorted keys).
    Sorted,
}

impl Position {
    pub const ALL: [Position; 4] = [
        Position::Middle,
        Position::End,
        Position::Random,
        Position::Sorted,
    ];
    /// The positions of seed 003's table, run by default.
    pub const SEED003: [Position; 3] = [Position::Middle, Position::End, Position::Random];
    pub fn as_str(self) -> &'static str {
        match self {
            Position::Middle => "middle",
            Position::End => "end",
            Position::Random => "random",
            Position::Sorted => "sorted",
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Position {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Position::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown position {s:?}; accepted: middle, end, random, sorted"))
    }
}

/// What one scenario does in one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// Insert `rows` new rows in one update message.
    Insert { rows: u64 },
    /// Look up `keys` existing ids in one query.
    PointLookups { keys: u64 },
    /// Read `rows` consecutive rows in one query.
    RangeScan { rows: u64 },
}

impl Operation {
    /// `insert`, `point_lookup` or `range_scan`.
    pub fn kind(self) -> &'static str {
        match self {
            Operation::Insert { .. } => "insert",
            Operation::PointLookups { .. } => "point_lookup",
            Operation::RangeScan { .. } => "range_scan",
        }
    }
    /// Rows (or keys) the operation touches: the divisor of per-row figures.
    pub fn rows(self) -> u64 {
        match self {
            Operation::Insert { rows } | Operation::RangeScan { rows } => rows,
            Operation::PointLookups { keys } => keys,
        }
    }
}

/// One measured cell: a store, a position and an operation, on a canister prefilled with
/// `rows_before` rows in each store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Scenario {
    pub store: Store,
    pub position: Position,
    pub operation: Operation,
}

impl Scenario {
    /// The canister method that runs this scenario.
    pub fn method(&self) -> String {
        let store = self.store.kind();
        match self.operation {
            Operation::Insert { .. }
                if matches!(self.position, Position::Random | Position::Sorted) =>
            {
                format!("add_users_{store}_ids")
            }
            Operation::Insert { .. } => format!("add_users_{store}"),
            // Drawn ids go as a list (the seed-003 results named the wrong method here).
            Operation::PointLookups { .. }
                if matches!(self.position, Position::Random | Position::Sorted) =>
            {
                format!("get_users_{store}_ids")
            }
            Operation::PointLookups { .. } => format!("get_users_{store}"),
            Operation::RangeScan { .. } => format!("scan_users_{store}"),
        }
    }

    /// A stable, human-readable key: `sqlite/MEMORY/middle/insert/100`.
    pub fn key(&self) -> String {
        format!(
            "{}/{}/{}/{}/{}",
            self.store.kind(),
            self.store.journal_mode().map(|m| m.as_str()).unwrap_or("-"),
            self.position,
            self.operation.kind(),
            self.operation.rows()
        )
    }
}
