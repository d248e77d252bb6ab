//! The suites. Each module owns its options (clap args under a help heading of its own), their
//! validation, its scenario plan, its run and the sections of its report; the report layer
//! only renders what a suite hands it.
//!
//! A new suite is a new module here, declared with [`shared::Define`] and run in a
//! [`shared::Session`], plus one line in [`REGISTRY`].

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use clap::{ArgMatches, Args, Command, FromArgMatches};

use crate::engine::Engine;
use crate::report::{Document, Report};
use crate::stores::{ModuleNeed, Modules};

pub mod cache;
mod canister;
pub mod capacity;
pub mod dbbench;
pub mod decision;
mod grid;
pub mod keys;
pub mod lookups;
pub mod merge;
pub mod pool;
pub mod scaling;
pub mod scenario;
pub mod seed003;
pub mod shared;
mod steps;
pub mod sustained;
pub mod sysbench;
pub mod tune;
pub mod upgrade;
pub mod users;

pub use pool::{Exec, Shard};
use scenario::{CacheState, JournalMode, StoreKind};

/// Every suite, in the order `--suite all` runs them. The first one is the default.
pub static REGISTRY: [&dyn Suite; 10] = [
    &seed003::Seed003,
    &lookups::Lookups,
    &dbbench::DbBench,
    &keys::Keys,
    &sysbench::Sysbench,
    &upgrade::Upgrade,
    &scaling::Scaling,
    &tune::Tune,
    &cache::Cache,
    &sustained::Sustained,
];

/// A suite as the CLI sees it: a name, its flags, and a plan made from them.
pub trait Suite: Sync {
    /// `--suite NAME`.
    fn name(&self) -> &'static str;
    /// Adds the suite's own flags to the CLI (each suite's under a help heading of its own).
    fn args(&self, cmd: Command) -> Command;
    /// Reads the suite's flags and the shared ones, checks them, and returns the plan.
    fn plan(&self, matches: &ArgMatches, common: &CommonArgs) -> Result<Box<dyn Plan>>;
    /// Where the suite's files go: `--out/NAME`, so `--suite all` overwrites nothing.
    fn out_dir(&self, base: &Path) -> PathBuf;
    /// The tables, plots and notes of a report of this suite (from the report alone, so
    /// `icbench merge` renders joined shards as a run renders its own).
    fn document(&self, report: &Report) -> Document;
    /// The suite's gate: one line per failed check (the CLI then exits 1 after writing
    /// every file). Most suites have none.
    fn gate(&self, report: &Report) -> Vec<String>;
    /// The scenarios of `report` it could not measure: one line each, id and reason (the CLI
    /// then exits 1 after writing every file). A record `failed` is one, unless the failure
    /// is what it measures: a capacity probe's call one step above the largest batch that
    /// fits, and every limit the upgrade and scaling suites reach.
    fn failed(&self, report: &Report) -> Vec<String>;
    /// Whether it reads the flag `id` (clap's id: `rows`, `tune_wasm`): one of its own
    /// flags, or one of the shared flags it declares ([`shared::Define::READS`]). A flag no
    /// suite of a run reads is refused when given.
    fn reads(&self, id: &str) -> bool;
}

/// A configured suite, ready to run. `Debug` shows every setting: shards of one plan must
/// agree on it.
pub trait Plan: std::fmt::Debug {
    /// Runs the plan (the part of it `exec` selects, on `exec.jobs` forks of `engine`
    /// where it can fork) on the modules its stores live in, and returns the report.
    fn run_modules(
        &self,
        engine: &mut dyn Engine,
        modules: &Modules<'_>,
        exec: &Exec,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<Report>;

    /// [`Plan::run_modules`] with `wasm` as the default module and the others of
    /// [`Plan::modules`] those its flags name or, else, those of the current sources.
    fn run(
        &self,
        engine: &mut dyn Engine,
        wasm: &[u8],
        exec: &Exec,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<Report> {
        let modules = Modules::resolve(wasm, &self.modules(), &[], true)?;
        self.run_modules(engine, &modules, exec, progress)
    }

    /// The canister modules the plan's stores live in (the store table's), the default
    /// first, each with the file a flag of the plan names for it (`--tune-wasm`).
    fn modules(&self) -> Vec<ModuleNeed>;

    /// The ids of the records the plan will give (what `--profile PATTERN` matches), when
    /// they are known before it runs; `None` for plans whose records come out of the run
    /// (sizes found on the way, failures), whose ids report.md and results.csv list.
    fn scenario_ids(&self) -> Option<Vec<String>>;

    /// The plan's expected peak memory on `exec` (resident bytes), from its settings alone,
    /// with what smaller settings would need; `None` for plans that fit any machine that
    /// runs icbench. The CLI compares it with the memory available before anything starts.
    fn memory_estimate(&self, exec: &Exec) -> Option<MemoryEstimate>;

    /// The plan fitted to `available` bytes when it does not fit on one worker: what needs
    /// more alone than is available left out, and a line for each thing left out saying
    /// what and why; `None` for plans that cannot shrink so, or whose sizes the user gave.
    fn fit_to(&self, available: u64, exec: &Exec) -> Option<Fitted>;
}

/// A plan fitted to the memory available ([`Plan::fit_to`]).
pub struct Fitted {
    /// The smaller plan.
    pub plan: Box<dyn Plan>,
    /// A line for each thing it leaves out, and why.
    pub lines: Vec<String>,
}

/// Bytes a process needs whatever the stores: the compiled module, wasmtime, the report
/// (the base of every suite's memory estimate).
pub const MEMORY_BASE: u64 = 500_000_000;

/// What a plan is expected to need at its peak, and the flags that would need less.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryEstimate {
    /// Resident bytes at the peak.
    pub bytes: u64,
    /// The settings it is for: `the scaling suite to 10,000,000 rows on 2 jobs`.
    pub what: String,
    /// (flags, bytes) of settings that need less, most useful first: `--jobs 1`.
    pub smaller: Vec<(String, u64)>,
}

/// The suite called `name` (case-insensitive).
pub fn find(name: &str) -> Option<&'static dyn Suite> {
    REGISTRY
        .iter()
        .copied()
        .find(|s| s.name().eq_ignore_ascii_case(name))
}

/// `--suite` values: names or `all`; duplicates dropped, given order kept.
pub fn select(names: &[String]) -> Result<Vec<&'static dyn Suite>> {
    let mut out: Vec<&'static dyn Suite> = Vec::new();
    for name in names {
        let chosen: Vec<&'static dyn Suite> = if name.eq_ignore_ascii_case("all") {
            REGISTRY.to_vec()
        } else {
            vec![find(name).ok_or_else(|| {
                anyhow!(
                    "unknown suite {name:?}; accepted: {}, all",
                    REGISTRY.map(|s| s.name()).join(", ")
                )
            })?]
        };
        for s in chosen {
            if !out.iter().any(|o| o.name() == s.name()) {
                out.push(s);
            }
        }
    }
    Ok(out)
}

/// USD per XDR (1 trillion cycles = 1 XDR). An assumption, printed with every report.
pub const DEFAULT_USD_PER_XDR: f64 = 1.36;

/// The values of `--replica` (the suites' and `icbench canbench`'s): every vintage, with what
/// it changed.
pub fn replica_value_parser() -> ReplicaValueParser {
    use crate::engine::cost::{Replica, POCKET_IC_RELEASES};
    use clap::builder::PossibleValue;
    let vintages = Replica::ALL.map(|r| PossibleValue::new(r.name).help(r.summary));
    let releases = POCKET_IC_RELEASES.map(|r| {
        PossibleValue::new(r.name).help(format!(
            "the rules PocketIC {} ({}) charges by: {}",
            r.version(),
            r.date,
            r.replica.name
        ))
    });
    ReplicaValueParser(clap::builder::PossibleValuesParser::new(
        vintages.into_iter().chain(releases),
    ))
}

/// [`replica_value_parser`]: clap's possible values, whose "a similar value exists" for a
/// value that looks like a PocketIC release is the release
/// [`PocketIcRelease::suggest`](crate::engine::cost::PocketIcRelease::suggest) names (by
/// spelling alone clap would suggest an older release than the newest).
#[derive(Clone)]
pub struct ReplicaValueParser(clap::builder::PossibleValuesParser);

impl clap::builder::TypedValueParser for ReplicaValueParser {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<String, clap::Error> {
        use clap::error::{ContextKind, ContextValue};
        let typed = self.0.parse_ref(cmd, arg, value).map_err(|mut e| {
            let release = value
                .to_str()
                .and_then(crate::engine::cost::PocketIcRelease::suggest);
            if let Some(release) = release {
                e.insert(
                    ContextKind::SuggestedValue,
                    ContextValue::String(release.name.to_string()),
                );
            }
            e
        })?;
        // Taken in any case (the CLI's rule), named as the list spells it.
        Ok(self
            .0
            .possible_values()
            .into_iter()
            .flatten()
            .find(|p| p.matches(&typed, true))
            .map_or(typed, |p| p.get_name().to_string()))
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        self.0.possible_values()
    }
}

/// `--host`, the same flag in a run, crosscheck, `icbench canbench`, `mops` and `replay`.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct HostArg {
    /// The machine whose OS pages the charges count, as the server that recorded the
    /// figures being matched counted them (default: linux, 4 KiB pages, as mainnet and as
    /// canbench's x86_64 server counts on a Mac too; macos-arm64: a native arm64-darwin
    /// server's 16 KiB). Reports name a host other than linux.
    #[arg(long, value_name = "HOST", value_parser = crate::engine::cost::host::value_parser())]
    host: Option<crate::engine::cost::Host>,
}

impl HostArg {
    /// The host given, if one was.
    pub fn given(self) -> Option<crate::engine::cost::Host> {
        self.host
    }

    /// The host given, else linux.
    pub fn get(self) -> crate::engine::cost::Host {
        self.host.unwrap_or_default()
    }
}

/// Options that more than one suite reads: `--help` adds to each the suites that read it
/// ([`Suite::reads`]).
#[derive(Args, Clone, Debug)]
#[command(next_help_heading = "Options of several suites")]
pub struct CommonArgs {
    /// Rows prefilled into each store, ids 0, 10, 20, ...
    #[arg(long, default_value_t = 1_000_000)]
    pub rows: u64,
    /// Stores to measure, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = StoreKind::ALL)]
    pub stores: Vec<StoreKind>,
    /// SQLite journal modes, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = JournalMode::ALL)]
    pub journal_modes: Vec<JournalMode>,
    /// Bytes of the username payload per row (seed 003 used 100).
    #[arg(long, default_value_t = 100)]
    pub payload_size: u64,
    /// Seed of the random draws, printed in the report.
    #[arg(long, default_value_t = 2026)]
    pub seed: u64,
    /// USD per XDR for the price column (1 XDR = 10^12 cycles).
    #[arg(long, default_value_t = DEFAULT_USD_PER_XDR)]
    pub usd_per_xdr: f64,
    /// States of SQLite's page cache to measure, comma-separated: cold, a newly opened
    /// connection (the first message after an upgrade or a reopen); warm, a live canister's
    /// (the whole table cached, then one message of the workload). Stores without a page
    /// cache are measured once either way.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = CacheState::ALL)]
    pub page_cache: Vec<CacheState>,
    /// Where the stores are filled (the other suites fill each store in a canister of its
    /// own).
    #[arg(long, value_enum, default_value_t = users::Layout::Alone)]
    pub layout: users::Layout,
}

impl CommonArgs {
    /// The flags' defaults, as an empty command line gives them.
    pub fn defaults() -> CommonArgs {
        let matches = CommonArgs::augment_args(Command::new("icbench"))
            .try_get_matches_from(["icbench"])
            .expect("every shared flag has a default");
        CommonArgs::from_arg_matches(&matches).expect("the defaults parse")
    }

    pub fn validate(&self) -> Result<()> {
        let usd = self.usd_per_xdr;
        let what = if usd.is_nan() {
            "is not a number"
        } else if usd.is_infinite() {
            "is infinite"
        } else if usd <= 0.0 {
            "is not positive"
        } else {
            return Ok(());
        };
        Err(anyhow!(
            "--usd-per-xdr {usd} {what}: it must be a finite positive number"
        ))
    }

    /// Whether `id` is one of these flags' clap ids.
    pub fn has_flag(id: &str) -> bool {
        CommonArgs::augment_args(Command::new("icbench"))
            .get_arguments()
            .any(|a| a.get_id() == id)
    }

    pub fn has(&self, kind: StoreKind) -> bool {
        self.stores.contains(&kind)
    }
}

/// Progress events, for a progress bar.
pub enum Progress<'a> {
    Prefill {
        store: &'a str,
        done: u64,
        total: u64,
    },
    /// A store's post-prefill state, loaded from the cache (no prefill ran).
    Loaded { store: &'a str },
    Scenario {
        done: usize,
        total: usize,
        key: &'a str,
    },
}

/// Sorted: for size lists whose order does not matter (each value is given once: the CLI
/// refuses a repeated one before any plan is made, src/cli/lists.rs).
fn sorted(mut values: Vec<u64>) -> Vec<u64> {
    values.sort_unstable();
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_table_names_registered_suites() {
        let registered: Vec<&str> = REGISTRY.iter().map(|s| s.name()).collect();
        for kind in StoreKind::every() {
            let def = kind.def();
            let schema_suites = def
                .schemas
                .iter()
                .flat_map(|s| s.canister.iter().map(|c| c.0));
            for suite in def.suites.iter().copied().chain(schema_suites) {
                assert!(registered.contains(&suite), "{kind}: {suite}");
            }
        }
        // Every suite measures some store of the default run.
        for suite in registered {
            assert!(
                !crate::stores::measured_by(suite, &StoreKind::ALL).is_empty(),
                "{suite}"
            );
        }
    }

    /// Each suite's [`shared::Define::READS`] is what its plan reads: a shared flag it
    /// declares changes its plan, one it does not declare leaves the plan as it is.
    #[test]
    fn each_suite_reads_the_shared_flags_it_declares() {
        let probes: [(&str, &[&str]); 8] = [
            ("rows", &["--rows", "20000"]),
            ("stores", &["--stores", "btree,sqlite"]),
            ("journal_modes", &["--journal-modes", "WAL"]),
            ("payload_size", &["--payload-size", "50"]),
            ("seed", &["--seed", "7"]),
            ("usd_per_xdr", &["--usd-per-xdr", "2"]),
            ("page_cache", &["--page-cache", "cold"]),
            ("layout", &["--layout", "shared"]),
        ];
        let shared: Vec<String> = CommonArgs::augment_args(Command::new("icbench"))
            .get_arguments()
            .map(|a| a.get_id().to_string())
            .collect();
        assert_eq!(
            shared,
            probes.map(|p| p.0.to_string()),
            "a probe per shared flag"
        );
        let plan = |suite: &dyn Suite, args: &[&str]| -> String {
            let cmd = REGISTRY.iter().fold(
                CommonArgs::augment_args(Command::new("icbench")),
                |cmd, s| s.args(cmd),
            );
            let matches = cmd
                .try_get_matches_from(std::iter::once("icbench").chain(args.iter().copied()))
                .unwrap();
            let common = CommonArgs::from_arg_matches(&matches).unwrap();
            let plan = suite.plan(&matches, &common);
            format!(
                "{:?}",
                plan.unwrap_or_else(|e| panic!("{} {args:?}: {e}", suite.name()))
            )
        };
        for suite in REGISTRY {
            let defaults = plan(suite, &[]);
            for (id, args) in probes {
                let changed = plan(suite, args) != defaults;
                assert_eq!(changed, suite.reads(id), "{} and --{id}", suite.name());
            }
        }
    }

    #[test]
    fn registry_names_are_unique_and_all_expands_in_order() {
        let names: Vec<&str> = REGISTRY.iter().map(|s| s.name()).collect();
        assert_eq!(
            names.join(","),
            "seed003,lookups,dbbench,keys,sysbench,upgrade,scaling,tune,cache,sustained"
        );
        let picked = select(&["keys".into(), "ALL".into()]).unwrap();
        let picked: Vec<&str> = picked.iter().map(|s| s.name()).collect();
        // The first mention first, then the rest of the registry in its order.
        let keys_first: Vec<&str> = std::iter::once("keys")
            .chain(names.iter().copied().filter(|&n| n != "keys"))
            .collect();
        assert_eq!(picked, keys_first);
        let err = select(&["nope".into()]).err().unwrap().to_string();
        assert!(
            err.contains("unknown suite \"nope\"; accepted: seed003"),
            "{err}"
        );
    }
}
