//! The CLI's flags and subcommands (clap): what `icbench --help` documents. What runs them
//! is in run.rs (a benchmark run) and commands.rs (the other subcommands).

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

use icbench::engine::cost::Replica;
use icbench::report;
use icbench::suites::{self, CommonArgs, Shard, REGISTRY};

#[derive(Parser)]
#[command(
    name = "icbench",
    version,
    about = "What Internet Computer storage really costs: StableBTreeMap vs SQLite, metered like the replica."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    #[command(flatten)]
    pub(crate) run: RunArgs,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run suites (the default command).
    Run(RunArgs),
    /// Compare two results.json files, as text or as a pull-request comment (markdown); exit
    /// status 1 when the gate fails (by default: any regression).
    Compare(CompareArgs),
    /// Run a canbench suite offline on the embedded engine; exit status 1 if a bench failed.
    Canbench(icbench::canbench::CanbenchArgs),
    /// Run a Motoko project's `mops bench` suite offline on the embedded engine; exit status
    /// 1 if a cell trapped or a bench failed.
    Mops(icbench::mops::MopsArgs),
    /// Replay calls and an upgrade on a deployed canister's downloaded snapshot (or a fresh
    /// canister of a module) offline: what each costs, under today's rules and the next;
    /// exit status 1 if a step failed.
    Replay(icbench::replay::ReplayArgs),
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
pub(crate) enum CacheAction {
    /// Print the cache directory.
    Dir,
    /// Print the directory and what it holds.
    Info,
    /// Remove every cache entry.
    Clear,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum EngineKind {
    /// wasmtime with the replica's metering, built in (no external binary).
    Embedded,
    /// A PocketIC server (POCKET_IC_BIN); needs a build with `--features pocket-ic`.
    PocketIc,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum Format {
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
pub(crate) fn suite_names() -> clap::builder::PossibleValuesParser {
    let mut names: Vec<&'static str> = REGISTRY.iter().map(|s| s.name()).collect();
    names.push("all");
    clap::builder::PossibleValuesParser::new(names)
}

#[derive(Args, Clone)]
pub(crate) struct RunArgs {
    /// Suites to run, comma-separated, or all. seed003 writes into --out, every other suite
    /// into --out/NAME.
    #[arg(long, value_delimiter = ',', default_value = "seed003", value_parser = suite_names())]
    pub(crate) suite: Vec<String>,
    /// Engine that runs the canister.
    #[arg(long, value_enum, default_value_t = EngineKind::Embedded)]
    pub(crate) engine: EngineKind,
    /// Directory for report.md, results.csv, results.json and the SVG plots.
    #[arg(long, default_value = "results")]
    pub(crate) out: PathBuf,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub(crate) format: Format,
    /// No progress output on stderr.
    #[arg(long)]
    pub(crate) quiet: bool,
    #[command(flatten)]
    pub(crate) module: ModuleArgs,
    /// Scenarios run at once, each on its own copy of the post-prefill state (default: the
    /// machine's cores, fewer if the memory estimate needs it). Results do not depend on it.
    /// PocketIC runs one at a time.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub(crate) jobs: Option<u32>,
    /// Run only the K-th of N disjoint parts of each suite's plan (e.g. 2/4), each part
    /// doing its own prefill; `icbench merge` joins the parts' --out directories.
    #[arg(long, value_name = "K/N")]
    pub(crate) shard: Option<Shard>,
    /// Instruction profiles: of every scenario, or of those whose id matches PATTERN (the
    /// whole id; `*` matches any text: 'sqlite-wal/*', '*/insert/1'). Writes
    /// OUT/profiles/ID.folded and ID.svg (a flame graph) and fills the `profile` column; a
    /// scenario of one message of the users stores (seed003, lookups, scaling, tune) gets
    /// ID.pages.svg, its page map (the Wasm pages it touched and the function that touched
    /// each first). Counts are the same as without it; the run is slower.
    #[arg(long, value_name = "PATTERN", num_args = 0..=1, default_missing_value = "*")]
    pub(crate) profile: Option<String>,
    /// Print the ids of the selected suites' scenarios (what --profile matches) and exit.
    #[arg(long)]
    pub(crate) list_scenarios: bool,
    #[command(flatten)]
    pub(crate) rules: RulesArgs,
    /// Run even when the suites' estimated peak memory exceeds the memory available (by
    /// default such a run is refused before it starts, naming the flags that fit).
    #[arg(long)]
    pub(crate) ignore_memory_estimate: bool,
    // Last: its help heading would otherwise carry over to the options after it.
    #[command(flatten)]
    pub(crate) common: CommonArgs,
}

/// The CLI with every registered suite's flags, at the top level and under `run`, each
/// shared flag's help naming the suites that read it; every value of a list taken in any
/// case.
pub(crate) fn command() -> clap::Command {
    let with_suites = |cmd: clap::Command| {
        let cmd = REGISTRY.iter().fold(cmd, |cmd, s| s.args(cmd));
        let cmd = CommonArgs::augment_args(clap::Command::new("icbench"))
            .get_arguments()
            .fold(cmd, |cmd, arg| {
                cmd.mut_arg(arg.get_id(), |a| {
                    let readers = readers(a.get_id().as_str());
                    // clap takes a doc comment's last period off.
                    let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
                    let end = if help.ends_with('.') { "" } else { "." };
                    a.help(format!("{help}{end} Read by {readers}."))
                })
            });
        wasm_help(cmd)
    };
    let cli = with_suites(Cli::command())
        .mut_subcommand("run", with_suites)
        .mut_subcommand("crosscheck", wasm_help);
    any_case(cli).version(version().as_str())
}

/// `--wasm`'s help, with the modules' names.
fn wasm_help(cmd: clap::Command) -> clap::Command {
    let modules: Vec<&str> = icbench::bench_canister::Module::ALL
        .iter()
        .map(|m| m.name)
        .collect();
    cmd.mut_arg("wasm", |a| {
        a.help(format!(
            "Use this canister module instead of the bench canister icbench embeds; NAME=PATH \
             replaces the module NAME instead ({}), the flag given once per module",
            modules.join(", ")
        ))
    })
}

/// The suites that read the flag `id`: `every suite`, or their names.
fn readers(id: &str) -> String {
    let names: Vec<&str> = REGISTRY
        .iter()
        .filter(|s| s.reads(id))
        .map(|s| s.name())
        .collect();
    match names.len() == REGISTRY.len() {
        true => "every suite".into(),
        false => names.join(", "),
    }
}

/// One case rule for every value: a value of a list (`--suite Lookups`, `--stores BTree`,
/// `--layout Alone`, `--journal-modes wal`) is taken in any case, in every subcommand.
fn any_case(cmd: clap::Command) -> clap::Command {
    let listed: Vec<clap::Id> = cmd
        .get_arguments()
        .filter(|a| !a.get_possible_values().is_empty())
        .map(|a| a.get_id().clone())
        .collect();
    let cmd = listed
        .into_iter()
        .fold(cmd, |cmd, id| cmd.mut_arg(id, |a| a.ignore_case(true)));
    let subcommands: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    subcommands
        .into_iter()
        .fold(cmd, |cmd, name| cmd.mut_subcommand(name, any_case))
}

/// `--version`: the crate's version, the commit it was built from and the replica rules it
/// charges by unless told otherwise.
pub(crate) fn version() -> &'static String {
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
pub(crate) struct CompareArgs {
    /// The baseline results.json.
    pub(crate) base: PathBuf,
    /// The new results.json.
    pub(crate) new: PathBuf,
    /// Changes within this many percent are noise.
    #[arg(long, default_value_t = 2.0)]
    pub(crate) noise: f64,
    /// Compare runs of different rules or settings (replica, host, rows, payload size,
    /// seed, layout, the stores of a shared canister), which are refused otherwise: the
    /// table and the comment then say so in their first line.
    #[arg(long)]
    pub(crate) cross_rules: bool,
    /// What to print: a table of the changes, or a pull-request comment.
    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    pub(crate) format: CompareFormat,
    /// A ceiling on one scenario's multiplier (new ÷ base charged instructions): with it
    /// (or --max-section-ratio) the gate fails only above the ceilings, not on every
    /// regression.
    #[arg(long, value_name = "X")]
    pub(crate) max_ratio: Option<f64>,
    /// A ceiling on a section's average multiplier (a section: a suite's position).
    #[arg(long, value_name = "X")]
    pub(crate) max_section_ratio: Option<f64>,
    /// Directory for the differential flame graphs of the regressions whose runs both have
    /// profiles (default: profile-diffs beside the new results.json).
    #[arg(long, value_name = "DIR")]
    pub(crate) flame_graphs: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) comment: report::CommentArgs,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum CompareFormat {
    /// The changed scenarios as a table, and a summary line.
    Text,
    /// A pull-request comment: what moved first, the whole comparison folded.
    Markdown,
}

#[derive(Args)]
pub(crate) struct MergeArgs {
    /// The shards' --out directories, one per shard, in any order.
    #[arg(required = true, num_args = 1..)]
    pub(crate) dirs: Vec<PathBuf>,
    /// Directory for the joined files (laid out as a run's --out). For canbench parts: the
    /// directory the results file and CSV paths are relative to (`.` writes them where the
    /// unsharded run would).
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// No file list on stderr.
    #[arg(long)]
    pub(crate) quiet: bool,
}

/// The embedded engine's rules, for a run and for crosscheck's embedded side (a PocketIC
/// server charges by its own replica, on the machine it runs on).
#[derive(Args, Clone)]
pub(crate) struct RulesArgs {
    /// The replica whose charging rules the embedded engine models, by the month its
    /// newest modelled rule was merged (default: the newest; docs/engine.md lists each
    /// vintage's rules and sources; PocketIC servers before 16.0.0 predate the memory
    /// tracker: 2026-05). Reports name the vintage.
    #[arg(long, value_name = "VINTAGE", value_parser = suites::replica_value_parser())]
    pub(crate) replica: Option<String>,
    #[command(flatten)]
    pub(crate) host: suites::HostArg,
}

#[derive(Args)]
pub(crate) struct CrosscheckArgs {
    /// Largest accepted deviation, in percent of the PocketIC count.
    #[arg(long, default_value_t = icbench::crosscheck::DEFAULT_THRESHOLD)]
    pub(crate) threshold: f64,
    /// Which count to compare: store (performance_counter inside the canister, the default)
    /// or charged (whole update; on PocketIC derived from the cycles balance).
    #[arg(long, value_enum, default_value_t = MetricKind::Store)]
    pub(crate) metric: MetricKind,
    #[command(flatten)]
    pub(crate) module: ModuleArgs,
    #[command(flatten)]
    pub(crate) rules: RulesArgs,
    /// No progress output on stderr.
    #[arg(long)]
    pub(crate) quiet: bool,
}

/// Which bench canister modules a run or a crosscheck installs (see `ModuleArgs::read`).
#[derive(Args, Clone)]
pub(crate) struct ModuleArgs {
    /// Use this canister module instead of the bench canister icbench embeds (`command`
    /// adds `NAME=PATH`, with the modules' names).
    #[arg(long, conflicts_with = "build_canister")]
    pub(crate) wasm: Vec<PathBuf>,
    /// Build the bench canister from the checkout icbench was built from
    /// (scripts/build-canister.sh) instead of running the module icbench embeds.
    #[arg(long)]
    pub(crate) build_canister: bool,
}

#[derive(Args)]
pub(crate) struct ProfileDiffArgs {
    /// The profile compared against (folded stacks: `frame;frame COUNT` per line).
    pub(crate) a: PathBuf,
    /// The profile whose additions (red) and removals (blue) over A are drawn.
    pub(crate) b: PathBuf,
    /// The SVG file to write.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Draw A's widths instead of B's, so that stacks B no longer has show (colours keep
    /// their meaning: red is more in B).
    #[arg(long)]
    pub(crate) a_shape: bool,
}

#[derive(Args)]
pub(crate) struct ProfileTopArgs {
    /// The profile (folded stacks: `frame;frame COUNT` per line).
    pub(crate) file: PathBuf,
    /// How many functions to list; the rest are summed in one line.
    #[arg(long, default_value_t = 20, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub(crate) top: usize,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum MetricKind {
    Store,
    Charged,
}
