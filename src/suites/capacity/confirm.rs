//! The search with real calls: each size sent from the same snapshot, the largest that fit
//! and the one step above it that the replica rejected kept as records.

use anyhow::{anyhow, Result};

use super::estimate::base_record;
use super::{search, Bounds, Context, Fit, Message, ABOVE, FITS};
use crate::bench_canister::{BenchClient, Rejected};
use crate::engine::SnapshotId;
use crate::report::format::thousands;
use crate::report::{ScenarioResult, Status};
use crate::suites::scenario::Store;
use crate::suites::users::{record_reply, Reply};

/// Runs the search from `start` (a state of `n` rows) and returns its records: the largest
/// size that fit (a real call, as any other record) and the one step above it that the
/// replica rejected, with its error.
#[allow(clippy::too_many_arguments)]
pub fn confirm(
    client: &mut BenchClient<'_>,
    ctx: &Context<'_>,
    bounds: &Bounds,
    store: Store,
    message: Message,
    n: u64,
    start: SnapshotId,
    known: Fit,
    estimate: u64,
) -> Result<Vec<ScenarioResult>> {
    let canister = client.canister;
    let mut fits: Option<(u64, Reply)> = None;
    let mut rejected: Vec<(u64, Rejected)> = Vec::new();
    let found = search(bounds, known, estimate, &mut |rows| {
        client.engine.restore(canister, start)?;
        match message.send(client, store, n, rows)? {
            Ok(reply) => {
                let report = match &reply {
                    Reply::Insert(m) => &m.message,
                    Reply::Read(m) => &m.message,
                };
                let fit = Fit {
                    rows,
                    instructions: report.instructions,
                    heap_growth: report
                        .heap_bytes_after
                        .saturating_sub(report.heap_bytes_before),
                };
                fits = Some((rows, reply));
                Ok(Some(fit))
            }
            Err(reject) => {
                rejected.push((rows, reject));
                Ok(None)
            }
        }
    })?;
    client.engine.restore(canister, start)?;
    let mut out = Vec::new();
    let mut r = base_record(ctx, store, n, message);
    r.position = FITS.into();
    r.batch = found.fits.rows;
    r.args = message.call(n, found.fits.rows).candid_args();
    match fits {
        Some((rows, reply)) if rows == found.fits.rows => {
            // Cycles for inserts only: a query is free when not replicated.
            record_reply(&mut r, reply, message.operation_of(rows), ctx.usd_per_xdr);
        }
        // Only the measured batch fit: the table names it; no call of this search to show.
        _ => {
            r.instructions = found.fits.instructions;
            r.instructions_per_row = found.fits.instructions as f64 / found.fits.rows as f64;
        }
    }
    out.push(r);
    if let Some(h) = found.fails {
        let reject = rejected
            .into_iter()
            .find(|(rows, _)| *rows == h)
            .map(|(_, r)| r)
            .ok_or_else(|| anyhow!("the rejected call of {h} rows was not kept"))?;
        let mut r = base_record(ctx, store, n, message);
        r.position = ABOVE.into();
        r.batch = h;
        r.args = message.call(n, h).candid_args();
        r.status = Status::Failed(reject.reject.to_string());
        r.instructions = reject.message.instructions;
        r.set_pages(&reject.message);
        r.add_profile(reject.message.profile.as_ref());
        out.push(r);
    }
    if !found.converged(bounds) {
        // Kept, with what is known, rather than failing the suite.
        out[0].status = Status::Failed(format!(
            "no answer after {} calls: {} rows fit{}",
            found.calls,
            thousands(found.fits.rows),
            found
                .fails
                .map(|h| format!(", {} were rejected", thousands(h)))
                .unwrap_or_default()
        ));
    }
    Ok(out)
}
