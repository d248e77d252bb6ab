//! Another SQLite binding's store (ic-sqlite-vfs), searched over the settings its binding
//! leaves a canister, in a canister of its own on an engine of its own (as the users suites
//! run it: `Engine::fresh`). Its binding fixes journal_mode, page_size, synchronous
//! and locking_mode at every open (the store table's `fixed`, each with why); what a
//! canister can still set on a connection, and the tune suite searches, is cache_size
//! (`configure_{stem}`, which reopens both connections with it), cold and warm. Asked for
//! explicitly without the bench canister's SQLite, a fixed setting is refused before any
//! work. Its records carry `{record} cache_size=N` in the store column and follow all the
//! others of their workload, so the other records stay as they were without it.

use std::sync::atomic::Ordering;
use std::sync::Mutex;

use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};

use super::measure::{
    fill_and_snapshot, now_and_beside, record, send, unit_noter, warm_up, Slot, StageEnv,
};
use super::{gain, pages_cell, signed, Knob, Search, Workload, SEARCH, WORKLOADS};
use crate::bench_canister::{BenchClient, SqliteConfig};
use crate::engine::Engine;
use crate::report::format::thousands;
use crate::report::work::Kind;
use crate::report::{Align, Report, ScenarioResult, Status, Table};
use crate::stores::Modules;
use crate::suites::grid::table_of;
use crate::suites::pool::{self, Chain, Lane, State, Task, UnitId};
use crate::suites::scenario::{CacheState, Store, StoreKind};
use crate::suites::Progress;

/// Whether `kind` is another binding's SQLite, searched on its own: a store with a page
/// cache and no journal modes to choose (its binding fixes them) that the tune suite
/// measures.
pub(super) fn is_binding(kind: StoreKind) -> bool {
    let def = kind.def();
    def.page_cache && !def.journal_modes && kind.measured_by("tune")
}

/// Every such store, in table order.
pub(super) fn all() -> impl Iterator<Item = StoreKind> {
    StoreKind::ALL.into_iter().filter(|&k| is_binding(k))
}

/// Those of `--stores`, in table order.
pub(super) fn selected(kinds: &[StoreKind]) -> Vec<StoreKind> {
    all().filter(|k| kinds.contains(k)).collect()
}

/// The knobs a binding leaves a canister to set: those its store does not fix.
pub(super) fn searchable(kind: StoreKind) -> Vec<Knob> {
    Knob::ALL
        .into_iter()
        .filter(|k| kind.fixed(k.name()).is_none())
        .collect()
}

/// The flag that lists each knob's values (journal modes: `--journal-modes`, checked for
/// every suite by `stores::check_journal_modes`).
fn values_flag(knob: Knob) -> Option<(&'static str, &'static str)> {
    match knob {
        Knob::PageSize => Some(("tune_page_sizes", "--tune-page-sizes")),
        Knob::Synchronous => Some(("tune_synchronous", "--tune-synchronous")),
        Knob::CacheSize | Knob::JournalMode => None,
    }
}

/// With the bindings' stores alone searched (no bench canister SQLite), a setting one of
/// them fixes asked for on the command line (`given(flag id)`) is refused, naming why.
pub(super) fn refuse_fixed(
    bindings: &[StoreKind],
    knobs: &[Knob],
    given: impl Fn(&str) -> bool,
) -> Result<()> {
    for &kind in bindings {
        let left: Vec<&str> = searchable(kind).iter().map(|k| k.name()).collect();
        for knob in Knob::ALL {
            let Some(fixed) = kind.fixed(knob.name()) else {
                continue;
            };
            let flag = if given("tune_settings") && knobs.contains(&knob) {
                "--tune-settings"
            } else if let Some((_, flag)) = values_flag(knob).filter(|(id, _)| given(id)) {
                flag
            } else {
                continue;
            };
            return Err(anyhow!(
                "{flag}: the store {kind} cannot choose {} ({} is fixed at {}: {}); the tune suite searches its {}, or add --stores {}",
                knob.name(),
                knob.name(),
                fixed.value,
                fixed.why,
                left.join(", "),
                super::SEARCHED.name()
            ));
        }
    }
    Ok(())
}

/// One configuration of a binding's store: the cache_size set on its connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Setting {
    kind: StoreKind,
    cache_size: i64,
}

impl Setting {
    /// The record's `store`: `sqlite-vfs cache_size=-32768`.
    fn store_label(&self) -> String {
        format!("{} cache_size={}", self.kind.def().record, self.cache_size)
    }

    /// What `configure_{stem}` is sent.
    fn config(&self) -> SqliteConfig {
        SqliteConfig {
            cache_size: Some(self.cache_size),
            ..SqliteConfig::default()
        }
    }
}

/// What the report keeps of a binding's search, for the document.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Binding {
    /// Its records' store, before the settings (`sqlite-vfs`).
    pub record: String,
    /// Its label in narrow tables (`ic-sqlite-vfs`).
    pub label: String,
    /// The record store of its defaults (the binding's cache_size).
    pub defaults: String,
    /// What was searched.
    pub searched: String,
    /// Each setting its binding fixes: `journal_mode MEMORY (why)`.
    pub fixed: Vec<String>,
}

/// Each binding of `cfg` searched, after `after`: in a canister of its own, on a fresh
/// engine like `engine` (on `engine` itself where none can be made: a PocketIC server).
/// Per workload, its records (cold in search order, then warm; each under the engine's
/// replica, then beside it), what the report keeps of each search, and the instructions its
/// canisters executed (every shard runs their install and fill: counted as setup too).
pub(super) fn measure(
    engine: &mut dyn Engine,
    modules: &Modules<'_>,
    env: &StageEnv<'_>,
    workloads: &[usize],
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<(Vec<Vec<ScenarioResult>>, Vec<Binding>, u64)> {
    let cfg = env.cfg;
    let mut records = vec![Vec::new(); WORKLOADS.len()];
    let mut kept = Vec::new();
    let mut after = env.after.to_vec();
    let mut executed = 0;
    if workloads.is_empty() {
        return Ok((records, kept, executed));
    }
    for &kind in &cfg.bindings {
        let wasm = modules.get(kind.module())?;
        let mut own = engine.fresh();
        let engine: &mut dyn Engine = match own.as_mut() {
            Some(own) => own.as_mut(),
            None => &mut *engine,
        };
        let noun = kind.def().noun;
        let compiled = pool::compile(engine, wasm, env.work)?;
        after.push(compiled);
        let mut chain = Chain::new(env.work, &after);
        chain.step(Kind::Install, format!("install the canister of {noun}"));
        let mut client = BenchClient::install(engine, wasm)?;
        chain.step(
            Kind::Fill,
            format!("set the payload size of {noun}, read its defaults"),
        );
        let size = cfg.users.payload_size;
        client
            .set_payload_size(size)?
            .value
            .map_err(|e| anyhow!("set_payload_size({size}) of {noun} failed: {e}"))?;
        let defaults = client
            .configure_sqlite_of(kind.stem(), &SqliteConfig::default())?
            .value
            .map_err(|e| anyhow!("reading the default settings of {noun} failed: {e}"))?;
        chain.step(Kind::Snapshot, format!("snapshot of {noun}, empty"));
        let empty = pool::graph::snapshot(client.engine, client.canister)?;
        after = chain.end();
        // What every shard sends before the fill (which counts itself).
        env.setup
            .fetch_add(client.executed_instructions, Ordering::Relaxed);
        let defaults = Setting {
            kind,
            cache_size: defaults.cache_size,
        };
        let mut settings = vec![defaults];
        if cfg.knobs.contains(&Knob::CacheSize) && searchable(kind).contains(&Knob::CacheSize) {
            for &cache_size in &cfg.cache_sizes {
                let s = Setting { kind, cache_size };
                if !settings.contains(&s) {
                    settings.push(s);
                }
            }
        }
        let mut states = vec![CacheState::Cold];
        if cfg.users.measures(CacheState::Warm) {
            states.push(CacheState::Warm);
        }
        let env = StageEnv {
            after: &after,
            ..*env
        };
        let (measured, units) = search(
            &mut client,
            &empty,
            kind,
            &settings,
            &states,
            &env,
            workloads,
            progress,
        )?;
        if !units.is_empty() {
            after = units;
        }
        executed += client.executed_instructions;
        for (w, mine) in measured.into_iter().enumerate() {
            records[w].extend(mine);
        }
        let values: Vec<String> = settings.iter().map(|s| s.cache_size.to_string()).collect();
        let states: Vec<String> = states.iter().map(|s| s.to_string()).collect();
        kept.push(Binding {
            record: kind.def().record.to_string(),
            label: kind.def().short_label.to_string(),
            defaults: defaults.store_label(),
            searched: format!(
                "{} (in a canister of its own, on an engine of its own): cache_size ({}; the first its binding's) {}",
                kind.def().short_label,
                values.join(", "),
                states.join(" and ")
            ),
            fixed: kind
                .def()
                .fixed
                .iter()
                .map(|f| format!("{} {} ({})", f.setting, f.value, f.why))
                .collect(),
        });
    }
    Ok((records, kept, executed))
}

/// Fills `kind`'s store from `empty`, then measures every workload of `workloads` at
/// every setting in every cache state, each from the filled store. Per workload, its
/// records (per state, per setting: now, then beside), and the units run.
#[allow(clippy::too_many_arguments)]
fn search(
    client: &mut BenchClient<'_>,
    empty: &State,
    kind: StoreKind,
    settings: &[Setting],
    states: &[CacheState],
    env: &StageEnv<'_>,
    workloads: &[usize],
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<(Vec<Vec<ScenarioResult>>, Vec<UnitId>)> {
    // Per workload, state and setting.
    let cells: Vec<(usize, CacheState, Setting)> = workloads
        .iter()
        .flat_map(|&w| {
            states
                .iter()
                .flat_map(move |&c| settings.iter().map(move |&s| (w, c, s)))
        })
        .collect();
    let slots: Vec<Slot> = cells.iter().map(|_| Mutex::new(None)).collect();
    let units: Mutex<Vec<UnitId>> = Mutex::new(Vec::new());
    {
        let (slots, cells) = (&slots, &cells);
        let note_unit = unit_noter(&units);
        let noun = kind.def().noun;
        let fill = Task::new(
            Kind::Fill,
            format!("fill {noun} to {} rows", thousands(env.cfg.users.rows)),
            move |lane: &mut Lane<'_, '_>| {
                note_unit(lane);
                lane.restore(empty)?;
                let before = lane.client.executed_instructions;
                let filled = fill_and_snapshot(
                    lane,
                    env,
                    kind.stem(),
                    before,
                    format!("snapshot of {noun}"),
                )?;
                note_unit(lane);
                for (c, &(w, cache, setting)) in cells.iter().enumerate() {
                    let state = filled.clone();
                    let name = format!(
                        "tune {}: {noun}, cache_size {}, {cache}",
                        WORKLOADS[w].name,
                        signed(setting.cache_size)
                    );
                    lane.spawn(
                        Task::new(Kind::Scenario, name, move |lane: &mut Lane<'_, '_>| {
                            note_unit(lane);
                            let out = now_and_beside(env, |vintage| {
                                measure_one(
                                    lane,
                                    env,
                                    setting,
                                    &WORKLOADS[w],
                                    &state,
                                    vintage,
                                    cache,
                                )
                            })?;
                            *slots[c].lock().unwrap_or_else(|e| e.into_inner()) = Some(out);
                            Ok(())
                        })
                        .profiled(),
                    );
                }
                Ok(())
            },
        )
        .after(env.after)
        .priority(1);
        pool::graph::run(
            client,
            empty,
            env.exec,
            env.work,
            progress,
            vec![fill],
            None,
        )?;
    }
    let mut out = vec![Vec::new(); WORKLOADS.len()];
    for (slot, (w, cache, setting)) in slots.into_iter().zip(&cells) {
        let (now, beside) = slot
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .ok_or_else(|| {
                anyhow!(
                    "{} was not measured on {} with cache_size {} {cache}",
                    WORKLOADS[*w].name,
                    kind.def().noun,
                    setting.cache_size
                )
            })?;
        out[*w].push(now);
        out[*w].extend(beside);
    }
    Ok((out, units.into_inner().unwrap_or_else(|e| e.into_inner())))
}

/// One workload at `setting` from the filled `state`: its connections reopened with the
/// setting (`configure_{stem}`), warmed when `cache` is warm, then the workload's message.
fn measure_one(
    lane: &mut Lane<'_, '_>,
    env: &StageEnv<'_>,
    setting: Setting,
    workload: &Workload,
    state: &State,
    vintage: Option<crate::engine::cost::Replica>,
    cache: CacheState,
) -> Result<ScenarioResult> {
    let store = Store::new(setting.kind, None);
    let stem = setting.kind.stem();
    let (call, mut result) = record(env, store, setting.store_label(), workload, vintage, cache);
    lane.restore(state)?;
    match lane
        .client
        .configure_sqlite_of(stem, &setting.config())?
        .value
    {
        Err(reason) => {
            result.status = Status::Refused(reason);
            return Ok(result);
        }
        Ok(actual) if actual.cache_size != setting.cache_size => {
            result.status = Status::Refused(format!(
                "asked for cache_size {}, SQLite uses {}",
                setting.cache_size, actual.cache_size
            ));
            return Ok(result);
        }
        Ok(_) => {}
    }
    if let Err(e) = warm_up(lane, env, store, stem, workload, cache)? {
        result.status = Status::Failed(format!("warming the cache: {e}"));
        return Ok(result);
    }
    send(lane, env, stem, &call, workload, vintage, result)
}

// ---- the report --------------------------------------------------------------------

/// The binding a record's store names (`sqlite-vfs cache_size=N`, under the vintage beside
/// too; a former spelling of the store too), if it is a binding's search record.
pub(super) fn of_record(store: &str) -> Option<StoreKind> {
    let store = crate::stores::current_record(store);
    all().find(|k| {
        store
            .strip_prefix(k.def().record)
            .is_some_and(|rest| rest.starts_with(" cache_size="))
    })
}

/// A record's cache_size, from its store column.
fn cache_size_of(r: &ScenarioResult) -> Option<i64> {
    r.store
        .split_whitespace()
        .find_map(|f| f.strip_prefix("cache_size="))
        .and_then(|v| v.parse().ok())
}

/// What one binding's search gave one workload: its records under the engine's replica.
struct Of<'a> {
    /// The record store of its defaults.
    defaults: String,
    mine: Vec<&'a ScenarioResult>,
}

impl<'a> Of<'a> {
    fn new(report: &'a Report, binding: &Binding, w: &Workload) -> Of<'a> {
        let prefix = format!("{} cache_size=", binding.record);
        let mine = report
            .results
            .iter()
            .filter(|r| {
                w.picks(r) && r.store.starts_with(&prefix) && !r.store.contains(" replica=")
            })
            .collect();
        Of {
            defaults: binding.defaults.clone(),
            mine,
        }
    }

    /// At its defaults, in `cache`.
    fn defaults(&self, cache: CacheState) -> Option<&'a ScenarioResult> {
        self.mine
            .iter()
            .copied()
            .find(|r| r.cache == cache && r.store == self.defaults)
    }

    /// The cheapest that succeeded in `cache` (ties: the first measured).
    fn cheapest(&self, cache: CacheState) -> Option<&'a ScenarioResult> {
        self.mine
            .iter()
            .copied()
            .filter(|r| r.cache == cache && r.status == Status::Ok)
            .min_by_key(|r| r.instructions)
    }
}

/// The record measured beside `r` under `beside` (same store, state and workload).
fn beside_of<'a>(
    report: &'a Report,
    r: Option<&ScenarioResult>,
    beside: &str,
) -> Option<&'a ScenarioResult> {
    let r = r?;
    let store = format!("{} replica={beside}", r.store);
    report.results.iter().find(|x| {
        x.store == store
            && x.journal_mode == r.journal_mode
            && x.cache == r.cache
            && x.position == r.position
            && x.operation == r.operation
            && x.batch == r.batch
    })
}

fn cost(r: Option<&ScenarioResult>) -> String {
    match r {
        Some(r) if r.status == Status::Ok => thousands(r.instructions),
        Some(_) => "fails".into(),
        None => "-".into(),
    }
}

/// A store as the decision table names it, and its charge.
type Candidate = (String, u64);

/// The decision table's candidates of the bindings for workload `w`: at their defaults
/// (cold), and at their cheapest settings cold.
pub(super) fn decision_candidates(
    report: &Report,
    w: &Workload,
) -> (Vec<Candidate>, Vec<Candidate>) {
    let search: Search = report.extra(SEARCH).unwrap_or_default();
    let (mut at_defaults, mut tuned) = (Vec::new(), Vec::new());
    for b in &search.bindings {
        let of = Of::new(report, b, w);
        if let Some(d) = of
            .defaults(CacheState::Cold)
            .filter(|d| d.status == Status::Ok)
        {
            at_defaults.push((format!("{} (its defaults)", b.label), d.instructions));
        }
        if let Some(best) = of.cheapest(CacheState::Cold) {
            let size = cache_size_of(best).map_or("?".into(), signed);
            tuned.push((
                format!("{} (cache_size {size})", b.label),
                best.instructions,
            ));
        }
    }
    (at_defaults, tuned)
}

/// Per binding, workload and cache_size: cold and warm, warm over cold, and both under the
/// vintage beside. None without a binding's search.
pub fn binding_cache_table(report: &Report) -> Option<(String, Table)> {
    use Align::{Left, Right};
    let search: Search = report.extra(SEARCH).unwrap_or_default();
    if search.bindings.is_empty() {
        return None;
    }
    let beside = search.beside.clone().unwrap_or_default();
    let (under_cold, under_warm) = (
        format!("Cold under {beside}"),
        format!("Warm under {beside}"),
    );
    let mut columns = vec![
        ("Workload", Left),
        ("Store", Left),
        ("cache_size", Right),
        ("Cold", Right),
        ("Warm", Right),
        ("Warm over cold", Right),
        (
            "Wasm pages cold / warm (heap + stable, accessed/written)",
            Right,
        ),
    ];
    if !beside.is_empty() {
        columns.push((&under_cold, Right));
        columns.push((&under_warm, Right));
    }
    let mut t = table_of(&columns);
    for w in &WORKLOADS {
        for b in &search.bindings {
            let of = Of::new(report, b, w);
            let mut sizes: Vec<String> = Vec::new();
            for r in &of.mine {
                if !sizes.contains(&r.store) {
                    sizes.push(r.store.clone());
                }
            }
            for store in sizes {
                let at = |cache: CacheState| {
                    of.mine
                        .iter()
                        .copied()
                        .find(|r| r.store == store && r.cache == cache)
                };
                let (cold, warm) = (at(CacheState::Cold), at(CacheState::Warm));
                let size = cold
                    .or(warm)
                    .and_then(cache_size_of)
                    .map_or("?".into(), signed);
                let ratio = match (cold, warm) {
                    (Some(c), Some(w))
                        if c.status == Status::Ok
                            && w.status == Status::Ok
                            && c.instructions > 0 =>
                    {
                        format!("{:.2}", w.instructions as f64 / c.instructions as f64)
                    }
                    _ => "-".into(),
                };
                let pages = |r: Option<&ScenarioResult>| {
                    r.filter(|r| r.status == Status::Ok)
                        .map_or("-".into(), pages_cell)
                };
                let mut row = vec![
                    w.name.to_string(),
                    b.label.clone(),
                    if store == b.defaults {
                        format!("{size} (its binding's)")
                    } else {
                        size
                    },
                    cost(cold),
                    cost(warm),
                    ratio,
                    format!("{} / {}", pages(cold), pages(warm)),
                ];
                if !beside.is_empty() {
                    row.push(cost(beside_of(report, cold, &beside)));
                    row.push(cost(beside_of(report, warm, &beside)));
                }
                t.push(row);
            }
        }
    }
    let title = format!(
        "{}'s own settings: cache_size cold and warm, in a canister of its own (charged instructions per message)",
        search
            .bindings
            .iter()
            .map(|b| b.label.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Some((title, t))
}

/// Per workload and binding, the two SQLite bindings side by side, cold and warm (and
/// each under the vintage beside, at the same settings): the bench canister's (ic-rusqlite)
/// at its defaults and at the search's cheapest settings, the binding's at its defaults and
/// at its cheapest cache_size, and the first's cheapest over the second's. None without
/// both searches.
pub fn bindings_table<'a>(report: &'a Report) -> Option<(String, Table)> {
    use Align::{Left, Right};
    let search: Search = report.extra(SEARCH).unwrap_or_default();
    let beside = search.beside.clone().unwrap_or_default();
    let found = super::found(report);
    if search.bindings.is_empty() || found.iter().all(|f| f.defaults.is_none()) {
        return None;
    }
    let mut t = table_of(&[
        ("Workload", Left),
        ("Cache", Left),
        ("Replica", Left),
        ("ic-rusqlite at defaults", Right),
        ("ic-rusqlite at its cheapest", Right),
        ("Store", Left),
        ("At defaults", Right),
        ("At its cheapest", Right),
        ("ic-rusqlite's cheapest over it", Right),
    ]);
    let own = report
        .extra::<String>(crate::report::REPLICA)
        .unwrap_or_else(|| "the run's".into());
    for (w, f) in WORKLOADS.iter().zip(&found) {
        // ic-rusqlite warm: the search measured cache_size warm at the cheapest cold settings
        // (so at the defaults only where those are the defaults).
        let warm: Vec<&ScenarioResult> = report
            .results
            .iter()
            .filter(|r| {
                w.picks(r)
                    && !r.cache.is_cold()
                    && super::is_search_record(&r.store)
                    && super::beside::value_size(r).is_none()
                    && !r.store.contains(" replica=")
            })
            .collect();
        let rusqlite = |cache: CacheState| -> (Option<&ScenarioResult>, Option<&ScenarioResult>) {
            if cache.is_cold() {
                (f.defaults, f.best)
            } else {
                let defaults = f.defaults.and_then(|d| {
                    warm.iter()
                        .copied()
                        .find(|r| r.store == d.store && r.journal_mode == d.journal_mode)
                });
                let best = warm
                    .iter()
                    .copied()
                    .filter(|r| r.status == Status::Ok)
                    .min_by_key(|r| r.instructions);
                (defaults, best)
            }
        };
        for b in &search.bindings {
            let of = Of::new(report, b, w);
            for cache in [CacheState::Cold, CacheState::Warm] {
                let (rd, rb) = rusqlite(cache);
                let (vd, vb) = (of.defaults(cache), of.cheapest(cache));
                if [rd, rb, vd, vb].iter().all(Option::is_none) {
                    continue;
                }
                let mut vintages = vec![(own.clone(), None)];
                if !beside.is_empty() {
                    vintages.push((beside.clone(), Some(beside.as_str())));
                }
                for (name, under) in vintages {
                    let at = |r: Option<&'a ScenarioResult>| match under {
                        Some(v) => beside_of(report, r, v),
                        None => r,
                    };
                    let (rd, rb, vd, vb) = (at(rd), at(rb), at(vd), at(vb));
                    let ratio = match (rb, vb) {
                        (Some(r), Some(v)) if r.status == Status::Ok && v.status == Status::Ok => {
                            gain(r.instructions, v.instructions)
                        }
                        _ => "-".into(),
                    };
                    t.push(vec![
                        w.name.to_string(),
                        cache.to_string(),
                        name,
                        cost(rd),
                        cost(rb),
                        b.label.clone(),
                        cost(vd),
                        cost(vb),
                        ratio,
                    ]);
                }
            }
        }
    }
    Some((
        "The two SQLite bindings: the bench canister's (ic-rusqlite) against another's, each at its defaults and at its cheapest settings found, cold and warm (charged instructions per message; under the vintage beside, the same settings)".to_string(),
        t,
    ))
}

/// The lines the report's "What was searched" adds after "Not searched", per binding.
pub(super) fn searched_lines(search: &Search) -> Vec<String> {
    search
        .bindings
        .iter()
        .map(|b| {
            format!(
                "Fixed by {}, not searched: {}.",
                b.label,
                b.fixed.join("; ")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ic_sqlite_vfs_leaves_a_canister_cache_size_alone() {
        let vfs: Vec<StoreKind> = all().collect();
        assert_eq!(
            vfs.iter().map(|k| k.name()).collect::<Vec<_>>(),
            ["sqlite-vfs"]
        );
        // What the search varies for it: the one knob its binding does not fix (a binding
        // that left more would need them searched too).
        assert_eq!(searchable(vfs[0]), [Knob::CacheSize]);
        assert_eq!(
            of_record("sqlite-vfs cache_size=-32768 replica=2026-05"),
            Some(vfs[0])
        );
        assert_eq!(of_record("sqlite page_size=4096 cache_size=500000"), None);
        assert_eq!(of_record("sqlite-vfs"), None);
        // A record of a run before the store column said sqlite-vfs.
        assert_eq!(of_record("sqlite_vfs cache_size=-32768"), Some(vfs[0]));
    }
}
