//! What the scaling suite needs of the machine: each store's memory per row at its largest
//! size, the capacity searches' peaks, and the run's peak on its workers (the estimate
//! `--jobs` and the smaller runs are checked against).

use super::grow::fill_cost;
use super::{sizes_up_to, Config, Skipped, CAPACITY_ROWS, SIZES};
use crate::report::format::{gigabytes, thousands};
use crate::suites::scenario::StoreKind;
use crate::suites::{Exec, MemoryEstimate, MEMORY_BASE};

impl Config {
    /// What the run needs of the machine, and which flags need less.
    pub(super) fn estimate(&self, exec: &Exec) -> Option<MemoryEstimate> {
        // `--shard` splits by store: a part fills only its own.
        let part = Config {
            kinds: exec
                .indices(self.kinds.len())
                .into_iter()
                .map(|i| self.kinds[i])
                .collect(),
            ..self.clone()
        };
        if part.kinds.is_empty() {
            return None;
        }
        let largest = part.sizes.last().copied().unwrap_or_default();
        let jobs = exec.jobs.min(part.kinds.len()).max(1);
        let mut smaller = Vec::new();
        if jobs > 1 {
            smaller.push(("--jobs 1".to_string(), part.peak_memory(1)));
        }
        for &max in SIZES.iter().rev().filter(|&&n| n < largest) {
            let cfg = part.up_to(max);
            let flag = format!("--scaling-max-rows {max}");
            smaller.push((flag.clone(), cfg.peak_memory(jobs)));
            if jobs > 1 {
                smaller.push((format!("{flag} --jobs 1"), cfg.peak_memory(1)));
            }
        }
        let shard = if exec.shard.is_whole() {
            String::new()
        } else {
            let names: Vec<&str> = part.kinds.iter().map(|k| k.as_str()).collect();
            format!(
                " (shard {}/{}: {})",
                exec.shard.index,
                exec.shard.count,
                names.join(", ")
            )
        };
        Some(MemoryEstimate {
            bytes: part.peak_memory(jobs),
            what: format!(
                "the scaling suite to {} rows{} on {jobs} job{}{shard}",
                thousands(largest),
                if part.skipped.is_empty() {
                    ""
                } else {
                    " (less what it leaves out)"
                },
                if jobs == 1 { "" } else { "s" }
            ),
            smaller,
        })
    }

    /// The expected peak of a run on `jobs` workers. Each store has one peak: at its largest
    /// size, or in its capacity search if that needs more. The costliest store's fill holds
    /// a worker from start to end (the critical path goes first), so its peak can meet the
    /// peaks of as many other stores as there are other workers; on one worker the stores
    /// come one after the other.
    pub fn peak_memory(&self, jobs: usize) -> u64 {
        let jobs = jobs.max(1);
        let peak = |kind| self.store_peak(kind);
        let critical = self.kinds.iter().copied().max_by_key(|&k| fill_cost(k));
        let mut others: Vec<u64> = self
            .kinds
            .iter()
            .copied()
            .filter(|&k| Some(k) != critical || jobs == 1)
            .map(peak)
            .collect();
        others.sort_unstable_by(|a, b| b.cmp(a));
        let peaks = match (jobs, critical) {
            (1, _) | (_, None) => others.first().copied().unwrap_or(0),
            (_, Some(k)) => peak(k) + others.iter().take(jobs - 1).sum::<u64>(),
        };
        MEMORY_BASE + peaks
    }

    /// The peak of one store's tasks: at its largest size, or in its capacity search if
    /// that is larger.
    pub(super) fn store_peak(&self, kind: StoreKind) -> u64 {
        let largest = self.sizes_of(kind).last().copied().unwrap_or_default();
        match self.capacity_of(kind) {
            None => held(kind, largest),
            Some(_) => held(kind, largest).max(kind.def().memory.capacity_search),
        }
    }

    /// `scaling_max_rows`'s sizes up to `max`, with this config's other settings (nothing
    /// left out: what the flag would run).
    fn up_to(&self, max: u64) -> Config {
        let sizes = sizes_up_to(max);
        Config {
            capacity_at: sizes.contains(&CAPACITY_ROWS).then_some(CAPACITY_ROWS),
            sizes,
            skipped: Vec::new(),
            ..self.clone()
        }
    }

    /// The run fitted to `available` bytes (see `Plan::fit_to`): each store of `exec`'s
    /// part leaves out the sizes whose peak alone does not fit beside [`MEMORY_BASE`], and
    /// its capacity search if that alone does not, with a line saying so. `None` where the
    /// sizes were given (`--scaling-max-rows`), nothing is left out, or a store fits at
    /// none of its sizes.
    pub(super) fn fit(&self, available: u64, exec: &Exec) -> Option<(Config, Vec<String>)> {
        if self.sizes_given {
            return None;
        }
        let room = available.saturating_sub(MEMORY_BASE);
        let mut fitted = self.clone();
        let mut lines = Vec::new();
        for i in exec.indices(self.kinds.len()) {
            let kind = self.kinds[i];
            let sizes = self.sizes_of(kind);
            let kept = sizes.iter().take_while(|&&n| held(kind, n) <= room).count();
            let largest = *sizes[..kept].last()?;
            let search = self
                .capacity_of(kind)
                .filter(|&n| n <= largest && kind.def().memory.capacity_search > room);
            if kept == sizes.len() && search.is_none() {
                continue;
            }
            let left_out = &sizes[kept..];
            lines.push(skip_line(kind, largest, left_out, search, available));
            match fitted.skipped.iter_mut().find(|s| s.kind == kind) {
                Some(skipped) => {
                    skipped.sizes.extend_from_slice(left_out);
                    skipped.capacity |= search.is_some();
                }
                None => fitted.skipped.push(Skipped {
                    kind,
                    sizes: left_out.to_vec(),
                    capacity: search.is_some(),
                }),
            }
        }
        (!lines.is_empty()).then_some((fitted, lines))
    }

    /// What a store left out needs alone, in words: for the report's notes.
    pub(super) fn skipped_needs(&self, skipped: &Skipped) -> String {
        let kind = skipped.kind;
        let largest = self.sizes_of(kind).last().copied().unwrap_or_default();
        let search = skipped.capacity.then_some(self.capacity_at).flatten();
        needs(kind, largest, &skipped.sizes, search)
    }
}

/// A store's peak at `n` rows in the store table's figures: its bytes per row, up to its
/// cap.
fn held(kind: StoreKind, n: u64) -> u64 {
    let memory = kind.def().memory;
    match memory.scaling_cap {
        0 => memory.scaling_per_row * n,
        cap => (memory.scaling_per_row * n).min(cap),
    }
}

/// What a store measured up to `largest` rows leaves out (`sizes` above it, its capacity
/// search at `search`) and what each needs alone: `stops at 1,000,000 rows: at 10,000,000
/// rows it needs about 10.0 GB alone`.
fn needs(kind: StoreKind, largest: u64, sizes: &[u64], search: Option<u64>) -> String {
    let at = |n: u64| gigabytes(MEMORY_BASE + held(kind, n));
    let searching = gigabytes(MEMORY_BASE + kind.def().memory.capacity_search);
    match (sizes.first(), search) {
        (Some(&n), None) => format!(
            "stops at {} rows: at {} rows it needs about {} alone (an estimate)",
            thousands(largest),
            thousands(n),
            at(n)
        ),
        (Some(&n), Some(_)) => format!(
            "stops at {} rows, without its capacity search: at {} rows it needs about {} alone, the search about {} (estimates)",
            thousands(largest),
            thousands(n),
            at(n),
            searching
        ),
        (None, Some(c)) => format!(
            "skips its capacity search at {} rows: it needs about {searching} alone (an estimate)",
            thousands(c)
        ),
        (None, None) => String::new(),
    }
}

/// The line a store fitted to `available` bytes prints before the run.
fn skip_line(
    kind: StoreKind,
    largest: u64,
    sizes: &[u64],
    search: Option<u64>,
    available: u64,
) -> String {
    format!(
        "scaling: {kind} {}, and {} is available; --ignore-memory-estimate measures it anyway",
        needs(kind, largest, sizes, search),
        gigabytes(available)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default run's plan: every store of the suite, 1,000 to 10,000,000 rows.
    fn default_plan() -> Config {
        Config::test_plan(
            sizes_up_to(10_000_000),
            crate::stores::measured_by("scaling", &StoreKind::ALL),
            Some(CAPACITY_ROWS),
        )
    }

    fn kind(name: &str) -> StoreKind {
        crate::stores::find(name).unwrap()
    }

    #[test]
    fn a_fitted_run_leaves_out_what_one_store_alone_does_not_fit() {
        let cfg = default_plan();
        // 6 GB: 5.5 GB beside the process. Every Motoko store's cap is over it at
        // 10,000,000 rows; every other store fits there.
        let (fitted, lines) = cfg.fit(6_000_000_000, &Exec::SEQUENTIAL).unwrap();
        let at_10m = |name: &str, gb: &str| {
            format!("scaling: {name} stops at 1,000,000 rows: at 10,000,000 rows it needs about {gb} GB alone (an estimate), and 6.0 GB is available; --ignore-memory-estimate measures it anyway")
        };
        assert_eq!(
            lines,
            [
                at_10m("mo-map", "10.0"),
                at_10m("mo-pure-map", "7.0"),
                at_10m("mo-region", "7.0"),
                at_10m("mo-map-classic", "6.5"),
            ]
        );
        for name in ["mo-map", "mo-pure-map", "mo-region", "mo-map-classic"] {
            assert_eq!(
                fitted.sizes_of(kind(name)),
                sizes_up_to(1_000_000),
                "{name}"
            );
            assert_eq!(
                fitted.capacity_of(kind(name)),
                Some(CAPACITY_ROWS),
                "{name}"
            );
        }
        for name in ["heap", "btree", "sqlite"] {
            assert_eq!(fitted.sizes_of(kind(name)), SIZES, "{name}");
        }
        // On one worker: mo:core's pure/Map at 1,000,000 rows (4 GB), the largest peak left.
        assert_eq!(fitted.peak_memory(1), 500_000_000 + 4_000_000_000);
        assert_eq!(fitted.largest(), 10_000_000);
        // 2 GB: the heap map's capacity search (2.2 GB) no longer fits, nor mo:core's
        // pure/Map at 1,000,000 rows (4 GB): its sizes stop at 100,000, and its capacity
        // search with them.
        let (fitted, lines) = cfg.fit(2_000_000_000, &Exec::SEQUENTIAL).unwrap();
        assert_eq!(lines.len(), 7);
        assert_eq!(
            lines[0],
            "scaling: heap stops at 1,000,000 rows, without its capacity search: at 10,000,000 rows it needs about 4.0 GB alone, the search about 2.7 GB (estimates), and 2.0 GB is available; --ignore-memory-estimate measures it anyway"
        );
        assert!(lines[4].starts_with("scaling: mo-pure-map stops at 100,000 rows: at 1,000,000 rows it needs about 4.5 GB alone (an estimate), and 2.0 GB"));
        assert_eq!(fitted.capacity_of(kind("heap")), None);
        assert_eq!(fitted.capacity_of(kind("btree")), Some(CAPACITY_ROWS));
        assert_eq!(fitted.sizes_of(kind("mo-pure-map")), sizes_up_to(100_000));
        assert_eq!(fitted.capacity_of(kind("mo-pure-map")), None);
        assert!(fitted.peak_memory(1) <= 2_000_000_000);
        // The capacity search alone: the heap map to 1,000,000 rows on 2 GB.
        let heap = Config {
            kinds: vec![kind("heap")],
            ..cfg.up_to(1_000_000)
        };
        let (fitted, lines) = heap.fit(2_000_000_000, &Exec::SEQUENTIAL).unwrap();
        assert_eq!(
            lines,
            ["scaling: heap skips its capacity search at 1,000,000 rows: it needs about 2.7 GB alone (an estimate), and 2.0 GB is available; --ignore-memory-estimate measures it anyway"]
        );
        assert_eq!(fitted.sizes_of(kind("heap")), sizes_up_to(1_000_000));
        assert_eq!(fitted.peak_memory(1), 500_000_000 + 350_000_000);
        let note = fitted.notes(&super::super::Empties(Vec::new()), Vec::new());
        assert_eq!(
            note.last().unwrap(),
            "Left out for want of memory: the heap map skips its capacity search at 1,000,000 rows: it needs about 2.7 GB alone (an estimate). Each figure, the 0.5 GB every run needs included, is more than the run had available; `--ignore-memory-estimate` measures them. Such a store is upgraded at the largest size it was measured at."
        );
    }

    #[test]
    fn shards_sign_what_they_measure_not_whether_the_sizes_were_given() {
        let cfg = default_plan();
        let given = Config {
            sizes_given: true,
            ..cfg.clone()
        };
        assert_eq!(format!("{cfg:?}"), format!("{given:?}"));
        let (fitted, _) = cfg.fit(6_000_000_000, &Exec::SEQUENTIAL).unwrap();
        assert_ne!(format!("{cfg:?}"), format!("{fitted:?}"));
    }

    #[test]
    fn a_run_is_not_fitted_where_its_sizes_were_given_or_nothing_fits() {
        let cfg = default_plan();
        // Everything fits: nothing to leave out.
        assert_eq!(cfg.fit(11_000_000_000, &Exec::SEQUENTIAL), None);
        // `--scaling-max-rows` given: the run is refused instead.
        let given = Config {
            sizes_given: true,
            ..cfg.clone()
        };
        assert_eq!(given.fit(6_000_000_000, &Exec::SEQUENTIAL), None);
        // Not even 1,000 rows of mo:core's pure/Map (4 MB) beside the process's 0.5 GB.
        assert_eq!(cfg.fit(MEMORY_BASE + 1_000_000, &Exec::SEQUENTIAL), None);
        // A shard fits its own stores alone (`--shard 2/3`: btree, mo-map, mo-map-classic).
        let shard = Exec {
            shard: crate::suites::Shard { index: 2, count: 3 },
            ..Exec::SEQUENTIAL
        };
        let (fitted, lines) = cfg.fit(6_000_000_000, &shard).unwrap();
        let names: Vec<StoreKind> = fitted.skipped.iter().map(|s| s.kind).collect();
        assert_eq!(names, [kind("mo-map"), kind("mo-map-classic")]);
        assert_eq!(lines.len(), 2);
        assert_eq!(fitted.sizes_of(kind("mo-region")), SIZES);
    }

    #[test]
    fn the_estimate_counts_the_longest_fill_beside_as_many_other_peaks_as_workers() {
        let all = default_plan();
        let cfg = Config {
            kinds: all
                .kinds
                .iter()
                .copied()
                .filter(|k| k.def().memory.scaling_cap == 0)
                .collect(),
            ..all
        };
        // One worker: SQLite's peak alone (380 B/row); two: the StableBTreeMap's fill
        // (210 B/row) beside it; three: the heap map's (350 B/row) too; four: SQLite on
        // ic-sqlite-vfs's (135 B/row) too.
        assert_eq!(cfg.peak_memory(1), 500_000_000 + 3_800_000_000);
        assert_eq!(
            cfg.peak_memory(2),
            500_000_000 + 2_100_000_000 + 3_800_000_000
        );
        assert_eq!(
            cfg.peak_memory(3),
            500_000_000 + 2_100_000_000 + 3_800_000_000 + 3_500_000_000
        );
        assert_eq!(cfg.peak_memory(4), cfg.peak_memory(3) + 1_350_000_000);
        assert_eq!(cfg.peak_memory(8), cfg.peak_memory(4));
        // At 1,000,000 rows the capacity searches are the peaks: the heap map's (2.2 GB)
        // and the StableBTreeMap's (0.6 GB) can run side by side.
        // Motoko's stores stop growing at their caps: alone, mo-map's 9.5 GB is the largest.
        let motoko = Config {
            kinds: ["mo-map", "mo-pure-map", "mo-region"]
                .map(|n| crate::stores::find(n).unwrap())
                .to_vec(),
            ..cfg.clone()
        };
        assert_eq!(motoko.peak_memory(1), 500_000_000 + 9_500_000_000);
        let small = cfg.up_to(1_000_000);
        assert_eq!(small.peak_memory(1), 500_000_000 + 2_200_000_000);
        assert_eq!(
            small.peak_memory(2),
            500_000_000 + 600_000_000 + 2_200_000_000
        );
    }
}
