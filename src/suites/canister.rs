//! The one place that makes a canister: its module compiled, the canister installed, its
//! stores filled ([`fill`]: every suite that grows a users store fills it there, each
//! message sent for the state it leaves), its post-prefill state kept in the cache and
//! loaded from it by the next run with the same inputs ([`state`]), its SQLite connections
//! reopened, and the canister snapshotted. [`make_all`] makes a run's canisters, each on an
//! engine of its own where the run's engine can make one, side by side on the run's
//! workers, the fills the cache lacks in worker processes ([`forked`]); the users suites
//! say which canisters their layout holds (`users/layout.rs`). The upgrade and scaling
//! suites start each store from its module's empty canister ([`empty`]) and grow it with
//! [`fill`] on their own tasks, a snapshot at each size.

use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::{anyhow, Result};

use crate::bench_canister::{BenchClient, Module};
use crate::engine::{Engine, ExportedState};
use crate::report::work::Kind;
use crate::stores;
use crate::suites::pool::{self, Chain, Recorder, State, UnitId};
use crate::suites::scenario::StoreKind;
use crate::suites::Progress;

pub(super) mod empty;
pub(super) mod fill;
mod forked;
pub(super) mod state;

pub(in crate::suites) use fill::{
    fill, fill_name, fill_until_rejected, rows_per_message, Fill, ID_STEP,
};
use state::{cache_of, compile_and_read, import_prefill, take_prefill};
pub(in crate::suites) use state::{store_prefill, Keep};

/// What a canister's stores are filled with: `rows` rows each (ids 0, 10, 20, ...) of
/// `payload_size` bytes. It decides the state, and so the cached state's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::suites) struct Filling {
    pub rows: u64,
    pub payload_size: u64,
}

/// A canister to make: its module and the stores it holds.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::suites) struct Canister {
    pub module: Module,
    /// The stores its prefill fills, in table order.
    pub filled: Vec<StoreKind>,
    /// The stores filled after its snapshot, each in a copy of its own (the seed layout's
    /// heap map: see [`stores::Prefill::Alone`]).
    pub after: Vec<StoreKind>,
    /// How the work log names it: the store a canister of its own holds, else its module.
    pub name: &'static str,
}

impl Canister {
    /// Whether `kind` is measured from this canister.
    pub fn holds(&self, kind: StoreKind) -> bool {
        self.filled.contains(&kind) || self.after.contains(&kind)
    }

    /// What its fill costs, for the order canisters are made in (the longest first).
    pub fn fill_cost(&self) -> i64 {
        self.filled.iter().map(|k| k.def().memory.fill_cost).sum()
    }
}

/// A canister made: its state after the prefill, and what the run needs to know of it.
pub(in crate::suites) struct Made {
    pub canister: Canister,
    /// Its snapshot after the prefill.
    pub snapshot: State,
    /// Whether its stores can be measured from the snapshot: the reason when the canister
    /// refused to reopen a SQLite connection.
    pub usable: Result<(), String>,
    /// The units its stores' work follows.
    pub units: Vec<UnitId>,
    /// The instructions of its install and prefill (or of its cached prefill).
    pub executed: u64,
    /// Whether its post-prefill state came from the cache.
    pub loaded: bool,
    /// Its post-prefill state, to write into the cache (a task beside the scenarios).
    pub keep: Option<Keep>,
    /// Its cache directory and post-prefill key, when the engine keeps states: its stores'
    /// warm starts are kept under keys made from it.
    pub cache: Option<(PathBuf, [u8; 32])>,
}

impl Made {
    /// The state its stores start from, or why the canister refused them.
    pub fn start(&self) -> Result<State, String> {
        self.usable.clone().map(|()| self.snapshot.clone())
    }
}

/// Makes every canister of `canisters` (`module` gives each one's bytes). Each on a fresh
/// engine of its own where `engine` can make one (every canister then has the same id, the
/// first, as a run of its store alone gives it), side by side on up to `jobs` workers, the
/// calling thread reporting its fills' progress: fills in worker processes where they can
/// run there ([`forked`]), the rest on threads. Else one after another on `engine`. The
/// results are in the order of `canisters`.
pub(in crate::suites) fn make_all<'m>(
    engine: &mut dyn Engine,
    canisters: &[Canister],
    module: &dyn Fn(Module) -> Result<&'m [u8]>,
    filling: Filling,
    jobs: usize,
    work: &Recorder,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<Made>> {
    let fresh: Option<Vec<Box<dyn Engine + Send>>> =
        canisters.iter().map(|_| engine.fresh()).collect();
    let Some(fresh) = fresh else {
        return canisters
            .iter()
            .map(|c| make(engine, c, module(c.module)?, filling, work, progress, false))
            .collect();
    };
    let wasms: Vec<&[u8]> = canisters
        .iter()
        .map(|c| module(c.module))
        .collect::<Result<_>>()?;
    let makes = Makes {
        canisters,
        wasms,
        engines: fresh.into_iter().map(|e| Mutex::new(Some(e))).collect(),
        filling,
        work,
    };
    let mut elsewhere = vec![false; canisters.len()];
    for i in forked::fill(engine, &makes, jobs, progress)?.unwrap_or_default() {
        elsewhere[i] = true;
    }
    let indices: Vec<usize> = (0..canisters.len()).collect();
    let mut workers: Vec<usize> = (1..jobs.clamp(1, indices.len().max(1))).collect();
    let reported = Mutex::new(Vec::new());
    let rest = pool::in_parallel(
        &mut workers,
        &mut |i| makes.make(i, progress, elsewhere[i]),
        &indices,
        &|&mut lane, i| {
            pool::record::set_lane(lane);
            let made = makes.make(i, &mut |_| {}, elsewhere[i]);
            reported.lock().unwrap_or_else(|e| e.into_inner()).push(i);
            made
        },
        &mut |_| {},
    )?;
    // The fills of the other threads, as done (or loaded).
    for i in reported.into_inner().unwrap_or_else(|e| e.into_inner()) {
        for kind in &canisters[i].filled {
            progress(prefilled(kind.name(), filling, rest[i].loaded));
        }
    }
    Ok(rest)
}

/// The canisters of a run, each with its module's bytes and a fresh engine of its own,
/// taken by the one process or thread that makes the canister.
struct Makes<'a> {
    canisters: &'a [Canister],
    wasms: Vec<&'a [u8]>,
    engines: Vec<Mutex<Option<Box<dyn Engine + Send>>>>,
    filling: Filling,
    work: &'a Recorder,
}

impl Makes<'_> {
    /// Canister `i`'s engine, while no one has taken it.
    fn engine(&self, i: usize) -> std::sync::MutexGuard<'_, Option<Box<dyn Engine + Send>>> {
        self.engines[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    fn take(&self, i: usize) -> Box<dyn Engine + Send> {
        self.engine(i).take().expect("each canister is made once")
    }

    /// Canister `i` made on its engine ([`make`]).
    fn make(
        &self,
        i: usize,
        progress: &mut dyn FnMut(Progress<'_>),
        filled_elsewhere: bool,
    ) -> Result<Made> {
        let mut own = self.take(i);
        let (canister, wasm) = (&self.canisters[i], self.wasms[i]);
        make(
            own.as_mut(),
            canister,
            wasm,
            self.filling,
            self.work,
            progress,
            filled_elsewhere,
        )
    }
}

/// `canister` on `engine`: its module compiled while its cached post-prefill state is
/// read, then that state loaded, or the canister installed and filled
/// ([`install_and_fill`]); then snapshotted. `filled_elsewhere`: a worker process filled it
/// and kept its state in the cache for this one to load (it counts as run, not loaded).
fn make(
    engine: &mut dyn Engine,
    canister: &Canister,
    wasm: &[u8],
    filling: Filling,
    work: &Recorder,
    progress: &mut dyn FnMut(Progress<'_>),
    filled_elsewhere: bool,
) -> Result<Made> {
    let name = canister.name;
    let cache = cache_of(engine, wasm, filling, canister.module, &canister.filled)?;
    let (compiled, entry, read_unit) = compile_and_read(
        cache.as_ref(),
        work,
        &format!("read the cached post-prefill state of the {name} canister"),
        || compile(engine, canister, wasm, work),
    )?;
    let after: Vec<UnitId> = [compiled].into_iter().chain(read_unit).collect();
    let loaded = entry.and_then(|entry| {
        let (loaded, _) = work.unit(
            Kind::Install,
            format!("load the cached state of the {name} canister"),
            &after,
            || import_prefill(engine, wasm, &entry, cache.as_ref(), filled_elsewhere),
        );
        loaded
    });
    let mut chain = Chain::new(work, &after);
    let (client, usable, keep) = match &loaded {
        Some((id, executed)) => {
            let mut client = BenchClient::attach(engine, *id);
            client.executed_instructions = *executed;
            (client, Ok(()), None)
        }
        None => {
            let filled = install_and_fill(
                engine,
                canister,
                wasm,
                filling,
                cache.is_some(),
                &mut chain,
                progress,
            )?;
            (filled.client, filled.usable, filled.keep)
        }
    };
    if loaded.is_some() {
        for kind in &canister.filled {
            progress(prefilled(kind.name(), filling, !filled_elsewhere));
        }
    }
    chain.step(Kind::Snapshot, format!("snapshot of the {name} canister"));
    let snapshot = pool::graph::snapshot(client.engine, client.canister)?;
    Ok(Made {
        canister: canister.clone(),
        snapshot,
        usable,
        units: chain.end(),
        executed: client.executed_instructions,
        loaded: loaded.is_some() && !filled_elsewhere,
        cache: cache.clone(),
        keep: keep
            .zip(cache)
            .map(|((state, executed), (dir, key))| (state, executed, dir, key)),
    })
}

/// A store's prefill as done: loaded from the cache, or run (here or elsewhere).
fn prefilled(store: &str, filling: Filling, loaded: bool) -> Progress<'_> {
    match loaded {
        true => Progress::Loaded { store },
        false => Progress::Prefill {
            store,
            done: filling.rows,
            total: filling.rows,
        },
    }
}

/// Compiles `canister`'s module on `engine` (a unit of `work`).
fn compile(
    engine: &mut dyn Engine,
    canister: &Canister,
    wasm: &[u8],
    work: &Recorder,
) -> Result<UnitId> {
    let module = match canister.module == Module::DEFAULT {
        true => "the module".to_string(),
        false => format!("the {} module", canister.module.name),
    };
    let (ready, compiled) = work.unit(Kind::Compile, format!("compile {module}"), &[], || {
        engine.prepare(wasm)
    });
    ready.map(|()| compiled)
}

/// `canister` installed on `engine`, its payload size set, its stores filled (ids 0, 10,
/// 20, ..., [`rows_per_message`] a message), its collector left with no collection under
/// way (a garbage-collected store's), and its SQLite connections without journal modes
/// reopened (their scenarios start on a newly opened connection, as the bench canister's
/// SQLite in a journal mode does); its state taken for the cache when `for_cache`. Each
/// step a unit of `chain`.
fn install_and_fill<'e>(
    engine: &'e mut dyn Engine,
    canister: &Canister,
    wasm: &[u8],
    filling: Filling,
    for_cache: bool,
    chain: &mut Chain<'_>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Filled<'e>> {
    let name = canister.name;
    chain.step(Kind::Install, format!("install the {name} canister"));
    let mut client = BenchClient::install(engine, wasm)?;
    chain.step(
        Kind::Fill,
        format!("set the {name} canister's payload size"),
    );
    client
        .set_payload_size(filling.payload_size)?
        .value
        .map_err(|e| anyhow!("set_payload_size({}) failed: {e}", filling.payload_size))?;
    for kind in &canister.filled {
        // Sent to its methods' stem, named as `--stores` names it.
        let name = kind.name();
        fill(
            &mut client,
            Fill {
                store: kind.stem(),
                from: 0,
                to: filling.rows,
                payload_size: filling.payload_size,
            },
            &mut |to| {
                chain.step(Kind::Fill, fill_name(name, to));
            },
            &mut |done| {
                progress(Progress::Prefill {
                    store: name,
                    done,
                    total: filling.rows,
                })
            },
        )?;
    }
    if canister.filled.iter().any(|k| k.def().collected) {
        chain.step(
            Kind::Fill,
            format!("let the {name} canister's collector finish"),
        );
        stores::settle_collector(&mut client)?;
    }
    chain.stop();
    let usable = reopen(&mut client, canister, chain)?;
    let mut keep = None;
    if usable.is_ok() && for_cache {
        chain.step(
            Kind::Snapshot,
            format!("take the post-prefill state of the {name} canister for the cache"),
        );
        keep = take_prefill(&mut client);
    }
    Ok(Filled {
        client,
        usable,
        keep,
    })
}

/// A canister [`install_and_fill`] filled: its client, whether its stores can be measured
/// (the reason when the canister refused to reopen a SQLite connection), its state taken
/// for the cache with the prefill's instructions.
struct Filled<'e> {
    client: BenchClient<'e>,
    usable: Result<(), String>,
    keep: Option<(ExportedState, u64)>,
}

/// Reopens the connections of the canister's SQLite stores without journal modes, so that
/// their next call is the first on a newly opened connection; the reason, when the
/// canister refuses.
fn reopen(
    client: &mut BenchClient<'_>,
    canister: &Canister,
    chain: &mut Chain<'_>,
) -> Result<Result<(), String>> {
    for kind in &canister.filled {
        if kind.def().sql && !kind.def().journal_modes {
            let noun = kind.def().noun;
            chain.step(Kind::Snapshot, format!("reopen the connection of {noun}"));
            if let Err(reason) = stores::reopen_sqlite(client, *kind)? {
                return Ok(Err(reason));
            }
        }
    }
    Ok(Ok(()))
}
