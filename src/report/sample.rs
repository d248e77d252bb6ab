//! The result the report's tests build their samples from. Shared by the report's unit tests
//! and the integration tests (tests/it/support includes this file), whose samples differ in
//! the suite, sizes and costs they set on top.

use super::ScenarioResult;

/// A result of the `add_users_{store}` method on the embedded engine, named by its scenario;
/// the rest default.
pub fn named(
    store: &str,
    journal_mode: &str,
    position: &str,
    operation: &str,
    batch: u64,
) -> ScenarioResult {
    ScenarioResult {
        engine: "embedded".into(),
        store: store.into(),
        journal_mode: journal_mode.into(),
        position: position.into(),
        operation: operation.into(),
        batch,
        method: format!("add_users_{store}"),
        ..ScenarioResult::default()
    }
}

/// `r` charged `instructions`, `store_instructions` of them for the store's work, with the
/// per-row figures and the cycles (5,000,000 plus 0.4 per instruction) that follow.
pub fn charged(r: ScenarioResult, instructions: u64, store_instructions: u64) -> ScenarioResult {
    ScenarioResult {
        instructions,
        instructions_per_row: instructions as f64 / r.batch as f64,
        store_instructions,
        store_instructions_per_row: store_instructions as f64 / r.batch as f64,
        cycles: 5_000_000 + instructions * 4 / 10,
        ..r
    }
}
