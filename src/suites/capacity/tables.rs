//! The capacity tables of a report, from its records alone: the estimates, and where they
//! were confirmed the size that fits and the one above it, with the explanation under them.

use super::{estimate, Bounds, Context, Message, ABOVE, ESTIMATE, FITS};
use crate::engine::cost::{Host, Limits};
use crate::report::format::{compact, per_row, thousands};
use crate::report::{Report, ScenarioResult, Status, Table};

/// The capacity tables' explanation, for the rules `report` was charged by: the vintage
/// decides when an update's page charges are taken, the host what a page is.
pub fn explained(report: &Report) -> String {
    let page_rule = match report.wasm_page_charge() {
        Some(per_page) => pages_within_the_limit(per_page),
        None => dirty_pages_past_the_limit(report.host()),
    };
    [EXPLAINED_BEFORE, &page_rule, EXPLAINED_AFTER].concat()
}

/// When an update's page charges are taken: after execution before the memory tracker...
fn dirty_pages_past_the_limit(host: Host) -> String {
    format!(
        "An update's charged instructions can pass the limit by the heap's dirty-page charge \
         (1,000 per {} KiB page), which the replica applies after execution, where the limit no \
         longer stops it.",
        host.os_page_size() / 1024
    )
}

/// ... and during it under the tracker (`per_page` on the run's host).
fn pages_within_the_limit(per_page: u64) -> String {
    format!(
        "The memory tracker's page charges ({} instructions per 64 KiB page of heap or stable \
         memory first touched, as much again per page first written) are taken during the \
         message and count against the limit.",
        thousands(per_page)
    )
}

/// The explanation under the capacity tables, before and after the page rule.
const EXPLAINED_BEFORE: &str = concat!(
    "Estimate: the message's instruction limit over the instructions charged per row by the \
     largest batch measured at this size (1,000-row inserts, 100-key lookups); for an insert \
     into the heap map also the heap left under the canister's `wasm_memory_limit` over the \
     map's heap bytes per row, whichever comes first. ",
    "Then real calls, each from the same snapshot: the largest size that fits, to three \
     significant digits of the estimate, and the size one step above it, which the replica \
     rejects with the error shown (IC0522: the per-message instruction limit; IC0539: the \
     Wasm memory limit). ",
    "Inserts are `add_users_*(offset, 10, K)`: new ids between the stored ones from the \
     middle on (past the last one beyond N/2 rows). ",
    "Lookups are `get_users_*(offset, 10, K)` as a query over the K stored rows around the \
     middle: all present, consecutive, so they share pages and cost less per key than the \
     random keys of the estimate. When every stored row fits in one query, the table says \
     so. ",
);
const EXPLAINED_AFTER: &str = " Caveats: the canister replies with counts, not rows; a method \
     that returns 100-byte rows is also bound by the reply size (2 MiB for an update's reply), \
     about 20,000 rows. Rows are 100 bytes (`--payload-size`). The replica also rate-limits \
     how fast a canister's heap may change (75 MiB per round), so a message that writes \
     gigabytes delays the canister's next ones; that is not modelled.\n";

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
                let code = crate::suites::decision::error_code(&reason);
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
    fn the_explanation_says_when_pages_are_charged_and_what_a_page_is() {
        use crate::engine::cost::Replica;
        let mut report = crate::report::fixture::report(Vec::new());
        report.set_replica(Some(Replica::R2026_05));
        let dirty = "by the heap's dirty-page charge (1,000 per 4 KiB page), which the replica \
                     applies after execution, where the limit no longer stops it. Caveats:";
        assert!(explained(&report).contains(dirty), "{}", explained(&report));
        report.set_replica(Some(Replica::R2026_07));
        let text = explained(&report);
        assert!(!text.contains("dirty-page"), "{text}");
        assert!(text.contains(
            "so. The memory tracker's page charges (80,000 instructions per 64 KiB page of heap \
             or stable memory first touched, as much again per page first written) are taken \
             during the message and count against the limit. Caveats:"
        ));
        // On a Mac a page is 16 KiB: a quarter of the tracker's charge, and the dirty-page
        // charge per 16 KiB page before it.
        report.set_host(Some(Host::MacosArm64));
        assert!(explained(&report).contains("(20,000 instructions per 64 KiB page"));
        report.set_replica(Some(Replica::R2026_05));
        assert!(explained(&report).contains("(1,000 per 16 KiB page)"));
    }
}
