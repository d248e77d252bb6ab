//! The limit run: for the store whose upgrade grows with its rows, calibrate at the limit
//! run's payload size, predict the first size an upgrade fails at, and fill and upgrade
//! there for real until one fails; then show the replica's error and that the old module
//! still answers with its rows.

use anyhow::{bail, Result};
use serde_json::Value;

use super::calls::{calls, configure, fill, store_rows};
use super::grow::{Grown, Shared};
use super::install::upgrade;
use super::{
    predict, LimitRun, Point, UpgradeStore, CALIBRATION_SIZES, LIMIT_RUN, LIMIT_RUN_STEP_PERMILLE,
    MAX_LIMIT_RUN_ROWS, POINTS,
};
use crate::bench_canister::BenchClient;
use crate::engine::cost::Limits;
use crate::report::format::thousands;
use crate::report::work::Kind;
use crate::report::{ScenarioResult, Status};
use crate::suites::canister::rows_per_message;
use crate::suites::pool::{self, Task};

/// The limit run's task, from the installed, empty canister. It is parked: when it is
/// done, the worker goes back to the first state rather than hold a heap of gigabytes.
pub(super) fn task<'s>(
    ctx: &'s Shared<'s>,
    store: UpgradeStore,
    payload: u64,
    out: &'s Grown,
) -> Task<'s> {
    let name = format!("limit run: configure {}", store.label());
    Task::new(Kind::Fill, name, move |lane| {
        lane.restore(&ctx.empty(store).state)?;
        let outcome = limit_run(&mut lane.client, ctx, store, payload)?;
        out.put(0, outcome);
        Ok(())
    })
    .park()
}

/// Calibrates at the limit payload, predicts the first failing size, and upgrades there for
/// real: the error, then a read proving the old module and rows are still there.
fn limit_run(
    client: &mut BenchClient<'_>,
    ctx: &Shared<'_>,
    store: UpgradeStore,
    payload: u64,
) -> Result<pool::Outcome> {
    let canister = client.canister;
    if let Err(e) = configure(client, store, payload) {
        let run = LimitRun {
            store: store.label(),
            payload_size: payload,
            note: format!("not run: {e}"),
            ..LimitRun::default()
        };
        return Ok(pool::Outcome {
            results: Vec::new(),
            lists: vec![(LIMIT_RUN, vec![serde_json::to_value(&run)?])],
        });
    }
    let fresh = client.engine.snapshot(canister)?;
    let mut points = calibrate(client, ctx, store, payload)?;
    let limits = Limits::APPLICATION;
    let predicted = predict(&points.iter().collect::<Vec<_>>(), &limits);
    let mut run = LimitRun {
        store: store.label(),
        payload_size: payload,
        predicted: predicted.clone(),
        ..LimitRun::default()
    };
    let mut results = Vec::new();
    match predicted.first_failing() {
        Some(first) if first <= MAX_LIMIT_RUN_ROWS => {
            client.engine.restore(canister, fresh)?;
            let found = until_it_fails(client, ctx, store, payload, first, &mut run)?;
            points.extend(found.0);
            results.extend(found.1);
        }
        Some(first) => {
            run.note = format!(
                "not run: the first failing size is predicted at {} rows, above {}",
                thousands(first),
                thousands(MAX_LIMIT_RUN_ROWS)
            );
        }
        None => {
            run.note =
                "not run: no limit predicted (the upgrade's work and heap do not grow with N)"
                    .into()
        }
    }
    let mut lists: Vec<(&'static str, Vec<Value>)> = vec![(
        POINTS,
        points
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()?,
    )];
    lists.push((LIMIT_RUN, vec![serde_json::to_value(&run)?]));
    Ok(pool::Outcome { results, lists })
}

/// The upgrades at [`CALIBRATION_SIZES`] rows of `payload` bytes, each from the store filled
/// there and rolled back after it: the points the prediction draws its line through.
fn calibrate(
    client: &mut BenchClient<'_>,
    ctx: &Shared<'_>,
    store: UpgradeStore,
    payload: u64,
) -> Result<Vec<Point>> {
    let canister = client.canister;
    let mut points = Vec::new();
    let mut filled = 0;
    for n in CALIBRATION_SIZES {
        fill(client, store, payload, filled, n, &mut |_| {})?;
        filled = n;
        let at_n = client.engine.snapshot(canister)?;
        let (_, mut point, failed) = upgrade(
            client,
            ctx.engine,
            store,
            n,
            payload,
            &ctx.empty(store).new_build,
            ctx.cfg.usd_per_xdr,
        )?;
        if let Some(r) = failed {
            bail!(
                "the calibration upgrade of {} at {n} rows failed: {r}",
                store.label()
            );
        }
        point.calibration = true;
        points.push(point);
        client.engine.restore(canister, at_n)?;
    }
    Ok(points)
}

/// Fills the fresh store to the predicted first failing size `first` and upgrades it; while
/// that succeeds, fills on and tries again. Returns the upgrades' points and the records of
/// the failing one and of the read after it; `run` gets what happened.
fn until_it_fails(
    client: &mut BenchClient<'_>,
    ctx: &Shared<'_>,
    store: UpgradeStore,
    payload: u64,
    first: u64,
    run: &mut LimitRun,
) -> Result<(Vec<Point>, Vec<ScenarioResult>)> {
    let usd_per_xdr = ctx.cfg.usd_per_xdr;
    let chunk = rows_per_message(payload);
    let mut points = Vec::new();
    let mut results = Vec::new();
    // The heap grows in steps (a Vec doubles, memory grows by pages), so the line can be
    // off: upgrade at the predicted size, and while that succeeds fill on by 5% and try
    // again. A successful upgrade keeps the rows (that is what it is for), so filling goes
    // on from it, as a user's would.
    let mut rows = first.div_ceil(chunk) * chunk;
    let mut filled = 0;
    let mut succeeded = Vec::new();
    loop {
        fill(client, store, payload, filled, rows, &mut |_| {})?;
        filled = rows;
        let (mut records, mut point, failed) = upgrade(
            client,
            ctx.engine,
            store,
            rows,
            payload,
            &ctx.empty(store).new_build,
            usd_per_xdr,
        )?;
        point.calibration = true;
        let heap_in_pre_upgrade = point.heap_bytes_pre_upgrade;
        points.push(point);
        let Some(reject) = failed else {
            succeeded.push(thousands(rows));
            let next = (rows + rows * LIMIT_RUN_STEP_PERMILLE / 1000).div_ceil(chunk) * chunk;
            if next > MAX_LIMIT_RUN_ROWS {
                run.note = format!(
                    "no failure up to {} rows (upgrades succeeded at {})",
                    thousands(rows),
                    succeeded.join(", ")
                );
                break;
            }
            rows = next;
            continue;
        };
        for r in &mut records {
            r.operation = format!("limit_{}", r.operation);
        }
        results.extend(records);
        run.rows = Some(rows);
        run.heap_bytes_in_pre_upgrade = Some(heap_in_pre_upgrade);
        run.error_code = Some(reject.error_code.to_string());
        run.error = Some(reject.message.clone());
        // The reads after it: the old module answers with the rows it had (the row count
        // first: `calls` also inserts a row after its lookup).
        run.rows_after = Some(store_rows(client, store)?);
        let mut read = calls(
            client,
            ctx.engine,
            store,
            rows,
            usd_per_xdr,
            "after_failed_upgrade",
        )?;
        read.truncate(1);
        run.lookup_rows_found = Some(if read[0].status == Status::Ok { 100 } else { 0 });
        results.extend(read);
        run.note = format!(
            "{} rows of {payload} bytes: the first size tried that fails, starting at the predicted first failing size {} and stepping by {}% ({}-row fill messages){}.",
            thousands(rows),
            thousands(first),
            LIMIT_RUN_STEP_PERMILLE as f64 / 10.0,
            thousands(chunk),
            if succeeded.is_empty() {
                String::new()
            } else {
                format!("; upgrades succeeded at {}", succeeded.join(", "))
            }
        );
        break;
    }
    Ok((points, results))
}
