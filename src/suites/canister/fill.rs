//! A users store filled with rows: ids 0, 10, 20, ..., [`rows_per_message`] a message,
//! each sent for the state it leaves ([`Metering::StateOnly`]). Every suite that grows a
//! users store fills it here.

use anyhow::{anyhow, Result};

use crate::bench_canister::{BenchClient, IdSequence};
use crate::engine::Metering;
use crate::report::format::thousands;

/// Filled ids are multiples of this, so every other id is free for new rows.
pub const ID_STEP: u64 = 10;
/// Rows per fill message at most. Fixed, not the canister's cap: where the fill's messages
/// end decides the heap layout every later count starts from (and the cached states' keys).
pub const MAX_ROWS_PER_MESSAGE: u64 = 100_000;
/// Bytes of payload per fill message at most, so that large payloads fill in messages far
/// below the update instruction limit (at the default 100 bytes a row:
/// [`MAX_ROWS_PER_MESSAGE`] rows).
const MAX_BYTES_PER_MESSAGE: u64 = 10_000_000;

/// Rows per fill message at `payload_size` bytes a row.
pub fn rows_per_message(payload_size: u64) -> u64 {
    (MAX_BYTES_PER_MESSAGE / payload_size.max(1)).clamp(1, MAX_ROWS_PER_MESSAGE)
}

/// The unit of the fill message that brings `store` to `to` rows.
pub fn fill_name(store: &str, to: u64) -> String {
    format!("fill {store} to {} rows", thousands(to))
}

/// Rows `from..to` of `store` (ids `from * ID_STEP`, then every `ID_STEP`), of
/// `payload_size` bytes, [`rows_per_message`] a message: what [`fill`] and
/// [`fill_until_rejected`] insert.
pub(in crate::suites) struct Fill<'a> {
    pub store: &'a str,
    pub from: u64,
    pub to: u64,
    pub payload_size: u64,
}

/// Inserts the rows of `rows` and checks that each message inserted all of its rows;
/// `before(to)` precedes the message that fills to `to` rows, `after(done)` follows every
/// message. Every suite that grows a users store fills it here. A message the replica
/// rejects is an error.
pub(in crate::suites) fn fill(
    client: &mut BenchClient<'_>,
    rows: Fill<'_>,
    before: &mut dyn FnMut(u64),
    after: &mut dyn FnMut(u64),
) -> Result<()> {
    let store = rows.store;
    match fill_until_rejected(client, rows, before, after)? {
        None => Ok(()),
        Some((_, reject)) => Err(anyhow!("add_users_{store} was rejected: {reject}")),
    }
}

/// [`fill`], where a message the replica rejects (a limit: the heap's `wasm_memory_limit`,
/// the message's instructions) stops the fill: the rows reached and the reject. The
/// messages are sent for the state they leave ([`Metering::StateOnly`]), which keeps no old
/// bytes to roll back with: the canister is lost with a rejected message, and its caller
/// goes on from a state of its own.
pub(in crate::suites) fn fill_until_rejected(
    client: &mut BenchClient<'_>,
    rows: Fill<'_>,
    before: &mut dyn FnMut(u64),
    after: &mut dyn FnMut(u64),
) -> Result<Option<(u64, String)>> {
    let Fill {
        store,
        from,
        to,
        payload_size,
    } = rows;
    let chunk = rows_per_message(payload_size);
    let mut done = from;
    while done < to {
        let count = chunk.min(to - done);
        before(done + count);
        let sent = client.unmeasured(Metering::StateOnly, |c| {
            c.try_add_users(store, IdSequence::new(done * ID_STEP, ID_STEP, count))
        });
        let out = match sent? {
            Ok(out) => out,
            Err(rejected) => return Ok(Some((done, rejected.reject.to_string()))),
        };
        let report = out
            .value
            .map_err(|e| anyhow!("filling {store} failed at row {done}: {e}"))?;
        if report.rows_inserted != count {
            return Err(anyhow!(
                "filling {store} inserted {} rows instead of {count}",
                report.rows_inserted
            ));
        }
        done += count;
        after(done);
    }
    Ok(None)
}
