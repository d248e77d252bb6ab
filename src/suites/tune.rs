//! The `tune` suite: which SQLite settings make a message cheapest. Since the replica's memory
//! tracker a small message pays mostly for the 64 KiB pages it touches, and where SQLite's
//! pages fall is set by its page size, its page cache and its journal. The suite fills one
//! SQLite store per page size, then searches the settings a `dfx canister call bench
//! configure_sqlite` user can set, coordinate by coordinate: page size at the canister's
//! defaults, then the page cache at each workload's best page size, then journal mode and
//! `synchronous` together at its best page size and cache. Every configuration is measured on
//! every workload, under the engine's replica and, beside it, under the last replica before
//! the tracker, so the part of a gain owed to the tracker shows.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use anyhow::{anyhow, Result};
use clap::parser::ValueSource;
use clap::{ArgMatches, Args};
use serde::{Deserialize, Serialize};

use super::decision::MESSAGE_WORKLOADS;
use super::pool::{self, Chain, Lane, Recorder, State, Task, UnitId};
use super::scenario::{JournalMode, Operation, Position, Scenario, Store, StoreKind};
use super::shared::{Define, Header, Session};
use super::users::{self, Call, PREFILL_CHUNK};
use super::{CommonArgs, Exec, MemoryEstimate, Plan, Progress, MEMORY_BASE};
use crate::bench_canister::{BenchClient, Module, SqliteConfig, SqliteSettings};
use crate::engine::cost::Replica;
use crate::engine::Engine;
use crate::report::format::thousands;
use crate::report::work::Kind;
use crate::report::{Align, Block, Document, Report, ScenarioResult, Status, Table};
use bench_types::pragma::Synchronous;

/// SQLite's page sizes from 1 KiB to its largest (512 is allowed but never wins: more pages).
pub const DEFAULT_PAGE_SIZES: [u32; 7] = [1_024, 2_048, 4_096, 8_192, 16_384, 32_768, 65_536];
/// `PRAGMA cache_size` values: SQLite's own default (-2000: 2,000 KiB), values between, and
/// the bench canister's (ic-rusqlite's) 500,000 pages.
pub const DEFAULT_CACHE_SIZES: [i64; 4] = [-2_000, 10_000, 100_000, 500_000];
/// `PRAGMA synchronous` values searched by default (EXTRA syncs more than FULL, and nothing
/// is synced on the IC: it costs the same as FULL or more).
pub const DEFAULT_SYNCHRONOUS: [&str; 3] = ["OFF", "NORMAL", "FULL"];

/// A setting the search can vary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Knob {
    PageSize,
    CacheSize,
    JournalMode,
    Synchronous,
}

impl Knob {
    pub const ALL: [Knob; 4] = [
        Knob::PageSize,
        Knob::CacheSize,
        Knob::JournalMode,
        Knob::Synchronous,
    ];

    /// The name SQLite (and `configure_sqlite`) gives it.
    pub fn name(self) -> &'static str {
        match self {
            Knob::PageSize => "page_size",
            Knob::CacheSize => "cache_size",
            Knob::JournalMode => "journal_mode",
            Knob::Synchronous => "synchronous",
        }
    }

    fn parse(name: &str) -> Result<Knob> {
        if name.trim().eq_ignore_ascii_case("bucket_size") {
            return Err(anyhow!("{BUCKET_SIZE_NOT_SEARCHABLE}"));
        }
        Knob::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| {
                anyhow!(
                    "unknown setting {name:?} in --tune-settings; accepted: {}",
                    Knob::ALL.map(|k| k.name()).join(", ")
                )
            })
    }
}

/// Why `--tune-settings bucket_size` is refused, in one line.
pub const BUCKET_SIZE_NOT_SEARCHABLE: &str = "--tune-settings: bucket_size cannot be searched: ic-rusqlite 0.5 creates the canister's only MemoryManager (bucket size 128 pages, not settable), and a bucket size does not change which 64 KiB pages a message touches (docs/tuning.md)";

/// A store of the tune variant module (`canisters/prebuilt/bench-tune.wasm`, the canister
/// built with the cargo feature `tune`), measured at its defaults beside the default
/// module's heap map and StableBTreeMap: talc as the allocator of the whole module, and a
/// value type with a bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Variant {
    /// The heap map, with talc as the global allocator.
    HeapTalc,
    /// The `StableBTreeMap<u64, String>`, with talc.
    BTreeTalc,
    /// A `StableBTreeMap<u64, Name>`, `Name` a `String` bounded to 100 bytes, with talc.
    BTreeBounded,
}

/// The largest payload the bounded value type holds (`NAME_MAX_SIZE` in the canister).
pub const BOUNDED_MAX_SIZE: u64 = 100;

impl Variant {
    pub const ALL: [Variant; 3] = [Variant::HeapTalc, Variant::BTreeTalc, Variant::BTreeBounded];

    /// Its name in `--tune-variants`.
    pub fn name(self) -> &'static str {
        match self {
            Variant::HeapTalc => "heap-talc",
            Variant::BTreeTalc => "btree-talc",
            Variant::BTreeBounded => "btree-bounded",
        }
    }

    /// The default module's store whose calls it takes (and which `--stores` must name).
    pub fn store(self) -> Store {
        match self {
            Variant::HeapTalc => Store::Heap,
            Variant::BTreeTalc | Variant::BTreeBounded => Store::BTree,
        }
    }

    /// The store in the canister's method names (`add_users_btree_bounded`, ...).
    pub fn method_store(self) -> &'static str {
        match self {
            Variant::HeapTalc => "heap",
            Variant::BTreeTalc => "btree",
            Variant::BTreeBounded => "btree_bounded",
        }
    }

    /// The record's `store`.
    pub fn record_store(self) -> &'static str {
        match self {
            Variant::HeapTalc => "heap allocator=talc",
            Variant::BTreeTalc => "btree allocator=talc",
            Variant::BTreeBounded => "btree_bounded allocator=talc",
        }
    }

    /// For tables.
    pub fn label(self) -> &'static str {
        match self {
            Variant::HeapTalc => "heap BTreeMap (talc)",
            Variant::BTreeTalc => "StableBTreeMap (talc)",
            Variant::BTreeBounded => "StableBTreeMap, bounded value (talc)",
        }
    }

    fn of_record(store: &str) -> Option<Variant> {
        let store = store.split(" replica=").next().unwrap_or(store);
        Variant::ALL.into_iter().find(|v| v.record_store() == store)
    }

    fn parse(name: &str) -> Result<Variant> {
        Variant::ALL
            .into_iter()
            .find(|v| v.name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| {
                anyhow!(
                    "--tune-variants: unknown variant {name:?}; accepted: {}, or none",
                    Variant::ALL.map(|v| v.name()).join(", ")
                )
            })
    }
}

/// One configuration of the SQLite store (locking mode EXCLUSIVE, as the canister keeps it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Setting {
    pub page_size: u32,
    pub cache_size: i64,
    pub journal_mode: JournalMode,
    pub synchronous: Synchronous,
}

impl Setting {
    /// The record's `store`: `sqlite page_size=4096 cache_size=500000 synchronous=OFF` (the
    /// journal mode is the record's own column).
    pub fn store_label(&self) -> String {
        format!(
            "sqlite page_size={} cache_size={} synchronous={}",
            self.page_size, self.cache_size, self.synchronous
        )
    }

    /// For tables: `page_size 16,384, cache_size 500,000, PERSIST, synchronous OFF`.
    pub fn describe(&self) -> String {
        format!(
            "page_size {}, cache_size {}, {}, synchronous {}",
            thousands(self.page_size as u64),
            signed(self.cache_size),
            self.journal_mode,
            self.synchronous
        )
    }

    /// What `configure_sqlite` is sent.
    fn config(&self) -> SqliteConfig {
        SqliteConfig {
            journal_mode: Some(self.journal_mode.to_string()),
            synchronous: Some(self.synchronous.to_string()),
            page_size: Some(self.page_size),
            cache_size: Some(self.cache_size),
            ..SqliteConfig::default()
        }
    }

    /// The `dfx canister call bench configure_sqlite` argument that applies it.
    pub fn candid(&self) -> String {
        format!(
            "(record {{ page_size = opt ({} : nat32); cache_size = opt ({} : int64); journal_mode = opt \"{}\"; synchronous = opt \"{}\" }})",
            self.page_size, self.cache_size, self.journal_mode, self.synchronous
        )
    }

    fn from_settings(s: &SqliteSettings) -> Result<Setting> {
        Ok(Setting {
            page_size: s.page_size,
            cache_size: s.cache_size,
            journal_mode: s
                .journal_mode
                .parse()
                .map_err(|e: String| anyhow!("the canister's journal mode: {e}"))?,
            synchronous: Synchronous::from_name(&s.synchronous).ok_or_else(|| {
                anyhow!(
                    "the canister reports an unknown synchronous {:?}",
                    s.synchronous
                )
            })?,
        })
    }
}

fn signed(n: i64) -> String {
    if n < 0 {
        format!("-{}", thousands(n.unsigned_abs()))
    } else {
        thousands(n as u64)
    }
}

/// A workload of the search: the decision table's six (named as it names them) and seed
/// 003's middle inserts of 100 rows, each one message.
pub struct Workload {
    pub name: &'static str,
    pub position: Position,
    pub operation: Operation,
}

pub const WORKLOADS: [Workload; 7] = [
    Workload {
        name: MESSAGE_WORKLOADS[0].name,
        position: Position::Middle,
        operation: Operation::Insert { rows: 1 },
    },
    Workload {
        name: "middle inserts (100 rows)",
        position: Position::Middle,
        operation: Operation::Insert { rows: 100 },
    },
    Workload {
        name: MESSAGE_WORKLOADS[1].name,
        position: Position::Middle,
        operation: Operation::Insert { rows: 1_000 },
    },
    Workload {
        name: MESSAGE_WORKLOADS[2].name,
        position: Position::Random,
        operation: Operation::Insert { rows: 1 },
    },
    Workload {
        name: MESSAGE_WORKLOADS[3].name,
        position: Position::Random,
        operation: Operation::PointLookups { keys: 1 },
    },
    Workload {
        name: MESSAGE_WORKLOADS[4].name,
        position: Position::Random,
        operation: Operation::PointLookups { keys: 100 },
    },
    Workload {
        name: MESSAGE_WORKLOADS[5].name,
        position: Position::Middle,
        operation: Operation::RangeScan { rows: 1_000 },
    },
];

impl Workload {
    fn picks(&self, r: &ScenarioResult) -> bool {
        r.position == self.position.as_str()
            && r.operation == self.operation.kind()
            && r.batch == self.operation.rows()
    }
}

pub struct Tune;

#[derive(Args)]
#[command(next_help_heading = "tune")]
pub struct TuneArgs {
    /// SQLite page sizes searched, in bytes (powers of two from 512 to 65,536), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = DEFAULT_PAGE_SIZES)]
    tune_page_sizes: Vec<u32>,
    /// SQLite page cache sizes searched (`PRAGMA cache_size`: pages, or KiB when negative),
    /// comma-separated.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true, default_values_t = DEFAULT_CACHE_SIZES)]
    tune_cache_sizes: Vec<i64>,
    /// `PRAGMA synchronous` values searched, comma-separated (OFF, NORMAL, FULL, EXTRA).
    #[arg(long, value_delimiter = ',', default_values = DEFAULT_SYNCHRONOUS)]
    tune_synchronous: Vec<String>,
    /// The settings the search varies, comma-separated (the others stay at the canister's
    /// defaults): page_size, cache_size, journal_mode, synchronous. Journal modes are
    /// `--journal-modes`.
    #[arg(long, value_delimiter = ',', default_values = Knob::ALL.map(|k| k.name()))]
    tune_settings: Vec<String>,
    /// The tune variant's stores measured beside the default module's, comma-separated, or
    /// `none`: heap-talc (the heap map with talc as the allocator), btree-talc (the
    /// StableBTreeMap with talc), btree-bounded (a bounded value type, with talc). Each needs
    /// its store in --stores; btree-bounded needs --payload-size 100 or less.
    #[arg(long, value_delimiter = ',', default_values = Variant::ALL.map(|v| v.name()))]
    tune_variants: Vec<String>,
    /// The tune variant module to run (default: canisters/prebuilt/bench-tune.wasm when it is
    /// of the current sources, else `scripts/build-canister.sh tune` builds it).
    #[arg(long, value_name = "PATH")]
    tune_wasm: Option<PathBuf>,
}

/// The tune suite's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Rows, payload size, seed and price (its stores are the journal modes searched).
    pub users: users::Config,
    pub page_sizes: Vec<u32>,
    pub cache_sizes: Vec<i64>,
    pub journal_modes: Vec<JournalMode>,
    pub synchronous: Vec<Synchronous>,
    /// What the search varies, in search order.
    pub knobs: Vec<Knob>,
    /// The other stores measured at their defaults beside SQLite (`--stores`): the heap map
    /// and the StableBTreeMap, for the decision table.
    pub others: Vec<Store>,
    /// The tune variant's stores measured beside them (`--tune-variants`).
    pub variants: Vec<Variant>,
    /// The tune variant module (`--tune-wasm`); None: the committed one of these sources.
    pub variant_wasm: Option<PathBuf>,
    /// Why a variant asked for by default was left out (for "not searched").
    pub variants_left_out: Vec<String>,
}

/// `page_size` values SQLite takes: a power of two from 512 to 65,536.
pub fn check_page_size(size: u32) -> Result<()> {
    if size.is_power_of_two() && (512..=65_536).contains(&size) {
        Ok(())
    } else {
        Err(anyhow!(
            "--tune-page-sizes: {size} is not a SQLite page size (a power of two from 512 to 65,536)"
        ))
    }
}

impl Config {
    pub fn validate(&self) -> Result<()> {
        self.users.validate()?;
        for &size in &self.page_sizes {
            check_page_size(size)?;
        }
        for &size in &self.cache_sizes {
            if i32::try_from(size).is_err() {
                return Err(anyhow!(
                    "--tune-cache-sizes: {size} is outside SQLite's cache_size range {}..={}",
                    i32::MIN,
                    i32::MAX
                ));
            }
        }
        let lists = [
            (Knob::PageSize, self.page_sizes.is_empty()),
            (Knob::CacheSize, self.cache_sizes.is_empty()),
            (Knob::JournalMode, self.journal_modes.is_empty()),
            (Knob::Synchronous, self.synchronous.is_empty()),
        ];
        for (knob, empty) in lists {
            if empty && self.knobs.contains(&knob) {
                return Err(anyhow!(
                    "the search varies {} but no value of it is given",
                    knob.name()
                ));
            }
        }
        for v in &self.variants {
            if !self.others.contains(&v.store()) {
                return Err(anyhow!(
                    "--tune-variants {}: it is a {} (`--stores` must include {})",
                    v.name(),
                    v.store().label(),
                    v.store().kind()
                ));
            }
            if *v == Variant::BTreeBounded && self.users.payload_size > BOUNDED_MAX_SIZE {
                return Err(anyhow!(
                    "--tune-variants btree-bounded: its value type holds at most {BOUNDED_MAX_SIZE} bytes, --payload-size is {}",
                    self.users.payload_size
                ));
            }
        }
        Ok(())
    }

    /// The peak: a filled store per page size held at once (each as much as one SQLite
    /// store of the users suites: its file and page cache).
    fn peak_memory(&self, page_sizes: usize) -> u64 {
        let one = users::Config {
            stores: vec![Store::Sqlite(JournalMode::Persist)],
            ..self.users.clone()
        };
        let others = users::Config {
            stores: self.others.clone(),
            ..self.users.clone()
        };
        let others = if self.others.is_empty() {
            0
        } else {
            others.peak_memory() - MEMORY_BASE
        };
        // Each variant store is filled in a canister state of its own, as its store is.
        let variants: u64 = self
            .variants
            .iter()
            .map(|v| {
                users::Config {
                    stores: vec![v.store()],
                    ..self.users.clone()
                }
                .peak_memory()
                    - MEMORY_BASE
            })
            .sum();
        MEMORY_BASE
            + (one.peak_memory() - MEMORY_BASE) * page_sizes.max(1) as u64
            + others
            + variants
    }
}

impl Define for Tune {
    const NAME: &'static str = "tune";
    type Args = TuneArgs;

    fn plan(args: TuneArgs, common: &CommonArgs, matches: &ArgMatches) -> Result<Box<dyn Plan>> {
        if !common.has(StoreKind::Sqlite) {
            return Err(anyhow!(
                "the tune suite searches SQLite's settings: --stores must include sqlite"
            ));
        }
        let mut knobs = Vec::new();
        for name in &args.tune_settings {
            let knob = Knob::parse(name)?;
            if !knobs.contains(&knob) {
                knobs.push(knob);
            }
        }
        knobs.sort();
        let synchronous = args
            .tune_synchronous
            .iter()
            .map(|s| {
                Synchronous::from_name(s.trim()).ok_or_else(|| {
                    anyhow!(
                        "--tune-synchronous: unknown value {s:?}; accepted: {}",
                        Synchronous::ALL.map(|v| v.as_str()).join(", ")
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut page_sizes = args.tune_page_sizes;
        page_sizes.sort_unstable();
        page_sizes.dedup();
        let mut cache_sizes = args.tune_cache_sizes;
        cache_sizes.sort_unstable();
        cache_sizes.dedup();
        let mut users = users::Config::from_args(common)?;
        let all = users::stores(common);
        let others = all
            .iter()
            .copied()
            .filter(|s| s.journal_mode().is_none())
            .collect();
        users.stores = all
            .into_iter()
            .filter(|s| s.journal_mode().is_some())
            .collect();
        let others: Vec<Store> = others;
        let mut variants = Vec::new();
        if !(args.tune_variants.len() == 1 && args.tune_variants[0].trim() == "none") {
            for name in &args.tune_variants {
                let v = Variant::parse(name)?;
                if !variants.contains(&v) {
                    variants.push(v);
                }
            }
        }
        variants.sort();
        // By default each variant whose store is measured; one asked for by name must run.
        let mut variants_left_out = Vec::new();
        if matches.value_source("tune_variants") == Some(ValueSource::DefaultValue) {
            variants.retain(|v| {
                if !others.contains(&v.store()) {
                    return false;
                }
                if *v == Variant::BTreeBounded && users.payload_size > BOUNDED_MAX_SIZE {
                    variants_left_out.push(format!(
                        "the bounded value type (it holds at most {BOUNDED_MAX_SIZE} bytes; the payload is {})",
                        users.payload_size
                    ));
                    return false;
                }
                true
            });
        }
        // A module that is not there or not a bench canister stops the run before any work.
        if let Some(path) = &args.tune_wasm {
            crate::bench_canister::read_module_flag("--tune-wasm", path)?;
        }
        let cfg = Config {
            variants,
            variant_wasm: args.tune_wasm,
            variants_left_out,
            others,
            journal_modes: users
                .stores
                .iter()
                .filter_map(|s| s.journal_mode())
                .collect(),
            users,
            page_sizes,
            cache_sizes,
            synchronous: dedup(synchronous),
            knobs,
        };
        cfg.validate()?;
        Ok(Box::new(cfg))
    }

    fn document(report: &Report) -> Document {
        document(report)
    }
}

fn dedup<T: PartialEq>(values: Vec<T>) -> Vec<T> {
    let mut out = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// What the report keeps of the search, for the document: the same in every shard.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Search {
    /// The store label and journal mode of the canister's defaults.
    pub defaults: (String, String),
    /// The `--replica` vintage measured beside the engine's, if any.
    pub beside: Option<String>,
    /// What each stage varied.
    pub stages: Vec<String>,
    /// What was not searched.
    pub not_searched: Vec<String>,
    /// SHA-256 of the tune variant module, when its stores were measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant_module: Option<String>,
}

const SEARCH: &str = "tune";

/// One measured configuration of one workload: under the engine's replica and beside it.
type Measured = (Setting, ScenarioResult, Option<ScenarioResult>);

/// The replica measured beside `current`: the newest vintage without the memory tracker,
/// when `current` has it.
fn beside_vintage(current: Option<Replica>) -> Option<Replica> {
    current?.memory_tracker?;
    Replica::ALL
        .into_iter()
        .rev()
        .find(|r| r.memory_tracker.is_none())
}

impl Config {
    /// The stages of the search, in order: what each varies (the first, none: the
    /// defaults).
    fn stages(&self) -> Vec<Vec<Knob>> {
        let mut stages = vec![Vec::new()];
        for knob in [Knob::PageSize, Knob::CacheSize] {
            if self.knobs.contains(&knob) {
                stages.push(vec![knob]);
            }
        }
        let last: Vec<Knob> = [Knob::JournalMode, Knob::Synchronous]
            .into_iter()
            .filter(|k| self.knobs.contains(k))
            .collect();
        if !last.is_empty() {
            stages.push(last);
        }
        stages
    }

    fn search(&self, defaults: Setting, beside: Option<Replica>) -> Search {
        let stages = self
            .stages()
            .iter()
            .enumerate()
            .map(|(i, knobs)| {
                if knobs.is_empty() {
                    return format!(
                        "{}. the canister's defaults: {}",
                        i + 1,
                        defaults.describe()
                    );
                }
                let values: Vec<String> = knobs.iter().map(|k| self.values(*k)).collect();
                format!(
                    "{}. {} at the workload's best settings so far",
                    i + 1,
                    values.join(" × ")
                )
            })
            .collect();
        let mut not_searched: Vec<String> = Knob::ALL
            .into_iter()
            .filter(|k| !self.knobs.contains(k))
            .map(|k| format!("{} (the canister's default)", k.name()))
            .collect();
        not_searched.extend([
            "locking_mode (EXCLUSIVE: WAL needs it without shared memory) and AUTOINCREMENT".to_string(),
            "stable-fs's chunk size and layout (the database file is mounted on a virtual memory of its own, not in chunks)".to_string(),
            "combinations the stages did not reach".to_string(),
            "the StableBTreeMap's bucket size: ic-rusqlite 0.5 creates the canister's only MemoryManager (buckets of 128 pages) and a bucket size changes no page a message touches (docs/tuning.md)".to_string(),
        ]);
        if self.variants.is_empty() {
            not_searched.push(
                "the tune variant (talc as the allocator, a bounded value type): --tune-variants none or its stores not in --stores".to_string(),
            );
        }
        not_searched.extend(self.variants_left_out.iter().cloned());
        not_searched.extend([
            format!(
                "value sizes: every store holds the run's {}-byte payload (--payload-size), and the bounded value type one bound ({BOUNDED_MAX_SIZE} bytes)",
                self.users.payload_size
            ),
            "allocators other than talc, and per-message arenas".to_string(),
        ]);
        Search {
            defaults: (defaults.store_label(), defaults.journal_mode.to_string()),
            beside: beside.map(|r| r.name.to_string()),
            stages,
            not_searched,
            variant_module: None,
        }
    }
}

impl Config {
    /// The tune variant module: `--tune-wasm`, else the committed module of these sources
    /// (or a build of it).
    fn variant_module(&self) -> Result<Vec<u8>> {
        match &self.variant_wasm {
            Some(path) => crate::bench_canister::read_module_flag("--tune-wasm", path),
            None => Module::TUNE.ensure_built(true),
        }
    }
}

impl Plan for Config {
    /// Each workload is a scenario of the plan (a shard takes whole workloads): its own
    /// search, whose records are the settings it measured in the order it measured them.
    fn run(
        &self,
        engine: &mut dyn Engine,
        wasm: &[u8],
        exec: &Exec,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<Report> {
        let cfg = self;
        cfg.validate()?;
        let session = Session::start("tune", engine, exec);
        let (work, engine_name) = (&session.work, &session.engine_name);
        let current = engine.replica();
        let beside = beside_vintage(current);
        let compiled = pool::compile(engine, wasm, &work)?;
        let mut chain = Chain::new(&work, &[compiled]);
        chain.step(Kind::Install, "install the canister");
        let mut client = BenchClient::install(engine, wasm)?;
        chain.step(Kind::Fill, "set the payload size, read SQLite's defaults");
        client
            .set_payload_size(cfg.users.payload_size)?
            .value
            .map_err(|e| anyhow!("set_payload_size({}) failed: {e}", cfg.users.payload_size))?;
        let defaults = client
            .configure_sqlite(&SqliteConfig::default())?
            .value
            .map_err(|e| anyhow!("reading SQLite's default settings failed: {e}"))?;
        let defaults = Setting::from_settings(&defaults)?;
        chain.step(Kind::Snapshot, "snapshot of the empty store");
        let canister = client.canister;
        let empty = pool::graph::snapshot(client.engine, canister)?;
        let mut after = chain.end();

        let workloads = exec.indices(WORKLOADS.len());
        // The tune variant's empty stores: its module installed over the same canister,
        // from an empty state too.
        let (empty_variant, variant_sha256) = if cfg.variants.is_empty() || workloads.is_empty() {
            (None, None)
        } else {
            let (state, sha256) = install_variant(&mut client, cfg, work, &mut after)?;
            (Some(state), Some(sha256))
        };
        let mut filled: BTreeMap<u32, State> = BTreeMap::new();
        let mut measured: Vec<Vec<Measured>> = vec![Vec::new(); WORKLOADS.len()];
        let mut best = vec![defaults; WORKLOADS.len()];
        let setup = AtomicU64::new(client.executed_instructions);
        let env = StageEnv {
            cfg,
            exec,
            work,
            after: &[],
            suite_engine: engine_name,
            current,
            beside,
            setup: &setup,
        };
        for (i, knobs) in cfg.stages().iter().enumerate() {
            let mut candidates: Vec<(usize, Setting)> = Vec::new();
            for &w in &workloads {
                for s in cfg.around(best[w], knobs) {
                    if !candidates.contains(&(w, s)) && !measured[w].iter().any(|m| m.0 == s) {
                        candidates.push((w, s));
                    }
                }
            }
            let stage_env = StageEnv {
                after: &after,
                ..env
            };
            let ran = run_stage(
                &mut client,
                &empty,
                &mut filled,
                &candidates,
                &stage_env,
                progress,
            )?;
            if !ran.units.is_empty() {
                after = ran.units;
            }
            for ((w, setting), (now, old)) in candidates.iter().zip(ran.measured) {
                measured[*w].push((*setting, now, old));
            }
            let (chosen, unit) = work.unit(
                Kind::Other,
                format!("choose each workload's best after stage {}", i + 1),
                &after,
                || {
                    measured
                        .iter()
                        .map(|m| cheapest(m, defaults))
                        .collect::<Vec<_>>()
                },
            );
            best = chosen;
            after = vec![unit];
        }

        let mut besides: Vec<Beside<'_>> = cfg
            .others
            .iter()
            .map(|&store| Beside {
                store,
                method_store: store.kind(),
                record_store: store.kind().to_string(),
                label: store.label(),
                start: &empty,
            })
            .collect();
        if let Some(start) = &empty_variant {
            besides.extend(cfg.variants.iter().map(|v| Beside {
                store: v.store(),
                method_store: v.method_store(),
                record_store: v.record_store().to_string(),
                label: v.label().to_string(),
                start,
            }));
        }
        let other_records = measure_others(
            &mut client,
            &empty,
            &besides,
            &StageEnv {
                after: &after,
                ..env
            },
            &workloads,
            progress,
        )?;
        let outcomes = outcomes(&workloads, other_records, measured, exec, &setup);
        let header = Header {
            rows_before: cfg.users.rows,
            seed: cfg.users.seed,
            payload_size: cfg.users.payload_size,
            prefill: Some("run".into()),
            notes: notes(cfg, beside),
        };
        let mut report = session.report(&client, header, outcomes);
        let mut search = cfg.search(defaults, beside);
        search.variant_module = variant_sha256;
        report.set_extra(SEARCH, &search);
        Ok(report)
    }

    fn memory_estimate(&self, _exec: &Exec) -> Option<MemoryEstimate> {
        let page_sizes = if self.knobs.contains(&Knob::PageSize) {
            self.page_sizes.len() + 1
        } else {
            1
        };
        let mut smaller = Vec::new();
        if page_sizes > 3 {
            smaller.push((
                "--tune-page-sizes 4096,16384".to_string(),
                self.peak_memory(3),
            ));
        }
        if 100_000 < self.users.rows {
            let fewer = Config {
                users: users::Config {
                    rows: 100_000,
                    ..self.users.clone()
                },
                ..self.clone()
            };
            smaller.push(("--rows 100000".to_string(), fewer.peak_memory(page_sizes)));
        }
        Some(MemoryEstimate {
            bytes: self.peak_memory(page_sizes),
            what: format!(
                "the tune suite with {} rows in up to {page_sizes} SQLite stores",
                thousands(self.users.rows)
            ),
            smaller,
        })
    }
}

/// The tune variant module installed over the canister and its empty stores snapshotted,
/// after `after` (then the install's units): that state and the module's SHA-256.
fn install_variant(
    client: &mut BenchClient<'_>,
    cfg: &Config,
    work: &Recorder,
    after: &mut Vec<UnitId>,
) -> Result<(State, String)> {
    let canister = client.canister;
    let variant = cfg.variant_module()?;
    let compiled = pool::compile(&mut *client.engine, &variant, work)?;
    after.push(compiled);
    let mut chain = Chain::new(work, after);
    chain.step(Kind::Install, "install the tune variant over the canister");
    client
        .engine
        .reinstall(canister, &variant, &candid::encode_args(())?)?
        .result
        .map_err(|r| anyhow!("installing the tune variant module failed: {r}"))?;
    chain.step(Kind::Fill, "set the tune variant's payload size");
    client
        .set_payload_size(cfg.users.payload_size)?
        .value
        .map_err(|e| anyhow!("set_payload_size({}) failed: {e}", cfg.users.payload_size))?;
    chain.step(
        Kind::Snapshot,
        "snapshot of the tune variant's empty stores",
    );
    let state = pool::graph::snapshot(client.engine, canister)?;
    *after = chain.end();
    Ok((state, pool::sha256_hex(&variant)))
}

/// Per workload of `workloads`, its records: the other stores' at their defaults, then the
/// search's in the order it measured them (each under the engine's replica, then beside it).
fn outcomes(
    workloads: &[usize],
    mut other_records: Vec<Vec<ScenarioResult>>,
    mut measured: Vec<Vec<Measured>>,
    exec: &Exec,
    setup: &AtomicU64,
) -> pool::Outcomes {
    let plan: String = WORKLOADS
        .iter()
        .map(|w| {
            format!(
                "{} {} {}\n",
                w.position,
                w.operation.kind(),
                w.operation.rows()
            )
        })
        .collect();
    let outcomes = workloads
        .iter()
        .map(|&w| {
            let results: Vec<ScenarioResult> = std::mem::take(&mut other_records[w])
                .into_iter()
                .chain(
                    std::mem::take(&mut measured[w])
                        .into_iter()
                        .flat_map(|(_, now, old)| std::iter::once(now).chain(old)),
                )
                .collect();
            (w, pool::Outcome::from(results))
        })
        .collect();
    pool::Outcomes::new(
        outcomes,
        WORKLOADS.len(),
        pool::sha256_hex(plan.as_bytes()),
        exec.shard,
        setup.load(Ordering::Relaxed),
    )
}

impl Config {
    /// The settings `knobs` reach from `from`: every combination of their values, the
    /// others as in `from` (just `from` without knobs).
    fn around(&self, from: Setting, knobs: &[Knob]) -> Vec<Setting> {
        let mut out = vec![from];
        for knob in knobs {
            let mut next = Vec::new();
            for s in &out {
                match knob {
                    Knob::PageSize => next.extend(
                        self.page_sizes
                            .iter()
                            .map(|&v| Setting { page_size: v, ..*s }),
                    ),
                    Knob::CacheSize => next.extend(self.cache_sizes.iter().map(|&v| Setting {
                        cache_size: v,
                        ..*s
                    })),
                    Knob::JournalMode => next.extend(self.journal_modes.iter().map(|&v| Setting {
                        journal_mode: v,
                        ..*s
                    })),
                    Knob::Synchronous => next.extend(self.synchronous.iter().map(|&v| Setting {
                        synchronous: v,
                        ..*s
                    })),
                }
            }
            out = next;
        }
        out
    }

    /// The values of `knob` searched, for the report.
    fn values(&self, knob: Knob) -> String {
        let list: Vec<String> = match knob {
            Knob::PageSize => self.page_sizes.iter().map(|v| v.to_string()).collect(),
            Knob::CacheSize => self.cache_sizes.iter().map(|v| v.to_string()).collect(),
            Knob::JournalMode => self.journal_modes.iter().map(|v| v.to_string()).collect(),
            Knob::Synchronous => self.synchronous.iter().map(|v| v.to_string()).collect(),
        };
        format!("{} ({})", knob.name(), list.join(", "))
    }
}

/// The cheapest setting of one workload's measurements (ties: the one measured first);
/// `defaults` while none succeeded.
fn cheapest(measured: &[Measured], defaults: Setting) -> Setting {
    measured
        .iter()
        .filter(|m| m.1.status == Status::Ok)
        .min_by_key(|m| m.1.instructions)
        .map_or(defaults, |m| m.0)
}

fn notes(cfg: &Config, beside: Option<Replica>) -> Vec<String> {
    let mut notes = vec![
        format!(
            "Each page size is a store of its own: an empty SQLite database set to that page size, then filled with ids 0, 10, 20, ..., {} ({} rows per message). Every measurement starts from its page size's store: `configure_sqlite` sets the other settings on a fresh connection, and the workload's one message follows.",
            (cfg.users.rows - 1) * users::ID_STEP,
            thousands(PREFILL_CHUNK)
        ),
        "Each workload is searched on its own, one coordinate at a time from the canister's defaults: page_size; then cache_size at its best page size; then journal_mode and synchronous together at its best page size and cache. The best is the lowest charge; combinations the stages did not reach were not measured.".to_string(),
        "Charged: the whole message as the replica bills it (the page charges included); store work: ic0.performance_counter(0) around the SQLite calls in the canister; pages: the 64 KiB Wasm pages of the heap and of stable memory the message accessed and wrote; bytes: the heap and stable memory the canister holds after it.".to_string(),
    ];
    if !cfg.others.is_empty() {
        let names: Vec<String> = cfg.others.iter().map(|s| s.label()).collect();
        notes.push(format!(
            "For the decision table, the {} are filled the same way, each alone in the canister (no SQLite rows beside it), and measured at their defaults: their counts are not those of the default run, whose canister holds every store.",
            names.join(" and ")
        ));
    }
    if !cfg.variants.is_empty() {
        let names: Vec<&str> = cfg.variants.iter().map(|v| v.label()).collect();
        notes.push(format!(
            "The {} run in the tune variant module (canisters/prebuilt/bench-tune.wasm: the same sources built with the cargo feature `tune`, which makes talc the global allocator of the whole module and adds a StableBTreeMap<u64, Name> whose value type is bounded to {BOUNDED_MAX_SIZE} bytes), installed over the same canister and filled the same way, each alone. SQLite's C code allocates with wasi-libc's dlmalloc in both modules. The tuned column of the decision table counts them.",
            names.join(", ")
        ));
    }
    notes.push("journal_mode OFF keeps no rollback journal: a trap still undoes the whole message (the replica discards its changes), but SQLite cannot roll back a statement or transaction that fails without a trap. MEMORY keeps the journal on the heap, which a trap discards with the rest.".to_string());
    if let Some(old) = beside {
        notes.push(format!(
            "Every measurement is repeated under replica {} (before the memory tracker: 1,000 instructions per 4 KiB page written, nothing for pages read), from the same state: its records carry `replica={}` in the store column.",
            old.name, old.name
        ));
    }
    notes
}

/// What every stage shares.
#[derive(Clone, Copy)]
struct StageEnv<'a> {
    cfg: &'a Config,
    exec: &'a Exec,
    work: &'a Recorder,
    after: &'a [UnitId],
    suite_engine: &'a str,
    current: Option<Replica>,
    beside: Option<Replica>,
    /// Instructions of the setup (install, fills): every shard runs it.
    setup: &'a AtomicU64,
}

struct Ran {
    /// In the order of the candidates.
    measured: Vec<(ScenarioResult, Option<ScenarioResult>)>,
    /// The units the stage ran: what comes after it waits for them.
    units: Vec<UnitId>,
}

/// Measures each (workload, setting) of `candidates`, filling the page sizes not filled yet
/// (each fill a task whose measurements follow it).
fn run_stage(
    client: &mut BenchClient<'_>,
    empty: &State,
    filled: &mut BTreeMap<u32, State>,
    candidates: &[(usize, Setting)],
    env: &StageEnv<'_>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Ran> {
    if candidates.is_empty() {
        return Ok(Ran {
            measured: Vec::new(),
            units: Vec::new(),
        });
    }
    type Slot = Mutex<Option<(ScenarioResult, Option<ScenarioResult>)>>;
    let slots: Vec<Slot> = candidates.iter().map(|_| Mutex::new(None)).collect();
    let units: Mutex<Vec<UnitId>> = Mutex::new(Vec::new());
    let new_fills: Mutex<Vec<(u32, State)>> = Mutex::new(Vec::new());
    {
        let (slots, units, new_fills) = (&slots, &units, &new_fills);
        let note_unit = move |lane: &Lane<'_, '_>| {
            units
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(lane.current())
        };
        let measure = move |page_size: u32, state: State| -> Vec<Task<'_>> {
            let mut tasks = Vec::new();
            for (c, &(w, setting)) in candidates.iter().enumerate() {
                if setting.page_size != page_size {
                    continue;
                }
                let state = state.clone();
                let workload = &WORKLOADS[w];
                tasks.push(
                    Task::new(
                        Kind::Scenario,
                        format!("tune {}: {}", workload.name, setting.describe()),
                        move |lane: &mut Lane<'_, '_>| {
                            note_unit(lane);
                            let out = measure_one(lane, env, setting, workload, &state)?;
                            *slots[c].lock().unwrap_or_else(|e| e.into_inner()) = Some(out);
                            Ok(())
                        },
                    )
                    .profiled(),
                );
            }
            tasks
        };
        let measure = &measure;
        let mut tasks: Vec<Task<'_>> = Vec::new();
        let mut page_sizes: Vec<u32> = candidates.iter().map(|(_, s)| s.page_size).collect();
        page_sizes.sort_unstable();
        page_sizes.dedup();
        for page_size in page_sizes {
            if let Some(state) = filled.get(&page_size) {
                tasks.extend(
                    measure(page_size, state.clone())
                        .into_iter()
                        .map(|t| t.after(env.after)),
                );
                continue;
            }
            let rows = env.cfg.users.rows;
            tasks.push(
                Task::new(
                    Kind::Fill,
                    format!(
                        "fill SQLite (page_size {page_size}) to {} rows",
                        thousands(rows)
                    ),
                    move |lane| {
                        note_unit(lane);
                        lane.restore(empty)?;
                        let before = lane.client.executed_instructions;
                        let page = SqliteConfig {
                            page_size: Some(page_size),
                            ..SqliteConfig::default()
                        };
                        lane.client.configure_sqlite(&page)?.value.map_err(|e| {
                            anyhow!("setting SQLite's page_size to {page_size} failed: {e}")
                        })?;
                        let state = fill_and_snapshot(
                            lane,
                            env,
                            bench_types::names::SQLITE,
                            before,
                            format!("snapshot of SQLite page_size {page_size}"),
                        )?;
                        note_unit(lane);
                        new_fills
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((page_size, state.clone()));
                        for task in measure(page_size, state) {
                            lane.spawn(task);
                        }
                        Ok(())
                    },
                )
                .after(env.after)
                .priority(1),
            );
        }
        pool::graph::run(client, empty, env.exec, env.work, progress, tasks)?;
    }
    for (page_size, state) in new_fills.into_inner().unwrap_or_else(|e| e.into_inner()) {
        filled.insert(page_size, state);
    }
    let measured = slots
        .into_iter()
        .zip(candidates)
        .map(|(slot, (w, setting))| {
            slot.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .ok_or_else(|| {
                    anyhow!(
                        "{} was not measured with {}",
                        WORKLOADS[*w].name,
                        setting.describe()
                    )
                })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Ran {
        measured,
        units: units.into_inner().unwrap_or_else(|e| e.into_inner()),
    })
}

/// One workload of one setting, from its page size's filled `state`: under the engine's
/// replica, and again under the one beside it.
fn measure_one(
    lane: &mut Lane<'_, '_>,
    env: &StageEnv<'_>,
    setting: Setting,
    workload: &Workload,
    state: &State,
) -> Result<(ScenarioResult, Option<ScenarioResult>)> {
    now_and_beside(env, |vintage| {
        measure_under(lane, env, setting, workload, state, vintage)
    })
}

/// `measure` under the engine's replica, then under the vintage beside it, if any.
fn now_and_beside(
    env: &StageEnv<'_>,
    mut measure: impl FnMut(Option<Replica>) -> Result<ScenarioResult>,
) -> Result<(ScenarioResult, Option<ScenarioResult>)> {
    let now = measure(None)?;
    let beside = env.beside.map(|old| measure(Some(old))).transpose()?;
    Ok((now, beside))
}

/// Fills `store` with the suite's rows from the canister's state now, counts what was sent
/// since `before` as setup (every shard runs it), and snapshots the store in a unit called
/// `what`.
fn fill_and_snapshot(
    lane: &mut Lane<'_, '_>,
    env: &StageEnv<'_>,
    store: &str,
    before: u64,
    what: String,
) -> Result<State> {
    users::fill(
        &mut lane.client,
        store,
        0,
        env.cfg.users.rows,
        PREFILL_CHUNK,
        &mut |_| {},
        &mut |_| {},
    )?;
    env.setup.fetch_add(
        lane.client.executed_instructions - before,
        Ordering::Relaxed,
    );
    lane.step(Kind::Snapshot, what);
    lane.snapshot()
}

/// A store measured at its defaults beside the SQLite search: one of the default module's
/// (`cfg.others`) or of the tune variant's (`cfg.variants`).
struct Beside<'a> {
    /// The shape of its calls.
    store: Store,
    /// The store in its method names.
    method_store: &'static str,
    /// The records' `store`.
    record_store: String,
    /// For the fill's unit.
    label: String,
    /// The empty state of its module, which its fill starts from.
    start: &'a State,
}

/// The other stores (`besides`) at their defaults: each filled from its module's empty state
/// in a task of its own, then every workload of `workloads` measured from it, under the
/// engine's replica and beside it. Per workload (all of [`WORKLOADS`], empty where not
/// measured): each store's records in `besides` order.
fn measure_others(
    client: &mut BenchClient<'_>,
    empty: &State,
    stores: &[Beside<'_>],
    env: &StageEnv<'_>,
    workloads: &[usize],
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<Vec<ScenarioResult>>> {
    let mut out = vec![Vec::new(); WORKLOADS.len()];
    if stores.is_empty() || workloads.is_empty() {
        return Ok(out);
    }
    type Slot = Mutex<Option<Vec<ScenarioResult>>>;
    let slots: Vec<Slot> = (0..stores.len() * WORKLOADS.len())
        .map(|_| Mutex::new(None))
        .collect();
    {
        let slots = &slots;
        let mut tasks = Vec::new();
        for (i, store) in stores.iter().enumerate() {
            let rows = env.cfg.users.rows;
            tasks.push(
                Task::new(
                    Kind::Fill,
                    format!("fill the {} to {} rows", store.label, thousands(rows)),
                    move |lane| {
                        lane.restore(store.start)?;
                        let before = lane.client.executed_instructions;
                        let state = fill_and_snapshot(
                            lane,
                            env,
                            store.method_store,
                            before,
                            format!("snapshot of the {}", store.label),
                        )?;
                        for &w in workloads {
                            let state = state.clone();
                            lane.spawn(
                                Task::new(
                                    Kind::Scenario,
                                    format!("tune {}: the {}", WORKLOADS[w].name, store.label),
                                    move |lane: &mut Lane<'_, '_>| {
                                        let (now, beside) = now_and_beside(env, |vintage| {
                                            measure_store(
                                                lane,
                                                env,
                                                store,
                                                &WORKLOADS[w],
                                                &state,
                                                vintage,
                                            )
                                        })?;
                                        let records = std::iter::once(now).chain(beside).collect();
                                        *slots[i * WORKLOADS.len() + w]
                                            .lock()
                                            .unwrap_or_else(|e| e.into_inner()) = Some(records);
                                        Ok(())
                                    },
                                )
                                .profiled(),
                            );
                        }
                        Ok(())
                    },
                )
                .after(env.after)
                .priority(2),
            );
        }
        pool::graph::run(client, empty, env.exec, env.work, progress, tasks)?;
    }
    let mut slots = slots
        .into_iter()
        .map(|s| s.into_inner().unwrap_or_else(|e| e.into_inner()));
    for _ in stores {
        for records in out.iter_mut() {
            records.extend(slots.next().flatten().unwrap_or_default());
        }
    }
    Ok(out)
}

/// One workload of a store without settings, from its filled `state`.
fn measure_store(
    lane: &mut Lane<'_, '_>,
    env: &StageEnv<'_>,
    store: &Beside<'_>,
    workload: &Workload,
    state: &State,
    vintage: Option<Replica>,
) -> Result<ScenarioResult> {
    let (call, mut result) = record(
        env,
        store.store,
        store.record_store.clone(),
        workload,
        vintage,
    );
    let kind = format!("_{}", store.store.kind());
    result.method = result
        .method
        .replacen(&kind, &format!("_{}", store.method_store), 1);
    lane.restore(state)?;
    send(
        lane,
        env,
        store.method_store,
        &call,
        workload,
        vintage,
        &mut result,
    )?;
    Ok(result)
}

fn measure_under(
    lane: &mut Lane<'_, '_>,
    env: &StageEnv<'_>,
    setting: Setting,
    workload: &Workload,
    state: &State,
    vintage: Option<Replica>,
) -> Result<ScenarioResult> {
    let store = Store::Sqlite(setting.journal_mode);
    let (call, mut result) = record(env, store, setting.store_label(), workload, vintage);
    result.journal_mode = setting.journal_mode.to_string();
    lane.restore(state)?;
    let applied = lane.client.configure_sqlite(&setting.config())?.value;
    match applied.map(|s| Setting::from_settings(&s)) {
        Err(reason) => {
            result.status = Status::Refused(reason);
            return Ok(result);
        }
        Ok(Err(e)) => return Err(e),
        Ok(Ok(actual)) if actual != setting => {
            result.status = Status::Refused(format!(
                "asked for {}, SQLite uses {}",
                setting.describe(),
                actual.describe()
            ));
            return Ok(result);
        }
        Ok(Ok(_)) => {}
    }
    send(
        lane,
        env,
        store.kind(),
        &call,
        workload,
        vintage,
        &mut result,
    )?;
    Ok(result)
}

/// A workload's record before it runs, and its call: `store` labelled `label`, with
/// ` replica=VINTAGE` after it when measured under the vintage beside.
fn record(
    env: &StageEnv<'_>,
    store: Store,
    mut label: String,
    workload: &Workload,
    vintage: Option<Replica>,
) -> (Call, ScenarioResult) {
    let scenario = Scenario {
        store,
        position: workload.position,
        operation: workload.operation,
    };
    let call = Call::for_scenario(&scenario, &env.cfg.users);
    if let Some(v) = vintage {
        label.push_str(&format!(" replica={}", v.name));
    }
    let result = ScenarioResult {
        suite: "tune".into(),
        engine: env.suite_engine.into(),
        store: label,
        position: workload.position.to_string(),
        operation: workload.operation.kind().into(),
        batch: workload.operation.rows(),
        rows_before: env.cfg.users.rows,
        method: scenario.method(),
        args: call.candid_args(),
        ..ScenarioResult::default()
    };
    (call, result)
}

/// Sends the workload's message (under `vintage`'s rules when given, the engine's again
/// after it) and fills `result` from the reply, with the memory the canister holds after it.
fn send(
    lane: &mut Lane<'_, '_>,
    env: &StageEnv<'_>,
    method_store: &str,
    call: &Call,
    workload: &Workload,
    vintage: Option<Replica>,
    result: &mut ScenarioResult,
) -> Result<()> {
    if let Some(v) = vintage {
        lane.client.engine.set_replica(v)?;
    }
    let reply = users::run_call(&mut lane.client, method_store, call);
    if let (Some(_), Some(current)) = (vintage, env.current) {
        lane.client.engine.set_replica(current)?;
    }
    let reply = reply?;
    let held = match &reply {
        users::Reply::Insert(m) => m.message.heap_bytes_after + m.message.stable_bytes_after,
        users::Reply::Read(m) => m.message.heap_bytes_after + m.message.stable_bytes_after,
    };
    users::record_reply(result, reply, workload.operation, env.cfg.users.usd_per_xdr);
    if result.status == Status::Ok {
        result.bytes = held;
    }
    Ok(())
}

/// The cheapest configuration of each workload in `report`, with the defaults' record and
/// the two records beside them: (workload, defaults, best, defaults beside, best beside).
pub struct Found<'a> {
    pub workload: &'static str,
    pub defaults: Option<&'a ScenarioResult>,
    pub best: Option<&'a ScenarioResult>,
    pub defaults_beside: Option<&'a ScenarioResult>,
    pub best_beside: Option<&'a ScenarioResult>,
}

/// Per workload, from the report's records alone (so a merged or reloaded report renders).
pub fn found(report: &Report) -> Vec<Found<'_>> {
    let search: Search = report.extra(SEARCH).unwrap_or_default();
    let beside_suffix = search.beside.as_ref().map(|v| format!(" replica={v}"));
    let is_beside = |r: &ScenarioResult| r.store.contains(" replica=");
    WORKLOADS
        .iter()
        .map(|w| {
            let mine: Vec<&ScenarioResult> = report
                .results
                .iter()
                .filter(|r| w.picks(r) && !is_beside(r) && is_sqlite(r))
                .collect();
            let defaults = mine
                .iter()
                .copied()
                .find(|r| (r.store.clone(), r.journal_mode.clone()) == search.defaults);
            let best = mine
                .iter()
                .copied()
                .filter(|r| r.status == Status::Ok)
                .min_by_key(|r| r.instructions);
            let beside_of = |of: Option<&ScenarioResult>| {
                let (of, suffix) = (of?, beside_suffix.as_ref()?);
                let store = format!("{}{suffix}", of.store);
                report
                    .results
                    .iter()
                    .find(|r| w.picks(r) && r.store == store && r.journal_mode == of.journal_mode)
            };
            Found {
                workload: w.name,
                defaults,
                best,
                defaults_beside: beside_of(defaults),
                best_beside: beside_of(best),
            }
        })
        .collect()
}

/// A record of the SQLite search (the other stores' carry their kind as the store).
fn is_sqlite(r: &ScenarioResult) -> bool {
    r.store.starts_with("sqlite ")
}

/// The decision table: per workload the cheapest store with every store at its defaults,
/// and with SQLite at the settings the search found cheapest (the other stores have none).
pub fn decision_table(report: &Report) -> Option<Table> {
    use Align::{Left, Right};
    let others: Vec<&ScenarioResult> = report
        .results
        .iter()
        .filter(|r| !is_sqlite(r) && !r.store.contains(" replica=") && r.status == Status::Ok)
        .collect();
    if others.is_empty() {
        return None;
    }
    let mut t = Table::with_aligns(
        [
            "Workload",
            "Cheapest at defaults",
            "Its cost",
            "Cheapest with tuned settings",
            "Its cost",
            "Gain",
        ]
        .map(String::from)
        .to_vec(),
        vec![Left, Left, Right, Left, Right, Right],
    );
    for (w, f) in WORKLOADS.iter().zip(found(report)) {
        let mine: Vec<&ScenarioResult> = others.iter().copied().filter(|r| w.picks(r)).collect();
        let mut at_defaults: Vec<(String, u64)> = mine
            .iter()
            .filter(|r| Variant::of_record(&r.store).is_none())
            .map(|r| (other_label(r), r.instructions))
            .collect();
        if let Some(d) = f.defaults.filter(|d| d.status == Status::Ok) {
            at_defaults.push(("SQLite (its defaults)".into(), d.instructions));
        }
        let mut tuned: Vec<(String, u64)> = mine
            .iter()
            .map(|r| (other_label(r), r.instructions))
            .collect();
        if let Some(b) = f.best {
            tuned.push((format!("SQLite ({})", describe_record(b)), b.instructions));
        }
        let cheapest = |v: &[(String, u64)]| v.iter().min_by_key(|(_, c)| *c).cloned();
        let (Some(d), Some(t2)) = (cheapest(&at_defaults), cheapest(&tuned)) else {
            continue;
        };
        t.push(vec![
            w.name.to_string(),
            d.0.clone(),
            thousands(d.1),
            t2.0.clone(),
            thousands(t2.1),
            gain(d.1, t2.1),
        ]);
    }
    Some(t)
}

/// A record of the other stores, as tables name it.
fn other_label(r: &ScenarioResult) -> String {
    match Variant::of_record(&r.store) {
        Some(v) => v.label().to_string(),
        None => super::decision::store_label(&r.store, &r.journal_mode),
    }
}

/// The heap map and the StableBTreeMap in the default module and in the tune variant, per
/// workload: the charge, against the same store in the default module, the store work, the
/// pages, the memory held, and the charge under the vintage beside.
pub fn variants_table(report: &Report) -> Option<Table> {
    use Align::{Left, Right};
    let search: Search = report.extra(SEARCH).unwrap_or_default();
    let beside = search.beside.clone().unwrap_or_default();
    let is_beside = |r: &ScenarioResult| r.store.contains(" replica=");
    if !report
        .results
        .iter()
        .any(|r| !is_beside(r) && Variant::of_record(&r.store).is_some())
    {
        return None;
    }
    let mut headers = vec![
        "Workload".to_string(),
        "Store".into(),
        "Charged".into(),
        "Against the default module".into(),
        "Store work".into(),
        "Wasm pages (heap + stable, accessed/written)".into(),
        "Memory held".into(),
    ];
    let mut aligns = vec![Left, Left, Right, Right, Right, Right, Right];
    if !beside.is_empty() {
        headers.push(format!("Under {beside}"));
        aligns.push(Right);
    }
    let mut t = Table::with_aligns(headers, aligns);
    for w in &WORKLOADS {
        let mine: Vec<&ScenarioResult> = report
            .results
            .iter()
            .filter(|r| w.picks(r) && !is_beside(r) && !is_sqlite(r))
            .collect();
        for r in &mine {
            let base = Variant::of_record(&r.store).map_or(r.store.as_str(), |v| v.store().kind());
            let default = mine.iter().find(|d| d.store == base);
            let ok = r.status == Status::Ok;
            let against = match default {
                Some(d) if ok && d.status == Status::Ok && d.store != r.store => {
                    gain(d.instructions, r.instructions)
                }
                _ => "-".into(),
            };
            let mut row = vec![
                w.name.to_string(),
                other_label(r),
                if ok {
                    thousands(r.instructions)
                } else {
                    "fails".into()
                },
                against,
                if ok {
                    thousands(r.store_instructions)
                } else {
                    "-".into()
                },
                pages_cell(r),
                if ok {
                    format!("{} MB", thousands(r.bytes / 1_000_000))
                } else {
                    "-".into()
                },
            ];
            if !beside.is_empty() {
                let store = format!("{} replica={beside}", r.store);
                let old = report
                    .results
                    .iter()
                    .find(|x| w.picks(x) && x.store == store);
                row.push(match old {
                    Some(x) if x.status == Status::Ok => thousands(x.instructions),
                    Some(_) => "fails".into(),
                    None => "-".into(),
                });
            }
            t.push(row);
        }
    }
    Some(t)
}

/// `Store label` + journal mode back to the setting's description.
fn describe_record(r: &ScenarioResult) -> String {
    let mut parts = Vec::new();
    for field in r.store.split_whitespace().skip(1) {
        if let Some((name, value)) = field.split_once('=') {
            if name == "replica" {
                continue;
            }
            let value = match value.parse::<i64>() {
                Ok(n) => signed(n),
                Err(_) => value.to_string(),
            };
            parts.push((name.to_string(), value));
        }
    }
    let get = |name: &str| {
        parts
            .iter()
            .find(|(n, _)| n == name)
            .map_or("?".to_string(), |(_, v)| v.clone())
    };
    format!(
        "page_size {}, cache_size {}, {}, synchronous {}",
        get("page_size"),
        get("cache_size"),
        r.journal_mode,
        get("synchronous")
    )
}

fn pages_cell(r: &ScenarioResult) -> String {
    match r.pages {
        Some(p) => format!(
            "{}/{} + {}/{}",
            p.heap_wasm_pages_accessed,
            p.heap_wasm_pages_written,
            p.stable_wasm_pages_accessed,
            p.stable_wasm_pages_written
        ),
        None => "-".into(),
    }
}

fn gain(defaults: u64, best: u64) -> String {
    if best == 0 {
        return "-".into();
    }
    let x = defaults as f64 / best as f64;
    if x < 10.0 {
        format!("{x:.2}x")
    } else {
        format!("{x:.1}x")
    }
}

/// The table of the cheapest configuration per workload.
pub fn cheapest_table(report: &Report) -> Table {
    use Align::{Left, Right};
    let search: Search = report.extra(SEARCH).unwrap_or_default();
    let beside = search.beside.clone().unwrap_or_default();
    let mut headers = vec![
        "Workload".to_string(),
        "At defaults".into(),
        "Cheapest settings found".into(),
        "Its cost".into(),
        "Gain".into(),
        "Store work".into(),
        "Wasm pages (heap + stable, accessed/written)".into(),
    ];
    let mut aligns = vec![Left, Right, Left, Right, Right, Right, Right];
    if !beside.is_empty() {
        headers.push(format!("Under {beside}: defaults → these settings"));
        aligns.push(Right);
    }
    let mut t = Table::with_aligns(headers, aligns);
    for f in found(report) {
        let cost = |r: Option<&ScenarioResult>| match r {
            Some(r) if r.status == Status::Ok => thousands(r.instructions),
            Some(_) => "fails".into(),
            None => "-".into(),
        };
        let mut row = vec![
            f.workload.to_string(),
            cost(f.defaults),
            f.best.map_or("-".into(), describe_record),
            cost(f.best),
            match (f.defaults, f.best) {
                (Some(d), Some(b)) if d.status == Status::Ok => {
                    gain(d.instructions, b.instructions)
                }
                _ => "-".into(),
            },
            f.best
                .map_or("-".into(), |b| thousands(b.store_instructions)),
            f.best.map_or("-".into(), pages_cell),
        ];
        if !beside.is_empty() {
            row.push(format!(
                "{} → {}",
                cost(f.defaults_beside),
                cost(f.best_beside)
            ));
        }
        t.push(row);
    }
    t
}

/// Every configuration measured under the engine's replica: charged instructions per
/// workload.
fn every_configuration(report: &Report) -> Table {
    let mut headers = vec!["Settings".to_string()];
    headers.extend(WORKLOADS.iter().map(|w| w.name.to_string()));
    let mut aligns = vec![Align::Left];
    aligns.extend(WORKLOADS.iter().map(|_| Align::Right));
    let mut t = Table::with_aligns(headers, aligns);
    let mut seen: Vec<(String, String)> = Vec::new();
    for r in &report.results {
        let key = (r.store.clone(), r.journal_mode.clone());
        if r.store.contains(" replica=") || !is_sqlite(r) || seen.contains(&key) {
            continue;
        }
        seen.push(key.clone());
        let mut row = vec![describe_record(r)];
        for w in &WORKLOADS {
            let cell = report
                .results
                .iter()
                .find(|x| w.picks(x) && (x.store.clone(), x.journal_mode.clone()) == key);
            row.push(match cell {
                Some(x) if x.status == Status::Ok => thousands(x.instructions),
                Some(x) => match &x.status {
                    Status::Refused(_) => "refused".into(),
                    _ => "fails".into(),
                },
                None => "-".into(),
            });
        }
        t.push(row);
    }
    t
}

fn document(report: &Report) -> Document {
    let search: Search = report.extra(SEARCH).unwrap_or_default();
    let mut doc = Document::default();
    if let Some(t) = decision_table(report) {
        doc.push_table(
            "Which store is cheapest, at defaults and with SQLite tuned (charged instructions per message)",
            t,
        );
    }
    doc.push_table(
        "Cheapest SQLite settings per workload (charged instructions per message)",
        cheapest_table(report),
    );
    if let Some(t) = variants_table(report) {
        doc.push_table(
            "The heap map's allocator and the StableBTreeMap's value type: the default module against the tune variant (charged instructions per message)",
            t,
        );
    }
    let mut apply = String::from(
        "To apply a setting to the bench canister: `dfx canister call bench clear_sqlite` (a new page_size needs an empty table), then `dfx canister call bench configure_sqlite` with the settings, e.g.\n",
    );
    if let Some(best) = found(report).into_iter().find_map(|f| f.best) {
        if let Some(setting) = parse_setting(best) {
            apply.push_str(&format!(
                "`dfx canister call bench configure_sqlite '{}'`\n",
                setting.candid()
            ));
        }
    }
    let mut searched = String::from("What was searched:\n");
    for s in &search.stages {
        searched.push_str(&format!("{s}\n"));
    }
    searched.push_str("Not searched: ");
    searched.push_str(&search.not_searched.join("; "));
    searched.push('\n');
    for blocks in [&mut doc.markdown, &mut doc.terminal] {
        blocks.push(Block::Text(apply.clone()));
        blocks.push(Block::Text(searched.clone()));
    }
    if let Some(maps) = page_maps(report) {
        doc.markdown.push(Block::Heading {
            level: 2,
            text: "Where the pages are: the defaults against the cheapest settings".into(),
        });
        doc.markdown.push(Block::Text(
            "The Wasm pages of heap and stable memory each message touched (red: written), for the workloads whose measurements `--profile` selected; hover a page for the function that touched it first.\n".into(),
        ));
        doc.markdown.push(Block::Table(maps));
    }
    doc.markdown.push(Block::Heading {
        level: 2,
        text: "Every configuration measured (charged instructions per message)".into(),
    });
    doc.markdown.push(Block::Table(every_configuration(report)));
    doc
}

/// Per workload whose defaults and cheapest settings were both profiled, their page maps
/// side by side (the files `--profile` writes beside each profile).
fn page_maps(report: &Report) -> Option<Table> {
    let mut t = Table::with_aligns(
        ["Workload", "At the defaults", "With the cheapest settings"]
            .map(String::from)
            .to_vec(),
        vec![Align::Left; 3],
    );
    let mut any = false;
    for f in found(report) {
        let (Some(d), Some(b)) = (f.defaults, f.best) else {
            continue;
        };
        if d.profile.is_empty() || b.profile.is_empty() {
            continue;
        }
        let image = |r: &ScenarioResult, what: &str| {
            format!(
                "![{what}]({})",
                crate::report::profiles::page_map_file(&r.profile)
            )
        };
        t.push(vec![
            f.workload.to_string(),
            image(d, "the defaults"),
            image(b, &describe_record(b)),
        ]);
        any = true;
    }
    any.then_some(t)
}

/// The setting a record was measured with.
fn parse_setting(r: &ScenarioResult) -> Option<Setting> {
    let mut page_size = None;
    let mut cache_size = None;
    let mut synchronous = None;
    for field in r.store.split_whitespace().skip(1) {
        match field.split_once('=')? {
            ("page_size", v) => page_size = v.parse().ok(),
            ("cache_size", v) => cache_size = v.parse().ok(),
            ("synchronous", v) => synchronous = Synchronous::from_name(v),
            _ => {}
        }
    }
    Some(Setting {
        page_size: page_size?,
        cache_size: cache_size?,
        journal_mode: r.journal_mode.parse().ok()?,
        synchronous: synchronous?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting() -> Setting {
        Setting {
            page_size: 16_384,
            cache_size: -2_000,
            journal_mode: JournalMode::Wal,
            synchronous: Synchronous::Normal,
        }
    }

    #[test]
    fn a_record_names_its_setting_and_reads_back_as_it() {
        let s = setting();
        let r = ScenarioResult {
            store: s.store_label(),
            journal_mode: s.journal_mode.to_string(),
            position: "middle".into(),
            ..ScenarioResult::default()
        };
        assert_eq!(parse_setting(&r), Some(s));
        assert_eq!(
            describe_record(&r),
            "page_size 16,384, cache_size -2,000, WAL, synchronous NORMAL"
        );
        assert_eq!(describe_record(&r), s.describe());
        assert_eq!(
            r.base_id(),
            "sqlite-page_size_16384-cache_size_-2000-synchronous_normal-wal/middle//0"
        );
    }

    #[test]
    fn only_powers_of_two_sqlite_takes_are_page_sizes() {
        for ok in [512, 1_024, 65_536] {
            assert!(check_page_size(ok).is_ok());
        }
        for bad in [0, 256, 3_000, 131_072] {
            let e = check_page_size(bad).unwrap_err().to_string();
            assert!(
                e.contains(&format!("{bad} is not a SQLite page size")),
                "{e}"
            );
        }
        assert_eq!(
            Knob::parse(" Bucket_Size").unwrap_err().to_string(),
            BUCKET_SIZE_NOT_SEARCHABLE
        );
        assert!(Knob::parse("bucket")
            .unwrap_err()
            .to_string()
            .contains("unknown setting \"bucket\""));
        assert_eq!(Knob::parse(" Page_Size").unwrap(), Knob::PageSize);
    }

    #[test]
    fn a_stage_reaches_every_combination_of_its_knobs_from_the_best() {
        let cfg = Config {
            users: users::Config::default(),
            page_sizes: vec![4_096, 65_536],
            cache_sizes: vec![100, 500_000],
            journal_modes: vec![JournalMode::Persist, JournalMode::Wal, JournalMode::Off],
            synchronous: vec![Synchronous::Off, Synchronous::Full],
            knobs: Knob::ALL.to_vec(),
            others: Vec::new(),
            variants: Vec::new(),
            variant_wasm: None,
            variants_left_out: Vec::new(),
        };
        let from = setting();
        assert_eq!(cfg.around(from, &[]), vec![from]);
        let pages = cfg.around(from, &[Knob::PageSize]);
        assert_eq!(
            pages.iter().map(|s| s.page_size).collect::<Vec<_>>(),
            [4_096, 65_536]
        );
        assert!(pages.iter().all(|s| s.cache_size == -2_000));
        let last = cfg.around(from, &[Knob::JournalMode, Knob::Synchronous]);
        assert_eq!(last.len(), 6);
        assert!(last.iter().all(|s| s.page_size == 16_384));
    }

    #[test]
    fn the_vintage_beside_is_the_last_before_the_tracker() {
        assert_eq!(
            beside_vintage(Some(Replica::R2026_07)).map(|r| r.name),
            Some("2026-05")
        );
        assert_eq!(
            beside_vintage(Some(Replica::R2026_05)).map(|r| r.name),
            None
        );
        assert_eq!(beside_vintage(None).map(|r| r.name), None);
    }
}
