//! A replay's report: a row per step (charged instructions, the memory tracker's share,
//! pages, cycles and USD, the reply), each upgrade against the install_code limits, the
//! vintages side by side; on the terminal and, with --out, as report.md, results.csv and
//! results.json (one [`Report`] per vintage, so that `icbench compare` compares replays).

use anyhow::Result;

use super::plan::{Plan, Price, Start};
use super::run::{Replayed, Row};
use crate::engine::cost::{Limits, SYSTEM_SUBNET_INSTALL, SYSTEM_SUBNET_INSTALL_SLICE};
use crate::engine::InstallStage;
use crate::report::format::{thousands, usd};
use crate::report::{
    self, Align, Block, Document, Provenance, Report, ScenarioResult, Sequence, Status, Table,
    PROVENANCE,
};

/// The suite name replays' records carry.
pub const SUITE: &str = "replay";

/// Prints each replay and writes its files; Ok(false) when a step failed or was skipped.
pub fn output(plan: &Plan, replays: &[Replayed]) -> Result<bool> {
    let mut ok = true;
    let mut printed = String::new();
    for (i, replayed) in replays.iter().enumerate() {
        let mut report = report_of(plan, replayed);
        let document = document(plan, replayed, (i == 0).then_some(replays));
        if plan.output.profile {
            report::profiles::select(&mut report, "*");
        }
        printed.push_str(&report::terminal(&document));
        ok &= replayed.skipped == 0 && replayed.rows.iter().all(|r| r.outcome.is_ok());
        if let Some(out) = &plan.output.dir {
            let dir = match replays.len() {
                1 => out.clone(),
                _ => out.join(replayed.replica.name),
            };
            report::write_all(&report, &document, &dir, Vec::new())?;
        }
    }
    print!("{printed}");
    Ok(ok)
}

fn report_of(plan: &Plan, replayed: &Replayed) -> Report {
    let mut results = Vec::new();
    for (n, row) in replayed.rows.iter().enumerate() {
        results.push(result_of(plan, n + 1, row, None));
        for (stage, stage_report) in row.report.stages.iter() {
            let mut stage_row = result_of(plan, n + 1, row, Some(*stage));
            stage_row.instructions = stage_report.instructions;
            stage_row.pages = stage_report.pages;
            stage_row.cycles = 0;
            stage_row.usd = 0.0;
            results.push(stage_row);
        }
    }
    let mut report = Report {
        suite: SUITE.into(),
        engine: "embedded".into(),
        workload: None,
        wall_seconds: replayed.wall_seconds,
        prefill: Some(match &plan.start {
            Start::Snapshot(s) => format!(
                "the snapshot {}, loaded in {:.2} s",
                s.dir.display(),
                replayed.load_seconds
            ),
            Start::Fresh { .. } => format!("a fresh canister of {}", plan.modules[0].name),
        }),
        executed_instructions: replayed.rows.iter().map(|r| r.report.instructions).sum(),
        work: None,
        results,
        notes: notes(plan, replayed),
        extra: Default::default(),
    };
    report.set_replica(Some(replayed.replica));
    report.set_host(Some(plan.host));
    let modules: Vec<(&str, &[u8])> = plan
        .modules
        .iter()
        .map(|m| (m.name.as_str(), m.wasm.as_slice()))
        .collect();
    report.set_extra(PROVENANCE, &Provenance::of(modules, true));
    report
}

fn result_of(plan: &Plan, step: usize, row: &Row, stage: Option<InstallStage>) -> ScenarioResult {
    let report = &row.report;
    let (cycles, usd) = cost(&plan.price, row);
    let operation = match stage {
        Some(s) => format!("{}-{}", row.kind, s.frame().trim_matches(['[', ']'])),
        None => row.kind.to_string(),
    };
    let mut r = ScenarioResult {
        suite: SUITE.into(),
        engine: "embedded".into(),
        store: row.name.clone(),
        position: step.to_string(),
        operation,
        batch: row.charged.len().max(1) as u64,
        method: row.name.clone(),
        args: row.args.clone(),
        status: match &row.outcome {
            Ok(_) => Status::Ok,
            Err(e) => Status::Failed(e.clone()),
        },
        instructions: report.instructions,
        instructions_per_row: report.instructions as f64,
        cycles,
        usd,
        heap_pages_delta: pages_delta(report.heap_bytes_before, report.heap_bytes_after),
        stable_pages_delta: pages_delta(report.stable_bytes_before, report.stable_bytes_after),
        sequence: (!row.charged.is_empty()).then(|| Sequence::of(&row.charged, None)),
        ..Default::default()
    };
    r.set_pages(report);
    if stage.is_none() {
        r.add_profile(report.profile.as_ref());
        r.page_map_data = report.page_map.clone();
    }
    r
}

/// A step's cycles and USD: replicated execution on the plan's subnet (a query sent as one
/// is free).
fn cost(price: &Price, row: &Row) -> (u64, f64) {
    let cycles = match row.kind {
        "query" => 0,
        _ => price
            .fees
            .execution_cost(row.report.instructions, row.report.wasm64) as u64,
    };
    (cycles, cycles as f64 / 1e12 * price.usd_per_xdr)
}

fn pages_delta(before: u64, after: u64) -> i64 {
    (after as i64 - before as i64) / 65_536
}

fn notes(plan: &Plan, replayed: &Replayed) -> Vec<String> {
    let mut notes = vec![
        format!("Not in a snapshot, and assumed: the canister id {} (`--canister-id`), its controllers {} (`--controller`), a cycles balance of {} (`--cycles`), an application subnet's limits, a wasm_memory_limit of {} (`--wasm-memory-limit`); calls the canister makes to other canisters are rejected as calls to an absent canister (IC0301) unless a `reply` step gives their reply.", plan.assumed.canister_id.unwrap_or_else(|| crate::engine::embedded::canister_id(0)), plan.assumed.settings.controllers.iter().map(|p| p.to_text()).collect::<Vec<_>>().join(", "), plan.assumed.settings.cycles, match plan.assumed.limits.wasm_memory_limit { 0 => "none".to_string(), n => format!("{} bytes", thousands(n)) }),
        format!(
            "Cycles: replicated execution on a {}-node application subnet (queries sent as queries are free), at {} USD per XDR.",
            plan.price.fees.subnet_size, plan.price.usd_per_xdr
        ),
    ];
    if replayed.skipped > 0 {
        notes.push(format!(
            "The upgrade failed and the canister kept its module and state: the {} steps after it were not run (they were typed for the new module).",
            replayed.skipped
        ));
    }
    notes
}

fn document(plan: &Plan, replayed: &Replayed, all: Option<&[Replayed]>) -> Document {
    let mut doc = Document::default();
    let mut steps = Table::with_aligns(
        [
            "step",
            "call",
            "instructions",
            "of which pages",
            "heap pages acc/wr",
            "stable pages acc/wr",
            "cycles",
            "USD",
            "result",
        ]
        .map(String::from)
        .to_vec(),
        vec![
            Align::Left,
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Left,
        ],
    );
    let mut any_repeated = false;
    let mut repeated = Table::new(
        ["step", "call", "messages", "mean", "median", "p99", "max"]
            .map(String::from)
            .to_vec(),
    );
    for row in &replayed.rows {
        let (cycles, price) = cost(&plan.price, row);
        let pages = row.report.pages;
        let pair = |a: Option<u64>, w: Option<u64>| match (a, w) {
            (Some(a), Some(w)) => format!("{a} / {w}"),
            _ => "-".into(),
        };
        let mut result = match &row.outcome {
            Ok(reply) => report::comment::cell(reply, 60),
            Err(e) => format!("error: {}", report::comment::cell(e, 120)),
        };
        if row.calls_out > 0 {
            result.push_str(&format!(
                " ({} calls out, {} rejected as to an absent canister)",
                row.calls_out, row.rejected
            ));
        }
        steps.push(vec![
            row.at.clone(),
            call_text(row),
            thousands(row.report.instructions),
            pages.map_or("-".into(), |p| thousands(p.page_charge_instructions)),
            pair(
                pages.map(|p| p.heap_wasm_pages_accessed),
                pages.map(|p| p.heap_wasm_pages_written),
            ),
            pair(
                pages.map(|p| p.stable_wasm_pages_accessed),
                pages.map(|p| p.stable_wasm_pages_written),
            ),
            thousands(cycles),
            usd(price),
            result,
        ]);
        if !row.charged.is_empty() {
            any_repeated = true;
            let s = Sequence::of(&row.charged, None);
            repeated.push(vec![
                row.at.clone(),
                call_text(row),
                s.messages.to_string(),
                thousands(s.charged_mean.round() as u64),
                thousands(s.charged_median),
                thousands(s.charged_p99),
                thousands(s.charged_max),
            ]);
        }
    }
    doc.push_table(
        &format!("Steps under replica rules {}", replayed.replica.name),
        steps,
    );
    if any_repeated {
        doc.push_table("Repeated calls (charged instructions per message; the row above is the median message's)", repeated);
    }
    for row in replayed
        .rows
        .iter()
        .filter(|r| matches!(r.kind, "upgrade" | "install"))
    {
        doc.push_table(
            &format!("{} {} ({})", row.kind, row.name, row.at),
            install_table(row),
        );
    }
    if let Some(all) = all.filter(|a| a.len() > 1) {
        doc.push_table("Side by side (charged instructions)", side_by_side(all));
    }
    let notes = notes(plan, replayed).join("\n");
    doc.terminal.push(Block::Text(format!("{notes}\n")));
    doc
}

/// An install_code's stages and its total against both subnets' limits.
fn install_table(row: &Row) -> Table {
    let mut t = Table::new(["stage", "instructions"].map(String::from).to_vec());
    for (stage, r) in row.report.stages.iter() {
        t.push(vec![
            stage.frame().trim_matches(['[', ']']).to_string(),
            thousands(r.instructions),
        ]);
    }
    let total = row.report.instructions;
    t.push(vec!["total".into(), thousands(total)]);
    let app = Limits::APPLICATION;
    for (subnet, limit, slice) in [
        (
            "application",
            app.max_instructions_per_install,
            app.max_instructions_per_slice,
        ),
        ("system", SYSTEM_SUBNET_INSTALL, SYSTEM_SUBNET_INSTALL_SLICE),
    ] {
        t.push(vec![
            format!(
                "{subnet} subnet: limit {}B in {}B slices",
                limit / 1_000_000_000,
                slice / 1_000_000_000
            ),
            format!(
                "{:.2}% of it, {} slice{}",
                total as f64 * 100.0 / limit as f64,
                total.div_ceil(slice).max(1),
                if total.div_ceil(slice) > 1 { "s" } else { "" }
            ),
        ]);
    }
    if let Err(e) = &row.outcome {
        let stage = row
            .report
            .stages
            .last()
            .map_or("install_code", |(s, _)| s.frame());
        t.push(vec![
            format!("failed in {stage}"),
            report::comment::cell(e, 100),
        ]);
    }
    t
}

fn side_by_side(all: &[Replayed]) -> Table {
    let mut headers = vec!["step".to_string(), "call".to_string()];
    headers.extend(all.iter().map(|r| r.replica.name.to_string()));
    headers.push("change".into());
    let mut t = Table::new(headers);
    for (i, row) in all[0].rows.iter().enumerate() {
        let mut cells = vec![row.at.clone(), call_text(row)];
        let counts: Vec<Option<u64>> = all
            .iter()
            .map(|r| r.rows.get(i).map(|x| x.report.instructions))
            .collect();
        cells.extend(counts.iter().map(|c| c.map_or("-".into(), thousands)));
        let change = match (
            counts.first().copied().flatten(),
            counts.last().copied().flatten(),
        ) {
            (Some(a), Some(b)) if a > 0 => {
                report::format::pct_change((b as f64 - a as f64) * 100.0 / a as f64)
            }
            _ => "-".into(),
        };
        cells.push(change);
        t.push(cells);
    }
    t
}

fn call_text(row: &Row) -> String {
    let head = match row.charged.len() {
        0 => row.kind.to_string(),
        n => format!("{n} x {}", row.kind),
    };
    let args = report::comment::cell(&row.args, 40);
    format!("{head} {} {args}", row.name).trim_end().to_string()
}
