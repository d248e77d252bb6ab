//! What the upgrade and scaling suites' tasks both do on a worker: compile the new build the
//! upgrades install ahead of them, snapshot a store at a size (a step of the work log), and
//! hand their parts of a scenario's outcome into one map, in any order.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use anyhow::Result;

use super::pool::{Lane, State, Task};
use crate::report::format::thousands;
use crate::report::work::Kind;

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
