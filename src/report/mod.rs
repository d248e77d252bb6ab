//! The reporting layer: a [`Report`] (a run's settings plus one [`ScenarioResult`] per
//! scenario) and the [`Document`] a suite builds from it, rendered as report.md, terminal
//! tables, results.csv, results.json and SVG plots, and compared against an earlier run.
//!
//! It knows no suite: the record's fields are generic, a suite's own data travels in
//! [`Report::extra`] under names the suite chooses, and every table, plot and note comes
//! from the suite's document.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub(crate) mod comment;
pub mod compare;
mod csv;
mod document;
pub mod flame;
pub mod format;
mod json;
pub(crate) mod page_map;
pub mod profiles;
pub mod provenance;
mod record;
pub(crate) mod svg;
pub(crate) mod table;
pub(crate) mod work;

pub use comment::{Comment, CommentArgs};
pub use compare::{compare, Change, Comparison, ComparisonEntry, Gate};
pub use csv::csv;
pub use document::{
    markdown, message_cells_legend, rules_line, terminal, Block, Document, Footnotes, Plot,
    PlotKind,
};
pub use flame::{differential_graph, Folded};
pub use json::{from_json, json};
pub use provenance::{Machine, ModuleRun, Provenance, PROVENANCE};
pub use record::{scenario_ids, CacheState, ScenarioResult, Sequence, Status};
pub use svg::{DotPlot, DotPoint, LinePlot, Series};
pub use table::{Align, Table};

/// Everything one run produced: the settings it ran with and one result per scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub suite: String,
    /// `embedded` or `pocket-ic`.
    pub engine: String,
    /// The rows the suite's scenarios ran on; None for a run that generated none (a replay).
    #[serde(flatten)]
    pub workload: Option<Workload>,
    pub wall_seconds: f64,
    /// Where the state the scenarios started from came from, when the suite says (e.g. the
    /// prefill "run" or "loaded from the cache"). Shown next to the wall time in report.md
    /// and, like it, a fact of this run rather than a result: results.json leaves it out, so
    /// two runs' result files stay comparable.
    #[serde(skip)]
    pub prefill: Option<String>,
    /// Instructions the engine executed for the whole run, prefill included.
    #[serde(default)]
    pub executed_instructions: u64,
    /// The run's units of work (where its wall time went), when the suite recorded them:
    /// a fact of this run, like the wall time, rendered in report.md and `work.csv` and
    /// left out of results.json.
    #[serde(skip)]
    pub work: Option<work::WorkLog>,
    pub results: Vec<ScenarioResult>,
    pub notes: Vec<String>,
    /// A suite's own data (typed in the suite, stored here as JSON under the suite's field
    /// names), so results.json keeps it and the report core needs no type of any suite.
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// What a suite's scenarios ran on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workload {
    /// Rows in each store before every measured message.
    pub rows_before: u64,
    /// Seed of the random draws.
    pub seed: u64,
    /// Bytes of the value of each row.
    pub payload_size: u64,
}

/// The results.json field naming the replica rules a run charged by.
pub const REPLICA: &str = "replica";
/// The results.json field naming where a users suite's run filled its stores (`--layout`):
/// absent for the other suites, which fill each store in a canister of its own, and in the
/// runs of those suites before the option, which filled them as `shared` does.
pub const LAYOUT: &str = "layout";
/// The results.json field naming the host whose OS pages a run's charges counted
/// (`--host`); absent for the default, Linux, as in every run before the option.
pub const HOST: &str = "host";

impl Report {
    /// The suite's workload: every suite's report has one (a replay's has none: zeros).
    pub fn workload(&self) -> Workload {
        self.workload.unwrap_or_default()
    }

    /// Names the replica vintage the run modelled (None: a PocketIC server's own rules).
    pub fn set_replica(&mut self, replica: Option<crate::engine::cost::Replica>) {
        let name = replica.map_or_else(
            || "the PocketIC server's own".to_string(),
            |r| r.name.to_string(),
        );
        self.set_extra(REPLICA, &name);
    }

    /// The embedded engine's vintage the run was charged by (None: a PocketIC server, or
    /// a report that names none).
    pub fn replica(&self) -> Option<crate::engine::cost::Replica> {
        self.extra::<String>(REPLICA)
            .and_then(|name| crate::engine::cost::Replica::by_name(&name).ok())
    }

    /// Where the run filled its stores, when it says (a users suite's run).
    pub fn layout(&self) -> Option<crate::stores::Layout> {
        self.extra::<String>(LAYOUT)
            .and_then(|name| crate::stores::Layout::by_name(&name))
    }

    /// Names the host whose OS pages the charges counted, when it is not the default (a
    /// report without the field was charged by Linux's 4 KiB pages, as every run before
    /// `--host` was).
    pub fn set_host(&mut self, host: Option<crate::engine::cost::Host>) {
        match host {
            Some(h) if h != crate::engine::cost::Host::default() => self.set_extra(HOST, &h.name()),
            _ => {
                self.extra.remove(HOST);
            }
        }
    }

    /// The host the run's charges counted the OS pages of (the default when the report
    /// names none).
    pub fn host(&self) -> crate::engine::cost::Host {
        self.extra::<String>(HOST)
            .and_then(|name| crate::engine::cost::Host::by_name(&name).ok())
            .unwrap_or_default()
    }

    /// What the memory tracker charged per 64 KiB page touched (and again per page
    /// written) under the run's vintage and host, when the vintage has the tracker.
    pub fn wasm_page_charge(&self) -> Option<u64> {
        let rule = self.replica()?.memory_tracker?;
        Some(rule.on(self.host()).wasm_page_charge())
    }

    /// Stores a suite's own data under `name` in results.json.
    pub fn set_extra<T: Serialize>(&mut self, name: &str, value: &T) {
        let value = serde_json::to_value(value).expect("suite data serializes to JSON");
        self.extra.insert(name.to_string(), value);
    }

    /// Reads back what [`Report::set_extra`] stored; `None` when absent or of another shape.
    pub fn extra<T: for<'de> Deserialize<'de>>(&self, name: &str) -> Option<T> {
        self.extra
            .get(name)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }
}

/// What the memory tracker charges per 64 KiB page touched (and again per page written) on
/// `host`, whether or not a run's vintage has the tracker: what the page counts of page maps
/// and comparisons are priced at (80,000 on Linux, 20,000 on a Mac).
pub fn tracker_page_charge(host: crate::engine::cost::Host) -> u64 {
    crate::engine::cost::MemoryTracker::DMT
        .on(host)
        .wasm_page_charge()
}

/// Creates `dir` (and its parents) and checks that a file can be made in it: the CLI calls
/// it for every output directory before any work starts, so a run never ends in an
/// unwritable directory with its results lost.
pub fn prepare_dir(dir: &Path) -> std::io::Result<()> {
    crate::interrupt::create_dir_all(dir)?;
    try_file_in(dir)
}

/// Makes a file in the directory `dir` and removes it.
fn try_file_in(dir: &Path) -> std::io::Result<()> {
    if !dir.is_dir() {
        return Err(std::io::Error::other("not a directory"));
    }
    tempfile::Builder::new()
        .prefix(".icbench-probe-")
        .tempfile_in(dir)
        .map(drop)
}

/// Whether files can be made in `dir`, left as it was: the directories it makes to try
/// are removed again, so that a run killed before its results (SIGKILL, which no handler
/// sees) leaves no empty directory; [`write_all`] makes them when it writes.
pub fn probe_dir(dir: &Path) -> std::io::Result<()> {
    let missing: Vec<&Path> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .collect();
    let probed = std::fs::create_dir_all(dir).and_then(|()| try_file_in(dir));
    for made in missing {
        let _ = std::fs::remove_dir(made);
    }
    probed
}

/// [`prepare_dir`] for a file's directory, and if the file exists, checks that it can be
/// opened for writing (it is left as it is).
pub fn prepare_file(path: &Path) -> std::io::Result<()> {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => prepare_dir(p)?,
        _ => prepare_dir(Path::new("."))?,
    }
    if path.is_dir() {
        return Err(std::io::Error::other("it is a directory"));
    }
    if path.exists() {
        std::fs::OpenOptions::new().append(true).open(path)?;
    }
    Ok(())
}

/// The file of a run's units of work, beside report.md.
pub const WORK_CSV: &str = "work.csv";

/// The files a run writes in a suite's directory besides its plots (`plot-*.svg`) and
/// profiles (under `profiles/`).
const OUTPUTS: [&str; 4] = ["report.md", "results.csv", "results.json", WORK_CSV];

/// Writes report.md, results.csv, results.json, work.csv, the document's plots, the
/// profiles and the `extra` files (a merge's profiles, as (path, text)) into `dir`, creating
/// it, and removes the outputs of an earlier run or merge there that this one does not
/// write (see [`stale_outputs`]): the directory holds this run's files, and any other files
/// it held. Returns the paths written (see [`write_files`]).
pub fn write_all(
    report: &Report,
    document: &Document,
    dir: &Path,
    extra: Vec<(PathBuf, String)>,
) -> std::io::Result<Vec<PathBuf>> {
    crate::interrupt::create_dir_all(dir)?;
    let mut files = vec![
        ("report.md".to_string(), markdown(report, document)),
        ("results.csv".to_string(), csv(report)),
        ("results.json".to_string(), json(report)),
    ];
    if let Some(log) = &report.work {
        files.push((WORK_CSV.to_string(), work::csv(log)));
    }
    for plot in &document.plots {
        files.push((plot.file.clone(), plot.svg()));
    }
    let mut files: Vec<(PathBuf, String)> = files
        .into_iter()
        .map(|(name, text)| (dir.join(name), text))
        .collect();
    files.extend(profiles::files(report, dir)?);
    files.extend(extra);
    write_replacing(dir, files, Some(dir))
}

/// The files in `dir` (and under its `profiles/`) of the names a run writes there that are
/// not among `written`: report.md, results.csv, results.json, work.csv, `plot-*.svg`, and
/// under `profiles/` (a folder per `/` of a scenario id) `*.folded` and `*.svg`. Other
/// files, and other directories (another suite's under `--out`), are not a run's.
fn stale_outputs(dir: &Path, written: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for (path, name) in entries(dir).0 {
        if OUTPUTS.contains(&name.as_str()) || (name.starts_with("plot-") && name.ends_with(".svg"))
        {
            found.push(path);
        }
    }
    let mut folders = vec![dir.join(profiles::DIR)];
    while let Some(folder) = folders.pop() {
        let (files, subfolders) = entries(&folder);
        folders.extend(subfolders);
        let profile = |name: &str| name.ends_with(".folded") || name.ends_with(".svg");
        found.extend(files.into_iter().filter(|f| profile(&f.1)).map(|f| f.0));
    }
    found.retain(|path| !written.contains(path));
    found
}

/// The files (path and name) and the folders in `dir`; none when it cannot be read.
fn entries(dir: &Path) -> (Vec<(PathBuf, String)>, Vec<PathBuf>) {
    let (mut files, mut folders) = (Vec::new(), Vec::new());
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        match entry.file_type() {
            Ok(t) if t.is_file() => files.push((
                entry.path(),
                entry.file_name().to_string_lossy().into_owned(),
            )),
            Ok(t) if t.is_dir() => folders.push(entry.path()),
            _ => {}
        }
    }
    (files, folders)
}

/// Removes the folders under `dir` left empty, then `dir` if it is.
fn remove_empty_folders(dir: &Path) {
    for folder in entries(dir).1 {
        remove_empty_folders(&folder);
    }
    let _ = std::fs::remove_dir(dir);
}

/// Writes each `(path, text)` under a temporary name in its directory first, then renames
/// them all into place together (a signal waits for the renames, see
/// [`crate::interrupt`]) and marks `output` written: no file is ever seen half written,
/// and a stopped run never leaves a set of new and old files that passes for one run.
/// Files get the permissions `std::fs::write` would give them.
pub fn write_files(output: &Path, files: Vec<(PathBuf, String)>) -> std::io::Result<Vec<PathBuf>> {
    write_replacing(output, files, None)
}

/// [`write_files`], and, with the renames, the [`stale_outputs`] of `run_dir` removed.
fn write_replacing(
    output: &Path,
    files: Vec<(PathBuf, String)>,
    run_dir: Option<&Path>,
) -> std::io::Result<Vec<PathBuf>> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let mut temps = Vec::with_capacity(files.len());
    for (path, text) in files {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let (mut temp, guard) = crate::interrupt::TempGuard::make(|| {
            let temp = tempfile::Builder::new()
                .prefix(&format!(".{name}."))
                .suffix(".tmp")
                .permissions(std::fs::Permissions::from_mode(0o666))
                .tempfile_in(parent)?;
            let path = temp.path().to_path_buf();
            Ok((temp, path))
        })?;
        temp.write_all(text.as_bytes())?;
        temps.push((path, temp, guard));
    }
    let _renaming = crate::interrupt::writing();
    let mut written = Vec::with_capacity(temps.len());
    for (path, temp, _guard) in temps {
        temp.persist(&path).map_err(|e| e.error)?;
        written.push(path);
    }
    if let Some(dir) = run_dir {
        for stale in stale_outputs(dir, &written) {
            std::fs::remove_file(&stale)?;
        }
        // Gone when they held only an earlier run's profiles.
        remove_empty_folders(&dir.join(profiles::DIR));
    }
    crate::interrupt::written(output);
    Ok(written)
}

/// The result the report's samples start from; the integration tests include it too.
#[cfg(test)]
mod sample;

/// Test fixtures shared by the unit tests of the submodules.
#[cfg(test)]
pub(crate) mod fixture {
    use super::*;

    /// A machine that differs from another by its kernel alone.
    pub fn machine(kernel: &str) -> Machine {
        Machine {
            cpu: "AMD EPYC".into(),
            cpu_features: "sse2 avx2 erms".into(),
            glibc_tunables: None,
            kernel: kernel.into(),
            transparent_hugepages: "madvise".into(),
            heap_writes: Some("kernel write log".into()),
        }
    }

    pub fn result(
        store: &str,
        journal_mode: &str,
        position: &str,
        operation: &str,
        batch: u64,
        store_instructions: u64,
    ) -> ScenarioResult {
        let r = ScenarioResult {
            suite: "unit".into(),
            rows_before: 1_000,
            args: format!("(500, 1, {batch})"),
            usd: 0.0000054,
            stable_pages_delta: 1,
            heap_dirty_pages: 3,
            stable_dirty_pages: 4,
            pages: Some(crate::engine::PageCounts {
                heap_wasm_pages_accessed: 5,
                heap_wasm_pages_written: 2,
                stable_wasm_pages_accessed: 3,
                stable_wasm_pages_written: 1,
                page_charge_instructions: 11 * 80_000,
            }),
            ingress_cycles: 1_200_000 + 2_000 * 40,
            ..sample::named(store, journal_mode, position, operation, batch)
        };
        sample::charged(r, store_instructions + 10_000, store_instructions)
    }

    pub fn report(results: Vec<ScenarioResult>) -> Report {
        Report {
            suite: "unit".into(),
            engine: "embedded".into(),
            workload: Some(Workload {
                rows_before: 1_000,
                seed: 7,
                payload_size: 100,
            }),
            wall_seconds: 1.5,
            prefill: None,
            executed_instructions: 0,
            work: None,
            results,
            notes: vec![],
            extra: BTreeMap::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::*;

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Limits {
        max: f64,
    }

    #[test]
    fn suite_data_round_trips_through_results_json() {
        let mut r = report(vec![result("btree", "", "middle", "insert", 1, 5)]);
        r.set_extra("ceilings", &Limits { max: 6.0 });
        let text = super::json(&r);
        assert!(
            text.contains("\"ceilings\": {\n    \"max\": 6.0\n  }"),
            "{text}"
        );
        let back = super::from_json(&text).unwrap();
        assert_eq!(back.extra::<Limits>("ceilings"), Some(Limits { max: 6.0 }));
        assert_eq!(back, r);
        assert_eq!(back.extra::<Limits>("page_stats"), None);
    }
}
