//! SQLite's warm start states: a store's cold start (a newly opened connection on the
//! prefilled table) after one update message that reads the whole table into the page
//! cache. Each is kept in the cache as its changes to the cold start it came from (about
//! 130 MB of heap at 1,000,000 rows) and loaded by the next run with the same inputs instead
//! of reading the table again.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use sha2::{Digest, Sha256};

use super::{check_rows, run_update, Call, Config};
use crate::engine::disk_cache::{self, Lookup, WARM};
use crate::report::work::Kind;
use crate::suites::pool::{Lane, State, Task};
use crate::suites::scenario::Store;

/// Priority of writing a warm start into the cache: no scenario waits for it.
const KEEP_WARM: i64 = 20;

/// The warm start state of `store` from its cold start `cold`: loaded from the cache at
/// `cache` (the post-prefill state's directory and key) when a run with the same inputs
/// kept it, else made (and a task spawned that keeps it). Returns the state and the
/// instructions the read of the table executed (also when loaded: a run counts its setup
/// the same whether or not it came from the cache).
pub(super) fn warm_start(
    lane: &mut Lane<'_, '_>,
    cfg: &Config,
    store: Store,
    cold: &State,
    cache: Option<&(PathBuf, [u8; 32])>,
) -> Result<(State, u64)> {
    let cache = cache.map(|(dir, prefill)| (dir.clone(), key(prefill, cfg, store)));
    if let Some((dir, key)) = &cache {
        if let Some(loaded) = load(lane, dir, key, cold, store)? {
            return Ok(loaded);
        }
    }
    let before = lane.client.executed_instructions;
    let warm = read_table(lane, cfg, store, cold)?;
    let executed = lane.client.executed_instructions - before;
    if let Some((dir, key)) = cache {
        disk_cache::count_miss(WARM);
        let delta = lane
            .local(&warm)
            .and_then(|w| Ok((w, lane.local(cold)?)))
            .and_then(|(w, c)| lane.client.engine.export_state_delta(w, c));
        match delta {
            Ok(delta) => lane.spawn(
                Task::new(
                    Kind::Other,
                    format!("keep the warm start of {} in the cache", store.label()),
                    move |_| {
                        let meta = executed.to_le_bytes();
                        let stored = disk_cache::write_streamed(&dir, WARM, &key, &meta, |w| {
                            delta.write_to(w)
                        });
                        if let Err(e) = stored {
                            disk_cache::warn_once("a warm start cannot be kept in the cache", &e);
                        }
                        Ok(())
                    },
                )
                .priority(KEEP_WARM),
            ),
            Err(e) => disk_cache::warn_once("a warm start cannot be kept in the cache", &e),
        }
    }
    Ok((warm, executed))
}

/// The key of a warm start: the post-prefill state's (every input of the table), the
/// store, and the message that reads the table.
fn key(prefill: &[u8; 32], cfg: &Config, store: Store) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"icbench users warm start\0");
    h.update(prefill);
    h.update(format!(
        "{}\0{}",
        store.label(),
        read_call(cfg).candid_args()
    ));
    h.finalize().into()
}

/// The message that reads the whole table: a limit above the table's rows, so the scan
/// runs to the end of the table as a read without a limit does (one stopped at its last
/// row leaves the heap one page different).
fn read_call(cfg: &Config) -> Call {
    Call::Scan {
        offset: 0,
        count: 2 * cfg.rows,
    }
}

/// The cold start `cold` after the message that reads the whole table, snapshotted.
fn read_table(lane: &mut Lane<'_, '_>, cfg: &Config, store: Store, cold: &State) -> Result<State> {
    lane.restore(cold)?;
    let scan = read_call(cfg);
    let reply = run_update(&mut lane.client, store.stem(), &scan)?;
    check_rows(reply, cfg.rows, &scan)
        .map_err(|e| anyhow!("reading {} into its page cache: {e}", store.label()))?;
    lane.step(
        Kind::Snapshot,
        format!("snapshot of {}, warm", store.label()),
    );
    lane.snapshot()
}

/// The kept warm start at `key` on top of `cold`, with the instructions its read executed;
/// None (after saying why if something was wrong) when it must be made.
fn load(
    lane: &mut Lane<'_, '_>,
    dir: &Path,
    key: &[u8; 32],
    cold: &State,
    store: Store,
) -> Result<Option<(State, u64)>> {
    let entry = match disk_cache::read(dir, WARM, key) {
        Ok(Lookup::Found(entry)) => entry,
        Ok(Lookup::Missing) => return Ok(None),
        Ok(Lookup::Damaged(e)) => {
            eprintln!("warning: {e:#}; reading the table again");
            return Ok(None);
        }
        Err(e) => {
            disk_cache::warn_once("the cache cannot be read", &e);
            return Ok(None);
        }
    };
    lane.step(
        Kind::Install,
        format!("load the warm start of {}", store.label()),
    );
    let base = lane.local(cold)?;
    let imported = <[u8; 8]>::try_from(entry.meta())
        .map_err(|_| anyhow!("a meta part of {} bytes, not 8", entry.meta().len()))
        .and_then(|executed| {
            let id = lane
                .client
                .engine
                .import_state_delta(base, entry.payload())?;
            Ok((id, u64::from_le_bytes(executed)))
        });
    match imported {
        Ok((id, executed)) => {
            disk_cache::count_hit(WARM);
            lane.client.executed_instructions += executed;
            Ok(Some((lane.keep(cold.canister(), id)?, executed)))
        }
        Err(e) => {
            disk_cache::count_rejected(WARM);
            let path = disk_cache::entry_path(dir, WARM, key);
            eprintln!(
                "warning: cache entry {}: {e:#}; reading the table again",
                path.display()
            );
            Ok(None)
        }
    }
}
