//! One bench canister on the embedded engine, run as `mops bench` runs it: installed on an
//! application subnet, `init()` called, then every cell row by row, each an update call of
//! `runCellUpdateAwait` (its awaits run as calls the canister makes to itself) or with
//! `--query` a query of `runCellQuery`, the heap carried from cell to cell.

use anyhow::{anyhow, Result};
use candid::{CandidType, Decode, Deserialize, Encode, Int, Nat, Principal};
use serde::Serialize;

use crate::engine::cost::{Host, Limits, Replica};
use crate::engine::counter_reads::{CounterRead, CounterReads};
use crate::engine::embedded::EmbeddedEngine;
use crate::engine::{Engine, PageCounts, Profile, Profiling};

/// A bench's schema (`getSchema`, `init`'s reply).
#[derive(Clone, Debug, Default, CandidType, Deserialize, Serialize, PartialEq, Eq)]
pub struct Schema {
    pub name: String,
    pub description: String,
    pub rows: Vec<String>,
    pub cols: Vec<String>,
}

/// A cell's figures as the bench canister replies them (Candid `int`s).
#[derive(CandidType, Deserialize)]
struct Reply {
    instructions: Int,
    rts_mutator_instructions: Int,
    stable_memory_size: Int,
    rts_stable_memory_size: Int,
    rts_logical_stable_memory_size: Int,
    rts_collector_instructions: Int,
    rts_heap_size: Int,
    rts_memory_size: Int,
    rts_total_allocation: Int,
    rts_reclaimed: Int,
}

/// A cell's figures, in the order mops' `.bench/*.json` lists them (the order agent-js
/// decodes the record's fields in: by their Candid field hash).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Stats {
    pub rts_stable_memory_size: i64,
    pub stable_memory_size: i64,
    pub instructions: i64,
    pub rts_memory_size: i64,
    pub rts_total_allocation: i64,
    pub rts_collector_instructions: i64,
    pub rts_mutator_instructions: i64,
    pub rts_logical_stable_memory_size: i64,
    pub rts_heap_size: i64,
    pub rts_reclaimed: i64,
}

fn int(i: &Int) -> Result<i64, String> {
    i.to_string()
        .replace('_', "")
        .parse()
        .map_err(|_| format!("{i} does not fit in 64 bits"))
}

impl TryFrom<Reply> for Stats {
    type Error = String;
    fn try_from(r: Reply) -> Result<Stats, String> {
        Ok(Stats {
            rts_stable_memory_size: int(&r.rts_stable_memory_size)?,
            stable_memory_size: int(&r.stable_memory_size)?,
            instructions: int(&r.instructions)?,
            rts_memory_size: int(&r.rts_memory_size)?,
            rts_total_allocation: int(&r.rts_total_allocation)?,
            rts_collector_instructions: int(&r.rts_collector_instructions)?,
            rts_mutator_instructions: int(&r.rts_mutator_instructions)?,
            rts_logical_stable_memory_size: int(&r.rts_logical_stable_memory_size)?,
            rts_heap_size: int(&r.rts_heap_size)?,
            rts_reclaimed: int(&r.rts_reclaimed)?,
        })
    }
}

/// A cell as run: its figures or why it failed, and what icbench adds.
#[derive(Clone, Debug)]
pub struct Cell {
    pub row: String,
    pub col: String,
    pub outcome: Result<Stats, String>,
    /// The Wasm pages first touched between the reads `countInstructions` takes around the
    /// cell, and their charge (what `instructions` includes of it).
    pub pages: Option<PageCounts>,
    /// With `--profile`: the instructions of the message the cell ran in.
    pub profile: Option<Profile>,
}

impl Cell {
    /// mops' key of the cell in its results: `row:col`.
    pub fn key(&self) -> String {
        format!("{}:{}", self.row, self.col)
    }
}

/// How the cells run.
#[derive(Clone, Copy, Debug)]
pub struct Mode {
    pub rules: (Replica, Host),
    pub query: bool,
    pub profile: bool,
}

/// Installs `wasm` and runs its bench: the schema and every cell, or why the canister
/// could not be set up.
pub fn run(wasm: &[u8], mode: Mode) -> Result<Result<(Schema, Vec<Cell>), String>> {
    let (replica, host) = mode.rules;
    let mut engine = EmbeddedEngine::new(Limits::APPLICATION)
        .with_replica(replica)
        .with_host(host);
    if mode.profile {
        engine.set_profiling(Profiling::Messages)?;
    }
    let (canister, out) = engine.install(wasm, &Encode!()?)?;
    if let Err(r) = out.result {
        return Ok(Err(format!("installing the bench canister failed: {r}")));
    }
    let schema = match engine.update(canister, "init", &Encode!()?)?.result {
        Ok(bytes) => Decode!(&bytes, Schema)
            .map_err(|e| anyhow!("init's reply is not a bench schema: {e}"))?,
        Err(r) => return Ok(Err(format!("init() failed: {r}"))),
    };
    engine.set_counter_reads(CounterReads::Record);
    let mut cells = Vec::new();
    for (r, row) in schema.rows.iter().enumerate() {
        for (c, col) in schema.cols.iter().enumerate() {
            let (outcome, pages, profile) = run_cell(&mut engine, canister, (r, c), mode.query)?;
            cells.push(Cell {
                row: row.clone(),
                col: col.clone(),
                outcome,
                pages,
                profile,
            });
        }
    }
    Ok(Ok((schema, cells)))
}

type CellRun = (Result<Stats, String>, Option<PageCounts>, Option<Profile>);

fn run_cell(
    engine: &mut EmbeddedEngine,
    canister: Principal,
    (row, col): (usize, usize),
    query: bool,
) -> Result<CellRun> {
    let arg = Encode!(&Nat::from(row), &Nat::from(col))?;
    let (out, reads, profile) = if query {
        let out = engine.query(canister, "runCellQuery", &arg)?;
        let reads = engine.counter_reads().to_vec();
        let profile = out.report.profile.clone();
        (out, reads, profile)
    } else {
        let out = engine.update(canister, "runCellUpdateAwait", &arg)?;
        // The cell runs in the second message: the canister's call to itself.
        let cell = engine.last_call_tree().get(1);
        let reads = cell.map(|m| m.reads.clone()).unwrap_or_default();
        let profile = cell.and_then(|m| m.report.profile.clone());
        (out, reads, profile)
    };
    let outcome = match out.result {
        Ok(bytes) => Decode!(&bytes, Reply)
            .map_err(|e| format!("the reply is not mops' BenchResult: {e}"))
            .and_then(Stats::try_from),
        Err(r) => Err(r.to_string()),
    };
    let pages = outcome
        .as_ref()
        .ok()
        .and_then(|s| cell_pages(&reads, s.instructions));
    Ok((outcome, pages, profile))
}

/// The pages first touched between `countInstructions`' second and third reads (the first
/// three reads of the message), when those reads give the cell's `instructions`.
fn cell_pages(reads: &[CounterRead], instructions: i64) -> Option<PageCounts> {
    let [init, pre, post]: [CounterRead; 3] = reads.get(..3)?.try_into().ok()?;
    let measured = post.instructions as i64
        - pre.instructions as i64
        - (pre.instructions as i64 - init.instructions as i64);
    if measured != instructions {
        return None;
    }
    let (a, b) = (post.pages, pre.pages);
    Some(PageCounts {
        heap_wasm_pages_accessed: a.heap_wasm_pages_accessed - b.heap_wasm_pages_accessed,
        heap_wasm_pages_written: a.heap_wasm_pages_written - b.heap_wasm_pages_written,
        stable_wasm_pages_accessed: a.stable_wasm_pages_accessed - b.stable_wasm_pages_accessed,
        stable_wasm_pages_written: a.stable_wasm_pages_written - b.stable_wasm_pages_written,
        page_charge_instructions: a.page_charge_instructions - b.page_charge_instructions,
    })
}
