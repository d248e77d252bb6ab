//! The users stores' prefill: the stable stores filled with `rows` rows each (ids 0, 10, 20,
//! ...), or the post-prefill state loaded from the cache where a run with the same inputs
//! kept it.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use candid::Principal;
use sha2::{Digest, Sha256};

use super::{Config, ID_STEP, PREFILL_CHUNK};
use crate::bench_canister::{BenchClient, Module};
use crate::engine::disk_cache::{self, Lookup, STATES};
use crate::engine::{Engine, ExportedState};
use crate::report::format::thousands;
use crate::report::work::Kind;
use crate::stores::{self, Prefill};
use crate::suites::pool::{self, Chain, Recorder, State, UnitId};
use crate::suites::scenario::StoreKind;
use crate::suites::Progress;

/// The canister after the prefill, ready for the scenarios.
pub(super) struct Prefilled<'e> {
    pub client: BenchClient<'e>,
    /// The snapshot after the prefill: where every stable store's scenarios start.
    pub base: State,
    /// The units the work after the prefill follows.
    pub units: Vec<UnitId>,
    /// `loaded from the cache` or `run`, for the report.
    pub source: &'static str,
    /// The post-prefill state and the prefill's instructions, to write into the cache at
    /// `(dir, key)` (a task beside the scenarios).
    pub keep: Option<Keep>,
    /// The cache directory and the post-prefill state's key there, when the engine keeps
    /// states: states made from it are kept under keys made from it.
    pub cache: Option<(PathBuf, [u8; 32])>,
    /// The canisters of the run's other modules.
    pub beside: Vec<Beside>,
}

/// The prefilled canister: the module compiled while the cached post-prefill state is read,
/// then the state loaded, or the prefill run (and its state taken for the cache); and
/// beside it the canisters of the modules `beside` (those of the run's other stores), made
/// the same way on the second lane (see [`with_beside`]).
pub(super) fn prefilled<'e>(
    engine: &'e mut dyn Engine,
    wasm: &[u8],
    beside: &[(Module, &[u8])],
    cfg: &Config,
    work: &Recorder,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Prefilled<'e>> {
    // The post-prefill state is kept in the cache (when the engine can export it) and
    // loaded by the next run with the same parameters instead of prefilling again. The
    // file is read while the module compiles. The key is taken while the engine is fresh.
    let cache = cache_of(engine, wasm, cfg, Module::DEFAULT)?;
    let (mut prefilled, made) = with_beside(engine, beside, cfg, work, |engine, compiled| {
        default_prefilled(engine, wasm, cache, cfg, work, progress, compiled)
    })?;
    prefilled.beside = match made {
        Some(made) => made,
        None => beside
            .iter()
            .map(|&(module, wasm)| {
                beside_canister(prefilled.client.engine, module, wasm, cfg, work, None)
            })
            .collect::<Result<_>>()?,
    };
    for b in &prefilled.beside {
        for store in prefilled_stores(cfg, b.module) {
            progress(Progress::Prefill {
                store,
                done: cfg.rows,
                total: cfg.rows,
            });
        }
    }
    Ok(prefilled)
}

/// The default module's canister, prefilled or loaded from `cache`; `module_ready` is
/// opened once its module is compiled (or failed to).
fn default_prefilled<'e>(
    engine: &'e mut dyn Engine,
    wasm: &[u8],
    cache: Option<(PathBuf, [u8; 32])>,
    cfg: &Config,
    work: &Recorder,
    progress: &mut dyn FnMut(Progress<'_>),
    module_ready: &Gate,
) -> Result<Prefilled<'e>> {
    let (compiled, entry, read_unit) = compile_and_read(
        cache.as_ref(),
        work,
        "read the cached post-prefill state",
        || {
            let ready = pool::compile(engine, wasm, work);
            module_ready.open();
            ready
        },
    )?;
    let loaded = entry.and_then(|entry| {
        let after: Vec<UnitId> = [compiled].into_iter().chain(read_unit).collect();
        let (loaded, _) = work.unit(Kind::Install, "load the cached state", &after, || {
            import_prefill(engine, wasm, &entry, cache.as_ref())
        });
        loaded
    });
    let prefill_source = if loaded.is_some() {
        "loaded from the cache"
    } else {
        "run"
    };
    let mut chain = Chain::new(work, &[compiled]);
    // The post-prefill state and the prefill's instructions, to write into the cache (a task
    // beside the scenarios).
    let mut keep: Option<(ExportedState, u64)> = None;
    let client = match loaded {
        Some((canister, executed)) => {
            let mut client = BenchClient::attach(engine, canister);
            client.executed_instructions = executed;
            for store in prefilled_stores(cfg, Module::DEFAULT) {
                progress(Progress::Prefill {
                    store,
                    done: cfg.rows,
                    total: cfg.rows,
                });
            }
            client
        }
        None => {
            chain.step(Kind::Install, "install the canister");
            let mut client = BenchClient::install(engine, wasm)?;
            chain.step(Kind::Fill, "set the payload size");
            client
                .set_payload_size(cfg.payload_size)?
                .value
                .map_err(|e| anyhow!("set_payload_size({}) failed: {e}", cfg.payload_size))?;
            prefill(&mut client, cfg, Module::DEFAULT, &mut chain, progress)?;
            if cache.is_some() {
                chain.step(Kind::Snapshot, "take the post-prefill state for the cache");
                keep = take_prefill(&mut client);
            }
            client
        }
    };
    let canister = client.canister;
    chain.step(Kind::Snapshot, "snapshot after the prefill");
    let base = pool::graph::snapshot(client.engine, canister)?;
    let prefilled = chain.end();
    Ok(Prefilled {
        client,
        base,
        units: prefilled,
        source: prefill_source,
        cache: cache.clone(),
        keep: keep
            .zip(cache)
            .map(|((state, executed), (dir, key))| (state, executed, dir, key)),
        beside: Vec::new(),
    })
}

/// The module compiled (by `compile`) while the cached post-prefill state is read from
/// `cache` (a unit named `read`): the compile's unit, the entry if there is one, and the
/// read's unit.
fn compile_and_read(
    cache: Option<&(PathBuf, [u8; 32])>,
    work: &Recorder,
    read: &str,
    compile: impl FnOnce() -> Result<UnitId>,
) -> Result<(UnitId, Option<disk_cache::Entry>, Vec<UnitId>)> {
    let (compiled, read) = std::thread::scope(|scope| {
        let reading = cache.map(|(dir, key)| {
            scope.spawn(move || {
                pool::record::set_lane(1);
                work.unit(Kind::Install, read, &[], || read_prefill(dir, key))
            })
        });
        let compiled = compile();
        let read = reading.map(|r| {
            r.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        (compiled, read)
    });
    let compiled = compiled?;
    Ok(match read {
        Some((entry, unit)) => (compiled, entry, vec![unit]),
        None => (compiled, None, Vec::new()),
    })
}

/// Another module's canister (its stores' own), made beside the default canister's
/// prefill: its post-prefill state, which every worker takes in.
pub(super) struct Beside {
    pub module: Module,
    /// Its post-prefill state (its SQLite connections reopened), or why the canister
    /// refused to reopen them.
    pub state: Result<State, String>,
    /// The units its scenarios follow.
    pub units: Vec<UnitId>,
    /// The instructions of its install and prefill (or of its cached prefill).
    pub executed: u64,
    /// Its post-prefill state for the cache, as [`Prefilled::keep`].
    pub keep: Option<Keep>,
    /// Its cache directory and post-prefill key, as [`Prefilled::cache`]: its warm starts
    /// are kept under keys made from it (which name its module).
    pub cache: Option<(PathBuf, [u8; 32])>,
}

/// A one-way gate between two threads: [`Gate::wait`] returns once [`Gate::open`] was
/// called (at once after that).
#[derive(Default)]
pub(super) struct Gate {
    open: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
}

impl Gate {
    pub(super) fn open(&self) {
        *self.open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.opened.notify_all();
    }

    pub(super) fn wait(&self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        while !*open {
            open = self.opened.wait(open).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Opens its gate when dropped.
struct OpenOnDrop<'g>(&'g Gate);

impl Drop for OpenOnDrop<'_> {
    fn drop(&mut self) {
        self.0.open();
    }
}

/// A post-prefill state to write into the cache, with the prefill's instructions, at
/// `(dir, key)`.
pub(super) type Keep = (ExportedState, u64, PathBuf, [u8; 32]);

/// What `default` gives, and the canisters of the modules `beside`, each on a fresh engine
/// of its own where the run's engine can make one (then made on the second lane while
/// `default` runs, on one core, and kept in and loaded from the cache as the default
/// canister's state is: a state is only kept of an engine's first and only canister).
/// `None` where no fresh engine can be made (PocketIC, which keeps no states either): the
/// caller then makes them on `default`'s engine after it.
///
/// The others' modules compile after `default`'s (which opens the gate it is given when
/// its module is ready), on the second lane's core alone: the default module's compile
/// has both cores, and the prefill after it, one core's work message after message, is
/// the run's longest chain. Compiled beside it instead, the two compiles shared the cores
/// and the prefill started later by the other module's compile time (1.4 s of 2.8).
fn with_beside<'e, T>(
    engine: &'e mut dyn Engine,
    beside: &[(Module, &[u8])],
    cfg: &Config,
    work: &Recorder,
    default: impl FnOnce(&'e mut dyn Engine, &Gate) -> Result<T>,
) -> Result<(T, Option<Vec<Beside>>)> {
    let compiled = Gate::default();
    let fresh: Option<Vec<Box<dyn Engine + Send>>> =
        beside.iter().map(|_| engine.fresh()).collect();
    let Some(fresh) = fresh else {
        // `default` keeps the engine borrowed in its result (the client): the others wait
        // for it and are made on that engine by the caller.
        return Ok((default(engine, &compiled)?, None));
    };
    std::thread::scope(|scope| {
        // Opened however `default` ends (an error or a panic before its compile too), so
        // the other lane never waits for ever.
        let opened = OpenOnDrop(&compiled);
        let gate = &compiled;
        let making = (!beside.is_empty()).then(|| {
            scope.spawn(move || -> Result<Vec<Beside>> {
                pool::record::set_lane(1);
                beside
                    .iter()
                    .zip(fresh)
                    .map(|(&(module, wasm), mut own)| {
                        beside_canister(own.as_mut(), module, wasm, cfg, work, Some(gate))
                    })
                    .collect()
            })
        });
        let out = default(engine, gate);
        drop(opened);
        let made = match making {
            Some(m) => m
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?,
            None => Vec::new(),
        };
        Ok((out?, Some(made)))
    })
}

/// `module`'s canister on `engine` (a fresh one when the cache can keep it): compiled, then
/// its cached post-prefill state loaded, or installed, its payload size set, its stores
/// filled as the default canister's are and its SQLite connections reopened (their
/// scenarios start on a newly opened connection, as the bench canister's SQLite in a
/// journal mode does), and its state taken for the cache; then snapshotted. With
/// `after_default`, made beside the default canister's prefill: its module compiles once
/// that gate opens, on this thread alone ([`with_beside`]).
pub(super) fn beside_canister(
    engine: &mut dyn Engine,
    module: Module,
    wasm: &[u8],
    cfg: &Config,
    work: &Recorder,
    after_default: Option<&Gate>,
) -> Result<Beside> {
    let name = module.name;
    let cache = cache_of(engine, wasm, cfg, module)?;
    let (compiled, entry, read_unit) = compile_and_read(
        cache.as_ref(),
        work,
        &format!("read the cached post-prefill state of the {name} module"),
        || {
            if let Some(gate) = after_default {
                gate.wait();
            }
            let (ready, compiled) = work.unit(
                Kind::Compile,
                format!("compile the {name} module"),
                &[],
                || match after_default {
                    Some(_) => pool::on_this_core(|| engine.prepare(wasm)),
                    None => engine.prepare(wasm),
                },
            );
            ready.map(|()| compiled)
        },
    )?;
    let after: Vec<UnitId> = [compiled].into_iter().chain(read_unit).collect();
    let loaded = entry.and_then(|entry| {
        let (loaded, _) = work.unit(
            Kind::Install,
            format!("load the cached state of the {name} module"),
            &after,
            || import_prefill(engine, wasm, &entry, cache.as_ref()),
        );
        loaded
    });
    let mut chain = Chain::new(work, &after);
    let mut keep = None;
    let (client, state) = match loaded {
        Some((canister, executed)) => {
            let mut client = BenchClient::attach(engine, canister);
            client.executed_instructions = executed;
            (client, Ok(()))
        }
        None => {
            chain.step(Kind::Install, format!("install the {name} canister"));
            let mut client = BenchClient::install(engine, wasm)?;
            chain.step(
                Kind::Fill,
                format!("set the {name} canister's payload size"),
            );
            client
                .set_payload_size(cfg.payload_size)?
                .value
                .map_err(|e| anyhow!("set_payload_size({}) failed: {e}", cfg.payload_size))?;
            prefill(&mut client, cfg, module, &mut chain, &mut |_| {})?;
            let reopened = reopen(&mut client, cfg, module, &mut chain)?;
            if reopened.is_ok() && cache.is_some() {
                chain.step(
                    Kind::Snapshot,
                    format!("take the post-prefill state of the {name} module for the cache"),
                );
                keep = take_prefill(&mut client);
            }
            (client, reopened)
        }
    };
    chain.step(Kind::Snapshot, format!("snapshot of the {name} module"));
    let state = match state {
        Ok(()) => Ok(pool::graph::snapshot(client.engine, client.canister)?),
        Err(reason) => Err(reason),
    };
    Ok(Beside {
        module,
        state,
        units: chain.end(),
        executed: client.executed_instructions,
        cache: cache.clone(),
        keep: keep
            .zip(cache)
            .map(|((state, executed), (dir, key))| (state, executed, dir, key)),
    })
}

/// Reopens the connections of `module`'s SQLite stores without journal modes, so that
/// their next call is the first on a newly opened connection; the reason, when the
/// canister refuses.
fn reopen(
    client: &mut BenchClient<'_>,
    cfg: &Config,
    module: Module,
    chain: &mut Chain<'_>,
) -> Result<Result<(), String>> {
    for kind in module_kinds(cfg, module) {
        if kind.def().sql && !kind.def().journal_modes {
            let noun = kind.def().noun;
            chain.step(Kind::Snapshot, format!("reopen the connection of {noun}"));
            if let Err(reason) = stores::reopen_sqlite(client, kind)? {
                return Ok(Err(reason));
            }
        }
    }
    Ok(Ok(()))
}

/// The stores the prefill of `module`'s canister fills (and its post-prefill cache keeps),
/// as their methods name them: each store of `module` measured whose prefill is shared,
/// once, in table order. The others (the heap map) are filled after the post-prefill
/// snapshot (see [`Prefill::Alone`]).
pub(super) fn prefilled_stores(cfg: &Config, module: Module) -> Vec<&'static str> {
    module_kinds(cfg, module)
        .into_iter()
        .filter(|k| k.def().prefill == Prefill::Shared)
        .map(StoreKind::stem)
        .collect()
}

/// The stores of `module` that `cfg` measures, each once, in table order.
fn module_kinds(cfg: &Config, module: Module) -> Vec<StoreKind> {
    let mut kinds: Vec<StoreKind> = cfg
        .stores
        .iter()
        .map(|s| s.store_kind())
        .filter(|k| k.module() == module)
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// Fills the stable stores of `module`'s canister with `rows` rows each: ids 0, 10, 20,
/// ..., every row really inserted, each message a unit of `chain`.
pub fn prefill(
    client: &mut BenchClient<'_>,
    cfg: &Config,
    module: Module,
    chain: &mut Chain<'_>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    for store in prefilled_stores(cfg, module) {
        fill(
            client,
            store,
            0,
            cfg.rows,
            PREFILL_CHUNK,
            &mut |to| {
                chain.step(Kind::Fill, fill_name(store, to));
            },
            &mut |done| {
                progress(Progress::Prefill {
                    store,
                    done,
                    total: cfg.rows,
                })
            },
        )?;
    }
    chain.stop();
    Ok(())
}

/// The unit of the fill message that brings `store` to `to` rows.
pub fn fill_name(store: &str, to: u64) -> String {
    format!("fill {store} to {} rows", thousands(to))
}

/// Inserts rows `from..to` of `store` (ids `from * ID_STEP`, then every `ID_STEP`), `chunk`
/// rows per message, and checks that each message inserted all of its rows; `before(to)`
/// precedes the message that fills to `to` rows, `after(done)` follows every message. Every
/// suite that grows a users store fills it here.
pub(in crate::suites) fn fill(
    client: &mut BenchClient<'_>,
    store: &str,
    from: u64,
    to: u64,
    chunk: u64,
    before: &mut dyn FnMut(u64),
    after: &mut dyn FnMut(u64),
) -> Result<()> {
    let mut done = from;
    while done < to {
        let count = chunk.min(to - done);
        before(done + count);
        let out = client.add_users(store, done * ID_STEP, ID_STEP, count)?;
        let report = out
            .value
            .map_err(|e| anyhow!("filling {store} failed at row {done}: {e}"))?;
        if report.rows_inserted != count {
            return Err(anyhow!(
                "filling {store} inserted {} rows instead of {count}",
                report.rows_inserted
            ));
        }
        done += count;
        after(done);
    }
    Ok(())
}

/// Where `module`'s post-prefill state is kept: the cache's folder and the state's key,
/// when there is a cache and the engine can keep states.
fn cache_of(
    engine: &dyn Engine,
    wasm: &[u8],
    cfg: &Config,
    module: Module,
) -> Result<Option<(PathBuf, [u8; 32])>> {
    Ok(
        match (disk_cache::dir(), prefill_key(engine, wasm, cfg, module)?) {
            (Some(dir), Some(key)) => Some((dir, key)),
            _ => None,
        },
    )
}

/// The key of a post-prefill state: the engine's part (the module, the engine's
/// configuration and sources; None if it cannot keep states) and every input of the
/// prefill: the stores, rows, payload size, id step and chunk, and the code that sends it
/// (the source fingerprint of src/ and canisters/types, from build.rs); a module other
/// than the default is named, its SQLite connections reopened after the fill.
fn prefill_key(
    engine: &dyn Engine,
    wasm: &[u8],
    cfg: &Config,
    module: Module,
) -> Result<Option<[u8; 32]>> {
    let Some(engine_key) = engine.state_key(wasm)? else {
        return Ok(None);
    };
    let mut h = Sha256::new();
    h.update(b"icbench users prefill\0");
    h.update(engine_key);
    h.update(env!("CARGO_PKG_VERSION"));
    h.update(b"\0");
    h.update(env!("ICBENCH_SOURCE_FINGERPRINT"));
    h.update(format!(
        "\0stores={:?} rows={} payload_size={} id_step={ID_STEP} chunk={PREFILL_CHUNK}",
        prefilled_stores(cfg, module),
        cfg.rows,
        cfg.payload_size
    ));
    if module != Module::DEFAULT {
        h.update(format!("\0module={} reopened", module.name));
    }
    Ok(Some(h.finalize().into()))
}

/// The cached post-prefill state's entry, or None (after saying why if something was
/// wrong) when the prefill must run.
fn read_prefill(dir: &Path, key: &[u8; 32]) -> Option<disk_cache::Entry> {
    match disk_cache::read(dir, STATES, key) {
        Ok(Lookup::Found(entry)) => Some(entry),
        Ok(Lookup::Missing) => None,
        Ok(Lookup::Damaged(e)) => {
            eprintln!("warning: {e:#}; running the prefill");
            None
        }
        Err(e) => {
            disk_cache::warn_once("the cache cannot be read", &e);
            None
        }
    }
}

/// The cached post-prefill state `entry`, imported into the (fresh) engine: the canister and
/// the instructions the prefill executed. None (after saying why) when the entry does not
/// load and the prefill must run.
fn import_prefill(
    engine: &mut dyn Engine,
    wasm: &[u8],
    entry: &disk_cache::Entry,
    cache: Option<&(PathBuf, [u8; 32])>,
) -> Option<(Principal, u64)> {
    let imported = <[u8; 8]>::try_from(entry.meta())
        .map_err(|_| anyhow!("a meta part of {} bytes, not 8", entry.meta().len()))
        .and_then(|executed| {
            let canister = engine.import_state(wasm, entry.payload())?;
            Ok((canister, u64::from_le_bytes(executed)))
        });
    match imported {
        Ok(loaded) => {
            disk_cache::count_hit(STATES);
            Some(loaded)
        }
        Err(e) => {
            disk_cache::count_rejected(STATES);
            let path = cache
                .map(|(dir, key)| {
                    disk_cache::entry_path(dir, STATES, key)
                        .display()
                        .to_string()
                })
                .unwrap_or_default();
            eprintln!("warning: cache entry {path}: {e:#}; running the prefill");
            None
        }
    }
}

/// Takes the post-prefill state for the cache, with the prefill's instructions; an engine
/// that cannot give it costs one warning.
fn take_prefill(client: &mut BenchClient<'_>) -> Option<(ExportedState, u64)> {
    disk_cache::count_miss(STATES);
    match client.engine.export_state(client.canister) {
        Ok(state) => Some((state, client.executed_instructions)),
        Err(e) => {
            disk_cache::warn_once("the post-prefill state cannot be kept in the cache", &e);
            None
        }
    }
}

/// Keeps the post-prefill state; a cache that cannot take it costs one warning.
pub(super) fn store_prefill(state: ExportedState, executed: u64, dir: &Path, key: &[u8; 32]) {
    let meta = executed.to_le_bytes();
    let stored = disk_cache::write_streamed(dir, STATES, key, &meta, |w| state.write_to(w));
    if let Err(e) = stored {
        disk_cache::warn_once("the post-prefill state cannot be kept in the cache", &e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn a_gate_holds_its_waiter_until_opened_and_a_guard_opens_it_on_drop() {
        let gate = Gate::default();
        let opened = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| {
                gate.wait();
                // The waiter only passes after the other thread said it opened the gate.
                opened.load(Ordering::SeqCst)
            });
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!waiter.is_finished());
            opened.store(true, Ordering::SeqCst);
            gate.open();
            assert!(waiter.join().unwrap());
        });
        // Open stays open.
        gate.wait();

        // A panicking side still opens the gate it guards, so its waiter goes on.
        let gate = Gate::default();
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| gate.wait());
            let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _opened = OpenOnDrop(&gate);
                panic!("the default canister failed");
            }));
            assert!(panicked.is_err());
            waiter.join().unwrap();
        });
    }
}
