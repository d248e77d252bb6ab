//! What the scaling suite measures at one size: an operation's call (seed003's, the range
//! scan around the middle) and its record, and the memory records: the store's heap and
//! stable bytes and the whole canister's storage cycles for 30 days.

use anyhow::Result;

use super::{
    Config, FILL_STOPPED, HEAP_BYTES, STABLE_BYTES, STORAGE_30_DAYS, SUBNETS, THIRTY_DAYS,
};
use crate::bench_canister::Stats;
use crate::engine::cost::{Replica, WASM_PAGE_SIZE};
use crate::report::ScenarioResult;
use crate::suites::pool::{Lane, State};
use crate::suites::scenario::{CacheState, Operation, Position, Scenario, Store};
use crate::suites::steps;
use crate::suites::users::{record_sent, run_call, Call, ID_STEP};

/// The operation's call at size `n`: seed003's at that size, but the range scan reads the
/// 1,000 rows around the middle (at N = 1,000, all of them).
fn call_at(cfg: &Config, n: u64, store: Store, position: Position, operation: Operation) -> Call {
    match operation {
        Operation::RangeScan { rows } => Call::Scan {
            offset: (n - rows) / 2 * ID_STEP,
            count: rows,
        },
        _ => Call::for_scenario(
            &Scenario {
                store,
                position,
                operation,
                cache: CacheState::Cold,
            },
            &cfg.users_at(n),
        ),
    }
}

/// A record of this suite with the store's columns filled in.
fn base_record(
    engine_name: &str,
    store: Store,
    n: u64,
    position: &str,
    operation: &str,
) -> ScenarioResult {
    let store_columns = (store.kind(), store.journal_mode());
    steps::record(
        "scaling",
        engine_name,
        store_columns,
        position.into(),
        operation,
        n,
    )
}

#[allow(clippy::too_many_arguments)]
pub(super) fn measure(
    lane: &mut Lane<'_, '_>,
    cfg: &Config,
    engine_name: &str,
    store: Store,
    n: u64,
    position: Position,
    operation: Operation,
    start: &Result<State, String>,
) -> Result<ScenarioResult> {
    let scenario = Scenario {
        store,
        position,
        operation,
        cache: CacheState::Cold,
    };
    let call = call_at(cfg, n, store, position, operation);
    let mut result = base_record(engine_name, store, n, position.as_str(), operation.kind());
    result.batch = operation.rows();
    result.method = scenario.method();
    result.args = call.candid_args();
    match start {
        Err(reason) => result.status = crate::report::Status::Refused(reason.clone()),
        Ok(state) => {
            lane.restore(state)?;
            let reply = run_call(&mut lane.client, store.stem(), &call);
            record_sent(&mut result, reply, operation, cfg.usd_per_xdr)?;
        }
    }
    Ok(result)
}

/// The stable bytes a store's rows take, from its own size rather than the canister's
/// stable memory (which the memory manager grows in 8 MiB buckets shared by the stores):
/// the StableBTreeMap's virtual memory, SQLite's database file; the heap map keeps its rows
/// on the heap between upgrades. The store table's.
pub fn store_stable_bytes(store: Store, stats: &Stats) -> u64 {
    (store.store_kind().def().stable_bytes)(stats)
}

/// The heap bytes the store's `n` rows take (the canister at `n` over the empty one, in
/// 64 KiB pages), its own stable bytes, and the storage cycles of the whole canister (what
/// the storage fee charges) for 30 days under `replica`'s fees.
#[allow(clippy::too_many_arguments)]
pub(super) fn memory_records(
    cfg: &Config,
    replica: &Replica,
    engine_name: &str,
    store: Store,
    n: u64,
    base: &Stats,
    stats: &Stats,
    module_bytes: u64,
) -> Vec<ScenarioResult> {
    let mut out = Vec::new();
    for (operation, bytes) in [
        (
            HEAP_BYTES,
            stats.heap_pages.saturating_sub(base.heap_pages) * WASM_PAGE_SIZE,
        ),
        (STABLE_BYTES, store_stable_bytes(store, stats)),
    ] {
        let mut r = base_record(engine_name, store, n, "-", operation);
        r.batch = n;
        r.bytes = bytes;
        out.push(r);
    }
    let total = (stats.heap_pages + stats.stable_pages) * WASM_PAGE_SIZE + module_bytes;
    for (subnet, fees) in SUBNETS {
        let mut r = base_record(engine_name, store, n, subnet, STORAGE_30_DAYS);
        r.batch = n;
        r.bytes = total;
        let cycles = fees.storage_cost(replica, total, THIRTY_DAYS);
        r.cycles = cycles as u64;
        r.usd = cycles as f64 / 1e12 * cfg.usd_per_xdr;
        out.push(r);
    }
    out
}

/// The record of a fill to `n` rows that a limit stopped at `reached` rows: the message
/// the replica rejected, and why.
pub(super) fn fill_stopped(
    engine_name: &str,
    store: Store,
    n: u64,
    reached: u64,
    reject: String,
) -> ScenarioResult {
    let mut r = base_record(engine_name, store, n, "-", FILL_STOPPED);
    r.batch = reached;
    r.status = crate::report::Status::Failed(reject);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::scenario::StoreKind;

    #[test]
    fn the_range_scan_reads_the_rows_around_the_middle() {
        let cfg = Config::test_plan(vec![1_000], StoreKind::ALL.to_vec(), None);
        let scan = Operation::RangeScan { rows: 1_000 };
        let store = cfg.kinds[0].stores(&[])[0];
        let args = |n| call_at(&cfg, n, store, Position::Middle, scan).candid_args();
        assert_eq!(args(1_000), "(0 : nat64, 1000 : nat64)");
        assert_eq!(args(10_000), "(45000 : nat64, 1000 : nat64)");
    }
}
