//! A canister's post-prefill state kept in the cache and loaded by the next run with the
//! same inputs.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use candid::Principal;
use sha2::{Digest, Sha256};

use super::fill::{rows_per_message, ID_STEP};
use super::Filling;
use crate::bench_canister::{BenchClient, Module};
use crate::engine::disk_cache::{self, Lookup, STATES};
use crate::engine::{Engine, ExportedState};
use crate::report::work::Kind;
use crate::suites::pool::{self, Recorder, UnitId};
use crate::suites::scenario::StoreKind;

/// The module compiled (by `compile`) while the cached post-prefill state is read from
/// `cache` (a unit named `read`): the compile's unit, the entry if there is one, and the
/// read's unit.
pub(super) fn compile_and_read(
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

/// A post-prefill state to write into the cache, with the prefill's instructions, at
/// `(dir, key)`.
pub(in crate::suites) type Keep = (ExportedState, u64, PathBuf, [u8; 32]);

/// Where the post-prefill state of a canister of `module` with the stores `filled` is kept:
/// the cache's folder and the state's key, when there is a cache and the engine can keep
/// states.
pub(super) fn cache_of(
    engine: &dyn Engine,
    wasm: &[u8],
    filling: Filling,
    module: Module,
    filled: &[StoreKind],
) -> Result<Option<(PathBuf, [u8; 32])>> {
    Ok(
        match (
            disk_cache::dir(),
            prefill_key(engine, wasm, filling, module, filled)?,
        ) {
            (Some(dir), Some(key)) => Some((dir, key)),
            _ => None,
        },
    )
}

/// The key of a post-prefill state: the engine's part (the module, the engine's
/// configuration and sources; None if it cannot keep states) and every input of the
/// prefill: the stores filled, rows, payload size, id step and chunk, and the code that
/// sends it (the source fingerprint of src/ and canisters/types, from build.rs); a module
/// other than the default is named, its SQLite connections reopened after the fill. A
/// canister holding one store has the key of the seed layout's canister of that store
/// alone: they are the same state.
fn prefill_key(
    engine: &dyn Engine,
    wasm: &[u8],
    filling: Filling,
    module: Module,
    filled: &[StoreKind],
) -> Result<Option<[u8; 32]>> {
    let Some(engine_key) = engine.state_key(wasm)? else {
        return Ok(None);
    };
    let filled: Vec<&str> = filled.iter().map(|k| k.stem()).collect();
    let mut h = Sha256::new();
    h.update(b"icbench users prefill\0");
    h.update(engine_key);
    h.update(env!("CARGO_PKG_VERSION"));
    h.update(b"\0");
    h.update(env!("ICBENCH_SOURCE_FINGERPRINT"));
    h.update(format!(
        "\0stores={filled:?} rows={} payload_size={} id_step={ID_STEP} chunk={}",
        filling.rows,
        filling.payload_size,
        rows_per_message(filling.payload_size)
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
/// load and the prefill must run. `filled_this_run`: a worker process of this run filled
/// it, so the cache's count has it as prefilled, not loaded.
pub(super) fn import_prefill(
    engine: &mut dyn Engine,
    wasm: &[u8],
    entry: &disk_cache::Entry,
    cache: Option<&(PathBuf, [u8; 32])>,
    filled_this_run: bool,
) -> Option<(Principal, u64)> {
    let imported = <[u8; 8]>::try_from(entry.meta())
        .map_err(|_| anyhow!("a meta part of {} bytes, not 8", entry.meta().len()))
        .and_then(|executed| {
            let canister = engine.import_state(wasm, entry.into())?;
            Ok((canister, u64::from_le_bytes(executed)))
        });
    match imported {
        Ok(loaded) => {
            match filled_this_run {
                true => disk_cache::count_miss(STATES),
                false => disk_cache::count_hit(STATES),
            }
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
pub(super) fn take_prefill(client: &mut BenchClient<'_>) -> Option<(ExportedState, u64)> {
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
pub(in crate::suites) fn store_prefill(
    state: ExportedState,
    executed: u64,
    dir: &Path,
    key: &[u8; 32],
) {
    keep_prefill(executed, dir, key, |w| state.write_to(w));
}

/// Keeps the post-prefill state of `canister` on `engine` as it is now, written from the
/// live canister ([`Engine::write_state`]); a cache that cannot take it costs one warning.
pub(super) fn write_prefill(
    engine: &mut dyn Engine,
    canister: Principal,
    executed: u64,
    dir: &Path,
    key: &[u8; 32],
) {
    keep_prefill(executed, dir, key, |w| {
        engine
            .write_state(canister, w)
            .map_err(std::io::Error::other)
    });
}

fn keep_prefill(
    executed: u64,
    dir: &Path,
    key: &[u8; 32],
    payload: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) {
    let meta = executed.to_le_bytes();
    if let Err(e) = disk_cache::write_streamed(dir, STATES, key, &meta, payload) {
        disk_cache::warn_once("the post-prefill state cannot be kept in the cache", &e);
    }
}
