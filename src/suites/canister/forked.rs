//! The fills of a run's canisters in worker processes. Two fills on threads of one process
//! slow each other down: each protects and unprotects its heap page by page, and every
//! change to the process's page tables stops the other thread for a TLB flush (a default
//! run's fills took 35% more CPU on two threads than on one). So where the cache lacks two
//! or more post-prefill states, this process compiles their modules (a worker process
//! cannot compile) and forks `jobs - 1` worker processes; each process takes the next
//! canister left, this one the longest fill first. A worker fills its canister, writes the
//! state into the cache and ends; this process then loads those states as a cached run
//! would.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};

use super::state::{cache_of, write_prefill};
use super::{compile, install_and_fill, Made, Makes};
use crate::engine::disk_cache::{self, STATES};
use crate::engine::{Engine, ProcessSide};
use crate::report::work::{Kind, Unit};
use crate::suites::pool::graph::panic_message;
use crate::suites::pool::process::{
    describe_status, end_with_parent, exit_worker, kill, pipe, send, wait_for, Claims,
};
use crate::suites::pool::record::set_lane;
use crate::suites::pool::{Chain, UnitId};
use crate::suites::Progress;

/// What a worker process hands in: the units of work it recorded, and what stopped it.
#[derive(Serialize, Deserialize)]
struct Handed {
    units: Vec<Unit>,
    error: Option<String>,
}

/// The canisters this process made, and those a worker process filled (to load from the
/// cache, or to fill here if the worker could not keep the state).
pub(super) struct Split {
    pub made: Vec<(usize, Made)>,
    pub elsewhere: Vec<usize>,
}

/// A canister to fill: its index, where its state goes in the cache, and its module's
/// compile (done before the fork).
struct Unfilled {
    index: usize,
    cache: (PathBuf, [u8; 32]),
    compiled: UnitId,
}

/// Fills the canisters of `makes` the cache has no post-prefill state for, on this process
/// and worker processes (forked from `engine`); None, with nothing made, when there are
/// fewer than two to fill, one job, no cache or no fork.
pub(super) fn fill(
    engine: &mut dyn Engine,
    makes: &Makes<'_>,
    jobs: usize,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Option<Split>> {
    if jobs < 2 {
        return Ok(None);
    }
    let (canisters, wasms, work) = (makes.canisters, &makes.wasms, makes.work);
    let mut unfilled = Vec::new();
    for (i, canister) in canisters.iter().enumerate() {
        let engine = makes.engine(i);
        let Some(engine) = engine.as_deref() else {
            continue;
        };
        let cache = cache_of(
            engine,
            wasms[i],
            makes.filling,
            canister.module,
            &canister.filled,
        )?;
        if let Some((dir, key)) = cache {
            if !disk_cache::entry_path(&dir, STATES, &key).exists() {
                unfilled.push((i, (dir, key)));
            }
        }
    }
    if unfilled.len() < 2 {
        return Ok(None);
    }
    let unfilled = unfilled
        .into_iter()
        .map(|(index, cache)| {
            let mut engine = makes.engine(index);
            let engine = engine.as_deref_mut().expect("not taken yet");
            let compiled = compile(engine, &canisters[index], wasms[index], work)?;
            Ok(Unfilled {
                index,
                cache,
                compiled,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let claims = Claims::new(unfilled.len(), jobs)?;
    // The longest fill stays here: its state need not go through the cache.
    claims.take(0, 0);
    let first_unit = work.count();
    let parent = std::process::id();
    let mut children = Vec::new();
    for lane in 1..jobs.min(unfilled.len()) {
        let (read, write) = pipe()?;
        match engine.fork_process() {
            Ok(Some(ProcessSide::Child)) => {
                drop(read);
                drop(children);
                end_with_parent(parent);
                let worker = Worker {
                    lane,
                    claims: &claims,
                    unfilled: &unfilled,
                    makes,
                };
                let ok = send(&mut std::fs::File::from(write), &worker.run(first_unit));
                exit_worker(ok)
            }
            Ok(Some(ProcessSide::Parent(pid))) => {
                drop(write);
                children.push((lane, pid as libc::pid_t, read));
            }
            Ok(None) if children.is_empty() => return Ok(None),
            Ok(None) => break,
            Err(e) => {
                eprintln!(
                    "warning: a worker process could not start ({e:#}); its canisters are filled here"
                );
                break;
            }
        }
    }

    let mut made = Vec::new();
    let mut failed = None;
    for (task, u) in unfilled.iter().enumerate() {
        let i = u.index;
        if !claims.take(task, 0) {
            continue;
        }
        match makes.make(i, progress, false) {
            Ok(m) => made.push((i, m)),
            Err(e) => {
                claims.fail();
                failed = Some(e);
                break;
            }
        }
    }
    for (lane, pid, read) in children {
        if failed.is_some() {
            kill(pid);
        }
        let mut line = String::new();
        let _ = BufReader::new(std::fs::File::from(read)).read_line(&mut line);
        let status = wait_for(pid);
        match serde_json::from_str::<Handed>(&line) {
            Ok(handed) => {
                work.adopt(first_unit, handed.units);
                if let Some(e) = handed.error {
                    failed.get_or_insert(anyhow!(e));
                }
            }
            Err(_) if failed.is_none() => eprintln!(
                "warning: worker process {lane} (pid {pid}) ended without handing in its fills ({}); they run here",
                describe_status(status)
            ),
            Err(_) => {}
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let elsewhere = unfilled
        .iter()
        .map(|u| u.index)
        .filter(|i| made.iter().all(|(m, _)| m != i))
        .collect();
    Ok(Some(Split { made, elsewhere }))
}

/// A worker process: what it may fill, and where.
struct Worker<'a> {
    lane: usize,
    claims: &'a Claims,
    unfilled: &'a [Unfilled],
    makes: &'a Makes<'a>,
}

impl Worker<'_> {
    /// Fills the canisters it takes, each kept in the cache; what it hands in.
    fn run(&self, first_unit: usize) -> Handed {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            set_lane(self.lane);
            for (task, unfilled) in self.unfilled.iter().enumerate() {
                if !self.claims.take(task, self.lane) {
                    continue;
                }
                if let Err(e) = self.fill_one(unfilled) {
                    self.claims.fail();
                    return Some(format!("{e:#}"));
                }
            }
            None
        }));
        let error = outcome.unwrap_or_else(|panic| {
            Some(format!(
                "internal error: worker process {} panicked: {}",
                self.lane,
                panic_message(panic.as_ref())
            ))
        });
        Handed {
            units: self.makes.work.units_since(first_unit),
            error,
        }
    }

    /// The canister installed and filled, its state written into the cache from the live
    /// canister (this process ends after it: no copy of the state is kept).
    fn fill_one(&self, unfilled: &Unfilled) -> Result<()> {
        let (m, i) = (self.makes, unfilled.index);
        let (canister, wasm, work) = (&m.canisters[i], m.wasms[i], m.work);
        let (dir, key) = &unfilled.cache;
        let mut engine = m.take(i);
        let mut chain = Chain::new(work, &[unfilled.compiled]);
        let filled = install_and_fill(
            engine.as_mut(),
            canister,
            wasm,
            m.filling,
            false,
            &mut chain,
            &mut |_| {},
        )?;
        let after = chain.end();
        if filled.usable.is_ok() {
            let name = canister.name;
            let client = filled.client;
            let executed = client.executed_instructions;
            work.unit(
                Kind::Other,
                format!("keep the {name} canister's post-prefill state in the cache"),
                &after,
                || write_prefill(client.engine, client.canister, executed, dir, key),
            );
        }
        Ok(())
    }
}
