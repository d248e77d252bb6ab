//! A sequence point's run: the workload's messages one after the other from the store's
//! start, each measured, summed up in the record (the sustained suite's figures).

use anyhow::Result;

use super::{record_sent, run_update, Call, Config, Point};
use crate::bench_canister::BenchClient;
use crate::report::{ScenarioResult, Sequence, Status};

/// Sends `point`'s messages (its warm-ups, then its call, all as updates) on `client` from
/// the state it is in, and fills `result`: its own columns those of the median message (by
/// charged instructions, the first of equals), its sequence's figures, and, when the run
/// profiles it, the profile and page map of the most charged message (for a Motoko store
/// the one a collector increment runs after, when one does).
pub(super) fn measure(
    client: &mut BenchClient<'_>,
    cfg: &Config,
    point: &Point,
    result: &mut ScenarioResult,
) -> Result<()> {
    let scenario = &point.scenario;
    let stem = scenario.store.stem();
    let collected = scenario.store.store_kind().def().collected;
    let mut calls = Call::warm_ups(scenario, cfg, point.warm_ups);
    calls.push(Call::after_warm_ups(scenario, cfg, point.warm_ups));
    let n = calls.len();
    let mut records: Vec<ScenarioResult> = Vec::with_capacity(n);
    let mut collector = 0;
    let allocated_before = match collected {
        true => Some(client.motoko_stats()?.total_allocation),
        false => None,
    };
    for (k, call) in (1..).zip(&calls) {
        let mut record = result.clone();
        let reply = run_update(client, stem, call);
        record_sent(&mut record, reply, scenario.operation, cfg.usd_per_xdr)?;
        if let Status::Failed(e) = &record.status {
            result.status = Status::Failed(format!("message {k} of {n}: {e}"));
            return Ok(());
        }
        if collected {
            collector += client.motoko_stats()?.collector_instructions;
        }
        records.push(record);
    }
    let charged: Vec<u64> = records.iter().map(|r| r.instructions).collect();
    let pages: Option<Vec<u64>> = records
        .iter()
        .map(|r| r.pages.as_ref().map(|p| p.counted()))
        .collect();
    let mut sequence = Sequence::of(&charged, pages.as_deref());
    sequence.collector_instructions = collected.then_some(collector);
    if let Some(before) = allocated_before {
        let after = client.motoko_stats()?.total_allocation;
        sequence.allocated_bytes = Some(after.saturating_sub(before));
    }
    let most = (0..n).max_by_key(|&i| (charged[i], std::cmp::Reverse(i)));
    let (profile, page_map) = match most {
        Some(i) => (
            records[i].profile_data.take(),
            records[i].page_map_data.take(),
        ),
        None => (None, None),
    };
    if let Some(i) = charged.iter().position(|&c| c == sequence.charged_median) {
        *result = records.swap_remove(i);
    }
    result.sequence = Some(sequence);
    result.profile_data = profile;
    result.page_map_data = page_map;
    Ok(())
}
