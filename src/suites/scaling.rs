//! The `scaling` suite: how each store's cost moves as it grows from 1,000 to 10,000,000
//! rows. Each store is filled once, incrementally (to 1,000, measure, on to 10,000, measure,
//! ...), in a canister of its own, so its memory is its own. At every size N the same
//! operations run from the snapshot taken at N: a 1-row insert in the middle and at a
//! random position, 100- and 1,000-row inserts in the middle, point lookups of 1 and 100 random keys
//! and a 1,000-row range scan; then the memory the store uses and what keeping it costs.
//!
//! This file holds the options, the plan (`Config`) and its run; the steps it runs and the
//! report's sections are the parts in `scaling/`.

use anyhow::{anyhow, Result};
use clap::{ArgMatches, Args};

use super::canister::empty::{self, Empties, Empty};
use super::canister::{rows_per_message, ID_STEP};
use super::capacity;
use super::scenario::{CacheState, Operation, Position, StoreKind};
use super::shared::{Define, Header, Measure, Reads, Run};
use super::users;
use super::{pool, steps, CommonArgs, Exec, Fitted, MemoryEstimate, MEMORY_BASE};
use crate::bench_canister::{BenchClient, Module};
use crate::engine::cost::CyclesFees;
use crate::report::format::{gigabytes, thousands};
use crate::report::work::Kind;
use crate::report::{Document, Report};
use crate::stores::{self, ModuleNeed};

mod grow;
mod measure;
mod memory;
mod report;

pub use measure::store_stable_bytes;
pub use report::document;

use grow::{fill_cost, grow, Grown, Shared, Step, BAND, COMPILE, CRITICAL_FILL, FILL};

/// The sizes measured, up to `--scaling-max-rows`.
pub const SIZES: [u64; 5] = [1_000, 10_000, 100_000, 1_000_000, 10_000_000];
/// The smallest store the operations fit in (the range scan reads 1,000 rows).
pub const MIN_ROWS: u64 = 1_000;
/// The size whose state the capacity search runs on, when the run reaches it.
pub const CAPACITY_ROWS: u64 = 1_000_000;

/// What is measured at every size, in report order: (position, operation).
pub const OPERATIONS: [(Position, Operation); 7] = [
    (Position::Middle, Operation::Insert { rows: 1 }),
    (Position::Random, Operation::Insert { rows: 1 }),
    (Position::Middle, Operation::Insert { rows: 100 }),
    // For the cost of a million rows sent 1,000 per message (at N = 1,000 half of them
    // land past the last id).
    (Position::Middle, Operation::Insert { rows: 1_000 }),
    (Position::Random, Operation::PointLookups { keys: 1 }),
    (Position::Random, Operation::PointLookups { keys: 100 }),
    (Position::Middle, Operation::RangeScan { rows: 1_000 }),
];

/// `operation` of the memory records: the bytes the store's rows take (over the empty
/// canister) on the heap and in stable memory, and the storage cycles of the whole canister.
pub const HEAP_BYTES: &str = "heap_bytes";
pub const STABLE_BYTES: &str = "stable_bytes";
/// The record of a fill a limit stopped: `batch` the rows it reached, its reason the
/// replica's reject.
pub const FILL_STOPPED: &str = "fill_stopped";
pub const STORAGE_30_DAYS: &str = "storage_30_days";
/// `operation` of the record of the whole install_code that upgrades a store at the largest
/// size (with its `pre_upgrade` and `post_upgrade` records, as the upgrade suite writes them).
pub const UPGRADE: &str = "upgrade";
/// Seconds in the 30 days the storage records cost.
const THIRTY_DAYS: u64 = 30 * 86_400;
/// The subnets the storage records are priced on, as the record's `position`.
const SUBNETS: [(&str, CyclesFees); 2] = [
    ("13-node subnet", CyclesFees::APPLICATION_13),
    ("34-node subnet", CyclesFees::APPLICATION_34),
];

pub struct Scaling;

#[derive(Args)]
#[command(next_help_heading = "scaling")]
pub struct ScalingArgs {
    /// The largest store measured: sizes 1,000, 10,000, ... up to it (and it, if it is not
    /// one of them).
    #[arg(long, default_value_t = 10_000_000)]
    scaling_max_rows: u64,
}

/// The scaling suite's settings. `Debug` shows every setting but `sizes_given`: it is the
/// shards' signature, and shards run with and without the flag at the same sizes are one run.
#[derive(Clone, PartialEq)]
pub struct Config {
    /// Store sizes, ascending.
    pub sizes: Vec<u64>,
    /// The store kinds, each filled once in a canister of its own.
    pub kinds: Vec<StoreKind>,
    pub payload_size: u64,
    pub seed: u64,
    pub usd_per_xdr: f64,
    /// The size at which each store's capacity is searched (real calls up to the
    /// per-message limits), if any.
    pub capacity_at: Option<u64>,
    /// What each store leaves out because it needs more memory alone than the machine has
    /// (see `Config::fit`): empty unless the run was fitted.
    pub skipped: Vec<Skipped>,
    /// `--scaling-max-rows` was given: its sizes are the user's, so a run they do not fit
    /// is refused rather than fitted.
    pub sizes_given: bool,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Every field named: a new one must be shown here or left out on purpose.
        let Config {
            sizes,
            kinds,
            payload_size,
            seed,
            usd_per_xdr,
            capacity_at,
            skipped,
            sizes_given: _,
        } = self;
        f.debug_struct("Config")
            .field("sizes", sizes)
            .field("kinds", kinds)
            .field("payload_size", payload_size)
            .field("seed", seed)
            .field("usd_per_xdr", usd_per_xdr)
            .field("capacity_at", capacity_at)
            .field("skipped", skipped)
            .finish()
    }
}

/// What one store of a run fitted to the machine's memory leaves out.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped {
    pub kind: StoreKind,
    /// Its largest sizes, those its peak alone does not fit at (possibly none).
    pub sizes: Vec<u64>,
    /// Its capacity search, at a size it is measured at.
    pub capacity: bool,
}

/// 1,000, 10,000, ... up to `max`, and `max` itself.
pub fn sizes_up_to(max: u64) -> Vec<u64> {
    let mut sizes: Vec<u64> = SIZES.into_iter().filter(|&n| n <= max).collect();
    if sizes.last() != Some(&max) {
        sizes.push(max);
    }
    sizes
}

impl Config {
    /// A plan of `kinds` at `sizes`, the capacity searched at `capacity_at`, with 100-byte
    /// values, seed 1, 1 USD per XDR and nothing left out: what the tests measure, built in
    /// one place.
    pub fn test_plan(sizes: Vec<u64>, kinds: Vec<StoreKind>, capacity_at: Option<u64>) -> Config {
        Config {
            sizes,
            kinds,
            payload_size: 100,
            seed: 1,
            usd_per_xdr: 1.0,
            capacity_at,
            skipped: Vec::new(),
            sizes_given: false,
        }
    }

    /// The sizes `kind` is measured at: the run's, less those it leaves out.
    pub fn sizes_of(&self, kind: StoreKind) -> Vec<u64> {
        let skipped = self.skipped_of(kind);
        self.sizes
            .iter()
            .copied()
            .filter(|n| !skipped.is_some_and(|s| s.sizes.contains(n)))
            .collect()
    }

    /// The size `kind`'s capacity is searched at, if it is.
    pub fn capacity_of(&self, kind: StoreKind) -> Option<u64> {
        let skipped = self.skipped_of(kind).is_some_and(|s| s.capacity);
        self.capacity_at
            .filter(|n| !skipped && self.sizes_of(kind).contains(n))
    }

    /// The largest size a store is measured at.
    pub fn largest(&self) -> u64 {
        let largest = |&k| self.sizes_of(k).last().copied();
        self.kinds
            .iter()
            .filter_map(largest)
            .max()
            .unwrap_or_default()
    }

    fn skipped_of(&self, kind: StoreKind) -> Option<&Skipped> {
        self.skipped.iter().find(|s| s.kind == kind)
    }

    /// The report's notes: how the stores were filled and measured, the storage fee's
    /// terms (with the modules' sizes), the upgrade at the largest size, and the stores
    /// whose `stats` was read with an update's limit (`beyond`: store and rows).
    fn notes(&self, empties: &Empties<'_>, mut beyond: Vec<(StoreKind, u64)>) -> Vec<String> {
        // The modules of the stores measured, for the storage note.
        let measured: Vec<&Empty> = empties
            .0
            .iter()
            .filter(|e| self.kinds.iter().any(|k| k.module() == e.module))
            .collect();
        let module_bytes: Vec<String> = measured
            .iter()
            .map(|e| match measured.len() {
                1 => format!("the {}-byte module", thousands(e.wasm.len() as u64)),
                _ => format!(
                    "the {}-byte module ({})",
                    thousands(e.wasm.len() as u64),
                    e.module.name
                ),
            })
            .collect();
        let largest = self.largest();
        let mut notes = vec![
            format!(
                "Each store is filled once, in a canister of its own: ids 0, {ID_STEP}, 20, ... up to each size N in turn ({} rows per message), and every operation at N starts from the snapshot taken at N.",
                thousands(rows_per_message(self.payload_size))
            ),
            "SQLite is filled in the journal mode the canister opens it with (its default) and measured in that mode and in OFF, each set on a fresh connection at each size (a cold page cache, as in seed003).".into(),
            "Store instructions: ic0.performance_counter(0) around the store work inside the canister. Inserts are updates, reads are queries.".into(),
            format!(
                "Memory per row: heap bytes are the canister's heap at N over the same canister empty. The heap is Wasm memory, which never shrinks: a high-water mark (SQLite's grows with its page cache and file system). Stable bytes are the store's own size: the StableBTreeMap's virtual memory (its pages, as the memory manager counts them), SQLite's database file (page_count × page_size), 0 for the heap map (its rows live on the heap between upgrades). The canister's stable memory itself grows in the memory manager's buckets of 128 pages (8 MiB), which is what the storage fee charges: storage is the whole canister (heap, stable memory in whole buckets and {}) for 30 days at 127,000 cycles per GiB per second, plus, from replica vintage 2026-05, 10,000 cycles per second for the canister (13 nodes; 34 nodes scaled by 34/13); USD at {} per XDR.",
                module_bytes.join(" or "),
                self.usd_per_xdr
            ),
            format!(
                "Upgrade: at {} rows each store's canister, as filled, is upgraded to a new build of its module (the same code, another module hash) after a checkpoint, as `--suite upgrade` does it and as a real upgrade ships one: one install_code (pre_upgrade, creating the execution state with the module's whole compilation, post_upgrade, one 300B budget), charged instructions and 5,000,000 + 1 cycle per instruction on 13 nodes. SQLite is upgraded once, filed under the journal mode it was filled in. A failed upgrade (a replica limit) is recorded with the replica's error and does not compete in the decision table.",
                thousands(largest)
            ),
        ];
        if let Some(note) = steps::other_modules_note(&self.kinds) {
            notes.push(note);
        }
        if self
            .kinds
            .iter()
            .any(|k| k.def().page_cache && !k.def().journal_modes)
        {
            notes.push("A SQLite store without journal modes is measured at each size on a newly opened connection (its connections reopened after the fill: a cold page cache, as a journal mode set on a fresh connection leaves the other SQLite).".into());
        }
        if !self.skipped.is_empty() {
            let left_out: Vec<String> = self
                .skipped
                .iter()
                .map(|s| format!("{} {}", s.kind.def().noun, self.skipped_needs(s)))
                .collect();
            notes.push(format!(
                "Left out for want of memory: {}. Each figure, the {} every run needs included, is more than the run had available; `--ignore-memory-estimate` measures them. Such a store is upgraded at the largest size it was measured at.",
                left_out.join("; "),
                gigabytes(MEMORY_BASE)
            ));
        }
        beyond.sort();
        if !beyond.is_empty() {
            let at: Vec<String> = beyond
                .iter()
                .map(|(k, n)| format!("{} at {} rows", k.def().noun, thousands(*n)))
                .collect();
            notes.push(format!("The canister's `stats` query (which counts the rows) touches more stable memory than a query may ({}): the replica refuses it (IC0524), so its sizes were read by the same query with an update's limit, on an engine that only reads them.", at.join(", ")));
        }
        notes
    }

    /// The usual users-suite settings for a store of `rows` rows: the ids and arguments
    /// every users scenario draws are the ones seed003 would draw at that size.
    fn users_at(&self, rows: u64) -> users::Config {
        users::Config {
            rows,
            stores: Vec::new(),
            payload_size: self.payload_size,
            seed: self.seed,
            usd_per_xdr: self.usd_per_xdr,
            // Scaling measures a newly opened connection at every size.
            caches: vec![CacheState::Cold],
            // Each store grows in a canister of its own.
            layout: users::Layout::Alone,
        }
    }
}

impl Define for Scaling {
    type Args = ScalingArgs;
    type Plan = Config;

    fn plan(args: ScalingArgs, common: &CommonArgs, matches: &ArgMatches) -> Result<Config> {
        super::shared::store_selected(&common.stores, <Config as Measure>::SUITE)?;
        let kinds = stores::measured_by(<Config as Measure>::SUITE, &common.stores);
        let sizes = sizes_up_to(args.scaling_max_rows);
        let capacity_at = sizes.contains(&CAPACITY_ROWS).then_some(CAPACITY_ROWS);
        Ok(Config {
            sizes,
            kinds,
            payload_size: common.payload_size,
            seed: common.seed,
            usd_per_xdr: common.usd_per_xdr,
            capacity_at,
            skipped: Vec::new(),
            sizes_given: matches.value_source("scaling_max_rows")
                == Some(clap::parser::ValueSource::CommandLine),
        })
    }

    const DOCUMENT: fn(&Report) -> Document = document;
    const LIMITS_ARE_FINDINGS: bool = true;
    // Its sizes are its own (--scaling-max-rows); SQLite runs in its own journal mode.
    const READS: Reads = Reads::Only(&["stores", "payload_size", "seed", "usd_per_xdr"]);
}

impl Measure for Config {
    const SUITE: &'static str = "scaling";

    /// The modules its stores live in.
    fn modules(&self) -> Vec<ModuleNeed> {
        stores::needs(self.kinds.iter().copied())
    }

    fn validate(&self) -> Result<()> {
        if self.kinds.is_empty() {
            return Err(anyhow!("no store selected (--stores)"));
        }
        stores::refuse_value_size(self.kinds.iter().copied(), self.payload_size)?;
        match self.sizes.first() {
            Some(&n) if n >= MIN_ROWS => Ok(()),
            first => Err(anyhow!(
                "--scaling-max-rows must be at least {} (the range scan reads 1,000 rows), got {}",
                thousands(MIN_ROWS),
                first.copied().unwrap_or_default()
            )),
        }
    }

    fn measure(&self, run: Run<'_>) -> Result<Report> {
        let (session, exec, wasm) = (run.session, run.exec, run.wasm);
        let (work, engine_name) = (&session.work, &session.engine_name);
        let (mut client, installed) = session.install(run.engine, wasm)?;
        let payload_size = self.payload_size;
        let set_payload_size = |client: &mut BenchClient<'_>| -> Result<()> {
            client
                .set_payload_size(payload_size)?
                .value
                .map_err(|e| anyhow!("set_payload_size({payload_size}) failed: {e}"))?;
            Ok(())
        };
        let (empty, ready) = work.unit(Kind::Fill, "set the payload size", &[installed], || {
            set_payload_size(&mut client)?;
            let canister = client.canister;
            pool::graph::snapshot(client.engine, canister)
        });
        let empty = empty?;
        // The canister of each other module the stores live in, its payload size set too.
        let (others, other_units, other_setup) = empty::other_empties(
            &mut client,
            run.modules,
            &self.kinds,
            work,
            &[],
            &set_payload_size,
            super::upgrade::new_build,
        )?;
        let mut empties = vec![Empty {
            module: Module::DEFAULT,
            wasm,
            new_build: super::upgrade::new_build(wasm)?,
            state: empty.clone(),
        }];
        empties.extend(others);
        let empties = Empties(empties);
        // One store per scenario of the plan: each fills its own copy of the empty canister
        // (`--shard` splits by store). The fills run side by side, and what is measured at
        // each size runs beside the fill going on.
        let kinds = &self.kinds;
        let indices = exec.indices(kinds.len());
        let plan = kinds
            .iter()
            .map(|k| k.as_str().to_string() + "\n")
            .collect::<String>();
        let grown: Vec<Grown> = kinds.iter().map(|_| Grown::default()).collect();
        // The other modules' canisters ran on engines of their own: their setup is this
        // run's work too, and every shard's (`merge` counts a setup once).
        client.executed_instructions += other_setup;
        let setup = client.executed_instructions;
        let ctx = Shared {
            cfg: self,
            engine: engine_name,
            empties: &empties,
            stats_beyond_query_limit: Default::default(),
        };
        let mut tasks = Vec::new();
        let priority = COMPILE + (kinds.len() as i64 + 1) * BAND;
        for e in &empties.0 {
            if indices.iter().any(|&i| kinds[i].module() == e.module) {
                tasks.push(steps::compile(&e.new_build, priority));
            }
        }
        let costliest = indices.iter().map(|&i| fill_cost(kinds[i])).max();
        let critical = |i: usize| exec.jobs > 1 && Some(fill_cost(kinds[i])) == costliest;
        for (rank, i) in self.band_order(&indices, critical).into_iter().enumerate() {
            let band = (indices.len() - rank) as i64 * BAND;
            let step = Step {
                kind: kinds[i],
                size: 0,
                filled: 0,
                from: None,
                base: None,
                priority: band + if critical(i) { CRITICAL_FILL } else { FILL },
                band,
            };
            let made = match kinds[i].module() == Module::DEFAULT {
                true => std::slice::from_ref(&ready),
                false => &other_units,
            };
            tasks.push(grow(&ctx, step, &grown[i]).after(made));
        }
        pool::graph::run(&mut client, &empty, exec, work, run.progress, tasks, None)?;
        let outcomes = pool::Outcomes::new(
            indices
                .iter()
                .map(|&i| (i, grown[i].records().into()))
                .collect(),
            kinds.len(),
            pool::sha256_hex(plan.as_bytes()),
            exec.shard,
            setup,
        );
        let beyond = std::mem::take(
            &mut *ctx
                .stats_beyond_query_limit
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        );
        let notes = self.notes(&empties, beyond);
        let header = Header {
            workload: crate::report::Workload {
                rows_before: self.largest(),
                seed: self.seed,
                payload_size: self.payload_size,
            },
            prefill: None,
            notes,
        };
        let mut report = session.report(&client, header, outcomes);
        if self.capacity_at.is_some() {
            report.set_extra(
                capacity::LIMITS,
                &capacity::RunLimits::from(&client.engine.limits()),
            );
        }
        Ok(report)
    }

    fn memory_estimate(&self, exec: &Exec) -> Option<MemoryEstimate> {
        self.estimate(exec)
    }

    fn fit_to(&self, available: u64, exec: &Exec) -> Option<Fitted> {
        let (fitted, lines) = self.fit(available, exec)?;
        Some(Fitted {
            plan: Box::new(fitted),
            lines,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_the_decades_up_to_the_maximum_and_the_maximum() {
        assert_eq!(sizes_up_to(10_000_000), SIZES.to_vec());
        assert_eq!(sizes_up_to(1_000), vec![1_000]);
        assert_eq!(sizes_up_to(25_000), vec![1_000, 10_000, 25_000]);
    }
}
