//! Scenarios are values: the matrix, the runner, the report and the tests share these
//! definitions, so every number traces back to one `Scenario` and one canister method.
//! The stores are the store table's ([`crate::stores`]); they and the positions are also
//! the CLI's flag values (clap `ValueEnum`).

use std::fmt;
use std::str::FromStr;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// The stores (rows of the store table) and SQLite's journal modes (shared with the
/// canister), as scenarios name them.
pub use crate::stores::{JournalMode, Store, StoreKind};

/// The state of a store's page cache a scenario is measured in (the records' `cache`).
pub use crate::report::CacheState;

/// The `position` of a capacity probe's record of the call one step above the largest batch
/// that fits: `failed` with the replica's reject, which is what it measures.
pub const ABOVE: &str = "one step above";

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
/// `rows_before` rows in each store, with the store's page cache cold or warm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Scenario {
    pub store: Store,
    pub position: Position,
    pub operation: Operation,
    pub cache: CacheState,
}

impl Scenario {
    /// The canister method that runs this scenario.
    pub fn method(&self) -> String {
        let store = self.store.stem();
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

    /// A stable, human-readable key: `sqlite/MEMORY/middle/insert/100`, and
    /// `sqlite/MEMORY/middle/insert/100/warm` warm (cold keys are those of the runs before
    /// the cache's state was measured).
    pub fn key(&self) -> String {
        let key = format!(
            "{}/{}/{}/{}/{}",
            self.store.kind(),
            self.store.journal_mode().map(|m| m.as_str()).unwrap_or("-"),
            self.position,
            self.operation.kind(),
            self.operation.rows()
        );
        match self.cache {
            CacheState::Cold => key,
            warm => format!("{key}/{warm}"),
        }
    }
}
