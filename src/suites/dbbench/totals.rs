//! A benchmark's messages summed into one record: the dbbench suite's, and the keys and
//! sysbench suites', whose messages report the same `DbBenchReport`.

use anyhow::Result;

use crate::bench_canister::{DbBenchReport, Measured};
use crate::engine::cost::CyclesFees;
use crate::engine::PageCounts;
use crate::report::ScenarioResult;

/// Sums the messages of one benchmark (shared with the keys and sysbench suites, whose
/// messages report the same `DbBenchReport`).
#[derive(Default)]
pub(crate) struct Totals {
    pub(crate) ops: u64,
    pub(crate) found: u64,
    pub(crate) bytes: u64,
    pub(crate) store_instructions: u64,
    pub(crate) instructions: u64,
    pub(crate) cycles: u128,
    pub(crate) heap_delta: i64,
    pub(crate) stable_delta: i64,
    pub(crate) heap_dirty: u64,
    pub(crate) stable_dirty: u64,
    pub(crate) pages: Option<PageCounts>,
    pub(crate) messages: u64,
    /// The messages' profiles added up, when the run profiles.
    pub(crate) profile: Option<crate::engine::Profile>,
}

impl Totals {
    pub(crate) fn add(&mut self, m: Measured<DbBenchReport>, update: bool) -> Result<(), String> {
        let r = m.value?;
        let msg = m.message;
        self.ops += r.ops;
        self.found += r.found;
        self.bytes += r.bytes;
        self.store_instructions += r.instructions;
        self.instructions += msg.instructions;
        if update {
            self.cycles += CyclesFees::APPLICATION_13.execution_cost(msg.instructions, false);
        }
        self.heap_delta += (msg.heap_bytes_after as i64 - msg.heap_bytes_before as i64) / 65536;
        self.stable_delta +=
            (msg.stable_bytes_after as i64 - msg.stable_bytes_before as i64) / 65536;
        self.heap_dirty += msg.heap_dirty_pages;
        self.stable_dirty += msg.stable_dirty_pages;
        self.pages = PageCounts::sum(self.pages, msg.pages.as_ref());
        self.messages += 1;
        crate::engine::Profile::add_to_sum(&mut self.profile, msg.profile.as_ref());
        Ok(())
    }

    /// The measured part of a record that sums several messages (the keys and sysbench
    /// suites'), per `per` rows: priced as updates, with neither an ingress price nor one
    /// message's page map.
    pub(crate) fn record(&self, per: u64, usd_per_xdr: f64) -> ScenarioResult {
        ScenarioResult {
            instructions: self.instructions,
            instructions_per_row: self.instructions as f64 / per as f64,
            store_instructions: self.store_instructions,
            store_instructions_per_row: self.store_instructions as f64 / per as f64,
            cycles: self.cycles as u64,
            usd: self.cycles as f64 / 1e12 * usd_per_xdr,
            heap_pages_delta: 0,
            stable_pages_delta: self.stable_delta,
            heap_dirty_pages: self.heap_dirty,
            stable_dirty_pages: self.stable_dirty,
            pages: self.pages,
            bytes: self.bytes,
            ingress_cycles: 0,
            profile: String::new(),
            profile_data: self.profile.clone(),
            page_map_data: None,
            ..ScenarioResult::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::MessageReport;

    fn message(ops: u64, instructions: u64) -> Measured<DbBenchReport> {
        Measured {
            value: Ok(DbBenchReport {
                ops,
                found: ops - 1,
                bytes: ops * 116,
                instructions: instructions / 2,
                heap_pages: 0,
                stable_pages: 0,
            }),
            message: MessageReport {
                instructions,
                heap_dirty_pages: 3,
                stable_dirty_pages: 5,
                heap_bytes_before: 65_536,
                heap_bytes_after: 3 * 65_536,
                stable_bytes_before: 0,
                stable_bytes_after: 65_536,
                ..MessageReport::default()
            },
            request_bytes: 100,
        }
    }

    #[test]
    fn messages_add_up_and_only_updates_pay_cycles() {
        let mut t = Totals::default();
        t.add(message(1_000, 2_000_000), true).unwrap();
        t.add(message(500, 1_000_000), false).unwrap();
        assert_eq!((t.ops, t.found, t.bytes), (1_500, 1_498, 1_500 * 116));
        assert_eq!(
            (t.instructions, t.store_instructions),
            (3_000_000, 1_500_000)
        );
        assert_eq!(
            t.cycles,
            CyclesFees::APPLICATION_13.execution_cost(2_000_000, false)
        );
        assert_eq!((t.heap_delta, t.stable_delta), (4, 2));
        assert_eq!((t.heap_dirty, t.stable_dirty, t.messages), (6, 10, 2));
        let r = t.record(1_500, 1.0);
        assert_eq!(r.instructions_per_row, 2_000.0);
        assert_eq!(r.store_instructions_per_row, 1_000.0);
        assert_eq!(r.bytes, 1_500 * 116);
        // Summed messages have no one heap growth to show.
        assert_eq!((r.heap_pages_delta, r.stable_pages_delta), (0, 2));
    }

    #[test]
    fn a_refused_message_is_its_reason_and_adds_nothing() {
        let mut t = Totals::default();
        let mut refused = message(1, 10);
        refused.value = Err("no such table".into());
        assert_eq!(t.add(refused, true), Err("no such table".to_string()));
        assert_eq!((t.messages, t.instructions), (0, 0));
    }
}
