//! Which process this is: the one a run started, or a worker copy of it that the embedded
//! engine forked (`embedded::process::fork`). Below both the engine and the disk cache, which
//! each act on it.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set in a worker process.
static IN_WORKER: AtomicBool = AtomicBool::new(false);

/// Whether this process is a worker copy.
pub(crate) fn in_worker() -> bool {
    IN_WORKER.load(Ordering::Relaxed)
}

/// Marks this process a worker copy (in the child, right after the fork).
pub(crate) fn mark() {
    IN_WORKER.store(true, Ordering::Relaxed);
}
