//! The tune report's tables, from the report's records alone (so a merged or reloaded report
//! renders): the cheapest configuration per workload, the decision table, the tune variant's
//! stores, every configuration and the page maps.

use super::beside::{value_size, with_size};
use super::binding;
use super::{
    gain, is_search_record, pages_cell, signed, value_bound, variant_of_record, variants, Search,
    Setting, SEARCH, SEARCHED, VALUE_SIZES_OF, WORKLOADS,
};
use crate::report::format::thousands;
use crate::report::{Align, Block, Document, Report, ScenarioResult, Status, Table};
use crate::suites::grid::table_of;
use crate::suites::scenario::StoreKind;
use bench_types::pragma::Synchronous;

/// The cheapest configuration of each workload in `report`, with the defaults' record and
/// the two records beside them: (workload, defaults, best, defaults beside, best beside).
pub struct Found<'a> {
    pub workload: &'static str,
    pub defaults: Option<&'a ScenarioResult>,
    pub best: Option<&'a ScenarioResult>,
    pub defaults_beside: Option<&'a ScenarioResult>,
    pub best_beside: Option<&'a ScenarioResult>,
}

/// Per workload, from the report's records alone (so a merged or reloaded report renders).
pub fn found(report: &Report) -> Vec<Found<'_>> {
    let search: Search = report.extra(SEARCH).unwrap_or_default();
    let beside_suffix = search.beside.as_ref().map(|v| format!(" replica={v}"));
    let is_beside = |r: &ScenarioResult| r.store.contains(" replica=");
    WORKLOADS
        .iter()
        .map(|w| {
            let mine: Vec<&ScenarioResult> = report
                .results
                .iter()
                .filter(|r| w.picks(r) && !is_beside(r) && is_sqlite(r))
                .collect();
            let defaults = mine
                .iter()
                .copied()
                .find(|r| (r.store.clone(), r.journal_mode.clone()) == search.defaults);
            let best = mine
                .iter()
                .copied()
                .filter(|r| r.status == Status::Ok)
                .min_by_key(|r| r.instructions);
            let beside_of = |of: Option<&ScenarioResult>| {
                let (of, suffix) = (of?, beside_suffix.as_ref()?);
                let store = format!("{}{suffix}", of.store);
                report.results.iter().find(|r| {
                    w.picks(r)
                        && r.store == store
                        && r.journal_mode == of.journal_mode
                        && r.cache.is_cold()
                })
            };
            Found {
                workload: w.name,
                defaults,
                best,
                defaults_beside: beside_of(defaults),
                best_beside: beside_of(best),
            }
        })
        .collect()
}

/// A record of the SQLite search (the other stores' carry their kind as the store, and
/// SQLite's at another value size its size).
pub(super) fn is_sqlite(r: &ScenarioResult) -> bool {
    is_search_record(&r.store) && value_size(r).is_none() && r.cache.is_cold()
}

/// The decision table: per workload the cheapest store with every store at its defaults,
/// and with SQLite at the settings the search found cheapest (the other stores have none).
pub fn decision_table(report: &Report) -> Option<Table> {
    use Align::{Left, Right};
    let others: Vec<&ScenarioResult> = report
        .results
        .iter()
        .filter(|r| {
            !is_search_record(&r.store)
                && binding::of_record(&r.store).is_none()
                && value_size(r).is_none()
                && !r.store.contains(" replica=")
                && r.status == Status::Ok
        })
        .collect();
    if others.is_empty() {
        return None;
    }
    let mut t = table_of(&[
        ("Workload", Left),
        ("Cheapest at defaults", Left),
        ("Its cost", Right),
        ("Cheapest with tuned settings", Left),
        ("Its cost", Right),
        ("Gain", Right),
    ]);
    for (w, f) in WORKLOADS.iter().zip(found(report)) {
        let mine: Vec<&ScenarioResult> = others.iter().copied().filter(|r| w.picks(r)).collect();
        let mut at_defaults: Vec<(String, u64)> = mine
            .iter()
            .filter(|r| variant_of_record(&r.store).is_none())
            .map(|r| (other_label(r), r.instructions))
            .collect();
        if let Some(d) = f.defaults.filter(|d| d.status == Status::Ok) {
            at_defaults.push(("SQLite (its defaults)".into(), d.instructions));
        }
        let mut tuned: Vec<(String, u64)> = mine
            .iter()
            .map(|r| (other_label(r), r.instructions))
            .collect();
        if let Some(b) = f.best {
            tuned.push((format!("SQLite ({})", describe_record(b)), b.instructions));
        }
        let (binding_defaults, binding_tuned) = binding::decision_candidates(report, w);
        at_defaults.extend(binding_defaults);
        tuned.extend(binding_tuned);
        let cheapest = |v: &[(String, u64)]| v.iter().min_by_key(|(_, c)| *c).cloned();
        let (Some(d), Some(t2)) = (cheapest(&at_defaults), cheapest(&tuned)) else {
            continue;
        };
        t.push(vec![
            w.name.to_string(),
            d.0.clone(),
            thousands(d.1),
            t2.0.clone(),
            thousands(t2.1),
            gain(d.1, t2.1),
        ]);
    }
    Some(t)
}

/// A record of the other stores (the tune variant's among them), as tables name it.
pub(super) fn other_label(r: &ScenarioResult) -> String {
    crate::stores::label(&r.store, &r.journal_mode)
}

/// The heap map and the StableBTreeMap in the default module and in the tune variant, per
/// workload: the charge, against the same store in the default module, the store work, the
/// pages, the memory held, and the charge under the vintage beside.
pub fn variants_table(report: &Report) -> Option<Table> {
    use Align::{Left, Right};
    let search: Search = report.extra(SEARCH).unwrap_or_default();
    let beside = search.beside.clone().unwrap_or_default();
    let is_beside = |r: &ScenarioResult| r.store.contains(" replica=");
    if !report
        .results
        .iter()
        .any(|r| !is_beside(r) && variant_of_record(&r.store).is_some())
    {
        return None;
    }
    let columns = [
        ("Workload", Left),
        ("Store", Left),
        ("Charged", Right),
        ("Against the default module", Right),
        ("Store work", Right),
        ("Wasm pages (heap + stable, accessed/written)", Right),
        ("Memory held", Right),
    ];
    let mut t = table_beside(&columns, &beside, &format!("Under {beside}"));
    for w in &WORKLOADS {
        let mine: Vec<&ScenarioResult> = report
            .results
            .iter()
            .filter(|r| {
                w.picks(r)
                    && !is_beside(r)
                    && !is_search_record(&r.store)
                    && binding::of_record(&r.store).is_none()
                    && value_size(r).is_none()
            })
            .collect();
        for r in &mine {
            let base =
                variant_of_record(&r.store).map_or(r.store.as_str(), |v| v.base().def().record);
            let default = mine.iter().find(|d| d.store == base);
            let ok = r.status == Status::Ok;
            let against = match default {
                Some(d) if ok && d.status == Status::Ok && d.store != r.store => {
                    gain(d.instructions, r.instructions)
                }
                _ => "-".into(),
            };
            let mut row = vec![
                w.name.to_string(),
                other_label(r),
                if ok {
                    thousands(r.instructions)
                } else {
                    "fails".into()
                },
                against,
                if ok {
                    thousands(r.store_instructions)
                } else {
                    "-".into()
                },
                pages_cell(r),
                if ok {
                    format!("{} MB", thousands(r.bytes / 1_000_000))
                } else {
                    "-".into()
                },
            ];
            if !beside.is_empty() {
                let store = format!("{} replica={beside}", r.store);
                let old = report
                    .results
                    .iter()
                    .find(|x| w.picks(x) && x.store == store);
                row.push(match old {
                    Some(x) if x.status == Status::Ok => thousands(x.instructions),
                    Some(_) => "fails".into(),
                    None => "-".into(),
                });
            }
            t.push(row);
        }
    }
    Some(t)
}

/// `Store label` + journal mode back to the setting's description.
pub(super) fn describe_record(r: &ScenarioResult) -> String {
    let mut parts = Vec::new();
    for field in r.store.split_whitespace().skip(1) {
        if let Some((name, value)) = field.split_once('=') {
            if name == "replica" {
                continue;
            }
            let value = match value.parse::<i64>() {
                Ok(n) => signed(n),
                Err(_) => value.to_string(),
            };
            parts.push((name.to_string(), value));
        }
    }
    let get = |name: &str| {
        parts
            .iter()
            .find(|(n, _)| n == name)
            .map_or("?".to_string(), |(_, v)| v.clone())
    };
    format!(
        "page_size {}, cache_size {}, {}, synchronous {}",
        get("page_size"),
        get("cache_size"),
        r.journal_mode,
        get("synchronous")
    )
}

/// The table of `columns`, with a last one headed `under` when the run measured a vintage
/// beside (`beside` names it, empty when none).
fn table_beside(columns: &[(&str, Align)], beside: &str, under: &str) -> Table {
    let mut columns = columns.to_vec();
    if !beside.is_empty() {
        columns.push((under, Align::Right));
    }
    table_of(&columns)
}

/// The table of the cheapest configuration per workload.
pub fn cheapest_table(report: &Report) -> Table {
    use Align::{Left, Right};
    let search: Search = report.extra(SEARCH).unwrap_or_default();
    let beside = search.beside.clone().unwrap_or_default();
    let columns = [
        ("Workload", Left),
        ("At defaults", Right),
        ("Cheapest settings found", Left),
        ("Its cost", Right),
        ("Gain", Right),
        ("Store work", Right),
        ("Wasm pages (heap + stable, accessed/written)", Right),
    ];
    let under = format!("Under {beside}: defaults → these settings");
    let mut t = table_beside(&columns, &beside, &under);
    for f in found(report) {
        let cost = |r: Option<&ScenarioResult>| match r {
            Some(r) if r.status == Status::Ok => thousands(r.instructions),
            Some(_) => "fails".into(),
            None => "-".into(),
        };
        let mut row = vec![
            f.workload.to_string(),
            cost(f.defaults),
            f.best.map_or("-".into(), describe_record),
            cost(f.best),
            match (f.defaults, f.best) {
                (Some(d), Some(b)) if d.status == Status::Ok => {
                    gain(d.instructions, b.instructions)
                }
                _ => "-".into(),
            },
            f.best
                .map_or("-".into(), |b| thousands(b.store_instructions)),
            f.best.map_or("-".into(), pages_cell),
        ];
        if !beside.is_empty() {
            row.push(format!(
                "{} → {}",
                cost(f.defaults_beside),
                cost(f.best_beside)
            ));
        }
        t.push(row);
    }
    t
}

/// Every configuration measured under the engine's replica: charged instructions per
/// workload.
pub(super) fn every_configuration(report: &Report) -> Table {
    let mut headers = vec!["Settings".to_string()];
    headers.extend(WORKLOADS.iter().map(|w| w.name.to_string()));
    let mut aligns = vec![Align::Left];
    aligns.extend(WORKLOADS.iter().map(|_| Align::Right));
    let mut t = Table::with_aligns(headers, aligns);
    let mut seen: Vec<(String, String)> = Vec::new();
    for r in &report.results {
        let key = (r.store.clone(), r.journal_mode.clone());
        if r.store.contains(" replica=") || !is_sqlite(r) || seen.contains(&key) {
            continue;
        }
        seen.push(key.clone());
        let mut row = vec![describe_record(r)];
        for w in &WORKLOADS {
            let cell = report.results.iter().find(|x| {
                w.picks(x) && (x.store.clone(), x.journal_mode.clone()) == key && x.cache.is_cold()
            });
            row.push(match cell {
                Some(x) if x.status == Status::Ok => thousands(x.instructions),
                Some(x) => match &x.status {
                    Status::Refused(_) => "refused".into(),
                    _ => "fails".into(),
                },
                None => "-".into(),
            });
        }
        t.push(row);
    }
    t
}

pub(super) fn document(report: &Report) -> Document {
    let search: Search = report.extra(SEARCH).unwrap_or_default();
    let mut doc = Document::default();
    if let Some(t) = decision_table(report) {
        doc.push_table(
            "Which store is cheapest, at defaults and tuned (SQLite's settings searched, the tune variant's stores beside; charged instructions per message)",
            t,
        );
    }
    // Without the bench canister's SQLite (another binding's alone), no search of it ran.
    let bench_sqlite = found(report)
        .iter()
        .any(|f| f.defaults.is_some() || f.best.is_some());
    if bench_sqlite {
        doc.push_table(
            "Cheapest SQLite settings per workload (charged instructions per message)",
            cheapest_table(report),
        );
    }
    if let Some(t) = variants_table(report) {
        doc.push_table(
            "The heap map's allocator and the StableBTreeMap's value type: the default module against the tune variant (charged instructions per message)",
            t,
        );
    }
    if let Some(t) = by_value_size_table(report) {
        doc.push_table(
            "The StableBTreeMap by value size, each store at its defaults and filled alone at that size (charged instructions per message)",
            t,
        );
        for blocks in [&mut doc.markdown, &mut doc.terminal] {
            blocks.push(Block::Text(format!(
                "A value size is the data's, not a setting: the decision table's tuned column keeps every store at the run's {}-byte payload. Against {} bytes: the StableBTreeMap's charge at the run's size over this one (above 1: cheaper).\n",
                report.workload().payload_size, report.workload().payload_size
            )));
        }
    }
    if let Some(t) = warm_cache_size_table(report) {
        doc.push_table(
            "cache_size warm (the whole table read into the cache, then one message of the workload) against cold, at each workload's cheapest settings (charged instructions per message)",
            t,
        );
    }
    for (title, t) in [
        binding::binding_cache_table(report),
        binding::bindings_table(report),
    ]
    .into_iter()
    .flatten()
    {
        doc.push_table(&title, t);
    }
    let mut apply = String::from(
        "To apply a setting to the bench canister: `dfx canister call bench clear_sqlite` (a new page_size needs an empty table), then `dfx canister call bench configure_sqlite` with the settings, e.g.\n",
    );
    if let Some(best) = found(report).into_iter().find_map(|f| f.best) {
        if let Some(setting) = parse_setting(best) {
            apply.push_str(&format!(
                "`dfx canister call bench configure_sqlite '{}'`\n",
                setting.candid()
            ));
        }
    }
    let mut searched = String::from("What was searched:\n");
    for s in &search.stages {
        searched.push_str(&format!("{s}\n"));
    }
    searched.push_str("Not searched: ");
    searched.push_str(&search.not_searched.join("; "));
    searched.push('\n');
    for line in binding::searched_lines(&search) {
        searched.push_str(&format!("{line}\n"));
    }
    for blocks in [&mut doc.markdown, &mut doc.terminal] {
        if bench_sqlite {
            blocks.push(Block::Text(apply.clone()));
        }
        blocks.push(Block::Text(searched.clone()));
    }
    if let Some(maps) = page_maps(report) {
        doc.markdown.push(Block::Heading {
            level: 2,
            text: "Where the pages are: the defaults against the cheapest settings".into(),
        });
        doc.markdown.push(Block::Text(
            "The Wasm pages of heap and stable memory each message touched (red: written), for the workloads whose measurements `--profile` selected; hover a page for the function that touched it first.\n".into(),
        ));
        doc.markdown.push(Block::Table(maps));
    }
    doc.markdown.push(Block::Heading {
        level: 2,
        text: "Every configuration measured (charged instructions per message)".into(),
    });
    doc.markdown.push(Block::Table(every_configuration(report)));
    doc
}

/// Per workload whose defaults and cheapest settings were both profiled, their page maps
/// side by side (the files `--profile` writes beside each profile).
pub(super) fn page_maps(report: &Report) -> Option<Table> {
    let mut t = table_of(&[
        ("Workload", Align::Left),
        ("At the defaults", Align::Left),
        ("With the cheapest settings", Align::Left),
    ]);
    let mut any = false;
    for f in found(report) {
        let (Some(d), Some(b)) = (f.defaults, f.best) else {
            continue;
        };
        if d.profile.is_empty() || b.profile.is_empty() {
            continue;
        }
        let image = |r: &ScenarioResult, what: &str| {
            format!(
                "![{what}]({})",
                crate::report::profiles::page_map_file(&r.profile)
            )
        };
        t.push(vec![
            f.workload.to_string(),
            image(d, "the defaults"),
            image(b, &describe_record(b)),
        ]);
        any = true;
    }
    any.then_some(t)
}

/// The setting a record was measured with.
pub(super) fn parse_setting(r: &ScenarioResult) -> Option<Setting> {
    let mut page_size = None;
    let mut cache_size = None;
    let mut synchronous = None;
    for field in r.store.split_whitespace().skip(1) {
        match field.split_once('=')? {
            ("page_size", v) => page_size = v.parse().ok(),
            ("cache_size", v) => cache_size = v.parse().ok(),
            ("synchronous", v) => synchronous = Synchronous::from_name(v),
            _ => {}
        }
    }
    Some(Setting {
        page_size: page_size?,
        cache_size: cache_size?,
        journal_mode: r.journal_mode.parse().ok()?,
        synchronous: synchronous?,
    })
}

/// The default module's stores beside the search other than the one the value sizes
/// measure, at their defaults (the heap map): those without journal modes.
fn default_others() -> Vec<StoreKind> {
    StoreKind::ALL
        .into_iter()
        .filter(|&k| {
            k != VALUE_SIZES_OF && k != SEARCHED && !binding::is_binding(k) && k.measured_by("tune")
        })
        .collect()
}

/// Per workload and value size (the run's among them): the StableBTreeMap's charge, against
/// the run's size, its pages, memory held and charge under the vintage beside; then the
/// other stores' charges and the cheapest store at defaults. None without value sizes.
pub(super) fn by_value_size_table(report: &Report) -> Option<Table> {
    use Align::{Left, Right};
    let search: Search = report.extra(SEARCH).unwrap_or_default();
    if search.value_sizes.is_empty() {
        return None;
    }
    let base = report.workload().payload_size;
    let mut sizes = search.value_sizes.clone();
    sizes.push(base);
    sizes.sort_unstable();
    let beside = search.beside.clone().unwrap_or_default();
    let against = format!("Against {base} bytes");
    let under = format!("Under {beside}");
    let mut columns = vec![
        ("Workload", Left),
        ("Value size", Right),
        ("StableBTreeMap", Right),
        (&against, Right),
        ("Wasm pages (heap + stable, accessed/written)", Right),
        ("Memory held", Right),
    ];
    if !beside.is_empty() {
        columns.push((&under, Right));
    }
    // Beside the store the value sizes measure: the variants with a bounded value type, the
    // default module's other stores without settings, and the searched store at its
    // defaults.
    let (searched, _) = &search.defaults;
    let mut others: Vec<(&str, String)> = variants()
        .into_iter()
        .filter(|&v| value_bound(v).is_some())
        .map(|v| (v.def().record, v.label().to_string()))
        .collect();
    let defaults = default_others();
    others.extend(
        defaults
            .iter()
            .map(|k| (k.def().record, k.label().to_string())),
    );
    let searched_label = format!("{} (its defaults)", SEARCHED.label());
    others.push((searched.as_str(), searched_label.clone()));
    columns.extend(others.iter().map(|(_, label)| (label.as_str(), Right)));
    columns.push(("Cheapest at defaults", Left));
    let mut t = table_of(&columns);
    for w in &WORKLOADS {
        // A store's record at a size (the run's own at the base size), under `vintage`'s
        // suffix.
        let find = |store: &str, size: u64, suffix: &str| {
            let store = if size == base {
                format!("{store}{suffix}")
            } else {
                format!("{}{suffix}", with_size(store, size))
            };
            report
                .results
                .iter()
                .find(|r| w.picks(r) && r.store == store)
        };
        let cost = |r: Option<&ScenarioResult>| match r {
            Some(r) if r.status == Status::Ok => thousands(r.instructions),
            Some(_) => "fails".into(),
            None => "-".into(),
        };
        let btree = VALUE_SIZES_OF.def().record;
        let at_base = find(btree, base, "").filter(|r| r.status == Status::Ok);
        for &size in &sizes {
            let r = find(btree, size, "");
            let ok = r.filter(|r| r.status == Status::Ok);
            let mut row = vec![
                w.name.to_string(),
                thousands(size),
                cost(r),
                match (at_base, ok) {
                    (Some(b), Some(r)) if size != base => gain(b.instructions, r.instructions),
                    _ => "-".into(),
                },
                ok.map_or("-".into(), pages_cell),
                ok.map_or("-".into(), |r| {
                    format!("{} MB", thousands(r.bytes / 1_000_000))
                }),
            ];
            if !beside.is_empty() {
                row.push(cost(find(btree, size, &format!(" replica={beside}"))));
            }
            row.extend(others.iter().map(|(store, _)| cost(find(store, size, ""))));
            // At defaults: the default module's stores, as the decision table counts them.
            let cheapest = std::iter::once((btree, crate::stores::label(btree, "")))
                .chain(
                    defaults
                        .iter()
                        .map(|k| (k.def().record, crate::stores::label(k.def().record, ""))),
                )
                .chain([(searched.as_str(), searched_label.clone())])
                .filter_map(|(s, label)| {
                    let r = find(s, size, "").filter(|r| r.status == Status::Ok)?;
                    Some((r.instructions, label))
                })
                .min_by_key(|(cost, _)| *cost);
            row.push(cheapest.map_or("-".into(), |(_, label)| label));
            t.push(row);
        }
    }
    Some(t)
}

/// Per workload, each cache_size measured warm at its cheapest cold settings, with the
/// same settings cold beside (when the search measured them); None without warm records.
pub fn warm_cache_size_table(report: &Report) -> Option<Table> {
    use Align::{Left, Right};
    let warm: Vec<&ScenarioResult> = report
        .results
        .iter()
        .filter(|r| {
            !r.cache.is_cold()
                && !r.store.contains(" replica=")
                && binding::of_record(&r.store).is_none()
        })
        .collect();
    if warm.is_empty() {
        return None;
    }
    let mut t = table_of(&[
        ("Workload", Left),
        ("cache_size", Right),
        ("Warm", Right),
        ("Cold", Right),
        ("Warm over cold", Right),
    ]);
    let cost = |r: Option<&ScenarioResult>| match r {
        Some(r) if r.status == Status::Ok => thousands(r.instructions),
        Some(_) => "fails".into(),
        None => "-".into(),
    };
    for w in &WORKLOADS {
        for r in warm.iter().copied().filter(|r| w.picks(r)) {
            let cold = report.results.iter().find(|x| {
                w.picks(x)
                    && x.cache.is_cold()
                    && x.store == r.store
                    && x.journal_mode == r.journal_mode
            });
            let ratio = match cold {
                Some(c)
                    if c.status == Status::Ok && r.status == Status::Ok && c.instructions > 0 =>
                {
                    format!("{:.2}", r.instructions as f64 / c.instructions as f64)
                }
                _ => "-".into(),
            };
            t.push(vec![
                w.name.to_string(),
                parse_setting(r).map_or("-".into(), |s| thousands_signed(s.cache_size)),
                cost(Some(r)),
                cost(cold),
                ratio,
            ]);
        }
    }
    Some(t)
}

/// A cache_size as SQLite reads it: pages, or KiB when negative.
fn thousands_signed(n: i64) -> String {
    if n < 0 {
        format!("-{}", thousands(n.unsigned_abs()))
    } else {
        thousands(n as u64)
    }
}
