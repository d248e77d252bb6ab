//! db_bench_sqlite3's benchmarks as this suite runs them, and the keys db_bench draws for
//! them.

use std::fmt;

use super::{BIG_VALUE_SIZE, VALUE_SIZE};

/// db_bench_sqlite3's default benchmarks, without the two sync fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Bench {
    FillSeq,
    FillSeqBatch,
    FillRandom,
    FillRandBatch,
    Overwrite,
    OverwriteBatch,
    ReadRandom,
    ReadSeq,
    FillRand100K,
    FillSeq100K,
    /// db_bench's second `readseq`, on the fillseq100K database: renamed so results keys
    /// stay unique.
    ReadSeq100K,
    ReadRand100K,
}

impl Bench {
    /// In db_bench_sqlite3's order (each benchmark runs on what the previous ones left).
    pub const ALL: [Bench; 12] = [
        Bench::FillSeq,
        Bench::FillSeqBatch,
        Bench::FillRandom,
        Bench::FillRandBatch,
        Bench::Overwrite,
        Bench::OverwriteBatch,
        Bench::ReadRandom,
        Bench::ReadSeq,
        Bench::FillRand100K,
        Bench::FillSeq100K,
        Bench::ReadSeq100K,
        Bench::ReadRand100K,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Bench::FillSeq => "fillseq",
            Bench::FillSeqBatch => "fillseqbatch",
            Bench::FillRandom => "fillrandom",
            Bench::FillRandBatch => "fillrandbatch",
            Bench::Overwrite => "overwrite",
            Bench::OverwriteBatch => "overwritebatch",
            Bench::ReadRandom => "readrandom",
            Bench::ReadSeq => "readseq",
            Bench::FillRand100K => "fillrand100K",
            Bench::FillSeq100K => "fillseq100K",
            Bench::ReadSeq100K => "readseq100K",
            Bench::ReadRand100K => "readrand100K",
        }
    }

    /// Starts on an empty store (db_bench opens a new database file).
    pub fn fresh(self) -> bool {
        matches!(
            self,
            Bench::FillSeq
                | Bench::FillSeqBatch
                | Bench::FillRandom
                | Bench::FillRandBatch
                | Bench::FillRand100K
                | Bench::FillSeq100K
        )
    }

    pub fn is_write(self) -> bool {
        !matches!(
            self,
            Bench::ReadRandom | Bench::ReadSeq | Bench::ReadSeq100K | Bench::ReadRand100K
        )
    }

    /// One SQLite transaction per write (db_bench's batch size 1) rather than per message.
    pub fn transaction_per_row(self) -> bool {
        matches!(
            self,
            Bench::FillSeq
                | Bench::FillRandom
                | Bench::Overwrite
                | Bench::FillRand100K
                | Bench::FillSeq100K
        )
    }

    pub fn value_size(self) -> u64 {
        match self {
            Bench::FillRand100K | Bench::FillSeq100K => BIG_VALUE_SIZE,
            _ => VALUE_SIZE,
        }
    }

    /// Ops for N entries (db_bench: N, or N/1000 for the 100K benchmarks).
    pub fn ops(self, num: u64) -> u64 {
        match self {
            Bench::FillRand100K | Bench::FillSeq100K | Bench::ReadSeq100K | Bench::ReadRand100K => {
                (num / 1_000).max(1)
            }
            _ => num,
        }
    }
}

impl fmt::Display for Bench {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// LevelDB's `Random` (Park–Miller), as db_bench draws its random keys; shared with the
/// canister, which builds db_bench's values with it.
pub use bench_types::rng::LevelDbRandom;

/// The keys of every benchmark for N entries, drawn as db_bench_sqlite3 draws them: one
/// `Random(301)` shared by the whole run in its benchmark order, the skipped fillrandsync
/// still drawing its N/100 keys so later benchmarks get db_bench's very keys.
/// Read sequential benchmarks have no keys (they read in key order).
pub fn keys(num: u64) -> Vec<(Bench, Vec<u64>)> {
    let mut rand = LevelDbRandom::new(301);
    let mut draw = |count: u64, range: u64| -> Vec<u64> {
        (0..count)
            .map(|_| u64::from(rand.next_u32()) % range)
            .collect()
    };
    let mut out = Vec::new();
    for bench in Bench::ALL {
        let n = bench.ops(num);
        let keys = match bench {
            Bench::FillSeq | Bench::FillSeqBatch | Bench::FillSeq100K => (0..n).collect(),
            Bench::ReadSeq | Bench::ReadSeq100K => Vec::new(),
            _ => draw(n, n),
        };
        out.push((bench, keys));
        if bench == Bench::FillRandom {
            // db_bench's fillrandsync comes next and draws N/100 keys below N/100.
            let _ = draw(num / 100, (num / 100).max(1));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_benchmark_has_db_bench_s_ops_values_and_transactions() {
        let names: Vec<&str> = Bench::ALL.map(Bench::name).to_vec();
        assert_eq!(
            names,
            [
                "fillseq",
                "fillseqbatch",
                "fillrandom",
                "fillrandbatch",
                "overwrite",
                "overwritebatch",
                "readrandom",
                "readseq",
                "fillrand100K",
                "fillseq100K",
                "readseq100K",
                "readrand100K"
            ]
        );
        let fresh: Vec<Bench> = Bench::ALL.into_iter().filter(|b| b.fresh()).collect();
        assert_eq!(fresh.len(), 6);
        // The autocommit ones run a transaction per write, the batch ones one per message.
        let per_row: Vec<&str> = Bench::ALL
            .into_iter()
            .filter(|b| b.transaction_per_row())
            .map(Bench::name)
            .collect();
        assert_eq!(
            per_row,
            [
                "fillseq",
                "fillrandom",
                "overwrite",
                "fillrand100K",
                "fillseq100K"
            ]
        );
        assert_eq!(Bench::FillSeq100K.ops(10_000), 10);
        assert_eq!(Bench::ReadRand100K.ops(500), 1);
        assert_eq!(Bench::Overwrite.ops(10_000), 10_000);
        assert_eq!(Bench::FillRand100K.value_size(), BIG_VALUE_SIZE);
        assert_eq!(Bench::FillRandBatch.value_size(), VALUE_SIZE);
        assert!(!Bench::ReadSeq.is_write() && Bench::OverwriteBatch.is_write());
    }

    #[test]
    fn keys_are_db_bench_s_draws_in_benchmark_order() {
        let all = keys(1_000);
        assert_eq!(all.len(), Bench::ALL.len());
        let of = |bench: Bench| &all.iter().find(|(b, _)| *b == bench).unwrap().1;
        assert_eq!(*of(Bench::FillSeq), (0..1_000).collect::<Vec<u64>>());
        assert!(of(Bench::ReadSeq).is_empty());
        // fillrandom: Random(301)'s first 1,000 draws below 1,000.
        let mut rand = LevelDbRandom::new(301);
        let first: Vec<u64> = (0..1_000)
            .map(|_| u64::from(rand.next_u32()) % 1_000)
            .collect();
        assert_eq!(*of(Bench::FillRandom), first);
        // fillrandbatch after the skipped fillrandsync's 10 draws.
        for _ in 0..10 {
            rand.next_u32();
        }
        let next: Vec<u64> = (0..1_000)
            .map(|_| u64::from(rand.next_u32()) % 1_000)
            .collect();
        assert_eq!(*of(Bench::FillRandBatch), next);
        assert_eq!(keys(1_000), all, "the same keys every run");
    }
}
