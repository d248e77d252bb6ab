//! The upgrade suite's report: the upgrade cost and first-calls tables, a plot per store,
//! the limits table and the limit run's account, all from the records and the points and
//! limit run kept in results.json.

use super::{
    predict, LimitRun, Point, UpgradeStore, CALIBRATION_SIZES, INSTALL_CODE_RATE_LIMIT, LIMIT_RUN,
    MAX_HEAP_BYTES, POINTS, UPGRADE_SAME_MODULE,
};
use crate::engine::cost::Limits;
use crate::report::format::{compact, thousands};
use crate::report::svg::Axes;
use crate::report::{
    Block, Document, LinePlot, Plot, PlotKind, Report, ScenarioResult, Series, Status, Table,
};
use crate::suites::grid::table_headed;

/// The store a record names, as this suite's tables and plots do; a store this version
/// does not know by its column.
fn label_of(r: &ScenarioResult) -> String {
    UpgradeStore::of_record(r).map_or_else(|| r.store.clone(), UpgradeStore::label)
}

fn find<'a>(report: &'a Report, label: &str, rows: u64, op: &str) -> Option<&'a ScenarioResult> {
    report
        .results
        .iter()
        .find(|r| label_of(r) == label && r.rows_before == rows && r.operation == op)
}

fn cell(r: Option<&ScenarioResult>, f: impl Fn(&ScenarioResult) -> String) -> String {
    match r {
        Some(r) if r.status == Status::Ok => f(r),
        Some(r) => match &r.status {
            Status::Failed(e) | Status::Refused(e) => format!("failed: {e}"),
            Status::Ok => unreachable!(),
        },
        None => "-".into(),
    }
}

fn bytes(n: u64) -> String {
    if n >= 1 << 30 {
        return format!("{:.2} GiB", n as f64 / (1u64 << 30) as f64);
    }
    format!("{} MiB", compact(n as f64 / (1u64 << 20) as f64))
}

fn limit_cell(n: Option<u64>) -> String {
    match n {
        None => "none (does not grow)".into(),
        Some(n) if n > 10_000_000_000 => "> 10 billion".into(),
        Some(n) => format!("≈ {}", thousands(n)),
    }
}

/// The upgrade suite's tables, plots and the limit run's account.
pub fn document(report: &Report) -> Document {
    let points: Vec<Point> = report.extra(POINTS).unwrap_or_default();
    let runs: Vec<LimitRun> = report.extra(LIMIT_RUN).unwrap_or_default();
    let labels = labels(report);
    let mut upgrades = table_headed(&[
        "Store",
        "Rows",
        "pre_upgrade",
        "(in hook)",
        "compilation",
        "post_upgrade",
        "(in hook)",
        "upgrade",
        "same module",
        "cycles",
        "heap before → after",
        "encoded",
        "wait (rounds)",
    ]);
    let mut firsts = table_headed(&[
        "Store",
        "Rows",
        "warm_update",
        "first_update",
        "warm_query",
        "first_query",
    ]);
    let mut plots = Vec::new();
    let mut md = Vec::new();
    for label in &labels {
        for n in sizes(report, label) {
            let point = points
                .iter()
                .find(|p| !p.calibration && &p.store == label && p.rows == n);
            upgrades.push(upgrade_row(report, label, n, point));
            firsts.push(firsts_row(report, label, n));
        }
        if let Some((image, plot)) = upgrade_plot(report, label) {
            md.push(image);
            plots.push(plot);
        }
    }

    let mut blocks = vec![
        Block::Heading {
            level: 2,
            text: "Upgrade cost (instructions; in hook = the canister's performance counter)".into(),
        },
        Block::Table(upgrades),
        Block::Heading {
            level: 2,
            text: "The first calls after the upgrade (instructions; × = against warm)".into(),
        },
        Block::Table(firsts),
        Block::Heading {
            level: 2,
            text: format!(
                "Limits at {} bytes per row (largest N predicted from a straight line through the two largest sizes measured; the heap maximum is 4 GiB in wasm32 and 6 GiB in wasm64, a Motoko canister under enhanced orthogonal persistence)",
                thousands(report.workload().payload_size)
            ),
        },
        Block::Table(limit_table(&labels, &points, &runs)),
    ];
    let mut terminal = blocks
        .iter()
        .map(|b| match b {
            Block::Heading { level, text } => Block::Heading {
                level: *level,
                text: text.clone(),
            },
            Block::Table(t) => Block::Table(t.clone()),
            Block::Text(t) => Block::Text(t.clone()),
            Block::Code(t) => Block::Code(t.clone()),
            Block::Image { alt, file } => Block::Image {
                alt: alt.clone(),
                file: file.clone(),
            },
        })
        .collect::<Vec<_>>();
    for run in &runs {
        let text = limit_run_text(run);
        blocks.push(Block::Heading {
            level: 2,
            text: format!("The limit run: {}", run.store),
        });
        blocks.push(Block::Text(text.clone()));
        terminal.push(Block::Text(text));
    }
    blocks.push(Block::Heading {
        level: 2,
        text: "Plots".into(),
    });
    blocks.extend(md);
    Document {
        markdown: blocks,
        terminal,
        plots,
    }
}

/// The stores measured, in the order the records first name them (the limit run's records
/// apart).
fn labels(report: &Report) -> Vec<String> {
    let mut labels: Vec<String> = Vec::new();
    for r in &report.results {
        let l = label_of(r);
        if !r.operation.starts_with("limit_")
            && !r.operation.starts_with("after_failed")
            && !labels.contains(&l)
        {
            labels.push(l);
        }
    }
    labels
}

/// The sizes a store was upgraded at.
fn sizes(report: &Report, label: &str) -> Vec<u64> {
    let mut v: Vec<u64> = report
        .results
        .iter()
        .filter(|r| label_of(r) == label && r.operation == "upgrade")
        .map(|r| r.rows_before)
        .collect();
    v.dedup();
    v
}

/// A row of the upgrade cost table: the store's upgrade at `n` rows, stage by stage.
fn upgrade_row(report: &Report, label: &str, n: u64, point: Option<&Point>) -> Vec<String> {
    let up = find(report, label, n, "upgrade");
    let pre = find(report, label, n, "pre_upgrade");
    let post = find(report, label, n, "post_upgrade");
    vec![
        label.to_string(),
        thousands(n),
        cell(pre, |r| thousands(r.instructions)),
        cell(pre, |r| thousands(r.store_instructions)),
        point.map_or("-".into(), |p| thousands(p.compile_instructions)),
        cell(post, |r| thousands(r.instructions)),
        cell(post, |r| thousands(r.store_instructions)),
        cell(up, |r| thousands(r.instructions)),
        cell(find(report, label, n, UPGRADE_SAME_MODULE), |r| {
            thousands(r.instructions)
        }),
        cell(up, |r| thousands(r.cycles)),
        point.map_or("-".into(), |p| {
            format!(
                "{} → {}",
                bytes(p.heap_bytes_before),
                bytes(p.heap_bytes_after)
            )
        }),
        point.map_or("-".into(), |p| match p.encoded_bytes {
            0 => "-".into(),
            b => bytes(b),
        }),
        cell(up, |r| {
            thousands(r.instructions.div_ceil(INSTALL_CODE_RATE_LIMIT))
        }),
    ]
}

/// A row of the first calls' table: the warm calls at `n` rows and the first ones after the
/// upgrade, with their ratio.
fn firsts_row(report: &Report, label: &str, n: u64) -> Vec<String> {
    let ratio = |warm: Option<&ScenarioResult>, first: Option<&ScenarioResult>| {
        cell(first, |f| match warm {
            Some(w) if w.status == Status::Ok && w.instructions > 0 => format!(
                "{} (×{:.2})",
                thousands(f.instructions),
                f.instructions as f64 / w.instructions as f64
            ),
            _ => thousands(f.instructions),
        })
    };
    let (wu, fu) = (
        find(report, label, n, "warm_update"),
        find(report, label, n, "first_update"),
    );
    let (wq, fq) = (
        find(report, label, n, "warm_query"),
        find(report, label, n, "first_query"),
    );
    vec![
        label.to_string(),
        thousands(n),
        cell(wu, |r| thousands(r.instructions)),
        ratio(wu, fu),
        cell(wq, |r| thousands(r.instructions)),
        ratio(wq, fq),
    ]
}

/// The store's plot of instructions per stored row by size (the hooks and the whole
/// upgrade) and its image block, if it has points.
fn upgrade_plot(report: &Report, label: &str) -> Option<(Block, Plot)> {
    // The hooks are not stores: colours no store has, the same in every upgrade plot.
    let series = |op: &str| Series {
        label: op.to_string(),
        color: None,
        points: report
            .results
            .iter()
            .filter(|r| label_of(r) == label && r.operation == op && r.status == Status::Ok)
            .map(|r| (r.rows_before as f64, r.instructions_per_row))
            .collect(),
    };
    let plot = LinePlot {
        title: format!("Upgrade of {label}: instructions per stored row"),
        unit: "row".into(),
        series: vec![
            series("pre_upgrade"),
            series("post_upgrade"),
            series("upgrade"),
        ],
        axes: Some(Axes {
            x: "rows in the store".into(),
            y: "instructions per stored row".into(),
            x_unit: "rows".into(),
            y_unit: "instructions/row".into(),
        }),
    };
    if plot.svg().is_empty() {
        return None;
    }
    let file = format!("plot-upgrade-{}.svg", slug(label));
    let image = Block::Image {
        alt: format!("Upgrade of {label}"),
        file: file.clone(),
    };
    Some((
        image,
        Plot {
            file,
            kind: PlotKind::Lines(plot),
        },
    ))
}

/// The limits table: per store the largest N each limit allows, and the limit run's result.
fn limit_table(labels: &[String], points: &[Point], runs: &[LimitRun]) -> Table {
    let limits = Limits::APPLICATION;
    let mut limit_table = table_headed(&[
        "Store",
        "install_code 300B",
        "wasm_memory_limit 3 GiB",
        "heap maximum (pre_upgrade)",
        "first failing N",
        "real run",
    ]);
    for label in labels {
        let own: Vec<&Point> = points
            .iter()
            .filter(|p| !p.calibration && &p.store == label)
            .collect();
        let predicted = predict(&own, &limits);
        let run = runs.iter().find(|r| &r.store == label);
        if own.len() < 2 {
            // Refused, or one size only: nothing to draw a line through.
            let mut row = vec![label.clone()];
            row.extend(["-"; 4].map(String::from));
            row.push(run.map_or("-".into(), run_cell));
            limit_table.push(row);
            continue;
        }
        limit_table.push(vec![
            label.clone(),
            limit_cell(predicted.instructions),
            limit_cell(predicted.wasm_memory_limit),
            limit_cell(predicted.heap_4gib),
            predicted
                .first_failing()
                .map_or("none".into(), |n| limit_cell(Some(n))),
            match run {
                None => "-".into(),
                Some(r) => run_cell(r),
            },
        ]);
    }
    limit_table
}

fn run_cell(r: &LimitRun) -> String {
    match (&r.rows, &r.error_code) {
        (Some(rows), Some(code)) => format!(
            "{code} at {} rows of {} B",
            thousands(*rows),
            thousands(r.payload_size)
        ),
        (Some(rows), None) => format!("succeeded at {} rows", thousands(*rows)),
        (None, _) => r.note.clone(),
    }
}

fn limit_run_text(r: &LimitRun) -> String {
    let p = &r.predicted;
    let mut t = format!(
        "Predicted at {} bytes per row from upgrades at {} rows: install_code 300B {}, wasm_memory_limit {}, heap maximum {}.\n",
        thousands(r.payload_size),
        CALIBRATION_SIZES.map(thousands).join(" and "),
        limit_cell(p.instructions),
        limit_cell(p.wasm_memory_limit),
        limit_cell(p.heap_4gib),
    );
    t.push_str(&format!("Run: {}\n", r.note));
    if let (Some(code), Some(error)) = (&r.error_code, &r.error) {
        t.push_str(&format!(
            "\nThe upgrade failed with {code}:\n\n> {}\n\n",
            error.replace('\n', "\n> ")
        ));
        if let Some(heap) = r.heap_bytes_in_pre_upgrade {
            t.push_str(&format!(
                "The heap when pre_upgrade ended: {} bytes ({}; the wasm32 maximum is {} bytes).",
                thousands(heap),
                bytes(heap),
                thousands(MAX_HEAP_BYTES)
            ));
            if code == "IC0502" {
                t.push_str(" pre_upgrade is exempt from wasm_memory_limit, so only the 4 GiB wasm32 maximum stops it: a memory.grow past it returns -1 (on the replica too, fact sheet §3) and the Rust allocator aborts (`unreachable`). The heap was far below 4 GiB when it stopped: the encoded copy's Vec, doubling its capacity, asked for more than the rest of the 4 GiB (inferred from the sizes, not traced inside the canister). The straight-line prediction does not model that doubling, so it is only a first guess; the run steps on from it.");
            }
            t.push('\n');
        }
        t.push_str(&format!(
            "Afterwards the canister still runs its old module: `stats` reports {} rows in the store, and the 100-key lookup in the middle found {} rows.\n",
            r.rows_after.map_or("?".into(), thousands),
            r.lookup_rows_found.map_or("?".into(), thousands)
        ));
    }
    t
}

fn slug(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect::<String>()
        .split('-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(slug("SQLite PERSIST"), "sqlite-persist");
        assert_eq!(slug("heap (Candid)"), "heap-candid");
    }
}
