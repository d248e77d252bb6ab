//! The estimate of a store's capacity from a batch measured at its size, and the records
//! every capacity step writes.

use super::{predict, Bounds, Context, Fit, Message, ESTIMATE};
use crate::engine::cost::WASM_PAGE_SIZE;
use crate::report::{ScenarioResult, Status};
use crate::suites::scenario::Store;

/// A capacity record of `store` at `n` rows for `message`, its first columns filled in.
pub(super) fn base_record(
    ctx: &Context<'_>,
    store: Store,
    n: u64,
    message: Message,
) -> ScenarioResult {
    ScenarioResult {
        suite: ctx.suite.into(),
        engine: ctx.engine.into(),
        store: store.kind().into(),
        journal_mode: store.journal_column(),
        operation: message.operation().into(),
        rows_before: n,
        method: method(store, message),
        ..ScenarioResult::default()
    }
}

/// The method `message` calls on `store`.
fn method(store: Store, message: Message) -> String {
    match message {
        Message::Insert => format!("add_users_{}", store.stem()),
        Message::Lookup => format!("get_users_{}", store.stem()),
    }
}

/// The estimate: the limit over the charged instructions per row of `batch` (the largest
/// batch of that message measured at N), and for an update the heap room over the heap
/// bytes per row (`heap_per_row`, when the suite knows the store's own). Also its record.
pub fn estimate(
    ctx: &Context<'_>,
    bounds: &Bounds,
    store: Store,
    message: Message,
    batch: &ScenarioResult,
    heap_per_row: Option<f64>,
) -> Option<(Fit, u64, ScenarioResult)> {
    if batch.status != Status::Ok || batch.batch == 0 || batch.instructions == 0 {
        return None;
    }
    let fit = Fit {
        rows: batch.batch,
        instructions: batch.instructions,
        heap_growth: (batch.heap_pages_delta.max(0) as u64) * WASM_PAGE_SIZE,
    };
    let mut rows = predict(bounds, &fit, None);
    if let (Some(room), Some(per_row)) = (bounds.heap_room, heap_per_row) {
        if per_row > 0.0 {
            rows = rows.min((room as f64 / per_row) as u64);
        }
    }
    let mut r = base_record(ctx, store, batch.rows_before, message);
    r.position = ESTIMATE.into();
    r.batch = rows;
    r.instructions_per_row = batch.instructions_per_row;
    r.store_instructions_per_row = batch.store_instructions_per_row;
    r.args = message.call(batch.rows_before, rows).candid_args();
    Some((fit, rows, r))
}
