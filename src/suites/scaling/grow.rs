//! The scaling suite's tasks: each store's fill, size by size, and at each size what is
//! measured there (each mode's operations, the memory records, the capacity searches), the
//! upgrade at the largest size; their priorities, and how a store's records are collected.

use anyhow::{anyhow, Result};

use super::measure::{fill_stopped, measure, memory_records};
use super::report::operation_title;
use super::{Config, OPERATIONS};
use crate::bench_canister::{BenchClient, Stats};
use crate::engine::cost::{Replica, WASM_PAGE_SIZE};
use crate::report::format::thousands;
use crate::report::work::Kind;
use crate::report::ScenarioResult;
use crate::stores;
use crate::suites::canister::{self, empty::Empties};
use crate::suites::capacity;
use crate::suites::pool::{Join, State, Task};
use crate::suites::scenario::{JournalMode, Store, StoreKind};
use crate::suites::steps::{self, Parts};
use crate::suites::upgrade::{self, UpgradeStore};

/// The journal modes a SQLite store is measured in at each size: the one it was filled in
/// (the canister's default), then OFF.
fn sqlite_modes(default: JournalMode) -> Vec<JournalMode> {
    let mut modes = vec![default];
    if default != JournalMode::Off {
        modes.push(JournalMode::Off);
    }
    modes
}

/// What every task of the run reads.
pub(super) struct Shared<'a> {
    pub(super) cfg: &'a Config,
    pub(super) engine: &'a str,
    /// The installed canister of each module, empty (its payload size set), with its module
    /// and the new build its upgrades install.
    pub(super) empties: &'a Empties<'a>,
    /// The stores and sizes whose `stats` query the replica would refuse (see
    /// [`steps::stats_at`]), for the report's notes.
    pub(super) stats_beyond_query_limit: std::sync::Mutex<Vec<(StoreKind, u64)>>,
}

/// A store's records as its tasks hand them in, kept in the order one worker measuring
/// them one after the other would give: by size, then the memory records, each mode's
/// operations and capacity searches, and the upgrade last.
pub(super) type Grown = Parts<(usize, usize, usize), Vec<ScenarioResult>>;

/// Where a store's records go in [`Grown`]: (size, column, part). Column 0 holds the
/// memory records; column `1 + m` the operations (part `1 + op`) and capacity searches
/// (`CAPACITY + message`) of the store's `m`-th mode.
const MEMORY: usize = 0;
const CAPACITY: usize = 100;

impl Grown {
    pub(super) fn records(&self) -> Vec<ScenarioResult> {
        self.take().into_values().flatten().collect()
    }

    /// The records of one mode's operations at one size, in order.
    fn operations(&self, size: usize, column: usize) -> Vec<ScenarioResult> {
        let parts = self.lock();
        (1..=OPERATIONS.len())
            .filter_map(|op| parts.get(&(size, column, op)))
            .flatten()
            .cloned()
            .collect()
    }
}

/// Priorities. Each store's tasks run in a band of their own (see [`BAND`]), so that a store
/// is done (each size measured, its largest upgraded, its states let go) before the next
/// store's fills make more: beside the costliest fill, each other worker holds one store's
/// states, as the estimate has it ([`Config::peak_memory`]). Within a band: the operations
/// on a state first (the state goes with the last of them), then a mode's start, the
/// capacity searches, the fill on to the next size and the upgrade. With more than one
/// worker the costliest fill (the critical path) goes first and never waits.
pub(super) const CRITICAL_FILL: i64 = 100;
pub(super) const COMPILE: i64 = 90;
const OPERATION: i64 = 60;
const MODE_START: i64 = 50;
const SEARCH: i64 = 30;
pub(super) const FILL: i64 = 25;
const UPGRADE_LAST: i64 = 20;
/// The priorities of one store's tasks: the first store's band is the highest.
pub(super) const BAND: i64 = 1_000;

impl Config {
    /// The order of the stores' bands (`indices` into the config's stores): the `critical`
    /// ones first, then the largest peak first, while the critical fills' states are
    /// still small.
    pub(super) fn band_order(
        &self,
        indices: &[usize],
        critical: impl Fn(usize) -> bool,
    ) -> Vec<usize> {
        let mut order = indices.to_vec();
        order.sort_by_key(|&i| {
            (
                std::cmp::Reverse(critical(i)),
                std::cmp::Reverse(self.store_peak(self.kinds[i])),
            )
        });
        order
    }
}

/// What a store's fill costs per row, relative to the others' (the store table's): the
/// costliest selected store's fill is the run's critical path.
pub(super) fn fill_cost(kind: StoreKind) -> i64 {
    kind.def().memory.fill_cost
}

/// How a store's fill goes: after the state `from` (None: the empty canister), on to size
/// `size` of its sizes ([`Config::sizes_of`]).
pub(super) struct Step {
    pub(super) kind: StoreKind,
    pub(super) size: usize,
    pub(super) filled: u64,
    pub(super) from: Option<State>,
    /// The empty canister's stats (its heap and journal mode), once known.
    pub(super) base: Option<Stats>,
    /// The fill's priority in the store's band: [`CRITICAL_FILL`] for the costliest store's
    /// beside other workers, else [`FILL`].
    pub(super) priority: i64,
    /// Added to the priority of every other task of the store (see [`BAND`]).
    pub(super) band: i64,
}

/// The task that fills the store of `kind` to the next size from the state the last one
/// left, snapshots it, spawns what is measured there and the fill on to the next size (or
/// the upgrade at the largest). Each size is a task of its own: from the snapshot, as a
/// worker measuring them one after the other restored it.
pub(super) fn grow<'s>(ctx: &'s Shared<'s>, step: Step, out: &'s Grown) -> Task<'s> {
    let cfg = ctx.cfg;
    let Step {
        kind,
        size,
        filled,
        from,
        base,
        priority,
        band,
    } = step;
    // Its own sizes: a run fitted to the machine's memory leaves some out.
    let sizes = cfg.sizes_of(kind);
    let n = sizes[size];
    let first = format!(
        "{} {} to {} rows",
        if from.is_none() {
            "start"
        } else {
            "go on filling"
        },
        kind.as_str(),
        thousands(n)
    );
    Task::new(Kind::Other, first, move |lane| {
        let base = match (&from, base) {
            (None, _) => {
                lane.restore(&ctx.empties.of(kind).state)?;
                lane.client.stats()?
            }
            (Some(from), Some(base)) => {
                lane.restore(from)?;
                base
            }
            (Some(_), None) => return Err(anyhow!("a fill step without its base stats")),
        };
        let stores = stores_of(kind, &base)?;
        let (client, ctl) = (&mut lane.client, &lane.ctl);
        let stopped = canister::fill_until_rejected(
            client,
            canister::Fill {
                store: kind.stem(),
                from: filled,
                to: n,
                payload_size: cfg.payload_size,
            },
            &mut |to| ctl.step(Kind::Fill, canister::fill_name(kind.stem(), to)),
            &mut |_| {},
        )?;
        if let Some((reached, reject)) = stopped {
            // A limit stopped the store short of `n` rows: that is its answer at `n`, and its
            // largest size is the last it reached, upgraded from there.
            let record = fill_stopped(ctx.engine, stores[0], n, reached, reject);
            out.put((size, MEMORY, 0), vec![record]);
            if let (Some(from), Some(last)) = (from, size.checked_sub(1)) {
                let at = sizes[last];
                lane.spawn(upgrade_task(
                    ctx, out, kind, stores[0], at, from, priority, band,
                ));
            }
            return Ok(());
        }
        drop(from);
        // As the users suites do: every size starts with the collector idle.
        if kind.def().collected {
            ctl.step(Kind::Fill, format!("let {kind}'s collector finish"));
            crate::stores::settle_collector(client)?;
        }
        let at_n = steps::snapshot(lane, kind.as_str(), n)?;
        let (stats, beyond) = steps::stats_at(lane, &at_n)?;
        if beyond {
            ctx.stats_beyond_query_limit
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((kind, n));
        }
        // PocketIC charges by its own replica: priced here by the newest vintage's rules.
        let replica = lane.client.engine.replica().unwrap_or(Replica::NEWEST);
        let module_bytes = ctx.empties.of(kind).wasm.len() as u64;
        out.put(
            (size, MEMORY, 0),
            memory_records(
                cfg,
                &replica,
                ctx.engine,
                stores[0],
                n,
                &base,
                &stats,
                module_bytes,
            ),
        );
        // Rows on the heap (the heap map's): their bytes per row bound an insert.
        let heap_per_row =
            (stats.heap_pages.saturating_sub(base.heap_pages) * WASM_PAGE_SIZE) as f64 / n as f64;
        for (m, &store) in stores.iter().enumerate() {
            let at = Place {
                store,
                size,
                column: 1 + m,
                n,
                heap_per_row: kind.def().rows_on_heap.then_some(heap_per_row),
                band,
            };
            lane.spawn(measure_at(ctx, out, at, at_n.clone()));
        }
        if size + 1 < sizes.len() {
            let next = Step {
                kind,
                size: size + 1,
                filled: n,
                from: Some(at_n),
                base: Some(base),
                priority,
                band,
            };
            lane.spawn(grow(ctx, next, out));
        } else {
            lane.spawn(upgrade_task(
                ctx, out, kind, stores[0], n, at_n, priority, band,
            ));
        }
        Ok(())
    })
    .priority(priority)
}

/// The upgrade of the store at its largest size `n`, from the snapshot `at_n`: the
/// canister as a worker that measured it first left it, its heap a view of the snapshot's.
#[allow(clippy::too_many_arguments)]
fn upgrade_task<'s>(
    ctx: &'s Shared<'s>,
    out: &'s Grown,
    kind: StoreKind,
    store: Store,
    n: u64,
    at_n: State,
    priority: i64,
    band: i64,
) -> Task<'s> {
    let cfg = ctx.cfg;
    let name = format!("upgrade {} at {} rows", kind.as_str(), thousands(n));
    Task::new(Kind::Upgrade, name, move |lane| {
        lane.restore(&at_n)?;
        let new_build = &ctx.empties.of(kind).new_build;
        let records = upgrade_at(&mut lane.client, cfg, ctx.engine, store, n, new_build)?;
        out.put((cfg.sizes.len(), MEMORY, 0), records);
        Ok(())
    })
    .priority(priority.max(band + UPGRADE_LAST))
    .profiled()
    .park()
}

/// The stores a store kind is measured as: in its default journal mode (read from the
/// empty canister's `stats`), then OFF, for a store with journal modes.
fn stores_of(kind: StoreKind, base: &Stats) -> Result<Vec<Store>> {
    if !kind.def().journal_modes {
        return Ok(kind.stores(&[]));
    }
    let default = JournalMode::parse(&base.journal_mode).map_err(|e| {
        anyhow!(
            "the canister's SQLite journal mode {:?}: {e}",
            base.journal_mode
        )
    })?;
    Ok(sqlite_modes(default)
        .into_iter()
        .map(|m| Store::new(kind, Some(m)))
        .collect())
}

/// A mode (a store, SQLite in one journal mode) at one size, and where its measurements go.
#[derive(Clone, Copy)]
struct Place {
    store: Store,
    size: usize,
    column: usize,
    n: u64,
    heap_per_row: Option<f64>,
    /// See [`BAND`].
    band: i64,
}

impl Place {
    /// "<store> at <n> rows", as the names of the mode's tasks say it.
    fn title(&self) -> String {
        format!("{} at {} rows", self.store.label(), thousands(self.n))
    }
}

/// The task that starts `store` at `at_n` (SQLite: its journal mode set on a fresh
/// connection) and spawns its operations there, and its capacity searches after them at
/// the capacity size.
fn measure_at<'s>(ctx: &'s Shared<'s>, out: &'s Grown, at: Place, at_n: State) -> Task<'s> {
    let (cfg, store) = (ctx.cfg, at.store);
    Task::new(Kind::Fill, format!("start {}", at.title()), move |lane| {
        // SQLite in every mode (the fill's included) on a fresh connection, as seed003
        // measures it: the page cache the fill warmed would flatter one mode only. A SQLite
        // store without journal modes on a newly opened connection, for the same reason.
        let kind = store.store_kind();
        let reopened = match store.journal_mode() {
            Some(mode) => {
                lane.restore(&at_n)?;
                Some(stores::set_journal_mode(&mut lane.client, mode)?)
            }
            None if kind.def().page_cache => {
                lane.restore(&at_n)?;
                Some(stores::reopen_sqlite(&mut lane.client, kind)?)
            }
            None => None,
        };
        let start = match reopened {
            Some(Ok(())) => Ok(steps::snapshot(lane, &store.label(), at.n)?),
            Some(Err(reason)) => Err(reason),
            None => Ok(at_n),
        };
        let search = match (&start, cfg.capacity_of(kind)) {
            (Ok(start), Some(c)) if c == at.n => Some(Join::new(
                OPERATIONS.len(),
                capacity_at(ctx, out, at, start.clone()),
            )),
            _ => None,
        };
        for (op, (position, operation)) in OPERATIONS.into_iter().enumerate() {
            let start = start.clone();
            let search = search.clone();
            let name = format!("{}: {}", at.title(), operation_title(position, operation));
            lane.spawn(
                Task::new(Kind::Scenario, name, move |lane| {
                    let r = measure(
                        lane, cfg, ctx.engine, store, at.n, position, operation, &start,
                    )?;
                    out.put((at.size, at.column, 1 + op), vec![r]);
                    if let Some(search) = search {
                        search.arrive(&lane.ctl);
                    }
                    Ok(())
                })
                .priority(at.band + OPERATION)
                .profiled(),
            );
        }
        Ok(())
    })
    .priority(at.band + MODE_START)
}

/// The task that, once a mode's operations at the capacity size are measured, spawns its
/// capacity searches (one per message, independent of each other) on `start`.
fn capacity_at<'s>(ctx: &'s Shared<'s>, out: &'s Grown, at: Place, start: State) -> Task<'s> {
    let (cfg, store) = (ctx.cfg, at.store);
    Task::new(
        Kind::Other,
        format!("capacity of {}", at.title()),
        move |lane| {
            let measured = out.operations(at.size, at.column);
            for (i, message) in capacity::Message::ALL.into_iter().enumerate() {
                let (start, measured) = (start.clone(), measured.clone());
                let name = format!("capacity search: {} {}", store.label(), message.operation());
                lane.spawn(
                    Task::new(Kind::Probe, name, move |lane| {
                        let search = capacity::Context {
                            suite: "scaling",
                            engine: ctx.engine,
                            usd_per_xdr: cfg.usd_per_xdr,
                        };
                        // Its store's canister (the state's: one per module).
                        lane.client.canister = start.canister();
                        let start = lane.local(&start)?;
                        let records = capacity::measure_store(
                            &mut lane.client,
                            &search,
                            store,
                            at.n,
                            start,
                            at.heap_per_row,
                            &measured.iter().collect::<Vec<_>>(),
                            &[message],
                        )?;
                        out.put((at.size, at.column, CAPACITY + i), records);
                        Ok(())
                    })
                    .priority(at.band + SEARCH)
                    .profiled()
                    .park(),
                );
            }
            Ok(())
        },
    )
    .priority(at.band + SEARCH)
}

/// Upgrades the store's canister, as filled to `n` rows, to a new build of its module (a
/// real upgrade ships one, so its compilation is paid in full), as the upgrade suite does
/// it: the whole install_code and its hooks, filed under the mode the store was filled in.
/// A failed upgrade (a replica limit) is a record with the replica's error.
fn upgrade_at(
    client: &mut BenchClient<'_>,
    cfg: &Config,
    engine_name: &str,
    store: Store,
    n: u64,
    new_build: &[u8],
) -> Result<Vec<ScenarioResult>> {
    let (mut records, _, _) = upgrade::upgrade(
        client,
        engine_name,
        UpgradeStore::of(store),
        n,
        cfg.payload_size,
        new_build,
        cfg.usd_per_xdr,
    )?;
    for r in &mut records {
        r.suite = "scaling".into();
        r.position = "-".into();
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_critical_fill_comes_first_then_the_largest_peaks() {
        let cfg = Config::test_plan(
            super::super::sizes_up_to(10_000_000),
            ["heap", "btree", "mo-map", "mo-pure-map", "mo-region"]
                .map(|n| crate::stores::find(n).unwrap())
                .to_vec(),
            Some(super::super::CAPACITY_ROWS),
        );
        // mo-pure-map's fill is the costliest; then mo-map (9.5 GB), mo-region (6.5 GB),
        // the heap map (3.5 GB), the StableBTreeMap (2.1 GB).
        assert_eq!(
            cfg.band_order(&[0, 1, 2, 3, 4], |i| i == 3),
            [3, 2, 4, 0, 1]
        );
        assert_eq!(cfg.band_order(&[0, 1, 4], |_| false), [4, 0, 1]);
    }

    #[test]
    fn sqlite_is_measured_in_its_default_mode_then_off() {
        assert_eq!(
            sqlite_modes(JournalMode::Persist),
            vec![JournalMode::Persist, JournalMode::Off]
        );
        assert_eq!(sqlite_modes(JournalMode::Off), vec![JournalMode::Off]);
    }
}
