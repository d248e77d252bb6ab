//! `icbench`: what IC storage really costs. With no arguments: build the bench canister if
//! needed, run the seed-003 suite on the embedded engine and print the tables.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

use icbench::bench_canister;
use icbench::engine::cost::Replica;
use icbench::engine::disk_cache;
use icbench::engine::embedded::memory::write_log::HeapWrites;
use icbench::engine::embedded::EmbeddedEngine;
#[cfg(feature = "pocket-ic")]
use icbench::engine::pocket_ic::PocketIcEngine;
use icbench::engine::Engine;
use icbench::interrupt;
use icbench::report::{self, profiles, Folded, Report};
use icbench::suites::{self, pool, CommonArgs, Exec, Plan, Progress, Shard, REGISTRY};

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
    /// Run suites (the default command).
    Run(RunArgs),
    /// Compare two results.json files, as text or as a pull-request comment (markdown); exit
    /// status 1 when the gate fails (by default: any regression).
    Compare(CompareArgs),
    /// Run a canbench suite offline on the embedded engine; exit status 1 if a bench failed.
    Canbench(icbench::canbench::CanbenchArgs),
    /// Join the --out directories of `--shard K/N` runs (of the suites or of `icbench
    /// canbench`) into the files one unsharded run writes; exit status 1 if a suite's gate
    /// fails or a bench failed.
    Merge(MergeArgs),
    /// Run a small fixed set of scenarios on the embedded engine and on PocketIC
    /// (POCKET_IC_BIN); exit status 1 when any deviation is over --threshold.
    Crosscheck(CrosscheckArgs),
    /// Draw a differential flame graph of two instruction profiles (folded files): where B
    /// spends more instructions than A (red) and fewer (blue).
    ProfileDiff(ProfileDiffArgs),
    /// Print the functions of an instruction profile (a folded file) by self instructions.
    ProfileTop(ProfileTopArgs),
    /// The compile cache: compiled canister modules, kept across runs in ICBENCH_CACHE_DIR
    /// or the platform cache directory.
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
}

#[derive(Subcommand)]
enum CacheAction {
    /// Print the cache directory.
    Dir,
    /// Print the directory and what it holds.
    Info,
    /// Remove every cache entry.
    Clear,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum EngineKind {
    /// wasmtime with the replica's metering, built in (no external binary).
    Embedded,
    /// A PocketIC server (POCKET_IC_BIN); needs a build with `--features pocket-ic`.
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

/// `--suite` values: every registered suite, and `all`.
fn suite_names() -> clap::builder::PossibleValuesParser {
    let mut names: Vec<&'static str> = REGISTRY.iter().map(|s| s.name()).collect();
    names.push("all");
    clap::builder::PossibleValuesParser::new(names)
}

#[derive(Args, Clone)]
struct RunArgs {
    /// Suites to run, comma-separated, or all. seed003 writes into --out, every other suite
    /// into --out/NAME.
    #[arg(long, value_delimiter = ',', default_value = "seed003", value_parser = suite_names(), ignore_case = true)]
    suite: Vec<String>,
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
    /// Use this canister module instead of the bench canister icbench embeds.
    #[arg(long, conflicts_with = "build_canister")]
    wasm: Option<PathBuf>,
    /// Build the bench canister from the checkout icbench was built from
    /// (scripts/build-canister.sh) instead of running the module icbench embeds.
    #[arg(long)]
    build_canister: bool,
    /// Scenarios run at once, each on its own copy of the post-prefill state (default: the
    /// machine's cores). Results do not depend on it. PocketIC runs one at a time.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    jobs: Option<u32>,
    /// Run only the K-th of N disjoint parts of each suite's plan (e.g. 2/4), each part
    /// doing its own prefill; `icbench merge` joins the parts' --out directories.
    #[arg(long, value_name = "K/N")]
    shard: Option<Shard>,
    /// Instruction profiles: of every scenario, or of those whose id matches PATTERN (the
    /// whole id; `*` matches any text: 'sqlite-wal/*', '*/insert/1'). Writes
    /// OUT/profiles/ID.folded and ID.svg (a flame graph) and fills the `profile` column; a
    /// scenario of one message of the users stores (seed003, lookups, scaling, tune) gets
    /// ID.pages.svg, its page map (the Wasm pages it touched and the function that touched
    /// each first). Counts are the same as without it; the run is slower.
    #[arg(long, value_name = "PATTERN", num_args = 0..=1, default_missing_value = "*")]
    profile: Option<String>,
    /// Print the ids of the selected suites' scenarios (what --profile matches) and exit.
    #[arg(long)]
    list_scenarios: bool,
    /// The replica whose charging rules the embedded engine models, by the month its
    /// newest modelled rule was merged (default: the newest; docs/engine.md lists each
    /// vintage's rules and sources). Reports name the vintage.
    #[arg(long, value_name = "VINTAGE", value_parser = suites::replica_value_parser())]
    replica: Option<String>,
    /// Run even when the suites' estimated peak memory exceeds the memory available (by
    /// default such a run is refused before it starts, naming the flags that fit).
    #[arg(long)]
    ignore_memory_estimate: bool,
    // Last: its help heading would otherwise carry over to the options after it.
    #[command(flatten)]
    common: CommonArgs,
}

/// The CLI with every registered suite's flags, at the top level and under `run`.
fn command() -> clap::Command {
    let with_suites = |cmd: clap::Command| REGISTRY.iter().fold(cmd, |cmd, s| s.args(cmd));
    with_suites(Cli::command())
        .mut_subcommand("run", with_suites)
        .version(version().as_str())
}

/// `--version`: the crate's version, the commit it was built from and the replica rules it
/// charges by unless told otherwise.
fn version() -> &'static String {
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    VERSION.get_or_init(|| {
        format!(
            "{} (commit {}; default replica rules {})",
            env!("CARGO_PKG_VERSION"),
            env!("ICBENCH_COMMIT"),
            Replica::NEWEST.name
        )
    })
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
    /// What to print: a table of the changes, or a pull-request comment.
    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    format: CompareFormat,
    /// A ceiling on one scenario's multiplier (new ÷ base charged instructions): with it
    /// (or --max-section-ratio) the gate fails only above the ceilings, not on every
    /// regression.
    #[arg(long, value_name = "X")]
    max_ratio: Option<f64>,
    /// A ceiling on a section's average multiplier (a section: a suite's position).
    #[arg(long, value_name = "X")]
    max_section_ratio: Option<f64>,
    /// Directory for the differential flame graphs of the regressions whose runs both have
    /// profiles (default: profile-diffs beside the new results.json).
    #[arg(long, value_name = "DIR")]
    flame_graphs: Option<PathBuf>,
    #[command(flatten)]
    comment: report::CommentArgs,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum CompareFormat {
    /// The changed scenarios as a table, and a summary line.
    Text,
    /// A pull-request comment: what moved first, the whole comparison folded.
    Markdown,
}

#[derive(Args)]
struct MergeArgs {
    /// The shards' --out directories, one per shard, in any order.
    #[arg(required = true, num_args = 1..)]
    dirs: Vec<PathBuf>,
    /// Directory for the joined files (laid out as a run's --out). For canbench parts: the
    /// directory the results file and CSV paths are relative to (`.` writes them where the
    /// unsharded run would).
    #[arg(long)]
    out: PathBuf,
    /// No file list on stderr.
    #[arg(long)]
    quiet: bool,
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
    /// Use this canister module instead of the bench canister icbench embeds.
    #[arg(long, conflicts_with = "build_canister")]
    wasm: Option<PathBuf>,
    /// Build the bench canister from the checkout icbench was built from
    /// (scripts/build-canister.sh) instead of running the module icbench embeds.
    #[arg(long)]
    build_canister: bool,
    /// The replica rules of the embedded side, to match the server's (default: the newest;
    /// PocketIC servers before 16.0.0 predate the memory tracker: 2026-05).
    #[arg(long, value_name = "VINTAGE", value_parser = suites::replica_value_parser())]
    replica: Option<String>,
    /// No progress output on stderr.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args)]
struct ProfileDiffArgs {
    /// The profile compared against (folded stacks: `frame;frame COUNT` per line).
    a: PathBuf,
    /// The profile whose additions (red) and removals (blue) over A are drawn.
    b: PathBuf,
    /// The SVG file to write.
    #[arg(long)]
    out: PathBuf,
    /// Draw A's widths instead of B's, so that stacks B no longer has show (colours keep
    /// their meaning: red is more in B).
    #[arg(long)]
    a_shape: bool,
}

#[derive(Args)]
struct ProfileTopArgs {
    /// The profile (folded stacks: `frame;frame COUNT` per line).
    file: PathBuf,
    /// How many functions to list; the rest are summed in one line.
    #[arg(long, default_value_t = 20, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    top: usize,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum MetricKind {
    Store,
    Charged,
}

fn make_engine(kind: EngineKind, replica: Option<&str>) -> Result<Box<dyn Engine>> {
    match (kind, replica) {
        (EngineKind::Embedded, replica) => {
            let replica = replica.map_or(Ok(Replica::NEWEST), Replica::by_name);
            Ok(Box::new(
                EmbeddedEngine::default().with_replica(replica.map_err(|e| anyhow!(e))?),
            ))
        }
        (EngineKind::PocketIc, Some(name)) => Err(anyhow!(
            "--replica {name} selects the rules of the embedded engine; a PocketIC server \
             charges by the replica it was built from"
        )),
        (EngineKind::PocketIc, None) => pocket_ic_engine("--engine pocket-ic"),
    }
}

/// A PocketIC engine for `what` (the flag or command asking for it).
#[cfg(feature = "pocket-ic")]
fn pocket_ic_engine(_what: &str) -> Result<Box<dyn Engine>> {
    Ok(Box::new(PocketIcEngine::from_env()?))
}

/// Without the feature: why `what` cannot run in this build, and how to get a build that can.
#[cfg(not(feature = "pocket-ic"))]
fn pocket_ic_engine(what: &str) -> Result<Box<dyn Engine>> {
    anyhow::bail!(
        "{what} needs the PocketIC backend, which this build leaves out (it is the cargo feature \
         `pocket-ic`). Rebuild with it: `cargo run --release --features pocket-ic -- {what} ...` \
         (or `cargo install --path . --features pocket-ic`); it also needs a PocketIC server \
         16.x (POCKET_IC_BIN, see docs/pocket-ic.md)"
    )
}

/// Runs the selected suites and writes all their outputs; `Ok(false)` when a suite's gate
/// (sysbench's ceilings) failed. `matches` holds the suites' own flags.
fn run(args: &RunArgs, matches: &ArgMatches) -> Result<bool> {
    let selected = suites::select(&args.suite)?;
    // Every plan is made, so every flag checked, before any work starts.
    let plans = selected
        .iter()
        .map(|s| s.plan(matches, &args.common))
        .collect::<Result<Vec<_>>>()?;
    if selected.len() > 1 && matches!(args.format, Format::Json | Format::Csv) {
        return Err(anyhow!(
            "--format json/csv prints one suite; with {} suites read results.json / results.csv under --out {}",
            selected.len(),
            args.out.display()
        ));
    }
    if args.list_scenarios {
        list_scenarios(&selected, &plans);
        return Ok(true);
    }
    if let Some(pattern) = &args.profile {
        if args.engine != EngineKind::Embedded {
            return Err(anyhow!(
                "--profile needs the embedded engine: instruction profiles come from its own counter"
            ));
        }
        // Where the ids are known before the run, a pattern that matches none of them
        // stops it before any work.
        let known: Option<Vec<String>> = plans
            .iter()
            .map(|p| p.scenario_ids())
            .collect::<Option<Vec<Vec<String>>>>()
            .map(|ids| ids.concat());
        if let Some(ids) = known.filter(|ids| !ids.iter().any(|id| profiles::matches(pattern, id)))
        {
            return Err(anyhow!("{}", profiles::no_match(pattern, &ids)));
        }
    }
    let exec = Exec {
        jobs: args.jobs.map_or_else(Exec::default_jobs, |n| n as usize),
        shard: args.shard.unwrap_or(Shard::WHOLE),
        profile: args.profile.is_some(),
    };
    if !args.ignore_memory_estimate && args.engine == EngineKind::Embedded {
        check_memory(&plans, &exec)?;
    }
    // Every output directory is made and tried before any build, compile or prefill: a run
    // must not end, after minutes of work, in a directory it cannot write.
    for suite in &selected {
        let dir = prepare_out(*suite, &args.out)?;
        interrupt::expect(
            &dir,
            format!("the {} suite's results in {}", suite.name(), dir.display()),
        );
    }
    let mut engine = make_engine(args.engine, args.replica.as_deref())?;
    let wasm = match &args.wasm {
        Some(path) => read_wasm_flag(path)?,
        None if args.build_canister => bench_canister::build_from_sources(args.quiet)?,
        None => bench_canister::ensure_built(args.quiet)?,
    };
    let mut gate_ok = true;
    let mut profiled = profiles::Selected::default();
    let mut all_ids = Vec::new();
    for (suite, plan) in selected.iter().zip(&plans) {
        let started = std::time::Instant::now();
        if !args.quiet && selected.len() > 1 {
            eprintln!("suite {}", suite.name());
        }
        let mut bar = Bar::new(args.quiet);
        let mut report = plan.run(engine.as_mut(), &wasm, &exec, &mut |p| bar.update(p))?;
        report.set_replica(engine.replica());
        pool::sign_shard(&mut report, &format!("{plan:?}"), &wasm);
        bar.finish();
        if let Some(pattern) = &args.profile {
            let selected = profiles::select(&mut report, pattern);
            profiled.matched += selected.matched;
            profiled.kept += selected.kept;
            all_ids.extend(report::scenario_ids(&report.results));
        }
        let document = suite.document(&report);
        let dir = suite.out_dir(&args.out);
        let written = report::write_all(&report, &document, &dir)
            .with_context(|| format!("writing results to {}", dir.display()))?;
        // A shard has only part of the checks' inputs: `icbench merge` applies the gate.
        let failures = if exec.shard.is_whole() {
            suite.gate(&report)
        } else {
            Vec::new()
        };
        if !failures.is_empty() {
            gate_ok = false;
            eprint_gate_failures(suite.name(), &failures);
        }
        let stdout = match args.format {
            Format::Table => format!(
                "{}\n{}",
                report::rules_line(&report),
                report::terminal(&document)
            ),
            Format::Markdown => report::markdown(&report, &document),
            Format::Json => report::json(&report),
            Format::Csv => report::csv(&report),
        };
        if selected.len() > 1 {
            println!("== suite {} ==\n", suite.name());
        }
        print!("{stdout}");
        if !args.quiet {
            eprint_written(&written);
            eprint_profiles(&report, &dir);
            eprintln!("{}", speed_line(&report, started.elapsed().as_secs_f64()));
        }
    }
    if let Some(pattern) = &args.profile {
        if profiled.matched == 0 {
            return Err(anyhow!("{}", profiles::no_match(pattern, &all_ids)));
        }
    }
    if let Some(line) = cache_line().filter(|_| !args.quiet) {
        eprintln!("{line}");
    }
    if !args.quiet && args.engine == EngineKind::Embedded {
        // How the heap's written pages were found: the counts are the same either way,
        // the speed is not.
        if let Ok(writes) = HeapWrites::configured() {
            eprintln!("heap writes found by: {}", writes.name());
        }
    }
    Ok(gate_ok)
}

/// `--list-scenarios`: each suite's scenario ids, one per line, or why they are not known
/// before a run.
fn list_scenarios(selected: &[&'static dyn suites::Suite], plans: &[Box<dyn Plan>]) {
    for (suite, plan) in selected.iter().zip(plans) {
        match plan.scenario_ids() {
            Some(ids) => {
                for id in ids {
                    println!("{}\t{id}", suite.name());
                }
            }
            None => eprintln!(
                "{}: its scenarios come out of the run; a --profile run lists their ids in report.md",
                suite.name()
            ),
        }
    }
}

/// After a profiled run: where each profile went, and the functions that spent the most
/// when there is one profile to read.
fn eprint_profiles(report: &Report, dir: &std::path::Path) {
    let kept = profiles::kept(report);
    for (id, file, profile) in &kept {
        eprintln!(
            "profile {id}: {} instructions in {}",
            report::format::thousands(profile.total()),
            dir.join(file).display()
        );
    }
    if let [(_, _, profile)] = kept.as_slice() {
        eprint!("{}", profiles::top_functions(profile, 15));
    }
}

/// Makes `suite`'s directory under `out` and tries writing into it; returns it.
fn prepare_out(suite: &dyn suites::Suite, out: &std::path::Path) -> Result<PathBuf> {
    let dir = suite.out_dir(out);
    report::prepare_dir(&dir).map_err(|e| {
        anyhow!(
            "--out {}: cannot write into {}: {e}",
            out.display(),
            dir.display()
        )
    })?;
    Ok(dir)
}

/// Refuses a run whose suites are expected to need more memory than is available (the
/// suites run one after another: the largest estimate counts), naming the estimate, what
/// is available and the settings that fit, instead of being killed by the OOM killer after
/// minutes of work.
fn check_memory(plans: &[Box<dyn Plan>], exec: &Exec) -> Result<()> {
    let available = icbench::memory::available()?;
    let Some(estimate) = plans
        .iter()
        .filter_map(|p| p.memory_estimate(exec))
        .max_by_key(|e| e.bytes)
    else {
        return Ok(());
    };
    let Some(available) = available else {
        return Ok(());
    };
    if estimate.bytes <= available {
        return Ok(());
    }
    let gb = |b: u64| format!("{:.1} GB", b as f64 / 1e9);
    let fitting: Vec<String> = estimate
        .smaller
        .iter()
        .filter(|(_, b)| *b <= available)
        .take(3)
        .map(|(flags, b)| format!("`{flags}` (about {})", gb(*b)))
        .collect();
    let fits = if fitting.is_empty() {
        "no smaller setting of this suite fits".to_string()
    } else {
        format!("these fit: {}", fitting.join(", "))
    };
    Err(anyhow!(
        "{} needs about {} of memory at its peak (an estimate), and {} is available; {fits}; or pass --ignore-memory-estimate to run anyway",
        estimate.what,
        gb(estimate.bytes),
        gb(available)
    ))
}

/// Progress on stderr: a live bar on a terminal; on a pipe or in CI, one line per prefill
/// message and per tenth of the scenarios.
struct Bar {
    quiet: bool,
    live: Option<ProgressBar>,
    started: std::time::Instant,
}

impl Bar {
    fn new(quiet: bool) -> Bar {
        let live = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:<14} [{bar:30}] {pos}/{len} {msg} [{elapsed}]",
                )
                .expect("a valid template")
                .progress_chars("#>."),
            );
            bar
        });
        Bar {
            quiet,
            live,
            started: std::time::Instant::now(),
        }
    }

    fn update(&mut self, p: Progress<'_>) {
        if self.quiet {
            return;
        }
        let (prefix, done, total, msg, milestone) = match p {
            Progress::Prefill { store, done, total } => (
                format!("prefill {store}"),
                done,
                total,
                "rows".to_string(),
                true,
            ),
            Progress::Scenario { done, total, key } => (
                "scenarios".to_string(),
                done as u64,
                total as u64,
                key.to_string(),
                done == total || done % (total / 10).max(1) == 0,
            ),
        };
        match &self.live {
            Some(bar) => {
                bar.set_prefix(prefix);
                bar.set_length(total);
                bar.set_position(done);
                bar.set_message(msg);
            }
            None if milestone => eprintln!(
                "{prefix:<14} {done}/{total} {msg} [{:.0}s]",
                self.started.elapsed().as_secs_f64()
            ),
            None => {}
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.live {
            bar.finish();
        }
    }
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

fn cache(action: &CacheAction) -> Result<bool> {
    let dir = disk_cache::dir_from_env()?;
    match action {
        CacheAction::Dir => println!("{}", dir.display()),
        CacheAction::Info => {
            println!("{}", dir.display());
            for (kind, n, bytes) in disk_cache::usage(&dir)?.kinds {
                println!("{kind}: {n} entries, {:.1} MB", bytes as f64 / 1e6);
            }
        }
        CacheAction::Clear => {
            let removed = disk_cache::clear(&dir)?;
            println!("removed {removed} files from {}", dir.display());
        }
    }
    Ok(true)
}

/// What the cache did in this run, for the closing lines of a run.
fn cache_line() -> Option<String> {
    let dir = disk_cache::dir()?;
    let m = disk_cache::stats(disk_cache::MODULES);
    let mut line = format!(
        "cache {}: {} modules loaded, {} compiled",
        dir.display(),
        m.hits,
        m.misses
    );
    let s = disk_cache::stats(disk_cache::STATES);
    if s.hits + s.misses > 0 {
        line += &format!(
            "; post-prefill states: {} loaded, {} prefilled",
            s.hits, s.misses
        );
    }
    let rejected = m.rejected + s.rejected;
    if rejected > 0 {
        line += &format!(" ({rejected} damaged entries replaced)");
    }
    Some(line)
}

fn eprint_gate_failures(suite: &str, failures: &[String]) {
    eprintln!(
        "{suite} gate failed ({} checks above the ceilings):\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

fn eprint_written(written: &[std::path::PathBuf]) {
    let paths: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    eprintln!("wrote {}", paths.join(", "));
}

fn merge(args: &MergeArgs) -> Result<bool> {
    use icbench::canbench::shard;
    // canbench parts and suite shards are told apart by their files; never mixed.
    let canbench: Vec<&PathBuf> = args.dirs.iter().filter(|d| shard::is_part(d)).collect();
    if canbench.len() == args.dirs.len() {
        return shard::merge(&args.dirs, &args.out);
    }
    if let Some(part) = canbench.first() {
        let other = args
            .dirs
            .iter()
            .find(|d| !shard::is_part(d))
            .expect("some directory is not a canbench part");
        return Err(anyhow!(
            "{} holds a part of an `icbench canbench --shard` run ({}) and {} does not: canbench parts are merged only with each other",
            part.display(),
            shard::PART_FILE,
            other.display()
        ));
    }
    let merged = suites::merge::merge(&args.dirs)?;
    for m in &merged {
        prepare_out(m.suite, &args.out)?;
    }
    let mut gate_ok = true;
    for m in merged {
        let document = m.suite.document(&m.report);
        let dir = m.suite.out_dir(&args.out);
        let mut written = report::write_all(&m.report, &document, &dir)
            .with_context(|| format!("writing results to {}", dir.display()))?;
        for (from, file) in &m.profiles {
            for from in [from.clone(), from.with_extension("svg")] {
                let to = dir
                    .join(file)
                    .with_extension(from.extension().unwrap_or_default());
                if let Some(parent) = to.parent() {
                    std::fs::create_dir_all(parent)
                        .with_context(|| format!("creating {}", parent.display()))?;
                }
                std::fs::copy(&from, &to).with_context(|| {
                    format!("copying the profile {} to {}", from.display(), to.display())
                })?;
                written.push(to);
            }
        }
        let failures = m.suite.gate(&m.report);
        if !failures.is_empty() {
            gate_ok = false;
            eprint_gate_failures(m.suite.name(), &failures);
        }
        if !args.quiet {
            eprint_written(&written);
        }
    }
    Ok(gate_ok)
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
    let gate = report::Gate {
        max_ratio: args.max_ratio,
        max_section_ratio: args.max_section_ratio,
    };
    gate.check().map_err(anyhow::Error::msg)?;
    args.comment.check().map_err(anyhow::Error::msg)?;
    let mut comparison =
        report::compare::compare(&read(&args.base)?, &read(&args.new)?, args.noise);
    let dir = |p: &PathBuf| p.parent().map(PathBuf::from).unwrap_or_default();
    let (base_dir, new_dir) = (dir(&args.base), dir(&args.new));
    let graphs = args
        .flame_graphs
        .clone()
        .unwrap_or_else(|| new_dir.join("profile-diffs"));
    let (written, warnings) = comparison.write_flame_graphs(&base_dir, &new_dir, &graphs);
    for w in warnings {
        eprintln!("warning: {w}");
    }
    match args.format {
        CompareFormat::Text => print!("{}", comparison.render()),
        CompareFormat::Markdown => {
            let mut comment = comparison.comment(&args.comment.title, &gate);
            comment.marker = args.comment.marker.clone();
            let text = comment
                .render(args.comment.max_chars)
                .map_err(anyhow::Error::msg)?;
            print!("{text}");
        }
    }
    if !written.is_empty() {
        eprint_written(&written);
    }
    let failures = comparison.gate_failures(&gate);
    if !failures.is_empty() {
        eprintln!(
            "gate failed ({}):\n  {}",
            gate.describe(args.noise),
            failures.join("\n  ")
        );
    }
    Ok(failures.is_empty())
}

fn profile_diff(args: &ProfileDiffArgs) -> Result<bool> {
    let a = Folded::read(&args.a).map_err(anyhow::Error::msg)?;
    let b = Folded::read(&args.b).map_err(anyhow::Error::msg)?;
    let (a_name, b_name) = (args.a.display().to_string(), args.b.display().to_string());
    let svg = report::differential_graph((&a_name, &a), (&b_name, &b), args.a_shape)
        .map_err(anyhow::Error::msg)?;
    std::fs::write(&args.out, svg).with_context(|| format!("writing {}", args.out.display()))?;
    eprintln!("wrote {}", args.out.display());
    Ok(true)
}

fn profile_top(args: &ProfileTopArgs) -> Result<bool> {
    let profile = Folded::read(&args.file).map_err(anyhow::Error::msg)?;
    print!("{}", profile.top_table(args.top));
    Ok(true)
}

/// The module a `--wasm` flag names, checked: a one-line error naming the file and what is
/// wrong with it (not Wasm, truncated, invalid, not a bench canister) rather than a failure
/// after the prefill.
fn read_wasm_flag(path: &std::path::Path) -> Result<Vec<u8>> {
    let wasm = std::fs::read(path)
        .map_err(|e| anyhow!("--wasm {}: cannot read it: {e}", path.display()))?;
    bench_canister::check_module(&wasm).map_err(|e| anyhow!("--wasm {}: {e:#}", path.display()))?;
    Ok(wasm)
}

fn crosscheck(args: &CrosscheckArgs) -> Result<bool> {
    use icbench::crosscheck::{self, Metric};
    if !(args.threshold.is_finite() && args.threshold >= 0.0) {
        return Err(anyhow!("--threshold must be a non-negative percentage"));
    }
    // The server first: without one this fails at once, before any build or run.
    let mut pocket_ic = pocket_ic_engine("crosscheck")?;
    let wasm = match &args.wasm {
        Some(path) => read_wasm_flag(path)?,
        None if args.build_canister => bench_canister::build_from_sources(args.quiet)?,
        None => bench_canister::ensure_built(args.quiet)?,
    };
    let cfg = crosscheck::config();
    let replica = args
        .replica
        .as_deref()
        .map_or(Ok(Replica::NEWEST), Replica::by_name)
        .map_err(|e| anyhow!(e))?;
    let mut reports = Vec::new();
    for engine in [
        &mut EmbeddedEngine::default().with_replica(replica) as &mut dyn Engine,
        pocket_ic.as_mut(),
    ] {
        if !args.quiet {
            eprintln!(
                "crosscheck: running {} scenarios on {}...",
                cfg.matrix().len(),
                engine.name()
            );
        }
        reports.push(cfg.run(engine, &wasm, &Exec::SEQUENTIAL, &mut |_| {})?);
    }
    let metric = match args.metric {
        MetricKind::Store => Metric::Store,
        MetricKind::Charged => Metric::Charged,
    };
    let check = crosscheck::compare(&reports[0], &reports[1], metric, args.threshold);
    print!("{}", check.render());
    Ok(check.failures() == 0)
}

/// `icbench wasi2ic-post IN OUT [--did FILE]`: the canister build's converter (the
/// wasi2ic-post crate), for scripts/build-canister.sh. Not a clap subcommand: it is a build
/// step, not part of the documented CLI, and its arguments are the converter's own.
const CONVERTER_COMMAND: &str = "wasi2ic-post";
/// `icbench update-prebuilt-canister`: builds the canister and commits the module as
/// canisters/prebuilt (scripts/update-prebuilt-canister.sh). A maintainer's step, not
/// part of the documented CLI either.
const UPDATE_PREBUILT_COMMAND: &str = "update-prebuilt-canister";

fn main() -> ExitCode {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == CONVERTER_COMMAND)
    {
        return wasi2ic_post::main_with_args(std::env::args_os().skip(2));
    }
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == UPDATE_PREBUILT_COMMAND)
    {
        let exe = std::env::current_exe().ok();
        return match bench_canister::update_prebuilt(exe.as_deref()) {
            Ok(()) => {
                for module in bench_canister::Module::ALL {
                    eprintln!(
                        "wrote {} and {}",
                        module.prebuilt_wasm, module.prebuilt_sources
                    );
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(1)
            }
        };
    }
    let matches = command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    if let Err(e) = interrupt::install() {
        eprintln!("warning: cannot handle SIGINT/SIGTERM ({e}); an interrupted run may leave temporary files");
    }
    // The commands that run canisters (compare, merge, cache and the profile commands run
    // none): they get the compile cache.
    let runs_canisters = matches!(
        cli.command,
        None | Some(Command::Run(_) | Command::Canbench(_) | Command::Crosscheck(_))
    );
    if runs_canisters {
        if let Err(e) = HeapWrites::configured() {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
        // Compiled modules are kept across runs; without a directory the run only compiles.
        // The directory is made and tried before any work. One the user named that cannot
        // be written is refused (they asked for it); the platform's is said and the run
        // goes on without it (it costs speed, not the run).
        match disk_cache::dir_from_env().and_then(|dir| disk_cache::prepare(&dir).map(|()| dir)) {
            Ok(dir) => disk_cache::enable(Some(dir)),
            Err(e) if disk_cache::dir_set_by_env() => {
                eprintln!("error: {e:#}; set it to a directory icbench can write, or unset it to use the platform's cache directory");
                return ExitCode::from(2);
            }
            Err(e) => eprintln!("warning: {e:#}; compiling without the compile cache"),
        }
    }
    // Canisters run on this thread and the suites' workers: with a large stack, Wasm runs
    // on them directly (see `embedded::spawn_scoped`).
    let outcome = std::thread::scope(|scope| {
        let command = || dispatch(&cli, &matches);
        match icbench::engine::embedded::spawn_scoped(scope, "icbench", command) {
            Ok(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => dispatch(&cli, &matches),
        }
    });
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Runs the command `cli` names.
fn dispatch(cli: &Cli, matches: &ArgMatches) -> Result<bool> {
    match &cli.command {
        None => run(&cli.run, matches),
        Some(Command::Run(args)) => run(
            args,
            matches
                .subcommand_matches("run")
                .expect("the run subcommand"),
        ),
        Some(Command::Compare(args)) => compare(args),
        Some(Command::Canbench(args)) => icbench::canbench::run(args),
        Some(Command::Merge(args)) => merge(args),
        Some(Command::Crosscheck(args)) => crosscheck(args),
        Some(Command::ProfileDiff(args)) => profile_diff(args),
        Some(Command::ProfileTop(args)) => profile_top(args),
        Some(Command::Cache { action }) => cache(action),
    }
}
