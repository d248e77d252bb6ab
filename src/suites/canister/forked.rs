//! The fills of a run's canisters in worker processes. Two fills on threads of one process
//! slow each other down: each protects and unprotects its heap page by page, and every
//! change to the process's page tables stops the other thread for a TLB flush (a default
//! run's fills took 35% more CPU on two threads than on one). So where the cache lacks two
//! or more post-prefill states, this process compiles their modules (a worker process
//! cannot compile) and forks `jobs - 1` worker processes; each process takes the next
//! canister left, this one the longest fill first. Each process fills its canister and
//! writes the state into the cache from the live heap; this process then loads every state
//! as a cached run would, so it holds no filled heap and no frozen copy of one (a default
//! run's parent peaked at 2.5 GB holding mo:core pure/Map's).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};

use super::state::{cache_of, write_prefill};
use super::{compile, install_and_fill, Makes};
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

/// A canister to fill: its index, where its state goes in the cache, and its module's
/// compile (done before the fork).
struct Unfilled {
    index: usize,
    cache: (PathBuf, [u8; 32]),
    compiled: UnitId,
}

/// Fills the canisters of `makes` the cache has no post-prefill state for, on this process
/// and worker processes (forked from `engine`), each state kept in the cache: the indices
/// of those canisters, to load from the cache (or to fill again where a state could not be
/// kept). None, with nothing filled, when there are fewer than two to fill, one job, no
/// cache or no fork.
pub(super) fn fill(
    engine: &mut dyn Engine,
    makes: &Makes<'_>,
    jobs: usize,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Option<Vec<usize>>> {
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
    // The longest fill starts here.
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

    let mut failed = None;
    for (task, u) in unfilled.iter().enumerate() {
        if !claims.take(task, 0) {
            continue;
        }
        if let Err(e) = fill_and_keep(makes, u, progress) {
            claims.fail();
            failed = Some(e);
            break;
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
    Ok(Some(unfilled.iter().map(|u| u.index).collect()))
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
                if let Err(e) = fill_and_keep(self.makes, unfilled, &mut |_| {}) {
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
}

/// The canister installed and filled, its state written into the cache from the live
/// canister, which is then dropped with its engine (a fresh one takes its place): the
/// process that made the run loads the state from there.
fn fill_and_keep(
    m: &Makes<'_>,
    unfilled: &Unfilled,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    let i = unfilled.index;
    let (canister, wasm, work) = (&m.canisters[i], m.wasms[i], m.work);
    let (dir, key) = &unfilled.cache;
    let mut engine = m.take(i);
    let fresh = engine.fresh();
    let mut chain = Chain::new(work, &[unfilled.compiled]);
    let filled = install_and_fill(
        engine.as_mut(),
        canister,
        wasm,
        m.filling,
        false,
        &mut chain,
        progress,
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
    drop(engine);
    *m.engine(i) = fresh;
    Ok(())
}
