//! The dbbench suite's run: per store, db_bench's benchmarks in order, each sequence from
//! a fresh benchmark on to the next one a scenario of its own, and their records.

use anyhow::{anyhow, Result};

use super::{keys, Bench, Config, KvStore, Totals, OPS_PER_MESSAGE, SUITE, VALUE_SIZE};
use crate::bench_canister::{BenchClient, DbBenchWrite};
use crate::engine::SnapshotId;
use crate::report::work::Kind;
use crate::report::{Report, ScenarioResult, Status};
use crate::stores;
use crate::suites::pool;
use crate::suites::shared::{Header, Run};

/// A store's benchmarks from one fresh benchmark up to the next one: they run in order on
/// one canister (each on what the previous left), independently of every other run.
struct Sequence {
    store: KvStore,
    /// Index into `Bench::ALL` of the first benchmark, and one past the last.
    benches: std::ops::Range<usize>,
    /// The store's empty state, and why the store was refused if it was.
    fresh: SnapshotId,
    refused: Option<String>,
}

/// Runs the suite: per store, db_bench's benchmarks in order, fresh ones from an empty
/// store, the others on what the previous benchmark left.
pub(super) fn measure(cfg: &Config, run: Run<'_>) -> Result<Report> {
    let (session, exec) = (run.session, run.exec);
    let (work, engine_name) = (&session.work, &session.engine_name);
    let (mut client, installed) = session.install(run.engine, run.wasm)?;
    let canister = client.canister;
    let num = cfg.num;
    let all_keys = keys(num);
    // The empty store, warm: journal mode set, table created, statements compiled.
    let base = client.engine.snapshot(canister)?;
    let mut sequences = Vec::new();
    let mut set_up = Vec::new();
    for store in cfg.kv_stores() {
        let open = work.begin(
            Kind::Fill,
            format!("set up {}", store.record()),
            &[installed],
        );
        client.engine.restore(canister, base)?;
        let refused = match store.journal_mode() {
            Some(mode) => stores::set_journal_mode(&mut client, mode)?.err(),
            None => None,
        };
        let name = store.canister_name(SUITE);
        client
            .dbbench_reset(name)?
            .value
            .map_err(|e| anyhow!("dbbench_reset({name}) failed: {e}"))?;
        let fresh = client.engine.snapshot(canister)?;
        set_up.push(open.id);
        work.end(open);
        for first in (0..Bench::ALL.len()).filter(|&b| Bench::ALL[b].fresh()) {
            let end = (first + 1..Bench::ALL.len())
                .find(|&b| Bench::ALL[b].fresh())
                .unwrap_or(Bench::ALL.len());
            sequences.push(Sequence {
                store,
                benches: first..end,
                fresh,
                refused: refused.clone(),
            });
        }
    }
    let measured = pool::run_scenarios(
        &mut client,
        base,
        sequences.len(),
        exec,
        work,
        &set_up,
        &|i| {
            let seq = &sequences[i];
            format!("{}/{}", seq.store.record(), Bench::ALL[seq.benches.start])
        },
        run.progress,
        &|client, i| {
            let seq = &sequences[i];
            let store = seq.store;
            let mut present = std::collections::BTreeSet::new();
            let mut results = Vec::new();
            client.engine.restore(canister, seq.fresh)?;
            for (bench, bench_keys) in &all_keys[seq.benches.clone()] {
                let bench = *bench;
                let (keys, ops): (Vec<u64>, u64) = match bench {
                    Bench::ReadSeq | Bench::ReadSeq100K => {
                        // db_bench reads min(reads, rows) rows in key order.
                        let sorted: Vec<u64> = present.iter().copied().collect();
                        let ops = bench.ops(num).min(sorted.len() as u64);
                        (sorted, ops)
                    }
                    _ => (bench_keys.clone(), bench_keys.len() as u64),
                };
                let outcome = match &seq.refused {
                    Some(reason) => Err(reason.clone()),
                    None => run_bench(client, store, bench, &keys, ops)?,
                };
                if bench.is_write() {
                    present.extend(bench_keys.iter().copied());
                }
                results.push(result(
                    cfg,
                    engine_name,
                    store,
                    bench,
                    ops,
                    &keys,
                    outcome,
                    seq.refused.is_some(),
                ));
            }
            Ok(results.into())
        },
    )?;
    let header = Header {
        workload: crate::report::Workload {
            rows_before: 0,
            seed: 301,
            payload_size: VALUE_SIZE,
        },
        prefill: None,
        notes: notes(num),
    };
    Ok(session.report(&client, header, measured))
}

/// Runs one benchmark's messages on the current state. `keys` are the keys to write or
/// look up, or for the sequential reads the start key of each message (the host knows
/// which keys are present, so the canister need not return where a message stopped).
fn run_bench(
    client: &mut BenchClient<'_>,
    store: KvStore,
    bench: Bench,
    keys: &[u64],
    ops: u64,
) -> Result<Result<Totals, String>> {
    let name = store.canister_name(SUITE);
    let mut totals = Totals::default();
    let mut done = 0;
    while done < ops {
        let n = OPS_PER_MESSAGE.min(ops - done);
        let slice = &keys[done as usize..(done + n) as usize];
        let measured = match bench {
            Bench::ReadSeq | Bench::ReadSeq100K => client.dbbench_read_seq(name, slice[0], n)?,
            Bench::ReadRandom | Bench::ReadRand100K => client.dbbench_read_random(name, slice)?,
            _ => client.dbbench_write(&DbBenchWrite {
                store: name.into(),
                keys: slice.to_vec(),
                value_size: bench.value_size(),
                first_value: done,
                transaction_per_row: bench.transaction_per_row(),
            })?,
        };
        if let Err(e) = totals.add(measured, bench.is_write()) {
            return Ok(Err(format!(
                "message {} of {bench}: {e}",
                totals.messages + 1
            )));
        }
        done += n;
    }
    Ok(Ok(totals))
}

#[allow(clippy::too_many_arguments)]
fn result(
    cfg: &Config,
    engine: &str,
    store: KvStore,
    bench: Bench,
    ops: u64,
    keys: &[u64],
    outcome: Result<Totals, String>,
    refused: bool,
) -> ScenarioResult {
    let method = match bench {
        Bench::ReadSeq | Bench::ReadSeq100K => "dbbench_read_seq",
        Bench::ReadRandom | Bench::ReadRand100K => "dbbench_read_random",
        _ => "dbbench_write",
    };
    let first: Vec<String> = keys.iter().take(3).map(|k| k.to_string()).collect();
    let messages = ops.div_ceil(OPS_PER_MESSAGE);
    let args = format!(
        "store {:?}, keys {}{}, value_size {}, {} per message, {messages} message(s){}",
        store.canister_name(SUITE),
        first.join(", "),
        if keys.len() > 3 { ", ..." } else { "" },
        if bench.is_write() {
            bench.value_size()
        } else {
            0
        },
        OPS_PER_MESSAGE.min(ops.max(1)),
        if bench.is_write() && bench.transaction_per_row() {
            ", a transaction per write"
        } else {
            ""
        }
    );
    let mut r = ScenarioResult {
        suite: SUITE.into(),
        engine: engine.into(),
        store: store.record().into(),
        journal_mode: store.journal_column(),
        position: "db_bench".into(),
        operation: bench.name().into(),
        batch: ops,
        rows_before: 0,
        method: method.into(),
        args,
        ..ScenarioResult::default()
    };
    match outcome {
        Err(reason) if refused => r.status = Status::Refused(reason),
        Err(reason) => r.status = Status::Failed(reason),
        Ok(t) if t.ops != ops => {
            r.status = Status::Failed(format!(
                "expected {ops} ops, the canister reports {}",
                t.ops
            ));
        }
        Ok(t) => {
            let n = ops.max(1) as f64;
            r.store_instructions = t.store_instructions;
            r.store_instructions_per_row = t.store_instructions as f64 / n;
            r.instructions = t.instructions;
            r.instructions_per_row = t.instructions as f64 / n;
            r.cycles = t.cycles as u64;
            r.usd = t.cycles as f64 / 1e12 * cfg.usd_per_xdr;
            r.heap_pages_delta = t.heap_delta;
            r.stable_pages_delta = t.stable_delta;
            r.heap_dirty_pages = t.heap_dirty;
            r.add_profile(t.profile.as_ref());
            r.stable_dirty_pages = t.stable_dirty;
            r.pages = t.pages;
            r.bytes = t.bytes;
            // Reads of absent keys are ops too (db_bench counts them); found is in bytes.
            let _ = t.found;
        }
    }
    r
}

fn notes(num: u64) -> Vec<String> {
    vec![
            format!("db_bench (seed 000) with N = {num}: keys are 16-byte \"%016d\" numbers, values 100 bytes (100,000 for the 100K benchmarks) of db_bench's half-compressible buffer; random keys come from LevelDB's Random(301) shared across the run as in db_bench_sqlite3, so they are db_bench's keys."),
            format!("Ops go {OPS_PER_MESSAGE} per update message (db_bench's batch size; an update must stay under 40B instructions). fillseq, fillrandom, overwrite and the 100K fills run each write in its own SQLite transaction (db_bench's autocommit); the *batch benchmarks one transaction per message. Reads are queries of up to {OPS_PER_MESSAGE} ops."),
            "Time is replaced by instructions: \"instructions/op\" is ic0.performance_counter(0) around the store work, summed over the benchmark's messages and divided by its ops; \"charged\" adds the rest of each message as the replica bills it. bytes/op is key + value bytes written or found (db_bench_sqlite3's readseq counted only value bytes).".into(),
            "Left out: fillseqsync and fillrandsync (a canister has no fsync; an update commits when it ends), the WAL checkpoint db_bench runs after each write benchmark (SQLite checkpoints on its own here), and timing. db_bench's second readseq is named readseq100K.".into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(ops: u64) -> Totals {
        Totals {
            ops,
            store_instructions: 300,
            instructions: 600,
            cycles: 5_000_600,
            bytes: 348,
            messages: 1,
            ..Totals::default()
        }
    }

    #[test]
    fn a_benchmark_s_record_says_its_call_and_how_it_ended() {
        let cfg = Config::default();
        // The map, then SQLite's rowid table in WAL.
        let (store, sqlite) = (cfg.kv_stores()[0], cfg.kv_stores()[1]);
        let keys = [7, 1, 4, 9];
        let ok = result(
            &cfg,
            "embedded",
            store,
            Bench::FillSeq,
            4,
            &keys,
            Ok(totals(4)),
            false,
        );
        assert_eq!(
            ok.args,
            "store \"btree\", keys 7, 1, 4, ..., value_size 100, 4 per message, 1 message(s), a transaction per write"
        );
        assert_eq!((ok.store.as_str(), ok.journal_mode.as_str()), ("btree", ""));
        assert_eq!(
            (ok.method.as_str(), ok.status.clone()),
            ("dbbench_write", Status::Ok)
        );
        assert_eq!(ok.store_instructions_per_row, 75.0);
        assert_eq!(ok.instructions_per_row, 150.0);
        let short = result(
            &cfg,
            "embedded",
            store,
            Bench::ReadSeq,
            4,
            &keys,
            Ok(totals(3)),
            false,
        );
        assert_eq!(short.method, "dbbench_read_seq");
        assert_eq!(
            short.status,
            Status::Failed("expected 4 ops, the canister reports 3".into())
        );
        let refused = result(
            &cfg,
            "embedded",
            sqlite,
            Bench::ReadRandom,
            4,
            &keys,
            Err("WAL refused".into()),
            true,
        );
        assert_eq!(refused.status, Status::Refused("WAL refused".into()));
        assert_eq!(
            (refused.store.as_str(), refused.journal_mode.as_str()),
            ("sqlite", "WAL")
        );
        assert!(
            refused.args.starts_with("store \"sqlite_rowid\""),
            "{}",
            refused.args
        );
    }
}
