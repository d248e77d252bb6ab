//! Scenarios are values: the matrix, the runner, the report and the tests share these
//! definitions, so every number traces back to one `Scenario` and one canister method.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// SQLite journal modes (`PRAGMA journal_mode`), shared with the canister.
pub use bench_types::JournalMode;

/// Which store a scenario measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Store {
    /// ic-stable-structures' `StableBTreeMap<u64, String>`.
    BTree,
    /// SQLite (ic-rusqlite) in the given journal mode.
    Sqlite(JournalMode),
}

impl Store {
    /// Column label in tables and plots.
    pub fn label(self) -> String {
        match self {
            Store::BTree => "StableBTreeMap".to_string(),
            Store::Sqlite(m) => format!("SQLite {m}"),
        }
    }
    /// `btree` or `sqlite`, as in the canister's method names.
    pub fn kind(self) -> &'static str {
        match self {
            Store::BTree => bench_types::names::BTREE,
            Store::Sqlite(_) => bench_types::names::SQLITE,
        }
    }
    pub fn journal_mode(self) -> Option<JournalMode> {
        match self {
            Store::BTree => None,
            Store::Sqlite(m) => Some(m),
        }
    }
}

/// Where new rows go relative to the prefilled ids 0, 10, 20, ..., 10 (rows - 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
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

/// Whether a scenario produced a number.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "status", content = "reason")]
pub enum Status {
    #[default]
    Ok,
    /// The canister refused the configuration (e.g. a journal mode SQLite will not use here).
    Refused(String),
    /// The call failed (trap, limit, error result).
    Failed(String),
}

/// One row of results.json / results.csv: everything the report shows for one scenario.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScenarioResult {
    pub suite: String,
    /// `embedded` or `pocket-ic`.
    pub engine: String,
    /// `btree` or `sqlite`.
    pub store: String,
    /// SQLite journal mode; empty for the B-tree map.
    pub journal_mode: String,
    pub position: String,
    /// `insert`, `point_lookup`, `range_scan`.
    pub operation: String,
    /// Rows (or keys) in the one message.
    pub batch: u64,
    /// Rows in each store before the message.
    pub rows_before: u64,
    /// The canister method and its Candid arguments, so the number can be reproduced with
    /// `dfx canister call bench METHOD 'ARGS'`.
    pub method: String,
    pub args: String,
    #[serde(flatten)]
    pub status: Status,
    /// Instructions the message was charged (cycles are computed from this): the canister's
    /// whole execution plus the heap dirty-page charge after it.
    pub instructions: u64,
    pub instructions_per_row: f64,
    /// `ic0.performance_counter(0)` around the store work only, as the canister reports it
    /// (what seed 003's table shows).
    pub store_instructions: u64,
    pub store_instructions_per_row: f64,
    /// Cycles for the message on a 13-node application subnet (execution only; queries are
    /// free when not replicated, so 0 for them).
    pub cycles: u64,
    pub usd: f64,
    pub heap_pages_delta: i64,
    pub stable_pages_delta: i64,
    pub heap_dirty_pages: u64,
    pub stable_dirty_pages: u64,
    /// Key + value bytes the operation wrote or read (the dbbench suite's bytes per op);
    /// 0 where a suite does not measure it.
    #[serde(default)]
    pub bytes: u64,
}
