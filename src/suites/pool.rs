//! Running a plan's independent scenarios on several cores (`--jobs`) and running one part
//! of a plan (`--shard K/N`). The scheduling lives here only: a suite prepares its canister
//! (install, prefill, snapshots) on the engine it is given, then hands [`run_scenarios`]
//! one function that runs scenario `i` on any engine from that state.
//!
//! Results do not depend on `--jobs`: every scenario starts from a snapshot (it restores
//! the one it needs), each worker runs on its own fork of the engine, and results are put
//! back in plan order.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};

use anyhow::{anyhow, bail, Result};

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::Progress;
use crate::bench_canister::BenchClient;
use crate::engine::SnapshotId;
use crate::report::work::Kind;
use crate::report::{Report, ScenarioResult};
use crate::stores::Modules;

// libc calls: a worker hands freed memory back to the system (malloc_trim, graph.rs) and
// reads its CPU clock and resource usage (clock_gettime, getrusage, gettid: record.rs).
#[allow(unsafe_code)]
pub mod graph;
// Shared memory, pipes, fork's signals and exit statuses of worker processes.
#[allow(unsafe_code)]
pub mod process;
#[allow(unsafe_code)]
pub mod record;

pub use graph::{Join, Lane, State, Task};
pub use record::{Chain, Recorder, UnitId};

/// One of N disjoint parts of a plan: `--shard K/N`. Scenario `i` (0-based, in plan order)
/// belongs to part `i % N + 1`, so every part gets a share of each kind of scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// K, from 1.
    pub index: usize,
    /// N.
    pub count: usize,
}

impl Shard {
    /// The whole plan: `1/1`.
    pub const WHOLE: Shard = Shard { index: 1, count: 1 };

    pub fn includes(self, scenario: usize) -> bool {
        scenario % self.count == self.index - 1
    }

    pub fn is_whole(self) -> bool {
        self.count == 1
    }
}

/// Checks that the parts `(K, where it came from)` of an N-part run hold every K from 1 to N
/// exactly once; the error names the part given twice or the parts missing.
pub fn check_parts_cover(parts: &[(usize, &std::path::Path)], count: usize) -> Result<()> {
    let mut sorted: Vec<&(usize, &std::path::Path)> = parts.iter().collect();
    sorted.sort_by_key(|(k, _)| *k);
    for pair in sorted.windows(2) {
        if pair[0].0 == pair[1].0 {
            bail!(
                "shard {}/{count} is given twice: {} and {}",
                pair[0].0,
                pair[0].1.display(),
                pair[1].1.display()
            );
        }
    }
    let missing: Vec<String> = (1..=count)
        .filter(|k| !sorted.iter().any(|(have, _)| have == k))
        .map(|k| format!("{k}/{count}"))
        .collect();
    if !missing.is_empty() {
        let have: Vec<String> = sorted
            .iter()
            .map(|(k, path)| format!("{k}/{count} in {}", path.display()))
            .collect();
        bail!(
            "shard{} {} missing (have {})",
            if missing.len() > 1 { "s" } else { "" },
            missing.join(", "),
            have.join(", ")
        );
    }
    Ok(())
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("expected K/N with 1 <= K <= N (e.g. 2/4), got {s:?}");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (k, n): (usize, usize) = (
            k.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if k == 0 || n == 0 || k > n {
            return Err(bad());
        }
        Ok(Shard { index: k, count: n })
    }
}

/// How a plan runs: on how many engines at once, and which part of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exec {
    /// Scenarios run at once, each worker on its own fork of the engine (1: all on the
    /// given engine, one after another).
    pub jobs: usize,
    pub shard: Shard,
    /// Profile every scenario's messages ([`Profiling::Messages`]): the records carry
    /// where their instructions went. Counts are the same.
    pub profile: bool,
}

impl Exec {
    /// Everything, one scenario after another on the given engine.
    pub const SEQUENTIAL: Exec = Exec {
        jobs: 1,
        shard: Shard::WHOLE,
        profile: false,
    };

    /// The machine's cores (1 if unknown).
    pub fn default_jobs() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }

    /// The scenarios of `0..total` this run measures, in plan order.
    pub fn indices(&self, total: usize) -> Vec<usize> {
        (0..total).filter(|&i| self.shard.includes(i)).collect()
    }
}

/// What one scenario adds to the report: its result rows and, for a suite that keeps
/// lists in [`Report::extra`] (keys' page statistics), its items of each list.
#[derive(Default)]
pub struct Outcome {
    pub results: Vec<ScenarioResult>,
    pub lists: Vec<(&'static str, Vec<Value>)>,
}

impl From<ScenarioResult> for Outcome {
    fn from(r: ScenarioResult) -> Outcome {
        Outcome {
            results: vec![r],
            lists: Vec::new(),
        }
    }
}

impl From<Vec<ScenarioResult>> for Outcome {
    fn from(results: Vec<ScenarioResult>) -> Outcome {
        Outcome {
            results,
            lists: Vec::new(),
        }
    }
}

/// What the scenarios of a plan hand in as their tasks end, in whatever order they end.
pub struct Slots(Vec<Mutex<Option<Outcome>>>);

impl Slots {
    /// Room for the scenarios `0..total`.
    pub fn new(total: usize) -> Slots {
        Slots((0..total).map(|_| Mutex::new(None)).collect())
    }

    /// Scenario `i`'s outcome.
    pub fn put(&self, i: usize, outcome: impl Into<Outcome>) {
        *self.0[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome.into());
    }

    /// The outcomes handed in so far, as a worker process carries them to its parent
    /// ([`graph::Carry`]): `[[scenario, [result, ...]], ...]`. Per-scenario lists (the keys
    /// suite's) are not carried: their names are the suite's constants.
    pub fn export(&self) -> Result<Value> {
        let mut filled = Vec::new();
        for (i, slot) in self.0.iter().enumerate() {
            let slot = slot.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(outcome) = slot.as_ref() {
                if let Some((name, _)) = outcome.lists.first() {
                    bail!("internal error: scenario {i}'s list {name:?} cannot leave a worker process");
                }
                filled.push(serde_json::json!([i, outcome.results]));
            }
        }
        Ok(Value::Array(filled))
    }

    /// Takes in what [`Slots::export`] gave in a worker process.
    pub fn import(&self, value: Value) -> Result<()> {
        let filled: Vec<(usize, Vec<ScenarioResult>)> = serde_json::from_value(value)?;
        for (i, results) in filled {
            let slot = self.0.get(i).ok_or_else(|| {
                anyhow!(
                    "a worker process handed in scenario {i} of {}",
                    self.0.len()
                )
            })?;
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(results.into());
        }
        Ok(())
    }

    /// The outcomes of `indices`, in that order; the error names the first scenario that
    /// handed in nothing (`key` names scenarios).
    pub fn take(
        &self,
        indices: &[usize],
        key: &dyn Fn(usize) -> String,
    ) -> Result<Vec<(usize, Outcome)>> {
        indices
            .iter()
            .map(|&i| {
                self.0[i]
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take()
                    .map(|o| (i, o))
                    .ok_or_else(|| anyhow!("scenario {} was not run", key(i)))
            })
            .collect()
    }
}

/// The name in [`Report::extra`] of a shard's [`ShardInfo`].
pub const SHARD: &str = "shard";

/// What a shard's results.json carries so that `icbench merge` can check its parts belong
/// together and put every row back where one unsharded run has it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// K of K/N.
    pub index: usize,
    /// N of K/N.
    pub count: usize,
    /// Scenarios in the whole plan.
    pub scenarios: usize,
    /// SHA-256 of the whole plan's scenario keys, and of its settings (the plan's `Debug`).
    pub plan: String,
    pub settings: String,
    /// SHA-256 of the canister module, or of every module's name and SHA-256 when the run
    /// held several ([`Modules::signature`]).
    pub module: String,
    /// Instructions executed before the first scenario (install, prefill): every shard
    /// runs them, a joined report counts them once.
    pub setup_instructions: u64,
    /// This shard's scenarios in plan order, with how many rows (and list items) each added.
    pub parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub scenario: usize,
    pub results: usize,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lists: BTreeMap<String, usize>,
}

/// The outcomes of a run's scenarios, to put into its report.
pub struct Outcomes {
    outcomes: Vec<(usize, Outcome)>,
    total: usize,
    plan: String,
    shard: Shard,
    setup_instructions: u64,
}

impl Outcomes {
    /// The outcomes `(scenario, outcome)` of a plan of `total` scenarios (`plan`: the hash
    /// of its keys) run on `shard`, after a setup that executed `setup_instructions`.
    pub fn new(
        outcomes: Vec<(usize, Outcome)>,
        total: usize,
        plan: String,
        shard: Shard,
        setup_instructions: u64,
    ) -> Outcomes {
        Outcomes {
            outcomes,
            total,
            plan,
            shard,
            setup_instructions,
        }
    }

    /// Puts the rows (and list items) into `report` in plan order; a shard's report also
    /// gets its [`ShardInfo`] (settings and module are filled in by [`sign_shard`]).
    pub fn into_report(self, report: &mut Report) {
        let mut lists: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        let mut parts = Vec::new();
        for (scenario, outcome) in self.outcomes {
            let mut counts = BTreeMap::new();
            for (name, items) in outcome.lists {
                *counts.entry(name.to_string()).or_default() += items.len();
                lists.entry(name.to_string()).or_default().extend(items);
            }
            parts.push(Part {
                scenario,
                results: outcome.results.len(),
                lists: counts,
            });
            report.results.extend(outcome.results);
        }
        for (name, items) in lists {
            if !items.is_empty() {
                report.extra.insert(name, Value::Array(items));
            }
        }
        if !self.shard.is_whole() {
            let info = ShardInfo {
                index: self.shard.index,
                count: self.shard.count,
                scenarios: self.total,
                plan: self.plan,
                settings: String::new(),
                module: String::new(),
                setup_instructions: self.setup_instructions,
                parts,
            };
            report.set_extra(SHARD, &info);
        }
    }
}

/// SHA-256 in hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Records in a shard's report which settings and modules it ran with (every module of
/// `modules`: see [`Modules::signature`]).
pub fn sign_shard(report: &mut Report, settings: &str, modules: &Modules<'_>) {
    if let Some(mut info) = report.extra::<ShardInfo>(SHARD) {
        info.settings = sha256_hex(settings.as_bytes());
        info.module = modules.signature();
        report.set_extra(SHARD, &info);
    }
}

/// Runs `scenario(client, i)` for every scenario `i` of `0..total` in `exec`'s shard, each
/// a unit of work in `recorder` (after the units `after`). With `exec.jobs` > 1 and an
/// engine that can fork, the calling thread runs scenarios on `client` and `exec.jobs - 1`
/// threads on forks of its engine taken at `start` (every snapshot of the engine exists
/// there under the same id); otherwise everything runs on `client`, in order. A scenario
/// must put the canister into the state it needs (restore a snapshot) before measuring.
/// Instructions executed on the forks are added to `client.executed_instructions`.
/// `key(i)` names scenario `i` in the progress and the log.
#[allow(clippy::too_many_arguments)]
pub fn run_scenarios(
    client: &mut BenchClient<'_>,
    start: SnapshotId,
    total: usize,
    exec: &Exec,
    recorder: &Recorder,
    after: &[UnitId],
    key: &(dyn Fn(usize) -> String + Sync),
    progress: &mut dyn FnMut(Progress<'_>),
    scenario: &(dyn Fn(&mut BenchClient<'_>, usize) -> Result<Outcome> + Sync),
) -> Result<Outcomes> {
    let indices = exec.indices(total);
    let plan = (0..total).map(|i| key(i) + "\n").collect::<String>();
    let setup_instructions = client.executed_instructions;
    let slots = Slots::new(total);
    let slots = &slots;
    let tasks: Vec<Task<'_>> = indices
        .iter()
        .map(|&i| {
            Task::new(
                Kind::Scenario,
                format!("scenario {}", key(i)),
                move |lane| {
                    slots.put(i, scenario(&mut lane.client, i)?);
                    Ok(())
                },
            )
            .after(after)
            .profiled()
        })
        .collect();
    let canister = client.canister;
    graph::run(
        client,
        &State::Local(canister, start),
        exec,
        recorder,
        progress,
        tasks,
        None,
    )?;
    let outcomes = slots.take(&indices, key)?;
    Ok(Outcomes {
        outcomes,
        total,
        plan: sha256_hex(plan.as_bytes()),
        shard: exec.shard,
        setup_instructions,
    })
}

/// The first units of a suite's run: `wasm` made ready by the engine (compiled, or loaded
/// from the compile cache: on every core, so nothing else runs meanwhile), then the
/// canister installed. Returns the client and the install's unit.
pub fn install<'e>(
    engine: &'e mut dyn crate::engine::Engine,
    wasm: &[u8],
    recorder: &Recorder,
) -> Result<(BenchClient<'e>, UnitId)> {
    let compiled = compile(engine, wasm, recorder)?;
    let (client, installed) =
        recorder.unit(Kind::Install, "install the canister", &[compiled], || {
            BenchClient::install(engine, wasm)
        });
    Ok((client?, installed))
}

/// `wasm` made ready by the engine as a unit of its own (see [`install`]).
pub fn compile(
    engine: &mut dyn crate::engine::Engine,
    wasm: &[u8],
    recorder: &Recorder,
) -> Result<UnitId> {
    let (ready, compiled) = recorder.unit(Kind::Compile, "compile the module", &[], || {
        engine.prepare(wasm)
    });
    ready?;
    Ok(compiled)
}

/// Runs `f` with what it runs on rayon (wasmtime's parallel compile) kept on the calling
/// thread: a one-thread pool made of this thread, so that a compile beside another lane's
/// work takes this core only, not both (see `users::prefill::with_beside`). Where such a
/// pool cannot be made (the thread already works for one), `f` runs as it would anyway.
pub fn on_this_core<R>(f: impl FnOnce() -> R) -> R {
    // rayon keeps the registry of a pool that uses the current thread (a few kilobytes,
    // once per run); the thread stays its only worker until it ends.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .use_current_thread()
        .build();
    let out = f();
    drop(pool);
    out
}

/// What [`in_parallel`] tells its caller's thread, for a progress bar.
pub enum Event {
    /// The calling thread starts item `i`.
    Starting(usize),
    /// `n` items are finished, the last one `i`.
    Finished(usize, usize),
}

/// Runs every `i` of `indices`: on the calling thread with `local(i)`, and on one thread
/// per worker with `work(worker, i)`, each taking the next index when it is free; returns
/// the results in the order of `indices`. `event` is called on the calling thread. The
/// first error stops everyone before their next item and is returned.
pub fn in_parallel<W: Send, R: Send>(
    workers: &mut [W],
    local: &mut dyn FnMut(usize) -> Result<R>,
    indices: &[usize],
    work: &(dyn Fn(&mut W, usize) -> Result<R> + Sync),
    event: &mut dyn FnMut(Event),
) -> Result<Vec<R>> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let mut slots: Vec<Option<R>> = indices.iter().map(|_| None).collect();
    let (tx, rx) = mpsc::channel::<(usize, Result<R>)>();
    let mut first_error = None;
    let mut done = 0;
    let mut take = |slot: usize, out: Result<R>, event: &mut dyn FnMut(Event)| match out {
        Ok(r) => {
            slots[slot] = Some(r);
            done += 1;
            event(Event::Finished(done, indices[slot]));
        }
        Err(e) => {
            stop.store(true, Ordering::Relaxed);
            first_error.get_or_insert(e);
        }
    };
    std::thread::scope(|scope| {
        for worker in workers.iter_mut() {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            // A worker runs Wasm on its own stack (else each message gets a thread, whose
            // CPU time the worker's clock does not see); one that cannot be spawned leaves
            // its items to the others.
            let _ = crate::engine::embedded::spawn_scoped(scope, "icbench-worker", move || loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let slot = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = indices.get(slot) else { break };
                let out = work(worker, i);
                let failed = out.is_err();
                if failed {
                    stop.store(true, Ordering::Relaxed);
                }
                if tx.send((slot, out)).is_err() || failed {
                    break;
                }
            });
        }
        drop(tx);
        while !stop.load(Ordering::Relaxed) {
            let slot = next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = indices.get(slot) else { break };
            event(Event::Starting(i));
            let out = local(i);
            take(slot, out, event);
            while let Ok((slot, out)) = rx.try_recv() {
                take(slot, out, event);
            }
        }
        // Ends when every worker has finished and dropped its sender.
        for (slot, out) in rx {
            take(slot, out, event);
        }
    });
    if let Some(e) = first_error {
        return Err(e);
    }
    slots
        .into_iter()
        .zip(indices)
        .map(|(r, i)| r.ok_or_else(|| anyhow!("scenario {i} was not run")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_this_core_keeps_rayon_work_on_the_calling_thread() {
        use rayon::prelude::*;
        std::thread::spawn(|| {
            let me = std::thread::current().id();
            let (threads, ran_on) = on_this_core(|| {
                let ran_on: Vec<std::thread::ThreadId> = (0..64)
                    .into_par_iter()
                    .map(|_| std::thread::current().id())
                    .collect();
                (rayon::current_num_threads(), ran_on)
            });
            assert_eq!(threads, 1);
            assert_eq!(ran_on.len(), 64);
            assert!(ran_on.iter().all(|&t| t == me));
            // A second call on a thread that already is the pool's runs as before.
            assert_eq!(on_this_core(|| (0..8).into_par_iter().sum::<i32>()), 28);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn shards_are_disjoint_and_cover_the_plan() {
        let parts: Vec<Vec<usize>> = (1..=3)
            .map(|k| {
                Exec {
                    jobs: 1,
                    shard: Shard { index: k, count: 3 },
                    profile: false,
                }
                .indices(8)
            })
            .collect();
        assert_eq!(parts, [vec![0, 3, 6], vec![1, 4, 7], vec![2, 5]]);
        assert_eq!(Exec::SEQUENTIAL.indices(3), [0, 1, 2]);
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        for bad in ["0/2", "3/2", "1/0", "2", "a/b", "1/2/3", ""] {
            let err = bad.parse::<Shard>().unwrap_err();
            assert!(err.contains("expected K/N"), "{bad}: {err}");
        }
    }

    #[test]
    fn results_come_back_in_plan_order_whatever_finishes_first() {
        let mut workers = vec![0u32; 3];
        let indices = [4, 1, 7, 0, 9];
        let mut seen = Vec::new();
        let mut local_count = 0;
        let out = in_parallel(
            &mut workers,
            &mut |i| {
                local_count += 1;
                Ok(i * 10)
            },
            &indices,
            &|count: &mut u32, i| {
                *count += 1;
                // Later items finish first.
                std::thread::sleep(std::time::Duration::from_millis(10 - i as u64));
                Ok(i * 10)
            },
            &mut |e| {
                if let Event::Finished(done, i) = e {
                    seen.push((done, i))
                }
            },
        )
        .unwrap();
        assert_eq!(out, [40, 10, 70, 0, 90]);
        assert_eq!(workers.iter().sum::<u32>() + local_count, 5);
        let mut finished: Vec<usize> = seen.iter().map(|&(_, i)| i).collect();
        finished.sort_unstable();
        assert_eq!(finished, [0, 1, 4, 7, 9]);
        assert_eq!(
            seen.iter().map(|&(n, _)| n).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5]
        );
    }

    #[test]
    fn an_error_is_returned_and_stops_the_worker() {
        // The calling thread alone, so the count is exact: it stops after the failing item.
        let mut workers: Vec<()> = Vec::new();
        let indices: Vec<usize> = (0..100).collect();
        let ran = AtomicUsize::new(0);
        let err = in_parallel(
            &mut workers,
            &mut |i| {
                ran.fetch_add(1, Ordering::Relaxed);
                if i == 3 {
                    Err(anyhow!("scenario 3 broke"))
                } else {
                    Ok(i)
                }
            },
            &indices,
            &|(), i| {
                ran.fetch_add(1, Ordering::Relaxed);
                if i == 3 {
                    Err(anyhow!("scenario 3 broke"))
                } else {
                    Ok(i)
                }
            },
            &mut |_| {},
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "scenario 3 broke");
        assert_eq!(ran.load(Ordering::Relaxed), 4);
    }
}
