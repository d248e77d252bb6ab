//! Two runs side by side: which scenarios got more or less expensive beyond the noise.
//! Matching ignores the engine, so an embedded run can be checked against PocketIC.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::comment::{self, Comment, Section};
use super::format::{multiplier, pct_change, signed_thousands, thousands};
use super::provenance::{self, Provenance};
use super::table::{first_seen, Align, Table};
use super::{CacheState, Report, ScenarioResult, Status, Workload};
use crate::engine::cost::Host;

/// How a scenario moved between the base run and the new run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// A metric grew by at least the noise threshold.
    Regression,
    /// A metric shrank by at least the noise threshold, and none grew.
    Improvement,
    /// Both metrics moved less than the noise threshold (or neither run has numbers).
    Unchanged,
    /// Only in the new run.
    New,
    /// Only in the base run.
    Missing,
    /// Ok / refused / failed changed; worse (ok → refused → failed) counts as a regression.
    StatusChanged { worse: bool },
}

impl Change {
    fn label(self) -> &'static str {
        match self {
            Change::Regression => "regression",
            Change::Improvement => "improvement",
            Change::Unchanged => "unchanged",
            Change::New => "new",
            Change::Missing => "missing",
            Change::StatusChanged { worse: true } => "status worse",
            Change::StatusChanged { worse: false } => "status better",
        }
    }

    pub fn is_regression(self) -> bool {
        matches!(
            self,
            Change::Regression | Change::StatusChanged { worse: true }
        )
    }
}

/// One scenario of the comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct ComparisonEntry {
    /// `suite/store/journal_mode/position/operation/batch`, then `/warm` for a warm record.
    pub key: String,
    pub change: Change,
    pub base: Option<ScenarioResult>,
    pub new: Option<ScenarioResult>,
    /// The differential flame graph of a regression whose runs both have a profile, once
    /// [`Comparison::write_flame_graphs`] wrote it.
    pub flame_graph: Option<PathBuf>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub noise_pct: f64,
    pub base: Side,
    pub new: Side,
    /// How the runs differ in their rules and settings ([`unlike`]): empty unless they
    /// were compared across them.
    pub unlike: Vec<Unlike>,
    /// In report order (position, operation, batch, store).
    pub entries: Vec<ComparisonEntry>,
    /// How the runs differ in what they ran ([`provenance::differences`]): said, never gated.
    pub ran_otherwise: Vec<String>,
}

/// What one run of a comparison ran on.
#[derive(Clone, Debug, PartialEq)]
pub struct Side {
    pub engine: String,
    /// The host whose OS pages its charges counted (`--host`): what a page touched costs
    /// under the memory tracker ([`super::tracker_page_charge`]) depends on it.
    pub host: Host,
    /// What it ran (its modules and machine), when it says.
    pub provenance: Option<Provenance>,
}

impl Side {
    fn of(run: &Report) -> Side {
        Side {
            engine: run.engine.clone(),
            host: run.host(),
            provenance: run.provenance(),
        }
    }
}

/// A run's workload as `show` says it; `none` for a run without one (a replay).
fn workload(run: &Report, show: fn(Workload) -> String) -> String {
    run.workload.map_or_else(|| "none".to_string(), show)
}

/// What identifies a scenario across runs; the engine is left out on purpose.
type Key = (
    String,
    String,
    String,
    String,
    String,
    u64,
    (CacheState, String),
);

fn key(r: &ScenarioResult) -> Key {
    (
        r.suite.clone(),
        // A run of an older version may spell a store otherwise (`sqlite_vfs`).
        crate::stores::current_record(&r.store).into_owned(),
        r.journal_mode.clone(),
        r.position.clone(),
        r.operation.clone(),
        r.batch,
        (r.cache, r.warm_ups.clone()),
    )
}

fn key_text(k: &Key) -> String {
    let mode = if k.2.is_empty() { "-" } else { k.2.as_str() };
    let cache = match &k.6 {
        (_, warm_ups) if !warm_ups.is_empty() => format!("/w{warm_ups}"),
        (CacheState::Cold, _) => String::new(),
        (state, _) => format!("/{state}"),
    };
    format!("{}/{}/{}/{}/{}/{}{cache}", k.0, k.1, mode, k.3, k.4, k.5)
}

/// One way two runs differ that moves their counts: what, the base's value, the new one's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unlike {
    pub what: &'static str,
    pub base: String,
    pub new: String,
}

impl std::fmt::Display for Unlike {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} (base) against {} (new)",
            self.what, self.base, self.new
        )
    }
}

/// How `base` and `new` differ in what charges a scenario or sets its state, so that the
/// same scenario would count otherwise whatever the code did: the charging rules (replica
/// vintage, host), the rows, payload size and seed, the layout, and in the seed layout (a
/// canister holding several stores) the stores filled. Empty when they are alike. The
/// engine is not among them: an embedded run is compared with PocketIC on purpose.
pub fn unlike(base: &Report, new: &Report) -> Vec<Unlike> {
    fn recorded(value: Option<String>) -> String {
        value.unwrap_or_else(|| "(none recorded)".to_string())
    }
    // Each thing compared, and how a run says it.
    type Check = (&'static str, fn(&Report) -> String);
    let mut checks: Vec<Check> = vec![
        ("replica rules", |r| recorded(r.extra(super::REPLICA))),
        ("host", |r| r.host().name().to_string()),
        ("rows", |r| workload(r, |w| thousands(w.rows_before))),
        ("payload size", |r| {
            workload(r, |w| thousands(w.payload_size))
        }),
        ("seed", |r| workload(r, |w| w.seed.to_string())),
        ("layout", |r| recorded(r.extra(super::LAYOUT))),
    ];
    if base.layout() == Some(crate::stores::Layout::Shared)
        && new.layout() == Some(crate::stores::Layout::Shared)
    {
        // The stores a run filled, as its records name them.
        checks.push(("stores in the shared canister", |r| {
            let names = first_seen(
                r.results
                    .iter()
                    .map(|x| crate::stores::current_record(&x.store).into_owned()),
            );
            names.join(",")
        }));
    }
    checks
        .into_iter()
        .map(|(what, of)| Unlike {
            what,
            base: of(base),
            new: of(new),
        })
        .filter(|u| u.base != u.new)
        .collect()
}

/// Why `base` and `new` cannot be compared at all, whatever `--cross-rules` says: runs of
/// different suites, or runs with no scenario in common (every scenario would be new or
/// missing, and the gate would pass on nothing).
pub fn incomparable(base: &Report, new: &Report) -> Option<String> {
    if base.suite != new.suite {
        return Some(format!(
            "the runs are of different suites: {} (base) against {} (new); compare two runs of \
             one suite",
            base.suite, new.suite
        ));
    }
    let keys: std::collections::HashSet<Key> = base.results.iter().map(key).collect();
    if new.results.iter().any(|r| keys.contains(&key(r))) {
        return None;
    }
    let one = |r: &Report| {
        r.results.first().map_or("none".to_string(), |x| {
            format!("e.g. {}", key_text(&key(x)))
        })
    };
    Some(format!(
        "the runs have no scenario in common: {} in the base ({}), {} in the new run ({}); \
         nothing would be compared",
        thousands(base.results.len() as u64),
        one(base),
        thousands(new.results.len() as u64),
        one(new)
    ))
}

/// The differences of runs compared across rules, for the first line of the table and of
/// the comment.
fn across(unlike: &[Unlike]) -> String {
    let each: Vec<String> = unlike.iter().map(Unlike::to_string).collect();
    each.join("; ")
}

/// Compares `new` against `base`. A change counts when |Δ%| ≥ `noise_pct` (canbench's rule:
/// unchanged only strictly inside the noise band); 2.0 is the usual threshold.
pub fn compare(base: &Report, new: &Report, noise_pct: f64) -> Comparison {
    let index = |report: &Report| {
        let mut map: HashMap<Key, ScenarioResult> = HashMap::new();
        let mut order = Vec::new();
        for r in &report.results {
            // A repeated scenario keeps its first result.
            if let Entry::Vacant(slot) = map.entry(key(r)) {
                order.push(slot.key().clone());
                slot.insert(r.clone());
            }
        }
        (map, order)
    };
    let (base_map, base_order) = index(base);
    let (mut new_map, new_order) = index(new);
    let mut keys = base_order;
    keys.extend(new_order.into_iter().filter(|k| !base_map.contains_key(k)));
    // Report order without knowing any suite: each dimension ranks by where its value first
    // appears (base, then new), so a suite's own order of positions, operations and stores
    // carries over; batches rank by size.
    let suites = first_seen(keys.iter().map(|k| k.0.clone()));
    let positions = first_seen(keys.iter().map(|k| k.3.clone()));
    let operations = first_seen(keys.iter().map(|k| k.4.clone()));
    let stores = first_seen(keys.iter().map(|k| (k.1.clone(), k.2.clone())));
    keys.sort_by_cached_key(|k| {
        (
            suites.iter().position(|v| *v == k.0),
            positions.iter().position(|v| *v == k.3),
            operations.iter().position(|v| *v == k.4),
            k.5,
            stores.iter().position(|(s, m)| *s == k.1 && *m == k.2),
            k.6.clone(),
        )
    });

    let entries = keys
        .into_iter()
        .map(|k| {
            let base = base_map.get(&k).cloned();
            let new = new_map.remove(&k);
            entry(key_text(&k), base, new, noise_pct)
        })
        .collect();
    Comparison {
        noise_pct,
        base: Side::of(base),
        new: Side::of(new),
        unlike: unlike(base, new),
        entries,
        ran_otherwise: provenance::differences(base, new),
    }
}

fn entry(
    key: String,
    base: Option<ScenarioResult>,
    new: Option<ScenarioResult>,
    noise_pct: f64,
) -> ComparisonEntry {
    let measured = ComparisonEntry {
        key,
        change: Change::Unchanged,
        base,
        new,
        flame_graph: None,
    };
    let change = match (&measured.base, &measured.new) {
        (None, None) => unreachable!("every key comes from one of the runs"),
        (None, Some(_)) => Change::New,
        (Some(_), None) => Change::Missing,
        (Some(b), Some(n)) if severity(&b.status) != severity(&n.status) => Change::StatusChanged {
            worse: severity(&n.status) > severity(&b.status),
        },
        (Some(b), Some(n)) if b.status != Status::Ok => {
            let _ = n; // both refused or both failed: nothing to measure
            Change::Unchanged
        }
        (Some(_), Some(_)) => {
            let deltas = measured.deltas().expect("both runs measured it");
            if deltas.iter().any(|&d| d >= noise_pct) {
                Change::Regression
            } else if deltas.iter().any(|&d| d <= -noise_pct) {
                Change::Improvement
            } else {
                Change::Unchanged
            }
        }
    };
    ComparisonEntry { change, ..measured }
}

impl ComparisonEntry {
    /// % change of the charged `instructions` and of `store_instructions`, when both runs
    /// measured the scenario.
    fn deltas(&self) -> Option<[f64; 2]> {
        match (&self.base, &self.new) {
            (Some(b), Some(n)) if b.status == Status::Ok && n.status == Status::Ok => Some([
                pct(b.instructions, n.instructions),
                pct(b.store_instructions, n.store_instructions),
            ]),
            _ => None,
        }
    }

    /// % change of the charged `instructions`, when both runs have a number.
    pub fn instructions_pct(&self) -> Option<f64> {
        self.deltas().map(|d| d[0])
    }

    /// % change of `store_instructions`, when both runs have a number.
    pub fn store_instructions_pct(&self) -> Option<f64> {
        self.deltas().map(|d| d[1])
    }
}

/// Seed 004's multiplier (candidate ÷ baseline): only when the baseline is > 0 and the
/// candidate ≥ 0.
pub fn ratio(baseline: Option<f64>, candidate: Option<f64>) -> Option<f64> {
    match (baseline, candidate) {
        (Some(b), Some(c)) if b > 0.0 && c >= 0.0 => Some(c / b),
        _ => None,
    }
}

/// The mean of the multipliers there are (seed 004's section average); None when none.
pub fn mean(ratios: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = ratios
        .into_iter()
        .fold((0.0, 0usize), |(s, n), r| (s + r, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// What fails a comparison (exit status 1). Without ceilings every regression beyond the
/// noise threshold fails; with them, only what is above them (seed 004's gate: a
/// multiplier strictly above its ceiling). A scenario whose status got worse always fails.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Gate {
    /// The largest multiplier of one scenario's charged instructions (new ÷ base).
    pub max_ratio: Option<f64>,
    /// The largest average multiplier of a section (a suite's position).
    pub max_section_ratio: Option<f64>,
}

impl Gate {
    pub fn has_ceilings(&self) -> bool {
        self.max_ratio.is_some() || self.max_section_ratio.is_some()
    }

    /// Refuses a ceiling that is not a positive number.
    pub fn check(&self) -> Result<(), String> {
        for (flag, v) in [
            ("--max-ratio", self.max_ratio),
            ("--max-section-ratio", self.max_section_ratio),
        ] {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v > 0.0)) {
                return Err(format!("{flag} must be a positive multiplier, got {v}"));
            }
        }
        Ok(())
    }

    /// What the gate checks, for the comment.
    pub fn describe(&self, noise_pct: f64) -> String {
        let mut parts = Vec::new();
        if let Some(m) = self.max_ratio {
            parts.push(format!("no scenario above {m}x its base"));
        }
        if let Some(m) = self.max_section_ratio {
            parts.push(format!("no section average above {m}x"));
        }
        if parts.is_empty() {
            parts.push(format!("no regression of {noise_pct}% or more"));
        }
        parts.push("no scenario failing that did not fail before".into());
        parts.join(", ")
    }
}

/// ok < refused < failed: losing a number is worse than being refused by design.
fn severity(status: &Status) -> u8 {
    match status {
        Status::Ok => 0,
        Status::Refused(_) => 1,
        Status::Failed(_) => 2,
    }
}

/// % change from `base` to `new`; +inf when a zero base grew.
fn pct(base: u64, new: u64) -> f64 {
    if base == new {
        0.0
    } else if base == 0 {
        f64::INFINITY
    } else {
        (new as f64 - base as f64) * 100.0 / base as f64
    }
}

/// The multiplier of an entry's charged instructions, when both runs measured it.
fn entry_ratio(e: &ComparisonEntry) -> Option<f64> {
    let ok = |r: &Option<ScenarioResult>| {
        r.as_ref()
            .filter(|r| r.status == Status::Ok)
            .map(|r| r.instructions as f64)
    };
    ratio(ok(&e.base), ok(&e.new))
}

/// An entry's result: the new run's, else the base's.
fn result(e: &ComparisonEntry) -> &ScenarioResult {
    e.new
        .as_ref()
        .or(e.base.as_ref())
        .expect("every entry comes from one of the runs")
}

/// A section of the comparison: a suite's position (seed 004's sections: reads, writes).
fn section_of(e: &ComparisonEntry) -> (String, String) {
    let r = result(e);
    (r.suite.clone(), r.position.clone())
}

impl Comparison {
    /// The sections in report order, with their entries.
    fn sections(&self) -> Vec<((String, String), Vec<&ComparisonEntry>)> {
        let mut out: Vec<((String, String), Vec<&ComparisonEntry>)> = Vec::new();
        for e in &self.entries {
            let key = section_of(e);
            match out.iter_mut().find(|(k, _)| *k == key) {
                Some((_, entries)) => entries.push(e),
                None => out.push((key, vec![e])),
            }
        }
        out
    }

    /// Why the gate fails, one line per failure; empty when it passes.
    pub fn gate_failures(&self, gate: &Gate) -> Vec<String> {
        let mut out = Vec::new();
        for e in &self.entries {
            if e.change == (Change::StatusChanged { worse: true }) {
                out.push(format!("{}: {}", e.key, status_change(e)));
            } else if e.change == Change::Regression && !gate.has_ceilings() {
                out.push(format!(
                    "{}: charged {}, store {} (noise ±{}%)",
                    e.key,
                    pct_text(e.instructions_pct()),
                    pct_text(e.store_instructions_pct()),
                    self.noise_pct
                ));
            }
            if let (Some(max), Some(x)) = (gate.max_ratio, entry_ratio(e)) {
                if x > max {
                    out.push(format!("{}: {x:.2}x > {max}x", e.key));
                }
            }
        }
        if let Some(max) = gate.max_section_ratio {
            for ((suite, position), entries) in self.sections() {
                if let Some(a) = mean(entries.iter().filter_map(|e| entry_ratio(e))) {
                    if a > max {
                        out.push(format!("{suite} {position} average: {a:.2}x > {max}x"));
                    }
                }
            }
        }
        out
    }

    /// Draws the differential flame graph of every regression whose two results name a
    /// profile (`profile`, relative to the directory of each run's results.json) into
    /// `out_dir/ID.svg`, and names it in the entry. Returns the files written and, for a
    /// profile that cannot be read, a warning naming it (that regression gets no graph).
    pub fn write_flame_graphs(
        &mut self,
        base_dir: &Path,
        new_dir: &Path,
        out_dir: &Path,
    ) -> (Vec<PathBuf>, Vec<String>) {
        let (mut written, mut warnings) = (Vec::new(), Vec::new());
        for e in self
            .entries
            .iter_mut()
            .filter(|e| e.change == Change::Regression)
        {
            let (Some(b), Some(n)) = (&e.base, &e.new) else {
                continue;
            };
            if b.profile.is_empty() || n.profile.is_empty() {
                continue;
            }
            let id = super::profiles::id_of_file(&n.profile).unwrap_or(&n.profile);
            let graph = (|| {
                let a = super::Folded::read(&base_dir.join(&b.profile))?;
                let c = super::Folded::read(&new_dir.join(&n.profile))?;
                let svg = super::differential_graph(
                    (&format!("{id} (base)"), &a),
                    (&format!("{id} (new)"), &c),
                    false,
                )?;
                let path = out_dir.join(format!("{id}.svg"));
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)
                        .map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
                }
                std::fs::write(&path, svg)
                    .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
                Ok::<PathBuf, String>(path)
            })();
            match graph {
                Ok(path) => {
                    e.flame_graph = Some(path.clone());
                    written.push(path);
                }
                Err(err) => warnings.push(format!("no flame graph for {}: {err}", e.key)),
            }
        }
        (written, warnings)
    }

    /// The pull-request comment: what moved in its first line, regressions, improvements,
    /// new, removed and failing scenarios, then every scenario by section with its
    /// multiplier and each section's average, folded.
    pub fn comment(&self, title: &str, gate: &Gate) -> Comment {
        let rows = CommentRows {
            several_suites: first_seen(self.entries.iter().map(|e| &result(e).suite)).len() > 1,
        };
        let graphs = self.entries.iter().any(|e| e.flame_graph.is_some());
        let mut shown = vec![
            self.moved_section(&rows, Change::Regression, graphs),
            self.moved_section(&rows, Change::Improvement, false),
        ];
        shown.extend(self.listed_sections(&rows));
        shown.retain(|s| !s.rows.is_empty());
        let title = match self.unlike.is_empty() {
            true => title.to_string(),
            false => format!(
                "{title} across rules and settings ({})",
                across(&self.unlike)
            ),
        };
        let headline = comment::headline(
            &title,
            self.count(Change::Regression),
            self.count(Change::Improvement),
            self.noise_pct,
            self.count(Change::Unchanged),
            &[
                (self.count(Change::New), "new"),
                (self.count(Change::Missing), "removed"),
                (
                    self.count(Change::StatusChanged { worse: true }),
                    "newly failing",
                ),
                (
                    self.count(Change::StatusChanged { worse: false }),
                    "no longer failing",
                ),
            ],
        );
        let verdict = comment::verdict(
            self.gate_failures(gate).len(),
            &gate.describe(self.noise_pct),
        );
        Comment {
            headline,
            paragraphs: [self.about()]
                .into_iter()
                .chain(provenance::paragraph(self.new.provenance.as_ref(), &self.ran_otherwise))
                .chain([verdict])
                .collect(),
            shown,
            details_summary: "Every scenario by section, with its multiplier (new ÷ base charged instructions) and each section's average".into(),
            details: self.detail_sections(&rows),
            marker: None,
        }
    }

    /// The regressions (with a graph column when any was drawn) or the improvements.
    fn moved_section(&self, rows: &CommentRows, change: Change, graphs: bool) -> Section {
        let mut headers = vec![
            "scenario",
            "base",
            "new",
            "change",
            "change %",
            "store change %",
            "pages",
        ];
        if graphs {
            headers.push("differential flame graph");
        }
        let mut section = Section::new(
            match change {
                Change::Regression => "Regressions",
                _ => "Improvements",
            },
            &headers,
        );
        if graphs {
            section = section.align(headers.len() - 1, Align::Left);
        }
        for e in self.entries.iter().filter(|e| e.change == change) {
            let mut row = vec![
                rows.label(e),
                charged(&e.base),
                charged(&e.new),
                delta(e),
                pct_text(e.instructions_pct()),
                pct_text(e.store_instructions_pct()),
                pages_text(e),
            ];
            if graphs {
                row.push(comment::graph_cell(e.flame_graph.as_deref()));
            }
            section.rows.push(row);
        }
        section
    }

    /// The new, the removed and the failing scenarios.
    fn listed_sections(&self, rows: &CommentRows) -> [Section; 3] {
        let mut new = Section::new("New scenarios", &["scenario", "charged", "store"]);
        let mut removed = Section::new("Removed scenarios", &["scenario", "charged", "store"]);
        let mut failing = Section::new("Failures", &["scenario", "base", "new", "reason"])
            .align(1, Align::Left)
            .align(2, Align::Left)
            .align(3, Align::Left);
        for e in &self.entries {
            let label = rows.label(e);
            let store = |r: &ScenarioResult| match r.status {
                Status::Ok => thousands(r.store_instructions),
                _ => status_word(&r.status).to_string(),
            };
            match (&e.base, &e.new, e.change) {
                (None, Some(n), _) => new
                    .rows
                    .push(vec![label.clone(), charged(&e.new), store(n)]),
                (Some(b), None, _) => {
                    removed
                        .rows
                        .push(vec![label.clone(), charged(&e.base), store(b)])
                }
                _ => {}
            }
            let failed_now = e
                .new
                .as_ref()
                .is_some_and(|n| matches!(n.status, Status::Failed(_)));
            if failed_now || matches!(e.change, Change::StatusChanged { .. }) {
                let reason = match e.new.as_ref().map(|n| &n.status) {
                    Some(Status::Failed(r) | Status::Refused(r)) => comment::cell(r, 200),
                    _ => String::new(),
                };
                failing.rows.push(vec![
                    label,
                    e.base
                        .as_ref()
                        .map_or("-", |b| status_word(&b.status))
                        .into(),
                    e.new
                        .as_ref()
                        .map_or("-", |n| status_word(&n.status))
                        .into(),
                    reason,
                ]);
            }
        }
        [new, removed, failing]
    }

    /// Every scenario, a table per section closed by the section's average multiplier.
    fn detail_sections(&self, rows: &CommentRows) -> Vec<Section> {
        self.sections()
            .into_iter()
            .map(|((suite, position), entries)| {
                let name = match (rows.several_suites, position.is_empty()) {
                    (true, false) => format!("{suite} · {position}"),
                    (true, true) => suite,
                    (false, false) => position,
                    (false, true) => "Scenarios".to_string(),
                };
                let mut s = Section::new(
                    name,
                    &[
                        "scenario",
                        "base",
                        "new",
                        "change %",
                        "multiplier",
                        "store change %",
                    ],
                );
                for e in &entries {
                    s.rows.push(vec![
                        rows.label(e),
                        charged(&e.base),
                        charged(&e.new),
                        pct_text(e.instructions_pct()),
                        multiplier(entry_ratio(e)),
                        pct_text(e.store_instructions_pct()),
                    ]);
                }
                let average = mean(entries.iter().filter_map(|e| entry_ratio(e)));
                s.totals.push(vec![
                    "**average**".into(),
                    String::new(),
                    String::new(),
                    String::new(),
                    format!("**{}**", multiplier(average)),
                    String::new(),
                ]);
                s
            })
            .collect()
    }

    /// The paragraph under the headline: what was measured, the noise rule, how many
    /// unchanged scenarios moved inside it, and the engines when they differ.
    fn about(&self) -> String {
        let within = self
            .entries
            .iter()
            .filter(|e| {
                e.change == Change::Unchanged
                    && [e.instructions_pct(), e.store_instructions_pct()]
                        .iter()
                        .any(|p| p.is_some_and(|p| p != 0.0))
            })
            .count();
        let page_charge = super::tracker_page_charge(self.new.host);
        let mut about = format!(
            "Charged instructions per message of {} scenarios (`store`: the canister's `performance_counter` around the store work), this run against the base; `pages`: the 64 KiB Wasm pages of heap and stable memory the message accessed plus those it wrote, base → new (each costs {} instructions under the memory tracker{}). A change counts from ±{}% (canbench's noise threshold: strictly inside it is noise); ",
            thousands(self.entries.len() as u64),
            thousands(page_charge),
            match self.new.host {
                Host::Linux => String::new(),
                host => format!(" on this run's host, `{}`", host.name()),
            },
            self.noise_pct
        );
        about.push_str(&match within {
            0 => "no unchanged scenario moved at all.".to_string(),
            n => format!(
                "{} of the unchanged scenarios moved by less than that.",
                thousands(n as u64)
            ),
        });
        if self.base.engine != self.new.engine {
            about.push_str(&format!(
                " Engines: `{}` (base), `{}` (new).",
                self.base.engine, self.new.engine
            ));
        }
        if self.base.host != self.new.host {
            about.push_str(&format!(
                " Hosts: `{}` (base), `{}` (new): their page charges differ.",
                self.base.host.name(),
                self.new.host.name()
            ));
        }
        about
    }

    pub fn has_regressions(&self) -> bool {
        self.entries.iter().any(|e| e.change.is_regression())
    }

    /// Entries whose change is `change`.
    pub fn count(&self, change: Change) -> usize {
        self.entries.iter().filter(|e| e.change == change).count()
    }

    /// A table of every scenario that changed (regressions first) and a summary line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if !self.unlike.is_empty() {
            out.push_str(&format!(
                "Across rules and settings (`--cross-rules`): {}; every change below includes what that moves.\n\n",
                across(&self.unlike)
            ));
        }
        if self.base.engine != self.new.engine {
            out.push_str(&format!(
                "Comparing engine `{}` (base) with `{}` (new).\n\n",
                self.base.engine, self.new.engine
            ));
        }
        if let Some(line) = provenance::differences_line(&self.ran_otherwise) {
            out.push_str(&format!("{line}\n\n"));
        }
        let mut changed: Vec<&ComparisonEntry> = self
            .entries
            .iter()
            .filter(|e| e.change != Change::Unchanged)
            .collect();
        // Stable sort: within a class, report order is kept.
        changed.sort_by_key(|e| match e.change {
            c if c.is_regression() => 0,
            Change::StatusChanged { .. } => 1,
            Change::Improvement => 2,
            Change::New => 3,
            _ => 4,
        });
        if changed.is_empty() {
            out.push_str(&format!(
                "No scenario changed by {}% or more.\n",
                self.noise_pct
            ));
        } else {
            let headers = [
                "scenario",
                "change",
                "instr. base",
                "instr. new",
                "instr. Δ",
                "store base",
                "store new",
                "store Δ",
                "pages",
            ];
            let mut aligns = vec![Align::Left, Align::Left];
            aligns.extend([Align::Right; 7]);
            let mut table =
                Table::with_aligns(headers.iter().map(|h| h.to_string()).collect(), aligns);
            for e in changed {
                let value = |r: &Option<ScenarioResult>, f: fn(&ScenarioResult) -> u64| match r {
                    None => "-".to_string(),
                    Some(r) if r.status != Status::Ok => status_word(&r.status).to_string(),
                    Some(r) => thousands(f(r)),
                };
                table.push(vec![
                    e.key.clone(),
                    e.change.label().to_string(),
                    value(&e.base, |r| r.instructions),
                    value(&e.new, |r| r.instructions),
                    pct_text(e.instructions_pct()),
                    value(&e.base, |r| r.store_instructions),
                    value(&e.new, |r| r.store_instructions),
                    pct_text(e.store_instructions_pct()),
                    pages_text(e),
                ]);
            }
            out.push_str(&table.render());
            out.push('\n');
        }
        out.push_str(&self.summary());
        out.push('\n');
        out
    }

    /// `12 scenarios: 1 regression, 0 improvements, ... (noise ±2%)`.
    pub fn summary(&self) -> String {
        let worse = self.count(Change::StatusChanged { worse: true });
        let better = self.count(Change::StatusChanged { worse: false });
        let regressions = self.count(Change::Regression) + worse;
        format!(
            "{} scenarios: {} regression(s), {} improvement(s), {} unchanged, {} new, {} missing, {} status change(s) ({} worse); noise ±{}%",
            self.entries.len(),
            regressions,
            self.count(Change::Improvement),
            self.count(Change::Unchanged),
            self.count(Change::New),
            self.count(Change::Missing),
            worse + better,
            worse,
            self.noise_pct
        )
    }
}

/// `84 → 20`: the Wasm pages counted (accessed + written, heap and stable memory) in the
/// base and the new run, `-` for a run without the scenario or without page counts.
fn pages_text(e: &ComparisonEntry) -> String {
    let side = |r: &Option<ScenarioResult>| match r {
        Some(r) if r.status == Status::Ok => {
            r.pages.map_or("-".to_string(), |p| thousands(p.counted()))
        }
        _ => "-".to_string(),
    };
    format!("{} → {}", side(&e.base), side(&e.new))
}

/// How the comment names a scenario: with its suite when the runs hold several.
struct CommentRows {
    several_suites: bool,
}

impl CommentRows {
    fn label(&self, e: &ComparisonEntry) -> String {
        let r = result(e);
        if self.several_suites {
            format!("{}: `{}`", r.suite, r.base_id())
        } else {
            format!("`{}`", r.base_id())
        }
    }
}

/// A run's charged instructions, or its status when it has none.
fn charged(r: &Option<ScenarioResult>) -> String {
    match r {
        None => "-".to_string(),
        Some(r) if r.status != Status::Ok => status_word(&r.status).to_string(),
        Some(r) => thousands(r.instructions),
    }
}

/// The change of charged instructions when both runs measured them.
fn delta(e: &ComparisonEntry) -> String {
    match (&e.base, &e.new) {
        (Some(b), Some(n)) if b.status == Status::Ok && n.status == Status::Ok => {
            signed_thousands(n.instructions as i64 - b.instructions as i64)
        }
        _ => "-".to_string(),
    }
}

fn pct_text(p: Option<f64>) -> String {
    p.map(pct_change).unwrap_or_else(|| "-".to_string())
}

/// `ok → failed: trap ...`.
fn status_change(e: &ComparisonEntry) -> String {
    let word = |r: &Option<ScenarioResult>| r.as_ref().map_or("-", |r| status_word(&r.status));
    let reason = match e.new.as_ref().map(|n| &n.status) {
        Some(Status::Failed(r) | Status::Refused(r)) => format!(": {r}"),
        _ => String::new(),
    };
    format!("{} → {}{reason}", word(&e.base), word(&e.new))
}

fn status_word(status: &Status) -> &'static str {
    match status {
        Status::Ok => "ok",
        Status::Refused(_) => "refused",
        Status::Failed(_) => "failed",
    }
}

#[cfg(test)]
mod tests;
