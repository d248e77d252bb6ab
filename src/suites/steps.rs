//! What the upgrade and scaling suites' tasks both do: compile the new build the upgrades
//! install ahead of them, snapshot a store at a size (a step of the work log), start a
//! record of a store, and hand their parts of a scenario's outcome into one map, in any
//! order. Their empty canisters are made where every canister is (`suites/canister.rs`).

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use anyhow::{anyhow, Result};
use candid::{Decode, Encode};

use super::pool::{Lane, State, Task};
use super::scenario::{JournalMode, StoreKind};
use crate::bench_canister::{BenchClient, Module, Stats};
use crate::engine::cost::Limits;
use crate::engine::{Engine, ErrorCode};
use crate::report::format::thousands;
use crate::report::work::Kind;
use crate::report::ScenarioResult;

/// The canister's `stats` at `state`, which the lane's canister is in, and whether the
/// replica would refuse it there. A `stats` query that touches more stable memory than a
/// query may (ic-sqlite-vfs's counts its rows with `count(*)`, which reads its whole
/// database: over 1 GiB at 10,000,000 rows) is refused with IC0524; the sizes are then read
/// by the same query on an engine of the run's kind whose queries may touch as much as an
/// update, which reads the state and counts nothing the report shows.
pub(super) fn stats_at(lane: &mut Lane<'_, '_>, state: &State) -> Result<(Stats, bool)> {
    let (engine, canister) = (&mut *lane.client.engine, lane.client.canister);
    let out = engine.query(canister, "stats", &Encode!()?)?;
    let reject = match out.result {
        Ok(bytes) => return Ok((Decode!(&bytes, Stats)?, false)),
        Err(reject) => reject,
    };
    let refused = || anyhow!("stats was rejected: {reject}");
    let (State::Shared(shared), Some(mut reader)) = (state, reader_engine(&*engine)) else {
        return Err(refused());
    };
    if reject.error_code != ErrorCode::CanisterMemoryAccessLimitExceeded {
        return Err(refused());
    }
    let id = reader.adopt(shared)?;
    reader.restore(shared.canister, id)?;
    let stats = BenchClient::attach(reader.as_mut(), shared.canister).stats()?;
    Ok((stats, true))
}

/// An engine of `like`'s kind and configuration whose queries may touch as much stable
/// memory as its updates; `None` where the engine cannot make one.
fn reader_engine(like: &dyn Engine) -> Option<Box<dyn Engine + Send>> {
    let limits = like.limits();
    like.fresh_with(Limits {
        stable_accessed_pages_query: limits.stable_accessed_pages_update,
        stable_dirty_pages_query: limits.stable_dirty_pages_update,
        ..limits
    })
}

/// What a report says of the stores of `kinds` that live in another module than the
/// default one (none: nothing).
pub(super) fn other_modules_note(kinds: &[StoreKind]) -> Option<String> {
    let others: Vec<String> = kinds
        .iter()
        .filter(|k| k.module() != Module::DEFAULT)
        .map(|k| format!("{} (the {} module's)", k.def().noun, k.module().name))
        .collect();
    (!others.is_empty()).then(|| {
        format!(
            "A store of another module, {}, grows in a copy of that module's empty canister, installed on an engine of its own as seed003 makes it, and is upgraded to a new build of that module.",
            others.join(", ")
        )
    })
}

/// The task that compiles `build` so that compiling it overlaps the fills.
pub(super) fn compile(build: &[u8], priority: i64) -> Task<'_> {
    Task::new(Kind::Compile, "compile the new build", move |lane| {
        lane.client.engine.prepare(build)
    })
    .priority(priority)
}

/// Snapshots the lane's canister, `label`'s store at `rows` rows.
pub(super) fn snapshot(lane: &mut Lane<'_, '_>, label: &str, rows: u64) -> Result<State> {
    lane.step(
        Kind::Snapshot,
        format!("snapshot of {label} at {} rows", thousands(rows)),
    );
    lane.snapshot()
}

/// A record of `suite` with its first columns filled in: the store (its kind as the
/// canister's methods name it, and SQLite's journal mode), the position, the operation and
/// the rows in the store before it.
pub(super) fn record(
    suite: &str,
    engine: &str,
    (store, journal_mode): (&str, Option<JournalMode>),
    position: String,
    operation: &str,
    rows: u64,
) -> ScenarioResult {
    ScenarioResult {
        suite: suite.into(),
        engine: engine.into(),
        store: store.into(),
        journal_mode: journal_mode.map(|m| m.to_string()).unwrap_or_default(),
        position,
        operation: operation.into(),
        rows_before: rows,
        ..ScenarioResult::default()
    }
}

/// A scenario's parts as its tasks hand them in, keyed so that reading them in key order
/// gives the order of one worker measuring them one after the other.
pub(super) struct Parts<K, V>(Mutex<BTreeMap<K, V>>);

impl<K: Ord, V> Default for Parts<K, V> {
    fn default() -> Self {
        Parts(Mutex::new(BTreeMap::new()))
    }
}

impl<K: Ord, V> Parts<K, V> {
    pub(super) fn put(&self, key: K, value: V) {
        self.lock().insert(key, value);
    }

    /// Every part handed in so far, in key order; the map is left empty.
    pub(super) fn take(&self) -> BTreeMap<K, V> {
        std::mem::take(&mut *self.lock())
    }

    /// A task that panicked while holding the map left its parts whole: read on.
    pub(super) fn lock(&self) -> MutexGuard<'_, BTreeMap<K, V>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
