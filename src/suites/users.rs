//! The users stores that seed003 and lookups measure: prefill each store with `rows` rows
//! (ids 0, 10, 20, ...), snapshot, then run every scenario of the suite's plan from that
//! identical state. Here: the settings, the calls a scenario makes and how a reply becomes
//! a record; `users/layout.rs` says which canisters a run fills (`suites/canister.rs`
//! makes them), `users/runner.rs` runs the scenarios.

use std::collections::HashSet;

use anyhow::{anyhow, Result};

use super::scenario::{CacheState, JournalMode, Operation, Position, Scenario, Store, StoreKind};
use super::{CommonArgs, MemoryEstimate, MEMORY_BASE};
use crate::bench_canister::{
    BenchClient, IdSequence, InsertReport, Measured, ReadReport, RejectedCall,
};
use crate::engine::cost::CyclesFees;
use crate::report::format::thousands;
use crate::report::{ScenarioResult, Sequence, Status};
use crate::stores::{self, ModuleNeed};

mod kept;
mod layout;
mod plan;
mod runner;
mod sequence;
mod warm;

pub use super::canister::fill::{fill_name, ID_STEP};
pub use crate::stores::Layout;
pub(super) use plan::UsersPlan;
pub use runner::{run_points, AfterScenarios};

/// The state both suites share: the stores and their rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Rows prefilled into each store.
    pub rows: u64,
    /// The stores measured (SQLite once per journal mode).
    pub stores: Vec<Store>,
    /// Bytes of the username payload per row.
    pub payload_size: u64,
    /// Seed of the random ids.
    pub seed: u64,
    /// USD per XDR for the price column.
    pub usd_per_xdr: f64,
    /// The page cache states measured for the stores that have one (a store without one is
    /// measured in its one state whatever this says).
    pub caches: Vec<CacheState>,
    /// Where the stores are filled: each in a canister of its own, or seed 003's one
    /// canister per module.
    pub layout: Layout,
}

impl Default for Config {
    fn default() -> Self {
        Config::from_args(&CommonArgs::defaults(), "seed003").expect("the defaults make a plan")
    }
}

impl Config {
    /// What its canisters' stores are filled with.
    pub(super) fn filling(&self) -> super::canister::Filling {
        super::canister::Filling {
            rows: self.rows,
            payload_size: self.payload_size,
        }
    }

    /// The expected peak footprint of a run with these stores and rows. It does not depend
    /// on `--jobs`: every journal mode's state is counted, and the workers' copies of what
    /// their scenarios touch are small (the default run: 5.29 GB on one job, 5.64 on two).
    pub fn peak_memory(&self) -> u64 {
        // Each store measured (its file and page cache, for SQLite), and each journal mode
        // of it measured (its snapshot's page cache): the store table's figures.
        let mut kinds: Vec<StoreKind> = self.stores.iter().map(|s| s.store_kind()).collect();
        kinds.sort();
        kinds.dedup();
        let mut per_row: u64 = kinds.iter().map(|k| k.def().memory.users_tenths).sum();
        per_row += self
            .stores
            .iter()
            .filter(|s| s.journal_mode().is_some())
            .map(|s| s.store_kind().def().memory.users_tenths_per_mode)
            .sum::<u64>();
        MEMORY_BASE + self.rows * per_row * (self.payload_size + 50) / 10
    }

    /// The estimate the CLI checks before `suite` runs with these settings, with smaller
    /// settings that need less: fewer journal modes, fewer rows.
    pub fn memory_estimate(&self, suite: &str) -> MemoryEstimate {
        let mut smaller = Vec::new();
        let modes: Vec<Store> = self
            .stores
            .iter()
            .copied()
            .filter(|s| s.journal_mode().is_some())
            .collect();
        if modes.len() > 1 {
            let one = Config {
                stores: self
                    .stores
                    .iter()
                    .copied()
                    .filter(|s| s.journal_mode().is_none() || *s == modes[0])
                    .collect(),
                ..self.clone()
            };
            let mode = modes[0]
                .journal_mode()
                .map(|m| m.to_string())
                .unwrap_or_default();
            smaller.push((format!("--journal-modes {mode}"), one.peak_memory()));
        }
        for rows in [1_000_000, 100_000] {
            if rows < self.rows {
                let fewer = Config {
                    rows,
                    ..self.clone()
                };
                smaller.push((format!("--rows {rows}"), fewer.peak_memory()));
            }
        }
        MemoryEstimate {
            bytes: self.peak_memory(),
            what: format!(
                "the {suite} suite with {} rows in {} store{}",
                thousands(self.rows),
                self.stores.len(),
                if self.stores.len() == 1 { "" } else { "s" }
            ),
            smaller,
        }
    }

    /// From the shared flags: each store selected, SQLite once per journal mode; `suite`
    /// (seed003, lookups, sustained, tune) refuses a `--stores` that names none of its stores.
    pub fn from_args(common: &CommonArgs, suite: &str) -> Result<Config> {
        super::shared::store_selected(&common.stores, suite)?;
        let stores = stores(common);
        let mut caches = common.page_cache.clone();
        caches.sort();
        caches.dedup();
        let cfg = Config {
            rows: common.rows,
            stores,
            payload_size: common.payload_size,
            seed: common.seed,
            usd_per_xdr: common.usd_per_xdr,
            caches,
            layout: common.layout,
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// The modules its stores live in.
    pub fn modules(&self) -> Vec<ModuleNeed> {
        stores::needs(self.stores.iter().map(|s| s.store_kind()))
    }

    /// Whether `state` is measured for the stores with a page cache.
    pub fn measures(&self, state: CacheState) -> bool {
        self.caches.contains(&state)
    }

    /// The range scan's check: it reads 1,000 rows from the middle ([`SCAN_MIN_ROWS`]).
    pub fn check_scan_rows(&self, left_out_by: &str) -> Result<()> {
        if self.rows < SCAN_MIN_ROWS {
            return Err(anyhow!(
                "--rows must be at least {SCAN_MIN_ROWS} for the range scan, which reads 1,000 rows from the middle ({left_out_by}), got {}",
                self.rows
            ));
        }
        Ok(())
    }

    pub fn validate(&self) -> Result<()> {
        if self.caches.is_empty() {
            return Err(anyhow!(
                "--page-cache needs at least one state (cold, warm)"
            ));
        }
        if self.stores.is_empty() {
            let names: Vec<&str> = StoreKind::ALL.iter().map(|k| k.name()).collect();
            return Err(anyhow!(
                "no store selected (--stores {} and at least one --journal-modes)",
                names.join(",")
            ));
        }
        if self.rows < 2 {
            return Err(anyhow!(
                "--rows must be at least 2 (a batch is at most half of the rows), got {}",
                self.rows
            ));
        }
        stores::refuse_value_size(
            self.stores.iter().map(|s| s.store_kind()),
            self.payload_size,
        )
    }
}

/// The stores `--stores` and `--journal-modes` select that the users suites measure: each
/// store in table order, one per journal mode for a store that has them.
pub fn stores(common: &CommonArgs) -> Vec<Store> {
    stores_of(&common.stores, &common.journal_modes)
}

/// The stores `kinds` in journal modes `modes` that the users suites measure, in table
/// order.
pub fn stores_of(kinds: &[StoreKind], modes: &[JournalMode]) -> Vec<Store> {
    stores::measured_by("seed003", kinds)
        .into_iter()
        .flat_map(|k| k.stores(modes))
        .collect()
}

/// The deterministic generator the draws use (SplitMix64), shared with the canister.
pub use bench_types::rng::SplitMix64;

/// `count` distinct ids absent from the prefill (not multiples of `ID_STEP`), uniformly over
/// the prefilled range, in draw order. The stream depends only on the seed and the batch.
pub fn random_absent_ids(seed: u64, rows: u64, count: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed ^ count.wrapping_mul(0xA24B_AED4_963E_E407));
    let mut seen = HashSet::new();
    let mut ids = Vec::with_capacity(count as usize);
    while (ids.len() as u64) < count {
        let id = rng.below(rows) * ID_STEP + 1 + rng.below(ID_STEP - 1);
        if seen.insert(id) {
            ids.push(id);
        }
    }
    ids
}

/// `count` distinct prefilled ids drawn uniformly, in draw order.
pub fn random_present_ids(seed: u64, rows: u64, count: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed ^ 0x5EED ^ count);
    let mut seen = HashSet::new();
    let mut ids = Vec::with_capacity(count as usize);
    while (ids.len() as u64) < count {
        let id = rng.below(rows) * ID_STEP;
        if seen.insert(id) {
            ids.push(id);
        }
    }
    ids
}

/// The seed of the k-th warm-up message's draws (k from 1): another stream than the
/// measured message's (`random_absent_ids`, `random_present_ids`), so a warm-up never reads
/// or writes the measured ids by construction of the seed (and never does: they are
/// excluded).
fn warm_up_seed(seed: u64, k: u64) -> u64 {
    seed ^ 0x3A11_CACE ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The warm-up messages a scenario of `cache` sends before its measured one by default:
/// none cold, one warm (on the warm start: docs/suites.md's warm).
pub fn default_warm_ups(cache: CacheState) -> u64 {
    match cache {
        CacheState::Cold => 0,
        CacheState::Warm => WARM_UP_MESSAGES,
    }
}

/// The messages of its workload a warm scenario sends after the whole table was read and
/// before the measured one.
pub const WARM_UP_MESSAGES: u64 = 1;

/// The fewest rows a range scan of 1,000 rows from the middle fits in.
pub const SCAN_MIN_ROWS: u64 = 2_000;

/// `count` distinct ids from `draw`, none of them in `taken`.
fn draw_distinct(count: u64, taken: &[u64], mut draw: impl FnMut() -> u64) -> Vec<u64> {
    let mut seen: HashSet<u64> = taken.iter().copied().collect();
    let mut ids = Vec::with_capacity(count as usize);
    while (ids.len() as u64) < count {
        let id = draw();
        if seen.insert(id) {
            ids.push(id);
        }
    }
    ids
}

/// What to call for one scenario: the canister arguments in Candid text, for the report
/// and for users who want to reproduce a number with dfx.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Call {
    Insert(IdSequence),
    InsertIds(Vec<u64>),
    Get(IdSequence),
    GetIds(Vec<u64>),
    Scan { offset: u64, count: u64 },
}

impl Call {
    /// The measured message of `s`: seed003's call; warm, an end insert appends after the
    /// rows its warm-up appended.
    pub(super) fn for_scenario(s: &Scenario, cfg: &Config) -> Call {
        Call::after_warm_ups(s, cfg, default_warm_ups(s.cache))
    }

    /// The measured message of `s` after `warm_ups` messages of its workload: seed003's
    /// call, except that an end insert appends after the rows the warm-ups appended.
    pub(super) fn after_warm_ups(s: &Scenario, cfg: &Config, warm_ups: u64) -> Call {
        let rows = cfg.rows;
        let middle = rows / 2 * ID_STEP;
        match (s.operation, s.position) {
            (Operation::Insert { rows: n }, Position::Middle) => Call::Insert(IdSequence {
                offset: middle + 1,
                step: ID_STEP,
                count: n,
            }),
            (Operation::Insert { rows: n }, Position::End) => Call::Insert(IdSequence {
                offset: rows * ID_STEP + warm_ups * n,
                step: 1,
                count: n,
            }),
            (Operation::Insert { rows: n }, Position::Random) => {
                Call::InsertIds(random_absent_ids(cfg.seed, rows, n))
            }
            (Operation::Insert { rows: n }, Position::Sorted) => {
                let mut ids = random_absent_ids(cfg.seed, rows, n);
                ids.sort_unstable();
                Call::InsertIds(ids)
            }
            (Operation::PointLookups { keys }, Position::Middle) => Call::Get(IdSequence {
                offset: middle,
                step: ID_STEP,
                count: keys,
            }),
            (Operation::PointLookups { keys }, Position::End) => Call::Get(IdSequence {
                offset: (rows - keys) * ID_STEP,
                step: ID_STEP,
                count: keys,
            }),
            (Operation::PointLookups { keys }, Position::Random) => {
                Call::GetIds(random_present_ids(cfg.seed, rows, keys))
            }
            (Operation::PointLookups { keys }, Position::Sorted) => {
                let mut ids = random_present_ids(cfg.seed, rows, keys);
                ids.sort_unstable();
                Call::GetIds(ids)
            }
            (Operation::RangeScan { rows: n }, Position::Middle) => Call::Scan {
                offset: middle,
                count: n,
            },
            (Operation::RangeScan { rows: n }, Position::End) => Call::Scan {
                offset: (rows - n) * ID_STEP,
                count: n,
            },
            (Operation::RangeScan { rows: n }, Position::Random | Position::Sorted) => {
                let start = SplitMix64::new(cfg.seed ^ 0x5CA7).below(rows - n) * ID_STEP;
                Call::Scan {
                    offset: start,
                    count: n,
                }
            }
        }
    }

    /// The message a warm scenario sends before its measured one, on the warm start state:
    /// one message of the same workload at other ids ([`Call::warm_ups`] with W = 1).
    pub(super) fn warm_up(s: &Scenario, cfg: &Config) -> Call {
        let mut one = Call::warm_ups(s, cfg, 1);
        one.pop().expect("one warm-up")
    }

    /// The `w` messages of `s`'s workload sent before its measured one, in order (reads as
    /// their `_update` twins, which [`run_update`] sends, since a query's heap changes are
    /// discarded). Middle and end positions use the windows of ids just below the measured
    /// one, the k-th of `w` the (w − k + 1)-th window below it (end inserts append, the
    /// measured message after them); random and sorted ones draw the k-th from a stream of
    /// its own ([`warm_up_seed`]) and exclude the measured ids and, for inserts, the earlier
    /// warm-ups' ones. The windows must fit below the measured one:
    /// [`Call::warm_ups_fit`].
    pub(super) fn warm_ups(s: &Scenario, cfg: &Config, w: u64) -> Vec<Call> {
        let rows = cfg.rows;
        let middle = rows / 2 * ID_STEP;
        let n = s.operation.rows();
        let mut taken = match Call::after_warm_ups(s, cfg, w) {
            Call::InsertIds(ids) | Call::GetIds(ids) => ids,
            _ => Vec::new(),
        };
        let sorted = |mut ids: Vec<u64>| {
            if s.position == Position::Sorted {
                ids.sort_unstable();
            }
            ids
        };
        (1..=w)
            .map(|k| {
                let mut rng = SplitMix64::new(warm_up_seed(cfg.seed, k));
                // Windows below the measured one: the first warm-up the farthest.
                let below = (w - k + 1) * n * ID_STEP;
                match (s.operation, s.position) {
                    (Operation::Insert { .. }, Position::Middle) => Call::Insert(IdSequence {
                        offset: middle + 1 - below,
                        step: ID_STEP,
                        count: n,
                    }),
                    (Operation::Insert { .. }, Position::End) => Call::Insert(IdSequence {
                        offset: rows * ID_STEP + (k - 1) * n,
                        step: 1,
                        count: n,
                    }),
                    (Operation::Insert { .. }, Position::Random | Position::Sorted) => {
                        let ids = draw_distinct(n, &taken, || {
                            rng.below(rows) * ID_STEP + 1 + rng.below(ID_STEP - 1)
                        });
                        taken.extend_from_slice(&ids);
                        Call::InsertIds(sorted(ids))
                    }
                    (Operation::PointLookups { .. }, Position::Middle) => Call::Get(IdSequence {
                        offset: middle - below,
                        step: ID_STEP,
                        count: n,
                    }),
                    (Operation::PointLookups { .. }, Position::End) => Call::Get(IdSequence {
                        offset: (rows - n) * ID_STEP - below,
                        step: ID_STEP,
                        count: n,
                    }),
                    (Operation::PointLookups { .. }, Position::Random | Position::Sorted) => {
                        Call::GetIds(sorted(draw_distinct(n, &taken, || {
                            rng.below(rows) * ID_STEP
                        })))
                    }
                    (Operation::RangeScan { .. }, Position::Middle) => Call::Scan {
                        offset: middle - below,
                        count: n,
                    },
                    (Operation::RangeScan { .. }, Position::End) => Call::Scan {
                        offset: (rows - n) * ID_STEP - below,
                        count: n,
                    },
                    (Operation::RangeScan { .. }, Position::Random | Position::Sorted) => {
                        Call::Scan {
                            offset: rng.below(rows - n) * ID_STEP,
                            count: n,
                        }
                    }
                }
            })
            .collect()
    }

    /// Whether `w` warm-ups of `s` fit in a table of `rows` rows, else why not: the windows
    /// below a middle position's measured one reach at most the first id, those below an end
    /// read's the first row; random inserts, each of ids no other took, take at most half of
    /// the absent ids (the draws stay quick); random reads and end inserts always fit.
    pub fn warm_ups_fit(s: &Scenario, rows: u64, w: u64) -> Result<(), String> {
        let n = s.operation.rows();
        let (fits, rule) = match (s.operation, s.position) {
            (_, Position::Middle) => (
                w.saturating_mul(n) <= rows / 2,
                "they take the W windows of ids just below the middle one: W x batch <= rows / 2",
            ),
            (Operation::Insert { .. }, Position::End) => (true, ""),
            (_, Position::End) => (
                w.saturating_add(1).saturating_mul(n) <= rows,
                "they take the W windows of rows just below the last one: (W + 1) x batch <= rows",
            ),
            (Operation::Insert { .. }, Position::Random | Position::Sorted) => (
                w.saturating_add(1).saturating_mul(n) <= rows * (ID_STEP - 1) / 2,
                "each takes absent ids no other took: (W + 1) x batch <= rows x 9 / 2",
            ),
            (_, Position::Random | Position::Sorted) => (true, ""),
        };
        if fits {
            return Ok(());
        }
        Err(format!(
            "{w} warm-ups of a {} {}/{n} do not fit in {} rows ({rule})",
            s.position,
            s.operation.kind(),
            thousands(rows)
        ))
    }

    /// The rows (or keys) the call inserts or must find.
    pub(super) fn rows(&self) -> u64 {
        match self {
            Call::Insert(ids) | Call::Get(ids) => ids.count,
            Call::Scan { count, .. } => *count,
            Call::InsertIds(ids) | Call::GetIds(ids) => ids.len() as u64,
        }
    }

    pub(super) fn candid_args(&self) -> String {
        let list = |ids: &[u64]| {
            let shown: Vec<String> = ids.iter().take(3).map(|i| format!("{i} : nat64")).collect();
            if ids.len() > 3 {
                format!(
                    "(vec {{ {}; ... }})  # {} ids, seed-drawn",
                    shown.join("; "),
                    ids.len()
                )
            } else {
                format!("(vec {{ {} }})", shown.join("; "))
            }
        };
        match self {
            Call::Insert(ids) | Call::Get(ids) => ids.candid_text(),
            Call::InsertIds(ids) | Call::GetIds(ids) => list(ids),
            Call::Scan { offset, count } => format!("({offset} : nat64, {count} : nat64)"),
        }
    }
}

pub(super) enum Reply {
    Insert(Measured<InsertReport>),
    Read(Measured<ReadReport>),
}

pub(super) fn run_call(client: &mut BenchClient<'_>, store: &str, call: &Call) -> Result<Reply> {
    send(client, store, call, false)
}

/// `call` as an update: reads by their `_update` twins, which keep their heap changes (a
/// warm-up's).
pub(super) fn run_update(client: &mut BenchClient<'_>, store: &str, call: &Call) -> Result<Reply> {
    send(client, store, call, true)
}

fn send(client: &mut BenchClient<'_>, store: &str, call: &Call, replicated: bool) -> Result<Reply> {
    Ok(match call {
        Call::Insert(ids) => Reply::Insert(client.add_users(store, *ids)?),
        Call::InsertIds(ids) => Reply::Insert(client.add_users_ids(store, ids)?),
        Call::Get(ids) => Reply::Read(client.get_users(store, *ids, replicated)?),
        Call::GetIds(ids) => Reply::Read(client.get_users_ids(store, ids, replicated)?),
        Call::Scan { offset, count } => {
            Reply::Read(client.scan_users(store, *offset, *count, replicated)?)
        }
    })
}

/// Checks that a message sent as setup (a warm start's scan, a warm-up) inserted or found
/// the `expected` rows.
pub(super) fn check_rows(reply: Reply, expected: u64, call: &Call) -> Result<(), String> {
    let rows = match reply {
        Reply::Insert(m) => m.value.map(|r| r.rows_inserted),
        Reply::Read(m) => m.value.map(|r| r.rows_found),
    }?;
    if rows != expected {
        return Err(format!(
            "{rows} rows instead of {expected} ({})",
            call.candid_args()
        ));
    }
    Ok(())
}

/// A scenario as a run measures it: from its store's start in its cache state (cold: the
/// connection as opened; warm: after the message that reads the whole table), after
/// `warm_ups` messages of its workload. A point of the cache suite's sweep says its W in
/// its record's `warm_ups`; the other suites' points are their scenarios as they were.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub scenario: Scenario,
    pub warm_ups: u64,
    /// Whether the record names W (the cache suite's sweep).
    pub swept: bool,
    /// Whether the record sums up the whole sequence, the warm-ups and the measured message
    /// (the sustained suite's), rather than the measured message alone.
    pub sequence: bool,
}

impl Point {
    /// `scenario` as the users suites measure it: cold, the first message on the connection;
    /// warm, after [`WARM_UP_MESSAGES`].
    pub fn of(scenario: Scenario) -> Point {
        Point {
            scenario,
            warm_ups: default_warm_ups(scenario.cache),
            swept: false,
            sequence: false,
        }
    }

    /// `scenario` after `warm_ups` messages of its workload, W recorded.
    pub fn swept(scenario: Scenario, warm_ups: u64) -> Point {
        Point {
            scenario,
            warm_ups,
            swept: true,
            sequence: false,
        }
    }

    /// `messages` update messages of `scenario`'s workload from its store's start, the
    /// record their sequence's figures: the last one is the scenario's own call, the others
    /// its warm-ups.
    pub fn sequence(scenario: Scenario, messages: u64) -> Point {
        Point {
            scenario,
            warm_ups: messages.saturating_sub(1),
            swept: false,
            sequence: true,
        }
    }

    /// The messages a sequence point sends.
    pub fn messages(&self) -> u64 {
        self.warm_ups + 1
    }

    /// W as the `warm_ups` column writes it: the count, `full+W` from the warm start.
    pub fn label(&self) -> String {
        match self.scenario.cache {
            CacheState::Cold => self.warm_ups.to_string(),
            CacheState::Warm => format!("full+{}", self.warm_ups),
        }
    }

    /// The scenario's key, and a swept point's W after it (`.../w10`, `.../wfull+1`), a
    /// sequence's N (`.../n1000`).
    pub fn key(&self) -> String {
        if self.sequence {
            return format!("{}/n{}", self.scenario.key(), self.messages());
        }
        if !self.swept {
            return self.scenario.key();
        }
        let cold = Scenario {
            cache: CacheState::Cold,
            ..self.scenario
        };
        format!("{}/w{}", cold.key(), self.label())
    }
}

/// What names a point's record (and so its id) before it runs.
fn record_of(point: &Point, cfg: &Config) -> ScenarioResult {
    let scenario = &point.scenario;
    let cache = match (point.swept, point.warm_ups) {
        // A sweep's point after warm-ups is a connection that served messages: warm.
        (true, 1..) => CacheState::Warm,
        _ => scenario.cache,
    };
    ScenarioResult {
        store: scenario.store.kind().into(),
        journal_mode: scenario.store.journal_column(),
        cache,
        warm_ups: if point.swept {
            point.label()
        } else {
            String::new()
        },
        position: scenario.position.to_string(),
        operation: scenario.operation.kind().into(),
        batch: scenario.operation.rows(),
        rows_before: cfg.rows,
        sequence: point.sequence.then(|| Sequence {
            messages: point.messages(),
            ..Sequence::default()
        }),
        ..ScenarioResult::default()
    }
}

/// The scenarios of the users suites: per position, per store, every operation, in order;
/// the stores with a page cache cold if `caches` has it (the stores without one always, in
/// their one state), then the same order warm for the stores with a page cache and the
/// operations `warm` selects, if `caches` has warm. The cold part is the plan of the runs
/// before the cache's state was measured.
pub fn matrix(
    positions: &[Position],
    stores: &[Store],
    operations: &[Operation],
    caches: &[CacheState],
    warm: &dyn Fn(Operation) -> bool,
) -> Vec<Scenario> {
    let mut out = Vec::new();
    for cache in CacheState::ALL {
        for &position in positions {
            for &store in stores {
                let page_cache = store.store_kind().def().page_cache;
                let measured = match cache {
                    CacheState::Cold => !page_cache || caches.contains(&cache),
                    CacheState::Warm => page_cache && caches.contains(&cache),
                };
                if !measured {
                    continue;
                }
                out.extend(
                    operations
                        .iter()
                        .filter(|&&op| cache.is_cold() || warm(op))
                        .map(|&operation| Scenario {
                            store,
                            position,
                            operation,
                            cache,
                        }),
                );
            }
        }
    }
    out
}

/// The ids of the records `points` will give, in order (what `--profile` matches).
pub fn point_ids(points: &[Point], cfg: &Config) -> Vec<String> {
    let records: Vec<ScenarioResult> = points.iter().map(|p| record_of(p, cfg)).collect();
    crate::report::scenario_ids(&records)
}

/// [`record_reply`] for a reply the replica may have rejected (a limit, a trap): then the
/// scenario failed, with the replica's reason; any other error is the run's.
pub(super) fn record_sent(
    result: &mut ScenarioResult,
    reply: Result<Reply>,
    operation: Operation,
    usd_per_xdr: f64,
) -> Result<()> {
    match reply {
        Ok(reply) => record_reply(result, reply, operation, usd_per_xdr),
        Err(e) => match RejectedCall::of(&e) {
            Some(rejected) => result.status = Status::Failed(rejected.to_string()),
            None => return Err(e),
        },
    }
    Ok(())
}

/// Fills `result` from the canister's reply to `operation`: the store's own count, the
/// message's charge, cycles for inserts (queries are free when not replicated) and pages.
pub(super) fn record_reply(
    result: &mut ScenarioResult,
    reply: Reply,
    operation: Operation,
    usd_per_xdr: f64,
) {
    let fees = CyclesFees::APPLICATION_13;
    let (message, request_bytes, outcome) = match reply {
        Reply::Insert(m) => (
            m.message,
            m.request_bytes,
            m.value.map(|r| (r.instructions, r.rows_inserted)),
        ),
        Reply::Read(m) => (
            m.message,
            m.request_bytes,
            m.value.map(|r| (r.instructions, r.rows_found)),
        ),
    };
    match outcome {
        Err(e) => result.status = Status::Failed(e),
        Ok((store_instructions, rows)) if rows != operation.rows() => {
            result.status = Status::Failed(format!(
                "expected {} rows, the canister reports {rows}",
                operation.rows()
            ));
            result.store_instructions = store_instructions;
        }
        Ok((store_instructions, _)) => {
            let n = operation.rows() as f64;
            result.store_instructions = store_instructions;
            result.store_instructions_per_row = store_instructions as f64 / n;
            result.instructions = message.instructions;
            result.instructions_per_row = message.instructions as f64 / n;
            if matches!(operation, Operation::Insert { .. }) {
                let cycles = fees.execution_cost(message.instructions, message.wasm64);
                result.cycles = cycles as u64;
                result.usd = cycles as f64 / 1e12 * usd_per_xdr;
                result.ingress_cycles = fees.ingress_cost(request_bytes) as u64;
            }
            result.heap_pages_delta =
                pages_delta(message.heap_bytes_before, message.heap_bytes_after);
            result.stable_pages_delta =
                pages_delta(message.stable_bytes_before, message.stable_bytes_after);
            result.set_pages(&message);
            // One message per record: its page map goes beside its profile.
            result.page_map_data = message.page_map.clone();
            result.add_profile(message.profile.as_ref());
        }
    }
}

fn pages_delta(before: u64, after: u64) -> i64 {
    (after as i64 - before as i64) / 65536
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warm_ups_are_the_windows_below_and_draws_of_their_own() {
        let cfg = Config {
            rows: 2_000,
            ..Config::default()
        };
        let at = |position, operation| Scenario {
            store: Store::BTree,
            position,
            operation,
            cache: CacheState::Cold,
        };
        let insert = Operation::Insert { rows: 10 };
        // Middle: the k-th of 3 is the (4 - k)-th window of 10 ids below the measured one.
        let middle = Call::warm_ups(&at(Position::Middle, insert), &cfg, 3);
        let offsets: Vec<u64> = middle
            .iter()
            .map(|c| match c {
                Call::Insert(ids) => ids.offset,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(offsets, [10_001 - 300, 10_001 - 200, 10_001 - 100]);
        // End: appends, the measured message after them.
        let end = at(Position::End, insert);
        let appended: Vec<Call> = Call::warm_ups(&end, &cfg, 2);
        assert_eq!(appended[1], Call::Insert(IdSequence::new(20_010, 1, 10)));
        assert_eq!(
            Call::after_warm_ups(&end, &cfg, 2),
            Call::Insert(IdSequence::new(20_020, 1, 10))
        );
        // Random: absent ids, none measured nor an earlier warm-up's; W = 1 is the warm
        // scenario's one message.
        let random = at(Position::Random, insert);
        let mut seen: HashSet<u64> = random_absent_ids(cfg.seed, cfg.rows, 10)
            .into_iter()
            .collect();
        for call in Call::warm_ups(&random, &cfg, 5) {
            let Call::InsertIds(ids) = call else { panic!() };
            assert_eq!(ids.len(), 10);
            for id in ids {
                assert!(id % ID_STEP != 0 && seen.insert(id), "{id}");
            }
        }
        let warm = Scenario {
            cache: CacheState::Warm,
            ..random
        };
        assert_eq!(
            Call::warm_up(&warm, &cfg),
            Call::warm_ups(&random, &cfg, 5)[0]
        );
        // What fits: 100 middle windows of 10 ids in 1,000 ids below the middle, not 101.
        let fit = |position, w| Call::warm_ups_fit(&at(position, insert), cfg.rows, w);
        assert_eq!(fit(Position::Middle, 100), Ok(()));
        assert_eq!(
            fit(Position::Middle, 101).unwrap_err(),
            "101 warm-ups of a middle insert/10 do not fit in 2,000 rows (they take the W windows of ids just below the middle one: W x batch <= rows / 2)"
        );
        assert_eq!(fit(Position::End, 1_000_000), Ok(()));
        assert!(fit(Position::Random, 900).is_err());
        let lookup = at(Position::End, Operation::PointLookups { keys: 10 });
        assert_eq!(Call::warm_ups_fit(&lookup, cfg.rows, 199), Ok(()));
        assert!(Call::warm_ups_fit(&lookup, cfg.rows, 200).is_err());
    }

    #[test]
    fn the_estimate_counts_each_store_kind_once_and_each_journal_mode() {
        let cfg = Config::default();
        // The heap map 3, the StableBTreeMap 2, SQLite 2.2 and 0.8 per mode (six), SQLite
        // on ic-sqlite-vfs 2.7 (its canister's file and heap), Motoko's Map 4, pure/Map 12
        // and Region 2.5, times (100 + 50) bytes a row.
        assert_eq!(cfg.peak_memory(), MEMORY_BASE + 1_000_000 * 332 * 150 / 10);
        let e = Config {
            rows: 10_000_000,
            ..cfg.clone()
        }
        .memory_estimate("seed003");
        assert_eq!(e.bytes, MEMORY_BASE + 49_800_000_000);
        assert_eq!(
            e.what,
            "the seed003 suite with 10,000,000 rows in 12 stores"
        );
        let flags: Vec<&str> = e.smaller.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            flags,
            ["--journal-modes DELETE", "--rows 1000000", "--rows 100000"]
        );
        assert_eq!(e.smaller[0].1, MEMORY_BASE + 10_000_000 * 292 * 150 / 10);
        let btree = Config {
            stores: vec![Store::BTree],
            payload_size: 1_000,
            ..cfg
        };
        assert_eq!(
            btree.peak_memory(),
            MEMORY_BASE + 1_000_000 * 20 * 1_050 / 10
        );
    }
}
