//! What the upgrade suite needs of the machine: each store's memory per row while it is
//! upgraded and while its states wait, the limit run's peak, and the run's peak on its
//! workers (the estimate `--jobs` and the smaller runs are checked against).

use super::{Config, UpgradeStore};
use crate::report::format::thousands;
use crate::suites::{Exec, MemoryEstimate, MEMORY_BASE};

/// The limit run at its peak, whatever its payload size: it fills the heap map until an
/// upgrade fails near the 4 GiB heap, and that upgrade holds the heap frozen for the
/// rollback, pre_upgrade's heap up to 4 GiB and the rows encoded in stable memory. Four
/// one-worker runs peaked at 8.03 to 8.22 GB (git history of docs/performance.md): 7.7 GB
/// and a margin.
const MEMORY_LIMIT_RUN: u64 = 8_000_000_000;

impl Config {
    /// What the run needs of the machine, and which flags need less.
    pub(super) fn estimate(&self, exec: &Exec) -> Option<MemoryEstimate> {
        let keys = self.keys().len();
        let indices = exec.indices(keys);
        if indices.is_empty() {
            return None;
        }
        let jobs = exec.jobs.min(indices.len()).max(1);
        let limit_run = self.limit_run.is_some() && indices.contains(&(keys - 1));
        // The scenarios without the limit run (all of them when it is not among them).
        let stores_only: Vec<usize> = indices
            .iter()
            .copied()
            .filter(|&i| !limit_run || i != keys - 1)
            .collect();
        let mut smaller = Vec::new();
        if jobs > 1 {
            smaller.push(("--jobs 1".to_string(), self.peak_memory(&indices, 1)));
        }
        if limit_run {
            smaller.push((
                "--no-limit-run".to_string(),
                self.peak_memory(&stores_only, jobs),
            ));
            if jobs > 1 {
                smaller.push((
                    "--no-limit-run --jobs 1".to_string(),
                    self.peak_memory(&stores_only, 1),
                ));
            }
        }
        if self.sizes.len() > 1 {
            let fewer = &self.sizes[..self.sizes.len() - 1];
            let cfg = Config {
                sizes: fewer.to_vec(),
                ..self.clone()
            };
            let sizes: Vec<String> = fewer.iter().map(|n| n.to_string()).collect();
            let flag = format!(
                "--upgrade-sizes {}{}",
                sizes.join(","),
                if limit_run { " --no-limit-run" } else { "" }
            );
            smaller.push((flag, cfg.peak_memory(&stores_only, jobs)));
        }
        let shard = if exec.shard.is_whole() {
            String::new()
        } else {
            format!(" (shard {}/{})", exec.shard.index, exec.shard.count)
        };
        Some(MemoryEstimate {
            bytes: self.peak_memory(&indices, jobs),
            what: format!(
                "the upgrade suite to {} rows{} on {jobs} job{}{shard}",
                thousands(self.sizes.last().copied().unwrap_or(0)),
                if limit_run { " with the limit run" } else { "" },
                if jobs == 1 { "" } else { "s" }
            ),
            smaller,
        })
    }

    /// Bytes a store needs at the largest size: (upgrading it, holding its states).
    /// The store table's figures (`stores::UpgradeMemory`).
    fn store_memory(&self, store: UpgradeStore) -> (u64, u64) {
        let m = store.store_kind().def().memory.upgrade;
        let largest = self.sizes.last().copied().unwrap_or(0);
        let row = largest * (self.payload_size + m.overhead);
        (row * m.upgrade_tenths / 10, row * m.held_tenths / 10)
    }

    /// The peak of each scenario (`keys()`'s order) among `indices`: a store's upgrade at
    /// its largest size, or the limit run's.
    fn peaks(&self, indices: &[usize]) -> Vec<u64> {
        indices
            .iter()
            .map(|&i| match self.stores.get(i) {
                Some(&store) => self.store_memory(store).0,
                None => MEMORY_LIMIT_RUN,
            })
            .collect()
    }

    /// The expected peak of the scenarios `indices` on `jobs` workers. One worker finishes
    /// a store before the next (see [`Order`]) and parks the limit run's canister when it
    /// is done, so it holds one scenario's states at a time: the largest peak. Several
    /// workers fill every store before upgrading any, so every store's states are held
    /// while the `jobs` largest peaks run.
    pub fn peak_memory(&self, indices: &[usize], jobs: usize) -> u64 {
        let mut peaks = self.peaks(indices);
        peaks.sort_unstable_by(|a, b| b.cmp(a));
        if jobs <= 1 {
            return MEMORY_BASE + peaks.first().copied().unwrap_or(0);
        }
        let held: u64 = indices
            .iter()
            .filter_map(|&i| self.stores.get(i))
            .map(|&s| self.store_memory(s).1)
            .sum();
        MEMORY_BASE + held + peaks.iter().take(jobs).sum::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::scenario::{JournalMode, Store};
    use bench_types::names::HeapEncoding;

    #[test]
    fn the_estimate_counts_as_many_of_the_largest_peaks_as_workers() {
        let cfg = Config {
            stores: vec![
                UpgradeStore::Heap(HeapEncoding::Candid),
                UpgradeStore::Users(Store::BTree),
                UpgradeStore::Users(Store::Sqlite(JournalMode::Off)),
            ],
            sizes: vec![1_000, 1_000_000],
            rows: 1_000_000,
            payload_size: 100,
            seed: 1,
            usd_per_xdr: 1.0,
            limit_run: Some((UpgradeStore::Heap(HeapEncoding::Candid), 10_000)),
        };
        // At 1,000,000 rows of 100 bytes: the heap map 7.7 x 120 B a row, the
        // StableBTreeMap 2 x 150 B, SQLite 3 x 150 B; the limit run 8 GB.
        assert_eq!(
            cfg.peaks(&[0, 1, 2, 3]),
            vec![924_000_000, 300_000_000, 450_000_000, 8_000_000_000]
        );
        let all = [0, 1, 2, 3];
        assert_eq!(cfg.peak_memory(&all, 1), MEMORY_BASE + 8_000_000_000);
        // Several workers hold every store's states (1.5, 2 and 2.2 x 150 B a row) while
        // the largest peaks run.
        let held = 180_000_000 + 300_000_000 + 330_000_000;
        assert_eq!(
            cfg.peak_memory(&all, 2),
            MEMORY_BASE + held + 8_000_000_000 + 924_000_000
        );
        assert_eq!(
            cfg.peak_memory(&all, 3),
            MEMORY_BASE + held + 8_000_000_000 + 924_000_000 + 450_000_000
        );
        assert_eq!(cfg.peak_memory(&all, 16), cfg.peak_memory(&all, 4));
        // Without the limit run (or in a shard without it) the heap map's upgrade is the peak.
        assert_eq!(cfg.peak_memory(&[0, 1, 2], 1), MEMORY_BASE + 924_000_000);
        // The payload size counts: 1,000 bytes a row.
        let large = Config {
            payload_size: 1_000,
            ..cfg.clone()
        };
        assert_eq!(large.peaks(&[1]), vec![2_100_000_000]);
    }
}
