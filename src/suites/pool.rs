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
use std::sync::mpsc;

use anyhow::{anyhow, Result};

use super::Progress;
use crate::bench_canister::BenchClient;
use crate::engine::{Engine, SnapshotId};

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
}

impl Exec {
    /// Everything, one scenario after another on the given engine.
    pub const SEQUENTIAL: Exec = Exec {
        jobs: 1,
        shard: Shard::WHOLE,
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

/// Runs `scenario(client, i)` for every scenario `i` of `0..total` in `exec`'s shard and
/// returns `(i, result)` in plan order. With `exec.jobs` > 1 and an engine that can fork,
/// `exec.jobs` workers each run on a fork of `client`'s engine taken at `start`;
/// otherwise everything runs on `client`. A scenario must put the canister into the state
/// it needs (restore a snapshot) before measuring. Instructions executed on the forks are
/// added to `client.executed_instructions`. `key(i)` names scenario `i` in the progress.
pub fn run_scenarios<R: Send>(
    client: &mut BenchClient<'_>,
    start: SnapshotId,
    total: usize,
    exec: &Exec,
    key: &(dyn Fn(usize) -> String + Sync),
    progress: &mut dyn FnMut(Progress<'_>),
    scenario: &(dyn Fn(&mut BenchClient<'_>, usize) -> Result<R> + Sync),
) -> Result<Vec<(usize, R)>> {
    let indices = exec.indices(total);
    let canister = client.canister;
    let mut forks: Vec<Box<dyn Engine + Send>> = Vec::new();
    if exec.jobs > 1 && indices.len() > 1 {
        for _ in 0..exec.jobs.min(indices.len()) {
            match client.engine.fork(canister, start)? {
                Some(fork) => forks.push(fork),
                None => break,
            }
        }
    }
    let done_line = |progress: &mut dyn FnMut(Progress<'_>)| {
        progress(Progress::Scenario {
            done: indices.len(),
            total: indices.len(),
            key: "",
        })
    };
    if forks.is_empty() {
        let mut out = Vec::with_capacity(indices.len());
        for (n, &i) in indices.iter().enumerate() {
            progress(Progress::Scenario {
                done: n,
                total: indices.len(),
                key: &key(i),
            });
            out.push((i, scenario(client, i)?));
        }
        done_line(progress);
        return Ok(out);
    }
    // A client is made per scenario on the worker's thread (it borrows the engine without
    // `Send`); each worker adds up what its clients executed.
    let mut workers: Vec<(Box<dyn Engine + Send>, u64)> =
        forks.into_iter().map(|engine| (engine, 0)).collect();
    let results = in_parallel(
        &mut workers,
        &indices,
        &|(engine, executed), i| {
            let mut worker = BenchClient::attach(engine.as_mut(), canister);
            let out = scenario(&mut worker, i);
            *executed += worker.executed_instructions;
            out
        },
        &mut |done, i| {
            progress(Progress::Scenario {
                done,
                total: indices.len(),
                key: &key(i),
            })
        },
    )?;
    client.executed_instructions += workers.iter().map(|(_, n)| n).sum::<u64>();
    done_line(progress);
    Ok(indices.into_iter().zip(results).collect())
}

/// Runs `work(worker, i)` for every `i` of `indices`, one thread per worker, each taking
/// the next index when it is free; returns the results in the order of `indices`.
/// `finished(n, i)` is called on the calling thread after each one (`n` finished so far),
/// for a progress bar. The first error stops the other workers before their next item and
/// is returned.
pub fn in_parallel<W: Send, R: Send>(
    workers: &mut [W],
    indices: &[usize],
    work: &(dyn Fn(&mut W, usize) -> Result<R> + Sync),
    finished: &mut dyn FnMut(usize, usize),
) -> Result<Vec<R>> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let mut slots: Vec<Option<R>> = indices.iter().map(|_| None).collect();
    let (tx, rx) = mpsc::channel::<(usize, Result<R>)>();
    let mut first_error = None;
    std::thread::scope(|scope| {
        for worker in workers.iter_mut() {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || loop {
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
        let mut done = 0;
        // Ends when every worker has finished and dropped its sender.
        for (slot, out) in rx {
            match out {
                Ok(r) => {
                    slots[slot] = Some(r);
                    done += 1;
                    finished(done, indices[slot]);
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
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
    fn shards_are_disjoint_and_cover_the_plan() {
        let parts: Vec<Vec<usize>> = (1..=3)
            .map(|k| {
                Exec {
                    jobs: 1,
                    shard: Shard { index: k, count: 3 },
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
        let out = in_parallel(
            &mut workers,
            &indices,
            &|count: &mut u32, i| {
                *count += 1;
                // Later items finish first.
                std::thread::sleep(std::time::Duration::from_millis(10 - i as u64));
                Ok(i * 10)
            },
            &mut |done, i| seen.push((done, i)),
        )
        .unwrap();
        assert_eq!(out, [40, 10, 70, 0, 90]);
        assert_eq!(workers.iter().sum::<u32>(), 5);
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
        // One worker, so the count is exact: it stops right after the failing item.
        let mut workers = vec![()];
        let indices: Vec<usize> = (0..100).collect();
        let ran = AtomicUsize::new(0);
        let err = in_parallel(
            &mut workers,
            &indices,
            &|(), i| {
                ran.fetch_add(1, Ordering::Relaxed);
                if i == 3 {
                    Err(anyhow!("scenario 3 broke"))
                } else {
                    Ok(i)
                }
            },
            &mut |_, _| {},
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "scenario 3 broke");
        assert_eq!(ran.load(Ordering::Relaxed), 4);
    }
}
