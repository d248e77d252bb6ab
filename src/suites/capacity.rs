//! Capacity: the largest batch one message carries before the replica stops it. Per store
//! (and SQLite mode), for an update inserting rows and for a query looking rows up: an
//! estimate (the message's instruction limit over the per-row cost of the largest batch
//! measured, and for updates the heap room over the heap bytes per row), then real calls
//! from the same state until the largest size that fits and the size one step above it,
//! which the replica rejects, are both known.

use anyhow::{anyhow, Result};

use super::scenario::{Operation, Store};
use super::users::{record_reply, Call, Reply, ID_STEP};
use crate::bench_canister::{Attempt, BenchClient, Measured, Rejected};
use crate::engine::cost::Limits;
use crate::engine::SnapshotId;
use crate::report::format::{compact, per_row, thousands};
use crate::report::{Report, ScenarioResult, Status, Table};

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

    /// `(offset, step, count)` of the call that sends `rows` rows on a store of `n` rows:
    /// inserts go between the middle ids (and past the last one, beyond n / 2 rows);
    /// lookups read the `rows` stored rows around the middle, so every key is present.
    fn arguments(self, n: u64, rows: u64) -> (u64, u64, u64) {
        match self {
            Message::Insert => (n / 2 * ID_STEP + 1, ID_STEP, rows),
            Message::Lookup => (n.saturating_sub(rows) / 2 * ID_STEP, ID_STEP, rows),
        }
    }

    /// That call, for the records' arguments.
    fn call(self, n: u64, rows: u64) -> Call {
        let (offset, step, count) = self.arguments(n, rows);
        match self {
            Message::Insert => Call::Insert {
                offset,
                step,
                count,
            },
            Message::Lookup => Call::Get {
                offset,
                step,
                count,
            },
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
        let (offset, step, count) = self.arguments(n, rows);
        Ok(match self {
            Message::Insert => {
                accepted(client.try_add_users(store.stem(), offset, step, count)?)?
                    .map(Reply::Insert)
            }
            Message::Lookup => {
                accepted(client.try_get_users(store.stem(), offset, step, count)?)?.map(Reply::Read)
            }
        })
    }

    fn operation_of(self, rows: u64) -> Operation {
        match self {
            Message::Insert => Operation::Insert { rows },
            Message::Lookup => Operation::PointLookups { keys: rows },
        }
    }
}

/// `position` of the capacity records.
pub const ESTIMATE: &str = "estimate";
pub const FITS: &str = "fits";
pub const ABOVE: &str = "one step above";

/// Bytes of the 64 KiB pages the canister counts memory in.
const PAGE: u64 = 65_536;

/// Real calls one search may make: each runs up to the limit (an update's is ~13 s).
pub const MAX_CALLS: u32 = 10;

/// A call that fit: its rows, the instructions it was charged and how much the heap grew.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fit {
    pub rows: u64,
    pub instructions: u64,
    pub heap_growth: u64,
}

/// What bounds a search besides the instruction limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub instruction_limit: u64,
    /// Bytes the heap may still grow before the canister's `wasm_memory_limit` (updates).
    pub heap_room: Option<u64>,
    /// Most rows a call can name: the stored rows, for lookups.
    pub max_rows: Option<u64>,
}

/// Sizes are searched to three significant digits of the estimate: 654,321 gives steps of
/// 1,000, so the answer is "654,000 fits, 655,000 does not".
pub fn step_for(estimate: u64) -> u64 {
    let digits = estimate.max(1).ilog10() + 1;
    10u64.pow(digits.saturating_sub(3))
}

/// The size one message can carry, predicted from the calls that fit: a straight line
/// through the two largest (one through the origin when there is one), and, for the heap,
/// its room over the bytes per row; whichever limit comes first.
pub fn predict(bounds: &Bounds, best: &Fit, previous: Option<&Fit>) -> u64 {
    let limit = bounds.instruction_limit as f64;
    let (x, y) = (best.rows as f64, best.instructions as f64);
    let by_instructions = match previous {
        Some(p) if p.rows < best.rows && p.instructions < best.instructions => {
            let slope = (y - p.instructions as f64) / (x - p.rows as f64);
            x + (limit - y) / slope
        }
        _ => x * limit / y.max(1.0),
    };
    let by_memory = match bounds.heap_room {
        Some(room) if best.heap_growth > 0 => x * room as f64 / best.heap_growth as f64,
        _ => f64::INFINITY,
    };
    let rows = by_instructions.min(by_memory).max(0.0);
    let rows = if rows >= u64::MAX as f64 {
        u64::MAX
    } else {
        rows as u64
    };
    bounds.max_rows.map_or(rows, |m| rows.min(m))
}

/// Where a search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    pub estimate: u64,
    pub step: u64,
    /// The largest size that fit.
    pub fits: Fit,
    /// The smallest size the replica rejected, if one was tried.
    pub fails: Option<u64>,
    /// Real calls made.
    pub calls: u32,
}

impl Found {
    /// The largest fitting size and a rejected one are one step apart, or every row fit.
    pub fn converged(&self, bounds: &Bounds) -> bool {
        match self.fails {
            Some(h) => h - self.fits.rows <= self.step,
            None => bounds.max_rows == Some(self.fits.rows),
        }
    }
}

/// Searches the largest size that fits, starting from `known` (a call that fit, e.g. the
/// measured batch) and the first guess `estimate`. `call(rows)` makes the real call from the
/// same state: `Some` if it fit, `None` if the replica rejected it.
pub fn search(
    bounds: &Bounds,
    known: Fit,
    estimate: u64,
    call: &mut dyn FnMut(u64) -> Result<Option<Fit>>,
) -> Result<Found> {
    let step = step_for(estimate);
    let round = |rows: u64| rows / step * step;
    let mut found = Found {
        estimate,
        step,
        fits: known,
        fails: None,
        calls: 0,
    };
    let mut previous: Option<Fit> = None;
    let mut guess = round(estimate);
    while found.calls < MAX_CALLS && !found.converged(bounds) {
        let lo = found.fits.rows;
        // Never below what fit nor at or above what failed; bisect when the prediction
        // points past a size that failed.
        let mut next = guess.max(round(lo) + step);
        if let Some(max) = bounds.max_rows {
            next = next.min(max);
        }
        if let Some(hi) = found.fails {
            if next >= hi {
                next = round(lo + (hi - lo) / 2).max(round(lo) + step);
            }
            if next >= hi {
                break;
            }
        }
        if next <= lo {
            break;
        }
        found.calls += 1;
        match call(next)? {
            Some(fit) => {
                previous = Some(found.fits);
                found.fits = fit;
            }
            None => found.fails = Some(next),
        }
        guess = round(predict(bounds, &found.fits, previous.as_ref()));
    }
    Ok(found)
}

/// Who runs a capacity search: the suite's name for the records, and prices.
pub struct Context<'a> {
    pub suite: &'a str,
    pub engine: &'a str,
    pub usd_per_xdr: f64,
}

fn base_record(ctx: &Context<'_>, store: Store, n: u64, message: Message) -> ScenarioResult {
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
        heap_growth: (batch.heap_pages_delta.max(0) as u64) * PAGE,
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
        let heap_bytes = client.stats()?.heap_pages * PAGE;
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

// ---- the report ---------------------------------------------------------------------

/// What the capacity table shows, for the report's text.
/// The capacity tables' explanation, for the rules `report` was charged by.
pub fn explained(report: &Report) -> String {
    if report.charges_pages_in_band() {
        EXPLAINED.replace(DIRTY_PAGES_PAST_THE_LIMIT, PAGES_WITHIN_THE_LIMIT)
    } else {
        EXPLAINED.to_string()
    }
}

const DIRTY_PAGES_PAST_THE_LIMIT: &str = "An update's charged instructions can pass the limit by the heap's dirty-page charge (1,000 per 4 KiB page), which the replica applies after execution, where the limit no longer stops it.";
const PAGES_WITHIN_THE_LIMIT: &str = "The memory tracker's page charges (80,000 instructions per 64 KiB page of heap or stable memory first touched, as much again per page first written) are taken during the message and count against the limit.";

const EXPLAINED: &str = "Estimate: the message's instruction limit over the instructions charged per row by the largest batch measured at this size (1,000-row inserts, 100-key lookups); for an insert into the heap map also the heap left under the canister's `wasm_memory_limit` over the map's heap bytes per row, whichever comes first. Then real calls, each from the same snapshot: the largest size that fits, to three significant digits of the estimate, and the size one step above it, which the replica rejects with the error shown (IC0522: the per-message instruction limit; IC0539: the Wasm memory limit). Inserts are `add_users_*(offset, 10, K)`: new ids between the stored ones from the middle on (past the last one beyond N/2 rows). Lookups are `get_users_*(offset, 10, K)` as a query over the K stored rows around the middle: all present, consecutive, so they share pages and cost less per key than the random keys of the estimate. When every stored row fits in one query, the table says so. An update's charged instructions can pass the limit by the heap's dirty-page charge (1,000 per 4 KiB page), which the replica applies after execution, where the limit no longer stops it. Caveats: the canister replies with counts, not rows; a method that returns 100-byte rows is also bound by the reply size (2 MiB for an update's reply), about 20,000 rows. Rows are 100 bytes (`--payload-size`). The replica also rate-limits how fast a canister's heap may change (75 MiB per round), so a message that writes gigabytes delays the canister's next ones; that is not modelled.\n";

/// `Report::extra` key of the limits a run's capacity was searched under.
pub const LIMITS: &str = "capacity_limits";

/// The limits of a run, as its report keeps them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunLimits {
    pub update_instructions: u64,
    pub query_instructions: u64,
    pub wasm_memory_limit: u64,
}

impl From<&Limits> for RunLimits {
    fn from(l: &Limits) -> Self {
        RunLimits {
            update_instructions: l.max_instructions_per_update,
            query_instructions: l.max_instructions_per_query,
            wasm_memory_limit: l.wasm_memory_limit,
        }
    }
}

/// The capacity table of a report: one row per store (and mode) and message, in the order
/// the records name them; None without capacity records.
pub fn table(report: &Report) -> Option<Table> {
    let records: Vec<&ScenarioResult> = report
        .results
        .iter()
        .filter(|r| Message::ALL.iter().any(|m| m.operation() == r.operation))
        .collect();
    render(&records, report.extra(LIMITS))
}

/// Estimates only, from a report without capacity records (seed003's, at its one size):
/// per store and mode, the largest middle insert and the largest middle lookup measured
/// (the shapes the capacity calls send), against an application subnet's limits and
/// instructions alone. None when no store has such records.
pub fn estimate_table(report: &Report) -> Option<Table> {
    let limits = Limits::APPLICATION;
    let ctx = Context {
        suite: &report.suite,
        engine: &report.engine,
        usd_per_xdr: 0.0,
    };
    let mut estimates = Vec::new();
    let mut stores: Vec<(String, String)> = Vec::new();
    for r in &report.results {
        let key = (r.store.clone(), r.journal_mode.clone());
        if !stores.contains(&key) {
            stores.push(key);
        }
    }
    for (store, mode) in &stores {
        let Some(store_value) = crate::stores::parse(store, mode) else {
            continue;
        };
        for message in Message::ALL {
            let Some(batch) = report
                .results
                .iter()
                .filter(|r| {
                    &r.store == store
                        && &r.journal_mode == mode
                        && r.position == "middle"
                        && r.status == Status::Ok
                        && message.measures(&r.operation)
                })
                .max_by_key(|r| r.batch)
            else {
                continue;
            };
            let bounds = Bounds {
                instruction_limit: message.limit(&limits),
                heap_room: None,
                max_rows: (message == Message::Lookup).then_some(batch.rows_before),
            };
            if let Some((_, _, record)) = estimate(&ctx, &bounds, store_value, message, batch, None)
            {
                estimates.push(record);
            }
        }
    }
    let records: Vec<&ScenarioResult> = estimates.iter().collect();
    render(&records, Some(RunLimits::from(&limits)))
}

fn render(records: &[&ScenarioResult], limits: Option<RunLimits>) -> Option<Table> {
    if records.is_empty() {
        return None;
    }
    let limit_cell = |message: Message| match limits {
        Some(l) => format!(
            "{} ({})",
            message.title(),
            compact(match message {
                Message::Insert => l.update_instructions,
                Message::Lookup => l.query_instructions,
            } as f64)
        ),
        None => message.title().to_string(),
    };
    let message_of = |r: &ScenarioResult| {
        if r.operation == Message::Insert.operation() {
            Message::Insert
        } else {
            Message::Lookup
        }
    };
    if !records.iter().any(|r| r.position == FITS) {
        let mut table = Table::new(
            [
                "store",
                "message (limit)",
                "charged per row",
                "estimated largest batch",
            ]
            .map(String::from)
            .to_vec(),
        );
        for r in records.iter().filter(|r| r.position == ESTIMATE) {
            table.push(vec![
                crate::stores::label(&r.store, &r.journal_mode),
                limit_cell(message_of(r)),
                per_row(r.instructions_per_row),
                if r.batch == r.rows_before && r.operation == Message::Lookup.operation() {
                    format!("{} (every row)", thousands(r.batch))
                } else {
                    thousands(r.batch)
                },
            ]);
        }
        return Some(table);
    }
    let mut table = Table::new(
        [
            "store",
            "message (limit)",
            "estimate (instr/row)",
            "largest that fits",
            "charged",
            "one step above",
        ]
        .map(String::from)
        .to_vec(),
    );
    let mut seen: Vec<(String, String, String)> = Vec::new();
    for r in records {
        let key = (r.store.clone(), r.journal_mode.clone(), r.operation.clone());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let at = |position: &str| {
            records.iter().find(|x| {
                x.store == r.store
                    && x.journal_mode == r.journal_mode
                    && x.operation == r.operation
                    && x.position == position
            })
        };
        let estimate = at(ESTIMATE)
            .map(|e| {
                format!(
                    "{} ({})",
                    thousands(e.batch),
                    per_row(e.instructions_per_row)
                )
            })
            .unwrap_or_else(|| "-".into());
        let (fits, its) = match at(FITS) {
            Some(f) if f.status == Status::Ok => {
                (thousands(f.batch), compact(f.instructions as f64))
            }
            Some(f) => (format!("failed: {}", status_text(&f.status)), "-".into()),
            None => ("not confirmed (`--suite scaling`)".into(), "-".into()),
        };
        let above = match at(ABOVE) {
            Some(a) => {
                // The replica's error code, else the whole reason.
                let reason = status_text(&a.status);
                let code = super::decision::error_code(&reason);
                format!(
                    "{}: {}",
                    thousands(a.batch),
                    if code.is_empty() { reason } else { code }
                )
            }
            None if at(FITS).is_some() => "- (all rows fit)".into(),
            None => "-".into(),
        };
        table.push(vec![
            crate::stores::label(&r.store, &r.journal_mode),
            limit_cell(message_of(r)),
            estimate,
            fits,
            its,
            above,
        ]);
    }
    Some(table)
}

fn status_text(status: &Status) -> String {
    match status {
        Status::Ok => "ok".into(),
        Status::Refused(e) | Status::Failed(e) => e.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_explanation_says_when_pages_are_charged() {
        let mut report = crate::report::fixture::report(Vec::new());
        report.set_replica(Some(crate::engine::cost::Replica::R2026_05));
        assert_eq!(explained(&report), EXPLAINED);
        assert!(EXPLAINED.contains(DIRTY_PAGES_PAST_THE_LIMIT));
        report.set_replica(Some(crate::engine::cost::Replica::R2026_07));
        let text = explained(&report);
        assert!(!text.contains("dirty-page") && text.contains(PAGES_WITHIN_THE_LIMIT));
    }

    #[test]
    fn steps_keep_three_significant_digits() {
        assert_eq!(step_for(0), 1);
        assert_eq!(step_for(999), 1);
        assert_eq!(step_for(1_000), 10);
        assert_eq!(step_for(654_321), 1_000);
        assert_eq!(step_for(12_345_678), 100_000);
    }

    /// Bounds of the instruction limit alone.
    fn limit(instruction_limit: u64) -> Bounds {
        Bounds {
            instruction_limit,
            heap_room: None,
            max_rows: None,
        }
    }

    /// [`search`] from `known` on a store whose message costs `fixed + per_row * rows`
    /// instructions and grows the heap by `heap_per_row` bytes per row: what it found and
    /// the sizes it called.
    fn search_linear(
        bounds: Bounds,
        known: Fit,
        estimate: u64,
        (fixed, per_row, heap_per_row): (u64, u64, u64),
    ) -> (Found, Vec<u64>) {
        let mut calls = Vec::new();
        let found = search(&bounds, known, estimate, &mut |rows| {
            calls.push(rows);
            let instructions = fixed + per_row * rows;
            let heap_growth = heap_per_row * rows;
            let fits = instructions <= bounds.instruction_limit
                && bounds.heap_room.is_none_or(|room| heap_growth <= room);
            Ok(fits.then_some(Fit {
                rows,
                instructions,
                heap_growth,
            }))
        })
        .unwrap();
        (found, calls)
    }

    #[test]
    fn finds_the_instruction_limit_to_one_step() {
        let bounds = limit(40_000_000_000);
        // 61,234 instructions per row and 2M fixed: 653,199 rows fit.
        let known = Fit {
            rows: 1_000,
            instructions: 2_000_000 + 61_234_000,
            heap_growth: 0,
        };
        let estimate = predict(&bounds, &known, None);
        let (found, calls) = search_linear(bounds, known, estimate, (2_000_000, 61_234, 0));
        assert_eq!(found.step, 1_000);
        assert_eq!(found.fits.rows, 653_000);
        assert_eq!(found.fails, Some(654_000));
        assert!(found.converged(&bounds));
        assert_eq!(calls.len() as u32, found.calls);
        assert!(found.calls <= 3, "{calls:?}");
    }

    #[test]
    fn the_heap_room_can_stop_a_message_first() {
        let bounds = Bounds {
            heap_room: Some(3_000_000_000),
            ..limit(40_000_000_000)
        };
        let known = Fit {
            rows: 1_000,
            instructions: 1_500_000,
            heap_growth: 131_072,
        };
        // The batch's heap growth is page-rounded (131 B/row against 150 real): the first
        // guess overshoots and is rejected; the search still ends one step apart.
        let estimate = predict(&bounds, &known, None);
        let (found, _) = search_linear(bounds, known, estimate, (100_000, 1_400, 150));
        assert_eq!(found.fits.rows, 20_000_000);
        assert_eq!(found.fails, Some(20_100_000));
        assert!(found.calls <= MAX_CALLS);
    }

    #[test]
    fn lookups_stop_at_the_rows_stored() {
        let bounds = Bounds {
            max_rows: Some(1_000_000),
            ..limit(5_000_000_000)
        };
        let known = Fit {
            rows: 100,
            instructions: 100_000,
            heap_growth: 0,
        };
        let estimate = predict(&bounds, &known, None);
        let (found, calls) = search_linear(bounds, known, estimate, (0, 1_000, 0));
        assert_eq!((found.fits.rows, found.fails), (1_000_000, None));
        assert!(found.converged(&bounds));
        assert_eq!(calls, vec![1_000_000]);
    }

    #[test]
    fn a_batch_already_at_the_limit_needs_only_the_call_above() {
        let known = Fit {
            rows: 100,
            instructions: 1_000_000,
            heap_growth: 0,
        };
        let (found, calls) = search_linear(limit(1_000_000), known, 100, (0, 10_000, 0));
        assert_eq!((found.fits.rows, found.fails), (100, Some(101)));
        assert_eq!(calls, vec![101]);
    }
}
