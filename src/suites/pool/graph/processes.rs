//! A graph's workers as processes ([`super::run`]): the calling thread stays the
//! first worker; every other worker is a copy of this process made with
//! [`crate::engine::Engine::fork_process`] once the tasks are queued. Each process goes
//! through the same queue; a task handed to the graph runs in the process that claims it
//! first (a flag in memory the processes share) and everything it spawns runs there too,
//! on the states it made. A worker process tells its parent its progress, then, as JSON
//! lines on a pipe, the instructions it executed, the units of work it recorded and what its
//! tasks left for the suite ([`super::Carry`]); then it ends without running anything of
//! the parent's again.

use std::io::{BufRead, BufReader};
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::mpsc;

use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};

use super::{Carry, Counts, Graph, Lane};
use crate::bench_canister::BenchClient;
use crate::engine::disk_cache;
use crate::engine::{ProcessSide, Profiling};
use crate::report::work::Unit;
use crate::suites::pool::process::{
    describe_status, end_with_parent, exit_worker, pipe, send, wait_for,
};
use crate::suites::pool::record::set_lane;
use crate::suites::Progress;

/// What a worker process says on its pipe.
#[derive(Serialize, Deserialize)]
enum Frame {
    /// Its progress so far.
    Progress(Counts),
    /// Its work is over (or failed: `error`).
    Done {
        executed: u64,
        units: Vec<Unit>,
        error: Option<String>,
        carried: Option<serde_json::Value>,
        /// What it did with the cache, per kind (hits, misses, rejected), for the run's
        /// closing line: the counts live in each process's memory.
        #[serde(default)]
        cache: Vec<[u64; 3]>,
    },
}

/// How [`run`] went.
pub enum Ran {
    /// Every task ran, in this process or a worker process; errors are the graph's.
    Done,
    /// The engine cannot fork its process: nothing ran.
    NotForked,
}

struct Child {
    lane: usize,
    pid: libc::pid_t,
}

/// What the worker processes said so far.
struct Heard {
    /// Each worker's progress, as it last said (this process's: unused).
    progress: Vec<Counts>,
    /// Each worker's last frame.
    done: Vec<Option<Frame>>,
    /// Workers whose pipe is still open.
    open: usize,
    last_key: String,
    shown: usize,
}

impl Heard {
    fn take(&mut self, lane: usize, frame: Option<Frame>) {
        match frame {
            Some(Frame::Progress(counts)) => {
                self.last_key = counts.key.clone();
                self.progress[lane] = counts;
            }
            // Its last word: the process may still be tearing down its memory, which this
            // one need not wait for.
            Some(done @ Frame::Done { .. }) => {
                self.done[lane] = Some(done);
                self.open -= 1;
            }
            None if self.done[lane].is_none() => self.open -= 1,
            None => {}
        }
    }

    /// The progress of this process and the workers together.
    fn show(&mut self, graph: &Graph<'_>, progress: &mut dyn FnMut(Progress<'_>)) {
        let here = graph.counts();
        let all = || std::iter::once(&here).chain(&self.progress);
        let done = all().map(|c| c.done).sum::<usize>();
        // The tasks every process spawns count once, as many as the one furthest along has.
        let shared = all().map(|c| c.shared).max().unwrap_or(0);
        let total = shared + all().map(|c| c.own).sum::<usize>();
        if done > self.shown {
            self.shown = done;
            let key = if here.key.is_empty() {
                &self.last_key
            } else {
                &here.key
            };
            progress(Progress::Scenario { done, total, key });
        }
    }
}

/// Runs the graph on this thread and `jobs - 1` worker processes.
pub fn run<'s>(
    client: &mut BenchClient<'_>,
    graph: &Graph<'s>,
    jobs: usize,
    carry: &Carry<'_>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Ran> {
    let first_unit = graph.recorder.count();
    let parent = std::process::id();
    graph.process_lane.store(0, Ordering::Relaxed);
    let (tx, rx) = mpsc::channel::<(usize, Option<Frame>)>();
    let mut children: Vec<Child> = Vec::new();
    let mut readers: Vec<OwnedFd> = Vec::new();
    for lane in 1..jobs {
        let (read, write) = pipe()?;
        match client.engine.fork_process() {
            Ok(Some(ProcessSide::Child)) => {
                drop(read);
                drop(std::mem::take(&mut readers));
                child(client, graph, lane, carry, first_unit, write, parent);
            }
            Ok(Some(ProcessSide::Parent(pid))) => {
                drop(write);
                children.push(Child {
                    lane,
                    pid: pid as libc::pid_t,
                });
                readers.push(read);
            }
            Ok(None) if children.is_empty() => return Ok(Ran::NotForked),
            Ok(None) => break,
            // The workers that started and this one do the work.
            Err(e) => {
                eprintln!(
                    "warning: a worker process could not start ({e:#}); its work ran on the others"
                );
                break;
            }
        }
    }
    for (child, read) in children.iter().zip(readers) {
        let (tx, lane) = (tx.clone(), child.lane);
        std::thread::Builder::new()
            .name(format!("icbench-worker-{lane}-pipe"))
            .spawn(move || {
                let lines = BufReader::new(std::fs::File::from(read)).lines();
                for line in lines.map_while(|l| l.ok()) {
                    match serde_json::from_str::<Frame>(&line) {
                        Ok(frame) => {
                            let _ = tx.send((lane, Some(frame)));
                        }
                        Err(_) => break,
                    }
                }
                let _ = tx.send((lane, None));
            })?;
    }
    drop(tx);

    let mut heard = Heard {
        progress: vec![Counts::default(); jobs],
        done: (0..jobs).map(|_| None).collect(),
        open: children.len(),
        last_key: String::new(),
        shown: 0,
    };

    set_lane(0);
    let mut lane = Lane::new(0, &mut *client.engine, graph);
    graph.work(&mut lane, &mut |g| {
        while let Ok((l, frame)) = rx.try_recv() {
            heard.take(l, frame);
        }
        heard.show(g, progress);
    });
    let _ = lane.client.engine.set_profiling(Profiling::Off);
    let mut executed = lane.client.executed_instructions;
    if graph
        .queue
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .failed
        .is_some()
    {
        if let Some(claims) = &graph.claims {
            claims.fail();
        }
    }
    while heard.open > 0 {
        let Ok((l, frame)) = rx.recv() else { break };
        heard.take(l, frame);
        heard.show(graph, progress);
    }

    let mut remote_done = 0;
    for child in &children {
        let fail = |e: anyhow::Error| {
            let mut q = graph.queue.lock().unwrap_or_else(|e| e.into_inner());
            q.failed.get_or_insert(e);
        };
        match heard.done[child.lane].take() {
            Some(Frame::Done {
                executed: theirs_executed,
                units,
                error,
                carried,
                cache,
            }) => {
                executed += theirs_executed;
                for (kind, [hits, misses, rejected]) in disk_cache::KINDS.iter().zip(cache) {
                    disk_cache::add_stats(
                        kind,
                        disk_cache::Stats {
                            hits,
                            misses,
                            rejected,
                        },
                    );
                }
                graph.recorder.adopt(first_unit, units);
                remote_done += heard.progress[child.lane].done;
                if let Some(e) = error {
                    fail(anyhow!(e));
                } else if let Some(value) = carried {
                    if let Err(e) = (carry.import)(value) {
                        fail(e);
                    }
                }
            }
            _ => {
                // It closed its pipe: it has ended.
                let status = wait_for(child.pid);
                fail(anyhow!(
                    "worker process {} (pid {}) ended without handing in its results ({})",
                    child.lane,
                    child.pid,
                    describe_status(status)
                ));
                continue;
            }
        }
        // It has said everything: it is ending. Collected beside, so that its exit status
        // does not linger, and without waiting for it to give back its memory.
        let pid = child.pid;
        let _ = std::thread::Builder::new()
            .name(format!("icbench-worker-{}-exit", child.lane))
            .spawn(move || {
                wait_for(pid);
            });
    }
    client.executed_instructions += executed;
    graph
        .queue
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remote_finished += remote_done;
    Ok(Ran::Done)
}

/// The worker process `lane`: runs what it claims, hands in what it did on `out`, ends.
fn child(
    client: &mut BenchClient<'_>,
    graph: &Graph<'_>,
    lane_index: usize,
    carry: &Carry<'_>,
    first_unit: usize,
    out: OwnedFd,
    parent: u32,
) -> ! {
    let mut out = std::fs::File::from(out);
    end_with_parent(parent);
    // The counts copied from the parent stay the parent's.
    let cache_before = disk_cache::all_stats();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        set_lane(lane_index);
        graph.process_lane.store(lane_index, Ordering::Relaxed);
        if let Some(claims) = &graph.claims {
            claims.set_own(lane_index, 0);
        }
        let mut lane = Lane::new(lane_index, &mut *client.engine, graph);
        let mut shown = 0;
        graph.work(&mut lane, &mut |g| {
            let counts = g.counts();
            if counts.done > shown {
                shown = counts.done;
                send(&mut out, &Frame::Progress(counts));
            }
        });
        let _ = lane.client.engine.set_profiling(Profiling::Off);
        send(&mut out, &Frame::Progress(graph.counts()));
        let mut error = graph
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .failed
            .take()
            .map(|e| format!("{e:#}"));
        let mut carried = None;
        if error.is_none() {
            match (carry.export)() {
                Ok(value) => carried = Some(value),
                Err(e) => error = Some(format!("{e:#}")),
            }
        }
        if error.is_some() {
            if let Some(claims) = &graph.claims {
                claims.fail();
            }
        }
        let cache = disk_cache::all_stats()
            .iter()
            .zip(&cache_before)
            .map(|(now, then)| {
                [
                    now.hits - then.hits,
                    now.misses - then.misses,
                    now.rejected - then.rejected,
                ]
            })
            .collect();
        Frame::Done {
            executed: lane.client.executed_instructions,
            units: graph.recorder.units_since(first_unit),
            error,
            carried,
            cache,
        }
    }));
    let frame = outcome.unwrap_or_else(|panic| {
        let what = super::panic_message(panic.as_ref());
        Frame::Done {
            executed: 0,
            units: Vec::new(),
            error: Some(format!(
                "internal error: worker process {lane_index} panicked: {what}"
            )),
            carried: None,
            cache: Vec::new(),
        }
    });
    let ok = send(&mut out, &frame);
    drop(out);
    exit_worker(ok)
}
