//! `icbench canbench --shard K/N` parts and their merge. Bench `i` of a run (0-based, in
//! export order after the pattern) belongs to part `i % N + 1`, the suites' rule. A part
//! writes no results file and no CSV, only [`PART_FILE`] into its --out directory: its
//! benches' outcomes, and what the merge needs to print and write what the unsharded run
//! would (the previous results, the flags) and to refuse parts of different runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::compare::BenchPages;
use super::results::{BenchResult, Results};
use super::{Bench, BenchOutcome, Output};
use crate::engine::cost::{Host, Replica};
use crate::engine::PageCounts;
use crate::report::Provenance;

/// The part's file in a shard's --out directory.
pub const PART_FILE: &str = "canbench_part.json";
/// The part file's `kind`: what wrote it, and its format.
pub const KIND: &str = "icbench canbench part 3";

/// A shard's part of a canbench run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub kind: String,
    /// The icbench version that ran it (another engine may count differently).
    pub icbench: String,
    /// K of K/N.
    pub index: usize,
    /// N of K/N.
    pub count: usize,
    /// SHA-256 of the module as installed (gunzipped).
    pub module: String,
    /// The replica vintage the benches were charged by (`--replica`).
    pub replica: String,
    /// The host whose OS pages the charges counted (`--host`).
    pub host: String,
    /// The install argument, hex.
    pub init_args: String,
    /// SHA-256 of the stable memory file, if any.
    pub stable_memory: Option<String>,
    /// Every bench of the whole run, in run order.
    pub benches: Vec<String>,
    /// The previous results the run compares against.
    pub baseline: Results,
    /// The previous run's pages (`--pages`: the CSV's rows that match `baseline`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub baseline_pages: BTreeMap<String, BenchPages>,
    pub output: Output,
    /// This part's benches, in run order.
    pub outcomes: Vec<PartOutcome>,
    /// The module as given and the machine that ran the part (absent in the parts of older
    /// versions); parts may run on different machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
}

/// One bench's outcome and its place in the whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartOutcome {
    pub position: usize,
    pub bench: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<BenchResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The Wasm pages its query touched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<PageCounts>,
    /// The Wasm pages each scope first touched while it was open.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scope_pages: BTreeMap<String, PageCounts>,
}

impl PartOutcome {
    pub fn new(position: usize, bench: &Bench) -> PartOutcome {
        let (result, error) = match &bench.outcome {
            Ok(r) => (Some(r.clone()), None),
            Err(e) => (None, Some(e.clone())),
        };
        PartOutcome {
            position,
            bench: bench.name.clone(),
            result,
            error,
            pages: bench.pages.total,
            scope_pages: bench.pages.scopes.clone(),
        }
    }

    fn outcome(&self) -> Option<BenchOutcome> {
        match (&self.result, &self.error) {
            (Some(r), None) => Some(Ok(r.clone())),
            (None, Some(e)) => Some(Err(e.clone())),
            _ => None,
        }
    }
}

impl Part {
    /// Writes the part into `dir` (created if missing); returns the file's path.
    pub fn write(&self, dir: &Path) -> Result<PathBuf> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(PART_FILE);
        let text = serde_json::to_string_pretty(self)
            .with_context(|| format!("encoding the part for {}", path.display()))?;
        crate::report::write_files(dir, vec![(path.clone(), text + "\n")])
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }

    fn read(dir: &Path) -> Result<Part> {
        let path = dir.join(PART_FILE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let kind = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v.get("kind").and_then(Value::as_str).map(str::to_string));
        if kind.as_deref() != Some(KIND) {
            bail!(
                "{}: not a part written by this icbench (kind {:?}, expected {KIND:?})",
                path.display(),
                kind.unwrap_or_default()
            );
        }
        serde_json::from_str(&text).map_err(|e| anyhow!("{}: damaged part: {e}", path.display()))
    }

    /// What every part of one run has in common, by name, for naming a difference.
    fn facts(&self) -> Vec<(&'static str, Value)> {
        vec![
            ("the icbench version", json(&self.icbench)),
            ("the shard count", json(&self.count)),
            ("the canister module (SHA-256)", json(&self.module)),
            ("the replica rules (--replica)", json(&self.replica)),
            ("the host (--host)", json(&self.host)),
            ("the init args", json(&self.init_args)),
            (
                "the stable memory file (SHA-256)",
                json(&self.stable_memory),
            ),
            (
                "the benchmarks run (the module's benches and the pattern)",
                json(&self.benches),
            ),
            (
                "the previous results (the results file compared against)",
                json(&self.baseline),
            ),
            (
                "the previous pages (the CSV beside the results file, with --pages)",
                json(&self.baseline_pages),
            ),
            (
                "the report and file options (--persist, --csv, --noise-threshold, --results, ...)",
                json(&self.output),
            ),
        ]
    }
}

fn json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("part fields are JSON values")
}

/// Whether `dir` holds a canbench part (else it may be a suite's shard).
pub fn is_part(dir: &Path) -> bool {
    dir.join(PART_FILE).is_file()
}

/// Checks that the parts in `dirs` are the whole of one run and puts the benches back in
/// run order, with the previous results and the flags.
pub fn join(dirs: &[PathBuf]) -> Result<Joined> {
    if dirs.is_empty() {
        bail!("no directories to merge");
    }
    let mut parts = dirs
        .iter()
        .map(|d| Ok((d.join(PART_FILE), Part::read(d)?)))
        .collect::<Result<Vec<_>>>()?;
    let reference = parts[0].1.facts();
    for (path, p) in &parts[1..] {
        for ((what, a), (_, b)) in reference.iter().zip(p.facts()) {
            if *a != b {
                let shown = |v: &Value| match v {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Null => "none".into(),
                    _ => "(see the files)".into(),
                };
                bail!(
                    "{} and {} are not parts of one run: they differ in {what} ({} vs {})",
                    parts[0].0.display(),
                    path.display(),
                    shown(a),
                    shown(&b)
                );
            }
        }
    }
    let count = parts[0].1.count;
    let covered: Vec<(usize, &Path)> = parts
        .iter()
        .map(|(path, p)| (p.index, path.as_path()))
        .collect();
    crate::suites::pool::check_parts_cover(&covered, count)?;
    parts.sort_by_key(|(_, p)| p.index);
    let first = &parts[0].1;
    let names = &first.benches;
    let (baseline, output) = (first.baseline.clone(), first.output.clone());
    let baseline_pages = first.baseline_pages.clone();
    let provenance: Vec<_> = parts.iter().map(|(_, p)| p.provenance.clone()).collect();
    let mut slots: Vec<Option<Bench>> = names.iter().map(|_| None).collect();
    for (path, p) in &parts {
        let damaged = |what: &str| {
            anyhow!(
                "{}: {what}; the file was changed after the run",
                path.display()
            )
        };
        if p.index == 0 || p.index > count {
            return Err(damaged(&format!(
                "shard {}/{count} does not exist",
                p.index
            )));
        }
        let expected: Vec<usize> = (0..names.len())
            .filter(|i| i % count == p.index - 1)
            .collect();
        let got: Vec<usize> = p.outcomes.iter().map(|o| o.position).collect();
        if got != expected {
            return Err(damaged("its benchmarks are not those of its shard"));
        }
        for o in &p.outcomes {
            if o.bench != names[o.position] {
                return Err(damaged(&format!(
                    "bench {} is named {:?}, the run's list says {:?}",
                    o.position, o.bench, names[o.position]
                )));
            }
            let outcome = o.outcome().ok_or_else(|| {
                damaged(&format!(
                    "bench {} has not exactly one of result and error",
                    o.bench
                ))
            })?;
            slots[o.position] = Some(Bench {
                name: o.bench.clone(),
                outcome,
                pages: BenchPages {
                    total: o.pages,
                    scopes: o.scope_pages.clone(),
                },
                trace: None,
            });
        }
    }
    let benches = slots
        .into_iter()
        .map(|s| s.expect("the shards cover every position"))
        .collect();
    let replica = Replica::by_name(&first.replica)
        .map_err(|e| anyhow!("{}: its replica rules: {e}", parts[0].0.display()))?;
    let host = Host::by_name(&first.host)
        .map_err(|e| anyhow!("{}: its host: {e}", parts[0].0.display()))?;
    Ok(Joined {
        replica,
        host,
        benches,
        baseline,
        baseline_pages,
        output,
        provenance: Provenance::joined(&provenance),
    })
}

/// The parts of a run put back together.
#[derive(Debug)]
pub struct Joined {
    pub replica: Replica,
    pub host: Host,
    pub benches: Vec<Bench>,
    pub baseline: Results,
    pub baseline_pages: BTreeMap<String, BenchPages>,
    pub output: Output,
    pub provenance: Option<Provenance>,
}

/// `icbench merge` of canbench parts: prints the report and writes the files of the
/// unsharded run, relative paths under `out` (as they are with `--out .`); `Ok(false)` when
/// a bench failed.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<bool> {
    let joined = join(dirs)?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    // `--out .` names the files exactly as the unsharded run does.
    let under = (out != Path::new(".")).then_some(out);
    super::finish(
        (joined.replica, joined.host),
        &joined.benches,
        &Default::default(),
        (&joined.baseline, &joined.baseline_pages),
        &joined.output,
        under,
        joined.provenance.as_ref(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canbench::results::m;

    fn part(index: usize, positions: &[usize]) -> Part {
        let benches: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        Part {
            kind: KIND.into(),
            icbench: "0".into(),
            index,
            count: 2,
            module: "m".into(),
            replica: "2025-03".into(),
            host: "linux".into(),
            init_args: String::new(),
            stable_memory: None,
            outcomes: positions
                .iter()
                .map(|&i| {
                    let r = BenchResult {
                        total: m(1, i as u64, 0, 0),
                        scopes: Default::default(),
                    };
                    // Each bench touched i + 1 heap pages, its scope `s` i of them
                    // (carried to the join).
                    let touched = |n: u64| PageCounts {
                        heap_wasm_pages_accessed: n,
                        ..PageCounts::default()
                    };
                    let bench = Bench {
                        name: benches[i].clone(),
                        outcome: Ok(r),
                        pages: BenchPages {
                            total: Some(touched(i as u64 + 1)),
                            scopes: [("s".to_string(), touched(i as u64))].into(),
                        },
                        trace: None,
                    };
                    PartOutcome::new(i, &bench)
                })
                .collect(),
            benches,
            baseline: Results::new(),
            baseline_pages: BTreeMap::new(),
            output: Output {
                noise_threshold: 2.0,
                less_verbose: false,
                show_summary: false,
                hide_results: false,
                persist: true,
                csv: false,
                results_path: "r.yml".into(),
                csv_path: "r.csv".into(),
                markdown: None,
                comment: Default::default(),
                pages: false,
            },
            // Each part on a machine of its own.
            provenance: Some(Provenance {
                modules: Vec::new(),
                machines: vec![crate::report::fixture::machine(&format!("6.{index}"))],
            }),
        }
    }

    #[test]
    fn join_puts_outcomes_back_in_run_order_and_refuses_damaged_parts() {
        let root = std::env::temp_dir().join(format!("icbench-cb-shard-{}", std::process::id()));
        let dirs: Vec<PathBuf> = ["p1", "p2"].iter().map(|d| root.join(d)).collect();
        part(1, &[0, 2]).write(&dirs[0]).unwrap();
        part(2, &[1]).write(&dirs[1]).unwrap();
        let Joined {
            benches,
            output,
            provenance,
            ..
        } = join(&[dirs[1].clone(), dirs[0].clone()]).unwrap();
        let names: Vec<&str> = benches.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        let kernels: Vec<String> = provenance
            .unwrap()
            .machines
            .into_iter()
            .map(|m| m.kernel)
            .collect();
        assert_eq!(kernels, ["6.1", "6.2"]);
        let touched: Vec<(u64, u64)> = benches
            .iter()
            .map(|b| {
                (
                    b.pages.total.unwrap().heap_wasm_pages_accessed,
                    b.pages.scopes["s"].heap_wasm_pages_accessed,
                )
            })
            .collect();
        assert_eq!(touched, [(1, 0), (2, 1), (3, 2)]);
        let counts: Vec<u64> = benches
            .iter()
            .map(|b| b.outcome.as_ref().unwrap().total.instructions)
            .collect();
        assert_eq!(counts, [0, 1, 2]);
        assert!(output.persist);

        part(2, &[2]).write(&dirs[1]).unwrap();
        let err = join(&dirs).unwrap_err().to_string();
        assert!(
            err.contains("its benchmarks are not those of its shard"),
            "{err}"
        );
        let mut both = part(2, &[1]);
        both.outcomes[0].error = Some("x".into());
        both.write(&dirs[1]).unwrap();
        let err = join(&dirs).unwrap_err().to_string();
        assert!(
            err.contains("has not exactly one of result and error"),
            "{err}"
        );
        let mut renamed = part(2, &[1]);
        renamed.outcomes[0].bench = "z".into();
        renamed.write(&dirs[1]).unwrap();
        let err = join(&dirs).unwrap_err().to_string();
        assert!(err.contains("bench 1 is named \"z\""), "{err}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
