//! A plan run under one replica's rules: the canister made from the snapshot's files (or
//! installed), then each step, with what it cost.

use std::fs::File;

use anyhow::{anyhow, Context, Result};
use candid::Principal;

use super::plan::{Action, Plan, Start};
use crate::engine::cost::Replica;
use crate::engine::embedded::{EmbeddedEngine, TreeKind};
use crate::engine::state_files::{MemoryFile, StateFiles};
use crate::engine::{CallOutcome, Engine, MessageReport, PageCounts, Profiling, UpgradeOptions};

/// One step's row.
pub struct Row {
    /// Where the step was written (`--call 2`, `script.txt:4`), or what the IC ran by
    /// itself (`round`).
    pub at: String,
    /// `update`, `query`, `upgrade`, `install`, `timer`, `heartbeat`.
    pub kind: &'static str,
    /// The method, or the module of an install or upgrade.
    pub name: String,
    pub args: String,
    /// The reply as candid text, or the replica's error.
    pub outcome: std::result::Result<String, String>,
    /// The message's report (a call with callbacks: all its messages summed; a repeated
    /// call: its median message's).
    pub report: MessageReport,
    /// A repeated call's charged instructions, each message's in order.
    pub charged: Vec<u64>,
    /// The calls it made to other canisters, and of those the ones rejected as calls to an
    /// absent canister are (the others got the replies the steps gave).
    pub calls_out: usize,
    pub rejected: usize,
}

/// What one replay under one vintage gave.
pub struct Replayed {
    pub replica: Replica,
    pub rows: Vec<Row>,
    /// Steps not run after a failed upgrade (they were typed for the new module).
    pub skipped: usize,
    pub wall_seconds: f64,
    pub load_seconds: f64,
}

pub fn replay(plan: &Plan, replica: Replica, save: bool) -> Result<Replayed> {
    let started = std::time::Instant::now();
    let mut engine = EmbeddedEngine::new(plan.assumed.limits)
        .with_replica(replica)
        .with_host(plan.host);
    if plan.output.profile {
        engine.set_profiling(Profiling::Messages)?;
    }
    engine.set_settings(plan.assumed.settings.clone());
    let mut rows = Vec::new();
    let id = match &plan.start {
        Start::Snapshot(s) => {
            let heap = open(&s.heap_path())?;
            let stable = s.stable_path().map(|p| open(&p)).transpose()?;
            engine
                .load_state_files(&StateFiles {
                    wasm: &s.wasm,
                    heap: MemoryFile {
                        file: &heap,
                        len: s.heap_bytes(),
                    },
                    stable: stable.as_ref().map(|file| MemoryFile {
                        file,
                        len: s.stable_bytes(),
                    }),
                    system: &s.system,
                    canister_id: plan.assumed.canister_id,
                })
                .with_context(|| format!("loading the snapshot {}", s.dir.display()))?
        }
        Start::Fresh { args, bytes } => {
            let module = &plan.modules[0];
            let (id, out) = engine.install(&module.wasm, bytes)?;
            rows.push(Row::of_message(
                "--wasm",
                "install",
                &module.name,
                args,
                out,
            ));
            id
        }
    };
    let load_seconds = started.elapsed().as_secs_f64();
    engine.set_caller(plan.caller);
    let mut skipped = 0;
    for (i, step) in plan.steps.iter().enumerate() {
        match &step.action {
            Action::Call(call) => {
                let interface = &plan.modules[call.module].interface;
                let (kind, method, bytes, times) =
                    (&call.kind, &call.method, &call.bytes, &call.times);
                let mut reports = Vec::with_capacity(*times as usize);
                let mut outcome = Ok(String::new());
                let mut calls = (0, 0);
                for _ in 0..*times {
                    let (result, report) = match kind {
                        super::interface::CallKind::Query => {
                            let o = engine.query(id, method, bytes)?;
                            calls = (0, 0);
                            (o.result, o.report)
                        }
                        super::interface::CallKind::Update => {
                            let o = engine.update(id, method, bytes)?;
                            let (report, out) = whole_tree(&engine, o.report);
                            calls = out;
                            (o.result, report)
                        }
                    };
                    outcome = result
                        .map(|reply| interface.decode(method, &reply))
                        .map_err(|r| r.to_string());
                    reports.push(report);
                }
                let charged: Vec<u64> = reports.iter().map(|r| r.instructions).collect();
                let report = median(reports);
                rows.push(Row {
                    at: step.at.clone(),
                    kind: kind.name(),
                    name: method.clone(),
                    args: call.args.clone(),
                    outcome,
                    report,
                    charged: if *times > 1 { charged } else { Vec::new() },
                    calls_out: calls.0,
                    rejected: calls.1,
                });
            }
            Action::Caller(p) => engine.set_caller(*p),
            Action::Reply {
                callee,
                method,
                bytes,
            } => engine.set_reply(*callee, method, Some(bytes.clone())),
            Action::Advance(d) => {
                engine.advance_time(*d)?;
                round(&mut engine, &step.at, &mut rows)?;
            }
            Action::Tick => round(&mut engine, &step.at, &mut rows)?,
            Action::Upgrade {
                module,
                args,
                bytes,
            } => {
                let new = &plan.modules[*module];
                let raw = crate::engine::embedded::decompress(&new.wasm)?;
                let out =
                    engine.upgrade_with(id, &new.wasm, bytes, UpgradeOptions::for_module(&raw))?;
                let failed = out.result.is_err();
                rows.push(Row::of_message(&step.at, "upgrade", &new.name, args, out));
                if failed {
                    skipped = plan.steps.len() - i - 1;
                    break;
                }
            }
        }
    }
    if let (true, Some(dir)) = (save, &plan.output.snapshot) {
        save_snapshot(plan, &mut engine, id, dir, &rows)?;
    }
    Ok(Replayed {
        replica,
        rows,
        skipped,
        wall_seconds: started.elapsed().as_secs_f64(),
        load_seconds,
    })
}

fn open(path: &std::path::Path) -> Result<File> {
    File::open(path).map_err(|e| anyhow!("{}: {e}", path.display()))
}

/// An update's report with its callbacks' added (the calls it made went to canisters that
/// are not here), the calls it made and how many of them were rejected.
fn whole_tree(engine: &EmbeddedEngine, first: MessageReport) -> (MessageReport, (usize, usize)) {
    let tree = engine.last_call_tree();
    if tree.len() <= 1 {
        return (first, (0, 0));
    }
    let mut sum = first;
    let mut calls = (0, 0);
    for m in &tree[1..] {
        match m.kind {
            TreeKind::ReplyCallback => calls.0 += 1,
            TreeKind::RejectCallback => calls = (calls.0 + 1, calls.1 + 1),
            _ => {}
        }
        sum.instructions += m.report.instructions;
        sum.heap_dirty_pages += m.report.heap_dirty_pages;
        sum.stable_dirty_pages += m.report.stable_dirty_pages;
        sum.pages = PageCounts::sum(sum.pages, m.report.pages.as_ref());
        crate::engine::Profile::add_to_sum(&mut sum.profile, m.report.profile.as_ref());
        sum.heap_bytes_after = m.report.heap_bytes_after;
        sum.stable_bytes_after = m.report.stable_bytes_after;
    }
    (sum, calls)
}

/// The report of the median message by charged instructions.
fn median(mut reports: Vec<MessageReport>) -> MessageReport {
    let mut order: Vec<usize> = (0..reports.len()).collect();
    order.sort_by_key(|&i| reports[i].instructions);
    let pick = order[(order.len() - 1) / 2];
    reports.swap_remove(pick)
}

/// One round: the global timer and the heartbeat, each a row of its own.
fn round(engine: &mut EmbeddedEngine, at: &str, rows: &mut Vec<Row>) -> Result<()> {
    for task in engine.tick()? {
        let kind = match task.task {
            crate::engine::CanisterTask::GlobalTimer => "timer",
            crate::engine::CanisterTask::Heartbeat => "heartbeat",
        };
        rows.push(Row::of_message(
            at,
            kind,
            task.task.export(),
            "",
            task.outcome,
        ));
    }
    Ok(())
}

/// The state after the steps as a snapshot directory: written beside it and renamed into
/// place, so that a failure leaves no half-written snapshot.
fn save_snapshot(
    plan: &Plan,
    engine: &mut EmbeddedEngine,
    id: Principal,
    dir: &std::path::Path,
    rows: &[Row],
) -> Result<()> {
    let upgraded = rows
        .iter()
        .filter(|r| r.kind == "upgrade" && r.outcome.is_ok())
        .count();
    let wasm = &plan.modules[upgraded].wasm;
    let shape = match &plan.start {
        Start::Snapshot(s) => (**s).clone(),
        Start::Fresh { .. } => super::snapshot::Snapshot::fresh(wasm),
    };
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    // In the directory's parent: renamed into place at the end, removed on a signal.
    let (temp, _guard) = crate::interrupt::TempGuard::make(|| {
        let temp = tempfile::Builder::new()
            .prefix(".icbench-snapshot-")
            .tempdir_in(parent)?;
        let path = temp.path().to_path_buf();
        Ok((temp, path))
    })?;
    let heap_path = temp.path().join(".heap");
    let stable_path = temp.path().join(".stable");
    let mut heap = File::create(&heap_path)?;
    let mut stable = File::create(&stable_path)?;
    let state = engine.write_state_files(id, &mut heap, &mut stable)?;
    shape.write(temp.path(), wasm, &state, &heap_path, &stable_path)?;
    let _ = std::fs::remove_file(&stable_path);
    let _writing = crate::interrupt::writing();
    if dir.exists() {
        std::fs::remove_dir(dir)?;
    }
    std::fs::rename(temp.keep(), dir)?;
    Ok(())
}

impl Row {
    /// The row of a message that answers nothing to show (an install, an upgrade, a task):
    /// its error, if it failed, and its report.
    fn of_message(at: &str, kind: &'static str, name: &str, args: &str, out: CallOutcome) -> Row {
        Row {
            at: at.to_string(),
            kind,
            name: name.to_string(),
            args: args.to_string(),
            outcome: out.result.map(|_| String::new()).map_err(|r| r.to_string()),
            report: out.report,
            charged: Vec::new(),
            calls_out: 0,
            rejected: 0,
        }
    }
}
