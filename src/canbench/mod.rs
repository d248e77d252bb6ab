//! `icbench canbench`: runs a canbench suite offline on the embedded engine, with canbench's
//! discovery, invocation, report and result files (formats of canbench 0.7.0).

pub mod compare;
pub mod config;
pub mod previous_pages;
pub mod report;
pub mod results;
pub mod scope_pages;
pub mod shard;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use candid::Principal;
use clap::Args;

use crate::engine::cost::{Host, Limits, Replica, POCKET_IC_RELEASES};
use crate::engine::counter_reads::CounterReads;
use crate::engine::embedded::EmbeddedEngine;
use crate::engine::{Engine, Profile, Profiling};
use crate::report::{Folded, Provenance};
use crate::suites::pool::{in_parallel, Exec, Shard};

use self::compare::BenchPages;
use self::config::Config;
use self::previous_pages::Previous;
use self::report::PagesShown;
use self::results::{BenchResult, Results};

/// The export prefix of a benchmark (`#[bench]` generates `__canbench__<name>` queries).
pub const BENCH_PREFIX: &str = "canister_query __canbench__";
/// canbench's query argument: the Candid encoding of one `null` (`Encode!(&())`).
pub const BENCH_ARG: &[u8] = b"DIDL\x00\x01\x7f";

#[derive(Args, Clone, Debug, Default)]
pub struct CanbenchArgs {
    /// Only benchmarks whose name contains this text.
    pub pattern: Option<String>,
    /// canbench.yml to use (default: $CANBENCH_CFG_FILE or ./canbench.yml). Its paths are
    /// relative to the current directory, as in canbench.
    #[arg(long, conflicts_with = "wasm")]
    pub config: Option<PathBuf>,
    /// Benchmark this module (.wasm or .wasm.gz) without a config file.
    #[arg(long)]
    pub wasm: Option<PathBuf>,
    /// Install argument as hex, passed verbatim (with --wasm; empty when absent).
    #[arg(long, requires = "wasm")]
    pub init_args: Option<String>,
    /// Do not run the config's build_cmd.
    #[arg(long)]
    pub no_build: bool,
    /// Write the results file (only the benchmarks run).
    #[arg(long)]
    pub persist: bool,
    /// Write the CSV comparison against the previous results.
    #[arg(long)]
    pub csv: bool,
    /// Changes below this many percent are noise.
    #[arg(long, default_value_t = 2.0)]
    pub noise_threshold: f64,
    /// Results file to compare against and persist to (default: the config's
    /// results_path, else canbench_results.yml).
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// CSV file (default: the config's csv_results_path, else canbench_results.csv).
    #[arg(long)]
    pub csv_results: Option<PathBuf>,
    /// No summary unless --show-summary (canbench's flag).
    #[arg(long)]
    pub less_verbose: bool,
    /// Print the summary even with --less-verbose.
    #[arg(long)]
    pub show_summary: bool,
    /// Do not print the per-benchmark blocks.
    #[arg(long)]
    pub hide_results: bool,
    /// Echo the canister's debug_print output on stderr.
    #[arg(long)]
    pub show_canister_output: bool,
    /// Write a flame graph of each benchmark (BENCH.svg, and its folded stacks
    /// BENCH.folded) next to the results file: every instruction canbench counts, from the
    /// bench's first performance_counter read to its last, attributed exactly by the
    /// engine's own counter (the module is not rewritten).
    #[arg(long)]
    pub instruction_tracing: bool,
    /// Benchmarks run at once, each on its own copy of the post-install state (default:
    /// the machine's cores; 1 with --show-canister-output, so output stays per bench).
    /// Results do not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,
    /// Run only the K-th of N disjoint parts of the benchmarks (e.g. 2/4) and write it into
    /// --out; `icbench merge` joins the parts into the report and files of one unsharded
    /// run. A part never writes the results file or the CSV (--persist and --csv are
    /// recorded for the merge).
    #[arg(long, value_name = "K/N", requires = "out")]
    pub shard: Option<Shard>,
    /// Directory for the part of a --shard run.
    #[arg(long, requires = "shard")]
    pub out: Option<PathBuf>,
    /// The replica whose charging rules the benches run under (default: 2025-03, what the
    /// PocketIC server canbench 0.5 to 0.7 downloads charges; 2026-07 adds the deterministic
    /// memory tracker's page charges that mainnet takes since July 2026).
    #[arg(long, value_name = "VINTAGE", value_parser = crate::suites::replica_value_parser())]
    pub replica: Option<String>,
    #[command(flatten)]
    pub host: crate::suites::HostArg,
    /// Also write the comparison against the results file as a pull-request comment
    /// (markdown) to FILE, failed benches included.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Exit with status 1 when a bench or scope regressed beyond the noise threshold
    /// (canbench itself exits 0).
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Exit with status 1 when a bench's instructions are more than X times its previous
    /// result.
    #[arg(long, value_name = "X")]
    pub max_ratio: Option<f64>,
    /// Also print the CSV's page columns for each bench and scope in the report, with their
    /// change against the previous run's (the CSV beside the results file, if it matches).
    #[arg(long)]
    pub pages: bool,
    #[command(flatten)]
    pub comment: crate::report::CommentArgs,
}

/// Everything a run needs, resolved from the flags and the config.
#[derive(Debug)]
pub struct Plan {
    pub wasm_path: PathBuf,
    pub init_args: Vec<u8>,
    pub stable_memory: Option<PathBuf>,
    pub results_path: PathBuf,
    pub csv_path: PathBuf,
    pub build_cmd: Option<String>,
}

impl CanbenchArgs {
    pub fn plan(&self) -> Result<Plan> {
        if self.instruction_tracing && self.shard.is_some() {
            bail!("--instruction-tracing writes its flame graphs next to the results file: run it without --shard");
        }
        if !(self.noise_threshold.is_finite() && self.noise_threshold >= 0.0) {
            bail!(
                "--noise-threshold must be a non-negative percentage, got {}",
                self.noise_threshold
            );
        }
        if self.pages && self.hide_results && self.less_verbose && !self.show_summary {
            bail!("--pages adds to the bench blocks and the summary's table, but --hide-results and --less-verbose print neither");
        }
        if let Some(x) = self.max_ratio.filter(|x| !(x.is_finite() && *x > 0.0)) {
            bail!("--max-ratio must be a positive multiplier, got {x}");
        }
        self.comment.check().map_err(|e| anyhow!(e))?;
        let mut plan = match &self.wasm {
            Some(wasm) => Plan {
                wasm_path: wasm.clone(),
                init_args: match &self.init_args {
                    Some(h) => config::decode_init_args(h)?,
                    None => Vec::new(),
                },
                stable_memory: None,
                results_path: config::DEFAULT_RESULTS.into(),
                csv_path: config::DEFAULT_CSV_RESULTS.into(),
                build_cmd: None,
            },
            None => {
                let (_, c) = Config::load(self.config.as_deref())?;
                if let Some(env) = &c.env_vars {
                    bail!(
                        "env_vars ({}) are not supported by icbench canbench: the embedded engine has no canister environment variables",
                        env.file.display()
                    );
                }
                Plan {
                    init_args: match &c.init_args {
                        Some(a) => config::decode_init_args(&a.hex)?,
                        None => Vec::new(),
                    },
                    stable_memory: c.stable_memory.map(|s| s.file),
                    results_path: c
                        .results_path
                        .unwrap_or_else(|| config::DEFAULT_RESULTS.into()),
                    csv_path: c
                        .csv_results_path
                        .unwrap_or_else(|| config::DEFAULT_CSV_RESULTS.into()),
                    build_cmd: if self.no_build { None } else { c.build_cmd },
                    wasm_path: c.wasm_path,
                }
            }
        };
        if let Some(r) = &self.results {
            plan.results_path = r.clone();
        }
        if let Some(c) = &self.csv_results {
            plan.csv_path = c.clone();
        }
        Ok(plan)
    }
}

/// Runs `cmd` with `bash -c` in the current directory.
fn build(cmd: &str) -> Result<()> {
    let status = std::process::Command::new("bash")
        .arg("-c")
        .arg(cmd)
        .status()
        .with_context(|| format!("running build_cmd {cmd:?} with bash"))?;
    if !status.success() {
        bail!("build_cmd {cmd:?} failed ({status})");
    }
    Ok(())
}

/// Reads the module, gunzipping it when the file name ends in `.gz` (as canbench).
pub fn read_wasm(path: &Path) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).map_err(|_| {
        anyhow!(
            "Couldn't read file at {}. Are you sure the file exists?",
            path.display()
        )
    })?;
    if path.extension().is_some_and(|e| e == "gz") {
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut raw)
            .with_context(|| format!("gunzipping {}", path.display()))?;
        return Ok(raw);
    }
    Ok(bytes)
}

/// What the run ran: the module at `path` (its bytes as given; `wasm` when they cannot be
/// read again), named by its file, on this machine.
fn provenance(path: &Path, wasm: &[u8]) -> Provenance {
    let given = std::fs::read(path).unwrap_or_else(|_| wasm.to_vec());
    let name = path
        .file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy();
    Provenance::of([(name.as_ref(), given.as_slice())], true)
}

/// Benchmark names in export-section order.
pub fn discover(wasm: &[u8]) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        if let wasmparser::Payload::ExportSection(exports) =
            payload.map_err(|e| anyhow!("invalid wasm module: {e}"))?
        {
            for export in exports {
                let export = export.map_err(|e| anyhow!("invalid wasm module: {e}"))?;
                if let Some(name) = export.name.strip_prefix(BENCH_PREFIX) {
                    names.push(name.to_string());
                }
            }
        }
    }
    Ok(names)
}

/// The replica rules `icbench canbench` charges by unless `--replica` says otherwise: those
/// of the PocketIC server canbench itself downloads. Every canbench release since 0.5.0
/// (2026-05-08), 0.7.0 the newest, pins PocketIC 13.0.0 (`POCKET_IC_VERSION` in
/// canbench-bin, commit ef6e4d4, 2026-05-07), released 2026-03-23: after dfinity/ic #4506
/// (2025-03) and before #10065 (2026-04-30), #9565's memory tracker charging (first in a
/// replica release on 2026-05-07) and #10789's (2026-07). So canbench's own figures carry no
/// page charge, and a canbench_results.yml recorded with canbench matches this vintage to
/// the instruction; `--replica 2026-07` shows what the same benches cost on today's replica.
/// (Vintages before the memory tracker differ only in what install_code charges, which no
/// bench measures: `tests/it/canbench_baseline.rs` checks canbench's recorded figures
/// under each.)
pub const REPLICA: Replica = Replica::R2025_03;

/// One benchmark's outcome; the error reads like canbench's (`IC0503: ...`).
pub type BenchOutcome = Result<BenchResult, String>;

/// A benchmark as run: its outcome and, with `--instruction-tracing`, where its
/// instructions went.
pub struct Ran {
    pub outcome: BenchOutcome,
    pub trace: Option<Profile>,
    /// The Wasm pages the bench's query accessed and wrote, and its scopes'.
    pub pages: BenchPages,
}

/// A benchmark of a run or of a part, as its report and files take it.
#[derive(Debug)]
pub struct Bench {
    pub name: String,
    pub outcome: BenchOutcome,
    pub pages: BenchPages,
    /// Where its instruction trace was written, if it ran with one.
    pub trace: Option<PathBuf>,
}

/// Installs the module on a benchmarking application subnet and runs each bench as a
/// query: queries never persist, so every bench starts from the post-install state.
pub struct Runner {
    engine: EmbeddedEngine,
    canister: Principal,
    /// The clock right after the install: bench number `i` of a run sees `installed + i
    /// + 1`, as when every bench runs on one engine in order, whichever copy runs it.
    installed_ns: u64,
    /// Whether the canister's output is printed (`--show-canister-output`).
    print_log: bool,
}

impl Runner {
    /// With `tracing`, every bench is profiled as canbench measures it.
    pub fn install(
        wasm: &[u8],
        init_args: &[u8],
        stable_memory: Option<&[u8]>,
        tracing: bool,
    ) -> Result<Runner> {
        Runner::install_under(REPLICA, wasm, init_args, stable_memory, tracing)
    }

    /// [`Runner::install`] under the rules of another replica vintage.
    pub fn install_under(
        replica: Replica,
        wasm: &[u8],
        init_args: &[u8],
        stable_memory: Option<&[u8]>,
        tracing: bool,
    ) -> Result<Runner> {
        let rules = (replica, Host::default());
        Runner::install_on(rules, wasm, init_args, stable_memory, tracing)
    }

    /// [`Runner::install`] under the rules of a replica vintage on a host.
    pub fn install_on(
        (replica, host): (Replica, Host),
        wasm: &[u8],
        init_args: &[u8],
        stable_memory: Option<&[u8]>,
        tracing: bool,
    ) -> Result<Runner> {
        let mut engine = EmbeddedEngine::new(Limits::BENCHMARKING)
            .with_replica(replica)
            .with_host(host);
        if tracing {
            engine.set_profiling(Profiling::BetweenCounterReads)?;
        }
        let (canister, out) = engine.install(wasm, init_args)?;
        out.result
            .map_err(|r| anyhow!("installing the canister failed: {r}"))?;
        if let Some(bytes) = stable_memory {
            engine.set_stable_memory(canister, bytes)?;
        }
        let installed_ns = engine.time_ns();
        Ok(Runner {
            engine,
            canister,
            installed_ns,
            print_log: false,
        })
    }

    /// `copies` independent runners at the post-install state, for running benches in
    /// parallel; the state is shared, not copied (see [`Engine::fork`]).
    pub fn fork(&mut self, copies: usize) -> Result<Vec<Runner>> {
        let snapshot = self.engine.snapshot(self.canister)?;
        (0..copies)
            .map(|_| {
                Ok(Runner {
                    engine: self.engine.fork_at(self.canister, snapshot)?,
                    canister: self.canister,
                    installed_ns: self.installed_ns,
                    print_log: self.print_log,
                })
            })
            .collect()
    }

    /// Runs bench `name` as the `position`-th (from 0) bench of a run: at the time it
    /// would run at on one engine, so a bench that reads the time gets the same result
    /// whichever runner runs it.
    pub fn run_nth(&mut self, position: usize, name: &str) -> Result<Ran> {
        self.engine.set_time_ns(self.installed_ns + position as u64);
        self.run(name)
    }

    pub fn print_canister_output(&mut self, on: bool) {
        self.print_log = on;
        self.engine.print_canister_log(on);
    }

    pub fn run(&mut self, name: &str) -> Result<Ran> {
        let method = format!("__canbench__{name}");
        let time_ns = self.engine.time_ns();
        self.engine.set_counter_reads(CounterReads::Record);
        let out = self.engine.query(self.canister, &method, BENCH_ARG);
        self.engine.set_counter_reads(CounterReads::Off);
        let out = out?;
        let outcome = match out.result {
            Ok(bytes) => candid::decode_one::<BenchResult>(&bytes).map_err(|e| {
                format!("the reply is not a canbench-rs (0.2.0 or later) BenchResult: {e}")
            }),
            Err(reject) => Err(reject.to_string()),
        };
        if let (Ok(result), Some(trace)) = (&outcome, &out.report.profile) {
            // bench_fn's figure is the difference of its two readings, which the trace
            // covers exactly; a raw bench may report a figure of its own.
            if trace.total() != result.total.instructions {
                eprintln!(
                    "note: the instruction trace of {name} covers the {} instructions between its first and last performance_counter reads; the bench reports {}",
                    trace.total(),
                    result.total.instructions
                );
            }
        }
        let mut scopes = BTreeMap::new();
        if let Some(result) = outcome.as_ref().ok().filter(|r| !r.scopes.is_empty()) {
            let reads = self.engine.counter_reads().to_vec();
            let first = scope_pages::FirstRun {
                time_ns,
                result,
                reads: &reads,
                instructions: out.report.instructions,
            };
            // The second run's output is the first one's again.
            self.engine.print_canister_log(false);
            let attributed =
                scope_pages::attribute(&mut self.engine, self.canister, &method, BENCH_ARG, &first);
            self.engine.print_canister_log(self.print_log);
            match attributed? {
                Ok(s) => scopes = s,
                Err(why) => eprintln!("note: the scopes of {name} have no page counts: {why}"),
            }
        }
        Ok(Ran {
            outcome,
            trace: out.report.profile,
            pages: BenchPages {
                total: out.report.pages,
                scopes,
            },
        })
    }
}

/// The whole command; `Ok(false)` when a benchmark failed.
pub fn run(args: &CanbenchArgs) -> Result<bool> {
    let plan = args.plan()?;
    let shard = args.shard.unwrap_or(Shard::WHOLE);
    prepare_outputs(args, &plan, shard)?;
    if let Some(cmd) = &plan.build_cmd {
        build(cmd)?;
    }
    let old = results::read(&plan.results_path)?;
    let old_pages = previous_pages::previous(args.pages, &plan.csv_path, &old);
    let wasm = read_wasm(&plan.wasm_path)?;
    let provenance = provenance(&plan.wasm_path, &wasm);
    crate::engine::embedded::check_module(&wasm)
        .map_err(|e| anyhow!("{}: {e:#}", plan.wasm_path.display()))?;
    let all = discover(&wasm).with_context(|| plan.wasm_path.display().to_string())?;
    let selected = select(&all, args.pattern.as_deref(), &plan.wasm_path)?;
    // The base's traces, before this run's are written over them.
    let base = if args.instruction_tracing && args.markdown.is_some() {
        base_traces(&plan.results_path, &selected, &old)
    } else {
        BTreeMap::new()
    };
    let stable = match &plan.stable_memory {
        Some(p) => Some(std::fs::read(p).map_err(|e| {
            anyhow!(
                "Error reading stable memory file {}\nError: {e}",
                p.display()
            )
        })?),
        None => None,
    };
    let replica = match &args.replica {
        Some(name) => Replica::by_name(name).map_err(|e| anyhow!(e))?,
        None => REPLICA,
    };
    let host = args.host.get();
    let mut runner = Runner::install_on(
        (replica, host),
        &wasm,
        &plan.init_args,
        stable.as_deref(),
        args.instruction_tracing,
    )?;
    runner.print_canister_output(args.show_canister_output);
    let jobs = match args.jobs {
        _ if args.show_canister_output => 1,
        Some(n) => n as usize,
        None => Exec::default_jobs(),
    };
    // A bench keeps its place in the whole run (its clock) whichever part runs it.
    let positions: Vec<usize> = (0..selected.len()).filter(|&i| shard.includes(i)).collect();
    let ran = run_benches(runner, &selected, &positions, jobs)?;
    let names: Vec<String> = selected.into_iter().cloned().collect();
    let benches = sort_out(ran, &names, &positions, &plan.results_path)?;
    let output = Output::of(args, &plan);
    if shard.is_whole() {
        let previous = (&old, &old_pages);
        return finish(
            (replica, host),
            &benches,
            &base,
            previous,
            &output,
            None,
            Some(&provenance),
        );
    }
    let dir = args
        .out
        .as_deref()
        .ok_or_else(|| anyhow!("--shard {shard} needs --out DIR for its part"))?;
    let part = shard::Part {
        kind: shard::KIND.to_string(),
        icbench: env!("CARGO_PKG_VERSION").to_string(),
        index: shard.index,
        count: shard.count,
        module: crate::suites::pool::sha256_hex(&wasm),
        replica: replica.name.to_string(),
        host: host.name().to_string(),
        init_args: hex::encode(&plan.init_args),
        stable_memory: stable.as_deref().map(crate::suites::pool::sha256_hex),
        benches: names.clone(),
        baseline: old.clone(),
        baseline_pages: old_pages.clone(),
        output: output.clone(),
        outcomes: positions
            .iter()
            .zip(&benches)
            .map(|(&i, b)| shard::PartOutcome::new(i, b))
            .collect(),
        provenance: Some(provenance),
    };
    let ok = print_sections(&benches, (&old, &old_pages), &output)
        .1
        .is_empty();
    let path = part.write(dir)?;
    println!(
        "Shard {shard}: {} of the {} benchmarks, written to {} (`icbench merge` joins the parts)",
        benches.len(),
        names.len(),
        path.display()
    );
    Ok(ok)
}

/// Tries the files this run will write (a shard's part directory, else the results, CSV
/// and comment files it was asked for) before the build and the benches.
fn prepare_outputs(args: &CanbenchArgs, plan: &Plan, shard: Shard) -> Result<()> {
    if let (false, Some(dir)) = (shard.is_whole(), &args.out) {
        let earlier = dir.join(shard::PART_FILE).is_file();
        crate::report::prepare_dir(dir)
            .map_err(|e| anyhow!("--out {}: cannot write into it: {e}", dir.display()))?;
        crate::interrupt::expect(
            dir,
            format!("the part of shard {shard} in {}", dir.display()),
            earlier,
        );
        return Ok(());
    }
    let markdown = args.markdown.clone().unwrap_or_default();
    for (wanted, path, flag) in [
        (args.persist, &plan.results_path, "--persist"),
        (args.csv, &plan.csv_path, "--csv"),
        (args.markdown.is_some(), &markdown, "--markdown"),
    ] {
        if wanted {
            let earlier = path.is_file();
            crate::report::prepare_file(path)
                .map_err(|e| anyhow!("{flag}: cannot write {}: {e}", path.display()))?;
            crate::interrupt::expect(path, path.display().to_string(), earlier);
        }
    }
    Ok(())
}

/// The benches of `all` whose name contains `pattern` (all without one); an error when
/// none is left.
fn select<'a>(
    all: &'a [String],
    pattern: Option<&str>,
    wasm_path: &Path,
) -> Result<Vec<&'a String>> {
    if all.is_empty() {
        bail!(
            "no benchmarks found in {}: it exports no `{BENCH_PREFIX}*` methods (benches are made with canbench-rs' #[bench])",
            wasm_path.display()
        );
    }
    let selected: Vec<&String> = all
        .iter()
        .filter(|n| pattern.is_none_or(|p| n.contains(p)))
        .collect();
    if selected.is_empty() {
        bail!(
            "no benchmark name contains {:?}; the module has: {}",
            pattern.unwrap_or_default(),
            all.join(", ")
        );
    }
    Ok(selected)
}

/// Runs the benches at `positions` of `selected`, on `runner` and on `jobs - 1` forks of it.
fn run_benches(
    mut runner: Runner,
    selected: &[&String],
    positions: &[usize],
    jobs: usize,
) -> Result<Vec<Ran>> {
    let mut forks = if jobs > 1 && positions.len() > 1 {
        runner.fork(jobs.min(positions.len()) - 1)?
    } else {
        Vec::new()
    };
    in_parallel(
        &mut forks,
        &mut |i| runner.run_nth(i, selected[i]),
        positions,
        &|r: &mut Runner, i| r.run_nth(i, selected[i]),
        &mut |_| {},
    )
}

/// The benches as run at `positions` of `names`, in order; each trace of a bench that ran is
/// written next to the results file.
fn sort_out(
    ran: Vec<Ran>,
    names: &[String],
    positions: &[usize],
    results_path: &Path,
) -> Result<Vec<Bench>> {
    ran.into_iter()
        .zip(positions)
        .map(|(ran, &i)| {
            let name = names[i].clone();
            let trace = match (&ran.outcome, &ran.trace) {
                (Ok(_), Some(trace)) => Some(write_trace(results_path, &name, trace)?),
                _ => None,
            };
            Ok(Bench {
                name,
                outcome: ran.outcome,
                pages: ran.pages,
                trace,
            })
        })
        .collect()
}

/// How a run reports and which files it writes: the flags, kept in a shard's part so that
/// the merge reports as the unsharded run would.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Output {
    pub noise_threshold: f64,
    pub less_verbose: bool,
    pub show_summary: bool,
    pub hide_results: bool,
    pub persist: bool,
    pub csv: bool,
    pub results_path: PathBuf,
    pub csv_path: PathBuf,
    /// The pull-request comment's file (--markdown).
    #[serde(default)]
    pub markdown: Option<PathBuf>,
    #[serde(default)]
    pub comment: CommentOutput,
    /// Whether the report shows the pages (--pages); left out of a part when not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pages: bool,
}

impl Output {
    /// The flags' settings, with the paths of `plan`.
    fn of(args: &CanbenchArgs, plan: &Plan) -> Output {
        Output {
            noise_threshold: args.noise_threshold,
            less_verbose: args.less_verbose,
            show_summary: args.show_summary,
            hide_results: args.hide_results,
            persist: args.persist,
            csv: args.csv,
            results_path: plan.results_path.clone(),
            csv_path: plan.csv_path.clone(),
            markdown: args.markdown.clone(),
            pages: args.pages,
            comment: CommentOutput {
                title: args.comment.title.clone(),
                marker: args.comment.marker.clone(),
                max_chars: args.comment.max_chars,
                gate: compare::Gate {
                    on_regression: args.fail_on_regression,
                    max_ratio: args.max_ratio,
                },
            },
        }
    }
}

/// The comment's settings and the gate, as the flags gave them.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CommentOutput {
    pub title: String,
    pub marker: Option<String>,
    pub max_chars: usize,
    pub gate: compare::Gate,
}

/// Writes a bench's instruction trace as canbench does, `BENCH.svg` next to the results
/// file, with its folded stacks `BENCH.folded` beside it; returns the SVG's path.
fn write_trace(results_path: &Path, name: &str, trace: &Profile) -> Result<PathBuf> {
    let [_, svg] = crate::report::profiles::write_profile(
        &trace_stem(results_path, name),
        &format!("{name} (canbench)"),
        trace,
    )
    .map_err(|e| anyhow!("writing the instruction trace of {name}: {e}"))?;
    Ok(svg)
}

/// Where a bench's trace files go: `BENCH` beside the results file (`.svg`, `.folded`,
/// and `.diff.svg` for its differential flame graph).
fn trace_stem(results_path: &Path, name: &str) -> PathBuf {
    match results_path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(name),
        _ => PathBuf::from(name),
    }
}

/// The traces beside the results file that belong to it: each `BENCH.folded` whose total is
/// the bench's instructions in `old`, as the run that persisted the file with
/// `--instruction-tracing` left it (a trace of another run is not taken for the base's).
/// Read before this run writes its own traces over them.
fn base_traces(results_path: &Path, names: &[&String], old: &Results) -> BTreeMap<String, Folded> {
    names
        .iter()
        .filter_map(|name| {
            let previous = old.get(*name)?;
            let file = trace_stem(results_path, name).with_extension("folded");
            let trace = Folded::read(&file).ok()?;
            (trace.total() == previous.total.instructions).then(|| ((*name).clone(), trace))
        })
        .collect()
}

/// Draws, for each regressed bench with a base trace and a trace of this run, what this run
/// adds over the base into `BENCH.diff.svg` beside the traces; returns the files by bench.
/// A trace that cannot be read or drawn is said on stderr and gets no graph.
fn write_diffs(
    regressed: &[String],
    benches: &[Bench],
    base: &BTreeMap<String, Folded>,
) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    for name in regressed {
        let Some(before) = base.get(name) else {
            continue;
        };
        let Some(svg) = benches
            .iter()
            .find(|b| &b.name == name)
            .and_then(|b| b.trace.clone())
        else {
            continue;
        };
        let drawn = Folded::read(&svg.with_extension("folded")).and_then(|after| {
            let graph = crate::report::differential_graph(
                (&format!("{name} (base)"), before),
                (&format!("{name} (new)"), &after),
                false,
            )?;
            let mut path = svg.with_extension("").into_os_string();
            path.push(".diff.svg");
            let path = PathBuf::from(path);
            std::fs::write(&path, graph)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            Ok(path)
        });
        match drawn {
            Ok(path) => {
                out.insert(name.clone(), path);
            }
            Err(e) => eprintln!("warning: no differential flame graph for {name}: {e}"),
        }
    }
    out
}

/// Prints each bench's section (stdout) or error (stderr) in run order, with the line
/// naming its trace where it has one and its page lines with --pages; returns the
/// results and the failed benches with their errors.
fn print_sections(
    benches: &[Bench],
    (old, old_pages): Previous<'_>,
    o: &Output,
) -> (Results, Vec<(String, String)>) {
    let mut new = Results::new();
    let mut failed = Vec::new();
    for Bench {
        name,
        outcome,
        pages,
        trace,
    } in benches
    {
        match outcome {
            Ok(result) => {
                if !o.hide_results {
                    let shown = o.pages.then(|| PagesShown {
                        now: pages,
                        before: old_pages.get(name),
                    });
                    let section = report::section(&report::bench_block(
                        name,
                        result,
                        old.get(name),
                        o.noise_threshold,
                        shown.as_ref(),
                    ));
                    match trace {
                        // canbench's line closes the block, before its blank line.
                        Some(path) => print!(
                            "{}Instruction traces written to {}\n\n",
                            section.strip_suffix('\n').unwrap_or(&section),
                            path.display()
                        ),
                        None => print!("{section}"),
                    }
                }
                new.insert(name.clone(), result.clone());
            }
            Err(e) => {
                eprintln!("Error executing benchmark {name}. Error:\n{e}");
                failed.push((name.clone(), e.clone()));
            }
        }
    }
    (new, failed)
}

/// Which PocketIC servers count as this run does: the releases that charge by `replica`'s
/// rules, on `host` (a line on stderr, so canbench's report on stdout stays canbench's).
pub fn pocket_ic_line((replica, host): (Replica, Host)) -> String {
    let releases: Vec<&str> = replica
        .pocket_ic_releases()
        .iter()
        .map(|r| r.version())
        .collect();
    let (oldest, newest) = (
        POCKET_IC_RELEASES[0].version(),
        POCKET_IC_RELEASES[POCKET_IC_RELEASES.len() - 1].version(),
    );
    let servers = match releases.as_slice() {
        [] => format!("no PocketIC release from {oldest} to {newest} charges by them"),
        [one] => format!("the figures PocketIC {one} gives"),
        [first, .., last] => format!("the figures PocketIC {first} to {last} give"),
    };
    let canbench = if releases.contains(&"13.0.0") && host == Host::default() {
        " (canbench 0.5.0 to 0.7.0 run PocketIC 13.0.0)"
    } else {
        ""
    };
    let on = match host {
        Host::Linux => String::new(),
        other => format!(
            " on host {} (`--host`: {} KiB OS pages, a native arm64-darwin server's)",
            other.name(),
            other.os_page_size() / 1024
        ),
    };
    format!(
        "Replica rules {}{on}: {servers}{canbench}; `--replica pocket-ic-VERSION` names another server's.",
        replica.name
    )
}

/// The end of a whole run, unsharded or merged: the report of every bench (in run order),
/// then the comment, the CSV and the results file as `o` asks, the comment naming the
/// differential flame graph of each regressed bench that has a trace in `base_traces`;
/// relative file paths are taken from `under` (the merge's --out) when given. `Ok(false)`
/// when a bench failed or the gate did.
pub fn finish(
    rules: (Replica, Host),
    benches: &[Bench],
    base_traces: &BTreeMap<String, Folded>,
    previous: Previous<'_>,
    o: &Output,
    under: Option<&Path>,
    provenance: Option<&Provenance>,
) -> Result<bool> {
    eprintln!("{}", pocket_ic_line(rules));
    if let Some(p) = provenance {
        eprintln!("{}", p.line());
    }
    let (new, failed) = print_sections(benches, previous, o);
    let old = previous.0;
    let mut entries = compare::entries(&new, old);
    let by_name: BTreeMap<String, BenchPages> = benches
        .iter()
        .map(|b| (b.name.clone(), b.pages.clone()))
        .collect();
    compare::set_pages(&mut entries, &by_name);
    print!(
        "{}",
        report::closing(
            &entries,
            o.noise_threshold,
            !o.less_verbose || o.show_summary,
            o.pages
        )
    );
    let place = |p: &Path| match under {
        Some(dir) => dir.join(p),
        None => p.to_path_buf(),
    };
    if let Some(file) = &o.markdown {
        let c = &o.comment;
        let regressed = compare::regressed_benches(&entries, o.noise_threshold);
        let graphs = write_diffs(&regressed, benches, base_traces);
        let mut comment = compare::comment(
            &new,
            old,
            &failed,
            &graphs,
            &by_name,
            crate::report::tracker_page_charge(rules.1),
            o.noise_threshold,
            &c.title,
            &c.gate,
        );
        comment.marker = c.marker.clone();
        comment
            .paragraphs
            .splice(1..1, provenance.map(Provenance::line));
        let text = comment.render(c.max_chars).map_err(|e| anyhow!(e))?;
        let path = place(file);
        crate::report::write_files(&path, vec![(path.clone(), text)])
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("Pull-request comment written to {}", path.display());
    }
    let gate_failures = o.comment.gate.failures(&entries, o.noise_threshold);
    if !gate_failures.is_empty() {
        eprintln!(
            "gate failed ({} checks):\n  {}",
            gate_failures.len(),
            gate_failures.join("\n  ")
        );
    }
    if !failed.is_empty() {
        // Persisting now would silently drop the failed benches from the files.
        let names: Vec<&str> = failed.iter().map(|(n, _)| n.as_str()).collect();
        eprintln!(
            "{} of {} benchmarks failed ({}); results and CSV not written",
            failed.len(),
            failed.len() + new.len(),
            names.join(", ")
        );
        return Ok(false);
    }
    if o.csv {
        let path = place(&o.csv_path);
        crate::report::write_files(&path, vec![(path.clone(), compare::csv(&entries))])
            .with_context(|| format!("writing {}", path.display()))?;
        println!("CSV results saved to {}", path.display());
    }
    if o.persist {
        let path = place(&o.results_path);
        results::write(&path, &new)?;
        println!("Successfully persisted results to {}", path.display());
    }
    Ok(gate_failures.is_empty())
}

#[cfg(test)]
mod tests;
