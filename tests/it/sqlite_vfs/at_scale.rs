//! The two SQLite bindings at 1,000,000 rows, cold and warm, under 2026-07 and 2026-05:
//! ignored in the test run (minutes); run with
//! `cargo test --release --test it -- --ignored --nocapture sqlite_vfs::at_scale`.
//!
//! Each binding's canister is filled as the default run fills the bench canister (ids 0, 10,
//! ..., 100,000 rows per message; the bench canister's B-tree first, as its prefill does),
//! its connection reopened (the bench canister: configure_sqlite to PERSIST, as the default
//! run sets each journal mode; the ic-sqlite-vfs canister: configure_sqlite_vfs with nothing
//! to change) and snapshotted. From that snapshot, each of the default run's middle calls is
//! measured cold (the first message on the reopened connection, and the first after an
//! upgrade) and warm (after W update messages of the same workload on the same instance).
//! The calls must succeed and find what they should; the figures are printed, and with
//! ICBENCH_VFS_PROFILES=DIR the 1-row insert's instruction profiles are written there.

use icbench::bench_canister::{BenchClient, IdSequence, SqliteConfig};
use icbench::engine::cost::Replica;
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::{MessageReport, Profiling};
use icbench::report::flame::Folded;

use candid::Encode;

const ROWS: u64 = 1_000_000;
const ID_STEP: u64 = 10;
const CHUNK: u64 = 100_000;
const MIDDLE: u64 = ROWS / 2 * ID_STEP;

#[derive(Clone, Copy, Debug)]
enum Binding {
    /// The bench canister's SQLite (ic-rusqlite), journal mode PERSIST (its default).
    Rusqlite,
    /// The ic-sqlite-vfs canister.
    Vfs,
}

impl Binding {
    fn store(self) -> &'static str {
        match self {
            Binding::Rusqlite => "sqlite",
            Binding::Vfs => super::STORE,
        }
    }
    fn wasm(self) -> &'static [u8] {
        match self {
            Binding::Rusqlite => crate::support::bench_wasm(),
            Binding::Vfs => super::wasm(),
        }
    }
    fn reopen(self, c: &mut BenchClient<'_>) {
        match self {
            Binding::Rusqlite => {
                let config = SqliteConfig {
                    journal_mode: Some("PERSIST".into()),
                    ..Default::default()
                };
                c.configure_sqlite(&config).unwrap().value.unwrap();
            }
            Binding::Vfs => {
                super::configure(c, SqliteConfig::default()).unwrap();
            }
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Workload {
    Insert(u64),
    Get(u64),
    Scan(u64),
}

impl Workload {
    const ALL: [Workload; 5] = [
        Workload::Insert(1),
        Workload::Insert(100),
        Workload::Get(1),
        Workload::Get(100),
        Workload::Scan(1_000),
    ];

    fn name(self) -> String {
        match self {
            Workload::Insert(n) => format!("insert {n}"),
            Workload::Get(n) => format!("get {n}"),
            Workload::Scan(n) => format!("scan {n}"),
        }
    }

    /// The default run's middle call (reads as queries): the store's instructions and the
    /// message's report.
    fn measure(self, c: &mut BenchClient<'_>, store: &str) -> (u64, MessageReport) {
        match self {
            Workload::Insert(n) => {
                let r = c
                    .add_users(store, IdSequence::new(MIDDLE + 1, ID_STEP, n))
                    .unwrap();
                assert_eq!(r.value.as_ref().unwrap().rows_inserted, n);
                (r.value.unwrap().instructions, r.message)
            }
            Workload::Get(n) => {
                let r = c
                    .get_users(store, IdSequence::new(MIDDLE, ID_STEP, n), false)
                    .unwrap();
                assert_eq!(r.value.as_ref().unwrap().rows_found, n);
                (r.value.unwrap().instructions, r.message)
            }
            Workload::Scan(n) => {
                let r = c.scan_users(store, MIDDLE, n, false).unwrap();
                assert_eq!(r.value.as_ref().unwrap().rows_found, n);
                (r.value.unwrap().instructions, r.message)
            }
        }
    }

    /// Warm-up message `j`: the same workload as an update. Inserts go to ids of the same
    /// region that neither the prefill (multiples of 10) nor the measured call (10k + 1)
    /// uses: 8 messages per gap of 10 ids, then the next gap (1 row) or the next 1,000 ids
    /// (100 rows). Reads repeat the measured call as its `_update` twin.
    fn warm_up(self, c: &mut BenchClient<'_>, store: &str, j: u64) {
        match self {
            Workload::Insert(n) => {
                let offset = MIDDLE + 2 + j % 8 + j / 8 * ID_STEP * n;
                let r = c
                    .add_users(store, IdSequence::new(offset, ID_STEP, n))
                    .unwrap();
                assert_eq!(r.value.unwrap().rows_inserted, n);
            }
            Workload::Get(n) => {
                let r = c
                    .get_users(store, IdSequence::new(MIDDLE, ID_STEP, n), true)
                    .unwrap();
                assert_eq!(r.value.unwrap().rows_found, n);
            }
            Workload::Scan(n) => {
                let r = c.scan_users(store, MIDDLE, n, true).unwrap();
                assert_eq!(r.value.unwrap().rows_found, n);
            }
        }
    }
}

/// The warm-up counts measured besides cold.
const WARM: [u64; 2] = [10, 100];

fn line(
    replica: Replica,
    binding: Binding,
    w: Workload,
    state: &str,
    (store, m): (u64, MessageReport),
) {
    let p = m.pages.unwrap();
    println!(
        "{},{:?},{},{state},{store},{},{},{},{},{},{}",
        replica.name,
        binding,
        w.name(),
        m.instructions,
        p.heap_wasm_pages_accessed,
        p.heap_wasm_pages_written,
        p.stable_wasm_pages_accessed,
        p.stable_wasm_pages_written,
        p.page_charge_instructions
    );
}

fn run(replica: Replica, binding: Binding) {
    let store = binding.store();
    let mut engine = EmbeddedEngine::default().with_replica(replica);
    let mut c = BenchClient::install(&mut engine, binding.wasm()).unwrap();
    assert_eq!(c.set_payload_size(100).unwrap().value, Ok(100));
    let mut fill_stores = vec![store];
    if let Binding::Rusqlite = binding {
        fill_stores.insert(0, "btree");
    }
    for s in fill_stores {
        let mut done = 0;
        while done < ROWS {
            let r = c
                .add_users(s, IdSequence::new(done * ID_STEP, ID_STEP, CHUNK))
                .unwrap();
            let v = r
                .value
                .unwrap_or_else(|e| panic!("filling {s} at row {done}: {e}"));
            assert_eq!(v.rows_inserted, CHUNK);
            done += CHUNK;
            if s == store {
                println!(
                    "{},{binding:?},fill to {done},-,{},{},-,-,-,-,-",
                    replica.name, v.instructions, r.message.instructions
                );
            }
        }
    }
    binding.reopen(&mut c);
    let base = c.engine.snapshot(c.canister).unwrap();
    let canister = c.canister;
    for w in Workload::ALL {
        c.engine.restore(canister, base).unwrap();
        line(replica, binding, w, "cold", w.measure(&mut c, store));
        c.engine.restore(canister, base).unwrap();
        c.engine
            .upgrade(canister, binding.wasm(), &Encode!().unwrap())
            .unwrap()
            .result
            .unwrap();
        line(
            replica,
            binding,
            w,
            "cold upgrade",
            w.measure(&mut c, store),
        );
        for warm in WARM {
            c.engine.restore(canister, base).unwrap();
            for j in 0..warm {
                w.warm_up(&mut c, store, j);
            }
            let state = format!("warm {warm}");
            line(replica, binding, w, &state, w.measure(&mut c, store));
        }
    }
    // The 1-row insert's profiles, cold and after 100 warm-ups.
    if let Some(dir) = std::env::var_os("ICBENCH_VFS_PROFILES") {
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        c.engine.set_profiling(Profiling::Messages).unwrap();
        for warm in [0, 100] {
            c.engine.restore(canister, base).unwrap();
            for j in 0..warm {
                Workload::Insert(1).warm_up(&mut c, store, j);
            }
            let (_, m) = Workload::Insert(1).measure(&mut c, store);
            let profile = m.profile.unwrap();
            assert_eq!(profile.total(), m.instructions);
            let stacks = profile
                .stacks()
                .into_iter()
                .map(|(s, n)| (s.into_iter().map(str::to_string).collect(), n));
            let name = format!("{}-{binding:?}-insert1-warm{warm}", replica.name);
            Folded::new(stacks)
                .write_files(&dir.join(&name), &name)
                .unwrap();
        }
        c.engine.set_profiling(Profiling::Off).unwrap();
    }
}

#[test]
#[ignore = "fills two canisters with 1,000,000 rows under two vintages (minutes); prints the figures"]
fn both_bindings_at_a_million_rows() {
    println!(
        "replica,binding,workload,state,store_instructions,message_instructions,heap_accessed,heap_written,stable_accessed,stable_written,page_charge"
    );
    for replica in [Replica::R2026_07, Replica::R2026_05] {
        for binding in [Binding::Vfs, Binding::Rusqlite] {
            run(replica, binding);
        }
    }
}

/// What each SQLite binding's canister holds at 1,000,000 rows of 100 bytes (filled as the
/// default run fills it, its connection reopened, then the default run's middle inserts
/// and reads, which bring pages into the page cache): its stable memory (SQLite's file) and
/// its heap (the page cache), the figures the store table's memory estimates come from
/// (src/stores.rs, `SQLITE_VFS.memory`). Printed, and held to the table's users figure.
#[test]
#[ignore = "fills two canisters with 1,000,000 rows (a minute); prints their memory"]
fn what_each_binding_holds_at_a_million_rows() {
    let mut held = Vec::new();
    for binding in [Binding::Vfs, Binding::Rusqlite] {
        let store = binding.store();
        let mut engine = EmbeddedEngine::default();
        let mut c = BenchClient::install(&mut engine, binding.wasm()).unwrap();
        let mut done = 0;
        while done < ROWS {
            let r = c
                .add_users(store, IdSequence::new(done * ID_STEP, ID_STEP, CHUNK))
                .unwrap();
            assert_eq!(r.value.unwrap().rows_inserted, CHUNK);
            done += CHUNK;
        }
        binding.reopen(&mut c);
        for w in [
            Workload::Insert(100),
            Workload::Get(100),
            Workload::Scan(1_000),
        ] {
            w.measure(&mut c, store);
        }
        // The largest insert of the default run, 10,000 rows at random: its pages stay
        // cached on the update connection.
        let ids: Vec<u64> = (0..10_000).map(|i| i * 97 * ID_STEP + 3).collect();
        c.add_users_ids(store, &ids).unwrap().value.unwrap();
        let stats = c.stats().unwrap();
        let file = stats.sqlite_page_count * stats.sqlite_page_size;
        let (heap, stable) = (stats.heap_pages << 16, stats.stable_pages << 16);
        println!(
            "{binding:?}: SQLite file {file} bytes, stable memory {stable}, heap {heap}, \
             {} bytes a row",
            (stable + heap) / ROWS
        );
        held.push((binding, stable + heap));
    }
    let kind = icbench::stores::find("sqlite-vfs").unwrap();
    let tenths = kind.def().memory.users_tenths;
    let (_, vfs) = held[0];
    assert!(
        vfs * 10 <= tenths * (100 + 50) * ROWS,
        "{vfs} bytes exceed {tenths} tenths of 150 bytes a row"
    );
}
