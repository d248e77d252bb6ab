//! The upgrade itself: a new build of the module, install_code to it after a checkpoint
//! (its compilation paid in full) and again before the next one, and the records of the
//! whole call and its hooks. The scaling suite upgrades its stores with it too.

use anyhow::{bail, Result};
use candid::Encode;

use super::calls::{fill_message, record};
use super::{Point, UpgradeStore};
use crate::bench_canister::{BenchClient, UpgradeStats};
use crate::engine::cost::CyclesFees;
use crate::engine::{CallOutcome, InstallStage, MessageReport, Reject, UpgradeOptions};
use crate::report::{ScenarioResult, Status};

/// The name of the custom section [`new_build`] adds.
pub const BUILD_SECTION: &str = "icbench:build";

/// `wasm` as a new build ships it: the same code with another module hash. A custom section
/// (which no canister code reads and the replica's memory usage does not count, being no
/// `icp:` metadata) is appended, so every hook and every call costs the same and only what
/// the replica keys by the module hash (its compilation charge) can differ.
pub fn new_build(wasm: &[u8]) -> Result<Vec<u8>> {
    use wasm_encoder::Section;
    if !wasm.starts_with(b"\0asm") {
        bail!("a new build is made from a raw Wasm module (\\0asm...), not a gzipped one");
    }
    let mut out = wasm.to_vec();
    wasm_encoder::CustomSection {
        name: BUILD_SECTION.into(),
        data: b"a new build of the same code".as_slice().into(),
    }
    .append_to(&mut out);
    Ok(out)
}

/// Upgrades the canister to `new_build` after a checkpoint, as a user ships a new build
/// (its compilation paid in full), and returns the records of the upgrade and its hooks,
/// the point for the limits, and the upgrade's error if it failed. Scaling upgrades each
/// store at its largest size with it.
pub(in crate::suites) fn upgrade(
    client: &mut BenchClient<'_>,
    engine: &str,
    store: UpgradeStore,
    rows: u64,
    payload_size: u64,
    new_build: &[u8],
    usd_per_xdr: f64,
) -> Result<(Vec<ScenarioResult>, Point, Option<Reject>)> {
    // Whatever was installed before was installed at least a checkpoint ago.
    client.engine.checkpoint();
    let options = UpgradeOptions::for_module(new_build);
    let out = client
        .engine
        .upgrade_with(client.canister, new_build, &Encode!()?, options)?;
    client.executed_instructions += out.report.instructions;
    let m = &out.report;
    // After a failed upgrade the canister's counts are the old ones: none are this upgrade's.
    let no_stats = || UpgradeStats {
        pre_upgrade_instructions: 0,
        post_upgrade_instructions: 0,
        encoded_bytes: 0,
        encoding: String::new(),
    };
    let stats = match &out.result {
        // A module from before the heap store has no upgrade_stats: 0 in the hook columns.
        Ok(_) if !has_upgrade_stats(client)? => no_stats(),
        Ok(_) => client.upgrade_stats()?,
        Err(_) => UpgradeStats {
            pre_upgrade_instructions: 0,
            post_upgrade_instructions: 0,
            encoded_bytes: 0,
            encoding: String::new(),
        },
    };
    let (pre, compile, post) = (
        stage(m, InstallStage::PreUpgrade),
        stage(m, InstallStage::Compilation),
        stage(m, InstallStage::PostUpgrade),
    );
    let status = match &out.result {
        Ok(_) => Status::Ok,
        Err(r) => Status::Failed(r.to_string()),
    };
    let mut records = Vec::new();
    for (op, report, counter, export, which) in [
        (
            "pre_upgrade",
            &pre,
            stats.pre_upgrade_instructions,
            "canister_pre_upgrade",
            InstallStage::PreUpgrade,
        ),
        (
            "post_upgrade",
            &post,
            stats.post_upgrade_instructions,
            "canister_post_upgrade",
            InstallStage::PostUpgrade,
        ),
    ] {
        let mut r = record(engine, store, rows, op);
        r.batch = rows;
        r.method = export.into();
        fill_message(&mut r, report);
        // A stage's own report has no profile: its part of the whole call's has.
        r.profile_data = m.profile.as_ref().and_then(|p| p.under(which.frame()));
        r.store_instructions = counter;
        r.store_instructions_per_row = counter as f64 / rows as f64;
        r.bytes = stats.encoded_bytes;
        r.status = status.clone();
        records.push(r);
    }
    let mut r = install_code_record(engine, store, rows, UPGRADE, &out, usd_per_xdr);
    r.bytes = stats.encoded_bytes;
    records.push(r);
    let point = Point {
        store: store.label(),
        rows,
        payload_size,
        calibration: false,
        compile_instructions: compile.instructions,
        pre_upgrade_instructions: pre.instructions,
        post_upgrade_instructions: post.instructions,
        upgrade_instructions: m.instructions,
        heap_bytes_before: m.heap_bytes_before,
        heap_bytes_pre_upgrade: pre.heap_bytes_after,
        heap_bytes_after: m.heap_bytes_after,
        stable_bytes_after: m.stable_bytes_after,
        encoded_bytes: stats.encoded_bytes,
        wasm64: m.wasm64,
    };
    Ok((records, point, out.result.err()))
}

/// The record of an upgrade's whole install_code: its instructions and cycles.
fn install_code_record(
    engine: &str,
    store: UpgradeStore,
    rows: u64,
    operation: &str,
    out: &CallOutcome,
    usd_per_xdr: f64,
) -> ScenarioResult {
    let mut r = record(engine, store, rows, operation);
    r.batch = rows;
    r.method = "install_code".into();
    r.args = format!(
        "(record {{ mode = variant {{ upgrade }}; wasm_module = <{}>; arg = (); }})",
        match operation {
            UPGRADE => "a new build: the same code, another module hash",
            _ => "the new build again, installed since the last checkpoint",
        }
    );
    fill_message(&mut r, &out.report);
    let cycles =
        CyclesFees::APPLICATION_13.execution_cost(out.report.instructions, out.report.wasm64);
    r.cycles = cycles as u64;
    r.usd = cycles as f64 / 1e12 * usd_per_xdr;
    r.status = match &out.result {
        Ok(_) => Status::Ok,
        Err(r) => Status::Failed(r.to_string()),
    };
    r
}

/// The operation of an upgrade to a new build (its compilation paid in full).
pub const UPGRADE: &str = "upgrade";
/// The operation of the same upgrade again before a checkpoint: the module's hash is in the
/// replica's `expected_compiled_wasms`, so (from the 2025-03 vintage on) its compilation
/// counts 1/100.
pub const UPGRADE_SAME_MODULE: &str = "upgrade_same_module";

/// The upgrade to `new_build` once more, right after [`upgrade`] installed it (no checkpoint
/// between): only its compilation charge can differ from the first.
pub(super) fn upgrade_same_module(
    client: &mut BenchClient<'_>,
    engine: &str,
    store: UpgradeStore,
    rows: u64,
    new_build: &[u8],
    usd_per_xdr: f64,
) -> Result<ScenarioResult> {
    let options = UpgradeOptions::for_module(new_build);
    let out = client
        .engine
        .upgrade_with(client.canister, new_build, &Encode!()?, options)?;
    client.executed_instructions += out.report.instructions;
    Ok(install_code_record(
        engine,
        store,
        rows,
        UPGRADE_SAME_MODULE,
        &out,
        usd_per_xdr,
    ))
}

/// Whether the canister answers `upgrade_stats`.
fn has_upgrade_stats(client: &mut BenchClient<'_>) -> Result<bool> {
    let out = client
        .engine
        .query(client.canister, "upgrade_stats", &Encode!()?)?;
    Ok(
        !matches!(&out.result, Err(r) if r.error_code == crate::engine::ErrorCode::CanisterMethodNotFound),
    )
}

fn stage(report: &MessageReport, which: InstallStage) -> MessageReport {
    report
        .stages
        .iter()
        .find(|(s, _)| *s == which)
        .map(|(_, r)| r.clone())
        .unwrap_or_default()
}
