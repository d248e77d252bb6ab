//! The Wasm pages of a bench's scopes: those first touched in the bench's query while the
//! scope was open, summed over its calls as canbench-rs sums its instructions.
//!
//! canbench-rs measures a scope (`bench_scope`, 0.2.0 to 0.7.0) by two
//! `ic0.performance_counter(0)` reads: the last thing its guard does when created, and
//! the last thing it does when dropped. It keeps each call's interval `[start, end)` of
//! readings and, at the end of `bench_fn`, sums per name the length of the union of the
//! intervals (a scope nested in one of the same name, or recursive, is not counted twice).
//! The reply has those sums, not the intervals, so the host cannot tell which reads were
//! which scope's. Instead the bench runs a second time, from the same state and clock,
//! with every read returning a number that packs the read's index and the pages touched
//! until then ([`CounterEncoding`]): canbench-rs then computes, with its own bookkeeping,
//! the sum of the page counts over each scope's intervals, which is decoded from the
//! reply's `instructions`. The second run counts only if its reads are the first run's,
//! instruction for instruction and page for page, and it spends as many instructions:
//! a bench whose code depends on the counter's values (beyond their order) gets no scope
//! pages rather than wrong ones.

use std::collections::BTreeMap;

use anyhow::Result;
use candid::Principal;

use super::results::BenchResult;
use crate::engine::counter_reads::{self, CounterEncoding, CounterRead, CounterReads};
use crate::engine::embedded::EmbeddedEngine;
use crate::engine::{Engine, PageCounts};

/// The first run of a bench, as [`attribute`] needs it.
pub struct FirstRun<'a> {
    /// The engine's clock before the run.
    pub time_ns: u64,
    pub result: &'a BenchResult,
    pub reads: &'a [CounterRead],
    /// The query's instructions.
    pub instructions: u64,
}

/// Each scope's pages (see the module's comment), or why there are none. Runs `method`
/// again with `arg` once per encoding (usually once); leaves the engine's counter reads
/// off and its clock where the first run left it.
pub fn attribute(
    engine: &mut EmbeddedEngine,
    canister: Principal,
    method: &str,
    arg: &[u8],
    first: &FirstRun<'_>,
) -> Result<std::result::Result<BTreeMap<String, PageCounts>, String>> {
    let Some(plans) = CounterEncoding::plan(first.reads) else {
        return Ok(Err("too many pages to encode in the counter".into()));
    };
    let after = engine.time_ns();
    let mut decoded: BTreeMap<&String, Vec<[Option<u64>; 5]>> = BTreeMap::new();
    let mut why = None;
    for plan in plans {
        engine.set_time_ns(first.time_ns);
        engine.set_counter_reads(CounterReads::Encode(plan.clone()));
        let out = engine.query(canister, method, arg);
        engine.set_counter_reads(CounterReads::Off);
        let out = out?;
        let reads = engine.counter_reads();
        let again = match out.result {
            Ok(bytes) => candid::decode_one::<BenchResult>(&bytes).ok(),
            Err(_) => None,
        };
        let same = reads == first.reads
            && out.report.instructions == first.instructions
            && again.as_ref().is_some_and(|a| {
                a.scopes.len() == first.result.scopes.len()
                    && a.scopes
                        .iter()
                        .zip(&first.result.scopes)
                        .all(|((n, m), (n0, m0))| n == n0 && m.calls == m0.calls)
            });
        if !same {
            why = Some("it does not run the same with other performance_counter values".into());
            break;
        }
        for (name, m) in &again.expect("checked").scopes {
            let (key, _) = first.result.scopes.get_key_value(name).expect("same names");
            decoded
                .entry(key)
                .or_default()
                .push(plan.decode(m.instructions));
        }
    }
    engine.set_time_ns(after);
    if let Some(why) = why {
        return Ok(Err(why));
    }
    Ok(Ok(decoded
        .into_iter()
        .filter_map(|(name, d)| Some((name.clone(), counter_reads::page_counts(&d)?)))
        .collect()))
}
