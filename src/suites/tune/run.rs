//! The tune suite's run: the empty canister (and the tune variant's), the search stage by
//! stage, the other stores beside it, and the report.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{anyhow, Result};

use super::beside::Sized;
use super::binding;
use super::measure::{measure_others, run_stage, StageEnv};
use super::search::{beside_vintage, cheapest};
use super::{bounded_max_size, Config, Knob, Measured, Setting, SEARCH, SEARCHED, WORKLOADS};
use crate::bench_canister::{BenchClient, Module, SqliteConfig};
use crate::engine::cost::{Host, Replica};
use crate::report::format::thousands;
use crate::report::work::Kind;
use crate::report::{Report, ScenarioResult};
use crate::stores::{self, ModuleFile, ModuleNeed, Modules};
use crate::suites::canister::{rows_per_message, ID_STEP};
use crate::suites::pool::{self, Chain, Recorder, State, UnitId};
use crate::suites::scenario::CacheState;
use crate::suites::shared::{Header, Measure, Run};
use crate::suites::users;
use crate::suites::{Exec, MemoryEstimate, Progress};

impl Measure for Config {
    const SUITE: &'static str = "tune";

    fn validate(&self) -> Result<()> {
        self.check()
    }

    /// The default module, and the tune variant's when its stores are measured (the file
    /// `--tune-wasm` names, if it does).
    fn modules(&self) -> Vec<ModuleNeed> {
        let kinds = self.others.iter().map(|s| s.store_kind());
        let kinds = kinds
            .chain([SEARCHED])
            .chain(self.variants.iter().copied())
            .chain(self.bindings.iter().copied());
        let mut needs = stores::needs(kinds);
        for need in needs.iter_mut().filter(|n| n.module == Module::TUNE) {
            need.file = self.variant_wasm.clone().map(|path| ModuleFile {
                flag: "--tune-wasm",
                path,
            });
        }
        needs
    }

    /// Each workload is a scenario of the plan (a shard takes whole workloads): its own
    /// search, whose records are the settings it measured in the order it measured them.
    fn measure(&self, run: Run<'_>) -> Result<Report> {
        let cfg = self;
        let (session, exec) = (run.session, run.exec);
        let (work, engine_name) = (&session.work, &session.engine_name);
        let current = run.engine.replica();
        let beside = beside_vintage(current);
        let host = run.engine.host().unwrap_or_default();
        let compiled = pool::compile(run.engine, run.wasm, work)?;
        let mut chain = Chain::new(work, &[compiled]);
        chain.step(Kind::Install, "install the canister");
        let mut client = BenchClient::install(run.engine, run.wasm)?;
        chain.step(Kind::Fill, "set the payload size, read SQLite's defaults");
        client
            .set_payload_size(cfg.users.payload_size)?
            .value
            .map_err(|e| anyhow!("set_payload_size({}) failed: {e}", cfg.users.payload_size))?;
        // The stores beside the search start here, each alone in its canister as the users
        // suites fill them: SQLite not yet opened.
        let alone = pool::graph::snapshot(client.engine, client.canister)?;
        let defaults = client
            .configure_sqlite(&SqliteConfig::default())?
            .value
            .map_err(|e| anyhow!("reading SQLite's default settings failed: {e}"))?;
        let defaults = Setting::from_settings(&defaults)?;
        chain.step(Kind::Snapshot, "snapshot of the empty store");
        let canister = client.canister;
        let empty = pool::graph::snapshot(client.engine, canister)?;
        let mut after = chain.end();

        let workloads = exec.indices(WORKLOADS.len());
        // The tune variant's empty stores: its module installed over the same canister,
        // from an empty state too.
        let (empty_variant, variant_sha256) = if cfg.variants.is_empty() || workloads.is_empty() {
            (None, None)
        } else {
            let variant = run.modules.get(Module::TUNE)?;
            let (state, sha256) = install_variant(&mut client, cfg, variant, work, &mut after)?;
            (Some(state), Some(sha256))
        };
        let sized = if workloads.is_empty() {
            Vec::new()
        } else {
            empty_at_value_sizes(&mut client, cfg, run.modules, work, &mut after)?
        };
        let setup = AtomicU64::new(client.executed_instructions);
        let env = StageEnv {
            cfg,
            exec,
            work,
            after: &[],
            suite_engine: engine_name,
            current,
            beside,
            setup: &setup,
        };
        let mut stages = Stages {
            client: &mut client,
            empty: &empty,
            filled: BTreeMap::new(),
            env: &env,
            after: &mut after,
            progress: &mut *run.progress,
        };
        let (measured, best) = search(&mut stages, &workloads, defaults)?;
        let (warm_records, warm_measured) = warm_stage(&mut stages, &workloads, &best)?;
        let (besides, at_run_size) =
            cfg.besides(defaults, &alone, &empty, empty_variant.as_ref(), &sized);
        // The stages below start after the searches and the warm stage.
        let env_after = StageEnv {
            after: &after,
            ..env
        };
        let other_records = measure_others(
            &mut client,
            &empty,
            &besides,
            &env_after,
            &workloads,
            run.progress,
        )?;
        // Each other binding's search, in a canister of its own: its records follow all
        // the others of their workload.
        let (binding_records, bindings, binding_executed) = binding::measure(
            &mut *client.engine,
            run.modules,
            &env_after,
            &workloads,
            run.progress,
        )?;
        client.executed_instructions += binding_executed;
        // The other value sizes' records follow the search's: the run's records stay as
        // they were without them.
        let (other_records, value_size_records) = other_records
            .into_iter()
            .map(|mut per_store| {
                let sizes = per_store.split_off(at_run_size.min(per_store.len()));
                (per_store.concat(), sizes.concat())
            })
            .unzip();
        let outcomes = outcomes(
            &workloads,
            [
                other_records,
                measured_records(measured),
                value_size_records,
                warm_records,
                binding_records,
            ],
            exec,
            &setup,
        );
        let header = Header {
            workload: crate::report::Workload {
                rows_before: cfg.users.rows,
                seed: cfg.users.seed,
                payload_size: cfg.users.payload_size,
            },
            prefill: Some("run".into()),
            notes: notes(cfg, beside, host),
        };
        let mut report = session.report(&client, header, outcomes);
        let mut search = cfg.search(defaults, beside);
        search.variant_module = variant_sha256;
        search.value_sizes = cfg.value_sizes.clone();
        if warm_measured {
            search.stages.push(format!(
                "{}. {} warm (the whole table read into the cache, then one message of the workload) at each workload's best settings",
                search.stages.len() + 1,
                cfg.values(Knob::CacheSize)
            ));
        }
        for b in &bindings {
            search
                .stages
                .push(format!("{}. {}", search.stages.len() + 1, b.searched));
        }
        search.bindings = bindings;
        report.set_extra(SEARCH, &search);
        Ok(report)
    }

    fn memory_estimate(&self, _exec: &Exec) -> Option<MemoryEstimate> {
        let page_sizes = if self.knobs.contains(&Knob::PageSize) {
            self.page_sizes.len() + 1
        } else {
            1
        };
        let mut smaller = Vec::new();
        if page_sizes > 3 {
            smaller.push((
                "--tune-page-sizes 4096,16384".to_string(),
                self.peak_memory(3),
            ));
        }
        if !self.value_sizes.is_empty() {
            let without = Config {
                value_sizes: Vec::new(),
                ..self.clone()
            };
            smaller.push((
                "--tune-value-sizes none".to_string(),
                without.peak_memory(page_sizes),
            ));
        }
        if 100_000 < self.users.rows {
            let fewer = Config {
                users: users::Config {
                    rows: 100_000,
                    ..self.users.clone()
                },
                ..self.clone()
            };
            smaller.push(("--rows 100000".to_string(), fewer.peak_memory(page_sizes)));
        }
        Some(MemoryEstimate {
            bytes: self.peak_memory(page_sizes),
            what: format!(
                "the tune suite with {} rows in up to {page_sizes} SQLite stores",
                thousands(self.users.rows)
            ),
            smaller,
        })
    }
}

/// What the search's stages and the warm stage share: the canister and its empty store, the
/// filled store of each page size measured so far, and the units the next work waits for.
struct Stages<'a, 'e> {
    client: &'a mut BenchClient<'e>,
    empty: &'a State,
    filled: BTreeMap<u32, State>,
    env: &'a StageEnv<'a>,
    after: &'a mut Vec<UnitId>,
    progress: &'a mut dyn FnMut(Progress<'_>),
}

impl Stages<'_, '_> {
    /// Measures `candidates` in `cache` after the work before; the work after waits for
    /// this stage's units. In the order of the candidates.
    fn run(
        &mut self,
        candidates: &[(usize, Setting)],
        cache: CacheState,
    ) -> Result<Vec<(ScenarioResult, Option<ScenarioResult>)>> {
        let ran = run_stage(
            self.client,
            self.empty,
            &mut self.filled,
            candidates,
            cache,
            &StageEnv {
                after: self.after,
                ..*self.env
            },
            self.progress,
        )?;
        if !ran.units.is_empty() {
            *self.after = ran.units;
        }
        Ok(ran.measured)
    }
}

/// The search, stage by stage: each workload's settings around its best so far, measured
/// cold; returns what each workload measured, in order, and its cheapest settings.
fn search(
    stages: &mut Stages<'_, '_>,
    workloads: &[usize],
    defaults: Setting,
) -> Result<(Vec<Vec<Measured>>, Vec<Setting>)> {
    let env = stages.env;
    let cfg = env.cfg;
    let mut measured: Vec<Vec<Measured>> = vec![Vec::new(); WORKLOADS.len()];
    let mut best = vec![defaults; WORKLOADS.len()];
    for (i, knobs) in cfg.stages().iter().enumerate() {
        let mut candidates: Vec<(usize, Setting)> = Vec::new();
        for &w in workloads {
            for s in cfg.around(best[w], knobs) {
                if !candidates.contains(&(w, s)) && !measured[w].iter().any(|m| m.0 == s) {
                    candidates.push((w, s));
                }
            }
        }
        let ran = stages.run(&candidates, CacheState::Cold)?;
        for ((w, setting), (now, old)) in candidates.iter().zip(ran) {
            measured[*w].push((*setting, now, old));
        }
        let (chosen, unit) = env.work.unit(
            Kind::Other,
            format!("choose each workload's best after stage {}", i + 1),
            stages.after,
            || {
                measured
                    .iter()
                    .map(|m| cheapest(m, defaults))
                    .collect::<Vec<_>>()
            },
        );
        best = chosen;
        *stages.after = vec![unit];
    }
    Ok((measured, best))
}

/// cache_size warm, at each workload's cheapest settings (`best`): a cache that pays for
/// itself cold may cost warm (docs/suites.md). Returns each workload's records, which follow
/// all the others, and whether the stage ran.
fn warm_stage(
    stages: &mut Stages<'_, '_>,
    workloads: &[usize],
    best: &[Setting],
) -> Result<(Vec<Vec<ScenarioResult>>, bool)> {
    let cfg = stages.env.cfg;
    let mut warm_records: Vec<Vec<ScenarioResult>> = vec![Vec::new(); WORKLOADS.len()];
    let warm_measured = cfg.knobs.contains(&Knob::CacheSize)
        && !cfg.users.stores.is_empty()
        && cfg.users.measures(CacheState::Warm)
        && !workloads.is_empty();
    if warm_measured {
        let candidates: Vec<(usize, Setting)> = workloads
            .iter()
            .flat_map(|&w| {
                cfg.around(best[w], &[Knob::CacheSize])
                    .into_iter()
                    .map(move |s| (w, s))
            })
            .collect();
        let ran = stages.run(&candidates, CacheState::Warm)?;
        for ((w, _), (now, old)) in candidates.iter().zip(ran) {
            warm_records[*w].push(now);
            warm_records[*w].extend(old);
        }
    }
    Ok((warm_records, warm_measured))
}

/// The tune variant module installed over the canister and its empty stores snapshotted,
/// after `after` (then the install's units): that state and the module's SHA-256.
pub(super) fn install_variant(
    client: &mut BenchClient<'_>,
    cfg: &Config,
    variant: &[u8],
    work: &Recorder,
    after: &mut Vec<UnitId>,
) -> Result<(State, String)> {
    let compiled = pool::compile(&mut *client.engine, variant, work)?;
    after.push(compiled);
    let names = [
        "install the tune variant over the canister",
        "set the tune variant's payload size",
        "snapshot of the tune variant's empty stores",
    ];
    let (state, _) = install_empty(
        client,
        variant,
        cfg.users.payload_size,
        false,
        work,
        after,
        names.map(String::from),
    )?;
    Ok((state, pool::sha256_hex(variant)))
}

/// Per other value size, the empty state a run at that `--payload-size` starts from: the
/// default module installed afresh with that payload size and SQLite's defaults read, as
/// the run's own install, and the tune variant's where its bounded store is measured then.
/// So a size's records are those of a run at that size.
fn empty_at_value_sizes(
    client: &mut BenchClient<'_>,
    cfg: &Config,
    modules: &Modules<'_>,
    work: &Recorder,
    after: &mut Vec<UnitId>,
) -> Result<Vec<Sized>> {
    let wasm = modules.default_module();
    let variant = if cfg.value_sizes.iter().any(|&s| cfg.bounded_at(s)) {
        Some(modules.get(Module::TUNE)?)
    } else {
        None
    };
    let mut out = Vec::new();
    let names = |module: &str, size: u64| {
        [
            format!("install {module} afresh for {size}-byte values"),
            format!("set {module}'s payload size to {size} bytes"),
            format!("snapshot of {module}'s empty stores at {size}-byte values"),
        ]
    };
    for &size in &cfg.value_sizes {
        let default = names("the canister", size);
        let (alone, default) = install_empty(client, wasm, size, true, work, after, default)?;
        let bounded = match &variant {
            Some(variant) if cfg.bounded_at(size) => {
                let what = names("the tune variant", size);
                Some(install_empty(client, variant, size, false, work, after, what)?.0)
            }
            _ => None,
        };
        out.push(Sized {
            size,
            alone,
            default,
            bounded,
        });
    }
    Ok(out)
}

/// `wasm` installed over the canister, its payload size set and its empty stores
/// snapshotted; when `read_sqlite`, SQLite's settings then read, as the run's own install
/// does, and snapshotted again; after `after` (then the install's units, named `names`).
/// The states: SQLite unopened (where a store other than SQLite starts, alone), and after
/// the read (where SQLite at its defaults starts).
fn install_empty(
    client: &mut BenchClient<'_>,
    wasm: &[u8],
    payload_size: u64,
    read_sqlite: bool,
    work: &Recorder,
    after: &mut Vec<UnitId>,
    names: [String; 3],
) -> Result<(State, State)> {
    let canister = client.canister;
    let [install, set, snapshot] = names;
    let mut chain = Chain::new(work, after);
    chain.step(Kind::Install, install.clone());
    client
        .engine
        .reinstall(canister, wasm, &candid::encode_args(())?)?
        .result
        .map_err(|r| anyhow!("{install} failed: {r}"))?;
    chain.step(Kind::Fill, set);
    client
        .set_payload_size(payload_size)?
        .value
        .map_err(|e| anyhow!("set_payload_size({payload_size}) failed: {e}"))?;
    chain.step(Kind::Snapshot, snapshot);
    let alone = pool::graph::snapshot(client.engine, canister)?;
    let read = if read_sqlite {
        client
            .configure_sqlite(&SqliteConfig::default())?
            .value
            .map_err(|e| anyhow!("reading SQLite's default settings failed: {e}"))?;
        pool::graph::snapshot(client.engine, canister)?
    } else {
        alone.clone()
    };
    *after = chain.end();
    Ok((alone, read))
}

/// Per workload, the search's records in the order it measured them (each under the
/// engine's replica, then beside it).
fn measured_records(measured: Vec<Vec<Measured>>) -> Vec<Vec<ScenarioResult>> {
    measured
        .into_iter()
        .map(|m| {
            m.into_iter()
                .flat_map(|(_, now, old)| std::iter::once(now).chain(old))
                .collect()
        })
        .collect()
}

/// Per workload of `workloads`, its records: the other stores' at their defaults, then the
/// search's, then the other value sizes', then the search's warm ones, then the other
/// bindings' (`parts`, each per workload, in that order).
pub(super) fn outcomes(
    workloads: &[usize],
    mut parts: [Vec<Vec<ScenarioResult>>; 5],
    exec: &Exec,
    setup: &AtomicU64,
) -> pool::Outcomes {
    let plan: String = WORKLOADS
        .iter()
        .map(|w| {
            format!(
                "{} {} {}\n",
                w.position,
                w.operation.kind(),
                w.operation.rows()
            )
        })
        .collect();
    let outcomes = workloads
        .iter()
        .map(|&w| {
            let results: Vec<ScenarioResult> = parts
                .iter_mut()
                .flat_map(|part| std::mem::take(&mut part[w]))
                .collect();
            (w, pool::Outcome::from(results))
        })
        .collect();
    pool::Outcomes::new(
        outcomes,
        WORKLOADS.len(),
        pool::sha256_hex(plan.as_bytes()),
        exec.shard,
        setup.load(Ordering::Relaxed),
    )
}

pub(super) fn notes(cfg: &Config, beside: Option<Replica>, host: Host) -> Vec<String> {
    let mut notes = vec![
        format!(
            "Each page size is a store of its own: an empty SQLite database set to that page size, then filled with ids 0, 10, 20, ..., {} ({} rows per message). Every measurement starts from its page size's store: `configure_sqlite` sets the other settings on a fresh connection, and the workload's one message follows.",
            (cfg.users.rows - 1) * ID_STEP,
            thousands(rows_per_message(cfg.users.payload_size))
        ),
        "Each workload is searched on its own, one coordinate at a time from the canister's defaults: page_size; then cache_size at its best page size; then journal_mode and synchronous together at its best page size and cache. The best is the lowest charge; combinations the stages did not reach were not measured.".to_string(),
        "Charged: the whole message as the replica bills it (the page charges included); store work: ic0.performance_counter(0) around the SQLite calls in the canister; pages: the 64 KiB Wasm pages of the heap and of stable memory the message accessed and wrote; bytes: the heap and stable memory the canister holds after it.".to_string(),
    ];
    if !cfg.others.is_empty() {
        let names: Vec<String> = cfg.others.iter().map(|s| s.label()).collect();
        notes.push(format!(
            "For the decision table, the {} are filled the same way, each alone in the canister (no SQLite rows beside it), and measured at their defaults: their counts are not those of the default run, whose canister holds every store.",
            names.join(" and ")
        ));
    }
    let bound = bounded_max_size();
    if !cfg.variants.is_empty() {
        let names: Vec<&str> = cfg.variants.iter().map(|v| v.label()).collect();
        notes.push(format!(
            "The {} run in the tune variant module (canisters/prebuilt/bench-tune.wasm: the same sources built with the cargo feature `tune`, which makes talc the global allocator of the whole module and adds a StableBTreeMap<u64, Name> whose value type is bounded to {bound} bytes), installed over the same canister and filled the same way, each alone. SQLite's C code allocates with wasi-libc's dlmalloc in both modules. The tuned column of the decision table counts them.",
            names.join(", ")
        ));
    }
    if !cfg.value_sizes.is_empty() {
        let sizes: Vec<String> = cfg.value_sizes.iter().map(|&s| thousands(s)).collect();
        notes.push(format!(
            "At {} bytes per value (`--tune-value-sizes`), besides the run's {}: the StableBTreeMap and the stores beside it at their defaults (SQLite at the canister's, the bounded value type up to its {bound} bytes; not the StableBTreeMap with talc), each filled alone in the same way from its module installed afresh at that payload size, as a run with that `--payload-size` starts: the records are that run's. Their records carry `value_size=N` in the store column and follow the search's.",
            sizes.join(" and "),
            cfg.users.payload_size
        ));
    }
    notes.push("journal_mode OFF keeps no rollback journal: a trap still undoes the whole message (the replica discards its changes), but SQLite cannot roll back a statement or transaction that fails without a trap. MEMORY keeps the journal on the heap, which a trap discards with the rest.".to_string());
    if let Some(old) = beside {
        notes.push(format!(
            "Every measurement is repeated under replica {} (before the memory tracker: 1,000 instructions per {} KiB page written, nothing for pages read), from the same state: its records carry `replica={}` in the store column.",
            old.name,
            host.os_page_size() / 1024,
            old.name
        ));
    }
    notes
}
