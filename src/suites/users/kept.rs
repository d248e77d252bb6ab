//! The starts a store's scenarios begin from that its canister's post-prefill state does
//! not hold as it is: SQLite in a journal mode, set on a fresh connection, and SQLite's warm
//! start (`users/warm.rs`). Each is made from another state by a message or two, kept in the
//! cache as its changes to that state (`Engine::export_state_delta`), and loaded by the next
//! run with the same inputs instead of running its messages again; its instructions count
//! as setup the same whether made or loaded.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use sha2::{Digest, Sha256};

use crate::engine::disk_cache::{self, Lookup, WARM};
use crate::report::work::Kind;
use crate::suites::pool::{Lane, State, Task};

/// Added to the priority of what a start's task spawns (its warm start, its scenarios,
/// writing it into the cache), so that it goes before the next start: a worker finishes one
/// start's work, and lets its state go, before it makes another (each SQLite mode's start and
/// warm start is 119 MB at 1,000,000 rows; made all first, they were all alive at once).
pub(super) const SPAWNED: i64 = 100;

/// Priority of writing a start into the cache: no scenario waits for it, but it holds the
/// state until it ran.
const KEEP_START: i64 = SPAWNED + 20;

/// A start made from another state.
pub(super) struct Recipe {
    /// What it is, for the work log and warnings ("the warm start of SQLite DELETE").
    pub label: String,
    /// What decides it besides the state it is made from: the messages that make it.
    pub key: String,
}

/// The start `recipe` made from `base` (the state `make` starts from; `make` restores it
/// itself): loaded from the cache at `cache` (the post-prefill state's directory and key)
/// when a run with the same inputs kept it, else made by `make` and a task spawned that
/// keeps it. A refusal (the inner error) is never kept. Returns the start and the
/// instructions its messages executed, which are added to the lane's client either way.
pub(super) fn start(
    lane: &mut Lane<'_, '_>,
    base: &State,
    cache: Option<&(PathBuf, [u8; 32])>,
    recipe: &Recipe,
    make: impl FnOnce(&mut Lane<'_, '_>) -> Result<Result<State, String>>,
) -> Result<(Result<State, String>, u64)> {
    let cache = cache.map(|(dir, prefill)| (dir.clone(), key(prefill, recipe)));
    if let Some((dir, key)) = &cache {
        if let Some((state, executed)) = load(lane, dir, key, base, &recipe.label)? {
            return Ok((Ok(state), executed));
        }
    }
    let before = lane.client.executed_instructions;
    let made = make(lane)?;
    let executed = lane.client.executed_instructions - before;
    if let (Some((dir, key)), Ok(state)) = (cache, &made) {
        disk_cache::count_miss(WARM);
        keep(lane, state, base, executed, dir, key, &recipe.label);
    }
    Ok((made, executed))
}

/// Spawns the task that writes `state`, as its changes to `base`, into the cache.
fn keep(
    lane: &mut Lane<'_, '_>,
    state: &State,
    base: &State,
    executed: u64,
    dir: PathBuf,
    key: [u8; 32],
    label: &str,
) {
    let delta = lane
        .local(state)
        .and_then(|s| Ok((s, lane.local(base)?)))
        .and_then(|(s, b)| lane.client.engine.export_state_delta(s, b));
    let delta = match delta {
        Ok(delta) => delta,
        Err(e) => return disk_cache::warn_once("a start cannot be kept in the cache", &e),
    };
    lane.spawn(
        Task::new(
            Kind::Other,
            format!("keep {label} in the cache"),
            move |_| {
                let meta = executed.to_le_bytes();
                let stored =
                    disk_cache::write_streamed(&dir, WARM, &key, &meta, |w| delta.write_to(w));
                if let Err(e) = stored {
                    disk_cache::warn_once("a start cannot be kept in the cache", &e);
                }
                Ok(())
            },
        )
        .priority(KEEP_START),
    );
}

/// The key of a start: the post-prefill state's (every input of the table) and the recipe.
fn key(prefill: &[u8; 32], recipe: &Recipe) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"icbench users start\0");
    h.update(prefill);
    h.update(recipe.key.as_bytes());
    h.finalize().into()
}

/// The kept start at `key` on top of `base`, with the instructions its messages executed;
/// None (after saying why if something was wrong) when it must be made.
fn load(
    lane: &mut Lane<'_, '_>,
    dir: &Path,
    key: &[u8; 32],
    base: &State,
    label: &str,
) -> Result<Option<(State, u64)>> {
    let entry = match disk_cache::read(dir, WARM, key) {
        Ok(Lookup::Found(entry)) => entry,
        Ok(Lookup::Missing) => return Ok(None),
        Ok(Lookup::Damaged(e)) => {
            eprintln!("warning: {e:#}; making {label} again");
            return Ok(None);
        }
        Err(e) => {
            disk_cache::warn_once("the cache cannot be read", &e);
            return Ok(None);
        }
    };
    lane.step(Kind::Install, format!("load {label}"));
    let local = lane.local(base)?;
    let imported = <[u8; 8]>::try_from(entry.meta())
        .map_err(|_| anyhow!("a meta part of {} bytes, not 8", entry.meta().len()))
        .and_then(|executed| {
            let id = lane
                .client
                .engine
                .import_state_delta(local, (&entry).into())?;
            Ok((id, u64::from_le_bytes(executed)))
        });
    match imported {
        Ok((id, executed)) => {
            disk_cache::count_hit(WARM);
            lane.client.executed_instructions += executed;
            Ok(Some((lane.keep(base.canister(), id)?, executed)))
        }
        Err(e) => {
            disk_cache::count_rejected(WARM);
            let path = disk_cache::entry_path(dir, WARM, key);
            eprintln!(
                "warning: cache entry {}: {e:#}; making {label} again",
                path.display()
            );
            Ok(None)
        }
    }
}
