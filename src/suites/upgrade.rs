//! The `upgrade` suite (issue 14, items 3 and 4): what upgrading a canister costs with each
//! store, what the first calls after it cost, and the largest store each one can still
//! upgrade.
//!
//! Each store gets one canister, filled once in steps (to 1,000 rows, snapshot, upgrade,
//! back to the snapshot, on to 10,000 rows, ...), upgraded at every size N to the same
//! module. Then, for one store, a real upgrade at the first size predicted to fail shows the
//! replica's error and the rollback.
//!
//! This file holds the options, the plan (`Config`) and its run; the steps it runs and the
//! report's sections are the parts in `upgrade/`.

use anyhow::{anyhow, bail, Result};
use clap::{ArgMatches, Args};

use super::canister::empty::{self, Empties, Empty};
use super::scenario::{JournalMode, Store, StoreKind};
use super::shared::{Define, Header, Measure, Reads, Run};
use super::users::ID_STEP;
use super::{pool, steps, CommonArgs, Exec, MemoryEstimate};
use crate::bench_canister::Module;
use crate::report::format::thousands;
use crate::report::ScenarioResult;
use crate::report::{Document, Report};
use crate::stores::{self, ModuleNeed};
use bench_types::names::HeapEncoding;

mod calls;
mod grow;
mod install;
mod limit_run;
mod limits;
mod memory;
mod report;

pub(super) use install::upgrade;
pub use install::{new_build, BUILD_SECTION, UPGRADE, UPGRADE_SAME_MODULE};
pub use limits::{largest_within, predict, LimitRun, Point, Predicted};
pub use report::document;

use grow::{grow, Grown, Order, Shared, Step};

pub struct Upgrade;

/// The sizes measured by default.
pub const SIZES: [u64; 4] = [1_000, 10_000, 100_000, 1_000_000];
/// The limit run is only made at a size up to this many rows.
pub const MAX_LIMIT_RUN_ROWS: u64 = 10_000_000;
/// Rows of the two calibration points at the limit run's payload size.
pub const CALIBRATION_SIZES: [u64; 2] = [1_000, 10_000];
/// The replica lowers a canister's `install_code_debit` by this much per round
/// (`install_code_rate_limit`, rs/config/src/subnet_config.rs).
pub const INSTALL_CODE_RATE_LIMIT: u64 = 2_000_000_000;
/// The wasm32 heap maximum.
pub const MAX_HEAP_BYTES: u64 = 4 << 30;
/// The wasm64 heap maximum: the engine's (`MAX_WASM64_MEMORY_IN_BYTES`).
pub const MAX_WASM64_HEAP_BYTES: u64 =
    crate::engine::embedded::memory::heap::MAX_WASM64_HEAP_BYTES as u64;
/// While the limit run's upgrade succeeds, it fills this much more (in parts per thousand)
/// and tries again.
const LIMIT_RUN_STEP_PERMILLE: u64 = 50;

/// The names of the suite's lists in results.json.
const POINTS: &str = "upgrade_points";
const LIMIT_RUN: &str = "upgrade_limit_run";

#[derive(Args)]
#[command(next_help_heading = "upgrade")]
pub struct UpgradeArgs {
    /// Store sizes N at which each store is upgraded, comma-separated; sizes above --rows
    /// are left out. The SQLite journal modes default to PERSIST (the canister's default)
    /// and OFF unless --journal-modes is given.
    #[arg(long, value_delimiter = ',', default_values_t = SIZES)]
    upgrade_sizes: Vec<u64>,
    /// Skip the real upgrade at the first size predicted to fail.
    #[arg(long)]
    no_limit_run: bool,
    /// Payload bytes per row of the limit run: larger rows reach the heap limits with fewer
    /// rows, so the failing upgrade is reached in reasonable time.
    #[arg(long, default_value_t = 10_000)]
    limit_payload_size: u64,
    /// Encodings of the heap store's pre_upgrade, comma-separated (candid, cbor): the heap
    /// store (when --stores has heap) is measured once per encoding.
    #[arg(long, value_delimiter = ',', default_values_t = HeapEncoding::NAMES.map(String::from))]
    heap_encodings: Vec<String>,
}

/// `--heap-encodings`, in the canister's order.
fn sorted_encodings(names: &[String]) -> Result<Vec<HeapEncoding>> {
    let picked = names
        .iter()
        // In any case, as every value of the CLI (the names are lower case).
        .map(|name| {
            HeapEncoding::parse(&name.to_ascii_lowercase())
                .map_err(|e| anyhow!("--heap-encodings: {e}"))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(HeapEncoding::ALL
        .into_iter()
        .filter(|e| picked.contains(e))
        .collect())
}

/// A store as this suite measures it: a store of the table (SQLite in a journal mode), and
/// for a store serialized on upgrade, the encoding (`None`: the canister's default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UpgradeStore {
    pub store: Store,
    pub encoding: Option<HeapEncoding>,
}

impl UpgradeStore {
    /// `store` as the other suites measure it (a serialized store in the canister's
    /// default encoding).
    pub fn of(store: Store) -> UpgradeStore {
        UpgradeStore {
            store,
            encoding: None,
        }
    }

    /// `kind` serialized on upgrade in `encoding`.
    pub fn serialized(kind: StoreKind, encoding: HeapEncoding) -> UpgradeStore {
        UpgradeStore {
            store: Store::new(kind, None),
            encoding: Some(encoding),
        }
    }

    /// The store serialized on upgrade (the heap map) in `encoding`; named as the enum
    /// variant this type replaced.
    #[allow(non_snake_case)]
    pub fn Heap(encoding: HeapEncoding) -> UpgradeStore {
        let kind = StoreKind::every()
            .find(|k| k.encodings().iter().any(|e| e.encoding == encoding))
            .expect("a store of the table is serialized in every encoding the canister has");
        UpgradeStore::serialized(kind, encoding)
    }

    /// [`UpgradeStore::of`], named as the enum variant this type replaced.
    #[allow(non_snake_case)]
    pub fn Users(store: Store) -> UpgradeStore {
        UpgradeStore::of(store)
    }

    /// The store a record of this suite names (its store, journal mode and position), back
    /// as a value; `None` for a store this version does not know.
    pub(super) fn of_record(r: &ScenarioResult) -> Option<UpgradeStore> {
        let store = stores::parse(&r.store, &r.journal_mode)?;
        let encoding = match store.store_kind().encodings() {
            [] => None,
            all => Some(
                all.iter()
                    .find(|e| e.encoding.name() == r.position)?
                    .encoding,
            ),
        };
        Some(UpgradeStore { store, encoding })
    }

    /// `heap (Candid)`, `SQLite OFF`.
    pub fn label(self) -> String {
        let encoding = self
            .store
            .store_kind()
            .encodings()
            .iter()
            .find(|e| Some(e.encoding) == self.encoding);
        match encoding {
            Some(e) => e.label.to_string(),
            None => self.store.label(),
        }
    }
    pub fn store_kind(self) -> StoreKind {
        self.store.store_kind()
    }
    /// As in the records.
    pub fn kind(self) -> &'static str {
        self.store.kind()
    }
    pub fn journal_mode(self) -> Option<JournalMode> {
        self.store.journal_mode()
    }
    /// Whether pre_upgrade serializes the rows (the heap store, Motoko's classical
    /// persistence): the stores in stable memory keep them where they are.
    pub fn saved_on_upgrade(self) -> bool {
        self.store_kind().saved_on_upgrade()
    }
    /// What tells two stores of one kind apart besides the journal mode (the encoding), in
    /// the record's `position` column.
    fn variant(self) -> String {
        self.encoding
            .map(|e| e.name().to_string())
            .unwrap_or_default()
    }
}

/// The upgrade suite's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub stores: Vec<UpgradeStore>,
    /// Ascending, each at most `rows`.
    pub sizes: Vec<u64>,
    pub rows: u64,
    pub payload_size: u64,
    pub seed: u64,
    pub usd_per_xdr: f64,
    /// The store of the limit run and its payload size, or None.
    pub limit_run: Option<(UpgradeStore, u64)>,
}

impl Config {
    /// One scenario per store, then the limit run.
    fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .stores
            .iter()
            .map(|s| format!("upgrade/{}", s.label()))
            .collect();
        if let Some((store, _)) = self.limit_run {
            keys.push(format!("limit/{}", store.label()));
        }
        keys
    }
}

impl Define for Upgrade {
    type Args = UpgradeArgs;
    type Plan = Config;

    fn plan(args: UpgradeArgs, common: &CommonArgs, matches: &ArgMatches) -> Result<Config> {
        let mut common = common.clone();
        if matches.value_source("journal_modes") != Some(clap::parser::ValueSource::CommandLine) {
            common.journal_modes = vec![JournalMode::Persist, JournalMode::Off];
        }
        super::shared::store_selected(&common.stores, <Config as Measure>::SUITE)?;
        // Each store in table order: a serialized one once per --heap-encodings, the
        // others once (SQLite per journal mode).
        let picked = sorted_encodings(&args.heap_encodings)?;
        let mut stores = Vec::new();
        for kind in stores::measured_by(<Config as Measure>::SUITE, &common.stores) {
            match kind.encodings() {
                [] => stores.extend(
                    kind.stores(&common.journal_modes)
                        .into_iter()
                        .map(UpgradeStore::of),
                ),
                all => stores.extend(
                    all.iter()
                        .filter(|e| picked.contains(&e.encoding))
                        .map(|e| UpgradeStore::serialized(kind, e.encoding)),
                ),
            }
        }
        let sizes: Vec<u64> = super::sorted(args.upgrade_sizes)
            .into_iter()
            .filter(|&n| n <= common.rows)
            .collect();
        let limit_run = match args.no_limit_run {
            true => None,
            false => limit_store(&stores).map(|s| (s, args.limit_payload_size)),
        };
        Ok(Config {
            stores,
            sizes,
            rows: common.rows,
            payload_size: common.payload_size,
            seed: common.seed,
            usd_per_xdr: common.usd_per_xdr,
            limit_run,
        })
    }

    const DOCUMENT: fn(&Report) -> Document = document;
    const LIMITS_ARE_FINDINGS: bool = true;
    const READS: Reads = Reads::Except(&["page_cache", "layout"]);
}

/// The store the limit run shows: the first whose upgrade work grows with its rows (the
/// stores in stable memory upgrade in constant work and do not fail below 10,000,000 rows).
fn limit_store(stores: &[UpgradeStore]) -> Option<UpgradeStore> {
    stores.iter().copied().find(|s| s.saved_on_upgrade())
}

impl Measure for Config {
    const SUITE: &'static str = "upgrade";

    /// The modules its stores live in.
    fn modules(&self) -> Vec<ModuleNeed> {
        stores::needs(self.stores.iter().map(|s| s.store_kind()))
    }

    fn validate(&self) -> Result<()> {
        if self.stores.is_empty() {
            bail!("no store selected (--stores and at least one --journal-modes)");
        }
        if self.sizes.is_empty() {
            bail!(
                "no --upgrade-sizes at most --rows ({}): nothing to measure",
                self.rows
            );
        }
        if let Some(&n) = self.sizes.iter().find(|&&n| n < 200) {
            bail!("--upgrade-sizes must be at least 200 (the point lookup reads 100 rows around the middle), got {n}");
        }
        if self.payload_size == 0 {
            bail!("--payload-size must be at least 1");
        }
        if let Some((_, p)) = self.limit_run {
            if p == 0 {
                bail!("--limit-payload-size must be at least 1");
            }
        }
        Ok(())
    }

    fn measure(&self, run: Run<'_>) -> Result<Report> {
        let (session, exec) = (run.session, run.exec);
        let (work, engine_name) = (&session.work, &session.engine_name);
        let hook_charges = match run.engine.replica().and_then(|r| r.memory_tracker) {
            Some(_) => "the memory tracker's page charges",
            None => "the heap dirty-page charge after it",
        };
        let (mut client, installed) = session.install(run.engine, run.wasm)?;
        let base = pool::graph::snapshot(client.engine, client.canister)?;
        // The canister of each other module the stores live in (each store set up in its
        // own copy, as the default module's are).
        let kinds: Vec<StoreKind> = self.stores.iter().map(|s| s.store_kind()).collect();
        let (others, other_units, other_setup) = empty::other_empties(
            &mut client,
            run.modules,
            &kinds,
            work,
            &[],
            &|_| Ok(()),
            new_build,
        )?;
        let mut empties = vec![Empty {
            module: Module::DEFAULT,
            wasm: run.wasm,
            new_build: new_build(run.wasm)?,
            state: base.clone(),
        }];
        empties.extend(others);
        let empties = Empties(empties);
        let keys = self.keys();
        let stores = self.stores.len();
        let indices = exec.indices(keys.len());
        let plan = keys.iter().map(|k| k.clone() + "\n").collect::<String>();
        // The other modules' canisters ran on engines of their own: their setup is this
        // run's work too, and every shard's (`merge` counts a setup once).
        client.executed_instructions += other_setup;
        let setup = client.executed_instructions;
        let outcomes: Vec<Grown> = keys.iter().map(|_| Grown::default()).collect();
        let mut tasks = Vec::new();
        let order = Order {
            serial: exec.jobs <= 1,
            stores,
        };
        // Each scenario's module: its store's.
        let module_of = |i: usize| match self.stores.get(i) {
            Some(s) => s.store_kind().module(),
            None => self
                .limit_run
                .map_or(Module::DEFAULT, |(s, _)| s.store_kind().module()),
        };
        for empty in &empties.0 {
            if indices.iter().any(|&i| module_of(i) == empty.module) {
                tasks.push(steps::compile(&empty.new_build, order.compile()));
            }
        }
        let ctx = Shared {
            cfg: self,
            engine: engine_name,
            empties: &empties,
        };
        for &i in &indices {
            let out = &outcomes[i];
            let task = if i < stores {
                let step = Step {
                    store: self.stores[i],
                    size: 0,
                    from: None,
                    fill_priority: order.fill(i),
                    upgrade_priority: order.upgrade(i),
                };
                grow(&ctx, step, out)
            } else {
                let (store, payload) = self.limit_run.expect("the last scenario is the limit run");
                limit_run::task(&ctx, store, payload, out).priority(order.limit_run())
            };
            let made = match module_of(i) == Module::DEFAULT {
                true => std::slice::from_ref(&installed),
                false => &other_units,
            };
            tasks.push(task.after(made));
        }
        pool::graph::run(&mut client, &base, exec, work, run.progress, tasks, None)?;
        let measured = pool::Outcomes::new(
            indices
                .iter()
                .map(|&i| (i, outcomes[i].outcome()))
                .collect(),
            keys.len(),
            pool::sha256_hex(plan.as_bytes()),
            exec.shard,
            setup,
        );
        let mut notes = vec![
            format!("Each store has its own canister, filled once with ids 0, {ID_STEP}, 20, ... in steps to each size N ({}), with a snapshot at each N; the upgrade and the calls around it run on that snapshot, and filling continues from it.", self.sizes.iter().map(|n| thousands(*n)).collect::<Vec<_>>().join(", ")),
            format!("pre_upgrade / post_upgrade: `instructions` is what the engine meters for the hook (its Wasm, System API and stable-memory charges and {hook_charges}); `store_instructions` is ic0.performance_counter(0) inside the hook as the canister reports it (`upgrade_stats`; 0 where the canister does not report it). upgrade: the whole install_code as the replica meters it, to a new build (the same code with another module hash, as a real upgrade ships one), after a checkpoint: pre_upgrade + creating the new execution state (compiling the module, 6,000 instructions per Wasm instruction, plus the vintage's base cost) + post_upgrade, one shared 300B budget; its cycles are 5,000,000 + 1 per instruction (13-node subnet, prepaid at 300B and refunded); hooks carry no cycles of their own. upgrade_same_module (\"same module\"): the same install_code again on the same snapshot, with no checkpoint since the first installed the build: the replica expects the module compiled and (from vintage 2025-03) counts 1/100 of its compilation, so it is the upgrade less 99/100 of the compilation; a user meets it only when installing a module again soon (checkpoints come every few minutes)."),
            "warm_update / warm_query: a 1-row insert in the middle and a 100-key point lookup (query) on the canister as it was filled; first_update / first_query: the same calls right after the upgrade, on a fresh heap (SQLite's page cache, the B-tree header and every other heap cache are gone).".into(),
            format!("Rate limit: after an install_code the replica refuses the next one with IC0209 (\"is rate limited because it executed too many instructions in the previous install_code messages\") until the canister's install_code_debit, raised by the instructions used, has been lowered by {} per round. The embedded engine does not model this debit. No measured upgrade follows another on the same canister: each runs on the snapshot taken after filling, which took at least one more message (round) after the install, so the numbers are those of a user who spaces upgrades apart; the wait column says how many rounds that user waits after each upgrade.", thousands(INSTALL_CODE_RATE_LIMIT)),
        ];
        if let Some(note) = steps::other_modules_note(&kinds) {
            notes.push(note);
        }
        if self.limit_run.is_none() {
            notes.push("No limit run: no store selected saves its rows in pre_upgrade (the stores in stable memory upgrade in work that does not grow with N), or --no-limit-run.".into());
        }
        let header = Header {
            workload: crate::report::Workload {
                rows_before: self.sizes.last().copied().unwrap_or(0),
                seed: self.seed,
                payload_size: self.payload_size,
            },
            prefill: None,
            notes,
        };
        Ok(session.report(&client, header, measured))
    }

    fn memory_estimate(&self, exec: &Exec) -> Option<MemoryEstimate> {
        self.estimate(exec)
    }
}
