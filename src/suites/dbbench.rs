//! The `dbbench` suite (seed 000): LevelDB's db_bench / db_bench_sqlite3 benchmark list on
//! the B-tree map and on SQLite as a rowid table and `WITHOUT ROWID`, with db_bench's
//! 16-byte keys, 100-byte values and 100 KB values, reported per op in db_bench's line
//! format (instructions/op instead of micros/op).
//!
//! Adapted to the IC: a benchmark's N ops go in messages of 1,000 (db_bench's batch size;
//! one update must stay under 40B instructions), "autocommit" benchmarks run every write
//! in its own SQLite transaction inside those messages, and the sync variants are
//! left out (a canister has no fsync: an update commits atomically when it ends).
//!
//! Here: the options, the plan (`Config`) and what it measures; `dbbench/bench.rs` db_bench's
//! benchmarks and keys, `dbbench/run.rs` the run, `dbbench/totals.rs` a benchmark's messages
//! summed (the keys and sysbench suites sum theirs the same way), `dbbench/report.rs` the
//! lines, tables and plot.

use anyhow::{anyhow, Result};
use clap::{ArgMatches, Args};

use super::scenario::{JournalMode, StoreKind};
use super::shared::{default_from_flags, store_selected, Define, Measure, Reads, Run};
use super::CommonArgs;
use crate::report::{Document, Report};
use crate::stores::{self, ModuleNeed};

mod bench;
mod report;
mod run;
mod totals;

pub use bench::{keys, Bench, LevelDbRandom};
pub use report::{document, line, lines};
pub(crate) use totals::Totals;

/// `--suite dbbench`.
const SUITE: &str = "dbbench";

/// Ops per message: db_bench's `entries_per_batch` for the batched fills.
pub const OPS_PER_MESSAGE: u64 = 1_000;
/// db_bench's key size (`%016d`), shared with the canister, and default value size.
pub use bench_types::limits::dbbench::KEY_SIZE;
pub const VALUE_SIZE: u64 = 100;
/// The 100K benchmarks' value size.
pub const BIG_VALUE_SIZE: u64 = 100_000;
/// Largest N: keys have 16 digits, and the run should stay minutes, not hours.
pub const MAX_NUM: u64 = 1_000_000;

// What one message sends must be what the canister accepts per call.
const _: () = {
    use bench_types::limits::dbbench as canister;
    assert!(OPS_PER_MESSAGE <= canister::MAX_OPS_PER_CALL);
    assert!(BIG_VALUE_SIZE <= canister::MAX_VALUE_SIZE);
    assert!(MAX_NUM <= canister::MAX_KEY);
};

/// A key-value store of this suite: a schema of the store table (the map, SQLite's rowid
/// table and its `WITHOUT ROWID` table) in the suite's journal mode.
pub type KvStore = crate::stores::SchemaStore;

/// One measured line: a store and a benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DbBenchScenario {
    pub store: KvStore,
    pub bench: Bench,
}

/// db_bench's N in this suite: small, so the default run stays quick.
pub const DEFAULT_NUM: u64 = 10_000;

pub struct DbBench;

#[derive(Args)]
#[command(next_help_heading = "dbbench")]
pub struct DbBenchArgs {
    /// db_bench's N (entries); the 100K benchmarks use N/1000.
    #[arg(long, default_value_t = DEFAULT_NUM)]
    dbbench_num: u64,
    /// SQLite journal mode (db_bench_sqlite3 uses WAL).
    #[arg(long, value_enum, default_value_t = JournalMode::Wal)]
    dbbench_journal_mode: JournalMode,
}

/// The dbbench suite's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The map for `btree`; SQLite's rowid and WITHOUT ROWID tables for `sqlite`.
    pub stores: Vec<StoreKind>,
    /// db_bench's N (`--num`).
    pub num: u64,
    /// SQLite's journal mode (db_bench_sqlite3 uses WAL).
    pub journal_mode: JournalMode,
    pub usd_per_xdr: f64,
}

default_from_flags!(DbBench => Config);

impl Config {
    /// The stores measured: the store table's schemas of this suite (the map, then SQLite
    /// rowid and WITHOUT ROWID in `journal_mode`), each kept only if `stores` selects its
    /// store.
    pub fn kv_stores(&self) -> Vec<KvStore> {
        KvStore::of_suite(SUITE, &self.stores, &[self.journal_mode])
    }

    /// Every scenario, per store in db_bench's benchmark order.
    pub fn matrix(&self) -> Vec<DbBenchScenario> {
        self.kv_stores()
            .into_iter()
            .flat_map(|store| Bench::ALL.map(|bench| DbBenchScenario { store, bench }))
            .collect()
    }
}

impl Define for DbBench {
    type Args = DbBenchArgs;
    type Plan = Config;

    fn plan(args: DbBenchArgs, common: &CommonArgs, _: &ArgMatches) -> Result<Config> {
        Ok(Config {
            stores: common.stores.clone(),
            num: args.dbbench_num,
            journal_mode: args.dbbench_journal_mode,
            usd_per_xdr: common.usd_per_xdr,
        })
    }

    const DOCUMENT: fn(&Report) -> Document = document;
    // db_bench's own sizes, journal mode and seed.
    const READS: Reads = Reads::Only(&["stores", "usd_per_xdr"]);
}

impl Measure for Config {
    const SUITE: &'static str = SUITE;

    /// The modules its stores live in.
    fn modules(&self) -> Vec<ModuleNeed> {
        stores::needs(self.kv_stores().iter().map(|s| s.store_kind()))
    }

    fn validate(&self) -> Result<()> {
        if !(1_000..=MAX_NUM).contains(&self.num) {
            return Err(anyhow!(
                "--dbbench-num must be between 1000 and {MAX_NUM} (the 100K benchmarks use N/1000 ops), got {}",
                self.num
            ));
        }
        store_selected(&self.stores, Self::SUITE)
    }

    /// Runs the suite: per store, db_bench's benchmarks in order, fresh ones from an empty
    /// store, the others on what the previous benchmark left.
    fn measure(&self, run: Run<'_>) -> Result<Report> {
        run::measure(self, run)
    }
}
