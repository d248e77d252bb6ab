//! What the upgrade and scaling suites' tasks both do on a worker: compile the new build the
//! upgrades install ahead of them, snapshot a store at a size (a step of the work log), start
//! a record of a store, and hand their parts of a scenario's outcome into one map, in any
//! order.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use anyhow::Result;

use super::pool::{Lane, State, Task};
use super::scenario::JournalMode;
use crate::report::format::thousands;
use crate::report::work::Kind;
use crate::report::ScenarioResult;

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
