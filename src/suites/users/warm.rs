//! SQLite's warm start states: a store's cold start (a newly opened connection on the
//! prefilled table) after one update message that reads the whole table into the page
//! cache, kept in the cache as its changes to the cold start (about 130 MB of heap at
//! 1,000,000 rows: `users/kept.rs`).

use std::path::PathBuf;

use anyhow::{anyhow, Result};

use super::kept::{self, Recipe};
use super::{check_rows, run_update, Call, Config};
use crate::report::work::Kind;
use crate::suites::pool::{Lane, State};
use crate::suites::scenario::Store;

/// The warm start state of `store` from its cold start `cold` (loaded from the cache at
/// `cache` when a run with the same inputs kept it), and the instructions the read of the
/// table executed.
pub(super) fn warm_start(
    lane: &mut Lane<'_, '_>,
    cfg: &Config,
    store: Store,
    cold: &State,
    cache: Option<&(PathBuf, [u8; 32])>,
) -> Result<(State, u64)> {
    let recipe = Recipe {
        label: format!("the warm start of {}", store.label()),
        key: format!("warm\0{}\0{}", store.label(), read_call(cfg).candid_args()),
    };
    let (warm, executed) = kept::start(lane, cold, cache, &recipe, |lane| {
        read_table(lane, cfg, store, cold).map(Ok)
    })?;
    Ok((warm.map_err(|e| anyhow!(e))?, executed))
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
