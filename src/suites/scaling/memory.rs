//! What the scaling suite needs of the machine: each store's memory per row at its largest
//! size, the capacity searches' peaks, and the run's peak on its workers (the estimate
//! `--jobs` and the smaller runs are checked against).

use super::grow::fill_cost;
use super::{sizes_up_to, Config, CAPACITY_ROWS, SIZES};
use crate::report::format::thousands;
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
                "the scaling suite to {} rows on {jobs} job{}{shard}",
                thousands(largest),
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

    /// The peak of one store's tasks, from the store table's figures: its bytes per row at
    /// the largest size (up to its cap), or its capacity search's peak if that is larger.
    pub(super) fn store_peak(&self, kind: StoreKind) -> u64 {
        let memory = kind.def().memory;
        let largest = self.sizes.last().copied().unwrap_or_default();
        let held = memory.scaling_per_row * largest;
        let held = match memory.scaling_cap {
            0 => held,
            cap => held.min(cap),
        };
        match self.capacity_at {
            None => held,
            Some(_) => held.max(memory.capacity_search),
        }
    }

    /// `scaling_max_rows`'s sizes up to `max`, with this config's other settings.
    fn up_to(&self, max: u64) -> Config {
        let sizes = sizes_up_to(max);
        Config {
            capacity_at: sizes.contains(&CAPACITY_ROWS).then_some(CAPACITY_ROWS),
            sizes,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_counts_the_longest_fill_beside_as_many_other_peaks_as_workers() {
        let cfg = Config {
            sizes: sizes_up_to(10_000_000),
            kinds: crate::stores::measured_by("scaling", &StoreKind::ALL)
                .into_iter()
                .filter(|k| k.def().memory.scaling_cap == 0)
                .collect(),
            payload_size: 100,
            seed: 1,
            usd_per_xdr: 1.0,
            capacity_at: Some(CAPACITY_ROWS),
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
