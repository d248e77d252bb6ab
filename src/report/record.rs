//! The record of one measured scenario: one row of results.csv and one entry of
//! results.json. Every suite fills the same record, so the files, `compare` and the
//! renderers read every suite alike.

use serde::{Deserialize, Serialize};

use crate::engine::page_map::PageMap;
use crate::engine::{MessageReport, PageCounts, Profile};

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

/// The state of a store's page cache (SQLite's) when a message runs.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum CacheState {
    /// A newly opened connection: the first message after an install, an upgrade or a
    /// reopen, with no page of the table cached.
    #[default]
    Cold,
    /// A live canister's connection: the table cached by the messages it served.
    Warm,
}

impl CacheState {
    pub const ALL: [CacheState; 2] = [CacheState::Cold, CacheState::Warm];

    pub fn as_str(self) -> &'static str {
        match self {
            CacheState::Cold => "cold",
            CacheState::Warm => "warm",
        }
    }

    pub fn is_cold(&self) -> bool {
        *self == CacheState::Cold
    }
}

impl std::fmt::Display for CacheState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of results.json / results.csv: everything the report shows for one scenario.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScenarioResult {
    pub suite: String,
    /// `embedded` or `pocket-ic`.
    pub engine: String,
    /// The store as the suite names it (`btree`, `sqlite`, or a SQLite schema).
    pub store: String,
    /// SQLite journal mode; empty for the B-tree map.
    pub journal_mode: String,
    /// The state of the store's page cache when the message ran: cold (a newly opened
    /// connection, every record before the field) or warm (a live canister's). Left out of
    /// results.json when cold, so a report of cold records reads and writes as before it.
    #[serde(default, skip_serializing_if = "CacheState::is_cold")]
    pub cache: CacheState,
    /// W, the update messages of the workload sent on the same connection before the measured
    /// one, from its start (`full+W`: after the message that reads the whole table): the
    /// cache suite's sweep. Empty for every other record, and then left out of results.json
    /// and results.csv.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub warm_ups: String,
    /// The suite's own row dimension within a store (where rows go, a key type, a
    /// section), named `position` in the files since the first suite.
    pub position: String,
    /// What was measured: `insert`, `point_lookup`, `range_scan`, or a suite's benchmark.
    pub operation: String,
    /// Rows, keys or ops measured: the divisor of the per-row figures.
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
    /// whole execution with the page charges of the replica vintage (the memory tracker's
    /// during it, or the heap dirty-page charge after it before July 2026).
    pub instructions: u64,
    pub instructions_per_row: f64,
    /// `ic0.performance_counter(0)` around the store work only, as the canister reports it.
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
    /// The 64 KiB Wasm pages of the heap and of stable memory the measured message(s)
    /// accessed and wrote, and the instructions the vintage charged for pages (summed over
    /// the messages a figure adds up). None where the engine cannot see pages (PocketIC):
    /// empty cells in results.csv, no fields in results.json.
    #[serde(flatten, default)]
    pub pages: Option<PageCounts>,
    /// Bytes the operation wrote or read, or the bytes a store uses; 0 where a suite does
    /// not measure it.
    #[serde(default)]
    pub bytes: u64,
    /// Cycles for receiving the update as an ingress message from outside the IC, on the
    /// subnet of `cycles`: the reception fee plus the per-byte fee on the method name and
    /// the Candid argument (a lower bound: the newest replica counts the whole signed
    /// envelope). Not part of `cycles`; 0 for queries and where a suite does not price it
    /// (the users suites do).
    #[serde(default)]
    pub ingress_cycles: u64,
    /// A sustained record's sequence (the `sustained` suite): the record's own columns are
    /// then those of the sequence's median message. None for every other record, and then
    /// left out of results.json and results.csv.
    #[serde(flatten, default)]
    pub sequence: Option<Sequence>,
    /// The scenario's instruction profile, a folded-stack file relative to the run's
    /// directory (`profiles/ID.folded`, an SVG flame graph beside it); empty when the
    /// scenario was not profiled (`--profile`).
    #[serde(default)]
    pub profile: String,
    /// Where the scenario's instructions went, when the run profiled it: kept until the
    /// report writes it to `profile`, never part of the files.
    #[serde(skip)]
    pub profile_data: Option<Profile>,
    /// The Wasm pages the scenario's (last) message touched, when the run profiled it: the
    /// report draws it beside the profile (`profiles/ID.pages.svg`), never part of the files.
    #[serde(skip)]
    pub page_map_data: Option<PageMap>,
}

/// N messages of one workload sent one after the other from a store's start, summed up:
/// what a store costs when it keeps serving (a garbage collector's increments, an
/// allocator's and a page cache's state move between messages), rather than one message
/// from one snapshot.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sequence {
    /// N, the messages sent.
    pub messages: u64,
    /// Charged instructions per message: mean, median, 99th percentile (nearest rank) and
    /// the largest.
    pub charged_mean: f64,
    pub charged_median: u64,
    pub charged_p99: u64,
    pub charged_max: u64,
    /// 64 KiB pages the memory tracker counted per message (accessed plus written, heap and
    /// stable memory): mean and largest. None where the engine cannot see pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages_mean: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages_max: Option<u64>,
    /// The garbage collector's instructions over the whole sequence, where the canister's
    /// runtime reports them (Motoko's `rts_collector_instructions`), part of the charged ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collector_instructions: Option<u64>,
    /// The heap bytes the runtime allocated over the sequence, where it reports them
    /// (Motoko's `rts_total_allocation`): what brings the next collection closer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated_bytes: Option<u64>,
}

impl Sequence {
    /// The figures of `charged` (each message's charged instructions, in order) and
    /// `pages` (each message's counted pages, where seen).
    pub fn of(charged: &[u64], pages: Option<&[u64]>) -> Sequence {
        let n = charged.len().max(1) as f64;
        let mut sorted = charged.to_vec();
        sorted.sort_unstable();
        Sequence {
            messages: charged.len() as u64,
            charged_mean: charged.iter().sum::<u64>() as f64 / n,
            charged_median: nearest_rank(&sorted, 50),
            charged_p99: nearest_rank(&sorted, 99),
            charged_max: sorted.last().copied().unwrap_or(0),
            pages_mean: pages.map(|p| p.iter().sum::<u64>() as f64 / n),
            pages_max: pages.map(|p| p.iter().copied().max().unwrap_or(0)),
            collector_instructions: None,
            allocated_bytes: None,
        }
    }

    /// The collector's share of the sequence's charged instructions.
    pub fn collector_share(&self) -> Option<f64> {
        let total = self.charged_mean * self.messages as f64;
        self.collector_instructions
            .filter(|_| total > 0.0)
            .map(|c| c as f64 / total)
    }
}

/// The `percent`-th percentile of `sorted` by nearest rank: the smallest value with at
/// least `percent`% of the values at or below it (0 for none).
fn nearest_rank(sorted: &[u64], percent: usize) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (sorted.len() * percent).div_ceil(100).max(1);
    sorted[rank - 1]
}

impl ScenarioResult {
    /// The id `--profile PATTERN` matches and profiles are named by: the store (with its
    /// journal mode), position, operation and batch, e.g. `sqlite-wal/middle/insert/1`,
    /// then `/warm` for a warm record (`/wW` for a record of W warm-ups, `/nN` for a sequence of N messages), lower case, in characters a file name can take.
    /// [`scenario_ids`] makes them unique.
    pub fn base_id(&self) -> String {
        let store = if self.journal_mode.is_empty() {
            self.store.clone()
        } else {
            format!("{}-{}", self.store, self.journal_mode)
        };
        let mut id = format!(
            "{store}/{}/{}/{}",
            self.position, self.operation, self.batch
        );
        if let Some(sequence) = &self.sequence {
            id = format!("{id}/n{}", sequence.messages);
        } else if !self.warm_ups.is_empty() {
            id = format!("{id}/w{}", self.warm_ups);
        } else if !self.cache.is_cold() {
            id = format!("{id}/{}", self.cache);
        }
        id.to_lowercase()
            .chars()
            .map(|c| match c {
                'a'..='z' | '0'..='9' | '/' | '-' | '_' | '.' | '@' => c,
                ' ' => '-',
                _ => '_',
            })
            .collect()
    }

    /// Sets the per-message columns the engine reports the same way for every suite: the
    /// dirty 4 KiB pages and the Wasm pages of `message`.
    pub fn set_pages(&mut self, message: &MessageReport) {
        self.heap_dirty_pages = message.heap_dirty_pages;
        self.stable_dirty_pages = message.stable_dirty_pages;
        self.pages = message.pages;
    }

    /// Adds the profile of one more message the scenario's figures add up.
    pub fn add_profile(&mut self, profile: Option<&Profile>) {
        Profile::add_to_sum(&mut self.profile_data, profile);
    }
}

/// The id of each result, in order: [`ScenarioResult::base_id`], and where two results
/// of a run share it (sizes of the scaling suite), `@ROWS_BEFORE` after it, then `#N`.
pub fn scenario_ids(results: &[ScenarioResult]) -> Vec<String> {
    use std::collections::HashMap;
    let count = |ids: &[String]| {
        let mut n: HashMap<String, usize> = HashMap::new();
        for id in ids {
            *n.entry(id.clone()).or_default() += 1;
        }
        n
    };
    let mut ids: Vec<String> = results.iter().map(|r| r.base_id()).collect();
    let shared = count(&ids);
    for (id, r) in ids.iter_mut().zip(results) {
        if shared[id.as_str()] > 1 {
            *id = format!("{id}@{}", r.rows_before);
        }
    }
    let shared = count(&ids);
    let mut seen: HashMap<String, usize> = HashMap::new();
    for id in ids.iter_mut() {
        if shared[id.as_str()] > 1 {
            let n = seen.entry(id.clone()).or_default();
            *n += 1;
            *id = format!("{id}#{n}");
        }
    }
    ids
}
