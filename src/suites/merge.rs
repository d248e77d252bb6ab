//! `icbench merge`: joins the output directories of `--shard K/N` runs into the report one
//! unsharded run writes. Each part's results.json carries a [`ShardInfo`]: which scenarios
//! it ran and how many rows each added, and hashes of the plan, the settings and the
//! module, so that parts of different runs are refused rather than mixed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;

use super::pool::{self, ShardInfo, SHARD};
use super::{Suite, REGISTRY};
use crate::report::{self, Provenance, Report, PROVENANCE};

/// One suite's joined report.
pub struct Merged {
    pub suite: &'static dyn Suite,
    pub report: Report,
    /// The parts' profile files (`--profile`): each folded file where a part wrote it and
    /// the path its `profile` column gives, relative to the joined directory as to the
    /// part's. Its flame graph is beside it, with the extension `svg`.
    pub profiles: Vec<(PathBuf, String)>,
}

/// One directory's parts, a suite each.
type SuiteParts = Vec<(&'static dyn Suite, Part)>;

/// A part as read: where from (the directory as given, and its results.json), its report
/// and its shard facts.
struct Part {
    dir: PathBuf,
    path: PathBuf,
    report: Report,
    info: ShardInfo,
}

/// Reads every suite's results.json under each of `dirs` (as `--out` laid them out) and
/// joins each suite's shards.
pub fn merge(dirs: &[PathBuf]) -> Result<Vec<Merged>> {
    if dirs.is_empty() {
        bail!("no directories to merge");
    }
    let mut by_dir: Vec<(&PathBuf, SuiteParts)> = Vec::new();
    for dir in dirs {
        let mut found = Vec::new();
        for &suite in REGISTRY.iter() {
            let path = suite.out_dir(dir).join("results.json");
            if !path.is_file() {
                continue;
            }
            found.push((suite, read_part(dir, &path, suite)?));
        }
        if found.is_empty() {
            bail!(
                "{}: no results.json of any suite (give the --out directories of `icbench --shard K/N` runs)",
                dir.display()
            );
        }
        by_dir.push((dir, found));
    }
    let names = |parts: &[(&'static dyn Suite, Part)]| -> Vec<&str> {
        parts.iter().map(|(s, _)| s.name()).collect()
    };
    let first = names(&by_dir[0].1);
    for (dir, parts) in &by_dir[1..] {
        if names(parts) != first {
            bail!(
                "the shards ran different suites: {} has {}, {} has {}",
                by_dir[0].0.display(),
                first.join(", "),
                dir.display(),
                names(parts).join(", ")
            );
        }
    }
    let mut per_suite: Vec<(&'static dyn Suite, Vec<Part>)> =
        by_dir[0].1.iter().map(|(s, _)| (*s, Vec::new())).collect();
    for (_, parts) in by_dir {
        for (i, (_, part)) in parts.into_iter().enumerate() {
            per_suite[i].1.push(part);
        }
    }
    per_suite
        .into_iter()
        .map(|(suite, parts)| {
            let profiles = parts
                .iter()
                .flat_map(|part| {
                    let dir = part.path.parent().unwrap_or(Path::new("."));
                    part.report
                        .results
                        .iter()
                        .filter(|r| !r.profile.is_empty())
                        .map(move |r| (dir.join(&r.profile), r.profile.clone()))
                })
                .collect();
            Ok(Merged {
                suite,
                report: join(parts)?,
                profiles,
            })
        })
        .collect()
}

fn read_part(dir: &Path, path: &Path, suite: &dyn Suite) -> Result<Part> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let report = report::from_json(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    if report.suite != suite.name() {
        bail!(
            "{}: a report of suite {}, where suite {} writes its results",
            path.display(),
            report.suite,
            suite.name()
        );
    }
    let info = match report.extra.get(SHARD) {
        None => bail!(
            "{} is not a shard: it was run without --shard K/N",
            path.display()
        ),
        Some(v) => serde_json::from_value::<ShardInfo>(v.clone())
            .map_err(|e| anyhow!("{}: its shard record is damaged: {e}", path.display()))?,
    };
    Ok(Part {
        dir: dir.to_path_buf(),
        path: path.to_path_buf(),
        report,
        info,
    })
}

/// A field of `Report::extra` that is one run's setting, which every shard must share: not
/// its shard record, nor a per-scenario list, nor its provenance (shards may run on
/// different machines; their modules are in the shard record).
fn shared_field(name: &str, lists: &BTreeSet<String>) -> bool {
    name != SHARD && name != PROVENANCE && !lists.contains(name)
}

/// The names of `Report::extra` that hold per-scenario lists in these parts.
fn list_names(parts: &[Part]) -> BTreeSet<String> {
    parts
        .iter()
        .flat_map(|p| p.info.parts.iter().flat_map(|s| s.lists.keys().cloned()))
        .collect()
}

/// What every shard of one run has in common, by name, for naming a difference.
fn common_facts(part: &Part, lists: &BTreeSet<String>) -> Vec<(&'static str, Value)> {
    let r = &part.report;
    let i = &part.info;
    let extra: BTreeMap<&String, &Value> = r
        .extra
        .iter()
        .filter(|(k, _)| shared_field(k, lists))
        .collect();
    vec![
        (
            "the canister module (SHA-256)",
            Value::from(i.module.clone()),
        ),
        ("the engine", Value::from(r.engine.clone())),
        ("the shard count", Value::from(i.count)),
        ("the plan's scenarios", Value::from(i.plan.clone())),
        ("the settings", Value::from(i.settings.clone())),
        ("rows", Value::from(r.workload.map(|w| w.rows_before))),
        ("the seed", Value::from(r.workload.map(|w| w.seed))),
        (
            "the payload size",
            Value::from(r.workload.map(|w| w.payload_size)),
        ),
        ("the notes", Value::from(r.notes.clone())),
        (
            "the suite's data",
            serde_json::to_value(extra).expect("JSON values"),
        ),
        (
            "the setup's instructions",
            Value::from(i.setup_instructions),
        ),
    ]
}

/// The settings a part's report shows, by name: what a person reads to tell two runs apart
/// (the hashes of [`common_facts`] say only that something differs). Those of every report
/// first, then the suite's data (replica, host, layout, ...) by name.
fn visible_settings(part: &Part, lists: &BTreeSet<String>) -> Vec<(String, Value)> {
    let r = &part.report;
    let thousands = |n: u64| Value::from(report::format::thousands(n));
    let mut settings = Vec::new();
    if let Some(w) = r.workload {
        settings.extend([
            ("rows".to_string(), thousands(w.rows_before)),
            ("seed".to_string(), Value::from(w.seed)),
            ("payload size".to_string(), thousands(w.payload_size)),
        ]);
    }
    settings.extend([
        ("engine".to_string(), Value::from(r.engine.clone())),
        ("shard count".to_string(), Value::from(part.info.count)),
    ]);
    settings.extend(
        r.extra
            .iter()
            .filter(|(k, _)| shared_field(k, lists))
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    settings
}

/// How `b` differs from `a` in the settings they show, one phrase each
/// (`rows 2,000 (part1) against 4,000 (part2)`); empty when they show the same.
fn visible_differences(a: &Part, b: &Part, lists: &BTreeSet<String>) -> Vec<String> {
    let (sa, sb) = (visible_settings(a, lists), visible_settings(b, lists));
    let get = |s: &[(String, Value)], name: &str| -> Option<Value> {
        s.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
    };
    let mut names: Vec<&String> = sa.iter().map(|(n, _)| n).collect();
    names.extend(sb.iter().map(|(n, _)| n).filter(|n| get(&sa, n).is_none()));
    let (da, db) = (a.dir.display(), b.dir.display());
    let shown = |v: &Option<Value>| match v {
        None => Some("(none)".to_string()),
        Some(Value::String(s)) => Some(s.clone()),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => Some(v.to_string()),
        Some(_) => None,
    };
    names
        .into_iter()
        .filter_map(|n| {
            let (va, vb) = (get(&sa, n), get(&sb, n));
            (va != vb).then(|| match (shown(&va), shown(&vb)) {
                (Some(va), Some(vb)) => format!("{n} {va} ({da}) against {vb} ({db})"),
                _ => format!("{n} (see the results.json of {da} and {db})"),
            })
        })
        .collect()
}

fn join(mut parts: Vec<Part>) -> Result<Report> {
    let lists = list_names(&parts);
    let reference = common_facts(&parts[0], &lists);
    for p in &parts[1..] {
        let differences = visible_differences(&parts[0], p, &lists);
        if !differences.is_empty() {
            bail!(
                "the shards are of different runs: {}",
                differences.join("; ")
            );
        }
        // Nothing shown differs: name what does, if only by its hash.
        for ((what, a), (_, b)) in reference.iter().zip(common_facts(p, &lists)) {
            if *a != b {
                let shown = |v: &Value| match v {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => "(see the files)".into(),
                };
                bail!(
                    "{} and {} are not shards of one run: they differ in {what} ({} vs {})",
                    parts[0].path.display(),
                    p.path.display(),
                    shown(a),
                    shown(&b)
                );
            }
        }
    }
    let count = parts[0].info.count;
    let covered: Vec<(usize, &Path)> = parts
        .iter()
        .map(|p| (p.info.index, p.path.as_path()))
        .collect();
    pool::check_parts_cover(&covered, count)?;
    parts.sort_by_key(|p| p.info.index);

    // Every scenario's rows and list items, keyed by its place in the plan.
    type Rows = (Vec<report::ScenarioResult>, BTreeMap<String, Vec<Value>>);
    let mut by_scenario: BTreeMap<usize, Rows> = BTreeMap::new();
    let scenarios = parts[0].info.scenarios;
    for p in &parts {
        let damaged = |what: &str| {
            anyhow!(
                "{}: {what}; the file was changed after the run",
                p.path.display()
            )
        };
        let expected: Vec<usize> = (0..scenarios)
            .filter(|i| i % count == p.info.index - 1)
            .collect();
        let got: Vec<usize> = p.info.parts.iter().map(|s| s.scenario).collect();
        if got != expected {
            return Err(damaged("its scenarios are not those of its shard"));
        }
        let mut rows = p.report.results.iter();
        let mut items: BTreeMap<&String, std::slice::Iter<Value>> = BTreeMap::new();
        for name in &lists {
            let list = match p.report.extra.get(name) {
                Some(Value::Array(items)) => items.iter(),
                Some(_) => return Err(damaged(&format!("{name} is not a list"))),
                None => [].iter(),
            };
            items.insert(name, list);
        }
        for s in &p.info.parts {
            let mine: Vec<_> = rows.by_ref().take(s.results).cloned().collect();
            if mine.len() != s.results {
                return Err(damaged("it has fewer results than its shard record says"));
            }
            let mut own = BTreeMap::new();
            for (name, n) in &s.lists {
                let it = items.get_mut(name).expect("every list name is known");
                let taken: Vec<Value> = it.by_ref().take(*n).cloned().collect();
                if taken.len() != *n {
                    return Err(damaged(&format!(
                        "{name} has fewer items than its shard record says"
                    )));
                }
                own.insert(name.clone(), taken);
            }
            by_scenario.insert(s.scenario, (mine, own));
        }
        if rows.next().is_some() || items.values_mut().any(|it| it.next().is_some()) {
            return Err(damaged("it has more results than its shard record says"));
        }
    }

    let mut merged = parts[0].report.clone();
    merged.extra.remove(SHARD);
    merged.extra.remove(PROVENANCE);
    let provenance: Vec<_> = parts.iter().map(|p| p.report.provenance()).collect();
    if let Some(joined) = Provenance::joined(&provenance) {
        merged.set_provenance(&joined);
    }
    for name in &lists {
        merged.extra.remove(name);
    }
    merged.results = Vec::new();
    let mut joined: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (_, (rows, own)) in by_scenario {
        merged.results.extend(rows);
        for (name, items) in own {
            joined.entry(name).or_default().extend(items);
        }
    }
    for (name, items) in joined {
        if !items.is_empty() {
            merged.extra.insert(name, Value::Array(items));
        }
    }
    // The setup ran once per shard; one run counts it once.
    let setup = parts[0].info.setup_instructions;
    merged.executed_instructions = parts
        .iter()
        .map(|p| p.report.executed_instructions.saturating_sub(setup))
        .sum::<u64>()
        + setup;
    // The shards ran side by side: the joined run took as long as the slowest.
    merged.wall_seconds = parts
        .iter()
        .map(|p| p.report.wall_seconds)
        .fold(0.0, f64::max);
    Ok(merged)
}
