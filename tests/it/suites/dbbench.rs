//! The dbbench suite (seed 000): its keys, matrix, output line, canister methods and an end-to-end run.

use super::*;

use icbench::bench_canister::DbBenchWrite;
use icbench::suites::dbbench::{self, Bench, KvStore, LevelDbRandom};

#[test]
fn dbbench_keys_follow_db_bench_sqlite3_draw_order() {
    let num = 2_000;
    let keys = dbbench::keys(num);
    // In benchmark order (the unit tests pin its names).
    let benches: Vec<Bench> = keys.iter().map(|(b, _)| *b).collect();
    assert_eq!(benches, Bench::ALL);
    let of = |b: Bench| keys.iter().find(|(x, _)| *x == b).unwrap().1.clone();
    assert_eq!(of(Bench::FillSeq), (0..num).collect::<Vec<_>>());
    assert_eq!(of(Bench::FillSeq100K), [0, 1]);
    assert!(of(Bench::ReadSeq).is_empty());
    // One shared Random(301): fillrandom takes the first N draws, the skipped
    // fillrandsync the next N/100, fillrandbatch the N after those.
    let mut r = LevelDbRandom::new(301);
    let fillrandom: Vec<u64> = (0..num).map(|_| u64::from(r.next_u32()) % num).collect();
    assert_eq!(of(Bench::FillRandom), fillrandom);
    for _ in 0..num / 100 {
        r.next_u32();
    }
    let batch: Vec<u64> = (0..num).map(|_| u64::from(r.next_u32()) % num).collect();
    assert_eq!(of(Bench::FillRandBatch), batch);
    assert!(of(Bench::ReadRand100K).iter().all(|&k| k < 2));
    assert_eq!(of(Bench::ReadRand100K).len(), 2);
}

#[test]
fn dbbench_matrix_is_every_store_times_twelve_benchmarks() {
    let cfg = dbbench::Config::default();
    assert_eq!(cfg.num, 10_000);
    assert_eq!(cfg.journal_mode, JournalMode::Wal);
    let matrix = cfg.matrix();
    assert_eq!(matrix.len(), 36);
    let stores: Vec<KvStore> = matrix.iter().step_by(12).map(|s| s.store).collect();
    assert_eq!(
        stores,
        [
            KvStore::BTree,
            KvStore::SqliteRowid(JournalMode::Wal),
            KvStore::SqliteWithoutRowid(JournalMode::Wal)
        ]
    );
    assert!(matrix
        .chunks(12)
        .all(|c| c.iter().map(|s| s.bench).eq(Bench::ALL)));
    // Only the map when only btree is selected.
    let btree_only = dbbench::Config {
        stores: vec![StoreKind::Btree],
        ..cfg.clone()
    };
    assert_eq!(btree_only.matrix().len(), 12);
    assert_eq!(Bench::FillSeq100K.ops(10_000), 10);
    assert_eq!(Bench::FillSeq100K.value_size(), 100_000);
    assert!(Bench::FillSeq.transaction_per_row() && !Bench::FillSeqBatch.transaction_per_row());
    assert!(!Bench::Overwrite.fresh() && Bench::FillRandom.fresh());
    let bad = dbbench::Config { num: 999, ..cfg };
    let err = bad.validate().unwrap_err().to_string();
    assert!(
        err.contains("--dbbench-num must be between 1000 and 1000000"),
        "{err}"
    );
}

#[test]
fn dbbench_line_is_db_bench_format_with_instructions() {
    // db_bench: "%-12s : %11.3f micros/op;" then the rate and "(N ops)".
    assert_eq!(
        dbbench::line("fillseq", 52_176.3, 116.0, 10_000),
        "fillseq      :   52176.300 instructions/op;    116.0 bytes/op (10000 ops)"
    );
    assert_eq!(
        dbbench::line("readrand100K", 1_234_567.891_2, 100_016.0, 10),
        "readrand100K : 1234567.891 instructions/op; 100016.0 bytes/op (10 ops)"
    );
}

fn write(store: &str, keys: &[u64], value_size: u64, per_row: bool) -> DbBenchWrite {
    DbBenchWrite {
        store: store.into(),
        keys: keys.to_vec(),
        value_size,
        first_value: 0,
        transaction_per_row: per_row,
    }
}

#[test]
fn dbbench_methods_contract() {
    with_canister(|c| {
        // Bad arguments: Err naming the problem, never a trap.
        let err = c.dbbench_reset("leveldb").unwrap().value.unwrap_err();
        assert!(
            err.contains("btree, sqlite_rowid, sqlite_without_rowid"),
            "{err}"
        );
        let err = c
            .dbbench_read_random("sqlite_rowid", &[1])
            .unwrap()
            .value
            .unwrap_err();
        assert!(err.contains("call dbbench_reset first"), "{err}");
        for store in ["btree", "sqlite_rowid", "sqlite_without_rowid"] {
            assert_eq!(c.dbbench_reset(store).unwrap().value, Ok(0), "{store}");
            let err = c
                .dbbench_write(&write(store, &[10_000_000_000_000_000], 100, false))
                .unwrap()
                .value
                .unwrap_err();
            assert!(err.contains("more than 16 digits"), "{err}");
            let err = c
                .dbbench_write(&write(store, &[1], (1 << 20) + 1, false))
                .unwrap()
                .value
                .unwrap_err();
            assert!(err.contains("1 MiB"), "{err}");
            let keys: Vec<u64> = (0..1_000).collect();
            let err = c
                .dbbench_write(&write(store, &keys, 100_000, true))
                .unwrap()
                .value
                .unwrap_err();
            assert!(err.contains("per call"), "{err}");

            // Writes replace: key 7 twice is one row.
            for per_row in [true, false] {
                let r = c
                    .dbbench_write(&write(store, &[7, 3, 7, 12], 100, per_row))
                    .unwrap()
                    .value
                    .unwrap();
                assert_eq!((r.ops, r.found, r.bytes), (4, 4, 4 * 116), "{store}");
                assert!(r.instructions > 0);
            }
            let r = c
                .dbbench_read_random(store, &[3, 4, 12])
                .unwrap()
                .value
                .unwrap();
            assert_eq!((r.ops, r.found, r.bytes), (3, 2, 2 * 116), "{store}");
            let r = c.dbbench_read_seq(store, 0, 10).unwrap().value.unwrap();
            assert_eq!((r.ops, r.found, r.bytes), (3, 3, 3 * 116), "{store}");
            let r = c.dbbench_read_seq(store, 4, 1).unwrap().value.unwrap();
            assert_eq!(r.found, 1, "{store}: the first key >= 4 is 7");
            assert_eq!(c.dbbench_reset(store).unwrap().value, Ok(3), "{store}");
        }
        users_stores_untouched(c);
    });
}

#[test]
fn dbbench_end_to_end_is_deterministic() {
    let args = ["--suite", "dbbench", "--dbbench-num", "1000"];
    let (dir, a, _, stdout) = end_to_end_twice("dbbench", &args);
    assert_eq!(a.results.len(), 36);
    for r in &a.results {
        assert_eq!(r.status, icbench::report::Status::Ok, "{r:?}");
        assert!(r.store_instructions > 0, "{r:?}");
    }
    // Writes move key + value bytes per op.
    let fillseq = &a.results[0];
    assert_eq!(
        (fillseq.operation.as_str(), fillseq.batch),
        ("fillseq", 1000)
    );
    assert_eq!(fillseq.bytes, 1000 * 116);
    assert!(
        stdout.contains("\nfillseq      : ")
            && stdout.contains(" instructions/op;    116.0 bytes/op (1000 ops)"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("SQLite WAL, WITHOUT ROWID\nfillseq      :"),
        "{md}"
    );
}
