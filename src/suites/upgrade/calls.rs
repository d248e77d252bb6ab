//! The messages the upgrade suite sends besides the upgrade: setting a store up on a fresh
//! canister, filling it, the 1-row insert and 100-key lookup around an upgrade, and the
//! records they leave.

use anyhow::{anyhow, bail, Context, Result};

use super::UpgradeStore;
use crate::bench_canister::{BenchClient, HeapConfig, IdSequence};
use crate::engine::cost::CyclesFees;
use crate::engine::MessageReport;
use crate::report::{ScenarioResult, Status};
use crate::stores;
use crate::suites::canister::{self, ID_STEP};
use crate::suites::steps;

/// Sets the store up on a fresh canister (payload size, SQLite's journal mode).
pub(super) fn configure(
    client: &mut BenchClient<'_>,
    store: UpgradeStore,
    payload_size: u64,
) -> Result<()> {
    client
        .set_payload_size(payload_size)?
        .value
        .map_err(|e| anyhow!("set_payload_size({payload_size}) failed: {e}"))?;
    if let Some(mode) = store.journal_mode() {
        stores::set_journal_mode(client, mode)?
            .map_err(|e| anyhow!("configure_sqlite({mode}) failed: {e}"))?;
    }
    if let Some(e) = store.encoding {
        let config = HeapConfig {
            encoding: Some(e.name().into()),
        };
        let settings = client
            .configure_heap(&config)?
            .value
            .map_err(|e| anyhow!("configure_heap failed: {e}"))?;
        if settings.encoding != e.name() {
            bail!(
                "asked for {}, the heap store uses {}",
                e.name(),
                settings.encoding
            );
        }
    }
    Ok(())
}

/// Fills the store from `from` to `to` rows (ids 0, 10, 20, ...).
pub(super) fn fill(
    client: &mut BenchClient<'_>,
    store: UpgradeStore,
    payload_size: u64,
    from: u64,
    to: u64,
    before: &mut dyn FnMut(u64),
) -> Result<()> {
    canister::fill(
        client,
        canister::Fill {
            store: store.store.stem(),
            from,
            to,
            payload_size,
        },
        before,
        &mut |_| {},
    )
    .with_context(|| format!("filling {}", store.label()))
}

fn pages_delta(before: u64, after: u64) -> i64 {
    (after as i64 - before as i64) / 65536
}

/// A record of this suite with the store's columns filled in.
pub(super) fn record(
    cfg_engine: &str,
    store: UpgradeStore,
    rows: u64,
    operation: &str,
) -> ScenarioResult {
    let store_columns = (store.kind(), store.journal_mode());
    steps::record(
        "upgrade",
        cfg_engine,
        store_columns,
        store.variant(),
        operation,
        rows,
    )
}

pub(super) fn fill_message(r: &mut ScenarioResult, m: &MessageReport) {
    r.instructions = m.instructions;
    r.instructions_per_row = m.instructions as f64 / r.batch.max(1) as f64;
    r.heap_pages_delta = pages_delta(m.heap_bytes_before, m.heap_bytes_after);
    r.stable_pages_delta = pages_delta(m.stable_bytes_before, m.stable_bytes_after);
    r.set_pages(m);
    r.add_profile(m.profile.as_ref());
}

/// The 1-row insert and the 100-key lookup, in the middle of `rows` rows.
pub(super) fn calls(
    client: &mut BenchClient<'_>,
    engine: &str,
    store: UpgradeStore,
    rows: u64,
    usd_per_xdr: f64,
    when: &str,
) -> Result<Vec<ScenarioResult>> {
    let middle = rows / 2 * ID_STEP;
    let mut out = Vec::new();
    // A call's record: `{method}_{stem}` called with `ids`, and its message.
    let call_record = |kind: &str, method: &str, ids: IdSequence, message: &MessageReport| {
        let mut r = record(engine, store, rows, &format!("{when}_{kind}"));
        r.batch = ids.count;
        r.method = format!("{method}_{}", store.store.stem());
        r.args = ids.candid_text();
        fill_message(&mut r, message);
        r
    };
    // The query first: it changes nothing, so the insert after it is still the first change.
    let read = IdSequence::new(middle, ID_STEP, 100);
    let q = client.get_users(store.store.stem(), read, false)?;
    let mut r = call_record("query", "get_users", read, &q.message);
    match q.value {
        Ok(v) if v.rows_found == 100 => {
            r.store_instructions = v.instructions;
            r.store_instructions_per_row = v.instructions as f64 / 100.0;
            r.bytes = v.bytes_read;
        }
        Ok(v) => r.status = Status::Failed(format!("found {} of 100 rows", v.rows_found)),
        Err(e) => r.status = Status::Failed(e),
    }
    out.push(r);
    let insert = IdSequence::new(middle + 1, ID_STEP, 1);
    let u = client.add_users(store.store.stem(), insert)?;
    let mut r = call_record("update", "add_users", insert, &u.message);
    match u.value {
        Ok(v) if v.rows_inserted == 1 => {
            r.store_instructions = v.instructions;
            r.store_instructions_per_row = v.instructions as f64;
            let cycles =
                CyclesFees::APPLICATION_13.execution_cost(u.message.instructions, u.message.wasm64);
            r.cycles = cycles as u64;
            r.usd = cycles as f64 / 1e12 * usd_per_xdr;
        }
        Ok(v) => r.status = Status::Failed(format!("inserted {} of 1 row", v.rows_inserted)),
        Err(e) => r.status = Status::Failed(e),
    }
    out.push(r);
    Ok(out)
}

/// The rows the store holds, as the canister counts them (the store table's count).
pub(super) fn store_rows(client: &mut BenchClient<'_>, store: UpgradeStore) -> Result<u64> {
    (store.store_kind().def().rows)(client)
}
