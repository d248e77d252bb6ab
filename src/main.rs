//! `icbench`: what IC storage really costs. With no arguments: build the bench canister if
//! needed, run the seed-003 suite on the embedded engine and print the tables.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};

use icbench::bench_canister;
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::pocket_ic::PocketIcEngine;
use icbench::engine::Engine;
use icbench::report::{self, Report};
use icbench::scenario::{JournalMode, Position, Store};
use icbench::suite::{self, Progress, Suite, SuiteConfig};

#[derive(Parser)]
#[command(
    name = "icbench",
    version,
    about = "What Internet Computer storage really costs: StableBTreeMap vs SQLite, metered like the replica."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Run a suite (the default command).
    Run(RunArgs),
    /// Compare two results.json files; exit status 1 on any regression.
    Compare(CompareArgs),
    /// Run a canbench suite offline on the embedded engine; exit status 1 if a bench failed.
    Canbench(icbench::canbench::CanbenchArgs),
    /// Run a small fixed set of scenarios on the embedded engine and on PocketIC
    /// (POCKET_IC_BIN); exit status 1 when any deviation is over --threshold.
    Crosscheck(CrosscheckArgs),
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum EngineKind {
    /// wasmtime with the replica's metering, built in (no external binary).
    Embedded,
    /// A PocketIC server (POCKET_IC_BIN).
    PocketIc,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    /// Plain tables on stdout (the default).
    Table,
    /// report.md on stdout.
    Markdown,
    /// results.json on stdout.
    Json,
    /// results.csv on stdout.
    Csv,
}

#[derive(Args, Clone)]
struct RunArgs {
    /// Suite to run: seed003 (the default), lookups, dbbench, keys, sysbench, a comma-separated list, or all.
    /// seed003 writes into --out, every other suite into --out/NAME.
    #[arg(long, default_value = "seed003")]
    suite: String,
    /// db_bench's N (entries) in the dbbench suite; the 100K benchmarks use N/1000.
    #[arg(long, default_value_t = suite::DEFAULT_DBBENCH_NUM)]
    dbbench_num: u64,
    /// SQLite journal mode in the dbbench suite (db_bench_sqlite3 uses WAL).
    #[arg(long, default_value = "WAL")]
    dbbench_journal_mode: String,
    /// Rows per store and key type in the keys suite (a multiple of 100).
    #[arg(long, default_value_t = suite::DEFAULT_KEYS_ROWS)]
    keys_rows: u64,
    /// SQLite journal mode in the keys suite (seed 002 used WAL).
    #[arg(long, default_value = "WAL")]
    keys_journal_mode: String,
    /// sbtest1 rows in the sysbench suite (2000..=1000000).
    #[arg(long, default_value_t = icbench::sysbench::DEFAULT_ROWS)]
    sysbench_rows: u64,
    /// SQLite journal modes in the sysbench suite, comma-separated (default: the canister's own, PERSIST).
    #[arg(long, value_delimiter = ',', default_values_t = ["PERSIST".to_string()])]
    sysbench_journal_modes: Vec<String>,
    /// sysbench gate: most SQLite ÷ map multiplier per workload (seed 004: 6).
    #[arg(long, default_value_t = icbench::sysbench::DEFAULT_MAX_RATIO)]
    sysbench_max_ratio: f64,
    /// sysbench gate: most section-average multiplier (seed 004: 5).
    #[arg(long, default_value_t = icbench::sysbench::DEFAULT_MAX_SECTION_RATIO)]
    sysbench_max_section_ratio: f64,
    /// Keys per query in the lookups suite, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = suite::LOOKUP_BATCHES)]
    lookup_batches: Vec<u64>,
    /// Rows prefilled into each store (ids 0, 10, 20, ...).
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    /// New rows per update message, comma-separated (seed003).
    #[arg(long, value_delimiter = ',', default_values_t = [1u64, 10, 100, 1_000, 10_000])]
    batches: Vec<u64>,
    /// Stores to measure, comma-separated: btree, sqlite.
    #[arg(long, value_delimiter = ',', default_values_t = ["btree".to_string(), "sqlite".to_string()])]
    stores: Vec<String>,
    /// SQLite journal modes, comma-separated: DELETE, TRUNCATE, PERSIST, MEMORY, WAL, OFF.
    #[arg(long, value_delimiter = ',', default_values_t = JournalMode::ALL.map(|m| m.to_string()))]
    journal_modes: Vec<String>,
    /// Where new rows go, comma-separated: middle, end, random, sorted (random ids in
    /// ascending order) (seed003).
    #[arg(long, value_delimiter = ',', default_values_t = Position::SEED003.map(|p| p.to_string()))]
    positions: Vec<String>,
    /// Bytes of the username payload per row (seed 003 used 100).
    #[arg(long, default_value_t = 100)]
    payload_size: u64,
    /// Seed for the random positions (printed in the report).
    #[arg(long, default_value_t = 2026)]
    seed: u64,
    /// Skip the read scenarios (point lookups, range scan).
    #[arg(long)]
    no_reads: bool,
    /// Engine that runs the canister.
    #[arg(long, value_enum, default_value_t = EngineKind::Embedded)]
    engine: EngineKind,
    /// Directory for report.md, results.csv, results.json and the SVG plots.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// No progress output on stderr.
    #[arg(long)]
    quiet: bool,
    /// Use this canister module instead of building target/canister/bench.wasm.
    #[arg(long)]
    wasm: Option<PathBuf>,
    /// USD per XDR for the price column (1 XDR = 10^12 cycles).
    #[arg(long, default_value_t = suite::DEFAULT_USD_PER_XDR)]
    usd_per_xdr: f64,
}

#[derive(Args)]
struct CompareArgs {
    /// The baseline results.json.
    base: PathBuf,
    /// The new results.json.
    new: PathBuf,
    /// Changes within this many percent are noise.
    #[arg(long, default_value_t = 2.0)]
    noise: f64,
}

#[derive(Args)]
struct CrosscheckArgs {
    /// Largest accepted deviation, in percent of the PocketIC count.
    #[arg(long, default_value_t = icbench::crosscheck::DEFAULT_THRESHOLD)]
    threshold: f64,
    /// Which count to compare: store (performance_counter inside the canister, the default)
    /// or charged (whole update; on PocketIC derived from the cycles balance).
    #[arg(long, value_enum, default_value_t = MetricKind::Store)]
    metric: MetricKind,
    /// Use this canister module instead of building target/canister/bench.wasm.
    #[arg(long)]
    wasm: Option<PathBuf>,
    /// No progress output on stderr.
    #[arg(long)]
    quiet: bool,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum MetricKind {
    Store,
    Charged,
}

fn parse_list<T>(values: &[String], parse: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>> {
    values
        .iter()
        .map(|v| parse(v.trim()).map_err(|e| anyhow!(e)))
        .collect()
}

impl RunArgs {
    fn suites(&self) -> Result<Vec<Suite>> {
        Suite::parse_selection(&self.suite).map_err(|e| anyhow!(e))
    }

    fn config(&self, suite: Suite) -> Result<SuiteConfig> {
        let kinds = parse_list(&self.stores, |s| match s.to_ascii_lowercase().as_str() {
            "btree" => Ok("btree"),
            "sqlite" => Ok("sqlite"),
            _ => Err(format!("unknown store {s:?}; accepted: btree, sqlite")),
        })?;
        let modes = parse_list(&self.journal_modes, |s| s.parse::<JournalMode>())?;
        let mut stores = Vec::new();
        if kinds.contains(&"btree") {
            stores.push(Store::BTree);
        }
        if kinds.contains(&"sqlite") {
            for m in JournalMode::ALL.into_iter().filter(|m| modes.contains(m)) {
                stores.push(Store::Sqlite(m));
            }
        }
        if stores.is_empty() {
            return Err(anyhow!(
                "no store selected (--stores btree,sqlite and at least one --journal-modes)"
            ));
        }
        let mut positions = parse_list(&self.positions, |s| s.parse::<Position>())?;
        positions.sort();
        positions.dedup();
        let mut batches = self.batches.clone();
        batches.sort();
        batches.dedup();
        if !(self.usd_per_xdr.is_finite() && self.usd_per_xdr > 0.0) {
            return Err(anyhow!("--usd-per-xdr must be a positive number"));
        }
        let mut lookup_batches = self.lookup_batches.clone();
        lookup_batches.sort();
        lookup_batches.dedup();
        let dbbench_journal_mode = self
            .dbbench_journal_mode
            .parse::<JournalMode>()
            .map_err(|e| anyhow!("--dbbench-journal-mode: {e}"))?;
        let keys_journal_mode = self
            .keys_journal_mode
            .parse::<JournalMode>()
            .map_err(|e| anyhow!("--keys-journal-mode: {e}"))?;
        // Given order kept (the first mode's tables come first), duplicates dropped.
        let mut sysbench_journal_modes: Vec<JournalMode> = Vec::new();
        for m in parse_list(&self.sysbench_journal_modes, |s| {
            s.parse::<JournalMode>()
                .map_err(|e| format!("--sysbench-journal-modes: {e}"))
        })? {
            if !sysbench_journal_modes.contains(&m) {
                sysbench_journal_modes.push(m);
            }
        }
        let cfg = SuiteConfig {
            suite,
            sysbench_rows: self.sysbench_rows,
            sysbench_journal_modes,
            sysbench_max_ratio: self.sysbench_max_ratio,
            sysbench_max_section_ratio: self.sysbench_max_section_ratio,
            keys_rows: self.keys_rows,
            keys_journal_mode,
            lookup_batches,
            dbbench_num: self.dbbench_num,
            dbbench_journal_mode,
            rows: self.rows,
            batches,
            stores,
            positions,
            payload_size: self.payload_size,
            seed: self.seed,
            reads: !self.no_reads,
            usd_per_xdr: self.usd_per_xdr,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

fn make_engine(kind: EngineKind) -> Result<Box<dyn Engine>> {
    match kind {
        EngineKind::Embedded => Ok(Box::new(EmbeddedEngine::default())),
        EngineKind::PocketIc => Ok(Box::new(PocketIcEngine::from_env()?)),
    }
}

/// Where a suite's files go: seed003 keeps `--out` itself (as before suites existed), the
/// others a subdirectory named after them, so `--suite all` overwrites nothing.
fn out_dir(base: &std::path::Path, suite: Suite) -> PathBuf {
    match suite {
        Suite::Seed003 => base.to_path_buf(),
        other => base.join(other.name()),
    }
}

/// Runs the selected suites and writes all their outputs; `Ok(false)` when a suite's gate
/// (sysbench's ceilings) failed.
fn run(args: &RunArgs) -> Result<bool> {
    let suites = args.suites()?;
    // Every configuration is checked before any work starts.
    let configs = suites
        .iter()
        .map(|&s| args.config(s))
        .collect::<Result<Vec<_>>>()?;
    if suites.len() > 1 && matches!(args.format, Format::Json | Format::Csv) {
        return Err(anyhow!(
            "--format json/csv prints one suite; with {} suites read results.json / results.csv under --out {}",
            suites.len(),
            args.out.display()
        ));
    }
    let mut engine = make_engine(args.engine)?;
    let wasm = match &args.wasm {
        Some(path) => {
            std::fs::read(path).with_context(|| format!("reading --wasm {}", path.display()))?
        }
        None => bench_canister::ensure_built(args.quiet)?,
    };
    let quiet = args.quiet;
    let started = std::time::Instant::now();
    // A live bar on a terminal; on a pipe or in CI, one line per prefill message and
    // per tenth of the scenarios.
    let tty = std::io::stderr().is_terminal();
    let mut progress = |p: Progress<'_>| {
        if quiet {
            return;
        }
        let (line, milestone) = match p {
            Progress::Prefill { store, done, total } => (
                format!(
                    "prefill {store:<6} {} {done}/{total} rows",
                    bar(done as f64 / total as f64)
                ),
                true,
            ),
            Progress::Scenario { done, total, key } => (
                format!(
                    "scenarios      {} {done}/{total} {key}",
                    bar(done as f64 / total as f64)
                ),
                done == total || done % (total / 10).max(1) == 0,
            ),
        };
        let elapsed = started.elapsed().as_secs_f64();
        if tty {
            eprint!("\r\x1b[2K{line} [{elapsed:.0}s]");
            let _ = std::io::stderr().flush();
        } else if milestone {
            eprintln!("{line} [{elapsed:.0}s]");
        }
    };
    let mut gate_ok = true;
    for cfg in &configs {
        let suite_started = std::time::Instant::now();
        if !quiet && configs.len() > 1 {
            eprintln!("suite {}", cfg.suite);
        }
        let report = suite::run(engine.as_mut(), &wasm, cfg, &mut progress)?;
        if !quiet && tty {
            eprintln!();
        }
        let dir = out_dir(&args.out, cfg.suite);
        let written = report::write_all(&report, &dir)
            .with_context(|| format!("writing results to {}", dir.display()))?;
        let failures = icbench::sysbench::report_gate(&report);
        if !failures.is_empty() {
            gate_ok = false;
            eprintln!(
                "{} gate failed ({} checks above the ceilings):\n  {}",
                cfg.suite,
                failures.len(),
                failures.join("\n  ")
            );
        }
        let stdout = match args.format {
            Format::Table => report::terminal_tables(&report),
            Format::Markdown => report::markdown(&report),
            Format::Json => report::json(&report),
            Format::Csv => report::csv(&report),
        };
        if configs.len() > 1 {
            println!("== suite {} ==\n", cfg.suite);
        }
        print!("{stdout}");
        if !quiet {
            eprintln!(
                "wrote {}",
                written
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            eprintln!(
                "{}",
                speed_line(&report, suite_started.elapsed().as_secs_f64())
            );
        }
    }
    Ok(gate_ok)
}

fn speed_line(report: &Report, wall: f64) -> String {
    let executed = report.executed_instructions as f64;
    format!(
        "wall time {wall:.1}s for {} scenarios, prefill included; the engine executed {:.2}B instructions, {:.2}B per second",
        report.results.len(),
        executed / 1e9,
        executed / 1e9 / wall.max(1e-9)
    )
}

fn bar(fraction: f64) -> String {
    let filled = (fraction.clamp(0.0, 1.0) * 30.0).round() as usize;
    format!("[{}{}]", "#".repeat(filled), ".".repeat(30 - filled))
}

fn compare(args: &CompareArgs) -> Result<bool> {
    let read = |p: &PathBuf| -> Result<Report> {
        let text =
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        report::from_json(&text).map_err(|e| anyhow!("{}: {e}", p.display()))
    };
    if !(args.noise.is_finite() && args.noise >= 0.0) {
        return Err(anyhow!("--noise must be a non-negative percentage"));
    }
    let comparison = report::compare::compare(&read(&args.base)?, &read(&args.new)?, args.noise);
    print!("{}", comparison.render());
    Ok(!comparison.has_regressions())
}

fn crosscheck(args: &CrosscheckArgs) -> Result<bool> {
    use icbench::crosscheck::{self, Metric};
    if !(args.threshold.is_finite() && args.threshold >= 0.0) {
        return Err(anyhow!("--threshold must be a non-negative percentage"));
    }
    // The server first: without one this fails at once, before any build or run.
    let mut pocket_ic = PocketIcEngine::from_env()?;
    let wasm = match &args.wasm {
        Some(path) => {
            std::fs::read(path).with_context(|| format!("reading --wasm {}", path.display()))?
        }
        None => bench_canister::ensure_built(args.quiet)?,
    };
    let cfg = crosscheck::config();
    let mut reports = Vec::new();
    for engine in [
        &mut EmbeddedEngine::default() as &mut dyn Engine,
        &mut pocket_ic,
    ] {
        if !args.quiet {
            eprintln!(
                "crosscheck: running {} scenarios on {}...",
                cfg.matrix().len(),
                engine.name()
            );
        }
        reports.push(suite::run(engine, &wasm, &cfg, &mut |_| {})?);
    }
    let metric = match args.metric {
        MetricKind::Store => Metric::Store,
        MetricKind::Charged => Metric::Charged,
    };
    let check = crosscheck::compare(&reports[0], &reports[1], metric, args.threshold);
    print!("{}", check.render());
    Ok(check.failures() == 0)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match &cli.command {
        None => run(&cli.run),
        Some(Command::Run(args)) => run(args),
        Some(Command::Compare(args)) => compare(args),
        Some(Command::Canbench(args)) => icbench::canbench::run(args),
        Some(Command::Crosscheck(args)) => crosscheck(args),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
