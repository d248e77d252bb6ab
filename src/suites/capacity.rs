//! Capacity: the largest batch one message carries before the replica stops it. Per store
//! (and SQLite mode), for an update inserting rows and for a query looking rows up: an
//! estimate (the message's instruction limit over the per-row cost of the largest batch
//! measured, and for updates the heap room over the heap bytes per row), then real calls
//! from the same state until the largest size that fits and the size one step above it,
//! which the replica rejects, are both known.
//!
//! Here: the messages searched and a store's capacity measured; `capacity/estimate.rs` the
//! estimate and the records, `capacity/search.rs` the search for the largest size that fits
//! (given a call), `capacity/confirm.rs` the search with real calls, `capacity/tables.rs`
//! the report's tables.

use anyhow::{anyhow, Result};

use super::scenario::{Operation, Store};
use super::users::{Call, Reply, ID_STEP};
use crate::bench_canister::{Attempt, BenchClient, IdSequence, Measured, Rejected};
use crate::engine::cost::{Limits, WASM_PAGE_SIZE};
use crate::engine::SnapshotId;
use crate::report::{ScenarioResult, Status};

mod confirm;
mod estimate;
mod search;
mod tables;

pub use confirm::confirm;
pub use estimate::estimate;
pub use search::{predict, search, step_for, Bounds, Fit, Found};
pub use tables::{estimate_table, explained, table, RunLimits, LIMITS};

/// The message whose limit is searched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    /// `add_users_*(offset, 10, K)`: an update inserting K new rows in the middle.
    Insert,
    /// `get_users_*(offset, 10, K)` as a query: point lookups of K stored rows.
    Lookup,
}

impl Message {
    pub const ALL: [Message; 2] = [Message::Insert, Message::Lookup];

    /// The records' `operation`.
    pub fn operation(self) -> &'static str {
        match self {
            Message::Insert => "capacity_insert",
            Message::Lookup => "capacity_lookup",
        }
    }

    /// The instruction limit the message runs under.
    pub fn limit(self, limits: &Limits) -> u64 {
        match self {
            Message::Insert => limits.max_instructions_per_update,
            Message::Lookup => limits.max_instructions_per_query,
        }
    }

    fn title(self) -> &'static str {
        match self {
            Message::Insert => "insert (update)",
            Message::Lookup => "lookup (query)",
        }
    }

    /// The measured batch an estimate starts from: the operation it ran.
    pub fn measures(self, operation: &str) -> bool {
        match self {
            Message::Insert => operation == "insert",
            Message::Lookup => operation == "point_lookup",
        }
    }

    /// The ids of the call that sends `rows` rows on a store of `n` rows: inserts go
    /// between the middle ids (and past the last one, beyond n / 2 rows); lookups read the
    /// `rows` stored rows around the middle, so every key is present.
    fn ids(self, n: u64, rows: u64) -> IdSequence {
        match self {
            Message::Insert => IdSequence::new(n / 2 * ID_STEP + 1, ID_STEP, rows),
            Message::Lookup => IdSequence::new(n.saturating_sub(rows) / 2 * ID_STEP, ID_STEP, rows),
        }
    }

    /// That call, for the records' arguments.
    fn call(self, n: u64, rows: u64) -> Call {
        let ids = self.ids(n, rows);
        match self {
            Message::Insert => Call::Insert(ids),
            Message::Lookup => Call::Get(ids),
        }
    }

    /// Sends it: the reply, or the replica's reject. A canister `Err` is an error here,
    /// since the search sends only arguments the canister accepts.
    fn send(
        self,
        client: &mut BenchClient<'_>,
        store: Store,
        n: u64,
        rows: u64,
    ) -> Result<std::result::Result<Reply, Rejected>> {
        fn accepted<T>(attempt: Attempt<T>) -> Result<Attempt<T>> {
            match &attempt {
                Ok(Measured { value: Err(e), .. }) => {
                    Err(anyhow!("the canister refused a capacity call: {e}"))
                }
                _ => Ok(attempt),
            }
        }
        let ids = self.ids(n, rows);
        Ok(match self {
            Message::Insert => {
                accepted(client.try_add_users(store.stem(), ids)?)?.map(Reply::Insert)
            }
            Message::Lookup => accepted(client.try_get_users(store.stem(), ids)?)?.map(Reply::Read),
        })
    }

    fn operation_of(self, rows: u64) -> Operation {
        match self {
            Message::Insert => Operation::Insert { rows },
            Message::Lookup => Operation::PointLookups { keys: rows },
        }
    }
}

/// `position` of the capacity records (the one above the largest batch lives beside the
/// scenarios: a suite's failures leave it out, `Suite::failed`).
pub const ESTIMATE: &str = "estimate";
pub const FITS: &str = "fits";
pub use super::scenario::ABOVE;

/// Real calls one search may make: each runs up to the limit (an update's is ~13 s).
pub const MAX_CALLS: u32 = 10;

/// Who runs a capacity search: the suite's name for the records, and prices.
pub struct Context<'a> {
    pub suite: &'a str,
    pub engine: &'a str,
    pub usd_per_xdr: f64,
}

/// A store's capacity on the state `start` of `n` rows for each of `messages` (an insert is
/// an update, a lookup a query): the estimate from the largest batch of the message in
/// `measured` (that store's records at `n`), then the real calls that confirm it (none
/// without a measured batch to start from). `heap_per_row`: the store's own heap bytes per
/// row, when its rows live on the heap. Searches of different messages are independent.
#[allow(clippy::too_many_arguments)]
pub fn measure_store(
    client: &mut BenchClient<'_>,
    ctx: &Context<'_>,
    store: Store,
    n: u64,
    start: SnapshotId,
    heap_per_row: Option<f64>,
    measured: &[&ScenarioResult],
    messages: &[Message],
) -> Result<Vec<ScenarioResult>> {
    let mut out = Vec::new();
    for &message in messages {
        let Some(batch) = measured
            .iter()
            .filter(|r| message.measures(&r.operation) && r.status == Status::Ok)
            .max_by_key(|r| r.batch)
        else {
            continue;
        };
        let limits = client.engine.limits();
        client.engine.restore(client.canister, start)?;
        let heap_bytes = client.stats()?.heap_pages * WASM_PAGE_SIZE;
        // A canister without a wasm_memory_limit still stops at 4 GiB of Wasm32 memory.
        let memory_limit = match limits.wasm_memory_limit {
            0 => 4 << 30,
            limit => limit,
        };
        let bounds = Bounds {
            instruction_limit: message.limit(&limits),
            // Queries are exempt from wasm_memory_limit; lookups can only name stored rows.
            heap_room: (message == Message::Insert)
                .then(|| memory_limit.saturating_sub(heap_bytes)),
            max_rows: (message == Message::Lookup).then_some(n),
        };
        let Some((known, estimate, record)) =
            estimate(ctx, &bounds, store, message, batch, heap_per_row)
        else {
            continue;
        };
        out.push(record);
        out.extend(confirm(
            client, ctx, &bounds, store, message, n, start, known, estimate,
        )?);
    }
    Ok(out)
}
